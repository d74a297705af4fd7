/* extender.c: kube-scheduler extender verbs: JSON in -> tarema policy -> JSON out. */
#include "scheduler/cmd/extender.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/cmd/extender_internal.h"
#include "scheduler/plugins/policy/policy.h"

sched_extender *sched_extender_new(const sched_extender_opts *opts, tm_err *err) {
    sched_extender *x = calloc(1, sizeof *x);
    if (!x) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    x->o = *opts;
    pthread_mutex_init(&x->retry_mu, NULL);
    if (!x->o.keys.process_label || !x->o.keys.workflow_key)
        x->o.keys = sched_keys_default();
    x->policy = strdup(opts->policy ? opts->policy : "tarema");
    sched_framework *probe = x->policy ? sched_policy_new(x->policy, err) : NULL;
    if (!probe) {
        if (!x->policy)
            tm_err_set(err, "out of memory");
        sched_extender_free(x);
        return NULL;
    }
    sched_framework_free(probe);
    if (opts->metrics &&
        !(x->m_preempt_nodes = tm_metrics_counter(
              opts->metrics, "tarema_extender_preempt_nodes_total",
              "Candidate nodes kube-scheduler proposed to the preempt verb, by outcome: kept "
              "(the preemptor passes tarema's filters once the victims are gone) or dropped",
              (const char *const[]){"outcome", NULL}, err))) {
        sched_extender_free(x);
        return NULL;
    }
    return x;
}

void sched_extender_free(sched_extender *x) {
    if (!x)
        return;
    free(x->policy);
    ext_retry_free(x);
    pthread_mutex_destroy(&x->retry_mu);
    free(x);
}

/* One evaluation: the snapshot used (cache or a temporary one), the framework run on it, and
 * for every candidate node of the request its index in that snapshot (-1 unknown). */
typedef struct eval {
    sched_snapshot *tmp; /* owned temporary snapshot, NULL when the cache is used */
    sched_snapshot *snap;
    sched_framework *fw;
    sched_pod *pod;
    const char **names; /* candidate names, borrowed from args */
    int *idx;
    size_t n;
    bool cache_capable; /* NodeNames given */
    bool locked;
    sched_fw_recorder *rec; /* the request's timings (fw_metrics.h), NULL = none */
} eval;

static void eval_done(sched_extender *x, eval *e) {
    sched_pod_free(e->pod);
    sched_framework_free(e->fw);
    sched_fw_recorder_free(e->rec); /* flushes the request's timings */
    sched_snapshot_free(e->tmp);
    if (e->locked && x->o.cache_unlock)
        x->o.cache_unlock(x->o.cache_ud);
    free(e->names);
    free(e->idx);
}

/* Puts amount v of resource name into used (a fixed slot of tmp) or x (kept sparsely there).
 * 0, or -1 with err. */
static int usage_put(sched_snapshot *tmp, const char *name, int64_t v, sched_resources *used,
                     sched_xres *x, uint32_t *nx, tm_err *err) {
    int slot = sched_snapshot_resource_slot(tmp, name, err);
    if (slot >= 0) {
        used->v[slot] = v;
        return 0;
    }
    int id = slot == SCHED_RES_NO_SLOT ? sched_snapshot_xres_id(tmp, name, err) : -1;
    if (id < 0)
        return -1;
    x[(*nx)++] = (sched_xres){(uint32_t)id, v};
    return 0;
}

/* Copies what the cache knows is used on a node into the temporary snapshot, resource by
 * resource name since the two snapshots number extended resources independently. */
