/*
 * measure.h: what the harness observes outside the engine besides what
 * cgroups/ provides (eviction, residency, device counters, caps): process
 * memory of a phase, thread pinning, and the machine description.
 */
#ifndef ANNLAB_HARNESS_MEASURE_H
#define ANNLAB_HARNESS_MEASURE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Reset the process's peak RSS (writes "5" to /proc/self/clear_refs).
 * Returns 0, or -errno when the kernel refuses (the peak then covers the
 * whole process life; callers record that). */
int harness_rss_reset(void);

typedef struct harness_mem {
    uint64_t peak_rss_bytes; /* VmHWM */
    uint64_t anon_bytes;     /* RssAnon at the time of reading */
    uint64_t file_bytes;     /* RssFile at the time of reading */
} harness_mem;

/* Read VmHWM, RssAnon and RssFile from /proc/self/status. */
int harness_mem_read(harness_mem *m);

/*
 * Describe this machine: hwloc topology counts and CPU model, SIMD kernels
 * in use, kernel, memory, proactive reclaim (DAMON schemes that drop idle
 * pages; null without DAMON), the disk and filesystem holding index_dir, the git commit
 * of the source tree (when git is available).  New object; NULL on ENOMEM.
 */
json_t *harness_machine_describe(const char *index_dir);

/*
 * The git commit of the source tree the running binary was built in (the
 * repository above build/annlab) into commit (len bytes; "" when git or the
 * tree is absent), and whether tracked files differ from it.  Runs git.
 * Returns 0, or -1 when git could not be started.
 */
int harness_source_commit(char *commit, size_t len, int *dirty);

/*
 * CPU time the whole machine has spent busy since boot, in seconds, from
 * the "cpu" line of /proc/stat (idle and iowait left out), in three parts:
 * tasks_s (user, nice, system: processes, the cell's included), irq_s
 * (irq and softirq: interrupt work, which includes completing the cell's
 * own device reads, on whichever CPU the disk interrupts; Linux charges it
 * to no process) and steal_s (time the hypervisor ran something else).
 * The harness reads it around a cell and subtracts the cell's own CPU time
 * from tasks_s, so a figure taken while other processes ran says how much
 * they ran.  Returns 0, or a negative code naming /proc/stat.
 */
typedef struct {
    double tasks_s, irq_s, steal_s;
} harness_cpu_busy;
int harness_cpu_busy_take(harness_cpu_busy *out);

/* Cores other processes may keep busy during a cell before its timings are
 * flagged as taken on a machine that was not quiet (run progress lines,
 * annlab compare). */
#define HARNESS_BUSY_CORES 0.25

/*
 * Pin the calling thread to the i-th processing unit (modulo their number)
 * through hwloc.  Returns 0, or a negative code when binding is refused
 * (callers record it and go on unpinned).
 */
int harness_pin_thread(unsigned i);

/*
 * The calling thread's user and kernel CPU time (getrusage RUSAGE_THREAD).
 * Linux keeps the thread's total CPU time exactly and splits it between
 * user and kernel in proportion to sampled ticks, so a single query's split
 * is coarse; averaged over a cell's queries it is the split of the cell.
 */
typedef struct harness_thread_cpu {
    uint64_t user_ns, sys_ns;
} harness_thread_cpu;
void harness_thread_cpu_take(harness_thread_cpu *out);

/* {"pq_table": ns per query, ...} for every stage of ann_stage: the mean
 * over n queries of sum->stage_ns, or null for a stage the engine did not
 * time (its bit clear in sum->stage_mask).  New object. */
struct ann_stats;
json_t *harness_stages_json(const struct ann_stats *sum, double n);

#endif
