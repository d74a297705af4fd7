/* extender.h: kube-scheduler extender protocol (k8s.io/kube-scheduler/extender/v1) over tarema's
 * policies, so an operator can keep the default scheduler and add tarema's scoring.
 *
 * Wire shapes (Go field names, no json tags, so capitalised keys):
 *   ExtenderArgs          {"Pod": Pod, "Nodes": NodeList | null, "NodeNames": [string] | null}
 *                         Nodes when nodeCacheCapable is false, NodeNames when true.
 *   ExtenderFilterResult  {"Nodes": NodeList | null, "NodeNames": [string] | null,
 *                          "FailedNodes": {node: reason}, "FailedAndUnresolvableNodes": {...},
 *                          "Error": ""}
 *   HostPriorityList      [{"Host": node, "Score": 0..10}]   (MaxExtenderPriority = 10)
 *   ExtenderBindingArgs   {"PodName", "PodNamespace", "PodUID", "Node"}
 *   ExtenderBindingResult {"Error": ""}
 *   ExtenderPreemptionArgs {"Pod": Pod,
 *                           "NodeNameToVictims": {node: {"Pods": [Pod], "NumPDBViolations": n}}
 *                             (nodeCacheCapable false), or
 *                           "NodeNameToMetaVictims": {node: {"Pods": [{"UID": uid}],
 *                             "NumPDBViolations": n}} (nodeCacheCapable true)}
 *   ExtenderPreemptionResult {"NodeNameToMetaVictims": {node: {"Pods": [{"UID"}], ...}}}
 *
 * nodeCacheCapable false: the nodes come in the request; capacity already used on them is taken
 * from the cache snapshot when one is configured (by node name), else counted as free (the
 * default scheduler has checked fit already). nodeCacheCapable true: the named nodes are looked
 * up in the cache snapshot; names it does not know fail with "node not in tarema's cache".
 * Resource shortfalls and added plugins' rejections (a reservation ends, capacity comes back) go
 * to FailedNodes, every other built-in rejection to FailedAndUnresolvableNodes, each with the
 * reason of the filter or plugin that rejected the node. Prioritize maps the policy's preference to
 * 0..10, the best group getting 10 and filtered nodes 0.
 *
 * Preempt (kube-scheduler's ProcessPreemption, called after its own dry run chose candidate
 * nodes and victims with its own filters only, never the extender's): for each candidate node,
 * tarema's filters (the policy's and the added plugins': Reservations, gangs) are re-run on the
 * cache snapshot with that node's victims hidden; a node where the preemptor still does not
 * pass is dropped (kube-scheduler then preempts on another candidate or not at all), the others
 * are answered with the victims unchanged (kube-scheduler's choice, which already respects its
 * own filters and PodDisruptionBudgets: a smaller set tarema cannot prove is enough for both).
 * Both forms need the cache snapshot (the request names nodes only); a victim uid the cache does
 * not know on that node is not counted there, so there is nothing to hide for it, and it stays
 * in the answer. A node without victims, or unknown to the cache, is dropped (kube-scheduler
 * refuses an answered node without victims).
 *
 * Retries: kube-scheduler parks a pod its extender left without a node until the next cluster
 * event. tarema's informer can be a few milliseconds behind kube-scheduler's, so the refusal
 * may have been made on a view kube-scheduler had already left (a pod ended that tarema still
 * counted), after the event that would retry the pod. Each /filter answer that leaves the pod
 * no node but refuses some with a resolvable reason (FailedNodes) keeps the pod for
 * SCHED_EXTENDER_RETRY_WINDOW_MS; an answer that passes a node forgets it. The caller runs
 * sched_extender_retry whenever its view changed: a pod that now passes one of the nodes it
 * was refused is handed to the caller, which makes an event kube-scheduler retries it on.
 *
 * Concurrency: each call builds its own policy instance, so calls may run in parallel; the
 * cache snapshot is read under cache_lock/cache_unlock, which must be exclusive (evaluating
 * refreshes the snapshot's lazily built groups). */
#ifndef TAREMA_SCHED_EXTENDER_H
#define TAREMA_SCHED_EXTENDER_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/httpd.h"
#include "lib/metrics.h"
#include "scheduler/framework/framework.h"
#include "scheduler/live/fw_metrics.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

