/*
 * measure.c: process memory (peak RSS of a phase), thread pinning and the
 * machine description.  Page-cache eviction, residency and device counters
 * are cgroups/'s (evict.h, devstat.h).
 */
#include "harness/measure.h"

#include "cgroups/devstat.h"
#include "engines/core/distance.h"
#include "engines/core/status.h"
#include "engines/engine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

int harness_rss_reset(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = write(fd, "5", 1) == 1 ? 0 : -errno;
    close(fd);
    return rc;
}

int harness_mem_read(harness_mem *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return ann_fail_errno("/proc/self/status: open");
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            m->peak_rss_bytes = kb * 1024;
        else if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
            m->anon_bytes = kb * 1024;
        else if (sscanf(line, "RssFile: %llu kB", &kb) == 1)
            m->file_bytes = kb * 1024;
    }
    fclose(f);
    return 0;
}

static void read_line(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* Filesystem type of path from the longest matching /proc/mounts entry. */
static void fs_type(const char *path, char *buf, size_t len)
{
    char real[PATH_MAX];
    snprintf(buf, len, "unknown");
    if (!realpath(path, real))
        return;
    FILE *f = fopen("/proc/mounts", "re");
    if (!f)
        return;
    char dev[512], mnt[1024], type[64];
    size_t best = 0;
    while (fscanf(f, "%511s %1023s %63s %*[^\n]", dev, mnt, type) == 3) {
        size_t n = strlen(mnt);
        if (strncmp(real, mnt, n) == 0 && (real[n] == '/' || real[n] == '\0' || n == 1) &&
            n >= best) {
            best = n;
            snprintf(buf, len, "%s", type);
        }
    }
    fclose(f);
}

int harness_pin_thread(unsigned i)
{
    hwloc_topology_t topo = NULL;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        if (topo)
            hwloc_topology_destroy(topo);
        return ANN_EUNSUPPORTED;
    }
    int rc = 0;
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_obj_t pu =
        npu > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(i % (unsigned)npu)) : NULL;
    if (!pu || hwloc_set_cpubind(topo, pu->cpuset, HWLOC_CPUBIND_THREAD) != 0)
        rc = ANN_EUNSUPPORTED;
    hwloc_topology_destroy(topo);
    return rc;
}

/* A number read from a one-line sysfs file; -1 when absent or not a number. */
static double read_num(const char *path)
{
    char buf[64], *end = NULL;
    read_line(path, buf, sizeof buf);
    double v = strtod(buf, &end);
    return buf[0] && end && *end == '\0' ? v : -1;
}

/*
 * Proactive reclaim by DAMON (the kernel's data access monitor), which some
 * VMs run: a "pageout" scheme drops page-cache pages idle for min_idle_s,
 * so a warm cell's index can go cold between its preload and its queries,
 * or while a long build does not touch its source file.  Described from
 * /sys/kernel/mm/damon/admin: every kdamond's state and, per context, its
 * address space and schemes (action, minimum idle time, quota).  Null
 * when the kernel has no DAMON sysfs interface.
 */
static json_t *damon_describe(void)
{
    const char *root = "/sys/kernel/mm/damon/admin/kdamonds";
    char path[512], buf[64];
    double nk = 0;
    snprintf(path, sizeof path, "%s/nr_kdamonds", root);
    if ((nk = read_num(path)) < 0)
        return json_null();
    json_t *ks = json_array();
    for (int k = 0; k < (int)nk && k < 16; k++) {
        snprintf(path, sizeof path, "%s/%d/state", root, k);
        read_line(path, buf, sizeof buf);
        json_t *kd = json_pack("{s:s, s:[]}", "state", buf, "schemes");
        snprintf(path, sizeof path, "%s/%d/contexts/nr_contexts", root, k);
        double nc = read_num(path);
        for (int c = 0; c < (int)nc && c < 16; c++) {
            char ctx[400];
            snprintf(ctx, sizeof ctx, "%s/%d/contexts/%d", root, k, c);
            snprintf(path, sizeof path, "%s/operations", ctx);
            read_line(path, buf, sizeof buf);
            snprintf(path, sizeof path, "%s/monitoring_attrs/intervals/aggr_us", ctx);
            double aggr_us = read_num(path);
            snprintf(path, sizeof path, "%s/schemes/nr_schemes", ctx);
            double ns = read_num(path);
            for (int i = 0; i < (int)ns && i < 16; i++) {
                char sch[480], action[64];
                snprintf(sch, sizeof sch, "%s/schemes/%d", ctx, i);
                snprintf(path, sizeof path, "%s/action", sch);
                read_line(path, action, sizeof action);
                snprintf(path, sizeof path, "%s/access_pattern/age/min", sch);
                double age = read_num(path);
                snprintf(path, sizeof path, "%s/quotas/bytes", sch);
                double qb = read_num(path);
                snprintf(path, sizeof path, "%s/quotas/reset_interval_ms", sch);
                double qms = read_num(path);
                json_t *o = json_pack("{s:s, s:s}", "operations", buf, "action", action);
                json_object_set_new(o, "min_idle_s",
                                    age >= 0 && aggr_us > 0 ? json_real(age * aggr_us / 1e6)
                                                            : json_null());
                json_object_set_new(o, "quota_bytes", qb >= 0 ? json_integer((json_int_t)qb)
                                                               : json_null());
                json_object_set_new(o, "quota_interval_ms",
                                    qms >= 0 ? json_integer((json_int_t)qms) : json_null());
                json_array_append_new(json_object_get(kd, "schemes"), o);
            }
        }
        json_array_append_new(ks, kd);
    }
    return json_pack("{s:o}", "kdamonds", ks);
}

