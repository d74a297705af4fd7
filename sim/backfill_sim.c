/* backfill_sim.c: the job-mix simulation of backfill_sim.h. */
#include "sim/backfill_sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/pod.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/policy/policy.h"
#include "sim/rng.h"

static const char *const mode_names[SIM_BF_MODES] = {"first-fit", "fifo", "easy", "conservative"};

const char *sim_bf_mode_name(sim_bf_mode m) {
    return (unsigned)m < SIM_BF_MODES ? mode_names[m] : "?";
}

sim_bf_mix sim_bf_mix_default(void) {
    return (sim_bf_mix){.nodes = 16,
                        .cores = 8,
                        .jobs = 2000,
                        .load = 0.9,
                        .wide_share = 0.1,
                        .overestimate = 3,
                        .seed = 1,
                        .policy = "fill-nodes"};
}

typedef struct job {
    int members, cores; /* cores per member */
    bool wide;
    int64_t arrival, runtime, estimate; /* ms */
    int64_t start, end;                 /* -1 until started */
    sched_pod **pods;
    int *node;
    sched_resources req;
} job;

/* The mix: narrow jobs of 1-2 cores, runtimes lognormal around 2 min; wide jobs a whole-node
 * pod (half of them) or a gang of 4 pods of half a node, runtimes around 10 min. Arrivals
 * Poisson at the rate that offers `load` of the cluster's cores. */
static int make_jobs(const sim_bf_mix *m, job *js, tm_err *err) {
    uint64_t rng = m->seed * 0x9e3779b97f4a7c15ULL + 17;
    double mean_cs = 0;
    for (int i = 0; i < m->jobs; i++) {
        job *j = &js[i];
        j->wide = sim_rng_unit(&rng) < m->wide_share;
        double mean_s;
        if (j->wide) {
            bool gang = sim_rng_unit(&rng) < 0.5;
            j->members = gang ? 4 : 1;
            j->cores = gang ? (m->cores + 1) / 2 : m->cores;
            mean_s = 600;
        } else {
            j->members = 1;
            j->cores = sim_rng_unit(&rng) < 0.7 ? 1 : 2;
            mean_s = 120;
        }
        double rt = mean_s * exp(sim_rng_normal(&rng, -0.32, 0.8)); /* lognormal, mean ~mean_s */
        if (rt < 5)
            rt = 5;
        double over = 1 + (m->overestimate - 1) * sim_rng_unit(&rng);
        j->runtime = (int64_t)(rt * 1000);
        j->estimate = (int64_t)(rt * over * 1000);
        j->start = j->end = -1;
        mean_cs += rt * j->members * j->cores;
    }
    mean_cs /= m->jobs;
    double rate = m->load * m->nodes * m->cores / mean_cs; /* jobs per second */
    double t = 0;
    for (int i = 0; i < m->jobs; i++) {
        js[i].arrival = (int64_t)(t * 1000);
        t += -log(sim_rng_unit(&rng)) / rate;
    }
    for (int i = 0; i < m->jobs; i++) {
        job *j = &js[i];
        j->pods = calloc((size_t)j->members, sizeof *j->pods);
        j->node = calloc((size_t)j->members, sizeof *j->node);
        if (!j->pods || !j->node)
            return tm_err_set(err, "backfill sim: out of memory");
        j->req.v[SCHED_RES_CPU] = (int64_t)j->cores * 1000;
        j->req.v[SCHED_RES_PODS] = 1;
        for (int k = 0; k < j->members; k++) {
            char name[32], uid[48];
            snprintf(name, sizeof name, "job-%d", i);
            snprintf(uid, sizeof uid, "job-%d-%d", i, k);
            sched_pod *p = sched_pod_new("sim", name, uid);
            if (!p)
                return tm_err_set(err, "backfill sim: out of memory");
            p->requests = j->req;
            p->created_ms = j->arrival;
            p->expected_duration_ms = j->estimate; /* what the user says, not what happens */
            j->pods[k] = p;
        }
    }
    return 0;
}

static void free_jobs(job *js, int n) {
    for (int i = 0; js && i < n; i++) {
        for (int k = 0; js[i].pods && k < js[i].members; k++)
            sched_pod_free(js[i].pods[k]);
        free(js[i].pods);
        free(js[i].node);
    }
    free(js);
}

static const char *job_key(void *ud, const sched_pod *p) {
    return p->name;
}

