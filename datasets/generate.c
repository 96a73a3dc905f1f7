/*
 * generate.c: seeded synthetic datasets shaped like real embeddings.
 *
 * Real text embeddings are not isotropic Gaussian blobs.  The 1,000 Cohere
 * vectors in shared/data/cohere-1k show a strong common direction (median
 * pairwise cosine 0.724), tight neighbourhoods (median nearest-neighbour
 * cosine 0.894) and a decaying spectrum (top 100 of 768 principal
 * components hold 78.2% of the variance), as measured by datasets/stats.c.
 * The model reproduces those with four ingredients, each controlling one
 * figure most directly:
 *
 *   x = mu + B^T (c_k + w) + e
 *
 *   mu   a fixed random direction, |mu|^2 = mean_sq  -> pairwise cosine
 *   B    r x dim random orthonormal rows (Gaussian, modified Gram-Schmidt),
 *        latent variance of direction j proportional to j^-decay
 *                                                     -> spectrum share
 *   c_k  one of K cluster centres, between_frac of the latent variance
 *   w    the within-cluster draw, the rest of it      -> neighbour cosine
 *   e    isotropic noise, noise_frac of the variance  -> spectrum tail, and
 *        it keeps the local intrinsic dimension high, so the data is not easy
 *
 * Optionally (subclusters S > 0; the presets have none) w is itself split:
 * w = s_kj + w', with s_kj one of S sub-centres of cluster k holding
 * sub_frac of w's variance: topics within topics.  A 1,000-row sample
 * rarely holds two rows of one sub-centre, so the 1k statistics hardly
 * move, while at 1M the true neighbours of a query are mostly rows of its
 * own sub-centre, set apart from the rest of the cluster.  Sub-centres are
 * drawn from their own stream (seed, sub-centre index), not stored.
 *
 * Optionally (spread_sd > 0; the presets have none) each row's departure
 * from the mean is scaled by its own factor t = exp(spread_sd z -
 * spread_sd^2), z standard normal, so E[t^2] = 1 and the total variance is
 * kept: x = mu + t (B^T (c_k + w) + e).  The real Cohere sample's points are
 * more unequal in how near they sit to the common direction (the cosine
 * with the sample mean has a longer upper tail) and hubs follow from that
 * (datasets/README.md).  z is the row's last draw, so every other draw of
 * a row is the same with and without it.  And query_scale (the presets:
 * 1) scales the departure of the test and warm-up rows alone, so queries
 * can sit nearer the common direction than the rows they search: the real
 * set's queries find the same few central rows far more often than its
 * base rows find each other (datasets/README.md).
 *
 * with the non-mean variance normalised to 1.  Cosine rows are normalised.
 * Tuned values are in ann_gen_shape_default (rank 160, decay 1, 400
 * clusters holding 75% of the latent variance, 22% noise, |mu|^2 2.5); on
 * 1,000 rows of seed 42 they give pairwise 0.726, neighbour 0.891, top-100
 * share 0.788, relative contrast 1.58 and LID 18.9, against the real
 * sample's 0.724, 0.894, 0.782, 1.58 and 18.2.  tests/test_generate.c
 * checks the three statistics against the real file and the target numbers.
 *
 * The order of the rows in a file is not part of the model: the bundle
 * writer can put the base rows in group order (ann_gen_shape.order,
 * generate_bundle.c), as a corpus kept in document order is.
 *
 * The L2 shape stands in for GIST-960: descriptor-like data whose mean has
 * non-negative coordinates (|Gaussian|), the same low-rank-plus-noise
 * structure, scaled so a vector's norm is about 1.  Values are
 * not clipped at zero (clipping would bend the spectrum): about 15% of
 * coordinates come out slightly negative (the smallest near -0.08, the
 * largest near 0.16).  Departure, deliberate.
 *
 * Determinism: row i of stream s draws from xoshiro256** seeded by
 * splitmix64 of (seed, s, i), so rows do not depend on chunking or threads;
 * the model itself comes from a separate stream of the seed.
 */