json_t *harness_machine_describe(const char *index_dir)
{
    json_t *m = json_object();
    hwloc_topology_t topo = NULL;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        topo = NULL;
    }
    if (topo) {
        json_t *t = json_pack("{s:i, s:i, s:i, s:i}", "packages",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE), "numa_nodes",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE), "cores",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), "pus",
                              hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
        hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
        const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
        json_object_set_new(m, "cpu_model", json_string(model ? model : "unknown"));
        hwloc_obj_t l3 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L3CACHE, 0);
        if (l3 && l3->attr)
            json_object_set_new(t, "l3_bytes", json_integer((json_int_t)l3->attr->cache.size));
        json_object_set_new(m, "topology", t);
        hwloc_topology_destroy(topo);
    }
    json_object_set_new(m, "simd", json_string(ann_dist_active()->name));
    struct utsname u;
    if (uname(&u) == 0) {
        char k[400];
        snprintf(k, sizeof k, "%s %s %s", u.sysname, u.release, u.machine);
        json_object_set_new(m, "kernel", json_string(k));
        json_object_set_new(m, "hostname", json_string(u.nodename));
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    json_object_set_new(m, "memory_bytes", json_integer((json_int_t)pages * page));
    json_object_set_new(m, "proactive_reclaim", damon_describe());
    if (index_dir) {
        devstat_dev dev;
        int dev_ok = devstat_resolve(index_dir, NULL, &dev) == 0;
        char path[256], model[256] = "", rot[16] = "";
        if (dev_ok) {
            snprintf(path, sizeof path, "/sys/block/%s/device/model", dev.name);
            read_line(path, model, sizeof model);
            snprintf(path, sizeof path, "/sys/block/%s/queue/rotational", dev.name);
            read_line(path, rot, sizeof rot);
        }
        char fs[64];
        fs_type(index_dir, fs, sizeof fs);
        json_object_set_new(m, "disk",
                            json_pack("{s:s, s:s, s:s, s:s, s:s}", "device", dev_ok ? dev.name : "",
                                      "model", model[0] ? model : "unknown", "rotational",
                                      rot[0] ? rot : "unknown", "stat_source",
                                      dev_ok ? dev.stat_path : dev.reason, "filesystem", fs));
    }
    char commit[128];
    int is_dirty = 0;
    if (harness_source_commit(commit, sizeof commit, &is_dirty) == 0) {
        json_object_set_new(m, "git_commit", json_string(commit[0] ? commit : "unknown"));
        json_object_set_new(m, "git_dirty", json_boolean(is_dirty));
    }
    return m;
}

int harness_source_commit(char *commit, size_t len, int *dirty)
{
    /* the source tree the binary was built in (build/annlab -> ..) */
    char exe[PATH_MAX], cmd[PATH_MAX + 200];
    commit[0] = '\0';
    *dirty = 0;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(cmd, sizeof cmd,
             "cd '%s' 2>/dev/null && git rev-parse HEAD 2>/dev/null && git status --porcelain "
             "--untracked-files=no 2>/dev/null | head -1",
             exe[0] ? exe : ".");
    FILE *g = strchr(exe, '\'') ? NULL : popen(cmd, "r");
    if (!g)
        return -1;
    char line[256];
    if (fgets(commit, (int)len, g))
        commit[strcspn(commit, "\n")] = '\0';
    *dirty = fgets(line, sizeof line, g) != NULL;
    pclose(g);
    return 0;
}

int harness_cpu_busy_take(harness_cpu_busy *out)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return ann_fail_errno("/proc/stat");
    unsigned long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                       steal = 0;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
                   &iowait, &irq, &softirq, &steal);
    fclose(f);
    if (n < 7)
        return ann_fail(ANN_EFORMAT, "/proc/stat: first line is not the \"cpu\" totals");
    long hz = sysconf(_SC_CLK_TCK);
    double tick = 1.0 / (double)(hz > 0 ? hz : 100);
    out->tasks_s = (double)(user + nice + sys) * tick;
    out->irq_s = (double)(irq + softirq) * tick;
    out->steal_s = (double)steal * tick; /* 0 when the line has no steal column */
    return 0;
}

void harness_thread_cpu_take(harness_thread_cpu *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        out->user_ns = out->sys_ns = 0;
        return;
    }
    out->user_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u;
    out->sys_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
}

json_t *harness_stages_json(const ann_stats *sum, double n)
{
    json_t *o = json_object();
    for (int i = 0; o && i < ANN_STAGE_COUNT; i++)
        json_object_set_new(o, ann_stage_name((ann_stage)i),
                            sum->stage_mask & (1u << i) ? json_real((double)sum->stage_ns[i] / n)
                                                        : json_null());
    return o;
}
