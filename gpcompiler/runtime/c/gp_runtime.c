/* gpcompiler's C runtime: the functions of gp_runtime.h, the exact releases of
 * runtime/exact.py bit for bit (docs/threat-model.md, "Exact releases";
 * docs/reference/randomness.md, "The C runtime"). Inlined verbatim into every generated
 * NAME.c after #include "NAME.h", so every function is static; C11, libc and libm only.
 *
 * Words. Every word of a call is addressed, word(row, index, level) = SHAKE128(key ||
 * LE64(row) || LE32(level)) at bytes 8 index (docs/reference/randomness.md). A keyed source
 * gives the key; a fill callback (and the OS source) gives one fresh 32-byte key per call,
 * drawn by a single fill of 32 bytes, and the call's rows have the addresses 0, 1, ... under
 * it: SHAKE128 as a DRBG (the Python target's OS words come from OpenSSL's CTR_DRBG). So a
 * call is a function of its key and inputs, which lets it compute before it writes.
 *
 * The release. For each row the float fast path of exact.py, ball arithmetic (a midpoint
 * and a radius that covers the bits not drawn and every rounding) under one assumption:
 * libm's log and tan err by at most GP_LIB_ULPS = 4 ulps (glibc's measure <= 1 ulp:
 * tests/test_c_runtime.py checks it against mpmath). A coordinate whose ball meets two
 * lattice cells is refined: levels 1, 2, ... <= GP_LEVELS append one 64-bit word to every
 * uniform of its group, and a fixed-point interval kernel on 64-bit limbs (below) encloses
 * x + scale Z, until both ends round to one lattice point. Both paths are rigorous, so the
 * release is the exact rounding of the ideal sample, the same bits as the Python target's.
 *
 * Memory. No allocation: per row, stack arrays of GP_MAX_DIM coordinates (define it before
 * this file to change it; a larger d gives GP_ENOMEM), and the kernel's numbers of
 * GP_LIMBS limbs (level L <= 64 needs 52 + 64 L bits of each uniform and 140 guard bits:
 * L + 3 fraction limbs and one integer limb). At most about 90 KB of stack at
 * GP_MAX_DIM = 1024 (gcc -fstack-usage).
 *
 * Outputs are written only on GP_OK: a call of at most GP_MAX_DIM values computes into a
 * stack buffer and copies it; a larger one computes twice, first without writing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
#include <sys/random.h>
#define GP_HAVE_GETRANDOM 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GP_UNUSED __attribute__((unused))
#else
#define GP_UNUSED
#endif

#ifndef GP_MAX_DIM
#define GP_MAX_DIM 1024
#endif
#define GP_PAIRS ((GP_MAX_DIM + 1) / 2)

#ifdef GP_STATS /* test builds: how many coordinates and Gamma attempts were refined */
static unsigned long gp_stats_refined, gp_stats_mt_refined;
#define GP_COUNT(counter) ((counter)++)
#else
#define GP_COUNT(counter) ((void)0)
#endif

#define GP_LATTICE_BITS 16   /* gamma = 2^(floor(log2 scale) - 16): runtime/exact.py */
#define GP_U 0x1p-53         /* unit roundoff */
#define GP_LIB_ULPS 4        /* assumed error of libm's log and tan, in ulps (<= 2 U |v|) */
#define GP_TINY 0x1p-1000    /* an absolute floor under every radius (covers underflow) */
#define GP_GROW (1 + 0x1p-40) /* covers the rounding of the few operations forming a radius */
#define GP_LEVELS 64         /* refinement levels before GP_EUNDECIDED (p < 2^-4000) */
#define GP_MT_SHAPE 16       /* the radius's tail Gamma(a) by Marsaglia-Tsang from a >= 16 */
#define GP_MT_ATTEMPTS 65536 /* each accepted w.p. >= 0.95: never reached */
/* |cos~ - cos 2 pi U| (exact.py, _TRIG: the angle 10 U, tan's 2 GP_LIB_ULPS U, the map 7 U) */
#define GP_TRIG ((10 + 2 * GP_LIB_ULPS + 7) * GP_U)
#define GP_ANGLE (GP_TRIG + 4 * GP_U)

static GP_UNUSED const char *gp_status_message(int status)
{
    switch (status) {
    case GP_OK: return "success";
    case GP_EINVAL: return "an argument is out of its domain (NaN or infinite, a budget <= 0, a bad key)";
    case GP_EENTROPY: return "the source of random bytes failed";
    case GP_ERANGE: return "a release or a bound is beyond float64 or the lattice's 2^50 steps";
    case GP_ENOMEM: return "a buffer is too small (a row longer than GP_MAX_DIM)";
    case GP_EUNDECIDED: return "exact noise: no lattice cell after 64 refinements (p < 2^-4000)";
    case GP_ECAP: return "the device ledger: the release would take the epoch's spend above its cap";
    case GP_ELEDGER: return "the device ledger: its file or stored releases cannot be read or written";
    default: return "unknown status";
    }
}

/* -- SHAKE128 (FIPS 202): Keccak-f[1600] on 25 little-endian 64-bit lanes --------------- */

static const uint64_t gp_keccak_rc[24] = {
    0x0000000000000001u, 0x0000000000008082u, 0x800000000000808au, 0x8000000080008000u,
    0x000000000000808bu, 0x0000000080000001u, 0x8000000080008081u, 0x8000000000008009u,
    0x000000000000008au, 0x0000000000000088u, 0x0000000080008009u, 0x000000008000000au,
    0x000000008000808bu, 0x800000000000008bu, 0x8000000000008089u, 0x8000000000008003u,
    0x8000000000008002u, 0x8000000000000080u, 0x000000000000800au, 0x800000008000000au,
    0x8000000080008081u, 0x8000000000008080u, 0x0000000080000001u, 0x8000000080008008u};
static uint64_t gp_rotl(uint64_t x, unsigned n) { return (x << n) | (x >> (64 - n)); }

/* Keccak-f[1600]: 24 rounds of theta, rho and pi, chi, iota; lane (x, y) is a[x + 5 y]. */
static void gp_keccak_f(uint64_t a[25])
{
    for (int round = 0; round < 24; round++) {
        uint64_t c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20], c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
        uint64_t c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22], c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
        uint64_t c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
        uint64_t d0 = c4 ^ gp_rotl(c1, 1), d1 = c0 ^ gp_rotl(c2, 1), d2 = c1 ^ gp_rotl(c3, 1);
        uint64_t d3 = c2 ^ gp_rotl(c4, 1), d4 = c3 ^ gp_rotl(c0, 1);
        uint64_t b[25];
        for (int y = 0; y < 25; y += 5) {
            a[y] ^= d0;
            a[y + 1] ^= d1;
            a[y + 2] ^= d2;
            a[y + 3] ^= d3;
            a[y + 4] ^= d4;
        }
        /* rho and pi: lane x + 5 y, rotated by rho's offset, moves to y + 5 ((2 x + 3 y) mod 5)
         * (FIPS 202, sections 3.2.2-3.2.3) */
        b[0] = a[0]; b[10] = gp_rotl(a[1], 1); b[20] = gp_rotl(a[2], 62);
        b[5] = gp_rotl(a[3], 28); b[15] = gp_rotl(a[4], 27);
        b[16] = gp_rotl(a[5], 36); b[1] = gp_rotl(a[6], 44); b[11] = gp_rotl(a[7], 6);
        b[21] = gp_rotl(a[8], 55); b[6] = gp_rotl(a[9], 20);
        b[7] = gp_rotl(a[10], 3); b[17] = gp_rotl(a[11], 10); b[2] = gp_rotl(a[12], 43);
        b[12] = gp_rotl(a[13], 25); b[22] = gp_rotl(a[14], 39);
        b[23] = gp_rotl(a[15], 41); b[8] = gp_rotl(a[16], 45); b[18] = gp_rotl(a[17], 15);
        b[3] = gp_rotl(a[18], 21); b[13] = gp_rotl(a[19], 8);
        b[14] = gp_rotl(a[20], 18); b[24] = gp_rotl(a[21], 2); b[9] = gp_rotl(a[22], 61);
        b[19] = gp_rotl(a[23], 56); b[4] = gp_rotl(a[24], 14);
        for (int y = 0; y < 25; y += 5) {
            a[y] = b[y] ^ (~b[y + 1] & b[y + 2]);
            a[y + 1] = b[y + 1] ^ (~b[y + 2] & b[y + 3]);
            a[y + 2] = b[y + 2] ^ (~b[y + 3] & b[y + 4]);
            a[y + 3] = b[y + 3] ^ (~b[y + 4] & b[y]);
            a[y + 4] = b[y + 4] ^ (~b[y] & b[y + 1]);
        }
        a[0] ^= gp_keccak_rc[round];
    }
}

/* A SHAKE128 output stream: the state holds output block `block` (168 bytes, 21 lanes). */
typedef struct gp_xof {
    uint64_t a[25];
    uint64_t block;
} gp_xof;

static void gp_xor_byte(uint64_t a[25], size_t i, unsigned char byte)
{
    a[i / 8] ^= (uint64_t)byte << (8 * (i % 8));
}

/* Absorb a message with SHAKE's padding (the suffix 1111, then pad10*1) at rate 168. */
static void gp_xof_absorb(gp_xof *s, const unsigned char *message, size_t size)
{
    memset(s->a, 0, sizeof s->a);
    for (; size >= 168; message += 168, size -= 168) {
        for (size_t i = 0; i < 168; i++)
            gp_xor_byte(s->a, i, message[i]);
        gp_keccak_f(s->a);
    }
    for (size_t i = 0; i < size; i++)
        gp_xor_byte(s->a, i, message[i]);
    gp_xor_byte(s->a, size, 0x1F);
    gp_xor_byte(s->a, 167, 0x80);
    gp_keccak_f(s->a);
    s->block = 0;
}

