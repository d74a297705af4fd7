/* framework_points_test.c: the framework's extension points with plugins registered from outside
 * (as the gang and reservation plugins are): the order of the hooks through a scheduling and a
 * binding cycle, Permit allow / reject / wait (allowed, rejected, timed out), Unreserve on a
 * Permit reject and on a bind failure, a Filter plugin's own reason in the FailedScheduling
 * message, PreFilter rejecting every node, PreEnqueue, QueueSort chaining and PostFilter. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/plugins/filters.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/policy/policy.h"

/* ---- a recording plugin: every hook appends "NAME.point" to a shared log ---- */

typedef struct rec {
    const char *name;
    char *log; /* shared */
    size_t size;
    sched_status permit;   /* what permit answers */
    int64_t timeout_ms;    /* with WAIT */
    sched_status bind;     /* what bind answers */
    sched_status pre_bind; /* what pre_bind answers */
    const char *reject;    /* filter: reject nodes whose name contains this (detail 7) */
    bool prefilter_reject; /* pre_filter answers UNSCHEDULABLE with detail 3 */
    const char *hold;      /* pre_enqueue: hold pods whose name starts with this */
    sched_status hold_as;  /* ... answering this (0: UNSCHEDULABLE) */
    int post_nominate;     /* post_filter: the node it nominates, -1 none */
    int qc_sign;           /* queue_cmp: order by name, this sign (0: no opinion) */
    int reserved, unreserved, bound, freed;
} rec;

static void logp(rec *r, const char *point) {
    size_t len = strlen(r->log);
    snprintf(r->log + len, r->size - len, "%s%s.%s", len ? " " : "", r->name, point);
}

static sched_status rec_pre_enqueue(void *st, const sched_snapshot *s, const sched_pod *p,
                                    int64_t now_ms, char *msg, size_t size) {
    rec *r = st;
    logp(r, "pre_enqueue");
    if (r->hold && strncmp(p->name, r->hold, strlen(r->hold)) == 0) {
        snprintf(msg, size, "gang %s has 1 of 3 pods", r->hold);
        return r->hold_as ? r->hold_as : SCHED_STATUS_UNSCHEDULABLE;
    }
    return SCHED_STATUS_OK;
}

