/*
 * generate_bundle.c: a generated dataset as a bundle, the presets, and
 * `annlab dataset generate`.
 *
 * The base is generated and written in chunks of GEN_CHUNK_ROWS rows, so a
 * 1M x 960 bundle needs one chunk of memory (about 60 MiB), not the whole
 * base; queries and warm-up rows come from their own streams of the same
 * distribution (generate.h), so they follow the base's statistics without
 * being copies of base rows.  Ground truth and the manifest come from
 * ann_bundle_finish; the manifest also records the generator's parameters
 * and the statistics (stats.h) of the first 1,000 base rows drawn (rows are
 * independent draws, so the first rows are a random sample).  A shape with
 * an order writes the base rows group by group (ann_gen_order: a corpus in
 * document order); the statistics stay those of the first rows drawn,
 * which such a file spreads over its length.
 */
#include "datasets/bundle.h"
#include "datasets/generate.h"
#include "datasets/stats.h"
#include "engines/core/fileio.h"
#include "engines/core/stagedir.h"
#include "engines/core/progress.h"
#include "engines/core/status.h"
#include "engines/core/vecfile.h"
#include "engines/core/ticks.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GEN_CHUNK_ROWS 16384u  /* rows per write when streaming the base */
#define GEN_STATS_SAMPLE 1000u /* rows whose statistics go in the manifest */
#define GEN_STATS_PCA_K 100u
#define GEN_DEFAULT_QUERIES 1000u
#define GEN_DEFAULT_WARMUP 2000u
#define GEN_DEFAULT_GT_K 100u
#define GEN_PRESET_SEED 42u

/* Generate rows [0, count) of a stream into dir/file, chunk by chunk; with
 * order, row i of the file is row order[i] of the stream. */
static int gen_write_stream(const ann_generator *g, uint32_t dim, ann_gen_stream stream,
                            uint64_t count, const uint32_t *order, const char *dir,
                            const char *file, float *buf)
{
    int rc = 0;
    char path[4096];
    ann_vecwriter w = {0};
    int is_open = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return ann_fail(ANN_EPARAM, "%s: path too long", dir);
    rc = ann_vecwriter_open(&w, path, dim, ANN_ELEM_F32);
    if (rc)
        goto out;
    is_open = 1;
    char what[160];
    snprintf(what, sizeof what, "generate %s", file);
    ann_progress prog;
    ann_progress_begin(&prog, what, count, "vectors");
    for (uint64_t first = 0; first < count && !rc; first += GEN_CHUNK_ROWS) {
        uint64_t nb = count - first < GEN_CHUNK_ROWS ? count - first : GEN_CHUNK_ROWS;
        rc = order ? ann_generator_rows_at(g, stream, order + first, nb, buf)
                   : ann_generator_rows(g, stream, first, nb, buf);
        if (!rc)
            rc = ann_vecwriter_append(&w, buf, nb);
        ann_progress_add(&prog, nb);
    }
    ann_progress_end(&prog);
    if (rc)
        goto out;
    rc = ann_vecwriter_finish(&w);
    is_open = 0;
out:
    if (is_open)
        ann_vecwriter_abort(&w);
    return rc;
}

typedef struct {
    uint64_t key, group;
    uint32_t id;
} gen_grouped_row;

static int gen_grouped_cmp(const void *a, const void *b)
{
    const gen_grouped_row *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* splitmix64's finaliser: the seeded rank of a run */
static uint64_t gen_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The base rows' file order for an ordered shape: by group (cluster, then
 * sub-centre), or by the group's seeded random rank (runs); then by draw. */
static int gen_group_order(const ann_generator *g, uint64_t n, int order_kind, uint64_t seed,
                           uint32_t **out)
{
    gen_grouped_row *rows = malloc((size_t)n * sizeof *rows);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    if (!rows || !order) {
        free(rows);
        free(order);
        return ann_fail(-ENOMEM, "generate: no memory for the group order of %" PRIu64 " rows",
                        n);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t grp = ann_generator_group(g, ANN_GEN_BASE, i);
        uint64_t key = order_kind == ANN_GEN_ORDER_RUNS ? gen_mix(gen_mix(seed) ^ grp) : grp;
        rows[i] = (gen_grouped_row){ key, grp, (uint32_t)i };
    }
    qsort(rows, (size_t)n, sizeof *rows, gen_grouped_cmp);
    for (uint64_t i = 0; i < n; i++)
        order[i] = rows[i].id;
    free(rows);
    *out = order;
    return 0;
}

