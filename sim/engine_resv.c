/* engine_resv.c: reservations in the simulator: a step's capacity held for a window of its run
 * (docs/simulation.md), admitted when its run arrives, opened, released and charged for the
 * tasks that used it; sim/resv_sim.h makes the decisions, this applies them to the run. */
#include "sim/engine.h"
#include "sim/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/reservation/resv_overrun.h"

/* ---- reservations ---- */

static int64_t ms_of(double sec) {
    return (int64_t)llround(sec * 1000);
}

/* The hold of reservation rs on sim node n, -1 when none. */
static int hold_on(const resv_st *rs, int n) {
    for (int h = 0; h < rs->nholds; h++)
        if (rs->hnode[h] == n)
            return h;
    return -1;
}

/* Admits reservation ri when its run arrives: the running tasks with their expected ends (as
 * the scheduler knows them: history, else unknown) and the other reservations. */
int eng_resv_admit(sim *s, int ri) {
    resv_st *rs = &s->resvs[ri];
    const sim_workflow *wf = &s->w->wfs[rs->wf];
    const sim_process *p = &wf->procs[rs->proc];
    size_t nsnap = sched_snapshot_node_count(s->snap), nrun = 0;
    const sched_node **by_sim = calloc((size_t)s->c->nnodes + 1, sizeof *by_sim);
    for (size_t i = 0; by_sim && i < nsnap; i++)
        by_sim[s->snap2sim[i]] = sched_snapshot_node(s->snap, i);
    for (int n = 0; n < s->c->nnodes; n++)
        nrun += (size_t)s->nrunning[n];
    resv_running *pods = malloc((nrun + 1) * sizeof *pods);
    if (!by_sim || !pods) {
        free(by_sim);
        free(pods);
        return tm_err_set(s->err, "out of memory");
    }
    size_t k = 0;
    for (int n = 0; n < s->c->nnodes; n++)
        for (int j = 0; j < s->nrunning[n]; j++) {
            const task *t = &s->tasks[s->running[n][j]];
            pods[k].node = by_sim[n]->name;
            pods[k].req = t->pod->requests;
            pods[k].end_ms = resv_expected_end(s->snap, t->pod, by_sim[n], ms_of(t->start));
            k++;
        }
    rs->start = s->now + p->resv_start;
    rs->end = rs->start + p->resv_duration;
    resv_admission a;
    const reservation *r = NULL;
    int rc = sim_resv_admit(s->rv, s->snap, rs->name, wf->name, p->name,
                            (int64_t)llround(p->req_cpu * 1000), p->req_mem, p->instances,
                            ms_of(rs->start), ms_of(rs->end), p->resv_evict_overrunning, pods, k,
                            ms_of(s->now), &r, &a, s->err);
    free(pods);
    rs->evict_overrunning = r && r->evict_overrunning; /* as the live controller reads it */
    if (rc == 0 && !a.ok) {
        rs->phase = RESV_FAILED;
        snprintf(rs->reason, sizeof rs->reason, "%s", a.reason);
    } else if (rc == 0) {
        rs->phase = RESV_ADMITTED;
        snprintf(rs->reason, sizeof rs->reason, "admitted");
        rs->hnode = calloc(a.n_holds + 1, sizeof *rs->hnode);
        rs->hname = calloc(a.n_holds + 1, sizeof *rs->hname);
        rs->hpods = calloc(a.n_holds + 1, sizeof *rs->hpods);
        rs->hres = calloc(a.n_holds + 1, sizeof *rs->hres);
        rs->hused = calloc(a.n_holds + 1, sizeof *rs->hused);
        if (!rs->hnode || !rs->hname || !rs->hpods || !rs->hres || !rs->hused)
            rc = tm_err_set(s->err, "out of memory");
        for (size_t h = 0; rc == 0 && h < a.n_holds; h++) {
            int idx = sched_snapshot_node_index(s->snap, a.holds[h].node);
            if (idx < 0 || !(rs->hname[h] = strdup(a.holds[h].node))) {
                rc = tm_err_set(s->err, "reservation %s: hold on unknown node %s", rs->name,
                                a.holds[h].node);
                break;
            }
            rs->hnode[h] = s->snap2sim[idx];
            rs->hpods[h] = a.holds[h].pods;
            rs->hres[h] = a.holds[h].res;
            rs->nholds++;
        }
        if (rc == 0 && (eng_ev_push(s, rs->start, EV_RESV_OPEN, ri, 0) < 0 ||
                        eng_ev_push(s, rs->end, EV_RESV_CLOSE, ri, 0) < 0))
            rc = -1;
    }
    free(by_sim);
    resv_admission_clear(&a);
    return rc;
}

