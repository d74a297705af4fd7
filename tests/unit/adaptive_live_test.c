/* adaptive_live_test.c: the live half of the adaptive policy (issue 16): the labeler's node
 * group per run (node_group.h) and runtime per group (group_runtime.h), the scheduler reading
 * TaskProfile status.runtimeByGroup into the task table (podspec.h), bad entries refused with a
 * warning, and explain showing each group's predicted runtime and expected finish. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/group_runtime.h"
#include "labeler/node_group.h"
#include "lib/jsonutil.h"
#include "scheduler/backend/cache.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

#define GI (1024LL * 1024 * 1024)

static json_t *js(const char *text) {
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        printf("    bad JSON in test: %s\n", e.text);
    return j;
}

/* Runs of A on groups "2" (100, 110, 120, 130 s) and "1" (200 s), one of A with an unknown
 * group, one without realtime, and one of B: per group, A's runs only, sorted by group id.
 * Group 2: mean 115, sd sqrt(((-15)^2 + (-5)^2 + 5^2 + 15^2) / 3) = sqrt(500 / 3) = 12.910,
 * median 115, p90 at h = 0.9 * 3 = 2.7: 120 + 0.7 * 10 = 127. */
static void test_group_runtimes(void) {
    lab_sample v[] = {{"A", {NAN, NAN, NAN}, 100000}, {"A", {NAN, NAN, NAN}, 130000},
                      {"A", {NAN, NAN, NAN}, 200000}, {"A", {NAN, NAN, NAN}, 110000},
                      {"A", {NAN, NAN, NAN}, 120000}, {"A", {NAN, NAN, NAN}, 999000},
                      {"A", {NAN, NAN, NAN}, NAN},    {"B", {NAN, NAN, NAN}, 5000}};
    const char *groups[] = {"2", "2", "1", "2", "2", NULL, "1", "1"};
    lab_group_rt g[4];
    tm_err err = {{0}, 0};
    int n = lab_group_runtimes(v, groups, 8, "A", g, 4, &err);
    CHECK_INT(n, 2);
    CHECK_STR(g[0].group, "1");
    CHECK_INT(g[0].runs, 1);
    CHECK_NEAR(g[0].mean_s, 200, 1e-9);
    CHECK_NEAR(g[0].stddev_s, 0, 1e-9);
    CHECK_STR(g[1].group, "2");
    CHECK_INT(g[1].runs, 4);
    CHECK_NEAR(g[1].mean_s, 115, 1e-9);
    CHECK_NEAR(g[1].stddev_s, sqrt(500.0 / 3), 1e-9);
    CHECK_NEAR(g[1].p50_s, 115, 1e-9);
    CHECK_NEAR(g[1].p90_s, 127, 1e-9);
    /* nothing known about the groups: none */
    CHECK_INT(lab_group_runtimes(v, NULL, 8, "A", g, 4, &err), 0);
    /* the status array */
    json_t *st = lab_group_runtimes_status(v, groups, 8, "A");
    char *text = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
    CHECKF(text && strcmp(text, "[{\"group\":\"1\",\"meanSeconds\":200.0,\"p50Seconds\":200.0,"
                                "\"p90Seconds\":200.0,\"runs\":1,\"stddevSeconds\":0.0},"
                                "{\"group\":\"2\",\"meanSeconds\":115.0,\"p50Seconds\":115.0,"
                                "\"p90Seconds\":127.0,\"runs\":4,\"stddevSeconds\":12.91}]") == 0,
           "%s", text ? text : "(null)");
    free(text);
    json_decref(st);
    st = lab_group_runtimes_status(v, groups, 8, "C"); /* no runs of C */
    CHECK(json_is_array(st) && json_array_size(st) == 0);
    json_decref(st);
}

/* The group of a node: tarema.io/group, else the label triple as the scheduler names it,
 * else none; from Nodes and from the profiler's document; filled into runs by hostname. */