static sched_status rec_pre_filter(void *st, const sched_cycle *c, uint32_t *detail, tm_err *err) {
    rec *r = st;
    logp(r, "pre_filter");
    if (r->prefilter_reject) {
        *detail = 3;
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    return r->reject ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int rec_filter(void *st, const sched_cycle *c, size_t node, const sched_node *n) {
    rec *r = st;
    if (!c->fw || c->now_ms != 1000)
        return 99; /* the cycle must carry the framework and the clock */
    return r->reject && strstr(n->name, r->reject) ? 7 : -1;
}

static void rec_reason(void *st, const sched_cycle *c, uint32_t detail, char *buf, size_t size) {
    snprintf(buf, size, "node(s) were reserved by %s (%u)", ((rec *)st)->name, detail);
}

static int rec_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    logp(st, "pre_score");
    return 0;
}

static void rec_reserved(void *st, const sched_cycle *c, const sched_node *n) {
    rec *r = st;
    r->reserved++;
    logp(r, "reserve");
}

static void rec_unreserve(void *st, const sched_cycle *c, const sched_node *n) {
    rec *r = st;
    r->unreserved++;
    logp(r, "unreserve");
}

static sched_status rec_permit(void *st, const sched_cycle *c, const sched_node *n,
                               int64_t *timeout_ms, char *msg, size_t size) {
    rec *r = st;
    logp(r, "permit");
    *timeout_ms = r->timeout_ms;
    if (r->permit == SCHED_STATUS_UNSCHEDULABLE)
        snprintf(msg, size, "gang is too big");
    return r->permit;
}

static sched_status rec_pre_bind(void *st, const sched_cycle *c, const sched_node *n, tm_err *err) {
    rec *r = st;
    logp(r, "pre_bind");
    if (r->pre_bind == SCHED_STATUS_ERROR)
        tm_err_set(err, "annotate failed");
    return r->pre_bind;
}

static sched_status rec_bind(void *st, const sched_cycle *c, const sched_node *n, tm_err *err) {
    rec *r = st;
    logp(r, "bind");
    if (r->bind == SCHED_STATUS_ERROR)
        tm_err_set(err, "409 conflict");
    if (r->bind == SCHED_STATUS_OK)
        r->bound++;
    return r->bind;
}

static sched_status rec_post_filter(void *st, const sched_cycle *c, int *nominated, tm_err *err) {
    rec *r = st;
    logp(r, "post_filter");
    /* the failed cycle's node outcomes are readable through the framework */
    if (sched_framework_node_status(c->fw, 0, NULL, NULL) == SCHED_FILTER_OK)
        return SCHED_STATUS_ERROR;
    *nominated = r->post_nominate;
    return r->post_nominate >= 0 ? SCHED_STATUS_OK : SCHED_STATUS_UNSCHEDULABLE;
}

static int rec_queue_cmp(void *st, const sched_snapshot *s, const sched_pod *a,
                         const sched_pod *b) {
    rec *r = st;
    return r->qc_sign * strcmp(a->name, b->name);
}

static void rec_free(void *st) {
    ((rec *)st)->freed++;
}

static sched_plugin rec_plugin(rec *r) {
    return (sched_plugin){.name = r->name,
                          .state = r,
                          .pre_enqueue = rec_pre_enqueue,
                          .pre_filter = rec_pre_filter,
                          .filter = rec_filter,
                          .filter_reason = rec_reason,
                          .pre_score = rec_pre_score,
                          .reserved = rec_reserved,
                          .unreserve = rec_unreserve,
                          .permit = rec_permit,
                          .pre_bind = rec_pre_bind,
                          .bind = rec_bind,
                          .post_filter = rec_post_filter,
                          .queue_cmp = rec_queue_cmp,
                          .free_state = rec_free};
}

static char the_log[4096];

static rec mkrec(const char *name) {
    return (rec){.name = name,
                 .log = the_log,
                 .size = sizeof the_log,
                 .permit = SCHED_STATUS_OK,
                 .bind = SCHED_STATUS_SKIP,
                 .pre_bind = SCHED_STATUS_OK,
                 .post_nominate = -1};
}

/* Three ready nodes a-1, b-1, b-2 with 4 cpu each. */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    const char *names[] = {"a-1", "b-1", "b-2"};
    for (int i = 0; i < 3; i++) {
        sched_node *n = sched_node_new(names[i]);
        n->allocatable.v[SCHED_RES_CPU] = 4000;
        n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        tm_err err;
        if (sched_snapshot_put_node(s, n, &err) != 0)
            printf("    put_node: %s\n", err.msg);
    }
    return s;
}

static sched_pod *pod(const char *name, int64_t cpu) {
    char uid[64];
    snprintf(uid, sizeof uid, "%s-uid", name);
    sched_pod *p = sched_pod_new("default", name, uid);
    p->requests.v[SCHED_RES_CPU] = cpu;
    return p;
}

static sched_framework *fw_with(rec *a, rec *b) {
    tm_err err;
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_plugin pa = rec_plugin(a), pb = b ? rec_plugin(b) : pa;
    if (!fw || sched_framework_add_plugin(fw, &pa, &err) != 0 ||
        (b && sched_framework_add_plugin(fw, &pb, &err) != 0))
        printf("    setup: %s\n", err.msg);
    return fw;
}

/* One scheduling cycle: schedule, reserve on the chosen node, permit. */
static sched_status run_cycle(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                              int64_t now, int *node, char *msg, size_t size) {
    sched_decision d;
    tm_err err;
    *node = -1;
    if (sched_framework_schedule(fw, s, p, now, &d, &err) != 0 || d.node < 0 ||
        sched_framework_reserve(fw, s, p, d.node, &err) != 0) {
        printf("    cycle of %s: %s\n", p->name,
               d.node < 0 ? sched_framework_fit_message(fw, s, msg, size) : err.msg);
        return SCHED_STATUS_ERROR;
    }
    *node = d.node;
    return sched_framework_permit(fw, s, p, d.node, now, NULL, msg, size, &err);
}

