/*
 * registry.c: name -> vtable.  Add an engine here and nowhere else.
 */
#include "engines/engine.h"

#include <string.h>

extern const ann_engine_ops flat_engine_ops;
extern const ann_engine_ops diskann_sector_engine_ops;
extern const ann_engine_ops diskann_record_engine_ops;
extern const ann_engine_ops diskann_resident_engine_ops;
extern const ann_engine_ops hnsw_record_engine_ops;
extern const ann_engine_ops ivfpq_record_engine_ops;
#ifdef ANNLAB_HAVE_HNSWLIB
extern const ann_engine_ops ref_hnswlib_engine_ops;
#endif
#ifdef ANNLAB_HAVE_FAISS
extern const ann_engine_ops ref_faiss_ivfpq_engine_ops;
extern const ann_engine_ops ref_faiss_hnsw_engine_ops;
#endif

static const ann_engine_ops *const registry[] = {
    &flat_engine_ops,
    &diskann_sector_engine_ops,
    &diskann_record_engine_ops,
    &diskann_resident_engine_ops,
    &hnsw_record_engine_ops,
    &ivfpq_record_engine_ops,
#ifdef ANNLAB_HAVE_HNSWLIB
    &ref_hnswlib_engine_ops,
#endif
#ifdef ANNLAB_HAVE_FAISS
    &ref_faiss_ivfpq_engine_ops,
    &ref_faiss_hnsw_engine_ops,
#endif
};

const ann_engine_ops *ann_engine_at(size_t i)
{
    return i < sizeof registry / sizeof registry[0] ? registry[i] : NULL;
}

const ann_engine_ops *ann_engine_find(const char *name)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (name && strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}
