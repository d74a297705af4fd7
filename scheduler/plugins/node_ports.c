/* node_ports.c: the NodePorts filter: a pod's host ports must be free on the node.
 *
 * As kube-scheduler's nodeports plugin: the ports of the regular containers and of sidecar
 * (restartPolicy: Always) init containers count, both for the incoming pod and for the pods on
 * the node; a port conflicts with a used one of the same protocol and number when the host IPs
 * are equal or either is 0.0.0.0. The PreFilter step walks only the placed pods that hold host
 * ports (a snapshot set), marking the nodes with a conflict, so the per-node check is one byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/filters.h"

struct sched_nodeports_state {
    uint8_t *conflict; /* per node index: 1 when a placed pod holds a wanted port */
    size_t n, cap;
};

sched_nodeports_state *sched_nodeports_state_new(void) {
    return calloc(1, sizeof(sched_nodeports_state));
}

void sched_nodeports_state_free(sched_nodeports_state *st) {
    if (!st)
        return;
    free(st->conflict);
    free(st);
}

static bool pod_conflicts(const sched_pod *p, const sched_pod_meta *m) {
    for (size_t i = 0; i < p->n_host_ports; i++)
        for (size_t k = 0; k < m->n_ports; k++)
            if (sched_host_port_conflict(&p->host_ports[i], &m->ports[k]))
                return true;
    return false;
}

int sched_nodeports_prefilter(sched_nodeports_state *st, const sched_snapshot *s,
                              const sched_pod *p, bool *active, tm_err *err) {
    *active = false;
    st->n = 0;
    if (!p->n_host_ports)
        return 0;
    size_t nn = sched_snapshot_node_count(s);
    if (nn > st->cap) {
        uint8_t *c = realloc(st->conflict, nn);
        if (!c)
            return tm_err_set(err, "out of memory for the host ports of %zu nodes", nn);
        st->conflict = c;
        st->cap = nn;
    }
    if (nn)
        memset(st->conflict, 0, nn);
    st->n = nn;
    size_t np = sched_snapshot_podset_count(s, SCHED_PODSET_PORTS);
    for (size_t i = 0; i < np; i++) {
        const char *uid;
        int node;
        const sched_pod_meta *m = sched_snapshot_podset_pod(s, SCHED_PODSET_PORTS, i, &uid, &node);
        if (node < 0 || st->conflict[node] || strcmp(uid, p->uid) == 0)
            continue; /* the pod itself (explained after binding) holds nothing against itself */
        if (pod_conflicts(p, m))
            st->conflict[node] = 1;
    }
    *active = true;
    return 0;
}

bool sched_nodeports_fits(const sched_nodeports_state *st, size_t node) {
    return node >= st->n || !st->conflict[node];
}

/* ---- the plugin ---- */

static sched_status ports_pre_filter(void *state, const sched_cycle *c, uint32_t *detail,
                                     tm_err *err) {
    bool active = false;
    if (sched_nodeports_prefilter(state, c->snap, c->pod, &active, err) != 0)
        return SCHED_STATUS_ERROR;
    return active ? SCHED_STATUS_OK : SCHED_STATUS_SKIP;
}

static int ports_filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    return sched_nodeports_fits(state, node) ? -1 : 0;
}

static void ports_reason(void *state, const sched_cycle *c, const sched_node *n, uint32_t detail,
                         char *buf, size_t size) {
    snprintf(buf, size, "node(s) didn't have free ports for the requested pod ports");
}

static void ports_free(void *state) {
    sched_nodeports_state_free(state);
}

int sched_filter_node_ports(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "NodePorts",
                          .pre_filter = ports_pre_filter,
                          .filter = ports_filter,
                          .node_reason = ports_reason,
                          .free_state = ports_free,
                          .filter_id = SCHED_FILTER_NODE_PORTS};
    return with_state && !(out->state = sched_nodeports_state_new()) ? -1 : 0;
}
