/* engine.c: the discrete-event loop (see engine.h). Placement goes only through the
 * scheduler's framework and policies; this file owns the clock, the event and pending heaps,
 * the DAG bookkeeping, the runtime/contention arithmetic and the monitoring history. Everything
 * is arrays and binary heaps so 100,000 tasks on 5,000 nodes stay in seconds. Setting a run up
 * is in engine_setup.c, reservations in engine_resv.c, the result in engine_result.c. */
#include "sim/engine.h"
#include "sim/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/preemption/preemption.h"

void sim_opts_default(sim_opts *o) {
    memset(o, 0, sizeof *o);
    o->policy = "tarema";
    o->seed = 1;
    o->shuffle = true;
    o->contention = true;
    o->calibrated = true;
    o->reshuffle_runs = true;
    o->noise_sigma = SIM_NOISE_SIGMA_DEFAULT;
    o->history_runs = SIM_HISTORY_RUNS_DEFAULT;
}

void sim_opts_ideal(sim_opts *o) {
    sim_opts_default(o);
    o->contention = false;
    o->calibrated = false;
    o->reshuffle_runs = false;
    o->noise_sigma = 0;
    o->history_runs = 0;
}

/* ---- event heap ---- */

static int ev_less(const event *a, const event *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int eng_ev_push(sim *s, double t, int kind, long id, uint32_t version) {
    if (sim_grow(&s->ev, s->nev, &s->capev, sizeof *s->ev, 1024) < 0)
        return tm_err_set(s->err, "out of memory for events");
    event e = {t, s->seq++, id, version, kind};
    size_t i = s->nev++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&e, &s->ev[p]))
            break;
        s->ev[i] = s->ev[p];
        i = p;
    }
    s->ev[i] = e;
    return 0;
}

static event ev_pop(sim *s) {
    event top = s->ev[0], last = s->ev[--s->nev];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l >= s->nev)
            break;
        m = l;
        if (l + 1 < s->nev && ev_less(&s->ev[l + 1], &s->ev[l]))
            m = l + 1;
        if (!ev_less(&s->ev[m], &last))
            break;
        s->ev[i] = s->ev[m];
        i = m;
    }
    if (s->nev)
        s->ev[i] = last;
    return top;
}

/* ---- pending queue: a heap ordered by the policy's queue sort ---- */

static int pend_less(const sim *s, long a, long b) {
    return sched_framework_queue_cmp(s->fw, s->snap, s->tasks[a].pod, s->tasks[b].pod) < 0;
}

static void pend_sift_down(sim *s, size_t i) {
    long x = s->pend[i];
    for (;;) {
        size_t l = 2 * i + 1, m;
        if (l >= s->npend)
            break;
        m = l;
        if (l + 1 < s->npend && pend_less(s, s->pend[l + 1], s->pend[l]))
            m = l + 1;
        if (!pend_less(s, s->pend[m], x))
            break;
        s->pend[i] = s->pend[m];
        i = m;
    }
    s->pend[i] = x;
}

static void pend_push(sim *s, long t) {
    size_t i = s->npend++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!pend_less(s, t, s->pend[p]))
            break;
        s->pend[i] = s->pend[p];
        i = p;
    }
    s->pend[i] = t;
}

static long pend_pop(sim *s) {
    long top = s->pend[0];
    s->pend[0] = s->pend[--s->npend];
    if (s->npend)
        pend_sift_down(s, 0);
    return top;
}

/* The task table changed (sjfn orders by expected runtime): restore the heap order. */
static void pend_heapify(sim *s) {
    for (size_t i = s->npend / 2; i-- > 0;)
        pend_sift_down(s, i);
}

/* ---- task lifecycle ---- */

/* "workflow/process#instance (run r)" for messages; a static buffer per call site is not
 * allowed (no global state), so it lives in the sim. */
static const char *task_name(sim *s, const task *t) {
    const sim_workflow *wf = &s->w->wfs[t->wf];
    snprintf(s->namebuf, sizeof s->namebuf, "%s/%s#%d (run %d)", wf->name, wf->procs[t->proc].name,
             t->inst, s->runs[t->run].idx + 1);
    return s->namebuf;
}

const char *eng_task_name(sim *s, long ti) {
    return task_name(s, &s->tasks[ti]);
}

/* A ready task enters the queue; a gang's member waits until the whole gang is ready, which
 * then enters the queue as one entry (its last member's task). */
int eng_enqueue(sim *s, long ti) {
    task *t = &s->tasks[ti];
    if (t->gang < 0) {
        s->shapes[t->shape].pending++;
        pend_push(s, ti);
        return 0;
    }
    gang_st *g = &s->gangs[t->gang];
    int64_t now_ms = (int64_t)llround(s->now * 1000);
    char gname[96];
    snprintf(gname, sizeof gname, "g%ld", g->first);
    if (!g->g) {
        sched_gang_spec spec = {.min_member = g->size};
        if (!(g->g = sched_gang_registry_podgroup(s->gangreg, SIM_RESV_NS, gname, &spec, NULL,
                                                  now_ms)))
            return tm_err_set(s->err, "out of memory");
    }
    sched_gang_ref ref = {SCHED_GANG_PODGROUP, SIM_RESV_NS, gname, "", ""};
    if (!sched_gang_registry_set_member(s->gangreg, &ref, t->pod->uid, t->pod->name,
                                        SCHED_GANG_POD_PENDING, now_ms))
        return tm_err_set(s->err, "out of memory");
    if (++g->ready < g->size)
        return 0;
    g->complete = s->now;
    t->rep = true;
    s->gang_queued++;
    pend_push(s, ti);
    return 0;
}

