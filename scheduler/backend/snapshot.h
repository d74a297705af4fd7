/* snapshot.h: the in-memory cluster snapshot every scheduling policy reads.
 *
 * One snapshot holds nodes (allocatable, labels, taints, readiness, tarema labels and node
 * group), the requests of every pod already placed on a node (ours and others', plus pods we
 * assumed but have not bound yet), the node groups derived from the profiler's labels, and the
 * task-profile table (workflow + process -> task labels, expected runtime) filled from the
 * labeler's TaskProfile objects (live cache) or from the simulator's own history.
 *
 * The snapshot is plain data with no locks and no I/O: the live cache mutates it under its own
 * lock, the simulator owns one outright. Nodes live in a dense array indexed 0..n-1; an index is
 * stable until a node is removed (removal moves the last node into the hole), so keep names, not
 * indices, across mutations.
 *
 * Resources are integers in fixed slots (sched_resources.v): cpu in millicores, memory and
 * ephemeral-storage in bytes, pods as a count, then extended resources ("nvidia.com/gpu",
 * "hugepages-2Mi", ...) in whole units, each given a slot the first time a node or pod names it
 * (sched_snapshot_resource_slot). Slots are per snapshot: build nodes and pods for a snapshot
 * with that snapshot.
 *
 * Tarema labels: nodes carry tarema.io/cpu, tarema.io/mem, tarema.io/io (1..n, 1 = slowest) and
 * tarema.io/group. Nodes with labels but no group label are grouped by their label triple.
 * Nodes without the three labels are "unprofiled": they form one pseudo-group (id "", labels
 * unknown) that unlabeled tasks use like any other node and labeled tasks use only when no
 * profiled node fits (a node we know nothing about is a worse match than any known group, but
 * leaving a pod pending while some node fits is worse still).
 *
 * Pod metadata: a pod recorded with sched_snapshot_add_pod_meta (or, from JSON,
 * sched_snapshot_add_pod_json in podspec.h, which the live cache uses for every bound pod the
 * informer sees, whoever placed it) also carries what the inter-pod plugins read of pods
 * already placed: namespace, labels, host ports, required pod anti-affinity and affinity terms
 * and preferred ones with their weights, and whether it is terminating. It is kept compactly
 * (sched_pod_meta below: the labels in one allocation, no JSON). Pods recorded with plain
 * sched_snapshot_add_pod have no metadata: they use capacity but no selector ever matches them
 * and they hold no ports (the simulator's pods, which use none of these features). */
#ifndef TAREMA_SCHED_SNAPSHOT_H
#define TAREMA_SCHED_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/error.h"
#include "lib/selector.h"

/* Fixed resource slots; extended resources take slots SCHED_RES_FIRST_EXT.. on demand, up to
 * SCHED_RES_MAX - SCHED_RES_FIRST_EXT distinct names per snapshot (60: far more device-plugin
 * resources than a real cluster advertises). Names past those are kept sparsely (sched_xres): a
 * node's allocatable of them in sched_node.xalloc, what its pods request in sched_node.xused,
 * a pod's requests in sched_pod.xreq. NodeResourcesFit checks them as it checks the slots; the
 * column scan, backfill's and reservations' capacity plans and nominated capacity look at the
 * fixed slots only (docs/operations.md, "Resources"). */
enum {
    SCHED_RES_CPU = 0,       /* millicores */
    SCHED_RES_MEMORY = 1,    /* bytes */
    SCHED_RES_EPHEMERAL = 2, /* bytes */
    SCHED_RES_PODS = 3,      /* count; a pod requests 1 */
    SCHED_RES_FIRST_EXT = 4,
    SCHED_RES_MAX = 64
};

typedef struct sched_resources {
    int64_t v[SCHED_RES_MAX];
} sched_resources;

/* One amount of a resource kept sparsely (past the fixed slots): the name's id in the snapshot
 * (sched_snapshot_xres_id) and the amount. Lists of them are sorted by id. */
typedef struct sched_xres {
    uint32_t id;
    int64_t v;
} sched_xres;

/* The amount of resource id in a sorted list (0 when absent), and its index (-1 when absent). */
int64_t sched_xres_get(const sched_xres *a, uint32_t n, uint32_t id);
int sched_xres_index(const sched_xres *a, uint32_t n, uint32_t id);
/* Sorts a list by id, adding up the amounts of a repeated id and dropping zero amounts; returns
 * the new length. */
