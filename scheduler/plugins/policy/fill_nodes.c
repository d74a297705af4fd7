/* fill_nodes.c: the fill-nodes baseline: the fitting node with the largest requested
 * share first, so one node fills up before the next is used; among equally loaded nodes the
 * first in name order (the "node list" of the paper). */
#include "scheduler/plugins/policy/policy.h"

static inline int64_t fill_of_load(double l) {
    if (l > 4)
        l = 4;
    return (int64_t)(l * 1e9);
}

static int64_t fill_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    (void)c;
    return fill_of_load(sched_node_load(n));
}

/* fill_score from the snapshot's cached loads. */
static void fill_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                             int64_t *out) {
    (void)st;
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++)
        out[k] = fill_of_load(cols.load[nodes[k]]);
}

int sched_plugin_fill_nodes(sched_plugin *out) {
    *out =
        (sched_plugin){.name = "fill-nodes", .score = fill_score, .score_batch = fill_score_batch};
    return 0;
}
