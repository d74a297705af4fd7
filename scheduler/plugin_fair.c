/* plugin_fair.c: the fair baseline: the fitting node with the smallest requested share
 * (sched_node_load), so reservations spread evenly over the cluster. */
#include "scheduler/policy.h"

/* Load in billionths, clamped so that overcommitted nodes still compare sensibly. */
static int64_t load_ppb(const sched_node *n) {
    double l = sched_node_load(n);
    if (l > 4)
        l = 4;
    return (int64_t)(l * 1e9);
}

static int64_t fair_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    (void)c;
    return -load_ppb(n);
}

int sched_plugin_fair(sched_plugin *out) {
    *out = (sched_plugin){.name = "fair", .score = fair_score};
    return 0;
}