uint32_t sched_xres_normalize(sched_xres *a, uint32_t n);

/* Features of the tarema label vector, in this order. A label value 0 means unknown. */
enum { SCHED_FEAT_CPU = 0, SCHED_FEAT_MEM = 1, SCHED_FEAT_IO = 2, SCHED_NFEAT = 3 };

typedef enum {
    SCHED_EFFECT_NONE = 0, /* only in tolerations: matches every effect */
    SCHED_EFFECT_NO_SCHEDULE,
    SCHED_EFFECT_PREFER_NO_SCHEDULE,
    SCHED_EFFECT_NO_EXECUTE
} sched_effect;

typedef struct sched_label {
    char *key;
    char *value;
} sched_label;

typedef struct sched_taint {
    char *key;
    char *value; /* "" when absent */
    sched_effect effect;
} sched_taint;

/* One name of an image the node holds (status.images[].names: an image has several, tag and
 * digest), with the image's size; ImageLocality looks the pod's images up by name. */
typedef struct sched_node_image {
    const char *name; /* into the node's image_block */
    int64_t size;     /* sizeBytes */
} sched_node_image;

/* One node. Built by sched_node_new / sched_node_from_json (podspec.h), then handed to the
 * snapshot, which owns it from then on. Fields are public so the simulator can fill them. */
typedef struct sched_node {
    char *name;
    sched_label *labels; /* kept sorted by key (sched_node_set_label does it) for bsearch */
    size_t n_labels;
    sched_taint *taints;
    size_t n_taints;
    bool ready;         /* condition Ready=True */
    bool unschedulable; /* spec.unschedulable */
    sched_resources allocatable;
    /* allocatable of the resources past the fixed slots, sorted by id (sched_xres_normalize);
     * freed by sched_node_free */
    sched_xres *xalloc;
    uint32_t n_xalloc;
    /* status.images, one entry per name, sorted by name (sched_node_set_images), the names in
     * one block: a node of 50 images costs two allocations, not a hundred. */
    sched_node_image *images;
    size_t n_images;
    char *image_block;
    /* Managed by the snapshot, read-only for everyone else: */
    sched_resources requested; /* sum of the requests of the pods on this node (incl. assumed) */
    /* the same for xalloc: xused[k] is what the pods request of xalloc[k].id (a pod's request of
     * a resource the node does not advertise is not kept: no pod asking for it fits there) */
    int64_t *xused;
    int labels_t[SCHED_NFEAT]; /* tarema.io/{cpu,mem,io}, 0 when absent or not a positive int */
    int group;                 /* index into the snapshot's groups (sched_snapshot_group) */
    uint32_t name_rank;        /* position in name order, for deterministic ties */
} sched_node;

/* A node group: nodes sharing tarema.io/group (or the label triple). */
typedef struct sched_group {
    const char *id;          /* "" for the unprofiled pseudo-group */
    int labels[SCHED_NFEAT]; /* the labels of its nodes (0 = unknown) */
    int power;               /* sum of labels: "most powerful" = largest */
    bool unprofiled;
    size_t n_nodes;
} sched_group;

/* Per node group runtime statistics of one task (the adaptive policy, policy.h). */
#define SCHED_TASK_MAX_GROUPS 8
#define SCHED_GROUP_ID_MAX    16
typedef struct sched_group_runtime {
    char group[SCHED_GROUP_ID_MAX]; /* tarema.io/group value of the nodes it ran on */
    int64_t runtime_ms;             /* mean realtime of its runs there */
    int32_t runs;                   /* runs there; 0 = nothing known */
} sched_group_runtime;

/* What the labeler knows about one task (process of a workflow). A zeroed tail (all fields
 * after expected_runtime_ms 0) means "no per-group history", which is what every producer that
 * predates them gives. */
