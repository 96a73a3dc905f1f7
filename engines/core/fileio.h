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
 * Open path read-only (O_CLOEXEC) and fstat it into *st.  On success *fd
 * (owned by the caller, who closes it) is open; on failure it is -1 and
 * nothing is left open.  Errors: -errno "<path>: open" or "<path>: stat".
 */
int ann_open_stat(const char *path, int *fd, struct stat *st);

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

#endif
