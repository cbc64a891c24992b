/* The C target's benchmark driver (benchmarks/c_target.py): built with one generated module
 * (-DMODULE=name -DHEADER='"name.h"') and the documented flags, it reads a curve's samples
 * (t, then y: samples x n, as %a or decimal) on stdin and prints the median time of one call
 * (the median over REPEAT rounds of the mean of NUMBER calls, timeit-style) of: the bare
 * contraction c = sum_s y_s A_s with the weights A given (NAME_projection_weights of the
 * grid), NAME_project, the B = 1 secure release with the grid's weights given
 * (NAME_project_weighted, then NAME_privatize of one row), NAME_projection_weights (the cost of
 * a new grid), the B = 1 secure release NAME_project_and_privatize (weights computed) on the
 * same grid and on a new grid per call, and NAME_privatize of one row of given coefficients.
 * Randomness: OS entropy.
 * Scalar-valued modules (NAME_VALUE_DIM 1). Usage: c_target_bench SAMPLES NUMBER REPEAT < samples */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(x) CAT(MODULE, x)
#define D API(_COEF_DIM)
#define N API(_VALUE_DIM)
#define W API(_WEIGHT_WIDTH)

enum { BARE, PROJECT, WEIGHTED, WEIGHTS, SEEN, NEW, PRIVATIZE, KINDS };

static size_t samples;
static double *t, *y, *weights, *scratch, *grids, bound, c[D], out[D];
static volatile double sink;
static gp_source source;

static double seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + 1e-9 * now.tv_nsec;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Call number k of one kind; returns its status. */
static int call(int kind, int k)
{
    switch (kind) {
    case BARE: {
        double sum[D] = {0};  /* a local sum, which the compiler keeps and vectorizes */
        for (size_t s = 0; s < samples; s++) {
            double v = y[s];
            for (size_t j = 0; j < W; j++)
                sum[j] += v * weights[s * W + j];
        }
        sink = sum[0];
        return GP_OK;
    }
    case PROJECT:
        return API(_project)(t, y, samples, 0, c);
    case WEIGHTED: {
        int status = API(_project_weighted)(t, y, samples, weights, bound, c);
        return status ? status : API(_privatize)(c, 1, GP_EPSILON, 1.0, bound, &source, out);
    }
    case WEIGHTS:
        return API(_projection_weights)(t, samples, scratch);
    case SEEN:
        return API(_project_and_privatize)(t, y, samples, GP_EPSILON, 1.0, 0, &source, out);
    case NEW:
        return API(_project_and_privatize)(grids + (size_t)k * samples, y, samples, GP_EPSILON,
                                           1.0, 0, &source, out);
    default:
        return API(_privatize)(c, 1, GP_EPSILON, 1.0, 0, &source, out);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    samples = strtoul(argv[1], NULL, 10);
    int number = atoi(argv[2]), repeat = atoi(argv[3]);
    t = malloc(samples * sizeof *t);
    y = malloc(samples * N * sizeof *y);
    weights = malloc(samples * W * sizeof *weights);
    scratch = malloc(samples * W * sizeof *scratch);
    grids = malloc((size_t)number * samples * sizeof *grids);
    double *rounds = malloc(repeat * sizeof *rounds);
    if (!t || !y || !weights || !scratch || !grids || !rounds || N != 1 || samples < 3
        || number < 1 || repeat < 1)
        return 2;
    for (size_t s = 0; s < samples; s++)
        if (scanf("%lf", &t[s]) != 1)
            return 2;
    for (size_t s = 0; s < samples * N; s++)
        if (scanf("%lf", &y[s]) != 1)
            return 2;
    size_t middle = samples / 2;  /* grid k: the middle sample moved by (k + 1) 1e-9 of its gap */
    for (int k = 0; k < number; k++) {
        memcpy(grids + (size_t)k * samples, t, samples * sizeof *t);
        grids[(size_t)k * samples + middle] += (k + 1) * 1e-9 * (t[middle + 1] - t[middle]);
    }
    API(_source_os)(&source);
    API(_facts) facts;
    if (API(_release_facts)(GP_EPSILON, 1.0, 0, &facts) != GP_OK
        || API(_projection_weights)(t, samples, weights) != GP_OK
        || API(_project)(t, y, samples, 0, c) != GP_OK)
        return 3;
    bound = facts.bound;
    for (int kind = 0; kind < KINDS; kind++) {
        for (int r = 0; r < repeat; r++) {
            double start = seconds();
            for (int k = 0; k < number; k++)
                if (call(kind, k) != GP_OK)
                    return 3;
            rounds[r] = (seconds() - start) / number;
        }
        qsort(rounds, repeat, sizeof *rounds, compare);
        printf("%s%a", kind ? " " : "", rounds[repeat / 2]);
        if (kind == PROJECT || kind == BARE || kind == WEIGHTED)
            API(_project)(t, y, samples, 0, c);  /* c: the curve's coefficients again */
    }
    printf("\n");
    return 0;
}
