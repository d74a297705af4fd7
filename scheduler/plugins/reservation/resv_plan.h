/* resv_plan.h: reservations in time, the pure part. A table of admitted reservations (what
 * each holds on which node during which window), admission against running pods' expected
 * ends and the other admitted reservations, the honouring rule the Filter plugin applies, and
 * the phase/release decision. No I/O, no clock (now comes in), no global state: the live
 * controller, the simulator and the benchmark share it.
 *
 * Capacity model: during [start, end) a reservation holds, on each of its nodes, the requests
 * of the template pods placed there (or the whole node for spec.nodes without a template).
 * Admission sees a node's capacity in the window as allocatable minus
 *   - running pods whose expected end is after the window starts (unknown end: forever), and
 *   - the peak, over the window, of what admitted reservations overlapping it hold there,
 * so two admitted reservations never claim the same capacity at the same time. The template
 * pod is then placed count times by the same framework (filters and score plugins) as any pod:
 * tarema prefers the node group matching the template's task labels. */
#ifndef TAREMA_SCHED_RESV_PLAN_H
#define TAREMA_SCHED_RESV_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/backend/snapshot.h"

typedef struct resv_plan resv_plan;

resv_plan *resv_plan_new(void); /* NULL on OOM */
void resv_plan_free(resv_plan *p);

/* Adds (or replaces) an admitted reservation: key "ns/name", its window and holds (copied).
 * 0 or -1 with err. */
int resv_plan_put(resv_plan *p, const char *key, int64_t start_ms, int64_t end_ms,
                  const resv_hold *holds, size_t n, tm_err *err);
/* Sets the priority of an entry (its spec.priorityClassName's value; 0 when put): an admission
 * of higher priority may displace it while its window has not opened. -1 when unknown. */
int resv_plan_set_priority(resv_plan *p, const char *key, int32_t priority);
/* Forgets it (released, expired, deleted). -1 when unknown. */
int resv_plan_remove(resv_plan *p, const char *key);
size_t resv_plan_count(const resv_plan *p);
bool resv_plan_has(const resv_plan *p, const char *key);
/* The window key was admitted (or restored) with; false when it is not in the table. */
bool resv_plan_window(const resv_plan *p, const char *key, int64_t *start_ms, int64_t *end_ms);
/* What the owner's pods use of the hold on node right now (the controller counts them); 0 or
 * -1 when the key holds nothing there. */
int resv_plan_set_used(resv_plan *p, const char *key, const char *node,
                       const sched_resources *used);
/* Total held on node by every entry (for tests and leak checks); the number of entries with a
 * hold on node in *n_entries (may be NULL). */
void resv_plan_node_held(const resv_plan *p, const char *node, sched_resources *out,
                         size_t *n_entries);

/* Calls fn for every hold of every entry: its key, window, node, what it holds there and what
 * the owner's pods use of it now (resv_plan_set_used). The backfill planner (issue 32) sees the
 * held capacity the owner's pods do not use yet as taken during the window. */
typedef void (*resv_hold_fn)(void *ud, const char *key, int64_t start_ms, int64_t end_ms,
                             const char *node, const sched_resources *held,
                             const sched_resources *used);
void resv_plan_each_hold(const resv_plan *p, resv_hold_fn fn, void *ud);

/* Peak, per resource, of what entries other than `except` (may be NULL) hold on node at any
 * moment of [t0, t1). */
void resv_plan_peak(const resv_plan *p, const char *node, int64_t t0, int64_t t1,
                    const char *except, sched_resources *out);

/* A pod placed on a node, for admission: its requests and expected end (-1 unknown). */
typedef struct resv_running {
    const char *node;
    sched_resources req;
    int64_t end_ms;
} resv_running;

/* An admitted reservation that made way for one of higher priority. */
typedef struct resv_displaced {
    char *key; /* "ns/name" (owned) */
    int32_t priority;
} resv_displaced;

typedef struct resv_admission {
    bool ok;
    char reason[768]; /* why not admissible (ok false) */
    resv_hold *holds; /* ok: what is held (owned; resv_admission_clear frees) */
    size_t n_holds;
    /* ok: the admitted reservations it displaced, out of the table now (the caller plans them
     * again or fails them), the most important first */
    resv_displaced *displaced;
    size_t n_displaced;
} resv_admission;
void resv_admission_clear(resv_admission *a);

/* resv_plan_admit for n reservations in order (each against the ones admitted before it), the
 * planning snapshot and the running pods' nodes resolved once: what a controller with several
 * pending reservations, and the benchmark, call. outs[i] for rs[i]. 0, or -1 with err (the
 * outcomes before the failing one stand). */
int resv_plan_admit_batch(resv_plan *p, sched_framework *fw, sched_snapshot *live,
                          const reservation *const *rs, size_t n, const sched_keys *keys,
                          const resv_running *pods, size_t n_pods, int64_t now_ms,
                          resv_admission *outs, tm_err *err);