/* How many instances of process p of workflow wf ended so far (its history). */
static long proc_runs(const sim *s, int wf, int p) {
    const history *h = &s->hist[wf];
    long n = 0;
    for (int g = 0; g < s->c->ngroups; g++)
        n += (long)h->grp_n[(size_t)p * (size_t)s->c->ngroups + (size_t)g];
    return n;
}

/* A process's declared walltime is its instances' expected end (the live annotation
 * tarema.io/expected-duration) while nothing of it ended yet: afterwards history knows. */
static int make_ready(sim *s, long ti) {
    task *t = &s->tasks[ti];
    const sim_workflow *wf = &s->w->wfs[t->wf];
    sched_pod *pod = sim_pod_new(wf, &wf->procs[t->proc], ti, s->now);
    if (!pod)
        return tm_err_set(s->err, "out of memory");
    if (wf->procs[t->proc].walltime > 0 && proc_runs(s, t->wf, t->proc) == 0)
        pod->expected_duration_ms = (int64_t)llround(wf->procs[t->proc].walltime * 1000);
    t->pod = pod;
    t->ready = s->now;
    s->hist[t->wf].pending++;
    s->hist[t->wf].proc_pending[t->proc]++;
    if (t->resv >= 0) {
        resv_st *rs = &s->resvs[t->resv];
        if (sim_resv_own(pod, rs->name) < 0)
            return tm_err_set(s->err, "out of memory");
        if (rs->phase == RESV_ADMITTED) { /* the step starts when its window opens */
            t->held = true;
            return 0;
        }
    }
    return eng_enqueue(s, ti);
}

/* A new node shuffle (the paper shuffles the node list before every run): the snapshot's
 * nodes are put back under names of a new seeded order and the running tasks' pods moved
 * along, so only the names (every policy's tie-break) change. */
static int reshuffle(sim *s) {
    int n = s->c->nnodes;
    int *perm = malloc((size_t)n * sizeof *perm);
    char(*old)[SIM_NAME_MAX + 16] = malloc((size_t)n * sizeof *old);
    int rc = perm && old ? 0 : tm_err_set(s->err, "out of memory for %d nodes", n);
    for (int i = 0; rc == 0 && i < n; i++)
        snprintf(old[i], sizeof old[i], "%s", sched_snapshot_node(s->snap, (size_t)i)->name);
    for (int i = 0; rc == 0 && i < n; i++)
        sched_snapshot_remove_node(s->snap, old[i]);
    s->shuffles++;
    if (rc == 0) {
        eng_node_order(perm, n, true, s->o->seed ^ (s->shuffles * 0xa0761d6478bd642fULL));
        rc = eng_put_nodes(s->snap, s->c, perm, true, s->err);
    }
    if (rc == 0) {
        sched_snapshot_refresh(s->snap);
        rc = eng_map_nodes(s);
    }
    /* perm now maps snapshot index -> sim node as well; invert for the running pods */
    for (int i = 0; rc == 0 && i < n; i++)
        perm[s->snap2sim[i]] = i;
    for (int nd = 0; rc == 0 && nd < n; nd++)
        for (int k = 0; rc == 0 && k < s->nrunning[nd]; k++) {
            const task *t = &s->tasks[s->running[nd][k]];
            const sched_node *sn = sched_snapshot_node(s->snap, (size_t)perm[nd]);
            rc = sched_snapshot_add_pod(s->snap, t->pod->uid, sn->name, &t->pod->requests, s->err);
            if (rc == 0 && s->o->preemption)
                sched_snapshot_set_pod_start(s->snap, t->pod->uid,
                                             (int64_t)llround(t->start * 1000) + 1);
        }
    free(perm);
    free(old);
    return rc;
}

static int arrive(sim *s, int r) {
    run *ru = &s->runs[r];
    /* held capacity is named by node: no reshuffle while a reservation holds any */
    if (s->o->shuffle && s->o->reshuffle_runs && r != 0 &&
        s->c->nnodes <= SIM_RESHUFFLE_MAX_NODES && !eng_resv_holding(s) && reshuffle(s) < 0)
        return -1;
    ru->arrival = s->now;
    const sim_workflow *wf = &s->w->wfs[ru->wf];
    for (int p = 0; p < wf->nprocs; p++) {
        int ri = s->tasks[ru->base + s->wi[ru->wf].proc_off[p]].resv;
        if (ri >= 0 && eng_resv_admit(s, ri) < 0)
            return -1;
    }
    for (int p = 0; p < wf->nprocs; p++) {
        if (wf->procs[p].nall + wf->procs[p].neach)
            continue;
        for (int i = 0; i < wf->procs[p].instances; i++)
            if (make_ready(s, ru->base + s->wi[ru->wf].proc_off[p] + i) < 0)
                return -1;
    }
    return 0;
}

