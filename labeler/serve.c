/* serve.c: see serve.h.
 *
 * Threads. libmicrohttpd runs every weblog connection on a thread of its own (on_weblog).
 * Everything else runs on the main thread, which drives the tm_kube event loop: the Node
 * informer, database reconnects, reading NOTIFYs, draining the spool, labelling and publishing
 * TaskProfiles. The two sides share only what `mu` guards: the database connection (libpq
 * allows one thread at a time on it) and the dirty set. A handler that stored a run wakes the
 * loop with tm_kube_wakeup, the one loop call kube.h allows from other threads. Everything
 * below "loop thread only" is never touched by handlers, and the loop never holds mu across a
 * Kubernetes call, so a slow API server cannot stall the weblog. */
#include "labeler/serve.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labeler/groupsrc.h"
#include "labeler/spool.h"
#include "labeler/store.h"
#include "labeler/taskprofile.h"
#include "labeler/weblog.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "lib/metrics.h"

/* The loop wakes at least this often to reconnect the database and drain the spool. */
#define TICK_MS 500
/* After a failed relabel (API server or database trouble), wait this long before retrying. */
#define RETRY_S 2

/* Which workflows to look up in the database before the next relabel. */
typedef enum {
    SCAN_NONE,  /* only those in the dirty set */
    SCAN_SINCE, /* also those with runs stored since `since` (missed NOTIFYs after a reconnect) */
    SCAN_ALL,   /* every workflow (start, node groups changed, resync) */
} scan_mode;

typedef struct server {
    const lab_serve_opts *o;
    tm_metrics *reg;
    tm_metric *m_events, *m_pending, *m_db_up, *m_profiles, *m_group_changes;
    tm_kube *kube;    /* set before the HTTP server starts; handlers only call tm_kube_wakeup */
    lab_spool *spool; /* thread-safe on its own */
    /* Shared with the handlers, under mu. */
    pthread_mutex_t mu;
    lab_store *store; /* NULL while the database is unreachable */
    json_t *dirty;    /* workflow -> true: new runs since it was last labelled */
    scan_mode scan;
    char since[64]; /* server time for SCAN_SINCE */
    /* Loop thread only. */
    const char *ns;
    lab_node_watch *watch; /* NULL with --groups */
    lab_groups groups;     /* the groups labels are computed against */
    int have_groups, file_loaded;
    char groups_err[TM_ERR_MAX]; /* last group problem logged, to log each once */
    json_t *published;           /* TaskProfile name -> status last published (minus lastUpdate) */
    int db_down_logged;
    time_t last_connect, next_resync, retry_at;
} server;

static void wake(server *sv) {
    if (sv->kube)
        tm_kube_wakeup(sv->kube);
}

typedef enum { EV_STORED, EV_REJECTED, EV_RETRY } ev_result;

/* Stores one event. Called with sv->mu held and sv->store set. */
static ev_result process_event(server *sv, const lab_weblog_event *ev, tm_err *err) {
    lab_store *s = sv->store;
    if (ev->kind == LAB_WEBLOG_STARTED) {
        const char *wf = ev->workflow[0] ? ev->workflow : sv->o->default_workflow;
        if (!wf || !*wf) {
            tm_err_set(err,
                       "run %s: started event names no workflow (metadata.workflow.%s) "
                       "and there is no --default-workflow",
                       ev->run_name, sv->o->workflow_key ? sv->o->workflow_key : "manifest.name");
            return EV_REJECTED;
        }
        if (lab_store_put_weblog_run(s, ev->run_id, ev->run_name, wf, ev->utc_ms, err) < 0)
            return lab_store_retryable(s, err) ? EV_RETRY : EV_REJECTED;
        return EV_STORED;
    }
    lab_task_run run = ev->run;
    int found = lab_store_weblog_workflow(s, ev->run_id, run.workflow, sizeof run.workflow, err);
    if (found < 0)
        return lab_store_retryable(s, err) ? EV_RETRY : EV_REJECTED;
    if (!found) {
        if (!sv->o->default_workflow) {
            tm_err_set(err,
                       "run %s (%s): no started event seen for this run and no "
                       "--default-workflow",
                       ev->run_name, ev->run_id);
            return EV_REJECTED;
        }
        snprintf(run.workflow, sizeof run.workflow, "%s", sv->o->default_workflow);
    }
    /* The store NOTIFYs; the loop reads that and relabels the workflow. */
    if (lab_store_put_runs(s, &run, 1, "weblog", NULL, NULL, err) < 0)
        return lab_store_retryable(s, err) ? EV_RETRY : EV_REJECTED;
    return EV_STORED;
}

