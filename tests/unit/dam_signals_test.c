/* dam_signals_test.c: a cluster's API objects into its CLUSTERS entry (dam/signals.h), the
 * entry read back by the ranking's input, the ASA learner's wait, and the submission's pods. */
#include <stdlib.h>

#include "dam/input.h"
#include "dam/signals.h"
#include "dam/submit.h"
#include "harness.h"
#include "labeler/asa_table.h"
#include "lib/jsonutil.h"

static json_t *parse(const char *s) {
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        printf("    bad test JSON: %s\n", e.text);
    return j;
}

static const char *NODES =
    "[{\"metadata\": {\"name\": \"a1\", \"labels\": {\"kubernetes.io/arch\": \"amd64\"},"
    "  \"annotations\": {\"tarema.io/profile\": \"{\\\"figures\\\": {\\\"cpu_single\\\": 300}}\"}},"
    " \"status\": {\"allocatable\": {\"cpu\": \"8\", \"memory\": \"32Gi\", \"nvidia.com/gpu\": "
    "\"2\"}}},"
    " {\"metadata\": {\"name\": \"a2\", \"labels\": {\"kubernetes.io/arch\": \"arm64\"},"
    "  \"annotations\": {\"tarema.io/profile\": \"{\\\"figures\\\": {\\\"cpu_single\\\": 600}}\"}},"
    " \"status\": {\"allocatable\": {\"cpu\": \"4000m\", \"memory\": \"64Gi\"}}},"
    " {\"metadata\": {\"name\": \"cordoned\"}, \"spec\": {\"unschedulable\": true},"
    " \"status\": {\"allocatable\": {\"cpu\": \"100\", \"memory\": \"1Ti\"}}}]";

static const char *PODS =
    "[{\"metadata\": {\"name\": \"p1\", \"namespace\": \"x\"}, \"spec\": {\"nodeName\": \"a1\","
    "  \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"1500m\"}}},"
    "                  {\"resources\": {\"requests\": {\"cpu\": \"500m\"}}}]}, \"status\": "
    "{\"phase\": \"Running\"}},"
    " {\"metadata\": {\"name\": \"p2\", \"namespace\": \"x\"}, \"spec\": {\"nodeName\": \"a2\","
    "  \"initContainers\": [{\"resources\": {\"requests\": {\"cpu\": \"3\"}}}],"
    "  \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}, \"status\": "
    "{\"phase\": \"Running\"}},"
    " {\"metadata\": {\"name\": \"done\", \"namespace\": \"x\"}, \"spec\": {\"nodeName\": \"a1\","
    "  \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"4\"}}}]}, \"status\": "
    "{\"phase\": \"Succeeded\"}},"
    " {\"metadata\": {\"name\": \"oncordoned\", \"namespace\": \"x\"}, \"spec\": {\"nodeName\": "
    "\"cordoned\","
    "  \"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"50\"}}}]}, \"status\": "
    "{\"phase\": \"Running\"}},"
    " {\"metadata\": {\"name\": \"pend1\", \"namespace\": \"x\", \"creationTimestamp\": "
    "\"2026-11-23T20:50:00Z\"},"
    "  \"spec\": {\"containers\": [{}]}, \"status\": {\"phase\": \"Pending\"}},"
    " {\"metadata\": {\"name\": \"pend2\", \"namespace\": \"x\", \"creationTimestamp\": "
    "\"2026-11-23T20:30:00Z\"},"
    "  \"spec\": {\"containers\": [{}]}, \"status\": {\"phase\": \"Pending\"}}]";

#define NOW 1795467600.0 /* 2026-11-23T21:00:00Z */

