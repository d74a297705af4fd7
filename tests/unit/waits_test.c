/* waits_test.c: the per-shape wait record (labeler/waits.h), what the feed reads from a pod
 * (labeler/waits_pod.h) and how pods become observed waits (labeler/waits_track.h). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/waits.h"
#include "labeler/waits_pod.h"
#include "labeler/waits_track.h"
#include "lib/jsonutil.h"
#include "scheduler/cmd/explain.h"

static asa_key key1(void) {
    asa_key k;
    asa_key_make(&k, "ns", "fast", 1, 500, 1LL << 30, NULL);
    return k;
}

static waits_record learned(int n, double wait_s) {
    asa_key k = key1();
    waits_record r;
    waits_record_init(&r, &k);
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    asa_rng rng;
    asa_rng_seed(&rng, 7);
    for (int i = 0; i < n; i++)
        waits_observe(&r, &c, wait_s, &rng, NULL);
    return r;
}

/* Unknown shape: the documented default; after enough waits of 420 s the estimate is its
 * closest alternative (400 s) and later estimates are scored as hits. */
static void test_record_learns(void) {
    asa_key k = key1();
    waits_record r;
    waits_record_init(&r, &k);
    CHECK(waits_estimate(&r) == ASA_DEFAULT_ESTIMATE_S);
    r = learned(40, 420);
    CHECK(waits_estimate(&r) == 400);
    CHECK_INT(r.st.observations, 40);
    CHECK_INT(r.st.scored, 39); /* the first had no learned estimate */
    CHECKF(waits_hit_ratio(&r) > 0.5, "%g", waits_hit_ratio(&r));
    CHECK(r.st.wait_min_s == 420 && r.st.wait_max_s == 420 && r.st.wait_sum_s == 40 * 420);
    CHECK(waits_quantile(&r.l, 0.5) == 400);
    CHECK(waits_miss_ratio(&r) < 0.5); /* 400 < 420: hits are no over-predictions */
}

/* Over-predictions: a learner at 400 s shown waits of 100 s counts misses and the idle
 * core-hours (estimate - wait) x pods x cores. */
static void test_overhead(void) {
    waits_record r = learned(40, 420);
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    asa_rng rng;
    asa_rng_seed(&rng, 3);
    long long overs = r.st.overs;
    double over = r.st.over_s;
    CHECK(waits_observe(&r, &c, 100, &rng, NULL) == 0);
    CHECK_INT(r.st.overs, overs + 1);
    CHECK_NEAR(r.st.over_s - over, 300, 1e-9); /* estimated 400, waited 100 */
    CHECK_NEAR(waits_overhead_core_h(&r), r.st.over_s * 1 * 0.5 / 3600, 1e-12);
}

static void test_observe_refuses(void) {
    waits_record r = learned(3, 60), before = r;
    asa_config c;
    asa_config_default(&c, ASA_POLICY_TUNED);
    asa_rng rng;
    asa_rng_seed(&rng, 1);
    tm_err err = {0};
    CHECK(waits_observe(&r, &c, -1, &rng, &err) < 0);
    CHECK(waits_observe(&r, &c, NAN, &rng, &err) < 0);
    CHECK(waits_observe(&r, &c, INFINITY, &rng, &err) < 0);
    CHECK(waits_observe(&r, &c, 400 * 86400.0, &rng, &err) < 0 && strstr(err.msg, "not in"));
    CHECK(memcmp(&r, &before, sizeof r) == 0);
}

static void test_json_round_trip(void) {
    waits_record r = learned(25, 1800);
    char *a = waits_state_to_json(&r);
    waits_record back;
    asa_key k = key1();
    waits_record_init(&back, &k);
    tm_err err = {0};
    CHECKF(waits_state_from_json(a, &back, &err) == 0, "%s", err.msg);
    char *b = waits_state_to_json(&back);
    CHECK_STR(a, b);
    CHECK(waits_estimate(&back) == waits_estimate(&r));
    free(a);
    free(b);
}