static void drop_store(server *sv, const char *why) {
    tm_warn("database unavailable, spooling events: %s", why);
    lab_store_close(sv->store);
    sv->store = NULL;
    tm_metrics_set(sv->m_db_up, NULL, 0);
}

/* The event label of the metric: Nextflow's event names, anything else "other", so a client
 * inventing names cannot grow the series (and the labeler's memory) without bound. */
static void count_event(server *sv, const char *event, const char *result) {
    static const char *const known[] = {"started",         "process_submitted",
                                        "process_started", "process_completed",
                                        "error",           "completed"};
    const char *label = "other";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(event, known[i]) == 0)
            label = known[i];
    tm_metrics_inc(sv->m_events, TM_LABELS(label, result));
}

static void on_weblog(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    server *sv = ud;
    json_t *body = tm_httpd_req_json(req, resp);
    if (!body)
        return;
    lab_weblog_event *ev = malloc(sizeof *ev);
    tm_err err = {{0}, 0};
    if (!ev) {
        json_decref(body);
        tm_httpd_error(resp, 503, "out of memory");
        return;
    }
    if (lab_weblog_parse(body, sv->o->workflow_key, ev, &err) < 0) {
        count_event(sv, "invalid", "rejected");
        tm_httpd_error(resp, 400, "%s", err.msg);
        goto out;
    }
    if (ev->kind == LAB_WEBLOG_OTHER) {
        count_event(sv, ev->event, "ignored");
        tm_httpd_json(resp, 200, json_pack("{s:b}", "ignored", 1));
        goto out;
    }
    pthread_mutex_lock(&sv->mu);
    if (sv->store && lab_spool_pending(sv->spool) == 0) {
        ev_result r = process_event(sv, ev, &err);
        if (r == EV_STORED) {
            pthread_mutex_unlock(&sv->mu);
            wake(sv);
            count_event(sv, ev->event, "stored");
            tm_httpd_json(resp, 200, json_pack("{s:b}", "stored", 1));
            goto out;
        }
        if (r == EV_REJECTED) {
            pthread_mutex_unlock(&sv->mu);
            count_event(sv, ev->event, "rejected");
            tm_warn("weblog event rejected: %s", err.msg);
            tm_httpd_error(resp, 422, "%s", err.msg);
            goto out;
        }
        drop_store(sv, err.msg);
    }
    char *line = json_dumps(body, JSON_COMPACT);
    int rc = line ? lab_spool_append(sv->spool, line, strlen(line), &err) : -1;
    free(line);
    tm_metrics_set(sv->m_pending, NULL, (double)lab_spool_pending(sv->spool));
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0) {
        count_event(sv, ev->event, "failed");
        tm_error("weblog event lost: database down and spool failed: %s", err.msg);
        tm_httpd_error(resp, 503, "database unavailable and spool failed: %s", err.msg);
    } else {
        count_event(sv, ev->event, "spooled");
        tm_httpd_json(resp, 202, json_pack("{s:b}", "spooled", 1));
    }
out:
    free(ev);
    json_decref(body);
}

