/*
 * test_headers.c: the one way annlab reads a header (engines/core/binio.h,
 * "Headers") and the one set of limits (engines/core/limits.h), kind by
 * kind.
 *
 *   framing order   for every header kind (the diskann-sector header
 *                   sector, the diskann-record, hnsw-record and
 *                   ivfpq-record metadata records, the PQ codebook, the
 *                   Vamana graph and diskann-sector's index.sums files): a
 *                   flipped bit in the version field is a checksum mismatch
 *                   (exact stored and computed sums), not "wrong version";
 *                   a wrong magic and a newer version under a valid
 *                   checksum each give their own exact message
 *   limits          every reader with a dimension bound accepts
 *                   ANN_MAX_DIM and refuses ANN_MAX_DIM + 1 naming dim (the
 *                   four metadata decoders, the PQ codebook, the reference
 *                   peers' metadata, big-ann vector files, texmex files);
 *                   both Vamana graph readers accept degree ANN_MAX_R and
 *                   refuse one more
 *
 * Everything is decoded from bytes the test writes, so a change of layout
 * shows here as well as in the golden tests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/readers.h"
#include "engines/core/binio.h"
#include "engines/core/idxmeta.h"
#include "engines/core/limits.h"
#include "engines/core/pq.h"
#include "engines/core/status.h"
#include "engines/core/vamana.h"
#include "engines/core/vecfile.h"
#include "engines/diskann_record/layout.h"
#include "engines/diskann_sector/layout.h"
#include "engines/hnsw_record/layout.h"
#include "engines/ivfpq_record/layout.h"
#include "tests/support/testutil.h"

#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* dsec.h, hnsw.h and ivfpq.h each define struct ann_engine, so one file
 * includes none of them: the three readers, declared as there (the decoded
 * records land in a buffer larger than either struct). */
typedef struct hnsw_meta hnsw_meta;
typedef struct ivfpq_meta ivfpq_meta;
int hnsw_meta_decode(const uint8_t *rec, size_t len, const char *store, hnsw_meta *out);
int ivfpq_meta_decode(const uint8_t *rec, size_t len, const char *store, ivfpq_meta *out);
int dsec_sums_load(const char *path, const dsec_header *h, uint32_t **sums);
static alignas(16) uint8_t decoded[1024];

/* ---- frames: metadata records and the sector header --------------------- */

/* One frame kind: a valid frame of it, and its decoder (0 = accepted). */
typedef struct frame_kind {
    const char *name;     /* its ann_binfmt name, in messages */
    const char *magic;
    uint32_t version;
    size_t len;
    const char *where;    /* what messages name: the path or "<store>: metadata record" */
    void (*encode)(uint8_t *buf, uint32_t dim);
    int (*decode)(const uint8_t *buf, size_t len);
} frame_kind;

static void dsec_enc(uint8_t *buf, uint32_t dim)
{
    dsec_header h = { .version = DSEC_VERSION, .n = 1, .dim = dim, .R = 2, .medoid = 0,
                      .L_build = 10, .alpha = 1.2f, .pq_bytes = 1, .seed = 1 };
    dsec_geometry(&h);
    dsec_header_encode(&h, buf);
}
static int dsec_dec(const uint8_t *buf, size_t len)
{
    (void)len;
    dsec_header h;
    return dsec_header_decode(buf, UINT64_MAX / 2, "idx/index.sector", &h);
}

static void drec_enc(uint8_t *buf, uint32_t dim)
{
    /* the newest version: an untrained (live build) index */
    drec_meta m = { .version = DREC_VERSION, .layout = DREC_LAYOUT_FULL,
                    .mode = DREC_MODE_SCAN, .n = 10, .dim = dim, .metric = ANN_METRIC_L2,
                    .R = 4, .L_build = 8, .alpha = 1.2f, .pq_bytes = 1, .pq_seed = 1 };
    snprintf(m.engine, sizeof m.engine, "diskann-record");
    drec_meta_encode(&m, buf);
}
static int drec_dec(const uint8_t *buf, size_t len)
{
    drec_meta m;
    return drec_meta_decode(buf, len, "idx/lmdb", &m);
}

