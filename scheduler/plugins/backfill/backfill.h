/* backfill.h: time-aware backfill for the head of the queue (issue 32, docs/backfill.md), the
 * pure part. Slurm's rule: each of the first reserveDepth pending pods or gangs in queue order
 * that cannot start now gets a shadow, the earliest time and the nodes at which it will fit
 * given the running pods' expected ends, the admitted Reservations and the shadows ahead of it;
 * any other pod may start now on a node only where it delays none of those ahead of its own job
 * in the queue: it ends (by its expected end) at or before the shadow starts, or it uses
 * capacity the shadow does not need there.
 *
 * Capacity model, per node, over time from now:
 *   - a running pod holds its requests until its expected end (resv_expected_end's rule, the
 *     caller resolves it); with no known end it holds them until now + defaultRuntime when
 *     that is set (Slurm's DefaultTime), else forever. A pod past its expected end (an overrun)
 *     is taken to end one resolution step from now, so shadows move as pods overrun or end
 *     early: the plan is made again every cycle.
 *   - an admitted Reservation holds what it holds on the node during its window;
 *   - a shadow holds its members' requests from its start until start + its expected runtime
 *     (unknown: forever, which only matters for the shadows behind it).
 * A job's members are placed first fit over the nodes (several may share one) at the candidate
 * times now, then every time something ends, rounded up to the resolution, until one fits or
 * the window is passed. A job that fits now is planned as started now (it holds what it needs
 * and counts for no depth: the scheduler places it this cycle), unless it is marked hold_now
 * (it waits out a backoff while others are tried): then its shadow starts now. Work per plan
 * is bounded: at
 * most maxJobTest jobs are looked at and at most BF_MAX_CANDIDATES start times per job (when
 * more things end within the window, the step between start times is doubled until they fit).
 * No I/O, no clock, so that the live scheduler (scheduler/live/backfill_live.h), the extender
 * and the simulator (sim/backfill_sim.h) can share it. */
#ifndef TAREMA_SCHED_BACKFILL_H
#define TAREMA_SCHED_BACKFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/backend/snapshot.h"

#define BF_DEPTH_ALL             -1 /* reserveDepth: all = conservative backfill */
#define BF_RESOLUTION_MS_DEFAULT 1000
#define BF_MAX_JOB_TEST_DEFAULT  500
#define BF_WINDOW_MS_DEFAULT     (24LL * 3600 * 1000)
#define BF_MAX_CANDIDATES        1024 /* start times tried per job */

typedef struct bf_config {
    int reserve_depth;          /* 0 = off (today's first fit), N, BF_DEPTH_ALL; default 1 */
    int64_t resolution_ms;      /* shadow starts are rounded up to a multiple of it (> 0) */
    int max_job_test;           /* jobs looked at per plan (> 0) */
    int64_t window_ms;          /* no shadow starts later than now + window (> 0) */
    int64_t default_runtime_ms; /* runtime of a pod with no known end; 0 = unknown: it holds
                                 * its node forever and is not backfilled where a shadow holds
                                 * capacity it would need */
} bf_config;

/* reserveDepth 1 (EASY), resolution 1 s, maxJobTest 500, window 24 h, no default runtime. */
bf_config bf_config_default(void);
/* Parses a reserveDepth value: "all" (conservative) or an integer 0..100000. 0 or -1 with err
 * naming the value. */
int bf_depth_parse(const char *v, int *out, tm_err *err);
/* Checks a config: -1 with err naming the first bad field. */
int bf_config_check(const bf_config *c, tm_err *err);

/* A pod placed on node index `node`, holding req until end_ms (-1 unknown). start_ms (0
 * unknown) dates an unknown end under defaultRuntime: start + defaultRuntime, else now + it. */
typedef struct bf_running {
    int node;
    sched_resources req;
    int64_t start_ms, end_ms;
} bf_running;

/* Capacity held on node index `node` during [start_ms, end_ms): an admitted Reservation's hold. */
typedef struct bf_busy {
    int node;
    sched_resources req;
    int64_t start_ms, end_ms;
} bf_busy;

/* A pending pod (n_members 1) or gang, in queue order. member_req[i] is member i's requests;
 * runtime_ms its expected runtime (-1 unknown); eligible (may be NULL: every node) says on which
 * node indices its members may run at all (selectors, taints: the caller's filters). key names
 * it (the pods of a gang share the key) and is borrowed for the plan's life. */