static json_t *gen_params_json(const ann_gen_params *p, const ann_gen_shape *s)
{
    json_t *j = json_pack("{s:s, s:I, s:i, s:s, s:i, s:i, s:I, s:{s:i, s:f, s:i, s:f, s:f, s:f, s:b, "
                     "s:f}}",
                     "model", "x = mu + B^T (c_k + w) + e (datasets/generate.c)", "n",
                     (json_int_t)p->n, "dim", (int)p->dim, "metric", ann_metric_name(p->metric),
                     "queries", (int)p->queries, "warmup", (int)p->warmup, "seed",
                     (json_int_t)p->seed, "shape", "rank", (int)(s->rank < p->dim ? s->rank : p->dim), "decay", s->decay,
                     "clusters", (int)s->clusters, "between_frac", s->between_frac,
                     "noise_frac", s->noise_frac, "mean_sq", s->mean_sq, "positive_mean",
                     s->positive_mean, "scale", s->scale);
    /* only when used: the presets' manifests stay as they were */
    json_t *shape = j ? json_object_get(j, "shape") : NULL;
    if (shape && s->subclusters > 0) {
        json_object_set_new(shape, "subclusters", json_integer(s->subclusters));
        json_object_set_new(shape, "sub_frac", json_real(s->sub_frac));
    }
    if (shape && s->spread_sd > 0.0)
        json_object_set_new(shape, "spread_sd", json_real(s->spread_sd));
    if (shape && s->query_scale > 0.0 && s->query_scale != 1.0)
        json_object_set_new(shape, "query_scale", json_real(s->query_scale));
    if (shape && s->order != ANN_GEN_ORDER_DRAWN)
        json_object_set_new(shape, "order", json_string(s->order == ANN_GEN_ORDER_GROUPED
                                                            ? "grouped" : "runs"));
    return j;
}

int ann_generate_bundle(const ann_gen_params *p_in, const char *final_dir, unsigned out_flags)
{
    int rc = 0;
    ann_gen_params p = *p_in;
    ann_gen_shape shape;
    ann_generator *g = NULL;
    float *buf = NULL;
    uint32_t *order = NULL; /* file order of the base rows, when the shape has one */
    json_t *extra = NULL, *stats_json = NULL;
    char name[256];
    ann_stagedir sd;
    memset(&sd, 0, sizeof sd);

    if (p.queries == 0)
        p.queries = GEN_DEFAULT_QUERIES;
    if (p.warmup == 0)
        p.warmup = GEN_DEFAULT_WARMUP;
    if (p.gt_k == 0)
        p.gt_k = GEN_DEFAULT_GT_K;
    if (p.n == 0)
        return ann_fail(ANN_EPARAM, "generate: n must be >= 1");
    if (p.n > INT32_MAX)
        return ann_fail(ANN_EPARAM, "generate: n %" PRIu64 " exceeds the int32 ids of gt.ibin",
                        p.n);
    if (p.shape)
        shape = *p.shape;
    else
        ann_gen_shape_default(p.metric, &shape);
    p.shape = &shape;
    if (p.name)
        snprintf(name, sizeof name, "%s", p.name);
    else
        snprintf(name, sizeof name, "synth-%u-%s-%" PRIu64 "-seed%" PRIu64, p.dim,
                 ann_metric_name(p.metric) ? ann_metric_name(p.metric) : "?", p.n, p.seed);

    if (!final_dir || !*final_dir)
        return ann_fail(ANN_EPARAM, "generate: output directory '' is empty");
    rc = ann_generator_create(&p, &g);
    if (rc)
        goto out;
    /* a temporary sibling, in place of the output only once complete */
    rc = ann_stagedir_begin(&sd, final_dir, out_flags);
    if (rc)
        goto out;
    const char *out_dir = ann_stagedir_path(&sd);
    buf = malloc((size_t)GEN_CHUNK_ROWS * p.dim * sizeof *buf);
    if (!buf) {
        rc = ann_fail(-ENOMEM, "generate: no memory for a chunk of %u x %u", GEN_CHUNK_ROWS,
                      p.dim);
        goto out;
    }
    if (shape.order != ANN_GEN_ORDER_DRAWN &&
        (rc = gen_group_order(g, p.n, shape.order, p.seed, &order)))
        goto out;
    if ((rc = gen_write_stream(g, p.dim, ANN_GEN_BASE, p.n, order, out_dir, "base.fbin", buf)) ||
        (rc = gen_write_stream(g, p.dim, ANN_GEN_QUERY, p.queries, NULL, out_dir, "query.fbin",
                               buf)) ||
        (rc = gen_write_stream(g, p.dim, ANN_GEN_WARMUP, p.warmup, NULL, out_dir, "warmup.fbin",
                               buf)))
        goto out;

    extra = json_object();
    json_object_set_new(extra, "made_by", json_string("annlab dataset generate"));
    json_object_set_new(extra, "source", json_pack("{s:s}", "kind", "generated"));
    json_object_set_new(extra, "generator", gen_params_json(&p, &shape));
    uint64_t ns = p.n < GEN_STATS_SAMPLE ? p.n : GEN_STATS_SAMPLE;
    if (ns >= 3) {
        ann_data_stats st;
        rc = ann_generator_rows(g, ANN_GEN_BASE, 0, ns, buf);
        if (rc)
            goto out;
        rc = ann_stats_compute(buf, (uint32_t)ns, p.dim, p.metric, GEN_STATS_PCA_K, &st);
        if (rc)
            goto out;
        stats_json = ann_stats_to_json(&st);
        /* the first rows drawn, a random sample (in an ordered file they are
         * spread over it, not its first rows, which are one group's) */
        json_object_set_new(stats_json, "sample",
                            json_string(order ? "first base rows drawn" : "first base rows"));
        json_object_set(extra, "statistics", stats_json);
    }
    rc = ann_bundle_finish(out_dir, name, p.metric, p.gt_k, extra);
    if (!rc)
        rc = ann_stagedir_commit(&sd);
out:
    ann_stagedir_abort(&sd);
    json_decref(stats_json);
    json_decref(extra);
    free(buf);
    free(order);
    ann_generator_destroy(g);
    return rc;
}