typedef struct sched_task_profile {
    int labels[SCHED_NFEAT];     /* 1..n; 0 = that feature is unlabeled */
    int64_t expected_runtime_ms; /* mean realtime of past runs; -1 = unknown */
    /* runtime per node group (TaskProfile status, filled by the labeler from the node group
     * recorded per run; the simulator fills it from its history) */
    int n_group_rt;
    sched_group_runtime group_rt[SCHED_TASK_MAX_GROUPS];
    /* the workflow's structure from history: expected time from this task's end to the end of
     * its workflow run along the longest path of successors; 0 = unknown */
    int64_t tail_ms;
    /* the cores its past runs really used: mean measured %cpu x 10 (millicores; the labeler's
     * cpu feature), which may exceed the request (a task requesting 2 cpus using 6.8); 0 =
     * unknown. The adaptive policy sums it over a node's running tasks to predict contention. */
    int64_t cpu_use_milli;
} sched_task_profile;

/* A host port a container binds on its node (containers[].ports[].hostPort > 0). */
typedef enum { SCHED_PROTO_TCP = 0, SCHED_PROTO_UDP, SCHED_PROTO_SCTP } sched_proto;

typedef struct sched_host_port {
    char *ip; /* hostIP; "0.0.0.0" (every address) when empty */
    int32_t port;
    sched_proto proto; /* TCP when empty */
} sched_host_port;

/* A pod's labels, compactly: the pairs sorted by key with their strings in one allocation
 * (free with free()). Built from a metadata.labels object; NULL stands for no labels. */
typedef struct sched_labels sched_labels;
/* metadata.labels (NULL, null or {} give *out NULL) -> *out. 0, or -1 when a value is not a
 * string (*out NULL) or out of memory (*out NULL, and errno ENOMEM). */
int sched_labels_from_json(const json_t *labels, sched_labels **out);
sched_labels *sched_labels_copy(const sched_labels *l); /* NULL for NULL or when out of memory */
const char *sched_labels_get(const sched_labels *l, const char *key); /* NULL when absent */
size_t sched_labels_count(const sched_labels *l);
/* The i-th pair in key order (i < count). */
void sched_labels_at(const sched_labels *l, size_t i, const char **key, const char **value);
bool sched_labels_equal(const sched_labels *a, const sched_labels *b);
/* Whether the labels satisfy a selector (tm_selector_matches on this form). */
bool sched_labels_match(const tm_selector *sel, const sched_labels *l);

/* One required pod (anti-)affinity term, with its namespaces resolved as kube-scheduler does:
 * no `namespaces` and no `namespaceSelector` -> the term owner's own namespace; an empty
 * namespaceSelector ({}) -> every namespace. A non-empty namespaceSelector needs namespace
 * labels the snapshot does not have: ns_selector is set and matching is conservative (see
 * sched_pod_term_matches). */
typedef struct sched_pod_term {
    tm_selector *selector; /* NULL: labelSelector absent, the term matches no pod */
    char **namespaces;     /* the term's namespaces (after defaulting) */
    size_t n_namespaces;
    bool all_namespaces; /* namespaceSelector {} */
    bool ns_selector;    /* a non-empty namespaceSelector (not evaluated) */
    char *topology_key;
} sched_pod_term;

/* Whether a pod (namespace, labels JSON object or NULL) matches a term. A non-empty
 * namespaceSelector counts as matching every namespace when assume_any_ns is true (what an
 * anti-affinity check must assume not to accept a forbidden node) and as matching none of the
 * namespaces beyond the explicit list when false (what an affinity check must assume). */
bool sched_pod_term_matches(const sched_pod_term *t, const char *ns, const sched_labels *labels,
                            bool assume_any_ns);
/* The same for labels as a JSON object (the pod being scheduled, sched_pod.pod_labels). */
bool sched_pod_term_matches_json(const sched_pod_term *t, const char *ns, const json_t *labels,
                                 bool assume_any_ns);
/* Deep copy of n terms into *out (caller frees with sched_pod_terms_free); 0, -1 on OOM. */
int sched_pod_terms_copy(const sched_pod_term *src, size_t n, sched_pod_term **out);
void sched_pod_terms_free(sched_pod_term *t, size_t n);

/* A pod's preferred (weighted) affinity and anti-affinity terms:
 * preferredDuringSchedulingIgnoredDuringExecution[i] = {weight, podAffinityTerm}, the terms
 * resolved as above. Built by podspec.c; freed with sched_pod_prefs_free. */
