/* controller_reconcile.c: the Workflow controller's reconciliation of one workflow
 * (controller.h): the objects of each planned step (PodGroup, Reservation, gated pods), its gates
 * removed when its window opens or its predecessors succeeded, its reservations checked and
 * renewed, and the Workflow's status written. */
#include "planner/controller.h"
#include "planner/controller_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "planner/kobj.h"
#include "planner/predict.h"
#include "planner/replan.h"

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
    int64_t start = ctl_get_time(ss, "start"), end = ctl_get_time(ss, "end");
    char *path;
    if (!tm_json_bool(ss, "podGroupCreated", false)) {
        json_t *pg = pl_podgroup_object(wfobj, s);
        path = tm_kube_path(PL_PG_GV, "podgroups", ns, NULL, NULL);
        int r = ctl_create_obj(c, path, pg, name);
        if (r == -2)
            ctl_warn_once(c, "podgroup-crd",
                          "PodGroup CRD (scheduling.x-k8s.io/v1alpha1) not installed: steps run "
                          "without their PodGroup");
        if (r != -1)
            json_object_set_new(ss, "podGroupCreated", json_true());
        free(path);
        json_decref(pg);
    }
    json_t *have = tm_informer_get(c->resvs, ns, name);
    pl_mode mode = ctl_status_mode(ss);
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
            int cr = ctl_create_obj(c, path, rv, name);
            if (cr == -2)
                ctl_warn_once(c, "resv-crd", "Reservation CRD (tarema.io/v1alpha1) not installed");
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
            ctl_create_obj(c, path, pod, pn);
        json_decref(pod);
    }
    free(path);
}

/* Appends to a JSON Patch the op that sets annotation key to value (stolen). */
static void add_annotation_op(json_t *patch, const char *key, json_t *value) {
    char *path = tm_json_pointer("/metadata/annotations/", key);
    if (path && value)
        json_array_append_new(
            patch, json_pack("{s:s, s:s, s:o}", "op", "add", "path", path, "value", value));
    else
        json_decref(value);
    free(path);
}

/* Removes the planner's gate. left_s: what is left of the step's window; it becomes the pods'
 * expected duration, so that a step released a moment after its window opened is still
 * expected to end with its window (at the next step's reservation, not a moment into it). */
static void ungate(ctl *c, const char *ns, const json_t *pods, const char *gate, int64_t left_s,
                   int64_t asa_at) {
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (!ctl_has_gate(p, gate))
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
            add_annotation_op(patch, PL_ANN_EXPECT,
                              json_sprintf("%llds", (long long)(left_s > 1 ? left_s : 1)));
        char at[40];
        if (asa_at >= 0 && pl_time_format(asa_at, at, sizeof at)) /* < 0: none (not proactive) */
            add_annotation_op(patch, TM_ANN_ASA_RELEASE, json_string(at));
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

/* Merge-patches one annotation of pod p (what: for the warning when it fails). */
static void patch_annotation(ctl *c, const char *ns, const json_t *p, const char *key,
                             const char *value, const char *what) {
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", key, value);
    char *path = tm_kube_path("v1", "pods", ns, tm_json_str(p, "metadata.name", ""), NULL);
    tm_err err = {0};
    json_t *r = patch && path ? tm_kube_patch(c->k, path, TM_PATCH_MERGE, patch, &err) : NULL;
    if (!r)
        tm_warn("%s of %s/%s not written err=\"%s\"", what, ns, tm_json_str(p, "metadata.name", ""),
                err.msg);
    json_decref(r);
    json_decref(patch);
    free(path);
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
        if (*tm_json_str(p, "spec.nodeName", "") || ctl_has_gate(p, PL_GATE))
            continue;
        json_t *ann = tm_json_path(p, "metadata.annotations");
        const char *have = ann ? json_string_value(json_object_get(ann, PL_ANN_EXPECT)) : NULL;
        if (have && !strcmp(have, want))
            continue;
        patch_annotation(c, ns, p, PL_ANN_EXPECT, want, "expected duration");
    }
}

/* A released proactive step's pods still held by the order gate: tarema.io/not-before (lib/gates.h)
 * says when their predecessors are expected to end (the step's predictedStart, seconds), kept
 * current as that moves, so that tarema-scheduler's backfill holds what they need from then
 * (docs/backfill.md, "Pods released early"). Written when missing or moved by 5 s or more. */
