/* plugin_adaptive.c: a policy beyond the paper (issue 16). From the history the snapshot's
 * task table carries (sched_task_profile: runtime per node group, the workflow's structure), it
 * predicts the task's runtime on every node group and sends it to the group where it is
 * expected to finish first; the queue runs the critical path first.
 *
 *   expected finish on group g = time until room frees on g + predicted runtime on g.
 *   A group with a feasible node has room now (the framework scores feasible nodes only), so
 *   its wait is 0 and the finish is the prediction: the mean runtime of the task's past runs on
 *   g when there are any; else bounds from the groups it ran on, ordered by power (label sum):
 *   g is no slower than the fastest measured group of at most its power (upper bound) and no
 *   faster than the slowest measured group of more power (lower bound); the prediction is the
 *   upper bound, the lower bound, or their middle when both exist; with no runs anywhere, the
 *   task's mean runtime (expected_runtime_ms) for every group. Equal predictions (at 1 s
 *   resolution) go by the labels as prior: with no runs anywhere as tarema (label distance,
 *   then power), otherwise power first (a faster group is the safe bet for a task that may
 *   speed up), then distance; then load. A task with no runtime history at all is placed
 *   exactly as tarema places it.
 *   Queue: largest rank first, rank = expected runtime + tail_ms (the longest expected path of
 *   successors, known once a run of the workflow was seen; HEFT's upward rank), then priority,
 *   creation time.
 *
 * Score packing (higher wins): bits 40..59 the finish ((2^20 - 1) - seconds), bits 24..39 the
 * prior ((255 - distance) << 8 | power, or power << 8 | (255 - distance) once the task has
 * runs), bits 0..23 (1 - load) scaled. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/policy.h"

#define LOAD_BITS   24
#define LOAD_SCALE  ((1 << LOAD_BITS) - 1)
#define PRIOR_BITS  16
#define FINISH_MAXS 0xfffff

typedef struct adaptive_state {
    int64_t *gkey; /* per group, computed in pre_score */
    size_t cap;
} adaptive_state;

static const sched_task_profile *profile_of(const sched_snapshot *s, const sched_pod *p) {
    const sched_task_profile *tp = sched_snapshot_task(s, p->workflow, p->process);
    if (!tp && p->workflow && *p->workflow) /* learned without workflow identity */
        tp = sched_snapshot_task(s, "", p->process);
    return tp;
}

/* The measured runtime of tp on the group with id, -1 when it has no runs there. */
static int64_t measured_ms(const sched_task_profile *tp, const char *id) {
    int n = tp->n_group_rt < 0                       ? 0
            : tp->n_group_rt > SCHED_TASK_MAX_GROUPS ? SCHED_TASK_MAX_GROUPS
                                                     : tp->n_group_rt;
    for (int i = 0; i < n && id; i++)
        if (tp->group_rt[i].runs > 0 && tp->group_rt[i].runtime_ms >= 0 &&
            strncmp(tp->group_rt[i].group, id, SCHED_GROUP_ID_MAX) == 0)
            return tp->group_rt[i].runtime_ms;
    return -1;
}

int64_t sched_adaptive_predict_ms(const sched_snapshot *s, const sched_task_profile *tp,
                                  const sched_group *g, bool *measured) {
    *measured = false;
    if (!tp || !g)
        return -1;
    int64_t own = measured_ms(tp, g->id);
    if (own >= 0) {
        *measured = true;
        return own;
    }
    /* bounds from the measured groups, by power: a group at least as powerful as a measured
     * one is no slower (upper bound), one less powerful no faster (lower bound) */
    int64_t upper = -1, lower = -1;
    for (size_t k = 0; k < sched_snapshot_group_count(s); k++) {
        const sched_group *h = sched_snapshot_group(s, k);
        int64_t rt = h && !h->unprofiled && !g->unprofiled ? measured_ms(tp, h->id) : -1;
        if (rt < 0)
            continue;
        if (h->power <= g->power && (upper < 0 || rt < upper))
            upper = rt;
        if (h->power > g->power && rt > lower)
            lower = rt;
    }
    if (upper >= 0 && lower >= 0)
        return (upper + lower) / 2;
    if (upper >= 0)
        return upper;
    if (lower >= 0)
        return lower;
    return tp->expected_runtime_ms; /* no runs on a comparable group: the same everywhere */
}

static bool any_measured(const sched_task_profile *tp) {
    for (int i = 0; tp && i < tp->n_group_rt && i < SCHED_TASK_MAX_GROUPS; i++)
        if (tp->group_rt[i].runs > 0)
            return true;
    return false;
}

int64_t sched_adaptive_group_key(const sched_snapshot *s, const sched_task_profile *tp,
                                 const sched_group *g, const sched_task_info *t) {
    int64_t prior = 0;
    int d = t->labeled ? sched_tarema_distance(g, t) : -1;
    int64_t power = g->unprofiled ? 0 : g->power > 0xff ? 0xff : g->power;
    int64_t near = d >= 0 ? 0xff - (d > 0xff ? 0xff : d) : 0;
    /* without runs anywhere the labels decide as in tarema (distance, then power); once the
     * task ran somewhere, equal predictions go to the more powerful group first */
    if (any_measured(tp))
        prior = power << 8 | near;
    else if (d >= 0)
        prior = near << 8 | power;
    bool measured;
    int64_t ms = sched_adaptive_predict_ms(s, tp, g, &measured);
    int64_t fin = 0; /* unknown runtime: the prior alone decides */
    if (ms >= 0) {
        int64_t sec = (ms + 500) / 1000;
        fin = FINISH_MAXS - (sec > FINISH_MAXS ? FINISH_MAXS : sec);
    }
    return (fin << PRIOR_BITS) | prior;
}

static int adaptive_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    adaptive_state *as = st;
    size_t ng = sched_snapshot_group_count(c->snap);
    if (ng > as->cap) {
        int64_t *nk = realloc(as->gkey, ng * sizeof *nk);
        if (!nk)
            return tm_err_set(err, "out of memory for %zu node groups", ng);
        as->gkey = nk;
        as->cap = ng;
    }
    const sched_task_profile *tp = profile_of(c->snap, c->pod);
    for (size_t g = 0; g < ng; g++)
        as->gkey[g] =
            sched_adaptive_group_key(c->snap, tp, sched_snapshot_group(c->snap, g), &c->task);
    return 0;
}

static inline int64_t load_part(double l) {
    if (l > 1)
        l = 1;
    if (l < 0)
        l = 0;
    return LOAD_SCALE - (int64_t)(l * LOAD_SCALE);
}

static inline int64_t key_of(const adaptive_state *as, int32_t g) {
    return g >= 0 && (size_t)g < as->cap ? as->gkey[g] : 0;
}

static int64_t adaptive_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)c;
    return (key_of(st, n->group) << LOAD_BITS) | load_part(sched_node_load(n));
}

static void adaptive_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                                 int64_t *out) {
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++)
        out[k] = (key_of(st, cols.group[nodes[k]]) << LOAD_BITS) | load_part(cols.load[nodes[k]]);
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
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->created_ms != b->created_ms)
        return a->created_ms < b->created_ms ? -1 : 1;
    return 0;
}

static void adaptive_free(void *st) {
    adaptive_state *as = st;
    if (as)
        free(as->gkey);
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