/* Replaces the first occurrence of `from` in text by `to` (the test's corruptions). */
static char *edit(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    if (!at)
        return NULL;
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* Corrupt or absurd stored states are refused (the store then ignores the row with a warning)
 * and leave a fresh record: the estimate is the default, never negative or NaN. */
static void test_json_corrupt(void) {
    waits_record r = learned(10, 60);
    char *good = waits_state_to_json(&r);
    const char *cases[][2] = {
        {"\"version\":1", "\"version\":2"},
        {"\"alternatives_s\":[10", "\"alternatives_s\":[11"},
        {"\"hits\":", "\"hits\":-"},
        {"\"observations\":10", "\"observations\":1"}, /* fewer than scored and than cases */
        {"\"wait_min_s\":60", "\"wait_min_s\":99"},    /* min above max */
        {"\"wait_sum_s\":", "\"wait_sum_s\":-"},
        {"\"round_loss\":[", "\"round_loss\":[7,"},
        {"\"p\":[", "\"p\":[0.5,"},
        {"\"cases\":10", "\"cases\":11"}, /* learner and record disagree */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *bad = edit(good, cases[i][0], cases[i][1]);
        CHECKF(bad != NULL, "case %zu: pattern %s not found", i, cases[i][0]);
        if (!bad)
            continue;
        waits_record back;
        asa_key k = key1();
        waits_record_init(&back, &k);
        back.st.observations = 99; /* must be reset */
        tm_err err = {0};
        CHECKF(waits_state_from_json(bad, &back, &err) < 0, "case %zu accepted", i);
        CHECK(back.st.observations == 0 && waits_estimate(&back) == ASA_DEFAULT_ESTIMATE_S);
        CHECK(strcmp(back.key.ns, "ns") == 0);
        free(bad);
    }
    waits_record back;
    asa_key k = key1();
    waits_record_init(&back, &k);
    tm_err err = {0};
    CHECK(waits_state_from_json("{not json", &back, &err) < 0 && strstr(err.msg, "not JSON"));
    CHECK(waits_state_from_json("{\"version\":1,\"p\":[NaN]}", &back, &err) < 0);
    free(good);
}

static json_t *pod(const char *json) {
    json_error_t e;
    json_t *p = json_loads(json, 0, &e);
    if (!p)
        printf("    bad test pod: %s\n", e.text);
    return p;
}

static void test_time(void) {
    CHECK(lab_waits_time_parse("2026-01-01T00:00:10Z") == 1767225610);
    CHECK(lab_waits_time_parse("2026-01-01T01:00:10+01:00") == 1767225610);
    CHECK_NEAR(lab_waits_time_parse("2026-01-01T00:00:10.5Z"), 1767225610.5, 1e-6);
    CHECK(lab_waits_time_parse("2026-01-01 00:00:10") < 0);
    CHECK(lab_waits_time_parse("2026-01-01T00:00:10") < 0); /* no zone */
    CHECK(lab_waits_time_parse(NULL) < 0);
    char buf[32];
    lab_waits_time_format(1767225610.9, buf, sizeof buf);
    CHECK_STR(buf, "2026-01-01T00:00:10Z");
}

static void test_pod_parse(void) {
    json_t *p = pod("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
                    "\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
                    "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"pg\"},"
                    "\"annotations\":{\"tarema.io/queued-at\":\"2026-01-01T00:00:05Z\"}},"
                    "\"spec\":{\"nodeSelector\":{\"tarema.io/group\":\"fast\"},"
                    "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"250m\","
                    "\"memory\":\"1Gi\"}}},{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
                    "\"initContainers\":[{\"resources\":{\"requests\":{\"memory\":\"2Gi\"}}}],"
                    "\"overhead\":{\"cpu\":\"10m\"}},"
                    "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
                    "\"lastTransitionTime\":\"2026-01-01T00:01:00Z\"}]}}");
    lab_waits_pod w;
    tm_err err = {0};
    CHECKF(lab_waits_pod_parse(p, &w, &err) == 0, "%s", err.msg);
    CHECK_STR(w.gang, "pg");
    CHECK_STR(w.group, "fast");
    CHECK_INT(w.cpu_milli, 1260);      /* 250m + 1 + 10m overhead */
    CHECK_INT(w.mem_bytes, 2LL << 30); /* the init container's 2Gi beats 1Gi */
    CHECK(w.bound == w.created + 60 && !w.gated && !w.mirror);
    CHECK(w.queued_at == w.created + 5 && w.predicted < 0);
    /* the informer transform keeps everything parse reads */
    json_t *small = lab_waits_pod_transform(NULL, json_deep_copy(p));
    lab_waits_pod w2;
    CHECK(lab_waits_pod_parse(small, &w2, &err) == 0);
    CHECK(memcmp(&w, &w2, sizeof w) == 0);
    json_decref(small);
    json_decref(p);
    p = pod("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
            "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
            "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}");
    CHECK(lab_waits_pod_parse(p, &w, &err) < 0 && strstr(err.msg, "lots"));
    json_decref(p);
    /* requests that add up past int64 (anyone may create such a pod; the feed reads them all):
     * saturated, not wrapped to a negative (signed overflow, UBSan's abort under
     * make test-sanitize; before the fix mem_bytes came out negative) */
    p = pod("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
            "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
            "\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"memory\":\"8E\"}}},"
            "{\"resources\":{\"requests\":{\"memory\":\"8E\"}}}],"
            "\"overhead\":{\"memory\":\"8E\"}}}");
    CHECKF(lab_waits_pod_parse(p, &w, &err) == 0, "%s", err.msg);
    CHECK(w.mem_bytes == LLONG_MAX);
    json_decref(p);
    /* held: the order gate alone; with another gate beside it, only gated */
    p = pod("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
            "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
            "\"spec\":{\"schedulingGates\":[{\"name\":\"tarema.io/after-predecessors\"}]}}");
    CHECK(lab_waits_pod_parse(p, &w, &err) == 0 && w.gated && w.held);
    small = lab_waits_pod_transform(NULL, json_deep_copy(p));
    CHECK(lab_waits_pod_parse(small, &w2, &err) == 0 && w2.held && w2.asa_at < 0);
    json_decref(small);
    /* ASA's release point, written by the planner with the release, survives the transform */
    json_object_set_new(tm_json_path(p, "metadata"), "annotations",
                        json_pack("{s:s}", "tarema.io/asa-release-at", "2026-01-01T00:01:40Z"));
    small = lab_waits_pod_transform(NULL, json_deep_copy(p));
    CHECK(lab_waits_pod_parse(small, &w2, &err) == 0 && w2.asa_at == w.created + 100);
    json_decref(small);
    json_array_append_new(tm_json_path(p, "spec.schedulingGates"),
                          json_pack("{s:s}", "name", "tarema.io/planned"));
    CHECK(lab_waits_pod_parse(p, &w, &err) == 0 && w.gated && !w.held);
    json_decref(p);
}

static lab_waits_pod mk(const char *name, const char *gang, double created, double bound,
                        bool gated) {
    lab_waits_pod p;
    memset(&p, 0, sizeof p);
    snprintf(p.ns, sizeof p.ns, "ns");
    snprintf(p.name, sizeof p.name, "%s", name);
    snprintf(p.uid, sizeof p.uid, "uid-%s", name);
    snprintf(p.gang, sizeof p.gang, "%s", gang);
    p.cpu_milli = 500;
    p.mem_bytes = 1 << 30;
    p.created = created;
    p.bound = bound;
    p.gated = gated;
    p.queued_at = p.predicted = p.asa_at = -1;
    return p;
}

/* A prediction is rewritten only when missing or moved by more than a slot. */
static void test_prediction_refresh(void) {
    lab_waits_pod p = mk("a", "", 1000, -1, false);
    CHECK(lab_waits_prediction_stale(&p, 1000, 1000, 60)); /* none written yet */
    p.predicted = 1000;
    CHECK(lab_waits_prediction_stale(&p, 1000, 1000, 60)); /* no queued-at: an old writer's */
    p.queued_at = 1000;
    CHECK(!lab_waits_prediction_stale(&p, 1000.7, 1000, 60)); /* the annotation's seconds */
    CHECK(!lab_waits_prediction_stale(&p, 1000, 1060, 60));   /* moved by a slot: kept */
    CHECK(lab_waits_prediction_stale(&p, 1000, 1061, 60));
    CHECK(lab_waits_prediction_stale(&p, 1000, 900, 60));
    CHECK(lab_waits_prediction_stale(&p, 1002, 1002, 60)); /* a gang grew: queued later */
}

static const double T0 = 1767225600; /* 2026-01-01 */

static void test_track_pod(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    lab_waits_pod p = mk("a", "", T0, -1, false);
    CHECK(lab_waits_tracker_update(t, &p, T0 + 1, &o, NULL) == 0);
    asa_key k;
    double q;
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 1 && q == T0 && k.pods == 1);
    p.bound = T0 + 42;
    CHECK(lab_waits_tracker_update(t, &p, T0 + 43, &o, NULL) == 1);
    CHECK(o.wait_s == 42 && strcmp(o.request_id, "pod:uid-a") == 0 && o.key.cpu_milli == 500);
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 0);
    /* the same pod again (a re-list, a later update): counted once */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 50, &o, NULL) == 0);
    /* a pod bound more than a day before it is seen is not counted */
    lab_waits_pod old = mk("old", "", T0, T0 + 10, false);
    CHECK(lab_waits_tracker_update(t, &old, T0 + 2 * 86400, &o, NULL) == 0);
    lab_waits_tracker_free(t);
}

