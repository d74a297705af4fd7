/* framework_timing_test.c: kube-scheduler's framework timings through the framework's observer
 * (framework.h, "timing") with a fake clock: each extension point's run reported once with its
 * outcome, each plugin call at each point reported in a sampled cycle with the right status,
 * nothing of the plugins when the cycle is not sampled, the same placements and node outcomes
 * whether sampled or not (a sampled cycle filters through the hooks, not the column scan), and
 * the live recorder (fw_metrics.h): the sample rate, kube's status names and the series it
 * serves. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/metrics.h"
#include "scheduler/framework/framework.h"
#include "scheduler/live/fw_metrics.h"
#include "scheduler/plugins/policy/policy.h"

/* ---- a fake clock and an observer that keeps every report ---- */

typedef struct obs_entry {
    bool plugin; /* a plugin call, else an extension point's run */
    const char *name;
    sched_ext_point ep;
    sched_outcome o;
    int64_t ns;
} obs_entry;

typedef struct fake {
    int64_t clock; /* advances 1000 ns per read */
    obs_entry e[4096];
    size_t n;
} fake;

static int64_t fake_now(void *arg) {
    fake *f = arg;
    return f->clock += 1000;
}
static void fake_point(void *arg, sched_ext_point ep, sched_outcome o, int64_t ns) {
    fake *f = arg;
    if (f->n < 4096)
        f->e[f->n++] = (obs_entry){.ep = ep, .o = o, .ns = ns};
}
static void fake_plugin(void *arg, size_t k, const char *name, sched_ext_point ep, sched_outcome o,
                        int64_t ns) {
    fake *f = arg;
    if (f->n < 4096)
        f->e[f->n++] = (obs_entry){.plugin = true, .name = name, .ep = ep, .o = o, .ns = ns};
}

/* How many reports match (name NULL: an extension point's), and whether all took > 0 ns. */
static size_t count(const fake *f, const char *name, sched_ext_point ep, sched_status st) {
    size_t c = 0;
    for (size_t i = 0; i < f->n; i++) {
        const obs_entry *e = &f->e[i];
        if (e->plugin == (name != NULL) && (!name || strcmp(e->name, name) == 0) && e->ep == ep &&
            e->o.status == st) {
            c++;
            if (e->ns <= 0)
                return 1000000; /* a duration that is not one: fails any count check */
        }
    }
    return c;
}
static size_t count_plugins(const fake *f) {
    size_t c = 0;
    for (size_t i = 0; i < f->n; i++)
        c += f->e[i].plugin;
    return c;
}

/* ---- a plugin at every point ---- */

typedef struct tp {
    const char *reject; /* Filter rejects nodes whose name contains this, detail 7 */
    bool prefilter_reject;
    sched_status permit, bind;
} tp;

static sched_status tp_pre_filter(void *st, const sched_cycle *c, uint32_t *detail, tm_err *err) {
    tp *t = st;
    *detail = 3;
    return t->prefilter_reject ? SCHED_STATUS_UNSCHEDULABLE : SCHED_STATUS_OK;
}
static int tp_filter(void *st, const sched_cycle *c, size_t node, const sched_node *n) {
    tp *t = st;
    return t->reject && strstr(n->name, t->reject) ? 7 : -1;
}
static void tp_reason(void *st, const sched_cycle *c, uint32_t detail, char *buf, size_t size) {
    snprintf(buf, size, "node(s) were taken by T");
}
static int tp_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    return 0;
}
static void tp_reserved(void *st, const sched_cycle *c, const sched_node *n) {}
static void tp_unreserve(void *st, const sched_cycle *c, const sched_node *n) {}
static sched_status tp_permit(void *st, const sched_cycle *c, const sched_node *n,
                              int64_t *timeout_ms, char *msg, size_t size) {
    *timeout_ms = 5000;
    snprintf(msg, size, "no");
    return ((tp *)st)->permit;
}
static sched_status tp_pre_bind(void *st, const sched_cycle *c, const sched_node *n, tm_err *err) {
    return SCHED_STATUS_OK;
}
static sched_status tp_bind(void *st, const sched_cycle *c, const sched_node *n, tm_err *err) {
    tp *t = st;
    if (t->bind == SCHED_STATUS_ERROR)
        tm_err_set(err, "409 conflict");
    return t->bind;
}

