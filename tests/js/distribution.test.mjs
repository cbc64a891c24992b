// The law of the JS target's releases with OS entropy (like tests/test_c_distribution.py,
// smaller): legendre10 (d = 11) privatize of ROWS zero rows with sourceOS(); z = release /
// scale is within 2^-16 of the ideal sample per coordinate (the lattice rounding). GP: |z| ~
// Gamma(d) and (u_j + 1)/2 ~ Beta((d-1)/2, (d-1)/2) for u = z/|z|; CGP: z_j ~ N(0, 1). Each
// KS statistic must stay below the threshold at p = 1e-6, sqrt(ln(2e6)/(2 n)) (0.060 for
// ROWS = 2,000 radii): a noise scale off by 10% moves the radius's CDF by about 0.12 near
// its median (Gamma(11)'s density there is about 0.12 per unit, the shift about 1).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as module from "../../generated/js/legendre10.mjs";

const ROWS = 2000, d = module.COEF_DIM;

/** The KS statistic of samples against a CDF. */
function ks(samples, cdf) {
    const sorted = Float64Array.from(samples).sort();
    let D = 0;
    sorted.forEach((x, i) => {
        const F = cdf(x);
        D = Math.max(D, (i + 1) / sorted.length - F, F - i / sorted.length);
    });
    return D;
}

const threshold = (n) => Math.sqrt(Math.log(2e6) / (2 * n));

/** P(Gamma(k) <= x) for an integer shape k. */
function gammaCdf(k, x) {
    let term = 1, sum = 1;
    for (let j = 1; j < k; j++) {
        term *= x / j;
        sum += term;
    }
    return x <= 0 ? 0 : 1 - Math.exp(-x) * sum;
}

/** P(Beta(a, a) <= x) for an integer a: the binomial tail of 2a - 1 trials. */
function betaCdf(a, x) {
    const n = 2 * a - 1;
    let sum = 0, choose = 1;
    for (let j = 0; j <= n; j++) {
        if (j >= a) sum += choose * x ** j * (1 - x) ** (n - j);
        choose = choose * (n - j) / (j + 1);
    }
    return sum;
}

/** Phi(x) from erfc (Numerical Recipes' erfcc, relative error < 1.2e-7). */
function normalCdf(x) {
    const z = Math.abs(x) / Math.SQRT2, t = 1 / (1 + z / 2);
    const erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

function noise(budget, value) {
    const facts = module.releaseFacts(budget, value, 0);
    const out = module.privatize(new Float64Array(ROWS * d), ROWS, budget, value, 0, module.sourceOS());
    return Array.from({ length: ROWS }, (_, r) => Array.from(out.subarray(r * d, (r + 1) * d), (v) => v / facts.scale));
}

test("GP (epsilon = 0.25): the radius is Gamma(d), the direction uniform on the sphere", () => {
    const z = noise("epsilon", 0.25), radii = z.map((row) => Math.hypot(...row));
    assert.ok(ks(radii, (x) => gammaCdf(d, x)) < threshold(ROWS));
    for (const j of [0, 5, 10]) {
        const u = z.map((row, r) => (row[j] / radii[r] + 1) / 2);
        assert.ok(ks(u, (x) => betaCdf((d - 1) / 2, x)) < threshold(ROWS), `coordinate ${j}`);
    }
});

test("CGP (rho = 2): every coordinate is standard normal", () => {
    const z = noise("rho", 2).flat();
    assert.ok(ks(z, normalCdf) < threshold(z.length));
    assert.ok(Math.abs(z.reduce((a, b) => a + b * b, 0) / z.length - 1) < 0.05);
});