bool eng_resv_holding(const sim *s) {
    return s->rv && resv_plan_count(sim_resv_plan(s->rv)) > 0;
}

/* resv_decide on what the simulation knows of reservation ri now; releases its holds when it
 * says so. */
int eng_resv_step(sim *s, int ri) {
    resv_st *rs = &s->resvs[ri];
    const run *ru = &s->runs[rs->run];
    resv_facts f = {.phase = rs->phase,
                    .start_ms = ms_of(rs->start),
                    .end_ms = ms_of(rs->end),
                    .now_ms = ms_of(s->now),
                    .owner_started = rs->owner_started,
                    .owner_pods_now = (size_t)ru->proc_left[rs->proc]};
    resv_decision d = resv_decide(&f);
    bool opened = rs->phase == RESV_ADMITTED && d.phase == RESV_ACTIVE;
    rs->phase = d.phase;
    if (d.release) {
        rs->released = s->now;
        snprintf(rs->reason, sizeof rs->reason, "%s", d.message ? d.message : "");
        sim_resv_drop(s->rv, rs->name);
    }
    if (!opened && !d.release)
        return 0;
    /* the window opened (or closed first): the step's held tasks enter the queue */
    const sim_process *p = &s->w->wfs[rs->wf].procs[rs->proc];
    long first = ru->base + s->wi[rs->wf].proc_off[rs->proc];
    for (long i = first; i < first + p->instances; i++)
        if (s->tasks[i].held) {
            s->tasks[i].held = false;
            if (eng_enqueue(s, i) < 0)
                return -1;
        }
    return 0;
}

/* A task of the step started (add) or ended (remove) on node n: what its reservation's holds
 * are used for now, and the core-seconds used inside the window. */
void eng_resv_use(sim *s, const task *t, int n, bool add) {
    if (t->resv < 0)
        return;
    resv_st *rs = &s->resvs[t->resv];
    if (rs->phase != RESV_ACTIVE)
        return;
    if (add)
        rs->owner_started = true;
    int h = hold_on(rs, n);
    if (h < 0)
        return;
    for (int k = 0; k < SCHED_RES_MAX; k++)
        rs->hused[h].v[k] += (add ? 1 : -1) * t->pod->requests.v[k];
    sim_resv_set_used(s->rv, rs->name, rs->hname[h], &rs->hused[h]);
    if (!add) {
        double from = fmax(t->start, rs->start), to = fmin(s->now, rs->end);
        if (to > from)
            rs->used_core_s += (to - from) * s->w->wfs[t->wf].procs[t->proc].req_cpu;
    }
}

/* ---- overruns (resv_overrun.h) ---- */

/* Whether a task of reservation ri's step waits for a node: ready, not held back, not running
 * (a gang's member whose gang is not whole yet waits too, as its pod would). */
static bool owner_waiting(const sim *s, int ri) {
    const resv_st *rs = &s->resvs[ri];
    const run *ru = &s->runs[rs->run];
    long first = ru->base + s->wi[rs->wf].proc_off[rs->proc];
    int n = s->w->wfs[rs->wf].procs[rs->proc].instances;
    for (long i = first; i < first + n; i++) {
        const task *t = &s->tasks[i];
        if (t->pod && t->node < 0 && !t->held)
            return true;
    }
    return false;
}

