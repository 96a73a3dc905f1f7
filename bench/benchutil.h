/*
 * benchutil.h: the small helpers every benchmark program needs (option
 * lists, medians), kept once here instead of in each bench_*.c.
 */
#ifndef ANNLAB_BENCH_BENCHUTIL_H
#define ANNLAB_BENCH_BENCHUTIL_H

#include <stdlib.h>
#include <string.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v; the mean of the middle two when n is even). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Split a comma list of words into out (at most max; the string is modified). */
static inline int bench_parse_words(char *s, const char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

/* A comma list of integers in [lo, hi] into out (at most max); the count,
 * or -1 when an item is not such an integer. */
static inline int bench_parse_ints(const char *s, int *out, int max, long lo, long hi)
{
    int n = 0;
    for (const char *p = s; *p && n < max;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < lo || v > hi || (*end && *end != ','))
            return -1;
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

#endif
