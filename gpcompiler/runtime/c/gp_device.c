/* gpcompiler's device ledger in C: gpcompiler/accounting/device.py's DeviceLedger on the same
 * files (docs/reference/ledger.md, "Longitudinal model"; docs/reference/c.md, "The device
 * ledger"). Inlined verbatim into every NAME_device.c after gp_repr.c, which calls it with its
 * module's table (gp_device_module). The only part of the C target that touches files: POSIX
 * open, read, write, fsync, rename and mkdir, and flock(2), the lock Python's fcntl.flock
 * takes, so Python and C processes share one ledger; it allocates the ledger's text.
 *
 * A release under the lock of the ledger file: the cap check on the epoch's exact spend (every
 * record of the epoch, whatever its metric, each curve of a batch counted), before any noise;
 * then the stored release of the same spec, budget, bound and curve (a memoized re-release:
 * nothing charged, nothing drawn); else the draw, one append of its record and the store of
 * its values, path.releases/KEY.json (0600, in a folder 0700), written as Python writes it.
 *
 * Exact spend. A record's cost is a float's exact value p/2^k (the costs every target
 * writes); the sums are integers N standing for N / 2^GP_DY_SCALE, on GP_DY_LIMBS 32-bit
 * limbs, so the cap check compares the Fractions Python compares. A cost that is no float's
 * exact value (a hand-made 1/3) is refused, never rounded. */

/* -- SHA-256 (FIPS 180-4): the memo key and the curve's digest, as device.py's hashlib ---- */

typedef struct gp_sha256 {
    uint32_t h[8];
    unsigned char block[64];
    uint64_t length;
} gp_sha256;

static const uint32_t gp_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t gp_ror(uint32_t x, int n) { return x >> n | x << (32 - n); }

static void gp_sha256_block(gp_sha256 *s, const unsigned char *b)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16
               | (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; i++)
        w[i] = w[i - 16] + (gp_ror(w[i - 15], 7) ^ gp_ror(w[i - 15], 18) ^ w[i - 15] >> 3)
               + w[i - 7] + (gp_ror(w[i - 2], 17) ^ gp_ror(w[i - 2], 19) ^ w[i - 2] >> 10);
    memcpy(v, s->h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (gp_ror(v[4], 6) ^ gp_ror(v[4], 11) ^ gp_ror(v[4], 25))
                      + ((v[4] & v[5]) ^ (~v[4] & v[6])) + gp_sha256_k[i] + w[i];
        uint32_t t2 = (gp_ror(v[0], 2) ^ gp_ror(v[0], 13) ^ gp_ror(v[0], 22))
                      + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        s->h[i] += v[i];
}

static void gp_sha256_init(gp_sha256 *s)
{
    static const uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h, sizeof h);
    s->length = 0;
}

static void gp_sha256_update(gp_sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        s->block[s->length++ % 64] = p[i];
        if (s->length % 64 == 0)
            gp_sha256_block(s, s->block);
    }
}

/* The digest as 64 lowercase hex digits (s is consumed). */
static void gp_sha256_hex(gp_sha256 *s, char hex[65])
{
    uint64_t bits = 8 * s->length;
    unsigned char end[8];
    gp_sha256_update(s, "\x80", 1);
    while (s->length % 64 != 56)
        gp_sha256_update(s, "", 1);
    for (int i = 0; i < 8; i++)
        end[i] = (unsigned char)(bits >> (56 - 8 * i));
    gp_sha256_update(s, end, 8);
    for (int i = 0; i < 8; i++)
        sprintf(hex + 8 * i, "%08x", (unsigned)s->h[i]);
}

/* -- Exact dyadic sums: N / 2^GP_DY_SCALE, N on GP_DY_LIMBS 32-bit limbs ----------------- */

#define GP_DY_LIMBS 160   /* 5120 bits: (a float's numerator)^2 2^GP_DY_SCALE and a sum of them */
#define GP_DY_SCALE 2300  /* >= 2 1074 + 1, the denominator of eps^2/2 for any float eps */
#define GP_DY_NUMERATOR 1100 /* the bits of a cost's numerator (a float's: at most 1024) */

