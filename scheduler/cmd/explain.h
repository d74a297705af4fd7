/* explain.h: why a pod goes (or went, or cannot go) where it does, for a person: every node
 * group's preference rank and tarema label distance sum_k |group_k - task_k| with both label
 * vectors, each node's load in numbers (cpu, memory, pods requested of allocatable, without
 * the explained pod) or the filter that rejected it with kube-scheduler's wording, and in words
 * why the selected node won. Pure: runs the policy over a snapshot, no I/O.
 *
 * JSON shape (sched_explain; -o json):
 *   {"pod": "ns/name", "policy": "tarema",
 *    "task": {"workflow", "process", "labels": {"cpu","mem","io"} | null, "expectedRuntimeMs",
 *             "requests": {"cpuMilli", "memoryBytes"},
 *             "queueRank": {"rankMs", "runtimeMs", "tailMs"}},  (only under --policy adaptive)
 *    "groups": [{"id", "labels": {"cpu","mem","io"} | null, "power", "distance" | null,
 *                "distanceTerms": [{"feature", "group", "task", "diff"}],
 *                "nodes", "feasible", "rank",          (in tarema's preference order)
 *                "adaptive": {"predictedRuntimeMs", "basis": "measured"|"bounded"|"mean"|
 *                             "unknown", "runs", "expectedFinishMs" | null,
 *                             "bestNode": {"name", NODEFINISH} | null}}],
 *                                                     (adaptive: only under --policy adaptive;
 *                                                      expectedFinishMs: the group's, room now;
 *                                                      bestNode: its feasible node with the
 *                                                      earliest finish as the policy scored it)
 *    "nodes": [{"name", "group", "groupRank", "feasible",
 *               "load": {"share", "cpuRequestedMilli", "cpuAllocatableMilli",
 *                        "memoryRequestedBytes", "memoryAllocatableBytes", "podsRequested",
 *                        "podsAllocatable"},
 *               "filter", "reason"            (filtered nodes)
 *               "score", "extenderScore",     (feasible nodes; score is the policy's internal
 *                                              ordering key, extenderScore its 0..10 scale)
 *               "adaptive": NODEFINISH}],      (feasible nodes, only under --policy adaptive)
 *    NODEFINISH = {"cores", "usedCores", "ownCores", "slowdown", "runtimeMs" | null, "harmMs",
 *                  "expectedFinishMs" | null}: the node's allocatable cores, the cores its
 *                  running tasks use, the task's own, the contention slowdown, the predicted
 *                  runtime on its group, the delay added to the running tasks, and
 *                  runtime x slowdown + harm (adaptive.h)
 *    "selected": "node" | null, "boundTo": "node" | null, "message": "0/3 nodes are ...",
 *    "why": "group mid ranks 1: label distance 0, ...",
 *    "gated": "tarema.io/planned"   (only when spec.schedulingGates is not empty),
 *    "preemption": {"nominated": "node" | null, "message", "victims": [VICTIM],
 *                   "nodes": [{"name", "outcome", "lostBy", "pdbViolations", "victims":
 *                              [VICTIM]}], "nodesNotTried", "nodesUnresolvable"}
 *                   (only when no node fits: what DefaultPreemption would do, preemption.h;
 *                    VICTIM = {"pod", "priority", "pdbViolation", "why"})} */
#ifndef TAREMA_SCHED_EXPLAIN_H
#define TAREMA_SCHED_EXPLAIN_H

#include <stdio.h>

#include <jansson.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"

/* Runs fw on pod against s and describes the outcome. When the pod is recorded in s (bound or
 * assumed), its requests are taken off its node for the evaluation and put back afterwards, so
 * a bound pod is judged against the cluster without itself. New reference; NULL with err. */
json_t *sched_explain(sched_framework *fw, sched_snapshot *s, const sched_pod *pod, int64_t now_ms,
                      tm_err *err);

/* The "preemption" object of an explanation (explain_preempt.c) for a pod that fits nowhere:
 * fw's last cycle must be the failed one for pod. New reference; NULL with err. */
json_t *sched_explain_preemption(sched_framework *fw, sched_snapshot *s, const sched_pod *pod,
                                 int64_t now_ms, tm_err *err);
/* Its text, a few lines (nothing when doc has no "preemption"). */
void sched_explain_preemption_text(FILE *f, const json_t *doc);
/* The "preemption" of a gang's explanation (gang_live.h sched_gang_explain: the gang's own
 * preemption as one unit) as text: the victims, whole gangs named, and where each waiting member
 * would go; or why nothing would be evicted. Nothing when absent. */
void sched_explain_gang_preemption_text(FILE *f, const json_t *gang);

/* Why the selected node won (or why none fits), in words, from an explain document. */
void sched_explain_why(const json_t *doc, char *buf, size_t cap);

/* A node's "load" object in words and numbers: "load 44 %: cpu requested 3.5 of 8 cores
 * (44 %), memory 1.0 of 8.0 GiB (12 %), 3 of 110 pods". */
void sched_explain_load_text(const json_t *load, char *buf, size_t cap);

/* Issue 18 (the labeler's waits feed writes tarema.io/predicted-start on pending pods): adds
 * "predictedStart": {"at", "queuedAt", "wait", "inSeconds"} to doc from the pod's annotations,
 * or null when the pod has none or is bound. sched_explain_text prints it last. */
void sched_explain_predicted_start(json_t *doc, const json_t *pod, int64_t now_ms);
/* Issue 32 (backfill: the running scheduler writes tarema.io/expected-start on the pods its
 * shadows hold nodes for): adds "expectedStart": {"at", "inSeconds"}, or null when the pod has
 * none or is bound. sched_explain_text prints it after the predicted start. */
void sched_explain_expected_start(json_t *doc, const json_t *pod, int64_t now_ms);

/* The explain document as text for a terminal. Caller frees; NULL on OOM. */
char *sched_explain_text(const json_t *doc);

#endif
