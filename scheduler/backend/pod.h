/* pod.h: the pod being scheduled (or explained) as the scheduler keeps it: its requests, the
 * constraints the filters read, its task identity; construction and freeing; recording it on a
 * node of the snapshot (what Reserve does); the task it is for the policies; the pod-level
 * wrappers of match.h's node affinity and taint checks. Below the framework: the queue, the
 * cache and the pod transform (podspec.h) use it without knowing the framework. */
#ifndef TAREMA_SCHED_POD_H
#define TAREMA_SCHED_POD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/match.h"
#include "scheduler/backend/owner_selectors.h"
#include "scheduler/backend/snapshot.h"

/* One topologySpreadConstraint: whenUnsatisfiable DoNotSchedule ones (the filter) in
 * sched_pod.spread, ScheduleAnyway ones (PodTopologySpread's score) in sched_pod.soft_spread.
 * matchLabelKeys are already merged into selector. */
typedef struct sched_spread {
    int32_t max_skew;
    char *topology_key;
    tm_selector *selector;    /* NULL: labelSelector absent, matches no pod */
    int32_t min_domains;      /* 1 when absent */
    bool honor_node_affinity; /* nodeAffinityPolicy: Honor (the default) */
    bool honor_node_taints;   /* nodeTaintsPolicy: Honor (default Ignore) */
} sched_spread;

/* The pod to schedule (or being explained). Built by sched_pod_from_json (podspec.h) or by hand
 * with sched_pod_new; freed with sched_pod_free. Resources use the snapshot's slots. */
typedef struct sched_pod {
    char *ns, *name, *uid;
    char *node_name;          /* spec.nodeName, NULL when not bound */
    sched_resources requests; /* effective requests (containers, init containers, overhead),
                                 v[SCHED_RES_PODS] = 1 */
    /* its non-zero requests of resources the snapshot keeps sparsely (snapshot.h: past the
     * fixed slots), sorted by id; NULL when none (nearly every pod). Freed by sched_pod_free. */
    sched_xres *xreq;
    uint32_t n_xreq;
    sched_toleration *tolerations;
    size_t n_tolerations;
    sched_label *node_selector; /* spec.nodeSelector: every pair must match */
    size_t n_node_selector;
    sched_sel_term *affinity; /* required node affinity terms, any one must match */
    size_t n_affinity;
    bool has_affinity; /* required node affinity present (then n_affinity 0 matches nothing) */
    /* nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: term k (its preference)
     * adds node_pref_weight[k] (1..100) to a node it matches; terms of weight 0 dropped */
    sched_sel_term *node_prefs;
    int32_t *node_pref_weight;
    size_t n_node_prefs;
    char *workflow; /* task identity, "" when unknown */
    char *process;
    int labels[SCHED_NFEAT]; /* explicit tarema.io/{cpu,mem,io} annotations, 0 = none */
    int32_t priority;
    int64_t generation; /* metadata.generation (0 unknown): the observedGeneration of the
                         * PodScheduled condition we write, as kube-scheduler 1.35 writes it */
    bool preempt_never; /* spec.preemptionPolicy: Never (the pod waits, it never preempts) */
    /* Which profile schedules it: the index of its spec.schedulerName in sched_keys.profiles,
     * 0 when there is one profile or its name is none of them (framework.h, profiles) */
    uint8_t profile;
    int64_t created_ms; /* metadata.creationTimestamp, ms since the epoch; 0 unknown */
    /* What the inter-pod filters read (all empty for a plain pod). Freed by sched_pod_free. */
    json_t *pod_labels;          /* metadata.labels (owned reference), NULL = no labels */
    sched_host_port *host_ports; /* containers' and sidecar init containers' hostPorts */
    size_t n_host_ports;
    sched_pod_term *pod_affinity; /* podAffinity.requiredDuringScheduling... terms */
    size_t n_pod_affinity;
    sched_pod_term *pod_anti_affinity; /* podAntiAffinity.requiredDuringScheduling... terms */
    size_t n_pod_anti_affinity;
    sched_pod_prefs *pod_prefs; /* preferred pod (anti-)affinity terms, NULL when none */
    sched_spread *spread;       /* DoNotSchedule topology spread constraints */
    size_t n_spread;
    sched_spread *soft_spread; /* ScheduleAnyway ones (scoring only) */
    size_t n_soft_spread;
    /* The image of every init and regular container, normalised as kube-scheduler's
     * ImageLocality does (":latest" added when there is no tag nor digest); "" for a container
     * without one. n_images is the number of containers, which ImageLocality's scale needs. */
    char **images;
    size_t n_images;
    bool terminating; /* metadata.deletionTimestamp is set */
    /* PersistentVolumeClaims of spec.volumes (generic ephemeral volumes as <pod>-<volume>), in
     * the pod's namespace; the VolumeBinding filter reads them. */
    char **claims;
    size_t n_claims;
    /* bit i: claims[i] is a generic ephemeral volume's (the pod must own it; volumes.h) */
    uint64_t ephemeral_claims;
    /* spec.resourceClaims (DRA): tarema allocates none, so DynamicResources fits no node */
    size_t n_resource_claims;
    /* How long the pod is expected to run, for reservations' backfill (resv_plan.h): annotation
     * tarema.io/expected-duration in ms and spec.activeDeadlineSeconds; 0 = not given. */
    int64_t expected_duration_ms;
    int64_t active_deadline_s;
    /* spec.schedulingGates' names joined by ", ", NULL when the pod has none: the
     * SchedulingGates plugin keeps such a pod out of the queue (scheduling_gates.h). */
    char *scheduling_gates;
    /* The pod's controller (metadata.ownerReferences[] with controller: true) when it is a
     * ReplicationController, ReplicaSet or StatefulSet (SCHED_OWNER_NONE otherwise, and for a
     * pod built by hand): PodTopologySpread's default constraints select the pods it selects
     * (owner_selectors.h). controller_name is NULL without one. */
    sched_owner_kind controller_kind;
    char *controller_name;
} sched_pod;

