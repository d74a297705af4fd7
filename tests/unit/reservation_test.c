/* reservation_test.c: the Reservation resource: parsing, validation messages, owner matching,
 * template pod, status patches. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/duration.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/reservation/reservation.h"

static json_t *parse(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        printf("    bad fixture: %s\n", je.text);
    return j;
}

/* Parses text; returns the reservation or NULL with the error message in msg. */
static reservation *load(sched_snapshot *s, const char *text, char *msg, size_t size) {
    json_t *j = parse(text);
    tm_err err = {0};
    reservation *r = j ? reservation_from_json(s, j, &err) : NULL;
    snprintf(msg, size, "%.400s", r ? "" : err.msg);
    json_decref(j);
    return r;
}

#define HEAD "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"step5\",\"uid\":\"u1\"},"

static void test_parse_template(void) {
    sched_snapshot *s = sched_snapshot_new();
    char msg[512];
    reservation *r = load(s,
                          HEAD "\"spec\":{\"startTime\":\"2026-11-24T01:00:00Z\","
                               "\"duration\":\"30m\",\"count\":5,\"template\":{\"requests\":"
                               "{\"cpu\":\"2\",\"memory\":\"1Gi\"},\"labels\":{\"nextflow.io/"
                               "processName\":\"align\"}},\"nodeGroup\":\"g2\","
                               "\"owner\":{\"kind\":\"PodGroup\",\"name\":\"mpi\"}}}",
                          msg, sizeof msg);
    CHECKF(r != NULL, "%s", msg);
    if (r) {
        CHECK_STR(r->ns, "wf");
        CHECK_INT(r->count, 5);
        CHECK_INT(r->end_ms - r->start_ms, 30 * 60 * 1000);
        CHECK_INT(r->phase, RESV_PENDING);
        CHECK(r->owner_kind == RESV_OWNER_PODGROUP);
        CHECK_STR(r->node_group, "g2");
        CHECK_STR(json_string_value(json_object_get(r->node_selector, "tarema.io/group")), "g2");
        json_t *pj = reservation_template_pod(r);
        tm_err err = {0};
        sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
        CHECKF(p != NULL, "%s", err.msg);
        if (p) {
            CHECK_INT(p->requests.v[SCHED_RES_CPU], 2000);
            CHECK_INT(p->requests.v[SCHED_RES_MEMORY], 1LL << 30);
            CHECK_STR(p->process, "align");
            CHECK_INT(p->n_node_selector, 1);
        }
        sched_pod_free(p);
        json_decref(pj);
    }
    reservation_free(r);
    sched_snapshot_free(s);
}

static void test_bad_input_messages(void) {
    sched_snapshot *s = sched_snapshot_new();
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"endTime\":\"2026-11-24T00:00:00Z\","
         "\"template\":{\"requests\":{\"cpu\":\"1\"}},\"owner\":{\"kind\":\"PodGroup\","
         "\"name\":\"g\"}",
         "spec.endTime 2026-11-24T00:00:00Z is not after spec.startTime"},
        {"\"startTime\":\"tomorrow\",\"duration\":\"1h\",\"template\":{\"requests\":{}},"
         "\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "spec.startTime"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"0s\",\"template\":{"
         "\"requests\":{}},\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "must be positive"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"owner\":{\"kind\":"
         "\"PodGroup\",\"name\":\"g\"}",
         "spec.template (with spec.count) or spec.nodes is required"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"template\":{"
         "\"requests\":{\"cpu\":\"1\"}}",
         "spec.owner is required"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"template\":{"
         "\"requests\":{\"cpu\":\"1\"}},\"owner\":{\"kind\":\"Job\",\"name\":\"j\"}",
         "spec.owner.kind \"Job\" is not PodGroup or Workload"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"template\":{"
         "\"requests\":{\"cpu\":\"lots\"}},\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "spec.template"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"count\":0,\"template\":{"
         "\"requests\":{\"cpu\":\"1\"}},\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "spec.count 0 must be between 1"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"nodes\":[\"a\",\"a\"],"
         "\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "spec.nodes names a twice"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"nodes\":[\"a\"],"
         "\"owner\":{\"selector\":{}}",
         "spec.owner.selector is empty"},
        {"\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":\"1h\",\"nodes\":[\"a\"],"
         "\"priorityClassName\":7,\"owner\":{\"kind\":\"PodGroup\",\"name\":\"g\"}",
         "spec.priorityClassName must be a non-empty string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], msg[512];
        snprintf(text, sizeof text, HEAD "\"spec\":{%s}}", cases[i].spec);
        reservation *r = load(s, text, msg, sizeof msg);
        CHECKF(r == NULL, "case %zu accepted", i);
        CHECKF(strstr(msg, cases[i].want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i, msg,
               cases[i].want);
        CHECKF(strstr(msg, "Reservation wf/step5") != NULL, "case %zu: \"%s\" names no object", i,
               msg);
        reservation_free(r);
    }
    sched_snapshot_free(s);
}

