/* controller.c: the Workflow controller (controller.h). I/O lives here; what to plan and which
 * objects to write come from the pure modules (kobj, occupancy, predict, solve). This file has
 * the loop (informers, leader election, ticks) and the helpers the controller's files share;
 * planning a workflow's steps is in controller_plan.c, reconciling one workflow in
 * controller_reconcile.c. */
#include "planner/controller.h"
#include "planner/controller_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "planner/kobj.h"
/* ---- small helpers ----------------------------------------------------------------------- */

static void collect(void *ud, json_t *obj) {
    json_array_append((json_t *)ud, obj);
}

json_t *ctl_store_array(const tm_informer *inf) {
    json_t *a = json_array();
    if (inf)
        tm_informer_foreach(inf, collect, a);
    return a;
}

void ctl_warn_once(ctl *c, const char *key, const char *msg) {
    if (json_object_get(c->warned, key))
        return;
    json_object_set_new(c->warned, key, json_true());
    tm_warn("%s", msg);
}

void ctl_event(ctl *c, const json_t *wfobj, const char *type, const char *reason,
               const char *note) {
    json_t *ev =
        tm_kube_event_new(wfobj, type, reason, reason, note, "tarema.io/planner", c->identity);
    tm_err err = {0};
    if (ev && tm_kube_event_post(c->k, ev, &err) < 0)
        tm_warn("event %s failed err=\"%s\"", reason, err.msg);
    json_decref(ev);
    tm_info("workflow=%s/%s %s: %s", tm_json_str(wfobj, "metadata.namespace", ""),
            tm_json_str(wfobj, "metadata.name", ""), reason, note);
}

/* Creates obj at path: 0, or 1 when it exists already (409), which is fine but for a renewed
 * Reservation: names are fixed, so a restarted controller finds what it made before; -1 on
 * failure, -2 when the resource (CRD) is not installed. */
int ctl_create_obj(ctl *c, const char *path, const json_t *obj, const char *what) {
    tm_err err = {0};
    json_t *r = tm_kube_create(c->k, path, obj, &err);
    if (r) {
        json_decref(r);
        return 0;
    }
    if (err.http_status == 409)
        return 1; /* there already: fine for the callers but a renewal */
    tm_warn("create %s failed err=\"%s\"", what, err.msg);
    return err.http_status == 404 ? -2 : -1; /* -2: the resource (CRD) is not installed */
}

static void delete_obj(ctl *c, const char *gv, const char *res, const char *ns, const char *name) {
    char *path = tm_kube_path(gv, res, ns, name, NULL);
    tm_err err = {0};
    if (path && tm_kube_delete(c->k, path, &err) < 0)
        tm_warn("delete %s %s/%s failed err=\"%s\"", res, ns, name, err.msg);
    free(path);
}

/* Deletes Reservation ns/name only while it is the one being replaced (its uid): the name is
 * reused by its successor, and a status that lags a tick (reservationRenew still set after the
 * new one was created) must not delete the new one. The API server answers 409 when the
 * precondition fails: done, as 404. (Found in review.) */
void ctl_delete_resv_uid(ctl *c, const char *ns, const char *name, const char *uid) {
    char *path = tm_kube_path(PL_GV, "reservations", ns, name, NULL);
    json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "DeleteOptions",
                             "preconditions", "uid", uid);
    tm_err err = {0};
    json_t *r = path && body ? tm_kube_request(c->k, "DELETE", path, body, NULL, NULL, &err) : NULL;
    if (!r && err.http_status != 404 && err.http_status != 409)
        tm_warn("delete reservations %s/%s failed err=\"%s\"", ns, name,
                err.msg[0] ? err.msg : "out of memory");
    json_decref(r);
    json_decref(body);
    free(path);
}

json_t *ctl_step_status(json_t *steps, const char *name) {
    size_t i;
    json_t *s;
    json_array_foreach(steps, i, s) {
        if (!strcmp(tm_json_str(s, "name", ""), name))
            return s;
    }
    return NULL;
}

