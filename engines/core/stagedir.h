/*
 * stagedir.h: writing a named output directory so that it is replaced
 * whole or not at all.
 *
 * A writer builds into a temporary sibling "<final>.tmp.<pid>-<start>"
 * (owner.h), fsyncs everything in it, and only then puts it in place:
 * renameat2(RENAME_EXCHANGE) swaps it with an existing output, whose old
 * contents are then removed; where the filesystem cannot exchange, the old
 * output is renamed aside first and renamed back if the second rename
 * fails.  A failure, a full disk or a crash at any point before that
 * leaves the old output exactly as it was, plus at worst the temporary,
 * which the next writer of the same name removes once its owner is dead
 * (ann_tmp_reap).  An output that exists is refused unless forced.
 *
 *   ann_stagedir sd;
 *   rc = ann_stagedir_begin(&sd, "datasets/data/mine", flags);
 *   ... write files into ann_stagedir_path(&sd) ...
 *   rc = rc ? rc : ann_stagedir_commit(&sd);
 *   ann_stagedir_abort(&sd);         always: a no-op after a commit
 */
#ifndef ANNLAB_CORE_STAGEDIR_H
#define ANNLAB_CORE_STAGEDIR_H

#include <limits.h>

/* Flags of writers of a named output directory. */
#define ANN_OUT_FORCE 1u    /* replace an output that exists (else: refused) */
#define ANN_OUT_IN_PLACE 2u /* the directory is a staging directory its caller
                               owns (and commits): write into it directly */

typedef struct ann_stagedir {
    char final[PATH_MAX];
    char tmp[PATH_MAX];  /* where to write (final itself with ANN_OUT_IN_PLACE) */
    unsigned flags;
    int active;          /* tmp exists and is ours to remove */
} ann_stagedir;

/*
 * Start writing final.  Without ANN_OUT_FORCE, a final that exists and is
 * not an empty directory is refused.  Creates final's parent directories
 * and the temporary, after removing temporaries of final left by dead
 * owners.  With ANN_OUT_IN_PLACE nothing is checked or made but final
 * itself (mkdir -p), which commit and abort leave alone.
 * Errors: -EEXIST "<final>: already exists; --force replaces it";
 * ANN_EPARAM "<final>: path too long ..." (the temporary's name must fit
 * PATH_MAX); -errno naming the directory that could not be made.
 */
int ann_stagedir_begin(ann_stagedir *s, const char *final, unsigned flags);

/* The refusal of begin without ANN_OUT_FORCE, without making anything: 0
 * when final may be written, else -EEXIST with the same message.  For
 * writers that check before a long read of their inputs. */
int ann_stagedir_refuses(const char *final);

/* The directory to write into. */
const char *ann_stagedir_path(const ann_stagedir *s);

/*
 * fsync the temporary's contents, put it in place of final (see above),
 * remove what final held before, fsync final's parent.  After a failure
 * final is as it was before begin.  Errors: -errno naming the file or
 * rename that failed; -EEXIST when final appeared meanwhile and the
 * output is not forced.
 */
int ann_stagedir_commit(ann_stagedir *s);

/* Remove the temporary if it is still there (after a failure, or always at
 * the end: a no-op after a successful commit).  Accepts a zeroed struct. */
void ann_stagedir_abort(ann_stagedir *s);

#endif
