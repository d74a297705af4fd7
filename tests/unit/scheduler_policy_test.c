/* scheduler_policy_test.c: tarema's label-distance policy (preference, ties to the most
 * powerful group, least loaded within a group, fall-through to the next group, unlabeled and
 * unprofiled cases) and each baseline (round-robin, fair, fill-nodes, sjfn) on small hand-made
 * snapshots built the way the simulator builds them (no JSON). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/policy/policy.h"

#define GI (1024LL * 1024 * 1024)

/* A node with cpu cores and 8Gi per core; labels c,m,i (0 = unprofiled) in group g. */
static void add_node(sched_snapshot *s, const char *name, int cores, int c, int m, int i,
                     const char *g) {
    sched_node *n = sched_node_new(name);
    n->allocatable.v[SCHED_RES_CPU] = cores * 1000LL;
    n->allocatable.v[SCHED_RES_MEMORY] = cores * 8 * GI;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    if (c) {
        char b[16];
        snprintf(b, sizeof b, "%d", c);
        sched_node_set_label(n, "tarema.io/cpu", b);
        snprintf(b, sizeof b, "%d", m);
        sched_node_set_label(n, "tarema.io/mem", b);
        snprintf(b, sizeof b, "%d", i);
        sched_node_set_label(n, "tarema.io/io", b);
        if (g)
            sched_node_set_label(n, "tarema.io/group", g);
    }
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

/* Occupies millicores on a node through a foreign pod. */
static void occupy(sched_snapshot *s, const char *node, int64_t milli) {
    static int seq;
    char uid[64];
    snprintf(uid, sizeof uid, "busy-%d", seq++);
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = milli;
    r.v[SCHED_RES_PODS] = 1;
    tm_err err;
    sched_snapshot_add_pod(s, uid, node, &r, &err);
}

static sched_pod *mkpod(const char *name, int64_t milli, int c, int m, int i) {
    char uid[64];
    snprintf(uid, sizeof uid, "uid-%s", name);
    sched_pod *p = sched_pod_new("ns", name, uid);
    p->requests.v[SCHED_RES_CPU] = milli;
    p->requests.v[SCHED_RES_MEMORY] = GI;
    p->labels[0] = c;
    p->labels[1] = m;
    p->labels[2] = i;
    return p;
}

/* Name of the node the policy picks for p (no reserve); "" when none. */
static const char *pick(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    sched_decision d;
    tm_err err = {0};
    if (sched_framework_schedule(fw, s, p, 0, &d, &err) != 0) {
        printf("    schedule: %s\n", err.msg);
        return "";
    }
    return d.node >= 0 ? d.node_name : "";
}

/* Picks and reserves; returns the node name. */
static const char *place(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    sched_decision d;
    tm_err err = {0};
    if (sched_framework_schedule(fw, s, p, 0, &d, &err) != 0 || d.node < 0)
        return "";
    if (sched_framework_reserve(fw, s, p, d.node, &err) != 0) {
        printf("    reserve: %s\n", err.msg);
        return "";
    }
    return d.node_name;
}

/* The paper's 3-group cluster: g1 slow (1,1,1), g2 (2,2,2), g3 fast (3,3,3), 2 nodes each. */
static sched_snapshot *three_groups(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "g1-a", 4, 1, 1, 1, "g1");
    add_node(s, "g1-b", 4, 1, 1, 1, "g1");
    add_node(s, "g2-a", 4, 2, 2, 2, "g2");
    add_node(s, "g2-b", 4, 2, 2, 2, "g2");
    add_node(s, "g3-a", 4, 3, 3, 3, "g3");
    add_node(s, "g3-b", 4, 3, 3, 3, "g3");
    return s;
}

static void test_registry(void) {
    tm_err err = {0};
    for (const char *const *n = sched_policy_names(); *n; n++) {
        sched_framework *fw = sched_policy_new(*n, &err);
        CHECK(fw != NULL);
        if (fw)
            CHECK_STR(sched_framework_name(fw), *n);
        sched_framework_free(fw);
    }
    CHECK(sched_policy_new("random", &err) == NULL);
    CHECK(strstr(err.msg, "unknown scheduling policy \"random\"") != NULL);
    CHECK(strstr(err.msg, "round-robin") != NULL);
}

