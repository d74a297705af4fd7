/* serve.c: `tarema-dam serve` (serve.h): the REST handlers, and one worker thread that ranks
 * stored requests, submits, follows and fails over. The ranking itself stays pure (rank.h);
 * this file only moves records between PostgreSQL, the collector and the clusters. */
#include "dam/serve.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dam/collect.h"
#include "dam/input.h"
#include "dam/rank.h"
#include "dam/report.h"
#include "dam/store.h"
#include "dam/submit.h"
#include "dam/submit_workflow.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/metrics.h"

#define REQUESTS    "/api/v1/requests"
#define ID_HEX      32
#define MAX_BODY    (4u << 20)
#define MAX_ATTEMPT 16

typedef struct server {
    dam_store *store;
    dam_federation *fed;
    tm_metrics *reg;
    tm_metric *m_accepted, *m_ranked, *m_rank_s, *m_reachable, *m_failovers, *m_submissions,
        *m_errors;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int wake;
    int poll_ms;
    double cluster_timeout_s;
    volatile sig_atomic_t *stop;
} server;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static json_t *time_json(double t) {
    char b[64];
    dam_format_time(floor(t), b, sizeof b);
    return json_string(b);
}

static void wake_worker(server *sv) {
    pthread_mutex_lock(&sv->mu);
    sv->wake = 1;
    pthread_cond_signal(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

static int new_id(char *out) {
    unsigned char b[ID_HEX / 2];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b)
        return -1;
    for (size_t i = 0; i < sizeof b; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
    out[ID_HEX] = 0;
    return 0;
}

/* The id in /api/v1/requests/ID, or NULL when the path has none or not one of ours. */
static const char *path_id(const char *path) {
    const char *p = path + strlen(REQUESTS);
    if (*p != '/')
        return NULL;
    p++;
    if (strlen(p) != ID_HEX || strspn(p, "0123456789abcdef") != ID_HEX)
        return NULL;
    return p;
}

/* ---------------------------------------------------------------------------- checking */

/* Checks a job against the federation's registry without collecting; fills its shape. */
static int check_job(server *sv, json_t *job, const json_t *submit, dam_shape *shape, tm_err *err) {
    json_t *skel = dam_federation_skeleton(sv->fed);
    dam_request *r = dam_request_new(job, skel, now_s(), err);
    json_decref(skel);
    if (!r)
        return -1;
    int rc = dam_validate(dam_request_input(r), dam_request_job(r), err);
    if (rc == 0 && shape) {
        const dam_job *j = dam_request_job(r);
        const json_t *wf = json_object_get(submit, "workflow");
        size_t pods = wf       ? dam_workflow_max_pods(wf)
                      : submit ? json_array_size(json_object_get(submit, "pods"))
                               : 1;
        if (pods == 0)
            pods = 1;
        shape->ns = NULL;
        shape->pods = (int)pods;
        shape->cpu_milli = llround(j->cores * 1000.0 / (double)pods);
        shape->mem_bytes = llround(j->memory_bytes / (double)pods);
    }
    dam_request_free(r);
    return rc;
}

/* ---------------------------------------------------------------------------- handlers */

static void on_post(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    server *sv = ud;
    static const char *const keys[] = {"job", "submit", NULL};
    json_t *body = tm_httpd_req_json(req, resp);
    if (!body)
        return;
    tm_err err = {0};
    json_t *job = json_object_get(body, "job");
    json_t *submit = json_object_get(body, "submit");
    if (!json_is_object(body)) {
        tm_httpd_error(resp, 400, "body: expected an object {\"job\": {...}}");
        goto out;
    }
    if (tm_json_check_keys(body, keys, "body", &err) < 0) {
        tm_httpd_error(resp, 400, "%s", err.msg);
        goto out;
    }
    if (!json_is_object(job)) {
        tm_httpd_error(resp, 400, "job: %s", job ? "expected an object" : "missing");
        goto out;
    }
    if (submit && json_is_null(submit))
        submit = NULL;
    if ((submit && dam_submit_check(submit, &err) < 0) ||
        check_job(sv, job, submit, NULL, &err) < 0) {
        tm_metrics_inc(sv->m_errors, (const char *[]){"bad-request"});
        tm_httpd_error(resp, 400, "%s", err.msg);
        goto out;
    }
    char id[ID_HEX + 1];
    if (new_id(id) < 0) {
        tm_httpd_error(resp, 500, "cannot draw a request id");
        goto out;
    }
    json_t *failed = json_object_get(job, "failed_on");
    json_t *rec = json_pack("{s:s,s:s,s:o,s:o,s:O,s:o}", "id", id, "state", "PENDING", "created",
                            time_json(now_s()), "updated", time_json(now_s()), "job", job,
                            "failed_on", failed ? json_deep_copy(failed) : json_array());
    if (submit)
        json_object_set(rec, "submit", submit);
    if (dam_store_insert(sv->store, rec, &err) < 0) {
        json_decref(rec);
        tm_metrics_inc(sv->m_errors, (const char *[]){"database"});
        tm_httpd_error(resp, 503, "request not accepted: %s", err.msg);
        goto out;
    }
    json_decref(rec);
    tm_metrics_inc(sv->m_accepted, NULL);
    char loc[128];
    snprintf(loc, sizeof loc, "%s/%s", REQUESTS, id);
    tm_httpd_header_set(resp, "Location", loc);
    tm_httpd_json(resp, 202, json_pack("{s:s,s:s}", "id", id, "state", "PENDING"));
    wake_worker(sv);
out:
    json_decref(body);
}

/* The live (not DELETED) record the request's path names (its id in *id_out when asked), or
 * NULL after answering 404 or 503. */
static json_t *live_record(server *sv, const tm_httpd_req *req, tm_httpd_resp *resp,
                           const char **id_out) {
    const char *id = path_id(req->path);
    if (!id) {
        tm_httpd_error(resp, 404, "no request %s", req->path);
        return NULL;
    }
    tm_err err = {0};
    int found;
    json_t *rec = dam_store_get(sv->store, id, &found, &err);
    if (!rec && found) {
        tm_httpd_error(resp, 503, "%s", err.msg);
        return NULL;
    }
    if (!rec || strcmp(tm_json_str(rec, "state", ""), "DELETED") == 0) {
        json_decref(rec);
        tm_httpd_error(resp, 404, "no request %s", id);
        return NULL;
    }
    if (id_out)
        *id_out = id;
    return rec;
}

static void on_get(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    server *sv = ud;
    json_t *rec = live_record(sv, req, resp, NULL);
    if (!rec)
        return;
    tm_httpd_json(resp, 200, rec);
}

static int submission_running(const json_t *rec) {
    return strcmp(tm_json_str(rec, "submission.state", ""), "RUNNING") == 0;
}

static void on_delete(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    server *sv = ud;
    const char *id;
    json_t *rec = live_record(sv, req, resp, &id);
    if (!rec)
        return;
    tm_err err = {0};
    int rc;
    if (submission_running(rec)) {
        /* Its pods run somewhere: the worker deletes them, then the row. */
        json_object_set_new(rec, "state", json_string("DELETED"));
        rc = dam_store_update(sv->store, rec, &err);
        wake_worker(sv);
    } else {
        rc = dam_store_delete(sv->store, id, &err);
    }
    json_decref(rec);
    if (rc < 0)
        tm_httpd_error(resp, 503, "%s", err.msg);
    else
        tm_httpd_json(resp, 200, json_pack("{s:s}", "deleted", id));
}

static void on_clusters(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    server *sv = ud;
    tm_err err = {0};
    json_t *doc = dam_collect(sv->fed, NULL, now_s(), sv->cluster_timeout_s, &err);
    if (!doc)
        tm_httpd_error(resp, 500, "%s", err.msg);
    else
        tm_httpd_json(resp, 200, doc);
}

static bool is_ready(void *ud, char *reason, size_t n) {
    server *sv = ud;
    if (dam_store_ping(sv->store))
        return true;
    snprintf(reason, n, "the database does not answer");
    return false;
}

/* ---------------------------------------------------------------------------- the worker */

static void set_state(json_t *rec, const char *state) {
    json_object_set_new(rec, "state", json_string(state));
    json_object_set_new(rec, "updated", time_json(now_s()));
}

/* Collects, ranks the record's job (its failed_on included) and stores the ranking in
 * rec.result. Returns the chosen cluster's index in the federation, -1 when none qualifies,
 * -2 when the job cannot be ranked (err). */
static int rank_record(server *sv, json_t *rec, tm_err *err) {
    json_t *job = json_deep_copy(json_object_get(rec, "job"));
    json_t *failed = json_object_get(rec, "failed_on");
    if (json_array_size(failed))
        json_object_set(job, "failed_on", failed);
    dam_shape shape;
    if (check_job(sv, job, json_object_get(rec, "submit"), &shape, err) < 0) {
        json_decref(job);
        return -2;
    }
    double t0 = now_s();
    json_t *doc = dam_collect(sv->fed, &shape, t0, sv->cluster_timeout_s, err);
    dam_request *r = doc ? dam_request_new(job, doc, t0, err) : NULL;
    json_decref(job);
    int chosen = -2;
    dam_ranking rk;
    if (r && dam_rank(dam_request_input(r), dam_request_job(r), &rk, err) == 0) {
        const dam_input *in = dam_request_input(r);
        json_t *res = dam_ranking_json(in, dam_request_job(r), &rk);
        json_object_set_new(rec, "result", res);
        chosen = rk.chosen >= 0 ? dam_federation_find(sv->fed, in->clusters[rk.chosen].name) : -1;
        for (size_t i = 0; i < in->nclusters; i++)
            tm_metrics_set(sv->m_reachable, (const char *[]){in->clusters[i].name},
                           in->clusters[i].unreachable ? 0 : 1);
        tm_metrics_inc(sv->m_ranked, (const char *[]){chosen >= 0 ? "chosen" : "none"});
        tm_metrics_observe(sv->m_rank_s, NULL, now_s() - t0);
    }
    dam_request_free(r);
    json_decref(doc);
    return chosen;
}

/* The request's Workflow (submit.workflow) or NULL when it submits pods. */
static const json_t *workflow_of(const json_t *rec) {
    return tm_json_path(rec, "submit.workflow");
}

/* Creates attempt `attempt` of rec on a cluster: its pods or its Workflow. */
static int create_attempt(tm_kube *k, const json_t *rec, int attempt, const char *ns, tm_err *err) {
    const char *id = tm_json_str(rec, "id", "");
    const json_t *wf = workflow_of(rec);
    json_t *objs = wf ? dam_workflow_object(wf, id, attempt, ns)
                      : dam_submit_pods(json_object_get(rec, "submit"), id, attempt, ns);
    int rc = wf ? dam_workflow_create(k, objs, err) : dam_submit_create(k, objs, err);
    json_decref(objs);
    return rc;
}

/* Deletes the running attempt of rec (the last one) in ns: its pods, or its Workflow, which
 * cancels it (the planner's objects are owned by the Workflow). */
static int delete_attempt(tm_kube *k, const json_t *rec, const char *ns, tm_err *err) {
    const char *id = tm_json_str(rec, "id", "");
    if (!workflow_of(rec))
        return dam_submit_delete(k, ns, id, err);
    char name[64];
    dam_workflow_name(id, (int)json_array_size(tm_json_path(rec, "submission.attempts")), name,
                      sizeof name);
    return dam_workflow_delete(k, ns, name, err);
}

static json_t *attempts_of(json_t *sub) {
    json_t *a = json_object_get(sub, "attempts");
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(sub, "attempts", a);
    }
    return a;
}

/* Submits rec's pods to cluster ci; on a creation failure the cluster is banned and the next
 * is tried. Leaves submission RUNNING on a cluster, or FAILED with the reason. */
static void submit_to(server *sv, json_t *rec, int ci) {
    json_t *sub = json_object_get(rec, "submission");
    if (!sub) {
        sub = json_object();
        json_object_set_new(rec, "submission", sub);
    }
    json_t *attempts = attempts_of(sub);
    while (ci >= 0) {
        const char *name = dam_federation_name(sv->fed, (size_t)ci);
        int attempt = (int)json_array_size(attempts) + 1;
        tm_err err = {0};
        tm_kube *k = dam_federation_client(sv->fed, (size_t)ci, &err);
        int rc =
            k ? create_attempt(k, rec, attempt, dam_federation_namespace(sv->fed, (size_t)ci), &err)
              : -1;
        tm_kube_free(k);
        json_t *a = json_pack("{s:s,s:o}", "cluster", name, "submitted", time_json(now_s()));
        if (workflow_of(rec)) {
            char wname[64];
            dam_workflow_name(tm_json_str(rec, "id", ""), attempt, wname, sizeof wname);
            json_object_set_new(a, "workflow", json_string(wname));
        }
        json_array_append_new(attempts, a);
        if (rc == 0) {
            json_object_set_new(a, "outcome", json_string("running"));
            json_object_set_new(sub, "state", json_string("RUNNING"));
            json_object_set_new(sub, "cluster", json_string(name));
            tm_info("dam: request %s submitted to %s (attempt %d)", tm_json_str(rec, "id", ""),
                    name, attempt);
            return;
        }
        json_object_set_new(a, "outcome", json_string("failed"));
        json_object_set_new(a, "reason", json_string(err.msg));
        tm_warn("dam: request %s: submitting to %s failed: %s", tm_json_str(rec, "id", ""), name,
                err.msg);
        json_array_append_new(json_object_get(rec, "failed_on"), json_string(name));
        tm_metrics_inc(sv->m_failovers, NULL);
        if (attempt >= MAX_ATTEMPT)
            break;
        tm_err re = {0};
        ci = rank_record(sv, rec, &re);
    }
    json_object_set_new(sub, "state", json_string("FAILED"));
    json_object_set_new(sub, "cluster", json_null());
    json_object_set_new(sub, "reason", json_string("no cluster left that qualifies"));
    tm_metrics_inc(sv->m_submissions, (const char *[]){"failed"});
}

/* Whether the request is still there and not being deleted (a DELETE may come while it is
 * ranked: its pods must then not be created). On a database error, yes: the update after
 * will tell. */
static int still_wanted(server *sv, const json_t *rec) {
    tm_err err = {0};
    int found;
    json_t *now = dam_store_get(sv->store, tm_json_str(rec, "id", ""), &found, &err);
    int wanted = found && (!now || strcmp(tm_json_str(now, "state", ""), "DELETED") != 0);
    json_decref(now);
    return wanted;
}

static void work_pending(server *sv, json_t *rec) {
    tm_err err = {0};
    int ci = rank_record(sv, rec, &err);
    if (ci == -2) {
        set_state(rec, "ERROR");
        json_object_set_new(rec, "error", json_string(err.msg));
        tm_warn("dam: request %s cannot be ranked: %s", tm_json_str(rec, "id", ""), err.msg);
    } else {
        set_state(rec, "DONE");
        if (json_object_get(rec, "submit") && !still_wanted(sv, rec)) {
            tm_info("dam: request %s was deleted while it was ranked: not submitted",
                    tm_json_str(rec, "id", ""));
            return;
        }
        if (json_object_get(rec, "submit")) {
            if (ci >= 0) {
                submit_to(sv, rec, ci);
            } else {
                json_object_set_new(rec, "submission",
                                    json_pack("{s:s,s:n,s:s,s:[]}", "state", "FAILED", "cluster",
                                              "reason", "no cluster qualifies", "attempts"));
                tm_metrics_inc(sv->m_submissions, (const char *[]){"failed"});
            }
        }
    }
    if (dam_store_update(sv->store, rec, &err) < 0)
        tm_warn("dam: request %s: %s (retried)", tm_json_str(rec, "id", ""), err.msg);
}

static void work_running(server *sv, json_t *rec) {
    json_t *sub = json_object_get(rec, "submission");
    const char *name = tm_json_str(sub, "cluster", "");
    int ci = dam_federation_find(sv->fed, name);
    const char *id = tm_json_str(rec, "id", "");
    size_t expected = json_array_size(tm_json_path(rec, "submit.pods"));
    tm_err err = {0};
    dam_pods_state st = DAM_PODS_FAILED;
    char reason[512] = "the cluster is no longer in the federation";
    tm_kube *k = ci >= 0 ? dam_federation_client(sv->fed, (size_t)ci, &err) : NULL;
    const char *ns = ci >= 0 ? dam_federation_namespace(sv->fed, (size_t)ci) : "";
    char wname[64];
    dam_workflow_name(id, (int)json_array_size(json_object_get(sub, "attempts")), wname,
                      sizeof wname);
    if (ci >= 0 && (!k || (workflow_of(rec)
                               ? dam_workflow_follow(k, ns, wname, &st, reason, sizeof reason, &err)
                               : dam_submit_follow(k, ns, id, expected, &st, reason, sizeof reason,
                                                   &err)) < 0)) {
        /* Cannot look now (the API server may be restarting): look again later. */
        tm_debug("dam: request %s: following on %s: %s", id, name, err.msg);
        tm_kube_free(k);
        return;
    }
    if (st == DAM_PODS_RUNNING) {
        tm_kube_free(k);
        return;
    }
    json_t *attempts = attempts_of(sub);
    json_t *last = json_array_get(attempts, json_array_size(attempts) - 1);
    if (st == DAM_PODS_SUCCEEDED) {
        json_object_set_new(last, "outcome", json_string("succeeded"));
        json_object_set_new(sub, "state", json_string("SUCCEEDED"));
        tm_metrics_inc(sv->m_submissions, (const char *[]){"succeeded"});
        tm_info("dam: request %s succeeded on %s", id, name);
    } else {
        json_object_set_new(last, "outcome", json_string("failed"));
        json_object_set_new(last, "reason", json_string(reason));
        tm_warn("dam: request %s failed on %s (%s): failing over", id, name, reason);
        if (k && delete_attempt(k, rec, ns, &err) < 0)
            tm_warn("dam: %s", err.msg);
        json_array_append_new(json_object_get(rec, "failed_on"), json_string(name));
        tm_metrics_inc(sv->m_failovers, NULL);
        tm_err re = {0};
        int next = (int)json_array_size(attempts) >= MAX_ATTEMPT ? -1 : rank_record(sv, rec, &re);
        submit_to(sv, rec, next);
    }
    tm_kube_free(k);
    json_object_set_new(rec, "updated", time_json(now_s()));
    if (dam_store_update(sv->store, rec, &err) < 0)
        tm_warn("dam: request %s: %s (retried)", id, err.msg);
}

static void work_deleted(server *sv, json_t *rec) {
    const char *id = tm_json_str(rec, "id", "");
    tm_err err = {0};
    if (submission_running(rec)) {
        int ci = dam_federation_find(sv->fed, tm_json_str(rec, "submission.cluster", ""));
        if (ci >= 0) {
            tm_kube *k = dam_federation_client(sv->fed, (size_t)ci, &err);
            int rc = k ? delete_attempt(k, rec, dam_federation_namespace(sv->fed, (size_t)ci), &err)
                       : -1;
            tm_kube_free(k);
            if (rc < 0) {
                tm_warn("dam: request %s: %s (retried)", id, err.msg);
                return;
            }
        }
    }
    if (dam_store_delete(sv->store, id, &err) < 0)
        tm_warn("dam: request %s: %s (retried)", id, err.msg);
}

static void *worker(void *arg) {
    server *sv = arg;
    while (!*sv->stop) {
        tm_err err = {0};
        json_t *active = dam_store_active(sv->store, &err);
        if (!active)
            tm_warn("dam: reading the requests: %s", err.msg);
        size_t i;
        json_t *rec;
        json_array_foreach(active, i, rec) {
            if (*sv->stop)
                break;
            const char *state = tm_json_str(rec, "state", "");
            if (strcmp(state, "PENDING") == 0)
                work_pending(sv, rec);
            else if (strcmp(state, "DELETED") == 0)
                work_deleted(sv, rec);
            else
                work_running(sv, rec);
        }
        json_decref(active);
        pthread_mutex_lock(&sv->mu);
        if (!sv->wake && !*sv->stop) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long long ns = until.tv_nsec + (long long)sv->poll_ms * 1000000LL;
            until.tv_sec += ns / 1000000000LL;
            until.tv_nsec = ns % 1000000000LL;
            pthread_cond_timedwait(&sv->cv, &sv->mu, &until);
        }
        sv->wake = 0;
        pthread_mutex_unlock(&sv->mu);
    }
    return NULL;
}