static void test_durations_and_times(void) {
    int64_t v = 0;
    tm_err err = {0};
    CHECK(tm_duration_parse_ms("1h30m", &v, &err) == 0 && v == 90 * 60 * 1000);
    CHECK(tm_duration_parse_ms("90s", &v, &err) == 0 && v == 90000);
    CHECK(tm_duration_parse_ms("600", &v, &err) == 0 && v == 600000);
    CHECK(tm_duration_parse_ms("250ms", &v, &err) == 0 && v == 250);
    CHECK(tm_duration_parse_ms("1.5h", &v, &err) == 0 && v == 90 * 60 * 1000);
    CHECK(tm_duration_parse_ms("10", &v, &err) == 0 && v == 10000);
    CHECK(tm_duration_parse_ms("5x", &v, &err) != 0);
    CHECK(tm_duration_parse_ms("-5s", &v, &err) != 0);
    CHECK(tm_duration_parse_ms("", &v, &err) != 0);
    CHECK(resv_parse_time_ms("2026-11-24T01:00:00Z", &v, &err) == 0);
    int64_t w = 0;
    CHECK(resv_parse_time_ms("2026-11-24T02:00:00+01:00", &w, &err) == 0 && w == v);
    CHECK(resv_parse_time_ms("2026-11-24T01:00:00", &w, &err) != 0); /* no zone */
    char buf[32];
    CHECK_STR(resv_format_time(v, buf, sizeof buf), "2026-11-24T01:00:00Z");
}

static void test_owner_matching(void) {
    sched_snapshot *s = sched_snapshot_new();
    char msg[512];
    reservation *pg = load(s,
                           HEAD "\"spec\":{\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":"
                                "\"1h\",\"nodes\":[\"n1\"],\"owner\":{\"kind\":\"PodGroup\","
                                "\"name\":\"mpi\"}}}",
                           msg, sizeof msg);
    reservation *wl = load(s,
                           HEAD "\"spec\":{\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":"
                                "\"1h\",\"nodes\":[\"n1\"],\"owner\":{\"kind\":\"Workload\","
                                "\"name\":\"train\"}}}",
                           msg, sizeof msg);
    reservation *sel = load(s,
                            HEAD "\"spec\":{\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":"
                                 "\"1h\",\"nodes\":[\"n1\"],\"owner\":{\"selector\":{"
                                 "\"matchLabels\":{\"step\":\"five\"}}}}}",
                            msg, sizeof msg);
    CHECK(pg && wl && sel);
    if (pg && wl && sel) {
        json_t *l1 = parse("{\"scheduling.x-k8s.io/pod-group\":\"mpi\",\"step\":\"five\"}");
        json_t *l2 = parse("{\"scheduling.x-k8s.io/pod-group\":\"other\"}");
        CHECK(reservation_owns(pg, "wf", l1, NULL));
        CHECK(!reservation_owns(pg, "other-ns", l1, NULL));
        CHECK(!reservation_owns(pg, "wf", l2, NULL));
        CHECK(!reservation_owns(pg, "wf", NULL, NULL));
        CHECK(reservation_owns(wl, "wf", NULL, "train"));
        CHECK(!reservation_owns(wl, "wf", l1, "other"));
        CHECK(reservation_owns(sel, "wf", l1, NULL));
        CHECK(!reservation_owns(sel, "wf", l2, NULL));
        json_decref(l1);
        json_decref(l2);
    }
    reservation_free(pg);
    reservation_free(wl);
    reservation_free(sel);
    sched_snapshot_free(s);
}

