/* scheduler_queue_view_test.c: `tarema-scheduler queue`'s rows and text (scheduler/cmd/
 * queue_view.h): the formatting helpers (relative times, what a row asks, the WHY column), and the
 * rows of a listed set of pods: only the scheduler's pending pods, in the live queue's order
 * (priority first, then the time each joined), a gang as one row at its first member's place,
 * gated pods after the waiting ones without a position, the PodScheduled condition's message,
 * the expected start, and -n keeping positions from the whole queue. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/cmd/queue_view.h"

static void test_when(void) {
    char b[64];
    sched_queue_view_when(12, b, sizeof b);
    CHECK_STR(b, "in 12 s");
    sched_queue_view_when(-3, b, sizeof b);
    CHECK_STR(b, "overdue 3 s");
    sched_queue_view_when(0, b, sizeof b);
    CHECK_STR(b, "now");
    sched_queue_view_when(119, b, sizeof b);
    CHECK_STR(b, "in 119 s");
    sched_queue_view_when(300, b, sizeof b);
    CHECK_STR(b, "in 5 min");
    sched_queue_view_when(-3 * 3600 - 5, b, sizeof b);
    CHECK_STR(b, "overdue 3 h");
}

static void test_asks(void) {
    char b[128];
    sched_queue_view_asks(1, 1000, 1LL << 30, NULL, b, sizeof b);
    CHECK_STR(b, "1 cpu, 1Gi");
    sched_queue_view_asks(4, 16000, 4LL << 30, NULL, b, sizeof b);
    CHECK_STR(b, "4 pods: 16 cpu, 4Gi");
    json_t *ext = json_pack("{s:i}", "nvidia.com/gpu", 2);
    sched_queue_view_asks(1, 250, 512LL << 20, ext, b, sizeof b);
    CHECK_STR(b, "0.25 cpu, 512Mi, 2 nvidia.com/gpu");
    json_decref(ext);
    sched_queue_view_asks(1, 1500, 3LL << 29, NULL, b, sizeof b);
    CHECK_STR(b, "1.5 cpu, 1.5Gi");
    sched_queue_view_asks(1, 0, 0, NULL, b, sizeof b);
    CHECK_STR(b, "0 cpu, 0");
}

static void test_why(void) {
    char b[256];
    sched_queue_view_why("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                         "available: 3 No preemption victims found for incoming pod.",
                         120, b, sizeof b);
    CHECK_STR(b, "0/3 nodes are available: 3 Insufficient cpu");
    sched_queue_view_why("0/2 nodes are available: 2 node(s) were held for pod ns/wide from "
                         "2026-11-29T07:45:54Z (backfill).",
                         120, b, sizeof b);
    CHECK_STR(b, "0/2 nodes are available: 2 node(s) were held for pod ns/wide from "
                 "2026-11-29T07:45:54Z (backfill)");
    /* too long: cut after a whole part */
    sched_queue_view_why(
        "0/9 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's "
        "node affinity/selector, 4 node(s) had untolerated taint.",
        60, b, sizeof b);
    CHECK_STR(b, "0/9 nodes are available: 2 Insufficient cpu, ...");
    CHECK(strlen(b) <= 60);
    /* one part longer than max: cut inside it */
    sched_queue_view_why("abcdefghijklmnopqrstuvwxyz", 10, b, sizeof b);
    CHECK_STR(b, "abcdefg...");
}

/* A pod as the API lists it. created: seconds after a fixed time; prio; gang ("" none);
 * gate ("" none); msg: the PodScheduled=False message ("" none); start: the expected-start
 * annotation ("" none). */
