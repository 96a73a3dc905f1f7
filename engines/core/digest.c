/*
 * digest.c: whole-file sha256 digests and their cached verification
 * (digest.h).  sha256 through OpenSSL's EVP interface, 1 MiB reads.
 */
#include "engines/core/digest.h"

#include "engines/core/fileio.h"
#include "engines/core/status.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void sha256_hex(const unsigned char *md, char *out)
{
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

int ann_sha256_file(const char *path, char *out, uint64_t *bytes)
{
    int rc = 0, fd = -1;
    unsigned char *buf = NULL;
    EVP_MD_CTX *ctx = NULL;
    uint64_t total = 0;
    const size_t buf_bytes = 1u << 20;
    struct stat st;

    if ((rc = ann_open_stat(path, &fd, &st)))
        return rc;
    buf = malloc(buf_bytes);
    ctx = EVP_MD_CTX_new();
    if (!buf || !ctx) {
        rc = ann_fail(-ENOMEM, "%s: no memory for sha256", path);
        goto out;
    }
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        rc = ann_fail(ANN_EINTERNAL, "%s: sha256 init failed in libcrypto", path);
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf, buf_bytes);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = ann_fail_errno("%s: read", path);
            goto out;
        }
        if (r == 0)
            break;
        if (EVP_DigestUpdate(ctx, buf, (size_t)r) != 1) {
            rc = ann_fail(ANN_EINTERNAL, "%s: sha256 update failed in libcrypto", path);
            goto out;
        }
        total += (uint64_t)r;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (EVP_DigestFinal_ex(ctx, md, &md_len) != 1 || md_len != 32) {
        rc = ann_fail(ANN_EINTERNAL, "%s: sha256 final failed in libcrypto", path);
        goto out;
    }
    sha256_hex(md, out);
    if (bytes)
        *bytes = total;
out:
    EVP_MD_CTX_free(ctx);
    free(buf);
    close(fd);
    return rc;
}

int ann_sha256_buf(const void *buf, size_t len, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (EVP_Digest(buf, len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
        return ann_fail(ANN_EINTERNAL, "sha256 of %zu bytes failed in libcrypto", len);
    sha256_hex(md, out);
    return 0;
}

int ann_digest_skips(const char *name)
{
    return !strcmp(name, "build.json") || !strcmp(name, ANN_DIGEST_CACHE) ||
           !strcmp(name, "lock.mdb") || !strcmp(name, "LOCK") || !strncmp(name, "LOG", 3) ||
           strstr(name, ".tmp.") != NULL;
}

static int digest_walk(const char *root, const char *rel, json_t *files)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s%s%s", root, rel[0] ? "/" : "", rel) >= (int)sizeof dir)
        return ann_fail(ANN_EPARAM, "%s/%s: path too long", root, rel);
    DIR *d = opendir(dir);
    if (!d)
        return ann_fail_errno("%s: opendir", dir);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || ann_digest_skips(e->d_name))
            continue;
        char sub_rel[4096], path[4096];
        if (snprintf(sub_rel, sizeof sub_rel, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >=
                (int)sizeof sub_rel ||
            snprintf(path, sizeof path, "%s/%s", root, sub_rel) >= (int)sizeof path) {
            rc = ann_fail(ANN_EPARAM, "%s/%s: path too long", dir, e->d_name);
            break;
        }
        struct stat st;
        if (lstat(path, &st) != 0) {
            rc = ann_fail_errno("%s: stat", path);
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = digest_walk(root, sub_rel, files);
        } else if (S_ISREG(st.st_mode)) {
            char sum[80];
            uint64_t bytes = 0;
            rc = ann_sha256_file(path, sum, &bytes);
            if (!rc)
                json_object_set_new(files, sub_rel,
                                    json_pack("{s:I, s:s}", "bytes", (json_int_t)bytes, "sha256",
                                              sum));
        }
    }
    closedir(d);
    return rc;
}

