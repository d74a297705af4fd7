/* planner_replan_test.c: when the controller replans and renews Reservations (planner/replan.h):
 * a predecessor's expected end (no replan every slot for a step that is late or not started:
 * issue 15's 109 `Replanned` events in 200 s), what a refused Reservation leads to (a retry
 * after a doubling backoff, or the per-step mode), and when an admitted Reservation must be
 * replaced because the scheduler keeps the window it admitted. */
#include <stdint.h>

#include "harness.h"
#include "planner/replan.h"

#define NOW 1000

/* Running on time: its planned end, or its start plus its walltime when that is later. */
static void test_expected_end_running(void) {
    CHECK_INT(pl_pred_expected_end(1030, 1000, 20, NOW, 1), 1030);
    CHECK_INT(pl_pred_expected_end(1030, 1015, 20, NOW, 1), 1035);
    CHECK_INT(pl_pred_expected_end(-1, 990, 20, NOW, 1), 1010);
}

/* Not started (released without binding, or its window passed): its whole walltime is still
 * ahead. Before, the controller expected it to end a slot from now, so its successor was planned
 * a slot ahead, its window opened while the predecessor had still not run, and it was replanned
 * again: every ~2 s for as long as the gang waited. */
static void test_expected_end_not_started(void) {
    CHECK_INT(pl_pred_expected_end(990, -1, 13, NOW, 1), NOW + 13);
    CHECK_INT(pl_pred_expected_end(1020, -1, 13, NOW, 1), 1020);
    /* the successor's window (at the expected end) opens no earlier than a walltime later:
     * ticking every second for a minute, the expected end moves with the clock but the replan
     * rule (window opened) fires at most once per walltime */
    int64_t start = pl_pred_expected_end(990, -1, 13, NOW, 1);
    int replans = 0;
    for (int64_t now = NOW + 1; now <= NOW + 60; now++)
        if (now >= start) {
            replans++;
            start = pl_pred_expected_end(990, -1, 13, now, 1);
        }
    CHECKF(replans <= 60 / 13, "%d replans in 60 s", replans);
}

/* Overrunning: expected to go on as long again as it has overrun, at least a slot: replans at
 * doubling intervals (1, 2, 4, 8, ... slots late), not every slot. */
static void test_expected_end_overrun(void) {
    CHECK_INT(pl_pred_expected_end(1000, 980, 20, NOW, 1), NOW + 1); /* just due */
    CHECK_INT(pl_pred_expected_end(990, 970, 20, NOW, 1), NOW + 10);
    CHECK_INT(pl_pred_expected_end(990, 970, 20, NOW, 60), NOW + 60);
    int64_t start = pl_pred_expected_end(990, 960, 30, NOW, 1); /* 10 s late */
    int replans = 0;
    for (int64_t now = NOW + 1; now <= NOW + 300; now++)
        if (now >= start) {
            replans++;
            start = pl_pred_expected_end(990, 960, 30, now, 1);
        }
    CHECKF(replans >= 3 && replans <= 6, "%d replans in 300 s", replans);
}

static void test_refusal_kinds(void) {
    CHECK(!pl_refusal_permanent("only 3 of 4 pods fit between 2026-11-24T06:00:00Z and "
                                "2026-11-24T06:00:13Z (running pods and other reservations "
                                "hold the rest): 0/2 nodes are available"));
    CHECK(!pl_refusal_permanent("only 1 of 2 pods fit between a and b (running pods and other "
                                "reservations hold the rest): no node matches the larger than "
                                "the cluster pods")); /* the fit message does not decide */
    CHECK(!pl_refusal_permanent("owner PodGroup ns/wf-s0 does not exist")); /* informer lag */
    CHECK(!pl_refusal_permanent(NULL));
    CHECK(pl_refusal_permanent("larger than the cluster: 5 pods of 1 cpu need 5 cpu, the 2 "
                               "matching nodes have 4 allocatable in total"));
    CHECK(pl_refusal_permanent("no node group matches: no node has tarema.io/group=c9"));
    CHECK(pl_refusal_permanent("no node matches spec.nodeSelector"));
    CHECK(pl_refusal_permanent("owner PodGroup ns/x: the PodGroup API is not served"));
}

static void test_refusal_backoff(void) {
    const char *cap = "only 3 of 4 pods fit";
    int64_t at = -1;
    CHECK(pl_refusal_decide(cap, 1, 4, NOW, 1, 600, &at) == 0 && at == NOW + 1);
    CHECK(pl_refusal_decide(cap, 2, 4, NOW, 1, 600, &at) == 0 && at == NOW + 2);
    CHECK(pl_refusal_decide(cap, 4, 4, NOW, 1, 600, &at) == 0 && at == NOW + 8);
    CHECK(pl_refusal_decide(cap, 5, 4, NOW, 1, 600, &at) == 1); /* retries used up */
    CHECK(pl_refusal_decide(cap, 4, 40, NOW, 60, 600, &at) == 0 && at == NOW + 480);
    CHECK(pl_refusal_decide(cap, 30, 40, NOW, 60, 600, &at) == 0 && at == NOW + 600); /* cap */
    CHECK(pl_refusal_decide(cap, 1, 0, NOW, 1, 600, &at) == 1); /* no retries */
    at = -1;
    CHECK(pl_refusal_decide("larger than the cluster: ...", 1, 4, NOW, 1, 600, &at) == 1);
    CHECK_INT(at, -1);
}

/* The scheduler keeps the window it admitted (a patched spec changes nothing held): a step
 * whose Reservation ended, or holds a window that is over by the step's new start, needs a new
 * one. Before, the planner only patched the spec: an Expired Reservation never became Active
 * and the step waited forever. */
static void test_renewal(void) {
    CHECK(pl_resv_needs_renewal("Failed", -1, -1, NOW, 1));
    CHECK(pl_resv_needs_renewal("Expired", 1000, 2000, NOW, 1));
    CHECK(pl_resv_needs_renewal("Released", -1, -1, NOW, 1));
    CHECK(!pl_resv_needs_renewal("Admitted", 1000, 1013, NOW + 1, 1)); /* a slot later: held */
    CHECK(!pl_resv_needs_renewal("Active", 1000, 1013, NOW + 12, 1));
    CHECK(pl_resv_needs_renewal("Admitted", 1000, 1013, NOW + 13, 1)); /* over by then */
    CHECK(pl_resv_needs_renewal("Active", 1000, 1013, NOW + 40, 1));
    /* a predecessor ended early: the step would wait for the held window */
    CHECK(pl_resv_needs_renewal("Admitted", 1010, 1020, NOW + 5, 1));
    CHECK(!pl_resv_needs_renewal("Admitted", 1010, 1020, NOW + 9, 2)); /* less than a slot */
    CHECK(!pl_resv_needs_renewal("Pending", -1, -1, NOW + 40, 1));     /* not admitted: the spec */
    CHECK(!pl_resv_needs_renewal("", -1, -1, NOW + 40, 1));
}

int main(void) {
    RUN(test_expected_end_running);
    RUN(test_expected_end_not_started);
    RUN(test_expected_end_overrun);
    RUN(test_refusal_kinds);
    RUN(test_refusal_backoff);
    RUN(test_renewal);
    return TEST_SUMMARY();
}
