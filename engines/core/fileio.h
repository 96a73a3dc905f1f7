/*
 * fileio.h: plain-file helpers shared by core and datasets: a pread that
 * reads exactly the bytes asked for, open + fstat, mkdir -p, a suffix test,
 * and the temporary-name + fsync + rename sequence that keeps a
 * half-written file from ever standing under its final name.  (binio.h's
 * checksummed writer keeps its own FILE and messages; these serve the
 * formats with no trailer: .ibin ground truth, manifest.json.)
 */
#ifndef ANNLAB_CORE_FILEIO_H
#define ANNLAB_CORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/*
 * Read exactly len bytes at byte offset off of fd into buf, retrying short
 * reads and EINTR.  path (borrowed) names the file in messages.
 * Thread-safe (pread).  Errors: -errno "<path>: read at offset N";
 * ANN_EFORMAT "<path>: unexpected end of file at offset N" when the file
 * ends first (N is the offset of the first byte not read).
 */
int ann_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *path);

/*
 * Open path read-only (O_CLOEXEC) and fstat it into *st.  Only a regular
 * file is accepted: the open does not block (O_NONBLOCK, cleared after),
 * so a FIFO is refused instead of waiting for a writer, and a device such
 * as /dev/zero is refused instead of being read forever.  On success *fd
 * (owned by the caller, who closes it) is open; on failure it is -1 and
 * nothing is left open.  Errors: -errno "<path>: open" or "<path>: stat";
 * ANN_EFORMAT "<path>: not a regular file (a FIFO)" (or "a character
 * device", "a block device", "a directory", "a socket").
 */
int ann_open_stat(const char *path, int *fd, struct stat *st);

/*
 * The same check by path, without opening: 0 when path is a regular file
 * (symbolic links followed); -errno "<path>: stat"; ANN_EFORMAT as above.
 */
int ann_check_regular(const char *path);

/* "a FIFO", "a directory", ...: what a non-regular st_mode is, for messages. */
const char *ann_file_kind(unsigned mode);

/*
 * a * b into *out; ANN_EFORMAT "<what>: <a> x <b> overflows" when the
 * product does not fit in 64 bits.  For size computations from on-disk
 * headers, whose fields are untrusted.
 */
int ann_mul_u64(uint64_t a, uint64_t b, uint64_t *out, const char *what);
/* a + b, the same way. */
int ann_add_u64(uint64_t a, uint64_t b, uint64_t *out, const char *what);

/* 1 when s ends with suffix, else 0. */
int ann_str_ends_with(const char *s, const char *suffix);

/*
 * Create "<path>.tmp.<pid>" for writing (binary).  tmp (out, tmp_len bytes)
 * receives the temporary's name; *out the stream, which the caller owns
 * until it hands it to ann_tmpfile_commit or ann_tmpfile_discard.
 * Errors: -errno "<tmp>: create".
 */
int ann_tmpfile_create(const char *path, char *tmp, size_t tmp_len, FILE **out);

/*
 * Flush, fsync and close fp, then rename tmp over path.  Always consumes fp;
 * on any failure tmp is removed and nothing is left at path that was not
 * there before.  Errors: -errno "<tmp>: write" (flush or fsync),
 * "<tmp>: close", "<tmp>: rename".
 */
int ann_tmpfile_commit(FILE *fp, const char *tmp, const char *path);

/* Close fp (may be NULL) and remove tmp: the path for a failed write. */
void ann_tmpfile_discard(FILE *fp, const char *tmp);

/*
 * mkdir -p: create path and each missing parent with mode (an existing
 * directory is fine).  what is the wording after "<dir>: " when a mkdir
 * fails ("mkdir", "cannot create directory"); callers keep their own.
 * Errors: ANN_EPARAM "<path>: path too long" (4096 bytes or more);
 * -errno "<dir>: <what>" naming the component that failed.
 */
int ann_mkdir_p(const char *path, unsigned mode, const char *what);

/*
 * Remove path: a file or symbolic link, or a directory with everything
 * under it (links are removed, never followed).  A missing path is 0.
 * Errors: -errno naming the entry that could not be removed.
 */
int ann_tree_remove(const char *path);

/* 1 when path exists as anything but an empty directory (an --out that
 * holds something), else 0. */
int ann_exists_nonempty(const char *path);

/*
 * fsync every regular file under dir, each directory below it, then dir
 * itself, so that a rename of dir afterwards publishes durable contents.
 * Errors: -errno "<path>: fsync" / "<path>: open for fsync".
 */
int ann_tree_fsync(const char *dir);

/* fsync the directory holding path (after a rename in it).  -errno. */
int ann_fsync_parent(const char *path);

#endif
