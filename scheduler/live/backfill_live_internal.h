/* backfill_live_internal.h: the live backfill planner's state, shared by backfill_live.c (the
 * plan) and backfill_bind.c (the extender's Reserve at its bind verb). Private to
 * scheduler/live. */
#ifndef TAREMA_SCHED_BACKFILL_LIVE_INTERNAL_H
#define TAREMA_SCHED_BACKFILL_LIVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/queue.h"
#include "scheduler/framework/framework.h"
#include "scheduler/live/config.h"
#include "scheduler/live/resv_controller.h"
#include "scheduler/plugins/backfill/backfill.h"
#include "scheduler/plugins/gang/gang.h"

/* What is known of a pod (any scheduler's, pending or bound) between its events. */
typedef struct bpod {
    char *uid;
    int64_t dur_ms;       /* expected runtime (resv_expected_end's rule), -1 unknown */
    int64_t start_ms;     /* status.startTime, else when first seen bound; 0 = pending */
    int64_t announced_ms; /* tarema.io/expected-start as last seen or written, -1 none */
    bool seen_pending;    /* seen unbound and not yet bound: its binding is an estimate's outcome */
    int64_t not_before_ms; /* unbound with tarema.io/not-before: its earliest start; 0 none */
    size_t idx;
} bpod;

/* A pod the extender's /bind bound (or is binding) that the informer has not seen bound yet. */
typedef struct bplaced {
    char uid[64];
    char node[254];
    sched_resources req;
    int64_t end_ms;
} bplaced;

struct sched_backfill_live {
    const sched_config *cfg;
    tm_kube *k;
    sched_cache *cache;
    sched_queue *q;
    sched_framework *fw;
    sched_gang_registry *gangs;
    const resv_controller *resv;
    sched_keys keys;
    bpod **pods;
    size_t n_pods, cap_pods;
    void *tree;
    bool dirty;
    int64_t last_plan_ms; /* mono, 0 = never */
    bool primed;          /* a plan saw this process's queue: the idle skip may apply */
    bool observe;         /* the queue is kube-scheduler's, observed (sched_backfill_live_observe):
                           * no pod of it is ever tried here, so no idle skip */
    bool quiet;           /* writes no expected-start (an extender replica standing by: the Lease
                           * holder writes them; sched_backfill_live_quiet) */
    bool batch_planned;   /* sched_backfill_live_unschedulable planned in this batch already */
    char keybuf[600];     /* the key function's answer (one at a time: under the cache lock, on the
                           * loop thread or an extender request's) */
    char **job_keys;      /* the last plan's job keys (its shadows point at them) */
    size_t n_job_keys;
    size_t n_not_before;     /* pods tracked with a not_before_ms: the plan is never skipped then */
    bool replan_now;         /* a not-before appeared or moved: plan at the next batch, whatever the
                              * resolution (narrow pods arriving meanwhile would take its capacity) */
    int32_t shadow_min_prio; /* the lowest priority among the last plan's shadowed jobs */
    uint64_t plan_gen;       /* plans made so far: a take of the extender's bind outlives no plan */
    bplaced *placed;         /* bound through the extender's /bind, not yet seen bound */
    size_t n_placed, cap_placed;
    uint64_t backfilled_seen;
    sched_prefilter *pf; /* the filters' per-pod state for eligibility, reused across plans */
    tm_metric *m_shadows, *m_backfilled, *m_plan_s, *m_announced, *m_start_error;
};

/* The job key of a pod ("pod ns/name", "gang KEY", "" for a reservation's owner), in b's
 * keybuf (ud is b; cache lock held). */
const char *bf_live_job_key(void *ud, const sched_pod *p);

/* Pods bound through the extender's /bind that the informer has not seen bound yet
 * (backfill_bind.c): whether uid is one; and adding them to a plan's running pods on their node
 * from now (forgetting those seen bound or gone since). false when out of memory. */
bool bf_live_is_placed(const sched_backfill_live *b, const char *uid);
bool bf_live_add_placed(sched_backfill_live *b, const sched_snapshot *snap, int64_t now,
                        bf_running **run, size_t *n);

#endif
