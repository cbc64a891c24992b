/* The test driver of gpcompiler's C runtime (tests/test_c_runtime.py): commands on stdin,
 * one answer line each on stdout, floats as C99 hex (exact both ways). */
#include "gp_runtime.h"
#include "gp_runtime.c"

#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#define VALUES (1 << 21)
static double values[VALUES], out[VALUES];

static int fill_fails(void *context, unsigned char *bytes, size_t size)
{
    (void)context;
    (void)bytes;
    (void)size;
    return 1;
}

static int fill_counter(void *context, unsigned char *bytes, size_t size)
{
    unsigned *counter = context;
    for (size_t i = 0; i < size; i++)
        bytes[i] = (unsigned char)(*counter)++;
    return 0;
}

static char *token(void)
{
    static char buffer[4096];
    return scanf("%4095s", buffer) == 1 ? buffer : NULL;
}

static double number(void) { return strtod(token(), NULL); }
static uint64_t integer(void) { return strtoull(token(), NULL, 10); }

static void key_of(const char *hex, unsigned char key[32])
{
    if (gp_parse_key(hex, key) != GP_OK) {
        fprintf(stderr, "bad key\n");
        exit(2);
    }
}

static void read_values(size_t count)
{
    if (count > VALUES) {
        fprintf(stderr, "too many values\n");
        exit(2);
    }
    for (size_t i = 0; i < count; i++)
        values[i] = number();
}

static void print_values(const double *v, size_t count)
{
    for (size_t i = 0; i < count; i++)
        printf(" %a", v[i]);
    printf("\n");
}

/* noise KIND SOURCE KEY ROW ROWS D SCALE values: status, next row, refined counts, outputs
 * (out starts as -1234.5 everywhere, so an untouched out shows). */
static void noise(void)
{
    char kind = token()[0], source_kind = token()[0];
    unsigned char key[32];
    unsigned counter = 0;
    gp_source source;
    key_of(token(), key);
    uint64_t row = integer();
    size_t rows = integer(), d = integer();
    double scale = number();
    read_values(rows * d);
    for (size_t i = 0; i < rows * d; i++)
        out[i] = -1234.5;
    if (source_kind == 'k')
        gp_source_key(&source, key, row);
    else if (source_kind == 'f')
        gp_source_callback(&source, fill_fails, NULL);
    else if (source_kind == 'c')
        gp_source_callback(&source, fill_counter, &counter);
    else
        gp_source_os(&source);
    gp_stats_refined = gp_stats_mt_refined = 0;
    int status = kind == 'g' ? gp_gaussian(values, rows, d, scale, &source, out)
                             : gp_spherical_laplace(values, rows, d, scale, &source, out);
    printf("%d %" PRIu64 " %lu %lu", status, source.row, gp_stats_refined, gp_stats_mt_refined);
    print_values(out, rows * d);
}

/* bench KIND D ROWS BATCH: seconds for ROWS rows in calls of BATCH rows (keyed, x = 0). */
static void bench(void)
{
    char kind = token()[0];
    size_t d = integer(), rows = integer(), batch = integer();
    unsigned char key[32] = {1};
    gp_source source;
    gp_source_key(&source, key, 0);
    for (size_t i = 0; i < batch * d; i++)
        values[i] = 0.0;
    gp_stats_refined = gp_stats_mt_refined = 0;
    clock_t start = clock();
    for (size_t done = 0; done < rows; done += batch) {
        int status = kind == 'g' ? gp_gaussian(values, batch, d, 1.0, &source, out)
                                 : gp_spherical_laplace(values, batch, d, 1.0, &source, out);
        if (status) {
            printf("error %d\n", status);
            return;
        }
    }
    printf("%.6f %lu %lu\n", (double)(clock() - start) / CLOCKS_PER_SEC, gp_stats_refined,
           gp_stats_mt_refined);
}

int main(void)
{
    char *command;
    while ((command = token())) {
        if (!strcmp(command, "shake")) {
            char hex[4096];
            strcpy(hex, token());
            size_t size = hex[0] == '-' ? 0 : strlen(hex) / 2, length = integer();
            unsigned char message[2048];
            for (size_t i = 0; i < size; i++)
                message[i] = (unsigned char)(16 * gp_hex_digit(hex[2 * i]) + gp_hex_digit(hex[2 * i + 1]));
            gp_xof s;
            gp_xof_absorb(&s, message, size);
            for (size_t i = 0; i < length; i++)
                printf("%02x", (unsigned)(gp_xof_word(&s, i / 8) >> (8 * (i % 8)) & 0xFF));
            printf("\n");
        } else if (!strcmp(command, "words")) {
            unsigned char key[32];
            key_of(token(), key);
            uint64_t row = integer(), level = integer(), count = integer();
            for (uint64_t i = 0; i < count; i++)
                printf(" %" PRIu64, gp_word(key, row, i, (uint32_t)level));
            printf("\n");
        } else if (!strcmp(command, "parsekey")) {
            unsigned char key[32] = {0};
            int status = gp_parse_key(token(), key);
            printf("%d %02x%02x\n", status, key[0], key[31]);
        } else if (!strcmp(command, "scale")) {
            char kind = token()[0];
            double budget = number(), scale = -1.0;
            int status = kind == 'e' ? gp_scale_epsilon(budget, &scale)
                       : kind == 'r' ? gp_scale_rho(budget, &scale) : gp_lattice(budget, &scale);
            printf("%d %a\n", status, scale);
        } else if (!strcmp(command, "clip")) {
            size_t rows = integer(), d = integer();
            double bound = number();
            read_values(rows * d);
            int status = gp_clip_rows(values, rows, d, bound);
            printf("%d", status);
            print_values(values, rows * d);
        } else if (!strcmp(command, "noise")) {
            noise();
        } else if (!strcmp(command, "libm")) {
            char kind = token()[0];
            size_t count = integer();
            read_values(count);
            for (size_t i = 0; i < count; i++)
                out[i] = kind == 'l' ? log(values[i]) : tan(values[i]);
            print_values(out, count);
        } else if (!strcmp(command, "mt")) { /* mt KEY ROW INDEX A: one Gamma attempt */
            unsigned char key[32];
            key_of(token(), key);
            gp_row g = {key, 0, 1.0, 1.0, 0};
            g.row = integer();
            size_t index = integer(), a = integer();
            uint64_t w[3] = {integer(), integer(), integer()};
            gp_ball G = {0.0, 0.0};
            int decision = gp_mt_ball(w, a, &G), status = GP_OK, refined = !decision;
            if (refined)
                status = gp_mt_refine(&g, index, w, a, &G, &decision);
            printf("%d %d %d %a %a\n", status, refined, decision, G.mid, G.rad);
        } else if (!strcmp(command, "message")) {
            printf("%s\n", gp_status_message((int)integer()));
        } else if (!strcmp(command, "bench")) {
            bench();
        } else {
            fprintf(stderr, "unknown command %s\n", command);
            return 2;
        }
        fflush(stdout);
    }
    return 0;
}