/* Stores spooled events in order, at most `max` per call so handlers are not starved. */
static void drain_spool(server *sv, int max) {
    pthread_mutex_lock(&sv->mu);
    lab_weblog_event *ev = malloc(sizeof *ev);
    for (int i = 0; ev && sv->store && i < max; i++) {
        char *rec;
        tm_err err = {{0}, 0};
        int got = lab_spool_peek(sv->spool, &rec, &err);
        if (got <= 0) {
            if (got < 0)
                tm_error("%s", err.msg);
            break;
        }
        json_t *body = json_loads(rec, 0, NULL);
        ev_result r = EV_REJECTED;
        if (!body || lab_weblog_parse(body, sv->o->workflow_key, ev, &err) < 0)
            tm_error("spooled event unreadable, dropped: %.200s", rec);
        else
            r = process_event(sv, ev, &err);
        json_decref(body);
        free(rec);
        if (r == EV_RETRY) {
            drop_store(sv, err.msg);
            break;
        }
        if (r == EV_REJECTED)
            tm_error("spooled event rejected, dropped: %s", err.msg);
        if (lab_spool_ack(sv->spool, &err) < 0) {
            tm_error("%s", err.msg);
            break;
        }
    }
    free(ev);
    tm_metrics_set(sv->m_pending, NULL, (double)lab_spool_pending(sv->spool));
    pthread_mutex_unlock(&sv->mu);
}

/* ---- loop thread ------------------------------------------------------------------------ */

static void raise_scan(server *sv, scan_mode m) {
    if (m > sv->scan)
        sv->scan = m;
}

static void connect_db(server *sv) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(sv->o->db, &err);
    if (s && lab_store_listen(s, &err) < 0) {
        lab_store_close(s);
        s = NULL;
    }
    if (!s) {
        /* Say it once per outage, then quietly retry every second. */
        if (!sv->db_down_logged)
            tm_warn("database unavailable, events will be spooled until it is back: %s", err.msg);
        else
            tm_debug("database still unavailable: %s", err.msg);
        sv->db_down_logged = 1;
        return;
    }
    sv->db_down_logged = 0;
    pthread_mutex_lock(&sv->mu);
    sv->store = s;
    /* Runs other writers stored while we were not listening sent NOTIFYs we never got. */
    raise_scan(sv, SCAN_SINCE);
    pthread_mutex_unlock(&sv->mu);
    tm_metrics_set(sv->m_db_up, NULL, 1);
    tm_info("database connected, schema up to date, listening for new runs");
}

/* Called with mu held, from lab_store_notifications. */
static void on_notified(void *ud, const char *workflow) {
    server *sv = ud;
    json_object_set_new(sv->dirty, workflow, json_true());
}

/* Notices a lost connection, reconnects at most once a second, collects NOTIFYs. */
static void maintain_db(server *sv, time_t now) {
    tm_err err = {{0}, 0};
    pthread_mutex_lock(&sv->mu);
    if (sv->store && lab_store_notifications(sv->store, on_notified, sv, &err) < 0)
        drop_store(sv, err.msg);
    int have_store = sv->store != NULL;
    pthread_mutex_unlock(&sv->mu);
    if (!have_store && now - sv->last_connect >= 1) {
        sv->last_connect = now;
        connect_db(sv);
    }
}

static void groups_problem(server *sv, const char *msg) {
    if (strcmp(sv->groups_err, msg) != 0)
        tm_warn("node groups unusable, labels keep their last state: %s", msg);
    snprintf(sv->groups_err, sizeof sv->groups_err, "%s", msg);
}

/* Takes new node groups from the informer (or the --groups file); a real change relabels
 * every workflow. */