/* The record engines' metadata, written field by field at the named offsets. */
static void hnsw_enc(uint8_t *buf, uint32_t dim)
{
    memset(buf, 0, HNSW_META_BYTES);
    ann_put_u32(buf + HNSW_OFF_METRIC, ANN_METRIC_L2);
    ann_put_u32(buf + HNSW_OFF_DIM, dim);
    ann_put_u32(buf + HNSW_OFF_M, 4);
    ann_put_u32(buf + HNSW_OFF_M0, 8);
    ann_put_u32(buf + HNSW_OFF_EF_CONSTRUCTION, 32);
    ann_put_u32(buf + HNSW_OFF_ENTRY, HNSW_NO_NODE); /* n 0 */
    ann_frame_seal(buf, HNSW_META_BYTES, HNSW_MAGIC, HNSW_VERSION);
}
static int hnsw_dec(const uint8_t *buf, size_t len)
{
    return hnsw_meta_decode(buf, len, "idx/lmdb", (hnsw_meta *)decoded);
}

static void ivfpq_enc(uint8_t *buf, uint32_t dim)
{
    memset(buf, 0, IVFPQ_META_BYTES);
    ann_put_u32(buf + IVFPQ_OFF_METRIC, ANN_METRIC_L2);
    ann_put_u32(buf + IVFPQ_OFF_DIM, dim);
    ann_put_u32(buf + IVFPQ_OFF_NLIST, 1);
    ann_put_u32(buf + IVFPQ_OFF_PQ_BYTES, 1);
    ann_put_u32(buf + IVFPQ_OFF_CHUNK_ENTRIES, IVFPQ_CHUNK_ENTRIES); /* n 0, lists 0 */
    ann_frame_seal(buf, IVFPQ_META_BYTES, IVFPQ_MAGIC, IVFPQ_VERSION);
}
static int ivfpq_dec(const uint8_t *buf, size_t len)
{
    return ivfpq_meta_decode(buf, len, "idx/lmdb", (ivfpq_meta *)decoded);
}

static const frame_kind frames[] = {
    { "diskann-sector index", DSEC_MAGIC, DSEC_VERSION, DSEC_HEADER_BYTES, "idx/index.sector",
      dsec_enc, dsec_dec },
    { "diskann-record index", DREC_MAGIC, DREC_VERSION,
      DREC_META_FIXED_BYTES + 1 + DREC_META_V3_EXTRA_BYTES + 4,
      "idx/lmdb: metadata record", drec_enc, drec_dec },
    { "hnsw-record index", HNSW_MAGIC, HNSW_VERSION, HNSW_META_BYTES,
      "idx/lmdb: metadata record", hnsw_enc, hnsw_dec },
    { "ivfpq-record index", IVFPQ_MAGIC, IVFPQ_VERSION, IVFPQ_META_BYTES,
      "idx/lmdb: metadata record", ivfpq_enc, ivfpq_dec },
};

static void expect_msg(int rc, int want_rc, const char *want, const char *kind)
{
    if (rc != want_rc || strcmp(ann_errmsg(rc), want) != 0)
        fail_msg("%s: %d \"%s\", want %d \"%s\"", kind, rc, rc ? ann_errmsg(rc) : "", want_rc,
                 want);
}

