/* spread_defaults.h: PodTopologySpread's default constraints, kube-scheduler's
 * PodTopologySpreadArgs. A pod with no topologySpreadConstraints of its own gets these, with
 * the selector of the Services and controller that select it (owner_selectors.h); a pod that
 * nothing selects gets none.
 *
 *   defaultingType: System   (the default) kube's system defaults, both ScheduleAnyway:
 *                            kubernetes.io/hostname maxSkew 3, topology.kubernetes.io/zone
 *                            maxSkew 5; a node lacking one of the keys is still scored (by the
 *                            keys it has), as kube does for system defaults only
 *   defaultingType: List     the constraints of defaultConstraints (none: no default
 *                            spreading), each {maxSkew, topologyKey, whenUnsatisfiable,
 *                            minDomains?, nodeAffinityPolicy?, nodeTaintsPolicy?} without a
 *                            labelSelector (kube refuses one); DoNotSchedule ones filter
 *
 * Pure: JSON in, plain data out. */
#ifndef TAREMA_SCHED_SPREAD_DEFAULTS_H
#define TAREMA_SCHED_SPREAD_DEFAULTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "lib/error.h"
#include "scheduler/backend/pod.h"

typedef struct sched_spread_defaults {
    bool system;     /* defaultingType System */
    sched_spread *c; /* the constraints (selector NULL: filled per pod) */
    bool *soft;      /* c[i] is ScheduleAnyway */
    size_t n;
} sched_spread_defaults;

/* System defaulting. NULL on OOM. */
sched_spread_defaults *sched_spread_defaults_system(void);
/* From the args object above (NULL or null: System). NULL with err naming the field. */
sched_spread_defaults *sched_spread_defaults_from_json(const json_t *args, tm_err *err);
void sched_spread_defaults_free(sched_spread_defaults *d);
/* Whether d holds a DoNotSchedule constraint with nodeTaintsPolicy Honor (a node that gains a
 * taint may then help a pod given these defaults: the loop's queueing hint). */
bool sched_spread_defaults_honour_taints(const sched_spread_defaults *d);

#endif