static void update_groups(server *sv) {
    tm_err err = {{0}, 0};
    lab_groups g;
    int rc;
    if (sv->watch) {
        rc = lab_node_watch_poll(sv->watch, &g, &err);
    } else {
        if (sv->file_loaded)
            return;
        rc = lab_groups_load_file(sv->o->groups_file, &g, &err) == 0 ? 1 : -1;
        sv->file_loaded = rc == 1;
    }
    lab_classes classes[LAB_NFEATURES];
    if (rc == 1 && lab_groups_all_classes(&g, classes, &err) < 0)
        rc = -1;
    if (rc < 0)
        groups_problem(sv, err.msg);
    if (rc != 1)
        return;
    sv->groups_err[0] = '\0';
    if (sv->have_groups && lab_groups_equal(&g, &sv->groups))
        return;
    tm_info("node groups %s groups=%d: relabelling every workflow",
            sv->have_groups ? "changed" : "known", g.n);
    if (sv->have_groups)
        tm_metrics_inc(sv->m_group_changes, NULL);
    sv->groups = g;
    sv->have_groups = 1;
    sv->retry_at = 0;
    pthread_mutex_lock(&sv->mu);
    raise_scan(sv, SCAN_ALL);
    pthread_mutex_unlock(&sv->mu);
}

static void now_rfc3339(char *buf, size_t size) {
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* Publishes one process's status unless it is what was last published. */
static int publish_one(server *sv, const char *wf, const lab_labeling *l,
                       const lab_process_label *p, const char *now, tm_err *err) {
    json_t *st = lab_taskprofile_status(l, p, now);
    json_t *cmp = json_deep_copy(st);
    json_object_del(cmp, "lastUpdate");
    char *text = json_dumps(cmp, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(cmp);
    char name[256];
    lab_taskprofile_name(wf, p->process, name, sizeof name);
    const char *prev = json_string_value(json_object_get(sv->published, name));
    int rc = 0;
    if (!prev || !text || strcmp(prev, text) != 0) {
        rc = lab_taskprofile_publish(sv->kube, sv->ns, wf, p->process, st, err);
        tm_metrics_inc(sv->m_profiles, TM_LABELS(rc < 0 ? "error" : "updated"));
        if (rc == 0 && text)
            json_object_set_new(sv->published, name, json_string(text));
        if (rc == 0)
            tm_debug("published TaskProfile name=%s workflow=%s", name, wf);
    }
    free(text);
    json_decref(st);
    return rc;
}

/* Labels one workflow and publishes the TaskProfiles whose status changed. */
static int relabel_workflow(server *sv, const char *wf, const lab_classes *classes, tm_err *err) {
    lab_samples smp;
    pthread_mutex_lock(&sv->mu);
    int rc = sv->store ? lab_store_samples(sv->store, wf, &smp, err)
                       : tm_err_set(err, "database unavailable");
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0)
        return -1;
    lab_labeling *l = smp.n ? lab_label_compute(smp.v, smp.n, classes, err) : NULL;
    if (smp.n && !l)
        rc = -1;
    char now[32];
    now_rfc3339(now, sizeof now);
    for (size_t i = 0; l && i < l->nprocs && rc == 0; i++)
        rc = publish_one(sv, wf, l, &l->procs[i], now, err);
    lab_labeling_free(l);
    lab_samples_free(&smp);
    return rc;
}

/* Resolves a pending scan into the dirty set. Called with mu held; -1 when the database
 * cannot answer now (the scan stays pending). */
static int run_scan(server *sv, tm_err *err) {
    if (sv->scan == SCAN_NONE)
        return 0;
    if (!sv->store)
        return tm_err_set(err, "database unavailable");
    char now[64] = "";
    char **changed =
        lab_store_changed_workflows(sv->store, sv->scan == SCAN_ALL ? "" : sv->since, now, err);
    if (!changed) {
        if (lab_store_retryable(sv->store, err))
            drop_store(sv, err->msg);
        return -1;
    }
    for (char **p = changed; *p; p++)
        json_object_set_new(sv->dirty, *p, json_true());
    lab_strv_free(changed);
    snprintf(sv->since, sizeof sv->since, "%s", now);
    sv->scan = SCAN_NONE;
    return 0;
}

/* Relabels the dirty workflows; failed ones stay dirty and are retried after RETRY_S. */
static void relabel(server *sv, time_t now) {
    if (!sv->have_groups || now < sv->retry_at)
        return;
    tm_err err = {{0}, 0};
    lab_classes classes[LAB_NFEATURES];
    if (lab_groups_all_classes(&sv->groups, classes, &err) < 0)
        return; /* update_groups only keeps usable groups */
    pthread_mutex_lock(&sv->mu);
    int rc = run_scan(sv, &err);
    json_t *pending = sv->dirty;
    sv->dirty = json_object();
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0)
        tm_debug("labels not refreshed yet: %s", err.msg);
    const char *wf;
    json_t *v;
    json_t *failed = json_object();
    json_object_foreach(pending, wf, v) {
        if (relabel_workflow(sv, wf, classes, &err) < 0) {
            tm_warn("labels of workflow %s not published, retrying in %d s: %s", wf, RETRY_S,
                    err.msg);
            json_object_set_new(failed, wf, json_true());
        }
    }
    json_decref(pending);
    if (rc < 0 || json_object_size(failed) > 0)
        sv->retry_at = now + RETRY_S;
    pthread_mutex_lock(&sv->mu);
    json_object_update(sv->dirty, failed);
    pthread_mutex_unlock(&sv->mu);
    json_decref(failed);
}

