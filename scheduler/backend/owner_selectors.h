/* owner_selectors.h: the label selectors of the Services, ReplicationControllers, ReplicaSets and
 * StatefulSets of the cluster, and from them the selector kube-scheduler's PodTopologySpread
 * builds for a pod without topologySpreadConstraints of its own (its system default
 * constraints; kube's helper.DefaultSelector):
 *   - the selectors (maps) of every Service of the pod's namespace whose selector matches the
 *     pod's labels, merged (a later key replaces an earlier one: they all match the pod, so they
 *     cannot disagree about it);
 *   - then, when the pod's controller (the ownerReference with controller: true) is a
 *     ReplicationController (v1) of its namespace that the table knows, that controller's
 *     selector map merged in too;
 *   - or, when it is a ReplicaSet or StatefulSet (apps/v1) the table knows, the requirements of
 *     its spec.selector (matchLabels and matchExpressions) added to the Services' ones.
 * An empty result (nothing selects the pod) means no default constraint. Owned pods of other
 * controllers (Jobs, DaemonSets, ...) get the Services' part alone, as in kube.
 *
 * Plain data, no I/O, no locks. Whoever watches these objects owns the table (the live cache)
 * and lends it to the snapshot (sched_snapshot_set_owner_selectors), like the PDB table; a
 * snapshot without one has no default spreading. */
#ifndef TAREMA_SCHED_OWNER_SELECTORS_H
#define TAREMA_SCHED_OWNER_SELECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/error.h"
#include "lib/selector.h"
#include "scheduler/backend/snapshot.h"

/* The kinds the table keeps (kube's DefaultSelector reads these four). */
typedef enum {
    SCHED_OWNER_SERVICE = 0,
    SCHED_OWNER_RC, /* ReplicationController, v1 */
    SCHED_OWNER_RS, /* ReplicaSet, apps/v1 */
    SCHED_OWNER_SS, /* StatefulSet, apps/v1 */
    SCHED_OWNER_KINDS,
    SCHED_OWNER_NONE = SCHED_OWNER_KINDS /* a pod without such a controller */
} sched_owner_kind;

/* "Service", "ReplicationController", "ReplicaSet", "StatefulSet". */
const char *sched_owner_kind_name(sched_owner_kind k);
/* The API collection of kind k ("/api/v1/services", ...), as the live informers and explain
 * list it; NULL for SCHED_OWNER_NONE. */
const char *sched_owner_kind_path(sched_owner_kind k);
/* The kind of a controller ownerReference (apiVersion, kind): RC for v1
 * ReplicationController, RS/SS for apps/v1 ReplicaSet/StatefulSet, NONE for anything else (as
 * kube's DefaultSelector, which compares group, version and kind). */
sched_owner_kind sched_owner_kind_of_ref(const char *api_version, const char *kind);

/* typedef in snapshot.h */
sched_owner_sels *sched_owner_sels_new(void); /* NULL on OOM */
void sched_owner_sels_free(sched_owner_sels *t);

/* Records (or replaces) object ns/name of kind k from its JSON (metadata and spec.selector:
 * a label map for Services and ReplicationControllers, a LabelSelector for ReplicaSets and
 * StatefulSets). A selector that does not parse is kept as "selects nothing" (kube ignores such
 * a selector) and reported in err with 1 returned, so the caller can warn; 0 when recorded;
 * -1 with err when the object has no metadata.name or memory ran out. */
int sched_owner_sels_put_json(sched_owner_sels *t, sched_owner_kind k, const json_t *obj,
                              tm_err *err);
/* Forgets ns/name of kind k. 0, or -1 when unknown. */
int sched_owner_sels_remove(sched_owner_sels *t, sched_owner_kind k, const char *ns,
                            const char *name);
size_t sched_owner_sels_count(const sched_owner_sels *t, sched_owner_kind k);
/* Incremented on every change: a per-cycle cache of a pod's default selector is valid while
 * it stays the same. */
uint64_t sched_owner_sels_generation(const sched_owner_sels *t);

/* The pod's default selector (above), into *out (caller frees with tm_selector_free): NULL
 * when nothing selects the pod (no default constraints then). labels: the pod's
 * metadata.labels (may be NULL). owner_kind/owner_name: the pod's controller (NONE/NULL when
 * it has none). 0, or -1 with err when out of memory. */
int sched_owner_sels_default_selector(const sched_owner_sels *t, const char *ns,
                                      const json_t *labels, sched_owner_kind owner_kind,
                                      const char *owner_name, tm_selector **out, tm_err *err);

#endif