/* The calibrated model's rates on node n (tasks already brought up to now). */
static int rerate_calibrated(sim *s, int n, long only) {
    const sim_node_type *nt = &s->c->types[s->c->nodes[n].type];
    sim_demand d = {0, 0, 0};
    for (int k = 0; k < s->nrunning[n]; k++) {
        const task *t = &s->tasks[s->running[n][k]];
        d.cpu += t->dem.cpu;
        d.mem += t->dem.mem;
        d.io += t->dem.io;
    }
    double bw = nt->mem_bandwidth > 0 ? nt->mem_bandwidth : nt->cores;
    for (int k = 0; k < s->nrunning[n]; k++) {
        long ti = s->running[n][k];
        task *t = &s->tasks[ti];
        double rate =
            1.0 / sim_contention_slowdown(d, nt->cores, bw, s->io_cap[s->c->nodes[n].type], t->w);
        if (ti != only && fabs(rate - t->rate) < 1e-12)
            continue;
        t->rate = rate;
        if (eng_ev_push(s, s->now + t->remaining / rate, EV_FINISH, ti, ++t->version) < 0)
            return -1;
    }
    return 0;
}

/* Brings every running task on node n up to now, recomputes their rates and reschedules
 * their completions. Without contention rates stay 1 and only `only` gets an event. */
static int rerate(sim *s, int n, long only) {
    const sim_node_type *nt = &s->c->types[s->c->nodes[n].type];
    if (!s->o->contention) {
        task *t = &s->tasks[only];
        t->rate = 1;
        t->last = s->now;
        return eng_ev_push(s, s->now + t->remaining, EV_FINISH, only, ++t->version);
    }
    double dcpu = 0, dmem = 0;
    for (int k = 0; k < s->nrunning[n]; k++) {
        task *t = &s->tasks[s->running[n][k]];
        t->remaining -= (s->now - t->last) * t->rate;
        if (t->remaining < 0)
            t->remaining = 0;
        t->last = s->now;
        dcpu += t->cpu_demand;
        dmem += t->mem_demand;
    }
    if (s->o->calibrated)
        return rerate_calibrated(s, n, only);
    double fcpu = fmax(1.0, dcpu / nt->cores);
    double fmem = nt->mem_bandwidth > 0 ? fmax(1.0, dmem / nt->mem_bandwidth) : 1.0;
    for (int k = 0; k < s->nrunning[n]; k++) {
        long ti = s->running[n][k];
        task *t = &s->tasks[ti];
        const sim_process *p = &s->w->wfs[t->wf].procs[t->proc];
        double s0 = fmax(0.0, 1.0 - p->sens[LAB_CPU] - p->sens[LAB_MEM] - p->sens[LAB_IO]);
        double slow = s0 + p->sens[LAB_IO] + p->sens[LAB_CPU] * fcpu + p->sens[LAB_MEM] * fmem;
        double rate = 1.0 / slow;
        if (ti != only && fabs(rate - t->rate) < 1e-12)
            continue;
        t->rate = rate;
        if (eng_ev_push(s, s->now + t->remaining / rate, EV_FINISH, ti, ++t->version) < 0)
            return -1;
    }
    return 0;
}

/* Task ti's run-to-run noise factor under the calibrated model (1 under the ideal one). The key
 * names the task (workflow name, index), not the node, so every policy sees the same draw for
 * the same task, and the lower bound (collect) can use it too. */
double eng_noise_of(const sim *s, long ti) {
    if (!s->o->calibrated)
        return 1.0;
    uint64_t key = (uint64_t)ti;
    for (const char *q = s->w->wfs[s->tasks[ti].wf].name; *q; q++)
        key = (key ^ (unsigned char)*q) * 0x100000001b3ULL;
    return sim_noise_factor(s->o->seed, key, s->o->noise_sigma);
}

static int start_task(sim *s, long ti, int n) {
    task *t = &s->tasks[ti];
    const sim_workflow *wf = &s->w->wfs[t->wf];
    const sim_process *p = &wf->procs[t->proc];
    int type = s->c->nodes[n].type;
    t->node = n;
    t->start = s->now;
    t->usage = sim_usage(s->c, wf, p, t->inst, type);
    t->cpu_demand = isnan(t->usage.cpu_pct) ? p->req_cpu : t->usage.cpu_pct / 100.0;
    t->mem_demand = p->sens[LAB_MEM] * t->cpu_demand;
    if (s->o->calibrated) {
        const sim_node_type *nt = &s->c->types[type];
        double base = sim_runtime_fitted(s->c, wf, p, t->inst, type);
        /* the share of a core's memory a task's resident set takes: large working sets stream
         * more memory per busy core */
        double r = isnan(t->usage.peak_rss) || nt->memory <= 0
                       ? 0
                       : fmin(1.0, t->usage.peak_rss / ((double)nt->memory / nt->cores));
        double io_cap = s->io_cap[type];
        double io_rate = isnan(t->usage.io_bytes) || !(base > 0) ? 0 : t->usage.io_bytes / base;
        t->dem = (sim_demand){t->cpu_demand, t->cpu_demand * r, io_rate};
        t->w = (sim_demand){p->fit_sens[LAB_CPU], p->fit_sens[LAB_CPU] * r + p->fit_sens[LAB_MEM],
                            io_cap > 0 ? fmin(1.0, io_rate / io_cap) : 0};
        t->remaining = base * eng_noise_of(s, ti);
    } else {
        t->remaining = sim_runtime(s->c, wf, p, t->inst, type);
    }
    t->rate = 1;
    t->last = s->now;
    if (sim_grow(&s->running[n], (size_t)s->nrunning[n], &s->caprunning[n], sizeof(int), 8) < 0)
        return tm_err_set(s->err, "out of memory");
    t->slot = s->nrunning[n];
    s->running[n][s->nrunning[n]++] = (int)ti;
    if (s->o->preemption) /* status.startTime, read by preemption's tie-breaks */
        sched_snapshot_set_pod_start(s->snap, t->pod->uid, (int64_t)llround(s->now * 1000) + 1);
    /* the expected end it was let in on (the Reservation filter's, at this instant): what a
     * window that opens holds it to, as the live controller counts it when the pod binds */
    t->exp_end_ms = -1;
    if (s->nresvs) {
        const char *node = sched_snapshot_pod_node(s->snap, t->pod->uid);
        t->exp_end_ms = resv_expected_end(s->snap, t->pod,
                                          node ? sched_snapshot_node_by_name(s->snap, node) : NULL,
                                          (int64_t)llround(s->now * 1000));
    }
    eng_resv_use(s, t, n, true);
    return rerate(s, n, ti);
}

