/* release_hint.h: which waiting pods capacity released on some nodes can help: the loop's
 * node-scoped requeue (sched_queue_move_released). kube-scheduler's NodeResourcesFit hint
 * retries every pod that did not fit whenever a bound pod goes; for a pod that failed for
 * capacity alone (sched_framework_capacity_only) only these can matter:
 *   - it fits on a node that released capacity now, the pods nominated there that count for it
 *     (of its priority or more, not placed yet: kube's addNominatedPods) included;
 *   - one of those nodes is the one its own preemption nominated it to (its victims going: it
 *     may preempt again once none is left terminating);
 *   - it may preempt and a pod of its priority or more went (a node that was no candidate may be
 *     one now; lower-priority pods going change nothing for preemption, which could evict them).
 * Pure: the snapshot and its nominations, no I/O. */
#ifndef TAREMA_SCHED_RELEASE_HINT_H
#define TAREMA_SCHED_RELEASE_HINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

/* Capacity released on node by pods whose highest priority was prio. */
typedef struct sched_release {
    char *node;
    int32_t prio;
} sched_release;

typedef struct sched_release_hint sched_release_hint;

/* The hint for releases r[0..n) over snapshot s (both borrowed until freed): the nodes looked
 * up, the pods nominated to them grouped. NULL without memory (then every pod should move). */
sched_release_hint *sched_release_hint_new(const sched_snapshot *s, const sched_release *r,
                                           size_t n);
bool sched_release_hint_helps(const sched_release_hint *h, const sched_pod *pod);
/* The first two of the above alone: one of the nodes is pod's nominated node, or pod fits on
 * one of them outright (resources, the nominated pods that count for it included). */
bool sched_release_hint_fits(const sched_release_hint *h, const sched_pod *pod);
void sched_release_hint_free(sched_release_hint *h);

#endif
