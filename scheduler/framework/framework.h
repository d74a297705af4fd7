/* framework.h: the scheduling framework: the plugin interface (one struct with a hook per
 * extension point) and the framework that runs the plugins; the pod being scheduled is
 * backend/pod.h.
 *
 * Shape of kube-scheduler's framework: PreEnqueue, QueueSort, PreFilter -> Filter ->
 * PostFilter -> PreScore -> Score -> (select) -> Reserve -> Permit, then PreBind -> Bind, with
 * Unreserve on failure (the extension points, at the end of this file; the flow in cycle.c).
 * A framework holds the policy's plugin (scoring, queue order; policy.h), the in-tree Filter
 * plugins (filters.h, registered by sched_framework_new) and the plugins a caller adds with
 * sched_framework_add_plugin (gangs, reservations, the live binder). Layers, from the bottom:
 * backend/ (snapshot, pod, matching rules) < framework/ (framework.c, cycle.c, scan.c, permit.c,
 * which include no plugin) < plugins/; hack/check-layers.sh checks it (docs/architecture.md).
 * The in-tree filters run in this order, and the first that rejects a node decides its
 * reason, as in kube-scheduler:
 *   NodeReady          "node(s) were not ready"
 *   NodeUnschedulable  "node(s) were unschedulable"
 *   TaintToleration    "node(s) had untolerated taint {key: value}"  (NoSchedule, NoExecute)
 *   NodeAffinity       "node(s) didn't match Pod's node affinity/selector" (nodeSelector and
 *                      required node affinity)
 *   NodePorts          "node(s) didn't have free ports for the requested pod ports"
 *   NodeResourcesFit   "Insufficient cpu", "Insufficient memory", "Too many pods", ... (one
 *                      reason per short resource)
 *   PodTopologySpread  "node(s) didn't match pod topology spread constraints" (DoNotSchedule
 *                      constraints; "... (missing required label)" when the node lacks the key)
 *   InterPodAffinity   "node(s) didn't match pod affinity rules", "node(s) didn't match pod
 *                      anti-affinity rules", "node(s) didn't satisfy existing pods anti-affinity
 *                      rules" (required terms only; preferred terms are scoring in
 *                      kube-scheduler and ignored here)
 *   DynamicResources   runs last, only for a pod with spec.resourceClaims: "node(s) cannot be
 *                      used: tarema-scheduler does not allocate DRA resource claims ..."
 *   The volume plugins run between NodeResourcesFit and PodTopologySpread, in kube's order,
 *   only where the snapshot tracks volumes (volumes.h):
 *   VolumeRestrictions "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
 *                      access mode already in-use by another pod"
 *   NodeVolumeLimits   "node(s) exceed max volume count" (CSINode attach limits)
 *   VolumeBinding      "node(s) had volume node affinity conflict", "node(s) didn't find
 *                      available persistent volumes to bind" (WaitForFirstConsumer claims), and
 *                      for a claim the pod cannot use every node gets "persistentvolumeclaim
 *                      "x" not found" (or "is being deleted"), "pod has unbound immediate
 *                      PersistentVolumeClaims", "waiting for ephemeral volume controller to
 *                      create the persistentvolumeclaim "x"", "PVC ns/x was not created for pod
 *                      ns/p (pod is not owner)", "node(s) unavailable due to one or more pvc(s)
 *                      bound to non-existent pv(s)"
 *   VolumeZone         "node(s) had no available volume zone"
 * NodePorts and the last three need the whole cluster (pods on other nodes): like
 * kube-scheduler's, their PreFilter counts matching pods per topology domain once per cycle so
 * that each node's check is O(terms), or skips the filter when the pod needs none of it. A pod
 * that uses none of them, in a snapshot where no placed pod has required anti-affinity, pays
 * one flag check per node (the column scan, scan.c). Filter plugins added by a caller run after
 * them, in the order added.
 * The score plugin gives every feasible node an int64 (higher is better); the framework picks
 * the best, breaking ties by node name. Everything here is pure: no I/O, no locks, no clock
 * (time comes in as now_ms). A sched_framework holds per-cycle buffers and plugin state (the
 * round-robin cursor), so use one per scheduling thread.
 *
 * Typical cycle (live scheduler or simulator; Permit and binding: the end of this file):
 *   sched_framework *fw = sched_policy_new("tarema", &err);        // policy.h
 *   sched_decision d;
 *   if (sched_framework_schedule(fw, snap, pod, now_ms, &d, &err) == 0 && d.node >= 0)
 *       sched_framework_reserve(fw, snap, pod, d.node, &err);      // assume, then bind
 *   else sched_framework_fit_message(fw, snap, buf, sizeof buf);   // FailedScheduling text
 */
#ifndef TAREMA_SCHED_FRAMEWORK_H
#define TAREMA_SCHED_FRAMEWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/match.h"
#include "scheduler/backend/pod.h"
#include "scheduler/backend/snapshot.h"

