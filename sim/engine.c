/* engine.c: the discrete-event loop (see engine.h). Placement goes only through the
 * scheduler's framework and policies; this file owns the clock, the DAG bookkeeping, the
 * runtime/contention arithmetic and the monitoring history. Everything is arrays and binary
 * heaps so 100,000 tasks on 5,000 nodes stay in seconds. */
#include "sim/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "labeler/groups.h"
#include "labeler/labels.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plan.h"
#include "scheduler/backend/snapshot.h"
#include "sim/bound.h"
#include "sim/history.h"
#include "sim/resv_sim.h"

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

typedef struct task {
    int wf, run, proc, inst;
    int deps_left;
    int node; /* sim node index, -1 before it starts */
    int slot; /* position in the node's running list */
    int shape;
    uint32_t version;
    double ready, start, end;
    double remaining, rate, last; /* work in uncontended seconds, progress per second */
    double cpu_demand, mem_demand;
    sim_demand dem, w; /* calibrated model: demands and weights (sim_contention_slowdown) */
    sim_meas usage;    /* what monitoring reports when it completes */
    sched_pod *pod;    /* while pending or running */
    int gang;          /* index in sim.gangs, -1 none */
    int resv;          /* index in sim.resvs (its step's reservation in its run), -1 none */
    bool held;         /* ready, waiting for its reservation's window to open */
    bool rep;          /* in the queue for its whole gang */
} task;

/* A gang (gang: N) of one run: members are tasks first..first+size-1. */
typedef struct gang_st {
    int size, ready; /* members queued (ready and not held) */
    long first;
    int index;
    double complete, start; /* when the last member was queued; when the gang started */
    int attempts;
    sched_gang *g; /* the registry's gang (declared when its first member is queued) */
} gang_st;

/* A step's reservation in one run. */
typedef struct resv_st {
    char name[64];
    int wf, run, proc;
    resv_phase phase;
    bool owner_started;
    double start, end, released; /* seconds */
    char reason[768];
    int nholds;
    int *hnode;   /* sim node */
    char **hname; /* snapshot node name at admission */
    int *hpods;
    sched_resources *hres, *hused; /* held; used by the step's tasks now */
    double used_core_s;
} resv_st;

typedef struct run {
    int wf, idx; /* workflow, run number within it: history runs first (idx < sim.hruns) */
    double arrival, end;
    long base; /* first task index */
    long left;
    int *proc_left; /* unfinished instances per process */
} run;

typedef enum { EV_ARRIVE = 0, EV_FINISH = 1, EV_RESV_OPEN = 2, EV_RESV_CLOSE = 3 } ev_kind;

typedef struct event {
    double t;
    uint64_t seq; /* FIFO among equal times, so runs are deterministic */
    long id;
    uint32_t version;
    int kind;
} event;

typedef struct shape {
    int64_t cpu_milli, mem;
    long pending;
    long blocked_pass; /* pass number in which it failed to fit anywhere */
} shape;

/* A workflow's monitoring history and what the snapshot's task table last got from it. */
typedef struct history {
    sim_history *h;
    size_t n_at_refresh;
    long pending;       /* the workflow's tasks waiting for a node: only they read its labels */
    long *proc_pending; /* the same per process */
    sched_task_profile *published; /* per process; labels all 0 and runtime -1 before */
    double *grp_sum;               /* per process x node group: summed runtime (ms) */
    long *grp_n;                   /* per process x node group: runs */
    double *cpu_sum;               /* per process: summed measured cpu use (cores) */
    long *cpu_n;                   /* per process: runs with a measured cpu use */
    bool structure_known;          /* a run completed: what runs after what was seen */
} history;

typedef struct wfinfo {
    long *proc_off; /* task offset of each process within a run */
    int **succ_all, **succ_each;
    int *nsucc_all, *nsucc_each;
    int *proc_shape;
} wfinfo;

