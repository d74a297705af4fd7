/* scheduler_queue_test.c: the scheduling queue: order, backoff growth and cap, the
 * unschedulable set and its moves, updates of queued and in-flight pods, removal, and which
 * FailedScheduling outcomes are reported. */
#include <stdlib.h>

#include "harness.h"
#include "scheduler/backend/queue.h"

static sched_pod *pod(const char *uid, int prio) {
    sched_pod *p = sched_pod_new("ns", uid, uid);
    p->priority = prio;
    return p;
}

/* Priority descending, then uid: a deterministic order for tests. */
static int by_prio(void *ud, const sched_pod *a, const sched_pod *b) {
    (void)ud;
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return strcmp(a->uid, b->uid);
}

static sched_queue *newq(void) {
    return sched_queue_new(by_prio, NULL, 1000, 8000);
}

static void test_pop_order(void) {
    sched_queue *q = newq();
    CHECK_INT(sched_queue_add(q, pod("c", 0), 0), 0);
    CHECK_INT(sched_queue_add(q, pod("a", 0), 0), 0);
    CHECK_INT(sched_queue_add(q, pod("z", 5), 0), 0);
    CHECK_INT(sched_queue_add(q, pod("b", 0), 0), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_ACTIVE), 4);
    const char *want[] = {"z", "a", "b", "c"};
    for (int i = 0; i < 4; i++) {
        sched_pod *p = sched_queue_pop(q, 0);
        CHECK(p != NULL);
        if (p)
            CHECK_STR(p->uid, want[i]);
    }
    CHECK(sched_queue_pop(q, 0) == NULL);
    CHECK_INT(sched_queue_count(q, SCHED_Q_IN_FLIGHT), 4);
    CHECK_INT(sched_queue_state(q, "a"), SCHED_Q_IN_FLIGHT);
    sched_queue_free(q);
}

static void test_backoff_growth_and_cap(void) {
    sched_queue *q = newq();
    CHECK_INT(sched_queue_backoff_ms(q, 1), 1000);
    CHECK_INT(sched_queue_backoff_ms(q, 2), 2000);
    CHECK_INT(sched_queue_backoff_ms(q, 3), 4000);
    CHECK_INT(sched_queue_backoff_ms(q, 4), 8000);
    CHECK_INT(sched_queue_backoff_ms(q, 30), 8000);
    sched_queue_add(q, pod("a", 0), 0);
    CHECK(sched_queue_pop(q, 0) != NULL);
    CHECK_INT(sched_queue_backoff(q, "a", 100), 0);
    CHECK_INT(sched_queue_state(q, "a"), SCHED_Q_BACKOFF);
    CHECK_INT(sched_queue_next_backoff_ms(q, 100), 1000);
    CHECK(sched_queue_pop(q, 1099) == NULL); /* not due yet */
    sched_pod *p = sched_queue_pop(q, 1100);
    CHECK(p != NULL);
    CHECK_INT(sched_queue_attempts(q, "a"), 1);
    CHECK_INT(sched_queue_backoff(q, "a", 2000), 0);
    CHECK_INT(sched_queue_next_backoff_ms(q, 2000), 2000); /* doubled */
    CHECK_INT(sched_queue_backoff(q, "a", 2000), -1);      /* not in flight any more */
    sched_queue_free(q);
}

static void test_backoff_order_by_time(void) {
    sched_queue *q = newq();
    sched_queue_add(q, pod("a", 9), 0);
    sched_queue_add(q, pod("b", 0), 0);
    sched_queue_pop(q, 0);
    sched_queue_pop(q, 0);
    sched_queue_backoff(q, "a", 500); /* due 1500 */
    sched_queue_backoff(q, "b", 0);   /* due 1000 */
    CHECK_INT(sched_queue_next_backoff_ms(q, 0), 1000);
    sched_pod *p = sched_queue_pop(q, 1200);
    CHECK(p && strcmp(p->uid, "b") == 0);
    CHECK(sched_queue_pop(q, 1200) == NULL);
    p = sched_queue_pop(q, 1500);
    CHECK(p && strcmp(p->uid, "a") == 0);
    CHECK_INT(sched_queue_next_backoff_ms(q, 1500), -1);
    sched_queue_free(q);
}