/* A gated pod waits from when it is first seen without gates, not from its creation. */
static void test_track_gated(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    asa_key k;
    double q;
    lab_waits_pod p = mk("g", "", T0, -1, true);
    CHECK(lab_waits_tracker_update(t, &p, T0 + 1, &o, NULL) == 0);
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 0); /* gated: no prediction */
    p.gated = false;
    CHECK(lab_waits_tracker_update(t, &p, T0 + 300, &o, NULL) == 0);
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 1 && q == T0 + 300);
    p.bound = T0 + 320;
    CHECK(lab_waits_tracker_update(t, &p, T0 + 321, &o, NULL) == 1 && o.wait_s == 20);
    /* after a restart the queued time comes back from the annotation the feed wrote */
    lab_waits_tracker *t2 = lab_waits_tracker_new();
    p.queued_at = T0 + 300;
    CHECK(lab_waits_tracker_update(t2, &p, T0 + 400, &o, NULL) == 1 && o.wait_s == 20);
    lab_waits_tracker_free(t2);
    lab_waits_tracker_free(t);
}

/* A held pod (its only gate the order gate: in tarema-scheduler's queue, not tried) joined the
 * queue when it was first seen held, not when the order gate went (docs/asa.md, "The held pod's
 * wait"). Bound later than LAB_WAITS_HELD_SLACK_S after its release, it still waited for capacity:
 * its wait counts from joining. Bound at its release, the queue did not keep it: its wait is only
 * known to be at most that long (censored) and it is not fed. (Before the fix: a wait of 20 s from
 * the release, and the censored one fed as 1 s.) */
