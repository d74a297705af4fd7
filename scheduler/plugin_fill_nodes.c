/* plugin_fill_nodes.c: the fill-nodes baseline: the fitting node with the largest requested
 * share first, so one node fills up before the next is used; among equally loaded nodes the
 * first in name order (the "node list" of the paper). */
#include "scheduler/policy.h"

static int64_t fill_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    (void)c;
    double l = sched_node_load(n);
    if (l > 4)
        l = 4;
    return (int64_t)(l * 1e9);
}

int sched_plugin_fill_nodes(sched_plugin *out) {
    *out = (sched_plugin){.name = "fill-nodes", .score = fill_score};
    return 0;
}