static json_t *pod(const char *ns, const char *name, const char *sched, int created, int prio,
                   const char *cpu, const char *gang, const char *gate, const char *msg,
                   const char *start, const char *node) {
    char ts[32], uid[300];
    snprintf(ts, sizeof ts, "2026-11-29T10:00:%02dZ", created);
    snprintf(uid, sizeof uid, "uid-%s-%s", ns, name);
    json_t *p = json_pack(
        "{s:{s:s, s:s, s:s, s:s, s:{}, s:{}}, s:{s:s, s:i, s:[{s:s, s:{s:{s:s, s:s}}}]}, "
        "s:{s:s}}",
        "metadata", "namespace", ns, "name", name, "uid", uid, "creationTimestamp", ts, "labels",
        "annotations", "spec", "schedulerName", sched, "priority", prio, "containers", "name", "c",
        "resources", "requests", "cpu", cpu, "memory", "1Gi", "status", "phase", "Pending");
    if (*gang)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "labels"),
                            "scheduling.x-k8s.io/pod-group", json_string(gang));
    if (*gate)
        json_object_set_new(json_object_get(p, "spec"), "schedulingGates",
                            json_pack("[{s:s}]", "name", gate));
    if (*msg)
        json_object_set_new(json_object_get(p, "status"), "conditions",
                            json_pack("[{s:s, s:s, s:s, s:s}]", "type", "PodScheduled", "status",
                                      "False", "reason", "Unschedulable", "message", msg));
    if (*start)
        json_object_set_new(json_object_get(json_object_get(p, "metadata"), "annotations"),
                            "tarema.io/expected-start", json_string(start));
    if (*node)
        json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string(node));
    return p;
}

static const json_t *row_named(const json_t *rows, const char *name) {
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r) {
        if (strcmp(tm_json_str(r, "name", ""), name) == 0)
            return r;
    }
    return NULL;
}

static json_t *listed(void) {
    json_t *a = json_array();
    const char *held = "0/2 nodes are available: 2 node(s) were held for pod q/wide from "
                       "2026-11-29T10:01:40Z (backfill). preemption: 0/2 nodes are available: 2 "
                       "No preemption victims found for incoming pod.";
    json_array_append_new(a, pod("q", "b", "s", 30, 0, "1", "", "", "", "", ""));
    json_array_append_new(a, pod("q", "wide", "s", 10, 0, "8", "", "",
                                 "0/2 nodes are available: 2 Insufficient cpu.",
                                 "2026-11-29T10:01:40Z", ""));
    json_array_append_new(a, pod("q", "hi", "s", 50, 1000, "1", "", "", "", "", ""));
    for (int m = 3; m >= 0; m--) { /* listed in any order: the sort decides */
        char n[16];
        snprintf(n, sizeof n, "g-%d", m);
        json_array_append_new(a, pod("q", n, "s", 20 + m, 0, "4", "gang", "",
                                     m == 0 ? "gang podgroup/q/gang: only 0 of the 4 pod(s) fit "
                                              "at once, 4 needed."
                                            : "",
                                     "", ""));
    }
    json_array_append_new(a, pod("q", "a", "s", 15, 0, "1", "", "", held, "", ""));
    json_array_append_new(a, pod("q", "gated", "s", 5, 0, "1", "", "example.com/wait", "", "", ""));
    json_array_append_new(a, pod("other", "o", "s", 12, 0, "1", "", "", "", "", ""));
    /* not pending for s: another scheduler's, bound, being deleted */
    json_array_append_new(a,
                          pod("q", "foreign", "default-scheduler", 1, 0, "1", "", "", "", "", ""));
    json_array_append_new(a, pod("q", "bound", "s", 1, 0, "1", "", "", "", "", "node-1"));
    json_t *del = pod("q", "deleting", "s", 1, 0, "1", "", "", "", "", "");
    json_object_set_new(json_object_get(del, "metadata"), "deletionTimestamp",
                        json_string("2026-11-29T10:00:59Z"));
    json_array_append_new(a, del);
    return a;
}