/* Filters, in the order they run. SCHED_FILTER_OK (0) means the node passed. */
typedef enum {
    SCHED_FILTER_OK = 0,
    SCHED_FILTER_NODE_READY,
    SCHED_FILTER_NODE_UNSCHEDULABLE,
    SCHED_FILTER_TAINT,
    SCHED_FILTER_NODE_AFFINITY,
    SCHED_FILTER_RESOURCES,
    /* added later, so the run order is not the numeric order: NodePorts runs between
     * NodeAffinity and NodeResourcesFit, then PodTopologySpread, then InterPodAffinity */
    SCHED_FILTER_NODE_PORTS,
    SCHED_FILTER_SPREAD,   /* detail: SCHED_SPREAD_* */
    SCHED_FILTER_INTERPOD, /* detail: SCHED_INTERPOD_* */
    /* runs after NodeResourcesFit, before PodTopologySpread (volumes.h) */
    SCHED_FILTER_VOLUME, /* detail: SCHED_VOLUME_* | claim index << 8 */
    SCHED_FILTER_DRA,    /* last: a pod with DRA resource claims (tarema allocates none) */
    /* VolumeRestrictions and NodeVolumeLimits run before VolumeBinding, VolumeZone after it */
    SCHED_FILTER_VOLUME_RESTRICTIONS,
    SCHED_FILTER_VOLUME_LIMITS,
    SCHED_FILTER_VOLUME_ZONE,
    SCHED_FILTER_COUNT
} sched_filter_id;

/* NodeResourcesFit's detail: one bit per requested resource the node is short of. Bits 0..3 are
 * the fixed slots (SCHED_RES_CPU..SCHED_RES_PODS); the pod's k-th requested extended resource
 * (k counted over the slots it asks a positive amount of, in slot order) is bit
 * SCHED_RES_FIRST_EXT + k, the 26th and later sharing the last of those bits (sched_fit_bit),
 * so the mask fits in the filter's int whatever the number of slots. SCHED_FIT_SPARSE: the node
 * is short of a resource kept sparsely (sched_pod.xreq; the reason names which). */
enum { SCHED_FIT_EXT_BITS = 26, SCHED_FIT_SPARSE = 1u << 30 };
static inline int sched_fit_bit(int slot, int ext_k) {
    return slot < SCHED_RES_FIRST_EXT
               ? slot
               : SCHED_RES_FIRST_EXT +
                     (ext_k < SCHED_FIT_EXT_BITS ? ext_k : SCHED_FIT_EXT_BITS - 1);
}

enum { SCHED_SPREAD_SKEW = 0, SCHED_SPREAD_MISSING_LABEL = 1 };
enum {
    SCHED_INTERPOD_AFFINITY = 0,      /* the pod's required affinity is not met */
    SCHED_INTERPOD_ANTI_AFFINITY = 1, /* the pod's required anti-affinity is violated */
    SCHED_INTERPOD_EXISTING_ANTI = 2  /* a placed pod's required anti-affinity forbids it */
};

/* Whether kube-scheduler calls this rejection Unschedulable (preempting pods on the node might
 * help: resources, ports, anti-affinity, spread skew) rather than UnschedulableAndUnresolvable
 * (readiness, taints, node affinity, pod affinity, missing topology label). */
bool sched_filter_resolvable(sched_filter_id id, uint32_t detail);

const char *sched_filter_name(sched_filter_id id); /* "NodeResourcesFit", ... */

/* Runs every filter on one node. Returns the filter that rejected it or SCHED_FILTER_OK. detail
 * (may be NULL) gets what the message needs: for TAINT the taint index, for RESOURCES a bit
 * mask of the short resources (sched_fit_bit), for SPREAD and INTERPOD which rule. No
 * allocation for a pod without inter-pod features in a snapshot without anti-affinity pods;
 * otherwise this computes the cluster-wide state for the one node (use the framework, or
 * sched_prefilter + sched_filter_node_pre, to check many nodes), and returns
 * SCHED_FILTER_COUNT (not OK) if that runs out of memory. */
sched_filter_id sched_filter_node(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                                  uint32_t *detail);

/* Per-cycle state of the inter-pod filters (their PreFilter): host ports in use on each node,
 * matching pods per topology domain. Reusable across cycles (buffers are kept). Borrowed
 * pointers into s and p: valid until either changes. */
typedef struct sched_prefilter sched_prefilter;
sched_prefilter *sched_prefilter_new(void); /* NULL on OOM; free with sched_prefilter_free */
void sched_prefilter_free(sched_prefilter *pf);
/* Computes the state for p over s. 0, or -1 with err (out of memory). */
int sched_prefilter_compute(sched_prefilter *pf, const sched_snapshot *s, const sched_pod *p,
                            tm_err *err);
/* sched_filter_node for node index `node` with state computed for the same s and p. */
sched_filter_id sched_filter_node_pre(const sched_snapshot *s, const sched_pod *p, size_t node,
                                      const sched_prefilter *pf, uint32_t *detail);

/* The matching helpers the filters share (selectors, taints, topology maps, host ports) are in
 * match.h; the in-tree Filter plugins' own state in filters.h. */

/* kube-scheduler's reason text for one node's rejection, e.g. "Insufficient cpu" (for several
 * short resources, the reasons joined by ", "). p (may be NULL) names a claim in VolumeBinding's
 * reasons. Writes into buf, returns buf. */
