/* The test driver of tests/test_ledger_c.py: built with one generated module (-DMODULE=name
 * -DHEADER='"name.h"'); each line of stdin "budget value bound count release_id time size"
 * gives one line of stdout: the status, whether out (size bytes, filled with '#') was left
 * untouched, then the record (without its line end) or nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define API(x) CAT(MODULE, x)

int main(void)
{
    int budget;
    double value, bound;
    unsigned long count;
    size_t size;
    char release_id[64], time[64], out[4096];
    while (scanf("%d %lf %lf %lu %63s %63s %zu", &budget, &value, &bound, &count, release_id,
                 time, &size) == 7) {
        memset(out, '#', sizeof out);
        int status = API(_ledger_record)(budget, value, bound, count, release_id, time, out,
                                         size);
        size_t kept = 0;
        while (kept < sizeof out && out[kept] == '#')
            kept++;
        char *end = status ? out : strchr(out, '\n');
        printf("%d %d %.*s\n", status, kept == sizeof out, (int)(end - out), out);
    }
    return 0;
}
