/* gpcompiler's JavaScript runtime: gp_runtime.c (docs/reference/c.md) in JavaScript, the exact
 * releases of runtime/exact.py bit for bit (docs/threat-model.md, "Exact releases";
 * docs/reference/js.md). Inlined verbatim into every generated NAME.mjs, so nothing here is
 * exported; ES2020 (BigInt), no dependencies, the same text in Node >= 18 and in browsers.
 *
 * Words. Every word of a call is addressed, word(row, index, level) = SHAKE128(key ||
 * LE64(row) || LE32(level)) at bytes 8 index (docs/reference/randomness.md); Keccak's lanes
 * are pairs of 32-bit halves. A keyed source gives the key; a fill callback (and the OS
 * source, globalThis.crypto.getRandomValues) gives one fresh 32-byte key per call, and the
 * call's rows have the addresses 0, 1, ... under it, as in the C runtime.
 *
 * The release. For each row the float fast path of exact.py and gp_runtime.c: balls (a
 * midpoint and a radius covering the bits not drawn and every rounding) under one assumption,
 * that Math.log and Math.tan err by at most GP_LIB_ULPS = 4 ulps. JavaScript promises no
 * bound, so gpSelfTest checks both at load against values computed with mpmath
 * (GP_LIB_CHECKS); if one is off by more than 3 ulps from the correctly rounded value, the
 * fast path is never used and every coordinate is decided by the exact kernel (slower, the
 * same bits). A coordinate whose ball meets two lattice cells is refined: levels 1, 2, ...
 * <= GP_LEVELS append one 64-bit word to every uniform of its group, and a fixed-point
 * interval kernel on BigInts (below) encloses x + scale Z, until both ends round to one
 * lattice point. Both paths are rigorous, so the release is the exact rounding of the ideal
 * sample: the same bits as the Python and C targets'.
 *
 * Errors are thrown as GpError(status), status a name of gp_runtime.h's gp_status; outputs
 * are fresh Float64Arrays, returned only when every row succeeded. */

const GP_MESSAGES = {
    GP_EINVAL: "an argument is out of its domain (NaN or infinite, a budget <= 0, a bad key)",
    GP_EENTROPY: "the source of random bytes failed",
    GP_ERANGE: "a release or a bound is beyond float64 or the lattice's 2^50 steps",
    GP_ENOMEM: "a buffer is too small (a row longer than GP_MAX_DIM)",
    GP_EUNDECIDED: "exact noise: no lattice cell after 64 refinements (p < 2^-4000)",
    GP_ECAP: "the ledger's cap for this epoch would be exceeded: nothing was drawn",
    GP_ELEDGER: "the ledger cannot be read or appended to",
};

/** An error of the runtime: status is a gp_status name (GP_EINVAL, ...), message its text
 * (or the ledger's own line: the cap and the spend of a GP_ECAP refusal). */
class GpError extends Error {
    constructor(status, detail) {
        super(detail || GP_MESSAGES[status] || "unknown status");
        this.name = "GpError";
        this.status = status;
    }
}

const gpFail = (status) => { throw new GpError(status); };

const GP_MAX_DIM = 1024;
const GP_LATTICE_BITS = 16;   /* gamma = 2^(floor(log2 scale) - 16): runtime/exact.py */
const GP_U = 2 ** -53;        /* unit roundoff */
const GP_LIB_ULPS = 4;        /* assumed error of Math.log and Math.tan, in ulps */
const GP_TINY = 2 ** -1000;   /* an absolute floor under every radius (covers underflow) */
const GP_GROW = 1 + 2 ** -40; /* covers the rounding of the few operations forming a radius */
const GP_LEVELS = 64;         /* refinement levels before GP_EUNDECIDED (p < 2^-4000) */
const GP_MT_SHAPE = 16;       /* the radius's tail Gamma(a) by Marsaglia-Tsang from a >= 16 */
const GP_MT_ATTEMPTS = 65536; /* each accepted w.p. >= 0.95: never reached */
const GP_TRIG = (10 + 2 * GP_LIB_ULPS + 7) * GP_U;
const GP_ANGLE = GP_TRIG + 4 * GP_U;
const GP_BOUND_FLOOR = 2 ** -960; /* compiler/slack.py, BOUND_FLOOR (docs/clipping.md) */
const GP_ENTROPY_CHUNK = 65536;   /* Web Crypto's limit on one getRandomValues call */

/* -- Float64 bits: frexp, ldexp, nextafter, rint ---------------------------------------- */

const gpView = new DataView(new ArrayBuffer(8));

function gpFromHalves(hi, lo) {
    gpView.setUint32(0, hi >>> 0);
    gpView.setUint32(4, lo >>> 0);
    return gpView.getFloat64(0);
}

function gpBits(v) {
    gpView.setFloat64(0, v);
    return gpView.getBigUint64(0);
}

function gpFromBits(bits) {
    gpView.setBigUint64(0, bits);
    return gpView.getFloat64(0);
}

/* A finite v != 0 as M 2^e, M a 53-bit integer (BigInt; subnormals too): [M, e]. */
function gpMantissa(v) {
    const bits = gpBits(Math.abs(v)), biased = Number(bits >> 52n);
    const fraction = bits & 0xFFFFFFFFFFFFFn;
    if (biased) return [fraction | (1n << 52n), biased - 1075];
    const shift = 53 - fraction.toString(2).length;
    return [fraction << BigInt(shift), -1074 - shift];
}

/* floor(log2 |v|) of a finite v != 0 (C's ilogb). */
function gpIlogb(v) {
    return gpMantissa(v)[1] + 52;
}

/* x 2^n rounded once (musl's scalbn). */
function gpLdexp(x, n) {
    if (n > 1023) {
        x *= 2 ** 1023;
        n -= 1023;
        if (n > 1023) {
            x *= 2 ** 1023;
            n = Math.min(n - 1023, 1023);
        }
    } else if (n < -1022) {
        x *= 2 ** -1022 * 2 ** 53;
        n += 1022 - 53;
        if (n < -1022) {
            x *= 2 ** -1022 * 2 ** 53;
            n = Math.max(n + 1022 - 53, -1022);
        }
    }
    return x * gpFromBits(BigInt(n + 1023) << 52n);
}

/* The next float after a finite x toward +inf (up) or -inf. */
function gpNext(x, up) {
    if (x === 0) return up ? 2 ** -1074 : -(2 ** -1074);
    const bits = gpBits(x), away = (x > 0) === up;
    return gpFromBits(away ? bits + 1n : bits - 1n);
}

/* rint ties to even: the shift (v + 1.5 2^52) - 1.5 2^52 for |v| < 2^51 (+0, never -0),
 * else nearbyint. */
function gpRint(v) {
    if (Math.abs(v) < 2 ** 51) return (v + 0x18000000000000) - 0x18000000000000;
    if (!(Math.abs(v) < 2 ** 52)) return v;
    const floor = Math.floor(v), rest = v - floor;
    return rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor;
}

/* -- SHAKE128 (FIPS 202): Keccak-f[1600] on 25 lanes, lane i at [2i] (low) and [2i + 1] --- */

