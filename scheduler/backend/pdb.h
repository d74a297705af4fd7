/* pdb.h: the PodDisruptionBudgets preemption respects on a best-effort basis, as
 * kube-scheduler does: a victim whose eviction would take a budget below zero (disruptionsAllowed
 * counted down over the victims of one node, pods listed in status.disruptedPods not counted)
 * is "PDB-violating"; preemption prefers nodes with fewer such victims and reprieves them first,
 * but still evicts them when nothing else makes room.
 *
 * Plain data, no I/O, no locks. Whoever watches PodDisruptionBudgets owns the table (the live
 * cache's informer) and lends it to the snapshot (sched_snapshot_set_pdbs), like the volume
 * tables; a snapshot without one has no budgets (nothing violates). */
#ifndef TAREMA_SCHED_PDB_H
#define TAREMA_SCHED_PDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/error.h"
#include "lib/selector.h"
#include "scheduler/backend/snapshot.h"

/* One budget: which pods it covers and how many of them may still be disrupted. */
typedef struct sched_pdb {
    char *ns, *name;
    tm_selector *selector; /* spec.selector; NULL or empty: covers no pod (as kube-scheduler) */
    int32_t disruptions_allowed; /* status.disruptionsAllowed */
    char **disrupted;            /* names of status.disruptedPods (already counted) */
    size_t n_disrupted;
} sched_pdb;

/* typedef in snapshot.h */
sched_pdbs *sched_pdbs_new(void); /* NULL on OOM */
void sched_pdbs_free(sched_pdbs *t);

/* Adds or replaces budget ns/name. Takes ownership of selector (freed also on error); disrupted
 * (may be NULL) is copied. 0, or -1 with err. */
int sched_pdbs_put(sched_pdbs *t, const char *ns, const char *name, tm_selector *selector,
                   int32_t disruptions_allowed, const char *const *disrupted, size_t n_disrupted,
                   tm_err *err);
/* The same from a policy/v1 PodDisruptionBudget object. -1 with err naming the budget and the
 * field when it is malformed (no metadata.name, a bad selector). */
int sched_pdbs_put_json(sched_pdbs *t, const json_t *pdb, tm_err *err);
/* Removes budget ns/name. 0, or -1 when unknown. */
int sched_pdbs_remove(sched_pdbs *t, const char *ns, const char *name);
size_t sched_pdbs_count(const sched_pdbs *t);
const sched_pdb *sched_pdbs_at(const sched_pdbs *t, size_t i); /* i < count, no order */

/* Whether budget b covers the placed pod (namespace, name and labels from its metadata): same
 * namespace, a non-empty selector that matches, and not already among its disrupted pods. */
bool sched_pdb_covers(const sched_pdb *b, const sched_pod_meta *m);

#endif
