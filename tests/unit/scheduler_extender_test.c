/* scheduler_extender_test.c: kube-scheduler extender round trips on fixtures shaped exactly as
 * kube-scheduler sends them (nodeCacheCapable false: full NodeList; true: NodeNames), the bind
 * verb, TaskProfile parsing, and the explain document. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/labels.h"
#include "labeler/taskprofile.h"
#include "lib/jsonutil.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/cmd/extender.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/reservation.h"
#include "scheduler/plugins/reservation/resv_plan.h"
#include "scheduler/plugins/reservation/resv_plugin.h"

#define FIX "tests/fixtures/scheduler/"

static json_t *load(const char *path) {
    tm_err err = {0};
    json_t *j = tm_json_load_file(path, &err);
    if (!j)
        printf("    %s\n", err.msg);
    return j;
}

/* The FASTQC TaskProfile as the labeler publishes it (its own code: labels from task runs,
 * lab_taskprofile_object + lab_taskprofile_status), not a hand-written look-alike. Three
 * processes on three equal node classes (quantiles 1/3, 2/3): FASTQC is in the middle for cpu
 * and memory and the heaviest for I/O, so its labels are cpu 2, mem 2, io 3; realtime 95 s. */
static json_t *fastqc_profile(void) {
    lab_sample smp[] = {{"TRIM", {10, 10, 10}, 1000},
                        {"FASTQC", {50, 50, 90}, 95000},
                        {"ALIGN", {90, 90, 50}, 5000}};
    lab_classes cls[LAB_NFEATURES];
    for (int f = 0; f < LAB_NFEATURES; f++)
        cls[f] = (lab_classes){.n = 3, .cores = {8, 8, 8}};
    tm_err err = {0};
    lab_labeling *l = lab_label_compute(smp, 3, cls, &err);
    if (!l) {
        printf("    labeling: %s\n", err.msg);
        return NULL;
    }
    json_t *tp = lab_taskprofile_object("wf", "rnaseq", "FASTQC");
    for (size_t i = 0; i < l->nprocs; i++)
        if (strcmp(l->procs[i].process, "FASTQC") == 0)
            json_object_set_new(tp, "status",
                                lab_taskprofile_status(l, &l->procs[i], "2026-11-23T12:00:00Z"));
    lab_labeling_free(l);
    return tp;
}

/* A cache snapshot like the live scheduler keeps: the fixture nodes and the FASTQC profile. */
static sched_snapshot *cache_snapshot(void) {
    sched_snapshot *s = sched_snapshot_new();
    json_t *nodes = load(FIX "nodes.json"), *tp = fastqc_profile();
    tm_err err = {0};
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(nodes, "items"), i, n) {
        sched_node *sn = sched_node_from_json(s, n, &err);
        if (!sn || sched_snapshot_put_node(s, sn, &err) != 0)
            printf("    node %zu: %s\n", i, err.msg);
    }
    const char *wf, *proc;
    sched_task_profile prof;
    if (sched_task_profile_from_json(tp, &wf, &proc, &prof, &err) != 0 ||
        sched_snapshot_set_task(s, wf, proc, &prof, &err) != 0)
        printf("    task profile: %s\n", err.msg);
    json_decref(nodes);
    json_decref(tp);
    return s;
}

static void test_task_profile_json(void) {
    json_t *tp = fastqc_profile();
    const char *wf, *proc;
    sched_task_profile prof;
    tm_err err = {0};
    CHECK(sched_task_profile_from_json(tp, &wf, &proc, &prof, &err) == 0);
    CHECK_STR(wf, "rnaseq");
    CHECK_STR(proc, "FASTQC");
    CHECK_INT(prof.labels[SCHED_FEAT_CPU], 2);
    CHECK_INT(prof.labels[SCHED_FEAT_IO], 3);
    CHECK_INT(prof.expected_runtime_ms, 95000);
    json_object_set_new(json_object_get(json_object_get(tp, "status"), "labels"), "mem",
                        json_string("high"));
    CHECK(sched_task_profile_from_json(tp, &wf, &proc, &prof, &err) == -1);
    CHECK(strstr(err.msg, "status.labels.mem") != NULL);
    json_decref(tp);
}

static int score_of(const json_t *list, const char *host) {
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e) {
        if (strcmp(tm_json_str(e, "Host", ""), host) == 0)
            return (int)tm_json_int(e, "Score", -1);
    }
    return -1;
}

