/* adaptive.c: a policy beyond the paper (issue 16). From the history the snapshot's
 * task table carries (sched_task_profile: runtime per node group, the cores its runs really
 * used, the workflow's structure), it predicts the task's runtime on every NODE under the
 * contention that node would have with the task on it, and sends it where it is expected to
 * finish first; the queue runs the critical path first.
 *
 *   expected finish on node n of group g = predicted runtime on g x contention slowdown on n
 *   + the harm: the delay its extra demand causes the tasks running on n.
 *   A feasible node has room now (the framework scores feasible nodes only), so the wait is 0.
 *   Runtime on g: the mean runtime of the task's past runs on g when there are any, made
 *   monotone in group power (fitted_ms: a more powerful group is never predicted slower;
 *   violators pooled by runs), since a group's mean mixes whichever instances ran there; else
 *   bounds from the groups it ran on, ordered by power (label sum): g is no slower than the
 *   fastest measured group of at most its power (upper bound) and no faster than the slowest
 *   measured group of more power (lower bound); the prediction is the upper bound, the lower
 *   bound, or their middle when both exist; with no runs anywhere, the task's mean runtime
 *   (expected_runtime_ms) for every group.
 *   Slowdown on n (sched_adaptive_slowdown): the form of the simulator's calibrated cpu term
 *   (docs/simulation.md), 1 + s (max(1, (U + u) / C) - 1), with C the node's allocatable
 *   cores, U the cores its running tasks really use (each one's cpu_use_milli from its task
 *   profile; a pod whose profile does not say counts the node's mean request per pod times
 *   rho, the cores used per requested core of the running tasks whose use is known), u the
 *   task's own (cpu_use_milli, else its request times rho) and s = min(1, u) the share of its
 *   runtime
 *   that waits for a core: a task using u < 1 cores is on a cpu for u of its wall time (the
 *   rest is I/O, untouched by core contention); one using a core or more is cpu-bound
 *   throughout. The simulator's s comes from measured speed-ups between machine types, which a
 *   policy cannot see; this one comes from the task's own %cpu only.
 *   Harm: sum over the running tasks j of s_j x (half j's expected runtime, its mean time left)
 *   x (max(1, (U + u) / C) - max(1, U / C)): a greedy earliest finish alone would pile onto a
 *   fast node at the cost of what already runs there.
 *   Equal finishes (at 1 s resolution) go by the labels as prior: with no runs anywhere as
 *   tarema (label distance, then power), otherwise power first (a faster group is the safe bet
 *   for a task that may speed up), then distance; then load. A task with no runtime history at
 *   all is placed exactly as tarema places it.
 *   Queue: largest rank first, rank = expected runtime + tail_ms (the longest expected path of
 *   successors, known once a run of the workflow was seen; HEFT's upward rank), then priority,
 *   creation time.
 *
 * Running tasks are found through the snapshot's pod metadata (the pods' labels, keyed as the
 * scheduler's defaults: nextflow.io/processName, tarema.io/workflow).
 *
 * Score packing (higher wins): bits 40..59 the finish ((2^20 - 1) - seconds), bits 24..39 the
 * prior ((255 - distance) << 8 | power, or power << 8 | (255 - distance) once the task has
 * runs), bits 0..23 (1 - load) scaled. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/policy/adaptive.h"
#include "scheduler/plugins/policy/policy.h"

#define LOAD_BITS   24
#define LOAD_SCALE  ((1 << LOAD_BITS) - 1)
#define PRIOR_BITS  16
#define FINISH_MAXS 0xfffff

#define PROCESS_LABEL  "nextflow.io/processName"
#define WORKFLOW_LABEL "tarema.io/workflow"

typedef struct adaptive_state {
    /* per group, computed in pre_score */
    int64_t *base_ms; /* predicted runtime, -1 unknown */
    int64_t *prior;
    size_t cap;
    /* per node (snapshot index), computed in pre_score */
    double *used;    /* cores the running tasks really use */
    int64_t *nknown; /* of its pods, those whose use is known */
    double *exposed; /* sum over its running tasks of s_j x expected remaining ms */
    size_t ncap;
    double own; /* the task's own cores (u) */
    double rho; /* cores used per requested core of the running tasks whose use is known */
} adaptive_state;

