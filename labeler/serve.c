/* serve.c: see serve.h. */
#include "labeler/serve.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labeler/groups.h"
#include "labeler/spool.h"
#include "labeler/store.h"
#include "labeler/taskprofile.h"
#include "labeler/weblog.h"
#include "lib/httpd.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "lib/metrics.h"

typedef struct server {
    const lab_serve_opts *o;
    pthread_mutex_t mu; /* guards store and dirty: handlers run on many threads */
    lab_store *store;   /* NULL while the database is unreachable */
    lab_spool *spool;
    json_t *dirty; /* workflow -> true: got runs since the last refresh */
    tm_metrics *reg;
    tm_metric *m_events, *m_pending, *m_db_up, *m_profiles;
    tm_kube *kube;
    const char *ns;
    json_t *published;  /* TaskProfile name -> status text last published (minus lastUpdate) */
    int db_down_logged; /* touched by the main loop only (connect_db) */
} server;

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
    if (lab_store_put_runs(s, &run, 1, "weblog", NULL, NULL, err) < 0)
        return lab_store_retryable(s, err) ? EV_RETRY : EV_REJECTED;
    json_object_set_new(sv->dirty, run.workflow, json_true());
    return EV_STORED;
}

static void drop_store(server *sv, const char *why) {
    tm_warn("database unavailable, spooling events: %s", why);
    lab_store_close(sv->store);
    sv->store = NULL;
    tm_metrics_set(sv->m_db_up, NULL, 0);
}

static void count_event(server *sv, const char *event, const char *result) {
    tm_metrics_inc(sv->m_events, TM_LABELS(event, result));
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

static void connect_db(server *sv) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(sv->o->db, &err);
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
    pthread_mutex_unlock(&sv->mu);
    tm_metrics_set(sv->m_db_up, NULL, 1);
    tm_info("database connected, schema up to date");
}

static int load_groups(server *sv, lab_groups *g, tm_err *err) {
    if (sv->o->groups_file) {
        json_t *root = tm_json_load_file(sv->o->groups_file, err);
        if (!root)
            return -1;
        int rc = lab_groups_from_json(root, g, err);
        json_decref(root);
        return rc;
    }
    json_t *nodes = tm_kube_list(sv->kube, "/api/v1/nodes", NULL, NULL, err);
    if (!nodes)
        return -1;
    int rc = lab_groups_from_nodes(nodes, g, err);
    json_decref(nodes);
    return rc;
}