static void test_order_of_calls(void) {
    the_log[0] = '\0';
    rec a = mkrec("A"), b = mkrec("B");
    a.reject = "zzz"; /* A's Filter runs (rejects nothing), B's is skipped by its PreFilter */
    b.bind = SCHED_STATUS_OK;
    sched_framework *fw = fw_with(&a, &b);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    char msg[256];
    CHECK_INT(sched_framework_pre_enqueue(fw, s, p, 1000, msg, sizeof msg), SCHED_STATUS_OK);
    int node;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_OK);
    tm_err err;
    CHECK(node >= 0 && sched_framework_bind(fw, s, p, node, 1000, &err) == 0);
    CHECK_STR(the_log, "A.pre_enqueue B.pre_enqueue A.pre_filter B.pre_filter A.pre_score "
                       "B.pre_score A.reserve B.reserve A.permit B.permit A.pre_bind B.pre_bind "
                       "A.bind B.bind");
    CHECK_INT(b.bound, 1);
    CHECK_STR(sched_snapshot_pod_node(s, "p-uid"),
              node >= 0 ? sched_snapshot_node(s, (size_t)node)->name : "");
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
    CHECK_INT(a.freed, 1); /* the framework owns the added plugins' state */
    CHECK_INT(b.freed, 1);
}