/* The little-endian word at bytes 8 index of the stream (indices in increasing order). */
static uint64_t gp_xof_word(gp_xof *s, uint64_t index)
{
    for (; s->block < index / 21; s->block++)
        gp_keccak_f(s->a);
    return s->a[index % 21];
}

/* The stream of the address (row, level): key || LE64(row) || LE32(level), 44 bytes. */
static void gp_xof_address(gp_xof *s, const unsigned char key[32], uint64_t row, uint32_t level)
{
    unsigned char message[44];
    memcpy(message, key, 32);
    for (int i = 0; i < 8; i++)
        message[32 + i] = (unsigned char)(row >> (8 * i));
    for (int i = 0; i < 4; i++)
        message[40 + i] = (unsigned char)(level >> (8 * i));
    gp_xof_absorb(s, message, sizeof message);
}

static uint64_t gp_word(const unsigned char key[32], uint64_t row, uint64_t index, uint32_t level)
{
    gp_xof s;
    gp_xof_address(&s, key, row, level);
    return gp_xof_word(&s, index);
}

/* -- Sources ------------------------------------------------------------------------------ */

/* getrandom(2) where glibc has it, else /dev/urandom; short reads and EINTR are retried. */
static int gp_fill_os(void *context, unsigned char *out, size_t size)
{
    size_t done = 0;
    (void)context;
#ifdef GP_HAVE_GETRANDOM
    while (done < size) {
        ssize_t got = getrandom(out + done, size - done, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        done += (size_t)got;
    }
    if (done == size)
        return 0;
    done = 0; /* ENOSYS (an old kernel): /dev/urandom */
#endif
    FILE *file = fopen("/dev/urandom", "rb");
    if (!file)
        return 1;
    setvbuf(file, NULL, _IONBF, 0);
    while (done < size) {
        size_t got = fread(out + done, 1, size - done, file);
        done += got;
        if (got == 0 && !(ferror(file) && errno == EINTR))
            break;
        clearerr(file);
    }
    fclose(file);
    return done == size ? 0 : 1;
}

static GP_UNUSED void gp_source_callback(gp_source *source, gp_fill_fn fill, void *context)
{
    memset(source, 0, sizeof *source);
    source->fill = fill;
    source->context = context;
}

static GP_UNUSED void gp_source_os(gp_source *source)
{
    gp_source_callback(source, gp_fill_os, NULL);
}

static GP_UNUSED void gp_source_key(gp_source *source, const unsigned char key[32], uint64_t row)
{
    memset(source, 0, sizeof *source);
    source->keyed = 1;
    memcpy(source->key, key, 32);
    source->row = row;
}

static int gp_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Exactly 64 hexadecimal digits, the first byte first (docs/reference/randomness.md). */
static GP_UNUSED int gp_parse_key(const char *hex, unsigned char key[32])
{
    unsigned char bytes[32];
    if (!hex)
        return GP_EINVAL;
    for (int i = 0; i < 32; i++) {
        int high = gp_hex_digit(hex[2 * i]), low = high < 0 ? -1 : gp_hex_digit(hex[2 * i + 1]);
        if (high < 0 || low < 0)
            return GP_EINVAL;
        bytes[i] = (unsigned char)(16 * high + low);
    }
    if (hex[64] != '\0')
        return GP_EINVAL;
    memcpy(key, bytes, 32);
    return GP_OK;
}

/* -- Scales, the lattice and the clip ------------------------------------------------------ */

/* The low and high 64 bits of a b. */
static uint64_t gp_mul64(uint64_t a, uint64_t b, uint64_t *high)
{
    uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);
    *high = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (p00 & 0xFFFFFFFFu);
}

/* A positive finite float as M 2^e, M a 53-bit integer (subnormals too). */
static uint64_t gp_mantissa(double v, int *e)
{
    double f = frexp(v, e);
    *e -= 53;
    return (uint64_t)ldexp(f, 53);
}

/* Whether 2 rho s^2 >= 1, exactly: S^2 P (159 bits in three limbs) against 2^-(2 es + ep + 1). */
static int gp_rho_scale_holds(double s, double rho)
{
    int es, ep;
    uint64_t S = gp_mantissa(s, &es), P = gp_mantissa(rho, &ep), high, carry, product[3];
    uint64_t square = gp_mul64(S, S, &high);
    product[0] = gp_mul64(square, P, &carry);
    product[1] = gp_mul64(high, P, &product[2]) + carry;
    product[2] += product[1] < carry;
    int power = -(2 * es + ep + 1); /* compare with 2^power */
    if (power < 0)
        return 1;
    if (power >= 192)
        return 0;
    int limb = power / 64;
    uint64_t bit = (uint64_t)1 << (power % 64);
    for (int i = 2; i > limb; i--)
        if (product[i])
            return 1;
    if (product[limb] != bit)
        return product[limb] > bit;
    for (int i = limb - 1; i >= 0; i--)
        if (product[i])
            return 1;
    return 1; /* equal */
}

/* 1/epsilon rounded up to a float (rounding.ceil_float of the exact 1/epsilon). q = fl(1/eps)
 * is within half an ulp of 1/eps; fma(q, eps, -1) rounds the exact q eps - 1 once, and a
 * nonzero one has |q eps - 1| >= 2^-106 (q eps is a 106-bit integer times 2^(eq + ee) near 1),
 * so its sign is exact: q < 1/eps iff it is negative, and then the answer is nextup(q). */
static GP_UNUSED int gp_scale_epsilon(double epsilon, double *scale)
{
    if (!(isfinite(epsilon) && epsilon > 0))
        return GP_EINVAL;
    double q = 1.0 / epsilon;
    if (isfinite(q) && fma(q, epsilon, -1.0) < 0)
        q = nextafter(q, INFINITY);
    if (!isfinite(q))
        return GP_ERANGE;
    *scale = q;
    return GP_OK;
}

/* sqrt(1/(2 rho)) rounded up (rounding.ceil_sqrt): the least float s with 2 rho s^2 >= 1,
 * decided in integers (gp_rho_scale_holds). The first guess 2^-m sqrt(1/(2 r)), rho = r 4^m
 * with r in [1/2, 2), is within a few ulps; s <= 2^537, so it never overflows. */
static GP_UNUSED int gp_scale_rho(double rho, double *scale)
{
    int k;
    if (!(isfinite(rho) && rho > 0))
        return GP_EINVAL;
    double r = frexp(rho, &k);
    if (k % 2) {
        r *= 2;
        k -= 1;
    }
    double s = ldexp(sqrt(0.5 / r), -k / 2);
    while (!gp_rho_scale_holds(s, rho))
        s = nextafter(s, INFINITY);
    while (gp_rho_scale_holds(nextafter(s, 0.0), rho))
        s = nextafter(s, 0.0);
    *scale = s;
    return GP_OK;
}

/* The largest power of two <= scale, times 2^-16 (exact.py, lattice). */
static GP_UNUSED int gp_lattice(double scale, double *gamma)
{
    int e;
    if (!(isfinite(scale) && scale >= 0x1p-1006))
        return GP_EINVAL;
    frexp(scale, &e);
    *gamma = ldexp(1.0, e - 1 - GP_LATTICE_BITS);
    return GP_OK;
}

/* NumPy's pairwise sum (pairwise_sum_DOUBLE) of the squares c[i] c[i] (formed first: no
 * fused multiply-add), eight partial sums below 129 terms, halves above. */
static double gp_pairwise_squares(const double *c, size_t n)
{
    if (n < 8) {
        double sum = -0.0;
        for (size_t i = 0; i < n; i++)
            sum += c[i] * c[i];
        return sum;
    }
    if (n <= 128) {
        double r[8], sum;
        size_t i;
        for (int j = 0; j < 8; j++)
            r[j] = c[j] * c[j];
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += c[i + j] * c[i + j];
        sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            sum += c[i] * c[i];
        return sum;
    }
    size_t half = n / 2;
    half -= half % 8;
    return gp_pairwise_squares(c, half) + gp_pairwise_squares(c + half, n - half);
}

/* A row's sum of squares as clip.py's _sum_squares forms it (numpy.sum of a contiguous row:
 * 0 plus the pairwise sum), so gp_clip_rows gives clip.py's bits on every platform. */
static double gp_sum_squares(const double *c, size_t d)
{
    return 0.0 + gp_pairwise_squares(c, d);
}

/* clip.py, _clip_scaled: a row scaled by its largest |entry| first (no overflow). */
static void gp_clip_scaled(double *c, size_t d, double bound)
{
    double big = 0.0, unit[GP_MAX_DIM];
    for (size_t i = 0; i < d; i++)
        big = fabs(c[i]) > big ? fabs(c[i]) : big;
    for (size_t i = 0; i < d; i++)
        unit[i] = c[i] / big;
    double norm = sqrt(gp_sum_squares(unit, d));
    if (big * norm > bound)
        for (size_t i = 0; i < d; i++)
            c[i] = unit[i] * (bound / norm);
}

/* c * min(1, B/||c||) per row, in place (runtime/clip.py, clip_rows, bit for bit). */
static GP_UNUSED int gp_clip_rows(double *c, size_t rows, size_t d, double bound)
{
    if (!(isfinite(bound) && bound > 0))
        return GP_EINVAL;
    if (d > GP_MAX_DIM)
        return GP_ENOMEM;
    for (size_t i = 0; i < rows * d; i++)
        if (!isfinite(c[i]))
            return GP_EINVAL;
    for (double *row = c; row < c + rows * d; row += d) {
        double squares = gp_sum_squares(row, d);
        int safe = squares >= 0x1p-900 && squares <= 0x1p900;
        double factor = safe && squares > bound * bound ? bound / sqrt(squares) : 1.0;
        if (!safe || factor < 0x1p-960) {
            int zero = 1;
            for (size_t i = 0; i < d; i++)
                zero &= row[i] == 0;
            if (!zero)
                gp_clip_scaled(row, d, bound);
        } else if (factor != 1.0) {
            for (size_t i = 0; i < d; i++)
                row[i] *= factor;
        }
    }
    return GP_OK;
}

