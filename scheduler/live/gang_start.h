/* gang_start.h: backfill's expected start of a pending gang, shown on its PodGroup (issue 32).
 *
 * The backfill plan (backfill_live.h) gives a gang at the head of the queue a shadow: when all
 * its members will fit. Its pods carry that time as tarema.io/expected-start; the gang's own
 * object carries it too, as the same annotation on the PodGroup (scheduler-plugins'
 * scheduling.x-k8s.io, and 1.36+'s scheduling.k8s.io). An annotation, not a status field:
 * neither PodGroup's status schema has one for it, and the API server prunes unknown status
 * fields under a structural schema (a status.expectedStart written to the local cluster's
 * PodGroup came back without it); the conditions kube-scheduler writes stay untouched.
 * A 1.35 Workload holds several gangs in one object and gets none (its pods have theirs).
 *
 * Loop thread, cache lock held, like the rest of gang_live. */
#ifndef TAREMA_SCHED_GANG_START_H
#define TAREMA_SCHED_GANG_START_H

#include <jansson.h>
#include <stdint.h>

#include "scheduler/framework/framework.h"
#include "lib/kube.h"
#include "scheduler/plugins/gang/gang.h"

/* The PodGroup's tarema.io/expected-start (obj: the object as the watch shows it) in ms since
 * the epoch; 0 when it has none or it is not an RFC 3339 time. */
int64_t sched_gang_start_seen(const json_t *obj);

/* Brings the PodGroups' annotation in line with fw's backfill plan (nothing without a Backfill
 * plugin): a gang with a shadow gets its start when it has none or it moved by at least the
 * resolution (so a drifting shadow is not rewritten every plan); a gang placed whole (minMember
 * members bound or beyond) loses it. native_gv: the scheduling.k8s.io version serving PodGroups
 * ("scheduling.k8s.io/v1beta1"), NULL when none is served. Best effort: merge patches through k,
 * failures logged. The live scheduler and the extender alike (the Lease holder only). */
void sched_gang_start_sync(sched_gang_registry *reg, const sched_framework *fw, tm_kube *k,
                           const char *native_gv);

#endif
