/*
 * registry.c: name -> vtable.  Add an engine here and nowhere else.
 */
#include "engines/engine.h"

#include <string.h>

extern const ann_engine_ops flat_engine_ops;
extern const ann_engine_ops diskann_sector_engine_ops;

static const ann_engine_ops *const registry[] = {
    &flat_engine_ops,
    &diskann_sector_engine_ops,
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
