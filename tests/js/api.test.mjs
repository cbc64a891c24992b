// The API of a generated JS module (docs/reference/js.md): statuses, sources and their rows,
// projections and evaluation, on generated/js/linear.mjs and trajectory_linear.mjs.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as linear from "../../generated/js/linear.mjs";
import * as trajectory from "../../generated/js/trajectory_linear.mjs";

const KEY = linear.parseKey("5a".repeat(16) + "c3".repeat(16));

test("constants: the spec's strings and shapes", () => {
    assert.equal(linear.NAME, "linear");
    assert.deepEqual([linear.BASIS_SIZE, linear.VALUE_DIM, linear.COEF_DIM], [2, 1, 2]);
    assert.deepEqual([trajectory.VALUE_DIM, trajectory.COEF_DIM], [2, 4]);
    assert.deepEqual(Array.from(linear.CURVE_INTERVAL), [0, 1]);
    assert.ok(linear.ETA > 0 && linear.ETA < 1e-10);
    assert.match(linear.SPEC_SHA256, /^[0-9a-f]{64}$/);
    assert.ok(Object.isFrozen(linear.CURVE_INTERVAL));
});

test("errors are GpErrors with the C statuses and messages", () => {
    const cases = [
        [() => linear.releaseFacts("epsilon", -1), "GP_EINVAL"],
        [() => linear.releaseFacts("delta", 1), "GP_EINVAL"],
        [() => linear.releaseFacts("epsilon", 1e-320), "GP_ERANGE"],
        [() => linear.releaseFacts("epsilon", 1, 1e300), "GP_ERANGE"],
        [() => linear.releaseFacts("epsilon", 1, 1e-300), "GP_EINVAL"],
        [() => linear.releaseFacts("rho", 1, -2), "GP_EINVAL"],
        [() => linear.project([0.5, 0.2], [1, 2]), "GP_EINVAL"],
        [() => linear.project([0, 2], [1, 2]), "GP_EINVAL"],
        [() => linear.project([0, 1], [1, NaN]), "GP_EINVAL"],
        [() => linear.project([0, 1], [1]), "GP_EINVAL"],
        [() => linear.privatize([1, 2, 3], 2, "epsilon", 1, 0, linear.sourceKey(KEY)), "GP_EINVAL"],
        [() => linear.privatize([1, Infinity], 1, "epsilon", 1, 0, linear.sourceKey(KEY)), "GP_EINVAL"],
        [() => linear.privatize([1, 2], 1, "epsilon", 1, 0, linear.sourceCallback(() => false)), "GP_EENTROPY"],
        [() => linear.privatize([1, 2], 1, "rho", 1, 0, linear.sourceCallback(() => { throw new Error("no"); })), "GP_EENTROPY"],
        [() => linear.privatize([1, 2], 2, "rho", 1, 0, linear.sourceKey(KEY, (1n << 64n) - 1n)), "GP_EINVAL"],
        [() => linear.evaluate([1, 2], [1.5]), "GP_EINVAL"],
        [() => linear.parseKey("ab"), "GP_EINVAL"],
    ];
    for (const [call, status] of cases)
        assert.throws(call, (error) => error instanceof linear.GpError && error.status === status
            && error.message === linear.statusMessage(status), String(call));
    assert.equal(linear.statusMessage("GP_ERANGE"),
        "a release or a bound is beyond float64 or the lattice's 2^50 steps");
});

test("a keyed source gives row r the address row + r and advances; a fill gives one key per call", () => {
    const c = [0.1, -0.2, 3, 4, 1e-300, 0, -5, 2];
    const all = linear.privatize(c, 4, "epsilon", 1, 0, linear.sourceKey(KEY));
    const source = linear.sourceKey(KEY, 0n);
    const first = linear.privatize(c.slice(0, 4), 2, "epsilon", 1, 0, source);
    assert.equal(source.row, 2n);
    const second = linear.privatize(c.slice(4), 2, "epsilon", 1, 0, source);
    assert.deepEqual(Array.from(all), [...first, ...second]);
    const alone = linear.privatize(c.slice(6), 1, "epsilon", 1, 0, linear.sourceKey(KEY, 3n));
    assert.deepEqual(Array.from(alone), Array.from(all.slice(6)));
    let calls = 0;
    const fill = linear.sourceCallback((bytes) => { bytes.set(KEY); calls++; });
    assert.deepEqual(Array.from(linear.privatize(c, 4, "epsilon", 1, 0, fill)), Array.from(all));
    assert.equal(calls, 1);
    const os = linear.privatize(c, 4, "epsilon", 1, 0, linear.sourceOS());
    assert.notDeepEqual(Array.from(os), Array.from(all));
    const gamma = linear.releaseFacts("epsilon", 1).gamma;
    assert.ok(Array.from(all).every((v) => Number.isInteger(v / gamma)));
});

test("project reproduces a line, clips to the bound; evaluate returns the curve", () => {
    const c = linear.project([0, 0.25, 0.5, 1], [1, 1.5, 2, 3]);
    assert.ok(c instanceof Float64Array && c.length === 2);
    const values = linear.evaluate(c, [0, 0.5, 1]);
    [1, 2, 3].forEach((v, i) => assert.ok(Math.abs(values[i] - v) < 1e-12, `${values[i]}`));
    const clipped = linear.project([0, 1], [1, 3], 1);
    assert.ok(Math.abs(Math.hypot(...clipped) - 1) < 1e-12);
    const vector = trajectory.project([0, 1], [[0, 1], [1, 3]]);
    assert.deepEqual(Array.from(vector), Array.from(trajectory.project([0, 1], [0, 1, 1, 3])));
    const points = trajectory.evaluate(vector, [0.5]);
    assert.ok(Math.abs(points[0] - 0.5) < 1e-12 && Math.abs(points[1] - 2) < 1e-12);
});

test("releaseFacts: the default bound is a power of two with 2 ETA B <= 1e-6 scale", () => {
    const facts = linear.releaseFacts("epsilon", 1);
    assert.equal(facts.scale, 1);
    assert.equal(facts.gamma, 2 ** -16);
    assert.equal(Math.log2(facts.bound) % 1, 0);
    assert.ok(2 * linear.ETA * facts.bound <= 1e-6 && 4 * linear.ETA * facts.bound > 1e-6);
    assert.ok(facts.slack >= 2 * linear.ETA * facts.bound);
    assert.equal(linear.releaseFacts("rho", 0.5, 3).bound, 3);
});
