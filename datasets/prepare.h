/*
 * prepare.h: the registry of known datasets (datasets/registry.json) and
 * `prepare NAME`, which makes a bundle from a registry entry.
 *
 * Registry entry fields: name, description, kind (idx | wink | files |
 * download-hdf5 | download-parquet | synth), metric, n, dim, nq, gt_k,
 * source (kind-specific), warmup {rule: base-sample | held-out, count,
 * seed}.  Relative source paths are relative to the registry's folder.
 * The download kinds list their files as source.files: [{name, url, and
 * optionally bytes and sha256}] (download-hdf5: exactly one file).
 */
#ifndef ANNLAB_DATASETS_PREPARE_H
#define ANNLAB_DATASETS_PREPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* Where downloads go by default: DIR/NAME/<file>. */
#define DS_DOWNLOADS_DEFAULT "datasets/downloads"

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
    const char *root;      /* bundles go to root/NAME (default "datasets/data") */
    const char *from;      /* an already-downloaded source (download kinds): no fetch */
    const char *downloads; /* fetched files go to downloads/NAME (DS_DOWNLOADS_DEFAULT) */
    FILE *progress;        /* download progress lines (NULL: none) */
    int force;             /* redo even when root/NAME is a bundle already */
} ds_prepare_opts;

/*
 * Make the bundle root/NAME from its registry entry.  Returns 0 when done
 * (or already prepared: *already set to 1 when not NULL).  A download kind
 * without opts->from is first fetched (ds_fetch), then prepared from the
 * downloaded files exactly as --from would; the manifest's "download"
 * records each file's URL, size and sha256.  Errors: ANN_ENOTFOUND
 * (unknown name; missing source files, naming the package to install),
 * ANN_ECORRUPT (a source file's sha256 differs from the registry), those
 * of ds_fetch, and those of the readers.
 */
int ds_prepare(const ds_registry *reg, const char *name, const ds_prepare_opts *opts,
               int *already);

/*
 * Download the source.files of the download-kind entry name into
 * opts->downloads/NAME/ (created), one ds_fetch_file each (fetch.h:
 * resumed from FILE.part, checked against the server's length and the
 * entry's bytes and sha256 when given; a file already there and matching
 * is not fetched again).  $ANNLAB_MIRROR, when set, replaces everything up
 * to the last '/' of each URL.  Only opts->downloads and opts->progress are
 * read (opts may be NULL).  dir (out, dir_len bytes) receives the folder;
 * *report (out, may be NULL; a new reference the caller releases) an array
 * of {file, url, path, bytes, sha256, already, resumed_from,
 * checked_bytes, checked_sha256}, one per file.  Not thread-safe with
 * another fetch of the same dataset (a second process fails with -EBUSY).
 * Errors: ANN_ENOTFOUND (unknown name), ANN_EPARAM (not a download kind),
 * ANN_EUNSUPPORTED (the entry lists no source.files), ANN_EFORMAT (a
 * malformed source.files, naming the registry and the entry), and those
 * of ds_fetch_file (-ENETUNREACH "no network ..." with the --from hint).
 */
int ds_fetch(const ds_registry *reg, const char *name, const ds_prepare_opts *opts, char *dir,
             size_t dir_len, json_t **report);

/* Where shared real data lives: $ANNLAB_SHARED/data, else <repo>/../shared/data. */
void ds_shared_data_dir(const ds_registry *reg, char *buf, size_t len);

#endif