typedef struct gp_dy {
    uint32_t l[GP_DY_LIMBS];
} gp_dy;

/* a = a k + add; 1 on overflow. */
static int gp_dy_mul_small(gp_dy *a, uint32_t k, uint32_t add)
{
    uint64_t carry = add;
    for (int i = 0; i < GP_DY_LIMBS; i++) {
        carry += (uint64_t)a->l[i] * k;
        a->l[i] = (uint32_t)carry;
        carry >>= 32;
    }
    return carry != 0;
}

/* a = a / k (truncated); returns the remainder. */
static uint32_t gp_dy_div_small(gp_dy *a, uint32_t k)
{
    uint64_t rem = 0;
    for (int i = GP_DY_LIMBS - 1; i >= 0; i--) {
        uint64_t v = rem << 32 | a->l[i];
        a->l[i] = (uint32_t)(v / k);
        rem = v % k;
    }
    return (uint32_t)rem;
}

/* The highest set bit of a, -1 for zero. */
static int gp_dy_top(const gp_dy *a)
{
    for (int i = GP_DY_LIMBS - 1; i >= 0; i--)
        for (int b = 31; b >= 0; b--)
            if (a->l[i] >> b & 1)
                return 32 * i + b;
    return -1;
}

/* a = a 2^bits (bits >= 0); 1 on overflow. */
static int gp_dy_shl(gp_dy *a, int bits)
{
    if (gp_dy_top(a) + bits >= 32 * GP_DY_LIMBS)
        return gp_dy_top(a) >= 0;
    gp_dy r = {{0}};
    for (int i = 0; i < GP_DY_LIMBS; i++) {
        uint64_t v = (uint64_t)a->l[i] << (bits % 32);
        if (i + bits / 32 < GP_DY_LIMBS)
            r.l[i + bits / 32] |= (uint32_t)v;
        if (i + bits / 32 + 1 < GP_DY_LIMBS)
            r.l[i + bits / 32 + 1] |= (uint32_t)(v >> 32);
    }
    *a = r;
    return 0;
}

/* r = a + b; 1 on overflow. */
static int gp_dy_add(gp_dy *r, const gp_dy *a, const gp_dy *b)
{
    uint64_t carry = 0;
    for (int i = 0; i < GP_DY_LIMBS; i++) {
        carry += (uint64_t)a->l[i] + b->l[i];
        r->l[i] = (uint32_t)carry;
        carry >>= 32;
    }
    return carry != 0;
}

static int gp_dy_cmp(const gp_dy *a, const gp_dy *b)
{
    for (int i = GP_DY_LIMBS - 1; i >= 0; i--)
        if (a->l[i] != b->l[i])
            return a->l[i] < b->l[i] ? -1 : 1;
    return 0;
}

/* r = a a, for a of at most GP_DY_NUMERATOR bits. */
static void gp_dy_square(gp_dy *r, const gp_dy *a)
{
    int n = GP_DY_NUMERATOR / 32 + 1;
    memset(r, 0, sizeof *r);
    for (int i = 0; i < n; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < n; j++) {
            carry += (uint64_t)a->l[i] * a->l[j] + r->l[i + j];
            r->l[i + j] = (uint32_t)carry;
            carry >>= 32;
        }
        r->l[i + n] = (uint32_t)carry;
    }
}

/* The exact value of a positive finite float, scaled. */
static gp_dy gp_dy_of_double(double v)
{
    int e;
    double m = frexp(v, &e);
    gp_dy r = {{0}};
    uint64_t mantissa = (uint64_t)ldexp(m, 53);
    r.l[0] = (uint32_t)mantissa;
    r.l[1] = (uint32_t)(mantissa >> 32);
    gp_dy_shl(&r, GP_DY_SCALE + e - 53);
    return r;
}

/* a / 2^GP_DY_SCALE rounded to the nearest float (the top 64 bits with a sticky bit, which
 * the conversion of an integer rounds correctly; the scaling by a power of two is exact). */
