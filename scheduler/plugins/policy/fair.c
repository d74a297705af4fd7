/* fair.c: the fair baseline: the fitting node with the smallest requested share
 * (sched_node_load), so reservations spread evenly over the cluster. */
#include "scheduler/plugins/policy/policy.h"

/* Load in billionths, clamped so that overcommitted nodes still compare sensibly. */
static inline int64_t load_ppb(double l) {
    if (l > 4)
        l = 4;
    return (int64_t)(l * 1e9);
}

static int64_t fair_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    (void)c;
    return -load_ppb(sched_node_load(n));
}

/* fair_score from the snapshot's cached loads. */
static void fair_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                             int64_t *out) {
    (void)st;
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++)
        out[k] = -load_ppb(cols.load[nodes[k]]);
}

int sched_plugin_fair(sched_plugin *out) {
    *out = (sched_plugin){.name = "fair", .score = fair_score, .score_batch = fair_score_batch};
    return 0;
}