static sched_framework *fw_with(tp *t, fake *f, sched_observer *obs) {
    tm_err err;
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_plugin pl = {.name = "T",
                       .state = t,
                       .pre_filter = tp_pre_filter,
                       .filter = tp_filter,
                       .filter_reason = tp_reason,
                       .pre_score = tp_pre_score,
                       .reserved = tp_reserved,
                       .unreserve = tp_unreserve,
                       .permit = tp_permit,
                       .pre_bind = tp_pre_bind,
                       .bind = tp_bind};
    if (!fw || sched_framework_add_plugin(fw, &pl, &err) != 0)
        printf("    setup: %s\n", err.msg);
    *obs =
        (sched_observer){.now_ns = fake_now, .point = fake_point, .plugin = fake_plugin, .arg = f};
    if (fw)
        sched_framework_set_observer(fw, obs);
    return fw;
}

/* Four nodes a-1, b-1, b-2 (4 cpu each) and c-1 (1 cpu, not ready). */
static sched_snapshot *cluster(void) {
    sched_snapshot *s = sched_snapshot_new();
    const char *names[] = {"a-1", "b-1", "b-2", "c-1"};
    for (int i = 0; i < 4; i++) {
        sched_node *n = sched_node_new(names[i]);
        n->allocatable.v[SCHED_RES_CPU] = i == 3 ? 1000 : 4000;
        n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        n->ready = i != 3;
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

/* Schedule, reserve, permit and bind p. The Permit outcome. */
static sched_status cycle(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int *node) {
    sched_decision d;
    tm_err err;
    char msg[256];
    *node = -1;
    if (sched_framework_schedule(fw, s, p, 1000, &d, &err) != 0 || d.node < 0 ||
        sched_framework_reserve(fw, s, p, d.node, &err) != 0)
        return SCHED_STATUS_ERROR;
    *node = d.node;
    sched_status st = sched_framework_permit(fw, s, p, d.node, 1000, NULL, msg, sizeof msg, &err);
    if (st == SCHED_STATUS_OK && sched_framework_bind(fw, s, p, d.node, 1000, &err) != 0)
        return SCHED_STATUS_ERROR;
    return st;
}

static void test_sampled_cycle_reports_every_call(void) {
    static fake f;
    memset(&f, 0, sizeof f);
    tp t = {.reject = "b-2", .permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_OK};
    sched_observer obs;
    sched_framework *fw = fw_with(&t, &f, &obs);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    sched_framework_sample(fw, true);
    int node;
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_OK);
    CHECK_STR(node >= 0 ? sched_snapshot_node(s, (size_t)node)->name : "", "a-1");
    /* each extension point once, with its outcome; no Filter point (kube has none) */
    CHECK_INT(count(&f, NULL, SCHED_EP_PRE_FILTER, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_PRE_SCORE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_SCORE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_RESERVE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_PERMIT, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_PRE_BIND, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_BIND, SCHED_STATUS_OK), 1);
    size_t points = f.n - count_plugins(&f);
    CHECK_INT(points, 7);
    /* a point's run holds its plugins' calls: never shorter than their sum */
    for (size_t i = 0; i < f.n; i++) {
        if (f.e[i].plugin)
            continue;
        int64_t calls = 0;
        for (size_t j = 0; j < f.n; j++)
            if (f.e[j].plugin && f.e[j].ep == f.e[i].ep)
                calls += f.e[j].ns;
        CHECKF(f.e[i].ns >= calls, "%s: point %lld ns, its calls %lld ns",
               sched_ext_point_names[f.e[i].ep], (long long)f.e[i].ns, (long long)calls);
    }
    /* the plugin's calls: PreFilter once, Filter per node that reached it (c-1 stopped at
     * NodeReady), rejecting b-2 as Unschedulable with its filter id and detail */
    CHECK_INT(count(&f, "T", SCHED_EP_PRE_FILTER, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_FILTER, SCHED_STATUS_OK), 2);
    CHECK_INT(count(&f, "T", SCHED_EP_FILTER, SCHED_STATUS_UNSCHEDULABLE), 1);
    for (size_t i = 0; i < f.n; i++)
        if (f.e[i].plugin && f.e[i].ep == SCHED_EP_FILTER &&
            f.e[i].o.status == SCHED_STATUS_UNSCHEDULABLE && strcmp(f.e[i].name, "T") == 0)
            CHECK(f.e[i].o.id >= SCHED_FILTER_PLUGIN && f.e[i].o.detail == 7);
    /* the in-tree Filter plugins called node by node: NodeReady on all four, rejecting c-1
     * (UnschedulableAndUnresolvable once named); NodeResourcesFit on the three ready ones */
    CHECK_INT(count(&f, "NodeReady", SCHED_EP_FILTER, SCHED_STATUS_OK), 3);
    CHECK_INT(count(&f, "NodeReady", SCHED_EP_FILTER, SCHED_STATUS_UNSCHEDULABLE), 1);
    CHECK_INT(count(&f, "NodeResourcesFit", SCHED_EP_FILTER, SCHED_STATUS_OK), 3);
    for (size_t i = 0; i < f.n; i++)
        if (f.e[i].plugin && strcmp(f.e[i].name, "NodeReady") == 0 &&
            f.e[i].o.status == SCHED_STATUS_UNSCHEDULABLE)
            CHECK_STR(sched_fw_status_name(f.e[i].o), "UnschedulableAndUnresolvable");
    /* PreScore; the policy's batched Score is one call for both feasible nodes (a-1, b-1);
     * the rest once each */
    CHECK_INT(count(&f, "T", SCHED_EP_PRE_SCORE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "fair", SCHED_EP_SCORE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_RESERVE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_PERMIT, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_PRE_BIND, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_BIND, SCHED_STATUS_OK), 1);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

static void test_unsampled_cycle_reports_points_only(void) {
    static fake f;
    memset(&f, 0, sizeof f);
    tp t = {.reject = "b-2", .permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_OK};
    sched_observer obs;
    sched_framework *fw = fw_with(&t, &f, &obs);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    sched_framework_sample(fw, false);
    int node;
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_OK);
    CHECK_INT(count_plugins(&f), 0);
    CHECK_INT(f.n, 7);
    CHECK_INT(count(&f, NULL, SCHED_EP_SCORE, SCHED_STATUS_OK), 1);
    /* sampling on without an observer, or an observer removed: nothing reported, no crash */
    size_t before = f.n;
    sched_framework_set_observer(fw, NULL);
    sched_framework_sample(fw, true);
    sched_pod *q = pod("q", 1000);
    CHECK_INT(cycle(fw, s, q, &node), SCHED_STATUS_OK);
    CHECK_INT(f.n, before);
    sched_pod_free(q);
    sched_pod_free(p);
    sched_snapshot_free(s);
    sched_framework_free(fw);
}

/* A sampled cycle filters through the hooks: the same outcome per node as the column scan. */
static void test_sampled_and_unsampled_agree(void) {
    static fake f;
    tp t = {.reject = "b-1", .permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_OK};
    sched_observer obs;
    for (int64_t cpu = 500; cpu <= 4500; cpu += 1000) {
        memset(&f, 0, sizeof f);
        sched_framework *fw = fw_with(&t, &f, &obs);
        sched_snapshot *s = cluster();
        sched_pod *p = pod("p", cpu);
        sched_decision d0, d1;
        tm_err err;
        sched_framework_sample(fw, false);
        CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d0, &err), 0);
        uint32_t st0[4], det0[4];
        for (size_t i = 0; i < 4; i++)
            st0[i] = sched_framework_node_status(fw, i, &det0[i], NULL);
        sched_framework_sample(fw, true);
        CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d1, &err), 0);
        CHECK_INT(d1.node, d0.node);
        CHECK_INT(d1.n_feasible, d0.n_feasible);
        for (size_t i = 0; i < 4; i++) {
            uint32_t det;
            CHECK_INT(sched_framework_node_status(fw, i, &det, NULL), st0[i]);
            CHECK_INT(det, det0[i]);
        }
        CHECK(count_plugins(&f) > 0);
        sched_pod_free(p);
        sched_snapshot_free(s);
        sched_framework_free(fw);
    }
}