char *sched_filter_reason(const sched_snapshot *s, const sched_node *n, const sched_pod *p,
                          sched_filter_id id, uint32_t detail, char *buf, size_t size);

typedef struct sched_framework sched_framework;

/* What an extension point hook answers (kube-scheduler's framework.Status codes). */
typedef enum {
    SCHED_STATUS_OK = 0,        /* success; Permit: allow */
    SCHED_STATUS_SKIP,          /* PreFilter: nothing to check, Filter is not called this cycle;
                                 * Bind: not mine, ask the next Bind plugin */
    SCHED_STATUS_UNSCHEDULABLE, /* reject: PreEnqueue keeps the pod out of the active queue,
                                 * PreFilter rejects every node, Permit rejects the pod,
                                 * PostFilter found nothing to do */
    SCHED_STATUS_WAIT,          /* Permit: hold the reserved pod until allowed or timed out;
                                 * PreEnqueue: keep the pod out quietly, for a short while
                                 * (an unschedulable attempt without FailedScheduling event:
                                 * what it waits for is due, e.g. its Reservation's admission) */
    SCHED_STATUS_GATED,         /* PreEnqueue: the pod is not queued at all (scheduling gates):
                                 * no attempt, no event, no backoff */
    SCHED_STATUS_ERROR          /* failure, err set */
} sched_status;

/* Per-cycle context handed to every hook. task is resolved once per cycle. fw is the framework
 * running the hook (a Permit plugin allows its waiting siblings through it). */
typedef struct sched_cycle {
    sched_snapshot *snap;
    const sched_pod *pod;
    sched_task_info task;
    int64_t now_ms;
    sched_framework *fw;
} sched_cycle;

/* The plugin interface, one struct for every extension point, as a Go plugin implements several
 * interfaces: a plugin sets the hooks of the points it sits at and leaves the others NULL.
 * The policy's plugin (sched_framework_new) scores and sorts the queue; plugins added with
 * sched_framework_add_plugin (gangs, reservations, the live binder) run beside it, in the order
 * they were added. Hooks are pure: no I/O except in PreBind/Bind, whose implementations live
 * with the caller (the live scheduler's binder, the simulator's). */
