/*
 * ticks.h: annlab's clocks, in one place: elapsed time (ann_mono_ns,
 * ann_mono_s), any POSIX clock (ann_clock_ns, ann_clock_s: a thread's or
 * the process's CPU time), and a cheap clock for timing the stages of one
 * query.
 *
 * A query's stages last microseconds and there are hundreds of them, so the
 * clock must cost a few nanoseconds: on x86-64 it is the time-stamp counter
 * (rdtsc, not serialising; constant-rate on every CPU annlab targets), on
 * other machines CLOCK_MONOTONIC in nanoseconds.  Ticks are turned into
 * nanoseconds per query with the query's own ratio of monotonic time to
 * ticks (ann_ticks_span), so no start-up calibration is needed and a
 * frequency change between queries does no harm.
 *
 *   ann_ticks_span sp;  ann_ticks_begin(&sp);
 *   uint64_t t = ann_ticks();
 *   ... stage A ...   t = ann_ticks_lap(acc, STAGE_A, t);
 *   ... stage B ...   t = ann_ticks_lap(acc, STAGE_B, t);
 *   ann_ticks_end(&sp);  ns = ann_ticks_to_ns(&sp, acc[s]);
 */
#ifndef ANNLAB_CORE_TICKS_H
#define ANNLAB_CORE_TICKS_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ann_ticks(void)
{
    return __rdtsc();
}
#else
static inline uint64_t ann_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* Clock clk in nanoseconds (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline uint64_t ann_clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds: elapsed time. */
static inline uint64_t ann_mono_ns(void)
{
    return ann_clock_ns(CLOCK_MONOTONIC);
}

/* Clock clk in seconds (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...). */
static inline double ann_clock_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds: elapsed time. */
static inline double ann_mono_s(void)
{
    return ann_clock_s(CLOCK_MONOTONIC);
}

/* Add the ticks since t to acc[stage]; return now (the next stage's start). */
static inline uint64_t ann_ticks_lap(uint64_t *acc, int stage, uint64_t t)
{
    uint64_t now = ann_ticks();
    acc[stage] += now - t;
    return now;
}

/* One query's span in both clocks, for the conversion. */
typedef struct ann_ticks_span {
    uint64_t ns0, ns1, t0, t1;
} ann_ticks_span;

static inline void ann_ticks_begin(ann_ticks_span *sp)
{
    sp->ns0 = ann_mono_ns();
    sp->t0 = ann_ticks();
}

static inline void ann_ticks_end(ann_ticks_span *sp)
{
    sp->t1 = ann_ticks();
    sp->ns1 = ann_mono_ns();
}

/* ticks measured within the span, in nanoseconds. */
static inline uint64_t ann_ticks_to_ns(const ann_ticks_span *sp, uint64_t ticks)
{
    uint64_t dt = sp->t1 - sp->t0, dns = sp->ns1 - sp->ns0;
    if (dt == 0)
        return 0;
    return (uint64_t)((double)ticks * (double)dns / (double)dt + 0.5);
}

#endif