static void test_unschedulable_moves(void) {
    sched_queue *q = newq();
    sched_queue_add(q, pod("a", 0), 0);
    sched_queue_add(q, pod("b", 0), 0);
    sched_queue_pop(q, 0);
    sched_queue_pop(q, 0);
    CHECK_INT(sched_queue_unschedulable(q, "a", 0), 0);
    CHECK_INT(sched_queue_unschedulable(q, "b", 5000), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_UNSCHEDULABLE), 2);
    /* Unschedulable pods are not popped even after their backoff: they wait for a change. */
    CHECK(sched_queue_pop(q, 100000) == NULL);
    /* Periodic flush moves only the old one. */
    CHECK_INT(sched_queue_flush_unschedulable(q, 6000, 5500), 1);
    CHECK_INT(sched_queue_state(q, "a"), SCHED_Q_ACTIVE); /* backoff (1 s) long over */
    CHECK_INT(sched_queue_state(q, "b"), SCHED_Q_UNSCHEDULABLE);
    /* A cluster change moves the rest, into backoff since b failed only just now. */
    CHECK_INT(sched_queue_move_all(q, 5500), 1);
    CHECK_INT(sched_queue_state(q, "b"), SCHED_Q_BACKOFF);
    CHECK_INT(sched_queue_count(q, SCHED_Q_UNSCHEDULABLE), 0);
    CHECK_INT(sched_queue_move_all(q, 5500), 0);
    sched_queue_free(q);
}

static void test_update_and_remove(void) {
    sched_queue *q = newq();
    sched_queue_add(q, pod("a", 0), 0);
    sched_queue_add(q, pod("b", 0), 0);
    /* An update re-sorts an active pod. */
    sched_queue_add(q, pod("b", 7), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_ACTIVE), 2);
    sched_pod *p = sched_queue_pop(q, 0);
    CHECK(p && strcmp(p->uid, "b") == 0 && p->priority == 7);
    /* An update of an in-flight pod replaces the data, keeps it in flight. */
    sched_queue_add(q, pod("b", 3), 0);
    CHECK_INT(sched_queue_state(q, "b"), SCHED_Q_IN_FLIGHT);
    CHECK_INT(sched_queue_get(q, "b")->priority, 3);
    CHECK_INT(sched_queue_count(q, SCHED_Q_ACTIVE), 1);
    /* An updated unschedulable pod is retried. */
    CHECK_INT(sched_queue_unschedulable(q, "b", 0), 0);
    sched_queue_add(q, pod("b", 3), 10);
    CHECK_INT(sched_queue_state(q, "b"), SCHED_Q_BACKOFF);
    /* Removal from any state. */
    CHECK_INT(sched_queue_remove(q, "b"), 0);
    CHECK_INT(sched_queue_remove(q, "b"), -1);
    CHECK_INT(sched_queue_state(q, "b"), SCHED_Q_NONE);
    CHECK_INT(sched_queue_count(q, SCHED_Q_BACKOFF), 0);
    CHECK_INT(sched_queue_done(q, "a"), -1); /* a is active, not in flight */
    p = sched_queue_pop(q, 0);
    CHECK(p && strcmp(p->uid, "a") == 0);
    CHECK_INT(sched_queue_done(q, "a"), 0);
    CHECK_INT(sched_queue_count(q, SCHED_Q_NONE), 0);
    sched_queue_free(q);
}