static int record_sample(sim *s, const task *t) {
    const double v[LAB_NFEATURES] = {t->usage.cpu_pct, t->usage.peak_rss, t->usage.io_bytes};
    if (sim_history_add(s->hist[t->wf].h, t->proc, v, (t->end - t->start) * 1000.0, s->err) < 0)
        return tm_err_wrap(s->err, "workflow %s", s->w->wfs[t->wf].name);
    /* the node group it ran on, as the labeler records per run from the pod's node */
    size_t k = (size_t)t->proc * (size_t)s->c->ngroups + (size_t)s->c->nodes[t->node].group;
    s->hist[t->wf].grp_sum[k] += (t->end - t->start) * 1000.0;
    s->hist[t->wf].grp_n[k]++;
    /* the cores it used, as the labeler reads %cpu per run */
    if (!isnan(t->usage.cpu_pct)) {
        s->hist[t->wf].cpu_sum[t->proc] += t->usage.cpu_pct / 100.0;
        s->hist[t->wf].cpu_n[t->proc]++;
    }
    return 0;
}

static int finish_task(sim *s, long ti) {
    task *t = &s->tasks[ti];
    int n = t->node;
    t->end = s->now;
    /* swap-remove from the node's running list */
    int last = s->running[n][--s->nrunning[n]];
    s->running[n][t->slot] = last;
    s->tasks[last].slot = t->slot;
    sched_snapshot_remove_pod(s->snap, t->pod->uid);
    eng_resv_use(s, t, n, false);
    if (t->gang >= 0)
        sched_gang_registry_set_state(s->gangreg, t->pod->uid, SCHED_GANG_POD_SUCCEEDED);
    sched_pod_free(t->pod);
    t->pod = NULL;
    if (record_sample(s, t) < 0)
        return -1;
    if (s->o->contention && s->nrunning[n] > 0 && rerate(s, n, -1) < 0)
        return -1;
    run *ru = &s->runs[t->run];
    const wfinfo *wi = &s->wi[t->wf];
    const sim_workflow *wf = &s->w->wfs[t->wf];
    for (int k = 0; k < wi->nsucc_each[t->proc]; k++) {
        long si = ru->base + wi->proc_off[wi->succ_each[t->proc][k]] + t->inst;
        if (--s->tasks[si].deps_left == 0 && make_ready(s, si) < 0)
            return -1;
    }
    --ru->proc_left[t->proc];
    if (t->resv >= 0 && resv_phase_holds(s->resvs[t->resv].phase) && eng_resv_step(s, t->resv) < 0)
        return -1;
    if (ru->proc_left[t->proc] == 0) {
        for (int k = 0; k < wi->nsucc_all[t->proc]; k++) {
            int v = wi->succ_all[t->proc][k];
            for (int i = 0; i < wf->procs[v].instances; i++) {
                long si = ru->base + wi->proc_off[v] + i;
                if (--s->tasks[si].deps_left == 0 && make_ready(s, si) < 0)
                    return -1;
            }
        }
    }
    if (--ru->left == 0) {
        ru->end = s->now;
        s->hist[t->wf].structure_known = true;
        /* history runs chain to each other; after the last of every workflow's, the measured
         * runs arrive; measured runs chain unless their arrivals are explicit */
        bool chain = ru->idx + 1 < s->hruns ||
                     (ru->idx >= s->hruns && !wf->narrivals && ru->idx + 1 < s->hruns + wf->runs);
        if (chain && eng_ev_push(s, s->now + wf->gap, EV_ARRIVE, t->run + 1, 0) < 0)
            return -1;
        if (ru->idx + 1 == s->hruns && --s->hruns_left == 0 && eng_measured_arrivals(s) < 0)
            return -1;
    }
    return 0;
}

/* ---- labels from history ---- */

/* s->tail[p] for workflow i: the longest expected path (ms, mean runtimes from history) from
 * the end of process p through its successors to the end of a run, as HEFT's upward rank. */