typedef struct sched_pod_prefs {
    sched_pod_term *aff; /* podAffinity */
    int32_t *aff_weight; /* 1..100, one per term */
    size_t n_aff;
    sched_pod_term *anti; /* podAntiAffinity */
    int32_t *anti_weight;
    size_t n_anti;
} sched_pod_prefs;
/* Deep copy (NULL for NULL or out of memory: check src). */
sched_pod_prefs *sched_pod_prefs_copy(const sched_pod_prefs *src);
void sched_pod_prefs_free(sched_pod_prefs *p);
/* Deep copy of host ports; 0, -1 on OOM. */
int sched_host_ports_copy(const sched_host_port *src, size_t n, sched_host_port **out);
void sched_host_ports_free(sched_host_port *p, size_t n);

/* What the inter-pod plugins know of a placed pod (the same whether this process placed it or
 * the informer showed it bound). Built with sched_pod_meta_new and filled by the caller
 * (podspec.c for pod JSON, pod.c from a sched_pod: the same parsers), then handed to
 * sched_snapshot_add_pod_meta, which owns it from then on. Pods without pod (anti-)affinity
 * or host ports (nearly all) hold the struct, their namespace and one label block. */
typedef struct sched_pod_meta {
    char *ns;
    sched_labels *labels; /* metadata.labels, NULL = no labels */
    sched_host_port *ports;
    sched_pod_term *anti;  /* required podAntiAffinity terms */
    sched_pod_term *aff;   /* required podAffinity terms (read by scoring, not filtering) */
    sched_pod_prefs *pref; /* preferred terms, NULL when none */
    uint32_t n_ports, n_anti, n_aff;
    bool terminating; /* metadata.deletionTimestamp set: PodTopologySpread skips it, and
                       * preemption neither evicts it again nor preempts for a pod whose
                       * nominated node holds a lower-priority one (sched_snapshot_set_pod_
                       * terminating marks a victim as soon as its eviction is sent) */
    /* What preemption reads of a placed pod (plugins/preemption/preemption.h): a pod recorded
     * without metadata is never a victim (nothing says who it is or how important). */
    char *name;         /* metadata.name, "" when unknown */
    int32_t priority;   /* spec.priority (0 when absent, as the API server defaults it) */
    int64_t generation; /* metadata.generation (0 unknown): a victim's DisruptionTarget
                         * condition carries it as observedGeneration, as kube-scheduler's */
    int64_t start_ms;   /* status.startTime, ms since the epoch; 0 = not started (an assumed
                         * pod): preemption counts it as started now, as kube-scheduler does */
} sched_pod_meta;

sched_pod_meta *sched_pod_meta_new(const char *ns); /* NULL on OOM; name "" */
/* Sets m->name (copied). 0, or -1 on OOM (m->name unchanged). */
int sched_pod_meta_set_name(sched_pod_meta *m, const char *name);
void sched_pod_meta_free(sched_pod_meta *m);

typedef struct sched_snapshot sched_snapshot;

/* An empty snapshot. Caller frees with sched_snapshot_free. NULL only when out of memory. */
sched_snapshot *sched_snapshot_new(void);
void sched_snapshot_free(sched_snapshot *s);

/* Resource slot for a resource name: "cpu", "memory", "ephemeral-storage", "pods" have fixed
 * slots; any other name gets the next free slot. Returns SCHED_RES_NO_SLOT when all slots are
 * used (the name is then one kept sparsely: sched_snapshot_xres_id), -1 with err on OOM. */
enum { SCHED_RES_NO_SLOT = -2 };
int sched_snapshot_resource_slot(sched_snapshot *s, const char *name, tm_err *err);
/* The slot of a name, -1 when it has none (nothing is given one: a read-only lookup). */
int sched_snapshot_resource_find(const sched_snapshot *s, const char *name);
/* The sparse id of a name refused a slot (given on first use); -1 with err on OOM. */
int sched_snapshot_xres_id(sched_snapshot *s, const char *name, tm_err *err);
/* The id of a sparse name, -1 when it has none. */
int sched_snapshot_xres_find(const sched_snapshot *s, const char *name);
const char *sched_snapshot_xres_name(const sched_snapshot *s, uint32_t id); /* NULL: no such id */
/* The next sparse name not yet returned by this call, NULL when none: the live loop says once
 * per name that it is kept sparsely, not once per event. */
const char *sched_snapshot_xres_next(sched_snapshot *s);
/* Name of a slot, NULL when unused. Borrowed, valid as long as the snapshot. */
const char *sched_snapshot_resource_name(const sched_snapshot *s, int slot);
int sched_snapshot_resource_count(const sched_snapshot *s); /* slots in use */