static const sched_task_profile *profile_of(const sched_snapshot *s, const sched_pod *p) {
    const sched_task_profile *tp = sched_snapshot_task(s, p->workflow, p->process);
    if (!tp && p->workflow && *p->workflow) /* learned without workflow identity */
        tp = sched_snapshot_task(s, "", p->process);
    return tp;
}

/* tp's entry for the group with id, NULL when it has no runs there. */
static const sched_group_runtime *entry_on(const sched_task_profile *tp, const char *id) {
    int n = tp->n_group_rt < 0                       ? 0
            : tp->n_group_rt > SCHED_TASK_MAX_GROUPS ? SCHED_TASK_MAX_GROUPS
                                                     : tp->n_group_rt;
    for (int i = 0; i < n && id; i++)
        if (tp->group_rt[i].runs > 0 && tp->group_rt[i].runtime_ms >= 0 &&
            strncmp(tp->group_rt[i].group, id, SCHED_GROUP_ID_MAX) == 0)
            return &tp->group_rt[i];
    return NULL;
}

/* The measured runtime of tp on the group with id, -1 when it has no runs there. */
static int64_t measured_ms(const sched_task_profile *tp, const char *id) {
    const sched_group_runtime *e = entry_on(tp, id);
    return e ? e->runtime_ms : -1;
}

/* The runs of tp on group id (0 when none). */
static int32_t runs_on(const sched_task_profile *tp, const char *id) {
    const sched_group_runtime *e = entry_on(tp, id);
    return e ? e->runs : 0;
}

/* The measured mean of tp on every profiled group of s, made monotone in power (a more powerful
 * group is never predicted slower than a less powerful one) by pooling adjacent violators,
 * weighted by runs: the groups' order comes from their benchmarks, while each group's mean mixes
 * whichever instances happened to run there (sizes vary tenfold within a process). fit[k] is
 * group k's value, -1 when it has no runs. */
static void fitted_ms(const sched_snapshot *s, const sched_task_profile *tp, size_t ng,
                      double *fit) {
    size_t idx[SCHED_TASK_MAX_GROUPS], n = 0;
    for (size_t k = 0; k < ng; k++) {
        const sched_group *h = sched_snapshot_group(s, k);
        fit[k] = -1;
        if (h && !h->unprofiled && n < SCHED_TASK_MAX_GROUPS && measured_ms(tp, h->id) >= 0)
            idx[n++] = k;
    }
    /* by power ascending (insertion sort: at most SCHED_TASK_MAX_GROUPS) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && sched_snapshot_group(s, idx[j - 1])->power >
                                        sched_snapshot_group(s, idx[j])->power;
             j--) {
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    double mean[SCHED_TASK_MAX_GROUPS], w[SCHED_TASK_MAX_GROUPS];
    size_t len[SCHED_TASK_MAX_GROUPS], nb = 0;
    for (size_t i = 0; i < n; i++) {
        const sched_group *h = sched_snapshot_group(s, idx[i]);
        mean[nb] = (double)measured_ms(tp, h->id);
        w[nb] = runs_on(tp, h->id);
        len[nb++] = 1;
        /* runtime must not rise with power: merge while the previous block is faster */
        while (nb > 1 && mean[nb - 2] < mean[nb - 1]) {
            double ww = w[nb - 2] + w[nb - 1];
            mean[nb - 2] = (mean[nb - 2] * w[nb - 2] + mean[nb - 1] * w[nb - 1]) / ww;
            w[nb - 2] = ww;
            len[nb - 2] += len[nb - 1];
            nb--;
        }
    }
    for (size_t b = 0, i = 0; b < nb; b++)
        for (size_t k = 0; k < len[b]; k++, i++)
            fit[idx[i]] = mean[b];
}