static int upward_tails(sim *s, int i) {
    const sim_workflow *wf = &s->w->wfs[i];
    const wfinfo *wi = &s->wi[i];
    const history *h = &s->hist[i];
    int ng = s->c->ngroups;
    if ((size_t)wf->nprocs > s->ntail) {
        int64_t *nt = realloc(s->tail, 2 * (size_t)wf->nprocs * sizeof *nt);
        if (!nt)
            return tm_err_set(s->err, "out of memory");
        s->tail = nt;
        s->ntail = (size_t)wf->nprocs;
    }
    int64_t *rank = s->tail + wf->nprocs;
    for (int p = wf->nprocs; p-- > 0;) { /* procs are in topological order */
        double sum = 0;
        long n = 0;
        for (int g = 0; g < ng; g++) {
            sum += h->grp_sum[(size_t)p * (size_t)ng + (size_t)g];
            n += h->grp_n[(size_t)p * (size_t)ng + (size_t)g];
        }
        int64_t tail = 0;
        for (int k = 0; k < wi->nsucc_all[p]; k++)
            if (rank[wi->succ_all[p][k]] > tail)
                tail = rank[wi->succ_all[p][k]];
        for (int k = 0; k < wi->nsucc_each[p]; k++)
            if (rank[wi->succ_each[p][k]] > tail)
                tail = rank[wi->succ_each[p][k]];
        s->tail[p] = tail;
        rank[p] = tail + (n ? (int64_t)llround(sum / (double)n) : 0);
    }
    return 0;
}

/* Publishes every changed task profile of the workflows with pending tasks into the
 * snapshot, as the labeler relabels on every stored run; the queue is re-sorted when a
 * profile of a process with pending tasks changed (sjfn orders by expected runtime). */
static int refresh_labels(sim *s) {
    int resort = 0;
    for (int i = 0; i < s->w->nworkflows; i++) {
        history *h = &s->hist[i];
        size_t n = sim_history_count(h->h);
        /* labels are read only when the workflow's tasks are queued or placed, so a workflow
         * with nothing pending can wait: the same labels, computed when they are needed */
        if (h->pending == 0 || n == h->n_at_refresh)
            continue;
        const sim_workflow *wf = &s->w->wfs[i];
        if (h->structure_known && upward_tails(s, i) < 0)
            return -1;
        for (int p = 0; p < wf->nprocs; p++) {
            sched_task_profile tp;
            double rt;
            memset(&tp, 0, sizeof tp);
            if (sim_history_label(h->h, p, tp.labels, &rt) == 0)
                continue;
            tp.expected_runtime_ms = isnan(rt) ? -1 : (int64_t)llround(rt);
            for (int g = 0; g < s->c->ngroups && tp.n_group_rt < SCHED_TASK_MAX_GROUPS; g++) {
                size_t k = (size_t)p * (size_t)s->c->ngroups + (size_t)g;
                if (h->grp_n[k] == 0)
                    continue;
                sched_group_runtime *gr = &tp.group_rt[tp.n_group_rt++];
                snprintf(gr->group, sizeof gr->group, "%d", g + 1);
                gr->runtime_ms = (int64_t)llround(h->grp_sum[k] / (double)h->grp_n[k]);
                gr->runs = (int32_t)h->grp_n[k];
            }
            tp.tail_ms = h->structure_known ? s->tail[p] : 0;
            if (h->cpu_n[p] > 0)
                tp.cpu_use_milli = llround(h->cpu_sum[p] * 1000 / (double)h->cpu_n[p]);
            const sched_task_profile *old = &h->published[p];
            if (memcmp(&tp, old, sizeof tp) == 0)
                continue;
            if (sched_snapshot_set_task(s->snap, wf->name, wf->procs[p].name, &tp, s->err) < 0)
                return tm_err_wrap(s->err, "labelling workflow %s", wf->name);
            h->published[p] = tp;
            resort |= h->proc_pending[p] > 0;
        }
        h->n_at_refresh = n;
    }
    if (resort)
        pend_heapify(s);
    return 0;
}

/* ---- scheduling pass ---- */

/* One try of gang g's waiting members pods[0..n-1] (Permit's decision, as its cycle live). */
static sched_gang_try place_gang(sim *s, gang_st *g, sched_pod **pods, size_t n, int *nodes,
                                 int64_t now_ms, char *why, size_t cap) {
    sched_gang_placement pl = {.nodes = nodes};
    g->attempts++;
    s->attempts++;
    return sched_gang_try_place(s->fw, s->snap, g->g, pods, n, now_ms, true, &pl, why, cap);
}

/* The gang whose whole membership is ready, through the scheduler's gang decision
 * (sched_gang_try_place: all of its waiting tasks placed on the snapshot, or none). Its waiting
 * tasks are all of them, or after it was evicted whole those that had not finished. When it
 * does not fit and --preemption is on, it preempts as one unit (eng_preempt_gang) and is tried
 * again at once, as a single task is. 1 when it started, 0 when it waits whole, -1 with err. */