/* What the controller writes is what it reads back after a restart. */
static void test_status_round_trip(void) {
    sched_snapshot *s = sched_snapshot_new();
    resv_hold h[2] = {{.node = "n1", .pods = 2}, {.node = "n2", .pods = 1}};
    h[0].res.v[SCHED_RES_CPU] = 4000;
    h[0].res.v[SCHED_RES_MEMORY] = 2LL << 30;
    h[0].res.v[SCHED_RES_PODS] = 2;
    h[1].res.v[SCHED_RES_CPU] = 2000;
    h[1].res.v[SCHED_RES_PODS] = 1;
    json_t *patch = reservation_status_patch(s, RESV_ADMITTED, "held", h, 2, true, true,
                                             1795480200000LL, 1795483800000LL);
    json_t *obj = parse(HEAD "\"spec\":{\"startTime\":\"2026-11-24T01:00:00Z\",\"duration\":"
                             "\"1h\",\"count\":3,\"template\":{\"requests\":{\"cpu\":\"2\"}},"
                             "\"owner\":{\"kind\":\"PodGroup\",\"name\":\"mpi\"}}}");
    json_object_set(obj, "status", json_object_get(patch, "status"));
    tm_err err = {0};
    reservation *r = reservation_from_json(s, obj, &err);
    CHECKF(r != NULL, "%s", err.msg);
    if (r) {
        CHECK_INT(r->phase, RESV_ADMITTED);
        CHECK_STR(r->message, "held");
        CHECK(r->owner_started);
        CHECK_STR(json_string_value(json_object_get(json_object_get(patch, "status"), "nodeNames")),
                  "n1,n2");
        CHECK_INT(r->n_holds, 2);
        for (size_t i = 0; i < 2 && i < r->n_holds; i++) {
            CHECK_STR(r->holds[i].node, h[i].node);
            CHECK_INT(r->holds[i].pods, h[i].pods);
            for (int k = 0; k < SCHED_RES_MAX; k++)
                CHECKF(r->holds[i].res.v[k] == h[i].res.v[k], "hold %zu slot %d: %lld != %lld", i,
                       k, (long long)r->holds[i].res.v[k], (long long)h[i].res.v[k]);
        }
        /* the admitted window (00:30-01:30) is read back, the spec's (01:00-02:00) kept apart:
         * a spec patched after the admission does not move the holds */
        int64_t a, b;
        reservation_held_window(r, &a, &b);
        CHECK(a == 1795480200000LL && b == 1795483800000LL);
        CHECK(r->start_ms == 1795482000000LL && r->end_ms == 1795485600000LL);
    }
    reservation_free(r);
    json_decref(obj);
    json_decref(patch);
    /* no holds: the window fields are removed (null in the merge patch) */
    patch = reservation_status_patch(s, RESV_RELEASED, "done", h, 0, true, false, 1, 2);
    CHECK(json_is_null(json_object_get(json_object_get(patch, "status"), "heldStartTime")));
    json_decref(patch);
    sched_snapshot_free(s);
}

/* The live cache's pod transform keeps what backfill reads: the expected-duration annotation
 * and activeDeadlineSeconds (without them every running pod's end would be unknown). */
static void test_cache_keeps_backfill_fields(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    CHECK(c != NULL);
    json_t *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"wf\",\"uid\":\"u\","
                        "\"resourceVersion\":\"1\",\"annotations\":{\"tarema.io/expected-"
                        "duration\":\"5m\",\"other\":\"x\"}},\"spec\":{\"nodeName\":\"n1\","
                        "\"activeDeadlineSeconds\":30,\"containers\":[{\"name\":\"c\"}]}}");
    json_t *t = c && pod ? sched_cache_pod_transform(c, pod) : NULL;
    CHECK(t != NULL);
    if (t) {
        sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), t, NULL, &err);
        CHECKF(p != NULL, "%s", err.msg);
        CHECK(p && p->active_deadline_s == 30 && p->expected_duration_ms == 300000);
        sched_pod_free(p);
    }
    json_decref(t);
    sched_cache_free(c);
}

int main(void) {
    RUN(test_parse_template);
    RUN(test_bad_input_messages);
    RUN(test_durations_and_times);
    RUN(test_owner_matching);
    RUN(test_status_round_trip);
    RUN(test_cache_keeps_backfill_fields);
    return TEST_SUMMARY();
}
