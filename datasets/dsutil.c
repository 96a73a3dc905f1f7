/*
 * dsutil.c: seeded row samples (splitmix64 + Floyd's sampling algorithm),
 * streamed sha256 (engines/core/digest.h), and the one loop that copies a vector
 * source into a bundle member, chunk by chunk, so no reader ever needs a
 * whole dataset in memory.
 */
#include "datasets/dsutil.h"

#include "engines/core/digest.h"

#include "engines/core/distance.h"
#include "engines/core/fileio.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t ds_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Is v among the first m entries of the sorted prefix?  (binary search) */
static int sorted_has(const uint64_t *v, uint64_t m, uint64_t x)
{
    uint64_t lo = 0, hi = m;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (v[mid] == x)
            return 1;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Insert x into the sorted prefix v[0..m). */
static void sorted_insert(uint64_t *v, uint64_t m, uint64_t x)
{
    uint64_t i = m;
    while (i > 0 && v[i - 1] > x) {
        v[i] = v[i - 1];
        i--;
    }
    v[i] = x;
}

int ds_sample_rows(uint64_t n, uint64_t count, uint64_t seed, uint64_t *out)
{
    if (count > n)
        return ann_fail(ANN_EPARAM, "sample: %llu rows requested from %llu",
                        (unsigned long long)count, (unsigned long long)n);
    /* Floyd: for j in [n-count, n): pick t in [0, j]; take t unless taken, else j. */
    uint64_t st = seed;
    uint64_t m = 0;
    for (uint64_t j = n - count; j < n; j++) {
        uint64_t t = ds_rng_next(&st) % (j + 1);
        uint64_t pick = sorted_has(out, m, t) ? j : t;
        sorted_insert(out, m, pick);
        m++;
    }
    return 0;
}

int ds_sha256_file(const char *path, char *out, uint64_t *bytes)
{
    /* a regular file only (ann_open_stat): /dev/zero would be hashed forever */
    return ann_sha256_file(path, out, bytes);
}

int ds_source_entry(json_t *list, const char *role, const char *path)
{
    char sum[80];
    uint64_t bytes = 0;
    int rc = ds_sha256_file(path, sum, &bytes);
    if (rc)
        return rc;
    json_array_append_new(list, json_pack("{s:s, s:s, s:I, s:s}", "role", role, "path", path,
                                          "bytes", (json_int_t)bytes, "sha256", sum));
    return 0;
}

int ds_check_finite(const char *what, const float *rows, uint64_t count, uint32_t dim,
                    uint64_t first_row)
{
    uint64_t total = count * dim;
    for (uint64_t i = 0; i < total; i++)
        if (!isfinite(rows[i]))
            return ann_fail(ANN_EDATA, "%s: row %llu, component %u is %s", what,
                            (unsigned long long)(first_row + i / dim), (unsigned)(i % dim),
                            isnan(rows[i]) ? "NaN" : "Inf");
    return 0;
}

void ds_norm_stats_add(ds_norm_stats *st, const float *row, uint32_t dim)
{
    double s = 0.0;
    for (uint32_t j = 0; j < dim; j++)
        s += (double)row[j] * (double)row[j];
    double norm = sqrt(s);
    if (st->rows == 0 || norm < st->min)
        st->min = norm;
    if (st->rows == 0 || norm > st->max)
        st->max = norm;
    st->sum += norm;
    st->rows++;
    if (s == 0.0)
        st->zero_rows++;
}

json_t *ds_norm_stats_json(const ds_norm_stats *st)
{
    return json_pack("{s:I, s:I, s:f, s:f, s:f}", "rows", (json_int_t)st->rows, "zero_norm_rows",
                     (json_int_t)st->zero_rows, "norm_min", st->min, "norm_mean",
                     st->rows ? st->sum / (double)st->rows : 0.0, "norm_max", st->max);
}

int ds_copy_rows(const ds_copy_spec *s)
{
    int rc = 0;
    ann_vecwriter w = { 0 };
    int writer_open = 0, prog_open = 0;
    ann_progress prog;
    const uint32_t dim = s->src->dim;
    float *buf = NULL;

    buf = malloc((size_t)DS_CHUNK_ROWS * dim * sizeof(float));
    if (!buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory for a chunk of %u rows", s->src_name,
                      DS_CHUNK_ROWS);
        goto out;
    }
    rc = ann_vecwriter_open(&w, s->path, dim, ANN_ELEM_F32);
    if (rc)
        goto out;
    writer_open = 1;
    const char *file = strrchr(s->path, '/');
    char what[160];
    snprintf(what, sizeof what, "write %s", file ? file + 1 : s->path);
    ann_progress_begin(&prog, what, s->count, "vectors");
    prog_open = 1;
    for (uint64_t done = 0; done < s->count;) {
        uint64_t c = s->count - done < DS_CHUNK_ROWS ? s->count - done : DS_CHUNK_ROWS;
        if (s->rows) {
            for (uint64_t i = 0; i < c; i++) {
                uint64_t r = s->rows[done + i];
                rc = ann_vecsrc_read(s->src, r, 1, buf + i * dim);
                if (!rc)
                    rc = ds_check_finite(s->src_name, buf + i * dim, 1, dim, r);
                if (rc)
                    goto out;
            }
        } else {
            rc = ann_vecsrc_read(s->src, s->first + done, c, buf);
            if (!rc)
                rc = ds_check_finite(s->src_name, buf, c, dim, s->first + done);
            if (rc)
                goto out;
        }
        for (uint64_t i = 0; i < c; i++) {
            float *v = buf + i * dim;
            if (s->stats)
                ds_norm_stats_add(s->stats, v, dim);
            if (s->metric == ANN_METRIC_COSINE)
                ann_normalize(v, dim);
        }
        rc = ann_vecwriter_append(&w, buf, c);
        if (rc)
            goto out;
        done += c;
        ann_progress_add(&prog, c);
    }
    writer_open = 0;
    rc = ann_vecwriter_finish(&w);
out:
    if (prog_open)
        ann_progress_end(&prog);
    if (writer_open)
        ann_vecwriter_abort(&w);
    free(buf);
    return rc;
}

int ds_join(char *buf, size_t len, const char *dir, const char *file)
{
    int n = snprintf(buf, len, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= len)
        return ann_fail(ANN_EPARAM, "%s/%s: path too long", dir, file);
    return 0;
}