static void test_filter_nodes_not_cache_capable(void) {
    sched_snapshot *cache = cache_snapshot();
    sched_extender_opts o = {.cache = cache};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-args-nodes.json");
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK(res != NULL);
    if (res) {
        /* the result carries full Node objects back, in request order */
        const json_t *items = json_object_get(json_object_get(res, "Nodes"), "items");
        CHECK_INT(json_array_size(items), 5);
        CHECK_STR(tm_json_str(json_array_get(items, 0), "metadata.name", ""), "slow-1");
        CHECK_STR(tm_json_str(json_array_get(items, 4), "metadata.name", ""), "plain-1");
        CHECK(json_is_null(json_object_get(res, "NodeNames")));
        CHECK_STR(tm_json_str(res, "Error", "?"), "");
        const json_t *unres = json_object_get(res, "FailedAndUnresolvableNodes");
        CHECK_STR(json_string_value(json_object_get(unres, "gpu-1")),
                  "node(s) had untolerated taint {nvidia.com/gpu: present}");
        CHECK_STR(json_string_value(json_object_get(unres, "cordoned-1")),
                  "node(s) were unschedulable");
        CHECK_INT(json_object_size(json_object_get(res, "FailedNodes")), 0);
    }
    json_decref(res);
    /* prioritize: FASTQC (2,2,3) -> group 2 (2,2,2) d=1 best, 3 d=2, 1 d=4 worst */
    res = sched_extender_prioritize(x, args, &err);
    CHECK(res != NULL);
    CHECK_INT(json_array_size(res), 7);
    CHECK_INT(score_of(res, "mid-1"), 10);
    CHECK_INT(score_of(res, "fast-1"), 6);
    CHECK_INT(score_of(res, "slow-1"), 0);
    CHECK_INT(score_of(res, "plain-1"), 0);
    CHECK_INT(score_of(res, "gpu-1"), 0);
    CHECK_STR(tm_json_str(json_array_get(res, 0), "Host", ""), "slow-1");
    json_decref(res);
    json_decref(args);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

/* A pod with DRA claims: kube-scheduler allocates them itself before it calls the extender,
 * so the extender filters such a pod as any other (the scheduler mode refuses it instead). */
static void test_filter_pod_with_dra_claims(void) {
    sched_snapshot *cache = cache_snapshot();
    sched_extender_opts o = {.cache = cache};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-args-nodes.json");
    json_t *spec = json_object_get(json_object_get(args, "Pod"), "spec");
    CHECK(spec != NULL);
    json_object_set_new(spec, "resourceClaims",
                        json_pack("[{s:s, s:s}]", "name", "gpu", "resourceClaimName", "gpu-claim"));
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK(res != NULL);
    if (res) {
        CHECK_INT(json_array_size(json_object_get(json_object_get(res, "Nodes"), "items")), 5);
        CHECK_INT(json_object_size(json_object_get(res, "FailedAndUnresolvableNodes")), 2);
        CHECK_STR(tm_json_str(res, "Error", "?"), "");
    }
    json_decref(res);
    json_decref(args);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

static void test_filter_node_names_cache_capable(void) {
    sched_snapshot *cache = cache_snapshot();
    /* mid-1 is busy in the cache: a resource shortfall (FailedNodes, preemption may help) */
    sched_resources busy = {0};
    busy.v[SCHED_RES_CPU] = 7000;
    busy.v[SCHED_RES_PODS] = 1;
    tm_err err = {0};
    sched_snapshot_add_pod(cache, "busy", "mid-1", &busy, &err);
    sched_extender_opts o = {.cache = cache};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-args-names.json");
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK(res != NULL);
    if (res) {
        const json_t *names = json_object_get(res, "NodeNames");
        CHECK_INT(json_array_size(names), 4);
        CHECK(json_is_null(json_object_get(res, "Nodes")));
        CHECK_STR(json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "mid-1")),
                  "Insufficient cpu");
        const json_t *unres = json_object_get(res, "FailedAndUnresolvableNodes");
        CHECK_STR(json_string_value(json_object_get(unres, "ghost-1")),
                  "node not in tarema's cache");
        CHECK_INT(json_object_size(unres), 3);
    }
    json_decref(res);
    res = sched_extender_prioritize(x, args, &err);
    CHECK_INT(score_of(res, "fast-1"), 10); /* preferred group full: the next one gets 10 */
    CHECK_INT(score_of(res, "mid-1"), 0);
    CHECK_INT(score_of(res, "ghost-1"), 0);
    json_decref(res);
    json_decref(args);
    /* without a cache NodeNames cannot be served: the error says what to change */
    sched_extender_opts none = {0};
    sched_extender *y = sched_extender_new(&none, &err);
    args = load(FIX "extender-args-names.json");
    CHECK(sched_extender_filter(y, args, &err) == NULL);
    CHECK(strstr(err.msg, "nodeCacheCapable: false") != NULL);
    json_decref(args);
    sched_extender_free(y);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

/* A host-port conflict can clear when the other pod leaves, like kube's NodePorts
 * (Unschedulable): the extender must report it in FailedNodes, not as unresolvable. */
/* Usage of a resource the cache keeps sparsely (its fixed slots all taken) reaches the
 * request's own snapshot, where the name has a slot: slow-1 advertises 2 of example.com/s and
 * the cache has a pod there using both, so a pod asking for 1 does not fit there. */
static void test_filter_counts_sparse_usage(void) {
    sched_snapshot *cache = cache_snapshot();
    tm_err err = {0};
    char name[32];
    for (int i = 0; sched_snapshot_resource_count(cache) < SCHED_RES_MAX; i++) {
        snprintf(name, sizeof name, "example.com/fill%d", i);
        CHECK(sched_snapshot_resource_slot(cache, name, &err) >= 0);
    }
    json_t *args = load(FIX "extender-args-nodes.json");
    json_t *slow = json_array_get(tm_json_path(json_object_get(args, "Nodes"), "items"), 0);
    CHECK_STR(tm_json_str(slow, "metadata.name", ""), "slow-1");
    json_object_set_new(tm_json_path(slow, "status.allocatable"), "example.com/s",
                        json_string("2"));
    sched_node *sn = sched_node_from_json(cache, slow, &err);
    CHECK(sn && sched_snapshot_put_node(cache, sn, &err) == 0);
    json_t *user =
        json_pack("{s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:{s:{s:s}}}]}}", "metadata", "namespace",
                  "other", "name", "dev", "uid", "dev-uid", "spec", "nodeName", "slow-1",
                  "containers", "name", "c", "resources", "requests", "example.com/s", "2");
    CHECKF(sched_snapshot_add_pod_json(cache, user, "slow-1", &err) == 0, "%s", err.msg);
    CHECK(sched_snapshot_resource_slot(cache, "example.com/s", &err) == SCHED_RES_NO_SLOT);
    sched_extender_opts o = {.cache = cache};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *c0 = json_array_get(tm_json_path(json_object_get(args, "Pod"), "spec.containers"), 0);
    json_object_set_new(c0, "resources", json_pack("{s:{s:s}}", "requests", "example.com/s", "1"));
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK(res != NULL);
    if (res)
        CHECK_STR(json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "slow-1")),
                  "Insufficient example.com/s");
    json_decref(res);
    json_decref(args);
    json_decref(user);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

static void test_filter_port_conflict_is_resolvable(void) {
    sched_snapshot *cache = cache_snapshot();
    tm_err err = {0};
    json_t *other =
        json_pack("{s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:[{s:i,s:i}]}]}}", "metadata", "namespace",
                  "other", "name", "web", "uid", "web-uid", "spec", "nodeName", "fast-1",
                  "containers", "name", "c", "ports", "containerPort", 80, "hostPort", 8080);
    CHECKF(sched_snapshot_add_pod_json(cache, other, "fast-1", &err) == 0, "%s", err.msg);
    sched_extender_opts o = {.cache = cache};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-args-names.json");
    json_t *c0 = json_array_get(tm_json_path(json_object_get(args, "Pod"), "spec.containers"), 0);
    json_object_set_new(c0, "ports",
                        json_pack("[{s:i,s:i}]", "containerPort", 8080, "hostPort", 8080));
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK(res != NULL);
    if (res) {
        CHECK_STR(json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "fast-1")),
                  "node(s) didn't have free ports for the requested pod ports");
        CHECK(json_object_get(json_object_get(res, "FailedAndUnresolvableNodes"), "fast-1") ==
              NULL);
    }
    json_decref(res);
    json_decref(args);
    json_decref(other);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

static void test_malformed_args(void) {
    sched_extender_opts o = {0};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = json_pack("{s:{s:s}}", "Pod", "metadata", "x");
    CHECK(sched_extender_filter(x, args, &err) == NULL);
    CHECK(strstr(err.msg, "neither Nodes.items nor NodeNames") != NULL);
    json_decref(args);
    args = json_loads("{\"NodeNames\":[\"a\"]}", 0, NULL);
    CHECK(sched_extender_prioritize(x, args, &err) == NULL);
    CHECK(strstr(err.msg, "Pod is missing") != NULL);
    json_decref(args);
    sched_extender_free(x);
    sched_extender_opts bad = {.policy = "lottery"};
    CHECK(sched_extender_new(&bad, &err) == NULL);
    CHECK(strstr(err.msg, "lottery") != NULL);
}

typedef struct bind_rec {
    char call[512];
    int fail;
} bind_rec;

static int fake_bind(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                     tm_err *err) {
    bind_rec *r = ud;
    snprintf(r->call, sizeof r->call, "%s/%s %s -> %s", ns, name, uid, node);
    return r->fail ? tm_err_set(err, "binding rejected: 409 Conflict") : 0;
}

static void test_bind(void) {
    bind_rec rec = {0};
    sched_extender_opts o = {.bind = fake_bind, .bind_ud = &rec};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-bind-args.json");
    json_t *res = sched_extender_bind(x, args);
    CHECK_STR(tm_json_str(res, "Error", "?"), "");
    CHECK_STR(rec.call, "wf/nf-rnaseq-fastqc-1 5f0c6c2e-8e9b-4d47-9a51-0c1e0f1d2a3b -> mid-1");
    json_decref(res);
    rec.fail = 1;
    res = sched_extender_bind(x, args);
    CHECK_STR(tm_json_str(res, "Error", "?"), "binding rejected: 409 Conflict");
    json_decref(res);
    json_decref(args);
    args = json_pack("{s:s}", "PodName", "p");
    res = sched_extender_bind(x, args);
    CHECK(strstr(tm_json_str(res, "Error", ""), "Node are required") != NULL);
    json_decref(res);
    json_decref(args);
    sched_extender_free(x);
}