static void test_track_held(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    asa_key k;
    double q;
    lab_waits_pod p = mk("h", "", T0, -1, true); /* both gates: not queued */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 1, &o, NULL) == 0);
    p.held = true; /* the planner removed its gate at ungateAt */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 100, &o, NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &p, T0 + 110, &o, NULL) == 0); /* joined once */
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 0);            /* still gated */
    p.gated = p.held = false; /* every predecessor succeeded */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 130, &o, NULL) == 0);
    CHECKF(lab_waits_tracker_pending(t, &p, &k, &q) == 1 && q == T0 + 100, "queued %.0f", q - T0);
    p.bound = T0 + 150; /* no core free at its release: waited 20 s more */
    CHECKF(lab_waits_tracker_update(t, &p, T0 + 151, &o, NULL) == 1 && o.wait_s == 50 &&
               !o.censored,
           "wait %g", o.wait_s);
    /* bound at its release: censored, not fed, only claimed (a restarted feed, which never saw
     * it held, would otherwise count it from its creation: found in review, fed before) */
    lab_waits_pod c = mk("c", "", T0, -1, true);
    c.held = true;
    CHECK(lab_waits_tracker_update(t, &c, T0 + 100, &o, NULL) == 0);
    c.gated = c.held = false;
    CHECK(lab_waits_tracker_update(t, &c, T0 + 130.4, &o, NULL) == 0);
    c.bound = T0 + 131; /* the API's whole seconds, within the slack */
    CHECK(lab_waits_tracker_update(t, &c, T0 + 131.2, &o, NULL) == 1 && o.censored);
    CHECK(lab_waits_tracker_update(t, &c, T0 + 140, &o, NULL) == 0); /* once */
    /* seen released and bound in one update (a slow watch): bound at its release, censored */
    lab_waits_pod d = mk("d", "", T0, -1, true);
    d.held = true;
    CHECK(lab_waits_tracker_update(t, &d, T0 + 100, &o, NULL) == 0);
    d.gated = d.held = false;
    d.bound = T0 + 131;
    CHECK(lab_waits_tracker_update(t, &d, T0 + 135, &o, NULL) == 1 && o.censored);
    /* an ordinary gated pod (another gate) still counts from its last ungating */
    lab_waits_pod g = mk("g", "", T0, -1, true);
    CHECK(lab_waits_tracker_update(t, &g, T0 + 100, &o, NULL) == 0);
    g.gated = false;
    CHECK(lab_waits_tracker_update(t, &g, T0 + 130, &o, NULL) == 0);
    g.bound = T0 + 131;
    CHECK(lab_waits_tracker_update(t, &g, T0 + 132, &o, NULL) == 1 && o.wait_s == 1 && !o.censored);
    lab_waits_tracker_free(t);
}

