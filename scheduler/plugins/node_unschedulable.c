/* node_unschedulable.c: the NodeUnschedulable filter: a cordoned node
 * (spec.unschedulable) takes only pods tolerating node.kubernetes.io/unschedulable:NoSchedule.
 * "node(s) were unschedulable". */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static int unsched_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    const sched_pod *p = c->pod;
    return n->unschedulable &&
                   !sched_match_tolerates_unschedulable(p->tolerations, p->n_tolerations)
               ? 0
               : -1;
}

static void unsched_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                           char *buf, size_t size) {
    snprintf(buf, size, "node(s) were unschedulable");
}

int sched_filter_node_unschedulable(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeUnschedulable",
                          .filter = unsched_filter,
                          .node_reason = unsched_reason,
                          .filter_id = SCHED_FILTER_NODE_UNSCHEDULABLE};
    return 0;
}