#define PL_NOT_BEFORE_STEP_S 5
static void mark_not_before(ctl *c, const char *ns, const json_t *pods, int64_t at) {
    char want[40];
    if (at < 0 || !pl_time_format(at, want, sizeof want))
        return;
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        if (*tm_json_str(p, "spec.nodeName", "") || !ctl_has_gate(p, PL_GATE_ORDER) ||
            ctl_has_gate(p, PL_GATE))
            continue;
        json_t *ann = tm_json_path(p, "metadata.annotations");
        const char *have = ann ? json_string_value(json_object_get(ann, TM_ANN_NOT_BEFORE)) : NULL;
        int64_t had = have ? pl_time_parse(have) : -1;
        /* an overrunning predecessor moves the prediction every second: rewritten only when it
         * moved by PL_NOT_BEFORE_STEP_S either way, so the annotation may be up to 4 s early
         * (the scheduler holds sooner) or late (it holds later; the gate still waits for the
         * predecessors) */
        if (had >= 0 && at - had < PL_NOT_BEFORE_STEP_S && had - at < PL_NOT_BEFORE_STEP_S)
            continue;
        patch_annotation(c, ns, p, TM_ANN_NOT_BEFORE, want, "not-before");
    }
}

static void set_phase_fields(json_t *status, json_t *steps_st) {
    int all_done = 1, any_started = 0;
    int64_t next = -1, pend = -1, first = -1, last = -1;
    size_t i;
    json_t *ss;
    json_array_foreach(steps_st, i, ss) {
        int64_t st = ctl_get_time(ss, "start"), en = ctl_get_time(ss, "end");
        int64_t as = ctl_get_time(ss, "actualStart"), ae = ctl_get_time(ss, "actualEnd");
        if (!ctl_state_is(ss, PL_ST_SUCCEEDED))
            all_done = 0;
        if (!ctl_state_is(ss, PL_ST_PLANNED) && *tm_json_str(ss, "state", ""))
            any_started = 1;
        if (ctl_state_is(ss, PL_ST_PLANNED) && st >= 0 && (next < 0 || st < next))
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
        ctl_set_time(status, "nextStart", next);
    else
        json_object_del(status, "nextStart");
    if (pend >= 0)
        ctl_set_time(status, "predictedEnd", pend);
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
        json_t *ss = ctl_step_status(steps_st, wf->steps[i].name);
        if (ss && ctl_finished(ss))
            continue;
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        ctl_release_step(c, ns, wf->name, obj + strlen(wf->name) + 1, attempt, everything);
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
        json_t *ss = ctl_step_status(steps_st, s->name);
        if (!ctl_state_is(ss, PL_ST_PLANNED) || ctl_status_mode(ss) != PL_MODE_RESERVE)
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
                ctl_event(c, wfobj, "Warning", "ReservationFallback", note);
            } else {
                ctl_set_time(ss, "reservationRetryAt", at);
                snprintf(note, sizeof note,
                         "step %s: Reservation %s refused by the scheduler (%s): planning the "
                         "step again from fresh occupancy in %lld s (refusal %d, %d retries)",
                         s->name, obj, why, (long long)(at - now), n, c->cfg->reservation_retries);
                ctl_event(c, wfobj, "Warning", "ReservationRefused", note);
            }
        } else if (ended) { /* Expired or Released before the step was released */
            json_object_set_new(ss, "reservationEndedUid", json_string(uid));
            json_object_set_new(ss, "reservationRenew", json_true());
            char note[600];
            snprintf(note, sizeof note,
                     "step %s: Reservation %s %s before the step could start: planning and "
                     "reserving it again",
                     s->name, obj, !strcmp(ph, "Expired") ? "expired" : "was released");
            ctl_event(c, wfobj, "Normal", "ReservationRenewed", note);
            need = 1;
        }
        int64_t at = ctl_get_time(ss, "reservationRetryAt");
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
        if (ctl_state_is(o, PL_ST_PLANNED) && tm_json_bool(o, "reservationRenew", false) &&
            !tm_json_str(o, "reservationRetryAt", NULL) && ctl_get_time(o, "start") < he &&
            hs < ctl_get_time(o, "end"))
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
            json_t *ss = ctl_step_status(steps_st, wf->steps[i].name);
            if (!ctl_state_is(ss, PL_ST_PLANNED) || ctl_status_mode(ss) != PL_MODE_RESERVE ||
                tm_json_str(ss, "reservationRetryAt", NULL) ||
                tm_json_bool(ss, "reservationRenew", false))
                continue;
            char obj[PL_OBJNAME_MAX];
            pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
            json_t *rv = tm_informer_get(c->resvs, ns, obj);
            int64_t hs = ctl_get_time(rv, "status.heldStartTime"),
                    he = ctl_get_time(rv, "status.heldEndTime");
            int stale = rv && hs >= 0 && he >= 0 &&
                        strcmp(tm_json_str(rv, "metadata.uid", ""),
                               tm_json_str(ss, "reservationEndedUid", "")) &&
                        (llabs((long long)(hs - ctl_get_time(ss, "start"))) >= c->cfg->slot_s ||
                         llabs((long long)(he - ctl_get_time(ss, "end"))) >= c->cfg->slot_s);
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
            ctl_event(c, wfobj, "Normal", "ReservationRenewed", note);
            changed = 1;
        }
    }
    for (int i = 0; i < wf->nsteps; i++) {
        json_t *ss = ctl_step_status(steps_st, wf->steps[i].name);
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, wf->steps[i].name, obj, sizeof obj);
        /* the old one, by its uid: once ensure_objects made the new one, it is left alone */
        const char *old = tm_json_str(ss, "reservationEndedUid", "");
        if (ctl_state_is(ss, PL_ST_PLANNED) && ctl_status_mode(ss) == PL_MODE_RESERVE &&
            !tm_json_str(ss, "reservationRetryAt", NULL) &&
            tm_json_bool(ss, "reservationRenew", false) && *old)
            ctl_delete_resv_uid(c, ns, obj, old);
    }
}