int64_t sched_adaptive_predict_ms(const sched_snapshot *s, const sched_task_profile *tp,
                                  const sched_group *g, bool *measured) {
    *measured = false;
    if (!tp || !g)
        return -1;
    size_t ng = sched_snapshot_group_count(s);
    double fit[64];
    if (ng > 64)
        ng = 64;
    fitted_ms(s, tp, ng, fit);
    if (measured_ms(tp, g->id) >= 0) {
        *measured = true;
        for (size_t k = 0; k < ng; k++)
            if (sched_snapshot_group(s, k) == g && fit[k] >= 0)
                return llround(fit[k]);
        return measured_ms(tp, g->id); /* the unprofiled group: its own mean */
    }
    /* bounds from the measured groups, by power: a group at least as powerful as a measured
     * one is no slower (upper bound), one less powerful no faster (lower bound) */
    double upper = -1, lower = -1;
    for (size_t k = 0; k < ng && !g->unprofiled; k++) {
        const sched_group *h = sched_snapshot_group(s, k);
        double rt = fit[k];
        if (rt < 0)
            continue;
        if (h->power <= g->power && (upper < 0 || rt < upper))
            upper = rt;
        if (h->power > g->power && rt > lower)
            lower = rt;
    }
    if (upper >= 0 && lower >= 0)
        return llround((upper + lower) / 2);
    if (upper >= 0)
        return llround(upper);
    if (lower >= 0)
        return llround(lower);
    return tp->expected_runtime_ms; /* no runs on a comparable group: the same everywhere */
}

static bool any_measured(const sched_task_profile *tp) {
    for (int i = 0; tp && i < tp->n_group_rt && i < SCHED_TASK_MAX_GROUPS; i++)
        if (tp->group_rt[i].runs > 0)
            return true;
    return false;
}

/* The prior part of a group's key (see the header). */
static int64_t prior_of(const sched_task_profile *tp, const sched_group *g,
                        const sched_task_info *t) {
    int d = t->labeled ? sched_tarema_distance(g, t) : -1;
    int64_t power = g->unprofiled ? 0 : g->power > 0xff ? 0xff : g->power;
    int64_t near = d >= 0 ? 0xff - (d > 0xff ? 0xff : d) : 0;
    /* without runs anywhere the labels decide as in tarema (distance, then power); once the
     * task ran somewhere, equal predictions go to the more powerful group first */
    if (any_measured(tp))
        return power << 8 | near;
    return d >= 0 ? near << 8 | power : 0;
}

/* The finish part of a key: (2^20 - 1) - seconds, 0 when the runtime is unknown (the prior
 * alone decides). */
static int64_t finish_of(double ms) {
    if (!(ms >= 0))
        return 0;
    double sec = floor(ms / 1000 + 0.5);
    return FINISH_MAXS - (sec > FINISH_MAXS ? FINISH_MAXS : (int64_t)sec);
}

double sched_adaptive_slowdown(double used, double own, double cores) {
    if (!(cores > 0))
        return 1;
    double s = own < 1 ? (own > 0 ? own : 0) : 1;
    double over = (used + own) / cores;
    return 1 + s * (over > 1 ? over - 1 : 0);
}

int64_t sched_adaptive_group_key(const sched_snapshot *s, const sched_task_profile *tp,
                                 const sched_group *g, const sched_task_info *t) {
    bool measured;
    int64_t ms = sched_adaptive_predict_ms(s, tp, g, &measured);
    return finish_of(ms >= 0 ? (double)ms : -1) << PRIOR_BITS | prior_of(tp, g, t);
}

/* The task profile a placed pod's labels name, NULL when they name none. */
static const sched_task_profile *profile_of_labels(const sched_snapshot *s,
                                                   const sched_labels *labels) {
    const char *proc = sched_labels_get(labels, PROCESS_LABEL);
    if (!proc)
        return NULL;
    const char *wf = sched_labels_get(labels, WORKFLOW_LABEL);
    const sched_task_profile *tp = sched_snapshot_task(s, wf ? wf : "", proc);
    if (!tp && wf && *wf)
        tp = sched_snapshot_task(s, "", proc);
    return tp;
}

/* The cores the tasks on every node really use: the sum of their profiles' cpu_use_milli, and
 * the node's mean request per pod for each pod whose profile does not say (pods of unknown
 * tasks, pods without metadata). */