static void test_frame_order(void **state)
{
    (void)state;
    uint8_t buf[DSEC_SECTOR_BYTES], good[DSEC_SECTOR_BYTES];
    char want[4400];
    for (size_t k = 0; k < sizeof frames / sizeof frames[0]; k++) {
        const frame_kind *f = &frames[k];
        memset(good, 0, sizeof good);
        f->encode(good, 16);
        assert_int_equal(f->decode(good, f->len), 0);
        const size_t body = f->len - 4;
        const uint32_t sum = ann_get_u32(good + body);
        assert_int_equal(sum, (uint32_t)crc32(0L, good, (uInt)body));

        /* the version field's low bit flipped: the checksum speaks first */
        memcpy(buf, good, sizeof buf);
        buf[ANN_HDR_VERSION_OFF] ^= 1;
        snprintf(want, sizeof want, "%s: checksum mismatch (stored %08x, computed %08x)",
                 f->where, sum, (uint32_t)crc32(0L, buf, (uInt)body));
        expect_msg(f->decode(buf, f->len), ANN_ECORRUPT, want, f->name);

        /* another magic under a valid checksum */
        memcpy(buf, good, sizeof buf);
        ann_frame_seal(buf, f->len, "ANNXXXX", f->version);
        snprintf(want, sizeof want, "%s: bad magic, expected \"%s\" (%s)", f->where, f->magic,
                 f->name);
        expect_msg(f->decode(buf, f->len), ANN_EFORMAT, want, f->name);

        /* a newer version under a valid checksum */
        memcpy(buf, good, sizeof buf);
        ann_frame_seal(buf, f->len, f->magic, f->version + 1);
        snprintf(want, sizeof want,
                 "%s: %s version %u, this build reads %u; rebuild the index", f->where,
                 f->name, f->version + 1, f->version);
        expect_msg(f->decode(buf, f->len), ANN_EVERSION, want, f->name);
    }
}

static void test_frame_dim_limit(void **state)
{
    (void)state;
    uint8_t buf[DSEC_SECTOR_BYTES];
    for (size_t k = 0; k < sizeof frames / sizeof frames[0]; k++) {
        const frame_kind *f = &frames[k];
        memset(buf, 0, sizeof buf);
        f->encode(buf, ANN_MAX_DIM);
        if (f->decode(buf, f->len) != 0)
            fail_msg("%s: dim %u refused: %s", f->name, ANN_MAX_DIM, ann_errmsg(ANN_ECORRUPT));
        memset(buf, 0, sizeof buf);
        f->encode(buf, ANN_MAX_DIM + 1);
        int rc = f->decode(buf, f->len);
        assert_int_equal(rc, ANN_ECORRUPT);
        if (!strstr(ann_errmsg(rc), "dim"))
            fail_msg("%s: dim %u: \"%s\" does not name dim", f->name, ANN_MAX_DIM + 1,
                     ann_errmsg(rc));
    }
}

/* ---- binio files: codebook, graph, node sums --------------------------- */

/* Write hdr (hdr_len bytes) and body to path with the crc32 trailer. */
static void write_binio(const char *path, const uint8_t *hdr, size_t hdr_len, const void *body,
                        size_t body_len)
{
    size_t len = hdr_len + body_len + 4;
    uint8_t *b = malloc(len);
    memcpy(b, hdr, hdr_len);
    if (body_len)
        memcpy(b + hdr_len, body, body_len);
    ann_put_u32(b + len - 4, (uint32_t)crc32(0L, b, (uInt)(len - 4)));
    assert_int_equal(tu_write_file(path, b, len), 0);
    free(b);
}

static void pq_header(uint8_t *h, uint32_t dim, uint32_t m, uint32_t dsub)
{
    memset(h, 0, PQ_HEADER_BYTES);
    memcpy(h, "ANNPQCB", 8);
    ann_put_u32(h + ANN_HDR_VERSION_OFF, PQ_FILE_VERSION);
    ann_put_u32(h + PQ_OFF_DIM, dim);
    ann_put_u32(h + PQ_OFF_M, m);
    ann_put_u32(h + PQ_OFF_DSUB, dsub);
    ann_put_u32(h + PQ_OFF_KSUB, PQ_KSUB);
    ann_put_u32(h + PQ_OFF_METRIC, ANN_METRIC_L2);
}

static int load_pq(const char *path)
{
    pq_codebook *cb = NULL;
    int rc = pq_codebook_load(path, &cb);
    pq_codebook_destroy(cb);
    return rc;
}

static void vamana_header(uint8_t *h, uint32_t R, uint64_t n)
{
    memset(h, 0, VAMANA_HEADER_BYTES);
    memcpy(h, "ANNVAMG", 8);
    ann_put_u32(h + ANN_HDR_VERSION_OFF, VAMANA_FILE_VERSION);
    ann_put_u32(h + VAMANA_OFF_R, R);
    ann_put_u64(h + VAMANA_OFF_N, n);
    ann_put_u32(h + VAMANA_OFF_DIM, 4);
}