/* Whether task t runs by right of a reservation still held (its step's): never an overrun,
 * as the live controller's owner_of_held. */
static bool owner_of_held(const sim *s, const task *t) {
    return t->resv >= 0 && resv_phase_holds(s->resvs[t->resv].phase);
}

/* Reservation ri's open window, on its hold h: the overrunning tasks resv_overrun_victims
 * chooses are evicted. The candidates and the figures are fed as evict_overruns does in
 * scheduler/live/resv_controller.c: node_free from the snapshot, used by the step's tasks there,
 * every other task with the expected end it started on, except owners of held reservations. A
 * gang's task is left alone: a started gang cannot lose one member in the simulator (it is
 * queued whole), and the live controller evicts that member alone, not its gang. */
static int evict_on_hold(sim *s, int ri, int h, long *cand, resv_overrun_pod *ps, size_t *pick) {
    resv_st *rs = &s->resvs[ri];
    int n = rs->hnode[h];
    int si = sched_snapshot_node_index(s->snap, rs->hname[h]);
    if (si < 0)
        return 0;
    const sched_node *node = sched_snapshot_node(s->snap, (size_t)si);
    int64_t start = ms_of(rs->start), now = ms_of(s->now);
    sched_resources free_now, used = {0};
    sched_node_room(node, &free_now);
    size_t m = 0;
    bool at_its_end = false; /* a task expected to end just now: a candidate 1 ms later */
    for (int j = 0; j < s->nrunning[n]; j++) {
        long ti = s->running[n][j];
        const task *t = &s->tasks[ti];
        if (t->resv == ri) {
            for (int k = 0; k < SCHED_RES_MAX; k++)
                used.v[k] += t->pod->requests.v[k];
            continue;
        }
        if (owner_of_held(s, t) || t->gang >= 0)
            continue;
        at_its_end |= t->exp_end_ms == now && now <= start;
        ps[m] = (resv_overrun_pod){.req = t->pod->requests, .end_ms = t->exp_end_ms};
        cand[m++] = ti;
    }
    size_t nv = resv_overrun_victims(&free_now, &rs->hres[h], &used, start, now, ps, m, pick);
    /* every victim is chosen before any leaves: eviction reorders the node's running list */
    for (size_t i = 0; i < nv; i++) {
        if (eng_evict_task(s, cand[pick[i]]) < 0)
            return -1;
        rs->overrun_evictions++;
    }
    /* the live controller looks again at its next tick; the simulator has no tick, so it looks
     * again when such a task's end has passed */
    if (nv == 0 && at_its_end && eng_ev_push(s, s->now + 0.001, EV_RESV_OPEN, ri, 0) < 0)
        return -1;
    return 0;
}

int eng_resv_evict_overruns(sim *s) {
    long *cand = NULL;
    resv_overrun_pod *ps = NULL;
    size_t *pick = NULL, cap = 0;
    int rc = 0;
    for (int ri = 0; rc == 0 && ri < s->nresvs; ri++) {
        resv_st *rs = &s->resvs[ri];
        if (rs->phase != RESV_ACTIVE || !rs->evict_overrunning || s->now < rs->start ||
            !owner_waiting(s, ri))
            continue;
        for (int h = 0; rc == 0 && h < rs->nholds; h++) {
            size_t need = (size_t)s->nrunning[rs->hnode[h]];
            if (need > cap) {
                free(cand), free(ps), free(pick);
                cand = malloc(need * sizeof *cand);
                ps = malloc(need * sizeof *ps);
                pick = malloc(need * sizeof *pick);
                cap = need;
                if (!cand || !ps || !pick) {
                    rc = tm_err_set(s->err, "out of memory");
                    break;
                }
            }
            rc = evict_on_hold(s, ri, h, cand, ps, pick);
        }
    }
    free(cand), free(ps), free(pick);
    return rc;
}