/* Adds a node or replaces the node of the same name, keeping its pods' requests. Takes
 * ownership of node (freed by the snapshot, also on error). Returns 0, or -1 with err. */
int sched_snapshot_put_node(sched_snapshot *s, sched_node *node, tm_err *err);
/* Removes a node; the pods recorded on it stay recorded and count again if it comes back.
 * Returns 0, or -1 when there is no such node. */
int sched_snapshot_remove_node(sched_snapshot *s, const char *name);

size_t sched_snapshot_node_count(const sched_snapshot *s);
/* Node by index (0..count-1) or by name; NULL when absent. Borrowed. */
const sched_node *sched_snapshot_node(const sched_snapshot *s, size_t i);
const sched_node *sched_snapshot_node_by_name(const sched_snapshot *s, const char *name);
int sched_snapshot_node_index(const sched_snapshot *s, const char *name); /* -1 when absent */

/* Records that a pod with these requests occupies node_name (a bound pod, another scheduler's
 * pod, or one we assumed in Reserve). Re-adding the same uid moves/updates it. The node need not
 * exist yet: its pods count as soon as it is added. Returns 0, or -1 with err. */
int sched_snapshot_add_pod(sched_snapshot *s, const char *uid, const char *node_name,
                           const sched_resources *requests, tm_err *err);
/* sched_snapshot_add_pod plus the pod's metadata (ownership of meta passes to the snapshot, also
 * on error; NULL clears any metadata the pod had). Plain sched_snapshot_add_pod on a pod that
 * has metadata keeps the metadata (and its sparse requests, see below) and updates only node
 * and the fixed-slot requests. */
int sched_snapshot_add_pod_meta(sched_snapshot *s, const char *uid, const char *node_name,
                                const sched_resources *requests, sched_pod_meta *meta, tm_err *err);
/* sched_snapshot_add_pod_meta with the pod's requests of resources kept sparsely (x[0..nx-1],
 * sorted by id, copied). */
int sched_snapshot_add_pod_x(sched_snapshot *s, const char *uid, const char *node_name,
                             const sched_resources *requests, const sched_xres *x, uint32_t nx,
                             sched_pod_meta *meta, tm_err *err);
/* Metadata of a recorded pod, NULL when unknown or recorded without. Borrowed. */
const sched_pod_meta *sched_snapshot_pod_meta(const sched_snapshot *s, const char *uid);

/* Sets of recorded pods with metadata, for the inter-pod plugins' per-cycle precomputation:
 * every pod with metadata, those with required anti-affinity terms, those with host ports,
 * those with preferred pod (anti-)affinity terms (InterPodAffinity scoring). Checking a set's
 * count is O(1), so a cluster without such pods costs nothing. */
typedef enum {
    SCHED_PODSET_META = 0,
    SCHED_PODSET_ANTI,
    SCHED_PODSET_PORTS,
    SCHED_PODSET_PREF,
    SCHED_PODSET_COUNT
} sched_podset;
size_t sched_snapshot_podset_count(const sched_snapshot *s, sched_podset set);
/* The i-th pod of a set (0..count-1, in no particular order; valid until the next pod change):
 * its metadata (borrowed), and in *uid and *node (either may be NULL) its uid and the index of
 * its node, -1 when that node is not in the snapshot. */
const sched_pod_meta *sched_snapshot_podset_pod(const sched_snapshot *s, sched_podset set, size_t i,
                                                const char **uid, int *node);

/* Forgets a pod (deleted, terminated, or an assumption undone). Returns 0, -1 when unknown. */
int sched_snapshot_remove_pod(sched_snapshot *s, const char *uid);
/* Forgets a pod and hands its record back, for a what-if that puts it back after (preemption
 * removes its candidate victims, then re-adds them with sched_snapshot_add_pod_meta: the node's
 * requested amounts come back exactly; only the order of the pod sets may change). *requests
 * gets its requests, *meta (may be NULL: freed) its metadata, owned by the caller, NULL when it
 * had none. 0, or -1 when unknown. */
int sched_snapshot_take_pod(sched_snapshot *s, const char *uid, sched_resources *requests,
                            sched_pod_meta **meta);
