// The projection weights of a grid (docs/reference/js.md): projectWeighted with
// projectionWeights(t) gives project's bits (the same blocks and binary counter), and with
// the weights doubled twice the coordinates (the weights given are the ones used).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as fourier8 from "../../generated/js/fourier8.mjs";
import * as linear from "../../generated/js/linear.mjs";
import * as sincEcg from "../../generated/js/sinc_ecg.mjs";
import * as twoCircles from "../../generated/js/two_circles.mjs";

function curve(m) {
    const [lo, hi] = m.CURVE_INTERVAL, top = Math.min(hi, lo + 10), t = [], y = [];
    for (let s = 0; s < 37; s++) {
        t.push(lo + (top - lo) * Math.sqrt(s / 36));
        for (let r = 0; r < m.VALUE_DIM; r++)
            y.push(5 * Math.sin(3 * s + r));
    }
    t[10] = t[9];   // a jump
    return [t, y];
}

const same = (a, b) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

for (const m of [linear, twoCircles, sincEcg, fourier8]) {
    test(`${m.NAME}: the weights given project the same bits`, () => {
        const [t, y] = curve(m), weights = m.projectionWeights(t);
        assert.equal(weights.length, t.length * m.WEIGHT_WIDTH);
        for (const bound of [0, 0.5])
            assert.ok(same(m.projectWeighted(t, y, weights, bound), m.project(t, y, bound)));
        const doubled = m.projectWeighted(t, y, weights.map((v) => 2 * v), 0);
        assert.ok(same(doubled, m.project(t, y, 0).map((v) => 2 * v)));
        assert.throws(() => m.projectWeighted(t, y, weights.subarray(1), 0), (error) => error.status === "GP_EINVAL");
        assert.throws(() => m.projectionWeights([t[1], t[0]]), (error) => error.status === "GP_EINVAL");
    });
}