/* Many pods through the hash table and heaps: every pod comes out once, in order. */
static void test_many(void) {
    sched_queue *q = newq();
    char uid[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(uid, sizeof uid, "p%05d", (i * 7919) % 5000);
        sched_queue_add(q, pod(uid, 0), 0);
    }
    CHECK_INT(sched_queue_count(q, SCHED_Q_ACTIVE), 5000);
    /* Half go to backoff and come back. */
    int n = 0, in_order = 1;
    char prev[32] = "";
    sched_pod *p;
    while ((p = sched_queue_pop(q, 0))) {
        if (strcmp(prev, p->uid) >= 0)
            in_order = 0;
        snprintf(prev, sizeof prev, "%s", p->uid);
        if (n++ % 2)
            sched_queue_backoff(q, p->uid, 0);
        else
            sched_queue_done(q, p->uid);
    }
    CHECK_INT(n, 5000);
    CHECK(in_order);
    CHECK_INT(sched_queue_count(q, SCHED_Q_BACKOFF), 2500);
    n = 0;
    while ((p = sched_queue_pop(q, 1000))) {
        sched_queue_done(q, p->uid);
        n++;
    }
    CHECK_INT(n, 2500);
    CHECK_INT(sched_queue_count(q, SCHED_Q_NONE), 0);
    sched_queue_free(q);
}

/* FailedScheduling is reported the first time, when its message changes, and again only after
 * the repeat interval; a pod forgotten and seen again starts afresh. */
static void test_report_only_changes(void) {
    sched_queue *q = newq();
    CHECK(sched_queue_should_report(q, "x", "m1", 0, 1000)); /* unknown pod: report */
    sched_queue_add(q, pod("a", 0), 0);
    CHECK(sched_queue_should_report(q, "a", "0/3 nodes are available", 0, 1000));
    CHECK(!sched_queue_should_report(q, "a", "0/3 nodes are available", 999, 1000));
    CHECK(sched_queue_should_report(q, "a", "0/4 nodes are available", 999, 1000));
    CHECK(!sched_queue_should_report(q, "a", "0/4 nodes are available", 1500, 1000));
    CHECK(sched_queue_should_report(q, "a", "0/4 nodes are available", 1999, 1000));
    CHECK(!sched_queue_should_report(q, "a", "0/4 nodes are available", 2000, 1000));
    CHECK_INT(sched_queue_remove(q, "a"), 0);
    sched_queue_add(q, pod("a", 0), 3000);
    CHECK(sched_queue_should_report(q, "a", "0/4 nodes are available", 3000, 1000));
    sched_queue_free(q);
}

/* The backfill planner's view: every waiting pod (active, backoff, unschedulable) in queue
 * order, whatever its state; gated and in-flight pods are left out. */
static void test_waiting_in_order(void) {
    sched_queue *q = newq();
    sched_queue_add(q, pod("c", 0), 0);
    sched_queue_add(q, pod("a", 0), 0);
    sched_queue_add(q, pod("z", 5), 0);
    sched_queue_add(q, pod("b", 0), 0);
    sched_queue_add(q, pod("y", 9), 0);
    sched_pod *p = sched_queue_pop(q, 0); /* y: in flight */
    CHECK_STR(p->uid, "y");
    p = sched_queue_pop(q, 0); /* z -> unschedulable */
    CHECK_STR(p->uid, "z");
    sched_queue_unschedulable(q, "z", 0);
    p = sched_queue_pop(q, 0); /* a -> backoff */
    CHECK_STR(p->uid, "a");
    sched_queue_backoff(q, "a", 0);
    const sched_pod *out[8];
    size_t n = sched_queue_waiting(q, out, 8);
    CHECK_INT(n, 4);
    const char *want[] = {"z", "a", "b", "c"};
    for (size_t i = 0; i < n && i < 4; i++)
        CHECK_STR(out[i]->uid, want[i]);
    CHECK_INT(sched_queue_waiting(q, out, 2), 2); /* bounded by cap */
    sched_queue_free(q);
}

/* KEP-5142 (SchedulerPopFromBackoffQ): with nothing active, an unschedulable pod moved to
 * backoff by a cluster change is tried at once; an active pod still goes first; a pod backing
 * off after an error waits its backoff out; switched off, backoff is waited out as before. */
