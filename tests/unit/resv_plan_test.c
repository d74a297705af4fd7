/* resv_plan_test.c: reservations in time, the pure part: admission against running pods and
 * other reservations (never double-booked), the policy's group preference, bad input reasons,
 * the honouring rule (backfill, windows, owners), the release decision, expected ends. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plan.h"

#define H  (3600LL * 1000)
#define T0 1795000000000LL /* "now" in every test */

/* g1: n1, n2 with 4 cpu (labels 1,1,1); g2: n3, n4 with 8 cpu (labels 3,3,3). */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    for (int i = 1; i <= 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        sched_node *n = sched_node_new(name);
        bool big = i > 2;
        n->ready = true;
        n->allocatable.v[SCHED_RES_CPU] = big ? 8000 : 4000;
        n->allocatable.v[SCHED_RES_MEMORY] = (big ? 32LL : 16LL) << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        sched_node_set_label(n, "tarema.io/group", big ? "g2" : "g1");
        sched_node_set_label(n, "tarema.io/cpu", big ? "3" : "1");
        sched_node_set_label(n, "tarema.io/mem", big ? "3" : "1");
        sched_node_set_label(n, "tarema.io/io", big ? "3" : "1");
        tm_err err;
        sched_snapshot_put_node(s, n, &err);
    }
    return s;
}

/* A template reservation starting at T0 + start_h hours for `hours`, count pods of cpu. */
static reservation *resv(sched_snapshot *s, const char *name, double start_h, double hours,
                         int count, const char *cpu, const char *extra) {
    char text[2048], st[32], en[32];
    resv_format_time(T0 + (int64_t)(start_h * H), st, sizeof st);
    resv_format_time(T0 + (int64_t)((start_h + hours) * H), en, sizeof en);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"%s\"},\"spec\":{\"startTime\":"
             "\"%s\",\"endTime\":\"%s\",\"count\":%d,\"template\":{\"requests\":{\"cpu\":"
             "\"%s\"}%s},\"owner\":{\"kind\":\"PodGroup\",\"name\":\"%s\"}}}",
             name, st, en, count, cpu, extra ? extra : "", name);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    tm_err err = {0};
    reservation *r = j ? reservation_from_json(s, j, &err) : NULL;
    if (!r)
        printf("    fixture %s: %s %s\n", name, j ? err.msg : je.text, text);
    json_decref(j);
    return r;
}

static int64_t held_cpu(const resv_admission *a) {
    int64_t sum = 0;
    for (size_t i = 0; i < a->n_holds; i++)
        sum += a->holds[i].res.v[SCHED_RES_CPU];
    return sum;
}

typedef struct fixture {
    sched_snapshot *s;
    sched_framework *fw;
    resv_plan *p;
} fixture;

static fixture setup(const char *policy) {
    tm_err err = {0};
    fixture f = {cluster(), sched_policy_new(policy, &err), resv_plan_new()};
    if (!f.fw)
        printf("    policy %s: %s\n", policy, err.msg);
    return f;
}

static void teardown(fixture *f) {
    resv_plan_free(f->p);
    sched_framework_free(f->fw);
    sched_snapshot_free(f->s);
}

static bool admit(fixture *f, reservation *r, const resv_running *pods, size_t n,
                  resv_admission *a) {
    tm_err err = {0};
    if (!r)
        return false;
    if (resv_plan_admit(f->p, f->fw, f->s, r, NULL, pods, n, T0, a, &err) != 0) {
        printf("    admit: %s\n", err.msg);
        return false;
    }
    return a->ok;
}

/* 24 cpu in all: 5 x 2 fit; 8 x 2 in an overlapping window only partly (the first holds 10):
 * refused; 6 x 2 in a later window fits. */
static void test_no_double_booking(void) {
    fixture f = setup("tarema");
    reservation *a = resv(f.s, "a", 1, 1, 5, "2", NULL);
    reservation *b = resv(f.s, "b", 1.5, 1, 8, "2", NULL);
    reservation *c = resv(f.s, "c", 2, 1, 6, "2", NULL);
    resv_admission ra = {0}, rb = {0}, rc = {0};
    CHECK(admit(&f, a, NULL, 0, &ra));
    CHECK_INT(held_cpu(&ra), 10000);
    CHECK(!admit(&f, b, NULL, 0, &rb)); /* 10 + 16 > 24 while they overlap */
    CHECKF(strstr(rb.reason, "only 7 of 8 pods fit") != NULL, "%s", rb.reason);
    CHECK(admit(&f, c, NULL, 0, &rc)); /* a ends at 2h, c starts there */
    CHECK_INT(resv_plan_count(f.p), 2);
    /* whatever was admitted never exceeds a node's allocatable at any moment */
    for (int i = 1; i <= 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        sched_resources peak;
        resv_plan_peak(f.p, name, T0, T0 + 10 * H, NULL, &peak);
        const sched_node *n = sched_snapshot_node_by_name(f.s, name);
        CHECKF(peak.v[SCHED_RES_CPU] <= n->allocatable.v[SCHED_RES_CPU], "%s peak %lld", name,
               (long long)peak.v[SCHED_RES_CPU]);
    }
    resv_admission_clear(&ra);
    resv_admission_clear(&rb);
    resv_admission_clear(&rc);
    reservation_free(a);
    reservation_free(b);
    reservation_free(c);
    teardown(&f);
}