typedef struct sched_plugin {
    const char *name; /* "tarema", "round-robin", ... (static string) */
    void *state;      /* plugin state, freed by free_state */
    /* Once per cycle before scoring (per-pod precomputation). 0 or -1 with err. */
    int (*pre_score)(void *state, const sched_cycle *c, tm_err *err);
    /* Score of a feasible node, higher is better. */
    int64_t (*score)(void *state, const sched_cycle *c, const sched_node *n);
    /* Score of a feasible node on the extender's 0..10 scale, given the node's raw score and
     * the min/max raw scores over the feasible nodes. NULL = linear min..max -> 0..10. */
    int (*extender_score)(void *state, const sched_cycle *c, const sched_node *n, int64_t raw,
                          int64_t min, int64_t max);
    /* Called after the pod is reserved on n (round-robin advances its cursor). */
    void (*reserved)(void *state, const sched_cycle *c, const sched_node *n);
    /* Queue order among pods of the same priority (the framework orders by priority first,
     * whatever the plugins say): negative when a goes before b. NULL = creation time asc. */
    int (*queue_cmp)(void *state, const sched_snapshot *s, const sched_pod *a, const sched_pod *b);
    void (*free_state)(void *state);
    /* Optional, the fast path of score: the scores of the feasible nodes with indices
     * nodes[0..n-1] into out[0..n-1], exactly the values score would give, read from the
     * snapshot's columns (sched_snapshot_node_cols) in one call per cycle. NULL = score is
     * called per node. */
    void (*score_batch)(void *state, const sched_cycle *c, const uint32_t *nodes, size_t n,
                        int64_t *out);

    /* ---- the other extension points (all optional) ---- */
    /* PreEnqueue: may p enter the active queue? OK; or, with a reason in msg, UNSCHEDULABLE
     * (the pod waits outside the queue and is reported, e.g. until its gang has minMember
     * pods), WAIT (it waits quietly: what it waits for is due) or GATED (not queued at all). */
    sched_status (*pre_enqueue)(void *state, const sched_snapshot *s, const sched_pod *p,
                                int64_t now_ms, char *msg, size_t size);
    /* PreFilter: once per cycle before Filter. OK (Filter runs on every node), SKIP (Filter is
     * not called this cycle), UNSCHEDULABLE (every node the filters before it passed is
     * rejected with *detail, the reason given by filter_reason), ERROR. A plugin may have a
     * PreFilter without a Filter (it can then only reject every node or nothing). */
    sched_status (*pre_filter)(void *state, const sched_cycle *c, uint32_t *detail, tm_err *err);
    /* Filter: -1 when node index `node` (n) passes, else a detail >= 0 that filter_reason turns
     * into the node's reason. Filter plugins run in the order they were registered (the
     * in-tree ones first), each only on the nodes the earlier ones passed, so the first that
     * rejects a node decides its reason. Hooks may be called for the nodes in any order. */
    int (*filter)(void *state, const sched_cycle *c, size_t node, const sched_node *n);
    /* The reason text of a rejection (as in FailedScheduling: "node(s) were reserved"); NULL:
     * "node(s) were rejected by plugin NAME". See also node_reason. */
    void (*filter_reason)(void *state, const sched_cycle *c, uint32_t detail, char *buf,
                          size_t size);
    /* PostFilter: when no node fits (sched_framework_post_filter). OK with *nominated >= 0 when
     * it made room on that node index, UNSCHEDULABLE when it could not help, ERROR. The node
     * outcomes of the failed cycle are readable (sched_framework_node_status(c->fw, ...)). */
    sched_status (*post_filter)(void *state, const sched_cycle *c, int *nominated, tm_err *err);
    /* Unreserve: undo what reserved did (rejected by Permit, timed out, bind failed). Runs in
     * the reverse order of Reserve. */
    void (*unreserve)(void *state, const sched_cycle *c, const sched_node *n);
    /* Permit: after Reserve. OK (allow), UNSCHEDULABLE (reject, reason in msg), or WAIT with
     * *timeout_ms (how long to wait at most, from c->now_ms). */
    sched_status (*permit)(void *state, const sched_cycle *c, const sched_node *n,
                           int64_t *timeout_ms, char *msg, size_t size);
    /* PreBind: before Bind (e.g. write the pod's annotations). OK or ERROR. */
    sched_status (*pre_bind)(void *state, const sched_cycle *c, const sched_node *n, tm_err *err);
    /* Bind: bind p to n. OK (bound), SKIP (not mine: the next Bind plugin), ERROR. No Bind
     * plugin at all: the pod stays bound in the snapshot only (the simulator). */
    sched_status (*bind)(void *state, const sched_cycle *c, const sched_node *n, tm_err *err);
    /* In-tree Filter plugins only (filters.h): the sched_filter_id their rejections carry.
     * The cycle checks the node-local ones (NodeReady, NodeUnschedulable, TaintToleration,
     * NodeAffinity, NodeResourcesFit) itself from the snapshot's node columns, exactly as their
     * filter hooks would; 0 for every other plugin. */
    sched_filter_id filter_id;
    /* filter_reason with the rejected node n (NULL when the reason is wanted without one), for
     * reasons that name something of the node (TaintToleration names the taint); used instead
     * of filter_reason when set. */
    void (*node_reason)(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                        char *buf, size_t size);

    /* ---- preference scoring: kube-scheduler's PreScore/Score/NormalizeScore of a weighted
     * Score plugin (NodeAffinity, TaintToleration, PodTopologySpread, InterPodAffinity,
     * NodeResourcesBalancedAllocation, ImageLocality) ----
     * When at least one plugin's pref_pre_score (pref_secondary ones aside) says it has
     * something to say about the pod, every node's total is policy_weight * (the policy's
     * score, min..max -> 0..100) plus, per such plugin, pref_weight * (its raw score,
     * DefaultNormalizeScore -> 0..100). When none has, the policy's raw score alone decides,
     * as if these hooks were absent (the secondary scores at most break its ties,
     * sched_framework_set_tie_break). */
    /* PreScore: false when the plugin has nothing to say about this pod (kube's Skip). */
    bool (*pref_pre_score)(void *state, const sched_cycle *c);
    /* Raw preference score (>= 0) of a feasible node. */
    int64_t (*pref_score)(void *state, const sched_cycle *c, const sched_node *n);
    bool pref_reverse; /* fewer is better: normalised to 100 - 100 * raw / max */
    bool pref_minmax;  /* raw of any sign: normalised min..max -> 0..100 (0 when equal) */
    bool pref_raw;     /* already 0..100 (no NormalizeScore in kube, or the plugin's own,
                        * done in its PreScore): taken as it is */
    /* A resource-shape score the policy already stands for (NodeResourcesBalancedAllocation,
     * ImageLocality): it does not by itself turn the weighted sum on. When a user-written
     * preference is scored it is one more weighted part, as in kube-scheduler; when none is,
     * the policy's raw score decides, and with the tie-break on (sched_framework_set_tie_break)
     * this score breaks its exact ties (the sum of the secondary scores, weighted, before node
     * name order). */
    bool pref_secondary;
    int pref_weight; /* weight of the normalised score (sched_framework_set_score_weight) */
} sched_plugin;

/* kube-scheduler's MaxNodeScore: a normalised score is 0..100. */
#define SCHED_MAX_NODE_SCORE 100
/* Default weight of the policy's normalised score against the preference plugins'
 * (NodeAffinity 2, TaintToleration 3, PodTopologySpread 2, InterPodAffinity 2: kube-scheduler's
 * defaults). 1, the weight of the kube-scheduler plugins the policy stands for
 * (NodeResourcesFit, NodeResourcesBalancedAllocation): a preference the user wrote outweighs
 * the node-group choice, which still decides among the nodes the preferences rate alike.
 * BalancedAllocation and ImageLocality themselves are secondary scores (pref_secondary): a
 * weighted part beside a user preference, else only the policy's tie-break. */
#define SCHED_POLICY_WEIGHT_DEFAULT 1
/* The feasible nodes of the cycle under way (node indices, *n of them), from PreScore on:
 * for a score plugin whose PreScore needs them, as kube hands PreScore the filtered nodes
 * (PodTopologySpread sizes its domains by them). Valid until the next schedule call. */