/* A two-node graph of stride R (0 <-> 1) as the body of a graph file. */
static uint8_t *vamana_body(uint32_t R, size_t *len)
{
    *len = 4 * 2 + 4 * 2 * (size_t)R;
    uint8_t *b = malloc(*len);
    memset(b, 0xFF, *len);
    ann_put_u32(b, 1);
    ann_put_u32(b + 4, 1);
    ann_put_u32(b + 8, 1);
    ann_put_u32(b + 8 + 4 * (size_t)R, 0);
    return b;
}

static int load_vamana(const char *path)
{
    vamana_graph *g = NULL;
    int rc = vamana_graph_load(path, &g);
    vamana_graph_destroy(g);
    return rc;
}

static int load_sums(const char *path)
{
    dsec_header h = { .n = 3, .node_bytes = 100 };
    uint32_t *sums = NULL;
    int rc = dsec_sums_load(path, &h, &sums);
    free(sums);
    return rc;
}

typedef struct file_kind {
    const char *name, *magic;
    uint32_t version;
    size_t header_bytes;
    int magic_rc;  /* what the loader returns for another magic */
    int (*load)(const char *path);
} file_kind;

static void test_file_order(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("headers");
    char path[4400], want[4600];
    snprintf(path, sizeof path, "%s/file", dir);

    uint8_t pq_h[PQ_HEADER_BYTES], vam_h[VAMANA_HEADER_BYTES], sums_h[DSEC_SUMS_HEADER_BYTES];
    float *centroids = calloc(2 * PQ_KSUB * 2, sizeof(float));
    pq_header(pq_h, 4, 2, 2);
    size_t vam_len = 0;
    uint8_t *vam_b = vamana_body(3, &vam_len);
    vamana_header(vam_h, 3, 2);
    uint8_t sums_b[12] = { 0 };
    memset(sums_h, 0, sizeof sums_h);
    memcpy(sums_h, DSEC_SUMS_MAGIC, 8);
    ann_put_u32(sums_h + ANN_HDR_VERSION_OFF, DSEC_SUMS_VERSION);
    ann_put_u32(sums_h + DSEC_SUMS_OFF_NODE_BYTES, 100);
    ann_put_u64(sums_h + DSEC_SUMS_OFF_N, 3);

    const struct {
        file_kind k;
        uint8_t *hdr;
        const void *body;
        size_t body_len;
    } kinds[] = {
        { { "PQ codebook", "ANNPQCB", PQ_FILE_VERSION, PQ_HEADER_BYTES, ANN_EFORMAT, load_pq },
          pq_h, centroids, 2 * PQ_KSUB * 2 * sizeof(float) },
        { { "Vamana graph", "ANNVAMG", VAMANA_FILE_VERSION, VAMANA_HEADER_BYTES, ANN_EFORMAT,
            load_vamana },
          vam_h, vam_b, vam_len },
        /* index.sums reads any wrong file as a corrupt index */
        { { "diskann-sector checksum file", DSEC_SUMS_MAGIC, DSEC_SUMS_VERSION,
            DSEC_SUMS_HEADER_BYTES, ANN_ECORRUPT, load_sums },
          sums_h, sums_b, sizeof sums_b },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const file_kind *k = &kinds[i].k;
        uint8_t h[64];
        memcpy(h, kinds[i].hdr, k->header_bytes);
        write_binio(path, h, k->header_bytes, kinds[i].body, kinds[i].body_len);
        if (k->load(path) != 0)
            fail_msg("%s: the valid file is refused: %s", k->name, ann_errmsg(ANN_ECORRUPT));
        size_t len = 0;
        uint8_t *file = tu_read_file(path, &len);
        const uint32_t sum = ann_get_u32(file + len - 4);

        /* the version field's low bit flipped: the whole file's checksum speaks first */
        file[ANN_HDR_VERSION_OFF] ^= 1;
        assert_int_equal(tu_write_file(path, file, len), 0);
        snprintf(want, sizeof want, "%s: checksum mismatch (stored %08x, computed %08x)", path,
                 sum, (uint32_t)crc32(0L, file, (uInt)(len - 4)));
        expect_msg(k->load(path), ANN_ECORRUPT, want, k->name);
        free(file);

        /* another magic, checksum valid */
        memcpy(h, "ANNXXXX", 8);
        write_binio(path, h, k->header_bytes, kinds[i].body, kinds[i].body_len);
        snprintf(want, sizeof want, "%s: bad magic, expected \"%s\" (%s)", path, k->magic,
                 k->name);
        expect_msg(k->load(path), k->magic_rc, want, k->name);

        /* a newer version, checksum valid */
        memcpy(h, k->magic, 8);
        ann_put_u32(h + ANN_HDR_VERSION_OFF, k->version + 1);
        write_binio(path, h, k->header_bytes, kinds[i].body, kinds[i].body_len);
        snprintf(want, sizeof want, "%s: %s version %u, this build reads %u; rebuild the index",
                 path, k->name, k->version + 1, k->version);
        expect_msg(k->load(path), ANN_EVERSION, want, k->name);
    }
    free(centroids);
    free(vam_b);
    tu_rmdir(dir);
}

