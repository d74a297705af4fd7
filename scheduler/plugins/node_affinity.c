/* node_affinity.c: the NodeAffinity filter: spec.nodeSelector and the required
 * node affinity terms (one must match). "node(s) didn't match Pod's node affinity/selector".
 * Score, as kube-scheduler's: the sum of the weights of the preferred terms the node matches
 * (DefaultNormalizeScore, weight 2); PreScore skips a pod without preferred terms. */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static int affinity_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    const sched_pod *p = c->pod;
    return sched_match_node_affinity(p->node_selector, p->n_node_selector, p->has_affinity,
                                     p->affinity, p->n_affinity, n)
               ? -1
               : 0;
}

static void affinity_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                            char *buf, size_t size) {
    snprintf(buf, size, "node(s) didn't match Pod's node affinity/selector");
}

static bool affinity_pre_score(void *state, const sched_cycle *c) {
    return c->pod->n_node_prefs > 0;
}

static int64_t affinity_score(void *state, const sched_cycle *c, const sched_node *n) {
    const sched_pod *p = c->pod;
    int64_t sum = 0;
    for (size_t k = 0; k < p->n_node_prefs; k++)
        if (sched_match_terms(&p->node_prefs[k], 1, n))
            sum += p->node_pref_weight[k];
    return sum;
}

int sched_filter_node_affinity(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeAffinity",
                          .filter = affinity_filter,
                          .node_reason = affinity_reason,
                          .filter_id = SCHED_FILTER_NODE_AFFINITY,
                          .pref_pre_score = affinity_pre_score,
                          .pref_score = affinity_score,
                          .pref_weight = 2};
    return 0;
}
