/* loop.h: the running scheduler: informers feed the cache, our pending pods go through the
 * queue, each scheduling cycle filters and scores on the snapshot, reserves, and hands the bind
 * to the binder, all on the one thread that runs the kube loop.
 *
 *   sched_loop *l = sched_loop_new(cfg, kube, metrics, &err);
 *   sched_loop_start(l, &err);               // informers (+ leader election)
 *   while (!stop) sched_loop_step(l, &err);  // schedule what is ready, then drive I/O
 *   sched_loop_free(l);                      // after tm_kube_free? no: before; see below
 *
 * Threads: everything here runs on the loop thread except sched_loop_ready and
 * sched_loop_cache (its lock), which the HTTP threads use. Scheduling batches hold the cache
 * lock; binds are started during the batch and complete later on the loop.
 *
 * Mode extender: sched_loop_start starts the informers only (no queue, no binds), so the
 * extender routes answer from a live cache (nodeCacheCapable=true). */
#ifndef TAREMA_SCHED_LOOP_H
#define TAREMA_SCHED_LOOP_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/error.h"
#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/live/config.h"
#include "scheduler/live/fw_metrics.h"
#include "scheduler/live/resv_controller.h"

typedef struct sched_loop sched_loop;

/* cfg, k and reg are borrowed and must outlive the loop; cfg->identity must be set. Registers
 * the scheduler's metrics in reg. NULL with err (unknown policy, OOM, metric clash). */
sched_loop *sched_loop_new(const sched_config *cfg, tm_kube *k, tm_metrics *reg, tm_err *err);

/* Starts the informers and, with leaderElection, the Lease. 0 or -1 with err. */
int sched_loop_start(sched_loop *l, tm_err *err);

/* One iteration: a batch of scheduling cycles (when leading and synced), then up to
 * max_wait_ms of I/O on the kube loop. 0, or -1 with err on a loop failure. */
int sched_loop_step(sched_loop *l, int max_wait_ms, tm_err *err);

/* Stops informers and leader election (releasing the Lease when held). Call before
 * tm_kube_free; sched_loop_free afterwards. */
void sched_loop_stop(sched_loop *l);
void sched_loop_free(sched_loop *l);

/* Thread-safe. Ready = nodes and pods listed; the reason says what is missing. */
bool sched_loop_ready(void *loop, char *reason, size_t reason_size);
/* The framework timings' series (fw_metrics.h), for the extender's frameworks; NULL for a
 * NULL loop. Owned by the loop. */
sched_fw_metrics *sched_loop_fw_metrics(sched_loop *l);
bool sched_loop_leading(const sched_loop *l); /* thread-safe */

/* fn(ud) at the end of each sched_loop_step (loop thread, no lock held) in which the view may
 * have changed for a waiting pod: an informer event that can let pods fit (a pod gone, a node
 * changed), a reservation's state, a new backfill plan; at most once per 50 ms, a change within
 * that gap runs when it ends. The extender's retries (server.c). */
void sched_loop_on_view_change(sched_loop *l, void (*fn)(void *ud), void *ud);
/* The cache (for the extender routes; lock it around snapshot reads). */
sched_cache *sched_loop_cache(sched_loop *l);
/* Whether the API server serves the collection at path (a CRD or an alpha API may be absent):
 * GET path?limit=1. false with err when it does not answer it (err->http_status 404: not
 * served; 0: no answer). Blocking: start-up and the periodic re-checks only. Shared by the
 * loop's gang informers and the reservation controller's. */
bool sched_api_served(tm_kube *k, const char *path, tm_err *err);

/* The reservation controller (read-only in extender mode); its table is read under the cache
 * lock. */
resv_controller *sched_loop_resv(sched_loop *l);
/* The backfill planner (NULL with reserveDepth 0): the extender's requests borrow its plan. */
struct sched_backfill_live *sched_loop_backfill(sched_loop *l);

/* Counters for tests and logs. */
typedef struct sched_loop_stats {
    size_t scheduled, unschedulable, errors, bound, bind_failures, conflicts;
} sched_loop_stats;
sched_loop_stats sched_loop_get_stats(const sched_loop *l);

#endif
