/* plugin_sjfn.c: the shortest-job-fastest-node baseline (paper section V-E-a): the queue is
 * ordered by expected runtime from the labeler's history (known runtimes first, shortest first;
 * unknown ones after, by priority and age), and each pod goes to the most powerful fitting node
 * (largest label sum of its group; unprofiled nodes count 0), the least loaded among equals. */
#include "scheduler/policy.h"

static int64_t sjfn_score(void *st, const sched_cycle *c, const sched_node *n) {
    (void)st;
    const sched_group *g = n->group >= 0 ? sched_snapshot_group(c->snap, (size_t)n->group) : NULL;
    int64_t power = g ? g->power : 0;
    if (power > 0xfffff)
        power = 0xfffff;
    double l = sched_node_load(n);
    if (l > 1)
        l = 1;
    int64_t idle = (int64_t)((1.0 - l) * (double)0x7fffffff);
    return (power << 32) | idle;
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
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->created_ms != b->created_ms)
        return a->created_ms < b->created_ms ? -1 : 1;
    return 0;
}

int sched_plugin_sjfn(sched_plugin *out) {
    *out = (sched_plugin){.name = "sjfn", .score = sjfn_score, .queue_cmp = sjfn_queue_cmp};
    return 0;
}
