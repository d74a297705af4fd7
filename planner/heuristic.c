/* heuristic.c: serial schedule generation with forward-backward improvement (heuristic.h). */
#include "planner/heuristic.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A node takes pods of step i lasting d slots when one pod's walltime there is at most d: a
 * gang lasts its slowest group's walltime, so d bounds the groups it may use. */
static int node_ok(const pl_problem *p, int i, int n, int d) {
    return pl_step_slots(p, i, p->cl->nodes[n].type) <= d;
}

/* Pods of step i that fit over [t, t + d) on nodes allowed for d, stopping once the gang
 * fits. */
static int gang_fits(const pl_problem *p, const pl_occ *o, int i, int t, int d) {
    int need = p->wf->steps[i].pods, got = 0;
    for (int n = 0; n < o->nnodes && got < need; n++)
        if (node_ok(p, i, n, d))
            got += pl_occ_fits(o, n, t, t + d, p->cpu[i], p->mem[i], need - got);
    return got >= need;
}

/* Places step i at t for d slots (gang_fits said yes): the allowed nodes in index order, as
 * many pods on each as fit, so a gang packs onto few nodes. The step then lasts the slowest
 * walltime among the nodes it got (at most d). */
static int place(const pl_problem *p, pl_occ *o, pl_plan *pl, int i, int t, int d) {
    int need = p->wf->steps[i].pods, k = pl->off[i];
    int w;
    for (int n = 0; n < o->nnodes && need > 0; n++) {
        if (!node_ok(p, i, n, d))
            continue;
        int c = pl_occ_fits(o, n, t, t + d, p->cpu[i], p->mem[i], need);
        if (c <= 0)
            continue;
        for (int j = 0; j < c; j++)
            pl->node[k++] = n;
        need -= c;
    }
    if (need > 0)
        return -1;
    w = pl_step_slots_on(p, i, pl->node + pl->off[i], k - pl->off[i]);
    for (int j = pl->off[i]; j < k; j++)
        if (pl_occ_take(o, pl->node[j], t, t + w, p->cpu[i], p->mem[i], 1) < 0)
            return -1;
    pl->start[i] = t;
    pl->end[i] = t + w;
    return 0;
}

/* Earliest end: over the step's candidate walltimes d, the earliest slot >= lo where the gang
 * fits on the nodes allowed for d; the (t, d) that ends first wins, ties to the shorter d.
 * The cluster is free after the last busy entry and the placed steps, so each search ends. */
static int earliest(const pl_problem *p, const pl_occ *o, int i, int lo, const int *ws, int nws,
                    int *d_out) {
    int best_t = -1, best_d = 0;
    for (int k = 0; k < nws; k++) {
        int d = ws[k], room = 0;
        /* a d whose groups cannot hold the gang even when empty never fits: skip it */
        for (int n = 0; n < p->cl->nnodes && room < p->wf->steps[i].pods; n++)
            room += node_ok(p, i, n, d) ? pl_step_node_cap(p, i, n) : 0;
        if (room < p->wf->steps[i].pods)
            continue;
        for (int t = lo; best_t < 0 || t + d < best_t + best_d; t++)
            if (gang_fits(p, o, i, t, d)) {
                best_t = t;
                best_d = d;
                break;
            }
    }
    *d_out = best_d;
    return best_t;
}

/* Latest start t in [lo, end - d] over the candidate walltimes d, or -1. */
static int latest(const pl_problem *p, const pl_occ *o, int i, int lo, int end, const int *ws,
                  int nws, int *d_out) {
    int best_t = -1;
    for (int k = 0; k < nws; k++)
        for (int t = end - ws[k]; t >= lo && t > best_t; t--)
            if (gang_fits(p, o, i, t, ws[k])) {
                best_t = t;
                *d_out = ws[k];
                break;
            }
    return best_t;
}

/* Sorts step indices by key (ascending, or descending with dir < 0), stable: a merge sort,
 * since qsort is neither stable nor able to take the key array without a global. */