/* The safety net: relabel and republish everything, and re-read the --groups file. */
static void resync(server *sv, time_t now) {
    sv->next_resync = now + sv->o->resync_s;
    json_object_clear(sv->published);
    sv->file_loaded = 0;
    pthread_mutex_lock(&sv->mu);
    raise_scan(sv, SCAN_ALL);
    pthread_mutex_unlock(&sv->mu);
}

static void tick(server *sv) {
    time_t now = time(NULL);
    maintain_db(sv, now);
    drain_spool(sv, 500);
    if (!sv->kube)
        return;
    if (now >= sv->next_resync)
        resync(sv, now);
    update_groups(sv);
    relabel(sv, now);
}

static bool is_ready(void *ud, char *reason, size_t size) {
    (void)ud, (void)reason, (void)size;
    return true; /* events are accepted durably whether or not the database is up */
}

static int setup_metrics(server *sv, tm_err *err) {
    sv->reg = tm_metrics_new();
    sv->m_events = tm_metrics_counter(sv->reg, "tarema_labeler_weblog_events_total",
                                      "Weblog events by event type and outcome "
                                      "(stored, spooled, ignored, rejected, failed).",
                                      TM_LABELS("event", "result"), err);
    sv->m_pending = tm_metrics_gauge(sv->reg, "tarema_labeler_spool_pending",
                                     "Events in the spool waiting for the database.", NULL, err);
    sv->m_db_up = tm_metrics_gauge(sv->reg, "tarema_labeler_database_up",
                                   "1 when the labeler is connected to PostgreSQL.", NULL, err);
    sv->m_profiles =
        tm_metrics_counter(sv->reg, "tarema_labeler_taskprofile_updates_total",
                           "TaskProfile status updates by result.", TM_LABELS("result"), err);
    sv->m_group_changes =
        tm_metrics_counter(sv->reg, "tarema_labeler_node_group_changes_total",
                           "Node group changes that relabelled every workflow.", NULL, err);
    return sv->m_events && sv->m_pending && sv->m_db_up && sv->m_profiles && sv->m_group_changes
               ? 0
               : -1;
}