static void test_explain(void) {
    sched_snapshot *s = cache_snapshot();
    json_t *args = load(FIX "extender-args-nodes.json");
    tm_err err = {0};
    sched_pod *p = sched_pod_from_json(s, json_object_get(args, "Pod"), NULL, &err);
    CHECK(p != NULL);
    if (!p) {
        json_decref(args);
        sched_snapshot_free(s);
        return;
    }
    sched_framework *fw = sched_policy_new("tarema", &err);
    /* the pod is bound to slow-1: explain judges it without its own requests */
    free(p->node_name);
    p->node_name = strdup("slow-1");
    sched_snapshot_add_pod(s, p->uid, "slow-1", &p->requests, &err);
    json_t *doc = sched_explain(fw, s, p, 0, &err);
    CHECK(doc != NULL);
    if (doc) {
        CHECK_STR(tm_json_str(doc, "selected", ""), "mid-1");
        CHECK_STR(tm_json_str(doc, "boundTo", ""), "slow-1");
        const json_t *groups = json_object_get(doc, "groups");
        CHECK_STR(tm_json_str(json_array_get(groups, 0), "id", ""), "2");
        CHECK_INT(tm_json_int(json_array_get(groups, 0), "distance", -1), 1);
        CHECK_STR(tm_json_str(json_array_get(groups, 1), "id", ""), "3");
        CHECK_STR(tm_json_str(json_array_get(groups, 2), "id", ""), "1");
        CHECK_STR(tm_json_str(json_array_get(groups, 3), "id", "?"), "");
        CHECK_INT(tm_json_int(json_array_get(groups, 1), "feasible", -1), 1); /* gpu-1 tainted */
        const json_t *nodes = json_object_get(doc, "nodes");
        CHECK_STR(tm_json_str(json_array_get(nodes, 0), "name", ""), "cordoned-1");
        CHECK_STR(tm_json_str(json_array_get(nodes, 0), "filter", ""), "NodeUnschedulable");
        char *text = sched_explain_text(doc);
        CHECK(text && strstr(text, "selected: mid-1") != NULL);
        CHECK(text && strstr(text, "filtered by TaintToleration: node(s) had untolerated taint "
                                   "{nvidia.com/gpu: present}") != NULL);
        free(text);
    }
    json_decref(doc);
    /* the pod's own usage is back afterwards */
    CHECK_INT(sched_snapshot_node_by_name(s, "slow-1")->requested.v[SCHED_RES_CPU], 2000);
    /* a pod that fits nowhere carries the FailedScheduling message */
    p->requests.v[SCHED_RES_CPU] = 64000;
    doc = sched_explain(fw, s, p, 0, &err);
    CHECK(json_is_null(json_object_get(doc, "selected")));
    CHECK_STR(tm_json_str(doc, "message", ""),
              "0/7 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, "
              "1 node(s) were unschedulable, 5 Insufficient cpu.");
    json_decref(doc);
    sched_framework_free(fw);
    sched_pod_free(p);
    json_decref(args);
    sched_snapshot_free(s);
}

/* ---- reservations: the extender honours them as the live scheduler does ------------------ */

#define RESV_NOW 1714564800000LL /* 2024-05-01T12:00:00Z, inside the window below */

/* The held reservations' table as the read-only controller keeps it in extender mode: one
 * Active reservation, restored from status.nodes, holding slow-1's cpu for the run
 * "happy_turing" (the fixture pod's runName). */
typedef struct resv_fixture {
    resv_plan *plan;
    reservation *r;
} resv_fixture;

static void fx_each(void *ud, resv_each_fn fn, void *arg) {
    const resv_fixture *f = ud;
    fn(arg, "wf/hold", f->r);
}

static int fx_add_plugins(void *ud, sched_framework *fw, tm_err *err) {
    resv_fixture *f = ud;
    resv_plugin_source src = {.each = fx_each, .ud = f};
    sched_plugin pl;
    if (resv_plugin_make(f->plan, &src, &pl, err))
        return -1;
    return sched_framework_add_plugin(fw, &pl, err);
}

static int64_t fx_now(void *ud) {
    (void)ud;
    return RESV_NOW;
}

static json_t *filter_names(sched_extender *x, json_t *args, const char *run) {
    json_object_set_new(
        json_object_get(json_object_get(json_object_get(args, "Pod"), "metadata"), "labels"),
        "nextflow.io/runName", json_string(run));
    tm_err err = {0};
    json_t *res = sched_extender_filter(x, args, &err);
    if (!res)
        printf("    filter: %s\n", err.msg);
    return res;
}

static bool kept(const json_t *res, const char *node) {
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(res, "NodeNames"), i, n) {
        if (strcmp(json_string_value(n), node) == 0)
            return true;
    }
    return false;
}

/* Backfill in extender mode: the plan is another framework's (the loop's), over the cache
 * snapshot; each request borrows it (bf_plugin_add_borrowed). mid-1 (8 cores) is planned busy
 * with 6 cores for 60 s and held from then for an 8-core job; the fixture pod (2 cores) would
 * still run then when it is expected to take 600 s: mid-1 is refused, naming the shadow, in both
 * request forms (NodeNames: the cache's node indices; Nodes: the request's own snapshot, mapped
 * by name); expected to take 30 s, it is not. */
typedef struct bf_fixture {
    sched_framework *owner; /* owns the plan, as the loop's framework does */
    const sched_snapshot *cache;
} bf_fixture;

static int bf_add_plugins(void *ud, sched_framework *fw, tm_err *err) {
    bf_fixture *f = ud;
    return bf_plugin_add_borrowed(fw, bf_plugin_config(f->owner), bf_plugin_plan(f->owner),
                                  f->cache, NULL, NULL, err);
}

