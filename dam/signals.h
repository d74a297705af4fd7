/* signals.h: one cluster's collected signals from what its API server returned, as the cluster
 * entry of a CLUSTERS document (docs/dam.md), which dam/input.c reads like a file. Pure: the
 * collector (dam/collect.c) fetches the objects and passes them in, so every rule here is
 * unit-tested without a cluster.
 *
 * Rules (docs/dam.md, "Collector"):
 *   cores total   sum of allocatable cpu over schedulable nodes (spec.unschedulable unset);
 *   cores used    sum of the cpu requests of pods bound to those nodes and not finished;
 *   memory        the largest node's allocatable memory;
 *   architectures the nodes' kubernetes.io/arch labels;
 *   accelerators  per extended resource (a name with a '/', e.g. nvidia.com/gpu), the largest
 *                 count on one node;
 *   perf_per_core the cores-weighted mean of cpu_single in the nodes' tarema.io/profile
 *                 annotations (the profiler's node groups; sysbench events/s of one thread);
 *                 absent when no node has one;
 *   wait          the ASA learner state (when the cluster has one) for the job's shape: the
 *                 most probable waiting time of its learner; else the age of the oldest pending
 *                 (unbound, not finished) pod; else absent (the wait score is 1);
 *   maintenance   the windows of the maintenance ConfigMap's `windows` key, a YAML or JSON list
 *                 of {start, end, reason}; overlapping windows are merged by the ranking. */
#ifndef TAREMA_DAM_SIGNALS_H
#define TAREMA_DAM_SIGNALS_H

#include <jansson.h>

#include "labeler/waits.h"
#include "lib/error.h"

/* The job's shape, to find its learner in an ASA state. */
typedef struct dam_shape {
    const char *ns;                 /* the namespace the job would run in */
    int pods;                       /* >= 1 */
    long long cpu_milli, mem_bytes; /* per pod */
} dam_shape;

/* The cluster objects the collector read. Arrays of API objects (items), borrowed; any may be
 * NULL (not read). */
typedef struct dam_cluster_objects {
    const json_t *nodes, *pods, *storage_classes;
    const json_t *maintenance_cm; /* the ConfigMap, or NULL when the cluster has none */
    const json_t *asa_cm;         /* ConfigMap holding the ASA state (key state.json) or NULL */
    const waits_record *waits;    /* the cluster's learned waits (its PostgreSQL), if read */
    size_t nwaits;
    int has_waits;
} dam_cluster_objects;

/* Fills `entry` (an object that may already hold static keys: name, site, location, storage;
 * those are kept) with cores, memory, architectures, accelerators, perf_per_core, wait,
 * storage (when absent and storage classes were read) and maintenance. now_s dates the pending
 * pods. 0, or -1 with err naming the object and field that cannot be read (a maintenance
 * ConfigMap with a bad window, a node with an unparsable quantity). */
int dam_signals_fill(json_t *entry, const dam_cluster_objects *o, const dam_shape *shape,
                     double now_s, tm_err *err);

/* The most probable waiting time (seconds) of the learner for shape in an ASA state document
 * (asa_table_to_json); a learner of the same pods/cpu/memory in another namespace or node
 * group counts when the namespace has none. -1 when no learner fits; warn (may be NULL, size
 * n) says what of the document was ignored. */
double dam_asa_wait(const char *state_json, const dam_shape *shape, char *warn, size_t n);

/* The learned wait (seconds, waits_estimate: the mode of the learner) of the record for shape
 * among the cluster's records v[0..n) (lab_waits_store_list): same pods, cpu and memory per
 * pod, any node group; the job's own namespace first, another namespace's otherwise (the queue
 * is the cluster's). Of several, the one with the most observations. -1 when none matches. */
double dam_waits_pick(const waits_record *v, size_t n, const dam_shape *shape);

#endif
