/* Python's repr of a float in C (docs/reference/c.md): the shortest decimal text that parses
 * back to the same float64, in Python's notation. Inlined verbatim into the protocol program
 * NAME_main.c and the device ledger NAME_device.c (after <math.h>, <stdio.h>, <stdlib.h> and
 * <string.h>). */

/* Whether some p-digit decimal parses back to x > 0: the correctly rounded p digits, else
 * their neighbour on x's other side (a power of two's gap below is half the one above);
 * if so, its digits (trailing zeros dropped) and decimal point (x = 0.DIGITS 10^point). */
static int digits_of_length(double x, int p, char digits[20], int *point)
{
    char buffer[40];
    snprintf(buffer, sizeof buffer, "%.*e", p - 1, x);
    char *e = strchr(buffer, 'e');
    int exponent = atoi(e + 1);
    unsigned long long m = 0;
    for (char *c = buffer; c < e; c++)
        if (*c != '.')
            m = 10 * m + (unsigned long long)(*c - '0');
    for (int side = 0; side < 2; side++) {
        unsigned long long k = side == 0 ? m : (strtod(buffer, NULL) > x ? m - 1 : m + 1);
        if (k == 0)
            continue;
        snprintf(buffer, sizeof buffer, "%llue%d", k, exponent - p + 1);
        if (strtod(buffer, NULL) != x)
            continue;
        int length = snprintf(digits, 20, "%llu", k);
        int shift = length - p; /* k + 1 may carry into one more digit */
        while (length > 1 && digits[length - 1] == '0')
            digits[--length] = '\0';
        *point = exponent + 1 + shift;
        return 1;
    }
    return 0;
}

/* The shortest digits of x > 0 that parse back to x, as Python's repr. A p-digit decimal
 * parsing back to x implies a (p + 1)-digit one (the correctly rounded p + 1 digits are
 * nearer x), so the shortest length is found by bisection over 1..17: 17 digits always
 * parse back (IEEE 754, 5.12.2). */
static void shortest(double x, char digits[20], int *point)
{
    int low = 1, high = 17;
    while (low < high) {
        int middle = (low + high) / 2;
        if (digits_of_length(x, middle, digits, point))
            high = middle;
        else
            low = middle + 1;
    }
    digits_of_length(x, low, digits, point);
}

/* Python's repr(float(x)): fixed notation for 1e-4 <= |x| < 1e16, else d.ddde+XX; at
 * most 24 characters, in a buffer the compiler's bound on sprintf also covers. */
#define REPR_SIZE 40

static void repr_double(double x, char out[REPR_SIZE])
{
    char digits[20], *o = out;
    int point, n;
    if (isnan(x)) {
        strcpy(out, "nan");
        return;
    }
    if (signbit(x))
        *o++ = '-';
    if (isinf(x) || x == 0) {
        strcpy(o, isinf(x) ? "inf" : "0.0");
        return;
    }
    shortest(fabs(x), digits, &point);
    n = (int)strlen(digits);
    if (point <= -4 || point > 16) {
        o += sprintf(o, "%c", digits[0]);
        if (n > 1)
            o += sprintf(o, ".%s", digits + 1);
        sprintf(o, "e%c%02d", point - 1 < 0 ? '-' : '+', abs(point - 1));
    } else if (point <= 0)
        sprintf(o, "0.%.*s%s", -point, "0000", digits);
    else if (point >= n)
        sprintf(o, "%s%.*s.0", digits, point - n, "0000000000000000");
    else
        sprintf(o, "%.*s.%s", point, digits, digits + point);
}