static void test_permit_reject_unreserves(void) {
    the_log[0] = '\0';
    rec a = mkrec("A"), b = mkrec("B");
    b.permit = SCHED_STATUS_UNSCHEDULABLE;
    sched_framework *fw = fw_with(&a, &b);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    char msg[256];
    int node;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_UNSCHEDULABLE);
    CHECK_STR(msg, "rejected by B: gang is too big");
    CHECK_INT(a.unreserved, 1); /* every plugin's Unreserve, latest first */
    CHECK_INT(b.unreserved, 1);
    CHECK(strstr(the_log, "B.permit B.unreserve A.unreserve") != NULL);
    CHECK(sched_snapshot_pod_node(s, "p-uid") == NULL); /* the reservation is gone */
    CHECK_INT(sched_framework_waiting_count(fw), 0);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_permit_wait_then_allow(void) {
    the_log[0] = '\0';
    rec a = mkrec("A"), b = mkrec("B");
    a.permit = b.permit = SCHED_STATUS_WAIT;
    a.timeout_ms = 5000;
    b.timeout_ms = 3000;
    sched_framework *fw = fw_with(&a, &b);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    char msg[256];
    sched_decision d;
    tm_err err;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_INT(sched_framework_reserve(fw, s, p, d.node, &err), 0);
    int64_t deadline = 0;
    CHECK_INT(sched_framework_permit(fw, s, p, d.node, 1000, &deadline, msg, sizeof msg, &err),
              SCHED_STATUS_WAIT);
    CHECK_INT(deadline, 4000); /* the earliest timeout */
    CHECK_INT(sched_framework_waiting_count(fw), 1);
    CHECK_INT(sched_framework_waiting_resolve(fw, "p-uid", 2000, msg, sizeof msg),
              SCHED_STATUS_WAIT);
    CHECK_INT(sched_framework_allow(fw, "p-uid", "A"), 0);
    CHECK_INT(sched_framework_waiting_resolve(fw, "p-uid", 2000, msg, sizeof msg),
              SCHED_STATUS_WAIT); /* B has not allowed yet */
    CHECK_INT(sched_framework_allow(fw, "p-uid", "B"), 0);
    CHECK_INT(sched_framework_waiting_resolve(fw, "p-uid", 2000, msg, sizeof msg), SCHED_STATUS_OK);
    CHECK_INT(sched_framework_waiting_count(fw), 0);
    CHECK_INT(a.unreserved, 0);
    CHECK(sched_snapshot_pod_node(s, "p-uid") != NULL);     /* still reserved, ready to bind */
    CHECK_INT(sched_framework_allow(fw, "p-uid", "A"), -1); /* no longer waiting */
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_permit_wait_timeout_and_reject(void) {
    the_log[0] = '\0';
    rec a = mkrec("A");
    a.permit = SCHED_STATUS_WAIT;
    a.timeout_ms = 3000;
    sched_framework *fw = fw_with(&a, NULL);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000), *q = pod("q", 1000);
    char msg[256];
    int node;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_WAIT);
    CHECK_INT(run_cycle(fw, s, q, 1000, &node, msg, sizeof msg), SCHED_STATUS_WAIT);
    CHECK_INT(sched_snapshot_pod_count(s), 2);
    CHECK_INT(sched_framework_waiting_resolve(fw, "p-uid", 3999, msg, sizeof msg),
              SCHED_STATUS_WAIT);
    CHECK_INT(sched_framework_waiting_resolve(fw, "p-uid", 4000, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECK_STR(msg, "timed out waiting for A after 0 ms");
    CHECK_INT(a.unreserved, 1);
    CHECK(sched_snapshot_pod_node(s, "p-uid") == NULL);
    /* q: rejected while waiting (e.g. its gang's PostFilter gave up) */
    CHECK_INT(sched_framework_reject(fw, "q-uid", "A", "gang g timed out"), 0);
    CHECK_INT(sched_framework_waiting_resolve(fw, "q-uid", 1500, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECK_STR(msg, "rejected by A: gang g timed out");
    CHECK_INT(a.unreserved, 2);
    CHECK_INT(sched_snapshot_pod_count(s), 0);
    CHECK_INT(sched_framework_waiting_resolve(fw, "q-uid", 1500, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE); /* not waiting any more */
    sched_pod_free(p);
    sched_pod_free(q);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_bind_failure_unreserves(void) {
    the_log[0] = '\0';
    rec a = mkrec("A"), b = mkrec("B");
    a.bind = SCHED_STATUS_SKIP; /* not A's pod: B binds */
    b.bind = SCHED_STATUS_ERROR;
    sched_framework *fw = fw_with(&a, &b);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    char msg[256];
    int node;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_OK);
    tm_err err;
    CHECK_INT(sched_framework_bind(fw, s, p, node, 1000, &err), -1);
    CHECK(strstr(err.msg, "bind B of default/p") != NULL);
    CHECK(strstr(err.msg, "409 conflict") != NULL);
    CHECK_INT(a.unreserved, 1);
    CHECK_INT(b.unreserved, 1);
    CHECK(sched_snapshot_pod_node(s, "p-uid") == NULL);
    /* PreBind failing: Bind is not called, the pod is unreserved */
    the_log[0] = '\0';
    a.pre_bind = SCHED_STATUS_ERROR;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_OK);
    CHECK_INT(sched_framework_bind(fw, s, p, node, 1000, &err), -1);
    CHECK(strstr(err.msg, "pre-bind A") != NULL);
    CHECK(strstr(the_log, ".bind") == NULL);
    CHECK_INT(a.unreserved, 2);
    CHECK(sched_snapshot_pod_node(s, "p-uid") == NULL);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_filter_plugin_reason(void) {
    the_log[0] = '\0';
    rec a = mkrec("Reservation");
    a.reject = "b-"; /* b-1 and b-2 are reserved */
    sched_framework *fw = fw_with(&a, NULL);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000), *big = pod("big", 5000);
    sched_decision d;
    tm_err err;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_STR(d.node_name, "a-1");
    CHECK_INT(d.n_feasible, 1);
    uint32_t detail;
    int b1 = sched_snapshot_node_index(s, "b-1");
    sched_filter_id id = sched_framework_node_status(fw, (size_t)b1, &detail, NULL);
    CHECK_STR(sched_framework_filter_name(fw, id), "Reservation");
    CHECK_INT(detail, 7);
    char msg[512];
    /* every node rejected: by the built-in filter first (a-1 too small), else by the plugin */
    sched_pod *q = pod("q", 4500);
    CHECK_INT(sched_framework_schedule(fw, s, q, 1000, &d, &err), 0);
    CHECK_INT(d.node, -1);
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/3 nodes are available: 3 Insufficient cpu.");
    sched_pod *r = pod("r", 1000);
    sched_node *a1 = sched_node_new("a-1"); /* a-1 now too small for r */
    a1->allocatable.v[SCHED_RES_CPU] = 500;
    a1->allocatable.v[SCHED_RES_PODS] = 110;
    CHECK_INT(sched_snapshot_put_node(s, a1, &err), 0);
    CHECK_INT(sched_framework_schedule(fw, s, r, 1000, &d, &err), 0);
    CHECK_INT(d.node, -1);
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were reserved by "
              "Reservation (7).");
    /* PostFilter runs on the failed cycle and may nominate a node */
    int nominated = 5;
    CHECK_INT(sched_framework_post_filter(fw, &nominated, &err), SCHED_STATUS_UNSCHEDULABLE);
    CHECK_INT(nominated, -1);
    a.post_nominate = 1;
    CHECK_INT(sched_framework_post_filter(fw, &nominated, &err), SCHED_STATUS_OK);
    CHECK_INT(nominated, 1);
    /* PreFilter rejecting the pod: every node the built-in filters passed gets its reason */
    a.prefilter_reject = true;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_INT(d.node, -1);
    CHECK_STR(sched_framework_fit_message(fw, s, msg, sizeof msg),
              "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were reserved by "
              "Reservation (3).");
    sched_pod_free(p);
    sched_pod_free(big);
    sched_pod_free(q);
    sched_pod_free(r);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_pre_enqueue_and_queue_sort(void) {
    the_log[0] = '\0';
    rec a = mkrec("A"), b = mkrec("Gang");
    b.hold = "g-";
    sched_framework *fw = fw_with(&a, &b);
    sched_snapshot *s = cluster();
    sched_pod *x = pod("x", 100), *y = pod("y", 100), *g = pod("g-1", 100);
    char msg[256];
    CHECK_INT(sched_framework_pre_enqueue(fw, s, g, 0, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECK_STR(msg, "Gang: gang g- has 1 of 3 pods");
    CHECK_INT(sched_framework_pre_enqueue(fw, s, x, 0, msg, sizeof msg), SCHED_STATUS_OK);
    /* how a pod is kept out travels to the caller (the live loop reports UNSCHEDULABLE, keeps
     * WAIT quiet, and gives GATED no attempt at all); before, every answer became
     * UNSCHEDULABLE and the loop told them apart by the plugin's name in the message */
    b.hold_as = SCHED_STATUS_WAIT;
    CHECK_INT(sched_framework_pre_enqueue(fw, s, g, 0, msg, sizeof msg), SCHED_STATUS_WAIT);
    b.hold_as = SCHED_STATUS_GATED;
    CHECK_INT(sched_framework_pre_enqueue(fw, s, g, 0, msg, sizeof msg), SCHED_STATUS_GATED);
    b.hold_as = SCHED_STATUS_ERROR; /* not a PreEnqueue answer: taken as a rejection */
    CHECK_INT(sched_framework_pre_enqueue(fw, s, g, 0, msg, sizeof msg),
              SCHED_STATUS_UNSCHEDULABLE);
    CHECK_STR(msg, "Gang: gang g- has 1 of 3 pods");
    /* no opinion from either plugin: priority, then creation, then name */
    x->created_ms = 2;
    y->created_ms = 1;
    CHECK(sched_framework_queue_cmp(fw, s, y, x) < 0);
    a.qc_sign = 1; /* A: by name */
    CHECK(sched_framework_queue_cmp(fw, s, x, y) < 0);
    b.qc_sign = -1; /* the latest added (Gang) decides first */
    CHECK(sched_framework_queue_cmp(fw, s, y, x) < 0);
    sched_pod_free(x);
    sched_pod_free(y);
    sched_pod_free(g);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A framework without the in-tree filters runs only the Filter plugins registered on it (the
 * per-node chain, without the column scan), in order, around an in-tree one added by hand. */
static void test_empty_framework_runs_only_its_filters(void) {
    rec a = mkrec("A");
    a.reject = "b-1";
    tm_err err;
    sched_plugin fair, ports, pa = rec_plugin(&a);
    CHECK_INT(sched_plugin_fair(&fair), 0);
    sched_framework *fw = sched_framework_new_empty(&fair, &err);
    CHECK_INT(sched_filter_node_affinity(&ports, true), 0); /* NodeAffinity, node-local */
    CHECK_INT(sched_framework_add_plugin(fw, &ports, &err), 0);
    CHECK_INT(sched_filter_node_ports(&ports, true), 0); /* NodePorts, with a PreFilter */
    CHECK_INT(sched_framework_add_plugin(fw, &ports, &err), 0);
    CHECK_INT(sched_framework_add_plugin(fw, &pa, &err), 0);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 64000); /* no NodeResourcesFit here: fits anywhere */
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_INT(d.n_feasible, 2);
    char msg[256];
    uint32_t detail;
    int b1 = sched_snapshot_node_index(s, "b-1");
    CHECK_STR(sched_framework_node_reason(fw, (size_t)b1, msg, sizeof msg),
              "node(s) were reserved by A (7)");
    CHECK_STR(
        sched_framework_filter_name(fw, sched_framework_node_status(fw, (size_t)b1, &detail, NULL)),
        "A");
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static int64_t prefer_b2(void *st, const sched_cycle *c, const sched_node *n) {
    return strcmp(n->name, "b-2") == 0 ? INT64_C(1) << 40 : 0;
}

/* An added Score plugin's scores add to the policy's: it can outweigh the policy's choice. */
static void test_added_score_plugin(void) {
    tm_err err;
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, p, 0, &d, &err), 0);
    CHECK_STR(d.node_name, "a-1"); /* fair: all empty, the first in name order */
    sched_plugin sp = {.name = "PreferB2", .score = prefer_b2};
    CHECK_INT(sched_framework_add_plugin(fw, &sp, &err), 0);
    CHECK_INT(sched_framework_schedule(fw, s, p, 0, &d, &err), 0);
    CHECK_STR(d.node_name, "b-2");
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void count_forget(void *arg, sched_snapshot *s, const char *uid) {
    (*(int *)arg)++;
}

static void test_unreserve_uses_the_forget_function(void) {
    rec a = mkrec("A");
    a.permit = SCHED_STATUS_UNSCHEDULABLE;
    sched_framework *fw = fw_with(&a, NULL);
    int forgotten = 0;
    sched_framework_set_forget(fw, count_forget, &forgotten);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    char msg[256];
    int node;
    CHECK_INT(run_cycle(fw, s, p, 1000, &node, msg, sizeof msg), SCHED_STATUS_UNSCHEDULABLE);
    CHECK_INT(forgotten, 1);
    CHECK(sched_snapshot_pod_node(s, "p-uid") != NULL); /* the caller's function decides */
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_add_plugin_errors(void) {
    rec a = mkrec("A"), a2 = mkrec("A");
    sched_framework *fw = fw_with(&a, NULL);
    sched_plugin p = rec_plugin(&a2);
    tm_err err;
    CHECK_INT(sched_framework_add_plugin(fw, &p, &err), -1);
    CHECK(strstr(err.msg, "already registered") != NULL);
    CHECK_INT(a2.freed, 1); /* state handed over is freed also on error */
    CHECK(sched_framework_plugin_state(fw, "A") == &a);
    CHECK(sched_framework_plugin_state(fw, "nope") == NULL);
    sched_framework_free(fw);
}

int main(void) {
    RUN(test_order_of_calls);
    RUN(test_permit_reject_unreserves);
    RUN(test_permit_wait_then_allow);
    RUN(test_permit_wait_timeout_and_reject);
    RUN(test_bind_failure_unreserves);
    RUN(test_filter_plugin_reason);
    RUN(test_pre_enqueue_and_queue_sort);
    RUN(test_added_score_plugin);
    RUN(test_empty_framework_runs_only_its_filters);
    RUN(test_unreserve_uses_the_forget_function);
    RUN(test_add_plugin_errors);
    return TEST_SUMMARY();
}