static void test_filter_keeps_backfill_shadows(void) {
    sched_snapshot *cache = cache_snapshot();
    tm_err err = {0};
    bf_config cfg = bf_config_default();
    bf_fixture f = {.owner = sched_policy_new("fair", &err), .cache = cache};
    CHECK(f.owner && bf_plugin_add(f.owner, &cfg, NULL, NULL, &err) == 0);
    size_t n = sched_snapshot_node_count(cache);
    sched_resources *alloc = calloc(n, sizeof *alloc);
    int mid = sched_snapshot_node_index(cache, "mid-1");
    CHECK(alloc && mid >= 0);
    for (size_t i = 0; alloc && i < n; i++)
        alloc[i] = sched_snapshot_node(cache, i)->allocatable;
    bf_running run = {.node = mid, .end_ms = RESV_NOW + 60000};
    run.req.v[SCHED_RES_CPU] = 6000;
    sched_resources wide = {0};
    wide.v[SCHED_RES_CPU] = 8000;
    bool *elig = calloc(n, sizeof *elig);
    if (elig && mid >= 0)
        elig[mid] = true;
    bf_job job = {.key = "pod wf/wide",
                  .n_members = 1,
                  .member_req = &wide,
                  .runtime_ms = 600000,
                  .eligible = elig};
    CHECK(bf_plan_compute(bf_plugin_plan(f.owner), &cfg, alloc, n, &run, 1, NULL, 0, &job, 1,
                          RESV_NOW, &err) == 0);
    CHECK_INT((int)bf_plan_shadow_count(bf_plugin_plan(f.owner)), 1);
    sched_extender_opts o = {
        .cache = cache, .now_ms = fx_now, .add_plugins = bf_add_plugins, .plugins_ud = &f};
    sched_extender *x = sched_extender_new(&o, &err);
    const char *forms[] = {"extender-args-names.json", "extender-args-nodes.json"};
    for (int form = 0; form < 2; form++)
        for (int longer = 1; longer >= 0; longer--) {
            char path[128];
            snprintf(path, sizeof path, FIX "%s", forms[form]);
            json_t *args = load(path);
            json_object_set_new(tm_json_path(json_object_get(args, "Pod"), "metadata.annotations"),
                                "tarema.io/expected-duration",
                                json_string(longer ? "600s" : "30s"));
            json_t *res = sched_extender_filter(x, args, &err);
            CHECK(res != NULL);
            const char *why = res ? json_string_value(json_object_get(
                                        json_object_get(res, "FailedNodes"), "mid-1"))
                                  : NULL;
            if (longer)
                CHECKF(why && strstr(why, "held for pod wf/wide from") && strstr(why, "(backfill)"),
                       "form %d: mid-1: %s", form, why ? why : "(passed)");
            else
                CHECKF(!why, "form %d: mid-1 refused for a 30 s pod: %s", form, why);
            json_decref(res);
            json_decref(args);
        }
    sched_extender_free(x);
    free(alloc);
    free(elig);
    sched_framework_free(f.owner);
    sched_snapshot_free(cache);
}

/* The same with an extended resource numbered differently in the plan's snapshot and in the
 * request's own (the Nodes form): the cache met example.com/a first (slot 4, 10 of it on gpu-1),
 * nvidia.com/gpu second; the request's snapshot has only the gpu (slot 4). gpu-1's 2 gpus are
 * used for 60 s, then held for a 2-gpu job: a pod asking for 1 gpu for 600 s is refused there
 * in both forms (compared as slot 4 of the plan, example.com/a, it passed). */
static void test_filter_backfill_maps_resources_by_name(void) {
    sched_snapshot *cache = sched_snapshot_new();
    tm_err err = {0};
    CHECK_INT(sched_snapshot_resource_slot(cache, "example.com/a", &err), SCHED_RES_FIRST_EXT);
    json_t *nodes = load(FIX "nodes.json");
    size_t i;
    json_t *nj;
    json_array_foreach(json_object_get(nodes, "items"), i, nj) {
        if (strcmp(tm_json_str(nj, "metadata.name", ""), "gpu-1") == 0)
            json_object_set_new(tm_json_path(nj, "status.allocatable"), "example.com/a",
                                json_string("10"));
        sched_node *sn = sched_node_from_json(cache, nj, &err);
        CHECK(sn && sched_snapshot_put_node(cache, sn, &err) == 0);
    }
    json_decref(nodes);
    int gpu = -1;
    for (int r = 0; r < sched_snapshot_resource_count(cache); r++)
        if (strcmp(sched_snapshot_resource_name(cache, r), "nvidia.com/gpu") == 0)
            gpu = r;
    CHECK(gpu > SCHED_RES_FIRST_EXT);
    bf_config cfg = bf_config_default();
    bf_fixture f = {.owner = sched_policy_new("fair", &err), .cache = cache};
    CHECK(f.owner && bf_plugin_add(f.owner, &cfg, NULL, NULL, &err) == 0);
    size_t n = sched_snapshot_node_count(cache);
    sched_resources *alloc = calloc(n, sizeof *alloc);
    bool *elig = calloc(n, sizeof *elig);
    int g1 = sched_snapshot_node_index(cache, "gpu-1");
    CHECK(alloc && elig && g1 >= 0 && gpu > 0);
    if (!alloc || !elig || g1 < 0 || gpu <= 0) {
        free(alloc);
        free(elig);
        sched_framework_free(f.owner);
        sched_snapshot_free(cache);
        return;
    }
    for (size_t k = 0; k < n; k++)
        alloc[k] = sched_snapshot_node(cache, k)->allocatable;
    elig[g1] = true;
    bf_running run = {.node = g1, .end_ms = RESV_NOW + 60000};
    run.req.v[gpu] = 2;
    sched_resources two = {0};
    two.v[gpu] = 2;
    bf_job job = {.key = "pod wf/gpus",
                  .n_members = 1,
                  .member_req = &two,
                  .runtime_ms = 600000,
                  .eligible = elig};
    CHECK(bf_plan_compute(bf_plugin_plan(f.owner), &cfg, alloc, n, &run, 1, NULL, 0, &job, 1,
                          RESV_NOW, &err) == 0);
    CHECK_INT((int)bf_plan_shadow_count(bf_plugin_plan(f.owner)), 1);
    sched_extender_opts o = {
        .cache = cache, .now_ms = fx_now, .add_plugins = bf_add_plugins, .plugins_ud = &f};
    sched_extender *x = sched_extender_new(&o, &err);
    const char *forms[] = {"extender-args-names.json", "extender-args-nodes.json"};
    for (int form = 0; form < 2; form++) {
        char path[128];
        snprintf(path, sizeof path, FIX "%s", forms[form]);
        json_t *args = load(path);
        json_t *pod = json_object_get(args, "Pod");
        json_object_set_new(tm_json_path(pod, "metadata.annotations"),
                            "tarema.io/expected-duration", json_string("600s"));
        json_object_set_new(
            json_object_get(pod, "spec"), "tolerations",
            json_pack("[{s:s, s:s}]", "key", "nvidia.com/gpu", "operator", "Exists"));
        json_t *c0 = json_array_get(tm_json_path(pod, "spec.containers"), 0);
        json_object_set_new(
            c0, "resources",
            json_pack("{s:{s:s, s:s}}", "requests", "cpu", "1", "nvidia.com/gpu", "1"));
        json_t *res = sched_extender_filter(x, args, &err);
        CHECK(res != NULL);
        const char *why =
            res ? json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "gpu-1"))
                : NULL;
        CHECKF(why && strstr(why, "held for pod wf/gpus"), "form %d: gpu-1: %s", form,
               why ? why : "(passed)");
        json_decref(res);
        json_decref(args);
    }
    sched_extender_free(x);
    free(alloc);
    free(elig);
    sched_framework_free(f.owner);
    sched_snapshot_free(cache);
}