/* A held pod released before ASA's point (the planner's release on start, when its predecessors
 * started): what ASA learns is the wait of a request joining at its point, so the wait counts
 * from the later of that point and when it was seen held, or from its release when its
 * predecessors ended before that point (ASA's rule would have released it then). A point before
 * the pod's creation (written by anyone: the pod's owner can) is ignored. (Before: the
 * predecessors' remaining run was fed as queue wait, and the estimates grew with every step
 * released early.) */
/* A pod held at the order gate with ASA's point asa_at, first seen at T0 + 10. */
static lab_waits_pod seen_held(lab_waits_tracker *t, const char *name, double asa_at) {
    lab_waits_obs o;
    lab_waits_pod p = mk(name, "", T0, -1, true);
    p.held = true;
    p.asa_at = asa_at;
    CHECK(lab_waits_tracker_update(t, &p, T0 + 10, &o, NULL) == 0);
    return p;
}

/* Its order gate goes at `at` (its predecessors succeeded), then it binds at `bound`; the
 * observation made at bound + 1, 0 when none. */
static int release_and_bind(lab_waits_tracker *t, lab_waits_pod *p, double at, double bound,
                            lab_waits_obs *o) {
    p->gated = p->held = false;
    CHECK(lab_waits_tracker_update(t, p, at, o, NULL) == 0);
    p->bound = bound;
    return lab_waits_tracker_update(t, p, bound + 1, o, NULL);
}

static void test_track_held_asa_point(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    /* released at T0 + 10, its predecessor's start; ASA's point T0 + 100; the predecessor
     * succeeded at T0 + 110 and the pod waited 8 s for capacity: 18 s from ASA's point */
    lab_waits_pod p = seen_held(t, "h", T0 + 100);
    CHECKF(release_and_bind(t, &p, T0 + 110, T0 + 118, &o) == 1 && o.wait_s == 18 && !o.censored,
           "wait %g censored %d", o.wait_s, o.censored);
    /* the predecessor ended well before its predicted end (a time limit is an over-estimate):
     * counted from the release, never from a point still to come */
    lab_waits_pod e = seen_held(t, "e", T0 + 100);
    asa_key k;
    double q;
    e.gated = e.held = false;
    CHECK(lab_waits_tracker_update(t, &e, T0 + 40, &o, NULL) == 0);
    CHECKF(lab_waits_tracker_pending(t, &e, &k, &q) == 1 && q == T0 + 40, "queued %.0f", q - T0);
    CHECKF(release_and_bind(t, &e, T0 + 40, T0 + 50, &o) == 1 && o.wait_s == 10 && !o.censored,
           "wait %g censored %d", o.wait_s, o.censored);
    /* and bound at that release (seen ungated and bound at once): censored as any held pod
     * bound at its release */
    lab_waits_pod r = seen_held(t, "r", T0 + 100);
    r.gated = r.held = false;
    r.bound = T0 + 41;
    CHECK(lab_waits_tracker_update(t, &r, T0 + 42, &o, NULL) == 1 && o.censored);
    /* a point before the pod existed: ignored, counted from when it was seen held */
    lab_waits_pod f = seen_held(t, "f", T0 - 500);
    CHECKF(release_and_bind(t, &f, T0 + 40, T0 + 50, &o) == 1 && o.wait_s == 40 && !o.censored,
           "wait %g censored %d", o.wait_s, o.censored);
    lab_waits_tracker_free(t);
}

/* A gang of held pods: queued when its last member was held, censored when bound at the release
 * of its last member. */
