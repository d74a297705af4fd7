/* node_affinity.c: the NodeAffinity filter: spec.nodeSelector and the required
 * node affinity terms (one must match). "node(s) didn't match Pod's node affinity/selector". */
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

int sched_filter_node_affinity(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeAffinity",
                          .filter = affinity_filter,
                          .node_reason = affinity_reason,
                          .filter_id = SCHED_FILTER_NODE_AFFINITY};
    return 0;
}