static void node_usage(adaptive_state *as, const sched_snapshot *s, size_t nn) {
    for (size_t i = 0; i < nn; i++) {
        as->used[i] = 0;
        as->nknown[i] = 0;
        as->exposed[i] = 0;
    }
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_META);
    for (size_t k = 0; k < np; k++) {
        int node = -1;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_META, k, NULL, &node);
        if (node < 0 || (size_t)node >= nn || !m || !m->labels)
            continue;
        const sched_task_profile *tp = profile_of_labels(s, m->labels);
        if (!tp || tp->cpu_use_milli <= 0)
            continue;
        as->used[node] += (double)tp->cpu_use_milli / 1000;
        as->nknown[node]++;
        if (tp->expected_runtime_ms > 0) {
            double u = (double)tp->cpu_use_milli / 1000;
            as->exposed[node] += (u < 1 ? u : 1) * (double)tp->expected_runtime_ms / 2;
        }
    }
    /* rho: cores used per requested core over the running tasks whose use is known (their
     * requests taken as their node's mean per pod); 1 when none is known */
    double known_use = 0, known_req = 0;
    for (size_t i = 0; i < nn; i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        int64_t pods = n->requested.v[SCHED_RES_PODS];
        double per_pod = pods > 0 ? (double)n->requested.v[SCHED_RES_CPU] / 1000 / (double)pods : 0;
        known_use += as->used[i];
        known_req += (double)as->nknown[i] * per_pod;
    }
    as->rho = known_req > 0 && known_use > 0 ? known_use / known_req : 1;
    for (size_t i = 0; i < nn; i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        int64_t pods = n->requested.v[SCHED_RES_PODS], rest = pods - as->nknown[i];
        double per_pod = pods > 0 ? (double)n->requested.v[SCHED_RES_CPU] / 1000 / (double)pods : 0;
        if (rest > 0)
            as->used[i] += (double)rest * per_pod * as->rho;
    }
}

/* Everything a cycle needs for pod on snap: per group the prediction (and the prior, with task;
 * NULL: no prior), per node the usage. */
static int prepare(adaptive_state *as, const sched_snapshot *snap, const sched_pod *pod,
                   const sched_task_info *task, tm_err *err) {
    size_t ng = sched_snapshot_group_count(snap), nn = sched_snapshot_node_count(snap);
    if (ng > as->cap) {
        int64_t *b = realloc(as->base_ms, ng * sizeof *b);
        if (b)
            as->base_ms = b;
        int64_t *p = b ? realloc(as->prior, ng * sizeof *p) : NULL;
        if (!p)
            return tm_err_set(err, "out of memory for %zu node groups", ng);
        as->prior = p;
        as->cap = ng;
    }
    if (nn > as->ncap) {
        double *u = realloc(as->used, nn * sizeof *u);
        if (u)
            as->used = u;
        int64_t *k = u ? realloc(as->nknown, nn * sizeof *k) : NULL;
        if (!k)
            return tm_err_set(err, "out of memory for %zu nodes", nn);
        as->nknown = k;
        double *e = realloc(as->exposed, nn * sizeof *e);
        if (!e)
            return tm_err_set(err, "out of memory for %zu nodes", nn);
        as->exposed = e;
        as->ncap = nn;
    }
    const sched_task_profile *tp = profile_of(snap, pod);
    for (size_t g = 0; g < ng; g++) {
        const sched_group *gr = sched_snapshot_group(snap, g);
        bool measured;
        as->base_ms[g] = sched_adaptive_predict_ms(snap, tp, gr, &measured);
        as->prior[g] = task ? prior_of(tp, gr, task) : 0;
    }
    node_usage(as, snap, nn);
    as->own = tp && tp->cpu_use_milli > 0 ? (double)tp->cpu_use_milli / 1000
                                          : (double)pod->requests.v[SCHED_RES_CPU] / 1000 * as->rho;
    return 0;
}

static int adaptive_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    return prepare(st, c->snap, c->pod, &c->task, err);
}

static inline int64_t load_part(double l) {
    if (l > 1)
        l = 1;
    if (l < 0)
        l = 0;
    return LOAD_SCALE - (int64_t)(l * LOAD_SCALE);
}

/* The contention terms on node index i (< ncap): its cores, the slowdown and the harm. One
 * function for the score and for explain, so explain shows what was scored. */
static inline void contention_on(const adaptive_state *as, const sched_snapshot *s, size_t i,
                                 double *cores, double *slow, double *harm) {
    const sched_node *n = sched_snapshot_node(s, i);
    *cores = (double)n->allocatable.v[SCHED_RES_CPU] / 1000;
    /* the harm: every running task's compute share slows by the rise in oversubscription
     * the task causes, for the time it has left (half its expected runtime, on average) */
    double over0 = *cores > 0 ? as->used[i] / *cores : 1,
           over1 = *cores > 0 ? (as->used[i] + as->own) / *cores : 1;
    *harm = as->exposed[i] * ((over1 > 1 ? over1 : 1) - (over0 > 1 ? over0 : 1));
    *slow = sched_adaptive_slowdown(as->used[i], as->own, *cores);
}

