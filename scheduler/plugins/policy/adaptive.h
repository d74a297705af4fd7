/* adaptive.h: what the adaptive policy (adaptive.c) computes per node for a pod,
 * exposed so explain can show the figures the policy used, not a re-derivation of them. */
#ifndef TAREMA_SCHED_PLUGIN_ADAPTIVE_H
#define TAREMA_SCHED_PLUGIN_ADAPTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"

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

#endif