static void test_groups_built(void) {
    sched_snapshot *s = three_groups();
    add_node(s, "x-1", 2, 0, 0, 0, NULL);
    add_node(s, "nogroup-1", 2, 2, 1, 3, NULL);
    sched_snapshot_refresh(s);
    CHECK_INT(sched_snapshot_group_count(s), 5);
    const sched_node *n = sched_snapshot_node_by_name(s, "x-1");
    const sched_group *g = sched_snapshot_group(s, (size_t)n->group);
    CHECK(g->unprofiled);
    CHECK_STR(g->id, "");
    n = sched_snapshot_node_by_name(s, "nogroup-1");
    g = sched_snapshot_group(s, (size_t)n->group);
    CHECK_STR(g->id, "L2-1-3");
    CHECK_INT(g->power, 6);
    n = sched_snapshot_node_by_name(s, "g3-b");
    g = sched_snapshot_group(s, (size_t)n->group);
    CHECK_STR(g->id, "g3");
    CHECK_INT(g->n_nodes, 2);
    sched_snapshot_free(s);
}

static void test_tarema_distance(void) {
    /* Table I of the paper: task (3,3,2) prefers the group closest to it */
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", 4, 1, 1, 1, "ga");
    add_node(s, "b", 4, 2, 4, 2, "gb");
    add_node(s, "c", 4, 4, 2, 3, "gc");
    add_node(s, "d", 4, 3, 3, 3, "gd");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 1000, 3, 3, 2);
    CHECK_STR(pick(fw, s, p), "d"); /* distances a=5 b=2 c=3 d=1 */
    sched_task_info ti;
    sched_task_resolve(s, p, &ti);
    CHECK(ti.labeled);
    const sched_node *n = sched_snapshot_node_by_name(s, "c");
    CHECK_INT(sched_tarema_distance(sched_snapshot_group(s, (size_t)n->group), &ti), 3);
    /* the extender scale gives the preferred group 10 */
    CHECK_INT(sched_framework_extender_score(fw, (size_t)sched_snapshot_node_index(s, "d")), 10);
    CHECK_INT(sched_framework_extender_score(fw, (size_t)sched_snapshot_node_index(s, "a")), 0);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_tarema_tie_most_powerful(void) {
    /* task (2,2,2): groups (1,2,2) and (3,2,2) are both at distance 1; (3,2,2) is stronger */
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a-low", 4, 1, 2, 2, "low");
    add_node(s, "z-high", 4, 3, 2, 2, "high");
    add_node(s, "far", 4, 3, 3, 3, "far");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 1000, 2, 2, 2);
    CHECK_STR(pick(fw, s, p), "z-high");
    /* on the extender scale the tied weaker group is just below the best */
    CHECK_INT(sched_framework_extender_score(fw, (size_t)sched_snapshot_node_index(s, "z-high")),
              10);
    CHECK_INT(sched_framework_extender_score(fw, (size_t)sched_snapshot_node_index(s, "a-low")), 9);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_tarema_least_loaded_in_group(void) {
    sched_snapshot *s = three_groups();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 1000, 3, 3, 3);
    CHECK_STR(pick(fw, s, p), "g3-a"); /* equal load: name order */
    occupy(s, "g3-a", 500);
    CHECK_STR(pick(fw, s, p), "g3-b");
    /* a much less loaded node in another group does not win over the preferred group */
    occupy(s, "g3-b", 2000);
    CHECK_STR(pick(fw, s, p), "g3-a");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_tarema_fall_through(void) {
    sched_snapshot *s = three_groups();
    add_node(s, "unknown-1", 4, 0, 0, 0, NULL);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 3000, 3, 3, 3); /* priority: g3 (d=0), g2 (3), g1 (6) */
    CHECK_STR(pick(fw, s, p), "g3-a");
    occupy(s, "g3-a", 2000);
    occupy(s, "g3-b", 2000);
    CHECK_STR(pick(fw, s, p), "g2-a"); /* preferred group full: next group, not pending */
    occupy(s, "g2-a", 2000);
    occupy(s, "g2-b", 1500);
    CHECK_STR(pick(fw, s, p), "g1-a");
    occupy(s, "g1-a", 2000);
    occupy(s, "g1-b", 2000);
    CHECK_STR(pick(fw, s, p), "unknown-1"); /* unprofiled nodes are the last resort */
    occupy(s, "unknown-1", 2000);
    CHECK_STR(pick(fw, s, p), "");
    char msg[256];
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/7 nodes are available: 7 Insufficient cpu.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_tarema_unlabeled(void) {
    sched_snapshot *s = three_groups();
    add_node(s, "unknown-1", 4, 0, 0, 0, NULL);
    occupy(s, "g1-a", 1000);
    occupy(s, "g1-b", 1000);
    occupy(s, "g2-a", 1000);
    occupy(s, "g2-b", 500);
    occupy(s, "g3-a", 1000);
    occupy(s, "g3-b", 1000);
    occupy(s, "unknown-1", 1000);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 1000, 0, 0, 0);
    CHECK_STR(pick(fw, s, p), "g2-b"); /* least loaded overall, whatever its group */
    occupy(s, "g2-b", 1000);
    occupy(s, "g1-a", 1000);
    occupy(s, "g1-b", 1000);
    occupy(s, "g2-a", 1000);
    occupy(s, "g3-a", 1000);
    occupy(s, "g3-b", 1000);
    CHECK_STR(pick(fw, s, p), "unknown-1"); /* unprofiled nodes serve unknown tasks too */
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_task_table(void) {
    sched_snapshot *s = three_groups();
    tm_err err = {0};
    sched_task_profile tp = {.labels = {1, 1, 2}, .expected_runtime_ms = 5000};
    CHECK(sched_snapshot_set_task(s, "rnaseq", "FASTQC", &tp, &err) == 0);
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = mkpod("t", 1000, 0, 0, 0);
    free(p->workflow);
    free(p->process);
    p->workflow = strdup("rnaseq");
    p->process = strdup("FASTQC");
    CHECK_STR(pick(fw, s, p), "g1-a"); /* (1,1,2): g1 d=1, g2 d=2 */
    const sched_cycle *c = sched_framework_last_cycle(fw);
    CHECK_INT(c->task.expected_runtime_ms, 5000);
    /* explicit annotations override the table */
    p->labels[0] = 3;
    p->labels[1] = 3;
    p->labels[2] = 3;
    CHECK_STR(pick(fw, s, p), "g3-a");
    /* another workflow's process of the same name is not this task */
    memset(p->labels, 0, sizeof p->labels);
    free(p->workflow);
    p->workflow = strdup("sarek");
    sched_task_info ti;
    sched_task_resolve(s, p, &ti);
    CHECK(!ti.labeled);
    CHECK(sched_snapshot_remove_task(s, "rnaseq", "FASTQC") == 0);
    CHECK(sched_snapshot_task(s, "rnaseq", "FASTQC") == NULL);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_round_robin(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "c", 4, 0, 0, 0, NULL);
    add_node(s, "a", 4, 0, 0, 0, NULL);
    add_node(s, "b", 4, 0, 0, 0, NULL);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("round-robin", &err);
    sched_pod *p = mkpod("t", 1000, 3, 3, 3);
    const char *want[] = {"a", "b", "c", "a"};
    for (int i = 0; i < 4; i++) {
        free(p->uid);
        p->uid = malloc(16);
        snprintf(p->uid, 16, "rr-%d", i);
        CHECK_STR(place(fw, s, p), want[i]);
    }
    /* b is full: skipped, the cycle continues after it */
    occupy(s, "b", 3000);
    free(p->uid);
    p->uid = strdup("rr-4");
    CHECK_STR(place(fw, s, p), "c");
    /* the cursor survives node changes: removing c wraps to a */
    CHECK(sched_snapshot_remove_node(s, "c") == 0);
    free(p->uid);
    p->uid = strdup("rr-5");
    CHECK_STR(place(fw, s, p), "a");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_fair(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "big", 8, 3, 3, 3, "g3");
    add_node(s, "small", 2, 1, 1, 1, "g1");
    occupy(s, "big", 2000);   /* 25% */
    occupy(s, "small", 1000); /* 50% */
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p = mkpod("t", 500, 1, 1, 1); /* labels are ignored by fair */
    CHECK_STR(pick(fw, s, p), "big");
    occupy(s, "big", 3000); /* 62.5% */
    CHECK_STR(pick(fw, s, p), "small");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_fill_nodes(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n2", 4, 0, 0, 0, NULL);
    add_node(s, "n1", 4, 0, 0, 0, NULL);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    sched_pod *p = mkpod("t", 1500, 0, 0, 0);
    /* empty cluster: first node in name order, then keep filling it until it is full */
    const char *want[] = {"n1", "n1", "n2", "n2"};
    for (int i = 0; i < 4; i++) {
        free(p->uid);
        p->uid = malloc(16);
        snprintf(p->uid, 16, "fill-%d", i);
        CHECK_STR(place(fw, s, p), want[i]);
    }
    /* n1 drops to 37.5% while n2 stays at 75%: the fuller node that still fits goes first */
    sched_snapshot_remove_pod(s, "fill-0");
    p->requests.v[SCHED_RES_CPU] = 500;
    CHECK_STR(pick(fw, s, p), "n2");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_sjfn(void) {
    sched_snapshot *s = three_groups();
    add_node(s, "unknown-1", 16, 0, 0, 0, NULL);
    tm_err err = {0};
    sched_task_profile shortp = {.labels = {1, 1, 1}, .expected_runtime_ms = 1000};
    sched_task_profile longp = {.labels = {3, 3, 3}, .expected_runtime_ms = 60000};
    sched_snapshot_set_task(s, "wf", "short", &shortp, &err);
    sched_snapshot_set_task(s, "wf", "long", &longp, &err);
    sched_framework *fw = sched_policy_new("sjfn", &err);
    sched_pod *a = mkpod("a", 1000, 0, 0, 0), *b = mkpod("b", 1000, 0, 0, 0),
              *c = mkpod("c", 1000, 0, 0, 0);
    free(a->workflow);
    free(a->process);
    a->workflow = strdup("wf");
    a->process = strdup("long");
    free(b->workflow);
    free(b->process);
    b->workflow = strdup("wf");
    b->process = strdup("short");
    a->created_ms = 1; /* a came first, but b is shorter */
    b->created_ms = 2;
    c->created_ms = 0; /* unknown runtime: after every known one */
    CHECK(sched_framework_queue_cmp(fw, s, b, a) < 0);
    CHECK(sched_framework_queue_cmp(fw, s, a, b) > 0);
    CHECK(sched_framework_queue_cmp(fw, s, a, c) < 0);
    CHECK(sched_framework_queue_cmp(fw, s, c, c) == 0);
    /* node: the most powerful fitting one, least loaded among equals (labels don't matter) */
    CHECK_STR(pick(fw, s, b), "g3-a");
    occupy(s, "g3-a", 1000);
    CHECK_STR(pick(fw, s, b), "g3-b");
    occupy(s, "g3-b", 3500);
    occupy(s, "g3-a", 2500);
    CHECK_STR(pick(fw, s, b), "g2-a");
    sched_pod_free(a);
    sched_pod_free(b);
    sched_pod_free(c);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_default_queue_order(void) {
    tm_err err = {0};
    sched_snapshot *s = sched_snapshot_new();
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *a = mkpod("a", 1, 0, 0, 0), *b = mkpod("b", 1, 0, 0, 0);
    a->created_ms = 10;
    b->created_ms = 5;
    CHECK(sched_framework_queue_cmp(fw, s, b, a) < 0); /* older first */
    a->priority = 100;
    CHECK(sched_framework_queue_cmp(fw, s, a, b) < 0); /* higher priority first */
    sched_pod_free(a);
    sched_pod_free(b);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_reserve_accounts(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "only", 2, 0, 0, 0, NULL);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p = mkpod("p1", 1500, 0, 0, 0);
    CHECK_STR(place(fw, s, p), "only");
    CHECK_STR(sched_snapshot_pod_node(s, "uid-p1"), "only");
    sched_pod *q = mkpod("p2", 1000, 0, 0, 0);
    CHECK_STR(pick(fw, s, q), "");          /* the assumed pod holds its cpu */
    sched_snapshot_remove_pod(s, "uid-p1"); /* bind failed: undo */
    CHECK_STR(pick(fw, s, q), "only");
    sched_pod_free(p);
    sched_pod_free(q);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Profiles: one framework, each pod scored by its own profile's policy and weights; a policy
 * that would order the queue differently is refused (its state freed); a pod's profile comes
 * from its spec.schedulerName through sched_keys.profiles (none: the API's default-scheduler). */
static void test_profiles(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "a", 4, 0, 0, 0, NULL);
    add_node(s, "b", 4, 0, 0, 0, NULL);
    occupy(s, "a", 1000);
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    sched_plugin fair, adaptive;
    CHECK_INT(sched_policy_plugin("fair", &fair, &err), 0);
    CHECK_INT(sched_framework_add_profile(fw, &fair, &err), 1);
    CHECK_INT((int)sched_framework_profile_count(fw), 2);
    /* adaptive has state (freed on refusal: the sanitizers' run checks it) and its own order */
    CHECK_INT(sched_policy_plugin("adaptive", &adaptive, &err), 0);
    CHECK_INT(sched_framework_add_profile(fw, &adaptive, &err), -1);
    CHECK(strstr(err.msg, "orders the queue differently") != NULL);
    /* weights are per profile: profile 1's policy weight, profile 0's untouched */
    CHECK_INT(sched_framework_use_profile(fw, 1, &err), 0);
    CHECK_INT(sched_framework_set_score_weight(fw, "policy", 7, &err), 0);
    CHECK_INT(sched_framework_set_score_weight(fw, "NodeAffinity", 3, &err), 0);
    CHECK_INT(sched_framework_use_profile(fw, 0, &err), 0);
    CHECK_INT(sched_framework_score_weight(fw, "policy"), SCHED_POLICY_WEIGHT_DEFAULT);
    CHECK(sched_framework_score_weight(fw, "NodeAffinity") != 3);
    CHECK_INT(sched_framework_use_profile(fw, 2, &err), -1);

    sched_pod *packed = mkpod("packed", 500, 0, 0, 0), *spread = mkpod("spread", 500, 0, 0, 0);
    spread->profile = 1;
    CHECK_STR(pick(fw, s, packed), "a");                      /* fill-nodes: the fuller node */
    CHECK_STR(pick(fw, s, spread), "b");                      /* fair: the emptier one */
    CHECK_INT(sched_framework_score_weight(fw, "policy"), 7); /* with its own weights */
    CHECK_STR(pick(fw, s, packed), "a");                      /* and back */
    CHECK_INT(sched_framework_score_weight(fw, "policy"), SCHED_POLICY_WEIGHT_DEFAULT);
    spread->profile = 9; /* out of range: the first profile */
    CHECK_STR(pick(fw, s, spread), "a");
    sched_pod_free(packed);
    sched_pod_free(spread);

    const char *names[] = {"tarema", "tarema-spread", "default-scheduler", NULL};
    sched_keys keys = sched_keys_default();
    keys.profiles = names;
    const char *docs[] = {"{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\",\"uid\":\"u1\"},"
                          "\"spec\":{\"schedulerName\":\"tarema-spread\",\"containers\":[]}}",
                          "{\"metadata\":{\"name\":\"y\",\"namespace\":\"n\",\"uid\":\"u2\"},"
                          "\"spec\":{\"schedulerName\":\"tarema\",\"containers\":[]}}",
                          "{\"metadata\":{\"name\":\"z\",\"namespace\":\"n\",\"uid\":\"u3\"},"
                          "\"spec\":{\"schedulerName\":\"other\",\"containers\":[]}}",
                          /* none: the API server's default, default-scheduler */
                          "{\"metadata\":{\"name\":\"w\",\"namespace\":\"n\",\"uid\":\"u4\"},"
                          "\"spec\":{\"containers\":[]}}"};
    const int want[] = {1, 0, 0, 2};
    for (int i = 0; i < 4; i++) {
        json_t *j = json_loads(docs[i], 0, NULL);
        sched_pod *p = sched_pod_from_json(s, j, &keys, &err);
        CHECK(p != NULL);
        if (p)
            CHECK_INT(p->profile, want[i]);
        sched_pod_free(p);
        json_decref(j);
    }
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_registry);
    RUN(test_groups_built);
    RUN(test_tarema_distance);
    RUN(test_tarema_tie_most_powerful);
    RUN(test_tarema_least_loaded_in_group);
    RUN(test_tarema_fall_through);
    RUN(test_tarema_unlabeled);
    RUN(test_task_table);
    RUN(test_round_robin);
    RUN(test_fair);
    RUN(test_fill_nodes);
    RUN(test_sjfn);
    RUN(test_default_queue_order);
    RUN(test_reserve_accounts);
    RUN(test_profiles);
    return TEST_SUMMARY();
}
