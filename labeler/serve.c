/* serve.c: see serve.h.
 *
 * Threads. libmicrohttpd runs every weblog connection on a thread of its own (on_weblog).
 * Everything else runs on the main thread, which drives the tm_kube event loop: the Node
 * informer, database reconnects, reading NOTIFYs, draining the spool, labelling and publishing
 * TaskProfiles.
 *
 * Durability. A handler never touches the database: it checks the event (the same limits the
 * store enforces, and that its run is known), appends it to the spool (fdatasync) and answers
 * 202. Only the loop thread stores, from the spool, in order, under time limits on every
 * statement (tm_pg_limits), so a hung or locked PostgreSQL delays labels but never a POST. An
 * event the store still refuses on replay goes to the dead-letter spool (<spool>/dead-letter,
 * kept, counted in tarema_weblog_dead_letters_total, logged), never dropped.
 *
 * Shared with handlers: the spools (thread-safe), the known runs and the state /readyz reads
 * (under `shared`, held only for memory operations), and tm_kube_wakeup / the wake condition.
 * `mu` guards the database connection and the dirty set among the loop's own steps. */
#include "labeler/serve.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labeler/group_runtime.h"
#include "labeler/run_tail.h"
#include "labeler/groupsrc.h"
#include "labeler/node_group.h"
#include "labeler/sizing_samples.h"
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
/* At start, how long the spool waits for the Node informer's first list, so that events
 * spooled before a restart are stored with their node groups (never longer: the runs matter
 * more than their groups, and the API server may be down). */
#define NODE_SYNC_WAIT_S 5

/* Which workflows to look up in the database before the next relabel. */
typedef enum {
    SCAN_NONE,  /* only those in the dirty set */
    SCAN_SINCE, /* also those with runs stored since `since` (missed NOTIFYs after a reconnect) */
    SCAN_ALL,   /* every workflow (start, node groups changed, resync) */
} scan_mode;

typedef struct server {
    const lab_serve_opts *o;
    tm_pg_limits limits;
    tm_metrics *reg;
    tm_metric *m_events, *m_pending, *m_db_up, *m_profiles, *m_group_changes, *m_dead;
    tm_kube *kube;    /* set before the HTTP server starts; handlers only call tm_kube_wakeup */
    lab_spool *spool; /* thread-safe on its own */
    lab_spool *dead;  /* dead letters: events the store refused on replay */
    /* Shared with the handlers, under `shared` (memory operations only). */
    pthread_mutex_t shared;
    pthread_cond_t wake_cv; /* without a kube loop, the main loop sleeps on this */
    bool woken;
    json_t *runs;     /* run_id -> workflow: runs whose `started` event we know */
    bool runs_loaded; /* the database's runs were read since start: an unknown run is unknown */
    char spool_err[TM_ERR_MAX]; /* last spool write failure, "" when the last write worked */
    char db_err[TM_ERR_MAX];    /* why the database is down, "" when connected */
    atomic_llong db_busy_since; /* monotonic ms when the current database call began, 0 idle */
    atomic_int db_up;
    atomic_int db_failing; /* connected, but the last call failed (lock or statement timeout) */
    /* Shared with the handlers, under mu. */
    pthread_mutex_t mu;
    lab_store *store; /* NULL while the database is unreachable */
    json_t *dirty;    /* workflow -> true: new runs since it was last labelled */
    scan_mode scan;
    char since[64]; /* server time for SCAN_SINCE */
    /* Loop thread only. */
    const char *ns;
    lab_node_watch *watch; /* NULL with --groups */
    json_t *file_nodes;    /* with --groups: node name -> group from the file's nodes[] */
    lab_groups groups;     /* the groups labels are computed against */
    int have_groups, file_loaded;
    char groups_err[TM_ERR_MAX]; /* last group problem logged, to log each once */
    json_t *published;           /* TaskProfile name -> status last published (minus lastUpdate) */
    int db_down_logged;
    time_t last_connect, next_resync, retry_at;
    time_t started; /* when serve started (NODE_SYNC_WAIT_S) */
} server;