/* PQ codebook: dim ANN_MAX_DIM passes the field checks (the size check is
 * the next to speak: a real codebook of that dim is 1 GiB); one more is
 * refused by name. */
static void test_pq_dim_limit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("headers");
    char path[4400], want[4600];
    snprintf(path, sizeof path, "%s/limit.pqcb", dir);
    uint8_t h[PQ_HEADER_BYTES];
    pq_header(h, ANN_MAX_DIM, ANN_MAX_DIM, 1);
    write_binio(path, h, sizeof h, NULL, 0);
    snprintf(want, sizeof want, "%s: size %u, expected %llu for m %u dsub 1", path,
             (unsigned)PQ_HEADER_BYTES + 4,
             (unsigned long long)PQ_HEADER_BYTES + 4ull * ANN_MAX_DIM * PQ_KSUB + 4, ANN_MAX_DIM);
    expect_msg(load_pq(path), ANN_EFORMAT, want, "PQ codebook at the limit");
    pq_header(h, ANN_MAX_DIM + 1, ANN_MAX_DIM + 1, 1);
    write_binio(path, h, sizeof h, NULL, 0);
    snprintf(want, sizeof want, "%s: field dim = %u out of range", path, ANN_MAX_DIM + 1);
    expect_msg(load_pq(path), ANN_EFORMAT, want, "PQ codebook past the limit");
    tu_rmdir(dir);
}

/* Vamana graph file and the diskann-sector header: degree ANN_MAX_R loads,
 * one more is refused by name. */
static void test_degree_limit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("headers");
    char path[4400], want[4600];
    snprintf(path, sizeof path, "%s/limit.vamana", dir);
    uint8_t h[VAMANA_HEADER_BYTES];
    size_t len = 0;
    uint8_t *body = vamana_body(ANN_MAX_R, &len);
    vamana_header(h, ANN_MAX_R, 2);
    write_binio(path, h, sizeof h, body, len);
    assert_int_equal(load_vamana(path), 0);
    free(body);
    body = vamana_body(ANN_MAX_R + 1, &len);
    vamana_header(h, ANN_MAX_R + 1, 2);
    write_binio(path, h, sizeof h, body, len);
    snprintf(want, sizeof want, "%s: field R = %u out of range [1, %u]", path, ANN_MAX_R + 1,
             ANN_MAX_R);
    expect_msg(load_vamana(path), ANN_EFORMAT, want, "Vamana graph past the limit");
    free(body);

    uint8_t sector[DSEC_SECTOR_BYTES];
    dsec_header d = { .version = DSEC_VERSION, .n = 1, .dim = 4, .R = ANN_MAX_R, .pq_bytes = 1 };
    dsec_geometry(&d);
    dsec_header_encode(&d, sector);
    assert_int_equal(dsec_header_decode(sector, UINT64_MAX / 2, "s", &d), 0);
    d.R = ANN_MAX_R + 1;
    dsec_geometry(&d);
    dsec_header_encode(&d, sector);
    expect_msg(dsec_header_decode(sector, UINT64_MAX / 2, "s", &d), ANN_ECORRUPT,
               "s: header: R 4097 out of range", "diskann-sector header past the limit");
    tu_rmdir(dir);
}

