/* controller.c: the Workflow controller (controller.h). I/O lives here; what to plan and which
 * objects to write come from the pure modules (kobj, occupancy, predict, solve). */
#include "planner/controller.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "labeler/waits_store.h"
#include "planner/kobj.h"
#include "planner/modes.h"
#include "planner/occupancy.h"
#include "planner/predict.h"
#include "planner/replan.h"
#include "planner/solve.h"

typedef struct ctl {
    const pl_ctl_config *cfg;
    tm_kube *k;
    tm_informer *wfs, *nodes, *pods, *resvs, *profiles;
    tm_leader *leader;
    tm_timer *timer;
    int64_t next_tick_ms; /* when the pending tick runs (monotonic ms) */
    int64_t last_tick_ms; /* when the last tick began */
    int leading;
    int nodes_gone;         /* a node went away since the last tick: replan everything */
    json_t *replan;         /* "ns/name" -> true: replan at the next tick */
    json_t *warned;         /* one-time warnings already logged */
    json_t *nodesel;        /* --node-selector as an object */
    lab_waits_store *waits; /* learned waits (--db); NULL: the default estimate */
    char identity[300];
} ctl;

/* ---- small helpers ----------------------------------------------------------------------- */

static void collect(void *ud, json_t *obj) {
    json_array_append((json_t *)ud, obj);
}

static json_t *store_array(const tm_informer *inf) {
    json_t *a = json_array();
    if (inf)
        tm_informer_foreach(inf, collect, a);
    return a;
}

static void warn_once(ctl *c, const char *key, const char *msg) {
    if (json_object_get(c->warned, key))
        return;
    json_object_set_new(c->warned, key, json_true());
    tm_warn("%s", msg);
}

