/* webhook.c: see webhook.h. The I/O around labeler/sizing_pod.h's decisions: HTTPS, the store,
 * the API server.
 *
 * Threads. libmicrohttpd's workers run on_mutate; the main thread refreshes the plan table.
 * The table is immutable once built and reference-counted: a handler takes a reference under
 * `mu` (a pointer copy), decides without any lock, and drops it; the loop swaps in a new table
 * under `mu`. The pod list a handler needs is a synchronous API call (lib/kube.h: thread-safe),
 * bounded by the API server's own timeout for the webhook (timeoutSeconds). */
#include "labeler/webhook.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labeler/sizing_pod.h"
#include "labeler/sizing_samples.h"
#include "labeler/store.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/labelvalue.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/quantity.h"

#define TICK_MS 500
/* New runs (NOTIFY) rebuild the plans at most this often. */
#define MIN_REBUILD_S 5

/* Every process's plan, keyed "workflow\x1fprocess" in label-value form. */
typedef struct plan_table {
    atomic_int refs;
    json_t *index; /* key -> integer index into plans */
    sz_plan *plans;
    size_t n;
    double node_max[SZ_RES_N]; /* 0 when unknown */
} plan_table;

typedef struct webhook {
    const lab_webhook_opts *o;
    tm_kube *kube;
    tm_metrics *reg;
    tm_metric *m_reviews;
    pthread_mutex_t mu;
    plan_table *table; /* under mu */
    lab_store *store;  /* loop thread only */
    tm_pg_limits limits;
} webhook;

static void table_unref(plan_table *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    for (size_t i = 0; i < t->n; i++)
        sz_plan_free(&t->plans[i]);
    free(t->plans);
    json_decref(t->index);
    free(t);
}

static plan_table *table_get(webhook *w) {
    pthread_mutex_lock(&w->mu);
    plan_table *t = w->table;
    if (t)
        atomic_fetch_add(&t->refs, 1);
    pthread_mutex_unlock(&w->mu);
    return t;
}

static void table_key(const char *wf, const char *proc, char out[2 * TM_LABEL_VALUE_MAX + 2]) {
    size_t lw = tm_label_value_sanitize(wf, out);
    out[lw] = '\x1f';
    tm_label_value_sanitize(proc, out + lw + 1);
}

/* The largest node's allocatable cpu and memory (capacity when allocatable is absent). */
static int node_sizes(webhook *w, double out[SZ_RES_N], tm_err *err) {
    out[0] = out[1] = 0;
    char *path = tm_kube_path("v1", "nodes", NULL, NULL, NULL);
    json_t *nodes = tm_kube_list(w->kube, path, NULL, NULL, err);
    free(path);
    if (!nodes)
        return -1;
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node) {
        const json_t *st = json_object_get(node, "status");
        const json_t *q = json_object_get(st, "allocatable");
        if (!q)
            q = json_object_get(st, "capacity");
        int64_t cpu = 0, mem = 0;
        tm_err e = {{0}, 0};
        const char *c = tm_json_str(q, "cpu", NULL), *m = tm_json_str(q, "memory", NULL);
        if (c && tm_quantity_parse_milli(c, &cpu, &e) == 0 && cpu / 1000.0 > out[0])
            out[0] = (double)cpu / 1000.0;
        if (m && tm_quantity_parse(m, &mem, &e) == 0 && (double)mem > out[1])
            out[1] = (double)mem;
    }
    json_decref(nodes);
    return 0;
}

/* Adds the plans of one workflow's processes to t. */
static int add_workflow(webhook *w, plan_table *t, const char *wf, tm_err *err) {
    lab_samples smp;
    if (lab_store_samples(w->store, wf, &smp, err) < 0)
        return -1;
    sz_plan_opts po;
    sz_plan_opts_default(&po, t->node_max[0], t->node_max[1]);
    po.strategy = w->o->strategy;
    po.cold_start = w->o->cold_start;
    po.buckets = w->o->buckets;
    int rc = 0;
    for (size_t i = 0; i < smp.n && rc == 0; i++) {
        char key[2 * TM_LABEL_VALUE_MAX + 2];
        table_key(wf, smp.v[i].process, key);
        if (json_object_get(t->index, key))
            continue;
        sz_plan *grown = realloc(t->plans, (t->n + 1) * sizeof *grown);
        if (!grown) {
            rc = tm_err_set(err, "out of memory for sizing plans");
            break;
        }
        t->plans = grown;
        rc = lab_sizing_plan(smp.v, smp.n, smp.v[i].process, &po, &t->plans[t->n], err);
        if (rc == 0)
            json_object_set_new(t->index, key, json_integer((json_int_t)t->n++));
    }
    lab_samples_free(&smp);
    return rc;
}

/* Builds a new table from the store and the nodes and swaps it in; on failure the old one
 * stays (stale plans beat none). */