/* The client and, without --groups, the Node informer; only when publishing. */
static int setup_kube(server *sv, tm_err *err) {
    if (!sv->o->publish)
        return 0;
    tm_kube_config *cfg = tm_kube_config_auto(sv->o->kubeconfig, NULL, err);
    if (!cfg)
        return -1;
    sv->kube = tm_kube_new(cfg, err);
    tm_kube_config_free(cfg);
    if (!sv->kube)
        return -1;
    sv->ns = sv->o->ns ? sv->o->ns : tm_kube_namespace(sv->kube);
    if (sv->o->groups_file)
        return 0;
    sv->watch = lab_node_watch_start(sv->kube, sv->o->node_selector, err);
    return sv->watch ? 0 : -1;
}

int lab_serve_main(const lab_serve_opts *o, volatile sig_atomic_t *stop) {
    server sv = {.o = o, .scan = SCAN_ALL};
    pthread_mutex_init(&sv.mu, NULL);
    sv.dirty = json_object();
    sv.published = json_object();
    tm_err err = {{0}, 0};
    tm_httpd *srv = NULL;
    tm_auth *auth = NULL;
    int rc = 1;
    if (o->auth_token_file && !(auth = tm_auth_new(o->auth_token_file, &err))) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    if (setup_metrics(&sv, &err) < 0 || setup_kube(&sv, &err) < 0 ||
        !(sv.spool = lab_spool_open(o->spool_dir, &err))) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    tm_metrics_set(sv.m_pending, NULL, (double)lab_spool_pending(sv.spool));
    sv.last_connect = time(NULL);
    connect_db(&sv);
    sv.next_resync = time(NULL) + o->resync_s;
    tm_httpd_opts ho = {.bind_addr = o->bind,
                        .port = o->port,
                        .name = "weblog",
                        .max_body = o->max_body > 0 ? (size_t)o->max_body : (size_t)2 << 20,
                        .memory_budget = o->memory_budget > 0 ? (size_t)o->memory_budget : 0,
                        .health_port = o->health_port,
                        .tls_cert_file = o->tls_cert_file,
                        .tls_key_file = o->tls_key_file,
                        .client_ca_file = o->client_ca_file,
                        .auth = auth,
                        .insecure_no_auth = o->insecure_no_auth != 0};
    /* Nextflow's weblog can only be given a URL (and, with nf-weblog, Basic credentials). */
    tm_httpd_route_opts wro = {.token_in_query = true};
    if (!(srv = tm_httpd_start(&ho, &err)) ||
        tm_httpd_route_ex(srv, "POST", "/weblog*", on_weblog, &sv, &wro, &err) < 0 ||
        tm_httpd_route_ex(srv, "POST", "/", on_weblog, &sv, &wro, &err) < 0 ||
        tm_httpd_enable_health(srv, is_ready, &sv, &err) < 0 ||
        tm_httpd_enable_metrics(srv, sv.reg, &err) < 0) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    tm_info("labeler serving weblog addr=%s port=%d spool=%s pending=%ld publish=%s groups=%s "
            "resync_s=%d",
            o->bind, tm_httpd_port(srv), o->spool_dir, lab_spool_pending(sv.spool),
            sv.kube ? "yes" : "no", o->groups_file ? o->groups_file : "nodes", o->resync_s);
    while (!*stop) {
        if (!sv.kube) {
            usleep(TICK_MS * 1000);
        } else if (tm_kube_run(sv.kube, TICK_MS, &err) < 0) {
            tm_error("kube event loop: %s", err.msg);
            usleep(TICK_MS * 1000);
        }
        tick(&sv);
    }
    tm_info("labeler stopping; spool pending=%ld", lab_spool_pending(sv.spool));
    rc = 0;
out:
    tm_httpd_free(srv); /* no handler runs after this */
    tm_auth_free(auth);
    lab_node_watch_stop(sv.watch);
    lab_store_close(sv.store);
    lab_spool_close(sv.spool);
    tm_kube_free(sv.kube);
    tm_metrics_free(sv.reg);
    json_decref(sv.dirty);
    json_decref(sv.published);
    pthread_mutex_destroy(&sv.mu);
    return rc;
}