static void test_pop_from_backoff_when_idle(void) {
    for (int on = 1; on >= 0; on--) {
        sched_queue *q = newq();
        sched_queue_set_pop_from_backoff(q, on);
        sched_queue_add(q, pod("u", 0), 0);
        sched_queue_add(q, pod("e", 9), 0);
        sched_queue_pop(q, 0); /* e */
        sched_queue_pop(q, 0); /* u */
        sched_queue_unschedulable(q, "u", 0);
        sched_queue_backoff(q, "e", 0);         /* an error: due at 1000 */
        CHECK(sched_queue_pop(q, 100) == NULL); /* unschedulable waits for a change */
        CHECK_INT(sched_queue_move_all(q, 200), 1);
        CHECK_INT(sched_queue_state(q, "u"), SCHED_Q_BACKOFF); /* due at 1000 */
        CHECK_INT(sched_queue_count(q, SCHED_Q_BACKOFF), 2);
        sched_queue_add(q, pod("n", 0), 300); /* a new pod: active */
        sched_pod *p = sched_queue_pop(q, 300);
        CHECK(p && strcmp(p->uid, "n") == 0); /* active first */
        p = sched_queue_pop(q, 300);
        if (on) {
            CHECKF(p && strcmp(p->uid, "u") == 0, "got %s", p ? p->uid : "nothing");
            CHECK(sched_queue_pop(q, 300) == NULL); /* e waits out its error backoff */
            CHECK_INT(sched_queue_next_backoff_ms(q, 300), 700);
        } else {
            CHECK(p == NULL);
            CHECK_INT(sched_queue_next_backoff_ms(q, 300), 700);
        }
        p = sched_queue_pop(q, 1000); /* both due now: e has the higher priority */
        CHECK(p && strcmp(p->uid, "e") == 0);
        if (!on) {
            p = sched_queue_pop(q, 1000);
            CHECK(p && strcmp(p->uid, "u") == 0);
        }
        CHECK(sched_queue_pop(q, 1000) == NULL);
        CHECK_INT(sched_queue_count(q, SCHED_Q_BACKOFF), 0);
        sched_queue_free(q);
    }
}

/* Pods that failed in one batch share a backoff end; when a cluster change moves them to
 * backoff and nothing is active, they are popped in queue order, whatever order the move
 * found them in (kube-scheduler's lessBackoffCompletedWithPriority). */
static void test_backoff_ties_in_queue_order(void) {
    const char *uids[] = {"c", "a", "d", "b"};
    sched_queue *q = sched_queue_new(by_prio, NULL, 100, 100);
    for (int i = 0; i < 4; i++)
        sched_queue_add(q, pod(uids[i], 0), 0);
    for (int i = 0; i < 4; i++)
        sched_queue_pop(q, 0);
    /* failed in reverse queue order, all at the same now (one batch) */
    const char *fail[] = {"d", "c", "b", "a"};
    for (int i = 0; i < 4; i++)
        CHECK_INT(sched_queue_unschedulable(q, fail[i], 1000), 0);
    CHECK_INT(sched_queue_move_all(q, 1050), 4); /* within the backoff: all to backoff */
    CHECK_INT(sched_queue_count(q, SCHED_Q_BACKOFF), 4);
    const char *want[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        sched_pod *p = sched_queue_pop(q, 1050);
        CHECKF(p && strcmp(p->uid, want[i]) == 0, "pop %d: got %s, want %s", i,
               p ? p->uid : "nothing", want[i]);
        if (p)
            sched_queue_unschedulable(q, p->uid, 1050);
    }
    sched_queue_free(q);
}

/* Priority only: pods of one priority are ties, as pods created in the same second are for the
 * framework's QueueSort (sched_framework_queue_order). */
static int prio_only(void *ud, const sched_pod *a, const sched_pod *b) {
    (void)ud;
    return a->priority != b->priority ? (a->priority > b->priority ? -1 : 1) : 0;
}

