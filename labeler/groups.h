/* groups.h: the node groups the labels are computed against, and their per-feature classes.
 *
 * Two sources: the live cluster's Node objects (labels written by the profiler:
 * tarema.io/group, tarema.io/cpu, tarema.io/mem, tarema.io/io; cores from status.capacity.cpu)
 * or the node-groups document the profiler's `group -o` writes (lib/nodegroups.h reads it;
 * docs/node-groups.md). Both are parsed here from JSON already in memory; fetching
 * the Node list is the caller's job, so this module does no I/O.
 *
 * Groups that share a feature label pool their cores into one class: they are equally fast for
 * that feature, so the scheduler cannot tell them apart, and giving them separate intervals
 * would split tasks by an arbitrary order. With the profiler's ranks 1..n (no ties) this is
 * exactly one class per group, as in the paper. */
#ifndef TAREMA_LABELER_GROUPS_H
#define TAREMA_LABELER_GROUPS_H

#include <jansson.h>
#include <stdbool.h>

#include "labeler/labels.h"
#include "lib/error.h"

typedef struct lab_group {
    char id[64];
    double cores;
    int label[LAB_NFEATURES]; /* the node label value per feature, higher = more capable */
} lab_group;

typedef struct lab_groups {
    int n;
    lab_group g[LAB_MAX_CLASSES];
} lab_groups;

/* From the profiler's group output. Returns 0 or -1 with err naming the bad group. */
int lab_groups_from_json(const json_t *root, lab_groups *out, tm_err *err);

/* From a JSON array of Node objects; nodes without tarema.io/group are ignored. Returns 0 or
 * -1 with err naming the bad node; zero groups is an error ("run the profiler first"). */
int lab_groups_from_nodes(const json_t *nodes, lab_groups *out, tm_err *err);

/* The classes for feature f, weakest first, groups with equal labels pooled. */
int lab_groups_classes(const lab_groups *g, lab_feature f, lab_classes *out, tm_err *err);

/* lab_groups_classes for every feature. */
int lab_groups_all_classes(const lab_groups *g, lab_classes out[LAB_NFEATURES], tm_err *err);

/* Could a change from Node `old` to `obj` change the node groups? Pass old NULL for an added
 * node and obj NULL for a deleted one: that matters when the node has tarema.io/group. For an
 * update, true when a tarema.io/{group,cpu,mem,io} label or status.capacity.cpu differs; false
 * for the status heartbeats that make up most Node updates. */
bool lab_groups_node_relevant(const json_t *obj, const json_t *old);

/* Same groups, cores and labels (in any order)? Used to notice that node groups changed. */
bool lab_groups_equal(const lab_groups *a, const lab_groups *b);

#endif