static void test_track_held_gang(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    CHECK(lab_waits_tracker_synced(t, T0, &o, 1) == 0);
    for (int late = 0; late < 2; late++) {
        lab_waits_pod a = mk(late ? "a2" : "a", late ? "pg2" : "pg", T0, -1, true);
        lab_waits_pod b = mk(late ? "b2" : "b", late ? "pg2" : "pg", T0, -1, true);
        a.held = b.held = true;
        CHECK(lab_waits_tracker_update(t, &a, T0 + 100, &o, NULL) == 0);
        CHECK(lab_waits_tracker_update(t, &b, T0 + 101, &o, NULL) == 0);
        a.gated = a.held = b.gated = b.held = false;
        CHECK(lab_waits_tracker_update(t, &a, T0 + 130, &o, NULL) == 0);
        CHECK(lab_waits_tracker_update(t, &b, T0 + 130, &o, NULL) == 0);
        a.bound = T0 + 131;
        b.bound = late ? T0 + 160 : T0 + 131;
        CHECK(lab_waits_tracker_update(t, &a, T0 + 161, &o, NULL) == 0);
        int rc = lab_waits_tracker_update(t, &b, T0 + 161, &o, NULL);
        if (!late) {
            CHECKF(rc == 1 && o.censored && o.members, "censored gang: rc %d", rc);
        } else {
            CHECKF(rc == 1 && o.wait_s == 59 && o.key.pods == 2 && !o.censored, "rc %d wait %g", rc,
                   o.wait_s);
        }
        if (rc == 1)
            lab_waits_obs_clear(&o);
    }
    lab_waits_tracker_free(t);
}

/* The queued-at annotation is on the pod, where its owner can write anything: a time before the
 * pod was created or after it was bound is not taken back (it would feed a made-up wait to the
 * shape), the pod's own times are. (Before the fix: a wait of 3600 s, then of 0 s.) */
static void test_track_forged_queued_at(void) {
    lab_waits_obs o;
    lab_waits_pod p = mk("f", "", T0, T0 + 30, false);
    lab_waits_tracker *t = lab_waits_tracker_new();
    p.queued_at = T0 - 3570; /* an hour before it was bound */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 40, &o, NULL) == 1 && o.wait_s == 30);
    lab_waits_tracker_free(t);
    t = lab_waits_tracker_new();
    p.queued_at = T0 + 500; /* after it was bound: a wait of 0 */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 600, &o, NULL) == 1 && o.wait_s == 30);
    lab_waits_tracker_free(t);
    t = lab_waits_tracker_new();
    p.bound = -1;
    p.queued_at = T0 + 900; /* pending, queued in the future */
    CHECK(lab_waits_tracker_update(t, &p, T0 + 60, &o, NULL) == 0);
    asa_key k;
    double q;
    CHECK(lab_waits_tracker_pending(t, &p, &k, &q) == 1 && q == T0);
    lab_waits_tracker_free(t);
}

/* A gang's wait is its last member's: last queued to last bound, once all are bound. */
static void test_track_gang(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    asa_key k;
    double q;
    lab_waits_pod a = mk("a", "pg", T0, -1, false), b = mk("b", "pg", T0 + 5, -1, false);
    b.mem_bytes = 2LL << 30;
    CHECK(lab_waits_tracker_synced(t, T0, &o, 1) == 0); /* the (empty) list is in */
    CHECK(lab_waits_tracker_update(t, &a, T0 + 6, &o, NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &b, T0 + 6, &o, NULL) == 0);
    CHECK(lab_waits_tracker_pending(t, &a, &k, &q) == 1 && k.pods == 2 && q == T0 + 5);
    CHECK(k.mem_bytes == 2LL << 30);
    a.bound = T0 + 60;
    CHECK(lab_waits_tracker_update(t, &a, T0 + 61, &o, NULL) == 0); /* b still pending */
    b.bound = T0 + 65;
    CHECK(lab_waits_tracker_update(t, &b, T0 + 66, &o, NULL) == 1);
    CHECK(o.wait_s == 60 && o.key.pods == 2);
    CHECK(strcmp(o.request_id, "gang:ns/pg") == 0);
    CHECKF(o.members &&
               (strcmp(o.members, "uid-a uid-b") == 0 || strcmp(o.members, "uid-b uid-a") == 0),
           "members '%s'", o.members ? o.members : "(null)");
    lab_waits_obs_clear(&o);
    CHECK(o.members == NULL);
    CHECK(lab_waits_tracker_update(t, &b, T0 + 70, &o, NULL) == 0); /* once */
    lab_waits_tracker_delete(t, &a);
    lab_waits_tracker_delete(t, &b);
    CHECK(lab_waits_tracker_pending(t, &a, &k, &q) == 0);
    lab_waits_tracker_free(t);
}