static void now_rfc3339(char *buf, size_t size) {
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* Labels one workflow and publishes the TaskProfiles whose status changed. */
static int refresh_workflow(server *sv, const char *wf, const lab_classes *classes, tm_err *err) {
    lab_samples smp;
    pthread_mutex_lock(&sv->mu);
    int rc = sv->store ? lab_store_samples(sv->store, wf, &smp, err)
                       : tm_err_set(err, "database unavailable");
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0)
        return -1;
    lab_labeling *l = smp.n ? lab_label_compute(smp.v, smp.n, classes, err) : NULL;
    if (smp.n && !l) {
        lab_samples_free(&smp);
        return -1;
    }
    char now[32];
    now_rfc3339(now, sizeof now);
    for (size_t i = 0; l && i < l->nprocs && rc == 0; i++) {
        json_t *st = lab_taskprofile_status(l, &l->procs[i], now);
        json_t *cmp = json_deep_copy(st);
        json_object_del(cmp, "lastUpdate");
        char *text = json_dumps(cmp, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(cmp);
        char name[256];
        lab_taskprofile_name(wf, l->procs[i].process, name, sizeof name);
        const char *prev = json_string_value(json_object_get(sv->published, name));
        if (!prev || !text || strcmp(prev, text) != 0) {
            if (lab_taskprofile_publish(sv->kube, sv->ns, wf, l->procs[i].process, st, err) < 0) {
                tm_metrics_inc(sv->m_profiles, TM_LABELS("error"));
                rc = -1;
            } else {
                tm_metrics_inc(sv->m_profiles, TM_LABELS("updated"));
                if (text)
                    json_object_set_new(sv->published, name, json_string(text));
                tm_debug("published TaskProfile name=%s workflow=%s", name, wf);
            }
        }
        free(text);
        json_decref(st);
    }
    lab_labeling_free(l);
    lab_samples_free(&smp);
    return rc;
}

typedef struct refresh_state {
    lab_groups groups;
    int have_groups;
    char since[64];
} refresh_state;

static void refresh(server *sv, refresh_state *rs) {
    tm_err err = {{0}, 0};
    lab_groups g;
    if (load_groups(sv, &g, &err) < 0) {
        tm_warn("node groups unavailable, labels not refreshed: %s", err.msg);
        return;
    }
    int all = !rs->have_groups || !lab_groups_equal(&g, &rs->groups);
    if (all && rs->have_groups)
        tm_info("node groups changed groups=%d: relabelling every workflow", g.n);
    lab_classes classes[LAB_NFEATURES];
    if (lab_groups_all_classes(&g, classes, &err) < 0) {
        tm_warn("node groups unusable: %s", err.msg);
        return;
    }
    /* Workflows other writers (tarema-labeler ingest) changed, or all after a group change. */
    pthread_mutex_lock(&sv->mu);
    char now[64] = "";
    char **changed =
        sv->store ? lab_store_changed_workflows(sv->store, all ? "" : rs->since, now, &err) : NULL;
    for (char **p = changed; p && *p; p++)
        json_object_set_new(sv->dirty, *p, json_true());
    lab_strv_free(changed);
    json_t *todo = sv->dirty;
    sv->dirty = json_object();
    pthread_mutex_unlock(&sv->mu);
    if (!now[0]) { /* the database is down: try again next time */
        pthread_mutex_lock(&sv->mu);
        json_object_update(sv->dirty, todo);
        pthread_mutex_unlock(&sv->mu);
        json_decref(todo);
        return;
    }
    const char *wf;
    json_t *v;
    int failed = 0;
    json_object_foreach(todo, wf, v) {
        if (refresh_workflow(sv, wf, classes, &err) < 0) {
            tm_warn("labels of workflow %s not published: %s", wf, err.msg);
            pthread_mutex_lock(&sv->mu);
            json_object_set_new(sv->dirty, wf, json_true());
            pthread_mutex_unlock(&sv->mu);
            failed = 1;
        }
    }
    json_decref(todo);
    if (!failed) {
        rs->groups = g;
        rs->have_groups = 1;
    }
    snprintf(rs->since, sizeof rs->since, "%s", now);
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
    return sv->m_events && sv->m_pending && sv->m_db_up && sv->m_profiles ? 0 : -1;
}

static int setup_kube(server *sv, tm_err *err) {
    if (!sv->o->publish && sv->o->groups_file)
        return 0;
    tm_kube_config *cfg = tm_kube_config_auto(sv->o->kubeconfig, NULL, err);
    if (!cfg)
        return -1;
    sv->kube = tm_kube_new(cfg, err);
    tm_kube_config_free(cfg);
    if (!sv->kube)
        return -1;
    sv->ns = sv->o->ns ? sv->o->ns : tm_kube_namespace(sv->kube);
    return 0;
}

int lab_serve_main(const lab_serve_opts *o, volatile sig_atomic_t *stop) {
    server sv = {.o = o};
    pthread_mutex_init(&sv.mu, NULL);
    sv.dirty = json_object();
    sv.published = json_object();
    tm_err err = {{0}, 0};
    tm_httpd *srv = NULL;
    int rc = 1;
    if (setup_metrics(&sv, &err) < 0 || setup_kube(&sv, &err) < 0 ||
        !(sv.spool = lab_spool_open(o->spool_dir, &err))) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    tm_metrics_set(sv.m_pending, NULL, (double)lab_spool_pending(sv.spool));
    connect_db(&sv);
    tm_httpd_opts ho = {.bind_addr = o->bind, .port = o->port, .name = "weblog"};
    if (!(srv = tm_httpd_start(&ho, &err)) ||
        tm_httpd_route(srv, "POST", "/weblog*", on_weblog, &sv, &err) < 0 ||
        tm_httpd_route(srv, "POST", "/", on_weblog, &sv, &err) < 0 ||
        tm_httpd_enable_health(srv, is_ready, &sv, &err) < 0 ||
        tm_httpd_enable_metrics(srv, sv.reg, &err) < 0) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    tm_info("labeler serving weblog addr=%s port=%d spool=%s pending=%ld publish=%s", o->bind,
            tm_httpd_port(srv), o->spool_dir, lab_spool_pending(sv.spool),
            sv.kube && o->publish ? "yes" : "no");
    refresh_state rs = {0};
    time_t last_connect = time(NULL), last_refresh = 0;
    while (!*stop) {
        usleep(200 * 1000);
        time_t now = time(NULL);
        pthread_mutex_lock(&sv.mu);
        if (sv.store && !lab_store_connected(sv.store))
            drop_store(&sv, "connection lost");
        int have_store = sv.store != NULL;
        pthread_mutex_unlock(&sv.mu);
        if (!have_store && now - last_connect >= 1) {
            last_connect = now;
            connect_db(&sv);
        }
        drain_spool(&sv, 500);
        if (o->publish && sv.kube && now - last_refresh >= o->refresh_s) {
            last_refresh = now;
            refresh(&sv, &rs);
        }
    }
    tm_info("labeler stopping; spool pending=%ld", lab_spool_pending(sv.spool));
    rc = 0;
out:
    tm_httpd_free(srv);
    lab_store_close(sv.store);
    lab_spool_close(sv.spool);
    tm_kube_free(sv.kube);
    tm_metrics_free(sv.reg);
    json_decref(sv.dirty);
    json_decref(sv.published);
    pthread_mutex_destroy(&sv.mu);
    return rc;
}
