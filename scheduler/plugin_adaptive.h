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

/* One workflow run of the queue as adaptive's queue view saw it (plugin_adaptive.c): with one
 * run queued, the queue goes by the critical path (rank); with two or more, by the shortest
 * expected runtime (as SJFN), so that one run's long tasks do not hold back the others. */
typedef struct sched_adaptive_run {
    char *name;       /* sched_pod.run; "" pools the pods without a run */
    size_t pods;      /* its queued pods */
    int64_t work_ms;  /* sum of the queued pods' expected runtimes (0 for unknown ones) */
    int64_t tail_ms;  /* the longest tail among them (the path still to come after) */
    double held;      /* cores its running pods request */
    bool below;       /* it holds less than its fair share (allocatable cores / runs queued) */
} sched_adaptive_run;

/* The runs of the queued pods[0..n-1] in a new table of *cap slots (empty slots have name NULL;
 * free each name and the table). Pure. 0, or -1 with err. */
int sched_adaptive_run_work(const sched_snapshot *s, const sched_pod *const *pods, size_t n,
                            sched_adaptive_run **out, size_t *cap, tm_err *err);

/* The run as fw's adaptive queue saw it queued in its last view (sched_framework_queue_view);
 * NULL when fw is not adaptive or the view did not see the run queued. Borrowed until the next
 * view. */
const sched_adaptive_run *sched_adaptive_run_lookup(const sched_framework *fw, const char *run);

/* How many runs fw's adaptive queue saw queued in its last view (0 when not adaptive): from 2
 * on, the queue orders by expected runtime rather than by rank. */
size_t sched_adaptive_runs_queued(const sched_framework *fw);

#endif