/* Hides a recorded pod for a what-if (preemption removing its candidate victims) or shows it
 * again: hidden, it counts on no node and is in no pod set, as if removed, but keeps its record
 * (metadata, node, requests), so hiding and showing allocate nothing and restore the node's
 * requested amounts exactly. Re-recording or removing a hidden pod shows it first. Nodes must
 * not be put or removed while pods are hidden. 0, or -1 when unknown. */
int sched_snapshot_hide_pod(sched_snapshot *s, const char *uid, bool hidden);
/* The requests a pod is recorded with. 0, or -1 when unknown. */
int sched_snapshot_pod_requests(const sched_snapshot *s, const char *uid, sched_resources *out);
/* Marks a recorded pod as terminating (its deletion was requested: a preemption victim whose
 * eviction was sent, before the watch shows its deletionTimestamp), so that the next cycles do
 * not choose it as a victim again. 0, or -1 when unknown or recorded without metadata. */
int sched_snapshot_set_pod_terminating(sched_snapshot *s, const char *uid);
/* Sets a recorded pod's start (status.startTime, ms; sched_pod_meta.start_ms), for a caller
 * that knows it started after it was recorded (the simulator). 0, or -1 when unknown or
 * recorded without metadata. */
int sched_snapshot_set_pod_start(sched_snapshot *s, const char *uid, int64_t start_ms);
/* The pods counted on node index `node` (placed or assumed there; not hidden), for what needs
 * one node's pods (preemption's victims) at the cost of that node's pods: how many, and the
 * i-th (no order; valid until the next pod or node change): its metadata (NULL when recorded
 * without) and *uid (may be NULL). */
size_t sched_snapshot_node_pod_count(const sched_snapshot *s, size_t node);
const sched_pod_meta *sched_snapshot_node_pod(const sched_snapshot *s, size_t node, size_t i,
                                              const char **uid);
/* Node name a pod is recorded on, NULL when unknown. Borrowed until the pod is removed. */
const char *sched_snapshot_pod_node(const sched_snapshot *s, const char *uid);
size_t sched_snapshot_pod_count(const sched_snapshot *s);

/* Task-profile table keyed by (workflow, process) in label-value form (lib/labelvalue.h: the pod
 * carries Nextflow's sanitised names, the TaskProfile the traced ones); workflow may be ""
 * for tasks whose workflow is unknown. set replaces; remove returns -1 when absent; get returns
 * NULL when absent. */
int sched_snapshot_set_task(sched_snapshot *s, const char *workflow, const char *process,
                            const sched_task_profile *tp, tm_err *err);
int sched_snapshot_remove_task(sched_snapshot *s, const char *workflow, const char *process);
const sched_task_profile *sched_snapshot_task(const sched_snapshot *s, const char *workflow,
                                              const char *process);

/* The claim and volume tables of the VolumeBinding filter (volumes.h), NULL (the default) when
 * nobody keeps them current: the filter then does not run. The snapshot borrows v: whoever
 * keeps the tables current owns and frees them (the live cache, sched_cache_free), so the
 * snapshot, the bottom of the scheduler, knows nothing of volumes but their address. */
typedef struct sched_volumes sched_volumes;
void sched_snapshot_set_volumes(sched_snapshot *s, sched_volumes *v);
sched_volumes *sched_snapshot_volumes(const sched_snapshot *s);

/* Preemption's tables, borrowed the same way (NULL, the default: none): the pods nominated to
 * nodes (nominated.h: the framework counts them in Filter) and the PodDisruptionBudgets
 * (pdb.h). Their owners keep them current and free them after the snapshot stops using them. */
typedef struct sched_nominated sched_nominated;
typedef struct sched_pdbs sched_pdbs;
void sched_snapshot_set_nominated(sched_snapshot *s, sched_nominated *t);
sched_nominated *sched_snapshot_nominated(const sched_snapshot *s);
void sched_snapshot_set_pdbs(sched_snapshot *s, sched_pdbs *t);
sched_pdbs *sched_snapshot_pdbs(const sched_snapshot *s);
/* The selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets
 * (owner_selectors.h), lent the same way (NULL, the default: none, so PodTopologySpread applies
 * no default constraints). */
typedef struct sched_owner_sels sched_owner_sels;
void sched_snapshot_set_owner_selectors(sched_snapshot *s, sched_owner_sels *t);
sched_owner_sels *sched_snapshot_owner_selectors(const sched_snapshot *s);

