/*
 * progress.c: progress lines of long steps (see progress.h).
 */
#include "engines/core/progress.h"
#include "engines/core/ticks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ann_progress_duration(double s, char *buf, unsigned len)
{
    if (s < 1)
        snprintf(buf, len, "<1 s");
    else if (s < 60)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 3600)
        snprintf(buf, len, "%d min %02d s", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, len, "%d h %02d min", (int)(s / 3600), (int)(s / 60) % 60);
}

void ann_progress_begin(ann_progress *p, const char *what, uint64_t total, const char *unit)
{
    memset(p, 0, sizeof *p);
    snprintf(p->what, sizeof p->what, "%s", what);
    snprintf(p->unit, sizeof p->unit, "%s", unit);
    p->total = total;
    atomic_store(&p->done, 0);
    const char *off = getenv("ANNLAB_PROGRESS"), *after = getenv("ANNLAB_PROGRESS_AFTER_S");
    p->enabled = !(off && !strcmp(off, "0")) && total > 0;
    p->after_s = after && *after ? atof(after) : 2.0;
    p->tty = isatty(2);
    p->t0 = ann_mono_s();
    p->next_draw_s = p->t0 + p->after_s;
    pthread_mutex_init(&p->lock, NULL);
}

/* The figures after "what: ": "40% (400/1000 vectors, 123 vectors/s, about 5 s left)". */
static void status_text(const ann_progress *p, uint64_t done, double now, char *buf, size_t len)
{
    double el = now - p->t0, rate = el > 0 ? (double)done / el : 0;
    char left[48] = "";
    if (done < p->total) {
        char d[32] = "?";
        if (rate > 0)
            ann_progress_duration((double)(p->total - done) / rate, d, sizeof d);
        snprintf(left, sizeof left, ", about %s left", d);
    }
    snprintf(buf, len, "%3d%% (%llu/%llu %s, %.0f %s/s%s)",
             (int)(100.0 * (double)done / (double)p->total), (unsigned long long)done,
             (unsigned long long)p->total, p->unit, rate, p->unit, left);
}

void ann_progress_add(ann_progress *p, uint64_t n)
{
    if (!p || !p->enabled)
        return;
    uint64_t done = atomic_fetch_add(&p->done, n) + n;
    double now = ann_mono_s();
    if (now < p->t0 + p->after_s || pthread_mutex_trylock(&p->lock) != 0)
        return;
    if (done > p->total)
        done = p->total;
    int decile = (int)(10.0 * (double)done / (double)p->total);
    char text[256];
    if (p->tty) {
        if (now >= p->next_draw_s) {
            status_text(p, done, now, text, sizeof text);
            fprintf(stderr, "\r\033[K%s: %s", p->what, text);
            fflush(stderr);
            p->next_draw_s = now + 0.5;
            p->shown = 1;
        }
    } else if (decile > p->decile || !p->shown) {
        /* one line per 10% crossed (the first once the quiet start is over) */
        status_text(p, done, now, text, sizeof text);
        fprintf(stderr, "progress: %s: %s\n", p->what, text);
        fflush(stderr);
        p->decile = decile;
        p->shown = 1;
    }
    pthread_mutex_unlock(&p->lock);
}

void ann_progress_end(ann_progress *p)
{
    if (!p)
        return;
    if (p->enabled && p->shown) {
        double el = ann_mono_s() - p->t0;
        uint64_t done = atomic_load(&p->done);
        /* the last decile's line, when the add that crossed it found another
         * thread printing (trylock) and skipped it */
        if (!p->tty && p->decile < 10 && p->total && done >= p->total) {
            char text[256];
            status_text(p, p->total, ann_mono_s(), text, sizeof text);
            fprintf(stderr, "progress: %s: %s\n", p->what, text);
            p->decile = 10;
        }
        char dur[32];
        ann_progress_duration(el, dur, sizeof dur);
        fprintf(stderr, "%s%s%s: done, %llu %s in %s (%.0f %s/s)\n", p->tty ? "\r\033[K" : "",
                p->tty ? "" : "progress: ", p->what, (unsigned long long)done, p->unit, dur,
                el > 0 ? (double)done / el : 0.0, p->unit);
        fflush(stderr);
    }
    pthread_mutex_destroy(&p->lock);
}
