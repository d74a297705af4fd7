/* resv_overrun.h: which backfilled pods to evict when a Reservation's window opens (issue 31,
 * `spec.evictOverrunning`). Pure: no I/O, no clock (now comes in).
 *
 * Before a window opens, other pods may use its held capacity only if they are expected to end
 * by the time it opens (resv_honour: backfill), and admission counts a running pod's capacity as
 * free from its expected end on. That expected end was the condition the pod was let in on, as a
 * Slurm job's time limit is. A pod still running after it, once the window is open, holds
 * capacity that belongs to the reservation's owner: the pod overran.
 *
 * On one held node, at now >= the window's start, a pod is an overrun candidate when it is not
 * the owner's, its expected end is known, at or before the window's start (it was let in, or
 * counted at admission, on ending by then) and before now. Pods with no known end or one after
 * the start were never counted on (admission held capacity elsewhere for them): never candidates.
 *
 * Only what the owner still needs is freed: the part of the hold its pods do not use yet
 * (held - used) less what the node has free now; candidates already terminating count as freed
 * first (an eviction under way is not sent again). Then candidates are taken in order of
 * expected end, earliest first (the longest overrun, most likely stuck), until the need is met;
 * if all of them do not meet it, all are taken (each one holds reserved capacity). Nothing when
 * nothing is needed. */
#ifndef TAREMA_SCHED_RESV_OVERRUN_H
#define TAREMA_SCHED_RESV_OVERRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/backend/snapshot.h"

/* A pod on the held node. */
typedef struct resv_overrun_pod {
    sched_resources req;
    int64_t end_ms;   /* expected end from its start, -1 unknown */
    bool owner;       /* belongs to the reservation's owner */
    bool terminating; /* its deletion was already requested */
} resv_overrun_pod;

/* The overrun candidates on one held node (see above) to evict now, as indexes into pods (in
 * the order chosen) into out (room for n). node_free: allocatable - requested now (may be
 * negative); held, used: the hold on this node and what the owner's pods use of it. Returns how
 * many; 0 when the window has not opened, nothing is needed or nothing overran. */
size_t resv_overrun_victims(const sched_resources *node_free, const sched_resources *held,
                            const sched_resources *used, int64_t window_start_ms, int64_t now_ms,
                            const resv_overrun_pod *pods, size_t n, size_t *out);

/* Whether pod p is an overrun candidate (above) for a window starting at window_start_ms. */
bool resv_overrun_candidate(const resv_overrun_pod *p, int64_t window_start_ms, int64_t now_ms);

#endif