const uint32_t *sched_framework_feasible(const sched_framework *fw, size_t *n);
/* The highest weight accepted (kube-scheduler's config allows 1..100 per plugin). */
#define SCHED_SCORE_WEIGHT_MAX 100

/* A framework running the in-tree filters (filters.h, kube-scheduler's order) and plugin
 * (copied; its state is owned and freed by the framework from now on, also on error). NULL
 * with err on OOM. Free with sched_framework_free. */
sched_framework *sched_framework_new(const sched_plugin *plugin, tm_err *err);
/* The same without any Filter plugin: for a caller that registers its own filters. */
sched_framework *sched_framework_new_empty(const sched_plugin *plugin, tm_err *err);
void sched_framework_free(sched_framework *fw);
const char *sched_framework_name(const sched_framework *fw);

/* The outcome of one cycle. node_name is borrowed from the snapshot (valid until the node is
 * removed). */
typedef struct sched_decision {
    int node; /* index of the chosen node, -1 when no node fits */
    const char *node_name;
    size_t n_nodes;    /* nodes considered */
    size_t n_feasible; /* nodes that passed every filter */
    int64_t score;     /* the chosen node's score */
} sched_decision;

/* Filter + score + select for one pod. Does not change the snapshot (see reserve). Returns 0
 * (also when nothing fits: d->node == -1) or -1 with err (plugin failure). */
int sched_framework_schedule(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                             int64_t now_ms, sched_decision *d, tm_err *err);

/* Reserve: records p's requests and inter-pod metadata (sched_pod_record) on node index `node`
 * in the snapshot (keyed by p->uid), so the next pod of a batch sees it, and tells the plugin.
 * Undo with sched_snapshot_remove_pod(s, p->uid) when the bind fails. */
int sched_framework_reserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                            tm_err *err);

/* Queue sort by the plugin's order (negative: a first): priority, the plugins' and the
 * policy's order, creationTimestamp; 0 for pods it does not tell apart (created in the same
 * second: a queue orders those as they arrived, as kube-scheduler's queue does). */
int sched_framework_queue_order(const sched_framework *fw, const sched_snapshot *s,
                                const sched_pod *a, const sched_pod *b);
/* The same, deterministic where there is no queue to remember arrival: ties end on namespace,
 * name and uid. */
int sched_framework_queue_cmp(const sched_framework *fw, const sched_snapshot *s,
                              const sched_pod *a, const sched_pod *b);

/* After the last schedule call: the per-node outcome (filter id, detail) and, for feasible
 * nodes, the score. Valid until the next schedule call or snapshot node change. */
sched_filter_id sched_framework_node_status(const sched_framework *fw, size_t node,
                                            uint32_t *detail, int64_t *score);
/* After a failed schedule call: makes failed node `node`'s status count the pods nominated to it
 * that the pod must count, as kube-scheduler's first Filter pass does; the cycle itself filtered
 * with them only the nodes that passed without. PostFilter calls it before it reads whether
 * eviction can resolve the node's rejection. 0, or -1 with err. */
int sched_framework_status_with_nominated(sched_framework *fw, size_t node, tm_err *err);
/* The same for every failed node a nominated pod is lent to, inside what-if filtering (which
 * lends them all): no second lending. */
void sched_framework_whatif_nominated_status(sched_framework *fw);
/* The cycle of the last schedule call (task info resolved), for explain and the extender. */
const sched_cycle *sched_framework_last_cycle(const sched_framework *fw);
/* Extender 0..10 score of a feasible node of the last cycle (-1 for filtered nodes). */
int sched_framework_extender_score(const sched_framework *fw, size_t node);

/* FailedScheduling message of the last cycle in kube-scheduler's words, e.g.
 * "0/15 nodes are available: 12 node(s) didn't match Pod's node affinity/selector, 3
 * Insufficient cpu." Writes into buf (truncated to size), returns buf. */
char *sched_framework_fit_message(const sched_framework *fw, const sched_snapshot *s, char *buf,
                                  size_t size);
/* Whether the last cycle's pod fit nowhere for capacity alone: NodeResourcesFit on some nodes,
 * on the others a filter of the node alone (readiness, unschedulable, taints, node affinity),
 * no in-tree filter that reads other nodes' pods applied to it (spread, inter-pod terms,
 * volumes) and no PreFilter rejected it everywhere.
 * Only a node where pods release capacity can take such a pod then (sched_queue_move_released). */
bool sched_framework_capacity_only(const sched_framework *fw);