/* Node groups, rebuilt lazily after node changes; call sched_snapshot_refresh (cheap when
 * nothing changed) before reading groups, group indices or name ranks. The policy functions
 * call it themselves. */
void sched_snapshot_refresh(sched_snapshot *s);
size_t sched_snapshot_group_count(const sched_snapshot *s);
const sched_group *sched_snapshot_group(const sched_snapshot *s, size_t i);
/* Node indices in name order (after refresh). Borrowed, count = node count. */
const uint32_t *sched_snapshot_by_name(const sched_snapshot *s);

/* Column view of the per-node fields every scheduling cycle scans, indexed like the nodes
 * (0..n-1), so that the framework's per-node loop reads contiguous arrays instead of chasing
 * one sched_node pointer per node. The snapshot keeps the columns equal to what the nodes say
 * on every change (put/remove node, add/remove pod); group and name_rank, like the nodes' own
 * fields, are current after sched_snapshot_refresh. Read-only; the pointers are valid until
 * the next node or pod change. */
enum {
    SCHED_NODE_NOT_READY = 1u << 0,     /* !ready */
    SCHED_NODE_UNSCHEDULABLE = 1u << 1, /* spec.unschedulable */
    SCHED_NODE_HARD_TAINT = 1u << 2     /* a taint that is not PreferNoSchedule (NoSchedule,
                                           NoExecute: what the taint filter checks) */
};
typedef struct sched_node_cols {
    size_t n;
    size_t n_flagged;          /* nodes with any flag set */
    const uint8_t *flags;      /* SCHED_NODE_* */
    const double *load;        /* sched_node_load of the node, bit for bit */
    const int32_t *group;      /* sched_node.group */
    const uint32_t *name_rank; /* sched_node.name_rank */
    /* index of the node's first such taint (with SCHED_NODE_HARD_TAINT) */
    const uint32_t *hard_taint;
    /* allocatable - requested, per resource slot in use (sched_snapshot_resource_count; the
     * columns of the others are not kept: every node has 0 of them) */
    const int64_t *free[SCHED_RES_MAX];
    /* nodes with at least one PreferNoSchedule taint: TaintToleration's score has nothing to
     * say when 0, known without looking at any node */
    size_t n_prefer_taint;
} sched_node_cols;

/* How many nodes of the snapshot hold an image of this name (status.images[].names), and how
 * many distinct image names the nodes report at all (0: ImageLocality has nothing to score).
 * Kept current on every node put/remove (images.c). */
size_t sched_snapshot_image_nodes(const sched_snapshot *s, const char *name);
size_t sched_snapshot_image_names(const sched_snapshot *s);
void sched_snapshot_node_cols(const sched_snapshot *s, sched_node_cols *out);

/* Requested share of a node: the larger of its cpu and memory shares (requested /
 * allocatable, 0..1, above 1 when overcommitted, 1 when allocatable is 0), the "load" that fair,
 * fill-nodes and tarema's within-group choice compare. The dominant share is used, not the mean,
 * so a node whose memory is full counts as full however idle its cpu is. */
double sched_node_load(const sched_node *n);

/* Node construction for callers that do not start from JSON (simulator, tests). The node is
 * owned by the caller until handed to sched_snapshot_put_node. All return -1/NULL only when out
 * of memory. set_label replaces an existing key. */
sched_node *sched_node_new(const char *name);
int sched_node_set_label(sched_node *n, const char *key, const char *value);
const char *sched_node_label(const sched_node *n, const char *key); /* NULL when absent */
int sched_node_add_taint(sched_node *n, const char *key, const char *value, sched_effect effect);
/* Replaces the node's images with names[0..k-1] of sizes[0..k-1] (copied, sorted, a repeated
 * name kept once with its first size). -1 only when out of memory (the node keeps none then). */
int sched_node_set_images(sched_node *n, const char *const *names, const int64_t *sizes, size_t k);
/* The size of the node's image of that name, -1 when it has none. */
int64_t sched_node_image_size(const sched_node *n, const char *name);
void sched_node_free(sched_node *n);
/* What the node has left now, per resource: allocatable - requested (negative when
 * over-committed, as after a pod of another scheduler). */
void sched_node_room(const sched_node *n, sched_resources *out);

#endif
