/* controller_plan.c: the Workflow controller's planning (controller.h): the steps of a workflow
 * not yet released planned against the cluster's state as the informers see it (nodes, pods,
 * Reservations, TaskProfiles), each step's mode chosen and its start, end and nodes written into
 * the Workflow's status. */
#include "planner/controller.h"
#include "planner/controller_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/kobj.h"
#include "planner/occupancy.h"
#include "planner/predict.h"
#include "planner/replan.h"
#include "planner/solve.h"

/* ---- planning ------------------------------------------------------------------------------ */

/* Plans the steps of wf that are not released yet. Writes each one's start, end and nodes
 * into status steps, and counts those whose plan moved. Returns 0, 1 when waiting on the load
 * threshold, -1 with err when the workflow cannot be planned. */
int ctl_plan_steps(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st,
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
        json_t *ss = ctl_step_status(steps_st, wf->steps[i].name);
        map[i] =
            (!ss || ctl_state_is(ss, PL_ST_PLANNED) || !*tm_json_str(ss, "state", "")) ? np++ : -1;
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
            json_t *ss = ctl_step_status(steps_st, wf->steps[a].name);
            if (ctl_state_is(ss, PL_ST_SUCCEEDED))
                continue;
            /* planned end, actual start + walltime; not started: a whole walltime from now;
             * overrunning: as long again as its overrun (replan.h: no replan every slot) */
            int64_t end =
                pl_pred_expected_end(ctl_get_time(ss, "end"), ctl_get_time(ss, "actualStart"),
                                     ctl_step_seconds(ss, &wf->steps[a]), now, cfg->slot_s);
            if (end - now > d->not_before_s)
                d->not_before_s = end - now;
        }
    }
    if (pl_workflow_finish(&sub, names, wf->name, err) < 0) {
        names = NULL;
        goto out;
    }
    names = NULL;
    nodes = ctl_store_array(c->nodes);
    for (size_t k = json_array_size(nodes); k-- > 0;)
        if (!pl_selector_match(c->nodesel, json_array_get(nodes, k)))
            json_array_remove(nodes, k);
    pods = ctl_store_array(c->pods);
    resvs = ctl_store_array(c->resvs);
    profiles = ctl_store_array(c->profiles);
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
            ctl_requested_mode(wfobj, i, &m);
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
        json_t *ss = ctl_step_status(steps_st, s->name);
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
        int64_t ostart = ctl_get_time(ss, "start"), oend = ctl_get_time(ss, "end");
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
            ctl_set_time(ss, "start", start);
            ctl_set_time(ss, "end", end);
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
                                      ctl_get_time(rv, "status.heldStartTime"),
                                      ctl_get_time(rv, "status.heldEndTime"), start, cfg->slot_s)) {
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
                ctl_event(c, wfobj, "Normal", "ReservationRenewed", note);
            }
        }
        json_decref(nl);
        json_object_set_new(ss, "state", json_string(PL_ST_PLANNED));
        json_object_set_new(ss, "predictedSeconds", json_integer(wsec ? wsec : s->duration_s));
        if (!tm_json_str(ss, "mode", NULL)) { /* chosen once: a replan does not switch it */
            pl_mode req = PL_MODE_AUTO;
            ctl_requested_mode(wfobj, i, &req);
            pl_mode m = pl_mode_choose(req, load, cfg->load_threshold);
            json_object_set_new(ss, "mode", json_string(pl_mode_name(m)));
            if (m == PL_MODE_PROACTIVE)
                ctl_refresh_estimate(c, tm_json_str(wfobj, "metadata.namespace", "default"), s, ss,
                                     now);
        }
        if (ctl_status_mode(ss) == PL_MODE_RESERVE)
            ctl_set_time(ss, "predictedStart", start);
    }
    json_object_set_new(status, "solver", json_string(o.solver));
    json_object_set_new(status, "optimal", json_boolean(o.optimal));
    ctl_set_time(status, "plannedAt", now);
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
