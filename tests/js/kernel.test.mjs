// The exact kernel of the JS runtime (gp_runtime.mjs, "The exact kernel") against values
// computed by mpmath (golden/kernel.json, golden/make_golden.py), within the error bounds
// the runtime states in ulps (2^-64 f): pi 2^16, ln 2 2^12 (from below), ln 2^26, cos and
// sin of 2 pi u 2^15; and the fast path's self-test.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { loadRuntime } from "./runtime.mjs";

const R = await loadRuntime();
const GOLDEN = JSON.parse(readFileSync(new URL("golden/kernel.json", import.meta.url), "utf8"));
const within = (got, want, ulps, what) => {
    const error = got > want ? got - want : want - got;
    assert.ok(error <= ulps, `${what}: off by ${error} ulps, allowed ${ulps}`);
};

for (const level of GOLDEN.kernel) {
    test(`pi, ln 2, ln and cos/sin of a turn at level ${level.level} are within their bounds`, () => {
        const p = R.gpPrec(level.level);
        within(R.gpPi(p), BigInt(level.pi), 1n << 16n, "pi");
        const ln2 = R.gpLn2(p), exact = BigInt(level.ln2);
        assert.ok(ln2 <= exact + 1n && exact <= ln2 + (1n << 12n) + 1n, "ln 2 from below");
        for (const [y, ln] of level.ln)
            within(R.gpLn(p, BigInt(y)), BigInt(ln), 1n << 26n, `ln ${y}`);
        for (const [u, cos, sin] of level.sincos) {
            const [c, s] = R.gpSincosTurn(p, BigInt(u));
            within(c, BigInt(cos), 1n << 15n, `cos ${u}`);
            within(s, BigInt(sin), 1n << 15n, `sin ${u}`);
        }
        assert.equal(p.bad, false);
    });
}

test("the self-test's table is the committed mpmath one, and this engine passes it", () => {
    assert.deepEqual(R.GP_LIB_CHECKS.log, GOLDEN.lib_checks.log);
    assert.deepEqual(R.GP_LIB_CHECKS.tan, GOLDEN.lib_checks.tan);
    assert.ok(R.GP_LIB_CHECKS.log.length >= 40 && R.GP_LIB_CHECKS.tan.length >= 30);
    assert.equal(R.gpSelfTest(), true);
    assert.equal(R.GP_FAST, true);
});

const SKEWED_LOG = "const Math = Object.create(globalThis.Math, { log: { value: "
    + "(x) => globalThis.Math.log(x) * (1 + 2 ** -40) } });";
const SKEWED_TAN = "const Math = Object.create(globalThis.Math, { tan: { value: "
    + "(x) => globalThis.Math.tan(x) * (1 + 2 ** -44) } });";

test("a Math.log or Math.tan off by 500 ulps fails the self-test; the kernel alone then gives the same bits", async () => {
    const key = R.gpParseKey("5a".repeat(16) + "c3".repeat(16));
    for (const prefix of [SKEWED_LOG, SKEWED_TAN]) {
        const S = await loadRuntime(prefix);
        assert.equal(S.GP_FAST, false);
        for (const d of [1, 2, 5, 33]) { /* d = 33: the tail by Marsaglia-Tsang */
            const x = Float64Array.from({ length: 2 * d }, (_, i) => (i - 3.3) * 0.37);
            const rows = (M, f, scale) => Array.from(M[f](x, 2, d, scale, M.gpSourceKey(key, 3n)));
            assert.deepEqual(rows(S, "gpSphericalLaplace", 0.5), rows(R, "gpSphericalLaplace", 0.5));
            assert.deepEqual(rows(S, "gpGaussian", 0.7), rows(R, "gpGaussian", 0.7));
        }
    }
});

test("scales are rounded up exactly and the lattice step is 2^(floor(log2 scale) - 16)", () => {
    for (const epsilon of [3, 0.1, 7e-300, 1.5, 2 ** -20]) {
        const q = R.gpScaleEpsilon(epsilon);
        assert.ok(R.gpCompareProducts(q, epsilon, 0, 1, 1) >= 0, `${epsilon}: q eps >= 1`);
        assert.ok(R.gpCompareProducts(R.gpNext(q, false), epsilon, 0, 1, 1) < 0, `${epsilon}: least`);
    }
    /* 2 rho s^2 >= 1 exactly, as a BigInt M 2^e >= 1 */
    const holds = (rho, s) => {
        const [P, ep] = R.gpMantissa(rho), [S, es] = R.gpMantissa(s), e = ep + 2 * es + 1;
        const m = P * S * S;
        return e >= 0 ? m > 0n : m >= 1n << BigInt(-e);
    };
    for (const rho of [0.5, 0.3, 1e-300, 7, 2 ** 1000, 5e-324]) {
        const s = R.gpScaleRho(rho);
        assert.ok(holds(rho, s) && !holds(rho, R.gpNext(s, false)), `${rho}: the least s`);
    }
    assert.equal(R.gpScaleRho(0.5), 1);
    assert.equal(R.gpScaleRho(0.3), 1.2909944487358058);
    assert.equal(R.gpScaleEpsilon(3), 0.33333333333333337);
    assert.equal(R.gpLattice(1 / 3), 2 ** -18);
    assert.throws(() => R.gpScaleEpsilon(5e-324), { status: "GP_ERANGE" });
    assert.throws(() => R.gpScaleEpsilon(0), { status: "GP_EINVAL" });
    assert.throws(() => R.gpScaleRho(NaN), { status: "GP_EINVAL" });
});
