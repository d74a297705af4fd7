/* plugin_adaptive.h: what the adaptive policy (plugin_adaptive.c) computes per node for a pod,
 * exposed so explain can show the figures the policy used, not a re-derivation of them. */
#ifndef TAREMA_SCHED_PLUGIN_ADAPTIVE_H
#define TAREMA_SCHED_PLUGIN_ADAPTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/framework.h"

/* Adaptive's view of one node for the pod: the terms of its expected finish there. */
typedef struct sched_adaptive_node {
    double cores;       /* C: the node's allocatable cores */
    double used;        /* U: the cores its running tasks really use */
    double own;         /* u: the cores the pod is expected to use */
    double slowdown;    /* 1 + min(1, u) (max(1, (U + u) / C) - 1) */
    int64_t runtime_ms; /* predicted runtime on the node's group, -1 unknown */
    int64_t harm_ms;    /* the delay its demand adds to the running tasks */
    int64_t finish_ms;  /* runtime x slowdown + harm; -1 when the runtime is unknown */
} sched_adaptive_node;

/* Fills out[i] for every node i of s (snapshot index order; n must be the node count) as the
 * adaptive policy sees them when it scores pod. 0, or -1 with err (out of memory). */
int sched_adaptive_nodes(const sched_snapshot *s, const sched_pod *pod, sched_adaptive_node *out,
                         size_t n, tm_err *err);

/* One workflow run of the queue as adaptive's queue orders it (plugin_adaptive.c): across
 * runs, shortest remaining processing time weighted by 1 / the run's expected makespan (the
 * geometric mean weighs each run's relative delay: delaying a run by d costs about
 * d / makespan), i.e. the smallest remaining x makespan first. */
typedef struct sched_adaptive_run {
    char *name;           /* sched_pod.run; "" pools the pods without a run */
    size_t pods;          /* its queued pods (0: remembered, not queued now) */
    int64_t first_ms;     /* the earliest queue time (created_ms) seen of its pods, 0 unknown */
    int64_t seen_ms;      /* the last view that saw a pod of it queued */
    int64_t work_ms;      /* sum of the queued pods' expected runtimes (0 for unknown ones) */
    int64_t tail_ms;      /* the longest tail among them (the path still to come after) */
    int64_t min_rt_ms;    /* the shortest expected runtime among them, 0 none known */
    int64_t path_ms;      /* the longest runtime + tail among them (its remaining critical path) */
    int64_t remaining_ms; /* work_ms + tail_ms */
    int64_t makespan_ms;  /* its expected makespan: age (now - first_ms) + remaining_ms */
    double key;           /* remaining x makespan, in s^2: the smallest goes first */
} sched_adaptive_run;

/* The runs of the queued pods[0..n-1] at now_ms, with the first queue times carried over from
 * the previous table prev[0..prev_cap-1] (NULL, 0: none), in a new table of *cap slots (empty
 * slots have name NULL; free each name and the table). Pure. 0, or -1 with err. */
int sched_adaptive_run_work(const sched_snapshot *s, const sched_pod *const *pods, size_t n,
                            int64_t now_ms, const sched_adaptive_run *prev, size_t prev_cap,
                            sched_adaptive_run **out, size_t *cap, tm_err *err);

/* The run as fw's adaptive queue saw it queued in its last view (sched_framework_queue_view);
 * NULL when fw is not adaptive or the view did not see the run queued. Borrowed until the next
 * view. */
const sched_adaptive_run *sched_adaptive_run_lookup(const sched_framework *fw, const char *run);

#endif