static void test_node_groups(void) {
    char g[64];
    json_t *l = js("{\"tarema.io/group\":\"3\",\"tarema.io/cpu\":\"1\"}");
    CHECK(lab_node_group_from_labels(l, g, sizeof g) && strcmp(g, "3") == 0);
    json_decref(l);
    l = js("{\"tarema.io/cpu\":\"2\",\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"3\"}");
    CHECK(lab_node_group_from_labels(l, g, sizeof g) && strcmp(g, "L2-1-3") == 0);
    json_decref(l);
    l = js("{\"tarema.io/cpu\":\"2\",\"tarema.io/mem\":\"x\",\"tarema.io/io\":\"3\"}");
    CHECK(!lab_node_group_from_labels(l, g, sizeof g) && g[0] == '\0');
    json_decref(l);
    CHECK(!lab_node_group_from_labels(NULL, g, sizeof g));

    json_t *nodes = js("[{\"metadata\":{\"name\":\"n1-0\",\"labels\":{\"tarema.io/group\":\"1\"}}},"
                       "{\"metadata\":{\"name\":\"c2-0\",\"labels\":{\"tarema.io/group\":\"3\"}}},"
                       "{\"metadata\":{\"name\":\"plain\",\"labels\":{}}}]");
    json_t *map = lab_node_groups_from_nodes(nodes);
    CHECK_INT(json_object_size(map), 2);
    lab_task_run runs[3];
    for (int i = 0; i < 3; i++)
        lab_task_run_init(&runs[i]);
    strcpy(runs[0].node, "c2-0");
    strcpy(runs[1].node, "plain");
    strcpy(runs[2].node_group, "stale"); /* no node: no group, whatever was there */
    CHECK_INT((int)lab_node_groups_fill(map, runs, 3), 1);
    CHECK_STR(runs[0].node_group, "3");
    CHECK_STR(runs[1].node_group, "");
    CHECK_STR(runs[2].node_group, "");
    json_decref(map);
    json_decref(nodes);

    json_t *doc = js("{\"groups\":[],\"nodes\":[{\"node\":\"n2-0\",\"group\":2,\"labels\":{"
                     "\"tarema.io/group\":\"2\",\"tarema.io/cpu\":\"2\"}},{\"node\":\"x\"}]}");
    map = lab_node_groups_from_doc(doc);
    CHECK_STR(tm_json_str(map, "n2-0", ""), "2");
    CHECK_INT(json_object_size(map), 1);
    json_decref(map);
    json_decref(doc);
}

static const char *tp_json =
    "{\"metadata\":{\"name\":\"tp\"},\"spec\":{\"workflow\":\"wf\",\"process\":\"A\"},"
    "\"status\":{\"labels\":{\"cpu\":1,\"mem\":1,\"io\":1},\"mean\":{\"realtimeMs\":80000},"
    "\"runtimeByGroup\":%s}}";

static int parse(const char *groups, sched_task_profile *tp, tm_err *warn) {
    char buf[4096];
    snprintf(buf, sizeof buf, tp_json, groups);
    json_t *j = js(buf);
    const char *wf, *proc;
    tm_err err = {{0}, 0};
    int rc = sched_task_profile_from_json_warn(j, &wf, &proc, tp, warn, &err);
    json_decref(j);
    return rc;
}

/* The labeler's status array becomes the task table's group_rt; bad entries are left out with
 * a warning naming the entry, and the profile's labels still count. */
