/* resv_controller.h: Reservations in the live scheduler: the Reservation informer, the
 * admission controller (Pending -> Admitted or Failed, Admitted -> Active at startTime,
 * released on every path, Expired at endTime; status by merge patch, events), and the
 * honouring rule: the Reservation Filter plugin (resv_plugin.h) over the controller's table,
 * registered in the scheduler's framework.
 *
 * Everything runs on the loop thread with the cache lock held (the informer callbacks and
 * resv_controller_tick take it themselves; resv_controller_pod_event is called from the pod
 * informer callback, which holds it). The decisions are the pure functions of resv_plan.h; this
 * file only feeds them and writes their outcome.
 *
 * State is rebuilt from the API server: a restarted scheduler reads Admitted and Active
 * reservations' status.nodes back into its table before it admits anything, so nothing is
 * double-booked, and releases what should have been released while it was down.
 *
 * Without the CRD (the API answers 404) reservations are off, logged once, until it appears, and
 * the Filter plugin passes every node.
 *
 * Read-only (extender mode, resv_controller_new_readonly): the same informers and table, but no
 * admission, no status writes, no events: those belong to the tarema scheduler that binds. The
 * table follows the API: Admitted and Active reservations are restored from status.nodes (as
 * after a restart), the others leave it; the owners' pods still count against their holds. The
 * extender adds the Filter plugin to each request's framework (resv_controller_add_plugin). */
#ifndef TAREMA_SCHED_RESV_CONTROLLER_H
#define TAREMA_SCHED_RESV_CONTROLLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "scheduler/backend/cache.h"
#include "scheduler/live/config.h"
#include "scheduler/live/preemptor.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/reservation/resv_plan.h"

#define RESV_API "tarema.io/v1alpha1"

typedef struct resv_controller resv_controller;

/* Registers the Filter plugin "Reservation" (resv_plugin.h) in fw (the live framework). cfg, k,
 * cache and fw are borrowed and must outlive the controller. NULL with err. */
resv_controller *resv_controller_new(const sched_config *cfg, tm_kube *k, sched_cache *cache,
                                     sched_framework *fw, tm_err *err);
/* Read-only: no framework yet (resv_controller_add_plugin per framework), no admission, no
 * writes. cfg, k and cache as above. NULL with err. */
resv_controller *resv_controller_new_readonly(const sched_config *cfg, tm_kube *k,
                                              sched_cache *cache, tm_err *err);
/* Adds the Filter plugin "Reservation" over c's table to fw (the extender's per-request
 * framework); its hooks read c, so fw's cycles must run with the cache lock held. 0 or -1 with
 * err. */
int resv_controller_add_plugin(resv_controller *c, sched_framework *fw, tm_err *err);
/* Starts the informers (Reservations; PodGroups and Workloads, to know whether owners exist),
 * each only when its API is served. 0 or -1 with err. */
int resv_controller_start(resv_controller *c, tm_err *err);
/* A pod informer event (cache lock held): owners' pods and running pods' expected ends. */
void resv_controller_pod_event(resv_controller *c, tm_watch_type type, const json_t *obj);
/* Admits, activates, releases, expires (cache lock held; now_ms wall clock). Read-only: only
 * brings the table in line with the reservations' status and the owners' pods. Returns true
 * when capacity or a window changed (unschedulable pods should be retried). */
bool resv_controller_tick(resv_controller *c, int64_t now_ms);
/* Ready for scheduling: reservations listed and the held ones in the table (true as well
 * when reservations are off, or c is NULL). The loop waits for it before its first cycle. */
bool resv_controller_synced(const resv_controller *c);
/* While the Reservation API (or an owner's) is not served, looks whether it is now and starts
 * its informer; pods (the loop's pod informer) are replayed to a controller that turns on.
 * Called without the cache lock (blocking GETs). 0, or -1 with err when an informer failed. */
int resv_controller_recheck(resv_controller *c, const tm_informer *pods, tm_err *err);
/* Whether pod belongs to the owner of a reservation the table holds (admitted or active): its
 * capacity is held for it by the reservation and the Reservation plugin places it (backfill
 * leaves such pods out of its plan). false when c is NULL. */
bool resv_controller_holds_for(const resv_controller *c, const sched_pod *pod);
/* The preemptor that evicts pods overrunning into an open window (spec.evictOverrunning,
 * resv_overrun.h); without one (read-only, tests) nothing is evicted. pr is borrowed. */
void resv_controller_set_preemptor(resv_controller *c, sched_preemptor *pr);
/* The table of admitted reservations (read under the cache lock), NULL when c is NULL. */
const resv_plan *resv_controller_plan(const resv_controller *c);
void resv_controller_stop(resv_controller *c);
void resv_controller_free(resv_controller *c);

#endif