int ann_digest_tree(const char *dir, json_t **files)
{
    *files = json_object();
    if (!*files)
        return ann_fail(-ENOMEM, "%s: no memory for digests", dir);
    int rc = digest_walk(dir, "", *files);
    if (rc) {
        json_decref(*files);
        *files = NULL;
    }
    return rc;
}

/* The cache's identity of a file: what must not have changed since. */
static json_t *file_identity(const struct stat *st, const char *sum)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:s}", "size", (json_int_t)st->st_size, "mtime_s",
                     (json_int_t)st->st_mtim.tv_sec, "mtime_ns", (json_int_t)st->st_mtim.tv_nsec,
                     "inode", (json_int_t)st->st_ino, "sha256", sum);
}

int ann_digest_verify(const char *dir, const json_t *files, const char *what, unsigned *hashed)
{
    int rc = 0;
    char cache_path[4200];
    unsigned n_hashed = 0;
    int cache_dirty = 0;
    if (hashed)
        *hashed = 0;
    if (!json_is_object(files))
        return ann_fail(ANN_EFORMAT, "%s/%s: \"files\" is not an object", dir, what);
    snprintf(cache_path, sizeof cache_path, "%s/" ANN_DIGEST_CACHE, dir);
    json_t *cache = NULL;
    if (ann_check_regular(cache_path) == 0)
        cache = json_load_file(cache_path, 0, NULL);
    ann_err_clear();
    if (!json_is_object(cache)) {
        json_decref(cache);
        cache = json_object();
    }
    const char *rel;
    const json_t *ent;
    json_object_foreach((json_t *)files, rel, ent) {
        const char *want = json_string_value(json_object_get(ent, "sha256"));
        const json_t *wb = json_object_get(ent, "bytes");
        char path[4400];
        if (!want || !json_is_integer(wb) || strstr(rel, "..") || rel[0] == '/') {
            rc = ann_fail(ANN_EFORMAT, "%s/%s: files.\"%s\" is malformed", dir, what, rel);
            break;
        }
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        struct stat st;
        if (stat(path, &st) != 0) {
            rc = errno == ENOENT ? ann_fail(-ENOENT, "%s: listed in %s but missing", path, what)
                                 : ann_fail_errno("%s: stat", path);
            break;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = ann_fail(ANN_EFORMAT, "%s: not a regular file (%s)", path,
                          ann_file_kind((unsigned)st.st_mode));
            break;
        }
        if ((uint64_t)st.st_size != (uint64_t)json_integer_value(wb)) {
            rc = ann_fail(ANN_ECORRUPT, "%s: %lld bytes, %s records %lld", path,
                          (long long)st.st_size, what, (long long)json_integer_value(wb));
            break;
        }
        json_t *id = file_identity(&st, want);
        int known = json_equal(json_object_get(cache, rel), id);
        if (!known) {
            char sum[80];
            if ((rc = ann_sha256_file(path, sum, NULL))) {
                json_decref(id);
                break;
            }
            n_hashed++;
            if (strcmp(sum, want) != 0) {
                json_decref(id);
                json_object_del(cache, rel);
                cache_dirty = 1;
                rc = ann_fail(ANN_ECORRUPT, "%s: sha256 %s differs from %s (%s)", path, sum, what,
                              want);
                break;
            }
            json_object_set(cache, rel, id);
            cache_dirty = 1;
        }
        json_decref(id);
    }
    if (cache_dirty) {
        /* advisory: a directory we cannot write is simply hashed again next time */
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", cache_path, (int)getpid());
        if (json_dump_file(cache, tmp, JSON_COMPACT | JSON_SORT_KEYS) == 0) {
            if (rename(tmp, cache_path) != 0)
                unlink(tmp);
        } else
            unlink(tmp);
    }
    json_decref(cache);
    if (hashed)
        *hashed = n_hashed;
    return rc;
}
