/* registry.c: the in-tree Filter plugins in kube-scheduler's order and the Score-only ones
 * (sched_in_tree_scores), the framework with them (sched_framework_new), and the filters run on
 * their own, without a framework, for callers that check single nodes (sched_filter_node,
 * sched_prefilter): the fuzzers, the tests. The names, reasons and
 * Unschedulable/UnschedulableAndUnresolvable split of the filter ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/filters.h"
#include "scheduler/plugins/scheduling_gates.h"

/* one per line, in run order (clang-format would pack them into a table) */
/* clang-format off */
const sched_filter_ctor sched_in_tree_filters[] = {
    sched_filter_node_ready,
    sched_filter_node_unschedulable,
    sched_filter_taint_toleration,
    sched_filter_node_affinity,
    sched_filter_node_ports,
    sched_filter_resources_fit,
    sched_filter_volume_restrictions,
    sched_filter_node_volume_limits,
    sched_filter_volume_binding,
    sched_filter_volume_zone,
    sched_filter_topology_spread,
    sched_filter_interpod_affinity,
    sched_filter_dynamic_resources,
    NULL};
/* clang-format on */

#define N_IN_TREE (sizeof sched_in_tree_filters / sizeof *sched_in_tree_filters - 1)

const sched_filter_ctor sched_in_tree_scores[] = {sched_score_balanced_allocation,
                                                  sched_score_image_locality, NULL};

int sched_framework_add_in_tree_filters(sched_framework *fw, tm_err *err) {
    for (size_t k = 0; k < N_IN_TREE; k++) {
        sched_plugin pl;
        if (sched_in_tree_filters[k](&pl, true) != 0)
            return tm_err_set(err, "out of memory creating filter plugin %s", pl.name);
        if (sched_framework_add_plugin(fw, &pl, err) != 0)
            return -1;
    }
    for (size_t k = 0; sched_in_tree_scores[k]; k++) {
        sched_plugin pl;
        if (sched_in_tree_scores[k](&pl, true) != 0)
            return tm_err_set(err, "out of memory creating score plugin %s", pl.name);
        if (sched_framework_add_plugin(fw, &pl, err) != 0)
            return -1;
    }
    return 0;
}

sched_framework *sched_framework_new(const sched_plugin *plugin, tm_err *err) {
    sched_framework *fw = sched_framework_new_empty(plugin, err);
    if (fw && (sched_framework_add_in_tree_filters(fw, err) != 0 ||
               sched_scheduling_gates_plugin_add(fw, err) != 0)) {
        sched_framework_free(fw);
        return NULL;
    }
    return fw;
}

/* ---- names, reasons ---- */

/* The in-tree plugin (stateless) whose rejections carry id; false when none. */
static bool in_tree(sched_filter_id id, sched_plugin *out) {
    for (size_t k = 0; k < N_IN_TREE; k++)
        if (sched_in_tree_filters[k](out, false) == 0 && out->filter_id == id)
            return true;
    return false;
}

bool sched_filter_resolvable(sched_filter_id id, uint32_t detail) {
    switch (id) {
    case SCHED_FILTER_RESOURCES:
    case SCHED_FILTER_NODE_PORTS:
    case SCHED_FILTER_VOLUME_RESTRICTIONS: /* the claim's user may be preempted */
    case SCHED_FILTER_VOLUME_LIMITS:
        return true;
    case SCHED_FILTER_SPREAD:
        return detail == SCHED_SPREAD_SKEW;
    case SCHED_FILTER_INTERPOD:
        return detail != SCHED_INTERPOD_AFFINITY;
    default:
        return false;
    }
}

const char *sched_filter_name(sched_filter_id id) {
    sched_plugin pl;
    return id > 0 && id < SCHED_FILTER_COUNT && in_tree(id, &pl) ? pl.name : "";
}

char *sched_filter_reason(const sched_snapshot *s, const sched_node *n, const sched_pod *p,
                          sched_filter_id id, uint32_t detail, char *buf, size_t size) {
    if (!size)
        return buf;
    buf[0] = '\0';
    sched_plugin pl;
    if (id > 0 && id < SCHED_FILTER_COUNT && in_tree(id, &pl)) {
        sched_cycle c = {.snap = (sched_snapshot *)s, .pod = p};
        pl.node_reason(NULL, &c, n, detail, buf, size);
    }
    return buf;
}

