/* policy.h: scheduling policies by name (--policy), each the framework's filters plus one
 * scoring/queue-sort plugin. The live scheduler, the extender and the simulator all create
 * their policy here so they run exactly the same code.
 *
 *   tarema       labeled task: node group with the smallest label distance
 *                f(g, t) = sum_k |g_k - t_k| (features without a task label are skipped);
 *                ties -> most powerful group (largest label sum); within the group the
 *                least-loaded fitting node; groups without room fall through to the next
 *                group in that order; unprofiled nodes come last. Unlabeled task: the
 *                least-loaded fitting node overall.
 *   round-robin  the next fitting node after the last one chosen, in node-name order.
 *   fair         the least-loaded fitting node (smallest requested share).
 *   fill-nodes   the most-loaded fitting node (fill one node before the next), in name order.
 *   sjfn         queue (within a priority: priority is always first, framework.h): shortest
 *                expected runtime first (unknown runtimes last); node: the
 *                most powerful fitting node (largest label sum), then least loaded.
 *   adaptive     beyond the paper (adaptive.c): the node where the task is expected to
 *                finish first: its runtime per node group in the task profile (monotone in
 *                group power; groups without runs bounded by the measured ones) times the
 *                cpu contention on the node (the cores its running tasks really use), plus
 *                the delay it adds to them; no runs at all: as tarema (the labels as prior).
 *                Queue: critical path first.
 * "Load" is sched_node_load (dominant cpu/memory requested share). Every tie ends on node
 * name, so decisions are deterministic. */
#ifndef TAREMA_SCHED_POLICY_H
#define TAREMA_SCHED_POLICY_H

#include "lib/error.h"
#include "scheduler/framework/framework.h"

/* A new framework running the named policy; NULL with err naming the valid policies when the
 * name is unknown. Free with sched_framework_free. */
sched_framework *sched_policy_new(const char *name, tm_err *err);
/* The policy's plugin alone (for sched_framework_add_profile). 0, or -1 with err. */
int sched_policy_plugin(const char *name, sched_plugin *out, tm_err *err);

/* The policy names, NULL-terminated, static. */
const char *const *sched_policy_names(void);

/* The plugins, for callers that compose their own framework (each returns 0, or -1 on OOM). */
int sched_plugin_tarema(sched_plugin *out);
int sched_plugin_round_robin(sched_plugin *out);
int sched_plugin_fair(sched_plugin *out);
int sched_plugin_fill_nodes(sched_plugin *out);
int sched_plugin_sjfn(sched_plugin *out);
int sched_plugin_adaptive(sched_plugin *out);

/* Adaptive's arithmetic, exposed for explain and tests (adaptive.c). predict: the
 * task's runtime on group g of s (*measured: from its runs there), -1 unknown. group_key: the
 * group part of the score (finish, then prior), larger is better. rank: the queue key,
 * expected runtime + tail_ms. */
int64_t sched_adaptive_predict_ms(const sched_snapshot *s, const sched_task_profile *tp,
                                  const sched_group *g, bool *measured);
int64_t sched_adaptive_group_key(const sched_snapshot *s, const sched_task_profile *tp,
                                 const sched_group *g, const sched_task_info *t);
int64_t sched_adaptive_rank_ms(const sched_task_profile *tp);
/* The contention slowdown adaptive predicts for a task using `own` cores on a node of `cores`
 * whose running tasks use `used`: 1 + s (max(1, (used + own) / cores) - 1), s = min(1, own). */
double sched_adaptive_slowdown(double used, double own, double cores);

/* Tarema's distance between a group's labels and a task's: sum over features where both are
 * known of |g_k - t_k|; -1 when the group is unprofiled. Exposed for explain and tests. */
int sched_tarema_distance(const sched_group *g, const sched_task_info *t);

#endif
