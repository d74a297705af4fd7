/* node_resources_fit.c: the NodeResourcesFit filter: every resource the pod requests
 * must fit in the node's allocatable minus what is requested there; every pod takes one pod
 * slot whatever its requests say. The detail is a bit mask of the short slots (1u << slot),
 * one reason each: "Too many pods", "Insufficient cpu", ... in kube-scheduler's order. */
#include <stdio.h>

#include "scheduler/plugins/filters.h"

static int fit_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    uint32_t d = 0;
    int nres = sched_snapshot_resource_count(c->snap); /* slots beyond are never used */
    for (int r = 0; r < nres; r++) {
        int64_t want = c->pod->requests.v[r];
        if (r == SCHED_RES_PODS)
            want = 1; /* every pod takes a slot, whatever its requests say */
        if (want > 0 && want > n->allocatable.v[r] - n->requested.v[r])
            d |= 1u << r;
    }
    return d ? (int)d : -1;
}

static void fit_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                       char *buf, size_t size) {
    size_t len = 0;
    /* kube-scheduler's order: pods, cpu, memory, ephemeral-storage, extended */
    static const int order[] = {SCHED_RES_PODS, SCHED_RES_CPU, SCHED_RES_MEMORY,
                                SCHED_RES_EPHEMERAL};
    for (int i = 0; i < SCHED_RES_MAX && len < size; i++) {
        int r = i < 4 ? order[i] : i;
        if (!(detail & (1u << r)))
            continue;
        const char *name = sched_snapshot_resource_name(c->snap, r);
        int w = r == SCHED_RES_PODS
                    ? snprintf(buf + len, size - len, "%sToo many pods", len ? ", " : "")
                    : snprintf(buf + len, size - len, "%sInsufficient %s", len ? ", " : "",
                               name ? name : "resource");
        len += w > 0 ? (size_t)w : 0;
    }
}

int sched_filter_resources_fit(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodeResourcesFit",
                          .filter = fit_filter,
                          .node_reason = fit_reason,
                          .filter_id = SCHED_FILTER_RESOURCES};
    return 0;
}