static double gp_dy_double(const gp_dy *a)
{
    int top = gp_dy_top(a), shift = top > 63 ? top - 63 : 0;
    gp_dy high = *a;
    uint64_t m = 0, sticky = 0;
    for (int i = 0; i < shift / 32; i++)
        sticky |= high.l[i];
    sticky |= high.l[shift / 32] & ((1u << (shift % 32)) - 1);
    for (int b = 63; b >= 0; b--)
        m = m << 1 | (uint64_t)(b + shift <= top && (a->l[(b + shift) / 32] >> ((b + shift) % 32) & 1));
    return ldexp((double)(m | (sticky != 0)), shift - GP_DY_SCALE);
}

/* The decimal digits of a (consumed) into out (at least 1600 bytes). */
static void gp_dy_decimal(gp_dy *a, char *out)
{
    uint32_t chunks[GP_DY_LIMBS * 32 / 29 + 1];
    int n = 0, at;
    do
        chunks[n++] = gp_dy_div_small(a, 1000000000u);
    while (gp_dy_top(a) >= 0);
    at = sprintf(out, "%u", (unsigned)chunks[--n]);
    while (n > 0)
        at += sprintf(out + at, "%09u", (unsigned)chunks[--n]);
}

/* a / 2^GP_DY_SCALE as Python's str(Fraction): "p/q" in lowest terms or "p" (out: 3300 bytes). */
static void gp_dy_fraction(const gp_dy *a, char *out)
{
    gp_dy p = *a, q = {{1}};
    int k = GP_DY_SCALE;
    while (k > 0 && gp_dy_top(&p) >= 0 && !(p.l[0] & 1)) {
        gp_dy_div_small(&p, 2);
        k--;
    }
    if (gp_dy_top(&p) < 0)
        k = 0;
    gp_dy_decimal(&p, out);
    if (k > 0) {
        gp_dy_shl(&q, k);
        strcat(out, "/");
        gp_dy_decimal(&q, out + strlen(out));
    }
}

/* The decimal digits text[0..n) as an integer of at most GP_DY_NUMERATOR bits; 0 if not. */
static int gp_dy_digits(const char *text, size_t n, gp_dy *a)
{
    memset(a, 0, sizeof *a);
    if (n == 0 || n > 400)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (text[i] < '0' || text[i] > '9' || gp_dy_mul_small(a, 10, (uint32_t)(text[i] - '0')))
            return 0;
    return gp_dy_top(a) < GP_DY_NUMERATOR;
}

/* A record's cost "p" or "p/2^k" (k <= 1100), scaled; squared and halved (a GP step in a
 * CGP ledger costs eps^2/2, adaptive/ledger.py) when square. 0: no float's exact value. */
static int gp_dy_cost(const char *text, size_t n, int square, gp_dy *cost)
{
    const char *slash = memchr(text, '/', n);
    size_t p_length = slash ? (size_t)(slash - text) : n;
    gp_dy p, q;
    int k = 0;
    if (!gp_dy_digits(text, p_length, &p))
        return 0;
    if (slash) {
        if (!gp_dy_digits(slash + 1, n - p_length - 1, &q))
            return 0;
        if ((k = gp_dy_top(&q)) < 0)
            return 0;
        q.l[k / 32] ^= 1u << (k % 32);
        if (gp_dy_top(&q) >= 0)   /* q is not a power of two */
            return 0;
    }
    if (square) {
        gp_dy_square(cost, &p);
        k = 2 * k + 1;
    } else
        *cost = p;
    return !gp_dy_shl(cost, GP_DY_SCALE - k);
}

/* -- UTC times and epochs (records.py: when, epoch) --------------------------------------- */