/* ---- the in-tree filters without a framework ---- */

struct sched_prefilter {
    sched_plugin f[N_IN_TREE];
    bool on[N_IN_TREE]; /* the filter runs (its PreFilter did not skip it) */
};

sched_prefilter *sched_prefilter_new(void) {
    sched_prefilter *pf = calloc(1, sizeof *pf);
    for (size_t k = 0; pf && k < N_IN_TREE; k++)
        if (sched_in_tree_filters[k](&pf->f[k], true) != 0) {
            sched_prefilter_free(pf);
            return NULL;
        }
    return pf;
}

void sched_prefilter_free(sched_prefilter *pf) {
    if (!pf)
        return;
    for (size_t k = 0; k < N_IN_TREE; k++)
        if (pf->f[k].free_state && pf->f[k].state)
            pf->f[k].free_state(pf->f[k].state);
    free(pf);
}

int sched_prefilter_compute(sched_prefilter *pf, const sched_snapshot *s, const sched_pod *p,
                            tm_err *err) {
    sched_cycle c = {.snap = (sched_snapshot *)s, .pod = p};
    for (size_t k = 0; k < N_IN_TREE; k++) {
        const sched_plugin *f = &pf->f[k];
        uint32_t d = 0;
        sched_status st = f->pre_filter ? f->pre_filter(f->state, &c, &d, err) : SCHED_STATUS_OK;
        if (st == SCHED_STATUS_ERROR) {
            memset(pf->on, 0, sizeof pf->on);
            return -1;
        }
        pf->on[k] = st == SCHED_STATUS_OK;
    }
    return 0;
}

/* The in-tree filters in order on node index `node` (n); only those in `on`, or, without on,
 * those without a PreFilter (the node-local ones). */
static sched_filter_id chain(const sched_plugin *f, const bool *on, const sched_snapshot *s,
                             const sched_pod *p, size_t node, const sched_node *n,
                             uint32_t *detail) {
    sched_cycle c = {.snap = (sched_snapshot *)s, .pod = p};
    sched_filter_id id = SCHED_FILTER_OK;
    uint32_t d = 0;
    for (size_t k = 0; k < N_IN_TREE; k++) {
        if (on ? !on[k] : f[k].pre_filter != NULL)
            continue;
        int r = f[k].filter(f[k].state, &c, node, n);
        if (r >= 0) {
            id = f[k].filter_id;
            d = (uint32_t)r;
            break;
        }
    }
    if (detail)
        *detail = d;
    return id;
}

sched_filter_id sched_filter_node_pre(const sched_snapshot *s, const sched_pod *p, size_t node,
                                      const sched_prefilter *pf, uint32_t *detail) {
    const sched_node *n = sched_snapshot_node(s, node);
    if (!n) {
        if (detail)
            *detail = 0;
        return SCHED_FILTER_COUNT;
    }
    return chain(pf->f, pf->on, s, p, node, n, detail);
}

/* Whether p needs the cluster-wide state at all (else those filters pass trivially). */
static bool needs_prefilter(const sched_snapshot *s, const sched_pod *p) {
    return p->n_host_ports || p->n_spread || p->n_pod_affinity || p->n_pod_anti_affinity ||
           (p->n_claims && sched_snapshot_volumes(s)) || p->n_resource_claims ||
           sched_snapshot_podset_count(s, SCHED_PODSET_ANTI);
}

sched_filter_id sched_filter_node(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                                  uint32_t *detail) {
    if (!needs_prefilter(s, p)) { /* the node-local filters alone, nothing allocated */
        sched_plugin f[N_IN_TREE];
        for (size_t k = 0; k < N_IN_TREE; k++)
            sched_in_tree_filters[k](&f[k], false);
        return chain(f, NULL, s, p, 0, n, detail);
    }
    sched_prefilter *pf = sched_prefilter_new();
    tm_err err;
    sched_filter_id id = SCHED_FILTER_COUNT;
    if (detail)
        *detail = 0;
    int idx = sched_snapshot_node_index(s, n->name);
    if (pf && sched_prefilter_compute(pf, s, p, &err) == 0)
        id = chain(pf->f, pf->on, s, p, idx >= 0 ? (size_t)idx : SIZE_MAX, n, detail);
    sched_prefilter_free(pf);
    return id;
}