static void refresh(webhook *w) {
    tm_err err = {{0}, 0};
    plan_table *t = calloc(1, sizeof *t);
    if (!t)
        return;
    atomic_init(&t->refs, 1);
    t->index = json_object();
    if (node_sizes(w, t->node_max, &err) < 0) {
        tm_warn("webhook: node sizes unknown, keeping the last: %s", err.msg);
        table_unref(t);
        return;
    }
    if (t->node_max[0] > 0 && t->node_max[1] > 0) {
        if (!w->store || !lab_store_ensure(w->store)) {
            lab_store_close(w->store);
            w->store = lab_store_open_limited(w->o->db, &w->limits, &err);
            if (w->store && lab_store_listen(w->store, &err) < 0) {
                lab_store_close(w->store);
                w->store = NULL;
            }
        }
        char now[64];
        char **wfs = w->store ? lab_store_changed_workflows(w->store, "", now, &err) : NULL;
        for (char **p = wfs; p && *p; p++)
            if (add_workflow(w, t, *p, &err) < 0)
                break;
        lab_strv_free(wfs);
        if (!wfs || err.msg[0]) {
            /* the last plans beat none; with none yet, the node sizes alone (fallbacks) */
            tm_warn("webhook: history unavailable, %s: %s",
                    w->table ? "keeping the last plans" : "sizing from declarations", err.msg);
            if (w->table) {
                table_unref(t);
                return;
            }
        }
    }
    tm_debug("webhook: %zu process plans, largest node %.3f cores %.0f bytes", t->n, t->node_max[0],
             t->node_max[1]);
    pthread_mutex_lock(&w->mu);
    plan_table *old = w->table;
    w->table = t;
    pthread_mutex_unlock(&w->mu);
    table_unref(old);
}

static void note_workflow(void *ud, const char *wf) {
    (void)wf;
    *(int *)ud = 1;
}

/* The earlier pods of the same task: the largest memory an OOMKilled one had (NAN none). */
static double earlier_oom(webhook *w, const char *ns, const sz_pod *pod) {
    /* Webhooks run before validation: a value that is not a label value could add terms to
     * the selector; such a pod is sized as a first attempt (the API server then refuses it). */
    char v[TM_LABEL_VALUE_MAX + 1];
    if (!ns || !pod->task_name[0] || !pod->run[0] ||
        strcmp(pod->task_name, (tm_label_value_sanitize(pod->task_name, v), v)) != 0 ||
        strcmp(pod->run, (tm_label_value_sanitize(pod->run, v), v)) != 0)
        return NAN;
    char sel[2 * SZ_POD_NAME_MAX + 64];
    snprintf(sel, sizeof sel, "nextflow.io/taskName=%s,nextflow.io/runName=%s", pod->task_name,
             pod->run);
    char *path = tm_kube_path("v1", "pods", ns, NULL, NULL);
    tm_list_opts lo = {.label_selector = sel};
    tm_err err = {{0}, 0};
    json_t *pods = tm_kube_list(w->kube, path, &lo, NULL, &err);
    free(path);
    if (!pods) {
        tm_warn("webhook: earlier attempts of task %s unknown (sized as a first attempt): %s",
                pod->task_name, err.msg);
        return NAN;
    }
    double failed = sz_pod_failed_memory(pods);
    json_decref(pods);
    return failed;
}

static void on_mutate(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    webhook *w = ud;
    json_t *review = tm_httpd_req_json(req, resp);
    if (!review)
        return;
    const json_t *pod = tm_json_path(review, "request.object");
    const char *ns = tm_json_str(review, "request.namespace", NULL);
    const char *name =
        tm_json_str(pod, "metadata.name", tm_json_str(pod, "metadata.generateName", "?"));
    sz_pod p;
    sz_decision d = {0};
    tm_err err = {{0}, 0};
    json_t *patch = NULL;
    const char *result = "untouched";
    if (sz_pod_parse(pod, &p, &err) < 0) {
        tm_info("webhook: pod %s/%s passes untouched, malformed: %s", ns ? ns : "?", name, err.msg);
        result = "malformed";
    } else {
        double failed = p.task && !p.opted_out ? earlier_oom(w, ns, &p) : NAN;
        plan_table *t = table_get(w);
        char key[2 * TM_LABEL_VALUE_MAX + 2];
        table_key(p.workflow, p.process, key);
        json_t *ix = t ? json_object_get(t->index, key) : NULL;
        const sz_plan *plan = ix ? &t->plans[json_integer_value(ix)] : NULL;
        double none[SZ_RES_N] = {0, 0};
        sz_pod_decide(&p, plan, t ? t->node_max : none, failed, &d);
        table_unref(t);
        patch = d.patch ? sz_pod_patch(pod, &d) : NULL;
        if (patch)
            result = d.retry ? "retry" : "sized";
        tm_info("webhook: pod %s/%s task=%s process=%s workflow=%s: %s", ns ? ns : "?", name,
                p.task_name, p.process, p.workflow, d.reason);
    }
    json_t *out = sz_admission_response(review, patch, NULL);
    json_decref(patch);
    json_decref(review);
    tm_metrics_inc(w->m_reviews, TM_LABELS(out ? result : "bad_review"));
    if (!out) {
        tm_httpd_error(resp, 400, "not an AdmissionReview: request.uid is missing");
        return;
    }
    tm_httpd_json(resp, 200, out);
}

