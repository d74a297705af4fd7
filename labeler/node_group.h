/* node_group.h: which node group a run's node belongs to, so each stored run carries the group
 * it ran on (issue 16: the adaptive policy's runtime per group).
 *
 * The group id is the one the scheduler uses (scheduler/backend/snapshot.c): the node's
 * tarema.io/group label, else "L<cpu>-<mem>-<io>" from its three tarema.io feature labels when
 * all are positive integers; a node with neither is unprofiled and has no group. Sources: the
 * cluster's Node objects (metadata.labels) or the profiler's node-groups document (nodes[] with
 * their labels, docs/node-groups.md). Pure: no I/O. */
#ifndef TAREMA_LABELER_NODE_GROUP_H
#define TAREMA_LABELER_NODE_GROUP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "labeler/taskrun.h"

/* The group id from a label object ({"tarema.io/group": "3", ...}); false (out "") when the
 * labels name no group or it does not fit in size bytes. */
bool lab_node_group_from_labels(const json_t *labels, char *out, size_t size);

/* A map node name -> group id (a JSON object of strings) from a JSON array of Node objects or
 * from a node-groups document. Nodes without a group are left out. New reference. */
json_t *lab_node_groups_from_nodes(const json_t *nodes);
json_t *lab_node_groups_from_doc(const json_t *doc);

/* Sets node_group of every run whose node is in map (map NULL: none); returns how many. */
size_t lab_node_groups_fill(const json_t *map, lab_task_run *runs, size_t n);

#endif
