/*
 * common.cc: helpers shared by the FAISS reference shims (see common.hh),
 * and the machine note about Debian's generic libfaiss build.
 */
#include "engines/ref_faiss/common.hh"

#include <faiss/index_io.h>

#include <cerrno>
#include <time.h>
#include <unistd.h>

#define REF_FAISS_STR2(x) #x
#define REF_FAISS_STR(x) REF_FAISS_STR2(x)

extern "C" const char *ref_faiss_machine_note(void)
{
    return "FAISS " REF_FAISS_STR(FAISS_VERSION_MAJOR) "." REF_FAISS_STR(
        FAISS_VERSION_MINOR) "." REF_FAISS_STR(FAISS_VERSION_PATCH) " from Debian libfaiss-dev: a "
                                                                    "generic build without the "
                                                                    "AVX2/AVX-512 kernels, so "
                                                                    "its figures understate "
                                                                    "FAISS";
}

namespace ref_faiss {

faiss::MetricType metric_of(ann_metric m)
{
    return m == ANN_METRIC_L2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
}

int read_all(const ann_vecsrc *src, std::vector<float> &out)
{
    out.resize((size_t)src->n * src->dim);
    return src->n ? ann_vecsrc_read(src, 0, src->n, out.data()) : 0;
}

int write_index(const faiss::Index *ix, const char *dir)
{
    std::string path = std::string(dir) + "/" + INDEX_FILE;
    return ann_cxx_guard(ANN_EINTERNAL, path.c_str(), [&]() {
        faiss::write_index(ix, path.c_str());
        return 0;
    });
}

int read_index(const char *dir, std::unique_ptr<faiss::Index> &out)
{
    std::string path = std::string(dir) + "/" + INDEX_FILE;
    if (access(path.c_str(), F_OK) != 0)
        return ann_fail(ANN_ENOTFOUND, "%s: missing", path.c_str());
    return ann_cxx_guard(ANN_ECORRUPT, path.c_str(), [&]() {
        out.reset(faiss::read_index(path.c_str()));
        return 0;
    });
}

uint64_t thread_cpu_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

} /* namespace ref_faiss */