void ctl_reconcile(ctl *c, json_t *wfobj, int64_t now) {
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
        ctl_event(c, wfobj, "Warning", "Invalid", err.msg);
        write_status(c, wfobj, status);
        json_decref(status);
        return;
    }
    for (int i = 0; i < wf->nsteps; i++) {
        pl_mode m;
        if (ctl_requested_mode(wfobj, i, &m) < 0) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "step %s: mode must be reserve, proactive or on-completion (or absent)",
                     wf->steps[i].name);
            json_object_set_new(status, "phase", json_string("Failed"));
            json_object_set_new(status, "message", json_string(msg));
            ctl_event(c, wfobj, "Warning", "Invalid", msg);
            write_status(c, wfobj, status);
            json_decref(status);
            pl_workflow_free(wf);
            return;
        }
    }
    json_t *profiles = ctl_store_array(c->profiles);
    pl_predict_durations(wf, profiles);
    json_decref(profiles);
    if (tm_json_bool(wfobj, "spec.cancel", false)) {
        release_unfinished(c, wfobj, wf, steps_st, 0);
        json_object_set_new(status, "phase", json_string("Cancelled"));
        json_object_set_new(status, "message",
                            json_string("cancelled: reservations and gated pods deleted"));
        json_object_del(status, "nextStart");
        ctl_event(c, wfobj, "Normal", "Cancelled", "reservations and gated pods deleted");
        write_status(c, wfobj, status);
        goto out;
    }
    char key[600];
    snprintf(key, sizeof key, "%s/%s", ns, wf->name);
    int need = !tm_json_str(status, "plannedAt", NULL) || c->nodes_gone ||
               json_object_get(c->replan, key) != NULL;
    int64_t planned_at = ctl_get_time(status, "plannedAt");
    if (planned_at >= 0 && now - planned_at >= c->cfg->cycle_s)
        need = 1;
    long long retries = tm_json_int(wfobj, "spec.retries", c->cfg->retries);
    const char *failed_step = NULL;
    /* 1. observe */
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *ss = ctl_step_status(steps_st, s->name);
        if (!ss || ctl_finished(ss) || !*tm_json_str(ss, "state", ""))
            continue;
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, s->name, obj, sizeof obj);
        const char *stepobj = obj + strlen(wf->name) + 1;
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        step_pods sp;
        ctl_observe(c, ns, wf->name, stepobj, attempt, &sp);
        /* bound: the walltime on the groups it really runs on (the slowest) */
        if (!ctl_state_is(ss, PL_ST_PLANNED) && sp.bound > 0) {
            int64_t w = 0;
            size_t k;
            json_t *p;
            json_array_foreach(sp.pods, k, p) {
                const char *node = tm_json_str(p, "spec.nodeName", NULL);
                const char *grp = ctl_node_group(c, node);
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
        if (!ctl_state_is(ss, PL_ST_PLANNED) && gone > 0 && sp.succeeded < s->pods)
            sp.failed += gone;
        if (sp.failed > 0) {
            if (attempt < retries) {
                ctl_release_step(c, ns, wf->name, stepobj, attempt, 1);
                json_object_set_new(ss, "attempts", json_integer(attempt + 1));
                json_object_set_new(ss, "state", json_string(PL_ST_PLANNED));
                json_object_del(ss, "podGroupCreated");
                json_object_del(ss, "actualStart");
                char note[400];
                snprintf(note, sizeof note, "step %s failed; retry %d of %lld", s->name,
                         attempt + 1, retries);
                ctl_event(c, wfobj, "Warning", "StepRetry", note);
                need = 1;
            } else {
                json_object_set_new(ss, "state", json_string(PL_ST_FAILED));
                ctl_set_time(ss, "actualEnd", sp.last_end > 0 ? sp.last_end : now);
                failed_step = s->name;
            }
        } else if (sp.succeeded == s->pods) {
            int64_t end = sp.last_end > 0 ? sp.last_end : now;
            json_object_set_new(ss, "state", json_string(PL_ST_SUCCEEDED));
            ctl_set_time(ss, "actualEnd", end);
            int64_t as = ctl_get_time(ss, "actualStart");
            if (as < 0 && sp.first_start >= 0)
                ctl_set_time(ss, "actualStart", as = sp.first_start);
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
                        if (p != i && !ctl_state_is(ctl_step_status(steps_st, wf->steps[p].name),
                                                    PL_ST_SUCCEEDED))
                            others_done = 0;
                    }
                    if (!others_done)
                        continue;
                    has_next = 1;
                    json_t *js = ctl_step_status(steps_st, wf->steps[j].name);
                    int64_t st = ctl_state_is(js, PL_ST_PLANNED) ? ctl_get_time(js, "start") : -1;
                    if (st >= 0 && (next < 0 || st < next))
                        next = st;
                }
            int64_t ref = ctl_get_time(ss, "end");
            if (next > ref)
                ref = next;
            if (has_next && end < ref - c->cfg->slot_s) {
                char note[300];
                snprintf(note, sizeof note, "step %s ended %lld s early: replanning", s->name,
                         (long long)(ref - end));
                ctl_event(c, wfobj, "Normal", "StepEarly", note);
                need = 1;
            }
        } else if (ctl_state_is(ss, PL_ST_RELEASED) && sp.running + sp.succeeded == s->pods) {
            json_object_set_new(ss, "state", json_string(PL_ST_RUNNING));
            if (sp.first_start >= 0)
                ctl_set_time(ss, "actualStart", sp.first_start);
        }
        if ((ctl_state_is(ss, PL_ST_RUNNING) || ctl_state_is(ss, PL_ST_RELEASED)) &&
            now > ctl_get_time(ss, "end") && !tm_json_bool(ss, "late", false)) {
            char note[300];
            snprintf(note, sizeof note, "step %s runs past its planned end: replanning", s->name);
            json_object_set_new(ss, "late", json_true());
            ctl_event(c, wfobj, "Warning", "StepLate", note);
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
        ctl_event(c, wfobj, "Warning", "Failed", note);
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
        json_t *ss = ctl_step_status(steps_st, wf->steps[i].name);
        if (ctl_state_is(ss, PL_ST_PLANNED) && ctl_status_mode(ss) == PL_MODE_RESERVE &&
            now >= ctl_get_time(ss, "start") && now - planned_at >= c->cfg->slot_s)
            for (int k = 0; k < wf->steps[i].nafter; k++)
                if (!ctl_state_is(ctl_step_status(steps_st, wf->steps[wf->steps[i].after[k]].name),
                                  PL_ST_SUCCEEDED))
                    need = 1;
        /* a planned node went away */
        json_t *nl = json_object_get(ss, "nodes"), *nn;
        size_t k;
        if (ctl_state_is(ss, PL_ST_PLANNED)) {
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
        int pr = ctl_plan_steps(c, wfobj, wf, steps_st, now, &moved, moved_names,
                                sizeof moved_names, status, &err);
        json_object_del(c->replan, key);
        if (pr < 0) {
            if (!tm_json_str(status, "plannedAt", NULL)) { /* nothing created yet */
                json_object_set_new(status, "phase", json_string("Failed"));
                json_object_set_new(status, "message", json_string(err.msg));
                ctl_event(c, wfobj, "Warning", "Unplannable", err.msg);
                write_status(c, wfobj, status);
                goto out;
            }
            ctl_event(c, wfobj, "Warning", "ReplanFailed", err.msg);
        } else if (pr == 1) {
            json_object_set_new(status, "phase", json_string("Pending"));
            write_status(c, wfobj, status);
            goto out;
        } else if (moved) {
            json_object_set_new(status, "replans",
                                json_integer(tm_json_int(status, "replans", 0) + 1));
            ctl_event(c, wfobj, "Normal", "Replanned", moved_names);
        } else if (!tm_json_str(wfobj, "status.plannedAt", NULL)) {
            char note[1024] = "", a[40];
            size_t len = 0;
            size_t i;
            json_t *ss;
            json_array_foreach(steps_st, i, ss) {
                if (len < sizeof note)
                    len += (size_t)snprintf(note + len, sizeof note - len, "%s%s at %s",
                                            len ? "; " : "", tm_json_str(ss, "name", ""),
                                            pl_time_format(ctl_get_time(ss, "start"), a, sizeof a));
            }
            ctl_event(c, wfobj, "Normal", "Planned", note);
        }
        json_object_set_new(status, "message", json_string(""));
    }
    /* 3. objects and 4. gates */
    delete_renewed(c, wfobj, wf, steps_st);
    json_t *spec_steps = tm_json_path(wfobj, "spec.steps");
    int64_t submitted = ctl_get_time(wfobj, "metadata.creationTimestamp");
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *ss = ctl_step_status(steps_st, s->name);
        int preds_ok = 1;
        int64_t *pend = calloc((size_t)(s->nafter ? s->nafter : 1), sizeof *pend);
        /* the predecessors' starts: read only to release a planned proactive step */
        pl_mode mode = ctl_status_mode(ss);
        int64_t *pstart =
            mode == PL_MODE_PROACTIVE && ctl_state_is(ss, PL_ST_PLANNED) && c->cfg->release_on_start
                ? calloc((size_t)(s->nafter ? s->nafter : 1), sizeof *pstart)
                : NULL;
        /* the step's predicted start, as far as its predecessors go: the latest of their
         * actual ends, else their expected ends (replan.h: never in the past; an overrunning
         * one goes on as long again as it has overrun) */
        int64_t pred_start = submitted >= 0 ? submitted : now;
        for (int k = 0; k < s->nafter; k++) {
            const pl_step *a = &wf->steps[s->after[k]];
            json_t *as = ctl_step_status(steps_st, a->name);
            preds_ok &= ctl_state_is(as, PL_ST_SUCCEEDED);
            /* the predecessor's predicted end, for the ungating time: its actual end, else the
             * later of its planned end and its actual start plus its duration */
            int64_t e = ctl_get_time(as, "actualEnd");
            int64_t x = e;
            if (e < 0) {
                e = ctl_get_time(as, "end");
                int64_t st = ctl_get_time(as, "actualStart");
                if (st >= 0 && st + ctl_step_seconds(as, a) > e)
                    e = st + ctl_step_seconds(as, a);
                x = pl_pred_expected_end(ctl_get_time(as, "end"), st, ctl_step_seconds(as, a), now,
                                         c->cfg->slot_s);
            }
            if (pend)
                pend[k] = e;
            if (pstart) { /* started: its first pod ran (a succeeded one without it: its end) */
                int64_t st = ctl_get_time(as, "actualStart");
                pstart[k] = st >= 0 ? st : ctl_get_time(as, "actualEnd");
            }
            if (x > pred_start)
                pred_start = x;
        }
        char obj[PL_OBJNAME_MAX];
        pl_step_object_name(wf->name, s->name, obj, sizeof obj);
        const char *stepobj = obj + strlen(wf->name) + 1;
        int attempt = (int)tm_json_int(ss, "attempts", 0);
        if (mode == PL_MODE_PROACTIVE && ctl_state_is(ss, PL_ST_RELEASED) && preds_ok) {
            /* the order gate: the pods bind only now that every predecessor succeeded */
            step_pods sp;
            ctl_observe(c, ns, wf->name, stepobj, attempt, &sp);
            size_t k;
            json_t *p;
            int held = 0;
            json_array_foreach(sp.pods, k, p) held |= ctl_has_gate(p, PL_GATE_ORDER);
            if (held) {
                ungate(c, ns, sp.pods, PL_GATE_ORDER, -1, -1);
                ctl_set_time(ss, "orderReleasedAt", now);
            }
            json_decref(sp.pods);
        } else if (mode == PL_MODE_PROACTIVE && ctl_state_is(ss, PL_ST_RELEASED)) {
            /* ungated, waiting at the order gate for a predecessor that runs late: it starts
             * no earlier than that one's expected end, not at the time it was ungated with */
            if (ctl_get_time(ss, "predictedStart") < pred_start)
                ctl_set_time(ss, "predictedStart", pred_start);
            step_pods sp;
            ctl_observe(c, ns, wf->name, stepobj, attempt, &sp);
            mark_not_before(c, ns, sp.pods, ctl_get_time(ss, "predictedStart"));
            json_decref(sp.pods);
        }
        if (mode == PL_MODE_RESERVE && ctl_state_is(ss, PL_ST_RELEASED)) {
            step_pods sp;
            ctl_observe(c, ns, wf->name, stepobj, attempt, &sp);
            if (sp.bound < s->pods)
                refresh_left(c, ns, sp.pods, ctl_get_time(ss, "end"), now);
            json_decref(sp.pods);
        }
        if (!ctl_state_is(ss, PL_ST_PLANNED)) {
            free(pend);
            free(pstart);
            continue;
        }
        ensure_objects(c, wfobj, s, json_array_get(spec_steps, (size_t)i), ss, stepobj, attempt);
        int ready;
        pl_release_rule rule = PL_RELEASE_ASA; /* which rule released a proactive step */
        int64_t asa_at = -1; /* a proactive step's ASA point (TM_ANN_ASA_RELEASE) */
        if (mode == PL_MODE_PROACTIVE) {
            ctl_refresh_estimate(c, ns, s, ss, now);
            double est = (double)tm_json_int(ss, "estimateSeconds", 0);
            int64_t t0 = submitted >= 0 ? submitted : now;
            int npred = pend ? s->nafter : 0;
            asa_at = pl_proactive_ungate_at(t0, pend, npred, est);
            int64_t at =
                pstart ? pl_proactive_release_at(asa_at, t0, pstart, npred, &rule) : asa_at;
            at = pl_proactive_lead_at(at, t0, pend, npred, c->cfg->release_lead_s, &rule);
            ctl_set_time(ss, "ungateAt", at);
            int64_t pmax = at + (int64_t)est;
            ctl_set_time(ss, "predictedStart", pred_start > pmax ? pred_start : pmax);
            ready = now >= at;
        } else if (mode == PL_MODE_ON_COMPLETION) {
            ready = preds_ok;
            if (!preds_ok)
                ctl_set_time(ss, "predictedStart", pred_start);
        } else {
            ready = now >= ctl_get_time(ss, "start") && preds_ok;
        }
        free(pend);
        free(pstart);
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
        ctl_observe(c, ns, wf->name, stepobj, attempt, &sp);
        if ((int)json_array_size(sp.pods) == s->pods) {
            /* what is left of the window less a margin (window_left_s): the pods start a
             * moment after the gate goes; without a window, the step's own walltime on its
             * slowest group (where the pods bind is not known yet) */
            ungate(c, ns, sp.pods, PL_GATE,
                   mode == PL_MODE_RESERVE ? window_left_s(ctl_get_time(ss, "end"), now)
                                           : pl_step_seconds_max(s),
                   mode == PL_MODE_PROACTIVE ? asa_at : -1);
            json_object_set_new(ss, "state", json_string(PL_ST_RELEASED));
            ctl_set_time(ss, "releasedAt", now);
            char note[300];
            snprintf(note, sizeof note, "step %s (%s): %s, %d pods ungated", s->name,
                     pl_mode_name(mode),
                     mode == PL_MODE_RESERVE ? "window open"
                     : mode == PL_MODE_PROACTIVE && rule == PL_RELEASE_LEAD
                         ? "the release lead before its predecessors' predicted end (their end "
                           "held by the order gate)"
                     : mode == PL_MODE_PROACTIVE && rule == PL_RELEASE_ON_START
                         ? "predecessors started (their end held by the order gate)"
                     : mode == PL_MODE_PROACTIVE ? "predecessors' predicted end minus the estimate"
                                                 : "predecessors succeeded",
                     s->pods);
            ctl_event(c, wfobj, "Normal", "Released", note);
        }
        json_decref(sp.pods);
    }
    set_phase_fields(status, steps_st);
    write_status(c, wfobj, status);
out:
    json_decref(status);
    pl_workflow_free(wf);
}
