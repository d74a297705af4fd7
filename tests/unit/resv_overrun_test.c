/* resv_overrun_test.c: which backfilled pods an opened Reservation window evicts
 * (resv_overrun.h), and spec.evictOverrunning as the Reservation parser reads it. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/plugins/reservation/resv_overrun.h"

#define S   1795000000000LL /* the window's start */
#define SEC 1000LL

static sched_resources cpu(int64_t m) {
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = m;
    return r;
}

static resv_overrun_pod pod(int64_t cpu_m, int64_t end_ms) {
    return (resv_overrun_pod){.req = cpu(cpu_m), .end_ms = end_ms};
}

/* A node of 8 cpu, 4 of them held; pods fill it: nothing free. */
static size_t victims(const resv_overrun_pod *ps, size_t n, int64_t free_m, int64_t used_m,
                      int64_t now, size_t *out) {
    sched_resources fr = cpu(free_m), held = cpu(4000), used = cpu(used_m);
    return resv_overrun_victims(&fr, &held, &used, S, now, ps, n, out);
}

static void test_overrun_pod_evicted_once_window_opens(void) {
    resv_overrun_pod ps[] = {pod(4000, S - 10 * SEC), pod(4000, -1)};
    size_t out[2];
    /* before the window: nothing, though the pod already ran past its end */
    CHECK_INT(victims(ps, 2, 0, 0, S - SEC, out), 0);
    /* open: the backfilled pod that overran goes; the pod of unknown end was never counted on */
    CHECK_INT(victims(ps, 2, 0, 0, S + SEC, out), 1);
    CHECK_INT(out[0], 0);
}

static void test_who_is_no_candidate(void) {
    resv_overrun_pod owner = pod(4000, S - 10 * SEC);
    owner.owner = true;
    resv_overrun_pod ps[] = {
        pod(4000, S + 60 * SEC), /* expected to end after the start: never let in on it */
        pod(4000, -1),           /* unknown end */
        owner,                   /* the owner's own pod */
        pod(4000, S + 5 * SEC),  /* ends after the start, even if now is later */
    };
    size_t out[4];
    CHECK_INT(victims(ps, 4, 0, 0, S + 120 * SEC, out), 0);
    CHECK(!resv_overrun_candidate(&ps[0], S, S + 120 * SEC));
    CHECK(!resv_overrun_candidate(&ps[2], S, S + 120 * SEC));
    /* an end exactly at the start counts as let in on it */
    resv_overrun_pod edge = pod(1000, S);
    CHECK(resv_overrun_candidate(&edge, S, S + 1));
    CHECK(!resv_overrun_candidate(&edge, S, S)); /* not past it yet */
}

static void test_only_what_the_owner_needs(void) {
    resv_overrun_pod ps[] = {pod(2000, S - 5 * SEC), pod(2000, S - 30 * SEC),
                             pod(2000, S - 20 * SEC)};
    size_t out[3];
    /* 4 cpu held, 2 free on the node: one 2-cpu pod is enough, the longest overrun first */
    CHECK_INT(victims(ps, 3, 2000, 0, S + SEC, out), 1);
    CHECK_INT(out[0], 1);
    /* nothing free: two, in order of expected end */
    CHECK_INT(victims(ps, 3, 0, 0, S + SEC, out), 2);
    CHECK_INT(out[0], 1);
    CHECK_INT(out[1], 2);
    /* the owner already uses 2 of the 4 held and 2 are free: nothing is needed */
    CHECK_INT(victims(ps, 3, 2000, 2000, S + SEC, out), 0);
    /* enough free for the whole hold: nothing */
    CHECK_INT(victims(ps, 3, 4000, 0, S + SEC, out), 0);
}

static void test_terminating_counts_as_freed(void) {
    resv_overrun_pod ps[] = {pod(4000, S - 30 * SEC), pod(4000, S - 5 * SEC)};
    ps[0].terminating = true; /* evicted in an earlier tick, still shown */
    size_t out[2];
    CHECK_INT(victims(ps, 2, 0, 0, S + SEC, out), 0);
    ps[0].req = cpu(2000); /* frees only half the need: the other one goes too */
    CHECK_INT(victims(ps, 2, 0, 0, S + SEC, out), 1);
    CHECK_INT(out[0], 1);
}

static void test_all_when_not_enough(void) {
    resv_overrun_pod ps[] = {pod(1000, S - 5 * SEC), pod(1000, S - 6 * SEC)};
    size_t out[2];
    /* 4 cpu needed, the two overran hold 2: both go (the rest is held by others) */
    CHECK_INT(victims(ps, 2, 0, 0, S + SEC, out), 2);
}

static void test_other_resources(void) {
    /* memory held and short; the overrun pod asks for memory */
    sched_resources fr = {0}, held = {0}, used = {0};
    held.v[SCHED_RES_MEMORY] = 8LL << 30;
    resv_overrun_pod p = {.end_ms = S - SEC};
    p.req.v[SCHED_RES_MEMORY] = 8LL << 30;
    size_t out[1];
    CHECK_INT(resv_overrun_victims(&fr, &held, &used, S, S + SEC, &p, 1, out), 1);
    fr.v[SCHED_RES_MEMORY] = 8LL << 30; /* free already */
    CHECK_INT(resv_overrun_victims(&fr, &held, &used, S, S + SEC, &p, 1, out), 0);
}

static reservation *parse(sched_snapshot *s, const char *extra, tm_err *err) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"r\"},\"spec\":{\"startTime\":"
             "\"2026-11-29T10:00:00Z\",\"duration\":\"1h\",\"count\":1,\"template\":{"
             "\"requests\":{\"cpu\":\"1\"}},\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}%s}}",
             extra);
    json_t *j = json_loads(text, 0, NULL);
    reservation *r = j ? reservation_from_json(s, j, err) : NULL;
    json_decref(j);
    return r;
}

static void test_spec_field(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    reservation *r = parse(s, "", &err);
    CHECKF(r && r->evict_overrunning, "default true: %s", err.msg);
    reservation_free(r);
    r = parse(s, ",\"evictOverrunning\":false", &err);
    CHECKF(r && !r->evict_overrunning, "false: %s", err.msg);
    reservation_free(r);
    r = parse(s, ",\"evictOverrunning\":\"no\"", &err);
    CHECK(!r);
    CHECKF(strstr(err.msg, "spec.evictOverrunning") && strstr(err.msg, "wf/r"), "%s", err.msg);
    reservation_free(r);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_overrun_pod_evicted_once_window_opens);
    RUN(test_who_is_no_candidate);
    RUN(test_only_what_the_owner_needs);
    RUN(test_terminating_counts_as_freed);
    RUN(test_all_when_not_enough);
    RUN(test_other_resources);
    RUN(test_spec_field);
    return TEST_SUMMARY();
}