/* -- The fast path: balls (mid, rad) in float64 (exact.py, whose derivations hold here) ---- */

typedef struct gp_ball {
    double mid, rad;
} gp_ball;

static gp_ball gp_add(gp_ball a, gp_ball b)
{
    double mid = a.mid + b.mid;
    return (gp_ball){mid, (a.rad + b.rad + GP_U * fabs(mid) + GP_TINY) * GP_GROW};
}

static gp_ball gp_times(gp_ball a, gp_ball b)
{
    double mid = a.mid * b.mid;
    double rad = fabs(a.mid) * b.rad + fabs(b.mid) * a.rad + a.rad * b.rad;
    return (gp_ball){mid, (rad + GP_U * fabs(mid) + GP_TINY) * GP_GROW};
}

static double gp_from_bits(uint64_t bits)
{
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static uint64_t gp_to_bits(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

/* E = -ln U at the midpoint u = (2m + 1) 2^-53 of U's interval [m, m + 1] 2^-52 (m the top 52
 * bits; u formed exactly as 1 + m 2^-52 - (1 - 2^-53)), and v = 1/u (inf for m = 0). */
static void gp_exponential(uint64_t word, double *e, double *v)
{
    double u = gp_from_bits((word >> 12) | 0x3FF0000000000000u) - (1 - 0x1p-53);
    *v = u == 0x1p-53 ? INFINITY : 1 / u;
    *e = -log(u);
}

/* E's radius: the slope bound 2^-52 v, libm's 2 GP_LIB_ULPS U E, and their rounding. */
static double gp_exp_radius(double e, double v)
{
    double rad = 0x1p-52 * v;
    rad += (2 * GP_LIB_ULPS * GP_U) * e;
    rad += GP_TINY;
    return rad * GP_GROW;
}

static gp_ball gp_exp_ball(uint64_t word)
{
    double e, v;
    gp_exponential(word, &e, &v);
    return (gp_ball){e, gp_exp_radius(e, v)};
}

/* cos and sin of theta = 2 pi U within GP_TRIG, by one tangent of an angle in [0, pi/4]
 * (exact.py, _angles): b, c the word's top bits, S = 2U - b, R = min(S, 1 - S), x = pi R/2. */
static void gp_angle(uint64_t word, double *cosine, double *sine)
{
    double r = gp_from_bits(((word >> 11) & 0xFFFFFFFFFFFFFu) | 0x3FF0000000000001u) - 1.0;
    r = r < 1.0 - r ? r : 1.0 - r;
    r *= 0x1.921fb54442d18p+0; /* fl(pi)/2 */
    double t = tan(r), w = t * t;
    w += 1.0;
    w = 2.0 / w;
    t *= w; /* sin 2x */
    w -= 1.0; /* cos 2x */
    uint64_t sign = word & 0x8000000000000000u;
    *sine = gp_from_bits(gp_to_bits(t) ^ sign);
    sign ^= (word << 1) & 0x8000000000000000u;
    *cosine = gp_from_bits(gp_to_bits(w) ^ sign);
}

/* sqrt(times E) for E in (e, rad): |sqrt(tE) - sqrt(te)| <= t rad / sqrt(te), plus rounding. */
static gp_ball gp_root_ball(gp_ball e, double times)
{
    double g = sqrt(e.mid * times);
    double rad = (e.rad * times) / g;
    rad += GP_U * g;
    rad += GP_TINY;
    return (gp_ball){g, rad * GP_GROW};
}

/* Pairwise sum of e[lo, lo + size) in a fixed tree (zeros past n): L levels err by at most
 * L U times the sum of non-negative terms. */
static double gp_tree(const double *e, size_t n, size_t lo, size_t size)
{
    if (lo >= n)
        return 0.0;
    if (size == 1)
        return e[lo];
    return gp_tree(e, n, lo, size / 2) + gp_tree(e, n, lo + size / 2, size / 2);
}

/* The ball of E_1 + ... + E_n (exact.py, _exp_sum). */
static gp_ball gp_exp_sum(const double *e, const double *v, size_t n)
{
    int levels = 0;
    while (((size_t)1 << levels) < n)
        levels++;
    double total = n ? gp_tree(e, n, 0, (size_t)1 << levels) : 0.0, vsum = 0.0;
    for (size_t i = 0; i < n; i++)
        vsum += v[i];
    double spread = 0x1p-52 * vsum + (2 * GP_LIB_ULPS * GP_U) * total;
    double rad = spread * (1 + 2 * ((double)n + 3) * GP_U) + (levels + 1) * GP_U * total;
    return (gp_ball){total, (rad + GP_TINY) * GP_GROW};
}

/* rint ties to even: by the shift (v + 1.5 2^52) - 1.5 2^52 for |v| < 2^51 (+0, never -0). */
static double gp_rint(double v)
{
    if (!(fabs(v) < 0x1p51))
        return nearbyint(v);
    return (v + 0x1.8p52) - 0x1.8p52;
}

/* round_gamma(x + v) for v in the ball (mid, rad) of v / gamma (exact.py, _decide): x / gamma
 * = k + r exactly (x a lattice point when |x| >= 2^52 gamma: k gamma = x, r = 0),
 * t = fl(r + mid) within U (1/2 + |mid|), j = rint(t); decided when |t - j| + rad + that
 * error < 1/2 (a float sum below 1/2 means the real one is). Release (k + j) gamma, or
 * x + j gamma for a lattice point x, correctly rounded; +0, never -0. */
static int gp_fast_cell(double x, double mid, double rad, double gamma, double *release)
{
    int lattice_point = !(fabs(x) < 0x1p52 * gamma);
    double k = 0.0, t = mid;
    if (!lattice_point) {
        double scaled = x * (1 / gamma);
        k = gp_rint(scaled);
        t = (scaled - k) + mid;
    }
    double j = gp_rint(t);
    double error = (rad + (fabs(mid) + 0.5) * GP_U) * GP_GROW;
    if (!(fabs(t - j) + error < 0.5))
        return 0;
    *release = (lattice_point ? x + j * gamma : (k + j) * gamma) + 0.0;
    return 1;
}

/* -- The exact kernel: fixed-point intervals on 64-bit limbs ------------------------------
 * A number is (-1)^neg m 2^(-64 f), m of n = f + 1 limbs (one integer limb), f = L + 3 at
 * level L: a uniform's 52 + 64 L bits sit exactly 140 bits above the last. Products,
 * quotients and roots round in a chosen direction; ln 2, pi, ln and (cos, sin) are series
 * whose errors are bounded below in ulps (2^(-64 f)); an interval is [lo, hi]. An integer
 * part beyond 2^62 sets `bad`: the level's enclosures are void (undecided). */
#define GP_LIMBS (GP_LEVELS + 4)

typedef struct gp_fx {
    uint64_t m[GP_LIMBS];
    int neg;
} gp_fx;

typedef struct gp_iv {
    gp_fx lo, hi;
} gp_iv;

typedef struct gp_prec {
    int n, f, bad;
} gp_prec;

static int gp_mag_cmp(const uint64_t *a, const uint64_t *b, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int gp_mag_zero(const uint64_t *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i])
            return 0;
    return 1;
}

static uint64_t gp_mag_add(uint64_t *r, const uint64_t *a, const uint64_t *b, int n)
{
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = a[i] + carry;
        carry = s < carry;
        r[i] = s + b[i];
        carry += r[i] < s;
    }
    return carry;
}

static void gp_mag_sub(uint64_t *r, const uint64_t *a, const uint64_t *b, int n)
{
    uint64_t borrow = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = a[i] - borrow;
        borrow = a[i] < borrow;
        borrow += s < b[i];
        r[i] = s - b[i];
    }
}

/* Adds 2^bit to a (n limbs); returns the carry out. */
static uint64_t gp_mag_add_bit(uint64_t *a, int n, int bit)
{
    uint64_t add = (uint64_t)1 << (bit % 64);
    for (int i = bit / 64; i < n; i++) {
        a[i] += add;
        if (a[i] >= add)
            return 0;
        add = 1;
    }
    return 1;
}

/* a / k for k < 2^32 (truncated); returns the remainder. */
static uint64_t gp_mag_divsmall(uint64_t *r, const uint64_t *a, uint32_t k, int n)
{
    uint64_t rem = 0;
    for (int i = n - 1; i >= 0; i--) {
        uint64_t high = (rem << 32) | (a[i] >> 32), qh = high / k;
        rem = high % k;
        uint64_t low = (rem << 32) | (a[i] & 0xFFFFFFFFu), ql = low / k;
        rem = low % k;
        r[i] = (qh << 32) | ql;
    }
    return rem;
}

/* a k for k < 2^32; returns the carry out. */
static uint64_t gp_mag_mulsmall(uint64_t *r, const uint64_t *a, uint32_t k, int n)
{
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t high, low = gp_mul64(a[i], k, &high);
        r[i] = low + carry;
        carry = high + (r[i] < low);
    }
    return carry;
}

static int gp_mag_bit(const uint64_t *a, int bit) { return (int)(a[bit / 64] >> (bit % 64)) & 1; }

static void gp_mag_shl1(uint64_t *a, int n)
{
    for (int i = n - 1; i > 0; i--)
        a[i] = (a[i] << 1) | (a[i - 1] >> 63);
    a[0] <<= 1;
}

static void gp_mag_shr1(uint64_t *a, int n)
{
    for (int i = 0; i + 1 < n; i++)
        a[i] = (a[i] >> 1) | (a[i + 1] << 63);
    a[n - 1] >>= 1;
}

/* The highest set bit of a (n limbs), -1 for zero. */
static int gp_mag_top(const uint64_t *a, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (a[i])
            for (int b = 63; b >= 0; b--)
                if (a[i] >> b & 1)
                    return 64 * i + b;
    return -1;
}