static void event(ctl *c, const json_t *wfobj, const char *type, const char *reason,
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
static int create_obj(ctl *c, const char *path, const json_t *obj, const char *what) {
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
static void delete_resv_uid(ctl *c, const char *ns, const char *name, const char *uid) {
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

static json_t *step_status(json_t *steps, const char *name) {
    size_t i;
    json_t *s;
    json_array_foreach(steps, i, s) {
        if (!strcmp(tm_json_str(s, "name", ""), name))
            return s;
    }
    return NULL;
}

static int state_is(const json_t *ss, const char *st) {
    return !strcmp(tm_json_str(ss, "state", ""), st);
}

static int finished(const json_t *ss) {
    return state_is(ss, PL_ST_SUCCEEDED) || state_is(ss, PL_ST_FAILED) ||
           state_is(ss, PL_ST_CANCELLED);
}

static void set_time(json_t *o, const char *key, int64_t t) {
    char buf[40];
    json_object_set_new(o, key, json_string(pl_time_format(t, buf, sizeof buf)));
}

static int64_t get_time(const json_t *o, const char *key) {
    return pl_time_parse(tm_json_str(o, key, NULL));
}

/* The mode the Workflow asks for step i (spec.steps[i].mode); -1 when it is not one. */
static int requested_mode(const json_t *wfobj, int i, pl_mode *m) {
    json_t *st = json_array_get(tm_json_path(wfobj, "spec.steps"), (size_t)i);
    return pl_mode_parse(tm_json_str(st, "mode", NULL), m);
}

static pl_mode status_mode(const json_t *ss) {
    pl_mode m = PL_MODE_RESERVE;
    if (pl_mode_parse(tm_json_str(ss, "mode", NULL), &m) < 0 || m == PL_MODE_AUTO)
        m = PL_MODE_RESERVE;
    return m;
}

static int has_gate(const json_t *pod, const char *gate) {
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
static void refresh_estimate(ctl *c, const char *ns, const pl_step *s, json_t *ss, int64_t now) {
    int64_t at = get_time(ss, "estimatedAt");
    if (at >= 0 && now - at < c->cfg->slot_s && tm_json_str(ss, "estimateSource", NULL))
        return;
    int learned = 0;
    double e = step_estimate(c, ns, s, &learned);
    set_time(ss, "estimatedAt", now); /* tried again a slot later in any case */
    if (learned < 0 && tm_json_str(ss, "estimateSource", NULL))
        return; /* the database is away: keep the estimate it gave, not the default */
    json_object_set_new(ss, "estimateSeconds", json_integer((json_int_t)llround(e)));
    json_object_set_new(ss, "estimateSource", json_string(learned > 0 ? "learned" : "default"));
}

/* The node group of a node as the occupancy has it (planner/occupancy.c): its tarema.io/group
 * label, "all" without one or when the node is unknown. Borrowed from the informer's store. */
static const char *node_group(ctl *c, const char *node) {
    json_t *n = node ? tm_informer_get(c->nodes, NULL, node) : NULL;
    json_t *labels = tm_json_path(n, "metadata.labels");
    const char *g = labels ? json_string_value(json_object_get(labels, "tarema.io/group")) : NULL;
    return g ? g : "all";
}

/* The walltime of step s as status ss has it: predictedSeconds (its groups' walltime: the
 * planned nodes' until it binds, then the nodes it runs on), else its duration. */
static int64_t step_seconds(const json_t *ss, const pl_step *s) {
    long long v = tm_json_int(ss, "predictedSeconds", 0);
    return v > 0 ? (int64_t)v : s->duration_s;
}

/* The pods of one step (its current attempt) in ns, from the pod informer. */
typedef struct step_pods {
    json_t *pods; /* array, borrowed elements */
    int succeeded, failed, running, bound, gated;
    int64_t first_start, last_end;
} step_pods;

/* What observe() looks for, and where it counts what it finds. */
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
    int64_t st = get_time(p, "status.startTime");
    if (st >= 0 && (sp->first_start < 0 || st < sp->first_start))
        sp->first_start = st;
    json_t *cs = json_array_get(tm_json_path(p, "status.containerStatuses"), 0);
    int64_t en = get_time(cs, "state.terminated.finishedAt");
    if (en > sp->last_end)
        sp->last_end = en;
}

/* Walks the pod informer's store in place: copying it into an array, as this did, cost an
 * append per pod of the cluster for every step observed, several times a tick. */
static void observe(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
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
static void release_step(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
                         int everything) {
    step_pods sp;
    observe(c, ns, wf, stepobj, attempt, &sp);
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

/* ---- planning ------------------------------------------------------------------------------ */

/* Plans the steps of wf that are not released yet. Writes each one's start, end and nodes
 * into status steps, and counts those whose plan moved. Returns 0, 1 when waiting on the load
 * threshold, -1 with err when the workflow cannot be planned. */
static int plan_steps(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st,
                      int64_t now, int *moved, char *moved_names, size_t msize, json_t *status,
                      tm_err *err) {
    const pl_ctl_config *cfg = c->cfg;
    int n = wf->nsteps, *map = calloc((size_t)n, sizeof *map), np = 0, rc = -1;
    pl_workflow sub = {0};
    char ***names = NULL;
    pl_cluster *cl = NULL;
    pl_busy *busy = NULL;
    int nbusy = 0;
    pl_problem prob = {0};
    pl_plan plan = {0};
    json_t *nodes = NULL, *pods = NULL, *resvs = NULL, *profiles = NULL;
    if (!map)
        goto oom;
    for (int i = 0; i < n; i++) {
        json_t *ss = step_status(steps_st, wf->steps[i].name);
        map[i] = (!ss || state_is(ss, PL_ST_PLANNED) || !*tm_json_str(ss, "state", "")) ? np++ : -1;
    }
    if (np == 0) {
        rc = 0;
        goto out;
    }
    snprintf(sub.name, sizeof sub.name, "%s", wf->name);
    sub.nsteps = np;
    if (!(sub.steps = calloc((size_t)np, sizeof *sub.steps)) ||
        !(names = calloc((size_t)np, sizeof *names)))
        goto oom;
    for (int i = 0; i < n; i++) {
        if (map[i] < 0)
            continue;
        pl_step *d = &sub.steps[map[i]];
        *d = wf->steps[i];
        d->after = NULL;
        d->nafter = 0;
        d->not_before_s = 0;
        if (wf->steps[i].nafter &&
            !(names[map[i]] = calloc((size_t)wf->steps[i].nafter, sizeof *names[map[i]])))
            goto oom;
        for (int k = 0; k < wf->steps[i].nafter; k++) {
            int a = wf->steps[i].after[k];
            if (map[a] >= 0) {
                names[map[i]][d->nafter++] = strdup(wf->steps[a].name);
                continue;
            }
            /* a predecessor already released or running: not before its expected end */
            json_t *ss = step_status(steps_st, wf->steps[a].name);
            if (state_is(ss, PL_ST_SUCCEEDED))
                continue;
            /* planned end, actual start + walltime; not started: a whole walltime from now;
             * overrunning: as long again as its overrun (replan.h: no replan every slot) */
            int64_t end = pl_pred_expected_end(get_time(ss, "end"), get_time(ss, "actualStart"),
                                               step_seconds(ss, &wf->steps[a]), now, cfg->slot_s);
            if (end - now > d->not_before_s)
                d->not_before_s = end - now;
        }
    }
    if (pl_workflow_finish(&sub, names, wf->name, err) < 0) {
        names = NULL;
        goto out;
    }
    names = NULL;
    nodes = store_array(c->nodes);
    for (size_t k = json_array_size(nodes); k-- > 0;)
        if (!pl_selector_match(c->nodesel, json_array_get(nodes, k)))
            json_array_remove(nodes, k);
    pods = store_array(c->pods);
    resvs = store_array(c->resvs);
    profiles = store_array(c->profiles);
    if (!(cl = pl_world_cluster(nodes, err)))
        goto out;
    /* a group named in durations: that the cluster lacks is bad input: refused before anything
     * is created (later, a group whose nodes went away just goes unused) */
    if (!tm_json_str(status, "plannedAt", NULL) && pl_check_step_groups(&sub, cl, err) < 0)
        goto out;
    pl_world_opts wo = {.now = now,
                        .overrun_s = cfg->slot_s,
                        .unknown_hold_s = cfg->unknown_hold_s,
                        .skip_ns = tm_json_str(wfobj, "metadata.namespace", ""),
                        .skip_wf = wf->name,
                        .nodes = nodes};
    if (pl_world_busy(cl, pods, resvs, profiles, &wo, &busy, &nbusy) < 0)
        goto oom;
    if (pl_problem_init(&prob, &sub, cl, busy, nbusy, cfg->slot_s, PL_OBJ_MAKESPAN, err) < 0)
        goto out;
    double load = 0;
    if (cfg->load_threshold > 0 && !tm_json_str(status, "plannedAt", NULL)) {
        load = pl_predicted_load(&prob, prob.critical);
        /* above the threshold a step left to the planner runs proactive: only a workflow
         * whose steps all ask for reserve waits */
        int any_other = 0;
        for (int i = 0; i < n; i++) {
            pl_mode m = PL_MODE_AUTO;
            requested_mode(wfobj, i, &m);
            any_other |= m != PL_MODE_RESERVE;
        }
        if (load >= cfg->load_threshold && !any_other) {
            json_object_set_new(status, "message",
                                json_sprintf("waiting: predicted load %.0f %% is at or above the "
                                             "threshold of %.0f %%",
                                             load * 100, cfg->load_threshold * 100));
            rc = 1;
            goto out;
        }
    }
    if (pl_plan_init(&plan, &prob) < 0)
        goto oom;
    pl_outcome o;
    if (pl_solve(&prob, PL_SOLVER_AUTO, (double)cfg->time_limit_s, &plan, &o, err) < 0)
        goto out;
    for (int i = 0; i < n; i++) {
        if (map[i] < 0)
            continue;
        int j = map[i];
        const pl_step *s = &wf->steps[i];
        json_t *ss = step_status(steps_st, s->name);
        if (!ss) {
            ss = json_pack("{s:s}", "name", s->name);
            json_array_append_new(steps_st, ss);
        }
        int64_t start = now + (int64_t)plan.start[j] * cfg->slot_s;
        int64_t end = now + (int64_t)plan.end[j] * cfg->slot_s;
        json_t *nl = json_array();
        int64_t wsec = 0; /* the walltime on the planned nodes' groups: the slowest one's */
        for (int k = plan.off[j]; k < plan.off[j + 1]; k++) {
            const pl_node *pn = &cl->nodes[plan.node[k]];
            const char *grp = cl->type_names[pn->type];
            int64_t w = pl_step_seconds_on(s, &grp, 1);
            json_array_append_new(nl, json_string(pn->name));
            if (w > wsec)
                wsec = w;
        }
        int64_t ostart = get_time(ss, "start"), oend = get_time(ss, "end");
        json_t *onodes = json_object_get(ss, "nodes");
        int had = ostart >= 0;
        /* a move of less than a slot is the clock advancing, not a new plan */
        int differs = !had || llabs((long long)(start - ostart)) >= cfg->slot_s ||
                      llabs((long long)(end - oend)) >= cfg->slot_s || !json_equal(nl, onodes);
        if (differs) {
            if (had) {
                (*moved)++;
                size_t len = strlen(moved_names);
                char a[40], b[40];
                snprintf(moved_names + len, msize - len, "%s%s %s..%s", len ? "; " : "", s->name,
                         pl_time_format(start, a, sizeof a), pl_time_format(end, b, sizeof b));
                json_object_set_new(ss, "moved", json_true());
            }
            set_time(ss, "start", start);
            set_time(ss, "end", end);
            json_object_set(ss, "nodes", nl);
            /* the scheduler holds the window it admitted, whatever the spec says later: one
             * that ends by the new start can never take the step's pods, so it is replaced
             * (a refused one waiting for its retry is replaced then) */
            char obj[PL_OBJNAME_MAX];
            pl_step_object_name(wf->name, s->name, obj, sizeof obj);
            json_t *rv =
                tm_informer_get(c->resvs, tm_json_str(wfobj, "metadata.namespace", ""), obj);
            if (had && rv && cfg->require_admission &&
                !tm_json_str(ss, "reservationRetryAt", NULL) &&
                strcmp(tm_json_str(rv, "metadata.uid", ""),
                       tm_json_str(ss, "reservationEndedUid", "")) &&
                pl_resv_needs_renewal(tm_json_str(rv, "status.phase", ""),
                                      get_time(rv, "status.heldStartTime"),
                                      get_time(rv, "status.heldEndTime"), start, cfg->slot_s)) {
                json_object_set_new(ss, "reservationRenew", json_true());
                json_object_set_new(ss, "reservationEndedUid",
                                    json_string(tm_json_str(rv, "metadata.uid", "")));
                char note[600], a[40];
                snprintf(note, sizeof note,
                         "step %s: its new window opens at %s, outside the one Reservation %s "
                         "holds (%s..%s): reserving it again",
                         s->name, pl_time_format(start, a, sizeof a), obj,
                         tm_json_str(rv, "status.heldStartTime", "?"),
                         tm_json_str(rv, "status.heldEndTime", "?"));
                event(c, wfobj, "Normal", "ReservationRenewed", note);
            }
        }
        json_decref(nl);
        json_object_set_new(ss, "state", json_string(PL_ST_PLANNED));
        json_object_set_new(ss, "predictedSeconds", json_integer(wsec ? wsec : s->duration_s));
        if (!tm_json_str(ss, "mode", NULL)) { /* chosen once: a replan does not switch it */
            pl_mode req = PL_MODE_AUTO;
            requested_mode(wfobj, i, &req);
            pl_mode m = pl_mode_choose(req, load, cfg->load_threshold);
            json_object_set_new(ss, "mode", json_string(pl_mode_name(m)));
            if (m == PL_MODE_PROACTIVE)
                refresh_estimate(c, tm_json_str(wfobj, "metadata.namespace", "default"), s, ss,
                                 now);
        }
        if (status_mode(ss) == PL_MODE_RESERVE)
            set_time(ss, "predictedStart", start);
    }
    json_object_set_new(status, "solver", json_string(o.solver));
    json_object_set_new(status, "optimal", json_boolean(o.optimal));
    set_time(status, "plannedAt", now);
    rc = 0;
    goto out;
oom:
    tm_err_set(err, "out of memory");
out:
    if (names)
        for (int i = 0; i < np; i++) {
            for (int k = 0; names[i] && k < sub.steps[i].nafter; k++)
                free(names[i][k]);
            free(names[i]);
        }
    free(names);
    pl_plan_free(&plan);
    if (prob.wf)
        pl_problem_free(&prob);
    free(busy);
    pl_cluster_free(cl);
    for (int i = 0; i < sub.nsteps && sub.steps; i++)
        free(sub.steps[i].after);
    free(sub.steps);
    free(sub.order);
    free(map);
    json_decref(nodes);
    json_decref(pods);
    json_decref(resvs);
    json_decref(profiles);
    return rc;
}

/* ---- one workflow ------------------------------------------------------------------------- */

/* Objects of a planned step: PodGroup, Reservation (created, or patched when its plan
 * moved), and its gated pods. */
static void ensure_objects(ctl *c, const json_t *wfobj, const pl_step *s, const json_t *step_json,
                           json_t *ss, const char *stepobj, int attempt) {
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    char name[PL_OBJNAME_MAX];
    snprintf(name, sizeof name, "%s-%s", tm_json_str(wfobj, "metadata.name", ""), stepobj);
    json_t *nl = json_object_get(ss, "nodes");
    int np = (int)json_array_size(nl);
    const char **nodes = calloc((size_t)(np ? np : 1), sizeof *nodes);
    for (int k = 0; nodes && k < np; k++)
        nodes[k] = json_string_value(json_array_get(nl, (size_t)k));
    int64_t start = get_time(ss, "start"), end = get_time(ss, "end");
    char *path;
    if (!tm_json_bool(ss, "podGroupCreated", false)) {
        json_t *pg = pl_podgroup_object(wfobj, s);
        path = tm_kube_path(PL_PG_GV, "podgroups", ns, NULL, NULL);
        int r = create_obj(c, path, pg, name);
        if (r == -2)
            warn_once(c, "podgroup-crd",
                      "PodGroup CRD (scheduling.x-k8s.io/v1alpha1) not installed: steps run "
                      "without their PodGroup");
        if (r != -1)
            json_object_set_new(ss, "podGroupCreated", json_true());
        free(path);
        json_decref(pg);
    }
    json_t *have = tm_informer_get(c->resvs, ns, name);
    pl_mode mode = status_mode(ss);
    /* renew: the old one was deleted (delete_renewed) and a new one is admitted for the new
     * window; while a refused step waits for its retry, it gets none */
    int renew = tm_json_bool(ss, "reservationRenew", false);
    if (renew && have &&
        strcmp(tm_json_str(have, "metadata.uid", ""), tm_json_str(ss, "reservationEndedUid", ""))) {
        /* the new one exists already (a status written late): renewed */
        renew = 0;
        json_object_del(ss, "reservationRenew");
    }
    int waiting = tm_json_str(ss, "reservationRetryAt", NULL) != NULL;
    if (mode == PL_MODE_RESERVE && !waiting &&
        (!have || renew || tm_json_bool(ss, "moved", false))) {
        json_t *r = NULL;
        if (have && !renew) {
            json_t *patch = json_pack(
                "{s:o}", "spec",
                pl_reservation_spec(s, start, end, nodes, np, name, c->cfg->scheduler_name));
            path = tm_kube_path(PL_GV, "reservations", ns, name, NULL);
            tm_err err = {0};
            r = tm_kube_patch(c->k, path, TM_PATCH_MERGE, patch, &err);
            if (!r && err.http_status != 404)
                tm_warn("patch reservation %s/%s failed err=\"%s\"", ns, name, err.msg);
            free(path);
            json_decref(patch);
        }
        if (!r) { /* new, or deleted since the informer saw it (a retry releases it) */
            json_t *rv =
                pl_reservation_object(wfobj, s, start, end, nodes, np, c->cfg->scheduler_name);
            path = tm_kube_path(PL_GV, "reservations", ns, NULL, NULL);
            int cr = create_obj(c, path, rv, name);
            if (cr == -2)
                warn_once(c, "resv-crd", "Reservation CRD (tarema.io/v1alpha1) not installed");
            if (cr == 0) /* 1 (409): the old one is not gone yet; tried again next tick */
                json_object_del(ss, "reservationRenew");
            free(path);
            json_decref(rv);
        }
        json_decref(r);
        json_object_del(ss, "moved");
    }
    free(nodes);
    path = tm_kube_path("v1", "pods", ns, NULL, NULL);
    for (int i = 0; i < s->pods; i++) {
        json_t *pod = pl_pod_object(wfobj, s, step_json, i, attempt, c->cfg->scheduler_name);
        if (json_object_size(c->nodesel))
            json_object_set(json_object_get(pod, "spec"), "nodeSelector", c->nodesel);
        /* proactive: a second gate holds the pods until every predecessor succeeded */
        if (mode == PL_MODE_PROACTIVE && s->nafter)
            json_array_append_new(tm_json_path(pod, "spec.schedulingGates"),
                                  json_pack("{s:s}", "name", PL_GATE_ORDER));
        const char *pn = tm_json_str(pod, "metadata.name", "");
        if (!tm_informer_get(c->pods, ns, pn))
            create_obj(c, path, pod, pn);
        json_decref(pod);
    }
    free(path);
}

/* Removes the planner's gate. left_s: what is left of the step's window; it becomes the pods'
 * expected duration, so that a step released a moment after its window opened is still
 * expected to end with its window (at the next step's reservation, not a moment into it). */
static void ungate(ctl *c, const char *ns, const json_t *pods, const char *gate, int64_t left_s) {
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (!has_gate(p, gate))
            continue;
        /* the gate is the only one the planner adds: keep any other gate in place */
        json_t *gates = json_array(), *g;
        size_t k;
        json_array_foreach(tm_json_path(p, "spec.schedulingGates"), k, g) {
            if (strcmp(tm_json_str(g, "name", ""), gate))
                json_array_append(gates, g);
        }
        json_t *patch = json_pack("[{s:s, s:s, s:o}]", "op", "replace", "path",
                                  "/spec/schedulingGates", "value", gates);
        if (left_s >= 0) /* < 0: leave the expected duration as it is */
            json_array_append_new(
                patch, json_pack("{s:s, s:s, s:o}", "op", "add", "path",
                                 "/metadata/annotations/tarema.io~1expected-duration", "value",
                                 json_sprintf("%llds", (long long)(left_s > 1 ? left_s : 1))));
        char *path = tm_kube_path("v1", "pods", ns, tm_json_str(p, "metadata.name", ""), NULL);
        tm_err err = {0};
        json_t *r = tm_kube_patch(c->k, path, TM_PATCH_JSON, patch, &err);
        if (!r)
            tm_warn("ungate %s/%s failed err=\"%s\"", ns, tm_json_str(p, "metadata.name", ""),
                    err.msg);
        json_decref(r);
        json_decref(patch);
        free(path);
    }
}

/* What a reserve step's pods may declare as their expected duration at `now`: what is left of
 * the window [.., end) less PL_START_MARGIN_S (now is whole seconds, and the scheduler looks a
 * moment later), at least 1 s. */
#define PL_START_MARGIN_S 2
static int64_t window_left_s(int64_t end, int64_t now) {
    int64_t left = end - now - PL_START_MARGIN_S;
    return left > 1 ? left : 1;
}

/* A released reserve step whose pods are not bound yet: the scheduler measures their expected
 * duration from each attempt, so an attempt a few seconds into the window (a first one refused,
 * a node still busy) would see them end after the window, into the next step's reservation on
 * the same node, and refuse them until the window is over. Each tick, until they are bound or the
 * window is over, their expected duration is brought back to what is left of it. */
static void refresh_left(ctl *c, const char *ns, const json_t *pods, int64_t end, int64_t now) {
    if (end - now <= PL_START_MARGIN_S)
        return; /* the window is (nearly) over: the step is late, replanning handles it */
    char want[32];
    snprintf(want, sizeof want, "%llds", (long long)window_left_s(end, now));
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (*tm_json_str(p, "spec.nodeName", "") || has_gate(p, PL_GATE))
            continue;
        json_t *ann = tm_json_path(p, "metadata.annotations");
        const char *have = ann ? json_string_value(json_object_get(ann, PL_ANN_EXPECT)) : NULL;
        if (have && !strcmp(have, want))
            continue;
        json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", PL_ANN_EXPECT, want);
        char *path = tm_kube_path("v1", "pods", ns, tm_json_str(p, "metadata.name", ""), NULL);
        tm_err err = {0};
        json_t *r = patch && path ? tm_kube_patch(c->k, path, TM_PATCH_MERGE, patch, &err) : NULL;
        if (!r)
            tm_warn("expected duration of %s/%s not refreshed err=\"%s\"", ns,
                    tm_json_str(p, "metadata.name", ""), err.msg);
        json_decref(r);
        json_decref(patch);
        free(path);
    }
}

static void set_phase_fields(json_t *status, json_t *steps_st) {
    int all_done = 1, any_started = 0;
    int64_t next = -1, pend = -1, first = -1, last = -1;
    size_t i;
    json_t *ss;
    json_array_foreach(steps_st, i, ss) {
        int64_t st = get_time(ss, "start"), en = get_time(ss, "end");
        int64_t as = get_time(ss, "actualStart"), ae = get_time(ss, "actualEnd");
        if (!state_is(ss, PL_ST_SUCCEEDED))
            all_done = 0;
        if (!state_is(ss, PL_ST_PLANNED) && *tm_json_str(ss, "state", ""))
            any_started = 1;
        if (state_is(ss, PL_ST_PLANNED) && st >= 0 && (next < 0 || st < next))
            next = st;
        int64_t e = ae >= 0 ? ae : en;
        if (e > pend)
            pend = e;
        int64_t s0 = as >= 0 ? as : st;
        if (s0 >= 0 && (first < 0 || s0 < first))
            first = s0;
        if (ae > last)
            last = ae;
    }
    const char *phase = all_done && json_array_size(steps_st) ? "Succeeded"
                        : any_started                         ? "Running"
                                                              : "Planned";
    json_object_set_new(status, "phase", json_string(phase));
    if (next >= 0)
        set_time(status, "nextStart", next);
    else
        json_object_del(status, "nextStart");
    if (pend >= 0)
        set_time(status, "predictedEnd", pend);
    if (first >= 0 && pend >= 0)
        json_object_set_new(status, "makespanSeconds", json_integer(pend - first));
    if (all_done && first >= 0 && last >= 0)
        json_object_set_new(status, "actualMakespanSeconds", json_integer(last - first));
}

static void write_status(ctl *c, const json_t *wfobj, json_t *status) {
    if (json_equal(status, json_object_get(wfobj, "status")))
        return;
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    char *path =
        tm_kube_path(PL_GV, "workflows", ns, tm_json_str(wfobj, "metadata.name", ""), "status");
    /* a merge patch replaces the steps array whole; null deletes what is gone */
    json_t *patch = json_pack("{s:O}", "status", status), *ps = json_object_get(patch, "status");
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(wfobj, "status"), key, v) {
        if (!json_object_get(status, key))
            json_object_set_new(ps, key, json_null()); /* gone from status: delete it */
    }
    tm_err err = {0};
    json_t *r = tm_kube_patch(c->k, path, TM_PATCH_MERGE, patch, &err);
    if (!r)
        tm_warn("status of workflow %s/%s failed err=\"%s\"", ns,
                tm_json_str(wfobj, "metadata.name", ""), err.msg);
    json_decref(r);
    json_decref(patch);
    free(path);
}

/* Releases every unfinished step: gated pods, reservations, pod groups. */
static void release_unfinished(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st,
                               int everything) {
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    for (int i = 0; i < wf->nsteps; i++) {
        json_t *ss = step_status(steps_st, wf->steps[i].name);
        if (ss && finished(ss))
            continue;
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        release_step(c, ns, wf->name, obj + strlen(wf->name) + 1, attempt, everything);
        if (!ss) {
            ss = json_pack("{s:s}", "name", wf->steps[i].name);
            json_array_append_new(steps_st, ss);
        }
        json_object_set_new(ss, "state", json_string(PL_ST_CANCELLED));
    }
}

/* A planned reserve step's Reservation that ended without the step (docs/planner.md, Refused
 * reservations): refused (Failed) -> planned again from fresh occupancy after a backoff, with a
 * new Reservation, or, when no replan can help or the retries are used up, the step falls back
 * to on-completion; Expired or Released (its window passed while the step waited) -> planned
 * and reserved again now. Each ended Reservation is handled once (its uid). Also starts the
 * retries whose time has come. Returns 1 when the workflow must be replanned now. */
static int check_reservations(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st,
                              int64_t now) {
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    int need = 0;
    for (int i = 0; i < wf->nsteps && c->cfg->require_admission; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *ss = step_status(steps_st, s->name);
        if (!state_is(ss, PL_ST_PLANNED) || status_mode(ss) != PL_MODE_RESERVE)
            continue;
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, s->name, obj, sizeof obj);
        json_t *rv = tm_informer_get(c->resvs, ns, obj);
        const char *ph = tm_json_str(rv, "status.phase", "");
        const char *uid = tm_json_str(rv, "metadata.uid", "");
        int ended = rv && *uid && strcmp(uid, tm_json_str(ss, "reservationEndedUid", "")) &&
                    !tm_json_bool(ss, "reservationRenew", false) &&
                    pl_resv_needs_renewal(ph, -1, -1, 0, 1);
        if (ended && !strcmp(ph, "Failed")) {
            const char *why = tm_json_str(rv, "status.message", "no reason given");
            int n = (int)tm_json_int(ss, "reservationRefusals", 0) + 1;
            int64_t at = now;
            json_object_set_new(ss, "reservationEndedUid", json_string(uid));
            json_object_set_new(ss, "reservationRefusals", json_integer(n));
            json_object_set_new(ss, "reservationMessage", json_string(why));
            char note[1200];
            if (pl_refusal_decide(why, n, c->cfg->reservation_retries, now, c->cfg->slot_s,
                                  c->cfg->cycle_s, &at)) {
                /* the documented per-step mode: its pods go when its predecessors succeeded */
                json_object_set_new(ss, "mode", json_string(pl_mode_name(PL_MODE_ON_COMPLETION)));
                json_object_del(ss, "reservationRetryAt");
                json_object_del(ss, "predictedStart");
                snprintf(note, sizeof note,
                         "step %s: Reservation %s refused by the scheduler (%s); %s: the step "
                         "runs on-completion, without a reservation (its pods are released "
                         "when its predecessors have succeeded)",
                         s->name, obj, why,
                         pl_refusal_permanent(why) ? "no plan can be admitted" : "no retries left");
                event(c, wfobj, "Warning", "ReservationFallback", note);
            } else {
                set_time(ss, "reservationRetryAt", at);
                snprintf(note, sizeof note,
                         "step %s: Reservation %s refused by the scheduler (%s): planning the "
                         "step again from fresh occupancy in %lld s (refusal %d, %d retries)",
                         s->name, obj, why, (long long)(at - now), n, c->cfg->reservation_retries);
                event(c, wfobj, "Warning", "ReservationRefused", note);
            }
        } else if (ended) { /* Expired or Released before the step was released */
            json_object_set_new(ss, "reservationEndedUid", json_string(uid));
            json_object_set_new(ss, "reservationRenew", json_true());
            char note[600];
            snprintf(note, sizeof note,
                     "step %s: Reservation %s %s before the step could start: planning and "
                     "reserving it again",
                     s->name, obj, !strcmp(ph, "Expired") ? "expired" : "was released");
            event(c, wfobj, "Normal", "ReservationRenewed", note);
            need = 1;
        }
        int64_t at = get_time(ss, "reservationRetryAt");
        if (at >= 0 && now >= at) {
            json_object_del(ss, "reservationRetryAt");
            json_object_set_new(ss, "reservationRenew", json_true());
            need = 1;
        }
    }
    return need;
}

/* Whether planned step ss, renewed, gets a new window overlapping [hs, he) (a held window). */
static int renewed_overlaps(json_t *steps_st, int64_t hs, int64_t he) {
    size_t k;
    json_t *o;
    json_array_foreach(steps_st, k, o) {
        if (state_is(o, PL_ST_PLANNED) && tm_json_bool(o, "reservationRenew", false) &&
            !tm_json_str(o, "reservationRetryAt", NULL) && get_time(o, "start") < he &&
            hs < get_time(o, "end"))
            return 1;
    }
    return 0;
}

/* The scheduler admits a renewed step's new Reservation against the held ones, the workflow's
 * own included, which the planner planned without: a stale hold of its own (a window the step
 * no longer plans) overlapping a renewed step's new window would make the scheduler refuse it.
 * So such holds are renewed too (until no more overlap), and every Reservation to renew is
 * deleted before any new one is created (in ensure_objects). Stale holds that overlap nothing
 * renewed are kept (a patched spec; replaced when pl_resv_needs_renewal says so). */
static void delete_renewed(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st) {
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    for (int changed = 1, round = 0; changed && round <= wf->nsteps; round++) {
        changed = 0;
        for (int i = 0; i < wf->nsteps; i++) {
            json_t *ss = step_status(steps_st, wf->steps[i].name);
            if (!state_is(ss, PL_ST_PLANNED) || status_mode(ss) != PL_MODE_RESERVE ||
                tm_json_str(ss, "reservationRetryAt", NULL) ||
                tm_json_bool(ss, "reservationRenew", false))
                continue;
            char obj[PL_OBJNAME_MAX];
            pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
            json_t *rv = tm_informer_get(c->resvs, ns, obj);
            int64_t hs = get_time(rv, "status.heldStartTime"),
                    he = get_time(rv, "status.heldEndTime");
            int stale = rv && hs >= 0 && he >= 0 &&
                        strcmp(tm_json_str(rv, "metadata.uid", ""),
                               tm_json_str(ss, "reservationEndedUid", "")) &&
                        (llabs((long long)(hs - get_time(ss, "start"))) >= c->cfg->slot_s ||
                         llabs((long long)(he - get_time(ss, "end"))) >= c->cfg->slot_s);
            if (!stale || !renewed_overlaps(steps_st, hs, he))
                continue;
            json_object_set_new(ss, "reservationRenew", json_true());
            json_object_set_new(ss, "reservationEndedUid",
                                json_string(tm_json_str(rv, "metadata.uid", "")));
            char note[600];
            snprintf(note, sizeof note,
                     "step %s: Reservation %s holds %s..%s, no longer its planned window, where "
                     "another step of the workflow is reserved again: reserving it again too",
                     wf->steps[i].name, obj, tm_json_str(rv, "status.heldStartTime", ""),
                     tm_json_str(rv, "status.heldEndTime", ""));
            event(c, wfobj, "Normal", "ReservationRenewed", note);
            changed = 1;
        }
    }
    for (int i = 0; i < wf->nsteps; i++) {
        json_t *ss = step_status(steps_st, wf->steps[i].name);
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
        /* the old one, by its uid: once ensure_objects made the new one, it is left alone */
        const char *old = tm_json_str(ss, "reservationEndedUid", "");
        if (state_is(ss, PL_ST_PLANNED) && status_mode(ss) == PL_MODE_RESERVE &&
            !tm_json_str(ss, "reservationRetryAt", NULL) &&
            tm_json_bool(ss, "reservationRenew", false) && *old)
            delete_resv_uid(c, ns, obj, old);
    }
}

static void reconcile(ctl *c, json_t *wfobj, int64_t now) {
    const char *ns = tm_json_str(wfobj, "metadata.namespace", "default");
    const char *phase = tm_json_str(wfobj, "status.phase", "");
    if (tm_json_str(wfobj, "metadata.deletionTimestamp", NULL) || !strcmp(phase, "Succeeded") ||
        !strcmp(phase, "Failed") || !strcmp(phase, "Cancelled"))
        return;
    json_t *status = json_deep_copy(json_object_get(wfobj, "status"));
    if (!json_is_object(status)) {
        json_decref(status);
        status = json_object();
    }
    json_t *steps_st = json_object_get(status, "steps");
    if (!json_is_array(steps_st)) {
        steps_st = json_array();
        json_object_set_new(status, "steps", steps_st);
    }
    tm_err err = {0};
    pl_workflow *wf = pl_workflow_from_object(wfobj, &err);
    if (!wf) {
        json_object_set_new(status, "phase", json_string("Failed"));
        json_object_set_new(status, "message", json_string(err.msg));
        event(c, wfobj, "Warning", "Invalid", err.msg);
        write_status(c, wfobj, status);
        json_decref(status);
        return;
    }
    for (int i = 0; i < wf->nsteps; i++) {
        pl_mode m;
        if (requested_mode(wfobj, i, &m) < 0) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "step %s: mode must be reserve, proactive or on-completion (or absent)",
                     wf->steps[i].name);
            json_object_set_new(status, "phase", json_string("Failed"));
            json_object_set_new(status, "message", json_string(msg));
            event(c, wfobj, "Warning", "Invalid", msg);
            write_status(c, wfobj, status);
            json_decref(status);
            pl_workflow_free(wf);
            return;
        }
    }
    json_t *profiles = store_array(c->profiles);
    pl_predict_durations(wf, profiles);
    json_decref(profiles);
    if (tm_json_bool(wfobj, "spec.cancel", false)) {
        release_unfinished(c, wfobj, wf, steps_st, 0);
        json_object_set_new(status, "phase", json_string("Cancelled"));
        json_object_set_new(status, "message",
                            json_string("cancelled: reservations and gated pods deleted"));
        json_object_del(status, "nextStart");
        event(c, wfobj, "Normal", "Cancelled", "reservations and gated pods deleted");
        write_status(c, wfobj, status);
        goto out;
    }
    char key[600];
    snprintf(key, sizeof key, "%s/%s", ns, wf->name);
    int need = !tm_json_str(status, "plannedAt", NULL) || c->nodes_gone ||
               json_object_get(c->replan, key) != NULL;
    int64_t planned_at = get_time(status, "plannedAt");
    if (planned_at >= 0 && now - planned_at >= c->cfg->cycle_s)
        need = 1;
    long long retries = tm_json_int(wfobj, "spec.retries", c->cfg->retries);
    const char *failed_step = NULL;
    /* 1. observe */
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *ss = step_status(steps_st, s->name);
        if (!ss || finished(ss) || !*tm_json_str(ss, "state", ""))
            continue;
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, s->name, obj, sizeof obj);
        const char *stepobj = obj + strlen(wf->name) + 1;
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        step_pods sp;
        observe(c, ns, wf->name, stepobj, attempt, &sp);
        /* bound: the walltime on the groups it really runs on (the slowest) */
        if (!state_is(ss, PL_ST_PLANNED) && sp.bound > 0) {
            int64_t w = 0;
            size_t k;
            json_t *p;
            json_array_foreach(sp.pods, k, p) {
                const char *node = tm_json_str(p, "spec.nodeName", NULL);
                const char *grp = node_group(c, node);
                int64_t wk = node ? pl_step_seconds_on(s, &grp, 1) : 0;
                if (wk > w)
                    w = wk;
            }
            if (w > 0)
                json_object_set_new(ss, "predictedSeconds", json_integer(w));
        }
        /* A released step's pods all existed when their gate was removed: one gone since
         * (deleted, or its node deleted and the pod collected) is a failed pod. */
        int gone = s->pods - (int)json_array_size(sp.pods);
        if (!state_is(ss, PL_ST_PLANNED) && gone > 0 && sp.succeeded < s->pods)
            sp.failed += gone;
        if (sp.failed > 0) {
            if (attempt < retries) {
                release_step(c, ns, wf->name, stepobj, attempt, 1);
                json_object_set_new(ss, "attempts", json_integer(attempt + 1));
                json_object_set_new(ss, "state", json_string(PL_ST_PLANNED));
                json_object_del(ss, "podGroupCreated");
                json_object_del(ss, "actualStart");
                char note[400];
                snprintf(note, sizeof note, "step %s failed; retry %d of %lld", s->name,
                         attempt + 1, retries);
                event(c, wfobj, "Warning", "StepRetry", note);
                need = 1;
            } else {
                json_object_set_new(ss, "state", json_string(PL_ST_FAILED));
                set_time(ss, "actualEnd", sp.last_end > 0 ? sp.last_end : now);
                failed_step = s->name;
            }
        } else if (sp.succeeded == s->pods) {
            int64_t end = sp.last_end > 0 ? sp.last_end : now;
            json_object_set_new(ss, "state", json_string(PL_ST_SUCCEEDED));
            set_time(ss, "actualEnd", end);
            int64_t as = get_time(ss, "actualStart");
            if (as < 0 && sp.first_start >= 0)
                set_time(ss, "actualStart", as = sp.first_start);
            if (as >= 0)
                json_object_set_new(ss, "actualSeconds", json_integer(end - as));
            /* an early end matters only to the steps after it that wait for nothing else:
             * early against its own window, or against the earliest window of such a planned
             * step (a late step moved those by its expected overrun, replan.h, and may end well
             * before it). A successor still waiting for another predecessor cannot move
             * earlier: replanning for it would move nothing (found in review). */
            int has_next = 0;
            int64_t next = -1;
            for (int j = 0; j < wf->nsteps; j++)
                for (int k = 0; k < wf->steps[j].nafter; k++) {
                    if (wf->steps[j].after[k] != i)
                        continue;
                    int others_done = 1;
                    for (int o = 0; o < wf->steps[j].nafter; o++) {
                        int p = wf->steps[j].after[o];
                        if (p != i &&
                            !state_is(step_status(steps_st, wf->steps[p].name), PL_ST_SUCCEEDED))
                            others_done = 0;
                    }
                    if (!others_done)
                        continue;
                    has_next = 1;
                    json_t *js = step_status(steps_st, wf->steps[j].name);
                    int64_t st = state_is(js, PL_ST_PLANNED) ? get_time(js, "start") : -1;
                    if (st >= 0 && (next < 0 || st < next))
                        next = st;
                }
            int64_t ref = get_time(ss, "end");
            if (next > ref)
                ref = next;
            if (has_next && end < ref - c->cfg->slot_s) {
                char note[300];
                snprintf(note, sizeof note, "step %s ended %lld s early: replanning", s->name,
                         (long long)(ref - end));
                event(c, wfobj, "Normal", "StepEarly", note);
                need = 1;
            }
        } else if (state_is(ss, PL_ST_RELEASED) && sp.running + sp.succeeded == s->pods) {
            json_object_set_new(ss, "state", json_string(PL_ST_RUNNING));
            if (sp.first_start >= 0)
                set_time(ss, "actualStart", sp.first_start);
        }
        if ((state_is(ss, PL_ST_RUNNING) || state_is(ss, PL_ST_RELEASED)) &&
            now > get_time(ss, "end") && !tm_json_bool(ss, "late", false)) {
            char note[300];
            snprintf(note, sizeof note, "step %s runs past its planned end: replanning", s->name);
            json_object_set_new(ss, "late", json_true());
            event(c, wfobj, "Warning", "StepLate", note);
            need = 1;
        }
        json_decref(sp.pods);
    }
    if (failed_step) {
        release_unfinished(c, wfobj, wf, steps_st, 0);
        char note[300];
        snprintf(note, sizeof note,
                 "step %s failed (no retry left): later reservations and gated pods released",
                 failed_step);
        json_object_set_new(status, "phase", json_string("Failed"));
        json_object_set_new(status, "message", json_string(note));
        json_object_del(status, "nextStart");
        event(c, wfobj, "Warning", "Failed", note);
        write_status(c, wfobj, status);
        goto out;
    }
    /* Reservations refused or ended before their step: replan (now, or after a backoff) */
    if (check_reservations(c, wfobj, wf, steps_st, now))
        need = 1;
    /* A planned step whose window opened while a predecessor still runs: replan once a slot
     * (the predecessor's expected end then moves it past now, by its walltime or its overrun:
     * it comes back only when that estimate is passed too). */
    for (int i = 0; i < wf->nsteps && !need; i++) {
        json_t *ss = step_status(steps_st, wf->steps[i].name);
        if (state_is(ss, PL_ST_PLANNED) && status_mode(ss) == PL_MODE_RESERVE &&
            now >= get_time(ss, "start") && now - planned_at >= c->cfg->slot_s)
            for (int k = 0; k < wf->steps[i].nafter; k++)
                if (!state_is(step_status(steps_st, wf->steps[wf->steps[i].after[k]].name),
                              PL_ST_SUCCEEDED))
                    need = 1;
        /* a planned node went away */
        json_t *nl = json_object_get(ss, "nodes"), *nn;
        size_t k;
        if (state_is(ss, PL_ST_PLANNED)) {
            json_array_foreach(nl, k, nn) {
                if (!tm_informer_get(c->nodes, NULL, json_string_value(nn)))
                    need = 1;
            }
        }
    }
    /* 2. plan */
    if (need) {
        int moved = 0;
        char moved_names[2048] = "";
        int pr = plan_steps(c, wfobj, wf, steps_st, now, &moved, moved_names, sizeof moved_names,
                            status, &err);
        json_object_del(c->replan, key);
        if (pr < 0) {
            if (!tm_json_str(status, "plannedAt", NULL)) { /* nothing created yet */
                json_object_set_new(status, "phase", json_string("Failed"));
                json_object_set_new(status, "message", json_string(err.msg));
                event(c, wfobj, "Warning", "Unplannable", err.msg);
                write_status(c, wfobj, status);
                goto out;
            }
            event(c, wfobj, "Warning", "ReplanFailed", err.msg);
        } else if (pr == 1) {
            json_object_set_new(status, "phase", json_string("Pending"));
            write_status(c, wfobj, status);
            goto out;
        } else if (moved) {
            json_object_set_new(status, "replans",
                                json_integer(tm_json_int(status, "replans", 0) + 1));
            event(c, wfobj, "Normal", "Replanned", moved_names);
        } else if (!tm_json_str(wfobj, "status.plannedAt", NULL)) {
            char note[1024] = "", a[40];
            size_t len = 0;
            size_t i;
            json_t *ss;
            json_array_foreach(steps_st, i, ss) {
                if (len < sizeof note)
                    len += (size_t)snprintf(note + len, sizeof note - len, "%s%s at %s",
                                            len ? "; " : "", tm_json_str(ss, "name", ""),
                                            pl_time_format(get_time(ss, "start"), a, sizeof a));
            }
            event(c, wfobj, "Normal", "Planned", note);
        }
        json_object_set_new(status, "message", json_string(""));
    }
    /* 3. objects and 4. gates */
    delete_renewed(c, wfobj, wf, steps_st);
    json_t *spec_steps = tm_json_path(wfobj, "spec.steps");
    int64_t submitted = get_time(wfobj, "metadata.creationTimestamp");
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *ss = step_status(steps_st, s->name);
        int preds_ok = 1;
        int64_t *pend = calloc((size_t)(s->nafter ? s->nafter : 1), sizeof *pend);
        /* the step's predicted start, as far as its predecessors go: the latest of their
         * actual ends, else their expected ends (replan.h: never in the past; an overrunning
         * one goes on as long again as it has overrun) */
        int64_t pred_start = submitted >= 0 ? submitted : now;
        for (int k = 0; k < s->nafter; k++) {
            const pl_step *a = &wf->steps[s->after[k]];
            json_t *as = step_status(steps_st, a->name);
            preds_ok &= state_is(as, PL_ST_SUCCEEDED);
            /* the predecessor's predicted end, for the ungating time: its actual end, else the
             * later of its planned end and its actual start plus its duration */
            int64_t e = get_time(as, "actualEnd");
            int64_t x = e;
            if (e < 0) {
                e = get_time(as, "end");
                int64_t st = get_time(as, "actualStart");
                if (st >= 0 && st + step_seconds(as, a) > e)
                    e = st + step_seconds(as, a);
                x = pl_pred_expected_end(get_time(as, "end"), st, step_seconds(as, a), now,
                                         c->cfg->slot_s);
            }
            if (pend)
                pend[k] = e;
            if (x > pred_start)
                pred_start = x;
        }
        pl_mode mode = status_mode(ss);
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, s->name, obj, sizeof obj);
        const char *stepobj = obj + strlen(wf->name) + 1;
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        if (mode == PL_MODE_PROACTIVE && state_is(ss, PL_ST_RELEASED) && preds_ok) {
            /* the order gate: the pods bind only now that every predecessor succeeded */
            step_pods sp;
            observe(c, ns, wf->name, stepobj, attempt, &sp);
            size_t k;
            json_t *p;
            int held = 0;
            json_array_foreach(sp.pods, k, p) held |= has_gate(p, PL_GATE_ORDER);
            if (held) {
                ungate(c, ns, sp.pods, PL_GATE_ORDER, -1);
                set_time(ss, "orderReleasedAt", now);
            }
            json_decref(sp.pods);
        } else if (mode == PL_MODE_PROACTIVE && state_is(ss, PL_ST_RELEASED) &&
                   get_time(ss, "predictedStart") < pred_start) {
            /* ungated, waiting at the order gate for a predecessor that runs late: it starts
             * no earlier than that one's expected end, not at the time it was ungated with */
            set_time(ss, "predictedStart", pred_start);
        }
        if (mode == PL_MODE_RESERVE && state_is(ss, PL_ST_RELEASED)) {
            step_pods sp;
            observe(c, ns, wf->name, stepobj, attempt, &sp);
            if (sp.bound < s->pods)
                refresh_left(c, ns, sp.pods, get_time(ss, "end"), now);
            json_decref(sp.pods);
        }
        if (!state_is(ss, PL_ST_PLANNED)) {
            free(pend);
            continue;
        }
        ensure_objects(c, wfobj, s, json_array_get(spec_steps, (size_t)i), ss, stepobj, attempt);
        int ready;
        if (mode == PL_MODE_PROACTIVE) {
            refresh_estimate(c, ns, s, ss, now);
            double est = (double)tm_json_int(ss, "estimateSeconds", 0);
            int64_t at = pl_proactive_ungate_at(submitted >= 0 ? submitted : now, pend,
                                                pend ? s->nafter : 0, est);
            set_time(ss, "ungateAt", at);
            int64_t pmax = at + (int64_t)est;
            set_time(ss, "predictedStart", pred_start > pmax ? pred_start : pmax);
            ready = now >= at;
        } else if (mode == PL_MODE_ON_COMPLETION) {
            ready = preds_ok;
            if (!preds_ok)
                set_time(ss, "predictedStart", pred_start);
        } else {
            ready = now >= get_time(ss, "start") && preds_ok;
        }
        free(pend);
        if (ready && mode == PL_MODE_RESERVE && c->cfg->require_admission) {
            /* the pods go into their reservation: wait until the scheduler has it Active (the
             * window open on the nodes it holds), so that they are its owner's pods inside
             * the window when they look for a node. One it refused is planned again
             * (check_reservations), never released without it: a gang without its hold waits
             * behind every smaller pod on a loaded cluster (issue 15). The one being replaced
             * (the informer may still show it for a moment) does not count. */
            json_t *rv = tm_informer_get(c->resvs, ns, obj);
            ready = !tm_json_bool(ss, "reservationRenew", false) &&
                    !tm_json_str(ss, "reservationRetryAt", NULL) &&
                    strcmp(tm_json_str(rv, "metadata.uid", ""),
                           tm_json_str(ss, "reservationEndedUid", "")) &&
                    !strcmp(tm_json_str(rv, "status.phase", ""), "Active");
        }
        if (!ready)
            continue;
        step_pods sp;
        observe(c, ns, wf->name, stepobj, attempt, &sp);
        if ((int)json_array_size(sp.pods) == s->pods) {
            /* what is left of the window less a margin (window_left_s): the pods start a
             * moment after the gate goes; without a window, the step's own walltime on its
             * slowest group (where the pods bind is not known yet) */
            ungate(c, ns, sp.pods, PL_GATE,
                   mode == PL_MODE_RESERVE ? window_left_s(get_time(ss, "end"), now)
                                           : pl_step_seconds_max(s));
            json_object_set_new(ss, "state", json_string(PL_ST_RELEASED));
            set_time(ss, "releasedAt", now);
            char note[300];
            snprintf(note, sizeof note, "step %s (%s): %s, %d pods ungated", s->name,
                     pl_mode_name(mode),
                     mode == PL_MODE_RESERVE     ? "window open"
                     : mode == PL_MODE_PROACTIVE ? "predecessors' predicted end minus the estimate"
                                                 : "predecessors succeeded",
                     s->pods);
            event(c, wfobj, "Normal", "Released", note);
        }
        json_decref(sp.pods);
    }
    set_phase_fields(status, steps_st);
    write_status(c, wfobj, status);
out:
    json_decref(status);
    pl_workflow_free(wf);
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
        json_t *wfs = store_array(c->wfs), *w;
        size_t i;
        int64_t now = (int64_t)time(NULL);
        json_array_foreach(wfs, i, w) {
            reconcile(c, w, now);
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