/* The terms of the expected finish on node index i of group g (sched_adaptive_node). */
static void node_view(const adaptive_state *as, const sched_snapshot *s, size_t i, int32_t g,
                      sched_adaptive_node *v) {
    *v = (sched_adaptive_node){.slowdown = 1, .runtime_ms = -1, .finish_ms = -1, .own = as->own};
    if (i >= as->ncap)
        return;
    double harm;
    contention_on(as, s, i, &v->cores, &v->slowdown, &harm);
    v->used = as->used[i];
    v->harm_ms = llround(harm);
    if (g < 0 || (size_t)g >= as->cap || as->base_ms[g] < 0)
        return;
    v->runtime_ms = as->base_ms[g];
    v->finish_ms = llround((double)as->base_ms[g] * v->slowdown + harm);
}

/* The score of node index i (group g, load l): the finish on it, the group's prior, the load. */
static int64_t node_score(const adaptive_state *as, const sched_snapshot *s, size_t i, int32_t g,
                          double l) {
    if (g < 0 || (size_t)g >= as->cap)
        return load_part(l);
    int64_t fin = 0; /* unknown runtime: the prior, then the load decide (as tarema) */
    if (as->base_ms[g] >= 0 && i < as->ncap) {
        double cores, slow, harm;
        contention_on(as, s, i, &cores, &slow, &harm);
        fin = finish_of((double)as->base_ms[g] * slow + harm);
    }
    return ((fin << PRIOR_BITS | as->prior[g]) << LOAD_BITS) | load_part(l);
}

static int64_t adaptive_score(void *st, const sched_cycle *c, const sched_node *n) {
    int i = sched_snapshot_node_index(c->snap, n->name);
    return node_score(st, c->snap, i < 0 ? SIZE_MAX : (size_t)i, n->group, sched_node_load(n));
}

static void adaptive_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                                 int64_t *out) {
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++)
        out[k] = node_score(st, c->snap, nodes[k], cols.group[nodes[k]], cols.load[nodes[k]]);
}

int64_t sched_adaptive_rank_ms(const sched_task_profile *tp) {
    if (!tp)
        return 0;
    int64_t rt = tp->expected_runtime_ms > 0 ? tp->expected_runtime_ms : 0;
    return rt + (tp->tail_ms > 0 ? tp->tail_ms : 0);
}

static int adaptive_queue_cmp(void *st, const sched_snapshot *s, const sched_pod *a,
                              const sched_pod *b) {
    (void)st;
    int64_t ra = sched_adaptive_rank_ms(profile_of(s, a)),
            rb = sched_adaptive_rank_ms(profile_of(s, b));
    if (ra != rb)
        return ra > rb ? -1 : 1;
    if (a->created_ms != b->created_ms) /* priority: sched_framework_queue_cmp, first */
        return a->created_ms < b->created_ms ? -1 : 1;
    return 0;
}

/* Frees what prepare() allocated in as (not as itself). */
static void state_release(adaptive_state *as) {
    free(as->base_ms);
    free(as->prior);
    free(as->used);
    free(as->nknown);
    free(as->exposed);
}

int sched_adaptive_nodes(const sched_snapshot *s, const sched_pod *pod, sched_adaptive_node *out,
                         size_t n, tm_err *err) {
    adaptive_state as = {0};
    int rc = prepare(&as, s, pod, NULL, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const sched_node *nd = i < sched_snapshot_node_count(s) ? sched_snapshot_node(s, i) : NULL;
        node_view(&as, s, i, nd ? nd->group : -1, &out[i]);
    }
    state_release(&as);
    return rc;
}

static void adaptive_free(void *st) {
    adaptive_state *as = st;
    if (as)
        state_release(as);
    free(as);
}

int sched_plugin_adaptive(sched_plugin *out) {
    adaptive_state *as = calloc(1, sizeof *as);
    if (!as)
        return -1;
    *out = (sched_plugin){.name = "adaptive",
                          .state = as,
                          .pre_score = adaptive_pre_score,
                          .score = adaptive_score,
                          .score_batch = adaptive_score_batch,
                          .queue_cmp = adaptive_queue_cmp,
                          .free_state = adaptive_free};
    return 0;
}