static void test_filter_honours_reservations(void) {
    sched_snapshot *cache = cache_snapshot();
    tm_err err = {0};
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:[s], s:{s:{s:{s:s}}}}, "
                            "s:{s:s, s:[{s:s, s:i, s:{s:s}}]}}",
                            "apiVersion", "tarema.io/v1alpha1", "kind", "Reservation", "metadata",
                            "namespace", "wf", "name", "hold", "uid", "r-1", "spec", "startTime",
                            "2024-05-01T11:00:00Z", "endTime", "2024-05-01T13:00:00Z", "nodes",
                            "slow-1", "owner", "selector", "matchLabels", "nextflow.io/runName",
                            "happy_turing", "status", "phase", "Active", "nodes", "name", "slow-1",
                            "pods", 0, "requests", "cpu", "4");
    resv_fixture f = {.plan = resv_plan_new(), .r = reservation_from_json(cache, obj, &err)};
    CHECK(f.r != NULL);
    if (!f.r) {
        printf("    reservation: %s\n", err.msg);
        goto out;
    }
    CHECK(resv_plan_put(f.plan, "wf/hold", f.r->start_ms, f.r->end_ms, f.r->holds, f.r->n_holds,
                        &err) == 0);
    sched_extender_opts o = {
        .cache = cache, .now_ms = fx_now, .add_plugins = fx_add_plugins, .plugins_ud = &f};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = load(FIX "extender-args-names.json");
    /* another run's pod: slow-1 is refused with the plugin's reason, in FailedNodes (the
     * capacity comes back when the reservation ends); slow-2 is free to take */
    json_t *res = filter_names(x, args, "other_run");
    CHECK(res && !kept(res, "slow-1") && kept(res, "slow-2"));
    CHECK_STR(json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "slow-1")),
              "node(s) were reserved for another owner's pods");
    json_decref(res);
    /* the owner's pod: slow-1 is its to take */
    res = filter_names(x, args, "happy_turing");
    CHECK(res && kept(res, "slow-1"));
    CHECK(json_object_get(json_object_get(res, "FailedNodes"), "slow-1") == NULL);
    json_decref(res);
    /* no plugins added (the extender before reservations were wired in): slow-1 is kept */
    sched_extender_opts plain = {.cache = cache, .now_ms = fx_now};
    sched_extender *y = sched_extender_new(&plain, &err);
    res = filter_names(y, args, "other_run");
    CHECK(res && kept(res, "slow-1"));
    json_decref(res);
    sched_extender_free(y);
    json_decref(args);
    sched_extender_free(x);
out:
    json_decref(obj);
    reservation_free(f.r);
    resv_plan_free(f.plan);
    sched_snapshot_free(cache);
}

/* ---- preempt: kube-scheduler's candidates re-checked against tarema's filters ------------ */

/* A pod as kube-apiserver serves it (the fixture pod's shape): name, uid, priority, cpu. */
static json_t *pod_as(const json_t *tmpl, const char *name, const char *uid, int prio,
                      const char *cpu) {
    json_t *p = json_deep_copy(tmpl);
    json_t *md = json_object_get(p, "metadata"), *spec = json_object_get(p, "spec");
    json_object_set_new(md, "name", json_string(name));
    json_object_set_new(md, "uid", json_string(uid));
    json_object_set_new(spec, "priority", json_integer(prio));
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
    json_t *rq = json_object_get(json_object_get(c, "resources"), "requests");
    json_object_set_new(rq, "cpu", json_string(cpu));
    json_object_set_new(json_object_get(json_object_get(c, "resources"), "limits"), "cpu",
                        json_string(cpu));
    return p;
}

/* The cache as the informer fills it: slow-1 (4 cpu) holds v1 (3 cpu, priority 0); slow-2
 * (4 cpu) holds v2a (1 cpu) and v2b (2500m); mid-1 is empty. The preemptor asks for 2 cpu. */
static sched_snapshot *preempt_cache(const json_t *tmpl, json_t **victims) {
    sched_snapshot *s = cache_snapshot();
    static const struct {
        const char *name, *uid, *cpu, *node;
    } v[] = {{"v1", "u-v1", "3", "slow-1"},
             {"v2a", "u-v2a", "1", "slow-2"},
             {"v2b", "u-v2b", "2500m", "slow-2"}};
    tm_err err = {0};
    for (size_t i = 0; i < 3; i++) {
        victims[i] = pod_as(tmpl, v[i].name, v[i].uid, 0, v[i].cpu);
        json_object_set_new(json_object_get(victims[i], "spec"), "nodeName",
                            json_string(v[i].node));
        if (sched_snapshot_add_pod_json(s, victims[i], v[i].node, &err) != 0)
            printf("    victim %s: %s\n", v[i].name, err.msg);
    }
    return s;
}

static const json_t *meta_victims(const json_t *res, const char *node) {
    return json_object_get(json_object_get(res, "NodeNameToMetaVictims"), node);
}

static void check_preempt_answer(const json_t *res) {
    CHECK(res != NULL);
    if (!res)
        return;
    /* slow-1: 3 cpu freed, 2 asked: kept, the victim and the PDB count handed back */
    const json_t *s1 = meta_victims(res, "slow-1");
    CHECK_INT(json_array_size(json_object_get(s1, "Pods")), 1);
    CHECK_STR(tm_json_str(json_array_get(json_object_get(s1, "Pods"), 0), "UID", ""), "u-v1");
    CHECK_INT(tm_json_int(s1, "NumPDBViolations", -1), 1);
    /* slow-2: kube-scheduler proposes v2a only, but tarema still counts v2b: 1500m free < 2 */
    CHECK(meta_victims(res, "slow-2") == NULL);
    /* gpu-1: tarema's taint filter rejects the pod whatever leaves */
    CHECK(meta_victims(res, "gpu-1") == NULL);
    /* ghost-1: unknown to the cache; mid-1: proposed without victims (kube refuses that) */
    CHECK(meta_victims(res, "ghost-1") == NULL);
    CHECK(meta_victims(res, "mid-1") == NULL);
    /* fast-1: a victim uid the cache has not seen is nothing to take away there: kept as is */
    const json_t *f1 = meta_victims(res, "fast-1");
    CHECK_STR(tm_json_str(json_array_get(json_object_get(f1, "Pods"), 0), "UID", ""), "u-unseen");
    CHECK_INT(json_object_size(json_object_get(res, "NodeNameToMetaVictims")), 2);
}

