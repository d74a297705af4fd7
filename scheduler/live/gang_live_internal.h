/* gang_live_internal.h: what gang_live.c shares with explain's view of a gang's preemption
 * (gang_explain_preempt.c). Private to scheduler/live. */
#ifndef TAREMA_SCHED_GANG_LIVE_INTERNAL_H
#define TAREMA_SCHED_GANG_LIVE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/gang/native.h"
#include "scheduler/plugins/gang/podgroup.h"

/* gang_preempt.h's unit_of over registry ctx (sched_gang_registry *): the key of a placed pod's
 * gang, NULL for a pod in none or in a basic-policy group. */
const char *sched_gang_live_unit_of(void *ctx, const char *uid);

/* A member's state as its pod shows it (pending when not on a node yet). */
sched_gang_pod_state sched_gang_json_pod_state(const json_t *pod);

/* Reads the owner object (PodGroup, Workload or native PodGroup) of ref's gang and records it in
 * r: its spec and policy, or why it is invalid. *owner: the object (NULL when it does not exist
 * or napi says PodGroups are not served), the caller's to free. 0, or -1 with err when it could
 * not be read (other than 404) or on OOM. */
int sched_gang_explain_register_owner(tm_kube *k, sched_gang_registry *r,
                                      const sched_native_api *napi, const sched_gang_ref *ref,
                                      json_t **owner, tm_err *err);

/* For gang g of r whose waiting members pods[0..n-1] do not fit on snap: the dry run of the
 * gang's preemption (gang_preempt.h), every gang with pods on nodes (listed from the API server)
 * one victim unit as the live scheduler sees them (napi: as discovered; "" version: looked up
 * here). {wouldPreempt, message, victims [{pod, node, priority, gang|null, why}], units, gangs,
 * members [{pod, node|null}]}; NULL with err. The snapshot is as it was afterwards. */
json_t *sched_gang_explain_preemption(tm_kube *k, sched_framework *fw, sched_snapshot *snap,
                                      sched_gang_registry *r, const sched_native_api *napi,
                                      sched_gang *g, sched_pod *const *pods, size_t n,
                                      int64_t now_ms, tm_err *err);

#endif