int ctl_state_is(const json_t *ss, const char *st) {
    return !strcmp(tm_json_str(ss, "state", ""), st);
}

int ctl_finished(const json_t *ss) {
    return ctl_state_is(ss, PL_ST_SUCCEEDED) || ctl_state_is(ss, PL_ST_FAILED) ||
           ctl_state_is(ss, PL_ST_CANCELLED);
}

void ctl_set_time(json_t *o, const char *key, int64_t t) {
    char buf[40];
    json_object_set_new(o, key, json_string(pl_time_format(t, buf, sizeof buf)));
}

int64_t ctl_get_time(const json_t *o, const char *key) {
    return pl_time_parse(tm_json_str(o, key, NULL));
}

/* The mode the Workflow asks for step i (spec.steps[i].mode); -1 when it is not one. */
int ctl_requested_mode(const json_t *wfobj, int i, pl_mode *m) {
    json_t *st = json_array_get(tm_json_path(wfobj, "spec.steps"), (size_t)i);
    return pl_mode_parse(tm_json_str(st, "mode", NULL), m);
}

pl_mode ctl_status_mode(const json_t *ss) {
    pl_mode m = PL_MODE_RESERVE;
    if (pl_mode_parse(tm_json_str(ss, "mode", NULL), &m) < 0 || m == PL_MODE_AUTO)
        m = PL_MODE_RESERVE;
    return m;
}

int ctl_has_gate(const json_t *pod, const char *gate) {
    json_t *g = tm_json_path(pod, "spec.schedulingGates"), *e;
    size_t i;
    json_array_foreach(g, i, e) {
        if (!strcmp(tm_json_str(e, "name", ""), gate))
            return 1;
    }
    return 0;
}

/* The estimated queue wait of step s's shape in ns: the learned one from the store when it
 * knows the shape, else the documented default (docs/asa.md). *learned: 1 learned, 0 default,
 * -1 default because the store could not be read (a caller may keep what it had). */
static double step_estimate(ctl *c, const char *ns, const pl_step *s, int *learned) {
    *learned = 0;
    asa_key k;
    tm_err err = {0};
    if (asa_key_make(&k, ns, "", s->pods, (long long)s->cpu_milli, (long long)s->mem_bytes, &err) <
            0 ||
        !c->waits)
        return ASA_DEFAULT_ESTIMATE_S;
    if (!lab_waits_store_ensure(c->waits)) {
        *learned = -1;
        return ASA_DEFAULT_ESTIMATE_S;
    }
    waits_record *v = NULL;
    size_t n = 0;
    if (lab_waits_store_list(c->waits, ns, &v, &n, &err) < 0) {
        tm_warn("learned waits unreadable, using the default estimate err=\"%s\"", err.msg);
        *learned = -1;
        return ASA_DEFAULT_ESTIMATE_S;
    }
    double e = pl_mode_estimate(v, n, &k, learned);
    free(v);
    return e;
}

/* Writes step s's estimate (ASA: the learned wait of its shape) to its status ss, read at most
 * once a slot: until the step is released the estimate follows the learner (a chain's later
 * steps would otherwise be released with what the learner said when the workflow was first
 * planned: asa-compare --table2 saw 10 s used while the learner said 40 s). Frozen from the
 * release on, so the status shows the estimate the step was released with. */
void ctl_refresh_estimate(ctl *c, const char *ns, const pl_step *s, json_t *ss, int64_t now) {
    int64_t at = ctl_get_time(ss, "estimatedAt");
    if (at >= 0 && now - at < c->cfg->slot_s && tm_json_str(ss, "estimateSource", NULL))
        return;
    int learned = 0;
    double e = step_estimate(c, ns, s, &learned);
    ctl_set_time(ss, "estimatedAt", now); /* tried again a slot later in any case */
    if (learned < 0 && tm_json_str(ss, "estimateSource", NULL))
        return; /* the database is away: keep the estimate it gave, not the default */
    json_object_set_new(ss, "estimateSeconds", json_integer((json_int_t)llround(e)));
    json_object_set_new(ss, "estimateSource", json_string(learned > 0 ? "learned" : "default"));
}