static void gp_fx_zero(const gp_prec *p, gp_fx *r)
{
    memset(r->m, 0, sizeof(uint64_t) * (size_t)p->n);
    r->neg = 0;
}

static void gp_fx_int(const gp_prec *p, gp_fx *r, uint64_t v)
{
    gp_fx_zero(p, r);
    r->m[p->f] = v;
}

/* Checks the integer part: beyond 2^62 the level is void. */
static void gp_fx_check(gp_prec *p, gp_fx *r)
{
    if (r->m[p->f] >> 62)
        p->bad = 1;
    if (gp_mag_zero(r->m, p->n))
        r->neg = 0;
}

/* Rounds a magnitude up by one ulp when bits were dropped and the direction asks for it:
 * toward +inf for up (magnitude up if positive), toward -inf otherwise. */
static void gp_fx_round(gp_prec *p, gp_fx *r, int dropped, int up)
{
    if (dropped && up != r->neg && gp_mag_add_bit(r->m, p->n, 0))
        p->bad = 1;
    gp_fx_check(p, r);
}

static void gp_fx_add(gp_prec *p, gp_fx *r, const gp_fx *a, const gp_fx *b)
{
    int an = a->neg, bn = b->neg;
    if (an == bn) {
        if (gp_mag_add(r->m, a->m, b->m, p->n))
            p->bad = 1;
        r->neg = an;
    } else if (gp_mag_cmp(a->m, b->m, p->n) >= 0) {
        gp_mag_sub(r->m, a->m, b->m, p->n);
        r->neg = an;
    } else {
        gp_mag_sub(r->m, b->m, a->m, p->n);
        r->neg = bn;
    }
    gp_fx_check(p, r);
}

static void gp_fx_neg(gp_fx *r, const gp_fx *a, const gp_prec *p)
{
    if (r != a)
        *r = *a;
    r->neg = !a->neg && !gp_mag_zero(a->m, p->n);
}

static void gp_fx_sub(gp_prec *p, gp_fx *r, const gp_fx *a, const gp_fx *b)
{
    gp_fx nb;
    gp_fx_neg(&nb, b, p);
    gp_fx_add(p, r, a, &nb);
}

static int gp_fx_cmp(const gp_fx *a, const gp_fx *b, const gp_prec *p)
{
    if (a->neg != b->neg)
        return a->neg ? -1 : 1;
    int c = gp_mag_cmp(a->m, b->m, p->n);
    return a->neg ? -c : c;
}

static void gp_fx_mul(gp_prec *p, gp_fx *r, const gp_fx *a, const gp_fx *b, int up)
{
    uint64_t t[2 * GP_LIMBS];
    int n = p->n, f = p->f, dropped = 0;
    memset(t, 0, sizeof(uint64_t) * (size_t)(2 * n));
    for (int i = 0; i < n; i++) {
        uint64_t carry = 0;
        if (!a->m[i])
            continue;
        for (int j = 0; j < n; j++) {
            uint64_t high, low = gp_mul64(a->m[i], b->m[j], &high);
            low += carry;
            high += low < carry;
            t[i + j] += low;
            carry = high + (t[i + j] < low);
        }
        t[i + n] = carry;
    }
    for (int i = 0; i < f; i++)
        dropped |= t[i] != 0;
    if (t[2 * n - 1])
        p->bad = 1;
    memcpy(r->m, t + f, sizeof(uint64_t) * (size_t)n);
    r->neg = a->neg ^ b->neg;
    gp_fx_round(p, r, dropped, up);
}

