/* queue_view.h: the scheduling queue for a person (issue 32, `tarema-scheduler queue`, like
 * Slurm's `squeue --start`): the pods pending for one scheduler in the order its queue would
 * take them, each with what it asks, when backfill expects it to start and why it waits.
 *
 * The order is not written here: the pods are put into a backend queue (scheduler/backend/
 * queue.h) whose sort is the framework's QueueSort (sched_framework_queue_cmp: priority, then
 * the Gang plugin's order, then the policy's) over a policy framework with the Gang plugin, as
 * the live loop builds its own, and read back with sched_queue_waiting, the call the backfill
 * planner makes. Pods gated by spec.schedulingGates are out of the queue (PreEnqueue): they are
 * listed after the waiting ones, without a position, in the same sort.
 *
 * A gang (PodGroup, Workload group, native PodGroup) is one row at the place of its first
 * waiting member, as the backfill planner makes it one job there: its waiting members are
 * listed in "members", "pods" counts them and the requests are their sum. A gated member is a
 * row of its own (gated).
 *
 * What the live queue knows and a listing does not: when a gang was first seen (taken here as
 * its earliest member's creation), and which pods are in backoff or in flight (every pending pod
 * is listed as waiting).
 *
 * JSON (-o json): a list, in queue order, of
 *   {"position": 1 | null (gated),
 *    "namespace", "name",            (a gang: its first waiting member)
 *    "uid", "priority",
 *    "gang": "podgroup/NS/NAME" | "workload/NS/NAME/GROUP/REPLICA" | "k8s-podgroup/NS/NAME"
 *            | null,
 *    "members": ["name", ...],       (the pods of the row: one, or a gang's waiting members)
 *    "pods": N,
 *    "requests": {"cpuMilli", "memoryBytes", "extended": {"nvidia.com/gpu": 1, ...}},
 *    "nodes": "4 pods: 16 cpu, 4Gi",  (the NODES column)
 *    "expectedStart": {"at": RFC 3339, "inSeconds": N} | null,  (tarema.io/expected-start)
 *    "gated": ["gate", ...] | null,
 *    "reason": "Unschedulable" | null, "message": "0/17 nodes are available: ..." | null,
 *                                      (the PodScheduled=False condition, as written)
 *    "why": "..."}                     (the WHY column: the message shortened, see
 *                                       sched_queue_view_why, at most SCHED_QUEUE_VIEW_WHY_MAX
 *                                       characters, a gang's without its "gang KEY: " prefix;
 *                                       "gated: A, B"; or "not tried yet")
 * Pure: no I/O, no clock (now_ms comes in). */
#ifndef TAREMA_SCHED_QUEUE_VIEW_H
#define TAREMA_SCHED_QUEUE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/error.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

/* The WHY column's width: the last column, so a long line only wraps; the whole message is in
 * "message". */
#define SCHED_QUEUE_VIEW_WHY_MAX 160

/* Whether pod (JSON) is pending for scheduler_name: schedulerName matches, no node, not being
 * deleted, not finished, and in one of namespaces (NULL-terminated; NULL or empty: all). */
bool sched_queue_view_pending(const json_t *pod, const char *scheduler_name,
                              const char *const *namespaces);

/* The rows (see above) of the pending pods among pods (a JSON array, as listed; others are
 * skipped) in the queue order of policy. s: the snapshot the policy's sort reads (TaskProfiles
 * for adaptive), also interns the pods' extended resources. only_ns: rows of that namespace only
 * (positions stay those in the whole list); NULL for all. New reference; NULL with err. */
json_t *sched_queue_view_rows(sched_snapshot *s, const char *policy, const json_t *pods,
                              const char *scheduler_name, const char *const *namespaces,
                              const char *only_ns, const sched_keys *keys, int64_t now_ms,
                              tm_err *err);

/* The rows as a table for a terminal. Caller frees; NULL on OOM. */
char *sched_queue_view_text(const json_t *rows);

/* ---- formatting helpers (exposed for the unit test) ---- */

/* "in 12 s", "overdue 3 s", "now"; minutes from 120 s, hours from 120 min ("in 5 min"). */
void sched_queue_view_when(long long in_s, char *buf, size_t cap);
/* What a row asks: "1 cpu, 1Gi", "0.25 cpu, 512Mi, 2 nvidia.com/gpu", "4 pods: 16 cpu, 4Gi". */
void sched_queue_view_asks(size_t pods, int64_t cpu_milli, int64_t mem_bytes, const json_t *ext,
                           char *buf, size_t cap);
/* A PodScheduled message for the WHY column: kube-scheduler's "preemption: ..." tail and the
 * final period dropped; longer than max characters: cut at the last ", " that fits, "..." added
 * (a single part too long is cut at max). */
void sched_queue_view_why(const char *message, size_t max, char *buf, size_t cap);

#endif
