/*
 * fuzz_records.c: libFuzzer target for the records of the record engines
 * (diskann-record, diskann-resident, hnsw-record, ivfpq-record) in their
 * LMDB stores.  A valid index of each is built at start-up.  Input byte 0
 * picks the engine, byte 1 the record (metadata, or one of the graph node
 * / list / directory records), and the rest becomes that record's value,
 * written through the record store (kv.h: so it carries a valid checksum
 * and the engine's own checks are what is exercised).  The index is then
 * opened and searched, and the record restored.
 *
 *   make fuzz && build-fuzz/fuzz_records -max_total_time=60 CORPUS_DIR
 */
/* DiskANN record indexes below DREC_SCAN_BELOW (1024) vectors are scans
 * without graph records: enough vectors for a graph */
#define FZ_N 1200
#include "tests/fuzz/fuzz_common.h"

#include "engines/core/binio.h"
#include "engines/core/kv.h"
#include "engines/diskann_record/layout.h"
#include "engines/hnsw_record/layout.h"
#include "engines/ivfpq_record/layout.h"

#define FZ_ENGINES 4
#define FZ_RECORDS 3

static const char *const g_engine[FZ_ENGINES] = { "diskann-record", "diskann-resident",
                                                  "hnsw-record", "ivfpq-record" };
static const char *const g_build[FZ_ENGINES] = {
    "{\"R\": 6, \"L_build\": 20, \"pq_bytes\": 4, \"kv\": \"lmdb\"}",
    "{\"R\": 6, \"L_build\": 20, \"pq_bytes\": 4, \"kv\": \"lmdb\"}",
    "{\"M\": 6, \"ef_construction\": 20, \"kv\": \"lmdb\"}",
    "{\"nlist\": 4, \"pq_bytes\": 4, \"kv\": \"lmdb\"}",
};
static const char *const g_search[FZ_ENGINES] = { "{\"L\": 20}", "{\"L\": 20}",
                                                  "{\"ef_search\": 20}", "{\"nprobe\": 4}" };
static char g_index[FZ_ENGINES][4200];
static uint8_t g_key[FZ_ENGINES][FZ_RECORDS][KV_KEY_U64_BYTES];
static size_t g_key_len[FZ_ENGINES][FZ_RECORDS];
static uint8_t *g_val[FZ_ENGINES][FZ_RECORDS];
static size_t g_val_len[FZ_ENGINES][FZ_RECORDS];

static kv_store *store_open(int e, int read_only)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/lmdb", g_index[e]);
    kv_options o = { .backend = KV_BACKEND_LMDB, .read_only = read_only };
    kv_store *s = NULL;
    return kv_open(path, &o, &s) == 0 ? s : NULL;
}

/* Keep a copy of the record under key (abort when absent: a seed bug). */
static void keep(int e, int r, kv_store *s)
{
    kv_reader *rd = NULL;
    kv_val v;
    int rc = 0;
    if ((rc = kv_reader_create(s, &rd)) || (rc = kv_reader_begin(rd)) ||
        (rc = kv_get(rd, g_key[e][r], g_key_len[e][r], &v))) {
        fprintf(stderr, "fuzz: %s record %d of the seed index: %s\n", g_engine[e], r,
                ann_errmsg(rc));
        abort();
    }
    g_val[e][r] = malloc(v.len + 1);
    memcpy(g_val[e][r], v.data, v.len);
    g_val_len[e][r] = v.len;
    kv_val_release(&v);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("records");
    for (int e = 0; e < FZ_ENGINES; e++) {
        char name[32];
        snprintf(name, sizeof name, "index-%d", e);
        fz_build(g_engine[e], g_build[e], name, g_index[e], sizeof g_index[e]);
        kv_store *s = store_open(e, 1);
        if (!s)
            abort();
        if (e < 2) {
            g_key_len[e][0] = kv_key_u32(g_key[e][0], DREC_TABLE_META, 0);
            keep(e, 0, s);
            uint32_t medoid = ann_get_u32(g_val[e][0] + 56);
            g_key_len[e][1] = kv_key_u32(g_key[e][1], DREC_TABLE_NODE, medoid);
            g_key_len[e][2] = kv_key_u32(g_key[e][2], DREC_TABLE_NODE, (medoid + 1) % FZ_N);
        } else if (e == 2) {
            g_key_len[e][0] = kv_key_u32(g_key[e][0], HNSW_TABLE_META, 0);
            g_key_len[e][1] = kv_key_u32(g_key[e][1], HNSW_TABLE_NODE, 0);
            g_key_len[e][2] = kv_key_u32(g_key[e][2], HNSW_TABLE_NODE, 1);
        } else {
            g_key_len[e][0] = kv_key_u32(g_key[e][0], IVFPQ_TABLE_META, 0);
            g_key_len[e][1] = kv_key_u64(g_key[e][1], IVFPQ_TABLE_LIST, 0);
            g_key_len[e][2] = kv_key_u32(g_key[e][2], IVFPQ_TABLE_DIR, 0);
        }
        for (int r = e < 2 ? 1 : 0; r < FZ_RECORDS; r++)
            keep(e, r, s);
        kv_close(s);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int e = data[0] % FZ_ENGINES, r = data[1] % FZ_RECORDS;
    kv_store *s = store_open(e, 0);
    if (!s)
        return 0;
    int wrote = kv_put(s, g_key[e][r], g_key_len[e][r], data + 2, size - 2) == 0;
    kv_close(s);
    if (wrote)
        fz_open_search(g_engine[e], g_index[e], "{\"kv\": \"lmdb\"}", g_search[e]);
    s = store_open(e, 0);
    if (!s || kv_put(s, g_key[e][r], g_key_len[e][r], g_val[e][r], g_val_len[e][r]) != 0)
        abort(); /* the seed cannot be restored: the harness is broken */
    kv_close(s);
    return 0;
}