/* a / b by binary long division (b != 0). */
static void gp_fx_div(gp_prec *p, gp_fx *r, const gp_fx *a, const gp_fx *b, int up)
{
    uint64_t q[GP_LIMBS], rem[GP_LIMBS + 1], divisor[GP_LIMBS + 1];
    int n = p->n, f = p->f;
    if (gp_mag_zero(b->m, n)) {
        p->bad = 1;
        return;
    }
    memset(q, 0, sizeof q);
    memset(rem, 0, sizeof rem);
    memcpy(divisor, b->m, sizeof(uint64_t) * (size_t)n);
    divisor[n] = 0;
    int neg = a->neg ^ b->neg, top = gp_mag_top(a->m, n);
    for (int bit = top + 64 * f; bit >= 0; bit--) { /* the numerator is a 2^(64 f) */
        gp_mag_shl1(rem, n + 1);
        rem[0] |= bit >= 64 * f ? (uint64_t)gp_mag_bit(a->m, bit - 64 * f) : 0;
        if (gp_mag_cmp(rem, divisor, n + 1) >= 0) {
            gp_mag_sub(rem, rem, divisor, n + 1);
            if (bit >= 64 * n)
                p->bad = 1;
            else
                q[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    memcpy(r->m, q, sizeof(uint64_t) * (size_t)n);
    r->neg = neg;
    gp_fx_round(p, r, !gp_mag_zero(rem, n + 1), up);
}

/* sqrt(a) for a >= 0: the integer root of a 2^(64 f), bit by bit. */
static void gp_fx_sqrt(gp_prec *p, gp_fx *r, const gp_fx *a, int up)
{
    uint64_t num[2 * GP_LIMBS], res[2 * GP_LIMBS], t[2 * GP_LIMBS];
    int n = p->n, f = p->f, w = n + f;
    memset(num, 0, sizeof num);
    memset(res, 0, sizeof res);
    memcpy(num + f, a->m, sizeof(uint64_t) * (size_t)n);
    int top = gp_mag_top(num, w);
    for (int bit = top < 0 ? -1 : top - top % 2; bit >= 0; bit -= 2) {
        memcpy(t, res, sizeof(uint64_t) * (size_t)w);
        gp_mag_add_bit(t, w, bit);
        if (gp_mag_cmp(num, t, w) >= 0) {
            gp_mag_sub(num, num, t, w);
            gp_mag_shr1(res, w);
            gp_mag_add_bit(res, w, bit);
        } else {
            gp_mag_shr1(res, w);
        }
    }
    memcpy(r->m, res, sizeof(uint64_t) * (size_t)n);
    r->neg = 0;
    gp_fx_round(p, r, !gp_mag_zero(num, w), up);
}

/* ln 2 = sum 2 / ((2k + 1) 3^(2k + 1)), truncated terms: r <= ln 2 <= r + 2^12 ulp (each of
 * the <= 1400 terms low by < 2.2 ulp, the tail after the last below 1.3 ulp). */
static void gp_ln2(const gp_prec *p, gp_fx *r)
{
    gp_fx power, term;
    gp_fx_zero(p, r);
    gp_fx_int(p, &power, 2);
    gp_mag_divsmall(power.m, power.m, 3, p->n);
    for (uint32_t k = 1; !gp_mag_zero(power.m, p->n); k += 2) {
        gp_mag_divsmall(term.m, power.m, k, p->n);
        gp_mag_add(r->m, r->m, term.m, p->n);
        gp_mag_divsmall(power.m, power.m, 9, p->n);
    }
}

/* The terms of atan(1/k) = sum (-1)^j / ((2j + 1) k^(2j + 1)), added to plus and minus by
 * sign: each of the N <= 64 f / (2 log2 k) + 1 terms within 2.05 ulp, tail below 1.1 ulp. */
static void gp_atan_terms(const gp_prec *p, uint64_t *plus, uint64_t *minus, uint32_t k, uint32_t times)
{
    gp_fx power, term;
    gp_fx_int(p, &power, 1);
    gp_mag_divsmall(power.m, power.m, k, p->n);
    for (uint32_t j = 1; !gp_mag_zero(power.m, p->n); j += 2) {
        gp_mag_divsmall(term.m, power.m, j, p->n);
        gp_mag_mulsmall(term.m, term.m, times, p->n);
        gp_mag_add(j % 4 == 1 ? plus : minus, j % 4 == 1 ? plus : minus, term.m, p->n);
        gp_mag_divsmall(power.m, power.m, k * k, p->n);
    }
}

/* pi = 16 atan(1/5) - 4 atan(1/239) (Machin): |r - pi| <= 16 (2.05 925 + 1.1) + 4 (2.05 275
 * + 1.1) < 2^16 ulp at f <= 67. */
static void gp_pi(const gp_prec *p, gp_fx *r)
{
    gp_fx minus;
    gp_fx_zero(p, r);
    gp_fx_zero(p, &minus);
    gp_atan_terms(p, r->m, minus.m, 5, 16);
    gp_atan_terms(p, minus.m, r->m, 239, 4);
    gp_mag_sub(r->m, r->m, minus.m, p->n);
}

/* ln y for y > 0 within 2^26 ulp. y = z 2^s with z in [3/4, 3/2) (exact, or truncated once
 * when y >= 1: <= 2 ulp, moving ln by <= 2.7); ln z = 2 atanh(t), t = (z - 1)/(z + 1),
 * |t| <= 1/5, truncated (1 ulp, moving 2 atanh by <= 2.1); the series' <= 925 terms each
 * within 2.25 ulp, the tail below 1.4: < 2^13 in all; s ln 2 with |s| < 2^13 errs by
 * < 2^25. */
static void gp_ln(gp_prec *p, gp_fx *r, const gp_fx *y)
{
    gp_fx z, one, num, den, t, t2, power, term, sum, ln2;
    int n = p->n, f = p->f, top = gp_mag_top(y->m, n), s = top - (64 * f - 1);
    gp_fx_zero(p, &z);
    for (int bit = top; bit >= 0 && bit - s >= 0; bit--) /* z = y 2^-s in [1/2, 1) */
        if (gp_mag_bit(y->m, bit))
            z.m[(bit - s) / 64] |= (uint64_t)1 << ((bit - s) % 64);
    if (!gp_mag_bit(z.m, 64 * f - 2)) { /* z < 3/4 */
        gp_mag_shl1(z.m, n);
        s -= 1;
    }
    gp_fx_int(p, &one, 1);
    gp_fx_sub(p, &num, &z, &one);
    int negative = num.neg;
    num.neg = 0;
    gp_fx_add(p, &den, &z, &one);
    gp_fx_div(p, &t, &num, &den, 0);
    gp_fx_mul(p, &t2, &t, &t, 0);
    gp_fx_zero(p, &sum);
    power = t;
    for (uint32_t k = 1; !gp_mag_zero(power.m, n); k += 2) {
        gp_mag_divsmall(term.m, power.m, k, n);
        gp_mag_add(sum.m, sum.m, term.m, n);
        gp_fx_mul(p, &power, &power, &t2, 0);
    }
    gp_mag_shl1(sum.m, n);
    sum.neg = negative;
    gp_ln2(p, &ln2);
    gp_mag_mulsmall(ln2.m, ln2.m, (uint32_t)(s < 0 ? -s : s), n);
    ln2.neg = s < 0;
    gp_fx_add(p, r, &sum, &ln2);
}

/* cos 2 pi u and sin 2 pi u for u in [0, 1) (fraction bits only), each within 2^15 ulp:
 * 4u = q + g, theta = (pi/2)(q + g); with x = (pi/2) min(g, 1 - g) <= pi/4 (|x~ - x| <=
 * 2^14 + 2 from pi's 2^16), cos x and sin x by Taylor series whose <= 700 terms x^m/m! each
 * within 3 ulp (< 2^12), then the quadrant's exact symmetries. */
static void gp_sincos_turn(gp_prec *p, gp_fx *c, gp_fx *s, const gp_fx *u)
{
    gp_fx g, x, pi, term, sums[4], half;
    int n = p->n, f = p->f;
    int q = (int)(u->m[f - 1] >> 62);
    g = *u;
    g.m[f] = 0;
    gp_mag_shl1(g.m, n);
    gp_mag_shl1(g.m, n);
    g.m[f] = 0;
    gp_fx_zero(p, &half);
    half.m[f - 1] = (uint64_t)1 << 63;
    int flip = gp_mag_cmp(g.m, half.m, n) > 0;
    if (flip) {
        gp_fx one;
        gp_fx_int(p, &one, 1);
        gp_mag_sub(g.m, one.m, g.m, n);
    }
    gp_pi(p, &pi);
    gp_fx_mul(p, &x, &pi, &g, 0);
    gp_mag_shr1(x.m, n);
    for (int i = 0; i < 4; i++) /* +cos, +sin, -cos, -sin terms by m mod 4 */
        gp_fx_zero(p, &sums[i]);
    gp_fx_int(p, &term, 1);
    sums[0].m[f] = 1;
    for (uint32_t m = 1; ; m++) {
        gp_fx_mul(p, &term, &term, &x, 0);
        gp_mag_divsmall(term.m, term.m, m, n);
        if (gp_mag_zero(term.m, n))
            break;
        int slot = m % 4 == 1 ? 1 : m % 4 == 2 ? 2 : m % 4 == 3 ? 3 : 0;
        gp_mag_add(sums[slot].m, sums[slot].m, term.m, n);
    }
    gp_fx cx, sx;
    sums[2].neg = sums[3].neg = 1;
    gp_fx_add(p, &cx, &sums[0], &sums[2]);
    gp_fx_add(p, &sx, &sums[1], &sums[3]);
    gp_fx *cg = flip ? &sx : &cx, *sg = flip ? &cx : &sx; /* cos, sin of (pi/2) g */
    switch (q) {
    case 0: *c = *cg; *s = *sg; break;
    case 1: gp_fx_neg(c, sg, p); *s = *cg; break;
    case 2: gp_fx_neg(c, cg, p); gp_fx_neg(s, sg, p); break;
    default: *c = *sg; gp_fx_neg(s, cg, p); break;
    }
}

/* The interval of a uniform at level L: U in [M, M + 1] 2^-b, b = 52 + 64 L, M the top 52 bits
 * of the level-0 word w0 followed by the words of levels 1..L at the uniform's address. */
static void gp_uniform(const gp_prec *p, gp_iv *u, const unsigned char *key, uint64_t row,
                       uint64_t index, uint64_t w0, int level)
{
    uint64_t bits[GP_LIMBS];
    bits[level] = w0 >> 12;
    for (int l = 1; l <= level; l++)
        bits[level - l] = gp_word(key, row, index, (uint32_t)l);
    gp_fx_zero(p, &u->lo); /* lo = M 2^140 ulp: two limbs and 12 bits up */
    for (int i = 0; i <= level; i++) {
        u->lo.m[i + 2] |= bits[i] << 12;
        u->lo.m[i + 3] |= bits[i] >> 52;
    }
    u->hi = u->lo;
    gp_mag_add_bit(u->hi.m, p->n, 140);
}

/* The ulps 2^e, e >= 0, as a number. */
static void gp_fx_ulps(const gp_prec *p, gp_fx *r, int e)
{
    gp_fx_zero(p, r);
    r->m[e / 64] = (uint64_t)1 << (e % 64);
}

static void gp_iv_widen(gp_prec *p, gp_iv *r, const gp_fx *by)
{
    gp_fx_sub(p, &r->lo, &r->lo, by);
    gp_fx_add(p, &r->hi, &r->hi, by);
}

static void gp_iv_add(gp_prec *p, gp_iv *r, const gp_iv *a, const gp_iv *b)
{
    gp_fx_add(p, &r->lo, &a->lo, &b->lo);
    gp_fx_add(p, &r->hi, &a->hi, &b->hi);
}

static void gp_iv_neg(const gp_prec *p, gp_iv *r, const gp_iv *a)
{
    gp_fx lo = a->lo;
    gp_fx_neg(&r->lo, &a->hi, p);
    gp_fx_neg(&r->hi, &lo, p);
}

static void gp_iv_mul(gp_prec *p, gp_iv *r, const gp_iv *a, const gp_iv *b)
{
    const gp_fx *x[4] = {&a->lo, &a->lo, &a->hi, &a->hi}, *y[4] = {&b->lo, &b->hi, &b->lo, &b->hi};
    gp_fx lo, hi, t;
    for (int i = 0; i < 4; i++) {
        gp_fx_mul(p, &t, x[i], y[i], 0);
        if (!i || gp_fx_cmp(&t, &lo, p) < 0)
            lo = t;
        gp_fx_mul(p, &t, x[i], y[i], 1);
        if (!i || gp_fx_cmp(&t, &hi, p) > 0)
            hi = t;
    }
    r->lo = lo;
    r->hi = hi;
}

static void gp_iv_sqr(gp_prec *p, gp_iv *r, const gp_iv *a)
{
    gp_iv_mul(p, r, a, a);
    if (r->lo.neg)
        gp_fx_zero(p, &r->lo);
}

/* a / b for b > 0 (else void). */
static void gp_iv_div(gp_prec *p, gp_iv *r, const gp_iv *a, const gp_iv *b)
{
    gp_fx lo, hi;
    if (b->lo.neg || gp_mag_zero(b->lo.m, p->n)) {
        p->bad = 1;
        return;
    }
    gp_fx_div(p, &lo, &a->lo, a->lo.neg ? &b->lo : &b->hi, 0);
    gp_fx_div(p, &hi, &a->hi, a->hi.neg ? &b->hi : &b->lo, 1);
    r->lo = lo;
    r->hi = hi;
}

/* sqrt(a), a's negative part cut off (the argument is >= 0 by construction). */
static void gp_iv_sqrt(gp_prec *p, gp_iv *r, const gp_iv *a)
{
    if (a->hi.neg) {
        p->bad = 1;
        return;
    }
    if (a->lo.neg)
        gp_fx_zero(p, &r->lo);
    else
        gp_fx_sqrt(p, &r->lo, &a->lo, 0);
    gp_fx_sqrt(p, &r->hi, &a->hi, 1);
}

/* ln a for a > 0 (else void): ln is increasing; gp_ln errs by < 2^26 ulp. */
static void gp_iv_ln(gp_prec *p, gp_iv *r, const gp_iv *a)
{
    gp_fx e;
    if (a->lo.neg || gp_mag_zero(a->lo.m, p->n)) {
        p->bad = 1;
        return;
    }
    gp_ln(p, &r->lo, &a->lo);
    gp_ln(p, &r->hi, &a->hi);
    gp_fx_ulps(p, &e, 26);
    gp_iv_widen(p, r, &e);
}

/* E = -ln U (>= 0). */
static void gp_iv_exponential(gp_prec *p, gp_iv *e, const gp_iv *u)
{
    gp_iv l;
    gp_iv_ln(p, &l, u);
    gp_iv_neg(p, e, &l);
    if (e->lo.neg)
        gp_fx_zero(p, &e->lo);
}

/* cos and sin of 2 pi U: gp_sincos_turn at U's lower end (within 2^15 ulp), widened by the
 * angle's spread 2 pi 2^-b < 7 2^-b = 7 2^140 ulp (cos and sin are 1-Lipschitz). */
static void gp_iv_angle(gp_prec *p, gp_iv *c, gp_iv *s, const gp_iv *u)
{
    gp_fx spread;
    gp_sincos_turn(p, &c->lo, &s->lo, &u->lo);
    c->hi = c->lo;
    s->hi = s->lo;
    gp_fx_zero(p, &spread);
    spread.m[0] = (uint64_t)1 << 15;
    spread.m[2] = (uint64_t)7 << 12;
    gp_iv_widen(p, c, &spread);
    gp_iv_widen(p, s, &spread);
}

/* A float x 2^shift as an interval (exact unless its bits go below the last). */
static void gp_iv_double(gp_prec *p, gp_iv *r, double x, int shift)
{
    int e, top = 64 * p->n;
    gp_fx_zero(p, &r->lo);
    if (x != 0) {
        uint64_t m = gp_mantissa(fabs(x), &e);
        int at = e + shift + 64 * p->f, dropped = 0; /* m 2^at ulps */
        for (int b = 0; b < 53; b++)
            if (m >> b & 1) {
                if (b + at >= top)
                    p->bad = 1;
                else if (b + at >= 0)
                    r->lo.m[(b + at) / 64] |= (uint64_t)1 << ((b + at) % 64);
                else
                    dropped = 1;
            }
        r->lo.neg = x < 0;
        r->hi = r->lo;
        gp_fx_round(p, &r->lo, dropped, 0);
        gp_fx_round(p, &r->hi, dropped, 1);
        return;
    }
    r->hi = r->lo;
}

/* The nearest integer to v, ties to even. */
static int64_t gp_fx_rint(const gp_prec *p, const gp_fx *v)
{
    int f = p->f;
    uint64_t j = v->m[f], rest = 0;
    for (int i = 0; i < f - 1; i++)
        rest |= v->m[i];
    uint64_t top = v->m[f - 1], half = (uint64_t)1 << 63;
    j += top > half || (top == half && (rest || (j & 1)));
    return v->neg ? -(int64_t)j : (int64_t)j;
}

/* The lattice cell of x / gamma - k + unit z for an enclosure z of the noise: 1 and *j when
 * both ends round to one integer. */
static int gp_iv_cell(gp_prec *p, const gp_iv *z, double unit, const gp_iv *offset, int64_t *j)
{
    gp_iv u, v;
    gp_iv_double(p, &u, unit, 0);
    gp_iv_mul(p, &v, &u, z);
    gp_iv_add(p, &v, &v, offset);
    if (p->bad)
        return 0;
    *j = gp_fx_rint(p, &v.lo);
    return *j == gp_fx_rint(p, &v.hi);
}

/* -- The rows ------------------------------------------------------------------------------ */

typedef struct gp_row {
    const unsigned char *key; /* the words' key */
    uint64_t row;             /* the row's address */
    double gamma, unit;       /* the lattice step 2^power, unit = scale / gamma in [2^16, 2^17) */
    int power;
} gp_row;

static void gp_prec_level(gp_prec *p, int level)
{
    p->f = level + 3;
    p->n = level + 4;
    p->bad = 0;
}

/* x / gamma - k exactly (k = rint(x / gamma); 0 and the release x + j gamma for a lattice point). */
static void gp_offset(gp_prec *p, gp_iv *r, double x, const gp_row *g, double *k, int *lattice_point)
{
    *lattice_point = !(fabs(x) < 0x1p52 * g->gamma);
    *k = 0.0;
    gp_fx_zero(p, &r->lo);
    r->hi = r->lo;
    if (*lattice_point)
        return;
    gp_iv kk;
    *k = gp_rint(x * (1 / g->gamma));
    gp_iv_double(p, r, x, -g->power);
    gp_iv_double(p, &kk, -*k, 0);
    gp_iv_add(p, r, r, &kk);
}

static double gp_release(double x, double k, int lattice_point, int64_t j, double gamma)
{
    return (lattice_point ? x + (double)j * gamma : (k + (double)j) * gamma) + 0.0;
}

/* Decides the open members `open` of one group (their noise z_k = noise(k) at each level) by
 * refinement: at level L every uniform of the group reads levels 0..L. */
typedef void (*gp_noise_fn)(gp_prec *p, gp_iv *z, size_t member, int level, const void *group);

static int gp_refine(const double *x, size_t d, const gp_row *g, unsigned char *open, double *out,
                     gp_noise_fn noise, const void *group)
{
    for (int level = 1; level <= GP_LEVELS; level++) {
        int left = 0;
        for (size_t k = 0; k < d; k++) {
            if (!open[k])
                continue;
            gp_prec p;
            gp_iv z, offset;
            double kk;
            int lattice_point;
            int64_t j;
            gp_prec_level(&p, level);
            noise(&p, &z, k, level, group);
            gp_offset(&p, &offset, x[k], g, &kk, &lattice_point);
            if (!p.bad && gp_iv_cell(&p, &z, g->unit, &offset, &j)) {
                out[k] = gp_release(x[k], kk, lattice_point, j, g->gamma);
                open[k] = 0;
                GP_COUNT(gp_stats_refined);
            } else {
                left = 1;
            }
        }
        if (!left)
            return GP_OK;
    }
    return GP_EUNDECIDED;
}

static int gp_finite_row(const double *out, size_t d)
{
    for (size_t k = 0; k < d; k++)
        if (!isfinite(out[k]))
            return GP_ERANGE;
    return GP_OK;
}

/* A Gaussian row: p pairs, words 0..p-1 the radii's U1, p..2p-1 the angles' U2. */
typedef struct gp_gauss_group {
    const gp_row *g;
    const uint64_t *words;
    size_t p;
} gp_gauss_group;

static void gp_gauss_noise(gp_prec *p, gp_iv *z, size_t k, int level, const void *group)
{
    const gp_gauss_group *G = group;
    size_t i = k % G->p;
    gp_iv u1, u2, e, r, c, s;
    gp_uniform(p, &u1, G->g->key, G->g->row, i, G->words[i], level);
    gp_uniform(p, &u2, G->g->key, G->g->row, G->p + i, G->words[G->p + i], level);
    gp_iv_exponential(p, &e, &u1);
    gp_iv_add(p, &e, &e, &e);
    gp_iv_sqrt(p, &r, &e);
    gp_iv_angle(p, &c, &s, &u2);
    gp_iv_mul(p, z, &r, k < G->p ? &c : &s);
}

/* round_gamma(x + scale N) for one row (exact.py, gaussian and _gaussian_balls): per pair,
 * fl(fl(unit r~) c~) within unit (rad_r + r~ GP_TRIG) + 2.01 U unit r~ of unit r C. */
static int gp_gaussian_row(const double *x, size_t d, const gp_row *g, double *out)
{
    size_t p = (d + 1) / 2;
    uint64_t words[2 * GP_PAIRS];
    unsigned char open[GP_MAX_DIM];
    int undecided = 0;
    gp_xof s;
    gp_xof_address(&s, g->key, g->row, 0);
    for (size_t i = 0; i < 2 * p; i++)
        words[i] = gp_xof_word(&s, i);
    for (size_t i = 0; i < p; i++) {
        gp_ball r = gp_root_ball(gp_exp_ball(words[i]), 2.0);
        double cosine, sine;
        gp_angle(words[p + i], &cosine, &sine);
        double h = r.mid * g->unit, rad = r.mid * (GP_TRIG + 2.01 * GP_U);
        rad += r.rad;
        rad *= g->unit;
        rad += GP_TINY;
        rad *= GP_GROW;
        for (size_t k = i; k < d; k += p) {
            open[k] = !gp_fast_cell(x[k], h * (k < p ? cosine : sine), rad, g->gamma, &out[k]);
            undecided |= open[k];
        }
    }
    if (undecided) {
        gp_gauss_group group = {g, words, p};
        int status = gp_refine(x, d, g, open, out, gp_gauss_noise, &group);
        if (status)
            return status;
    }
    return gp_finite_row(out, d);
}

/* Marsaglia and Tsang (2000, ACM TOMS 26), Gamma(a), a >= 1: x the cosine part of the normal
 * pair of uniforms 0 and 1, w = 1 + c x with c = 1/sqrt(9a - 3), dd = a - 1/3; accept when
 * w > 0 and x^2/2 + dd (1 - w^3 + 3 ln w) - ln U_2 > 0; then G = dd w^3. */
static void gp_iv_mt(gp_prec *p, const gp_iv *u, size_t a, gp_iv *w, gp_iv *f, gp_iv *G)
{
    gp_iv e, r, c, s, x, dd, cc, t, cube, three, half, ln_w, e3;
    gp_fx_int(p, &t.lo, 9 * (uint64_t)a - 3);
    t.hi = t.lo;
    gp_iv_sqrt(p, &s, &t);
    gp_fx_int(p, &t.lo, 1);
    t.hi = t.lo;
    gp_iv_div(p, &cc, &t, &s);
    gp_fx_int(p, &dd.lo, 3 * (uint64_t)a - 1);
    dd.hi = dd.lo;
    gp_fx_int(p, &t.lo, 3);
    t.hi = t.lo;
    gp_iv_div(p, &dd, &dd, &t);
    three = t;
    gp_iv_exponential(p, &e, &u[0]);
    gp_iv_add(p, &e, &e, &e);
    gp_iv_sqrt(p, &r, &e);
    gp_iv_angle(p, &c, &s, &u[1]);
    gp_iv_mul(p, &x, &r, &c);
    gp_iv_mul(p, w, &cc, &x);
    gp_fx_int(p, &t.lo, 1);
    t.hi = t.lo;
    gp_iv_add(p, w, w, &t);
    gp_iv_mul(p, &cube, w, w);
    gp_iv_mul(p, &cube, &cube, w);
    gp_iv_mul(p, G, &dd, &cube);
    if (w->lo.neg || gp_mag_zero(w->lo.m, p->n))
        return; /* f only for w > 0 */
    gp_iv_ln(p, &ln_w, w);
    gp_iv_mul(p, &ln_w, &ln_w, &three);
    gp_iv_neg(p, &cube, &cube);
    gp_iv_add(p, &cube, &cube, &t);
    gp_iv_add(p, &cube, &cube, &ln_w);
    gp_iv_mul(p, f, &dd, &cube);
    gp_iv_sqr(p, &x, &x);
    gp_fx_zero(p, &half.lo);
    half.lo.m[p->f - 1] = (uint64_t)1 << 63;
    half.hi = half.lo;
    gp_iv_mul(p, &x, &x, &half);
    gp_iv_add(p, f, f, &x);
    gp_iv_exponential(p, &e3, &u[2]);
    gp_iv_add(p, f, f, &e3);
}

/* A float enclosure of an interval of positive reals: the ends' top limbs as floats (relative
 * error < 2^-52 with the limbs below, plus 2^-64 absolute), the midpoint and a radius covering
 * both ends. */
static gp_ball gp_iv_ball(const gp_prec *p, const gp_iv *v)
{
    int f = p->f;
    double lo = (double)v->lo.m[f] + ldexp((double)v->lo.m[f - 1], -64);
    double hi = (double)v->hi.m[f] + ldexp((double)v->hi.m[f - 1], -64);
    lo = v->lo.neg ? -lo : lo;
    hi = v->hi.neg ? -hi : hi;
    double mid = (lo + hi) * 0.5;
    double rad = (hi - lo) + 0x1p-48 * (fabs(lo) + fabs(hi)) + 0x1p-60;
    return (gp_ball){mid, (rad + GP_TINY) * GP_GROW};
}

/* One attempt from its level-0 words at indices index..index+2 (exact.py, _mt_balls): 1 and
 * G's ball if accepted, -1 if rejected, 0 if the balls do not decide. */
static int gp_mt_ball(const uint64_t *w, size_t a, gp_ball *G)
{
    double dd = (double)(3 * a - 1) / 3.0, c = 1 / sqrt((double)(9 * a - 3));
    gp_ball ddb = {dd, dd * GP_U * GP_GROW}, cb = {c, 2.01 * GP_U * c * GP_GROW};
    gp_ball r = gp_root_ball(gp_exp_ball(w[0]), 2.0);
    double cosine, sine;
    gp_angle(w[1], &cosine, &sine);
    double xrad = r.mid * GP_ANGLE;
    xrad += r.rad;
    xrad += GP_TINY;
    gp_ball x = {cosine * r.mid, xrad * GP_GROW};
    gp_ball wb = gp_add((gp_ball){1.0, 0.0}, gp_times(cb, x));
    double low = wb.mid - wb.rad;
    int positive = low > 0;
    double log_w = log(positive ? wb.mid : 1.0);
    double log_rad = (wb.rad / (positive ? low : 1.0) + 2 * GP_LIB_ULPS * GP_U * fabs(log_w)
                      + GP_TINY) * GP_GROW;
    gp_ball cube = gp_times(gp_times(wb, wb), wb);
    gp_ball inner = gp_add(gp_add((gp_ball){1.0, 0.0}, (gp_ball){-cube.mid, cube.rad}),
                           gp_times((gp_ball){3.0, 0.0}, (gp_ball){log_w, log_rad}));
    gp_ball square = gp_times(x, x);
    gp_ball f = gp_add(gp_add((gp_ball){square.mid * 0.5, square.rad * 0.5}, gp_times(ddb, inner)),
                       gp_exp_ball(w[2]));
    *G = gp_times(ddb, cube);
    if (positive && f.mid - f.rad > 0)
        return 1;
    return wb.mid + wb.rad <= 0 || (positive && f.mid + f.rad < 0) ? -1 : 0;
}

/* An undecided attempt in interval arithmetic (exact.py, _mt_refine). */
static int gp_mt_refine(const gp_row *g, size_t index, const uint64_t *w, size_t a, gp_ball *G,
                        int *accepted)
{
    for (int level = 1; level <= GP_LEVELS; level++) {
        gp_prec p;
        gp_iv u[3], wi, f, Gi;
        gp_prec_level(&p, level);
        for (int j = 0; j < 3; j++)
            gp_uniform(&p, &u[j], g->key, g->row, index + (size_t)j, w[j], level);
        gp_iv_mt(&p, u, a, &wi, &f, &Gi);
        if (p.bad)
            continue;
        if (wi.hi.neg) {
            *accepted = 0;
            return GP_OK;
        }
        if (wi.lo.neg || gp_mag_zero(wi.lo.m, p.n))
            continue;
        if (f.hi.neg) {
            *accepted = 0;
            return GP_OK;
        }
        if (!f.lo.neg && !gp_mag_zero(f.lo.m, p.n)) {
            *accepted = 1;
            *G = gp_iv_ball(&p, &Gi);
            return GP_OK;
        }
    }
    return GP_EUNDECIDED;
}

/* The radius's tail G ~ Gamma(a) by Marsaglia-Tsang: attempt k reads the uniforms
 * start + 3k, +1, +2 (docs/reference/randomness.md); its ball and the accepted index. */
static int gp_mt_tail(gp_xof *s, const gp_row *g, size_t start, size_t a, gp_ball *tail,
                      size_t *accepted_index)
{
    for (size_t k = 0; k < GP_MT_ATTEMPTS; k++) {
        size_t index = start + 3 * k;
        uint64_t w[3] = {gp_xof_word(s, index), gp_xof_word(s, index + 1), gp_xof_word(s, index + 2)};
        int decision = gp_mt_ball(w, a, tail);
        if (!decision) {
            int status = gp_mt_refine(g, index, w, a, tail, &decision);
            GP_COUNT(gp_stats_mt_refined);
            if (status)
                return status;
        }
        if (decision == 1) {
            *accepted_index = index;
            return GP_OK;
        }
    }
    return GP_EUNDECIDED;
}

/* A spherical row: words 0..p-1 give E_1..E_p, p..2p-1 the angles, the tail's uniforms from
 * tail (a exponentials, or the accepted attempt's x pair). */
typedef struct gp_sphere_group {
    const gp_row *g;
    const uint64_t *words;
    size_t d, p, a, tail;
    int mt;
} gp_sphere_group;

static void gp_sphere_uniform(gp_prec *p, gp_iv *u, const gp_sphere_group *S, size_t index, int level)
{
    uint64_t w0 = index < 2 * S->p ? S->words[index] : gp_word(S->g->key, S->g->row, index, 0);
    gp_uniform(p, u, S->g->key, S->g->row, index, w0, level);
}

/* Z_k = R (sqrt(E_i) trig_i) / sqrt(H) (exact.py, spherical_laplace's variates): R = E_1 + ...
 * + E_p + G, H = E_1 + ... + E_(d/2) (+ E_p cos^2 of the last angle for odd d); the ratio lies
 * in [-1, 1] (sqrt(E_i) |trig_i| <= sqrt(H)), so it is clipped there. */
static void gp_sphere_noise(gp_prec *p, gp_iv *z, size_t k, int level, const void *group)
{
    const gp_sphere_group *S = group;
    size_t i = k % S->p;
    gp_iv u, e, half, radius, c, s, t, ratio;
    gp_fx_zero(p, &half.lo);
    half.hi = half.lo;
    radius = half;
    for (size_t m = 0; m < S->p; m++) {
        gp_sphere_uniform(p, &u, S, m, level);
        gp_iv_exponential(p, &e, &u);
        gp_iv_add(p, &radius, &radius, &e);
        if (m < S->d / 2)
            gp_iv_add(p, &half, &half, &e);
    }
    if (S->d % 2) {
        gp_sphere_uniform(p, &u, S, S->p - 1, level);
        gp_iv_exponential(p, &e, &u);
        gp_sphere_uniform(p, &u, S, 2 * S->p - 1, level);
        gp_iv_angle(p, &c, &s, &u);
        gp_iv_sqr(p, &c, &c);
        gp_iv_mul(p, &e, &e, &c);
        gp_iv_add(p, &half, &half, &e);
    }
    if (S->mt) {
        gp_iv mu[3], w, f;
        gp_sphere_uniform(p, &mu[0], S, S->tail, level);
        gp_sphere_uniform(p, &mu[1], S, S->tail + 1, level);
        mu[2] = mu[1]; /* unused by G */
        gp_iv_mt(p, mu, S->a, &w, &f, &t);
        gp_iv_add(p, &radius, &radius, &t);
    } else {
        for (size_t m = 0; m < S->a; m++) {
            gp_sphere_uniform(p, &u, S, S->tail + m, level);
            gp_iv_exponential(p, &e, &u);
            gp_iv_add(p, &radius, &radius, &e);
        }
    }
    gp_sphere_uniform(p, &u, S, i, level);
    gp_iv_exponential(p, &e, &u);
    gp_iv_sqrt(p, &e, &e);
    gp_sphere_uniform(p, &u, S, S->p + i, level);
    gp_iv_angle(p, &c, &s, &u);
    gp_iv_mul(p, &t, &e, k < S->p ? &c : &s);
    gp_iv_sqrt(p, &half, &half);
    gp_iv_div(p, &ratio, &t, &half);
    if (p->bad)
        return;
    gp_fx one;
    gp_fx_int(p, &one, 1);
    if (gp_fx_cmp(&ratio.hi, &one, p) > 0)
        ratio.hi = one;
    gp_fx_neg(&one, &one, p);
    if (gp_fx_cmp(&ratio.lo, &one, p) < 0)
        ratio.lo = one;
    gp_iv_mul(p, z, &radius, &ratio);
}

/* round_gamma(x + scale Z) for one row, Z spherical Laplace in R^d (exact.py,
 * spherical_laplace and _spherical_balls, whose radius derivation this follows). */
static int gp_spherical_row(const double *x, size_t d, const gp_row *g, double *out)
{
    size_t p = (d + 1) / 2, a = d - p, tail_index = 2 * p;
    uint64_t words[2 * GP_PAIRS];
    double e[GP_PAIRS], v[GP_PAIRS], cosine[GP_PAIRS], sine[GP_PAIRS];
    unsigned char open[GP_MAX_DIM];
    int undecided = 0, mt = a >= GP_MT_SHAPE;
    gp_xof s;
    gp_xof_address(&s, g->key, g->row, 0);
    for (size_t i = 0; i < 2 * p; i++)
        words[i] = gp_xof_word(&s, i);
    for (size_t i = 0; i < p; i++) {
        gp_exponential(words[i], &e[i], &v[i]);
        gp_angle(words[p + i], &cosine[i], &sine[i]);
    }
    gp_ball half = gp_exp_sum(e, v, d / 2), radius = half, tail;
    if (d % 2) { /* R gains E_p; H gains E_p cos^2 */
        gp_ball last = {e[p - 1], gp_exp_radius(e[p - 1], v[p - 1])}, c = {cosine[p - 1], GP_TRIG};
        radius = gp_add(half, last);
        half = gp_add(half, gp_times(last, gp_times(c, c)));
    }
    if (mt) {
        int status = gp_mt_tail(&s, g, 2 * p, a, &tail, &tail_index);
        if (status)
            return status;
        radius = gp_add(radius, tail);
    } else if (a) {
        double te[GP_MT_SHAPE], tv[GP_MT_SHAPE];
        for (size_t j = 0; j < a; j++)
            gp_exponential(gp_xof_word(&s, 2 * p + j), &te[j], &tv[j]);
        radius = gp_add(radius, gp_exp_sum(te, tv, a));
    }
    gp_ball root = gp_root_ball(half, 1.0);
    double low = root.mid - root.rad;
    double factor = radius.mid / root.mid * g->unit;
    double r0 = radius.rad / radius.mid, r1 = low > 0 ? root.rad / low : INFINITY;
    double delta = (r0 + r1 + r0 * r1 + 4 * GP_U) * GP_GROW;
    double size = fabs(factor) * (GP_GROW * GP_GROW);
    double A = size * (1 + delta) * 0x1p-52 + GP_TINY;
    double B = size * ((1 + delta) * (9 + 0x1p-40) * GP_U + delta + GP_TRIG + 2.01 * GP_U);
    for (size_t i = 0; i < p; i++) {
        double root_e = sqrt(e[i]), rad = v[i] / root_e;
        rad *= A;
        rad += root_e * B;
        double scaled = root_e * factor;
        for (size_t k = i; k < d; k += p) {
            open[k] = !gp_fast_cell(x[k], scaled * (k < p ? cosine[i] : sine[i]), rad, g->gamma, &out[k]);
            undecided |= open[k];
        }
    }
    if (undecided) {
        gp_sphere_group group = {g, words, d, p, a, tail_index, mt};
        int status = gp_refine(x, d, g, open, out, gp_sphere_noise, &group);
        if (status)
            return status;
    }
    return gp_finite_row(out, d);
}

/* -- The calls ----------------------------------------------------------------------------- */

typedef int (*gp_row_fn)(const double *x, size_t d, const gp_row *g, double *out);

/* Every row of a call (out NULL: computed, not written). */
static int gp_rows(gp_row_fn release, const double *x, size_t rows, size_t d, gp_row *g,
                   uint64_t first, double *out, double *buffer)
{
    for (size_t r = 0; r < rows; r++) {
        g->row = first + r;
        int status = release(x + r * d, d, g, out ? out + r * d : buffer);
        if (status)
            return status;
    }
    return GP_OK;
}

static void gp_wipe(unsigned char *key)
{
    volatile unsigned char *v = key;
    for (int i = 0; i < 32; i++)
        v[i] = 0;
}

static int gp_noise(gp_row_fn release, const double *x, size_t rows, size_t d, double scale,
                    gp_source *source, double *out)
{
    gp_row g;
    unsigned char key[32];
    double buffer[GP_MAX_DIM];
    int status = gp_lattice(scale, &g.gamma);
    if (status)
        return status;
    if (d == 0)
        return GP_OK; /* no rows: nothing drawn, no address taken (exact.py) */
    if (d > GP_MAX_DIM)
        return GP_ENOMEM;
    if (rows > SIZE_MAX / d || (source->keyed && rows > UINT64_MAX - source->row))
        return GP_EINVAL;
    for (size_t i = 0; i < rows * d; i++)
        if (!isfinite(x[i]))
            return GP_EINVAL;
    frexp(g.gamma, &g.power);
    g.power -= 1;
    g.unit = scale / g.gamma;
    if (source->keyed)
        memcpy(key, source->key, 32);
    else if (!source->fill || source->fill(source->context, key, 32))
        return GP_EENTROPY;
    g.key = key;
    uint64_t first = source->keyed ? source->row : 0;
    if (rows * d <= GP_MAX_DIM) {
        status = gp_rows(release, x, rows, d, &g, first, buffer, NULL);
        if (!status)
            memcpy(out, buffer, sizeof(double) * rows * d);
    } else {
        status = gp_rows(release, x, rows, d, &g, first, NULL, buffer);
        if (!status)
            status = gp_rows(release, x, rows, d, &g, first, out, NULL);
    }
    gp_wipe(key);
    if (!status && source->keyed)
        source->row += rows;
    return status;
}

/* round_gamma(x + scale N) per entry, N standard normal, gamma = gp_lattice(scale): CGP (paper
 * Thm 3.3). A row of d values has the layout of docs/reference/randomness.md, "Gaussian". */
static GP_UNUSED int gp_gaussian(const double *x, size_t rows, size_t d, double scale,
                                 gp_source *source, double *out)
{
    return gp_noise(gp_gaussian_row, x, rows, d, scale, source, out);
}

/* round_gamma(x + scale Z) per row, Z spherical Laplace in R^d, density proportional to
 * exp(-|z|): epsilon-GP with scale 1/epsilon (paper Thm 3.2). */
static GP_UNUSED int gp_spherical_laplace(const double *x, size_t rows, size_t d, double scale,
                                          gp_source *source, double *out)
{
    return gp_noise(gp_spherical_row, x, rows, d, scale, source, out);
}

/* -- The ledger's record (docs/reference/ledger.md) ----------------------------------------- */

#define GP_LEDGER_LIMBS 18   /* 1152 bits: a float's exact numerator (< 2^1077) or 2^1074 */

/* The decimal digits of the magnitude a (GP_LEDGER_LIMBS limbs, consumed) into out (at
 * least 348 bytes): chunks of nine digits by division by 10^9, most significant first. */
static void gp_decimal(uint64_t *a, char *out)
{
    uint32_t chunks[40];
    int n = 0;
    do
        chunks[n++] = (uint32_t)gp_mag_divsmall(a, a, 1000000000u, GP_LEDGER_LIMBS);
    while (!gp_mag_zero(a, GP_LEDGER_LIMBS));
    int at = sprintf(out, "%u", (unsigned)chunks[--n]);
    while (n > 0)
        at += sprintf(out + at, "%09u", (unsigned)chunks[--n]);
}

/* The exact value of a positive finite float as Python's str(Fraction(v)): "p/q" in lowest
 * terms (q a power of two), or "p" when v is an integer; out holds at least 700 bytes. */
static void gp_rational(double v, char *out)
{
    int e;
    uint64_t m = gp_mantissa(v, &e), a[GP_LEDGER_LIMBS] = {0};
    while (!(m & 1) && e < 0) {
        m >>= 1;
        e++;
    }
    int shift = e > 0 ? e : 0;
    a[shift / 64] = m << (shift % 64);
    if (shift % 64)
        a[shift / 64 + 1] = m >> (64 - shift % 64);
    gp_decimal(a, out);
    if (e < 0) {
        uint64_t q[GP_LEDGER_LIMBS] = {0};
        q[-e / 64] = (uint64_t)1 << (-e % 64);
        strcat(out, "/");
        gp_decimal(q, out + strlen(out));
    }
}

/* Whether text is n characters (n 0: any number, at least one) each in allowed. */
static int gp_made_of(const char *text, size_t n, const char *allowed)
{
    size_t length = strlen(text);
    return length && (!n || length == n) && strspn(text, allowed) == length;
}

/* One ledger record of a GP or CGP release as one JSON line ending in "\n", NUL-terminated,
 * into out (size bytes): the exact cost (gp_rational) and the fields of r. The caller's
 * release id must be 32 lowercase hex digits and its time UTC, "YYYY-MM-DDTHH:MM:SS" with
 * optional fraction and "Z" (so neither needs escaping); the module's strings are
 * identifiers and hex digits. GP_ENOMEM: out is too small (it is then untouched). */
static GP_UNUSED int gp_ledger_line(const gp_ledger_record *r, char *out, size_t size)
{
    char cost[700], line[2048];
    size_t time_length = r->time ? strlen(r->time) : 0;
    if (!r->release_id || !gp_made_of(r->release_id, 32, "0123456789abcdef") || !r->time
        || time_length < 20 || !gp_made_of(r->time, 0, "0123456789-:T.Z")
        || r->time[time_length - 1] != 'Z' || r->time[10] != 'T' || !r->count
        || (r->budget != GP_EPSILON && r->budget != GP_RHO) || !(r->value > 0)
        || !isfinite(r->value) || !out)
        return GP_EINVAL;
    gp_rational(r->value, cost);
    int length = snprintf(
        line, sizeof line,
        "{\"format\":\"gpcompiler-ledger/1\",\"release_id\":\"%s\",\"time\":\"%s\","
        "\"label\":\"%s\",\"model\":\"%s\",\"metric\":{\"name\":\"%s\",\"sha256\":\"%s\"},"
        "\"spec\":{\"name\":\"%s\",\"sha256\":\"%s\"},\"cost\":\"%s\",\"delta\":null,"
        "\"parameter\":%.17g,\"sensitivity\":null,\"noise\":{\"family\":\"%s\","
        "\"scale\":%.17g},\"lattice\":%.17g,\"bound\":%.17g,\"slack\":%.17g,\"count\":%lu}\n",
        r->release_id, r->time, r->label, r->budget == GP_EPSILON ? "GP" : "CGP", r->metric,
        r->metric_sha256, r->spec, r->spec_sha256, cost, r->value,
        r->budget == GP_EPSILON ? "spherical Laplace" : "Gaussian", r->scale, r->gamma,
        r->bound, r->slack, r->count);
    if (length < 0 || (size_t)length >= sizeof line || (size_t)length >= size)
        return GP_ENOMEM;
    memcpy(out, line, (size_t)length + 1);
    return GP_OK;
}