static void test_rejections_waits_and_errors(void) {
    static fake f;
    sched_observer obs;
    tm_err err;
    char msg[256];
    int node;
    /* PreFilter rejecting every node: the point's outcome is the rejection */
    memset(&f, 0, sizeof f);
    tp t = {.prefilter_reject = true, .permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_OK};
    sched_framework *fw = fw_with(&t, &f, &obs);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    sched_framework_sample(fw, true);
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_INT(d.node, -1);
    CHECK_INT(count(&f, NULL, SCHED_EP_PRE_FILTER, SCHED_STATUS_UNSCHEDULABLE), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_PRE_FILTER, SCHED_STATUS_UNSCHEDULABLE), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_FILTER, SCHED_STATUS_OK), 0); /* never called */
    CHECK_INT(count(&f, NULL, SCHED_EP_SCORE, SCHED_STATUS_OK), 0); /* nothing to score */
    int nominated;
    CHECK_INT(sched_framework_post_filter(fw, &nominated, &err), SCHED_STATUS_UNSCHEDULABLE);
    CHECK_INT(count(&f, NULL, SCHED_EP_POST_FILTER, SCHED_STATUS_UNSCHEDULABLE), 1);
    sched_framework_free(fw);
    /* Permit reject: Unschedulable, and the Unreserve it runs */
    memset(&f, 0, sizeof f);
    t = (tp){.permit = SCHED_STATUS_UNSCHEDULABLE, .bind = SCHED_STATUS_OK};
    fw = fw_with(&t, &f, &obs);
    sched_framework_sample(fw, true);
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_UNSCHEDULABLE);
    CHECK_INT(count(&f, NULL, SCHED_EP_PERMIT, SCHED_STATUS_UNSCHEDULABLE), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_PERMIT, SCHED_STATUS_UNSCHEDULABLE), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_UNRESERVE, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_UNRESERVE, SCHED_STATUS_OK), 1);
    sched_framework_free(fw);
    /* Permit wait */
    memset(&f, 0, sizeof f);
    t = (tp){.permit = SCHED_STATUS_WAIT, .bind = SCHED_STATUS_OK};
    fw = fw_with(&t, &f, &obs);
    sched_framework_sample(fw, true);
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_WAIT);
    CHECK_INT(count(&f, NULL, SCHED_EP_PERMIT, SCHED_STATUS_WAIT), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_PERMIT, SCHED_STATUS_WAIT), 1);
    sched_framework_waiting_forget(fw, p->uid);
    sched_framework_unreserve(fw, s, p, node, 1000);
    sched_framework_free(fw);
    /* Bind failing: Error at Bind (point and plugin), then Unreserve */
    memset(&f, 0, sizeof f);
    t = (tp){.permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_ERROR};
    fw = fw_with(&t, &f, &obs);
    sched_framework_sample(fw, true);
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_ERROR);
    CHECK_INT(count(&f, NULL, SCHED_EP_PRE_BIND, SCHED_STATUS_OK), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_BIND, SCHED_STATUS_ERROR), 1);
    CHECK_INT(count(&f, "T", SCHED_EP_BIND, SCHED_STATUS_ERROR), 1);
    CHECK_INT(count(&f, NULL, SCHED_EP_UNRESERVE, SCHED_STATUS_OK), 1);
    sched_framework_free(fw);
    (void)msg;
    sched_pod_free(p);
    sched_snapshot_free(s);
}