/* Days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t gp_days(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* The date of a day from 1970-01-01 (civil_from_days). */
static void gp_civil(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int64_t gp_floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

/* The epoch of a time (seconds): its UTC day, or its ISO week (from Monday; day 0 was a
 * Thursday), numbered from 1970. */
static int64_t gp_epoch_of(int64_t seconds, int epoch)
{
    int64_t day = gp_floor_div(seconds, 86400);
    return epoch == GP_DAY ? day : gp_floor_div(day + 3, 7);
}

/* records.epoch's name of an epoch: "YYYY-MM-DD" or "YYYY-Www" (ISO year and week). */
static void gp_epoch_name(int64_t index, int epoch, char out[16])
{
    int y, m, d;
    gp_civil(epoch == GP_DAY ? index : 7 * index, &y, &m, &d);  /* 7 index: the Thursday */
    if (epoch == GP_DAY)
        snprintf(out, 16, "%04d-%02d-%02d", y, m, d);
    else
        snprintf(out, 16, "%04d-W%02d", y, (int)((7 * index - gp_days(y, 1, 1)) / 7 + 1));
}

/* The value of n decimal digits at s, -1 if they are not. */
static int gp_number(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = 10 * v + (s[i] - '0');
    }
    return v;
}

/* A record's time "YYYY-MM-DDTHH:MM:SS[.digits](Z|+HH:MM|-HH:MM)" (what the targets write, in
 * the forms Python's fromisoformat reads) in seconds; 0 if it is not one. */
static int gp_parse_time(const char *s, size_t n, int64_t *seconds)
{
    if (n < 20)
        return 0;
    int y = gp_number(s, 4), mo = gp_number(s + 5, 2), d = gp_number(s + 8, 2), check[3];
    int h = gp_number(s + 11, 2), mi = gp_number(s + 14, 2), sec = gp_number(s + 17, 2);
    size_t at = 19;
    if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':'
        || y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59
        || sec < 0 || sec > 59)
        return 0;
    gp_civil(gp_days(y, mo, d), &check[0], &check[1], &check[2]);
    if (check[1] != mo || check[2] != d)
        return 0;
    if (s[at] == '.' && at + 1 < n && s[at + 1] >= '0' && s[at + 1] <= '9')
        for (at++; at < n && s[at] >= '0' && s[at] <= '9'; at++)
            ;
    int64_t offset = 0;
    if (n - at == 6 && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
        int oh = gp_number(s + at + 1, 2), om = gp_number(s + at + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return 0;
        offset = (s[at] == '+' ? 1 : -1) * (60 * (int64_t)oh + om) * 60;
    } else if (!(n - at == 1 && s[at] == 'Z'))
        return 0;
    *seconds = gp_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
    return 1;
}

/* The record's time of the clock: "YYYY-MM-DDTHH:MM:SS.000000Z" (years 1 to 9999). */
static int gp_clock_text(int64_t now, char out[32])
{
    int y, m, d;
    int64_t day = gp_floor_div(now, 86400), second = now - 86400 * day;
    if (day < gp_days(1, 1, 1) || day > gp_days(9999, 12, 31))
        return 0;
    gp_civil(day, &y, &m, &d);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z", y, m, d, (int)(second / 3600),
             (int)(second / 60 % 60), (int)(second % 60));
    return 1;
}

/* -- Reading JSON: the records' members the cap composes, and a stored release ------------ */

