/* The test driver of tests/test_device_c.py: built with one generated module and its device
 * ledger (-DMODULE=name -DHEADER='"name.h"'); each line of stdin
 *   path cap epoch now budget value bound release_id samples t_1..t_s y_1..y_(s n)
 * (epoch: 1 day, 2 week; now: seconds since 1970; numbers as repr) releases one curve with
 * a callback source (the OS's words, counted) and gives one line of stdout:
 *   status charged fills out_1..out_d | message
 * fills: how many times noise was drawn; out and charged as left by the call ('#': out
 * untouched, -1: charged untouched). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(x) CAT(MODULE, x)
#define D CAT(MODULE, _COEF_DIM)
#define N CAT(MODULE, _VALUE_DIM)

static int fills;

static int fill(void *context, unsigned char *out, size_t size)
{
    gp_source os;
    fills++;
    API(_source_os)(&os);
    return os.fill(context, out, size);
}

int main(void)
{
    static char path[8192], release_id[64], message[8192];
    gp_device_ledger ledger = {.path = path};
    int budget, epoch;
    long long now;
    double value, bound, out[D];
    size_t samples;
    while (scanf("%8191s %lf %d %lld %d %lf %lf %63s %zu", path, &ledger.cap, &epoch, &now,
                 &budget, &value, &bound, release_id, &samples) == 9) {
        double *t = malloc(samples * sizeof *t), *y = malloc(samples * N * sizeof *y);
        for (size_t i = 0; i < samples; i++)
            if (scanf("%lf", &t[i]) != 1)
                return 1;
        for (size_t i = 0; i < samples * N; i++)
            if (scanf("%lf", &y[i]) != 1)
                return 1;
        gp_source source;
        API(_source_callback)(&source, fill, NULL);
        ledger.epoch = epoch;
        ledger.now = now;
        int charged = -1;
        fills = 0;
        out[0] = NAN;
        strcpy(message, "");
        int status = API(_device_release)(&ledger, t, y, samples, budget, value, bound,
                                          release_id, &source, out, &charged, message,
                                          sizeof message);
        printf("%d %d %d", status, charged, fills);
        int untouched = isnan(out[0]);
        for (size_t j = 0; j < D; j++)
            printf(untouched ? " #" : " %a", out[j]);
        printf(" | %s\n", message);
        free(t);
        free(y);
    }
    return 0;
}
