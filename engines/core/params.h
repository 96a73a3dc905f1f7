/*
 * params.h: declared engine parameters, validated in one place.
 *
 * Each engine declares its build, open and search parameters as a table of
 * ann_param_spec.  The harness validates a whole config against those tables
 * before anything runs (every problem reported, each with its JSON path);
 * engines read values through ann_param_* getters, which apply defaults.
 * Unknown keys and out-of-range values are errors, never ignored.
 */
#ifndef ANNLAB_CORE_PARAMS_H
#define ANNLAB_CORE_PARAMS_H

#include <jansson.h>
#include <stdint.h>

typedef enum {
    ANN_PARAM_INT,  /* JSON integer in [min, max] */
    ANN_PARAM_REAL, /* JSON number in [min, max] */
    ANN_PARAM_ENUM, /* JSON string, one of choices */
    ANN_PARAM_BOOL, /* JSON true/false */
} ann_param_type;

typedef struct ann_param_spec {
    const char *name;
    ann_param_type type;
    double min, max;             /* INT and REAL: inclusive bounds */
    double def;                  /* INT, REAL, BOOL (0/1): default value */
    const char *const *choices;  /* ENUM: NULL-terminated list */
    const char *def_str;         /* ENUM: default choice */
    const char *help;            /* one line, shown by `annlab engines` */
    int at_least_k;              /* search INT: must be >= the k asked (a search
                                    list shorter than k cannot return k results) */
    const char *owner;           /* end entry only: whose table this is, for
                                    messages ("diskann-sector search") */
    int keyed_default;           /* build: the harness names a cached index by this
                                    parameter's default when a config leaves it out
                                    (harness/run.c build_name), because the default
                                    changed: an index built under the old default must
                                    not be reused as one built under the new */
} ann_param_spec;

/* A spec table ends with an entry whose name is NULL; ANN_PARAM_END_OF
 * names the table's owner (engine and kind) for programming-error
 * messages. */
#define ANN_PARAM_END { .name = NULL }
#define ANN_PARAM_END_OF(who) { .name = NULL, .owner = (who) }

/* Callback receiving one human-readable problem (already prefixed by path). */
typedef void (*ann_param_report_fn)(void *user, const char *msg);

/*
 * Check obj (a JSON object, or NULL meaning {}) against specs.
 * path: JSON path used as the prefix of each message ("engines[1].search").
 * Every problem goes to report(user, msg); returns the number of problems.
 * Thread-safe.
 */
int ann_params_check(const json_t *obj, const ann_param_spec *specs, const char *path,
                     ann_param_report_fn report, void *user);

/*
 * Like ann_params_check but stops at the first problem: returns ANN_EPARAM
 * with the detail message set (see status.h), or 0.  Engines call this in
 * build/open/ctx_new so a direct caller gets the same errors as the harness.
 */
int ann_params_validate(const json_t *obj, const ann_param_spec *specs, const char *path);

/*
 * Check the parameters marked at_least_k (given in obj, or their default)
 * against k, the most results a search will ask for: ANN_EPARAM
 * "<path>.<name>: <v> is less than k = <k>" for the first below it, else
 * 0.  Engines call it in ctx_new with k_max; the harness checks configs
 * the same way before anything runs.
 */
int ann_params_check_k(const json_t *obj, const ann_param_spec *specs, uint32_t k,
                       const char *path);

/* Getters: the value in obj, or the spec's default when absent.  The name
 * must be declared in specs: looking up a name the
 * table does not declare is a programming error (a misspelt "beam_width"
 * must not read as 0), so the getter prints
 *   annlab: programming error: parameter "beam_widht" is not declared by
 *   diskann-sector search (declared: L, beam_width, ...)
 * on stderr and aborts. */
int64_t ann_param_int(const json_t *obj, const ann_param_spec *specs, const char *name);
double ann_param_real(const json_t *obj, const ann_param_spec *specs, const char *name);
int ann_param_bool(const json_t *obj, const ann_param_spec *specs, const char *name);
const char *ann_param_enum(const json_t *obj, const ann_param_spec *specs, const char *name);

/* True when obj sets name explicitly (as opposed to taking the default). */
int ann_param_is_set(const json_t *obj, const char *name);

#endif