/* The node group of a node as the occupancy has it (planner/occupancy.c): its tarema.io/group
 * label, "all" without one or when the node is unknown. Borrowed from the informer's store. */
const char *ctl_node_group(ctl *c, const char *node) {
    json_t *n = node ? tm_informer_get(c->nodes, NULL, node) : NULL;
    json_t *labels = tm_json_path(n, "metadata.labels");
    const char *g = labels ? json_string_value(json_object_get(labels, "tarema.io/group")) : NULL;
    return g ? g : "all";
}

/* The walltime of step s as status ss has it: predictedSeconds (its groups' walltime: the
 * planned nodes' until it binds, then the nodes it runs on), else its duration. */
int64_t ctl_step_seconds(const json_t *ss, const pl_step *s) {
    long long v = tm_json_int(ss, "predictedSeconds", 0);
    return v > 0 ? (int64_t)v : s->duration_s;
}

/* What ctl_observe() looks for, and where it counts what it finds. */
typedef struct observe_want {
    const char *ns, *wf, *stepobj, *attempt;
    step_pods *sp;
} observe_want;

static void observe_pod(void *ud, json_t *p) {
    const observe_want *ow = ud;
    step_pods *sp = ow->sp;
    json_t *l = tm_json_path(p, "metadata.labels");
    const char *w = l ? json_string_value(json_object_get(l, PL_LABEL_WF)) : NULL;
    const char *s = l ? json_string_value(json_object_get(l, PL_LABEL_STEP)) : NULL;
    const char *a = l ? json_string_value(json_object_get(l, "planner.tarema.io/attempt")) : NULL;
    if (!w || !s || strcmp(w, ow->wf) || strcmp(s, ow->stepobj) ||
        strcmp(tm_json_str(p, "metadata.namespace", ""), ow->ns) || !a || strcmp(a, ow->attempt))
        return;
    json_array_append(sp->pods, p);
    const char *phase = tm_json_str(p, "status.phase", "Pending");
    if (!strcmp(phase, "Succeeded"))
        sp->succeeded++;
    else if (!strcmp(phase, "Failed"))
        sp->failed++;
    else if (!strcmp(phase, "Running"))
        sp->running++;
    if (tm_json_str(p, "spec.nodeName", NULL))
        sp->bound++;
    if (pl_pod_gated(p))
        sp->gated++;
    int64_t st = ctl_get_time(p, "status.startTime");
    if (st >= 0 && (sp->first_start < 0 || st < sp->first_start))
        sp->first_start = st;
    json_t *cs = json_array_get(tm_json_path(p, "status.containerStatuses"), 0);
    int64_t en = ctl_get_time(cs, "state.terminated.finishedAt");
    if (en > sp->last_end)
        sp->last_end = en;
}

/* Walks the pod informer's store in place: copying it into an array, as this did, cost an
 * append per pod of the cluster for every step observed, several times a tick. */
void ctl_observe(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
                 step_pods *sp) {
    memset(sp, 0, sizeof *sp);
    sp->pods = json_array();
    sp->first_start = -1;
    char att[16];
    snprintf(att, sizeof att, "%d", attempt);
    observe_want ow = {.ns = ns, .wf = wf, .stepobj = stepobj, .attempt = att, .sp = sp};
    if (c->pods)
        tm_informer_foreach(c->pods, observe_pod, &ow);
}

/* Deletes a step's gated pods (all of them when everything), its Reservation and PodGroup. */
void ctl_release_step(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
                      int everything) {
    step_pods sp;
    ctl_observe(c, ns, wf, stepobj, attempt, &sp);
    size_t i;
    json_t *p;
    json_array_foreach(sp.pods, i, p) {
        if (everything || pl_pod_gated(p))
            delete_obj(c, "v1", "pods", ns, tm_json_str(p, "metadata.name", ""));
    }
    json_decref(sp.pods);
    char name[PL_OBJNAME_MAX];
    snprintf(name, sizeof name, "%s-%s", wf, stepobj);
    delete_obj(c, PL_GV, "reservations", ns, name);
    delete_obj(c, PL_PG_GV, "podgroups", ns, name);
}

