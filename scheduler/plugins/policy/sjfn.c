/* sjfn.c: the shortest-job-fastest-node baseline (paper section V-E-a): the queue is
 * ordered by expected runtime from the labeler's history (known runtimes first, shortest first;
 * unknown ones after, by priority and age), and each pod goes to the most powerful fitting node
 * (largest label sum of its group; unprofiled nodes count 0), the least loaded among equals. */
#include "scheduler/plugins/policy/policy.h"

static inline int64_t sjfn_of(const sched_snapshot *s, int32_t group, double l) {
    const sched_group *g = group >= 0 ? sched_snapshot_group(s, (size_t)group) : NULL;
    int64_t power = g ? g->power : 0;
    if (power > 0xfffff)
        power = 0xfffff;
    if (l > 1)
        l = 1;
    int64_t idle = (int64_t)((1.0 - l) * (double)0x7fffffff);
    return (power << 32) | idle;
}

static int64_t sjfn_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    return sjfn_of(c->snap, n->group, sched_node_load(n));
}

/* sjfn_score from the snapshot's columns. */
static void sjfn_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                             int64_t *out) {
    (void)st;
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    for (size_t k = 0; k < n; k++)
        out[k] = sjfn_of(c->snap, cols.group[nodes[k]], cols.load[nodes[k]]);
}

static int sjfn_queue_cmp(void *st, const sched_snapshot *s, const sched_pod *a,
                          const sched_pod *b) {
    (void)st;
    sched_task_info ta, tb;
    sched_task_resolve(s, a, &ta);
    sched_task_resolve(s, b, &tb);
    bool ka = ta.expected_runtime_ms >= 0, kb = tb.expected_runtime_ms >= 0;
    if (ka != kb)
        return ka ? -1 : 1;
    if (ka && ta.expected_runtime_ms != tb.expected_runtime_ms)
        return ta.expected_runtime_ms < tb.expected_runtime_ms ? -1 : 1;
    if (a->created_ms != b->created_ms) /* priority: sched_framework_queue_cmp, first */
        return a->created_ms < b->created_ms ? -1 : 1;
    return 0;
}

int sched_plugin_sjfn(sched_plugin *out) {
    *out = (sched_plugin){.name = "sjfn",
                          .score = sjfn_score,
                          .score_batch = sjfn_score_batch,
                          .queue_cmp = sjfn_queue_cmp};
    return 0;
}
