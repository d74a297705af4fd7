/* nominated.h: the pods nominated to a node by preemption (status.nominatedNodeName), which the
 * framework's filters count on that node, as kube-scheduler's addNominatedPods does: when a pod
 * is filtered, every pod nominated to a node with a priority >= its own (the pod itself
 * excluded) is counted there as if placed, so that the room a preemption made for a
 * high-priority pod is not taken by a lower-priority one in the cycles that follow, while pods
 * of equal or higher priority account for each other's nominations.
 *
 * Plain data, no I/O, no locks. Whoever keeps the nominations current owns the table (the live
 * scheduler: the pods with status.nominatedNodeName it sees, and those its own preemption
 * nominated; the simulator: its preemptions) and lends it to the snapshot
 * (sched_snapshot_set_nominated), like the volume tables: the framework reads it from there in
 * every cycle (framework.h: sched_framework_schedule) and lends each entry's metadata to the
 * snapshot for the cycle's Filter, taking it back before the cycle returns. A nomination ends
 * (sched_nominated_remove) when the pod is bound or assumed anywhere, deleted, or nominated
 * elsewhere; the framework never counts a nominated pod that the snapshot already records. */
#ifndef TAREMA_SCHED_NOMINATED_H
#define TAREMA_SCHED_NOMINATED_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

/* One nominated pod. meta (namespace, labels, ports, anti-affinity terms, name, priority: what
 * a placed pod's record holds) is owned by the table. */
typedef struct sched_nominee {
    char *uid;
    char *node; /* the nominated node's name */
    sched_resources requests;
    int32_t priority;
    sched_pod_meta *meta; /* NULL only after running out of memory while lent */
} sched_nominee;

/* typedef in snapshot.h */
sched_nominated *sched_nominated_new(void); /* NULL on OOM */
void sched_nominated_free(sched_nominated *t);

/* Nominates pod uid to node (a new nomination replaces the old one): its requests, priority and
 * metadata (ownership of meta passes to the table, also on error). 0, or -1 with err. */
int sched_nominated_set(sched_nominated *t, const char *uid, const char *node,
                        const sched_resources *requests, int32_t priority, sched_pod_meta *meta,
                        tm_err *err);
/* The same from a pod being scheduled (the preemptor that PostFilter nominated): its requests,
 * priority and the metadata sched_pod_record would record. 0, or -1 with err. */
int sched_nominated_set_pod(sched_nominated *t, const sched_pod *p, const char *node, tm_err *err);
/* Told that pod uid's nomination of priority prio no longer holds node (ended, or moved to
 * another node): the pods it kept out may fit there now, unless uid itself took the room (the
 * loop's node-scoped requeue). */
typedef void (*sched_nominated_end_fn)(void *ud, const char *uid, const char *node, int32_t prio);
void sched_nominated_on_end(sched_nominated *t, sched_nominated_end_fn fn, void *ud);
/* Ends uid's nomination. 0, or -1 when it had none. */
int sched_nominated_remove(sched_nominated *t, const char *uid);
/* The node uid is nominated to, NULL when none. Borrowed until the nomination changes. */
const char *sched_nominated_node(const sched_nominated *t, const char *uid);
size_t sched_nominated_count(const sched_nominated *t);
/* The i-th nomination (0..count-1, in no particular order; valid until the next change). The
 * entry is mutable only for the framework, which lends its meta to the snapshot for a cycle. */
sched_nominee *sched_nominated_at(sched_nominated *t, size_t i);

#endif
