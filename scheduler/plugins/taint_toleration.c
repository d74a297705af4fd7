/* taint_toleration.c: the TaintToleration filter: every NoSchedule/NoExecute
 * taint of the node must be tolerated (PreferNoSchedule is a preference, not a filter). The
 * detail is the index of the first untolerated taint: "node(s) had untolerated taint {k: v}".
 * Score, as kube-scheduler's: the number of the node's PreferNoSchedule taints the pod does
 * not tolerate (its tolerations with effect PreferNoSchedule or none), fewer is better
 * (reverse normalisation); PreScore skips the pod when no node of the cluster has such a
 * taint. */
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

static int64_t prefer_untolerated(const sched_pod *p, const sched_node *n) {
    int64_t cnt = 0;
    for (size_t i = 0; i < n->n_taints; i++) {
        if (n->taints[i].effect != SCHED_EFFECT_PREFER_NO_SCHEDULE)
            continue;
        bool ok = false;
        for (size_t k = 0; !ok && k < p->n_tolerations; k++) {
            sched_effect e = p->tolerations[k].effect;
            ok = (e == SCHED_EFFECT_NONE || e == SCHED_EFFECT_PREFER_NO_SCHEDULE) &&
                 sched_toleration_tolerates(&p->tolerations[k], n->taints[i].key,
                                            n->taints[i].value, n->taints[i].effect);
        }
        cnt += !ok;
    }
    return cnt;
}

/* O(1): the snapshot counts the nodes with a PreferNoSchedule taint as they come and go. */
static bool taint_pre_score(void *state, const sched_cycle *c) {
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    return cols.n_prefer_taint > 0;
}

static int64_t taint_score(void *state, const sched_cycle *c, const sched_node *n) {
    return prefer_untolerated(c->pod, n);
}

int sched_filter_taint_toleration(sched_plugin *out, bool with_state) {
    *out = (sched_plugin){.name = "TaintToleration",
                          .filter = taint_filter,
                          .node_reason = taint_reason,
                          .filter_id = SCHED_FILTER_TAINT,
                          .pref_pre_score = taint_pre_score,
                          .pref_score = taint_score,
                          .pref_reverse = true,
                          .pref_weight = 3};
    return 0;
}