#include "datasets/generate.h"

#include "engines/core/distance.h"
#include "engines/core/status.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GEN_MODEL_STREAM 0xffu
#define GEN_SUB_STREAM 0xfeu
#define GEN_MAX_SUBCLUSTERS 1000000u
#define GEN_MAX_THREADS 16u
#define GEN_ROWS_PER_THREAD_MIN 256u

struct ann_generator {
    uint32_t dim, rank, clusters;
    ann_metric metric;
    uint64_t seed;
    ann_gen_shape shape;
    float *mean;     /* dim */
    float *basis;    /* rank x dim, orthonormal rows */
    float *centres;  /* clusters x rank */
    float *within;   /* rank: standard deviation of w (of w' with sub-centres) */
    float *sub_sd;   /* rank: standard deviation of the sub-centres, or NULL */
    float noise_sd;  /* per coordinate */
};

/* ---- random numbers ---------------------------------------------------- */

typedef struct {
    uint64_t s[4];
    double spare;
    int has_spare;
} gen_rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void gen_rng_seed(gen_rng *r, uint64_t seed, uint32_t stream, uint64_t row)
{
    uint64_t x = seed;
    uint64_t a = splitmix64(&x) ^ ((uint64_t)stream << 56) ^ row;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&a);
    r->has_spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t gen_rng_next(gen_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in (0, 1]. */
static inline double gen_rng_unit(gen_rng *r)
{
    return ((gen_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

/* Standard normal (Box-Muller, both values used). */
static inline double gen_rng_gauss(gen_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u = gen_rng_unit(r), v = gen_rng_unit(r);
    double rad = sqrt(-2.0 * log(u)), th = 2.0 * M_PI * v;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}

/* ---- the model --------------------------------------------------------- */

void ann_gen_shape_default(ann_metric metric, ann_gen_shape *out)
{
    if (metric == ANN_METRIC_L2) {
        *out = (ann_gen_shape){.rank = 160, .decay = 1.0, .clusters = 400, .between_frac = 0.75,
                               .noise_frac = 0.22, .mean_sq = 4.0, .positive_mean = 1,
                               .scale = 0.45};
        return;
    }
    *out = (ann_gen_shape){.rank = 160, .decay = 1.0, .clusters = 400, .between_frac = 0.75,
                           .noise_frac = 0.22, .mean_sq = 2.5, .positive_mean = 0, .scale = 1.0};
}

int ann_gen_shape_check(const ann_gen_shape *s)
{
    if (s->rank == 0)
        return ann_fail(ANN_EPARAM, "generate: shape.rank must be >= 1");
    if (s->clusters == 0)
        return ann_fail(ANN_EPARAM, "generate: shape.clusters must be >= 1");
    if (!(s->decay >= 0.0 && s->decay <= 8.0))
        return ann_fail(ANN_EPARAM, "generate: shape.decay %g outside [0, 8]", s->decay);
    if (!(s->between_frac >= 0.0 && s->between_frac <= 1.0))
        return ann_fail(ANN_EPARAM, "generate: shape.between_frac %g outside [0, 1]",
                        s->between_frac);
    if (!(s->noise_frac >= 0.0 && s->noise_frac <= 1.0))
        return ann_fail(ANN_EPARAM, "generate: shape.noise_frac %g outside [0, 1]",
                        s->noise_frac);
    if (!(s->mean_sq >= 0.0 && s->mean_sq <= 1e6))
        return ann_fail(ANN_EPARAM, "generate: shape.mean_sq %g outside [0, 1e6]", s->mean_sq);
    if (!(s->scale > 0.0 && s->scale <= 1e6))
        return ann_fail(ANN_EPARAM, "generate: shape.scale %g outside (0, 1e6]", s->scale);
    if (s->subclusters > GEN_MAX_SUBCLUSTERS)
        return ann_fail(ANN_EPARAM, "generate: shape.subclusters %u outside [0, %u]",
                        s->subclusters, GEN_MAX_SUBCLUSTERS);
    if (!(s->sub_frac >= 0.0 && s->sub_frac <= 1.0))
        return ann_fail(ANN_EPARAM, "generate: shape.sub_frac %g outside [0, 1]", s->sub_frac);
    if (!(s->spread_sd >= 0.0 && s->spread_sd <= 2.0))
        return ann_fail(ANN_EPARAM, "generate: shape.spread_sd %g outside [0, 2]", s->spread_sd);
    if (!(s->query_scale >= 0.0 && s->query_scale <= 4.0))
        return ann_fail(ANN_EPARAM, "generate: shape.query_scale %g outside [0, 4]",
                        s->query_scale);
    return 0;
}

void ann_generator_destroy(ann_generator *g)
{
    if (!g)
        return;
    free(g->mean);
    free(g->basis);
    free(g->centres);
    free(g->within);
    free(g->sub_sd);
    free(g);
}

/* Orthonormalise the rows of a (rows x dim) by modified Gram-Schmidt. */
static void gen_orthonormalise(float *a, uint32_t rows, uint32_t dim, gen_rng *rng)
{
    for (uint32_t i = 0; i < rows; i++) {
        float *v = a + (size_t)i * dim;
        for (;;) {
            for (uint32_t j = 0; j < i; j++) {
                const float *u = a + (size_t)j * dim;
                double dot = 0.0;
                for (uint32_t d = 0; d < dim; d++)
                    dot += (double)v[d] * u[d];
                for (uint32_t d = 0; d < dim; d++)
                    v[d] -= (float)(dot * u[d]);
            }
            double nrm = 0.0;
            for (uint32_t d = 0; d < dim; d++)
                nrm += (double)v[d] * v[d];
            if (nrm > 1e-12) {
                float inv = (float)(1.0 / sqrt(nrm));
                for (uint32_t d = 0; d < dim; d++)
                    v[d] *= inv;
                break;
            }
            /* numerically dependent: draw the row again */
            for (uint32_t d = 0; d < dim; d++)
                v[d] = (float)gen_rng_gauss(rng);
        }
    }
}

int ann_generator_create(const ann_gen_params *p, ann_generator **out)
{
    int rc = 0;
    ann_generator *g = NULL;
    ann_gen_shape shape;
    *out = NULL;
    if (p->dim == 0)
        return ann_fail(ANN_EPARAM, "generate: dim must be >= 1");
    if (p->metric != ANN_METRIC_L2 && p->metric != ANN_METRIC_COSINE)
        return ann_fail(ANN_EPARAM, "generate: metric must be l2 or cosine");
    if (p->shape)
        shape = *p->shape;
    else
        ann_gen_shape_default(p->metric, &shape);
    rc = ann_gen_shape_check(&shape);
    if (rc)
        return rc;

    g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->dim = p->dim;
    g->rank = shape.rank < p->dim ? shape.rank : p->dim;
    g->clusters = shape.clusters;
    g->metric = p->metric;
    g->seed = p->seed;
    g->shape = shape;
    g->mean = malloc((size_t)g->dim * sizeof *g->mean);
    g->basis = malloc((size_t)g->rank * g->dim * sizeof *g->basis);
    g->centres = malloc((size_t)g->clusters * g->rank * sizeof *g->centres);
    g->within = malloc((size_t)g->rank * sizeof *g->within);
    if (shape.subclusters > 0)
        g->sub_sd = malloc((size_t)g->rank * sizeof *g->sub_sd);
    if (!g->mean || !g->basis || !g->centres || !g->within ||
        (shape.subclusters > 0 && !g->sub_sd)) {
        rc = -ENOMEM;
        goto out;
    }

    gen_rng rng;
    gen_rng_seed(&rng, p->seed, GEN_MODEL_STREAM, 0);
    /* latent spectrum: var_j ~ j^-decay, summing to 1 - noise_frac */
    double vsum = 0.0;
    for (uint32_t j = 0; j < g->rank; j++)
        vsum += pow(j + 1.0, -shape.decay);
    double latent_total = 1.0 - shape.noise_frac;
    for (uint32_t j = 0; j < g->rank; j++) {
        double var = latent_total * pow(j + 1.0, -shape.decay) / vsum;
        double wvar = (1.0 - shape.between_frac) * var;
        if (g->sub_sd) {
            g->sub_sd[j] = (float)sqrt(shape.sub_frac * wvar);
            wvar *= 1.0 - shape.sub_frac;
        }
        g->within[j] = (float)sqrt(wvar);
    }
    for (uint32_t k = 0; k < g->clusters; k++)
        for (uint32_t j = 0; j < g->rank; j++) {
            double var = latent_total * pow(j + 1.0, -shape.decay) / vsum;
            g->centres[(size_t)k * g->rank + j] =
                (float)(sqrt(shape.between_frac * var) * gen_rng_gauss(&rng));
        }
    g->noise_sd = (float)sqrt(shape.noise_frac / g->dim);

    double mn = 0.0;
    for (uint32_t d = 0; d < g->dim; d++) {
        double v = gen_rng_gauss(&rng);
        if (shape.positive_mean)
            v = fabs(v);
        g->mean[d] = (float)v;
        mn += v * v;
    }
    for (uint32_t d = 0; d < g->dim; d++)
        g->mean[d] = (float)(g->mean[d] * sqrt(shape.mean_sq / mn));

    for (size_t i = 0; i < (size_t)g->rank * g->dim; i++)
        g->basis[i] = (float)gen_rng_gauss(&rng);
    gen_orthonormalise(g->basis, g->rank, g->dim, &rng);

    *out = g;
    g = NULL;
out:
    ann_generator_destroy(g);
    return rc;
}

/* A row's first draws, into *rng seeded for it: its cluster k, the
 * within-cluster part of its latent (c_k + w, into latent unless NULL) and,
 * with sub-centres, its sub-centre.  Returns its group: k, or k * S + the
 * sub-centre.  gen_row and ann_generator_group share it, so a row's group
 * is the one its bytes were drawn with. */
static uint64_t gen_group_draws(const ann_generator *g, ann_gen_stream stream, uint64_t row_id,
                                gen_rng *rng, float *latent)
{
    gen_rng_seed(rng, g->seed, (uint32_t)stream, row_id);
    uint32_t k = (uint32_t)(gen_rng_next(rng) % g->clusters);
    const float *c = g->centres + (size_t)k * g->rank;
    for (uint32_t j = 0; j < g->rank; j++) {
        float z = (float)gen_rng_gauss(rng);
        if (latent)
            latent[j] = c[j] + g->within[j] * z;
    }
    if (!g->sub_sd)
        return k;
    uint32_t S = g->shape.subclusters;
    return (uint64_t)k * S + gen_rng_next(rng) % S;
}

/* One row, entirely from its own generator state: plain C in a fixed order
 * (no BLAS, whose blocking and CPU dispatch change the rounding), so the
 * bytes are the same whatever the chunking, thread count or machine. */
static void gen_row(const ann_generator *g, ann_gen_stream stream, uint64_t row_id, float *latent,
                    float *row)
{
    uint32_t dim = g->dim, rank = g->rank;
    gen_rng rng;
    uint64_t sub = gen_group_draws(g, stream, row_id, &rng, latent);
    if (g->sub_sd) {
        gen_rng srng;
        gen_rng_seed(&srng, g->seed, GEN_SUB_STREAM, sub);
        for (uint32_t j = 0; j < rank; j++)
            latent[j] += g->sub_sd[j] * (float)gen_rng_gauss(&srng);
    }
    for (uint32_t d = 0; d < dim; d++)
        row[d] = g->mean[d] + g->noise_sd * (float)gen_rng_gauss(&rng);
    for (uint32_t j = 0; j < rank; j++) {
        const float *b = g->basis + (size_t)j * dim;
        float a = latent[j];
        for (uint32_t d = 0; d < dim; d++)
            row[d] += a * b[d];
    }
    double t = 1.0;
    if (g->shape.spread_sd > 0.0) {
        double sd = g->shape.spread_sd;
        t = exp(sd * gen_rng_gauss(&rng) - sd * sd);
    }
    if (stream != ANN_GEN_BASE && g->shape.query_scale > 0.0)
        t *= g->shape.query_scale;
    if (t != 1.0) {
        float tf = (float)t;
        for (uint32_t d = 0; d < dim; d++)
            row[d] = g->mean[d] + tf * (row[d] - g->mean[d]);
    }
    if (g->metric == ANN_METRIC_COSINE) {
        ann_normalize(row, dim);
    } else if (g->shape.scale != 1.0) {
        float sc = (float)g->shape.scale;
        for (uint32_t d = 0; d < dim; d++)
            row[d] *= sc;
    }
}

uint64_t ann_generator_group(const ann_generator *g, ann_gen_stream stream, uint64_t row_id)
{
    gen_rng rng;
    return gen_group_draws(g, stream, row_id, &rng, NULL);
}

typedef struct {
    const ann_generator *g;
    ann_gen_stream stream;
    uint64_t first, count;
    const uint32_t *ids; /* row ids (then first indexes ids), or NULL: rows first.. */
    float *out;
    int rc;
} gen_job;

static void *gen_job_run(void *arg)
{
    gen_job *j = arg;
    float *latent = malloc((size_t)j->g->rank * sizeof *latent);
    if (!latent) {
        j->rc = -ENOMEM;
        return NULL;
    }
    for (uint64_t i = 0; i < j->count; i++)
        gen_row(j->g, j->stream, j->ids ? j->ids[j->first + i] : j->first + i, latent,
                j->out + i * j->g->dim);
    free(latent);
    return NULL;
}

static int gen_rows(const ann_generator *g, ann_gen_stream stream, uint64_t first,
                    const uint32_t *ids, uint64_t count, float *out)
{
    gen_job jobs[GEN_MAX_THREADS];
    pthread_t tids[GEN_MAX_THREADS];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t nt = ncpu > 0 ? (uint64_t)ncpu : 1;
    if (nt > GEN_MAX_THREADS)
        nt = GEN_MAX_THREADS;
    if (nt > count / GEN_ROWS_PER_THREAD_MIN + 1)
        nt = count / GEN_ROWS_PER_THREAD_MIN + 1;
    uint64_t started = 0;
    int rc = 0;
    for (uint64_t t = 0; t < nt; t++) {
        uint64_t a = count * t / nt, b = count * (t + 1) / nt;
        jobs[t] = (gen_job){.g = g, .stream = stream, .first = first + a, .count = b - a,
                            .ids = ids, .out = out + a * g->dim};
    }
    /* job 0 runs on the calling thread */
    for (uint64_t t = 1; t < nt; t++) {
        if (pthread_create(&tids[t], NULL, gen_job_run, &jobs[t]) != 0)
            gen_job_run(&jobs[t]); /* no thread: do it here */
        else
            started |= 1ull << t;
    }
    gen_job_run(&jobs[0]);
    for (uint64_t t = 0; t < nt; t++) {
        if (started & (1ull << t))
            pthread_join(tids[t], NULL);
        if (jobs[t].rc && !rc)
            rc = jobs[t].rc;
    }
    return rc;
}

int ann_generator_rows(const ann_generator *g, ann_gen_stream stream, uint64_t first,
                       uint64_t count, float *out)
{
    return gen_rows(g, stream, first, NULL, count, out);
}

int ann_generator_rows_at(const ann_generator *g, ann_gen_stream stream, const uint32_t *ids,
                          uint64_t count, float *out)
{
    return gen_rows(g, stream, 0, ids, count, out);
}