/* 12 pods of 2 cpu fill the cluster exactly: a second overlapping one (even 1 pod) is refused,
 * and every admission's holds sum to its request. */
static void test_exact_fill_then_refuse(void) {
    fixture f = setup("fill-nodes");
    reservation *a = resv(f.s, "a", 1, 1, 12, "2", NULL);
    reservation *b = resv(f.s, "b", 1.9, 1, 1, "500m", NULL);
    resv_admission ra = {0}, rb = {0};
    CHECK(admit(&f, a, NULL, 0, &ra));
    CHECK_INT(held_cpu(&ra), 24000);
    CHECK(!admit(&f, b, NULL, 0, &rb));
    resv_plan_remove(f.p, "wf/a"); /* released: the capacity is free again */
    resv_admission_clear(&rb);
    CHECK(admit(&f, b, NULL, 0, &rb));
    resv_admission_clear(&ra);
    resv_admission_clear(&rb);
    reservation_free(a);
    reservation_free(b);
    teardown(&f);
}

/* Running pods count in the window unless their expected end is before it opens. */
static void test_running_pods_expected_ends(void) {
    fixture f = setup("fill-nodes");
    resv_running pods[4] = {
        {.node = "n1", .end_ms = -1},            /* unknown: runs forever */
        {.node = "n2", .end_ms = T0 + 2 * H},    /* still running at 1h */
        {.node = "n3", .end_ms = T0 + H / 2},    /* done before 1h */
        {.node = "n4", .end_ms = T0 + H - 1000}, /* done before 1h */
    };
    pods[0].req.v[SCHED_RES_CPU] = 4000;
    pods[1].req.v[SCHED_RES_CPU] = 4000;
    pods[2].req.v[SCHED_RES_CPU] = 8000;
    pods[3].req.v[SCHED_RES_CPU] = 8000;
    for (int i = 0; i < 4; i++)
        pods[i].req.v[SCHED_RES_PODS] = 1;
    reservation *a = resv(f.s, "a", 1, 1, 8, "2", NULL);
    reservation *b = resv(f.s, "b", 1, 1, 1, "2", NULL);
    resv_admission ra = {0}, rb = {0};
    CHECK(admit(&f, a, pods, 4, &ra)); /* n3 + n4 = 16 cpu = 8 pods */
    for (size_t i = 0; i < ra.n_holds; i++)
        CHECKF(strcmp(ra.holds[i].node, "n3") == 0 || strcmp(ra.holds[i].node, "n4") == 0,
               "held on %s", ra.holds[i].node);
    CHECK(!admit(&f, b, pods, 4, &rb)); /* n1, n2 busy past 1h */
    resv_admission_clear(&ra);
    resv_admission_clear(&rb);
    reservation_free(a);
    reservation_free(b);
    teardown(&f);
}

/* tarema places the template where its task's labels match: a process labelled (3,3,3) goes to
 * g2, one labelled (1,1,1) to g1. */
static void test_policy_prefers_matching_group(void) {
    fixture f = setup("tarema");
    sched_task_profile big = {.labels = {3, 3, 3}, .expected_runtime_ms = -1};
    sched_task_profile small = {.labels = {1, 1, 1}, .expected_runtime_ms = -1};
    tm_err err = {0};
    sched_snapshot_set_task(f.s, "", "heavy", &big, &err);
    sched_snapshot_set_task(f.s, "", "light", &small, &err);
    reservation *a =
        resv(f.s, "a", 1, 1, 2, "1", ",\"labels\":{\"nextflow.io/processName\":\"heavy\"}");
    reservation *b =
        resv(f.s, "b", 1, 1, 2, "1", ",\"labels\":{\"nextflow.io/processName\":\"light\"}");
    resv_admission ra = {0}, rb = {0};
    CHECK(admit(&f, a, NULL, 0, &ra));
    CHECK(admit(&f, b, NULL, 0, &rb));
    for (size_t i = 0; i < ra.n_holds; i++)
        CHECKF(strcmp(ra.holds[i].node, "n3") == 0 || strcmp(ra.holds[i].node, "n4") == 0,
               "heavy held on %s", ra.holds[i].node);
    for (size_t i = 0; i < rb.n_holds; i++)
        CHECKF(strcmp(rb.holds[i].node, "n1") == 0 || strcmp(rb.holds[i].node, "n2") == 0,
               "light held on %s", rb.holds[i].node);
    resv_admission_clear(&ra);
    resv_admission_clear(&rb);
    reservation_free(a);
    reservation_free(b);
    teardown(&f);
}