/* ---- extension points beyond Filter/Score (the scheduling and binding cycles) ----
 *
 * Scheduling cycle (cycle.c), per pod:
 *   PreEnqueue (sched_framework_pre_enqueue, before the pod enters the active queue)
 *   QueueSort  (sched_framework_queue_cmp: priority first, always; then added plugins'
 *               queue_cmp, latest added first, the first non-zero answer decides; then the
 *               policy's; then creation time)
 *   PreFilter -> Filter -> PreScore -> Score -> select   (sched_framework_schedule)
 *   PostFilter when nothing fits                          (sched_framework_post_filter)
 *   Reserve                                               (sched_framework_reserve)
 *   Permit: allow / reject / wait                         (sched_framework_permit)
 * Binding cycle: PreBind -> Bind, Unreserve on failure    (sched_framework_bind)
 *
 * Permit WAIT, for a caller that holds the pod (the live loop) and resolves it later:
 *
 *   sched_framework_reserve(fw, s, p, node, &err);
 *   int64_t deadline;
 *   switch (sched_framework_permit(fw, s, p, node, now_ms, &deadline, msg, sizeof msg, &err)) {
 *   case SCHED_STATUS_OK: bind(p); break;            // sched_framework_bind(...)
 *   case SCHED_STATUS_UNSCHEDULABLE: requeue(p, msg); // already unreserved
 *       break;
 *   case SCHED_STATUS_WAIT: hold(p); break;         // p and s must stay valid until resolved
 *   default: error
 *   }
 *   // later (each loop turn, after events, or at deadline): for each held pod
 *   switch (sched_framework_waiting_resolve(fw, p->uid, now_ms, msg, sizeof msg)) {
 *   case SCHED_STATUS_WAIT: break;                    // keep holding
 *   case SCHED_STATUS_OK: bind(p); break;            // every waiting plugin allowed it
 *   case SCHED_STATUS_UNSCHEDULABLE: requeue(p, msg); // rejected or timed out; unreserved
 *   }
 *
 * A plugin whose Permit said WAIT resolves pods with sched_framework_allow/_reject (from any
 * hook, through c->fw), e.g. a gang's Permit allowing every waiting member once minMember are
 * reserved; sched_framework_waiting_each lists the waiting pods. A pod deleted while waiting:
 * sched_framework_waiting_forget (no unreserve; the caller drops its reservation). */

#define SCHED_MAX_PLUGINS 48 /* plugins per framework, the policy's and the built-ins included */
/* Filter ids of added plugins in sched_framework_node_status: SCHED_FILTER_PLUGIN + k for the
 * k-th plugin (sched_framework_plugin_name names it; the reason from its filter_reason). */
#define SCHED_FILTER_PLUGIN 64

/* Adds a plugin (copied; the framework frees its state with free_state from now on, also on
 * error; free_state NULL leaves the state to the caller). 0, or -1 with err (too many
 * plugins, no name, out of memory). Add plugins before the first cycle. */
int sched_framework_add_plugin(sched_framework *fw, const sched_plugin *p, tm_err *err);

/* Profiles, as kube-scheduler's: one process serves several spec.schedulerName values, each
 * with its own policy (the plugin in plugins[0]) and score weights, over the same filters,
 * added plugins, cache and queue. A framework starts with one profile, 0, its own policy; each
 * sched_framework_add_profile adds one (policy copied and owned, freed with the framework or on
 * error) and returns its index, starting from profile 0's score weights. Every cycle runs the
 * profile of its pod (sched_pod.profile, set from sched_keys.profiles); the queue has one order
 * for all, so every profile's policy must order it as the first's does (the same queue_cmp: sjfn
 * and adaptive each their own, the others none, by age): else -1 with err.
 * sched_framework_use_profile makes profile i current outside a cycle, to set its weights
 * (sched_framework_apply_weights). */
#define SCHED_MAX_PROFILES 16
int sched_framework_add_profile(sched_framework *fw, const sched_plugin *policy, tm_err *err);
int sched_framework_use_profile(sched_framework *fw, size_t i, tm_err *err);
size_t sched_framework_profile_count(const sched_framework *fw);
/* Sets the weight of a score: plugin "policy" is the policy's, else an added plugin with
 * preference scoring (NodeAffinity, ...). weight 0..SCHED_SCORE_WEIGHT_MAX (0 turns it off).
 * 0, or -1 with err naming the plugin (unknown, or weight out of range). */
int sched_framework_set_score_weight(sched_framework *fw, const char *plugin, int weight,
                                     tm_err *err);
/* The weighted parts of feasible node `node`'s total score in the last cycle when preferences
 * were scored: names[j] ("policy" or the plugin's) and parts[j], at most max of them; returns
 * how many (0 when the policy's raw score alone decided, or the node was filtered out). */
size_t sched_framework_score_parts(const sched_framework *fw, size_t node, const char **names,
                                   int64_t *parts, size_t max);
/* Whether the secondary scores (pref_secondary) break the policy's exact ties when no
 * preference is scored (config scoreTieBreak). Off by default: the policy's placements, and
 * so the simulator's figures, stay what they were (ties to the name order); on, a plain pod
 * goes, among the nodes the policy rates alike, to the most balanced node or the one holding
 * its images, as kube-scheduler would send it. */
void sched_framework_set_tie_break(sched_framework *fw, bool on);
/* When the policy's raw score decided alone but secondary scores (pref_secondary) had
 * something to say and the tie-break is on, they broke its ties: their weighted scores of feasible
 * node `node` in the last cycle, as score_parts gives parts; 0 otherwise. */
size_t sched_framework_tie_parts(const sched_framework *fw, size_t node, const char **names,
                                 int64_t *parts, size_t max);