static int try_gang(sim *s, long ti, int64_t now_ms) {
    gang_st *g = &s->gangs[s->tasks[ti].gang];
    sched_pod **pods = malloc((size_t)g->size * sizeof *pods);
    int *nodes = malloc((size_t)g->size * sizeof *nodes);
    long *mi = malloc((size_t)g->size * sizeof *mi);
    if (!pods || !nodes || !mi) {
        free(pods);
        free(nodes);
        free(mi);
        return tm_err_set(s->err, "out of memory");
    }
    size_t n = 0;
    for (int i = 0; i < g->size; i++) {
        const task *m = &s->tasks[g->first + i];
        if (m->pod && m->node < 0) {
            mi[n] = g->first + i;
            pods[n++] = m->pod;
        }
    }
    char why[1024];
    sched_gang_try r = place_gang(s, g, pods, n, nodes, now_ms, why, sizeof why);
    int rc = 0;
    if (r == SCHED_GANG_TRY_UNSCHEDULABLE && s->o->preemption) {
        rc = eng_preempt_gang(s, ti, pods, n, now_ms);
        if (rc > 0)
            r = place_gang(s, g, pods, n, nodes, now_ms, why, sizeof why);
        rc = rc < 0 ? -1 : 0;
    }
    if (rc == 0 && r == SCHED_GANG_TRY_ERROR)
        rc = tm_err_set(s->err, "gang of task %s: %s", task_name(s, &s->tasks[ti]), why);
    for (size_t i = 0; rc == 0 && r == SCHED_GANG_TRY_SCHEDULED && i < n; i++)
        if (nodes[i] < 0) /* need == its waiting tasks: every one is placed when the gang is */
            rc = tm_err_set(s->err, "gang of task %s placed only in part",
                            task_name(s, &s->tasks[ti]));
    if (rc == 0 && r == SCHED_GANG_TRY_SCHEDULED) {
        g->start = s->now;
        s->tasks[ti].rep = false;
        s->gang_queued--;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            task *m = &s->tasks[mi[i]];
            s->hist[m->wf].pending--;
            s->hist[m->wf].proc_pending[m->proc]--;
            sched_gang_registry_set_state(s->gangreg, m->pod->uid, SCHED_GANG_POD_RUNNING);
            rc = start_task(s, mi[i], s->snap2sim[nodes[i]]);
        }
        rc = rc < 0 ? -1 : 1;
    }
    free(pods);
    free(nodes);
    free(mi);
    return rc;
}

/* Running task vi stops for good: its completion is void (version), its work is lost (it
 * starts over when placed again), the tasks left on its node speed up. The simulation has no
 * grace period: it leaves at once. It is not queued again (eng_evict_task does that). */
int eng_stop_task(sim *s, long vi) {
    task *t = &s->tasks[vi];
    int n = t->node;
    if (n < 0 || !t->pod)
        return tm_err_set(s->err, "eviction chose task %s, which is not running", task_name(s, t));
    t->version++;
    int last = s->running[n][--s->nrunning[n]];
    s->running[n][t->slot] = last;
    s->tasks[last].slot = t->slot;
    sched_snapshot_remove_pod(s->snap, t->pod->uid);
    eng_resv_use(s, t, n, false);
    t->node = -1;
    s->hist[t->wf].pending++;
    s->hist[t->wf].proc_pending[t->proc]++;
    if (s->o->contention && s->nrunning[n] > 0 && rerate(s, n, -1) < 0)
        return -1;
    return 0;
}

/* Preemption or a reservation's window evicts running task vi (in no gang: engine_preempt.c
 * evicts a gang whole): it stops and is queued again. */
int eng_evict_task(sim *s, long vi) {
    if (s->tasks[vi].gang >= 0)
        return tm_err_set(s->err, "task %s is in a gang: it is evicted only with its gang",
                          task_name(s, &s->tasks[vi]));
    return eng_stop_task(s, vi) < 0 ? -1 : eng_enqueue(s, vi);
}

static int schedule_pass(sim *s) {
    /* first, as the live controller's tick: a waiting owner's task may then take in this pass
     * the held capacity that overrunning tasks used (a gang's owner task whose other members
     * are not ready yet waits too, outside the queue: so this comes before the empty check) */
    if (s->nresvs && eng_resv_evict_overruns(s) < 0)
        return -1;
    if (s->npend == 0)
        return 0;
    if (refresh_labels(s) < 0)
        return -1;
    s->pass++;
    long open = 0; /* shapes with pending tasks not yet known not to fit */
    for (int i = 0; i < s->nshapes; i++)
        if (s->shapes[i].pending > 0)
            open++;
    s->ndeferred = 0;
    int64_t now_ms = (int64_t)llround(s->now * 1000);
    /* with capacity held, whether a node takes a task depends on the task's expected end and
     * owner, not only on its shape: no shape is then known not to fit */
    bool resv_on = eng_resv_holding(s);
    long gopen = s->gang_queued;
    while (s->npend > 0 && (open > 0 || gopen > 0 || resv_on)) {
        long ti = pend_pop(s);
        task *t = &s->tasks[ti];
        shape *sh = &s->shapes[t->shape];
        if (t->rep) {
            gopen--;
            int placed = try_gang(s, ti, now_ms);
            if (placed < 0)
                return -1;
            if (!placed)
                s->deferred[s->ndeferred++] = ti;
            continue;
        }
        if (!resv_on && sh->blocked_pass == s->pass) {
            s->deferred[s->ndeferred++] = ti;
            continue;
        }
        sched_decision d;
        s->attempts++;
        if (sched_framework_schedule(s->fw, s->snap, t->pod, now_ms, &d, s->err) < 0)
            return tm_err_wrap(s->err, "policy %s on task %s", s->o->policy, task_name(s, t));
        if (d.node < 0 && s->o->preemption && eng_preempt_task(s, ti, now_ms, &d) < 0)
            return -1;
        if (d.node < 0) {
            /* the filters only look at resources here, so no task of this shape fits now */
            if (!resv_on) {
                sh->blocked_pass = s->pass;
                open--;
            }
            s->deferred[s->ndeferred++] = ti;
            continue;
        }
        if (sched_framework_reserve(s->fw, s->snap, t->pod, d.node, s->err) < 0)
            return tm_err_wrap(s->err, "reserving task %s", task_name(s, t));
        if (--sh->pending == 0)
            open--;
        s->hist[t->wf].pending--;
        s->hist[t->wf].proc_pending[t->proc]--;
        if (start_task(s, ti, s->snap2sim[d.node]) < 0)
            return -1;
    }
    for (size_t i = 0; i < s->ndeferred; i++)
        pend_push(s, s->deferred[i]);
    return 0;
}

