/* group_runtime.h: a process's runtime per node group, from its stored runs (issue 16; the
 * adaptive policy reads it from TaskProfile status.runtimeByGroup).
 *
 * Each completed run carries the node group of the node it ran on (task_runs.node_group, NULL
 * when the node or its group was unknown when the run was stored). Per group: the runs with a
 * known realtime, their mean, sample standard deviation (0 for one run), median and 90th
 * percentile (lab_quantile: linear interpolation), in seconds. Pure: no I/O. */
#ifndef TAREMA_LABELER_GROUP_RUNTIME_H
#define TAREMA_LABELER_GROUP_RUNTIME_H

#include <jansson.h>
#include <stddef.h>

#include "labeler/labels.h"
#include "lib/error.h"

/* At most this many groups per process are published; a cluster with more node groups than
 * that is beyond the paper's 3-4 (the scheduler reads SCHED_TASK_MAX_GROUPS = 8). */
#define LAB_GRT_MAX 16

typedef struct lab_group_rt {
    const char *group; /* borrowed from the samples' group array */
    long runs;
    double mean_s, stddev_s, p50_s, p90_s;
} lab_group_rt;

/* The per-group runtimes of process among samples v[0..n) whose node groups are groups[0..n)
 * (groups itself may be NULL: nothing known; an entry NULL or "": that run's group unknown).
 * Runs without a realtime (NAN or negative) are skipped. Writes at most max entries sorted by
 * group id, returns how many, or -1 with err (out of memory). */
int lab_group_runtimes(const lab_sample *v, const char *const *groups, size_t n,
                       const char *process, lab_group_rt *out, int max, tm_err *err);

/* status.runtimeByGroup: [{"group", "runs", "meanSeconds", "stddevSeconds", "p50Seconds",
 * "p90Seconds"}] sorted by group ([] when no run has a known group). New reference; NULL only
 * when out of memory. */
json_t *lab_group_runtimes_status(const lab_sample *v, const char *const *groups, size_t n,
                                  const char *process);

#endif