/* ---- presets ----------------------------------------------------------- */

/* The calibrated Cohere shape (datasets/README.md, "How close the stand-ins
 * are"): the tuned cosine shape with 50 sub-centres per cluster holding 71%
 * of the within-cluster variance, fitted so that at 1M the share of the
 * true top 10 among the best 50 / 100 / 200 by 96-byte PQ matches the
 * recall DiskANN reaches on the real Cohere 1M at L 50 / 100 / 200. */
static const ann_gen_shape gen_shape_cohere_cal = {
    .rank = 160, .decay = 1.0, .clusters = 400, .between_frac = 0.75, .noise_frac = 0.22,
    .mean_sq = 2.5, .positive_mean = 0, .scale = 1.0, .subclusters = 50, .sub_frac = 0.71};

/* The same shape with the base rows in document order (datasets/README.md,
 * "File order"): each sub-centre's rows in one run, the runs in a seeded
 * random order, as a corpus whose documents' passages sit together.  The
 * row set is cal's; HNSW, which inserts rows in file order, finds on it
 * what it finds on the real Cohere 1M. */
static const ann_gen_shape gen_shape_cohere_cal_doc = {
    .rank = 160, .decay = 1.0, .clusters = 400, .between_frac = 0.75, .noise_frac = 0.22,
    .mean_sq = 2.5, .positive_mean = 0, .scale = 1.0, .subclusters = 50, .sub_frac = 0.71,
    .order = ANN_GEN_ORDER_RUNS};

/* Fitted to all five published recall figures (datasets/README.md, "The
 * overlap trial in topic order"): clusters that overlap more (a smaller
 * between-cluster share), half the in-cluster share on sub-centres, less
 * isotropic noise, and the base rows in topic order (ANN_GEN_ORDER_GROUPED:
 * cluster by cluster, sub-centre by sub-centre). */
static const ann_gen_shape gen_shape_cohere_cal5 = {
    .rank = 160, .decay = 1.0, .clusters = 400, .between_frac = 0.65, .noise_frac = 0.17,
    .mean_sq = 2.5, .positive_mean = 0, .scale = 1.0, .subclusters = 50, .sub_frac = 0.50,
    .order = ANN_GEN_ORDER_GROUPED};