/* ---- loop -------------------------------------------------------------------------------- */

static void tick(void *ud);

static void schedule_tick(ctl *c) {
    c->timer = tm_timer_add(c->k, c->cfg->tick_ms, tick, c);
    c->next_tick_ms = tm_kube_now_ms() + c->cfg->tick_ms;
}

/* A Workflow was created or its spec changed, a step's Reservation changed phase (admitted,
 * active) or one of its pods did (running, ended): the next tick comes at once instead of up to
 * a tick later, so that a new workflow is planned and a step whose window opened or whose
 * predecessor ended is released without that wait (turbine on kwok: LES planned 0.7 s after
 * submission and released 1 s after its Reservation was active, waiting for ticks both times).
 * Several changes together make one early tick. */
#define EARLY_TICK_MS 20
/* A stream of such changes (a wide step's pods ending one by one) makes at most one tick per
 * this many ms: each tick walks every Workflow with synchronous API calls. */
#define EARLY_TICK_GAP_MS 250
static void tick_soon(ctl *c) {
    int64_t now = tm_kube_now_ms(), at = now + EARLY_TICK_MS;
    if (at < c->last_tick_ms + EARLY_TICK_GAP_MS)
        at = c->last_tick_ms + EARLY_TICK_GAP_MS;
    if (!c->leading || !c->timer || c->next_tick_ms <= at)
        return;
    tm_timer_cancel(c->k, c->timer);
    c->timer = tm_timer_add(c->k, at - now, tick, c);
    c->next_tick_ms = at;
}

/* on_step_obj: the informer callback of pods and Reservations; only the planner's own objects
 * whose status.phase changed count. */
static void on_step_obj(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    ctl *c = ud;
    if (t != TM_WATCH_MODIFIED || !old ||
        !json_is_string(json_object_get(tm_json_path(obj, "metadata.labels"), PL_LABEL_WF)))
        return;
    if (strcmp(tm_json_str(obj, "status.phase", ""), tm_json_str(old, "status.phase", "")))
        tick_soon(c);
}

static void tick(void *ud) {
    ctl *c = ud;
    c->timer = NULL;
    c->last_tick_ms = tm_kube_now_ms();
    if (c->leading && tm_informer_synced(c->wfs) && tm_informer_synced(c->nodes) &&
        tm_informer_synced(c->pods) && tm_informer_synced(c->resvs)) {
        json_t *wfs = ctl_store_array(c->wfs), *w;
        size_t i;
        int64_t now = (int64_t)time(NULL);
        json_array_foreach(wfs, i, w) {
            ctl_reconcile(c, w, now);
        }
        json_decref(wfs);
        c->nodes_gone = 0;
    }
    schedule_tick(c);
}

static void on_wf(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    ctl *c = ud;
    /* a new workflow or a changed spec plans at once (the status is the controller's own) */
    if (t == TM_WATCH_DELETED ||
        (old && json_equal(json_object_get(obj, "spec"), json_object_get(old, "spec"))))
        return;
    char key[600];
    snprintf(key, sizeof key, "%s/%s", tm_json_str(obj, "metadata.namespace", ""),
             tm_json_str(obj, "metadata.name", ""));
    json_object_set_new(c->replan, key, json_true());
    tick_soon(c);
}

static void on_node(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    ctl *c = ud;
    if (t == TM_WATCH_DELETED)
        c->nodes_gone = 1;
}

static void on_ignore(void *ud, tm_watch_type t, json_t *obj, json_t *old) {}

static void started(void *ud) {
    ctl *c = ud;
    c->leading = 1;
    tm_info("leading: reconciling workflows");
}

static void stopped(void *ud) {
    ctl *c = ud;
    c->leading = 0;
    tm_warn("lost leadership: stopped acting");
}

