/* filters.h: the in-tree Filter plugins, one file each, registered by sched_framework_new in
 * kube-scheduler's order (registry.c):
 *   NodeReady           node_ready.c
 *   NodeUnschedulable   node_unschedulable.c
 *   TaintToleration     taint_toleration.c
 *   NodeAffinity        node_affinity.c
 *   NodePorts           node_ports.c
 *   NodeResourcesFit    node_resources_fit.c
 *   VolumeRestrictions  volume_restrictions.c (ReadWriteOncePod)
 *   NodeVolumeLimits    node_volume_limits.c (CSINode attach limits)
 *   VolumeBinding       volume_binding.c (the tables and rules in volumes.c)
 *   VolumeZone          volume_zone.c
 *   PodTopologySpread   pod_topology_spread.c
 *   InterPodAffinity    interpod_affinity.c
 *   DynamicResources    dynamic_resources.c (refuses pods with DRA claims)
 * Each fills a sched_plugin (framework.h) with its PreFilter (the cluster-wide ones), Filter and
 * reason hooks and its sched_filter_id; with_state false leaves the state NULL (for the reason
 * and name alone; the Filter hooks of the stateful ones need the state). 0, or -1 on OOM.
 * They build on match.h, never on the framework's internals. */
#ifndef TAREMA_SCHED_FILTERS_H
#define TAREMA_SCHED_FILTERS_H

#include <stdbool.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"

int sched_filter_node_ready(sched_plugin *out, bool with_state);
int sched_filter_node_unschedulable(sched_plugin *out, bool with_state);
int sched_filter_taint_toleration(sched_plugin *out, bool with_state);
int sched_filter_node_affinity(sched_plugin *out, bool with_state);
int sched_filter_node_ports(sched_plugin *out, bool with_state);
int sched_filter_resources_fit(sched_plugin *out, bool with_state);
/* The slot of bit b of p's NodeResourcesFit detail (sched_fit_bit; b < SCHED_RES_FIRST_EXT +
 * SCHED_FIT_EXT_BITS), -1 when p requests no such resource. */
int sched_fit_bit_slot(const sched_snapshot *s, const sched_pod *p, int b);
/* NodeResourcesFit's check alone: whether every resource p requests fits in what node n has
 * left (and a pod slot). */
bool sched_resources_fit(const sched_snapshot *s, const sched_pod *p, const sched_node *n);
int sched_filter_volume_restrictions(sched_plugin *out, bool with_state);
int sched_filter_node_volume_limits(sched_plugin *out, bool with_state);
int sched_filter_volume_binding(sched_plugin *out, bool with_state);
int sched_filter_volume_zone(sched_plugin *out, bool with_state);
int sched_filter_topology_spread(sched_plugin *out, bool with_state);
int sched_filter_interpod_affinity(sched_plugin *out, bool with_state);
int sched_filter_dynamic_resources(sched_plugin *out, bool with_state);

/* The in-tree filters in run order, NULL-terminated. */
typedef int (*sched_filter_ctor)(sched_plugin *out, bool with_state);
extern const sched_filter_ctor sched_in_tree_filters[];

/* Registers the in-tree filters on fw in run order. 0, or -1 with err. */
int sched_framework_add_in_tree_filters(sched_framework *fw, tm_err *err);

/* The in-tree Score-only plugins (no Filter), registered after the filters by
 * sched_framework_new: NodeResourcesBalancedAllocation, ImageLocality; NULL-terminated. */
int sched_score_balanced_allocation(sched_plugin *out, bool with_state);
int sched_score_image_locality(sched_plugin *out, bool with_state);
extern const sched_filter_ctor sched_in_tree_scores[];
/* Their formulas on one node, for tests and explain: 0..100. */
int64_t sched_balanced_allocation_score(const sched_resources *pod, const sched_node *n);
int64_t sched_image_locality_score(const sched_snapshot *s, const sched_pod *p,
                                   const sched_node *n);

/* ---- the cluster-wide filters' own state (their PreFilter tables) ---- */

/* NodePorts (node_ports.c). */
typedef struct sched_nodeports_state sched_nodeports_state;
sched_nodeports_state *sched_nodeports_state_new(void); /* NULL on OOM */
void sched_nodeports_state_free(sched_nodeports_state *st);
/* Marks every node where a placed pod holds a port p wants. *active is false when p wants no
 * host port (then the filter need not run). 0, or -1 with err. */
int sched_nodeports_prefilter(sched_nodeports_state *st, const sched_snapshot *s,
                              const sched_pod *p, bool *active, tm_err *err);
bool sched_nodeports_fits(const sched_nodeports_state *st, size_t node);

/* PodTopologySpread, DoNotSchedule constraints (pod_topology_spread.c). */
typedef struct sched_spread_state sched_spread_state;
sched_spread_state *sched_spread_state_new(void); /* NULL on OOM */
void sched_spread_state_free(sched_spread_state *st);
int sched_spread_prefilter(sched_spread_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *active, tm_err *err);
/* -1 when n satisfies every constraint, else SCHED_SPREAD_SKEW or SCHED_SPREAD_MISSING_LABEL. */
int sched_spread_filter(const sched_spread_state *st, const sched_pod *p, const sched_node *n);
/* The default constraints (spread_defaults.h; a new state has the System ones): takes d (freed
 * also on error). 0, or -1 on OOM. The framework's plugin is reached with
 * sched_framework_plugin_state(fw, "PodTopologySpread"). */
struct sched_spread_defaults;
int sched_spread_set_defaults(sched_spread_state *st, struct sched_spread_defaults *d);
/* The default constraints in use (borrowed until the next sched_spread_set_defaults). */
const struct sched_spread_defaults *sched_spread_get_defaults(const sched_spread_state *st);

/* InterPodAffinity, required terms (interpod_affinity.c). */
typedef struct sched_interpod_state sched_interpod_state;
sched_interpod_state *sched_interpod_state_new(void); /* NULL on OOM */
void sched_interpod_state_free(sched_interpod_state *st);
int sched_interpod_prefilter(sched_interpod_state *st, const sched_snapshot *s, const sched_pod *p,
                             bool *active, tm_err *err);
/* -1 when n passes, else SCHED_INTERPOD_AFFINITY, _ANTI_AFFINITY or _EXISTING_ANTI. */
int sched_interpod_filter(const sched_interpod_state *st, const sched_pod *p, const sched_node *n);

#endif