/* Binds ns/name (uid) to node; 0 or -1 with err. Called for the extender's bind verb. */
typedef int (*sched_extender_bind_fn)(void *ud, const char *ns, const char *name, const char *uid,
                                      const char *node, tm_err *err);

typedef struct sched_extender_opts {
    const char *policy;                 /* NULL = "tarema" */
    const sched_score_weights *weights; /* scoreWeights, NULL = the defaults */
    sched_keys keys;                    /* zero = sched_keys_default() */
    sched_snapshot *cache;              /* live cache snapshot (borrowed), NULL = none */
    void (*cache_lock)(void *ud);
    void (*cache_unlock)(void *ud);
    void *cache_ud;
    sched_extender_bind_fn bind; /* NULL: the bind verb answers an Error */
    void *bind_ud;
    int64_t (*now_ms)(void *ud); /* clock for the policy; NULL = 0 */
    void *now_ud;
    /* Adds the caller's plugins (the Reservation Filter, resv_plugin.h) to the framework each
     * request builds, called with the cache lock held (when one is configured) and held until
     * the request's answer is written. NULL = the policy's plugins only. 0 or -1 with err. */
    int (*add_plugins)(void *ud, sched_framework *fw, tm_err *err);
    void *plugins_ud;
    /* registry for tarema_extender_preempt_nodes_total{outcome}, NULL = no metrics */
    tm_metrics *metrics;
    /* kube-scheduler's framework timings of each request's cycle (fw_metrics.h): extension
     * points always, plugin calls in the sampled requests; NULL = none */
    sched_fw_metrics *fw_metrics;
} sched_extender_opts;

typedef struct sched_extender sched_extender;

/* Copies opts (the policy name is checked now). NULL with err. Free with sched_extender_free. */
sched_extender *sched_extender_new(const sched_extender_opts *opts, tm_err *err);
void sched_extender_free(sched_extender *x);

/* ExtenderArgs -> ExtenderFilterResult. Malformed args give NULL with err (the HTTP layer then
 * answers a result whose Error says so). New reference. */
json_t *sched_extender_filter(sched_extender *x, const json_t *args, tm_err *err);
/* ExtenderArgs -> HostPriorityList (every candidate node, in request order). New reference. */
json_t *sched_extender_prioritize(sched_extender *x, const json_t *args, tm_err *err);
/* ExtenderPreemptionArgs -> ExtenderPreemptionResult. NULL with err on malformed args (then
 * *bad_input is true and err names the field) or when the evaluation fails. New reference. */
json_t *sched_extender_preempt(sched_extender *x, const json_t *args, bool *bad_input, tm_err *err);
/* ExtenderBindingArgs -> ExtenderBindingResult (never NULL except on OOM). New reference. */
json_t *sched_extender_bind(sched_extender *x, const json_t *args);

/* Serves POST <prefix>/filter, <prefix>/prioritize, <prefix>/preempt (400 with the reason on
 * malformed args), and <prefix>/bind when opts.bind is set,
 * on srv (prefix "" or like "/tarema"); they require authentication when srv has it. x must
 * outlive the server. 0 or -1 with err. */
int sched_extender_register(sched_extender *x, tm_httpd *srv, const char *prefix, tm_err *err);

/* How long a refused pod is kept for a retry: longer than tarema's informer is behind
 * kube-scheduler's even under load; a change older than that kube-scheduler has acted on. */
#define SCHED_EXTENDER_RETRY_WINDOW_MS 10000

/* What the server writes on a pod to be retried: an update kube-scheduler requeues it on. */
#define SCHED_EXTENDER_RETRY_ANNOTATION "tarema.io/extender-retry"

/* Told that pod ns/name (uid), refused by /filter, passes node now. */
typedef void (*sched_extender_retry_fn)(void *ud, const char *ns, const char *name, const char *uid,
                                        const char *node);
/* Evaluates the refused pods again (the newest SCHED_EXTENDER_RETRY_BATCH, on the nodes they were
 * refused, with the cache lock taken per pod): each that passes a node now goes to retry and is
 * forgotten; those older than the window are forgotten. now_ms: opts.now_ms's clock. Returns
 * how many went to retry. Call from one thread at a time, without the cache lock. */
size_t sched_extender_retry(sched_extender *x, int64_t now_ms, sched_extender_retry_fn retry,
                            void *ud);
size_t sched_extender_retry_pending(sched_extender *x); /* pods kept (thread-safe) */

#endif