static void test_preempt_meta_and_full(void) {
    json_t *names = load(FIX "extender-args-names.json");
    const json_t *tmpl = json_object_get(names, "Pod");
    json_t *victims[3];
    sched_snapshot *cache = preempt_cache(tmpl, victims);
    int64_t used1 = sched_snapshot_node_by_name(cache, "slow-1")->requested.v[SCHED_RES_CPU];
    int64_t used2 = sched_snapshot_node_by_name(cache, "slow-2")->requested.v[SCHED_RES_CPU];
    sched_extender_opts o = {.cache = cache};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *pod = pod_as(tmpl, "urgent", "u-urgent", 1000, "2");
    json_t *unseen = pod_as(tmpl, "unseen", "u-unseen", 0, "1");
    /* nodeCacheCapable true: UIDs */
    json_t *args = json_pack(
        "{s:O, s:{s:{s:[{s:s}], s:i}, s:{s:[{s:s}], s:i}, s:{s:[{s:s}], s:i}, s:{s:[{s:s}], "
        "s:i}, s:{s:[], s:i}, s:{s:[{s:s}], s:i}}}",
        "Pod", pod, "NodeNameToMetaVictims", "slow-1", "Pods", "UID", "u-v1", "NumPDBViolations", 1,
        "slow-2", "Pods", "UID", "u-v2a", "NumPDBViolations", 0, "gpu-1", "Pods", "UID", "u-v1",
        "NumPDBViolations", 0, "ghost-1", "Pods", "UID", "u-v1", "NumPDBViolations", 0, "mid-1",
        "Pods", "NumPDBViolations", 0, "fast-1", "Pods", "UID", "u-unseen", "NumPDBViolations", 0);
    bool bad = true;
    json_t *res = sched_extender_preempt(x, args, &bad, &err);
    if (!res)
        printf("    preempt: %s\n", err.msg);
    CHECK(!bad);
    check_preempt_answer(res);
    json_decref(res);
    json_decref(args);
    /* nodeCacheCapable false: the same candidates with whole Pods, the same answer (UIDs) */
    args = json_pack("{s:O, s:{s:{s:[O], s:i}, s:{s:[O], s:i}, s:{s:[O], s:i}, s:{s:[O], s:i}, "
                     "s:{s:n, s:i}, s:{s:[O], s:i}}}",
                     "Pod", pod, "NodeNameToVictims", "slow-1", "Pods", victims[0],
                     "NumPDBViolations", 1, "slow-2", "Pods", victims[1], "NumPDBViolations", 0,
                     "gpu-1", "Pods", victims[0], "NumPDBViolations", 0, "ghost-1", "Pods",
                     victims[0], "NumPDBViolations", 0, "mid-1", "Pods", "NumPDBViolations", 0,
                     "fast-1", "Pods", unseen, "NumPDBViolations", 0);
    res = sched_extender_preempt(x, args, &bad, &err);
    if (!res)
        printf("    preempt: %s\n", err.msg);
    check_preempt_answer(res);
    json_decref(res);
    json_decref(args);
    /* both victims of slow-2 proposed: 3500m freed, kept */
    args = json_pack("{s:O, s:{s:{s:[{s:s}, {s:s}], s:i}}}", "Pod", pod, "NodeNameToMetaVictims",
                     "slow-2", "Pods", "UID", "u-v2a", "UID", "u-v2b", "NumPDBViolations", 0);
    res = sched_extender_preempt(x, args, &bad, &err);
    CHECK(res && json_array_size(json_object_get(meta_victims(res, "slow-2"), "Pods")) == 2);
    json_decref(res);
    json_decref(args);
    /* the cache exactly as it was: every hidden victim shown again */
    CHECK_INT(sched_snapshot_node_by_name(cache, "slow-1")->requested.v[SCHED_RES_CPU], used1);
    CHECK_INT(sched_snapshot_node_by_name(cache, "slow-2")->requested.v[SCHED_RES_CPU], used2);
    CHECK_INT(used1, 3000);
    json_decref(pod);
    json_decref(unseen);
    for (int i = 0; i < 3; i++)
        json_decref(victims[i]);
    sched_extender_free(x);
    sched_snapshot_free(cache);
    json_decref(names);
}

/* kube-scheduler's dry run knows nothing of tarema's Reservations: it may propose a node held
 * for another owner; preempt drops it (evicting there would not let the pod in) and keeps it
 * for the owner's pod. */
static void test_preempt_honours_reservations(void) {
    json_t *names = load(FIX "extender-args-names.json");
    const json_t *tmpl = json_object_get(names, "Pod");
    json_t *victims[3];
    sched_snapshot *cache = preempt_cache(tmpl, victims);
    tm_err err = {0};
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:[s], s:{s:{s:{s:s}}}}, "
                            "s:{s:s, s:[{s:s, s:i, s:{s:s}}]}}",
                            "apiVersion", "tarema.io/v1alpha1", "kind", "Reservation", "metadata",
                            "namespace", "wf", "name", "hold", "uid", "r-1", "spec", "startTime",
                            "2024-05-01T11:00:00Z", "endTime", "2024-05-01T13:00:00Z", "nodes",
                            "slow-1", "owner", "selector", "matchLabels", "nextflow.io/runName",
                            "happy_turing", "status", "phase", "Active", "nodes", "name", "slow-1",
                            "pods", 0, "requests", "cpu", "4");
    resv_fixture f = {.plan = resv_plan_new(), .r = reservation_from_json(cache, obj, &err)};
    CHECK(f.r && resv_plan_put(f.plan, "wf/hold", f.r->start_ms, f.r->end_ms, f.r->holds,
                               f.r->n_holds, &err) == 0);
    sched_extender_opts o = {
        .cache = cache, .now_ms = fx_now, .add_plugins = fx_add_plugins, .plugins_ud = &f};
    sched_extender *x = f.r ? sched_extender_new(&o, &err) : NULL;
    const char *runs[] = {"other_run", "happy_turing"};
    for (int k = 0; x && k < 2; k++) {
        json_t *pod = pod_as(tmpl, "urgent", "u-urgent", 1000, "2");
        json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "labels"),
                            "nextflow.io/runName", json_string(runs[k]));
        json_t *args =
            json_pack("{s:o, s:{s:{s:[{s:s}], s:i}, s:{s:[{s:s}, {s:s}], s:i}}}", "Pod", pod,
                      "NodeNameToMetaVictims", "slow-1", "Pods", "UID", "u-v1", "NumPDBViolations",
                      0, "slow-2", "Pods", "UID", "u-v2a", "UID", "u-v2b", "NumPDBViolations", 0);
        bool bad = false;
        json_t *res = sched_extender_preempt(x, args, &bad, &err);
        CHECK(res != NULL);
        CHECK((meta_victims(res, "slow-1") != NULL) == (k == 1));
        CHECK(meta_victims(res, "slow-2") != NULL);
        json_decref(res);
        json_decref(args);
    }
    sched_extender_free(x);
    json_decref(obj);
    reservation_free(f.r);
    resv_plan_free(f.plan);
    for (int i = 0; i < 3; i++)
        json_decref(victims[i]);
    sched_snapshot_free(cache);
    json_decref(names);
}

