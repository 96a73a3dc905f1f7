/*
 * ref_faiss.h: the C face of the FAISS reference peers
 * (`ref-faiss-ivfpq`, `ref-faiss-hnsw`; vtables in ivfpq.cc and hnsw.cc,
 * listed in engines/registry.c under ANNLAB_HAVE_FAISS).
 */
#ifndef ANNLAB_REF_FAISS_H
#define ANNLAB_REF_FAISS_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A one-line note for a result's machine description: which FAISS build the
 * peers link, and that Debian's libfaiss is a generic build without the
 * AVX2/AVX-512 kernels, so its figures understate FAISS.  Static string;
 * thread-safe.  The peers also store it as "machine_note" in build.json's
 * engine report.
 */
const char *ref_faiss_machine_note(void);

#ifdef __cplusplus
}
#endif

#endif
