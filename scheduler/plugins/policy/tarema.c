/* tarema.c: tarema's scoring (paper section IV-D): prefer the node group whose labels
 * are closest to the task's, f(g, t) = sum_k |g_k - t_k|; ties between groups go to the most
 * powerful group (largest label sum); within a group the least-loaded node wins. Groups whose
 * nodes are all filtered simply do not appear, which is the fall-through to the next group of
 * the priority list. Unprofiled nodes rank after every profiled group for labeled tasks.
 * Unlabeled tasks: least-loaded node overall.
 *
 * The score packs (group preference, load) into one int64 so the framework's "highest score
 * wins" gives exactly this lexicographic order: bits 24.. hold the group key
 * ((DMAX - distance) << 16 | power), bits 0..23 hold (1 - load) scaled. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/policy/policy.h"

#define DMAX       0xffff
#define LOAD_BITS  24
#define LOAD_SCALE ((1 << LOAD_BITS) - 1)

typedef struct tarema_state {
    int64_t *gkey; /* per group, computed in pre_score */
    size_t cap;
    int dworst; /* largest distance of any profiled group, for the extender scale */
} tarema_state;

int sched_tarema_distance(const sched_group *g, const sched_task_info *t) {
    if (g->unprofiled)
        return -1;
    int d = 0;
    for (int k = 0; k < SCHED_NFEAT; k++)
        if (t->labels[k] > 0 && g->labels[k] > 0)
            d += abs(g->labels[k] - t->labels[k]);
    return d;
}

static int64_t group_key(const sched_group *g, const sched_task_info *t) {
    if (!t->labeled)
        return 0; /* unknown task: every group is as good, load decides */
    int d = sched_tarema_distance(g, t);
    if (d < 0)
        return 0; /* unprofiled: after every profiled group */
    if (d > DMAX - 1)
        d = DMAX - 1;
    int64_t power = g->power > 0xffff ? 0xffff : g->power;
    return ((int64_t)(DMAX - d) << 16) | power;
}

static int tarema_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    tarema_state *ts = st;
    size_t ng = sched_snapshot_group_count(c->snap);
    if (ng > ts->cap) {
        int64_t *nk = realloc(ts->gkey, ng * sizeof *nk);
        if (!nk)
            return tm_err_set(err, "out of memory for %zu node groups", ng);
        ts->gkey = nk;
        ts->cap = ng;
    }
    ts->dworst = 0;
    for (size_t g = 0; g < ng; g++) {
        const sched_group *grp = sched_snapshot_group(c->snap, g);
        ts->gkey[g] = group_key(grp, &c->task);
        int d = sched_tarema_distance(grp, &c->task);
        if (d > ts->dworst)
            ts->dworst = d;
    }
    return 0;
}

/* The load bits from a node's load (sched_node_load, or the snapshot's cached copy of it). */
static inline int64_t load_part(double l) {
    if (l > 1)
        l = 1;
    if (l < 0)
        l = 0;
    return LOAD_SCALE - (int64_t)(l * LOAD_SCALE);
}

static int64_t tarema_score(void *st, const sched_cycle *c, const sched_node *n) {
    const tarema_state *ts = st;
    int64_t gk = n->group >= 0 && (size_t)n->group < ts->cap ? ts->gkey[n->group] : 0;
    return (gk << LOAD_BITS) | load_part(sched_node_load(n));
}

/* tarema_score for many nodes at once, from the snapshot's columns. */
static void tarema_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                               int64_t *out) {
    const tarema_state *ts = st;
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = nodes[k];
        int32_t g = cols.group[i];
        int64_t gk = g >= 0 && (size_t)g < ts->cap ? ts->gkey[g] : 0;
        out[k] = (gk << LOAD_BITS) | load_part(cols.load[i]);
    }
}

/* Extender scale: the preferred group present among the feasible nodes gets 10, the most
 * distant profiled group of the cluster 0, linear in distance between; a group tied in distance
 * with the best but less powerful gets 9 so the default scheduler still sees tarema's
 * tie-break; unprofiled nodes get 0. Unlabeled tasks: 10 for the least loaded node, linear in
 * load down to 0 for the most loaded. */
static int tarema_extender_score(void *st, const sched_cycle *c, const sched_node *n, int64_t raw,
                                 int64_t min, int64_t max) {
    const tarema_state *ts = st;
    (void)n;
    if (!c->task.labeled) {
        if (max == min)
            return 10;
        return (int)(10.0 * (double)(raw - min) / (double)(max - min) + 0.5);
    }
    int64_t gk = raw >> LOAD_BITS, gmax = max >> LOAD_BITS;
    if (gk == 0)
        return 0; /* unprofiled */
    if (gk == gmax)
        return 10;
    int64_t d = DMAX - (gk >> 16), dbest = DMAX - (gmax >> 16);
    int v = ts->dworst <= dbest ? 10 : (int)(10 * (ts->dworst - d) / (ts->dworst - dbest));
    return v >= 10 ? 9 : v < 0 ? 0 : v;
}

static void tarema_free(void *st) {
    tarema_state *ts = st;
    if (ts)
        free(ts->gkey);
    free(ts);
}

int sched_plugin_tarema(sched_plugin *out) {
    tarema_state *ts = calloc(1, sizeof *ts);
    if (!ts)
        return -1;
    *out = (sched_plugin){.name = "tarema",
                          .state = ts,
                          .pre_score = tarema_pre_score,
                          .score = tarema_score,
                          .score_batch = tarema_score_batch,
                          .extender_score = tarema_extender_score,
                          .free_state = tarema_free};
    return 0;
}
