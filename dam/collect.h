/* collect.h: the DAM's collector: reads every cluster of a federation file from its API server
 * and builds the CLUSTERS document the ranking reads (docs/dam.md, "Collector").
 *
 * Federation file (YAML or JSON; the chart mounts it from a ConfigMap):
 *   weights, datasets, transfers     as in CLUSTERS.yaml (the registry and the speeds)
 *   clusters:
 *     - name: hpc-a                  required, unique
 *       kubeconfig: /etc/dam/a.kubeconfig   optional: $KUBECONFIG / ~/.kube/config otherwise;
 *                                    relative paths are against the federation file's folder;
 *                                    "in-cluster": the DAM's own cluster, its ServiceAccount
 *       context: hpc-a               optional: the kubeconfig's current-context otherwise
 *       namespace: tarema            where its maintenance and ASA ConfigMaps are and a
 *                                    submitted job's pods go; default "default"
 *       database: postgresql://...   optional: the cluster's PostgreSQL (its labeler's), a URI or
 *                                    key=value conninfo as DATABASE_URL, or a file holding one
 *                                    (relative to the federation file's folder; re-read at every
 *                                    collection, so a rotated Secret is picked up)
 *       site, location, storage, perf_per_core, architectures: static facts, kept as given
 *
 * Per cluster (all clusters at once, one thread each): Nodes, Pods, StorageClasses, and in the
 * namespace the ConfigMaps `tarema-dam-maintenance` (key `windows`) and `tarema-asa-state`
 * (key `state.json`); a missing ConfigMap means none. With `database`, the learned waits the
 * labeler keeps there (asa_waits, read with labeler/waits_store.h as `tarema-planner waits`
 * does) give the predicted wait; the ConfigMap is the second source, the age of the oldest
 * pending pod the last; a database that cannot be read is logged and skipped. A cluster whose API
 * server cannot be reached, refuses the credentials, or whose maintenance ConfigMap cannot be read
 * is entered as `unreachable` with the reason: the ranking excludes and reports it and still
 * answers. Each cluster's API client is kept in the federation between collections (its
 * connections reused); a collection that fails drops it, so the next one connects afresh. */
#ifndef TAREMA_DAM_COLLECT_H
#define TAREMA_DAM_COLLECT_H

#include <jansson.h>

#include "dam/rank.h"
#include "dam/signals.h"
#include "lib/error.h"
#include "lib/kube.h"

#define DAM_MAINTENANCE_CM "tarema-dam-maintenance"
#define DAM_ASA_CM         "tarema-asa-state"
#define DAM_IN_CLUSTER     "in-cluster"

typedef struct dam_federation dam_federation;

/* Loads and checks the federation file (unknown keys refused, err names the field). */
dam_federation *dam_federation_load(const char *path, tm_err *err);
void dam_federation_free(dam_federation *f);
size_t dam_federation_size(const dam_federation *f);
const char *dam_federation_name(const dam_federation *f, size_t i);
const char *dam_federation_namespace(const dam_federation *f, size_t i);
/* A client for cluster i (for submission); NULL with err. Caller frees with tm_kube_free. */
tm_kube *dam_federation_client(const dam_federation *f, size_t i, tm_err *err);
/* The index of the cluster named name, or -1. */
int dam_federation_find(const dam_federation *f, const char *name);

/* The federation as a CLUSTERS document without collecting: the registry, weights and every
 * cluster as unreachable "not collected". For checking a job (its datasets, its failed_on)
 * before it is stored. New reference. */
json_t *dam_federation_skeleton(const dam_federation *f);

/* How long a collection waits for the slowest cluster by default (seconds). */
#define DAM_COLLECT_TIMEOUT_S 10.0

/* Collects every cluster now, all at once. Returns the CLUSTERS document (new reference) with
 * "now" set to now_s; never fails for one cluster (it is marked unreachable, also when it has
 * not answered within timeout_s, 0 = DAM_COLLECT_TIMEOUT_S: a hung API server does not hold
 * the ranking), NULL only when memory runs out. shape (may be NULL) selects the ASA
 * learner. */
json_t *dam_collect(const dam_federation *f, const dam_shape *shape, double now_s, double timeout_s,
                    tm_err *err);

#endif