/* Places every member of j or none (a gang). true when placed. */
static bool place(sched_framework *fw, sched_snapshot *s, job *j, int64_t now, tm_err *err,
                  int *rc) {
    int k = 0;
    for (; k < j->members; k++) {
        sched_decision d;
        if (sched_framework_schedule(fw, s, j->pods[k], now, &d, err) != 0) {
            *rc = -1;
            break;
        }
        if (d.node < 0)
            break;
        if (sched_framework_reserve(fw, s, j->pods[k], d.node, err) != 0) {
            *rc = -1;
            break;
        }
        j->node[k] = d.node;
    }
    if (k == j->members)
        return true;
    while (k-- > 0)
        sched_framework_unreserve(fw, s, j->pods[k], j->node[k], now);
    return false;
}

typedef struct run_state {
    const sim_bf_mix *mix;
    sim_bf_mode mode;
    job *js;
    int *queue, nq;     /* pending job indices, arrival order */
    int *running, nrun; /* started, not ended */
    sched_snapshot *snap;
    sched_framework *fw;
    bf_config cfg;
    /* plan inputs, reused */
    sched_resources *alloc;
    bf_running *brun;
    bf_job *bjobs;
    sched_resources *mreq;
    long backfilled;
} run_state;

static int plan(run_state *r, int64_t now, tm_err *err) {
    size_t nn = sched_snapshot_node_count(r->snap), nr = 0, nm = 0;
    for (size_t i = 0; i < nn; i++)
        r->alloc[i] = sched_snapshot_node(r->snap, i)->allocatable;
    for (int i = 0; i < r->nrun; i++) {
        const job *j = &r->js[r->running[i]];
        for (int k = 0; k < j->members; k++)
            r->brun[nr++] = (bf_running){.node = j->node[k],
                                         .req = j->req,
                                         .start_ms = j->start,
                                         .end_ms = j->start + j->estimate};
    }
    for (int q = 0; q < r->nq; q++) {
        const job *j = &r->js[r->queue[q]];
        for (int k = 0; k < j->members; k++)
            r->mreq[nm + (size_t)k] = j->req;
        r->bjobs[q] = (bf_job){.key = j->pods[0]->name,
                               .n_members = (size_t)j->members,
                               .member_req = &r->mreq[nm],
                               .runtime_ms = j->estimate};
        nm += (size_t)j->members;
    }
    return bf_plan_compute(bf_plugin_plan(r->fw), &r->cfg, r->alloc, nn, r->brun, nr, NULL, 0,
                           r->bjobs, (size_t)r->nq, now, err);
}

