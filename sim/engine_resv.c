/* engine_resv.c: reservations in the simulator: a step's capacity held for a window of its run
 * (docs/simulation.md), admitted when its run arrives, opened, released and charged for the
 * tasks that used it; sim/resv_sim.h makes the decisions, this applies them to the run. */
#include "sim/engine.h"
#include "sim/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int rc = sim_resv_admit(s->rv, s->snap, rs->name, wf->name, p->name,
                            (int64_t)llround(p->req_cpu * 1000), p->req_mem, p->instances,
                            ms_of(rs->start), ms_of(rs->end), pods, k, ms_of(s->now), &a, s->err);
    free(pods);
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