static int copy_usage(sched_snapshot *tmp, const sched_snapshot *cache, const char *node,
                      tm_err *err) {
    const sched_node *cn = sched_snapshot_node_by_name(cache, node);
    if (!cn)
        return 0;
    sched_resources used = {0};
    int nres = sched_snapshot_resource_count(cache);
    sched_xres *x = malloc(((size_t)nres + cn->n_xalloc + 1) * sizeof *x);
    uint32_t nx = 0;
    if (!x)
        return tm_err_set(err, "out of memory");
    int rc = 0;
    for (int r = 0; rc == 0 && r < nres; r++)
        if (cn->requested.v[r])
            rc = usage_put(tmp, sched_snapshot_resource_name(cache, r), cn->requested.v[r], &used,
                           x, &nx, err);
    for (uint32_t k = 0; rc == 0 && k < cn->n_xalloc; k++)
        if (cn->xused[k])
            rc = usage_put(tmp, sched_snapshot_xres_name(cache, cn->xalloc[k].id), cn->xused[k],
                           &used, x, &nx, err);
    if (rc == 0) {
        char uid[512];
        snprintf(uid, sizeof uid, "extender-usage/%s", node);
        nx = sched_xres_normalize(x, nx);
        rc = sched_snapshot_add_pod_x(tmp, uid, node, &used, x, nx, NULL, err);
    }
    free(x);
    return rc;
}

static int eval_run(sched_extender *x, const json_t *args, eval *e, tm_err *err) {
    memset(e, 0, sizeof *e);
    if (!json_is_object(args))
        return tm_err_set(err, "ExtenderArgs: body is not a JSON object");
    const json_t *pod = json_object_get(args, "Pod");
    const json_t *nodes = json_object_get(args, "Nodes");
    const json_t *names = json_object_get(args, "NodeNames");
    if (!json_is_object(pod))
        return tm_err_set(err, "ExtenderArgs: Pod is missing");
    const json_t *items = json_is_object(nodes) ? json_object_get(nodes, "items") : NULL;
    e->cache_capable = !json_is_array(items);
    if (e->cache_capable && !json_is_array(names))
        return tm_err_set(err, "ExtenderArgs: neither Nodes.items nor NodeNames is given");
    e->n = json_array_size(e->cache_capable ? names : items);
    e->names = calloc(e->n + 1, sizeof *e->names);
    e->idx = calloc(e->n + 1, sizeof *e->idx);
    if (!e->names || !e->idx)
        return tm_err_set(err, "out of memory");
    if (x->o.cache && x->o.cache_lock) {
        x->o.cache_lock(x->o.cache_ud);
        e->locked = true;
    }
    if (e->cache_capable) {
        if (!x->o.cache)
            return tm_err_set(err, "ExtenderArgs: NodeNames given (nodeCacheCapable: true) but "
                                   "this extender has no node cache; set nodeCacheCapable: false");
        e->snap = x->o.cache;
        for (size_t i = 0; i < e->n; i++) {
            e->names[i] = json_string_value(json_array_get(names, i));
            if (!e->names[i])
                return tm_err_set(err, "ExtenderArgs: NodeNames[%zu] is not a string", i);
        }
    } else {
        if (!(e->tmp = sched_snapshot_new()))
            return tm_err_set(err, "out of memory");
        e->snap = e->tmp;
        for (size_t i = 0; i < e->n; i++) {
            sched_node *n = sched_node_from_json(e->tmp, json_array_get(items, i), err);
            if (!n)
                return tm_err_wrap(err, "ExtenderArgs: Nodes.items[%zu]", i);
            e->names[i] = tm_json_str(json_array_get(items, i), "metadata.name", "");
            if (sched_snapshot_put_node(e->tmp, n, err) != 0 ||
                (x->o.cache && copy_usage(e->tmp, x->o.cache, e->names[i], err) != 0))
                return -1;
        }
    }
    if (!(e->pod = sched_pod_from_json(e->snap, pod, &x->o.keys, err)))
        return tm_err_wrap(err, "ExtenderArgs: Pod");
    /* DRA claims are kube-scheduler's in extender mode: its DynamicResources plugin allocates
     * them before it asks us, so tarema's refusing filter (which stands in for allocation in
     * the scheduler it binds for) must not turn such a pod away here. */
    e->pod->n_resource_claims = 0;
    if (e->tmp && x->o.cache) { /* task labels are known to the cache only */
        const char *wf = e->pod->workflow;
        const sched_task_profile *tp = sched_snapshot_task(x->o.cache, wf, e->pod->process);
        if (!tp && *wf)
            tp = sched_snapshot_task(x->o.cache, wf = "", e->pod->process);
        if (tp && sched_snapshot_set_task(e->tmp, wf, e->pod->process, tp, err) != 0)
            return -1;
    }
    if (!(e->fw = sched_policy_new(x->policy, err)) ||
        sched_framework_apply_weights(e->fw, x->o.weights, err) != 0)
        return -1;
    if (x->o.add_plugins && x->o.add_plugins(x->o.plugins_ud, e->fw, err) != 0)
        return tm_err_wrap(err, "extender plugins");
    /* timed like a cycle of the scheduler (a recorder per request: requests run on several
     * threads; without memory the request just goes untimed) */
    if (x->o.fw_metrics && (e->rec = sched_fw_recorder_new(x->o.fw_metrics))) {
        sched_framework_set_observer(e->fw, sched_fw_recorder_observer(e->rec));
        sched_framework_sample(e->fw, sched_fw_metrics_sample(x->o.fw_metrics));
    }
    int64_t now = x->o.now_ms ? x->o.now_ms(x->o.now_ud) : 0;
    sched_decision d;
    if (sched_framework_schedule(e->fw, e->snap, e->pod, now, &d, err) != 0)
        return -1;
    for (size_t i = 0; i < e->n; i++)
        e->idx[i] = sched_snapshot_node_index(e->snap, e->names[i]);
    return 0;
}