/* One scheduling pass at now: the queue in order. */
static int pass(run_state *r, int64_t now, tm_err *err) {
    if ((r->mode == SIM_BF_EASY || r->mode == SIM_BF_CONSERVATIVE) && plan(r, now, err) != 0)
        return -1;
    int kept = 0, rc = 0;
    bool waiting = false;
    for (int q = 0; q < r->nq; q++) {
        job *j = &r->js[r->queue[q]];
        bool stop = r->mode == SIM_BF_FIFO && waiting;
        if (!stop && place(r->fw, r->snap, j, now, err, &rc)) {
            j->start = now;
            j->end = now + j->runtime;
            r->running[r->nrun++] = r->queue[q];
            if (waiting)
                r->backfilled++;
            continue;
        }
        if (rc)
            return -1;
        waiting = true;
        r->queue[kept++] = r->queue[q];
    }
    r->nq = kept;
    return 0;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int sim_bf_run(const sim_bf_mix *mix, sim_bf_mode mode, sim_bf_result *out, tm_err *err) {
    if (mix->nodes < 1 || mix->cores < 1 || mix->jobs < 1 || !(mix->load > 0) ||
        mix->wide_share < 0 || mix->wide_share > 1 || !(mix->overestimate >= 1))
        return tm_err_set(err, "backfill sim: nodes, cores, jobs and load must be positive, "
                               "wide share in [0, 1], overestimate >= 1");
    run_state r = {.mix = mix, .mode = mode};
    int rc = -1;
    size_t members = 0;
    r.js = calloc((size_t)mix->jobs, sizeof *r.js);
    if (!r.js || make_jobs(mix, r.js, err) != 0)
        goto out;
    for (int i = 0; i < mix->jobs; i++)
        members += (size_t)r.js[i].members;
    r.queue = malloc((size_t)mix->jobs * sizeof *r.queue);
    r.running = malloc((size_t)mix->jobs * sizeof *r.running);
    r.alloc = malloc((size_t)mix->nodes * sizeof *r.alloc);
    r.brun = malloc(members * sizeof *r.brun);
    r.bjobs = malloc((size_t)mix->jobs * sizeof *r.bjobs);
    r.mreq = malloc(members * sizeof *r.mreq);
    r.snap = sched_snapshot_new();
    if (!r.queue || !r.running || !r.alloc || !r.brun || !r.bjobs || !r.mreq || !r.snap) {
        tm_err_set(err, "backfill sim: out of memory");
        goto out;
    }
    for (int i = 0; i < mix->nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%03d", i);
        sched_node *n = sched_node_new(name);
        if (!n) {
            tm_err_set(err, "backfill sim: out of memory");
            goto out;
        }
        n->ready = true;
        n->allocatable.v[SCHED_RES_CPU] = (int64_t)mix->cores * 1000;
        n->allocatable.v[SCHED_RES_MEMORY] = 64LL << 30;
        n->allocatable.v[SCHED_RES_PODS] = 110;
        if (sched_snapshot_put_node(r.snap, n, err) != 0)
            goto out;
    }
    r.fw = sched_policy_new(mix->policy, err);
    if (!r.fw)
        goto out;
    r.cfg = bf_config_default();
    r.cfg.reserve_depth = mode == SIM_BF_CONSERVATIVE ? BF_DEPTH_ALL : 1;
    r.cfg.max_job_test = 200;
    if ((mode == SIM_BF_EASY || mode == SIM_BF_CONSERVATIVE) &&
        bf_plugin_add(r.fw, &r.cfg, job_key, NULL, err) != 0)
        goto out;
    int next = 0, ended = 0;
    while (ended < mix->jobs) {
        int64_t t = next < mix->jobs ? r.js[next].arrival : INT64_MAX;
        for (int i = 0; i < r.nrun; i++)
            if (r.js[r.running[i]].end < t)
                t = r.js[r.running[i]].end;
        if (t == INT64_MAX) {
            tm_err_set(err, "backfill sim: %d jobs can never start (larger than a node?)", r.nq);
            goto out;
        }
        for (int i = 0; i < r.nrun;) {
            job *j = &r.js[r.running[i]];
            if (j->end > t) {
                i++;
                continue;
            }
            for (int k = 0; k < j->members; k++)
                sched_snapshot_remove_pod(r.snap, j->pods[k]->uid);
            r.running[i] = r.running[--r.nrun];
            ended++;
        }
        while (next < mix->jobs && r.js[next].arrival <= t)
            r.queue[r.nq++] = next++;
        if (pass(&r, t, err) != 0)
            goto out;
    }
    double *w = malloc((size_t)mix->jobs * sizeof *w);
    if (!w) {
        tm_err_set(err, "backfill sim: out of memory");
        goto out;
    }
    memset(out, 0, sizeof *out);
    out->mode = mode;
    int64_t first = r.js[0].arrival, last = 0;
    double busy = 0, ws = 0, ww = 0, wn = 0;
    int nw = 0, nn = 0;
    for (int i = 0; i < mix->jobs; i++) {
        const job *j = &r.js[i];
        last = j->end > last ? j->end : last;
        busy += (double)j->runtime / 1000 * j->members * j->cores;
        w[i] = (double)(j->start - j->arrival) / 1000;
        ws += w[i];
        if (j->wide) {
            ww += w[i];
            nw++;
            if (w[i] > out->wide_wait_max_s)
                out->wide_wait_max_s = w[i];
        } else {
            wn += w[i];
            nn++;
        }
    }
    qsort(w, (size_t)mix->jobs, sizeof *w, cmp_dbl);
    out->makespan_s = (double)(last - first) / 1000;
    out->utilisation = busy / ((double)mix->nodes * mix->cores * out->makespan_s);
    out->wait_mean_s = ws / mix->jobs;
    out->wait_p99_s = w[(int)ceil(0.99 * mix->jobs) - 1];
    out->wide_wait_mean_s = nw ? ww / nw : 0;
    out->narrow_wait_mean_s = nn ? wn / nn : 0;
    out->backfilled = r.backfilled;
    free(w);
    rc = 0;
out:
    if (r.fw)
        sched_framework_free(r.fw);
    sched_snapshot_free(r.snap);
    free_jobs(r.js, mix->jobs);
    free(r.queue);
    free(r.running);
    free(r.alloc);
    free(r.brun);
    free(r.bjobs);
    free(r.mreq);
    return rc;
}
