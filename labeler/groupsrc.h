/* groupsrc.h: where the node groups come from at run time. groups.h turns JSON into groups
 * without I/O; this module fetches that JSON: the profiler's `group` output file, one list of
 * the cluster's Nodes (the `label` command), or a Node informer that tells `serve` when the
 * groups may have changed, so labels follow the cluster without polling it. */
#ifndef TAREMA_LABELER_GROUPSRC_H
#define TAREMA_LABELER_GROUPSRC_H

#include "labeler/groups.h"
#include "lib/error.h"
#include "lib/kube.h"

/* From the profiler's group JSON; err names the file. */
int lab_groups_load_file(const char *path, lab_groups *out, tm_err *err);

/* From one list of the cluster's Nodes (node_selector: a label selector, NULL = all). */
int lab_groups_load_cluster(tm_kube *k, const char *node_selector, lab_groups *out, tm_err *err);

/* A Node informer on k's event loop. Everything here runs on the loop thread (kube.h's rule):
 * the informer's callbacks only set a flag; lab_node_watch_poll does the work. */
typedef struct lab_node_watch lab_node_watch;

lab_node_watch *lab_node_watch_start(tm_kube *k, const char *node_selector, tm_err *err);
/* Stops the informer and frees; NULL is fine. */
void lab_node_watch_stop(lab_node_watch *w);

/* Call after tm_kube_run. Returns 1 with *out when the groups may have changed since the last
 * call (the first sync, a re-list, or an event touching tarema.io labels or cpu capacity; the
 * caller compares with lab_groups_equal), 0 when nothing relevant happened or the first list
 * has not arrived, -1 with err when the Nodes' labels cannot be made into groups (the next
 * relevant event tries again). */
int lab_node_watch_poll(lab_node_watch *w, lab_groups *out, tm_err *err);

/* Has the informer's first list arrived? */
bool lab_node_watch_synced(const lab_node_watch *w);

/* The node group of the Node named node, as the informer last saw it (node_group.h): false
 * (out "") when the Node is unknown or has no group. Loop thread only, like the rest. */
bool lab_node_watch_group_of(const lab_node_watch *w, const char *node, char *out, size_t size);

/* Node events seen and how many of them were relevant (for logs and tests). */
unsigned long lab_node_watch_events(const lab_node_watch *w, unsigned long *relevant);

#endif