int pl_ctl_run(const pl_ctl_config *cfg, volatile sig_atomic_t *stop) {
    ctl c = {.cfg = cfg};
    tm_err err = {0};
    int rc = 1;
    c.replan = json_object();
    c.warned = json_object();
    if (!(c.nodesel = pl_selector_parse(cfg->node_selector))) {
        fprintf(stderr, "tarema-planner: --node-selector '%s': expected k=v[,k=v...]\n",
                cfg->node_selector);
        goto out;
    }
    if (cfg->db) {
        tm_err werr = {0};
        if (!(c.waits = lab_waits_store_open(cfg->db, NULL, NULL, NULL, &werr)))
            tm_warn("learned waits unavailable, proactive steps use the default estimate "
                    "err=\"%s\"",
                    werr.msg);
    }
    if (cfg->identity)
        snprintf(c.identity, sizeof c.identity, "%s", cfg->identity);
    else {
        char host[256] = "unknown";
        gethostname(host, sizeof host - 1);
        snprintf(c.identity, sizeof c.identity, "%s_%ld", host, (long)getpid());
    }
    tm_kube_config *kc = tm_kube_config_auto(cfg->kubeconfig, cfg->context, &err);
    if (!kc || !(c.k = tm_kube_new(kc, &err))) {
        tm_kube_config_free(kc);
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
        goto out;
    }
    tm_kube_config_free(kc);
    char *wfpath = tm_kube_path(PL_GV, "workflows", cfg->namespace, NULL, NULL);
    char *rpath = tm_kube_path(PL_GV, "reservations", NULL, NULL, NULL);
    char *tpath = tm_kube_path(PL_GV, "taskprofiles", NULL, NULL, NULL);
    tm_informer_opts wo = {.path = wfpath, .on_event = on_wf, .ud = &c};
    tm_informer_opts no = {.path = "/api/v1/nodes", .on_event = on_node, .ud = &c};
    tm_informer_opts po = {.path = "/api/v1/pods", .on_event = on_step_obj, .ud = &c};
    tm_informer_opts ro = {.path = rpath, .on_event = on_step_obj, .ud = &c};
    tm_informer_opts to = {.path = tpath, .on_event = on_ignore, .ud = &c};
    int ok = (c.wfs = tm_informer_start(c.k, &wo, &err)) &&
             (c.nodes = tm_informer_start(c.k, &no, &err)) &&
             (c.pods = tm_informer_start(c.k, &po, &err)) &&
             (c.resvs = tm_informer_start(c.k, &ro, &err)) &&
             (c.profiles = tm_informer_start(c.k, &to, &err));
    free(wfpath);
    free(rpath);
    free(tpath);
    if (!ok) {
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
        goto out;
    }
    if (cfg->leader_elect) {
        tm_leader_opts lo = {.ns = cfg->lease_ns,
                             .name = cfg->lease_name,
                             .identity = c.identity,
                             .on_started_leading = started,
                             .on_stopped_leading = stopped,
                             .ud = &c};
        if (!(c.leader = tm_leader_start(c.k, &lo, &err))) {
            fprintf(stderr, "tarema-planner: leader election: %s\n", err.msg);
            goto out;
        }
    } else {
        c.leading = 1;
    }
    tm_info("planner controller started identity=%s namespace=%s cycle=%llds slot=%llds",
            c.identity, cfg->namespace ? cfg->namespace : "(all)", (long long)cfg->cycle_s,
            (long long)cfg->slot_s);
    schedule_tick(&c);
    rc = 0;
    while (!*stop) {
        if (tm_kube_run(c.k, 200, &err) < 0) {
            tm_error("kube loop failed err=\"%s\"", err.msg);
            rc = 1;
            break;
        }
    }
    if (c.leader)
        tm_leader_stop(c.leader, true);
    for (int i = 0; i < 10 && tm_kube_inflight(c.k) > 0; i++)
        tm_kube_run(c.k, 100, &err);
out:
    tm_kube_free(c.k);
    lab_waits_store_close(c.waits);
    json_decref(c.replan);
    json_decref(c.warned);
    json_decref(c.nodesel);
    return rc;
}
