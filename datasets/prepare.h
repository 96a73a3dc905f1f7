/*
 * prepare.h: the registry of known datasets (datasets/registry.json) and
 * `prepare NAME`, which makes a bundle from a registry entry.
 *
 * Registry entry fields: name, description, kind (idx | wink | files |
 * download-hdf5 | download-parquet | synth), metric, n, dim, nq, gt_k,
 * source (kind-specific), warmup {rule: base-sample | held-out, count,
 * seed}.  Relative source paths are relative to the registry's folder.
 */
#ifndef ANNLAB_DATASETS_PREPARE_H
#define ANNLAB_DATASETS_PREPARE_H

#include <jansson.h>
#include <stddef.h>

typedef struct ds_registry {
    json_t *root;      /* owned */
    char path[4096];   /* the file it came from */
    char dir[4096];    /* its folder (datasets/) */
} ds_registry;

/*
 * Load the registry: `path` when not NULL, else $ANNLAB_REGISTRY, else
 * datasets/registry.json next to the running binary's repository
 * (<exe>/../datasets or <exe>/../../datasets), else ./datasets/registry.json.
 * Every entry is validated (name, kind, metric, description); errors name
 * the file and the entry (ANN_ENOTFOUND, ANN_EFORMAT).
 */
int ds_registry_load(const char *path, ds_registry *reg);
void ds_registry_free(ds_registry *reg);

/* The entry named name (borrowed), or NULL. */
const json_t *ds_registry_find(const ds_registry *reg, const char *name);

typedef struct ds_prepare_opts {
    const char *root;  /* bundles go to root/NAME (default "datasets/data") */
    const char *from;  /* an already-downloaded source file (download kinds) */
    int force;         /* redo even when root/NAME is a bundle already */
} ds_prepare_opts;

/*
 * Make the bundle root/NAME from its registry entry.  Returns 0 when done
 * (or already prepared: *already set to 1 when not NULL).  Errors:
 * ANN_ENOTFOUND (unknown name; missing source files, naming the package to
 * install), ANN_EUNSUPPORTED (a download this machine cannot make),
 * ANN_ECORRUPT (a source file's sha256 differs from the registry), and
 * those of the readers.
 */
int ds_prepare(const ds_registry *reg, const char *name, const ds_prepare_opts *opts,
               int *already);

/* Where shared real data lives: $ANNLAB_SHARED/data, else <repo>/../shared/data. */
void ds_shared_data_dir(const ds_registry *reg, char *buf, size_t len);

#endif