static void test_status_names(void) {
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_OK}), "Success");
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_SKIP}), "Skip");
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_WAIT}), "Wait");
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_ERROR}), "Error");
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_UNSCHEDULABLE}),
              "Unschedulable");
    CHECK_STR(sched_fw_status_name((sched_outcome){
                  .status = SCHED_STATUS_UNSCHEDULABLE, .id = SCHED_FILTER_RESOURCES, .detail = 1}),
              "Unschedulable");
    CHECK_STR(sched_fw_status_name((sched_outcome){.status = SCHED_STATUS_UNSCHEDULABLE,
                                                   .id = SCHED_FILTER_NODE_AFFINITY}),
              "UnschedulableAndUnresolvable");
    CHECK_STR(sched_fw_status_name(
                  (sched_outcome){.status = SCHED_STATUS_UNSCHEDULABLE, .id = SCHED_FILTER_TAINT}),
              "UnschedulableAndUnresolvable");
}

static void test_sample_rate(void) {
    tm_err err;
    int rates[] = {0, 10, 37, 100};
    for (size_t r = 0; r < 4; r++) {
        tm_metrics *reg = tm_metrics_new();
        sched_fw_metrics *m = sched_fw_metrics_new(reg, "tarema", rates[r], &err);
        CHECK(m != NULL);
        int n = 0;
        for (int i = 0; i < 1000; i++)
            n += sched_fw_metrics_sample(m);
        CHECK_INT(n, rates[r] * 10);
        sched_fw_metrics_free(m);
        tm_metrics_free(reg);
    }
    tm_metrics *reg = tm_metrics_new();
    CHECK(sched_fw_metrics_new(reg, "tarema", 101, &err) == NULL);
    CHECK(strstr(err.msg, "0..100") != NULL);
    tm_metrics_free(reg);
}

