/* gang_place_test.c: sched_gang_place on real Node and Pod JSON through the tarema policy:
 * all or nothing, nothing held after a failure, two gangs that fit alone but not together,
 * the preferred node group kept whole, spill only when no group holds the gang, minResources,
 * and the registry's membership, phases and timeout. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

/* A node of the paper cluster's shape: cores, 16 GiB, tarema labels of its group. */
static void add_node(sched_snapshot *s, const char *name, int cores, const char *group, int lc,
                     int lm, int li) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"tarema.io/group\":\"%s\","
             "\"tarema.io/cpu\":\"%d\",\"tarema.io/mem\":\"%d\",\"tarema.io/io\":\"%d\"}},"
             "\"status\":{\"allocatable\":{\"cpu\":\"%d\",\"memory\":\"16Gi\",\"pods\":\"110\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, group, lc, lm, li, cores);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    tm_err err = {0};
    sched_node *n = sched_node_from_json(s, j, &err);
    CHECKF(n != NULL, "%s", err.msg);
    if (n)
        CHECK_INT(sched_snapshot_put_node(s, n, &err), 0);
    json_decref(j);
}

/* A member pod of PodGroup pg asking for cpu, with the task's tarema labels as annotations. */
static sched_pod *member(sched_snapshot *s, const char *pg, const char *name, const char *cpu,
                         int lc) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"sim\",\"uid\":\"uid-%s\","
             "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"},"
             "\"annotations\":{\"tarema.io/cpu\":\"%d\",\"tarema.io/mem\":\"%d\","
             "\"tarema.io/io\":\"%d\"}},"
             "\"spec\":{\"schedulerName\":\"tarema\",\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]}}",
             name, name, pg, lc, lc, lc, cpu);
    json_error_t je;
    json_t *j = json_loads(buf, 0, &je);
    tm_err err = {0};
    sched_pod *p = sched_pod_from_json(s, j, NULL, &err);
    CHECKF(p != NULL, "%s", err.msg);
    json_decref(j);
    return p;
}

/* Two groups: fast (2 nodes x 4 cores, labels 3) and slow (3 nodes x 4 cores, labels 1). */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "fast-1", 4, "fast", 3, 3, 3);
    add_node(s, "fast-2", 4, "fast", 3, 3, 3);
    add_node(s, "slow-1", 4, "slow", 1, 1, 1);
    add_node(s, "slow-2", 4, "slow", 1, 1, 1);
    add_node(s, "slow-3", 4, "slow", 1, 1, 1);
    return s;
}

static int64_t cpu_requested(const sched_snapshot *s) {
    int64_t t = 0;
    for (size_t i = 0; i < sched_snapshot_node_count(s); i++)
        t += sched_snapshot_node(s, i)->requested.v[SCHED_RES_CPU];
    return t;
}

static const char *group_of(const sched_snapshot *s, int node) {
    return node < 0 ? "-"
                    : sched_node_label(sched_snapshot_node(s, (size_t)node), "tarema.io/group");
}

typedef struct gang {
    sched_pod *p[32];
    int nodes[32];
    size_t n;
} gang;

static void mkgang(gang *g, sched_snapshot *s, const char *pg, size_t n, const char *cpu, int lc) {
    g->n = n;
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%zu", pg, i);
        g->p[i] = member(s, pg, name, cpu, lc);
    }
}

static void freegang(gang *g) {
    for (size_t i = 0; i < g->n; i++)
        sched_pod_free(g->p[i]);
}