static void test_not_admissible_reasons(void) {
    fixture f = setup("tarema");
    struct {
        reservation *r;
        const char *want;
    } cases[] = {
        {resv(f.s, "big", 1, 1, 20, "2", NULL), "larger than the cluster: 20 pods of 2 cpu"},
        {resv(f.s, "fat", 1, 1, 1, "16", NULL), "one pod of spec.template fits no matching"},
        {resv(f.s, "grp", 1, 1, 1, "1", NULL), "no node group matches"},
        {resv(f.s, "old", -2, 1, 1, "1", NULL), "endTime is already past"},
    };
    /* nodeGroup g9 exists nowhere */
    json_object_set_new(cases[2].r->node_selector = json_object(), "tarema.io/group",
                        json_string("g9"));
    cases[2].r->node_group = strdup("g9");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        resv_admission a = {0};
        CHECK(!admit(&f, cases[i].r, NULL, 0, &a));
        CHECKF(strstr(a.reason, cases[i].want) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
               a.reason, cases[i].want);
        CHECK_INT(a.n_holds, 0);
        resv_admission_clear(&a);
        reservation_free(cases[i].r);
    }
    CHECK_INT(resv_plan_count(f.p), 0); /* nothing held */
    teardown(&f);
}

/* spec.nodes without a template: whole nodes, refused when the node is busy in the window. */
static void test_whole_nodes(void) {
    fixture f = setup("tarema");
    char text[1024], st[32], en[32];
    resv_format_time(T0 + H, st, sizeof st);
    resv_format_time(T0 + 2 * H, en, sizeof en);
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"w\"},\"spec\":{\"startTime\":\"%s\","
             "\"endTime\":\"%s\",\"nodes\":[\"n3\",\"n4\"],\"owner\":{\"selector\":{"
             "\"matchLabels\":{\"step\":\"mpi\"}}}}}",
             st, en);
    json_t *j = json_loads(text, 0, NULL);
    tm_err err = {0};
    reservation *w = reservation_from_json(f.s, j, &err);
    json_decref(j);
    CHECKF(w != NULL, "%s", err.msg);
    resv_running busy = {.node = "n4", .end_ms = -1};
    busy.req.v[SCHED_RES_CPU] = 100;
    busy.req.v[SCHED_RES_PODS] = 1;
    resv_admission a = {0};
    CHECK(!admit(&f, w, &busy, 1, &a));
    CHECKF(strstr(a.reason, "node n4 is not free") != NULL, "%s", a.reason);
    resv_admission_clear(&a);
    busy.end_ms = T0 + H / 2; /* done before: fine */
    CHECK(admit(&f, w, &busy, 1, &a));
    CHECK_INT(a.n_holds, 2);
    CHECK_INT(held_cpu(&a), 16000);
    resv_admission_clear(&a);
    reservation_free(w);
    teardown(&f);
}

/* The planning copy of the cluster follows the live nodes: a node added, or relabelled into
 * the group a reservation asks for, between two admissions is used by the second. */
static void test_planning_follows_node_changes(void) {
    fixture f = setup("tarema");
    reservation *a = resv(f.s, "a", 1, 1, 12, "2", NULL); /* fills all 24 cpu */
    reservation *b = resv(f.s, "b", 1, 1, 2, "2", NULL);
    reservation *g = resv(f.s, "g", 5, 1, 1, "1", NULL);
    json_object_set_new(g->node_selector = json_object(), "tarema.io/group", json_string("g7"));
    g->node_group = strdup("g7");
    resv_admission ra = {0}, rb = {0}, rg = {0};
    CHECK(admit(&f, a, NULL, 0, &ra));
    CHECK(!admit(&f, b, NULL, 0, &rb));
    resv_admission_clear(&rb);
    sched_node *n = sched_node_new("n5");
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 16LL << 30;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    tm_err err = {0};
    sched_snapshot_put_node(f.s, n, &err);
    CHECK(admit(&f, b, NULL, 0, &rb));
    CHECK(rb.n_holds == 1 && strcmp(rb.holds[0].node, "n5") == 0);
    CHECK(!admit(&f, g, NULL, 0, &rg)); /* nobody is in g7 yet */
    resv_admission_clear(&rg);
    n = sched_node_new("n1"); /* n1 relabelled into g7 */
    n->ready = true;
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 16LL << 30;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "tarema.io/group", "g7");
    sched_snapshot_put_node(f.s, n, &err);
    CHECK(admit(&f, g, NULL, 0, &rg));
    CHECK(rg.n_holds == 1 && strcmp(rg.holds[0].node, "n1") == 0);
    resv_admission_clear(&ra);
    resv_admission_clear(&rb);
    resv_admission_clear(&rg);
    reservation_free(a);
    reservation_free(b);
    reservation_free(g);
    teardown(&f);
}