/* The weight of that score, -1 when the plugin has none. */
int sched_framework_score_weight(const sched_framework *fw, const char *plugin);
/* The score weights a configuration sets (scoreWeights: {policy: N, NodeAffinity: N, ...}):
 * w[k] for sched_score_weight_keys[k], -1 = the default. */
#define SCHED_SCORE_WEIGHT_KEYS 7
extern const char *const sched_score_weight_keys[SCHED_SCORE_WEIGHT_KEYS + 1]; /* NULL-ended */
typedef struct sched_score_weights {
    int w[SCHED_SCORE_WEIGHT_KEYS];
    int tie_break; /* scoreTieBreak: 1 on, 0 off, -1 the default (off) */
} sched_score_weights;
/* All defaults. */
sched_score_weights sched_score_weights_default(void);
/* Sets the weights that are not -1 on fw (ws NULL: none); a plugin of fw without preference
 * scoring keeps none. 0, or -1 with err naming the key. */
int sched_framework_apply_weights(sched_framework *fw, const sched_score_weights *ws, tm_err *err);
/* The state of the added plugin called name (NULL when none): lets a caller reach its plugin's
 * state after handing it over. */
void *sched_framework_plugin_state(const sched_framework *fw, const char *name);
/* The name of the plugin behind a filter id (built-in or SCHED_FILTER_PLUGIN + k), "" if none. */
const char *sched_framework_filter_name(const sched_framework *fw, sched_filter_id id);
/* The reason text of node `node` in the last cycle (sched_filter_reason for the built-in
 * filters, the plugin's filter_reason for added ones); "" for a feasible node. Returns buf. */
char *sched_framework_node_reason(const sched_framework *fw, size_t node, char *buf, size_t size);

/* PreEnqueue: every plugin's pre_enqueue in order; the first that does not answer OK decides
 * with its status (UNSCHEDULABLE, WAIT or GATED; anything else is taken as UNSCHEDULABLE) and
 * msg says why, prefixed with the plugin's name. OK when the pod may enter the active queue. */
sched_status sched_framework_pre_enqueue(sched_framework *fw, const sched_snapshot *s,
                                         const sched_pod *p, int64_t now_ms, char *msg,
                                         size_t size);

/* PostFilter after a schedule call that found no node: every post_filter in order until one
 * returns OK. OK with *nominated (node index), UNSCHEDULABLE (none could help), ERROR. */
sched_status sched_framework_post_filter(sched_framework *fw, int *nominated, tm_err *err);

/* ---- what-if filtering, for PostFilter (preemption): the Filter plugins re-run on a
 * snapshot the caller changed (victims removed), without touching the failed cycle's outcomes
 * (sched_framework_node_status keeps answering for it) ----
 *
 *   sched_framework_whatif_begin(fw, s, p, &err);   // lends the nominated pods to s
 *   ... remove pods from s ...
 *   sched_framework_whatif_prefilter(fw, &err);      // PreFilter again over s as it is now
 *   id = sched_framework_whatif_filter(fw, node, &detail);
 *   ... put the pods back ...
 *   sched_framework_whatif_end(fw);                  // takes the nominated pods back
 *
 * begin counts the pods nominated with a priority >= p's (p excluded) on their nodes, as every
 * cycle does (nominated.h). whatif_prefilter is needed after any change to s when
 * sched_framework_whatif_node_local says no: it recomputes the cluster-wide filters' state. */
int sched_framework_whatif_begin(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                 int64_t now_ms, tm_err *err);
int sched_framework_whatif_prefilter(sched_framework *fw, tm_err *err);
/* True when, for this pod, only node-local filters run (no PreFilter state to recompute): a
 * change to one node's pods then only changes that node's outcome. Valid after prefilter. */
bool sched_framework_whatif_node_local(const sched_framework *fw);
/* Every Filter plugin on node index `node`, the first rejection deciding. */
sched_filter_id sched_framework_whatif_filter(sched_framework *fw, size_t node, uint32_t *detail);
/* The reason text of a what-if rejection (id, detail from sched_framework_whatif_filter on node
 * index `node`), read between begin and end; "" outside them or for SCHED_FILTER_OK. */
char *sched_framework_whatif_reason(const sched_framework *fw, size_t node, sched_filter_id id,
                                    uint32_t detail, char *buf, size_t size);
void sched_framework_whatif_end(sched_framework *fw);

/* Permit for p reserved on node index `node`: every permit hook in order. Any reject: p is
 * unreserved (sched_framework_unreserve) and UNSCHEDULABLE returned with the reason. Else any
 * wait: p is held as waiting until the earliest timeout (*deadline_ms, may be NULL) and WAIT
 * returned; p and s are borrowed until sched_framework_waiting_resolve returns OK or
 * UNSCHEDULABLE or sched_framework_waiting_forget. Else OK. ERROR with err. */
sched_status sched_framework_permit(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                    int node, int64_t now_ms, int64_t *deadline_ms, char *msg,
                                    size_t size, tm_err *err);
/* A plugin (named) allows a waiting pod: once every plugin that made it wait allowed it, the
 * pod is allowed. 0, or -1 when no pod with that uid waits. */
int sched_framework_allow(sched_framework *fw, const char *uid, const char *plugin);
/* Rejects a waiting pod (the reason in msg). 0, or -1 when no pod with that uid waits. */
int sched_framework_reject(sched_framework *fw, const char *uid, const char *plugin,
                           const char *msg);
