/* replan.h: when the controller replans and what it expects meanwhile (pure, no I/O, no clock:
 * now comes in). planner/controller.c acts on these decisions; tests/unit/planner_replan_test.c
 * checks them.
 *
 * - A predecessor's expected end, from which the steps after it are replanned: its planned end,
 *   and never before its actual start plus its walltime; one not started yet needs its whole
 *   walltime from now; one running past its expected end is expected to go on as long again as
 *   it has overrun (at least a slot). The last two make a late step move its successors by its
 *   walltime, or by a doubling overrun, instead of by one slot every tick: the replan loop of
 *   issue 15 (a step released without its Reservation, not started, moved its successors one
 *   slot at a time: 109 `Replanned` events in 200 s).
 * - A Reservation the scheduler refused (phase Failed): a capacity refusal ("only 3 of 4 pods
 *   fit ...": what the planner saw has changed since it planned) is retried: the step is planned
 *   again from fresh occupancy after a backoff (a slot, doubling) and gets a new Reservation; a
 *   refusal that no replan can change (larger than the cluster, no node matches, the PodGroup
 *   API not served), or more capacity refusals than allowed, falls back to the per-step mode
 *   (on-completion).
 * - An admitted Reservation holds the window it was admitted with: the scheduler ignores a
 *   patched spec (docs/reservations.md, Limits). So a step whose Reservation ended before the
 *   step was released (Failed, Expired, Released), or whose new window starts when the held one
 *   has ended or a slot or more before it opens, needs a new Reservation:
 *   pl_resv_needs_renewal. */
#ifndef TAREMA_PLANNER_REPLAN_H
#define TAREMA_PLANNER_REPLAN_H

#include <stdint.h>

/* Expected end (seconds since the epoch) of a step that has not succeeded, for planning the
 * steps after it: planned_end (its window's end; -1 unknown), actual_start (-1: not started),
 * walltime_s (on the groups it is planned on or runs on), now, slot_s. Always > now. */
int64_t pl_pred_expected_end(int64_t planned_end, int64_t actual_start, int64_t walltime_s,
                             int64_t now, int64_t slot_s);

/* True when the scheduler's refusal message says the Reservation can never be admitted as
 * planned, whatever the occupancy: retrying would only be refused again. */
int pl_refusal_permanent(const char *message);

/* What to do after the refusals-th refusal (1 = the first) of a step's Reservation: returns 1 to
 * fall back to the per-step mode (a permanent refusal, or refusals > max_retries), else 0 with
 * *retry_at = now + slot_s * 2^(refusals - 1), at most cap_s later (cap_s >= slot_s). */
int pl_refusal_decide(const char *message, int refusals, int max_retries, int64_t now,
                      int64_t slot_s, int64_t cap_s, int64_t *retry_at);

/* Whether a planned step's Reservation must be replaced by a new one (deleted and created
 * again) to hold its new window [new_start, ..): its phase ended without the step (Failed,
 * Expired, Released); or the window it holds [held_start, held_end) (-1: not admitted yet, the
 * spec counts) ends at or before the new start, so that it can no longer take the step's pods;
 * or opens a slot or more after the new start, so that the step would wait for it (a
 * predecessor ended early). */
int pl_resv_needs_renewal(const char *phase, int64_t held_start, int64_t held_end,
                          int64_t new_start, int64_t slot_s);

#endif