/* A batch decides exactly as the same admissions one by one, in order. */
static void test_batch_equals_sequence(void) {
    fixture one = setup("tarema"), batch = setup("tarema");
    reservation *rs[6];
    for (int i = 0; i < 6; i++) {
        char name[8];
        snprintf(name, sizeof name, "r%d", i);
        rs[i] = resv(one.s, name, 1 + 0.25 * i, 1, 2 + i % 3, i % 2 ? "2" : "1500m", NULL);
    }
    resv_running run = {.node = "n3", .end_ms = -1};
    run.req.v[SCHED_RES_CPU] = 6000;
    run.req.v[SCHED_RES_PODS] = 1;
    resv_admission seq[6], bat[6];
    tm_err err = {0};
    for (int i = 0; i < 6; i++)
        CHECK(resv_plan_admit(one.p, one.fw, one.s, rs[i], NULL, &run, 1, T0, &seq[i], &err) == 0);
    CHECK(resv_plan_admit_batch(batch.p, batch.fw, batch.s, (const reservation *const *)rs, 6, NULL,
                                &run, 1, T0, bat, &err) == 0);
    int admitted = 0;
    for (int i = 0; i < 6; i++) {
        admitted += seq[i].ok;
        CHECKF(seq[i].ok == bat[i].ok && seq[i].n_holds == bat[i].n_holds, "r%d", i);
        CHECK_STR(bat[i].reason, seq[i].reason);
        for (size_t h = 0; h < seq[i].n_holds && h < bat[i].n_holds; h++) {
            CHECK_STR(bat[i].holds[h].node, seq[i].holds[h].node);
            CHECK_INT(bat[i].holds[h].pods, seq[i].holds[h].pods);
        }
        resv_admission_clear(&seq[i]);
        resv_admission_clear(&bat[i]);
        reservation_free(rs[i]);
    }
    CHECKF(admitted > 0 && admitted < 6, "admitted %d of 6: the case must mix both", admitted);
    teardown(&one);
    teardown(&batch);
}

static void test_peak_not_sum(void) {
    resv_plan *p = resv_plan_new();
    resv_hold h = {.node = "n1"};
    tm_err err = {0};
    h.res.v[SCHED_RES_CPU] = 3000;
    resv_plan_put(p, "wf/a", 0, 10, &h, 1, &err);
    h.res.v[SCHED_RES_CPU] = 2000;
    resv_plan_put(p, "wf/b", 10, 20, &h, 1, &err);
    resv_plan_put(p, "wf/c", 15, 30, &h, 1, &err);
    sched_resources peak;
    resv_plan_peak(p, "n1", 0, 10, NULL, &peak);
    CHECK_INT(peak.v[SCHED_RES_CPU], 3000);
    resv_plan_peak(p, "n1", 0, 40, NULL, &peak);
    CHECK_INT(peak.v[SCHED_RES_CPU], 4000); /* b and c overlap on [15, 20) */
    resv_plan_peak(p, "n1", 0, 40, "wf/c", &peak);
    CHECK_INT(peak.v[SCHED_RES_CPU], 3000);
    resv_plan_peak(p, "n1", 20, 40, NULL, &peak);
    CHECK_INT(peak.v[SCHED_RES_CPU], 2000);
    /* release: nothing left behind on the node */
    CHECK(resv_plan_remove(p, "wf/a") == 0 && resv_plan_remove(p, "wf/b") == 0);
    CHECK(resv_plan_remove(p, "wf/c") == 0 && resv_plan_remove(p, "wf/c") == -1);
    size_t n = 9;
    resv_plan_node_held(p, "n1", &peak, &n);
    CHECK_INT(n, 0);
    CHECK_INT(peak.v[SCHED_RES_CPU], 0);
    resv_plan_free(p);
}