static void test_all_or_nothing(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang g;
    /* 6 pods of 4 cores: only 5 nodes of 4 cores exist */
    mkgang(&g, s, "big", 6, "4", 3);
    sched_gang_placement pl = {.nodes = g.nodes};
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 6, 0, true, &pl, &err), 0);
    CHECK(!pl.ok);
    CHECK_INT(pl.placed, 0);
    CHECK_INT(cpu_requested(s), 0); /* nothing held */
    CHECK_INT(sched_snapshot_pod_count(s), 0);
    for (size_t i = 0; i < g.n; i++)
        CHECK_INT(g.nodes[i], -1);
    CHECKF(strstr(pl.message, "only 5 of the 6 pod(s) fit at once, 6 needed") != NULL, "%s",
           pl.message);
    CHECKF(strstr(pl.message, "Insufficient cpu") != NULL, "%s", pl.message);
    /* minMember 5 of the same 6: five are placed, spilled over both groups */
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 5, 0, true, &pl, &err), 0);
    CHECK(pl.ok);
    CHECK_INT(pl.placed, 5);
    CHECK(pl.spilled);
    CHECK_INT(cpu_requested(s), 20000);
    freegang(&g);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_prefers_one_group(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang a, b;
    /* A cpu-heavy task (label 3) prefers fast; 4 pods of 2 cores fit there whole. */
    mkgang(&a, s, "a", 4, "2", 3);
    sched_gang_placement pl = {.nodes = a.nodes};
    CHECK_INT(sched_gang_place(fw, s, a.p, a.n, 4, 0, true, &pl, &err), 0);
    CHECK(pl.ok && !pl.spilled);
    for (size_t i = 0; i < a.n; i++)
        CHECK_STR(group_of(s, a.nodes[i]), "fast");
    /* Next gang of the same task: fast is full, the whole gang goes to slow (not split). */
    mkgang(&b, s, "b", 3, "3", 3);
    pl = (sched_gang_placement){.nodes = b.nodes};
    CHECK_INT(sched_gang_place(fw, s, b.p, b.n, 3, 0, true, &pl, &err), 0);
    CHECK(pl.ok && !pl.spilled);
    for (size_t i = 0; i < b.n; i++)
        CHECK_STR(group_of(s, b.nodes[i]), "slow");
    freegang(&a);
    freegang(&b);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Fast has room for 2 pods of 3 cores and slow for 3: a gang of 4 must spill, and takes the
 * preferred group first. */
static void test_spill_when_it_must(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang g;
    mkgang(&g, s, "sp", 4, "3", 3);
    sched_gang_placement pl = {.nodes = g.nodes};
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 4, 0, true, &pl, &err), 0);
    CHECK(pl.ok && pl.spilled);
    int fast = 0;
    for (size_t i = 0; i < g.n; i++)
        fast += strcmp(group_of(s, g.nodes[i]), "fast") == 0;
    CHECK_INT(fast, 2);
    freegang(&g);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Fast (preferred) has room for 2 pods of 3 cores, slow for 3: a gang of 3 stays whole in slow
 * rather than being split 2 + 1 the way pod-by-pod placement would. */
static void test_whole_group_over_split(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang g;
    mkgang(&g, s, "w", 3, "3", 3);
    sched_gang_placement pl = {.nodes = g.nodes};
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 3, 0, true, &pl, &err), 0);
    CHECK(pl.ok && !pl.spilled);
    for (size_t i = 0; i < g.n; i++)
        CHECK_STR(group_of(s, g.nodes[i]), "slow");
    freegang(&g);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Two gangs of 3 pods x 4 cores: each fits alone in the 5 nodes, not both. The first placed
 * completes, the second fails whole and holds nothing; after the first leaves, it fits. */
static void test_two_gangs_no_deadlock(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang a, b;
    mkgang(&a, s, "x", 3, "4", 1);
    mkgang(&b, s, "y", 3, "4", 1);
    sched_gang_placement pa = {.nodes = a.nodes}, pb = {.nodes = b.nodes};
    CHECK_INT(sched_gang_place(fw, s, a.p, a.n, 3, 0, true, &pa, &err), 0);
    CHECK(pa.ok);
    CHECK_INT(sched_gang_place(fw, s, b.p, b.n, 3, 0, true, &pb, &err), 0);
    CHECK(!pb.ok);
    CHECK_INT(cpu_requested(s), 12000); /* only gang x */
    for (size_t i = 0; i < a.n; i++)
        sched_snapshot_remove_pod(s, a.p[i]->uid);
    CHECK_INT(sched_gang_place(fw, s, b.p, b.n, 3, 0, true, &pb, &err), 0);
    CHECK(pb.ok);
    freegang(&a);
    freegang(&b);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_keep_false_and_need(void) {
    tm_err err = {0};
    sched_snapshot *s = cluster();
    sched_framework *fw = sched_policy_new("tarema", &err);
    gang g;
    mkgang(&g, s, "k", 2, "1", 1);
    sched_gang_placement pl = {.nodes = g.nodes};
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 2, 0, false, &pl, &err), 0);
    CHECK(pl.ok);
    CHECK(g.nodes[0] >= 0 && g.nodes[1] >= 0);
    CHECK_INT(cpu_requested(s), 0); /* keep=false: the caller reserves */
    /* more needed than pods waiting: not tried, says so */
    CHECK_INT(sched_gang_place(fw, s, g.p, g.n, 3, 0, true, &pl, &err), 0);
    CHECK(!pl.ok);
    CHECKF(strstr(pl.message, "2 pod(s) waiting") != NULL, "%s", pl.message);
    freegang(&g);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_min_resources(void) {
    sched_snapshot *s = cluster(); /* 20 cores free */
    json_error_t je;
    json_t *pg = json_loads("{\"metadata\":{\"name\":\"g\",\"namespace\":\"sim\"},\"spec\":{"
                            "\"minMember\":2,\"minResources\":{\"cpu\":\"24\"}}}",
                            0, &je);
    sched_gang_spec spec;
    tm_err err = {0};
    CHECK_INT(sched_podgroup_from_json(pg, &spec, &err), 0);
    char why[256];
    CHECK(!sched_gang_min_resources_fit(s, &spec, why, sizeof why));
    CHECKF(strstr(why, "minResources cpu 24000 exceeds the free capacity 20000") != NULL, "%s",
           why);
    spec.min_res[0].amount = 20000;
    CHECK(sched_gang_min_resources_fit(s, &spec, why, sizeof why));
    sched_gang_spec_free(&spec);
    json_decref(pg);
    sched_snapshot_free(s);
}