typedef struct bf_job {
    const char *key;
    size_t n_members;
    const sched_resources *member_req;
    int64_t runtime_ms;
    const bool *eligible;
    /* The job may not be tried before the pods behind it (the live queue: it waits out a
     * backoff; in extender mode, a job that held a shadow: kube-scheduler's queue decides):
     * when it fits now it still gets a shadow, starting now, so that the pods tried meanwhile
     * do not take what it needs. false: a job that fits now holds nothing (the scheduler
     * places it first). */
    bool hold_now;
    /* Wall ms before which the job cannot start (0: none): a pod released early but held by an
     * order gate until its predecessors end (ASA's pro-active submission; the planner's
     * tarema.io/not-before). Its shadow starts then at the earliest, never now. */
    int64_t not_before_ms;
} bf_job;

typedef struct bf_plan bf_plan;
bf_plan *bf_plan_new(void); /* NULL on OOM */
void bf_plan_free(bf_plan *p);

/* Plans the shadows (replacing the previous plan). alloc[n] is node n's allocatable. 0, or -1
 * with err (out of memory, bad config). */
int bf_plan_compute(bf_plan *p, const bf_config *cfg, const sched_resources *alloc, size_t n_nodes,
                    const bf_running *run, size_t n_run, const bf_busy *busy, size_t n_busy,
                    const bf_job *jobs, size_t n_jobs, int64_t now_ms, tm_err *err);

/* One shadow: job index (into the jobs of the last compute), start and end (INT64_MAX:
 * unknown runtime), and what it holds on each of its nodes. */
typedef struct bf_shadow_hold {
    int node;
    sched_resources req;
    sched_resources spare;  /* what the node has beyond every shadow's need during this
                             * shadow (lowered by bf_plan_take) */
    sched_resources placed; /* what the shadow's own pods placed here took (bf_plan_take):
                             * within req, a pod is where the plan put it */
} bf_shadow_hold;
typedef struct bf_shadow {
    size_t job;
    const char *key;
    int64_t start_ms, end_ms;
    const bf_shadow_hold *holds;
    size_t n_holds;
} bf_shadow;

size_t bf_plan_shadow_count(const bf_plan *p);
const bf_shadow *bf_plan_shadow(const bf_plan *p, size_t i);
/* When job j of the last compute is planned to start: now when it fits now, a shadow's start,
 * or -1 (not looked at: past the depth or maxJobTest, larger than the cluster, or beyond the
 * window). */
int64_t bf_plan_job_start(const bf_plan *p, size_t j);
/* The shadow of the job with this key, NULL when none. */
const bf_shadow *bf_plan_shadow_of(const bf_plan *p, const char *key);
/* How many shadows are of jobs ahead of the job with this key in the queue: all of them when it
 * has none. A pod that starts while one is > 0 is backfilled. */
size_t bf_plan_shadows_ahead(const bf_plan *p, const char *key);

typedef enum {
    BF_OK = 0,       /* delays no shadow */
    BF_DELAYS_SHADOW /* would still run when a shadow starts, on capacity the shadow needs */
} bf_verdict;

/* The backfill rule for a pod (key: its job's key, may be NULL) with requests req and expected
 * end end_ms (-1 unknown) starting now on node index `node`. A job's pods are never held back by
 * its own shadow, nor by the shadows of jobs behind it in the queue (planned around it: Slurm's
 * rule, a reservation never delays a job of higher priority; they move at the next plan). What
 * they take within their own shadow's hold on the node, when that shadow starts now, is not
 * counted again against a shadow whose spare counted the hold for their whole stay (see
 * docs/backfill.md). *which (may be NULL) gets the index of the shadow that decided a
 * rejection. */
bf_verdict bf_plan_check(const bf_plan *p, int node, const char *key, const sched_resources *req,
                         int64_t end_ms, size_t *which);
/* Records that such a pod was placed (the next pods of the cycle see less spare capacity). */
void bf_plan_take(bf_plan *p, int node, const char *key, const sched_resources *req,
                  int64_t end_ms);
/* Undoes bf_plan_take (the pod was unreserved). */
void bf_plan_give(bf_plan *p, int node, const char *key, const sched_resources *req,
                  int64_t end_ms);

#endif