/* The honouring rule on one node with 8 cpu free and one reservation holding 6 from 1h. */
static void test_honour_rule(void) {
    sched_resources free8 = {0}, req4 = {0}, req2 = {0};
    free8.v[SCHED_RES_CPU] = 8000;
    req4.v[SCHED_RES_CPU] = 4000;
    req2.v[SCHED_RES_CPU] = 2000;
    resv_claim c = {.start_ms = T0 + H, .end_ms = T0 + 2 * H};
    c.held.v[SCHED_RES_CPU] = 6000;
    /* before the window */
    CHECK(resv_honour(&free8, &c, 1, &req4, T0 + H / 2, T0, NULL) == RESV_HONOUR_OK);
    CHECK(resv_honour(&free8, &c, 1, &req4, T0 + H, T0, NULL) == RESV_HONOUR_OK); /* at start */
    CHECK(resv_honour(&free8, &c, 1, &req4, T0 + H + 1, T0, NULL) == RESV_HONOUR_NO_BACKFILL);
    CHECK(resv_honour(&free8, &c, 1, &req4, -1, T0, NULL) == RESV_HONOUR_NO_BACKFILL);
    CHECK(resv_honour(&free8, &c, 1, &req2, -1, T0, NULL) == RESV_HONOUR_OK); /* unheld 2 */
    c.pod_is_owner = true; /* owners do not use the hold before the window either */
    CHECK(resv_honour(&free8, &c, 1, &req4, -1, T0, NULL) == RESV_HONOUR_NO_BACKFILL);
    /* inside the window */
    int64_t in = T0 + H + 1;
    CHECK(resv_honour(&free8, &c, 1, &req4, -1, in, NULL) == RESV_HONOUR_OK);
    c.pod_is_owner = false;
    CHECK(resv_honour(&free8, &c, 1, &req4, in + 1, in, NULL) == RESV_HONOUR_RESERVED);
    CHECK(resv_honour(&free8, &c, 1, &req2, -1, in, NULL) == RESV_HONOUR_OK);
    c.owner_used.v[SCHED_RES_CPU] = 4000; /* the owner runs 4 of its 6 there: 2 held left */
    sched_resources free4 = {0};
    free4.v[SCHED_RES_CPU] = 4000;
    CHECK(resv_honour(&free4, &c, 1, &req2, -1, in, NULL) == RESV_HONOUR_OK);
    /* the 2 still held stay the owner's: 4 free - 2 held < 4 */
    CHECK(resv_honour(&free4, &c, 1, &req4, -1, in, NULL) == RESV_HONOUR_RESERVED);
    /* after the window: nothing held */
    c.owner_used.v[SCHED_RES_CPU] = 0;
    CHECK(resv_honour(&free8, &c, 1, &req4, -1, T0 + 2 * H, NULL) == RESV_HONOUR_OK);
}

static bool owner_of_a(void *ud, const char *key) {
    (void)ud;
    return strcmp(key, "wf/a") == 0;
}

/* The table-level filter: the owner's pods go to the nodes held for them. */
static void test_plan_filter_elsewhere(void) {
    resv_plan *p = resv_plan_new();
    resv_hold h[2] = {{.node = "n1"}, {.node = "n2"}};
    h[0].res.v[SCHED_RES_CPU] = 4000;
    h[1].res.v[SCHED_RES_CPU] = 4000;
    tm_err err = {0};
    resv_plan_put(p, "wf/a", T0, T0 + H, h, 2, &err);
    sched_resources free8 = {0}, req2 = {0};
    free8.v[SCHED_RES_CPU] = 8000;
    req2.v[SCHED_RES_CPU] = 2000;
    char why[256] = "";
    int64_t in = T0 + 1;
    CHECK(resv_plan_filter(p, "n1", &free8, &req2, -1, owner_of_a, NULL, in, why, sizeof why) ==
          RESV_HONOUR_OK);
    CHECK(resv_plan_filter(p, "n3", &free8, &req2, -1, owner_of_a, NULL, in, why, sizeof why) ==
          RESV_HONOUR_ELSEWHERE);
    CHECKF(strstr(why, "wf/a") != NULL, "%s", why);
    /* once its holds are used up, the owner may go anywhere */
    sched_resources used = {0};
    used.v[SCHED_RES_CPU] = 4000;
    resv_plan_set_used(p, "wf/a", "n1", &used);
    resv_plan_set_used(p, "wf/a", "n2", &used);
    CHECK(resv_plan_filter(p, "n3", &free8, &req2, -1, owner_of_a, NULL, in, why, sizeof why) ==
          RESV_HONOUR_OK);
    /* a stranger on n1 before the window with a long run: refused, naming the reservation */
    sched_resources free4 = {0};
    free4.v[SCHED_RES_CPU] = 4000;
    CHECK(resv_plan_filter(p, "n1", &free4, &req2, T0 + 2 * H, NULL, NULL, T0 - H, why,
                           sizeof why) == RESV_HONOUR_NO_BACKFILL);
    CHECKF(strstr(why, "reserved for wf/a") != NULL, "%s", why);
    resv_plan_free(p);
}