typedef struct sim {
    const sim_cluster *c;
    const sim_workload *w;
    const sim_opts *o;
    sched_snapshot *snap;
    sched_framework *fw;
    int *snap2sim;
    task *tasks;
    long ntasks;
    run *runs;
    int nruns;
    int *first_run; /* per workflow, index in runs */
    int hruns;      /* history runs per workflow (sim_opts.history_runs) */
    int hruns_left; /* workflows whose last history run has not yet ended */
    double t_bench; /* when the measured runs began: every history run had ended */
    wfinfo *wi;
    event *ev;
    size_t nev, capev;
    uint64_t seq;
    long *pend; /* pending heap of task indices */
    size_t npend;
    long *deferred;
    size_t ndeferred;
    shape *shapes;
    int nshapes;
    long pass;
    int **running; /* per node: task indices */
    int *nrunning;
    size_t *caprunning;
    history *hist;
    lab_classes classes[LAB_NFEATURES];
    int queue_dirty;
    double now;
    double *io_cap;    /* per node type, bytes/s (sim_io_capacity) */
    uint64_t shuffles; /* node shuffles so far (the first is the snapshot's own) */
    int64_t *tail;     /* scratch of upward_tails: tails, then ranks */
    size_t ntail;
    long attempts;
    tm_err *err;
    char namebuf[2 * SIM_NAME_MAX + 48];
    gang_st *gangs;
    int ngangs;
    long gang_queued; /* gang representatives in the queue */
    sched_gang_registry *gangreg;
    resv_st *resvs;
    int nresvs;
    sim_resv *rv;
} sim;

/* ---- event heap ---- */

