/*
 * fuzz_records.c: libFuzzer target for the records of the record engines
 * (diskann-record, diskann-resident, hnsw-record, ivfpq-record) in both
 * stores (LMDB and RocksDB).  A valid index of each engine in each store is
 * built at start-up.  Input byte 0 picks the engine and the store, byte 1
 * the record (metadata, or one of the graph node / list / directory
 * records; for ivfpq-record, a byte 1 with its top bit set picks the
 * coarse centroid file coarse.fbin instead, whose bytes the rest replaces),
 * and the rest becomes that record's value,
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
#define FZ_STORES 2
#define FZ_INDEXES (FZ_ENGINES * FZ_STORES) /* index i: engine i % 4, store i / 4 */
#define FZ_RECORDS 3

static const char *const g_engine[FZ_ENGINES] = { "diskann-record", "diskann-resident",
                                                  "hnsw-record", "ivfpq-record" };
static const char *const g_store[FZ_STORES] = { "lmdb", "rocksdb" };
/* build parameters but the store ("kv": "<store>"} is appended) */
static const char *const g_build[FZ_ENGINES] = {
    "{\"R\": 6, \"L_build\": 20, \"pq_bytes\": 4, ",
    "{\"R\": 6, \"L_build\": 20, \"pq_bytes\": 4, ",
    "{\"M\": 6, \"ef_construction\": 20, ",
    "{\"nlist\": 4, \"pq_bytes\": 4, ",
};
static const char *const g_search[FZ_ENGINES] = { "{\"L\": 20}", "{\"L\": 20}",
                                                  "{\"ef_search\": 20}", "{\"nprobe\": 4}" };
static char g_index[FZ_INDEXES][4200];
static uint8_t g_key[FZ_INDEXES][FZ_RECORDS][KV_KEY_U64_BYTES];
static size_t g_key_len[FZ_INDEXES][FZ_RECORDS];
static uint8_t *g_val[FZ_INDEXES][FZ_RECORDS];
static size_t g_val_len[FZ_INDEXES][FZ_RECORDS];
static uint8_t *g_coarse[FZ_INDEXES]; /* ivfpq-record's coarse.fbin, as built */
static size_t g_coarse_len[FZ_INDEXES];

/* Replace index i's coarse file with bytes (abort when it cannot: a harness bug). */
static void coarse_write(int i, const uint8_t *bytes, size_t len)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", g_index[i], IVFPQ_COARSE_FILE);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(bytes, 1, len, f) != len) || fclose(f) != 0)
        abort();
}

static kv_store *store_open(int i, int read_only)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", g_index[i], g_store[i / FZ_ENGINES]);
    kv_options o = { .backend = i < FZ_ENGINES ? KV_BACKEND_LMDB : KV_BACKEND_ROCKSDB,
                     .read_only = read_only };
    kv_store *s = NULL;
    return kv_open(path, &o, &s) == 0 ? s : NULL;
}

/* Keep a copy of index i's record r (abort when absent: a seed bug). */
static void keep(int i, int r, kv_store *s)
{
    kv_reader *rd = NULL;
    kv_val v;
    int rc = 0;
    if ((rc = kv_reader_create(s, &rd)) || (rc = kv_reader_begin(rd)) ||
        (rc = kv_get(rd, g_key[i][r], g_key_len[i][r], &v))) {
        fprintf(stderr, "fuzz: %s (%s) record %d of the seed index: %s\n", g_engine[i % FZ_ENGINES],
                g_store[i / FZ_ENGINES], r, ann_errmsg(rc));
        abort();
    }
    g_val[i][r] = malloc(v.len + 1);
    memcpy(g_val[i][r], v.data, v.len);
    g_val_len[i][r] = v.len;
    kv_val_release(&v);
    kv_reader_end(rd);
    kv_reader_destroy(rd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init("records");
    for (int i = 0; i < FZ_INDEXES; i++) {
        int e = i % FZ_ENGINES;
        char name[32], params[160];
        snprintf(name, sizeof name, "index-%d", i);
        snprintf(params, sizeof params, "%s\"kv\": \"%s\"}", g_build[e], g_store[i / FZ_ENGINES]);
        fz_build(g_engine[e], params, name, g_index[i], sizeof g_index[i]);
        kv_store *s = store_open(i, 1);
        if (!s)
            abort();
        if (e < 2) {
            g_key_len[i][0] = kv_key_u32(g_key[i][0], DREC_TABLE_META, 0);
            keep(i, 0, s);
            uint32_t medoid = ann_get_u32(g_val[i][0] + 56);
            g_key_len[i][1] = kv_key_u32(g_key[i][1], DREC_TABLE_NODE, medoid);
            g_key_len[i][2] = kv_key_u32(g_key[i][2], DREC_TABLE_NODE, (medoid + 1) % FZ_N);
        } else if (e == 2) {
            g_key_len[i][0] = kv_key_u32(g_key[i][0], HNSW_TABLE_META, 0);
            g_key_len[i][1] = kv_key_u32(g_key[i][1], HNSW_TABLE_NODE, 0);
            g_key_len[i][2] = kv_key_u32(g_key[i][2], HNSW_TABLE_NODE, 1);
        } else {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", g_index[i], IVFPQ_COARSE_FILE);
            FILE *f = fopen(path, "rb");
            if (!f || fseek(f, 0, SEEK_END) != 0)
                abort();
            g_coarse_len[i] = (size_t)ftell(f);
            g_coarse[i] = malloc(g_coarse_len[i]);
            rewind(f);
            if (fread(g_coarse[i], 1, g_coarse_len[i], f) != g_coarse_len[i])
                abort();
            fclose(f);
            g_key_len[i][0] = kv_key_u32(g_key[i][0], IVFPQ_TABLE_META, 0);
            g_key_len[i][1] = kv_key_u64(g_key[i][1], IVFPQ_TABLE_LIST, 0);
            g_key_len[i][2] = kv_key_u32(g_key[i][2], IVFPQ_TABLE_DIR, 0);
        }
        for (int r = e < 2 ? 1 : 0; r < FZ_RECORDS; r++)
            keep(i, r, s);
        kv_close(s);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int i = data[0] % FZ_INDEXES, r = data[1] % FZ_RECORDS;
    char open_p[40];
    snprintf(open_p, sizeof open_p, "{\"kv\": \"%s\"}", g_store[i / FZ_ENGINES]);
    if (i % FZ_ENGINES == 3 && (data[1] & 0x80)) {
        coarse_write(i, data + 2, size - 2);
        fz_open_search(g_engine[3], g_index[i], open_p, g_search[3]);
        coarse_write(i, g_coarse[i], g_coarse_len[i]);
        return 0;
    }
    kv_store *s = store_open(i, 0);
    if (!s)
        return 0;
    int wrote = kv_put(s, g_key[i][r], g_key_len[i][r], data + 2, size - 2) == 0;
    kv_close(s);
    if (wrote)
        fz_open_search(g_engine[i % FZ_ENGINES], g_index[i], open_p, g_search[i % FZ_ENGINES]);
    s = store_open(i, 0);
    if (!s || kv_put(s, g_key[i][r], g_key_len[i][r], g_val[i][r], g_val_len[i][r]) != 0)
        abort(); /* the seed cannot be restored: the harness is broken */
    kv_close(s);
    return 0;
}
