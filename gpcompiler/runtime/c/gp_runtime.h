/* The types of gpcompiler's C runtime (docs/reference/c.md). Every generated NAME.h carries
 * this text verbatim, so several generated modules can be linked into one program; the
 * runtime's functions (gp_runtime.c) are inlined into each NAME.c as static functions.
 *
 * The runtime's functions, the contract between gp_runtime.c and the emitted code:
 *
 *   static const char *gp_status_message(int status);
 *   static void gp_source_os(gp_source *source);            getrandom(2), else /dev/urandom
 *   static void gp_source_callback(gp_source *source, gp_fill_fn fill, void *context);
 *   static void gp_source_key(gp_source *source, const unsigned char key[32], uint64_t row);
 *   static int gp_parse_key(const char *hex, unsigned char key[32]);   64 hex digits
 *   static int gp_scale_epsilon(double epsilon, double *scale);  1/epsilon rounded up
 *   static int gp_scale_rho(double rho, double *scale);          sqrt(1/(2 rho)) rounded up
 *   static int gp_lattice(double scale, double *gamma);          runtime/exact.py, lattice
 *   static int gp_clip_rows(double *c, size_t rows, size_t d, double bound);  runtime/clip.py
 *   static int gp_gaussian(const double *x, size_t rows, size_t d, double scale,
 *                          gp_source *source, double *out);         runtime/exact.py, gaussian
 *   static int gp_spherical_laplace(const double *x, size_t rows, size_t d, double scale,
 *                                   gp_source *source, double *out);  ... spherical_laplace
 *   static int gp_ledger_line(const gp_ledger_record *r, char *out, size_t size);
 *                                         one record of docs/reference/ledger.md, exactly
 *
 * Every function returns GP_OK or an error status and writes its outputs only on GP_OK. A
 * keyed source gives row r of a call the address source->row + r and advances source->row by
 * the call's rows (docs/reference/randomness.md), so the release is the same bits as the
 * Python target's for the same key. */
#ifndef GP_RUNTIME_TYPES
#define GP_RUNTIME_TYPES

#include <stddef.h>
#include <stdint.h>

enum gp_status {
    GP_OK = 0,
    GP_EINVAL = 1,      /* an argument out of its domain (NaN, a budget <= 0, a bad key) */
    GP_EENTROPY = 2,    /* the source of random bytes failed */
    GP_ERANGE = 3,      /* a release or a bound beyond float64 or the lattice's 2^50 steps */
    GP_ENOMEM = 4,      /* the caller's buffer is too small */
    GP_EUNDECIDED = 5,  /* refinement gave up (probability < 2^-4000 per coordinate) */
    GP_ECAP = 6,        /* the device ledger: the release would exceed the epoch's cap */
    GP_ELEDGER = 7      /* the device ledger: its file or store cannot be read or written */
};

/* The least clip bound B (gpcompiler/compiler/slack.py, BOUND_FLOOR; docs/clipping.md, "No
 * underflow"): below it the projection's products underflow past ETA B. */
#define GP_BOUND_FLOOR 0x1p-960

/* Which budget a release spends: epsilon (GP: spherical Laplace noise, scale 1/epsilon) or
 * rho (CGP: Gaussian noise, scale sqrt(1/(2 rho))); paper Alg. 2 and Alg. 6. */
enum gp_budget { GP_EPSILON = 1, GP_RHO = 2 };

/* Fills size bytes at out with random bytes; returns 0 on success. */
typedef int (*gp_fill_fn)(void *context, unsigned char *out, size_t size);

/* Where the words come from: a fill callback (sequential words), or a 256-bit key (words by
 * address: SHAKE128(key || LE64(row) || LE32(level)), docs/reference/randomness.md). */
typedef struct gp_source {
    gp_fill_fn fill;
    void *context;
    int keyed;
    unsigned char key[32];
    uint64_t row;
} gp_source;

/* The fields of one ledger record of a GP or CGP release (docs/reference/ledger.md): the
 * module's label, metric and spec; the caller's release id and UTC time; the budget, its
 * value and the facts of the release (noise scale, lattice step, bound, slack); the number of
 * curves released. */
typedef struct gp_ledger_record {
    const char *label, *metric, *metric_sha256, *spec, *spec_sha256, *release_id, *time;
    int budget;
    double value, scale, gamma, bound, slack;
    unsigned long count;
} gp_ledger_record;

/* A device ledger (NAME_device.c; docs/reference/c.md, "The device ledger"): the ledger file
 * at path (its stored releases in path.releases/), the cap per UTC epoch (GP_DAY, or GP_WEEK
 * from Monday) in the model of each release, and the clock, now (seconds since
 * 1970-01-01T00:00:00Z: the caller reads it, so tests can simulate days). */
enum gp_epoch { GP_DAY = 1, GP_WEEK = 2 };

typedef struct gp_device_ledger {
    const char *path;
    double cap;
    int epoch;
    int64_t now;
} gp_device_ledger;

#endif
