/* backfill_plugin.h: the Backfill Filter plugin (backfill.h's rule in the framework). The
 * caller plans the shadows before a batch of cycles (bf_plugin_plan: the running pods, the
 * Reservations' holds and the queue in order); each cycle then rejects a node where the pod
 * would delay a shadow, saying for whom and from when:
 *   "node(s) were held for pod ns/a from 2026-11-29T08:00:00Z (backfill)"
 * and Reserve/Unreserve take and give back what a placed pod uses of a shadow's spare. The
 * pod's expected end is resv_expected_end's (annotation tarema.io/expected-duration,
 * TaskProfile runtime per node group, activeDeadlineSeconds) from now, else now +
 * defaultRuntime when configured, else unknown (not backfilled where a shadow needs the
 * capacity). With reserveDepth 0 the plan is empty and every node passes. */
#ifndef TAREMA_SCHED_BACKFILL_PLUGIN_H
#define TAREMA_SCHED_BACKFILL_PLUGIN_H

#include "scheduler/framework/framework.h"
#include "scheduler/plugins/backfill/backfill.h"

#define BF_PLUGIN_NAME "Backfill"

/* The job key of a pod (its gang's, else its own uid); NULL = the uid. "" = the pod is exempt
 * from the rule: it runs on capacity held for it elsewhere, which the plan counts as taken
 * already (the owner of an admitted Reservation). */
typedef const char *(*bf_key_fn)(void *ud, const sched_pod *p);

/* Adds the plugin to fw with cfg (checked: -1 with err naming the bad field). */
int bf_plugin_add(sched_framework *fw, const bf_config *cfg, bf_key_fn key, void *ud, tm_err *err);
/* The same plugin over a plan another framework's Backfill plugin owns (bf_plugin_plan), whose
 * node indices are those of plan_snap: the extender's per-request frameworks (their snapshot
 * may be one of the request's own nodes) read the plan the loop computes. Filter only (no
 * Reserve: the pods are placed by kube-scheduler, and the next plan sees them). Both borrowed
 * must outlive fw; the caller serialises reads with the planning (the cache lock). */
int bf_plugin_add_borrowed(sched_framework *fw, const bf_config *cfg, bf_plan *plan,
                           const sched_snapshot *plan_snap, bf_key_fn key, void *ud, tm_err *err);
/* The plugin's plan (NULL when fw has no Backfill plugin), to be computed with
 * bf_plan_compute (cfg: bf_plugin_config) before the cycles it is to hold for. */
bf_plan *bf_plugin_plan(const sched_framework *fw);
const bf_config *bf_plugin_config(const sched_framework *fw);
/* Pods placed (Reserve) while the plan held a shadow for another job: backfilled. */
uint64_t bf_plugin_backfilled(const sched_framework *fw);
/* ms since the epoch as RFC 3339 UTC ("2026-11-29T08:00:00Z") into buf; returns buf. */
char *bf_format_time(int64_t ms, char *buf, size_t size);
/* "held for pod ns/a from 2026-11-29T08:00:00Z (backfill)": whom shadow `which` of p keeps a
 * node for and from when (the Filter's reason, the extender's bind refusal); buf. */
char *bf_held_reason(const bf_plan *p, size_t which, char *buf, size_t size);
/* The pod's expected end if it starts at now_ms on n (the rule above), -1 unknown. */
int64_t bf_pod_end(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                   const bf_config *cfg, int64_t now_ms);

#endif
