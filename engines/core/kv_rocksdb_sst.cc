/*
 * kv_rocksdb_sst.cc: an SST file writer that leaves what it writes in the
 * page cache, for kv_rocksdb.c's ingested write batches.
 *
 * RocksDB's C API builds every SstFileWriter with invalidate_page_cache
 * true: after each megabyte written it tells the kernel the file's pages
 * are not needed (POSIX_FADV_DONTNEED), the right thing for a bulk load
 * that nobody reads soon.  A merge's batch is the opposite: it rewrites the
 * graph's node records that the next search reads, and with the default the
 * first queries after a merge read them back from the device (bench_merge on
 * 20,000 + 2,000 at L 40: 2.76 ms a query on the first pass after the merge,
 * 0.30 ms on the next).  The C++ constructor takes the flag; this creates
 * the writer through it and hands it back as the C API's own handle, so
 * every other call (open, put, delete, finish, destroy) stays in C.
 *
 * The three structs are the C API's wrappers as rocksdb/db/c.cc defines
 * them (one member each, the C++ object or a pointer to it; unchanged
 * since the C API began).  No exception crosses into C.
 */
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>

#include <new>

extern "C" {
struct rocksdb_options_t {
    rocksdb::Options rep;
};
struct rocksdb_envoptions_t {
    rocksdb::EnvOptions rep;
};
struct rocksdb_sstfilewriter_t {
    rocksdb::SstFileWriter *rep;
};

rocksdb_sstfilewriter_t *kv_rocksdb_sst_writer_keep_cache(const rocksdb_envoptions_t *env,
                                                          const rocksdb_options_t *opts);
}

rocksdb_sstfilewriter_t *kv_rocksdb_sst_writer_keep_cache(const rocksdb_envoptions_t *env,
                                                          const rocksdb_options_t *opts)
{
    rocksdb_sstfilewriter_t *w = new (std::nothrow) rocksdb_sstfilewriter_t;
    if (!w)
        return nullptr;
    try {
        w->rep = new rocksdb::SstFileWriter(env->rep, opts->rep, nullptr,
                                            /* invalidate_page_cache */ false);
    } catch (...) {
        delete w;
        return nullptr;
    }
    return w;
}