static void test_release_decisions(void) {
    resv_facts f = {.phase = RESV_ADMITTED, .start_ms = T0 + H, .end_ms = T0 + 2 * H, .now_ms = T0};
    resv_decision d = resv_decide(&f);
    CHECK(d.phase == RESV_ADMITTED && !d.release);
    f.now_ms = T0 + H; /* window opens */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_ACTIVE && !d.release);
    f.phase = RESV_ACTIVE;
    d = resv_decide(&f); /* active, owner not started yet: keep */
    CHECK(d.phase == RESV_ACTIVE && !d.release);
    f.owner_started = true;
    f.owner_pods_now = 2;
    d = resv_decide(&f);
    CHECK(d.phase == RESV_ACTIVE && !d.release);
    f.owner_pods_now = 0; /* release path 1: the owner's pods finished */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_RELEASED && d.release);
    CHECK_STR(d.message, "the owner's pods all finished");
    f.owner_pods_now = 1;
    f.owner_missing = true; /* path 2: owner deleted */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_RELEASED && d.release);
    CHECK_STR(d.message, "the owner was deleted");
    f.owner_missing = false;
    f.now_ms = T0 + 2 * H; /* path 3: endTime */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_EXPIRED && d.release);
    f.now_ms = T0;
    f.phase = RESV_ADMITTED;
    f.deleted = true; /* path 4: reservation deleted (also before its window) */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_RELEASED && d.release);
    f.phase = RESV_FAILED; /* terminal phases stay */
    d = resv_decide(&f);
    CHECK(d.phase == RESV_FAILED && !d.release);
}

static void test_expected_end(void) {
    sched_snapshot *s = cluster();
    sched_task_profile tp = {.expected_runtime_ms = 600000, .n_group_rt = 1};
    snprintf(tp.group_rt[0].group, sizeof tp.group_rt[0].group, "g2");
    tp.group_rt[0].runtime_ms = 300000;
    tp.group_rt[0].runs = 4;
    tm_err err = {0};
    sched_snapshot_set_task(s, "", "align", &tp, &err);
    json_t *pj = json_loads("{\"metadata\":{\"name\":\"p\",\"namespace\":\"wf\",\"labels\":{"
                            "\"nextflow.io/processName\":\"align\"}},\"spec\":{}}",
                            0, NULL);
    sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
    CHECK(p != NULL);
    if (p) {
        const sched_node *g1 = sched_snapshot_node_by_name(s, "n1");
        const sched_node *g2 = sched_snapshot_node_by_name(s, "n3");
        CHECK_INT(resv_expected_end(s, p, g2, 0), 300000); /* its group's runtime */
        CHECK_INT(resv_expected_end(s, p, g1, 0), 600000); /* the mean elsewhere */
        p->active_deadline_s = 100;                        /* the kubelet ends it first */
        CHECK_INT(resv_expected_end(s, p, g1, 0), 100000);
        p->active_deadline_s = 0;
        p->expected_duration_ms = 42000; /* the annotation wins */
        CHECK_INT(resv_expected_end(s, p, g2, 10), 42010);
        free(p->process);
        p->process = strdup("unknown");
        p->expected_duration_ms = 0;
        CHECK_INT(resv_expected_end(s, p, g2, 0), -1);
    }
    sched_pod_free(p);
    json_decref(pj);
    /* the annotation and activeDeadlineSeconds as podspec parses them */
    pj = json_loads("{\"metadata\":{\"name\":\"q\",\"annotations\":{\"tarema.io/expected-"
                    "duration\":\"2m\"}},\"spec\":{\"activeDeadlineSeconds\":30}}",
                    0, NULL);
    p = sched_pod_from_json(s, pj, NULL, &err);
    CHECK(p && p->expected_duration_ms == 120000 && p->active_deadline_s == 30);
    sched_pod_free(p);
    json_decref(pj);
    pj = json_loads("{\"metadata\":{\"name\":\"r\",\"annotations\":{\"tarema.io/expected-"
                    "duration\":\"soon\"}},\"spec\":{}}",
                    0, NULL);
    p = sched_pod_from_json(s, pj, NULL, &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "tarema.io/expected-duration") != NULL, "%s", err.msg);
    sched_pod_free(p);
    json_decref(pj);
    sched_snapshot_free(s);
}

