/* apply.h: puts a groups document (`tarema-profiler group` output) on the cluster's Nodes:
 * tarema.io/{cpu,mem,io,group} labels and a tarema.io/profile annotation with the measured
 * figures, and removes those labels from nodes that are no longer in the document.
 *
 * prof_apply_plan is pure (cluster state in, patches out) so it is unit-tested without a
 * cluster; prof_apply fetches the Nodes and sends the patches. */
#ifndef TAREMA_PROFILER_APPLY_H
#define TAREMA_PROFILER_APPLY_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"
#include "lib/kube.h"

#define PROF_PROFILE_ANNOT "tarema.io/profile"

/* The labels the profiler owns. Only these are ever removed: other tarema.io/ labels (say an
 * operator's tarema.io/machine-type) are left alone. */
bool prof_is_managed_label(const char *key);

/* Computes the merge patches that make `nodes` (an array of Node objects) match `groups`.
 * Returns a new object {"patches": [{"node": name, "patch": {...}, "action": "label" |
 * "clean"}], "missing": [names in the document but not in the cluster], "unchanged": n}, or
 * NULL with err naming what is wrong in the document. Nodes already matching get no patch. */
json_t *prof_apply_plan(const json_t *groups, const json_t *nodes, tm_err *err);

typedef struct prof_apply_stats {
    int labelled, cleaned, unchanged, missing;
} prof_apply_stats;

/* Lists the Nodes, plans, and patches each (merge patch). With dry_run nothing is sent.
 * Missing nodes are reported in stats and logged, and make the call return -1 after every
 * other node was patched, so an operator notices. */
int prof_apply(tm_kube *k, const json_t *groups, bool dry_run, prof_apply_stats *stats,
               tm_err *err);

/* The annotation value written for one node (compact JSON); caller frees. Exposed for run.c
 * (--changed reads it back) and tests. */
char *prof_profile_annotation(const json_t *groups_node, const json_t *cluster_node);

/* Whether a node needs re-profiling: no tarema.io/profile annotation, or its capacity,
 * kernel, machine id or instance type differ from the snapshot the annotation took. */
bool prof_node_changed(const json_t *cluster_node);

#endif