json_t *sched_extender_filter(sched_extender *x, const json_t *args, tm_err *err) {
    return ext_filter(x, args, true, err);
}

json_t *ext_filter(sched_extender *x, const json_t *args, bool track, tm_err *err) {
    eval e;
    json_t *res = NULL;
    if (eval_run(x, args, &e, err) != 0)
        goto out;
    json_t *kept = json_array(), *failed = json_object(), *unres = json_object();
    const json_t *items = json_object_get(json_object_get(args, "Nodes"), "items");
    for (size_t i = 0; i < e.n; i++) {
        if (e.idx[i] < 0) {
            json_object_set_new(unres, e.names[i], json_string("node not in tarema's cache"));
            continue;
        }
        uint32_t detail;
        sched_filter_id id = sched_framework_node_status(e.fw, (size_t)e.idx[i], &detail, NULL);
        if (id == SCHED_FILTER_OK) {
            json_array_append_new(kept, e.cache_capable ? json_string(e.names[i])
                                                        : json_deep_copy(json_array_get(items, i)));
            continue;
        }
        char reason[512];
        sched_framework_node_reason(e.fw, (size_t)e.idx[i], reason, sizeof reason);
        /* FailedNodes may become feasible when pods leave or a reservation ends (kube's
         * Unschedulable); the rest (taints, affinity, ...) cannot, so preemption need not try
         * them. */
        bool resolvable = id >= SCHED_FILTER_PLUGIN || sched_filter_resolvable(id, detail);
        json_object_set_new(resolvable ? failed : unres, e.names[i], json_string(reason));
    }
    /* kube-scheduler parks a pod left without a node until the next cluster event: one that
     * tarema's view may have been behind is evaluated again when the view moves
     * (extender_retry.c) */
    if (track && json_array_size(kept) == 0 && json_object_size(failed) > 0)
        ext_retry_park(x, json_object_get(args, "Pod"), failed,
                       x->o.now_ms ? x->o.now_ms(x->o.now_ud) : 0);
    else if (track && json_array_size(kept) > 0)
        ext_retry_forget(x, json_object_get(args, "Pod"));
    json_t *nodes = json_null(), *names = json_null();
    if (e.cache_capable) {
        json_decref(names);
        names = kept;
    } else {
        json_decref(nodes);
        nodes = json_pack("{s:s, s:s, s:{}, s:o}", "kind", "NodeList", "apiVersion", "v1",
                          "metadata", "items", kept);
    }
    res = json_pack("{s:o, s:o, s:o, s:o, s:s}", "Nodes", nodes, "NodeNames", names, "FailedNodes",
                    failed, "FailedAndUnresolvableNodes", unres, "Error", "");
    if (!res)
        tm_err_set(err, "out of memory");
out:
    eval_done(x, &e);
    return res;
}