/* The recorder behind a real framework: after a flush /metrics carries kube's series. */
static void test_recorder_serves_kube_series(void) {
    tm_err err;
    tm_metrics *reg = tm_metrics_new();
    sched_fw_metrics *m = sched_fw_metrics_new(reg, "tarema", 100, &err);
    sched_fw_recorder *r = sched_fw_recorder_new(m);
    CHECK(m && r);
    tp t = {.reject = "b-2", .permit = SCHED_STATUS_OK, .bind = SCHED_STATUS_OK};
    static fake unused;
    sched_observer obs;
    sched_framework *fw = fw_with(&t, &unused, &obs);
    sched_framework_set_observer(fw, sched_fw_recorder_observer(r));
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 1000);
    sched_framework_sample(fw, sched_fw_metrics_sample(m));
    int node;
    CHECK_INT(cycle(fw, s, p, &node), SCHED_STATUS_OK);
    char *before = tm_metrics_render(reg);
    CHECK(before && !strstr(before, "scheduler_plugin_execution_duration_seconds_count{"));
    free(before);
    sched_fw_recorder_flush(r);
    char *text = tm_metrics_render(reg);
    CHECK(text != NULL);
    const char *want[] = {
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"T\",extension_point=\"Filter\","
        "status=\"Success\"} 2",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"T\",extension_point=\"Filter\","
        "status=\"Unschedulable\"} 1",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeReady\",extension_point="
        "\"Filter\",status=\"UnschedulableAndUnresolvable\"} 1",
        "scheduler_plugin_execution_duration_seconds_count{plugin=\"NodeResourcesFit\","
        "extension_point=\"Filter\",status=\"Success\"} 3",
        "scheduler_plugin_execution_duration_seconds_bucket{plugin=\"T\",extension_point=\"Bind\","
        "status=\"Success\",le=\"1e-05\"}",
        "scheduler_framework_extension_point_duration_seconds_count{profile=\"tarema\","
        "extension_point=\"PreFilter\",status=\"Success\"} 1",
        "scheduler_framework_extension_point_duration_seconds_bucket{profile=\"tarema\","
        "extension_point=\"Score\",status=\"Success\",le=\"0.0001\"}",
        "tarema_framework_extension_point_duration_seconds_count{extension_point=\"Bind\","
        "status=\"Success\"} 1",
        NULL};
    for (size_t i = 0; text && want[i]; i++)
        CHECKF(strstr(text, want[i]) != NULL, "missing %s", want[i]);
    free(text);
    /* a second flush adds nothing twice */
    sched_fw_recorder_flush(r);
    text = tm_metrics_render(reg);
    CHECK(text && strstr(text, "tarema_framework_extension_point_duration_seconds_count{"
                               "extension_point=\"Bind\",status=\"Success\"} 1"));
    free(text);
    sched_framework_free(fw);
    sched_fw_recorder_free(r);
    sched_fw_metrics_free(m);
    sched_pod_free(p);
    sched_snapshot_free(s);
    tm_metrics_free(reg);
}