/* The pod-group label is mutable: a pod relabelled through many gangs leaves each one, and
 * deleting it leaves nothing behind. (Before the fix: 200 gangs kept after the delete.) */
static void test_track_gang_relabel(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o;
    lab_waits_pod p = mk("r", "g0", T0, -1, false);
    for (int i = 0; i < 200; i++) {
        snprintf(p.gang, sizeof p.gang, "g%d", i);
        CHECK(lab_waits_tracker_update(t, &p, T0 + i, &o, NULL) == 0);
    }
    size_t pods, gangs;
    lab_waits_tracker_counts(t, &pods, &gangs);
    CHECK(pods == 1 && gangs == 1);
    /* the gang it is in now is the one it counts in */
    lab_waits_tracker_synced(t, T0 + 300, &o, 1);
    p.bound = T0 + 400;
    CHECK(lab_waits_tracker_update(t, &p, T0 + 401, &o, NULL) == 1);
    CHECK(strcmp(o.request_id, "gang:ns/g199") == 0 && o.key.pods == 1);
    CHECK(o.members && strcmp(o.members, "uid-r") == 0);
    lab_waits_obs_clear(&o);
    lab_waits_tracker_delete(t, &p);
    lab_waits_tracker_counts(t, &pods, &gangs);
    CHECKF(pods == 0 && gangs == 0, "%zu pods, %zu gangs left", pods, gangs);
    lab_waits_tracker_free(t);
}

/* explain's block (scheduler/cmd/explain.c): the feed's annotations on a pending pod, in JSON and
 * text; nothing for a pod without them or already bound. */
/* A re-list (a restarted feed) delivers a gang's bound members one by one: nothing is judged
 * until the list is in, then the gang once, whole. (Seen in asa_waits_test before the fix: the
 * first member alone was fed as a gang of one, a shape of its own.) */
static void test_track_gang_relist(void) {
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_obs o[4];
    lab_waits_pod a = mk("a", "pg", T0, T0 + 60, false), b = mk("b", "pg", T0 + 5, T0 + 65, false);
    CHECK(lab_waits_tracker_update(t, &a, T0 + 100, &o[0], NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &b, T0 + 100, &o[0], NULL) == 0);
    CHECK(lab_waits_tracker_synced(t, T0 + 100, o, 4) == 1);
    CHECK(o[0].key.pods == 2 && o[0].wait_s == 60);
    lab_waits_obs_clear(&o[0]);
    CHECK(lab_waits_tracker_synced(t, T0 + 100, o, 4) == 0); /* once */
    lab_waits_tracker_free(t);
}

/* A restarted feed sees a gang whose PodScheduled time was rewritten after it was counted
 * (kwok and kubelets write the condition again): the observation must name the same claims.
 * (asa_waits_test before the fix: the id carried the last bound time, a rewrite one second
 * later made a new id and the gang was counted twice, 3/1/2.) */
static void test_track_gang_restart_same_claims(void) {
    lab_waits_pod a = mk("a", "pg", T0, T0 + 60, false), b = mk("b", "pg", T0 + 5, T0 + 65, false);
    lab_waits_obs before, after;
    lab_waits_tracker *t = lab_waits_tracker_new();
    lab_waits_tracker_synced(t, T0, &before, 1);
    a.bound = b.bound = -1; /* both seen pending, then bound */
    CHECK(lab_waits_tracker_update(t, &a, T0 + 5, &before, NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &b, T0 + 5, &before, NULL) == 0);
    a.bound = T0 + 60;
    b.bound = T0 + 65;
    CHECK(lab_waits_tracker_update(t, &a, T0 + 65, &before, NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &b, T0 + 65, &before, NULL) == 1);
    lab_waits_tracker_free(t);
    b.bound = T0 + 66; /* the condition rewritten a second later */
    t = lab_waits_tracker_new();
    CHECK(lab_waits_tracker_update(t, &b, T0 + 90, &after, NULL) == 0);
    CHECK(lab_waits_tracker_update(t, &a, T0 + 90, &after, NULL) == 0);
    CHECK(lab_waits_tracker_synced(t, T0 + 90, &after, 1) == 1);
    lab_waits_tracker_free(t);
    CHECK(strcmp(before.request_id, after.request_id) == 0);
    /* the same set of member claims, whatever order the re-list delivered them in */
    CHECKF(before.members && after.members && strlen(before.members) == strlen(after.members) &&
               strstr(after.members, "uid-a") && strstr(after.members, "uid-b") &&
               strstr(before.members, "uid-a") && strstr(before.members, "uid-b"),
           "'%s' vs '%s'", before.members ? before.members : "(null)",
           after.members ? after.members : "(null)");
    lab_waits_obs_clear(&before);
    lab_waits_obs_clear(&after);
}