json_t *sched_extender_prioritize(sched_extender *x, const json_t *args, tm_err *err) {
    eval e;
    json_t *res = NULL;
    if (eval_run(x, args, &e, err) == 0) {
        res = json_array();
        for (size_t i = 0; res && i < e.n; i++) {
            int sc = e.idx[i] >= 0 ? sched_framework_extender_score(e.fw, (size_t)e.idx[i]) : 0;
            json_array_append_new(
                res, json_pack("{s:s, s:i}", "Host", e.names[i], "Score", sc < 0 ? 0 : sc));
        }
    }
    eval_done(x, &e);
    return res;
}

json_t *sched_extender_bind(sched_extender *x, const json_t *args) {
    const char *name = tm_json_str(args, "PodName", NULL);
    const char *ns = tm_json_str(args, "PodNamespace", NULL);
    const char *uid = tm_json_str(args, "PodUID", "");
    const char *node = tm_json_str(args, "Node", NULL);
    tm_err err = {0};
    if (!name || !*name || !ns || !node || !*node)
        tm_err_set(&err, "ExtenderBindingArgs: PodName, PodNamespace and Node are required");
    else if (!x->o.bind)
        tm_err_set(&err, "this tarema extender does not bind: remove bindVerb from the "
                         "KubeSchedulerConfiguration extender entry");
    else
        x->o.bind(x->o.bind_ud, ns, name, uid, node, &err);
    return json_pack("{s:s}", "Error", err.msg);
}

static void on_filter(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    json_t *args = tm_httpd_req_json(req, resp);
    if (!args)
        return;
    tm_err err = {0};
    json_t *res = sched_extender_filter(ud, args, &err);
    json_decref(args);
    if (!res) /* kube-scheduler reads Error and fails the pod's filter with it */
        res = json_pack("{s:n, s:n, s:{}, s:{}, s:s}", "Nodes", "NodeNames", "FailedNodes",
                        "FailedAndUnresolvableNodes", "Error", err.msg);
    tm_httpd_json(resp, 200, res);
}

static void on_prioritize(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    json_t *args = tm_httpd_req_json(req, resp);
    if (!args)
        return;
    tm_err err = {0};
    json_t *res = sched_extender_prioritize(ud, args, &err);
    json_decref(args);
    if (!res)
        tm_httpd_error(resp, 400, "%s", err.msg);
    else
        tm_httpd_json(resp, 200, res);
}

static void on_preempt(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    json_t *args = tm_httpd_req_json(req, resp);
    if (!args)
        return;
    tm_err err = {0};
    bool bad = false;
    json_t *res = sched_extender_preempt(ud, args, &bad, &err);
    json_decref(args);
    /* ExtenderPreemptionResult has no Error field: kube-scheduler takes any non-200 as the
     * extender's failure and logs the body, so the reason goes there */
    if (!res)
        tm_httpd_error(resp, bad ? 400 : 500, "%s", err.msg);
    else
        tm_httpd_json(resp, 200, res);
}

static void on_bind(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    json_t *args = tm_httpd_req_json(req, resp);
    if (!args)
        return;
    json_t *res = sched_extender_bind(ud, args);
    json_decref(args);
    tm_httpd_json(resp, 200, res);
}

int sched_extender_register(sched_extender *x, tm_httpd *srv, const char *prefix, tm_err *err) {
    static const struct {
        const char *verb;
        tm_httpd_handler fn;
    } routes[] = {{"filter", on_filter},
                  {"prioritize", on_prioritize},
                  {"preempt", on_preempt},
                  {"bind", on_bind}};
    /* No bind function, no /bind route: a 404 tells a misconfigured kube-scheduler (bindVerb
     * set) what is wrong, and nobody can bind through an extender that is not the binder. */
    for (size_t i = 0; i < (x->o.bind ? 4u : 3u); i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", prefix ? prefix : "", routes[i].verb);
        /* ExtenderBindingArgs are four short strings: no reason to take megabytes there. */
        tm_httpd_route_opts ro = {.max_body = i == 3 ? (size_t)64 << 10 : 0};
        if (tm_httpd_route_ex(srv, "POST", path, routes[i].fn, x, &ro, err) != 0)
            return -1;
    }
    return 0;
}
