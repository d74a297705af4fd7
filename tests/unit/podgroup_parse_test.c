/* podgroup_parse_test.c: PodGroup and Workload JSON and pod membership, good and bad input. */
#include <stdio.h>

#include "harness.h"
#include "scheduler/plugins/gang/podgroup.h"

static json_t *J(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        printf("    bad test JSON: %s\n", je.text);
    return j;
}

static void test_podgroup_ok(void) {
    json_t *pg = J("{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
                   "\"metadata\":{\"name\":\"mpi\",\"namespace\":\"hpc\"},\"spec\":{"
                   "\"minMember\":5,\"scheduleTimeoutSeconds\":30,"
                   "\"minResources\":{\"cpu\":\"10\",\"memory\":\"8Gi\",\"nvidia.com/gpu\":2}}}");
    sched_gang_spec s;
    tm_err err = {0};
    CHECKF(sched_podgroup_from_json(pg, &s, &err) == 0, "%s", err.msg);
    CHECK_INT(s.min_member, 5);
    CHECK_INT(s.timeout_ms, 30000);
    CHECK_INT(s.n_min_res, 3);
    for (size_t i = 0; i < s.n_min_res; i++) {
        if (strcmp(s.min_res[i].name, "cpu") == 0)
            CHECK_INT(s.min_res[i].amount, 10000);
        else if (strcmp(s.min_res[i].name, "memory") == 0)
            CHECK_INT(s.min_res[i].amount, 8LL << 30);
        else
            CHECK_INT(s.min_res[i].amount, 2);
    }
    sched_gang_spec_free(&s);
    json_decref(pg);
}

static void bad_pg(const char *spec, const char *want) {
    char buf[512];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"g\",\"namespace\":\"n\"},\"spec\":%s}",
             spec);
    json_t *pg = J(buf);
    sched_gang_spec s;
    tm_err err = {0};
    CHECK_INT(sched_podgroup_from_json(pg, &s, &err), -1);
    CHECKF(strstr(err.msg, want) != NULL, "got \"%s\", want \"%s\"", err.msg, want);
    CHECK(s.min_res == NULL);
    json_decref(pg);
}

static void test_podgroup_bad(void) {
    bad_pg("{\"minMember\":0}", "PodGroup n/g: spec.minMember must be at least 1, got 0");
    bad_pg("{}", "spec.minMember must be at least 1, got 0");
    bad_pg("{\"minMember\":-3}", "spec.minMember must be at least 1, got -3");
    bad_pg("{\"minMember\":\"3\"}", "spec.minMember must be an integer");
    bad_pg("{\"minMember\":2,\"scheduleTimeoutSeconds\":-1}",
           "spec.scheduleTimeoutSeconds must not be negative, got -1");
    bad_pg("{\"minMember\":2,\"minResources\":{\"cpu\":\"lots\"}}", "spec.minResources.cpu:");
    bad_pg("{\"minMember\":2,\"minResources\":[1]}", "spec.minResources must be an object");
}

static void test_workload(void) {
    json_t *wl = J("{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"podGroups\":[{\"name\":\"driver\",\"policy\":{\"basic\":{}}},"
                   "{\"name\":\"workers\",\"policy\":{\"gang\":{\"minCount\":4}}}]}}");
    sched_workload w;
    tm_err err = {0};
    CHECKF(sched_workload_from_json(wl, &w, &err) == 0, "%s", err.msg);
    CHECK_INT(w.n_groups, 2);
    const sched_workload_group *g = sched_workload_group_find(&w, "workers");
    CHECK(g && g->gang && g->min_count == 4);
    g = sched_workload_group_find(&w, "driver");
    CHECK(g && !g->gang);
    CHECK(sched_workload_group_find(&w, "nope") == NULL);
    sched_workload_free(&w);
    json_decref(wl);
    wl = J("{\"metadata\":{\"name\":\"t\",\"namespace\":\"ml\"},\"spec\":{\"podGroups\":["
           "{\"name\":\"w\",\"policy\":{\"gang\":{\"minCount\":0}}}]}}");
    CHECK_INT(sched_workload_from_json(wl, &w, &err), -1);
    CHECKF(strstr(err.msg, "Workload ml/t: spec.podGroups[0].policy.gang.minCount must be at "
                           "least 1, got 0") != NULL,
           "%s", err.msg);
    json_decref(wl);
    wl = J("{\"metadata\":{\"name\":\"t\",\"namespace\":\"ml\"},\"spec\":{}}");
    CHECK_INT(sched_workload_from_json(wl, &w, &err), -1);
    CHECKF(strstr(err.msg, "spec.podGroups must be a non-empty list") != NULL, "%s", err.msg);
    json_decref(wl);
}

static void test_membership(void) {
    json_t *p = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"hpc\",\"labels\":{"
                  "\"scheduling.x-k8s.io/pod-group\":\"mpi\"}},\"spec\":{}}");
    sched_gang_ref r;
    tm_err err = {0};
    char key[SCHED_GANG_KEY_MAX];
    CHECK_INT(sched_gang_ref_from_pod_json(p, &r, &err), 0);
    CHECK_INT(r.kind, SCHED_GANG_PODGROUP);
    CHECK_STR(sched_gang_ref_key(&r, key, sizeof key), "podgroup/hpc/mpi");
    json_decref(p);
    p = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"workloadRef\":{"
          "\"name\":\"train\",\"podGroup\":\"workers\"}}}");
    CHECK_INT(sched_gang_ref_from_pod_json(p, &r, &err), 0);
    CHECK_INT(r.kind, SCHED_GANG_WORKLOAD);
    CHECK_STR(sched_gang_ref_key(&r, key, sizeof key), "workload/ml/train/workers/");
    json_decref(p);
    p = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"workloadRef\":{"
          "\"name\":\"train\"}}}");
    CHECK_INT(sched_gang_ref_from_pod_json(p, &r, &err), -1);
    CHECKF(strstr(err.msg, "pod ml/p: spec.workloadRef needs name and podGroup") != NULL, "%s",
           err.msg);
    json_decref(p);
    p = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{}}");
    CHECK_INT(sched_gang_ref_from_pod_json(p, &r, &err), 0);
    CHECK_INT(r.kind, SCHED_GANG_NONE);
    json_decref(p);
}

int main(void) {
    RUN(test_podgroup_ok);
    RUN(test_podgroup_bad);
    RUN(test_workload);
    RUN(test_membership);
    return TEST_SUMMARY();
}