static void wake(server *sv) {
    if (sv->kube) {
        tm_kube_wakeup(sv->kube);
        return;
    }
    pthread_mutex_lock(&sv->shared);
    sv->woken = true;
    pthread_cond_signal(&sv->wake_cv);
    pthread_mutex_unlock(&sv->shared);
}

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Brackets every database call of the loop thread, so /readyz/database can tell "stuck". */
static void db_enter(server *sv) {
    atomic_store(&sv->db_busy_since, mono_ms());
}
static void db_leave(server *sv) {
    atomic_store(&sv->db_busy_since, 0);
}

static void remember_run(server *sv, const char *run_id, const char *workflow) {
    pthread_mutex_lock(&sv->shared);
    json_object_set_new(sv->runs, run_id, json_string(workflow));
    pthread_mutex_unlock(&sv->shared);
}

/* For lab_store_weblog_runs and lab_spool_foreach. */
static void on_stored_run(void *ud, const char *run_id, const char *workflow) {
    remember_run(ud, run_id, workflow);
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
    if (ev->kind == LAB_WEBLOG_COMPLETED) {
        /* a failed run has no meaningful end; an unknown run (no started event) none stored */
        if (ev->success && lab_store_weblog_run_completed(s, ev->run_id, ev->utc_ms, err) < 0)
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
    /* the node group the task ran on, as the cluster labels its node now (the weblog event
     * arrives when the task completes); unknown stays NULL */
    if (sv->watch)
        lab_node_watch_group_of(sv->watch, run.node, run.node_group, sizeof run.node_group);
    else
        lab_node_groups_fill(sv->file_nodes, &run, 1);
    /* The store NOTIFYs; the loop reads that and relabels the workflow. */
    if (lab_store_put_runs(s, &run, 1, "weblog", NULL, NULL, err) < 0)
        return lab_store_retryable(s, err) ? EV_RETRY : EV_REJECTED;
    return EV_STORED;
}

static void drop_store(server *sv, const char *why) {
    tm_warn("database unavailable, events stay in the spool: %s", why);
    lab_store_close(sv->store);
    sv->store = NULL;
    tm_metrics_set(sv->m_db_up, NULL, 0);
    atomic_store(&sv->db_up, 0);
    pthread_mutex_lock(&sv->shared);
    snprintf(sv->db_err, sizeof sv->db_err, "%s", why);
    pthread_mutex_unlock(&sv->shared);
}

/* A retryable failure: the connection goes only when it is broken. A live one (a lock or
 * statement timeout) is kept and the work retried on a later tick. */
static void db_trouble(server *sv, const char *why) {
    if (!lab_store_connected(sv->store)) {
        drop_store(sv, why);
        return;
    }
    tm_warn("database busy, retrying shortly: %s", why);
    atomic_store(&sv->db_failing, 1);
    pthread_mutex_lock(&sv->shared);
    snprintf(sv->db_err, sizeof sv->db_err, "%s", why);
    pthread_mutex_unlock(&sv->shared);
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

/* What the store would refuse, checked before acknowledging: the limits of its columns, a
 * started event naming no workflow, a task of a run never started. 0, or -1 with err naming the
 * field. A run unknown while the database's runs have not been read yet (it was down since we
 * started) is accepted: the replay decides, and the dead-letter spool keeps it if refused. */
static int check_event(server *sv, const lab_weblog_event *ev, tm_err *err) {
    if (lab_weblog_validate(ev, err) < 0)
        return -1;
    const char *dflt = sv->o->default_workflow;
    if (ev->kind == LAB_WEBLOG_STARTED) {
        if (!ev->workflow[0] && !(dflt && *dflt))
            return tm_err_set(err,
                              "metadata.workflow.%s: the started event of run %s names no "
                              "workflow and there is no --default-workflow",
                              sv->o->workflow_key ? sv->o->workflow_key : "manifest.name",
                              ev->run_name);
        return 0;
    }
    if (ev->kind != LAB_WEBLOG_PROCESS_COMPLETED || (dflt && *dflt))
        return 0;
    pthread_mutex_lock(&sv->shared);
    bool known = json_object_get(sv->runs, ev->run_id) != NULL;
    bool loaded = sv->runs_loaded;
    pthread_mutex_unlock(&sv->shared);
    if (!known && loaded)
        return tm_err_set(err,
                          "runId: run %s (%s) is unknown: no started event was received for it "
                          "and there is no --default-workflow",
                          ev->run_id, ev->run_name);
    return 0;
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
    if (check_event(sv, ev, &err) < 0) {
        count_event(sv, ev->event, "rejected");
        tm_info("weblog event refused before acknowledging: %s", err.msg);
        tm_httpd_error(resp, 400, "%s", err.msg);
        goto out;
    }
    char *line = json_dumps(body, JSON_COMPACT);
    int rc = line ? lab_spool_append(sv->spool, line, strlen(line), &err)
                  : tm_err_set(&err, "out of memory");
    free(line);
    pthread_mutex_lock(&sv->shared);
    snprintf(sv->spool_err, sizeof sv->spool_err, "%s", rc < 0 ? err.msg : "");
    if (rc == 0 && ev->kind == LAB_WEBLOG_STARTED)
        json_object_set_new(sv->runs, ev->run_id,
                            json_string(ev->workflow[0] ? ev->workflow : sv->o->default_workflow));
    pthread_mutex_unlock(&sv->shared);
    tm_metrics_set(sv->m_pending, NULL, (double)lab_spool_pending(sv->spool));
    if (rc < 0) {
        count_event(sv, ev->event, "failed");
        tm_error("weblog event not accepted: the spool cannot write: %s", err.msg);
        tm_httpd_error(resp, 503, "event not accepted: the spool cannot write: %s", err.msg);
    } else {
        count_event(sv, ev->event, "spooled");
        tm_httpd_json(resp, 202, json_pack("{s:b}", "spooled", 1));
        wake(sv);
    }
out:
    free(ev);
    json_decref(body);
}

/* Keeps an event the store refused in the dead-letter spool, with why and when. 0, or -1 when
 * even that failed (the event then stays in the main spool). */
static int dead_letter(server *sv, const char *rec, const char *event, const char *why) {
    char now[32];
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    json_t *orig = json_loads(rec, 0, NULL);
    json_t *d = json_pack("{s:s, s:s, s:o}", "deadAt", now, "error", why, "event",
                          orig ? orig : json_string(rec));
    char *line = d ? json_dumps(d, JSON_COMPACT) : NULL;
    json_decref(d);
    tm_err err = {{0}, 0};
    int rc = line ? lab_spool_append(sv->dead, line, strlen(line), &err)
                  : tm_err_set(&err, "out of memory");
    free(line);
    if (rc < 0) {
        tm_error("weblog event refused by the store and the dead-letter spool cannot write, "
                 "keeping it in the spool: %s; refused because: %s",
                 err.msg, why);
        return -1;
    }
    tm_metrics_inc(sv->m_dead, NULL);
    count_event(sv, event, "dead_letter");
    tm_error("weblog event refused by the store, kept in the dead-letter spool "
             "(tarema_weblog_dead_letters_total): %s",
             why);
    return 0;
}

/* Stores spooled events in order, at most `max` per call. A retryable failure stops the drain
 * (the event stays first in line); a refusal moves the event to the dead letters. */
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
        if (!body)
            tm_err_set(&err, "spooled record is not JSON");
        else if (lab_weblog_parse(body, sv->o->workflow_key, ev, &err) == 0 &&
                 lab_weblog_validate(ev, &err) == 0) {
            db_enter(sv);
            r = process_event(sv, ev, &err);
            db_leave(sv);
        }
        json_decref(body);
        if (r == EV_RETRY) {
            free(rec);
            db_trouble(sv, err.msg);
            break;
        }
        if (r == EV_STORED) {
            count_event(sv, ev->event, "stored");
            atomic_store(&sv->db_failing, 0);
        }
        if (r == EV_REJECTED && dead_letter(sv, rec, ev->event, err.msg) < 0) {
            free(rec);
            break;
        }
        free(rec);
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
    db_enter(sv);
    lab_store *s = lab_store_open_limited(sv->o->db, &sv->limits, &err);
    if (s && lab_store_listen(s, &err) < 0) {
        lab_store_close(s);
        s = NULL;
    }
    /* Every run the database knows: from now on a task of any other run is refused at once. */
    if (s && lab_store_weblog_runs(s, on_stored_run, sv, &err) < 0) {
        lab_store_close(s);
        s = NULL;
    }
    db_leave(sv);
    if (!s) {
        /* Say it once per outage, then quietly retry every second. */
        if (!sv->db_down_logged)
            tm_warn("database unavailable, events will be spooled until it is back: %s", err.msg);
        else
            tm_debug("database still unavailable: %s", err.msg);
        sv->db_down_logged = 1;
        pthread_mutex_lock(&sv->shared);
        snprintf(sv->db_err, sizeof sv->db_err, "%s", err.msg);
        pthread_mutex_unlock(&sv->shared);
        return;
    }
    sv->db_down_logged = 0;
    pthread_mutex_lock(&sv->shared);
    sv->runs_loaded = true;
    sv->db_err[0] = '\0';
    pthread_mutex_unlock(&sv->shared);
    pthread_mutex_lock(&sv->mu);
    sv->store = s;
    /* Runs other writers stored while we were not listening sent NOTIFYs we never got. */
    raise_scan(sv, SCAN_SINCE);
    pthread_mutex_unlock(&sv->mu);
    tm_metrics_set(sv->m_db_up, NULL, 1);
    atomic_store(&sv->db_failing, 0);
    atomic_store(&sv->db_up, 1);
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
        db_trouble(sv, err.msg);
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
                       const lab_process_label *p, const lab_samples *smp, const lab_tail *tails,
                       size_t ntails, const char *now, tm_err *err) {
    json_t *st = lab_taskprofile_status(l, p, now);
    /* the buckets and the current recommendation (docs/sizing.md) */
    json_object_set_new(st, "sizing", lab_sizing_status(smp->v, smp->n, p->process));
    /* the runtime per node group the runs ran on (the adaptive policy, issue 16) */
    json_object_set_new(st, "runtimeByGroup",
                        lab_group_runtimes_status(smp->v, smp->group, smp->n, p->process));
    /* the time from its end to its workflow run's end (run_tail.h): the critical path */
    const lab_tail *t = lab_run_tail_find(tails, ntails, p->process);
    if (t) {
        json_object_set_new(st, "tailSeconds", json_real(round(t->mean_s * 1000.0) / 1000.0));
        json_object_set_new(st, "tailRuns", json_integer(t->runs));
    }
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
    lab_tail_rows rows = {0};
    pthread_mutex_lock(&sv->mu);
    db_enter(sv);
    int rc = sv->store ? lab_store_samples(sv->store, wf, &smp, err)
                       : tm_err_set(err, "database unavailable");
    if (rc == 0 && lab_store_tail_rows(sv->store, wf, &rows, err) < 0) {
        lab_samples_free(&smp);
        rc = -1;
    }
    db_leave(sv);
    if (rc < 0 && sv->store && lab_store_retryable(sv->store, err))
        db_trouble(sv, err->msg);
    pthread_mutex_unlock(&sv->mu);
    if (rc < 0)
        return -1;
    lab_labeling *l = smp.n ? lab_label_compute(smp.v, smp.n, classes, err) : NULL;
    if (smp.n && !l)
        rc = -1;
    size_t ntails = 0;
    lab_tail *tails = rc == 0 ? lab_run_tails(rows.v, rows.n, &ntails, err) : NULL;
    if (!tails)
        rc = -1;
    char now[32];
    now_rfc3339(now, sizeof now);
    for (size_t i = 0; l && i < l->nprocs && rc == 0; i++)
        rc = publish_one(sv, wf, l, &l->procs[i], &smp, tails, ntails, now, err);
    free(tails);
    lab_tail_rows_free(&rows);
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
    db_enter(sv);
    char **changed =
        lab_store_changed_workflows(sv->store, sv->scan == SCAN_ALL ? "" : sv->since, now, err);
    db_leave(sv);
    if (!changed) {
        if (lab_store_retryable(sv->store, err))
            db_trouble(sv, err->msg);
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
    if (!sv->watch || lab_node_watch_synced(sv->watch) || now - sv->started >= NODE_SYNC_WAIT_S)
        drain_spool(sv, 2000);
    if (!sv->kube)
        return;
    if (now >= sv->next_resync)
        resync(sv, now);
    update_groups(sv);
    relabel(sv, now);
}

/* Readiness is "can accept events": Kubernetes takes a pod that is not ready out of its
 * Service, and Nextflow's events would then be refused, which is what the spool exists to
 * prevent. So a database that is down or stuck does not make the labeler unready (that is
 * /readyz/database); a spool that cannot write does. */
static bool is_ready(void *ud, char *reason, size_t size) {
    server *sv = ud;
    pthread_mutex_lock(&sv->shared);
    bool ok = sv->spool_err[0] == '\0';
    if (!ok)
        snprintf(reason, size, "events cannot be accepted: the spool cannot write: %s",
                 sv->spool_err);
    pthread_mutex_unlock(&sv->shared);
    return ok;
}

/* GET /readyz/database: the database as the store sees it, like kube-apiserver's per-check
 * /readyz/<check>: 200 when connected and answering, 503 with the reason when down or when a
 * call has been waiting longer than a second (hung or locked). Events are accepted either way. */
static void on_ready_db(const tm_httpd_req *req, tm_httpd_resp *resp, void *ud) {
    (void)req;
    server *sv = ud;
    long long since = atomic_load(&sv->db_busy_since);
    long long busy = since ? mono_ms() - since : 0;
    long pending = lab_spool_pending(sv->spool);
    char text[TM_ERR_MAX + 256];
    int status = 200;
    pthread_mutex_lock(&sv->shared);
    if (!atomic_load(&sv->db_up) && busy < 1000) {
        status = 503;
        snprintf(text, sizeof text, "database down: %s; %ld events spooled\n",
                 sv->db_err[0] ? sv->db_err : "not connected yet", pending);
    } else if (atomic_load(&sv->db_failing) && busy < 1000) {
        status = 503;
        snprintf(text, sizeof text, "database blocked: %s; %ld events spooled\n", sv->db_err,
                 pending);
    } else if (busy >= 1000) {
        status = 503;
        snprintf(text, sizeof text,
                 "database stuck: a call has been waiting %lld ms (limit %d ms); %ld events "
                 "spooled\n",
                 busy, sv->limits.answer_ms, pending);
    } else {
        snprintf(text, sizeof text, "ok: database connected; %ld events spooled\n", pending);
    }
    pthread_mutex_unlock(&sv->shared);
    tm_httpd_text(resp, status, text);
}

static int setup_metrics(server *sv, tm_err *err) {
    sv->reg = tm_metrics_new();
    sv->m_events = tm_metrics_counter(sv->reg, "tarema_labeler_weblog_events_total",
                                      "Weblog events by event type and outcome "
                                      "(spooled, stored, ignored, rejected, failed, "
                                      "dead_letter).",
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
    sv->m_dead = tm_metrics_counter(sv->reg, "tarema_weblog_dead_letters_total",
                                    "Acknowledged weblog events the store refused on replay, "
                                    "kept in the dead-letter spool (<spool>/dead-letter).",
                                    NULL, err);
    return sv->m_events && sv->m_pending && sv->m_db_up && sv->m_profiles && sv->m_group_changes &&
                   sv->m_dead
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
    if (sv->o->groups_file) {
        /* a file update_groups cannot read is reported there; runs then have no group */
        json_t *doc = tm_json_load_file(sv->o->groups_file, NULL);
        sv->file_nodes = doc ? lab_node_groups_from_doc(doc) : NULL;
        json_decref(doc);
        return 0;
    }
    sv->watch = lab_node_watch_start(sv->kube, sv->o->node_selector, err);
    return sv->watch ? 0 : -1;
}

/* Started events still in the spool name runs the database may not know yet. */
static void remember_spooled_run(void *ud, const char *rec) {
    server *sv = ud;
    json_t *body = json_loads(rec, 0, NULL);
    lab_weblog_event *ev = body ? malloc(sizeof *ev) : NULL;
    tm_err err = {{0}, 0};
    if (ev && lab_weblog_parse(body, sv->o->workflow_key, ev, &err) == 0 &&
        ev->kind == LAB_WEBLOG_STARTED)
        remember_run(sv, ev->run_id,
                     ev->workflow[0] ? ev->workflow
                                     : (sv->o->default_workflow ? sv->o->default_workflow : ""));
    free(ev);
    json_decref(body);
}

/* Sleeps until a handler spooled an event or ms passed (no kube loop to wake). */
static void wait_for_wake(server *sv, int ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&sv->shared);
    while (!sv->woken && pthread_cond_timedwait(&sv->wake_cv, &sv->shared, &until) == 0) {
    }
    sv->woken = false;
    pthread_mutex_unlock(&sv->shared);
}

int lab_serve_main(const lab_serve_opts *o, volatile sig_atomic_t *stop) {
    server sv = {.o = o, .scan = SCAN_ALL};
    pthread_mutex_init(&sv.mu, NULL);
    pthread_mutex_init(&sv.shared, NULL);
    pthread_cond_init(&sv.wake_cv, NULL);
    atomic_init(&sv.db_busy_since, 0);
    atomic_init(&sv.db_up, 0);
    atomic_init(&sv.db_failing, 0);
    /* statement_timeout bounds work the server does; lock_timeout a table lock held elsewhere;
     * the answer limit a server that stopped answering (it cannot enforce its own).
     * sync_commit: drain_spool forgets an event as soon as its COMMIT returns, so that COMMIT
     * must have written the WAL out of the server's memory. A server running with
     * synchronous_commit=off answers COMMIT first, and a crash then loses acknowledged events
     * the spool no longer has (seen: 8 of 273 after a kill -9 of PostgreSQL). */
    int t_ms = (o->db_timeout_s > 0 ? o->db_timeout_s : 10) * 1000;
    sv.limits = (tm_pg_limits){.statement_ms = t_ms,
                               .lock_ms = t_ms / 2 > 0 ? t_ms / 2 : 1,
                               .answer_ms = t_ms + 2000,
                               .sync_commit = true};
    sv.runs = json_object();
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
    char dead_dir[4200];
    snprintf(dead_dir, sizeof dead_dir, "%s/dead-letter", o->spool_dir);
    if (setup_metrics(&sv, &err) < 0 || setup_kube(&sv, &err) < 0 ||
        !(sv.spool = lab_spool_open(o->spool_dir, &err)) ||
        !(sv.dead = lab_spool_open(dead_dir, &err)) ||
        lab_spool_foreach(sv.spool, remember_spooled_run, &sv, &err) < 0) {
        tm_error("labeler not started: %s", err.msg);
        goto out;
    }
    if (lab_spool_pending(sv.dead) > 0)
        tm_warn("the dead-letter spool holds %ld events the store refused: %s/events.log",
                lab_spool_pending(sv.dead), dead_dir);
    tm_metrics_set(sv.m_pending, NULL, (double)lab_spool_pending(sv.spool));
    sv.last_connect = time(NULL);
    connect_db(&sv);
    sv.next_resync = time(NULL) + o->resync_s;
    sv.started = time(NULL);
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
        tm_httpd_route(srv, "GET", "/readyz/database", on_ready_db, &sv, &err) < 0 ||
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
            wait_for_wake(&sv, TICK_MS);
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
    lab_spool_close(sv.dead);
    tm_kube_free(sv.kube);
    tm_metrics_free(sv.reg);
    json_decref(sv.dirty);
    json_decref(sv.published);
    json_decref(sv.runs);
    json_decref(sv.file_nodes);
    pthread_cond_destroy(&sv.wake_cv);
    pthread_mutex_destroy(&sv.shared);
    pthread_mutex_destroy(&sv.mu);
    return rc;
}