/* Admits r if it fits (keys: where the template's labels name its task, NULL = defaults): picks
 * nodes with fw (a framework used only for planning: its plugin state sees the template pods) on
 * the nodes, groups and task table of live, against pods and the table; on success puts r into the
 * table (key ns/name) and returns its holds in out. Not admissible: out->ok false and out->reason
 * (larger than the cluster, no node matches the selector or group, a listed node does not exist,
 * not enough capacity in the window). Returns 0, or -1 with err on OOM or a plugin failure.
 *
 * Displacement (issue 31): when r does not fit, but could on an empty cluster, it is planned again
 * without the admitted reservations of lower priority (r->priority) whose windows overlap its
 * own and have not opened at now_ms. If it fits then, it is admitted; of those taken out, the
 * ones whose holds still fit where they were are put back (highest priority first, then the
 * earliest admitted) and the rest are listed in out->displaced. An open window is never
 * displaced: its owner's pods may be running in it. */
int resv_plan_admit(resv_plan *p, sched_framework *fw, sched_snapshot *live, const reservation *r,
                    const sched_keys *keys, const resv_running *pods, size_t n_pods, int64_t now_ms,
                    resv_admission *out, tm_err *err);

/* Expected end of a pod started at start_ms on node n (NULL: no node group known): start +
 * annotation tarema.io/expected-duration if given, else + the TaskProfile's runtime on n's
 * node group (else its mean runtime); never after start + activeDeadlineSeconds. -1 when
 * nothing is known (the pod may run forever). */
int64_t resv_expected_end(const sched_snapshot *s, const sched_pod *pod, const sched_node *n,
                          int64_t start_ms);

/* ---- honouring ---------------------------------------------------------------------------- */

/* One reservation's hold on the node a pod is being checked against. */
typedef struct resv_claim {
    int64_t start_ms, end_ms;
    sched_resources held;       /* what it holds on this node */
    sched_resources owner_used; /* what its owner's pods use of it now */
    bool pod_is_owner;          /* the pod being placed belongs to its owner */
} resv_claim;

typedef enum {
    RESV_HONOUR_OK = 0,
    RESV_HONOUR_RESERVED,    /* inside a window: the capacity belongs to another owner */
    RESV_HONOUR_NO_BACKFILL, /* before a window: the pod would still run when it opens */
    RESV_HONOUR_ELSEWHERE    /* the owner's capacity is held on other nodes */
} resv_verdict;

/* The honouring rule for one pod on one node: inside its window reserved capacity is usable
 * only by the owner's pods; before the window other pods may use it only if their expected end
 * (pod_end_ms, -1 unknown) is at or before the window starts (backfill). Capacity the node has
 * beyond what is held stays usable by anyone. node_free = allocatable - requested now; *which
 * (may be NULL) = the index of the claim that decided a rejection. */
resv_verdict resv_honour(const sched_resources *node_free, const resv_claim *claims, size_t n,
                         const sched_resources *req, int64_t pod_end_ms, int64_t now_ms,
                         size_t *which);

/* The honouring rule against the table for node `node`: builds its claims (is_owner tells
 * whether the pod belongs to the reservation with that key) and applies resv_honour; adds
 * the "elsewhere" rule: an owner's pod inside the window goes to the nodes held for it while
 * they have room for it. why (may be NULL) gets a message naming the reservation. */
typedef bool (*resv_is_owner_fn)(void *ud, const char *key);
resv_verdict resv_plan_filter(const resv_plan *p, const char *node,
                              const sched_resources *node_free, const sched_resources *req,
                              int64_t pod_end_ms, resv_is_owner_fn is_owner, void *ud,
                              int64_t now_ms, char *why, size_t why_size);
/* resv_plan_filter where the "elsewhere" rule sees what the owner's pods use of a hold as the
 * table's count (resv_plan_set_used) raised by adjust (NULL: as is): the Reservation plugin
 * adds the pods it placed that the count does not include yet (a gang placed in one cycle,
 * binds the controller has not seen). ud goes to both callbacks. */
typedef void (*resv_used_adjust_fn)(void *ud, const char *key, const char *node,
                                    sched_resources *used);
resv_verdict resv_plan_filter_adjusted(const resv_plan *p, const char *node,
                                       const sched_resources *node_free, const sched_resources *req,
                                       int64_t pod_end_ms, resv_is_owner_fn is_owner,
                                       resv_used_adjust_fn adjust, void *ud, int64_t now_ms,
                                       char *why, size_t why_size);

/* ---- phase and release --------------------------------------------------------------------- */

/* What the controller knows of a reservation that holds capacity. */
typedef struct resv_facts {
    resv_phase phase;
    int64_t start_ms, end_ms, now_ms;
    bool deleted;          /* the Reservation is gone or being deleted */
    bool owner_missing;    /* its PodGroup/Workload does not exist (known, not assumed) */
    bool owner_started;    /* an owner's pod ran in the window */
    size_t owner_pods_now; /* owner's pods not finished (pending or running) */
} resv_facts;

typedef struct resv_decision {
    resv_phase phase;    /* the phase it should have now */
    bool release;        /* drop its holds */
    const char *message; /* why (static text) */
} resv_decision;

/* Admitted -> Active at startTime; Active or Admitted -> Released when the reservation is
 * deleted, its owner is deleted, or (Active) the owner's pods ran and all finished; -> Expired at
 * endTime. Other phases stay as they are. */
resv_decision resv_decide(const resv_facts *f);

#endif
