/* gang_preempt.h: a gang preempts as one unit (issue 31). When a gang does not fit, kube's
 * DefaultPreemption (plugins/preemption/) cannot help: it makes room for one pod on one node,
 * and evicting for the first member of a gang that then still does not fit whole evicts for
 * nothing. Here the victims are chosen across nodes so that the gang's missing members fit at
 * once, and a running gang is a victim as a whole, never one member of it:
 *
 *   1. Eligibility: no member says preemptionPolicy Never; no member is nominated to a node
 *      where a pod of lower priority is still terminating (an earlier preemption of this gang
 *      is still under way: preempting again would evict twice).
 *   2. Victim units: every pod placed on a node of the snapshot with a priority lower than the
 *      gang's (the lowest of its waiting members) and with metadata (a pod recorded without is
 *      not known well enough to evict); pods of one gang form one unit (unit_of names it), and
 *      a unit with any placed member of priority >= the gang's is no victim at all. Pods
 *      already terminating are taken out too, but are neither victims nor reprieved.
 *   3. Take every unit out (sched_snapshot_hide_pod) and try the gang (sched_gang_try_place, as
 *      its own cycle does: minResources, then every member through the framework). It does not
 *      fit even then: nothing is evicted.
 *   4. Reprieve, as kube does per node: put the units back one at a time, most important first
 *      (highest priority, then earliest start), keeping each one that still lets the gang fit.
 *      The units left out are the victims; the nodes of the last fitting try are where the
 *      members go (the live scheduler nominates them there).
 * Pure: it changes the snapshot only while it runs and puts every pod back before it returns.
 * PodDisruptionBudgets are not consulted for gang victims: a gang is evicted whole or not at
 * all, and a budget that forbids one member cannot be honoured by evicting the others. */
#ifndef TAREMA_SCHED_GANG_PREEMPT_H
#define TAREMA_SCHED_GANG_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/preemption/preemption.h"

/* The unit a placed pod belongs to: its gang's key, NULL when it is in none (it is its own
 * unit). The string must stay valid until sched_gang_preempt returns. The same type as
 * DefaultPreemption's (preemption.h), so that one function serves both. */
typedef sched_preempt_unit_fn sched_gang_unit_fn;

typedef struct sched_gang_preemption {
    bool ok;               /* evicting victims lets the gang fit: nodes say where */
    int *nodes;            /* caller's array of n: node per waiting member, -1 when not needed */
    sched_victim *victims; /* most important unit first; strings owned (clear frees) */
    size_t n_victims;
    size_t n_units;     /* victim units: a gang counts once */
    size_t n_gangs;     /* of which gangs */
    char message[1024]; /* ok: "evicting 4 pod(s) (2 gang(s), 0 single pod(s)) of priority
                         * < 1000"; else why not */
} sched_gang_preemption;

void sched_gang_preemption_clear(sched_gang_preemption *r); /* frees victims, keeps nodes */

/* For gang g whose waiting members pods[0..n-1] do not fit now (its last try was
 * UNSCHEDULABLE): the victims (step 2-4). out->nodes must hold n entries. unit_of may be NULL
 * (every pod its own unit). 0 (out->ok says whether victims were found), or -1 with err (out of
 * memory, a plugin failure); the snapshot is as it was in every case. */
int sched_gang_preempt(sched_framework *fw, sched_snapshot *s, sched_gang *g,
                       sched_pod *const *pods, size_t n, int64_t now_ms, sched_gang_unit_fn unit_of,
                       void *ctx, sched_gang_preemption *out, tm_err *err);

#endif