static const struct {
    const char *name;
    uint64_t n;
    uint32_t dim;
    ann_metric metric;
    const ann_gen_shape *shape; /* NULL: the metric's default shape */
} gen_presets[] = {
    {"synth-768-cosine-10k", 10000, 768, ANN_METRIC_COSINE, NULL},
    {"synth-768-cosine-100k", 100000, 768, ANN_METRIC_COSINE, NULL},
    {"synth-768-cosine-1m", 1000000, 768, ANN_METRIC_COSINE, NULL},
    {"synth-768-cosine-cal-10k", 10000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal},
    {"synth-768-cosine-cal-100k", 100000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal},
    {"synth-768-cosine-cal-1m", 1000000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal},
    {"synth-768-cosine-cal-doc-10k", 10000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal_doc},
    {"synth-768-cosine-cal-doc-100k", 100000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal_doc},
    {"synth-768-cosine-cal-doc-1m", 1000000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal_doc},
    {"synth-768-cosine-cal5-10k", 10000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal5},
    {"synth-768-cosine-cal5-100k", 100000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal5},
    {"synth-768-cosine-cal5-1m", 1000000, 768, ANN_METRIC_COSINE, &gen_shape_cohere_cal5},
    {"synth-960-l2-10k", 10000, 960, ANN_METRIC_L2, NULL},
    {"synth-960-l2-100k", 100000, 960, ANN_METRIC_L2, NULL},
    {"synth-960-l2-1m", 1000000, 960, ANN_METRIC_L2, NULL},
};

int ann_generate_preset(const char *name, ann_gen_params *out)
{
    for (size_t i = 0; i < sizeof gen_presets / sizeof gen_presets[0]; i++) {
        if (strcmp(name, gen_presets[i].name) != 0)
            continue;
        *out = (ann_gen_params){.n = gen_presets[i].n, .dim = gen_presets[i].dim,
                                .metric = gen_presets[i].metric, .queries = GEN_DEFAULT_QUERIES,
                                .warmup = GEN_DEFAULT_WARMUP, .seed = GEN_PRESET_SEED,
                                .gt_k = GEN_DEFAULT_GT_K, .name = gen_presets[i].name,
                                .shape = gen_presets[i].shape};
        return 0;
    }
    return ann_fail(ANN_ENOTFOUND,
                    "%s: no such generator preset (synth-768-cosine-{10k,100k,1m}, "
                    "synth-768-cosine-cal-{10k,100k,1m}, synth-768-cosine-cal-doc-{10k,100k,1m}, "
                    "synth-768-cosine-cal5-{10k,100k,1m}, synth-960-l2-{10k,100k,1m})",
                    name);
}

/* ---- command line ------------------------------------------------------ */

static void gen_usage(FILE *fp)
{
    fprintf(fp, "usage: annlab dataset generate --n N --dim D --metric l2|cosine [--queries Q]\n"
                "                               [--warmup W] [--seed S] [--gt-k K] [--name NAME]\n"
                "                               --out DIR [--force]\n"
                "       annlab dataset generate --preset NAME [--out DIR] [--force]\n"
                "presets: synth-768-cosine-{10k,100k,1m}, synth-768-cosine-cal-{10k,100k,1m},\n"
                "         synth-768-cosine-cal-doc-{10k,100k,1m},\n"
                "         synth-768-cosine-cal5-{10k,100k,1m}, synth-960-l2-{10k,100k,1m}\n"
                "         (1000 queries, 2000 warm-up, seed 42; default out datasets/data/NAME)\n"
                "shape (default: the metric's tuned shape, datasets/generate.c): [--rank R]\n"
                "         [--decay D] [--clusters K] [--between-frac F] [--noise-frac F]\n"
                "         [--mean-sq M] [--subclusters S --sub-frac F] [--spread-sd F]\n"
                "         [--query-scale F] [--order drawn|grouped|runs]; with --preset they\n"
                "         need --out and --name (the bundle is no longer the preset)\n"
                "--order: the base rows' file order, as a corpus in document order: grouped\n"
                "         (by cluster, then sub-centre) or runs (one run per sub-centre, runs\n"
                "         in a seeded random order); queries and the row set unchanged\n"
                "--force: replace an existing output (kept until the new bundle is complete)\n");
}

/* Parse a finite real option value; the range is the shape check's. */
static int gen_parse_real(const char *flag, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s ? strtod(s, &end) : 0;
    if (!s || !*s || errno || *end || !isfinite(v))
        return ann_fail(ANN_EPARAM, "%s: '%s' is not a finite number", flag, s ? s : "");
    *out = v;
    return 0;
}