static void test_read_runtime_by_group(void) {
    sched_task_profile tp;
    tm_err warn = {{0}, 0};
    CHECK_INT(parse("[{\"group\":\"1\",\"runs\":3,\"meanSeconds\":100.25,\"stddevSeconds\":1},"
                    "{\"group\":\"2\",\"runs\":2,\"meanSeconds\":60}]",
                    &tp, &warn),
              0);
    CHECK_INT(tp.n_group_rt, 2);
    CHECK_STR(tp.group_rt[0].group, "1");
    CHECK_INT((int)tp.group_rt[0].runtime_ms, 100250);
    CHECK_INT(tp.group_rt[0].runs, 3);
    CHECK_INT((int)tp.group_rt[1].runtime_ms, 60000);
    CHECK_STR(warn.msg, "");
    static const char *const bad[][2] = {
        {"[{\"group\":\"1\",\"runs\":\"3\",\"meanSeconds\":1}]", "[0] has no runs count >= 1"},
        {"[{\"group\":\"1\",\"runs\":0,\"meanSeconds\":1}]", "[0] has no runs count >= 1"},
        {"[{\"group\":\"1\",\"runs\":1,\"meanSeconds\":-1}]", "[0] has no meanSeconds"},
        {"[{\"group\":\"1\",\"runs\":1,\"meanSeconds\":1e300}]", "[0] has no meanSeconds"},
        {"[{\"group\":\"1\",\"runs\":1}]", "[0] has no meanSeconds"},
        {"[{\"runs\":1,\"meanSeconds\":1}]", "[0] has no group id"},
        {"[{\"group\":\"a-very-long-group-id\",\"runs\":1,\"meanSeconds\":1}]", "longer than 15"},
        {"[7]", "[0] is not an object"},
        {"{\"group\":\"1\"}", "runtimeByGroup is not an array"},
        {"[{\"group\":\"1\",\"runs\":1,\"meanSeconds\":5},{\"group\":\"1\",\"runs\":1,"
         "\"meanSeconds\":9}]",
         "[1] repeats a group id"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tm_err_clear(&warn);
        CHECK_INT(parse(bad[i][0], &tp, &warn), 0);
        CHECKF(strstr(warn.msg, bad[i][1]) && strstr(warn.msg, "TaskProfile tp"), "%s: %s",
               bad[i][0], warn.msg);
        CHECK_INT(tp.labels[0], 1);
        CHECK_INT((int)tp.expected_runtime_ms, 80000);
        /* only the repeated entry's first copy survives */
        CHECK_INT(tp.n_group_rt, i + 1 == sizeof bad / sizeof bad[0] ? 1 : 0);
    }
    /* more groups than the scheduler keeps: the first 8 */
    char many[2048] = "[";
    for (int g = 0; g < 10; g++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"group\":\"g%d\",\"runs\":1,\"meanSeconds\":%d}", g ? "," : "", g, g + 1);
    strcat(many, "]");
    tm_err_clear(&warn);
    CHECK_INT(parse(many, &tp, &warn), 0);
    CHECK_INT(tp.n_group_rt, SCHED_TASK_MAX_GROUPS);
    CHECKF(strstr(warn.msg, "[8] is beyond the 8 groups"), "%s", warn.msg);
    /* absent or null: no per-group history, no warning */
    tm_err_clear(&warn);
    CHECK_INT(parse("null", &tp, &warn), 0);
    CHECK_INT(tp.n_group_rt, 0);
    CHECK_STR(warn.msg, "");
}

/* The labeler's status, read back by the scheduler: the same figures (to the millisecond). */
static void test_round_trip(void) {
    lab_sample v[] = {{"A", {NAN, NAN, NAN}, 100123}, {"A", {NAN, NAN, NAN}, 60000}};
    const char *groups[] = {"1", "2"};
    json_t *arr = lab_group_runtimes_status(v, groups, 2, "A");
    char *text = json_dumps(arr, JSON_COMPACT);
    sched_task_profile tp;
    tm_err warn = {{0}, 0};
    CHECK_INT(parse(text, &tp, &warn), 0);
    CHECK_INT(tp.n_group_rt, 2);
    CHECK_INT((int)tp.group_rt[0].runtime_ms, 100123);
    CHECK_INT((int)tp.group_rt[1].runtime_ms, 60000);
    CHECK_STR(warn.msg, "");
    free(text);
    json_decref(arr);
}

/* status.mean.cpuPercent is the cores its runs used (adaptive's contention term): 680 %cpu ->
 * 6,800 millicores; absent, zero, negative or absurd reads as unknown (0). */
static void test_read_cpu_use(void) {
    static const struct {
        const char *mean;
        long long want;
    } cases[] = {
        {"{\"cpuPercent\":680,\"realtimeMs\":1}", 6800},
        {"{\"cpuPercent\":60.04}", 600},
        {"{\"realtimeMs\":1}", 0},
        {"{\"cpuPercent\":0}", 0},
        {"{\"cpuPercent\":-5}", 0},
        {"{\"cpuPercent\":\"680\"}", 0},
        {"{\"cpuPercent\":1e12}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[512];
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"tp\"},\"spec\":{\"workflow\":\"wf\",\"process\":"
                 "\"A\"},\"status\":{\"mean\":%s}}",
                 cases[i].mean);
        json_t *j = js(buf);
        const char *wf, *proc;
        sched_task_profile tp;
        tm_err warn = {{0}, 0}, err = {{0}, 0};
        CHECK_INT(sched_task_profile_from_json_warn(j, &wf, &proc, &tp, &warn, &err), 0);
        CHECKF(tp.cpu_use_milli == cases[i].want, "%s: %lld, want %lld", cases[i].mean,
               (long long)tp.cpu_use_milli, cases[i].want);
        json_decref(j);
    }
}

/* The live cache: a TaskProfile with a bad runtimeByGroup entry is taken (labels and the good
 * entries count), never refused as a whole; a good one fills the task table's group_rt. */
static void test_cache_reads_groups(void) {
    tm_err err = {{0}, 0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    json_t *tp = js("{\"metadata\":{\"name\":\"tp\",\"namespace\":\"ns\"},\"spec\":{"
                    "\"workflow\":\"wf\",\"process\":\"A\"},\"status\":{\"labels\":{\"cpu\":2},"
                    "\"runtimeByGroup\":[{\"group\":\"1\",\"runs\":2,\"meanSeconds\":50},"
                    "{\"group\":\"2\",\"runs\":-4,\"meanSeconds\":10}]}}");
    CHECK_INT(sched_cache_task_event(c, TM_WATCH_ADDED, tp, &err), 0);
    const sched_task_profile *t = sched_snapshot_task(sched_cache_snapshot(c), "wf", "A");
    CHECK(t != NULL);
    if (t) {
        CHECK_INT(t->labels[SCHED_FEAT_CPU], 2);
        CHECK_INT(t->n_group_rt, 1);
        CHECK_STR(t->group_rt[0].group, "1");
        CHECK_INT((int)t->group_rt[0].runtime_ms, 50000);
    }
    json_decref(tp);
    sched_cache_free(c);
}

static void add_node(sched_snapshot *s, const char *name, int l, const char *g) {
    sched_node *n = sched_node_new(name);
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 32 * GI;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    char b[16];
    snprintf(b, sizeof b, "%d", l);
    sched_node_set_label(n, "tarema.io/cpu", b);
    sched_node_set_label(n, "tarema.io/mem", b);
    sched_node_set_label(n, "tarema.io/io", b);
    sched_node_set_label(n, "tarema.io/group", g);
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

static const json_t *group_of(const json_t *doc, const char *id) {
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        if (strcmp(tm_json_str(g, "id", ""), id) == 0)
            return g;
    }
    return NULL;
}

/* Three groups by power 1 < 2 < 3; the task (labels 1: tarema says group 1) ran 100 s on
 * group 1 and 60 s on group 3. Predictions: 1 measured 100, 3 measured 60, 2 bounded: no
 * slower than group 1 (100), no faster than group 3 (60) -> (100 + 60) / 2 = 80. Group 3 has
 * the earliest finish (room now, 60 s) and explain says so, in JSON and text. */
static void test_explain_adaptive(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "weak-0", 1, "1");
    add_node(s, "mid-0", 2, "2");
    add_node(s, "strong-0", 3, "3");
    sched_task_profile tp;
    tm_err warn = {{0}, 0}, err = {{0}, 0};
    CHECK_INT(parse("[{\"group\":\"1\",\"runs\":3,\"meanSeconds\":100},"
                    "{\"group\":\"3\",\"runs\":2,\"meanSeconds\":60}]",
                    &tp, &warn),
              0);
    CHECK_INT(sched_snapshot_set_task(s, "wf", "A", &tp, &err), 0);
    sched_pod *p = sched_pod_new("ns", "a", "uid-a");
    free(p->workflow);
    free(p->process);
    p->workflow = strdup("wf");
    p->process = strdup("A");
    p->requests.v[SCHED_RES_CPU] = 1000;
    p->requests.v[SCHED_RES_MEMORY] = GI;
    p->requests.v[SCHED_RES_PODS] = 1;
    sched_framework *fw = sched_policy_new("adaptive", &err);
    json_t *doc = fw ? sched_explain(fw, s, p, 0, &err) : NULL;
    CHECKF(doc != NULL, "%s", err.msg);
    CHECK_STR(tm_json_str(doc, "selected", ""), "strong-0");
    const json_t *a1 = json_object_get(group_of(doc, "1"), "adaptive"),
                 *a2 = json_object_get(group_of(doc, "2"), "adaptive"),
                 *a3 = json_object_get(group_of(doc, "3"), "adaptive");
    CHECK_INT(tm_json_int(a1, "predictedRuntimeMs", -1), 100000);
    CHECK_STR(tm_json_str(a1, "basis", ""), "measured");
    CHECK_INT(tm_json_int(a1, "runs", -1), 3);
    CHECK_INT(tm_json_int(a2, "predictedRuntimeMs", -1), 80000);
    CHECK_STR(tm_json_str(a2, "basis", ""), "bounded");
    CHECK_INT(tm_json_int(a2, "runs", -1), 0);
    CHECK_INT(tm_json_int(a3, "predictedRuntimeMs", -1), 60000);
    CHECK_INT(tm_json_int(a3, "expectedFinishMs", -1), 60000);
    const char *why = tm_json_str(doc, "why", "");
    CHECKF(strstr(why, "group 3: earliest expected finish (room now, predicted runtime 60.0 s "
                       "(measured, 2 run(s)))") &&
               strstr(why, "group 1 100.0 s (measured, 3 run(s))") &&
               strstr(why, "group 2 80.0 s (bounded by the groups it ran on)"),
           "%s", why);
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "predicted runtime 80.0 s (bounded by the groups it ran on); "
                                "expected finish in 80.0 s"),
           "%s", text ? text : "(null)");
    free(text);
    json_decref(doc);
    /* tarema's explain carries no adaptive figures */
    sched_framework *ta = sched_policy_new("tarema", &err);
    doc = ta ? sched_explain(ta, s, p, 0, &err) : NULL;
    CHECK(doc && !json_object_get(group_of(doc, "1"), "adaptive"));
    json_decref(doc);
    sched_framework_free(ta);
    sched_framework_free(fw);
    sched_pod_free(p);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_group_runtimes);
    RUN(test_node_groups);
    RUN(test_read_runtime_by_group);
    RUN(test_round_trip);
    RUN(test_read_cpu_use);
    RUN(test_cache_reads_groups);
    RUN(test_explain_adaptive);
    return TEST_SUMMARY();
}