/* A reservation from 1h for 1h placed by `where` (a spec fragment: nodes, nodeGroup), count pods
 * of cpu, priority; pinned: on one node (spec.nodes). */
static reservation *placed_by(sched_snapshot *s, const char *name, const char *where, int count,
                              const char *cpu, int32_t priority) {
    char text[1024], st[32], en[32];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"namespace\":\"wf\",\"name\":\"%s\"},\"spec\":{\"startTime\":"
             "\"%s\",\"endTime\":\"%s\",\"count\":%d,%s,\"priorityClassName\":"
             "\"p%d\",\"template\":{\"requests\":{\"cpu\":\"%s\"}},\"owner\":{\"kind\":"
             "\"PodGroup\",\"name\":\"%s\"}}}",
             name, resv_format_time(T0 + H, st, sizeof st),
             resv_format_time(T0 + 2 * H, en, sizeof en), count, where, (int)priority, cpu, name);
    json_t *j = json_loads(text, 0, NULL);
    tm_err err = {0};
    reservation *r = j ? reservation_from_json(s, j, &err) : NULL;
    json_decref(j);
    if (!r) {
        printf("    fixture %s: %s\n", name, err.msg);
        return NULL;
    }
    r->priority = priority; /* the controller resolves the class; the plan reads the value */
    return r;
}

static reservation *pinned(sched_snapshot *s, const char *name, const char *node, int count,
                           const char *cpu, int32_t priority) {
    char where[128];
    snprintf(where, sizeof where, "\"nodes\":[\"%s\"]", node);
    return placed_by(s, name, where, count, cpu, priority);
}

static bool displaced_has(const resv_admission *a, const char *key) {
    for (size_t i = 0; i < a->n_displaced; i++)
        if (strcmp(a->displaced[i].key, key) == 0)
            return true;
    return false;
}

/* Displacement by priority (issue 31): lo (0) fills n1, mid (5) fills n2. hi (100) on n1
 * displaces lo and only lo: mid was taken out too, and put back where it was. A reservation of
 * mid's priority on n2 displaces nothing; an open window is never displaced; when even displacing
 * does not make room, the table is left exactly as it was and the reason says so. */
static void test_displacement_by_priority(void) {
    fixture f = setup("tarema");
    reservation *lo = pinned(f.s, "lo", "n1", 2, "2", 0);
    reservation *mid = pinned(f.s, "mid", "n2", 2, "2", 5);
    reservation *hi = pinned(f.s, "hi", "n1", 1, "2", 100);
    reservation *same = pinned(f.s, "same", "n2", 1, "2", 5);
    resv_admission a = {0};
    CHECK(admit(&f, lo, NULL, 0, &a) && a.n_displaced == 0);
    resv_admission_clear(&a);
    CHECK(admit(&f, mid, NULL, 0, &a) && a.n_displaced == 0);
    resv_admission_clear(&a);
    /* equal priority: first come, first served (lo, lower, holds only a node same may not use) */
    CHECK(!admit(&f, same, NULL, 0, &a));
    CHECKF(strstr(a.reason, "displacing") == NULL, "%s", a.reason);
    CHECK(a.n_displaced == 0 && resv_plan_has(f.p, "wf/mid") && resv_plan_has(f.p, "wf/lo"));
    resv_admission_clear(&a);
    CHECK(admit(&f, hi, NULL, 0, &a));
    CHECK_INT(a.n_displaced, 1);
    CHECK(displaced_has(&a, "wf/lo") && !displaced_has(&a, "wf/mid"));
    CHECK(a.n_displaced == 1 && a.displaced[0].priority == 0);
    CHECK(!resv_plan_has(f.p, "wf/lo") && resv_plan_has(f.p, "wf/mid") &&
          resv_plan_has(f.p, "wf/hi"));
    sched_resources held;
    resv_plan_node_held(f.p, "n2", &held, NULL); /* mid where it was */
    CHECK_INT(held.v[SCHED_RES_CPU], 4000);
    resv_plan_node_held(f.p, "n1", &held, NULL);
    CHECK_INT(held.v[SCHED_RES_CPU], 2000);
    resv_admission_clear(&a);
    /* lo, planned again at its own priority, finds n1 half taken: refused, displacing nothing */
    CHECK(!admit(&f, lo, NULL, 0, &a));
    CHECK(a.n_displaced == 0 && resv_plan_has(f.p, "wf/hi"));
    resv_admission_clear(&a);

    /* n3 held from an hour ago (open now) at priority 0: never displaced */
    resv_hold h = {.node = "n3", .pods = 4};
    h.res.v[SCHED_RES_CPU] = 8000;
    tm_err err = {0};
    CHECK(resv_plan_put(f.p, "wf/open", T0 - H, T0 + 3 * H, &h, 1, &err) == 0);
    reservation *hi3 = pinned(f.s, "hi3", "n3", 1, "2", 100);
    CHECK(!admit(&f, hi3, NULL, 0, &a));
    CHECK(resv_plan_has(f.p, "wf/open") && a.n_displaced == 0);
    resv_admission_clear(&a);

    /* n4 has 6 of 8 cpu taken by a running pod of unknown end and 2 held by lo4 (priority 0):
     * 2 pods of 2 cpu do not fit there even without lo4; lo4 is taken out and put back */
    resv_running run = {.node = "n4", .end_ms = -1};
    run.req.v[SCHED_RES_CPU] = 6000;
    run.req.v[SCHED_RES_PODS] = 1;
    reservation *lo4 = pinned(f.s, "lo4", "n4", 1, "2", 0);
    reservation *hi4 = pinned(f.s, "hi4", "n4", 2, "2", 100);
    CHECK(admit(&f, lo4, &run, 1, &a));
    resv_admission_clear(&a);
    size_t before = resv_plan_count(f.p);
    CHECK(!admit(&f, hi4, &run, 1, &a));
    CHECKF(strstr(a.reason, "displacing the 1 admitted reservation of lower priority") != NULL,
           "%s", a.reason);
    CHECK_INT(resv_plan_count(f.p), before);
    CHECK(resv_plan_has(f.p, "wf/lo4") && a.n_displaced == 0);
    resv_plan_node_held(f.p, "n4", &held, NULL);
    CHECK_INT(held.v[SCHED_RES_CPU], 2000);
    CHECK(resv_plan_set_priority(f.p, "wf/none", 1) == -1);
    resv_admission_clear(&a);
    reservation_free(lo);
    reservation_free(mid);
    reservation_free(hi);
    reservation_free(same);
    reservation_free(hi3);
    reservation_free(hi4);
    reservation_free(lo4);
    teardown(&f);
}

