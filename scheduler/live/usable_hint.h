/* usable_hint.h: which waiting pods nodes that became usable again (Ready again, uncordoned, a
 * NoSchedule or NoExecute taint gone) can help: the loop's requeue for those node changes.
 * kube-scheduler's hints for them (TaintToleration, NodeUnschedulable) queue every pod those
 * plugins rejected. Asked only of the pods that failed for capacity alone (sched_queue_move_
 * released, sched_framework_capacity_only: on every node NodeResourcesFit, or a filter of the
 * node alone); every other pod (spread, inter-pod terms, volumes, a plugin's refusal such as
 * Backfill's) moves. Of those, one kind cannot gain from such a node unless it fits there
 * outright: a preemptor whose nominated node, still usable for it, holds a terminating pod of
 * lower priority (kube's PodEligibleToPreemptOthers: it may not preempt again while its victims
 * go; sched_preemption_awaits_victims). Nothing changed for it on any other node: the node
 * alone changed, and the pod's filters on other nodes read those nodes alone.
 * Why: kwok nodes flap NotReady on a loaded API server (600-1,800 of 5,000 at once in
 * PreemptionBasic), and each one Ready again sent every waiting preemptor through all nodes
 * again: 62,000 failed attempts in 900 s, each a condition and an event written
 * (docs/preemption.md, "5,000 nodes").
 * Pure: the snapshot and its nominations, no I/O. */
#ifndef TAREMA_SCHED_USABLE_HINT_H
#define TAREMA_SCHED_USABLE_HINT_H

#include <stdbool.h>
#include <stddef.h>

#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

typedef struct sched_usable_hint sched_usable_hint;

/* The hint for the nodes names[0..n) that became usable, over snapshot s (both borrowed until
 * freed): the nominated pods sorted once for lookup. NULL without memory (then every pod should
 * move). */
sched_usable_hint *sched_usable_hint_new(const sched_snapshot *s, const char *const *names,
                                         size_t n);
/* Whether pod may fit, or preempt, now: not such a waiting preemptor, or it fits on one of the
 * nodes outright. Counts its noes. */
bool sched_usable_hint_helps(sched_usable_hint *h, const sched_pod *pod);
/* How many pods helps() said no to: the preemptors spared a retry (for the log and tests). */
size_t sched_usable_hint_spared(const sched_usable_hint *h);
void sched_usable_hint_free(sched_usable_hint *h);

#endif