static void test_rows(void) {
    json_t *pods = listed();
    sched_snapshot *s = sched_snapshot_new();
    sched_keys keys = sched_keys_default();
    tm_err err = {0};
    int64_t now_ms = 1795946400000LL + 60 * 1000 + 28 * 1000; /* 2026-11-29T10:01:28Z */
    json_t *rows = sched_queue_view_rows(s, "tarema", pods, "s", NULL, NULL, &keys, now_ms, &err);
    CHECKF(rows != NULL, "%s", err.msg);
    /* hi (priority 1000, created last) first; then by creation: wide 10, other/o 12, a 15, the
     * gang (first member 20), b 30; then the gated pod without a position */
    const char *want[] = {"hi", "wide", "o", "a", "g-0", "b", "gated"};
    CHECK_INT(json_array_size(rows), 7);
    for (size_t i = 0; i < 7 && i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        CHECK_STR(tm_json_str(r, "name", ""), want[i]);
        if (i < 6)
            CHECK_INT(tm_json_int(r, "position", 0), (long long)i + 1);
    }
    const json_t *g = row_named(rows, "g-0");
    CHECK_STR(tm_json_str(g, "gang", ""), "podgroup/q/gang");
    CHECK_INT(tm_json_int(g, "pods", 0), 4);
    CHECK_INT(json_array_size(json_object_get(g, "members")), 4);
    CHECK_STR(json_string_value(json_array_get(json_object_get(g, "members"), 3)), "g-3");
    CHECK_INT(tm_json_int(g, "requests.cpuMilli", 0), 16000);
    CHECK_STR(tm_json_str(g, "nodes", ""), "4 pods: 16 cpu, 4Gi");
    /* the gang's message without its "gang KEY: " (the GANG column) */
    CHECK_STR(tm_json_str(g, "why", ""), "only 0 of the 4 pod(s) fit at once, 4 needed");
    CHECK_STR(tm_json_str(row_named(rows, "b"), "why", ""), "not tried yet");
    CHECK(json_is_null(json_object_get(g, "gated")));
    const json_t *w = row_named(rows, "wide");
    CHECK_STR(tm_json_str(w, "expectedStart.at", ""), "2026-11-29T10:01:40Z");
    CHECK_INT(tm_json_int(w, "expectedStart.inSeconds", 0), 12);
    CHECK_STR(tm_json_str(w, "why", ""), "0/2 nodes are available: 2 Insufficient cpu");
    CHECK_STR(tm_json_str(w, "reason", ""), "Unschedulable");
    CHECK_STR(tm_json_str(w, "nodes", ""), "8 cpu, 1Gi");
    CHECK(json_is_null(json_object_get(row_named(rows, "b"), "expectedStart")));
    const json_t *a = row_named(rows, "a");
    CHECK_STR(tm_json_str(a, "why", ""), "0/2 nodes are available: 2 node(s) were held for pod "
                                         "q/wide from 2026-11-29T10:01:40Z (backfill)");
    CHECK(strstr(tm_json_str(a, "message", ""), " preemption: ") != NULL); /* kept whole */
    const json_t *gt = row_named(rows, "gated");
    CHECK(json_is_null(json_object_get(gt, "position")));
    CHECK_STR(tm_json_str(gt, "why", ""), "gated: example.com/wait");
    CHECK_STR(json_string_value(json_array_get(json_object_get(gt, "gated"), 0)),
              "example.com/wait");
    /* the table: a header and one line per row, in the same order */
    char *text = sched_queue_view_text(rows);
    CHECK(text && strncmp(text, "POSITION  NAMESPACE/NAME", 24) == 0);
    CHECK(text && strstr(text, "q/g-0 +3") != NULL && strstr(text, "podgroup/gang") != NULL);
    CHECK(text && strstr(text, "2026-11-29T10:01:40Z (in 12 s)") != NULL);
    CHECK(text && strstr(text, "q/hi") < strstr(text, "q/wide") &&
          strstr(text, "q/wide") < strstr(text, "q/g-0"));
    free(text);
    json_decref(rows);
    /* -n q: positions from the whole queue (o, in namespace other, keeps its place 3) */
    rows = sched_queue_view_rows(s, "tarema", pods, "s", NULL, "q", &keys, now_ms, &err);
    CHECK_INT(json_array_size(rows), 6);
    CHECK(row_named(rows, "o") == NULL);
    CHECK_INT(tm_json_int(row_named(rows, "a"), "position", 0), 4);
    json_decref(rows);
    /* the scheduler's namespaces: pods elsewhere are not in its queue */
    const char *only[] = {"other", NULL};
    rows = sched_queue_view_rows(s, "tarema", pods, "s", only, NULL, &keys, now_ms, &err);
    CHECK_INT(json_array_size(rows), 1);
    CHECK_INT(tm_json_int(json_array_get(rows, 0), "position", 0), 1);
    json_decref(rows);
    /* an unknown policy is an error naming it, not a crash */
    rows = sched_queue_view_rows(s, "nope", pods, "s", NULL, NULL, &keys, now_ms, &err);
    CHECK(rows == NULL && strstr(err.msg, "nope") != NULL);
    sched_snapshot_free(s);
    json_decref(pods);
}

int main(void) {
    RUN(test_when);
    RUN(test_asks);
    RUN(test_why);
    RUN(test_rows);
    return TEST_SUMMARY();
}
