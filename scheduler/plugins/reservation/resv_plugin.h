/* resv_plugin.h: the Reservation Filter plugin: the honouring rule of resv_plan.h as PreFilter
 * (which held reservations the pod being placed belongs to) and Filter (resv_plan_filter on each
 * node, with the pod's expected end from resv_expected_end), with kube-scheduler style reasons;
 * and the owner's side: inside the window an owner's pod goes only to its held nodes while they
 * have room for it (counting the owner's pods this plugin placed, Reserve/Unreserve, until the
 * caller counts them), else it is placed like any pod; before the window, or before the
 * admission (PreEnqueue, quietly for RESV_ARRIVAL_GRACE_MS, then PreFilter), it waits.
 *
 * One plugin for every framework that must honour reservations: the live scheduler (the
 * controller keeps the plan and the Reservation objects current, resv_controller.h), the
 * simulator (sim/resv_sim.h) and `tarema-scheduler explain` (resv_plugin_explain below). Pure: no
 * I/O, no clock (the cycle's now), no global state; the caller owns the plan and the
 * reservations, the plugin only reads them through the callbacks.
 *
 * Reasons (FailedScheduling, explain's per-node "reason"):
 *   "node(s) were reserved for another owner's pods"               inside a window
 *   "node(s) were reserved from a later time and the pod's expected end is unknown or after it"
 *   "node(s) were not the ones reserved for the pod"               an owner's pod elsewhere
 *                                         while its holds have room for it (else it falls back
 *                                         to normal placement)
 *   "node(s) were not tried: the pod's Reservation window has not opened yet"    (PreFilter)
 *   "node(s) were not tried: the pod's Reservation is not admitted yet"          (PreFilter)
 *   "reservations not read yet (the scheduler is starting)"        every node, until ready */
#ifndef TAREMA_SCHED_RESV_PLUGIN_H
#define TAREMA_SCHED_RESV_PLUGIN_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/plugins/reservation/resv_plan.h"

#define RESV_PLUGIN_NAME "Reservation"
/* How long an owner's pod waits quietly at PreEnqueue for its reservation's admission, from its
 * creation (plugin_pre_enqueue). */
#define RESV_ARRIVAL_GRACE_MS (15 * 1000)

/* Called by `each` for every reservation the caller knows (key "ns/name"). */
typedef void (*resv_each_fn)(void *arg, const char *key, const reservation *r);

/* What the hooks read of the caller, besides the plan. ud is handed to every callback. */
typedef struct resv_plugin_source {
    /* Calls fn for every known, valid reservation (the held ones at least): the plugin checks
     * with reservation_owns which of them the pod belongs to. */
    void (*each)(void *ud, resv_each_fn fn, void *arg);
    /* The pod's labels and spec.workloadRef.name as the caller knows them (sched_pod has no
     * workloadRef). NULL: pod->pod_labels and no workload. */
    void (*identity)(void *ud, const sched_pod *pod, const json_t **labels, const char **workload);
    /* false while the held reservations are not in the plan yet (a restarting scheduler): then
     * PreFilter rejects every node. NULL: always ready. */
    bool (*ready)(void *ud);
    void *ud;
} resv_plugin_source;

/* Fills *out with the plugin "Reservation" over plan (borrowed, as src->ud; both must outlive
 * the framework's cycles). The plugin's own state is allocated here and freed by the framework
 * (free_state). Add it with sched_framework_add_plugin. 0, or -1 with err (OOM). */
int resv_plugin_make(resv_plan *plan, const resv_plugin_source *src, sched_plugin *out,
                     tm_err *err);

/* ---- explain: the plugin over reservations read from the API server ---------------------- */

typedef struct resv_plugin_book resv_plugin_book;

/* For `tarema-scheduler explain`: from a list of Reservation objects (items array, as listed;
 * NULL = none), those of scheduler_name (or of a profile in keys->profiles) that hold capacity
 * (Admitted, Active) go into a plan with their status.nodes, and the plugin joins fw; pod is the
 * pod explained (its labels and spec.workloadRef decide ownership). pods (items array of pods, NULL
 * = none): the bound ones of each owner count as using its holds, as the live controller counts
 * them (keys name the task labels). Invalid objects are skipped. s gives extended resources their
 * slots. The book must outlive fw's cycles. NULL with err (OOM, plugin not added). */
resv_plugin_book *resv_plugin_explain(sched_snapshot *s, sched_framework *fw, const json_t *items,
                                      const char *scheduler_name, const json_t *pod,
                                      const json_t *pods, const sched_keys *keys, tm_err *err);
/* For explain: when the explained pod belongs to a held reservation of the book, which case of
 * the owner's rule applies to it (req: its requests), into buf, e.g. "owner of Reservation
 * wf/r1 (window open until T): its hold on n1 has room for the pod: it binds only on the held
 * nodes", "... its holds have no room left for the pod: placed like any pod ...", "... (Admitted,
 * window opens at T): the pod waits for the window". false (buf untouched) for a pod that owns
 * none of them. */
bool resv_plugin_book_owner_note(const resv_plugin_book *b, const sched_resources *req,
                                 int64_t now_ms, char *buf, size_t size);
/* Reservations holding capacity in the book. */
size_t resv_plugin_book_count(const resv_plugin_book *b);
void resv_plugin_book_free(resv_plugin_book *b);

#endif