/* Profiles (framework.h): plugin index 0 is the policy of the cycle's profile, so each policy's
 * calls are reported under its own name, not the first profile's. */
static void test_recorder_names_each_profiles_policy(void) {
    tm_err err = {0};
    tm_metrics *reg = tm_metrics_new();
    sched_fw_metrics *m = sched_fw_metrics_new(reg, "tarema", 100, &err);
    sched_fw_recorder *r = sched_fw_recorder_new(m);
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    sched_plugin fair;
    CHECK(m && r && fw && sched_policy_plugin("fair", &fair, &err) == 0);
    CHECK_INT(sched_framework_add_profile(fw, &fair, &err), 1);
    sched_framework_set_observer(fw, sched_fw_recorder_observer(r));
    sched_framework_sample(fw, true);
    sched_snapshot *s = cluster();
    sched_pod *p = pod("p", 500), *q = pod("q", 500);
    q->profile = 1;
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, p, 1000, &d, &err), 0);
    CHECK_INT(sched_framework_schedule(fw, s, q, 1000, &d, &err), 0);
    CHECK_INT(sched_framework_schedule(fw, s, q, 1000, &d, &err), 0);
    sched_fw_recorder_flush(r);
    char *text = tm_metrics_render(reg);
    CHECK(text != NULL);
    const char *want[] = {"scheduler_plugin_execution_duration_seconds_count{plugin=\"fill-nodes\","
                          "extension_point=\"Score\",status=\"Success\"} 1",
                          "scheduler_plugin_execution_duration_seconds_count{plugin=\"fair\","
                          "extension_point=\"Score\",status=\"Success\"} 2",
                          NULL};
    for (size_t i = 0; text && want[i]; i++)
        CHECKF(strstr(text, want[i]) != NULL, "missing %s", want[i]);
    free(text);
    sched_framework_free(fw);
    sched_fw_recorder_free(r);
    sched_fw_metrics_free(m);
    sched_pod_free(p);
    sched_pod_free(q);
    sched_snapshot_free(s);
    tm_metrics_free(reg);
}

int main(void) {
    RUN(test_sampled_cycle_reports_every_call);
    RUN(test_unsampled_cycle_reports_points_only);
    RUN(test_sampled_and_unsampled_agree);
    RUN(test_rejections_waits_and_errors);
    RUN(test_status_names);
    RUN(test_sample_rate);
    RUN(test_recorder_serves_kube_series);
    RUN(test_recorder_names_each_profiles_policy);
    return TEST_SUMMARY();
}
