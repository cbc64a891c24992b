/* The test driver of tests/test_c_target.py: built with one generated module (-DMODULE=name
 * -DHEADER='"name.h"'), it reads commands on stdin and writes each result on one line of
 * stdout, numbers as C99 hexadecimal floats (%a: exact). Every call's outputs are first
 * filled with a sentinel, and "untouched" says whether an error left them so. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(x) CAT(MODULE, x)
#define D API(_COEF_DIM)
#define N API(_VALUE_DIM)
#define SENTINEL 0x1.234p+7

static double *numbers(size_t count)
{
    double *out = malloc((count ? count : 1) * sizeof *out);
    for (size_t i = 0; i < count; i++)
        if (scanf("%lf", &out[i]) != 1)
            exit(3);
    return out;
}

static double *sentinels(size_t count)
{
    double *out = malloc((count ? count : 1) * sizeof *out);
    for (size_t i = 0; i < count; i++)
        out[i] = SENTINEL;
    return out;
}

/* status, untouched (1 if every output still holds the sentinel), then the outputs. */
static void report(int status, const double *out, size_t count)
{
    int untouched = 1;
    for (size_t i = 0; i < count; i++)
        untouched &= out[i] == SENTINEL;
    printf("%d %d", status, untouched);
    for (size_t i = 0; status == GP_OK && i < count; i++)
        printf(" %a", out[i]);
    printf("\n");
}

static int failing_fill(void *context, unsigned char *out, size_t size)
{
    (void)context;
    (void)out;
    (void)size;
    return 1;
}

/* A source: "os", "fail" or 64 hex digits and a row (a keyed source). */
static int source_from(const char *word, uint64_t row, gp_source *source)
{
    unsigned char key[32];
    if (!strcmp(word, "os")) {
        API(_source_os)(source);
        return GP_OK;
    }
    if (!strcmp(word, "fail")) {
        API(_source_callback)(source, failing_fill, NULL);
        return GP_OK;
    }
    int status = API(_parse_key)(word, key);
    if (status == GP_OK)
        API(_source_key)(source, key, row);
    return status;
}

int main(void)
{
    char command[32], word[80];
    while (scanf("%31s", command) == 1) {
        if (!strcmp(command, "sizes")) {
            printf("%d %d %d %a %a %a\n", API(_BASIS_SIZE), API(_VALUE_DIM), API(_COEF_DIM),
                   API(_CURVE_INTERVAL)[0], API(_CURVE_INTERVAL)[1], API(_ETA));
        } else if (!strcmp(command, "strings")) {
            const char *all[] = {API(_NAME), API(_TITLE), API(_SPEC_PATH), API(_SPEC_SHA256),
                                 API(_TOOL_VERSION), API(_DOMAIN_UNITS), API(_VALUE_UNITS)};
            for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
                printf(all[i] ? "s" : "-");
                for (const unsigned char *p = (const unsigned char *)all[i]; p && *p; p++)
                    printf("%02x", *p);
                printf(" ");
            }
            printf("\n");
        } else if (!strcmp(command, "project")) {
            size_t samples;
            double bound;
            if (scanf("%zu %lf", &samples, &bound) != 2)
                return 3;
            double *t = numbers(samples), *y = numbers(samples * N), *c = sentinels(D);
            report(API(_project)(t, y, samples, bound, c), c, D);
            free(t), free(y), free(c);
        } else if (!strcmp(command, "weighted")) {  /* the weights, times scale, then the */
            size_t samples;                          /* projection with them */
            double scale, bound;
            if (scanf("%lf %zu %lf", &scale, &samples, &bound) != 3)
                return 3;
            double *t = numbers(samples), *y = numbers(samples * N), *c = sentinels(D);
            size_t size = samples * API(_WEIGHT_WIDTH);
            double *weights = sentinels(size);
            int status = API(_projection_weights)(t, samples, weights);
            report(status, weights, size);
            for (size_t i = 0; i < size; i++)
                weights[i] *= scale;
            report(API(_project_weighted)(t, y, samples, weights, bound, c), c, D);
            free(t), free(y), free(c), free(weights);
        } else if (!strcmp(command, "evaluate")) {
            size_t count;
            if (scanf("%zu", &count) != 1)
                return 3;
            double *c = numbers(D), *points = numbers(count), *values = sentinels(count * N);
            report(API(_evaluate)(c, points, count, values), values, count * N);
            free(c), free(points), free(values);
        } else if (!strcmp(command, "facts")) {
            int budget;
            double value, bound;
            if (scanf("%d %lf %lf", &budget, &value, &bound) != 3)
                return 3;
            API(_facts) facts = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
            int status = API(_release_facts)(budget, value, bound, &facts);
            report(status, &facts.scale, 4);
        } else if (!strcmp(command, "privatize") || !strcmp(command, "release")) {
            size_t rows, samples = 0;
            int budget;
            double value, bound;
            uint64_t row;
            if (scanf("%zu %d %lf %lf %79s %" SCNu64, &rows, &budget, &value, &bound, word, &row)
                != 6)
                return 3;
            gp_source source;
            int status = source_from(word, row, &source);
            double *out = sentinels(rows * D);
            if (!strcmp(command, "release")) {
                if (scanf("%zu", &samples) != 1)
                    return 3;
                double *t = numbers(samples), *y = numbers(samples * N);
                if (status == GP_OK)
                    status = API(_project_and_privatize)(t, y, samples, budget, value, bound,
                                                         &source, out);
                free(t), free(y);
            } else {
                double *c = numbers(rows * D);
                if (status == GP_OK)
                    status = API(_privatize)(c, rows, budget, value, bound, &source, out);
                free(c);
            }
            report(status, out, rows * D);
            printf("row %" PRIu64 "\n", source.row);
            free(out);
        } else if (!strcmp(command, "key")) {
            unsigned char key[32];
            memset(key, 0xab, sizeof key);
            if (scanf("%79s", word) != 1)
                return 3;
            int status = API(_parse_key)(word, key);
            int untouched = 1;
            for (int i = 0; i < 32; i++)
                untouched &= key[i] == 0xab;
            printf("%d %d %s\n", status, untouched, API(_status_message)(status));
        } else {
            return 3;
        }
        fflush(stdout);
    }
    return 0;
}