sched_pod *sched_pod_new(const char *ns, const char *name, const char *uid); /* NULL on OOM */
void sched_pod_free(sched_pod *p);

/* Records p on node_name in s (sched_snapshot_add_pod_meta, keyed by p->uid) with its requests
 * and the metadata the inter-pod plugins read of placed pods (sched_pod_meta: namespace,
 * labels, host ports, pod (anti-)affinity terms), the same record sched_snapshot_add_pod_json
 * makes of the pod's JSON. 0, or -1 with err (the requests are recorded even when copying the
 * metadata runs out of memory). */
int sched_pod_record(sched_snapshot *s, const sched_pod *p, const char *node_name, tm_err *err);
/* The metadata sched_pod_record records for p (caller owns it), NULL when out of memory. */
sched_pod_meta *sched_pod_meta_of(const sched_pod *p);

/* Queueing hint for a pod placed on a node (bound, whoever placed it; m its metadata): whether
 * it may let p, unschedulable, fit now, as kube-scheduler's InterPodAffinity and
 * PodTopologySpread hints answer a Pod add: m matches every one of p's required affinity terms, or
 * is in p's namespace and matches one of its spread constraints. (A placed pod never frees a
 * port nor lifts an anti-affinity: deletes and label changes count as cluster changes.) */
bool sched_pod_helped_by(const sched_pod *p, const sched_pod_meta *m);

/* Queueing hint for a taint a node gained: whether p has a DoNotSchedule spread constraint
 * with nodeTaintsPolicy Honor (the node's domain may stop counting, which can lift the
 * minimum), its own or, with no constraints of its own, one of the configured defaults
 * (defaults_honour: PodTopologySpread gives them to p when a Service or controller selects it),
 * as kube-scheduler's PodTopologySpread hint answers a node's taint change. */
bool sched_pod_spread_honours_taints(const sched_pod *p, bool defaults_honour);

/* What a task is for the policies: the pod's explicit labels if any, else the task table's,
 * else unlabeled. labeled is true when at least one feature label is known; features without a
 * label count as distance 0 in tarema's formula. */
typedef struct sched_task_info {
    int labels[SCHED_NFEAT];
    bool labeled;
    int64_t expected_runtime_ms; /* -1 unknown */
} sched_task_info;
void sched_task_resolve(const sched_snapshot *s, const sched_pod *p, sched_task_info *out);

/* Pieces of the always-on filters the inter-pod filters reuse (nodeAffinityPolicy and
 * nodeTaintsPolicy of topology spread): nodeSelector + required node affinity match; no
 * untolerated NoSchedule/NoExecute taint. */
bool sched_pod_node_affinity_matches(const sched_pod *p, const sched_node *n);
bool sched_pod_tolerates_node_taints(const sched_pod *p, const sched_node *n);

#endif
