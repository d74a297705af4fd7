/* engine_setup.c: sets a simulated run up (see engine.h): the cluster's nodes in the scheduler's
 * snapshot (named and ordered for the seed), node label classes, the workflows' tasks, runs and
 * arrivals, their monitoring histories, and the gangs and reservations of every run. */
#include "sim/engine.h"
#include "sim/engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/groups.h"

/* ---- setup ---- */

/* The node list order for seed: identity without shuffle, else a seeded permutation. */
void eng_node_order(int *perm, int n, bool shuffle, uint64_t seed) {
    for (int i = 0; i < n; i++)
        perm[i] = i;
    if (shuffle) {
        /* the paper shuffles the node list before each run so no policy profits from it */
        uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 0x1234567ULL;
        for (int i = n - 1; i > 0; i--) {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            int j = (int)(st % (uint64_t)(i + 1));
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
    }
}

/* Puts the cluster's nodes into snap in the order perm, named for that order. */
int eng_put_nodes(sched_snapshot *snap, const sim_cluster *c, const int *perm, bool shuffle,
                  tm_err *err) {
    int n = c->nnodes;
    static const char *const keys[LAB_NFEATURES] = {"tarema.io/cpu", "tarema.io/mem",
                                                    "tarema.io/io"};
    int rc = 0;
    for (int pos = 0; pos < n && rc == 0; pos++) {
        const sim_node *nd = &c->nodes[perm[pos]];
        const sim_node_type *t = &c->types[nd->type];
        char name[SIM_NAME_MAX + 16], v[16];
        /* names sort in the (shuffled) list order: name order is every policy's tie-break */
        if (shuffle)
            snprintf(name, sizeof name, "%06d-%s", pos, nd->name);
        else
            snprintf(name, sizeof name, "%s", nd->name);
        sched_node *sn = sched_node_new(name);
        if (!sn) {
            rc = tm_err_set(err, "out of memory");
            break;
        }
        sn->ready = true;
        sn->allocatable.v[SCHED_RES_CPU] = (int64_t)llround(t->cores * 1000);
        sn->allocatable.v[SCHED_RES_MEMORY] = t->memory;
        sn->allocatable.v[SCHED_RES_EPHEMERAL] = (int64_t)1 << 40;
        sn->allocatable.v[SCHED_RES_PODS] = SIM_POD_SLOTS;
        int ok = 1;
        for (int f = 0; f < LAB_NFEATURES; f++) {
            if (nd->label[f] <= 0)
                continue;
            snprintf(v, sizeof v, "%d", nd->label[f]);
            ok &= sched_node_set_label(sn, keys[f], v) == 0;
        }
        snprintf(v, sizeof v, "%d", nd->group + 1);
        ok &= sched_node_set_label(sn, "tarema.io/group", v) == 0;
        ok &= sched_node_set_label(sn, "tarema.io/sim-node", nd->name) == 0;
        ok &= sched_node_set_label(sn, "node.kubernetes.io/instance-type", t->name) == 0;
        if (!ok) {
            sched_node_free(sn);
            rc = tm_err_set(err, "out of memory");
            break;
        }
        rc = sched_snapshot_put_node(snap, sn, err);
    }
    return rc;
}

sched_snapshot *sim_snapshot_new(const sim_cluster *c, bool shuffle, uint64_t seed, tm_err *err) {
    int n = c->nnodes;
    sched_snapshot *snap = sched_snapshot_new();
    int *perm = malloc((size_t)n * sizeof *perm);
    if (!snap || !perm) {
        free(perm);
        sched_snapshot_free(snap);
        tm_err_set(err, "out of memory for %d nodes", n);
        return NULL;
    }
    eng_node_order(perm, n, shuffle, seed);
    int rc = eng_put_nodes(snap, c, perm, shuffle, err);
    free(perm);
    if (rc < 0) {
        sched_snapshot_free(snap);
        return NULL;
    }
    return snap;
}

sched_pod *sim_pod_new(const sim_workflow *wf, const sim_process *p, long task_index,
                       double ready_s) {
    /* name and uid sort like the task index, so tasks ready at the same instant keep their
     * DAG order in every policy's queue (its last tie-breaks are name and uid) */
    char uid[32];
    snprintf(uid, sizeof uid, "t%010ld", task_index);
    sched_pod *pod = sched_pod_new("sim", uid, uid);
    if (!pod)
        return NULL;
    free(pod->workflow);
    free(pod->process);
    pod->workflow = strdup(wf->name);
    pod->process = strdup(p->name);
    /* the labels a Nextflow task pod carries (the scheduler's default task keys), so a policy
     * reading the placed pods' metadata finds their tasks as it does live */
    pod->pod_labels =
        json_pack("{s:s, s:s}", "nextflow.io/processName", p->name, "tarema.io/workflow", wf->name);
    if (!pod->workflow || !pod->process || !pod->pod_labels) {
        sched_pod_free(pod);
        return NULL;
    }
    pod->priority = wf->priority;
    pod->requests.v[SCHED_RES_CPU] = (int64_t)llround(p->req_cpu * 1000);
    pod->requests.v[SCHED_RES_MEMORY] = p->req_mem;
    pod->requests.v[SCHED_RES_PODS] = 1;
    pod->created_ms = (int64_t)llround(ready_s * 1000);
    return pod;
}

int eng_build_snapshot(sim *s) {
    s->snap = sim_snapshot_new(s->c, s->o->shuffle, s->o->seed, s->err);
    if (!s->snap)
        return -1;
    int n = s->c->nnodes;
    s->snap2sim = malloc((size_t)n * sizeof *s->snap2sim);
    if (!s->snap2sim)
        return tm_err_set(s->err, "out of memory for %d nodes", n);
    return eng_map_nodes(s);
}

/* snap2sim from the snapshot's tarema.io/sim-node labels. */
int eng_map_nodes(sim *s) {
    int n = s->c->nnodes;
    for (int idx = 0; idx < n; idx++) {
        const sched_node *sn = sched_snapshot_node(s->snap, (size_t)idx);
        const char *simname = sn ? sched_node_label(sn, "tarema.io/sim-node") : NULL;
        int i = -1;
        /* node names are "<type>-<k>": find k's node through the type's first index */
        if (simname) {
            const char *dash = strrchr(simname, '-');
            int t = -1, first = 0;
            if (dash) {
                char tn[SIM_NAME_MAX];
                snprintf(tn, sizeof tn, "%.*s", (int)(dash - simname), simname);
                t = sim_cluster_find_type(s->c, tn);
            }
            for (int k = 0; k < t; k++)
                first += s->c->types[k].count;
            if (t >= 0)
                i = first + atoi(dash + 1);
        }
        if (i < 0 || i >= n || strcmp(s->c->nodes[i].name, simname) != 0)
            return tm_err_set(s->err, "snapshot node %d has no simulated node", idx);
        s->snap2sim[idx] = i;
    }
    return 0;
}

int sim_label_classes(const sim_cluster *c, lab_classes out[LAB_NFEATURES], tm_err *err) {
    lab_groups g;
    memset(&g, 0, sizeof g);
    if (c->ngroups < 1 || c->ngroups > LAB_MAX_CLASSES)
        return tm_err_set(err, "%d node groups; the labeler handles 1 to %d", c->ngroups,
                          LAB_MAX_CLASSES);
    g.n = c->ngroups;
    for (int i = 0; i < c->nnodes; i++) {
        const sim_node *nd = &c->nodes[i];
        lab_group *lg = &g.g[nd->group];
        snprintf(lg->id, sizeof lg->id, "%d", nd->group + 1);
        lg->cores += c->types[nd->type].cores;
        for (int f = 0; f < LAB_NFEATURES; f++)
            lg->label[f] = nd->label[f];
    }
    return lab_groups_all_classes(&g, out, err);
}

static int shape_of(sim *s, double cpu, int64_t mem) {
    int64_t milli = (int64_t)llround(cpu * 1000);
    for (int i = 0; i < s->nshapes; i++)
        if (s->shapes[i].cpu_milli == milli && s->shapes[i].mem == mem)
            return i;
    s->shapes[s->nshapes] = (shape){milli, mem, 0, -1};
    return s->nshapes++;
}

/* Workflow i's history. Every value its tasks can report is known now (usage depends on
 * process, instance and node type only), which lets the history keep exact labels cheaply. */
static int new_history(sim *s, int i) {
    const sim_workflow *wf = &s->w->wfs[i];
    history *h = &s->hist[i];
    size_t nu = (size_t)wf->tasks_per_run * (size_t)s->c->ntypes, k = 0;
    double *u[LAB_NFEATURES];
    size_t nuf[LAB_NFEATURES];
    h->proc_pending = calloc((size_t)wf->nprocs, sizeof *h->proc_pending);
    h->published = malloc((size_t)wf->nprocs * sizeof *h->published);
    h->grp_sum = calloc((size_t)wf->nprocs * (size_t)s->c->ngroups, sizeof *h->grp_sum);
    h->grp_n = calloc((size_t)wf->nprocs * (size_t)s->c->ngroups, sizeof *h->grp_n);
    h->cpu_sum = calloc((size_t)wf->nprocs, sizeof *h->cpu_sum);
    h->cpu_n = calloc((size_t)wf->nprocs, sizeof *h->cpu_n);
    for (int f = 0; f < LAB_NFEATURES; f++) {
        u[f] = malloc((nu + 1) * sizeof *u[f]);
        nuf[f] = nu;
    }
    int rc = -1;
    if (!h->proc_pending || !h->published || !h->grp_sum || !h->grp_n || !h->cpu_sum || !h->cpu_n ||
        !u[0] || !u[1] || !u[2]) {
        tm_err_set(s->err, "out of memory for the history of workflow %s", wf->name);
        goto out;
    }
    for (int p = 0; p < wf->nprocs; p++) {
        memset(&h->published[p], 0, sizeof h->published[p]);
        h->published[p].expected_runtime_ms = -1;
        for (int inst = 0; inst < wf->procs[p].instances; inst++)
            for (int t = 0; t < s->c->ntypes; t++, k++) {
                sim_meas m = sim_usage(s->c, wf, &wf->procs[p], inst, t);
                u[LAB_CPU][k] = m.cpu_pct;
                u[LAB_MEM][k] = m.peak_rss;
                u[LAB_IO][k] = m.io_bytes;
            }
    }
    h->h = sim_history_new(wf->nprocs, s->classes, (const double *const *)u, nuf, s->err);
    rc = h->h ? 0 : -1;
out:
    for (int f = 0; f < LAB_NFEATURES; f++)
        free(u[f]);
    return rc;
}

/* The measured runs' arrivals, relative to now (t_bench): explicit ones all known now;
 * start/runs/gap chain run by run. */
int eng_measured_arrivals(sim *s) {
    s->t_bench = s->now;
    for (int i = 0; i < s->w->nworkflows; i++) {
        const sim_workflow *wf = &s->w->wfs[i];
        int r0 = s->first_run[i] + s->hruns;
        if (wf->narrivals) {
            for (int k = 0; k < wf->narrivals; k++)
                if (eng_ev_push(s, s->now + wf->arrivals[k], EV_ARRIVE, r0 + k, 0) < 0)
                    return -1;
        } else if (eng_ev_push(s, s->now + wf->start, EV_ARRIVE, r0, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

int eng_build_workflows(sim *s) {
    const sim_workload *w = s->w;
    int nprocs_total = 0;
    s->nruns = 0;
    s->ntasks = 0;
    s->hruns = s->o->history_runs > 0 ? s->o->history_runs : 0;
    s->hruns_left = s->hruns ? w->nworkflows : 0;
    for (int i = 0; i < w->nworkflows; i++) {
        nprocs_total += w->wfs[i].nprocs;
        s->nruns += s->hruns + w->wfs[i].runs;
        s->ntasks += (long)(s->hruns + w->wfs[i].runs) * w->wfs[i].tasks_per_run;
    }
    s->shapes = calloc((size_t)nprocs_total + 1, sizeof *s->shapes);
    s->wi = calloc((size_t)w->nworkflows, sizeof *s->wi);
    s->hist = calloc((size_t)w->nworkflows, sizeof *s->hist);
    s->first_run = calloc((size_t)w->nworkflows, sizeof *s->first_run);
    s->runs = calloc((size_t)s->nruns, sizeof *s->runs);
    s->tasks = calloc((size_t)s->ntasks + 1, sizeof *s->tasks);
    s->pend = malloc(((size_t)s->ntasks + 1) * sizeof *s->pend);
    s->deferred = malloc(((size_t)s->ntasks + 1) * sizeof *s->deferred);
    if (!s->shapes || !s->wi || !s->hist || !s->first_run || !s->runs || !s->tasks || !s->pend ||
        !s->deferred)
        return tm_err_set(s->err, "out of memory for %ld tasks", s->ntasks);
    long base = 0;
    int r = 0;
    for (int i = 0; i < w->nworkflows; i++) {
        const sim_workflow *wf = &w->wfs[i];
        wfinfo *wi = &s->wi[i];
        int np = wf->nprocs;
        wi->proc_off = calloc((size_t)np, sizeof *wi->proc_off);
        wi->succ_all = calloc((size_t)np, sizeof *wi->succ_all);
        wi->succ_each = calloc((size_t)np, sizeof *wi->succ_each);
        wi->nsucc_all = calloc((size_t)np, sizeof *wi->nsucc_all);
        wi->nsucc_each = calloc((size_t)np, sizeof *wi->nsucc_each);
        wi->proc_shape = calloc((size_t)np, sizeof *wi->proc_shape);
        if (!wi->proc_off || !wi->succ_all || !wi->succ_each || !wi->nsucc_all || !wi->nsucc_each ||
            !wi->proc_shape)
            return tm_err_set(s->err, "out of memory");
        if (new_history(s, i) < 0)
            return -1;
        long off = 0;
        for (int p = 0; p < np; p++) {
            wi->proc_off[p] = off;
            off += wf->procs[p].instances;
            wi->proc_shape[p] = shape_of(s, wf->procs[p].req_cpu, wf->procs[p].req_mem);
        }
        /* successors: each process's dependents, for O(1) work per completion; sized by
         * counting, since one process may name the same predecessor in after and after_each */
        for (int v = 0; v < np; v++) {
            for (int k = 0; k < wf->procs[v].nall; k++)
                wi->nsucc_all[wf->procs[v].after_all[k]]++;
            for (int k = 0; k < wf->procs[v].neach; k++)
                wi->nsucc_each[wf->procs[v].after_each[k]]++;
        }
        for (int p = 0; p < np; p++) {
            wi->succ_all[p] = malloc(((size_t)wi->nsucc_all[p] + 1) * sizeof(int));
            wi->succ_each[p] = malloc(((size_t)wi->nsucc_each[p] + 1) * sizeof(int));
            if (!wi->succ_all[p] || !wi->succ_each[p])
                return tm_err_set(s->err, "out of memory");
            wi->nsucc_all[p] = wi->nsucc_each[p] = 0;
        }
        for (int v = 0; v < np; v++) {
            const sim_process *pv = &wf->procs[v];
            for (int k = 0; k < pv->nall; k++) {
                int u = pv->after_all[k];
                wi->succ_all[u][wi->nsucc_all[u]++] = v;
            }
            for (int k = 0; k < pv->neach; k++) {
                int u = pv->after_each[k];
                wi->succ_each[u][wi->nsucc_each[u]++] = v;
            }
        }
        s->first_run[i] = r;
        for (int k = 0; k < s->hruns + wf->runs; k++, r++) {
            run *ru = &s->runs[r];
            ru->wf = i;
            ru->idx = k;
            ru->base = base;
            ru->left = wf->tasks_per_run;
            ru->arrival = NAN;
            ru->end = NAN;
            ru->proc_left = malloc((size_t)np * sizeof *ru->proc_left);
            if (!ru->proc_left)
                return tm_err_set(s->err, "out of memory");
            for (int p = 0; p < np; p++) {
                ru->proc_left[p] = wf->procs[p].instances;
                for (int inst = 0; inst < wf->procs[p].instances; inst++) {
                    task *t = &s->tasks[base + wi->proc_off[p] + inst];
                    t->wf = i;
                    t->run = r;
                    t->proc = p;
                    t->inst = inst;
                    t->deps_left = wf->procs[p].nall + wf->procs[p].neach;
                    t->node = -1;
                    t->shape = wi->proc_shape[p];
                    t->ready = t->start = t->end = NAN;
                }
            }
            base += wf->tasks_per_run;
        }
        /* history runs first, all at once; the measured runs arrive after the last of them */
        if (s->hruns && eng_ev_push(s, 0, EV_ARRIVE, s->first_run[i], 0) < 0)
            return -1;
    }
    if (!s->hruns && eng_measured_arrivals(s) < 0)
        return -1;
    s->running = calloc((size_t)s->c->nnodes, sizeof *s->running);
    s->nrunning = calloc((size_t)s->c->nnodes, sizeof *s->nrunning);
    s->caprunning = calloc((size_t)s->c->nnodes, sizeof *s->caprunning);
    if (!s->running || !s->nrunning || !s->caprunning)
        return tm_err_set(s->err, "out of memory");
    return 0;
}

/* The gangs and reservations of every run: gang: N makes instances/N gangs per run, a
 * reservation one per run (admitted when the run arrives). */
int eng_build_gangs_resvs(sim *s) {
    long ng = 0, nr = 0;
    for (long i = 0; i < s->ntasks; i++)
        s->tasks[i].gang = s->tasks[i].resv = -1;
    for (int r = 0; r < s->nruns; r++) {
        const sim_workflow *wf = &s->w->wfs[s->runs[r].wf];
        for (int p = 0; p < wf->nprocs; p++) {
            if (wf->procs[p].gang > 0)
                ng += wf->procs[p].instances / wf->procs[p].gang;
            nr += wf->procs[p].resv_duration > 0;
        }
    }
    if (ng == 0 && nr == 0)
        return 0;
    s->gangs = calloc((size_t)ng + 1, sizeof *s->gangs);
    s->resvs = calloc((size_t)nr + 1, sizeof *s->resvs);
    if (!s->gangs || !s->resvs)
        return tm_err_set(s->err, "out of memory for %ld gangs and %ld reservations", ng, nr);
    if (ng && !(s->gangreg = sched_gang_registry_new()))
        return tm_err_set(s->err, "out of memory");
    if (nr && !(s->rv = sim_resv_new(s->fw, s->o->policy, s->err)))
        return -1;
    for (int r = 0; r < s->nruns; r++) {
        const run *ru = &s->runs[r];
        const sim_workflow *wf = &s->w->wfs[ru->wf];
        for (int p = 0; p < wf->nprocs; p++) {
            const sim_process *pr = &wf->procs[p];
            long first = ru->base + s->wi[ru->wf].proc_off[p];
            if (pr->gang > 0)
                for (int k = 0; k < pr->instances / pr->gang; k++) {
                    gang_st *g = &s->gangs[s->ngangs];
                    g->size = pr->gang;
                    g->first = first + (long)k * pr->gang;
                    g->index = k;
                    g->complete = g->start = NAN;
                    for (int i = 0; i < pr->gang; i++)
                        s->tasks[g->first + i].gang = s->ngangs;
                    s->ngangs++;
                }
            if (pr->resv_duration > 0) {
                resv_st *rs = &s->resvs[s->nresvs];
                snprintf(rs->name, sizeof rs->name, "r%d-%d-%d", ru->wf, ru->idx + 1, p);
                rs->wf = ru->wf;
                rs->run = r;
                rs->proc = p;
                rs->phase = RESV_PENDING;
                rs->start = rs->end = rs->released = NAN;
                for (int i = 0; i < pr->instances; i++)
                    s->tasks[first + i].resv = s->nresvs;
                s->nresvs++;
            }
        }
    }
    return 0;
}
