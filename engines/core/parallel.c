/*
 * parallel.c: a fork-join parallel loop over pthreads with an atomic chunk
 * counter, and a nesting switch that makes OpenBLAS single-threaded while
 * our own workers call it (OpenBLAS 0.3.21 has only a process-wide setting;
 * letting each of our threads fan out into OpenBLAS's pool oversubscribes
 * the cores and serialises on its server lock).
 */
#include "engines/core/parallel.h"

#include "engines/core/status.h"

#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int ann_ncores(void)
{
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : (int)c;
}

typedef struct par_shared {
    ann_par_fn fn;
    void *arg;
    uint64_t n, grain;
    atomic_uint_fast64_t next;
    atomic_int rc;
    pthread_mutex_t msg_lock;
    char msg[512];
} par_shared;

typedef struct par_worker {
    par_shared *sh;
    int id;
} par_worker;

static void *par_run(void *p)
{
    par_worker *w = p;
    par_shared *sh = w->sh;
    for (;;) {
        if (atomic_load(&sh->rc) != 0)
            break;
        uint64_t b = atomic_fetch_add(&sh->next, sh->grain);
        if (b >= sh->n)
            break;
        uint64_t e = b + sh->grain > sh->n ? sh->n : b + sh->grain;
        int rc = sh->fn(sh->arg, b, e, w->id);
        if (rc != 0) {
            int expected = 0;
            if (atomic_compare_exchange_strong(&sh->rc, &expected, rc)) {
                pthread_mutex_lock(&sh->msg_lock);
                snprintf(sh->msg, sizeof sh->msg, "%s", ann_errmsg(rc));
                pthread_mutex_unlock(&sh->msg_lock);
            }
            break;
        }
    }
    return NULL;
}

int ann_parallel_for(int threads, uint64_t n, uint64_t grain, ann_par_fn fn, void *arg)
{
    if (n == 0)
        return 0;
    if (grain == 0)
        grain = 1;
    if (threads <= 0)
        threads = ann_ncores();
    uint64_t chunks = (n + grain - 1) / grain;
    if ((uint64_t)threads > chunks)
        threads = (int)chunks;

    par_shared sh = { .fn = fn, .arg = arg, .n = n, .grain = grain };
    atomic_init(&sh.next, 0);
    atomic_init(&sh.rc, 0);
    pthread_mutex_init(&sh.msg_lock, NULL);

    pthread_t *tids = NULL;
    par_worker *ws = calloc((size_t)threads, sizeof *ws);
    int started = 0;
    if (threads > 1)
        tids = calloc((size_t)threads, sizeof *tids);
    if (!ws) {
        pthread_mutex_destroy(&sh.msg_lock);
        free(tids);
        return ann_fail(-12, "parallel loop: no memory for %d workers", threads);
    }
    for (int t = 0; t < threads; t++)
        ws[t] = (par_worker){ &sh, t };
    if (tids) {
        for (int t = 1; t < threads; t++) {
            if (pthread_create(&tids[t], NULL, par_run, &ws[t]) != 0)
                break;
            started = t;
        }
    }
    par_run(&ws[0]);
    for (int t = 1; t <= started; t++)
        pthread_join(tids[t], NULL);

    int rc = atomic_load(&sh.rc);
    if (rc != 0)
        rc = ann_fail(rc, "%s", sh.msg);
    pthread_mutex_destroy(&sh.msg_lock);
    free(tids);
    free(ws);
    return rc;
}

static pthread_mutex_t blas_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_depth;
static int blas_saved;

void ann_blas_serial_begin(void)
{
    pthread_mutex_lock(&blas_lock);
    if (blas_depth++ == 0) {
        blas_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&blas_lock);
}

void ann_blas_serial_end(void)
{
    pthread_mutex_lock(&blas_lock);
    if (blas_depth > 0 && --blas_depth == 0)
        openblas_set_num_threads(blas_saved);
    pthread_mutex_unlock(&blas_lock);
}