static const char *gp_json_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* The end of the JSON value at p (after white space), or NULL if there is none. */
static const char *gp_json_skip(const char *p, int depth)
{
    p = gp_json_space(p);
    if (*p == '"') {
        for (p++; *p != '"'; p++)
            if ((unsigned char)*p < 0x20 || (*p == '\\' && (unsigned char)*++p < 0x20))
                return NULL;
        return p + 1;
    }
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        if (depth > 64)
            return NULL;
        p = gp_json_space(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (close == '}') {   /* a member's name and its colon */
                if (*gp_json_space(p) != '"' || !(p = gp_json_skip(p, depth + 1)))
                    return NULL;
                p = gp_json_space(p);
                if (*p++ != ':')
                    return NULL;
            }
            if (!(p = gp_json_skip(p, depth + 1)))
                return NULL;
            p = gp_json_space(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    const char *start = p;
    p += strspn(p, "+-0123456789.eEtruefalsn");
    return p > start ? p : NULL;
}

/* The value of member key of the JSON object at p (a checked value), or NULL. */
static const char *gp_json_member(const char *p, const char *key)
{
    size_t n = strlen(key);
    p = gp_json_space(p);
    if (*p++ != '{')
        return NULL;
    for (p = gp_json_space(p); *p == '"'; p = gp_json_space(p)) {
        const char *name = p + 1, *end = gp_json_skip(p, 0);
        p = gp_json_space(gp_json_space(end) + 1);
        if ((size_t)(end - name - 1) == n && !memcmp(name, key, n))
            return p;
        p = gp_json_space(gp_json_skip(p, 0));
        if (*p == ',')
            p++;
    }
    return NULL;
}

/* The text of a JSON string without escapes at p: its start and length; 0 if it is not one. */
static int gp_json_text(const char *p, const char **text, size_t *n)
{
    if (!p || *p != '"')
        return 0;
    *text = p + 1;
    *n = strcspn(p + 1, "\"\\");
    return p[1 + *n] == '"';
}

/* Whether the JSON string at p is exactly text. */
static int gp_json_is(const char *p, const char *text)
{
    const char *s;
    size_t n;
    return gp_json_text(p, &s, &n) && n == strlen(text) && !memcmp(s, text, n);
}

/* -- The device ledger ------------------------------------------------------------------- */

#define GP_PATH 4096   /* the longest ledger path (bytes) */
#define GP_STORE_PATH (GP_PATH + 96)   /* path.releases/KEY.json.tmp */

/* What NAME_device.c tells the ledger about its module. */
typedef struct gp_device_module {
    const char *spec_sha256;
    const char *parameters;   /* {name: repr(default)} as canonical JSON (records.sha256_json) */
    size_t coef_dim, value_dim, columns;  /* columns: the inner lists of the stored release */
    int (*ledger_record)(int budget, double value, double bound, unsigned long count,
                         const char *release_id, const char *time, char *out, size_t size);
    int (*project_and_privatize)(const double *t, const double *y, size_t samples, int budget,
                                 double value, double bound, gp_source *source, double *out);
    const char *(*status_message)(int status);
} gp_device_module;

/* One release's arguments and results. */
typedef struct gp_device_call {
    const gp_device_module *module;
    const gp_device_ledger *ledger;
    const double *t, *y;
    size_t samples;
    int budget;
    double value, bound;
    gp_source *source;
    const char *release_id;
    double *out;
    char record[2048], time[32], key[65], *message;
    size_t size;
} gp_device_call;

/* status, with its one line in the caller's message (truncated to its size). */
static int gp_said(gp_device_call *c, int status, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    if (c->message && c->size)
        vsnprintf(c->message, c->size, format, arguments);
    va_end(arguments);
    return status;
}

/* device.py's memo key: sha256 of the canonical JSON of the spec, model, budget, bound (None:
 * the default), parameters and the curve's digest (sha256 of each array's shape and bytes). */
static void gp_memo_key(gp_device_call *c)
{
    const gp_device_module *m = c->module;
    char shape[48], curve[65], budget[REPR_SIZE], bound[REPR_SIZE] = "None", text[1024];
    gp_sha256 s;
    gp_sha256_init(&s);
    snprintf(shape, sizeof shape, "(%zu,)", c->samples);
    gp_sha256_update(&s, shape, strlen(shape));
    gp_sha256_update(&s, c->t, c->samples * sizeof *c->t);
    if (m->value_dim > 1)
        snprintf(shape, sizeof shape, "(%zu, %zu)", c->samples, m->value_dim);
    gp_sha256_update(&s, shape, strlen(shape));
    gp_sha256_update(&s, c->y, c->samples * m->value_dim * sizeof *c->y);
    gp_sha256_hex(&s, curve);
    repr_double(c->value, budget);
    if (c->bound != 0)
        repr_double(c->bound, bound);
    snprintf(text, sizeof text, "{\"bound\":\"%s\",\"budget\":\"%s\",\"curve\":\"%s\","
             "\"model\":\"%s\",\"parameters\":%s,\"spec_sha256\":\"%s\"}", bound, budget, curve,
             c->budget == GP_EPSILON ? "GP" : "CGP", m->parameters, m->spec_sha256);
    gp_sha256_init(&s);
    gp_sha256_update(&s, text, strlen(text));
    gp_sha256_hex(&s, c->key);
}

/* The whole text of descriptor fd from its start, NUL-terminated (malloc'd), or NULL. */
static char *gp_read_all(int fd)
{
    struct stat about;
    if (fstat(fd, &about) || about.st_size < 0 || (uint64_t)about.st_size >= SIZE_MAX)
        return NULL;
    size_t size = (size_t)about.st_size, done = 0;
    char *text = malloc(size + 1);
    while (text && done < size) {
        ssize_t got = pread(fd, text + done, size - done, (off_t)done);
        if (got <= 0) {
            free(text);
            return NULL;
        }
        done += (size_t)got;
    }
    if (text)
        text[size] = '\0';
    return text;
}

/* The stored release of the call's key into out: 1 found, 0 none, -1 unreadable (said). */
static int gp_stored(gp_device_call *c, const char *store)
{
    int fd = open(store, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : (gp_said(c, GP_ELEDGER, "%s: %s", store, strerror(errno)), -1);
    char *text = gp_read_all(fd), *end;
    close(fd);
    const char *p = text && gp_json_skip(text, 0) && !*gp_json_space(gp_json_skip(text, 0))
                    ? gp_json_member(text, "release") : NULL;
    size_t n = 0, d = c->module->coef_dim;
    double *values = malloc(d * sizeof *values);
    for (; p && values && *p && *p != '}'; p++)
        if (!strchr("[], \t\r\n", *p)) {
            double v = strtod(p, &end);
            if (end == p || n == d)
                break;
            values[n++] = v;
            p = end - 1;
        }
    int whole = p && *p == '}' && n == d;
    if (whole)
        memcpy(c->out, values, d * sizeof *values);
    free(values);
    free(text);
    if (!whole)
        return gp_said(c, GP_ELEDGER, "%s: not a stored release of %zu coefficients", store, d), -1;
    return 1;
}

/* A record's count: its curves, 1 to 999999999 (a JSON integer); 0 if it is none of them. */
static uint32_t gp_json_count(const char *p)
{
    size_t n = p ? strspn(p, "0123456789") : 0;
    uint32_t count = 0;
    if (n == 0 || n > 9 || *p == '0')
        return 0;
    for (size_t i = 0; i < n; i++)
        count = 10 * count + (uint32_t)(p[i] - '0');
    return count;
}

/* Adds to spent the cost of a record (line) that counts against the cap, times its count
 * (every curve of a batch is the wearer's): whatever its metric (a device's budget is one
 * budget), its model counts in the release's (GP and CGP steps both count; a GP step in a
 * CGP ledger costs eps^2/2) and its epoch is now's. 0, or a status (said). */
static int gp_count(gp_device_call *c, const char *line, size_t number, gp_dy *spent)
{
    static const char *const models[] = {"GP", "CGP", "DP", "zCDP"};
    const char *format = gp_json_member(line, "format"), *model = gp_json_member(line, "model");
    const char *time, *cost;
    size_t time_length, cost_length;
    uint32_t count = gp_json_count(gp_json_member(line, "count"));
    int64_t when;
    int known = 0, cgp = c->budget == GP_RHO;
    for (int i = 0; i < 4; i++)
        known |= model && gp_json_is(model, models[i]);
    if (!gp_json_is(format, "gpcompiler-ledger/1") || !known || !count
        || !gp_json_text(gp_json_member(line, "time"), &time, &time_length)
        || !gp_parse_time(time, time_length, &when)
        || !gp_json_text(gp_json_member(line, "cost"), &cost, &cost_length))
        return gp_said(c, GP_ELEDGER, "%s, line %zu: not a gpcompiler-ledger/1 record that the C "
                       "device ledger reads", c->ledger->path, number);
    if (!(gp_json_is(model, "GP") || gp_json_is(model, "CGP"))
        || gp_epoch_of(when, c->ledger->epoch) != gp_epoch_of(c->ledger->now, c->ledger->epoch))
        return GP_OK;
    if (!cgp && gp_json_is(model, "CGP"))
        return gp_said(c, GP_ELEDGER, "%s: a CGP step has no cost in a GP ledger",
                       c->ledger->path);
    gp_dy item;
    if (!gp_dy_cost(cost, cost_length, cgp && gp_json_is(model, "GP"), &item)
        || gp_dy_mul_small(&item, count, 0) || gp_dy_add(spent, spent, &item))
        return gp_said(c, GP_ELEDGER, "%s, line %zu: the cost %.*s is not a float's exact value "
                       "(p/2^k), which the C device ledger sums exactly", c->ledger->path,
                       number, (int)(cost_length < 400 ? cost_length : 400), cost);
    return GP_OK;
}

/* The epoch's exact spend in the release's model, over every metric (device.py, spent): the ledger's text read whole; a torn last line is refused, as records.read does. */
static int gp_spent(gp_device_call *c, int fd, gp_dy *spent)
{
    char *text = gp_read_all(fd);
    size_t length = text ? strlen(text) : 0, number = 0;
    int status = GP_OK;
    memset(spent, 0, sizeof *spent);
    if (!text)
        return gp_said(c, GP_ELEDGER, "%s: cannot be read", c->ledger->path);
    if (length && text[length - 1] != '\n')
        status = gp_said(c, GP_ELEDGER, "%s: the last line is torn (no line end: an append was "
                         "interrupted); the records before it are intact: remove the last line "
                         "to read them", c->ledger->path);
    for (char *line = text, *end; status == GP_OK && *line; line = end + 1) {
        end = strchr(line, '\n');
        *end = '\0';
        const char *after = gp_json_skip(line, 0);
        number++;
        status = after && !*gp_json_space(after)
                 ? gp_count(c, line, number, spent)
                 : gp_said(c, GP_ELEDGER, "%s, line %zu: not a gpcompiler-ledger/1 record "
                           "(not one JSON value)", c->ledger->path, number);
    }
    free(text);
    return status;
}

/* device.py's check: refuse (GP_ECAP, its one line) a release taking the epoch's spend above
 * the cap; a function of public values only (docs/threat-model.md, "Releases over days"). */
static int gp_check_cap(gp_device_call *c, const gp_dy *spent)
{
    gp_dy cost = gp_dy_of_double(c->value), cap = gp_dy_of_double(c->ledger->cap), total;
    if (!gp_dy_add(&total, spent, &cost) && gp_dy_cmp(&total, &cap) <= 0)
        return GP_OK;
    char exact[3300], epoch[16];
    gp_dy_fraction(spent, exact);
    gp_epoch_name(gp_epoch_of(c->ledger->now, c->ledger->epoch), c->ledger->epoch, epoch);
    return gp_said(c, GP_ECAP, "%s: refused before any noise: the %s cap %g per UTC %s (%s) is "
                   "spent to %.6g (exactly %s); this release costs %.6g",
                   c->ledger->path, c->budget == GP_EPSILON ? "GP" : "CGP", c->ledger->cap,
                   c->ledger->epoch == GP_DAY ? "day" : "week", epoch, gp_dy_double(spent),
                   exact, c->value);
}

/* The stored release as device.py writes it (json.dumps: ", " and ": ", floats as repr),
 * through store.tmp renamed over store; 0, or a status (said). */
static int gp_store(gp_device_call *c, const char *store, const double *released)
{
    char temporary[GP_STORE_PATH], number[REPR_SIZE];
    size_t columns = c->module->columns;
    snprintf(temporary, sizeof temporary, "%s.releases", c->ledger->path);
    if (mkdir(temporary, 0700) && errno != EEXIST)   /* as private as the ledger */
        return gp_said(c, GP_ELEDGER, "%s: %s", temporary, strerror(errno));
    int fd = -1;
    if (snprintf(temporary, sizeof temporary, "%s.tmp", store) < GP_STORE_PATH
        && (unlink(temporary) == 0 || errno == ENOENT))   /* a crash's leftover keeps its mode */
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *file = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!file) {
        int error = errno;
        if (fd >= 0)
            close(fd);
        return gp_said(c, GP_ELEDGER, "%s: %s", store, strerror(error));
    }
    fprintf(file, "{\"key\": \"%s\", \"release_id\": \"%s\", \"time\": \"%s\", \"release\": [",
            c->key, c->release_id, c->time);
    for (size_t i = 0; i < c->module->coef_dim; i++) {
        repr_double(released[i], number);
        fprintf(file, "%s%s%s%s", i ? ", " : "", columns && i % columns == 0 ? "[" : "", number,
                columns && i % columns == columns - 1 ? "]" : "");
    }
    int failed = fprintf(file, "]}\n") < 0;
    failed |= fflush(file) != 0;
    failed |= fsync(fileno(file)) != 0;
    failed |= fclose(file) != 0;
    if (failed || rename(temporary, store)) {
        int error = errno;
        remove(temporary);
        return gp_said(c, GP_ELEDGER, "%s: %s", store, strerror(error));
    }
    return GP_OK;
}

/* Under the lock of fd: the cap check (whether or not the curve is stored: a refusal depends
 * on the public spend only), then the stored release, else the draw, the append and the
 * store (device.py, DeviceLedger.release and commit: charged first, so a crash between the
 * append and the store over-charges, never under-charges). */
static int gp_locked_release(gp_device_call *c, int fd, int *charged)
{
    char store[GP_STORE_PATH];
    gp_dy spent;
    snprintf(store, sizeof store, "%s.releases/%s.json", c->ledger->path, c->key);
    int status, found;
    if ((status = gp_spent(c, fd, &spent)) != GP_OK || (status = gp_check_cap(c, &spent)) != GP_OK)
        return status;
    if ((found = gp_stored(c, store)) != 0) {
        *charged = 0;
        return found > 0 ? GP_OK : GP_ELEDGER;
    }
    double *released = malloc(c->module->coef_dim * sizeof *released);
    if (!released)
        return gp_said(c, GP_ENOMEM, "%s", c->module->status_message(GP_ENOMEM));
    status = c->module->project_and_privatize(c->t, c->y, c->samples, c->budget, c->value,
                                              c->bound, c->source, released);
    size_t length = strlen(c->record);
    if (status != GP_OK)
        gp_said(c, status, "%s", c->module->status_message(status));
    else if (write(fd, c->record, length) != (ssize_t)length || fsync(fd))
        status = gp_said(c, GP_ELEDGER, "%s: the record was not appended whole (disk full?): "
                         "its last line may be torn", c->ledger->path);
    else if ((status = gp_store(c, store, released))
             == GP_OK) {
        memcpy(c->out, released, c->module->coef_dim * sizeof *released);
        *charged = 1;
    }
    free(released);
    return status;
}

/* The device ledger's release of one curve (docs/reference/c.md, "The device ledger"). */
static int gp_device_release(gp_device_call *c, int *charged)
{
    const gp_device_ledger *l = c->ledger;
    if (!l || !l->path || strlen(l->path) > GP_PATH || !(l->cap > 0 && l->cap < INFINITY)
        || (l->epoch != GP_DAY && l->epoch != GP_WEEK) || !gp_clock_text(l->now, c->time)
        || !c->t || !c->y || !c->samples || !c->out || !charged)
        return gp_said(c, GP_EINVAL, "%s", c->module->status_message(GP_EINVAL));
    int status = c->module->ledger_record(c->budget, c->value, c->bound, 1, c->release_id,
                                          c->time, c->record, sizeof c->record);
    if (status != GP_OK)
        return gp_said(c, status, "%s", c->module->status_message(status));
    gp_memo_key(c);
    int fd = open(l->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_said(c, GP_ELEDGER, "%s: %s", l->path, strerror(errno));
    if (flock(fd, LOCK_EX))
        status = gp_said(c, GP_ELEDGER, "%s: %s", l->path, strerror(errno));
    else
        status = gp_locked_release(c, fd, charged);
    close(fd);
    return status;
}
