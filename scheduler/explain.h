/* explain.h: why a pod goes (or went, or cannot go) where it does: every node group's tarema
 * distance and preference rank, and for each node the filter that rejected it with
 * kube-scheduler's wording, or its score. Pure: runs the policy over a snapshot, no I/O.
 *
 * JSON shape (sched_explain):
 *   {"pod": "ns/name", "policy": "tarema",
 *    "task": {"workflow", "process", "labels": {"cpu","mem","io"} | null, "expectedRuntimeMs"},
 *    "groups": [{"id", "labels": {"cpu","mem","io"} | null, "power", "distance" | null,
 *                "nodes", "feasible", "rank"}],        (in tarema's preference order)
 *    "nodes": [{"name", "group", "feasible", "filter", "reason", "score", "extenderScore"}],
 *    "selected": "node" | null, "boundTo": "node" | null, "message": "0/3 nodes are ..."} */
#ifndef TAREMA_SCHED_EXPLAIN_H
#define TAREMA_SCHED_EXPLAIN_H

#include <jansson.h>

#include "lib/error.h"
#include "scheduler/framework.h"

/* Runs fw on pod against s and describes the outcome. When the pod is recorded in s (bound or
 * assumed), its requests are taken off its node for the evaluation and put back afterwards, so
 * a bound pod is judged against the cluster without itself. New reference; NULL with err. */
json_t *sched_explain(sched_framework *fw, sched_snapshot *s, const sched_pod *pod, int64_t now_ms,
                      tm_err *err);

/* The explain document as text for a terminal. Caller frees; NULL on OOM. */
char *sched_explain_text(const json_t *doc);

#endif