const GP_RC = [
    0x00000001, 0x00000000, 0x00008082, 0x00000000, 0x0000808a, 0x80000000, 0x80008000, 0x80000000,
    0x0000808b, 0x00000000, 0x80000001, 0x00000000, 0x80008081, 0x80000000, 0x00008009, 0x80000000,
    0x0000008a, 0x00000000, 0x00000088, 0x00000000, 0x80008009, 0x00000000, 0x8000000a, 0x00000000,
    0x8000808b, 0x00000000, 0x0000008b, 0x80000000, 0x00008089, 0x80000000, 0x00008003, 0x80000000,
    0x00008002, 0x80000000, 0x00000080, 0x80000000, 0x0000800a, 0x00000000, 0x8000000a, 0x80000000,
    0x80008081, 0x80000000, 0x00008080, 0x80000000, 0x80000001, 0x00000000, 0x80008008, 0x80000000];
/* rho and pi: lane x + 5 y, rotated by rho's offset, moves to y + 5 ((2 x + 3 y) mod 5)
 * (FIPS 202, sections 3.2.2-3.2.3): [destination, rotation] of each source lane. */
const GP_PI_RHO = [
    [0, 0], [10, 1], [20, 62], [5, 28], [15, 27], [16, 36], [1, 44], [11, 6], [21, 55],
    [6, 20], [7, 3], [17, 10], [2, 43], [12, 25], [22, 39], [23, 41], [8, 45], [18, 15],
    [3, 21], [13, 8], [14, 18], [24, 2], [9, 61], [19, 56], [4, 14]];

function gpKeccakF(a) {
    const c = new Uint32Array(10), b = new Uint32Array(50);
    for (let round = 0; round < 24; round++) {
        for (let x = 0; x < 10; x++)
            c[x] = a[x] ^ a[x + 10] ^ a[x + 20] ^ a[x + 30] ^ a[x + 40];
        for (let x = 0; x < 5; x++) { /* theta: d_x = c_(x-1) ^ rotl(c_(x+1), 1) */
            const p = 2 * ((x + 4) % 5), q = 2 * ((x + 1) % 5);
            const lo = c[p] ^ ((c[q] << 1) | (c[q + 1] >>> 31));
            const hi = c[p + 1] ^ ((c[q + 1] << 1) | (c[q] >>> 31));
            for (let y = 0; y < 50; y += 10) {
                a[y + 2 * x] ^= lo;
                a[y + 2 * x + 1] ^= hi;
            }
        }
        for (let i = 0; i < 25; i++) {
            const [to, n] = GP_PI_RHO[i], lo = a[2 * i], hi = a[2 * i + 1];
            if (n === 0) {
                b[2 * to] = lo;
                b[2 * to + 1] = hi;
            } else if (n < 32) {
                b[2 * to] = (lo << n) | (hi >>> (32 - n));
                b[2 * to + 1] = (hi << n) | (lo >>> (32 - n));
            } else if (n === 32) {
                b[2 * to] = hi;
                b[2 * to + 1] = lo;
            } else {
                b[2 * to] = (hi << (n - 32)) | (lo >>> (64 - n));
                b[2 * to + 1] = (lo << (n - 32)) | (hi >>> (64 - n));
            }
        }
        for (let y = 0; y < 50; y += 10) /* chi */
            for (let x = 0; x < 10; x++) {
                const x1 = y + (x + 2) % 10, x2 = y + (x + 4) % 10;
                a[y + x] = b[y + x] ^ (~b[x1] & b[x2]);
            }
        a[0] ^= GP_RC[2 * round];
        a[1] ^= GP_RC[2 * round + 1];
    }
}

/* A SHAKE128 output stream: the state holds output block `block` (168 bytes, 21 lanes). */
function gpXofAbsorb(message) {
    const a = new Uint32Array(50);
    const xor = (i, byte) => { a[i >> 2] ^= byte << (8 * (i & 3)); };
    let at = 0;
    for (; message.length - at >= 168; at += 168) {
        for (let i = 0; i < 168; i++)
            xor(i, message[at + i]);
        gpKeccakF(a);
    }
    for (let i = at; i < message.length; i++)
        xor(i - at, message[i]);
    xor(message.length - at, 0x1F);
    xor(167, 0x80);
    gpKeccakF(a);
    return { a, block: 0 };
}

/* The little-endian word at bytes 8 index of the stream as [low, high] 32-bit halves
 * (indices in increasing order). */
function gpXofWord(s, index) {
    for (; s.block < Math.floor(index / 21); s.block++)
        gpKeccakF(s.a);
    const lane = index % 21;
    return [s.a[2 * lane], s.a[2 * lane + 1]];
}

/* The stream of the address (row, level): key || LE64(row) || LE32(level), 44 bytes. */
function gpXofAddress(key, row, level) {
    const message = new Uint8Array(44);
    message.set(key);
    for (let i = 0; i < 8; i++)
        message[32 + i] = Number((row >> BigInt(8 * i)) & 0xFFn);
    for (let i = 0; i < 4; i++)
        message[40 + i] = (level >>> (8 * i)) & 0xFF;
    return gpXofAbsorb(message);
}

const gpWordBig = ([lo, hi]) => (BigInt(hi) << 32n) | BigInt(lo);

/* word(row, index, level) as a BigInt. */
function gpWord(key, row, index, level) {
    return gpWordBig(gpXofWord(gpXofAddress(key, row, level), index));
}

/* -- Sources: { keyed, key, row } or { fill } -------------------------------------------- */

/* globalThis.crypto.getRandomValues, in chunks of at most 65,536 bytes. */
function gpFillOS(out) {
    const crypto = globalThis.crypto;
    if (!crypto || typeof crypto.getRandomValues !== "function")
        throw new Error("no globalThis.crypto.getRandomValues");
    for (let at = 0; at < out.length; at += GP_ENTROPY_CHUNK)
        crypto.getRandomValues(out.subarray(at, Math.min(at + GP_ENTROPY_CHUNK, out.length)));
}

/* A source whose fill(bytes: Uint8Array) fills bytes (a throw is a failed source). */
function gpSourceCallback(fill) {
    return { keyed: false, fill, key: null, row: 0n };
}

function gpSourceOS() {
    return gpSourceCallback(gpFillOS);
}

/* Words by address under a 32-byte key, from the row address row (a BigInt in [0, 2^64)). */
function gpSourceKey(key, row = 0n) {
    if (!(key instanceof Uint8Array) || key.length !== 32 || typeof row !== "bigint"
        || row < 0n || row >= 1n << 64n)
        gpFail("GP_EINVAL");
    return { keyed: true, fill: null, key: Uint8Array.from(key), row };
}

