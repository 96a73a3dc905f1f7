/*
 * sysfs.h: small-file helpers shared by the cgroups module (internal).
 * Kernel interface files (cgroup, /sys/block, /proc) are read whole into a
 * caller buffer and parsed as text; writes are one write() whose error is
 * the kernel's answer (cgroup files report EINVAL/EBUSY at write time).
 */
#ifndef ANNLAB_CGROUPS_SYSFS_H
#define ANNLAB_CGROUPS_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Read the whole file at path into buf (NUL-terminated, at most cap-1
 * bytes).  Returns 0; -errno naming the file; -EFBIG when it does not fit.
 * Does not set the detail message when quiet is true (probing).
 */
int sysfs_read(const char *path, char *buf, size_t cap, bool quiet);

/* Write text to path with one write (no O_CREAT: the file must exist).
 * Returns 0 or -errno; sets the detail message naming the file and text. */
int sysfs_write(const char *path, const char *text);

/* True when path exists (any type). */
bool sysfs_exists(const char *path);

/*
 * Find "key<sep>value" at the start of a line of text (sep is ' ' for
 * memory.events and oom_control, ':' for /proc/<pid>/io; spaces after sep
 * are skipped) and parse value as uint64.  Returns 0, ANN_ENOTFOUND when
 * the key is absent, ANN_EFORMAT when its value is not a number (naming
 * what and key).
 */
int sysfs_keyed_u64(const char *text, const char *key, char sep, const char *what, uint64_t *out);

/* Parse a file holding one unsigned number ("max" is UINT64_MAX).
 * ANN_EFORMAT naming path when it holds anything else. */
int sysfs_read_u64(const char *path, uint64_t *out);

/* snprintf into dst of cap bytes; -ENAMETOOLONG (detail names the start of
 * the path) when it does not fit. */
int sysfs_path(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