static void test_registry(void) {
    sched_gang_registry *r = sched_gang_registry_new();
    json_error_t je;
    json_t *pod = json_loads("{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"ns\",\"uid\":\"u0\"},"
                             "\"spec\":{\"workloadRef\":{\"name\":\"train\",\"podGroup\":"
                             "\"workers\",\"podGroupReplicaKey\":\"0\"}}}",
                             0, &je);
    sched_gang_ref ref;
    tm_err err = {0};
    CHECK_INT(sched_gang_ref_from_pod_json(pod, &ref, &err), 0);
    sched_gang *g = sched_gang_registry_set_member(r, &ref, "u0", "w-0", SCHED_GANG_POD_PENDING, 5);
    CHECK(g != NULL);
    if (!g) {
        json_decref(pod);
        sched_gang_registry_free(r);
        return;
    }
    CHECK_STR(g->key, "workload/ns/train/workers/0");
    CHECK(!sched_gang_active(g)); /* no Workload seen yet: waits */
    CHECK_INT(sched_gang_phase_of(g), SCHED_GANG_PENDING);
    json_t *wl = json_loads("{\"metadata\":{\"name\":\"train\",\"namespace\":\"ns\"},\"spec\":{"
                            "\"podGroups\":[{\"name\":\"workers\",\"policy\":{\"gang\":"
                            "{\"minCount\":2}}}]}}",
                            0, &je);
    sched_workload w;
    CHECK_INT(sched_workload_from_json(wl, &w, &err), 0);
    CHECK_INT(sched_gang_registry_workload(r, "ns", "train", &w, NULL), 0);
    CHECK(sched_gang_active(g));
    CHECK_INT(g->spec.min_member, 2);
    ref.owner = "train";
    sched_gang_registry_set_member(r, &ref, "u1", "w-1", SCHED_GANG_POD_BOUND, 6);
    CHECK_INT(sched_gang_placed_count(g), 1);
    sched_gang_registry_set_state(r, "u0", SCHED_GANG_POD_BOUND);
    CHECK_INT(sched_gang_phase_of(g), SCHED_GANG_SCHEDULED);
    sched_gang_registry_set_state(r, "u0", SCHED_GANG_POD_RUNNING);
    sched_gang_registry_set_state(r, "u1", SCHED_GANG_POD_RUNNING);
    CHECK_INT(sched_gang_phase_of(g), SCHED_GANG_RUNNING);
    sched_gang_registry_set_state(r, "u0", SCHED_GANG_POD_SUCCEEDED);
    sched_gang_registry_set_state(r, "u1", SCHED_GANG_POD_SUCCEEDED);
    CHECK_INT(sched_gang_phase_of(g), SCHED_GANG_FINISHED);
    CHECK(sched_gang_registry_of(r, "u1") == g);
    /* timeout */
    g->spec.timeout_ms = 1000;
    g->wait_since_ms = 100;
    CHECK(!sched_gang_timed_out(g, 1099));
    CHECK(sched_gang_timed_out(g, 1100));
    /* members leave; the Workload is deleted: the gang is forgotten */
    sched_gang_registry_remove_member(r, "u0");
    sched_gang_registry_remove_member(r, "u1");
    CHECK_INT(sched_gang_registry_count(r), 1); /* still declared */
    sched_gang_registry_forget_owner(r, SCHED_GANG_WORKLOAD, "ns", "train");
    CHECK_INT(sched_gang_registry_count(r), 0);
    /* an invalid PodGroup: phase Failed with the message */
    g = sched_gang_registry_podgroup(r, "ns", "bad", NULL,
                                     "PodGroup ns/bad: spec.minMember must "
                                     "be at least 1, got 0",
                                     1);
    CHECK(g && !sched_gang_active(g));
    CHECK(g && sched_gang_phase_of(g) == SCHED_GANG_FAILED);
    json_decref(pod);
    json_decref(wl);
    sched_gang_registry_free(r);
}

int main(void) {
    RUN(test_all_or_nothing);
    RUN(test_prefers_one_group);
    RUN(test_spill_when_it_must);
    RUN(test_whole_group_over_split);
    RUN(test_two_gangs_no_deadlock);
    RUN(test_keep_false_and_need);
    RUN(test_min_resources);
    RUN(test_registry);
    return TEST_SUMMARY();
}