static void test_nodes_and_pods(void) {
    json_t *nodes = parse(NODES), *pods = parse(PODS);
    json_t *e = json_pack("{s:s,s:s}", "name", "a", "site", "s1");
    dam_cluster_objects o = {.nodes = nodes, .pods = pods};
    tm_err err = {0};
    CHECKF(dam_signals_fill(e, &o, NULL, NOW, &err) == 0, "%s", err.msg);
    /* cordoned node and the pod on it do not count */
    CHECK(fabs(tm_json_num(e, "cores.total", -1) - 12) < 1e-9);
    /* p1 2 cores, p2 max(init 3, 1) = 3; the finished pod does not count */
    CHECK(fabs(tm_json_num(e, "cores.used", -1) - 5) < 1e-9);
    CHECK(fabs(tm_json_num(e, "memory", -1) - 64.0 * (1 << 30)) < 1);
    CHECK_INT(json_array_size(json_object_get(e, "architectures")), 2);
    CHECK(fabs(json_number_value(
                   json_object_get(json_object_get(e, "accelerators"), "nvidia.com/gpu")) -
               2) < 1e-9);
    /* cores-weighted: (8 * 300 + 4 * 600) / 12 = 400 */
    CHECK(fabs(tm_json_num(e, "perf_per_core", -1) - 400) < 1e-9);
    /* the oldest pending pod is 30 minutes old */
    CHECK(fabs(tm_json_num(e, "wait.pending_age", -1) - 1800) < 1e-9);
    CHECK_STR(tm_json_str(e, "site", NULL), "s1");
    json_decref(e);
    json_decref(nodes);
    json_decref(pods);
}

static void test_unparsable_quantity_names_node(void) {
    json_t *nodes = parse("[{\"metadata\": {\"name\": \"bad\"}, \"status\": {\"allocatable\":"
                          " {\"cpu\": \"eight\"}}}]");
    json_t *e = json_object();
    dam_cluster_objects o = {.nodes = nodes};
    tm_err err = {0};
    CHECK(dam_signals_fill(e, &o, NULL, NOW, &err) < 0);
    CHECKF(strstr(err.msg, "node bad") && strstr(err.msg, "cpu"), "%s", err.msg);
    json_decref(e);
    json_decref(nodes);
}

static json_t *maint_cm(const char *windows) {
    return json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "name", "tarema-dam-maintenance",
                     "namespace", "ops", "data", "windows", windows);
}

static void test_maintenance_overlapping_ranked_masked(void) {
    /* two overlapping windows, the merged one covers the job's frame */
    json_t *cm = maint_cm("- {start: 2026-11-23T22:00:00Z, end: 2026-11-23T23:00:00Z, reason: a}\n"
                          "- {start: 2026-11-23T22:30:00Z, end: 2026-11-24T01:00:00Z}\n");
    json_t *nodes = parse(NODES);
    json_t *e = json_pack("{s:s}", "name", "a");
    dam_cluster_objects o = {.nodes = nodes, .maintenance_cm = cm};
    tm_err err = {0};
    CHECKF(dam_signals_fill(e, &o, NULL, NOW, &err) == 0, "%s", err.msg);
    CHECK_INT(json_array_size(json_object_get(e, "maintenance")), 2);
    /* the entry goes through the ranking's own input and is masked for a 2 h job */
    json_t *doc = json_pack("{s:f,s:[O]}", "now", NOW, "clusters", e);
    json_t *job = json_pack("{s:s,s:i,s:s}", "name", "j", "cores", 2, "runtime", "2h");
    dam_request *r = dam_request_new(job, doc, NOW, &err);
    CHECKF(r != NULL, "%s", err.msg);
    dam_ranking rk;
    if (r) {
        CHECK(dam_rank(dam_request_input(r), dam_request_job(r), &rk, &err) == 0);
        CHECK(rk.chosen == -1);
        CHECK(rk.r[0].excluded == DAM_MAINTENANCE);
        CHECK_INT(rk.r[0].windows_merged, 1);
    }
    dam_request_free(r);
    json_decref(doc);
    json_decref(job);
    json_decref(e);
    json_decref(cm);
    json_decref(nodes);
}

static void test_maintenance_bad_window_names_configmap(void) {
    const char *bad[] = {"- {start: tomorrow, end: 2026-11-24T01:00:00Z}\n",
                         "- {start: 2026-11-24T02:00:00Z, end: 2026-11-24T01:00:00Z}\n",
                         "{start: 2026-11-24T02:00:00Z}\n", "- [1, 2]\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *cm = maint_cm(bad[i]);
        json_t *e = json_object();
        dam_cluster_objects o = {.maintenance_cm = cm};
        tm_err err = {0};
        CHECKF(dam_signals_fill(e, &o, NULL, NOW, &err) < 0, "window %zu accepted", i);
        CHECKF(strstr(err.msg, "ConfigMap ops/tarema-dam-maintenance: data.windows"), "%s",
               err.msg);
        json_decref(e);
        json_decref(cm);
    }
    json_t *cm =
        json_pack("{s:{s:s,s:s},s:{}}", "metadata", "name", "m", "namespace", "ops", "data");
    json_t *e = json_object();
    dam_cluster_objects o = {.maintenance_cm = cm};
    tm_err err = {0};
    CHECK(dam_signals_fill(e, &o, NULL, NOW, &err) < 0 && strstr(err.msg, "missing"));
    json_decref(e);
    json_decref(cm);
}

