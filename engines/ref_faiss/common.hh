/*
 * common.hh: what the two FAISS shims (ivfpq.cc, hnsw.cc) share: metric
 * and distance conversion, the index file and its metadata, and the
 * per-query CPU clock.  C++ only, internal to engines/ref_faiss.
 */
#ifndef ANNLAB_REF_FAISS_COMMON_HH
#define ANNLAB_REF_FAISS_COMMON_HH

extern "C" {
#include "engines/core/idxmeta.h"
#include "engines/core/status.h"
#include "engines/engine.h"
#include "engines/ref_faiss/ref_faiss.h"
}
#include "engines/core/cxx_shim.hh"

#include <faiss/Index.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ref_faiss {

constexpr const char *INDEX_FILE = "faiss.index";

/* Cosine is inner product on unit vectors (vectors normalised at preparation). */
faiss::MetricType metric_of(ann_metric m);

/* FAISS's distance (squared L2, or the inner product) -> annlab's
 * (squared L2, -ip, 1 - ip). */
static inline float to_ann_distance(ann_metric m, float d)
{
    return m == ANN_METRIC_L2 ? d : m == ANN_METRIC_IP ? -d : 1.0f - d;
}

/* Read all of src into a vector (FAISS trains and adds from memory). */
int read_all(const ann_vecsrc *src, std::vector<float> &out);

/* write_index into <dir>/faiss.index (exceptions become ANN_EINTERNAL). */
int write_index(const faiss::Index *ix, const char *dir);

/* read_index from <dir>/faiss.index: ANN_ENOTFOUND when absent,
 * ANN_ECORRUPT when FAISS cannot read it, naming the file. */
int read_index(const char *dir, std::unique_ptr<faiss::Index> &out);

/* Thread CPU time in ns. */
uint64_t thread_cpu_ns();

} /* namespace ref_faiss */

#endif