static void sort_by(int *idx, int n, const int *key, int dir, int *tmp) {
    if (n < 2)
        return;
    int h = n / 2;
    sort_by(idx, h, key, dir, tmp);
    sort_by(idx + h, n - h, key, dir, tmp);
    int a = 0, b = h, k = 0;
    while (a < h || b < n) {
        int take_a;
        if (a >= h)
            take_a = 0;
        else if (b >= n)
            take_a = 1;
        else
            take_a = dir * (key[idx[a]] - key[idx[b]]) <= 0;
        tmp[k++] = take_a ? idx[a++] : idx[b++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

/* The priority list: repeatedly the eligible step (all predecessors listed) with the longest
 * tail, ties by more work (pods x cpu x slots), then input order. */
static int priority_list(const pl_problem *p, int *list) {
    int n = p->wf->nsteps;
    int *left = calloc((size_t)n, sizeof *left);
    char *done = calloc((size_t)n, 1);
    if (!left || !done) {
        free(left);
        free(done);
        return -1;
    }
    for (int i = 0; i < n; i++)
        left[i] = p->wf->steps[i].nafter;
    for (int k = 0; k < n; k++) {
        int best = -1;
        double bw = 0;
        for (int i = 0; i < n; i++) {
            if (done[i] || left[i])
                continue;
            double work = (double)p->wf->steps[i].pods * p->cpu[i] * p->w[i];
            if (best < 0 || p->tail[i] > p->tail[best] ||
                (p->tail[i] == p->tail[best] && work > bw)) {
                best = i;
                bw = work;
            }
        }
        list[k] = best;
        done[best] = 1;
        for (int j = 0; j < p->nsucc[best]; j++)
            left[p->succ[best][j]]--;
    }
    free(left);
    free(done);
    return 0;
}

/* Forward serial generation in list order (precedence-feasible), no start before lo. */
static int forward(const pl_problem *p, const int *list, int lo, pl_plan *pl) {
    pl_occ o;
    int *ws = malloc((size_t)(p->ntypes ? p->ntypes : 1) * sizeof *ws);
    if (!ws || pl_occ_copy(&o, &p->base) < 0) {
        free(ws);
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < p->wf->nsteps && rc == 0; k++) {
        int i = list[k], t = lo > p->head[i] ? lo : p->head[i], d = 0;
        for (int a = 0; a < p->wf->steps[i].nafter; a++)
            if (pl->end[p->wf->steps[i].after[a]] > t)
                t = pl->end[p->wf->steps[i].after[a]];
        int nws = pl_step_walltimes(p, i, ws);
        t = earliest(p, &o, i, t, ws, nws, &d);
        rc = t < 0 ? -1 : place(p, &o, pl, i, t, d);
    }
    pl_occ_free(&o);
    free(ws);
    return rc;
}

/* Backward pass: in decreasing end order of src, each step as late as its successors (already
 * moved) and src's last end allow. Returns 1 when a step found no slot (the pass is dropped). */
static int backward(const pl_problem *p, const pl_plan *src, pl_plan *pl, int *idx, int *tmp) {
    int n = p->wf->nsteps, last = pl_plan_last(src);
    for (int i = 0; i < n; i++)
        idx[i] = i;
    sort_by(idx, n, src->end, -1, tmp);
    pl_occ o;
    int *ws = malloc((size_t)(p->ntypes ? p->ntypes : 1) * sizeof *ws);
    if (!ws || pl_occ_copy(&o, &p->base) < 0) {
        free(ws);
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < n && rc == 0; k++) {
        int i = idx[k], end = last, d = 0;
        for (int s = 0; s < p->nsucc[i]; s++)
            if (pl->start[p->succ[i][s]] < end)
                end = pl->start[p->succ[i][s]];
        int nws = pl_step_walltimes(p, i, ws);
        int t = latest(p, &o, i, p->head[i], end, ws, nws, &d);
        rc = t < 0 ? 1 : place(p, &o, pl, i, t, d);
    }
    pl_occ_free(&o);
    free(ws);
    return rc;
}

int pl_heuristic(const pl_problem *p, pl_plan *plan, tm_err *err) {
    int n = p->wf->nsteps;
    int *list = calloc((size_t)n, sizeof *list), *tmp = calloc((size_t)n, sizeof *tmp);
    pl_plan back = {0}, fwd = {0};
    int rc = -1;
    if (!list || !tmp || priority_list(p, list) < 0 || pl_plan_init(&back, p) < 0 ||
        pl_plan_init(&fwd, p) < 0 || forward(p, list, 0, plan) < 0)
        goto out;
    for (int round = 0; round < 8; round++) {
        int b = backward(p, plan, &back, list, tmp);
        if (b < 0)
            goto out;
        if (b > 0)
            break;
        /* forward from the backward plan: in increasing start order */
        for (int i = 0; i < n; i++)
            list[i] = i;
        sort_by(list, n, back.start, 1, tmp);
        int lo = p->objective == PL_OBJ_MAKESPAN ? pl_plan_first(&back) : 0;
        if (forward(p, list, lo, &fwd) < 0)
            goto out;
        double best = pl_plan_score(p, plan), sb = pl_plan_score(p, &back),
               sf = pl_plan_score(p, &fwd);
        if (sf <= sb && sf < best - 1e-12) {
            memcpy(plan->start, fwd.start, (size_t)n * sizeof *plan->start);
            memcpy(plan->end, fwd.end, (size_t)n * sizeof *plan->end);
            memcpy(plan->node, fwd.node, (size_t)plan->npods * sizeof *plan->node);
        } else if (sb < best - 1e-12) {
            memcpy(plan->start, back.start, (size_t)n * sizeof *plan->start);
            memcpy(plan->end, back.end, (size_t)n * sizeof *plan->end);
            memcpy(plan->node, back.node, (size_t)plan->npods * sizeof *plan->node);
        } else {
            break;
        }
    }
    rc = 0;
out:
    if (rc < 0)
        tm_err_set(err, "heuristic: out of memory");
    free(list);
    free(tmp);
    pl_plan_free(&back);
    pl_plan_free(&fwd);
    return rc;
}
