/* scheduler_filter_helpers.h: test helpers shared by the scheduler's inter-pod, spread and
 * node-port filter tests: JSON written with single quotes, snapshots and pods from that JSON, and
 * the list of feasible nodes after a cycle. Header-only, static: each test is one program. */
#ifndef TAREMA_TEST_SCHEDULER_FILTER_HELPERS_H
#define TAREMA_TEST_SCHEDULER_FILTER_HELPERS_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler_cache_helpers.h" /* J() */

/* A pod's JSON text: name (uid name-uid), namespace, labels ("'k':'v',..."), extra spec fields
 * (",'affinity':{...}"). One container requesting 100m cpu. */
static char *podtext(const char *name, const char *ns, const char *labels, const char *spec) {
    static char buf[4096];
    snprintf(buf, sizeof buf,
             "{'metadata':{'name':'%s','namespace':'%s','uid':'%s-uid','labels':{%s}},"
             "'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':'100m'}}}]%s}}",
             name, ns, name, labels, spec);
    return buf;
}

/* A ready node with hostname and (when zone != NULL) zone labels, 4 cpu, 8Gi, 110 pods. */
static void add_node(sched_snapshot *s, const char *name, const char *zone) {
    sched_node *n = sched_node_new(name);
    n->allocatable.v[SCHED_RES_CPU] = 4000;
    n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
    n->allocatable.v[SCHED_RES_PODS] = 110;
    sched_node_set_label(n, "kubernetes.io/hostname", name);
    if (zone)
        sched_node_set_label(n, "topology.kubernetes.io/zone", zone);
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

/* Records a placed pod from JSON text; returns the status. */
static int place(sched_snapshot *s, const char *node, const char *text) {
    json_t *j = J(text);
    tm_err err = {0};
    int rc = j ? sched_snapshot_add_pod_json(s, j, node, &err) : -1;
    if (rc != 0)
        printf("    add_pod_json: %s\n", err.msg);
    json_decref(j);
    return rc;
}

static sched_pod *incoming(sched_snapshot *s, const char *text, tm_err *err) {
    json_t *j = J(text);
    sched_pod *p = j ? sched_pod_from_json(s, j, NULL, err) : NULL;
    json_decref(j);
    return p;
}

/* Schedules p with fw and lists the feasible nodes in name order ("a,b"), or the fit message
 * when none is feasible. Static buffer. */
static const char *feasible(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    static char out[2048];
    sched_decision d;
    tm_err err = {0};
    out[0] = '\0';
    if (!p || sched_framework_schedule(fw, s, p, 0, &d, &err) != 0) {
        snprintf(out, sizeof out, "error: %s", err.msg);
        return out;
    }
    if (d.n_feasible == 0)
        return sched_framework_fit_message(fw, s, out, sizeof out);
    const uint32_t *by = sched_snapshot_by_name(s);
    size_t len = 0;
    for (size_t k = 0; k < sched_snapshot_node_count(s); k++)
        if (sched_framework_node_status(fw, by[k], NULL, NULL) == SCHED_FILTER_OK)
            len += (size_t)snprintf(out + len, sizeof out - len, "%s%s", len ? "," : "",
                                    sched_snapshot_node(s, by[k])->name);
    return out;
}

#endif