/* Parse an unsigned integer option value in [lo, hi]; message names the flag. */
static int gen_parse_u64(const char *flag, const char *s, uint64_t lo, uint64_t hi,
                         uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || *s == '-')
        return ann_fail(ANN_EPARAM, "%s: expected a non-negative integer, got '%s'", flag,
                        s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return ann_fail(ANN_EPARAM, "%s: '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]",
                        flag, s, lo, hi);
    *out = v;
    return 0;
}

int ann_generate_cli(int argc, char **argv)
{
    ann_gen_params p = {.queries = GEN_DEFAULT_QUERIES, .warmup = GEN_DEFAULT_WARMUP,
                        .gt_k = GEN_DEFAULT_GT_K, .seed = GEN_PRESET_SEED};
    const char *preset = NULL, *out = NULL, *metric = NULL;
    int have_n = 0, have_dim = 0, rc = 0;
    /* shape overrides: NAN / 0 = not given */
    double decay = NAN, between = NAN, noise = NAN, mean_sq = NAN, sub_frac = NAN;
    double spread = NAN, qscale = NAN;
    uint64_t rank = 0, clusters = 0, subclusters = 0;
    int shaped = 0, order_kind = -1;
    unsigned out_flags = 0;
    uint64_t v = 0;
    char out_buf[4096];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            gen_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--force")) {
            out_flags |= ANN_OUT_FORCE;
            continue;
        }
        if (i + 1 >= argc || strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "annlab dataset generate: %s: %s\n", a,
                    strncmp(a, "--", 2) ? "unexpected argument" : "missing value");
            gen_usage(stderr);
            return 2;
        }
        const char *val = argv[++i];
        if (!strcmp(a, "--preset"))
            preset = val;
        else if (!strcmp(a, "--out"))
            out = val;
        else if (!strcmp(a, "--metric"))
            metric = val;
        else if (!strcmp(a, "--name"))
            p.name = val;
        else if (!strcmp(a, "--n")) {
            if ((rc = gen_parse_u64(a, val, 1, INT32_MAX, &v)))
                goto bad;
            p.n = v;
            have_n = 1;
        } else if (!strcmp(a, "--dim")) {
            if ((rc = gen_parse_u64(a, val, 1, 65536, &v)))
                goto bad;
            p.dim = (uint32_t)v;
            have_dim = 1;
        } else if (!strcmp(a, "--queries")) {
            if ((rc = gen_parse_u64(a, val, 1, 10000000, &v)))
                goto bad;
            p.queries = (uint32_t)v;
        } else if (!strcmp(a, "--warmup")) {
            if ((rc = gen_parse_u64(a, val, 1, 10000000, &v)))
                goto bad;
            p.warmup = (uint32_t)v;
        } else if (!strcmp(a, "--gt-k")) {
            if ((rc = gen_parse_u64(a, val, 1, 10000, &v)))
                goto bad;
            p.gt_k = (uint32_t)v;
        } else if (!strcmp(a, "--seed")) {
            if ((rc = gen_parse_u64(a, val, 0, UINT64_MAX, &v)))
                goto bad;
            p.seed = v;
        } else if (!strcmp(a, "--rank") || !strcmp(a, "--clusters")) {
            if ((rc = gen_parse_u64(a, val, 1, 1u << 24, &v)))
                goto bad;
            *(!strcmp(a, "--rank") ? &rank : &clusters) = v;
            shaped = 1;
        } else if (!strcmp(a, "--subclusters")) {
            if ((rc = gen_parse_u64(a, val, 1, 1000000, &v)))
                goto bad;
            subclusters = v;
            shaped = 1;
        } else if (!strcmp(a, "--order")) {
            if (!strcmp(val, "drawn") || !strcmp(val, "grouped") || !strcmp(val, "runs")) {
                order_kind = !strcmp(val, "drawn")     ? ANN_GEN_ORDER_DRAWN
                             : !strcmp(val, "grouped") ? ANN_GEN_ORDER_GROUPED
                                                       : ANN_GEN_ORDER_RUNS;
            } else {
                fprintf(stderr,
                        "annlab dataset generate: --order: '%s' is not drawn, grouped or runs\n",
                        val);
                return 2;
            }
            shaped = 1;
        } else if (!strcmp(a, "--decay") || !strcmp(a, "--between-frac") ||
                   !strcmp(a, "--noise-frac") || !strcmp(a, "--mean-sq") ||
                   !strcmp(a, "--sub-frac") || !strcmp(a, "--spread-sd") ||
                   !strcmp(a, "--query-scale")) {
            double *dst = !strcmp(a, "--decay")          ? &decay
                          : !strcmp(a, "--between-frac") ? &between
                          : !strcmp(a, "--noise-frac")   ? &noise
                          : !strcmp(a, "--sub-frac")     ? &sub_frac
                          : !strcmp(a, "--spread-sd")    ? &spread
                          : !strcmp(a, "--query-scale")  ? &qscale
                                                         : &mean_sq;
            if ((rc = gen_parse_real(a, val, dst)))
                goto bad;
            shaped = 1;
        } else {
            fprintf(stderr, "annlab dataset generate: unknown option %s\n", a);
            gen_usage(stderr);
            return 2;
        }
    }

    if (preset) {
        if (have_n || have_dim || metric) {
            fprintf(stderr, "annlab dataset generate: --preset cannot be combined with --n, "
                            "--dim or --metric\n");
            return 2;
        }
        const char *user_name = p.name;
        if ((rc = ann_generate_preset(preset, &p)))
            goto bad;
        if (user_name)
            p.name = user_name;
        if (!out) {
            snprintf(out_buf, sizeof out_buf, "datasets/data/%s", preset);
            out = out_buf;
        }
    } else {
        const char *missing = !have_n ? "--n" : !have_dim ? "--dim" : !metric ? "--metric"
                                                          : !out      ? "--out"
                                                                      : NULL;
        if (missing) {
            fprintf(stderr, "annlab dataset generate: %s is required\n", missing);
            gen_usage(stderr);
            return 2;
        }
        ann_metric m;
        if (ann_metric_parse(metric, &m) != 0 ||
            (m != ANN_METRIC_L2 && m != ANN_METRIC_COSINE)) {
            fprintf(stderr, "annlab dataset generate: --metric: '%s' is not l2 or cosine\n",
                    metric);
            return 2;
        }
        p.metric = m;
    }

    ann_gen_shape shape;
    if (shaped) {
        if (preset && (out == out_buf || !p.name || !strcmp(p.name, preset))) {
            fprintf(stderr, "annlab dataset generate: a shape option with --preset %s needs --out "
                            "and a --name other than the preset's (the data is no longer the "
                            "preset's)\n",
                    preset);
            return 2;
        }
        if (p.shape)
            shape = *p.shape; /* a preset's own shape */
        else
            ann_gen_shape_default(p.metric, &shape);
        if (rank)
            shape.rank = (uint32_t)rank;
        if (clusters)
            shape.clusters = (uint32_t)clusters;
        if (!isnan(decay))
            shape.decay = decay;
        if (!isnan(between))
            shape.between_frac = between;
        if (!isnan(noise))
            shape.noise_frac = noise;
        if (!isnan(mean_sq))
            shape.mean_sq = mean_sq;
        if (!isnan(spread))
            shape.spread_sd = spread;
        if (order_kind >= 0)
            shape.order = order_kind;
        if (!isnan(qscale)) {
            if (!(qscale > 0.0)) {
                fprintf(stderr, "annlab dataset generate: --query-scale %g: must be above 0\n",
                        qscale);
                return 2;
            }
            shape.query_scale = qscale;
        }
        if ((subclusters != 0) != !isnan(sub_frac)) {
            fprintf(stderr, "annlab dataset generate: --subclusters and --sub-frac go "
                            "together\n");
            return 2;
        }
        if (subclusters) {
            shape.subclusters = (uint32_t)subclusters;
            shape.sub_frac = sub_frac;
        }
        if ((rc = ann_gen_shape_check(&shape)))
            goto bad;
        p.shape = &shape;
    }

    double t0 = ann_mono_s();
    rc = ann_generate_bundle(&p, out, out_flags);
    if (rc) {
        fprintf(stderr, "annlab dataset generate: %s\n", ann_errmsg(rc));
        return 1;
    }
    printf("%s: %" PRIu64 " x %u %s, %u queries, %u warm-up, ground truth k=%u (%.1f s)\n", out,
           p.n, p.dim, ann_metric_name(p.metric), p.queries, p.warmup, p.gt_k,
           ann_mono_s() - t0);
    return 0;
bad:
    fprintf(stderr, "annlab dataset generate: %s\n", ann_errmsg(rc));
    return 2;
}