/* The reference peers' metadata, big-ann vector files and texmex files:
 * ANN_MAX_DIM accepted, one more refused by name. */
static void test_other_readers_dim_limit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("headers");
    char path[4400], want[4600];
    ann_idxmeta m;
    assert_int_equal(ann_idxmeta_write(dir, "meta.json", "t", 1, ANN_METRIC_L2, 5, ANN_MAX_DIM,
                                       NULL),
                     0);
    assert_int_equal(ann_idxmeta_read(dir, "meta.json", "t", 1, &m), 0);
    assert_int_equal(m.dim, ANN_MAX_DIM);
    ann_idxmeta_fini(&m);
    assert_int_equal(ann_idxmeta_write(dir, "meta.json", "t", 1, ANN_METRIC_L2, 5,
                                       ANN_MAX_DIM + 1, NULL),
                     0);
    snprintf(want, sizeof want, "%s/meta.json: field \"dim\" = %u outside [1, %u]", dir,
             ANN_MAX_DIM + 1, ANN_MAX_DIM);
    expect_msg(ann_idxmeta_read(dir, "meta.json", "t", 1, &m), ANN_ECORRUPT, want,
               "idxmeta past the limit");
    ann_idxmeta_fini(&m);

    /* a big-ann .fbin file of no rows: the header alone */
    snprintf(path, sizeof path, "%s/x.fbin", dir);
    for (uint32_t dim = ANN_MAX_DIM; dim <= ANN_MAX_DIM + 1; dim++) {
        uint8_t hdr[8];
        ann_put_u32(hdr, 0);
        ann_put_u32(hdr + 4, dim);
        assert_int_equal(tu_write_file(path, hdr, sizeof hdr), 0);
        ann_vecfile vf = { .fd = -1 };
        int rc = ann_vecfile_open(path, &vf);
        if (dim == ANN_MAX_DIM) {
            if (rc != 0)
                fail_msg("vecfile dim %u refused: %s", dim, ann_errmsg(rc));
            assert_int_equal(vf.dim, ANN_MAX_DIM);
        } else {
            snprintf(want, sizeof want, "%s: header says dim %u, more than %u", path, dim,
                     ANN_MAX_DIM);
            expect_msg(rc, ANN_EFORMAT, want, "vecfile past the limit");
        }
        ann_vecfile_close(&vf);
    }

    /* one .fvecs row: its dim, then dim floats */
    snprintf(path, sizeof path, "%s/x.fvecs", dir);
    for (uint32_t dim = ANN_MAX_DIM; dim <= ANN_MAX_DIM + 1; dim++) {
        size_t len = 4 + 4 * (size_t)dim;
        uint8_t *row = calloc(1, len);
        ann_put_u32(row, dim);
        assert_int_equal(tu_write_file(path, row, len), 0);
        free(row);
        ann_vecsrc *src = NULL;
        int rc = ds_texmex_open(path, ANN_METRIC_L2, &src);
        if (dim == ANN_MAX_DIM) {
            if (rc != 0)
                fail_msg("texmex dim %u refused: %s", dim, ann_errmsg(rc));
        } else {
            snprintf(want, sizeof want, "%s: row 0 has dim %u (want 1 to %u)", path, dim,
                     ANN_MAX_DIM);
            expect_msg(rc, ANN_EFORMAT, want, "texmex past the limit");
        }
        ann_vecsrc_destroy(src);
    }
    tu_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_order),
        cmocka_unit_test(test_frame_dim_limit),
        cmocka_unit_test(test_file_order),
        cmocka_unit_test(test_pq_dim_limit),
        cmocka_unit_test(test_degree_limit),
        cmocka_unit_test(test_other_readers_dim_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
