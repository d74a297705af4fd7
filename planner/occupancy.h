/* occupancy.h: the planner's view of a live cluster, from the API server's objects (pure: the
 * controller passes the informers' objects and the clock in).
 *
 * Nodes: every Ready, schedulable Node with its allocatable cpu and memory; the node group (a
 * planning node type) is its tarema.io/group label ("all" without one).
 * What holds capacity (pl_busy entries, from now):
 *  - bound pods that have not finished: their requests until their expected end: the
 *    annotation tarema.io/expected-duration, else activeDeadlineSeconds, else the mean runtime
 *    of their TaskProfile (labels tarema.io/workflow + nextflow.io/processName), all from
 *    status.startTime (now while not started); a pod past its expected end holds until now +
 *    overrun_s; a pod with no expected end until now + unknown_hold_s;
 *  - Reservations in their window [startTime, endTime): those Admitted or Active, and those
 *    the planner made that are not over (Released, Expired, Failed), except the planned
 *    workflow's own (skip_ns/skip_wf: they are being replanned) and those whose owner's pods are
 *    already bound (the pods count instead);
 *  - pending pods the scheduler will bind (not bound, not gated, not the planned workflow's, not
 *    a Reservation owner's): oldest first, each where it first fits a node for its expected
 *    duration (as a running pod's, from the moment it binds) around everything above: the queue
 *    takes freed capacity before a Reservation made now is admitted. */
#ifndef TAREMA_PLANNER_OCCUPANCY_H
#define TAREMA_PLANNER_OCCUPANCY_H

#include <jansson.h>
#include <stdint.h>

#include "lib/error.h"
#include "planner/cluster.h"

typedef struct pl_world_opts {
    int64_t now;            /* seconds since the epoch */
    int64_t overrun_s;      /* how long a pod past its expected end is assumed to go on */
    int64_t unknown_hold_s; /* how long a pod without any expected end is assumed to hold */
    const char *skip_ns, *skip_wf;
    const json_t *nodes; /* the Node objects (their labels for pending pods' nodeSelector);
                            NULL: a pending pod may go to any node */
} pl_world_opts;

/* The cluster of nodes (a JSON array of Node objects); NULL with err when none is usable. */
pl_cluster *pl_world_cluster(const json_t *nodes, tm_err *err);

/* Busy entries from pods, reservations (arrays of objects) and TaskProfiles (may be NULL).
 * *out malloc'd. Returns 0 or -1 (out of memory). */
int pl_world_busy(const pl_cluster *c, const json_t *pods, const json_t *resvs,
                  const json_t *profiles, const pl_world_opts *o, pl_busy **out, int *n);

/* Requests of a pod (its containers' summed), milli-cores and bytes. */
void pl_pod_requests(const json_t *pod, int64_t *cpu_milli, int64_t *mem_bytes);

/* Expected end of a running or bound pod in seconds since the epoch, or -1 when unknown: its
 * tarema.io/expected-duration, activeDeadlineSeconds, else its TaskProfile's runtime on the
 * node group of its node (group, NULL = unknown). */
int64_t pl_pod_expected_end(const json_t *pod, const json_t *profiles, const char *group,
                            int64_t now);

/* Mean runtime in seconds of TaskProfile WORKFLOW/PROCESS (task), or -1. */
int64_t pl_profile_runtime(const json_t *profiles, const char *workflow, const char *process);
/* The same on node group group: the mean of its runs there (status.runtimeByGroup, runs >= 1),
 * else the process mean; group NULL = the process mean. */
int64_t pl_profile_runtime_on(const json_t *profiles, const char *workflow, const char *process,
                              const char *group);

#endif
