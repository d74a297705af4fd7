/* node_resources_balanced_allocation.c: kube-scheduler's NodeResourcesBalancedAllocation score
 * (noderesources/balanced_allocation.go, resources cpu and memory): with the pod added, each
 * resource's fraction requested / allocatable of the node (capped at 1; a resource the node
 * has none of is left out); the score is (1 - std) * 100, std the standard deviation of the
 * fractions (|a - b| / 2 for two), so a node whose cpu and memory fill evenly scores higher.
 * No normalisation (already 0..100), weight 1. PreScore skips a best-effort pod (no cpu nor
 * memory request), as kube does since 1.32: every node would score 100 minus the node's own
 * imbalance, piling such pods onto the most balanced node.
 * With tarema's policy, which stands for NodeResourcesFit and this plugin, it is a secondary
 * score (pref_secondary, framework.h): it joins the weighted sum when a user-written preference
 * is scored, and otherwise only breaks the policy's ties. */
#include <math.h>

#include "scheduler/plugins/filters.h"

static bool balanced_pre_score(void *state, const sched_cycle *c) {
    const sched_resources *r = &c->pod->requests;
    return r->v[SCHED_RES_CPU] > 0 || r->v[SCHED_RES_MEMORY] > 0;
}

int64_t sched_balanced_allocation_score(const sched_resources *pod, const sched_node *n) {
    static const int res[] = {SCHED_RES_CPU, SCHED_RES_MEMORY};
    double frac[2];
    size_t k = 0;
    for (size_t i = 0; i < 2; i++) {
        int64_t alloc = n->allocatable.v[res[i]];
        if (alloc == 0)
            continue;
        double f = (double)(n->requested.v[res[i]] + pod->v[res[i]]) / (double)alloc;
        frac[k++] = f > 1 ? 1 : f;
    }
    double std = k == 2 ? fabs((frac[0] - frac[1]) / 2) : 0;
    return (int64_t)((1 - std) * (double)SCHED_MAX_NODE_SCORE);
}

static int64_t balanced_score(void *state, const sched_cycle *c, const sched_node *n) {
    return sched_balanced_allocation_score(&c->pod->requests, n);
}

int sched_score_balanced_allocation(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeResourcesBalancedAllocation",
                          .pref_pre_score = balanced_pre_score,
                          .pref_score = balanced_score,
                          .pref_raw = true,
                          .pref_secondary = true,
                          .pref_weight = 1};
    return 0;
}
