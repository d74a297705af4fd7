/* taint_toleration.c: the TaintToleration filter: every NoSchedule/NoExecute
 * taint of the node must be tolerated (PreferNoSchedule is a preference, not a filter). The
 * detail is the index of the first untolerated taint: "node(s) had untolerated taint {k: v}". */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static int taint_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_match_untolerated_taint(c->pod->tolerations, c->pod->n_tolerations, n);
}

static void taint_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                         char *buf, size_t size) {
    if (n && detail < n->n_taints)
        snprintf(buf, size, "node(s) had untolerated taint {%s: %s}", n->taints[detail].key,
                 n->taints[detail].value);
    else
        snprintf(buf, size, "node(s) had untolerated taint");
}

int sched_filter_taint_toleration(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "TaintToleration",
                          .filter = taint_filter,
                          .node_reason = taint_reason,
                          .filter_id = SCHED_FILTER_TAINT};
    return 0;
}