static void sim_cleanup(sim *s) {
    if (s->tasks)
        for (long i = 0; i < s->ntasks; i++)
            sched_pod_free(s->tasks[i].pod);
    if (s->wi)
        for (int i = 0; i < s->w->nworkflows; i++) {
            for (int p = 0; p < s->w->wfs[i].nprocs; p++) {
                if (s->wi[i].succ_all)
                    free(s->wi[i].succ_all[p]);
                if (s->wi[i].succ_each)
                    free(s->wi[i].succ_each[p]);
            }
            free(s->wi[i].proc_off);
            free(s->wi[i].succ_all);
            free(s->wi[i].succ_each);
            free(s->wi[i].nsucc_all);
            free(s->wi[i].nsucc_each);
            free(s->wi[i].proc_shape);
        }
    if (s->hist)
        for (int i = 0; i < s->w->nworkflows; i++) {
            sim_history_free(s->hist[i].h);
            free(s->hist[i].proc_pending);
            free(s->hist[i].published);
            free(s->hist[i].grp_sum);
            free(s->hist[i].grp_n);
            free(s->hist[i].cpu_sum);
            free(s->hist[i].cpu_n);
        }
    if (s->runs)
        for (int i = 0; i < s->nruns; i++)
            free(s->runs[i].proc_left);
    if (s->running)
        for (int i = 0; i < s->c->nnodes; i++)
            free(s->running[i]);
    free(s->running);
    free(s->nrunning);
    free(s->caprunning);
    free(s->wi);
    free(s->hist);
    free(s->runs);
    free(s->first_run);
    free(s->tasks);
    free(s->pend);
    free(s->deferred);
    free(s->shapes);
    free(s->ev);
    free(s->snap2sim);
    free(s->io_cap);
    free(s->tail);
    for (int i = 0; s->resvs && i < s->nresvs; i++) {
        resv_st *rs = &s->resvs[i];
        for (int h = 0; h < rs->nholds; h++)
            free(rs->hname[h]);
        free(rs->hname);
        free(rs->hnode);
        free(rs->hpods);
        free(rs->hres);
        free(rs->hused);
    }
    free(s->resvs);
    free(s->gangs);
    sched_gang_registry_free(s->gangreg);
    sched_framework_free(s->fw);
    sim_resv_free(s->rv); /* the Filter plugin's state: after the framework */
    sched_snapshot_free(s->snap);
}

sim_result *sim_run(const sim_cluster *c, const sim_workload *w, const sim_opts *opts,
                    tm_err *err) {
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    sim s = {.c = c, .w = w, .o = opts, .err = err};
    sim_result *res = NULL;
    s.fw = sched_policy_new(opts->policy, err);
    if (!s.fw || (opts->preemption && sched_preemption_plugin_add(s.fw, err) != 0))
        goto out;
    if (sim_label_classes(c, s.classes, err) < 0 || eng_build_snapshot(&s) < 0 ||
        eng_build_workflows(&s) < 0 || eng_build_gangs_resvs(&s) < 0 || eng_preempt_setup(&s) < 0)
        goto out;
    if (!(s.io_cap = calloc((size_t)c->ntypes, sizeof *s.io_cap))) {
        tm_err_set(err, "out of memory");
        goto out;
    }
    for (int t = 0; t < c->ntypes; t++)
        s.io_cap[t] = sim_io_capacity(c, w, t);
    while (s.nev > 0) {
        s.now = s.ev[0].t;
        /* every event of this instant first, then one scheduling pass */
        while (s.nev > 0 && s.ev[0].t == s.now) {
            event e = ev_pop(&s);
            if (e.kind == EV_ARRIVE) {
                if (arrive(&s, (int)e.id) < 0)
                    goto out;
            } else if (e.kind == EV_RESV_OPEN || e.kind == EV_RESV_CLOSE) {
                if (eng_resv_step(&s, (int)e.id) < 0)
                    goto out;
            } else if (e.version == s.tasks[e.id].version && isnan(s.tasks[e.id].end)) {
                if (finish_task(&s, e.id) < 0)
                    goto out;
            }
        }
        if (schedule_pass(&s) < 0)
            goto out;
    }
    if (s.npend > 0) {
        tm_err_set(err,
                   "%zu tasks never found a node (first: %s); a process requests more than the "
                   "nodes left free",
                   s.npend, task_name(&s, &s.tasks[s.pend[0]]));
        goto out;
    }
    for (long i = 0; i < s.ntasks; i++)
        if (isnan(s.tasks[i].end)) {
            tm_err_set(err, "task %s never ran (its gang never had all its tasks ready)",
                       task_name(&s, &s.tasks[i]));
            goto out;
        }
    res = eng_collect(&s);
    if (!res)
        tm_err_set(err, "out of memory collecting results");
    else {
        clock_gettime(CLOCK_MONOTONIC, &ts1);
        res->wall_s = (double)(ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) / 1e9;
    }
out:
    sim_cleanup(&s);
    return res;
}