static int ev_less(const event *a, const event *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int ev_push(sim *s, double t, int kind, long id, uint32_t version) {
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

/* ---- setup ---- */

/* The node list order for seed: identity without shuffle, else a seeded permutation. */
static void node_order(int *perm, int n, bool shuffle, uint64_t seed) {
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
static int put_nodes(sched_snapshot *snap, const sim_cluster *c, const int *perm, bool shuffle,
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
    node_order(perm, n, shuffle, seed);
    int rc = put_nodes(snap, c, perm, shuffle, err);
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
    pod->requests.v[SCHED_RES_CPU] = (int64_t)llround(p->req_cpu * 1000);
    pod->requests.v[SCHED_RES_MEMORY] = p->req_mem;
    pod->requests.v[SCHED_RES_PODS] = 1;
    pod->created_ms = (int64_t)llround(ready_s * 1000);
    return pod;
}

static int map_nodes(sim *s);

static int build_snapshot(sim *s) {
    s->snap = sim_snapshot_new(s->c, s->o->shuffle, s->o->seed, s->err);
    if (!s->snap)
        return -1;
    int n = s->c->nnodes;
    s->snap2sim = malloc((size_t)n * sizeof *s->snap2sim);
    if (!s->snap2sim)
        return tm_err_set(s->err, "out of memory for %d nodes", n);
    return map_nodes(s);
}

/* snap2sim from the snapshot's tarema.io/sim-node labels. */
static int map_nodes(sim *s) {
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
static int measured_arrivals(sim *s) {
    s->t_bench = s->now;
    for (int i = 0; i < s->w->nworkflows; i++) {
        const sim_workflow *wf = &s->w->wfs[i];
        int r0 = s->first_run[i] + s->hruns;
        if (wf->narrivals) {
            for (int k = 0; k < wf->narrivals; k++)
                if (ev_push(s, s->now + wf->arrivals[k], EV_ARRIVE, r0 + k, 0) < 0)
                    return -1;
        } else if (ev_push(s, s->now + wf->start, EV_ARRIVE, r0, 0) < 0) {
            return -1;
        }
    }
    return 0;
}

static int build_workflows(sim *s) {
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
        if (s->hruns && ev_push(s, 0, EV_ARRIVE, s->first_run[i], 0) < 0)
            return -1;
    }
    if (!s->hruns && measured_arrivals(s) < 0)
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
static int build_gangs_resvs(sim *s) {
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

/* ---- task lifecycle ---- */

/* "workflow/process#instance (run r)" for messages; a static buffer per call site is not
 * allowed (no global state), so it lives in the sim. */
static const char *task_name(sim *s, const task *t) {
    const sim_workflow *wf = &s->w->wfs[t->wf];
    snprintf(s->namebuf, sizeof s->namebuf, "%s/%s#%d (run %d)", wf->name, wf->procs[t->proc].name,
             t->inst, s->runs[t->run].idx + 1);
    return s->namebuf;
}

/* A ready task enters the queue; a gang's member waits until the whole gang is ready, which
 * then enters the queue as one entry (its last member's task). */
static int enqueue(sim *s, long ti) {
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
    return enqueue(s, ti);
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
        node_order(perm, n, true, s->o->seed ^ (s->shuffles * 0xa0761d6478bd642fULL));
        rc = put_nodes(s->snap, s->c, perm, true, s->err);
    }
    if (rc == 0) {
        sched_snapshot_refresh(s->snap);
        rc = map_nodes(s);
    }
    /* perm now maps snapshot index -> sim node as well; invert for the running pods */
    for (int i = 0; rc == 0 && i < n; i++)
        perm[s->snap2sim[i]] = i;
    for (int nd = 0; rc == 0 && nd < n; nd++)
        for (int k = 0; rc == 0 && k < s->nrunning[nd]; k++) {
            const task *t = &s->tasks[s->running[nd][k]];
            const sched_node *sn = sched_snapshot_node(s->snap, (size_t)perm[nd]);
            rc = sched_snapshot_add_pod(s->snap, t->pod->uid, sn->name, &t->pod->requests, s->err);
        }
    free(perm);
    free(old);
    return rc;
}

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
static int resv_admit(sim *s, int ri) {
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
        if (rc == 0 && (ev_push(s, rs->start, EV_RESV_OPEN, ri, 0) < 0 ||
                        ev_push(s, rs->end, EV_RESV_CLOSE, ri, 0) < 0))
            rc = -1;
    }
    free(by_sim);
    resv_admission_clear(&a);
    return rc;
}

static bool resv_holding(const sim *s) {
    return s->rv && resv_plan_count(sim_resv_plan(s->rv)) > 0;
}

/* resv_decide on what the simulation knows of reservation ri now; releases its holds when it
 * says so. */
static int resv_step(sim *s, int ri) {
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
            if (enqueue(s, i) < 0)
                return -1;
        }
    return 0;
}

/* A task of the step started (add) or ended (remove) on node n: what its reservation's holds
 * are used for now, and the core-seconds used inside the window. */
static void resv_use(sim *s, const task *t, int n, bool add) {
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

static int arrive(sim *s, int r) {
    run *ru = &s->runs[r];
    /* held capacity is named by node: no reshuffle while a reservation holds any */
    if (s->o->shuffle && s->o->reshuffle_runs && r != 0 &&
        s->c->nnodes <= SIM_RESHUFFLE_MAX_NODES && !resv_holding(s) && reshuffle(s) < 0)
        return -1;
    ru->arrival = s->now;
    const sim_workflow *wf = &s->w->wfs[ru->wf];
    for (int p = 0; p < wf->nprocs; p++) {
        int ri = s->tasks[ru->base + s->wi[ru->wf].proc_off[p]].resv;
        if (ri >= 0 && resv_admit(s, ri) < 0)
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
        if (ev_push(s, s->now + t->remaining / rate, EV_FINISH, ti, ++t->version) < 0)
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
        return ev_push(s, s->now + t->remaining, EV_FINISH, only, ++t->version);
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
        if (ev_push(s, s->now + t->remaining / rate, EV_FINISH, ti, ++t->version) < 0)
            return -1;
    }
    return 0;
}

/* Task ti's run-to-run noise factor under the calibrated model (1 under the ideal one). The key
 * names the task (workflow name, index), not the node, so every policy sees the same draw for
 * the same task, and the lower bound (collect) can use it too. */
static double noise_of(const sim *s, long ti) {
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
        t->remaining = base * noise_of(s, ti);
    } else {
        t->remaining = sim_runtime(s->c, wf, p, t->inst, type);
    }
    t->rate = 1;
    t->last = s->now;
    if (sim_grow(&s->running[n], (size_t)s->nrunning[n], &s->caprunning[n], sizeof(int), 8) < 0)
        return tm_err_set(s->err, "out of memory");
    t->slot = s->nrunning[n];
    s->running[n][s->nrunning[n]++] = (int)ti;
    resv_use(s, t, n, true);
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
    resv_use(s, t, n, false);
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
    if (t->resv >= 0 && resv_phase_holds(s->resvs[t->resv].phase) && resv_step(s, t->resv) < 0)
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
        if (chain && ev_push(s, s->now + wf->gap, EV_ARRIVE, t->run + 1, 0) < 0)
            return -1;
        if (ru->idx + 1 == s->hruns && --s->hruns_left == 0 && measured_arrivals(s) < 0)
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

/* The gang whose whole membership is ready, through the scheduler's gang decision
 * (sched_gang_try_place: all of its tasks placed on the snapshot, or none). 1 when it started,
 * 0 when it waits whole, -1 with err. */
static int try_gang(sim *s, long ti, int64_t now_ms) {
    gang_st *g = &s->gangs[s->tasks[ti].gang];
    sched_pod **pods = malloc((size_t)g->size * sizeof *pods);
    int *nodes = malloc((size_t)g->size * sizeof *nodes);
    if (!pods || !nodes) {
        free(pods);
        free(nodes);
        return tm_err_set(s->err, "out of memory");
    }
    for (int i = 0; i < g->size; i++)
        pods[i] = s->tasks[g->first + i].pod;
    sched_gang_placement pl = {.nodes = nodes};
    char why[1024];
    g->attempts++;
    s->attempts++;
    sched_gang_try r = sched_gang_try_place(s->fw, s->snap, g->g, pods, (size_t)g->size, now_ms,
                                            true, &pl, why, sizeof why);
    int rc = 0;
    if (r == SCHED_GANG_TRY_ERROR)
        rc = tm_err_set(s->err, "gang of task %s: %s", task_name(s, &s->tasks[ti]), why);
    for (int i = 0; rc == 0 && r == SCHED_GANG_TRY_SCHEDULED && i < g->size; i++)
        if (nodes[i] < 0) /* need == size: every member is placed when the gang is */
            rc = tm_err_set(s->err, "gang of task %s placed only in part",
                            task_name(s, &s->tasks[ti]));
    if (rc == 0 && r == SCHED_GANG_TRY_SCHEDULED) {
        g->start = s->now;
        s->tasks[ti].rep = false;
        s->gang_queued--;
        for (int i = 0; rc == 0 && i < g->size; i++) {
            long mi = g->first + i;
            task *m = &s->tasks[mi];
            s->hist[m->wf].pending--;
            s->hist[m->wf].proc_pending[m->proc]--;
            sched_gang_registry_set_state(s->gangreg, m->pod->uid, SCHED_GANG_POD_RUNNING);
            rc = start_task(s, mi, s->snap2sim[nodes[i]]);
        }
        rc = rc < 0 ? -1 : 1;
    }
    free(pods);
    free(nodes);
    return rc;
}

static int schedule_pass(sim *s) {
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
    bool resv_on = resv_holding(s);
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

/* ---- results ---- */

/* Run r's number among its workflow's measured runs (0 = the first); negative for a history
 * run, which no result counts. */
static int measured_run(const sim *s, int r) {
    return s->runs[r].idx - s->hruns;
}

/* The gangs' waits and the reservations' windows, holds and use. */
static int collect_gangs_resvs(const sim *s, sim_result *r) {
    long nh = 0;
    for (int i = 0; i < s->nresvs; i++)
        nh += s->resvs[i].nholds;
    r->gangs = calloc((size_t)s->ngangs + 1, sizeof *r->gangs);
    r->resvs = calloc((size_t)s->nresvs + 1, sizeof *r->resvs);
    r->holds = calloc((size_t)nh + 1, sizeof *r->holds);
    if (!r->gangs || !r->resvs || !r->holds)
        return -1;
    double tb = s->t_bench;
    for (int i = 0; i < s->ngangs; i++) {
        const gang_st *g = &s->gangs[i];
        const task *t = &s->tasks[g->first];
        int ri = measured_run(s, t->run);
        if (ri >= 0)
            r->gangs[r->ngangs++] =
                (sim_gang_rec){t->wf,   ri,          t->proc,          g->index,
                               g->size, g->attempts, g->complete - tb, g->start - tb};
    }
    for (int i = 0; i < s->nresvs; i++) {
        const resv_st *rs = &s->resvs[i];
        int ri = measured_run(s, rs->run);
        if (ri < 0)
            continue;
        sim_resv_rec *x = &r->resvs[r->nresvs++];
        x->wf = rs->wf;
        x->run = ri;
        x->proc = rs->proc;
        x->count = s->w->wfs[rs->wf].procs[rs->proc].instances;
        snprintf(x->phase, sizeof x->phase, "%s", resv_phase_name(rs->phase));
        snprintf(x->reason, sizeof x->reason, "%s", rs->reason);
        x->start = rs->start - tb;
        x->end = rs->end - tb;
        x->released = rs->released - tb;
        x->used_core_s = rs->used_core_s;
        x->first_hold = r->nholds;
        x->nholds = rs->nholds;
        double span = isnan(rs->released) ? 0 : fmax(0, rs->released - rs->start);
        for (int h = 0; h < rs->nholds; h++) {
            double cores = (double)rs->hres[h].v[SCHED_RES_CPU] / 1000.0;
            r->holds[r->nholds++] = (sim_resv_hold){rs->hnode[h], rs->hpods[h], cores};
            x->held_core_s += cores * span;
        }
    }
    return 0;
}

/* The makespan no policy could beat for run ru on a cluster of cores and memory, and the work
 * behind it (bound.h): each task at its fastest node type's runtime times its own noise draw.
 * 0, or -1 when out of memory. */
static int run_bound(const sim *s, const run *ru, double cores, double memory, sim_bound_run *out) {
    const sim_workflow *wf = &s->w->wfs[ru->wf];
    size_t n = (size_t)wf->tasks_per_run + 1;
    double *fast = malloc(n * sizeof *fast), *work = malloc(n * sizeof *work),
           *fin = malloc(n * sizeof *fin);
    int rc = -1;
    if (fast && work && fin) {
        for (long k = 0; k < wf->tasks_per_run; k++) {
            const task *t = &s->tasks[ru->base + k];
            double noise = noise_of(s, ru->base + k);
            sim_bound_task(s->c, wf, &wf->procs[t->proc], t->inst, s->o->calibrated,
                           s->o->contention, &fast[k], &work[k]);
            fast[k] *= noise;
            work[k] *= noise;
        }
        *out = sim_bound_run_of(wf, s->wi[ru->wf].proc_off, cores, memory, fast, work, fin);
        rc = 0;
    }
    free(fast);
    free(work);
    free(fin);
    return rc;
}

/* The least geometric mean of the workflows' mean makespans any policy could reach
 * (sim_bound_joint_geomean: the runs' own bounds and the order in which workflows sharing the
 * cluster can finish); work[i] holds workflow i's measured runs' summed work. Where runs do not
 * chain (explicit arrivals) or there are too many workflows, the geometric mean of the runs'
 * own bounds. */
static double bound_geomean(const sim *s, const sim_result *r, const sim_bound_run *work,
                            double cores, double memory) {
    int n = s->w->nworkflows;
    double logsum = 0, first = INFINITY;
    bool chained = n <= SIM_BOUND_JOINT_MAX;
    for (int i = 0; i < n; i++) {
        if (!(r->wf[i].makespan_bound_mean > 0))
            return NAN;
        logsum += log(r->wf[i].makespan_bound_mean);
        chained = chained && !s->w->wfs[i].narrivals && r->wf[i].runs > 0;
        first = fmin(first, s->w->wfs[i].start);
    }
    double own = n ? exp(logsum / n) : NAN;
    if (!chained)
        return own;
    sim_bound_wf wb[SIM_BOUND_JOINT_MAX];
    for (int i = 0; i < n; i++) {
        const sim_workflow *wf = &s->w->wfs[i];
        wb[i] = (sim_bound_wf){r->wf[i].makespan_bound_mean,
                               work[i].core_s,
                               work[i].mem_s,
                               work[i].cpu_work,
                               wf->start - first + (r->wf[i].runs - 1) * wf->gap,
                               r->wf[i].runs};
    }
    double g = sim_bound_joint_geomean(wb, n, cores, memory);
    return isnan(g) ? own : fmax(g, own);
}

static sim_result *collect(sim *s) {
    sim_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    snprintf(r->policy, sizeof r->policy, "%s", s->o->policy);
    r->cluster = s->c;
    r->workload = s->w;
    r->sched_attempts = s->attempts;
    r->history_runs = s->hruns;
    r->ngroups = s->c->ngroups;
    r->wf = calloc((size_t)s->w->nworkflows, sizeof *r->wf);
    r->runs = calloc((size_t)s->nruns + 1, sizeof *r->runs);
    r->groups = calloc((size_t)s->c->ngroups + 1, sizeof *r->groups);
    if (s->o->record_tasks)
        r->task_recs = calloc((size_t)s->ntasks + 1, sizeof *r->task_recs);
    if (!r->wf || !r->runs || !r->groups || (s->o->record_tasks && !r->task_recs)) {
        sim_result_free(r);
        return NULL;
    }
    /* Only the measured runs count; times are from when they began (t_bench). The history
     * runs show only as their mean makespan. */
    double t0 = INFINITY, tb = s->t_bench;
    sim_bound_run *work = calloc((size_t)s->w->nworkflows + 1, sizeof *work);
    double cores, memory; /* what the bounds divide by, the same for every run */
    sim_bound_capacity(s->c, &cores, &memory);
    if (!work) {
        sim_result_free(r);
        return NULL;
    }
    for (int i = 0; i < s->nruns; i++) {
        const run *ru = &s->runs[i];
        sim_wf_stats *ws = &r->wf[ru->wf];
        double m = ru->end - ru->arrival;
        int idx = measured_run(s, i);
        if (idx < 0) {
            ws->makespan_history += m;
            continue;
        }
        sim_bound_run b;
        if (run_bound(s, ru, cores, memory, &b) < 0) {
            free(work);
            sim_result_free(r);
            return NULL;
        }
        r->runs[r->nruns++] = (sim_run_rec){ru->wf, idx, ru->arrival - tb, ru->end - tb, b.bound_s};
        ws->makespan_bound_mean += b.bound_s;
        work[ru->wf].core_s += b.core_s;
        work[ru->wf].mem_s += b.mem_s;
        work[ru->wf].cpu_work += b.cpu_work;
        if (ru->arrival - tb < t0)
            t0 = ru->arrival - tb;
        ws->runs++;
        ws->makespan_mean += m;
        if (idx == 0)
            ws->makespan_first = m;
        else
            ws->makespan_rest_mean += m;
    }
    for (int i = 0; i < s->w->nworkflows; i++) {
        sim_wf_stats *ws = &r->wf[i];
        ws->makespan_rest_mean = ws->runs > 1 ? ws->makespan_rest_mean / (ws->runs - 1) : NAN;
        ws->makespan_mean /= ws->runs ? ws->runs : 1;
        ws->makespan_bound_mean = ws->runs ? ws->makespan_bound_mean / ws->runs : NAN;
        ws->makespan_history = s->hruns ? ws->makespan_history / s->hruns : NAN;
    }
    r->bound_geomean = bound_geomean(s, r, work, cores, memory);
    free(work);
    for (int i = 0; i < s->c->nnodes; i++) {
        sim_group_stats *g = &r->groups[s->c->nodes[i].group];
        g->nodes++;
        g->cores += s->c->types[s->c->nodes[i].type].cores;
    }
    double sum_rt = 0, sum_pend = 0;
    for (long i = 0; i < s->ntasks; i++) {
        const task *t = &s->tasks[i];
        int mr = measured_run(s, t->run);
        if (mr < 0)
            continue;
        double rt = t->end - t->start;
        sum_rt += rt;
        sum_pend += t->start - t->ready;
        if (t->end - tb > r->horizon)
            r->horizon = t->end - tb;
        sim_wf_stats *ws = &r->wf[t->wf];
        ws->tasks++;
        ws->task_runtime_mean += rt;
        ws->pending_mean += t->start - t->ready;
        sim_group_stats *g = &r->groups[s->c->nodes[t->node].group];
        g->tasks++;
        g->busy_core_s += rt * s->w->wfs[t->wf].procs[t->proc].req_cpu;
        if (r->task_recs)
            r->task_recs[r->tasks] = (sim_task_rec){
                t->wf, mr, t->proc, t->inst, t->node, t->ready - tb, t->start - tb, t->end - tb};
        r->tasks++;
    }
    for (int i = 0; i < s->w->nworkflows; i++) {
        sim_wf_stats *ws = &r->wf[i];
        if (ws->tasks) {
            ws->task_runtime_mean /= (double)ws->tasks;
            ws->pending_mean /= (double)ws->tasks;
        }
    }
    double span = r->horizon - (isfinite(t0) ? t0 : 0);
    for (int g = 0; g < r->ngroups; g++)
        r->groups[g].utilisation = span > 0 && r->groups[g].cores > 0
                                       ? r->groups[g].busy_core_s / (r->groups[g].cores * span)
                                       : 0;
    r->task_runtime_mean = r->tasks ? sum_rt / (double)r->tasks : 0;
    r->pending_mean = r->tasks ? sum_pend / (double)r->tasks : 0;
    if (collect_gangs_resvs(s, r) < 0) {
        sim_result_free(r);
        return NULL;
    }
    return r;
}

void sim_result_free(sim_result *r) {
    if (!r)
        return;
    free(r->wf);
    free(r->runs);
    free(r->groups);
    free(r->task_recs);
    free(r->gangs);
    free(r->resvs);
    free(r->holds);
    free(r);
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
    if (!s.fw)
        goto out;
    if (sim_label_classes(c, s.classes, err) < 0 || build_snapshot(&s) < 0 ||
        build_workflows(&s) < 0 || build_gangs_resvs(&s) < 0)
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
                if (resv_step(&s, (int)e.id) < 0)
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
    res = collect(&s);
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
