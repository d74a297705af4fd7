/* node_ready.c: the NodeReady filter: a node whose Ready condition is not True
 * takes no pods. "node(s) were not ready". */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static int ready_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return n->ready ? -1 : 0;
}

static void ready_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                         char *buf, size_t size) {
    snprintf(buf, size, "node(s) were not ready");
}

int sched_filter_node_ready(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeReady",
                          .filter = ready_filter,
                          .node_reason = ready_reason,
                          .filter_id = SCHED_FILTER_NODE_READY};
    return 0;
}
