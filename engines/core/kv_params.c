/*
 * kv_params.c: the record-store open parameters (see kv_params.h).
 */
#include "engines/core/kv_params.h"

#include "engines/core/status.h"
#include "engines/engine.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const kv_build_choices[] = { "rocksdb", "lmdb", "both", NULL };

int kv_build_includes(const char *which, kv_backend b)
{
    return which && (strcmp(which, "both") == 0 || strcmp(which, kv_backend_name(b)) == 0);
}

void kv_store_path(char *buf, size_t bufsz, const char *index_dir, kv_backend b)
{
    snprintf(buf, bufsz, "%s/%s", index_dir, kv_backend_name(b));
}

const ann_param_spec kv_open_params[] = {
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_backend_choices, .def_str = "rocksdb",
      .help = "record store backend" },
    { .name = "profile", .type = ANN_PARAM_ENUM, .choices = kv_profile_choices,
      .def_str = "server", .help = "server: RocksDB block cache; embedded: page cache only" },
    { .name = "block_cache_mb", .type = ANN_PARAM_INT, .min = 0, .max = 1 << 20,
      .def = KV_DEFAULT_BLOCK_CACHE_MB, .help = "RocksDB block cache (server profile), MiB" },
    ANN_PARAM_END_OF("record-store open (hnsw-record, ivfpq-record)"),
};

const ann_param_spec kv_live_open_params[] = {
    { .name = "kv", .type = ANN_PARAM_ENUM, .choices = kv_backend_choices, .def_str = "rocksdb",
      .help = "record store backend" },
    { .name = "profile", .type = ANN_PARAM_ENUM, .choices = kv_profile_choices,
      .def_str = "server", .help = "server: RocksDB block cache; embedded: page cache only" },
    { .name = "block_cache_mb", .type = ANN_PARAM_INT, .min = 0, .max = 1 << 20,
      .def = KV_DEFAULT_BLOCK_CACHE_MB, .help = "RocksDB block cache (server profile), MiB" },
    { .name = "updates", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "open the store writable for insert/remove/merge (one process at a time)" },
    { .name = "sync", .type = ANN_PARAM_BOOL, .def = 0,
      .help = "updates: LMDB syncs every commit (default: a commit survives kill -9, as "
              "RocksDB's unsynced WAL does)" },
    ANN_PARAM_END_OF("record-store open (hnsw-record, ivfpq-record)"),
};

/* The store options from open_params, read through the engine's table. */
static int options_from_params(const json_t *open_params, const kv_index_spec *spec,
                               const char *index_dir, kv_options *opt)
{
    memset(opt, 0, sizeof *opt);
    const ann_param_spec *t = spec->params;
    int rc = 0;
    if (spec->kv_default_built && !ann_param_is_set(open_params, "kv")) {
        char path[4200];
        kv_store_path(path, sizeof path, index_dir, KV_BACKEND_ROCKSDB);
        opt->backend = access(path, F_OK) == 0 ? KV_BACKEND_ROCKSDB : KV_BACKEND_LMDB;
    } else {
        rc = kv_backend_parse(ann_param_enum(open_params, t, "kv"), &opt->backend);
    }
    if (!rc)
        rc = kv_profile_parse(ann_param_enum(open_params, t, "profile"), &opt->profile);
    if (rc)
        return rc;
    opt->block_cache_mb = (uint32_t)ann_param_int(open_params, t, "block_cache_mb");
    opt->read_only = !spec->writable;
    opt->relaxed_sync = spec->relaxed_sync;
    opt->ingest_above_bytes = spec->ingest_above_bytes;
    return 0;
}

void kv_index_spec_live(const json_t *open_params, kv_index_spec *spec)
{
    spec->params = kv_live_open_params;
    spec->writable = ann_param_bool(open_params, kv_live_open_params, "updates");
    spec->relaxed_sync = !ann_param_bool(open_params, kv_live_open_params, "sync");
}

void kv_open_report(const kv_options *opt, json_t *report)
{
    uint64_t mb = opt->block_cache_mb ? opt->block_cache_mb : KV_DEFAULT_BLOCK_CACHE_MB;
    uint64_t cache = opt->backend == KV_BACKEND_ROCKSDB && opt->profile == KV_PROFILE_SERVER
                         ? mb << 20 : 0;
    ann_open_report_set(report, kv_backend_name(opt->backend), opt->direct_reads, cache);
    json_object_set_new(report, "kv", json_string(kv_backend_name(opt->backend)));
    json_object_set_new(report, "kv_profile", json_string(kv_profile_name(opt->profile)));
}

int kv_index_open(const char *index_dir, const json_t *open_params, const kv_index_spec *spec,
                  kv_options *opt, char *store_dir, size_t bufsz, kv_store **kv, kv_reader **rd)
{
    struct stat st;
    kv_store *s = NULL;
    kv_reader *r = NULL;
    *kv = NULL;
    *rd = NULL;
    if (stat(index_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ann_fail(ANN_ENOTFOUND, "%s: no index directory", index_dir);
    int rc = options_from_params(open_params, spec, index_dir, opt);
    if (rc)
        return rc;
    kv_store_path(store_dir, bufsz, index_dir, opt->backend);
    if (stat(store_dir, &st) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: no %s store in this index (see its build parameter kv)",
                        store_dir, kv_backend_name(opt->backend));
    rc = kv_open(store_dir, opt, &s);
    if (rc == 0)
        rc = kv_reader_create(s, &r);
    if (rc == 0)
        rc = kv_reader_begin(r);
    if (rc) {
        kv_reader_destroy(r);
        kv_close(s);
        return rc;
    }
    *kv = s;
    *rd = r;
    return 0;
}