static void test_explain_block(void) {
    json_t *p = pod("{\"metadata\":{\"annotations\":{"
                    "\"tarema.io/predicted-start\":\"2026-01-01T00:10:00Z\","
                    "\"tarema.io/queued-at\":\"2026-01-01T00:00:00Z\","
                    "\"tarema.io/predicted-wait\":\"600s learned\"}},\"spec\":{}}");
    json_t *doc = json_object();
    sched_explain_predicted_start(doc, p, (int64_t)(T0 + 540) * 1000);
    const json_t *ps = json_object_get(doc, "predictedStart");
    CHECK(json_integer_value(json_object_get(ps, "inSeconds")) == 60);
    CHECK_STR(json_string_value(json_object_get(ps, "wait")), "600s learned");
    char *text = sched_explain_text(doc);
    CHECKF(text && strstr(text, "predicted start: 2026-01-01T00:10:00Z (in 60 s; queued at "
                                "2026-01-01T00:00:00Z, estimated wait 600s learned)"),
           "%s", text ? text : "(null)");
    free(text);
    sched_explain_predicted_start(doc, p, (int64_t)(T0 + 700) * 1000);
    text = sched_explain_text(doc);
    CHECK(text && strstr(text, "(overdue by 100 s;"));
    free(text);
    json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string("n1"));
    sched_explain_predicted_start(doc, p, (int64_t)(T0 + 540) * 1000);
    CHECK(json_is_null(json_object_get(doc, "predictedStart")));
    text = sched_explain_text(doc);
    CHECK(text && !strstr(text, "predicted start"));
    free(text);
    json_decref(doc);
    json_decref(p);
}

/* Issue 32: the scheduler's backfill annotation tarema.io/expected-start in explain. */
static void test_explain_expected_start(void) {
    json_t *p = pod("{\"metadata\":{\"annotations\":{"
                    "\"tarema.io/expected-start\":\"2026-01-01T00:10:00Z\"}},\"spec\":{}}");
    json_t *doc = json_object();
    sched_explain_expected_start(doc, p, (int64_t)(T0 + 570) * 1000);
    const json_t *es = json_object_get(doc, "expectedStart");
    CHECK(json_integer_value(json_object_get(es, "inSeconds")) == 30);
    char *text = sched_explain_text(doc);
    CHECKF(text && strstr(text, "expected start (backfill): 2026-01-01T00:10:00Z (in 30 s)"), "%s",
           text ? text : "(null)");
    free(text);
    json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string("n1"));
    sched_explain_expected_start(doc, p, (int64_t)(T0 + 570) * 1000);
    CHECK(json_is_null(json_object_get(doc, "expectedStart")));
    json_decref(doc);
    json_decref(p);
}

int main(void) {
    RUN(test_record_learns);
    RUN(test_overhead);
    RUN(test_observe_refuses);
    RUN(test_json_round_trip);
    RUN(test_json_corrupt);
    RUN(test_time);
    RUN(test_pod_parse);
    RUN(test_track_pod);
    RUN(test_track_gated);
    RUN(test_track_held);
    RUN(test_track_held_gang);
    RUN(test_track_held_asa_point);
    RUN(test_track_forged_queued_at);
    RUN(test_track_gang);
    RUN(test_track_gang_relist);
    RUN(test_track_gang_restart_same_claims);
    RUN(test_track_gang_relabel);
    RUN(test_prediction_refresh);
    RUN(test_explain_block);
    RUN(test_explain_expected_start);
    return TEST_SUMMARY();
}