/* Malformed args: NULL, *bad_input set, and the message names the field. */
static void test_preempt_bad_input(void) {
    json_t *names = load(FIX "extender-args-names.json");
    sched_snapshot *cache = cache_snapshot();
    sched_extender_opts o = {.cache = cache};
    tm_err err = {0};
    sched_extender *x = sched_extender_new(&o, &err);
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"[]", "body is not a JSON object"},
        {"{\"NodeNameToMetaVictims\": {}}", "Pod is missing"},
        {"{\"Pod\": $}", "neither NodeNameToVictims nor NodeNameToMetaVictims"},
        {"{\"Pod\": $, \"NodeNameToVictims\": null, \"NodeNameToMetaVictims\": null}",
         "neither NodeNameToVictims nor NodeNameToMetaVictims"},
        {"{\"Pod\": $, \"NodeNameToVictims\": {}, \"NodeNameToMetaVictims\": {}}", "both"},
        {"{\"Pod\": $, \"NodeNameToMetaVictims\": []}", "NodeNameToMetaVictims is not an object"},
        {"{\"Pod\": $, \"NodeNameToMetaVictims\": {\"slow-1\": 3}}",
         "NodeNameToMetaVictims[\"slow-1\"] is not an object"},
        {"{\"Pod\": $, \"NodeNameToMetaVictims\": {\"slow-1\": {\"Pods\": {}}}}",
         "NodeNameToMetaVictims[\"slow-1\"].Pods is not an array"},
        {"{\"Pod\": $, \"NodeNameToMetaVictims\": {\"slow-1\": {\"Pods\": [{\"uid\": \"x\"}]}}}",
         "NodeNameToMetaVictims[\"slow-1\"].Pods[0].UID is missing"},
        {"{\"Pod\": $, \"NodeNameToVictims\": {\"slow-1\": {\"Pods\": [{\"metadata\": {}}]}}}",
         "NodeNameToVictims[\"slow-1\"].Pods[0].metadata.uid is missing"},
        {"{\"Pod\": $, \"NodeNameToMetaVictims\": {\"slow-1\": {\"Pods\": [{\"UID\": \"x\"}], "
         "\"NumPDBViolations\": \"1\"}}}",
         "NodeNameToMetaVictims[\"slow-1\"].NumPDBViolations is not a non-negative integer"},
        {"{\"Pod\": {\"spec\": {\"containers\": 7}}, \"NodeNameToMetaVictims\": {\"slow-1\": "
         "{\"Pods\": [{\"UID\": \"x\"}]}}}",
         "ExtenderPreemptionArgs: Pod"},
    };
    char *pod = json_dumps(json_object_get(names, "Pod"), JSON_COMPACT);
    for (size_t i = 0; x && pod && i < sizeof cases / sizeof cases[0]; i++) {
        char body[8192];
        const char *d = strchr(cases[i].body, '$');
        if (d)
            snprintf(body, sizeof body, "%.*s%s%s", (int)(d - cases[i].body), cases[i].body, pod,
                     d + 1);
        else
            snprintf(body, sizeof body, "%s", cases[i].body);
        json_t *args = json_loads(body, 0, NULL);
        CHECK(args != NULL);
        bool bad = false;
        tm_err e = {0};
        json_t *res = sched_extender_preempt(x, args, &bad, &e);
        CHECK(res == NULL && bad);
        if (!strstr(e.msg, cases[i].want))
            printf("    case %zu: got \"%s\", want \"%s\"\n", i, e.msg, cases[i].want);
        CHECK(strstr(e.msg, cases[i].want) != NULL);
        json_decref(res);
        json_decref(args);
    }
    free(pod);
    /* an empty map is no error: nothing to keep */
    json_t *args =
        json_pack("{s:O, s:{}}", "Pod", json_object_get(names, "Pod"), "NodeNameToMetaVictims");
    bool bad = true;
    json_t *res = sched_extender_preempt(x, args, &bad, &err);
    CHECK(res && !bad && json_object_size(json_object_get(res, "NodeNameToMetaVictims")) == 0);
    json_decref(res);
    json_decref(args);
    sched_extender_free(x);
    /* no cache: not the caller's fault (500), and said plainly */
    sched_extender_opts none = {0};
    x = sched_extender_new(&none, &err);
    args = json_pack("{s:O, s:{}}", "Pod", json_object_get(names, "Pod"), "NodeNameToMetaVictims");
    res = sched_extender_preempt(x, args, &bad, &err);
    CHECK(res == NULL && !bad && strstr(err.msg, "node cache") != NULL);
    json_decref(args);
    sched_extender_free(x);
    sched_snapshot_free(cache);
    json_decref(names);
}

/* ---- preempt on kube-scheduler's own requests ---------------------------------------------
 * Captured from kube-scheduler 1.35.4 calling this extender in tests/e2e/scheduler_extender_test.sh
 * case b (urgent-b, 1 cpu, priority 1000, run "other"; candidates pre-1 and pre-2, 2 cpu each,
 * one 1500m victim on each), one run with the test's nodeCacheCapable true (NodeNameToMetaVictims,
 * and "NodeNameToVictims": null beside it) and one with false (whole victim Pods,
 * "NodeNameToMetaVictims": null). */

/* The candidate of a captured request whose name ends in suffix ("pre-1"): each capture has its
 * run's node names. */
static const char *cap_node(const json_t *args, const char *suffix) {
    const json_t *full = json_object_get(args, "NodeNameToVictims");
    const json_t *map =
        json_is_object(full) ? full : json_object_get(args, "NodeNameToMetaVictims");
    const char *node;
    json_t *v;
    json_object_foreach((json_t *)map, node, v) {
        size_t n = strlen(node), m = strlen(suffix);
        if (n >= m && strcmp(node + n - m, suffix) == 0)
            return node;
    }
    return "?";
}

/* A kwok node of that test: 2 cpu, 4Gi, 20 pods, Ready, the label its pods select (id: the
 * run's). */
static void put_kwok_node(sched_snapshot *s, const char *name, const char *id) {
    json_t *n = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}, s:{}, s:{s:{s:s, s:s, s:s}, "
                          "s:[{s:s, s:s}]}}",
                          "kind", "Node", "apiVersion", "v1", "metadata", "name", name, "labels",
                          "kubernetes.io/hostname", name, "tarema.io/e2e-pre", id, "spec", "status",
                          "allocatable", "cpu", "2", "memory", "4Gi", "pods", "20", "conditions",
                          "type", "Ready", "status", "True");
    tm_err err = {0};
    sched_node *sn = sched_node_from_json(s, n, &err);
    if (!sn || sched_snapshot_put_node(s, sn, &err) != 0)
        printf("    node %s: %s\n", name, err.msg);
    json_decref(n);
}

/* The victims of a captured request recorded in the cache on their nodes, as the informer
 * records bound pods: from the whole Pods when the request has them, else by UID with the
 * test's 1500m filler requests. */
static void record_victims(sched_snapshot *s, const json_t *args) {
    tm_err err = {0};
    const char *node;
    json_t *v;
    const json_t *full = json_object_get(args, "NodeNameToVictims");
    const json_t *map =
        json_is_object(full) ? full : json_object_get(args, "NodeNameToMetaVictims");
    json_object_foreach((json_t *)map, node, v) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(v, "Pods"), i, p) {
            int rc;
            if (json_is_object(full)) {
                rc = sched_snapshot_add_pod_json(s, p, node, &err);
            } else {
                sched_resources rq = {0};
                rq.v[SCHED_RES_CPU] = 1500;
                rc = sched_snapshot_add_pod(s, tm_json_str(p, "UID", ""), node, &rq, &err);
            }
            if (rc != 0)
                printf("    victim on %s: %s\n", node, err.msg);
        }
    }
}