/* Exactly 64 hexadecimal digits, the first byte first (docs/reference/randomness.md). */
function gpParseKey(hex) {
    if (typeof hex !== "string" || !/^[0-9a-fA-F]{64}$/.test(hex))
        gpFail("GP_EINVAL");
    const key = new Uint8Array(32);
    for (let i = 0; i < 32; i++)
        key[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    return key;
}

/* The key of a call: the source's, or 32 fresh bytes from its fill (GP_EENTROPY). */
function gpCallKey(source) {
    if (source && source.keyed)
        return [source.key, source.row];
    const key = new Uint8Array(32);
    try {
        if (!source || typeof source.fill !== "function" || source.fill(key) === false)
            gpFail("GP_EENTROPY");
    } catch (error) {
        throw error instanceof GpError ? error : new GpError("GP_EENTROPY");
    }
    return [key, 0n];
}

/* -- Scales, the lattice and the clip ------------------------------------------------------ */

const gpFinite = (v) => typeof v === "number" && Number.isFinite(v);

/* 1/epsilon rounded up to a float (rounding.ceil_float of the exact 1/epsilon): q = fl(1/eps)
 * is within half an ulp, so the answer is q, or nextup(q) when q eps < 1 exactly. */
function gpScaleEpsilon(epsilon) {
    if (!(gpFinite(epsilon) && epsilon > 0))
        gpFail("GP_EINVAL");
    let q = 1 / epsilon;
    if (Number.isFinite(q)) {
        const [Q, eq] = gpMantissa(q), [E, ee] = gpMantissa(epsilon), power = -(eq + ee);
        if (power > 0 && Q * E < 1n << BigInt(power))
            q = gpNext(q, true);
    }
    if (!Number.isFinite(q))
        gpFail("GP_ERANGE");
    return q;
}

/* Whether 2 rho s^2 >= 1, exactly. */
function gpRhoScaleHolds(s, rho) {
    const [S, es] = gpMantissa(s), [P, ep] = gpMantissa(rho), power = -(2 * es + ep + 1);
    return power < 0 || S * S * P >= 1n << BigInt(power);
}

/* sqrt(1/(2 rho)) rounded up (rounding.ceil_sqrt): the least float s with 2 rho s^2 >= 1,
 * from a first guess within a few ulps. */
function gpScaleRho(rho) {
    if (!(gpFinite(rho) && rho > 0))
        gpFail("GP_EINVAL");
    let k = gpIlogb(rho) + 1, r = gpLdexp(rho, -k);
    if (k % 2) {
        r *= 2;
        k -= 1;
    }
    let s = gpLdexp(Math.sqrt(0.5 / r), -k / 2);
    while (!gpRhoScaleHolds(s, rho))
        s = gpNext(s, true);
    while (gpRhoScaleHolds(gpNext(s, false), rho))
        s = gpNext(s, false);
    return s;
}

/* The largest power of two <= scale, times 2^-16 (exact.py, lattice). */
function gpLattice(scale) {
    if (!(gpFinite(scale) && scale >= 2 ** -1006))
        gpFail("GP_EINVAL");
    return gpLdexp(1, gpIlogb(scale) - GP_LATTICE_BITS);
}

/* NumPy's pairwise sum (pairwise_sum_DOUBLE) of the squares c[i] c[i], i in [at, at + n):
 * eight partial sums below 129 terms, halves above (gp_runtime.c's gp_pairwise_squares). */
function gpPairwiseSquares(c, at, n) {
    if (n < 8) {
        let sum = -0.0;
        for (let i = 0; i < n; i++)
            sum += c[at + i] * c[at + i];
        return sum;
    }
    if (n <= 128) {
        const r = [];
        for (let j = 0; j < 8; j++)
            r[j] = c[at + j] * c[at + j];
        let i = 8;
        for (; i < n - n % 8; i += 8)
            for (let j = 0; j < 8; j++)
                r[j] += c[at + i + j] * c[at + i + j];
        let sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            sum += c[at + i] * c[at + i];
        return sum;
    }
    let half = Math.floor(n / 2);
    half -= half % 8;
    return gpPairwiseSquares(c, at, half) + gpPairwiseSquares(c, at + half, n - half);
}

/* A row's sum of squares as clip.py's _sum_squares forms it (numpy.sum of a contiguous row:
 * 0 plus the pairwise sum), so gpClipRows gives clip.py's bits in every engine. */
function gpSumSquares(c, at, d) {
    return 0.0 + gpPairwiseSquares(c, at, d);
}

/* clip.py, _clip_scaled: a row scaled by its largest |entry| first (no overflow). */
function gpClipScaled(c, at, d, bound) {
    let big = 0.0;
    for (let i = 0; i < d; i++)
        big = Math.abs(c[at + i]) > big ? Math.abs(c[at + i]) : big;
    const unit = new Float64Array(d);
    for (let i = 0; i < d; i++)
        unit[i] = c[at + i] / big;
    const norm = Math.sqrt(gpSumSquares(unit, 0, d));
    if (big * norm > bound)
        for (let i = 0; i < d; i++)
            c[at + i] = unit[i] * (bound / norm);
}

/* c * min(1, B/||c||) per row of d, in place (runtime/clip.py, clip_rows, bit for bit). */
function gpClipRows(c, rows, d, bound) {
    if (!(gpFinite(bound) && bound > 0))
        gpFail("GP_EINVAL");
    if (d > GP_MAX_DIM)
        gpFail("GP_ENOMEM");
    for (let i = 0; i < rows * d; i++)
        if (!Number.isFinite(c[i]))
            gpFail("GP_EINVAL");
    for (let at = 0; at < rows * d; at += d) {
        const squares = gpSumSquares(c, at, d);
        const safe = squares >= 2 ** -900 && squares <= 2 ** 900;
        const factor = safe && squares > bound * bound ? bound / Math.sqrt(squares) : 1.0;
        if (!safe || factor < 2 ** -960) {
            let zero = true;
            for (let i = 0; i < d; i++)
                zero = zero && c[at + i] === 0;
            if (!zero)
                gpClipScaled(c, at, d, bound);
        } else if (factor !== 1.0) {
            for (let i = 0; i < d; i++)
                c[at + i] *= factor;
        }
    }
}

/* -- The self-test of the fast path's assumption ------------------------------------------ */

/* [x, log x] and [x, tan x] as doubles: x, and the exact function value rounded to nearest
 * by mpmath at 60 digits (tests/js/golden/make_golden.py writes this table; tests/js checks
 * it): points of the fast path's arguments, u = (2m + 1) 2^-53 in (0, 1], w near 1, angles
 * in [0, pi/4]. */
const GP_LIB_CHECKS = {
    log: [
        [1.1102230246251565e-16, -36.7368005696771],
        [3.3306690738754696e-16, -35.63818828100899],
        [5.551115123125783e-16, -35.127362657243],
        [7.771561172376096e-16, -34.790890420621785],
        [0.9999999999999999, -1.1102230246251565e-16],
        [0.5000000000000001, -0.6931471805599451],
        [0.16024283037476816, -1.8310649244332893],
        [0.572229495472084, -0.5582151522076138],
        [0.37713555396147014, -0.9751505965806847],
        [0.32293517987314246, -1.1303036574060075],
        [0.6866138881663232, -0.3759831707143508],
        [0.97223203334854, -0.028160785573402004],
        [0.9668302461017885, -0.03373234588648992],
        [0.6712984223160535, -0.39854149823227764],
        [0.8301015658209622, -0.18620721721891204],
        [0.4597118396608032, -0.7771554213117006],
        [0.31707756025806766, -1.148608865447768],
        [0.5425562283172191, -0.6114635522707823],
        [0.6012233760065969, -0.5087887396127108],
        [0.9130271899723724, -0.09098961791892173],
        [0.40845736148814027, -0.8953677483718739],
        [0.5509159648967356, -0.5961729952596627],
        [0.4104853003766574, -0.8904151598010762],
        [0.15238988111493434, -1.8813130348175948],
        [0.040542049500209454, -3.205415584223578],
        [0.23318279067280867, -1.4559326236576695],
        [0.6077842128542289, -0.49793537308122165],
        [0.9048277531527996, -0.10001068140484098],
        [0.008684255120765427, -4.746243649142738],
        [0.4592070354143448, -0.778254113069876],
        [2.3314683517128287e-15, -33.69227813195368],
        [4.629630012686903e-14, -30.7037143478783],
        [5.370148770111882e-13, -28.252750596854117],
        [1.3995804515332111e-11, -24.992263508701836],
        [8.357836644989902e-11, -23.205236403848534],
        [6.005090869010132e-10, -21.233243342298167],
        [2.5120253765997802e-08, -17.499591393247847],
        [6.357734438910967e-08, -16.571008650358873],
        [2.2782228942253013e-06, -12.99211485127058],
        [7.979619744558075e-05, -9.436034705701744],
        [0.0014275039098111675, -6.5518278775158505],
        [0.036965044959509474, -3.2977825437014077],
        [0.546604340696579, -0.6040300642526337],
        [1.424530172225236, 0.35384205565480986],
        [1.163863874297953, 0.15174539599105155],
        [1.0356697150179628, 0.03504828510953054],
        [1.4872750948268725, 0.3969456502512224],
        [0.9309131877624142, -0.07158925228003699],
        [0.7986178959975656, -0.22487267539101888],
        [1.248916633843952, 0.22227648259390975],
        [1.0000000009313226, 9.313225741817976e-10],
        [0.9999999999990905, -9.094947017733418e-13],
    ],
    tan: [
        [0.0, 0.0],
        [9.332636185032189e-302, 9.332636185032189e-302],
        [9.313225746154785e-10, 9.313225746154785e-10],
        [0.7853981633974483, 0.9999999999999999],
        [0.7853981633974483, 0.9999999999999999],
        [0.6352326320733606, 0.7371598389359563],
        [0.5631899233652214, 0.6314022280777537],
        [0.6795625052823699, 0.8079380439532904],
        [0.09359235053299482, 0.09386658638454935],
        [0.7311270666597698, 0.8969492882606959],
        [0.21373995237778867, 0.2170554391397483],
        [0.4883082826240075, 0.5312170877029581],
        [0.2010171126644812, 0.20376916144897728],
        [0.40758398925426254, 0.43176180657035884],
        [0.73886458297491, 0.9110096375910021],
        [0.2664083202392508, 0.2728951744422128],
        [0.7783108122332192, 0.9859248177619421],
        [0.3908642469416848, 0.4120655498490512],
        [0.730694338050726, 0.8961687246012725],
        [0.38832447578795753, 0.4090976302901136],
        [0.3016555573610521, 0.31115115657419246],
        [0.6403619294062747, 0.7451065372267649],
        [0.22439373565989, 0.22823743579677602],
        [0.6361704894397873, 0.7386083341788454],
        [0.22246127089155726, 0.22620519825220461],
        [0.29274760214425255, 0.3014075261917727],
        [0.593208202315792, 0.6742121187745614],
        [0.299687176927067, 0.30899352598948737],
        [0.5893235690473784, 0.6685764108591017],
        [0.13250246728391063, 0.13328339638032394],
        [0.14749586937472314, 0.1485748520968578],
        [0.08871006857210487, 0.0889435039985327],
        [0.6702116751701372, 0.7925987691429318],
        [0.6404374049993807, 0.7452239222444683],
        [0.6261610371872959, 0.7232513251020408],
    ],
};

/* The distance in ulps of the reference r between a computed value v and r. */
function gpUlps(v, r) {
    if (v === r) return 0;
    if (!Number.isFinite(v)) return Infinity;
    return Math.abs(v - r) / (gpNext(Math.abs(r), true) - Math.abs(r));
}

/* Whether Math.log and Math.tan are within 3 ulps of the correctly rounded values (so within
 * GP_LIB_ULPS = 4 of the exact ones) at every point of GP_LIB_CHECKS: the fast path's
 * assumption, checked once at load. A failed check does not refuse: the exact kernel alone
 * then decides every coordinate (docs/reference/js.md, "The fast path"). */
function gpSelfTest() {
    return GP_LIB_CHECKS.log.every(([x, r]) => gpUlps(Math.log(x), r) <= 3)
        && GP_LIB_CHECKS.tan.every(([x, r]) => gpUlps(Math.tan(x), r) <= 3);
}

const GP_FAST = gpSelfTest();

/* -- The fast path: balls [mid, rad] in float64 (exact.py, whose derivations hold here) ---- */

function gpAdd(a, b) {
    const mid = a[0] + b[0];
    return [mid, (a[1] + b[1] + GP_U * Math.abs(mid) + GP_TINY) * GP_GROW];
}

function gpTimes(a, b) {
    const mid = a[0] * b[0];
    const rad = Math.abs(a[0]) * b[1] + Math.abs(b[0]) * a[1] + a[1] * b[1];
    return [mid, (rad + GP_U * Math.abs(mid) + GP_TINY) * GP_GROW];
}

/* E = -ln U at the midpoint u = (2m + 1) 2^-53 of U's interval [m, m + 1] 2^-52 (m the top 52
 * bits; u formed exactly as 1 + m 2^-52 - (1 - 2^-53)), and v = 1/u (inf for m = 0): [e, v]. */
function gpExponential([lo, hi]) {
    const u = gpFromHalves(0x3FF00000 | (hi >>> 12), (hi << 20) | (lo >>> 12)) - (1 - 2 ** -53);
    return [-Math.log(u), u === 2 ** -53 ? Infinity : 1 / u];
}

/* E's radius: the slope bound 2^-52 v, Math.log's 2 GP_LIB_ULPS U E, and their rounding. */
function gpExpRadius(e, v) {
    let rad = 2 ** -52 * v;
    rad += (2 * GP_LIB_ULPS * GP_U) * e;
    rad += GP_TINY;
    return rad * GP_GROW;
}

function gpExpBall(word) {
    const [e, v] = gpExponential(word);
    return [e, gpExpRadius(e, v)];
}

/* cos and sin of theta = 2 pi U within GP_TRIG, by one tangent of an angle in [0, pi/4]
 * (exact.py, _angles): [cosine, sine]. */
function gpAngle([lo, hi]) {
    let r = gpFromHalves(0x3FF00000 | ((hi >>> 11) & 0xFFFFF), (hi << 21) | (lo >>> 11) | 1) - 1.0;
    r = r < 1.0 - r ? r : 1.0 - r;
    r *= 1.5707963267948966; /* fl(pi)/2 */
    let t = Math.tan(r), w = t * t;
    w += 1.0;
    w = 2.0 / w;
    t *= w; /* sin 2x */
    w -= 1.0; /* cos 2x */
    const sign = hi >>> 31, swap = (hi >>> 30) & 1;
    return [sign ^ swap ? -w : w, sign ? -t : t];
}

/* sqrt(times E) for E in (e, rad): |sqrt(tE) - sqrt(te)| <= t rad / sqrt(te), plus rounding. */
function gpRootBall(e, times) {
    const g = Math.sqrt(e[0] * times);
    let rad = (e[1] * times) / g;
    rad += GP_U * g;
    rad += GP_TINY;
    return [g, rad * GP_GROW];
}

/* Pairwise sum of e[lo, lo + size) in a fixed tree (zeros past n). */
function gpTree(e, n, lo, size) {
    if (lo >= n) return 0.0;
    if (size === 1) return e[lo];
    return gpTree(e, n, lo, size / 2) + gpTree(e, n, lo + size / 2, size / 2);
}

/* The ball of E_1 + ... + E_n (exact.py, _exp_sum). */
function gpExpSum(e, v, n) {
    let levels = 0;
    while (2 ** levels < n)
        levels++;
    const total = n ? gpTree(e, n, 0, 2 ** levels) : 0.0;
    let vsum = 0.0;
    for (let i = 0; i < n; i++)
        vsum += v[i];
    const spread = 2 ** -52 * vsum + (2 * GP_LIB_ULPS * GP_U) * total;
    const rad = spread * (1 + 2 * (n + 3) * GP_U) + (levels + 1) * GP_U * total;
    return [total, (rad + GP_TINY) * GP_GROW];
}

/* round_gamma(x + v) for v in the ball (mid, rad) of v / gamma (exact.py, _decide; see
 * gp_fast_cell): the release, or null when the ball meets two cells. */
function gpFastCell(x, mid, rad, gamma) {
    const latticePoint = !(Math.abs(x) < 2 ** 52 * gamma);
    let k = 0.0, t = mid;
    if (!latticePoint) {
        const scaled = x * (1 / gamma);
        k = gpRint(scaled);
        t = (scaled - k) + mid;
    }
    const j = gpRint(t);
    const error = (rad + (Math.abs(mid) + 0.5) * GP_U) * GP_GROW;
    if (!(Math.abs(t - j) + error < 0.5))
        return null;
    return (latticePoint ? x + j * gamma : (k + j) * gamma) + 0.0;
}

/* -- The exact kernel: fixed-point intervals on BigInts -----------------------------------
 * A number is an integer m standing for m 2^(-64 f), f = L + 3 at level L (gp_runtime.c's
 * limbs): a uniform's 52 + 64 L bits sit exactly 140 bits above the last. Products,
 * quotients and roots round in a chosen direction (up: toward +inf); ln 2, pi, ln and
 * (cos, sin) are gp_runtime.c's series, with its error bounds in ulps (2^(-64 f)); an
 * interval is {lo, hi}. An integer part beyond 2^62 sets p.bad: the level's enclosures
 * are void (undecided). */

function gpPrec(level) {
    const f = level + 3;
    return { f, F: BigInt(64 * f), bad: false, one: 1n << BigInt(64 * f) };
}

const gpAbs = (v) => (v < 0n ? -v : v);
const gpBitLength = (v) => (v === 0n ? 0 : v.toString(2).length);

function gpCheck(p, v) {
    if (gpAbs(v) >> (p.F + 62n))
        p.bad = true;
    return v;
}

/* floor(n / d) (up: ceil) for d != 0. */
function gpDivRound(n, d, up) {
    let q = n / d;
    if (n % d !== 0n && ((n < 0n) !== (d < 0n)) !== up)
        q += up ? 1n : -1n;
    return q;
}

function gpFxMul(p, a, b, up) {
    const t = a * b;
    return gpCheck(p, up ? -((-t) >> p.F) : t >> p.F);
}

function gpFxDiv(p, a, b, up) {
    if (b === 0n) {
        p.bad = true;
        return 0n;
    }
    return gpCheck(p, gpDivRound(a << p.F, b, up));
}

/* The integer square root of n >= 0 (floor). */
function gpIsqrt(n) {
    if (n < 2n) return n;
    let x = 1n << BigInt(Math.ceil(gpBitLength(n) / 2)), y = (x + n / x) >> 1n;
    while (y < x) {
        x = y;
        y = (x + n / x) >> 1n;
    }
    return x;
}

function gpFxSqrt(p, a, up) {
    const n = a << p.F, r = gpIsqrt(n);
    return gpCheck(p, up && r * r !== n ? r + 1n : r);
}

const gpConstants = new Map();

/* ln 2 = sum 2 / ((2k + 1) 3^(2k + 1)), truncated terms: r <= ln 2 <= r + 2^12 ulp. */
function gpLn2(p) {
    const key = `ln2 ${p.f}`;
    if (!gpConstants.has(key)) {
        let r = 0n, power = (2n * p.one) / 3n;
        for (let k = 1n; power; k += 2n) {
            r += power / k;
            power /= 9n;
        }
        gpConstants.set(key, r);
    }
    return gpConstants.get(key);
}

/* The terms of times atan(1/k) = times sum (-1)^j / ((2j + 1) k^(2j + 1)): [plus, minus]. */
function gpAtanTerms(p, k, times) {
    let plus = 0n, minus = 0n, power = p.one / k;
    for (let j = 1n; power; j += 2n) {
        const term = (power / j) * times;
        if (j % 4n === 1n) plus += term; else minus += term;
        power /= k * k;
    }
    return [plus, minus];
}

/* pi = 16 atan(1/5) - 4 atan(1/239) (Machin): |r - pi| < 2^16 ulp. */
function gpPi(p) {
    const key = `pi ${p.f}`;
    if (!gpConstants.has(key)) {
        const [a, b] = gpAtanTerms(p, 5n, 16n), [c, d] = gpAtanTerms(p, 239n, 4n);
        gpConstants.set(key, (a + d) - (b + c));
    }
    return gpConstants.get(key);
}

/* ln y for y > 0 within 2^26 ulp (gp_runtime.c, gp_ln): y = z 2^s with z in [3/4, 3/2),
 * ln z = 2 atanh(t), t = (z - 1)/(z + 1), plus s ln 2. */
function gpLn(p, y) {
    const top = gpBitLength(y) - 1;
    let s = top - (64 * p.f - 1);
    let z = s >= 0 ? y >> BigInt(s) : y << BigInt(-s); /* z in [1/2, 1) */
    if (!((z >> (p.F - 2n)) & 1n)) { /* z < 3/4 */
        z <<= 1n;
        s -= 1;
    }
    let num = z - p.one;
    const negative = num < 0n;
    num = gpAbs(num);
    const t = gpFxDiv(p, num, z + p.one, false), t2 = gpFxMul(p, t, t, false);
    let sum = 0n, power = t;
    for (let k = 1n; power; k += 2n) {
        sum += power / k;
        power = gpFxMul(p, power, t2, false);
    }
    sum <<= 1n;
    const ln2 = gpLn2(p) * BigInt(Math.abs(s));
    return gpCheck(p, (negative ? -sum : sum) + (s < 0 ? -ln2 : ln2));
}

/* cos 2 pi u and sin 2 pi u for u in [0, 1) (fraction bits only), each within 2^15 ulp
 * (gp_runtime.c, gp_sincos_turn): [cos, sin]. */
function gpSincosTurn(p, u) {
    const mask = p.one - 1n, q = Number((u >> (p.F - 2n)) & 3n);
    let g = (u << 2n) & mask;
    const flip = g > p.one >> 1n;
    if (flip)
        g = p.one - g;
    const x = gpFxMul(p, gpPi(p), g, false) >> 1n;
    const sums = [p.one, 0n, 0n, 0n]; /* +cos, +sin, -cos, -sin terms by m mod 4 */
    let term = p.one;
    for (let m = 1n; ; m++) {
        term = gpFxMul(p, term, x, false) / m;
        if (!term)
            break;
        sums[Number(m % 4n)] += term;
    }
    const cx = gpCheck(p, sums[0] - sums[2]), sx = gpCheck(p, sums[1] - sums[3]);
    const cg = flip ? sx : cx, sg = flip ? cx : sx; /* cos, sin of (pi/2) g */
    return [[cg, -sg, -cg, sg][q], [sg, cg, -sg, -cg][q]];
}

/* The interval of a uniform at level L: U in [M, M + 1] 2^-b, b = 52 + 64 L, M the top 52 bits
 * of the level-0 word w0 followed by the words of levels 1..L at the uniform's address. */
function gpUniform(key, row, index, w0, level) {
    let m = gpWordBig(w0) >> 12n;
    for (let l = 1; l <= level; l++)
        m = (m << 64n) | gpWord(key, row, index, l);
    const lo = m << 140n;
    return { lo, hi: lo + (1n << 140n) };
}

function gpIvWiden(p, r, by) {
    return { lo: gpCheck(p, r.lo - by), hi: gpCheck(p, r.hi + by) };
}

function gpIvAdd(p, a, b) {
    return { lo: gpCheck(p, a.lo + b.lo), hi: gpCheck(p, a.hi + b.hi) };
}

const gpIvNeg = (a) => ({ lo: -a.hi, hi: -a.lo });
const gpIvExact = (v) => ({ lo: v, hi: v });

function gpIvMul(p, a, b) {
    const pairs = [[a.lo, b.lo], [a.lo, b.hi], [a.hi, b.lo], [a.hi, b.hi]];
    const lows = pairs.map(([x, y]) => gpFxMul(p, x, y, false));
    const highs = pairs.map(([x, y]) => gpFxMul(p, x, y, true));
    return { lo: lows.reduce((m, v) => (v < m ? v : m)), hi: highs.reduce((m, v) => (v > m ? v : m)) };
}

function gpIvSqr(p, a) {
    const r = gpIvMul(p, a, a);
    return r.lo < 0n ? { lo: 0n, hi: r.hi } : r;
}

/* a / b for b > 0 (else void). */
function gpIvDiv(p, a, b) {
    if (b.lo <= 0n) {
        p.bad = true;
        return gpIvExact(0n);
    }
    return { lo: gpFxDiv(p, a.lo, a.lo < 0n ? b.lo : b.hi, false),
             hi: gpFxDiv(p, a.hi, a.hi < 0n ? b.hi : b.lo, true) };
}

/* sqrt(a), a's negative part cut off (the argument is >= 0 by construction). */
function gpIvSqrt(p, a) {
    if (a.hi < 0n) {
        p.bad = true;
        return gpIvExact(0n);
    }
    return { lo: a.lo < 0n ? 0n : gpFxSqrt(p, a.lo, false), hi: gpFxSqrt(p, a.hi, true) };
}

/* ln a for a > 0 (else void): ln is increasing; gpLn errs by < 2^26 ulp. */
function gpIvLn(p, a) {
    if (a.lo <= 0n) {
        p.bad = true;
        return gpIvExact(0n);
    }
    return gpIvWiden(p, { lo: gpLn(p, a.lo), hi: gpLn(p, a.hi) }, 1n << 26n);
}

/* E = -ln U (>= 0). */
function gpIvExponential(p, u) {
    const e = gpIvNeg(gpIvLn(p, u));
    return e.lo < 0n ? { lo: 0n, hi: e.hi } : e;
}

/* cos and sin of 2 pi U: gpSincosTurn at U's lower end (within 2^15 ulp), widened by the
 * angle's spread 2 pi 2^-b < 7 2^140 ulp (cos and sin are 1-Lipschitz): [cos, sin]. */
function gpIvAngle(p, u) {
    const [c, s] = gpSincosTurn(p, u.lo), spread = (1n << 15n) + (7n << 140n);
    return [gpIvWiden(p, gpIvExact(c), spread), gpIvWiden(p, gpIvExact(s), spread)];
}

/* A float x 2^shift as an interval (exact unless its bits go below the last). */
function gpIvDouble(p, x, shift) {
    if (x === 0) return gpIvExact(0n);
    const [m, e] = gpMantissa(x), at = e + shift + 64 * p.f, sign = x < 0 ? -1n : 1n;
    if (at >= 0) return gpIvExact(gpCheck(p, sign * (m << BigInt(at))));
    const exact = sign * m, scale = 1n << BigInt(-at);
    return { lo: gpCheck(p, gpDivRound(exact, scale, false)),
             hi: gpCheck(p, gpDivRound(exact, scale, true)) };
}

/* The nearest integer to v, ties to even. */
function gpFxRint(p, v) {
    const m = gpAbs(v), half = p.one >> 1n;
    let j = m >> p.F;
    const rest = m - (j << p.F);
    if (rest > half || (rest === half && (j & 1n)))
        j += 1n;
    return v < 0n ? -j : j;
}

/* The lattice cell of x / gamma - k + unit z for an enclosure z of the noise: the integer j
 * when both ends round to it, else null. */
function gpIvCell(p, z, unit, offset) {
    const v = gpIvAdd(p, gpIvMul(p, gpIvDouble(p, unit, 0), z), offset);
    if (p.bad) return null;
    const j = gpFxRint(p, v.lo);
    return j === gpFxRint(p, v.hi) ? j : null;
}

/* -- The rows ------------------------------------------------------------------------------
 * A row g: { key, row (its address), gamma = 2^power, unit = scale / gamma }. */

/* x / gamma - k exactly (k = rint(x / gamma); 0 and the release x + j gamma for a lattice
 * point): [offset, k, latticePoint]. */
function gpOffset(p, x, g) {
    const latticePoint = !(Math.abs(x) < 2 ** 52 * g.gamma);
    if (latticePoint)
        return [gpIvExact(0n), 0.0, true];
    const k = gpRint(x * (1 / g.gamma));
    return [gpIvAdd(p, gpIvDouble(p, x, -g.power), gpIvDouble(p, -k, 0)), k, false];
}

function gpRelease(x, k, latticePoint, j, gamma) {
    return (latticePoint ? x + j * gamma : (k + j) * gamma) + 0.0;
}

/* Decides the open coordinates of a row by refinement: noise(p, k, level) encloses the
 * noise of coordinate k at a level (every uniform of its group reading levels 0..L). */
function gpRefine(x, at, d, g, open, out, noise) {
    for (let level = 1; level <= GP_LEVELS; level++) {
        let left = false;
        for (let k = 0; k < d; k++) {
            if (!open[k])
                continue;
            const p = gpPrec(level), z = noise(p, k, level);
            const [offset, kk, latticePoint] = gpOffset(p, x[at + k], g);
            const j = p.bad ? null : gpIvCell(p, z, g.unit, offset);
            if (j !== null) {
                out[k] = gpRelease(x[at + k], kk, latticePoint, Number(j), g.gamma);
                open[k] = 0;
            } else {
                left = true;
            }
        }
        if (!left)
            return;
    }
    gpFail("GP_EUNDECIDED");
}

function gpFiniteRow(out) {
    if (!out.every(Number.isFinite))
        gpFail("GP_ERANGE");
    return out;
}

/* The level-0 words 0..count-1 of a row's stream. */
function gpRowWords(s, count) {
    const words = [];
    for (let i = 0; i < count; i++)
        words.push(gpXofWord(s, i));
    return words;
}

/* round_gamma(x + scale N) for one row (exact.py, gaussian and _gaussian_balls): words
 * 0..p-1 the radii's U1, p..2p-1 the angles' U2. */
function gpGaussianRow(x, at, d, g) {
    const p = (d + 1) >> 1, out = new Float64Array(d), open = new Uint8Array(d);
    const words = gpRowWords(gpXofAddress(g.key, g.row, 0), 2 * p);
    let undecided = false;
    for (let i = 0; i < p; i++) {
        const r = gpRootBall(gpExpBall(words[i]), 2.0), [cosine, sine] = gpAngle(words[p + i]);
        const h = r[0] * g.unit;
        let rad = r[0] * (GP_TRIG + 2.01 * GP_U);
        rad += r[1];
        rad *= g.unit;
        rad += GP_TINY;
        rad *= GP_GROW;
        for (let k = i; k < d; k += p) {
            const release = GP_FAST ? gpFastCell(x[at + k], h * (k < p ? cosine : sine), rad, g.gamma) : null;
            open[k] = release === null ? 1 : 0;
            undecided = undecided || release === null;
            out[k] = release === null ? 0 : release;
        }
    }
    if (undecided)
        gpRefine(x, at, d, g, open, out, (prec, k, level) => {
            const i = k % p;
            const u1 = gpUniform(g.key, g.row, i, words[i], level);
            const u2 = gpUniform(g.key, g.row, p + i, words[p + i], level);
            const e = gpIvExponential(prec, u1);
            const r = gpIvSqrt(prec, gpIvAdd(prec, e, e)), [c, s] = gpIvAngle(prec, u2);
            return gpIvMul(prec, r, k < p ? c : s);
        });
    return gpFiniteRow(out);
}

/* Marsaglia and Tsang (2000, ACM TOMS 26), Gamma(a), a >= 1, in intervals (gp_iv_mt): x the
 * cosine part of the normal pair of uniforms 0 and 1, w = 1 + c x with c = 1/sqrt(9a - 3),
 * dd = a - 1/3; accept when w > 0 and f = x^2/2 + dd (1 - w^3 + 3 ln w) - ln U_2 > 0; then
 * G = dd w^3. [w, f (null unless w > 0), G]. */
function gpIvMt(p, u, a) {
    const int = (v) => gpIvExact(BigInt(v) << p.F);
    const cc = gpIvDiv(p, int(1), gpIvSqrt(p, int(9 * a - 3)));
    const three = int(3), dd = gpIvDiv(p, int(3 * a - 1), three), one = int(1);
    const e = gpIvExponential(p, u[0]);
    const r = gpIvSqrt(p, gpIvAdd(p, e, e)), [c] = gpIvAngle(p, u[1]);
    const x = gpIvMul(p, r, c);
    const w = gpIvAdd(p, gpIvMul(p, cc, x), one);
    let cube = gpIvMul(p, gpIvMul(p, w, w), w);
    const G = gpIvMul(p, dd, cube);
    if (w.lo <= 0n)
        return [w, null, G];
    const lnW = gpIvMul(p, gpIvLn(p, w), three);
    cube = gpIvAdd(p, gpIvAdd(p, gpIvNeg(cube), one), lnW);
    let f = gpIvMul(p, dd, cube);
    const half = gpIvExact(p.one >> 1n);
    f = gpIvAdd(p, f, gpIvMul(p, gpIvSqr(p, x), half));
    return [w, gpIvAdd(p, f, gpIvExponential(p, u[2])), G];
}

/* A float enclosure of an interval of positive reals (gp_iv_ball): the ends' integer and
 * first fraction limbs as floats, the midpoint and a radius covering both ends. */
function gpIvBall(p, v) {
    const end = (m) => {
        const a = gpAbs(m), int = Number(a >> p.F);
        const limb = Number((a >> (p.F - 64n)) & 0xFFFFFFFFFFFFFFFFn);
        const value = int + gpLdexp(limb, -64);
        return m < 0n ? -value : value;
    };
    const lo = end(v.lo), hi = end(v.hi), mid = (lo + hi) * 0.5;
    const rad = (hi - lo) + 2 ** -48 * (Math.abs(lo) + Math.abs(hi)) + 2 ** -60;
    return [mid, (rad + GP_TINY) * GP_GROW];
}

/* One attempt from its level-0 words (exact.py, _mt_balls): [1, G's ball] if accepted,
 * [-1] if rejected, [0, G] if the balls do not decide. */
function gpMtBall(w, a) {
    const dd = (3 * a - 1) / 3.0, c = 1 / Math.sqrt(9 * a - 3);
    const ddb = [dd, dd * GP_U * GP_GROW], cb = [c, 2.01 * GP_U * c * GP_GROW];
    const r = gpRootBall(gpExpBall(w[0]), 2.0), [cosine] = gpAngle(w[1]);
    let xrad = r[0] * GP_ANGLE;
    xrad += r[1];
    xrad += GP_TINY;
    const x = [cosine * r[0], xrad * GP_GROW];
    const wb = gpAdd([1.0, 0.0], gpTimes(cb, x));
    const low = wb[0] - wb[1], positive = low > 0;
    const logW = Math.log(positive ? wb[0] : 1.0);
    const logRad = (wb[1] / (positive ? low : 1.0) + 2 * GP_LIB_ULPS * GP_U * Math.abs(logW)
                    + GP_TINY) * GP_GROW;
    const cube = gpTimes(gpTimes(wb, wb), wb);
    const inner = gpAdd(gpAdd([1.0, 0.0], [-cube[0], cube[1]]), gpTimes([3.0, 0.0], [logW, logRad]));
    const square = gpTimes(x, x);
    const f = gpAdd(gpAdd([square[0] * 0.5, square[1] * 0.5], gpTimes(ddb, inner)), gpExpBall(w[2]));
    const G = gpTimes(ddb, cube);
    if (positive && f[0] - f[1] > 0)
        return [1, G];
    return wb[0] + wb[1] <= 0 || (positive && f[0] + f[1] < 0) ? [-1, G] : [0, G];
}

/* An undecided attempt in interval arithmetic (exact.py, _mt_refine): [accepted, G]. */
function gpMtRefine(g, index, w, a) {
    for (let level = 1; level <= GP_LEVELS; level++) {
        const p = gpPrec(level);
        const u = [0, 1, 2].map((j) => gpUniform(g.key, g.row, index + j, w[j], level));
        const [wi, f, G] = gpIvMt(p, u, a);
        if (p.bad)
            continue;
        if (wi.hi < 0n)
            return [-1, null];
        if (wi.lo <= 0n)
            continue;
        if (f.hi < 0n)
            return [-1, null];
        if (f.lo > 0n)
            return [1, gpIvBall(p, G)];
    }
    gpFail("GP_EUNDECIDED");
}

/* The radius's tail G ~ Gamma(a) by Marsaglia-Tsang: attempt k reads the uniforms
 * start + 3k, +1, +2 (docs/reference/randomness.md): [G's ball, the accepted index]. */
function gpMtTail(s, g, start, a) {
    for (let k = 0; k < GP_MT_ATTEMPTS; k++) {
        const index = start + 3 * k;
        const w = [gpXofWord(s, index), gpXofWord(s, index + 1), gpXofWord(s, index + 2)];
        let [decision, tail] = GP_FAST ? gpMtBall(w, a) : [0, null];
        if (!decision)
            [decision, tail] = gpMtRefine(g, index, w, a);
        if (decision === 1)
            return [tail, index];
    }
    gpFail("GP_EUNDECIDED");
}

/* Z_k = R (sqrt(E_i) trig_i) / sqrt(H) in intervals (gp_sphere_noise): R = E_1 + ... + E_p +
 * G, H = E_1 + ... + E_(d/2) (+ E_p cos^2 of the last angle for odd d); the ratio lies in
 * [-1, 1], so it is clipped there. */
function gpSphereNoise(S, p, k, level) {
    const { g, words, d, a, tail, mt } = S, pairs = S.p, i = k % pairs;
    const uniform = (index) => gpUniform(g.key, g.row, index,
        index < 2 * pairs ? words[index] : gpXofWord(gpXofAddress(g.key, g.row, 0), index), level);
    let half = gpIvExact(0n), radius = gpIvExact(0n);
    for (let m = 0; m < pairs; m++) {
        const e = gpIvExponential(p, uniform(m));
        radius = gpIvAdd(p, radius, e);
        if (m < d >> 1)
            half = gpIvAdd(p, half, e);
    }
    if (d % 2) {
        const e = gpIvExponential(p, uniform(pairs - 1)), [c] = gpIvAngle(p, uniform(2 * pairs - 1));
        half = gpIvAdd(p, half, gpIvMul(p, e, gpIvSqr(p, c)));
    }
    if (mt) {
        const u = [uniform(tail), uniform(tail + 1)];
        radius = gpIvAdd(p, radius, gpIvMt(p, [u[0], u[1], u[1]], a)[2]);
    } else {
        for (let m = 0; m < a; m++)
            radius = gpIvAdd(p, radius, gpIvExponential(p, uniform(tail + m)));
    }
    const root = gpIvSqrt(p, gpIvExponential(p, uniform(i)));
    const [c, s] = gpIvAngle(p, uniform(pairs + i));
    const ratio = gpIvDiv(p, gpIvMul(p, root, k < pairs ? c : s), gpIvSqrt(p, half));
    if (p.bad)
        return ratio;
    const clipped = { lo: ratio.lo < -p.one ? -p.one : ratio.lo, hi: ratio.hi > p.one ? p.one : ratio.hi };
    return gpIvMul(p, radius, clipped);
}

/* round_gamma(x + scale Z) for one row, Z spherical Laplace in R^d (exact.py,
 * spherical_laplace and _spherical_balls; gp_spherical_row). */
function gpSphericalRow(x, at, d, g) {
    const p = (d + 1) >> 1, a = d - p, mt = a >= GP_MT_SHAPE;
    const out = new Float64Array(d), open = new Uint8Array(d);
    const s = gpXofAddress(g.key, g.row, 0), words = gpRowWords(s, 2 * p);
    const e = [], v = [], cosine = [], sine = [];
    for (let i = 0; i < p; i++) {
        [e[i], v[i]] = gpExponential(words[i]);
        [cosine[i], sine[i]] = gpAngle(words[p + i]);
    }
    let half = gpExpSum(e, v, d >> 1), radius = half, tailIndex = 2 * p;
    if (d % 2) { /* R gains E_p; H gains E_p cos^2 */
        const last = [e[p - 1], gpExpRadius(e[p - 1], v[p - 1])], c = [cosine[p - 1], GP_TRIG];
        radius = gpAdd(half, last);
        half = gpAdd(half, gpTimes(last, gpTimes(c, c)));
    }
    if (mt) {
        const [tail, index] = gpMtTail(s, g, 2 * p, a);
        tailIndex = index;
        radius = gpAdd(radius, tail);
    } else if (a) {
        const te = [], tv = [];
        for (let j = 0; j < a; j++)
            [te[j], tv[j]] = gpExponential(gpXofWord(s, 2 * p + j));
        radius = gpAdd(radius, gpExpSum(te, tv, a));
    }
    const root = gpRootBall(half, 1.0), low = root[0] - root[1];
    const factor = radius[0] / root[0] * g.unit;
    const r0 = radius[1] / radius[0], r1 = low > 0 ? root[1] / low : Infinity;
    const delta = (r0 + r1 + r0 * r1 + 4 * GP_U) * GP_GROW;
    const size = Math.abs(factor) * (GP_GROW * GP_GROW);
    const A = size * (1 + delta) * 2 ** -52 + GP_TINY;
    const B = size * ((1 + delta) * (9 + 2 ** -40) * GP_U + delta + GP_TRIG + 2.01 * GP_U);
    let undecided = false;
    for (let i = 0; i < p; i++) {
        const rootE = Math.sqrt(e[i]);
        let rad = v[i] / rootE;
        rad *= A;
        rad += rootE * B;
        const scaled = rootE * factor;
        for (let k = i; k < d; k += p) {
            const release = GP_FAST ? gpFastCell(x[at + k], scaled * (k < p ? cosine[i] : sine[i]), rad, g.gamma) : null;
            open[k] = release === null ? 1 : 0;
            undecided = undecided || release === null;
            out[k] = release === null ? 0 : release;
        }
    }
    if (undecided) {
        const group = { g, words, d, p, a, tail: tailIndex, mt };
        gpRefine(x, at, d, g, open, out, (prec, k, level) => gpSphereNoise(group, prec, k, level));
    }
    return gpFiniteRow(out);
}

/* -- The calls ----------------------------------------------------------------------------- */

/* Every row of a call (rows x d values of x) under the source's key (or one drawn from its
 * fill); the output only when every row succeeded; a keyed source's row advances by rows. */
function gpNoise(rowRelease, x, rows, d, scale, source) {
    const gamma = gpLattice(scale), out = new Float64Array(rows * d);
    if (d === 0)
        return out; /* no rows: nothing drawn, no address taken (exact.py) */
    if (d > GP_MAX_DIM)
        gpFail("GP_ENOMEM");
    if (source && source.keyed && BigInt(rows) > (1n << 64n) - 1n - source.row)
        gpFail("GP_EINVAL");
    for (let i = 0; i < rows * d; i++)
        if (!Number.isFinite(x[i]))
            gpFail("GP_EINVAL");
    const [key, first] = gpCallKey(source);
    const g = { key, row: first, gamma, power: gpIlogb(gamma), unit: scale / gamma };
    for (let r = 0; r < rows; r++) {
        g.row = first + BigInt(r);
        out.set(rowRelease(x, r * d, d, g), r * d);
    }
    if (source.keyed)
        source.row += BigInt(rows);
    return out;
}

/* round_gamma(x + scale N) per entry, N standard normal: CGP (paper Thm 3.3). */
function gpGaussian(x, rows, d, scale, source) {
    return gpNoise(gpGaussianRow, x, rows, d, scale, source);
}

/* round_gamma(x + scale Z) per row, Z spherical Laplace in R^d, density proportional to
 * exp(-|z|): epsilon-GP with scale 1/epsilon (paper Thm 3.2). */
function gpSphericalLaplace(x, rows, d, scale, source) {
    return gpNoise(gpSphericalRow, x, rows, d, scale, source);
}

/* -- Exact products (the module's facts) --------------------------------------------------- */

/* The sign of a b 2^k - c d for finite a, b, c, d >= 0, exactly. */
function gpCompareProducts(a, b, k, c, d) {
    const exact = (x, y, shift) => {
        if (x === 0 || y === 0) return [0n, 0];
        const [mx, ex] = gpMantissa(x), [my, ey] = gpMantissa(y);
        return [mx * my, ex + ey + shift];
    };
    const [m1, e1] = exact(a, b, k), [m2, e2] = exact(c, d, 0);
    if (m1 === 0n || m2 === 0n)
        return m1 === m2 ? 0 : m1 === 0n ? -1 : 1;
    const low = Math.min(e1, e2);
    const left = m1 << BigInt(e1 - low), right = m2 << BigInt(e2 - low);
    return left < right ? -1 : left > right ? 1 : 0;
}

/* a b 2^k rounded up to a float (rounding.ceil_float of the exact product), a, b > 0: the
 * product of the significands rounded once, scaled (within two ulps), then stepped. */
function gpCeilProduct(a, b, k) {
    const ea = gpIlogb(a), eb = gpIlogb(b);
    let r = gpLdexp(gpLdexp(a, -ea) * gpLdexp(b, -eb), ea + eb + k);
    if (!Number.isFinite(r))
        return r;
    while (gpCompareProducts(a, b, k, r, 1) > 0)
        r = gpNext(r, true);
    while (r > 0 && gpCompareProducts(a, b, k, gpNext(r, false), 1) <= 0)
        r = gpNext(r, false);
    return r;
}