/* ---------------------------------------------------------------------------- main */

static int make_metrics(server *sv, tm_err *err) {
    static const double bounds[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    sv->reg = tm_metrics_new();
    return (sv->m_accepted =
                tm_metrics_counter(sv->reg, "tarema_dam_requests_accepted_total",
                                   "Requests stored and acknowledged (202)", NULL, err)) &&
                   (sv->m_errors = tm_metrics_counter(sv->reg, "tarema_dam_requests_refused_total",
                                                      "Requests refused",
                                                      (const char *[]){"reason", NULL}, err)) &&
                   (sv->m_ranked =
                        tm_metrics_counter(sv->reg, "tarema_dam_rankings_total",
                                           "Rankings computed, by whether a cluster was chosen",
                                           (const char *[]){"outcome", NULL}, err)) &&
                   (sv->m_rank_s =
                        tm_metrics_histogram(sv->reg, "tarema_dam_rank_duration_seconds",
                                             "Collecting every cluster and ranking one request",
                                             NULL, bounds, sizeof bounds / sizeof *bounds, err)) &&
                   (sv->m_reachable =
                        tm_metrics_gauge(sv->reg, "tarema_dam_cluster_reachable",
                                         "1 when the last collection reached the cluster, else 0",
                                         (const char *[]){"cluster", NULL}, err)) &&
                   (sv->m_failovers = tm_metrics_counter(
                        sv->reg, "tarema_dam_failovers_total",
                        "Submissions that failed on a cluster and moved on", NULL, err)) &&
                   (sv->m_submissions = tm_metrics_counter(sv->reg, "tarema_dam_submissions_total",
                                                           "Finished submissions",
                                                           (const char *[]){"outcome", NULL}, err))
               ? 0
               : -1;
}

int dam_serve_main(const dam_serve_opts *o, volatile sig_atomic_t *stop) {
    server sv = {.stop = stop,
                 .poll_ms = o->poll_ms > 0 ? o->poll_ms : 2000,
                 .cluster_timeout_s = o->cluster_timeout_s};
    pthread_mutex_init(&sv.mu, NULL);
    pthread_cond_init(&sv.cv, NULL);
    tm_err err = {0};
    tm_auth *auth = NULL;
    tm_httpd *srv = NULL;
    pthread_t th;
    int started = 0, rc = 1;
    int t_ms = (o->db_timeout_s > 0 ? o->db_timeout_s : 10) * 1000;
    if (!(sv.fed = dam_federation_load(o->federation, &err)) ||
        !(sv.store = dam_store_open(o->db, t_ms, &err)) || make_metrics(&sv, &err) < 0 ||
        (o->auth_token_file && !(auth = tm_auth_new(o->auth_token_file, &err)))) {
        tm_error("tarema-dam serve: %s", err.msg);
        goto out;
    }
    tm_httpd_opts ho = {.bind_addr = o->bind,
                        .port = o->port,
                        .max_body = MAX_BODY,
                        .health_port = o->health_port,
                        .tls_cert_file = o->tls_cert_file,
                        .tls_key_file = o->tls_key_file,
                        .client_ca_file = o->client_ca_file,
                        .auth = auth,
                        .insecure_no_auth = o->insecure_no_auth,
                        .name = "dam"};
    if (!(srv = tm_httpd_start(&ho, &err)) ||
        tm_httpd_route(srv, "POST", REQUESTS, on_post, &sv, &err) < 0 ||
        tm_httpd_route(srv, "GET", REQUESTS "/*", on_get, &sv, &err) < 0 ||
        tm_httpd_route(srv, "DELETE", REQUESTS "/*", on_delete, &sv, &err) < 0 ||
        tm_httpd_route(srv, "GET", "/api/v1/clusters", on_clusters, &sv, &err) < 0 ||
        tm_httpd_enable_health(srv, is_ready, &sv, &err) < 0 ||
        tm_httpd_enable_metrics(srv, sv.reg, &err) < 0) {
        tm_error("tarema-dam serve: %s", err.msg);
        goto out;
    }
    if (pthread_create(&th, NULL, worker, &sv) != 0) {
        tm_error("tarema-dam serve: cannot start the worker thread");
        goto out;
    }
    started = 1;
    tm_info("tarema-dam serve: listening on %s:%d (%s%s), %zu clusters, health port %d",
            o->bind ? o->bind : "127.0.0.1", tm_httpd_port(srv),
            tm_httpd_is_tls(srv) ? "https" : "http", tm_httpd_has_auth(srv) ? ", auth" : "",
            dam_federation_size(sv.fed), tm_httpd_health_port(srv));
    while (!*stop) {
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    rc = 0;
out:
    tm_httpd_free(srv); /* no handler runs after this */
    if (started) {
        wake_worker(&sv);
        pthread_join(th, NULL);
    }
    tm_auth_free(auth);
    dam_store_close(sv.store);
    dam_federation_free(sv.fed);
    tm_metrics_free(sv.reg);
    pthread_cond_destroy(&sv.cv);
    pthread_mutex_destroy(&sv.mu);
    return rc;
}
