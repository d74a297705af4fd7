/* nominate.c: the pods nominated by preemption counted in Filter, as kube-scheduler's
 * addNominatedPods counts them: for the pod being filtered, every pod nominated to a node with
 * a priority >= its own (the pod itself excluded) is recorded there for the cycle, its metadata
 * lent by the table (nominated.h) to the snapshot and taken back after Filter. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/nominated.h"
#include "scheduler/framework/framework_internal.h"

/* Whether e counts for p: of p's priority or more, not p, not placed yet, its node there. The
 * node's index in *node. */
static bool counts_for(const sched_snapshot *s, const sched_pod *p, const sched_nominee *e,
                       int *node) {
    if (e->priority < p->priority || strcmp(e->uid, p->uid) == 0 ||
        sched_snapshot_pod_node(s, e->uid))
        return false;
    return (*node = sched_snapshot_node_index(s, e->node)) >= 0;
}

bool fw_nominated_inter(const sched_snapshot *s, const sched_pod *p) {
    sched_nominated *t = sched_snapshot_nominated(s);
    size_t n = sched_nominated_count(t);
    for (size_t i = 0; i < n; i++) {
        const sched_nominee *e = sched_nominated_at(t, i);
        int node;
        if (e->meta && (e->meta->n_anti || e->meta->n_ports) && counts_for(s, p, e, &node))
            return true;
    }
    return false;
}

/* Which nominations lend() takes: all, those on nodes p passed, those on nodes p failed. */
typedef enum { LEND_ALL, LEND_FEASIBLE, LEND_FAILED } lend_which;

static size_t lend(sched_framework *fw, sched_snapshot *s, const sched_pod *p, lend_which which,
                   size_t only) {
    fw->n_lent = 0;
    fw->lent_snap = s;
    sched_nominated *t = sched_snapshot_nominated(s);
    size_t n = sched_nominated_count(t);
    const sched_node *one = only != SIZE_MAX ? sched_snapshot_node(s, only) : NULL;
    for (size_t i = 0; i < n; i++) {
        sched_nominee *e = sched_nominated_at(t, i);
        int node;
        if (one && strcmp(e->node, one->name) != 0)
            continue; /* one node's: the others are not looked up */
        if (!counts_for(s, p, e, &node))
            continue; /* not counted for p, or already placed, or its node is gone */
        if (which == LEND_FEASIBLE && fw->status[node] != SCHED_FILTER_OK)
            continue; /* p does not fit there even without it */
        if (which == LEND_FAILED &&
            (fw->status[node] == SCHED_FILTER_OK || (only != SIZE_MAX && (size_t)node != only)))
            continue;
        if (fw->n_lent == fw->cap_lent) {
            size_t cap = fw->cap_lent ? 2 * fw->cap_lent : 8;
            sched_nominee **nl = realloc(fw->lent, cap * sizeof *nl);
            if (!nl)
                break; /* out of memory: the rest are not counted this cycle */
            fw->lent = nl;
            fw->cap_lent = cap;
        }
        sched_pod_meta *m = e->meta;
        e->meta = NULL; /* lent: the snapshot owns it until taken back */
        tm_err err;
        if (sched_snapshot_add_pod_meta(s, e->uid, e->node, &e->requests, m, &err) != 0 &&
            !sched_snapshot_pod_node(s, e->uid))
            continue; /* not recorded (out of memory): its metadata is lost, it counts no more */
        fw->lent[fw->n_lent++] = e;
    }
    return fw->n_lent;
}

size_t fw_nominated_lend(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    return lend(fw, s, p, LEND_ALL, SIZE_MAX);
}

size_t fw_nominated_lend_feasible(sched_framework *fw, sched_snapshot *s, const sched_pod *p) {
    return lend(fw, s, p, LEND_FEASIBLE, SIZE_MAX);
}

size_t fw_nominated_lend_failed(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                size_t only) {
    return lend(fw, s, p, LEND_FAILED, only);
}

void fw_nominated_take_back(sched_framework *fw) {
    for (size_t i = 0; i < fw->n_lent; i++) {
        sched_nominee *e = fw->lent[i];
        sched_snapshot_take_pod(fw->lent_snap, e->uid, NULL, &e->meta);
    }
    fw->n_lent = 0;
}
