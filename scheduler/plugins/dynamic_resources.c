/* dynamic_resources.c: the DynamicResources filter, refusing. tarema-scheduler does not
 * allocate DRA ResourceClaims (spec.resourceClaims): binding such a pod as if it had none would
 * start it without the devices it asked for, so a pod with claims fits no node and stays Pending,
 * its FailedScheduling event saying why. Pods without claims skip the filter (PreFilter). */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static sched_status dra_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                   tm_err *err) {
    return c->pod->n_resource_claims ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int dra_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return 0; /* run only for a pod with claims: no node will do */
}

static void dra_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                       char *buf, size_t size) {
    snprintf(buf, size,
             "node(s) cannot be used: tarema-scheduler does not allocate DRA resource claims "
             "(spec.resourceClaims; use kube-scheduler for this pod)");
}

int sched_filter_dynamic_resources(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "DynamicResources",
                          .pre_filter = dra_pre_filter,
                          .filter = dra_filter,
                          .node_reason = dra_reason,
                          .filter_id = SCHED_FILTER_DRA};
    return 0;
}