static void test_preempt_captured_requests(void) {
    static const char *const files[] = {FIX "extender-preempt-args-uids.json",
                                        FIX "extender-preempt-args-pods.json"};
    for (size_t k = 0; k < 2; k++) {
        json_t *args = load(files[k]);
        CHECK(args != NULL);
        if (!args)
            continue;
        const char *pre1 = cap_node(args, "pre-1"), *pre2 = cap_node(args, "pre-2");
        const char *ns = tm_json_str(args, "Pod.metadata.namespace", "");
        const json_t *sel =
            json_object_get(json_object_get(json_object_get(args, "Pod"), "spec"), "nodeSelector");
        const char *id = json_string_value(json_object_get(sel, "tarema.io/e2e-pre"));
        CHECK(id != NULL);
        sched_snapshot *cache = sched_snapshot_new();
        put_kwok_node(cache, pre1, id ? id : "");
        put_kwok_node(cache, pre2, id ? id : "");
        record_victims(cache, args);
        tm_err err = {0};
        /* pre-1 held for the run "owner" over RESV_NOW, as the e2e's Reservation hold-pre */
        json_t *obj = json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:[s], s:{s:{s:{s:s}}}}, "
            "s:{s:s, s:[{s:s, s:i, s:{s:s, s:s}}]}}",
            "apiVersion", "tarema.io/v1alpha1", "kind", "Reservation", "metadata", "namespace", ns,
            "name", "hold-pre", "uid", "r-2", "spec", "startTime", "2024-05-01T11:00:00Z",
            "endTime", "2024-05-01T13:00:00Z", "nodes", pre1, "owner", "selector", "matchLabels",
            "tarema.io/run", "owner", "status", "phase", "Active", "nodes", "name", pre1, "pods", 0,
            "requests", "cpu", "2", "memory", "4Gi");
        resv_fixture f = {.plan = resv_plan_new(), .r = reservation_from_json(cache, obj, &err)};
        CHECK(f.r && resv_plan_put(f.plan, "wf/hold", f.r->start_ms, f.r->end_ms, f.r->holds,
                                   f.r->n_holds, &err) == 0);
        sched_extender_opts o = {
            .cache = cache, .now_ms = fx_now, .add_plugins = fx_add_plugins, .plugins_ud = &f};
        sched_extender_opts plain = {.cache = cache, .now_ms = fx_now};
        for (int with_resv = 0; with_resv < 2; with_resv++) {
            sched_extender *x = sched_extender_new(with_resv ? &o : &plain, &err);
            bool bad = true;
            json_t *res = x ? sched_extender_preempt(x, args, &bad, &err) : NULL;
            if (!res)
                printf("    %s: %s\n", files[k], err.msg);
            CHECK(res != NULL && !bad);
            /* kube-scheduler's victims handed back as UIDs, whichever form came in */
            const json_t *m2 = meta_victims(res, pre2);
            const json_t *in2 = json_array_get(
                json_object_get(json_object_get(json_object_get(args, k ? "NodeNameToVictims"
                                                                        : "NodeNameToMetaVictims"),
                                                pre2),
                                "Pods"),
                0);
            CHECK_STR(tm_json_str(json_array_get(json_object_get(m2, "Pods"), 0), "UID", "?"),
                      tm_json_str(in2, k ? "metadata.uid" : "UID", "!"));
            /* pre-1: kept without the Reservation, dropped with it (held for another owner) */
            CHECK((meta_victims(res, pre1) != NULL) == !with_resv);
            json_decref(res);
            sched_extender_free(x);
        }
        json_decref(obj);
        reservation_free(f.r);
        resv_plan_free(f.plan);
        sched_snapshot_free(cache);
        json_decref(args);
    }
}

/* The extender's retries (extender.h, "Retries"): a pod left without a node, refused on a view
 * that then moves (the busy pod is gone), is handed back once it passes, with the node; one
 * still refused waits, one refused only for good is never kept, one that passed is forgotten,
 * and none outlives the window. */
static int64_t retry_clock_ms;
static int64_t retry_clock(void *ud) {
    (void)ud;
    return retry_clock_ms;
}

typedef struct retried {
    int n;
    char node[64], uid[64], who[128];
} retried;

static void on_retry(void *ud, const char *ns, const char *name, const char *uid,
                     const char *node) {
    retried *r = ud;
    r->n++;
    snprintf(r->node, sizeof r->node, "%s", node);
    snprintf(r->uid, sizeof r->uid, "%s", uid);
    snprintf(r->who, sizeof r->who, "%s/%s", ns, name);
}

static json_t *names_args(const char *const *names) {
    json_t *args = load(FIX "extender-args-names.json");
    json_t *a = json_array();
    for (size_t i = 0; names[i]; i++)
        json_array_append_new(a, json_string(names[i]));
    json_object_set_new(args, "NodeNames", a);
    return args;
}

static void test_refused_pod_retried_when_view_moves(void) {
    sched_snapshot *cache = cache_snapshot();
    sched_resources busy = {0};
    busy.v[SCHED_RES_CPU] = 7000;
    busy.v[SCHED_RES_PODS] = 1;
    tm_err err = {0};
    CHECK(sched_snapshot_add_pod(cache, "busy", "mid-1", &busy, &err) == 0);
    retry_clock_ms = 1000;
    sched_extender_opts o = {.cache = cache, .now_ms = retry_clock};
    sched_extender *x = sched_extender_new(&o, &err);
    json_t *args = names_args((const char *const[]){"mid-1", NULL});
    json_t *res = sched_extender_filter(x, args, &err);
    CHECK_INT(json_array_size(json_object_get(res, "NodeNames")), 0);
    json_decref(res);
    CHECK_INT(sched_extender_retry_pending(x), 1);
    retried r = {0};
    /* nothing changed: still refused, still kept */
    CHECK_INT(sched_extender_retry(x, 1100, on_retry, &r), 0);
    CHECK_INT(r.n, 0);
    CHECK_INT(sched_extender_retry_pending(x), 1);
    /* the busy pod is gone from tarema's view: the pod passes mid-1 now */
    CHECK(sched_snapshot_remove_pod(cache, "busy") == 0);
    CHECK_INT(sched_extender_retry(x, 1200, on_retry, &r), 1);
    CHECK_INT(r.n, 1);
    CHECK_STR(r.node, "mid-1");
    CHECK_STR(r.who, "wf/nf-rnaseq-fastqc-1");
    CHECK_STR(r.uid, "5f0c6c2e-8e9b-4d47-9a51-0c1e0f1d2a3b");
    CHECK_INT(sched_extender_retry_pending(x), 0);
    /* refused again, then past the window: forgotten without a retry */
    CHECK(sched_snapshot_add_pod(cache, "busy", "mid-1", &busy, &err) == 0);
    json_decref(sched_extender_filter(x, args, &err));
    CHECK_INT(sched_extender_retry_pending(x), 1);
    CHECK(sched_snapshot_remove_pod(cache, "busy") == 0);
    CHECK_INT(sched_extender_retry(x, 1000 + SCHED_EXTENDER_RETRY_WINDOW_MS + 1, on_retry, &r), 0);
    CHECK_INT(sched_extender_retry_pending(x), 0);
    /* a later answer that passes a node forgets the refusal */
    CHECK(sched_snapshot_add_pod(cache, "busy", "mid-1", &busy, &err) == 0);
    json_decref(sched_extender_filter(x, args, &err));
    CHECK_INT(sched_extender_retry_pending(x), 1);
    json_decref(args);
    args = names_args((const char *const[]){"mid-1", "fast-1", NULL});
    res = sched_extender_filter(x, args, &err);
    CHECK_INT(json_array_size(json_object_get(res, "NodeNames")), 1);
    json_decref(res);
    CHECK_INT(sched_extender_retry_pending(x), 0);
    json_decref(args);
    /* refused only for good (a taint it does not tolerate): nothing to retry */
    args = names_args((const char *const[]){"gpu-1", NULL});
    json_decref(sched_extender_filter(x, args, &err));
    CHECK_INT(sched_extender_retry_pending(x), 0);
    json_decref(args);
    CHECK_INT(r.n, 1);
    sched_extender_free(x);
    sched_snapshot_free(cache);
}

int main(void) {
    RUN(test_task_profile_json);
    RUN(test_filter_nodes_not_cache_capable);
    RUN(test_filter_pod_with_dra_claims);
    RUN(test_filter_node_names_cache_capable);
    RUN(test_filter_port_conflict_is_resolvable);
    RUN(test_filter_counts_sparse_usage);
    RUN(test_filter_keeps_backfill_shadows);
    RUN(test_filter_backfill_maps_resources_by_name);
    RUN(test_malformed_args);
    RUN(test_bind);
    RUN(test_explain);
    RUN(test_filter_honours_reservations);
    RUN(test_refused_pod_retried_when_view_moves);
    RUN(test_preempt_meta_and_full);
    RUN(test_preempt_honours_reservations);
    RUN(test_preempt_bad_input);
    RUN(test_preempt_captured_requests);
    return TEST_SUMMARY();
}
