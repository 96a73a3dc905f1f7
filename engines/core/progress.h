/*
 * progress.h: progress of a long step (an import, ground truth, an index
 * build) on stderr, so a user knows the program is alive and when it will
 * finish.
 *
 * Nothing is printed for a step that ends within two seconds.  After that,
 * on a terminal one line is redrawn at most twice a second with the
 * fraction done, the rate and an estimate of the time left; otherwise
 * (stderr is a file or a pipe: CI logs, the runner's build logs) one line
 * per 10% crossed, each starting "progress: ", which `annlab run` relays
 * from its build and prepare children.  A step that printed anything ends
 * with a line giving its total time and rate.
 *
 *   ANNLAB_PROGRESS=0          print nothing
 *   ANNLAB_PROGRESS_AFTER_S=S  the quiet start (default 2 seconds; tests use 0)
 *
 * ann_progress_add is thread-safe (an atomic count; one thread prints at a
 * time, the others skip), so parallel loops report as they go.
 */
#ifndef ANNLAB_CORE_PROGRESS_H
#define ANNLAB_CORE_PROGRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct ann_progress {
    char what[128];
    char unit[32];
    uint64_t total;
    atomic_uint_fast64_t done;
    double t0, after_s, next_draw_s;
    int enabled, tty, decile, shown;
    pthread_mutex_t lock;
} ann_progress;

/* Start a step of `total` units ("vectors", "points", "queries"), named
 * `what` ("import base.fbin").  p is embedded by the caller. */
void ann_progress_begin(ann_progress *p, const char *what, uint64_t total, const char *unit);

/* n more units done.  Thread-safe; cheap when nothing is due. */
void ann_progress_add(ann_progress *p, uint64_t n);

/* The step is over: a closing line when anything was shown.  Frees the lock. */
void ann_progress_end(ann_progress *p);

/* "3 s", "2 min 05 s", "1 h 12 min" into buf. */
void ann_progress_duration(double s, char *buf, unsigned len);

#endif