static bool is_ready(void *ud, char *reason, size_t size) {
    webhook *w = ud;
    plan_table *t = table_get(w);
    bool ok = t != NULL;
    if (!ok)
        snprintf(reason, size, "node sizes not read yet");
    table_unref(t);
    return ok;
}

int lab_webhook_main(const lab_webhook_opts *o, volatile sig_atomic_t *stop) {
    webhook w = {.o = o};
    pthread_mutex_init(&w.mu, NULL);
    int t_ms = (o->db_timeout_s > 0 ? o->db_timeout_s : 10) * 1000;
    w.limits = (tm_pg_limits){
        .statement_ms = t_ms, .lock_ms = t_ms / 2 > 0 ? t_ms / 2 : 1, .answer_ms = t_ms + 2000};
    tm_err err = {{0}, 0};
    tm_auth *auth = NULL;
    tm_httpd *srv = NULL;
    int rc = 1;
    tm_kube_config *cfg = tm_kube_config_auto(o->kubeconfig, NULL, &err);
    if (cfg) {
        w.kube = tm_kube_new(cfg, &err);
        tm_kube_config_free(cfg);
    }
    w.reg = tm_metrics_new();
    w.m_reviews = tm_metrics_counter(w.reg, "tarema_webhook_reviews_total",
                                     "Admission reviews by result (sized, retry, untouched, "
                                     "malformed, bad_review).",
                                     TM_LABELS("result"), &err);
    if (!w.kube || !w.m_reviews ||
        (o->auth_token_file && !(auth = tm_auth_new(o->auth_token_file, &err)))) {
        tm_error("webhook not started: %s", err.msg);
        goto out;
    }
    refresh(&w);
    tm_httpd_opts ho = {.bind_addr = o->bind,
                        .port = o->port,
                        .name = "webhook",
                        .max_body = (size_t)4 << 20,
                        .health_port = o->health_port,
                        .tls_cert_file = o->tls_cert_file,
                        .tls_key_file = o->tls_key_file,
                        .client_ca_file = o->client_ca_file,
                        .auth = auth,
                        .insecure_no_auth = o->insecure_no_auth != 0};
    /* By default the API server calls without credentials, so /mutate is open (it only
     * answers; it changes nothing). With authenticate_mutate it needs them like every route. */
    if (o->authenticate_mutate && !auth && !o->client_ca_file) {
        tm_error("webhook not started: --authenticate-mutate needs --auth-token-file or "
                 "--client-ca-file (the credential the API server's admission configuration "
                 "presents)");
        goto out;
    }
    tm_httpd_route_opts mutate = {.open = !o->authenticate_mutate};
    if (!(srv = tm_httpd_start(&ho, &err)) ||
        tm_httpd_route_ex(srv, "POST", "/mutate", on_mutate, &w, &mutate, &err) < 0 ||
        tm_httpd_enable_health(srv, is_ready, &w, &err) < 0 ||
        tm_httpd_enable_metrics(srv, w.reg, &err) < 0) {
        tm_error("webhook not started: %s", err.msg);
        goto out;
    }
    tm_info("webhook serving addr=%s port=%d tls=%s mutate_auth=%s strategy=%s cold_start=%d "
            "refresh_s=%d",
            o->bind, tm_httpd_port(srv), tm_httpd_is_tls(srv) ? "yes" : "no",
            o->authenticate_mutate ? "required" : "open", sz_plan_strategy_name(o->strategy),
            o->cold_start, o->refresh_s);
    time_t next = time(NULL) + o->refresh_s, last = time(NULL);
    int notified = 0;
    while (!*stop) {
        usleep(TICK_MS * 1000);
        if (w.store && lab_store_notifications(w.store, note_workflow, &notified, &err) < 0) {
            lab_store_close(w.store);
            w.store = NULL;
        }
        /* a busy pipeline stores runs all the time: rebuild for them at most every
         * MIN_REBUILD_S (a rebuild replays every process's history) */
        time_t now = time(NULL);
        if ((notified && now - last >= MIN_REBUILD_S) || now >= next) {
            refresh(&w);
            notified = 0;
            last = time(NULL);
            next = last + o->refresh_s;
        }
    }
    tm_info("webhook stopping");
    rc = 0;
out:
    tm_httpd_free(srv);
    tm_auth_free(auth);
    table_unref(w.table);
    lab_store_close(w.store);
    tm_kube_free(w.kube);
    tm_metrics_free(w.reg);
    pthread_mutex_destroy(&w.mu);
    return rc;
}