static char *asa_state(int pods, long long cpu, long long mem, double wait) {
    asa_config cfg;
    asa_config_default(&cfg, ASA_POLICY_TUNED);
    asa_table *t = asa_table_new(&cfg);
    asa_key k;
    tm_err err = {0};
    asa_key_make(&k, "science", "", pods, cpu, mem, &err);
    asa_rng rng;
    asa_rng_seed(&rng, 1);
    for (int i = 0; i < 40; i++)
        asa_table_observe(t, &k, -1, wait, &rng, &err);
    char *s = asa_table_to_json(t);
    asa_table_free(t);
    return s;
}

static void test_asa_predicted_wait(void) {
    char *st = asa_state(2, 4000, 1LL << 30, 600);
    dam_shape sh = {.ns = "science", .pods = 2, .cpu_milli = 4000, .mem_bytes = 1LL << 30};
    CHECK(fabs(dam_asa_wait(st, &sh, NULL, 0) - 600) < 1e-9);
    sh.ns = "other"; /* the same shape in another namespace still counts */
    CHECK(fabs(dam_asa_wait(st, &sh, NULL, 0) - 600) < 1e-9);
    sh.pods = 3; /* another shape: none */
    CHECK(dam_asa_wait(st, &sh, NULL, 0) < 0);
    char warn[256];
    CHECK(dam_asa_wait("not json", &sh, warn, sizeof warn) < 0 && warn[0]);
    /* the ConfigMap wins over pending pods */
    json_t *cm = json_pack("{s:{s:s}}", "data", "state.json", st);
    json_t *pods = parse(PODS), *e = json_object();
    sh.pods = 2;
    dam_cluster_objects o = {.pods = pods, .asa_cm = cm};
    tm_err err = {0};
    CHECK(dam_signals_fill(e, &o, &sh, NOW, &err) == 0);
    CHECK(fabs(tm_json_num(e, "wait.predicted", -1) - 600) < 1e-9);
    CHECK(!tm_json_path(e, "wait.pending_age"));
    json_decref(e);
    json_decref(pods);
    json_decref(cm);
    free(st);
}

static void test_submit_check_and_pods(void) {
    tm_err err = {0};
    json_t *ok = parse("{\"pods\": [{\"metadata\": {\"labels\": {\"app\": \"wrf\"}},"
                       " \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"x\"}]}}]}");
    CHECK(dam_submit_check(ok, &err) == 0);
    json_t *pods = dam_submit_pods(ok, "0123456789abcdef0123456789abcdef", 2, "science");
    json_t *p = json_array_get(pods, 0);
    CHECK_STR(tm_json_str(p, "metadata.name", ""), "dam-0123456789ab-2-0");
    CHECK_STR(tm_json_str(p, "metadata.namespace", ""), "science");
    CHECK_STR(
        json_string_value(json_object_get(tm_json_path(p, "metadata.labels"), DAM_REQUEST_LABEL)),
        "0123456789abcdef0123456789abcdef");
    CHECK_STR(json_string_value(json_object_get(tm_json_path(p, "metadata.labels"), "app")), "wrf");
    CHECK_STR(tm_json_str(p, "spec.restartPolicy", ""), "Never");
    json_decref(pods);
    json_decref(ok);
    const char *bad[][2] = {{"[]", "submit: expected an object"},
                            {"{\"pods\": []}", "submit.pods: expected a list"},
                            {"{\"pod\": []}", "pod"},
                            {"{\"pods\": [1]}", "submit.pods[0]: expected a Pod"},
                            {"{\"pods\": [{\"spec\": {}}]}", "submit.pods[0].spec.containers"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *s = parse(bad[i][0]);
        err.msg[0] = 0;
        CHECKF(dam_submit_check(s, &err) < 0 && strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0],
               err.msg);
        json_decref(s);
    }
}

int main(void) {
    RUN(test_nodes_and_pods);
    RUN(test_unparsable_quantity_names_node);
    RUN(test_maintenance_overlapping_ranked_masked);
    RUN(test_maintenance_bad_window_names_configmap);
    RUN(test_asa_predicted_wait);
    RUN(test_submit_check_and_pods);
    return TEST_SUMMARY();
}