/* Ties keep the order the pods joined the queue, in the heap and in the backfill planner's
 * view alike, whatever their names or states: "wide" came first, so it stays the head even
 * after it failed and "long" (whose name sorts first) is active. */
static void test_ties_keep_arrival_order(void) {
    sched_queue *q = sched_queue_new(prio_only, NULL, 1000, 8000);
    sched_queue_add(q, pod("wide", 0), 0);
    sched_pod *p = sched_queue_pop(q, 0);
    CHECK_STR(p ? p->uid : "", "wide");
    sched_queue_unschedulable(q, "wide", 0);
    sched_queue_add(q, pod("long", 0), 0);
    sched_queue_add(q, pod("a-short", 0), 0);
    sched_queue_add(q, pod("urgent", 1), 0);
    const sched_pod *out[8];
    size_t n = sched_queue_waiting(q, out, 8);
    CHECK_INT(n, 4);
    const char *want[] = {"urgent", "wide", "long", "a-short"};
    for (size_t i = 0; i < n && i < 4; i++)
        CHECK_STR(out[i]->uid, want[i]);
    sched_queue_move_all(q, 0);
    const char *popped[] = {"urgent", "long", "a-short"}; /* wide backs off first */
    for (int i = 0; i < 3; i++) {
        p = sched_queue_pop(q, 0);
        CHECK_STR(p ? p->uid : "", popped[i]);
    }
    sched_queue_free(q);
}

/* After a release of capacity, a pod that waits for capacity alone moves only when the caller
 * says the release helps it; every other unschedulable pod moves; a pod's next failure clears
 * the mark. */
static bool helps_only(void *ud, const sched_pod *p) {
    return strcmp(p->uid, (const char *)ud) == 0;
}

static void test_move_released(void) {
    sched_queue *q = newq();
    const char *uids[] = {"cap-a", "cap-b", "other"};
    for (int i = 0; i < 3; i++) {
        sched_queue_add(q, pod(uids[i], 0), 0);
        sched_pod *p = sched_queue_pop(q, 0);
        CHECK(p != NULL);
        sched_queue_unschedulable(q, p ? p->uid : "", 0);
    }
    sched_queue_set_capacity_only(q, "cap-a");
    sched_queue_set_capacity_only(q, "cap-b");
    CHECK_INT(sched_queue_move_released(q, 0, helps_only, (void *)"cap-b"), 2);
    CHECK_INT(sched_queue_state(q, "cap-a"), SCHED_Q_UNSCHEDULABLE);
    CHECK(sched_queue_state(q, "cap-b") != SCHED_Q_UNSCHEDULABLE);
    CHECK(sched_queue_state(q, "other") != SCHED_Q_UNSCHEDULABLE);
    /* cap-b fails again, for another reason this time: no mark, it moves */
    CHECK(sched_queue_take(q, "cap-b") != NULL);
    CHECK_INT(sched_queue_unschedulable(q, "cap-b", 100000), 0);
    CHECK_INT(sched_queue_move_released(q, 100000, helps_only, (void *)"nobody"), 1);
    CHECK_INT(sched_queue_state(q, "cap-a"), SCHED_Q_UNSCHEDULABLE);
    CHECK_INT(sched_queue_move_all(q, 100000), 1); /* a cluster change moves it too */
    sched_queue_free(q);
}

int main(void) {
    RUN(test_pop_order);
    RUN(test_backoff_growth_and_cap);
    RUN(test_backoff_order_by_time);
    RUN(test_unschedulable_moves);
    RUN(test_update_and_remove);
    RUN(test_many);
    RUN(test_report_only_changes);
    RUN(test_waiting_in_order);
    RUN(test_ties_keep_arrival_order);
    RUN(test_move_released);
    RUN(test_pop_from_backoff_when_idle);
    RUN(test_backoff_ties_in_queue_order);
    return TEST_SUMMARY();
}