/* The outcome of a waiting pod at now_ms: WAIT (still waiting), OK (allowed: bind it), or
 * UNSCHEDULABLE (rejected or timed out: already unreserved; msg says why). OK and
 * UNSCHEDULABLE end the wait. UNSCHEDULABLE with "not waiting" for an unknown uid. */
sched_status sched_framework_waiting_resolve(sched_framework *fw, const char *uid, int64_t now_ms,
                                             char *msg, size_t size);
/* Calls fn for every waiting pod (node index, deadline); fn must not add or resolve pods. */
void sched_framework_waiting_each(const sched_framework *fw,
                                  void (*fn)(void *arg, const sched_pod *p, int node,
                                             int64_t deadline_ms),
                                  void *arg);
size_t sched_framework_waiting_count(const sched_framework *fw);
/* Drops a waiting pod without unreserve (the caller undoes the reservation). 0 or -1. */
int sched_framework_waiting_forget(sched_framework *fw, const char *uid);

/* Unreserve: every plugin's unreserve, latest first, then removes p's record from s (what
 * sched_framework_reserve recorded; nothing when absent) with the forget function. */
void sched_framework_unreserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                               int64_t now_ms);

/* How Unreserve removes a pod's record: by default sched_snapshot_remove_pod(s, uid). The live
 * scheduler, whose cache tracks its assumptions (and must not erase a pod the watch already
 * showed bound), sets a function that calls sched_cache_forget. fn NULL restores the default. */
void sched_framework_set_forget(sched_framework *fw,
                                void (*fn)(void *arg, sched_snapshot *s, const char *uid),
                                void *arg);

/* Binding cycle for p reserved (and permitted) on node index `node`: every pre_bind, then the
 * bind hooks in order until one returns OK (none: bound in the snapshot only). On failure p is
 * unreserved and -1 returned with err naming the plugin. 0 when bound. */
int sched_framework_bind(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                         int64_t now_ms, tm_err *err);

/* ---- timing: kube-scheduler's framework_extension_point_duration_seconds and
 * plugin_execution_duration_seconds ----
 * The framework reads no clock. A caller that wants the durations (the live scheduler, the
 * extender) hands it an observer with a clock; without one (the simulator, the unit tests)
 * each timed place costs one branch on a NULL pointer. With an observer, every run of an
 * extension point is timed (point), and every plugin call is timed (plugin) in the cycles the
 * caller samples (sched_framework_sample, kube's pluginMetricsSamplePercent). In a sampled
 * cycle the Filter plugins' hooks run a second time, timed, on at most 128 nodes spread over
 * the node list, after the column scan has decided every node (a clock read costs more than a
 * node-local filter; scan.c); the policy's batched score is one call; every other hook call
 * is one observation, as kube-scheduler times each call. What-if filtering (PostFilter's
 * preemption) times nothing of its own: it is inside the PostFilter plugin's duration. */
typedef enum {
    SCHED_EP_PRE_FILTER = 0,
    SCHED_EP_FILTER, /* plugin calls only: kube-scheduler times no Filter extension point */
    SCHED_EP_POST_FILTER,
    SCHED_EP_PRE_SCORE,
    SCHED_EP_SCORE,
    SCHED_EP_RESERVE,
    SCHED_EP_UNRESERVE,
    SCHED_EP_PERMIT,
    SCHED_EP_PRE_BIND,
    SCHED_EP_BIND,
    SCHED_EP_COUNT
} sched_ext_point;
/* kube-scheduler's extension_point label values: "PreFilter", "Filter", ... */
extern const char *const sched_ext_point_names[SCHED_EP_COUNT];

/* An outcome as the observer gets it: the status and, for a rejection by a Filter plugin
 * (its PreFilter or Filter), the filter id and detail that tell Unschedulable from
 * UnschedulableAndUnresolvable (sched_filter_resolvable, which the caller can reach and the
 * framework cannot); id SCHED_FILTER_OK otherwise. */
typedef struct sched_outcome {
    sched_status status;
    sched_filter_id id;
    uint32_t detail;
} sched_outcome;

typedef struct sched_observer {
    int64_t (*now_ns)(void *arg); /* a monotonic clock, nanoseconds */
    /* one run of an extension point (all its plugins), ns long */
    void (*point)(void *arg, sched_ext_point ep, sched_outcome o, int64_t ns);
    /* one call of plugins[plugin] (name: its static name) at ep, in a sampled cycle */
    void (*plugin)(void *arg, size_t plugin, const char *name, sched_ext_point ep, sched_outcome o,
                   int64_t ns);
    void *arg;
} sched_observer;

/* Sets the observer (borrowed; NULL turns timing off). */
void sched_framework_set_observer(sched_framework *fw, const sched_observer *obs);
/* Whether the plugin calls of the cycles from now on are timed, until called again: the caller
 * decides per cycle (per pod), before sched_framework_schedule; the Reserve, Permit and binding
 * calls that follow for the pod are timed alike. No effect without an observer. */
void sched_framework_sample(sched_framework *fw, bool on);

#endif