/* Appends r's gangs, reservations and holds (workflow wf, times + offset) to m. */
static int merge_gangs_resvs(sim_result *m, const sim_result *r, int wf, double offset) {
    sim_gang_rec *g = realloc(m->gangs, (size_t)(m->ngangs + r->ngangs + 1) * sizeof *g);
    if (g)
        m->gangs = g;
    sim_resv_rec *v = g ? realloc(m->resvs, (size_t)(m->nresvs + r->nresvs + 1) * sizeof *v) : NULL;
    if (v)
        m->resvs = v;
    sim_resv_hold *h =
        v ? realloc(m->holds, (size_t)(m->nholds + r->nholds + 1) * sizeof *h) : NULL;
    if (!h)
        return -1;
    m->holds = h;
    for (long k = 0; k < r->ngangs; k++) {
        sim_gang_rec x = r->gangs[k];
        x.wf = wf;
        x.ready += offset;
        x.start += offset;
        m->gangs[m->ngangs++] = x;
    }
    for (long k = 0; k < r->nresvs; k++) {
        sim_resv_rec x = r->resvs[k];
        x.wf = wf;
        x.start += offset;
        x.end += offset;
        x.released += offset;
        x.first_hold += m->nholds;
        m->resvs[m->nresvs++] = x;
    }
    for (long k = 0; k < r->nholds; k++)
        m->holds[m->nholds++] = r->holds[k];
    return 0;
}

sim_result *sim_run_isolated(const sim_cluster *c, const sim_workload *w, const sim_opts *opts,
                             tm_err *err) {
    sim_result *m = calloc(1, sizeof *m);
    long total = 0, nruns = 0;
    for (int i = 0; i < w->nworkflows; i++) {
        total += (long)w->wfs[i].runs * w->wfs[i].tasks_per_run;
        nruns += w->wfs[i].runs;
    }
    if (!m || !(m->wf = calloc((size_t)w->nworkflows, sizeof *m->wf)) ||
        !(m->runs = calloc((size_t)nruns, sizeof *m->runs)) ||
        !(m->groups = calloc((size_t)c->ngroups + 1, sizeof *m->groups)) ||
        (opts->record_tasks && !(m->task_recs = calloc((size_t)total + 1, sizeof *m->task_recs)))) {
        sim_result_free(m);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    snprintf(m->policy, sizeof m->policy, "%s", opts->policy);
    m->cluster = c;
    m->workload = w;
    m->ngroups = c->ngroups;
    m->history_runs = opts->history_runs > 0 ? opts->history_runs : 0;
    double offset = 0, sum_rt = 0, sum_pend = 0, bound_log = 0;
    for (int i = 0; i < w->nworkflows; i++) {
        sim_workload sub = {.nworkflows = 1, .wfs = &w->wfs[i]};
        sim_result *r = sim_run(c, &sub, opts, err);
        if (!r) {
            tm_err_wrap(err, "workflow %s", w->wfs[i].name);
            sim_result_free(m);
            return NULL;
        }
        m->wf[i] = r->wf[0];
        bound_log += log(r->bound_geomean); /* alone, a workflow's bound is its own */
        for (int k = 0; k < r->nruns; k++) {
            sim_run_rec rr = r->runs[k];
            rr.wf = i;
            rr.arrival += offset;
            rr.end += offset;
            m->runs[m->nruns++] = rr;
        }
        if (m->task_recs)
            for (long k = 0; k < r->tasks; k++) {
                sim_task_rec tr = r->task_recs[k];
                tr.wf = i;
                tr.ready += offset;
                tr.start += offset;
                tr.end += offset;
                m->task_recs[m->tasks + k] = tr;
            }
        for (int g = 0; g < c->ngroups; g++) {
            m->groups[g].nodes = r->groups[g].nodes;
            m->groups[g].cores = r->groups[g].cores;
            m->groups[g].tasks += r->groups[g].tasks;
            m->groups[g].busy_core_s += r->groups[g].busy_core_s;
        }
        if (merge_gangs_resvs(m, r, i, offset) < 0) {
            sim_result_free(r);
            sim_result_free(m);
            tm_err_set(err, "out of memory");
            return NULL;
        }
        m->tasks += r->tasks;
        m->sched_attempts += r->sched_attempts;
        m->preemptions += r->preemptions;
        m->evictions += r->evictions;
        m->gang_preemptions += r->gang_preemptions;
        m->gang_evictions += r->gang_evictions;
        m->overrun_evictions += r->overrun_evictions;
        m->wall_s += r->wall_s;
        sum_rt += r->task_runtime_mean * (double)r->tasks;
        sum_pend += r->pending_mean * (double)r->tasks;
        offset += r->horizon;
        sim_result_free(r);
    }
    m->horizon = offset;
    m->bound_geomean = w->nworkflows ? exp(bound_log / w->nworkflows) : NAN;
    m->task_runtime_mean = m->tasks ? sum_rt / (double)m->tasks : 0;
    m->pending_mean = m->tasks ? sum_pend / (double)m->tasks : 0;
    for (int g = 0; g < c->ngroups; g++)
        m->groups[g].utilisation = offset > 0 && m->groups[g].cores > 0
                                       ? m->groups[g].busy_core_s / (m->groups[g].cores * offset)
                                       : 0;
    return m;
}