/* The reprieve is kube-scheduler's: victims are put back most important first, each kept while
 * the new reservation still fits beside it. v1 (priority 5) holds all of n1, v2 (priority 1)
 * half of n2; hi (100) needs a whole node of g1 (n1 or n2): v1 is kept (hi goes to n2), only v2
 * is displaced, though with both out of the way n1 would have done as well. */
static void test_displacement_reprieves_the_most_important(void) {
    fixture f = setup("tarema");
    reservation *v1 = pinned(f.s, "v1", "n1", 1, "4", 5);
    reservation *v2 = pinned(f.s, "v2", "n2", 1, "2", 1);
    reservation *hi = placed_by(f.s, "hi", "\"nodeGroup\":\"g1\"", 1, "4", 100);
    resv_admission a = {0};
    CHECK(admit(&f, v1, NULL, 0, &a));
    resv_admission_clear(&a);
    CHECK(admit(&f, v2, NULL, 0, &a));
    resv_admission_clear(&a);
    CHECK(admit(&f, hi, NULL, 0, &a));
    CHECK(a.n_displaced == 1 && displaced_has(&a, "wf/v2"));
    CHECK(a.n_holds == 1 && strcmp(a.holds[0].node, "n2") == 0);
    CHECK(resv_plan_has(f.p, "wf/v1") && !resv_plan_has(f.p, "wf/v2"));
    sched_resources held;
    resv_plan_node_held(f.p, "n1", &held, NULL);
    CHECK_INT(held.v[SCHED_RES_CPU], 4000);
    resv_admission_clear(&a);
    reservation_free(v1);
    reservation_free(v2);
    reservation_free(hi);
    teardown(&f);
}

int main(void) {
    RUN(test_no_double_booking);
    RUN(test_exact_fill_then_refuse);
    RUN(test_running_pods_expected_ends);
    RUN(test_policy_prefers_matching_group);
    RUN(test_not_admissible_reasons);
    RUN(test_whole_nodes);
    RUN(test_planning_follows_node_changes);
    RUN(test_batch_equals_sequence);
    RUN(test_peak_not_sum);
    RUN(test_honour_rule);
    RUN(test_plan_filter_elsewhere);
    RUN(test_release_decisions);
    RUN(test_expected_end);
    RUN(test_displacement_by_priority);
    RUN(test_displacement_reprieves_the_most_important);
    return TEST_SUMMARY();
}
