/* problem.c: the occupancy model, problem set-up and the plan checker (problem.h). */
#include "planner/problem.h"

#include "lib/quantity.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int32_t clamp32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

int pl_occ_init(pl_occ *o, const pl_cluster *c, int slots) {
    memset(o, 0, sizeof *o);
    o->nnodes = c->nnodes;
    if (!(o->full = calloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof *o->full)))
        return -1;
    for (int n = 0; n < c->nnodes; n++) {
        o->full[n].cpu = clamp32(c->nodes[n].cpu_milli);
        o->full[n].mem = clamp32(c->nodes[n].mem_bytes / 1024); /* capacity rounds down */
    }
    return pl_occ_ensure(o, slots);
}

void pl_occ_free(pl_occ *o) {
    free(o->cell);
    free(o->full);
    memset(o, 0, sizeof *o);
}

int pl_occ_copy(pl_occ *dst, const pl_occ *src) {
    memset(dst, 0, sizeof *dst);
    size_t cells = (size_t)src->nnodes * (size_t)src->cap_slots;
    dst->nnodes = src->nnodes;
    dst->cap_slots = src->cap_slots;
    dst->full = malloc((size_t)(src->nnodes ? src->nnodes : 1) * sizeof *dst->full);
    dst->cell = malloc((cells ? cells : 1) * sizeof *dst->cell);
    if (!dst->full || !dst->cell) {
        pl_occ_free(dst);
        return -1;
    }
    memcpy(dst->full, src->full, (size_t)src->nnodes * sizeof *dst->full);
    memcpy(dst->cell, src->cell, cells * sizeof *dst->cell);
    return 0;
}

int pl_occ_ensure(pl_occ *o, int slots) {
    if (slots <= o->cap_slots)
        return 0;
    int cap = o->cap_slots ? o->cap_slots : 64;
    while (cap < slots)
        cap *= 2;
    pl_cell *cell = malloc((size_t)o->nnodes * (size_t)cap * sizeof *cell + 1);
    if (!cell)
        return -1;
    for (int n = 0; n < o->nnodes; n++) {
        pl_cell *row = cell + (size_t)n * (size_t)cap;
        if (o->cap_slots)
            memcpy(row, o->cell + (size_t)n * (size_t)o->cap_slots,
                   (size_t)o->cap_slots * sizeof *row);
        for (int u = o->cap_slots; u < cap; u++)
            row[u] = o->full[n];
    }
    free(o->cell);
    o->cell = cell;
    o->cap_slots = cap;
    return 0;
}

int pl_occ_fits(const pl_occ *o, int n, int from, int to, int32_t cpu, int32_t mem, int limit) {
    int k = limit;
    for (int u = from; u < to && k > 0; u++) {
        pl_cell c = pl_occ_get(o, n, u);
        int kc = c.cpu <= 0 ? 0 : cpu > 0 ? c.cpu / cpu : limit;
        int km = c.mem <= 0 ? (mem > 0 ? 0 : limit) : mem > 0 ? c.mem / mem : limit;
        if (kc < k)
            k = kc;
        if (km < k)
            k = km;
    }
    return k < 0 ? 0 : k;
}

int pl_occ_take(pl_occ *o, int n, int from, int to, int32_t cpu, int32_t mem, int count) {
    if (pl_occ_ensure(o, to) < 0)
        return -1;
    pl_cell *row = o->cell + (size_t)n * (size_t)o->cap_slots;
    for (int u = from; u < to; u++) {
        row[u].cpu = clamp32((int64_t)row[u].cpu - (int64_t)cpu * count);
        row[u].mem = clamp32((int64_t)row[u].mem - (int64_t)mem * count);
    }
    return 0;
}

int pl_step_slots(const pl_problem *p, int i, int type) {
    return p->wt && type >= 0 && type < p->ntypes ? p->wt[(size_t)i * p->ntypes + type] : p->w[i];
}

int pl_step_slots_on(const pl_problem *p, int i, const int *nodes, int count) {
    int w = 0;
    for (int k = 0; k < count; k++) {
        int wk = pl_step_slots(p, i, p->cl->nodes[nodes[k]].type);
        if (wk > w)
            w = wk;
    }
    return count ? w : p->w[i];
}

int pl_step_walltimes(const pl_problem *p, int i, int *out) {
    memcpy(out, p->ws + (size_t)i * p->ntypes, (size_t)p->nws[i] * sizeof *out);
    return p->nws[i];
}

/* Fills nws[i] and ws[i * ntypes ..]: the distinct walltimes over the groups where one pod of
 * step i fits an empty node, ascending. */
static void step_walltimes(pl_problem *p, int i) {
    int *out = p->ws + (size_t)i * p->ntypes, n = 0;
    for (int t = 0; t < p->ntypes; t++) {
        int fits = 0;
        for (int nd = 0; nd < p->cl->nnodes && !fits; nd++)
            fits = p->cl->nodes[nd].type == t && pl_step_node_cap(p, i, nd) > 0;
        if (!fits)
            continue;
        int w = p->wt[(size_t)i * p->ntypes + t], k = n;
        for (int j = 0; j < n; j++)
            if (out[j] == w)
                k = -1;
        if (k < 0)
            continue;
        while (k > 0 && out[k - 1] > w) { /* insertion keeps them ascending */
            out[k] = out[k - 1];
            k--;
        }
        out[k] = w;
        n++;
    }
    p->nws[i] = n;
}

int pl_step_node_cap(const pl_problem *p, int i, int n) {
    return pl_occ_fits(&p->base, n, INT_MAX - 1, INT_MAX, p->cpu[i], p->mem[i],
                       p->wf->steps[i].pods); /* a slot past every busy entry: the full node */
}

void pl_problem_free(pl_problem *p) {
    free(p->w);
    free(p->wt);
    free(p->nws);
    free(p->ws);
    free(p->cpu);
    free(p->mem);
    free(p->head);
    free(p->tail);
    if (p->succ)
        for (int i = 0; i < p->wf->nsteps; i++)
            free(p->succ[i]);
    free(p->succ);
    free(p->nsucc);
    pl_occ_free(&p->base);
    memset(p, 0, sizeof *p);
}

int pl_problem_init(pl_problem *p, const pl_workflow *wf, const pl_cluster *cl, const pl_busy *busy,
                    int nbusy, int64_t slot_s, pl_objective obj, tm_err *err) {
    memset(p, 0, sizeof *p);
    p->wf = wf;
    p->cl = cl;
    p->slot_s = slot_s;
    p->objective = obj;
    if (slot_s <= 0)
        return tm_err_set(err, "slot: must be at least 1 s");
    size_t n = (size_t)wf->nsteps;
    p->w = calloc(n, sizeof *p->w);
    p->cpu = calloc(n, sizeof *p->cpu);
    p->mem = calloc(n, sizeof *p->mem);
    p->head = calloc(n, sizeof *p->head);
    p->tail = calloc(n, sizeof *p->tail);
    p->nsucc = calloc(n, sizeof *p->nsucc);
    p->succ = calloc(n, sizeof *p->succ);
    p->ntypes = cl->ntypes;
    p->wt = calloc(n * (size_t)(cl->ntypes ? cl->ntypes : 1), sizeof *p->wt);
    p->nws = calloc(n, sizeof *p->nws);
    p->ws = calloc(n * (size_t)(cl->ntypes ? cl->ntypes : 1), sizeof *p->ws);
    if (!p->w || !p->wt || !p->nws || !p->ws || !p->cpu || !p->mem || !p->head || !p->tail ||
        !p->nsucc || !p->succ)
        goto oom;
    int64_t release_s = 0;
    for (int b = 0; b < nbusy; b++)
        if (busy[b].until_s > release_s)
            release_s = busy[b].until_s;
    int64_t release = (release_s + slot_s - 1) / slot_s;
    /* Each node keeps a cell per slot up to the last busy entry: refuse what would take more
     * than ~1 GiB rather than fail somewhere in malloc. */
    if (release * (int64_t)(cl->nnodes ? cl->nnodes : 1) > (int64_t)1 << 27)
        return tm_err_set(err,
                          "busy entries reach %lld slots of %lld s ahead on %d nodes, too many "
                          "to model: use a longer --slot",
                          (long long)release, (long long)slot_s, cl->nnodes);
    p->release = (int)release;
    if (pl_occ_init(&p->base, cl, p->release + 1) < 0)
        goto oom;
    for (int b = 0; b < nbusy; b++) {
        int to = (int)((busy[b].until_s + slot_s - 1) / slot_s);
        int from = (int)(busy[b].from_s > 0 ? busy[b].from_s / slot_s : 0);
        int32_t kib = (int32_t)((busy[b].mem_bytes + 1023) / 1024);
        if (pl_occ_take(&p->base, busy[b].node, from, to, clamp32(busy[b].cpu_milli), kib, 1) < 0)
            goto oom;
    }
    /* A busy entry larger than its node leaves nothing, not less than nothing. */
    for (size_t c = 0; c < (size_t)p->base.nnodes * (size_t)p->base.cap_slots; c++) {
        if (p->base.cell[c].cpu < 0)
            p->base.cell[c].cpu = 0;
        if (p->base.cell[c].mem < 0)
            p->base.cell[c].mem = 0;
    }
    for (int i = 0; i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        if (s->task[0] && s->duration_s <= 0)
            return tm_err_set(err,
                              "step '%s': task: a runtime predicted from history needs a "
                              "TaskProfile of %s with a mean runtime, and there is none (offline: "
                              "--profiles FILE; or give duration:)",
                              s->name, s->task);
        int64_t w = (s->duration_s + slot_s - 1) / slot_s;
        if (w > 1000000)
            return tm_err_set(err,
                              "step '%s': duration %lld s is more than a million slots of "
                              "%lld s; use a longer --slot",
                              s->name, (long long)s->duration_s, (long long)slot_s);
        p->w[i] = (int)(w < 1 ? 1 : w);
        p->cpu[i] = clamp32(s->cpu_milli);
        p->mem[i] = clamp32((s->mem_bytes + 1023) / 1024);
        long room = 0;
        for (int nd = 0; nd < cl->nnodes && room < s->pods; nd++)
            room += pl_step_node_cap(p, i, nd);
        if (room < s->pods) {
            char cpu[TM_QUANTITY_BUF], mem[TM_QUANTITY_BUF];
            return tm_err_set(err,
                              "step '%s' is larger than the cluster: %d pods of cpu %s and "
                              "memory %s, only %ld fit at a time on the empty cluster",
                              s->name, s->pods,
                              tm_quantity_format_milli(s->cpu_milli, cpu, sizeof cpu),
                              tm_quantity_format_bytes(s->mem_bytes, mem, sizeof mem), room);
        }
        /* per group: its own runtime where the step has one, else the duration; w[i] becomes
         * the shortest over the groups that fit, so head, tail and the bounds stay lower bounds */
        int wmin = 0;
        for (int t = 0; t < cl->ntypes; t++) {
            int64_t wt = p->w[i];
            for (int g = 0; g < s->ngroup_s; g++)
                if (!strcmp(s->group_s[g].group, cl->type_names[t]) && s->group_s[g].seconds > 0)
                    wt = (s->group_s[g].seconds + slot_s - 1) / slot_s;
            if (wt > 1000000)
                return tm_err_set(err,
                                  "step '%s': runtime on group %s is more than a million slots "
                                  "of %lld s; use a longer --slot",
                                  s->name, cl->type_names[t], (long long)slot_s);
            p->wt[(size_t)i * cl->ntypes + t] = (int)(wt < 1 ? 1 : wt);
        }
        for (int nd = 0; nd < cl->nnodes; nd++) {
            int wt = p->wt[(size_t)i * cl->ntypes + cl->nodes[nd].type];
            if (pl_step_node_cap(p, i, nd) > 0 && (!wmin || wt < wmin))
                wmin = wt;
        }
        if (wmin)
            p->w[i] = wmin;
        step_walltimes(p, i);
        for (int k = 0; k < s->nafter; k++)
            p->nsucc[s->after[k]]++;
    }
    for (int i = 0; i < wf->nsteps; i++) {
        if (p->nsucc[i] && !(p->succ[i] = calloc((size_t)p->nsucc[i], sizeof *p->succ[i])))
            goto oom;
        p->nsucc[i] = 0;
    }
    for (int i = 0; i < wf->nsteps; i++)
        for (int k = 0; k < wf->steps[i].nafter; k++) {
            int a = wf->steps[i].after[k];
            p->succ[a][p->nsucc[a]++] = i;
        }
    for (int oi = 0; oi < wf->nsteps; oi++) {
        int i = wf->order[oi];
        /* a release date (not_before_s), rounded up to a slot so the step never starts early */
        int64_t nb = (wf->steps[i].not_before_s + slot_s - 1) / slot_s;
        if (nb > 1000000)
            return tm_err_set(err, "step '%s': not before %lld s is too far ahead",
                              wf->steps[i].name, (long long)wf->steps[i].not_before_s);
        if (nb > p->head[i])
            p->head[i] = (int)nb;
        /* a plan moved to start at the release slot must still respect every release date */
        if (nb > p->release)
            p->release = (int)nb;
        for (int k = 0; k < wf->steps[i].nafter; k++) {
            int a = wf->steps[i].after[k];
            if (p->head[a] + p->w[a] > p->head[i])
                p->head[i] = p->head[a] + p->w[a];
        }
    }
    for (int oi = wf->nsteps - 1; oi >= 0; oi--) {
        int i = wf->order[oi];
        int best = 0;
        for (int k = 0; k < p->nsucc[i]; k++)
            if (p->tail[p->succ[i][k]] > best)
                best = p->tail[p->succ[i][k]];
        p->tail[i] = p->w[i] + best;
        if (p->head[i] + p->tail[i] > p->critical)
            p->critical = p->head[i] + p->tail[i];
    }
    /* Work bound: all pods' core-slots (memory-slots) fit in the cluster's cores (memory) per
     * slot at best, whatever the placement; busy entries only lower what is there. */
    double wcpu = 0, wmem = 0, ccpu = 0, cmem = 0;
    for (int i = 0; i < wf->nsteps; i++) {
        wcpu += (double)wf->steps[i].pods * p->cpu[i] * p->w[i];
        wmem += (double)wf->steps[i].pods * p->mem[i] * p->w[i];
    }
    for (int nd = 0; nd < cl->nnodes; nd++) {
        ccpu += p->base.full[nd].cpu;
        cmem += p->base.full[nd].mem;
    }
    double wb = wcpu / ccpu > wmem / cmem ? wcpu / ccpu : wmem / cmem;
    p->work_bound = (int)ceil(wb - 1e-9);
    p->lower = p->critical > p->work_bound ? p->critical : p->work_bound;
    return 0;
oom:
    return tm_err_set(err, "planner: out of memory");
}

int pl_plan_init(pl_plan *pl, const pl_problem *p) {
    memset(pl, 0, sizeof *pl);
    size_t n = (size_t)p->wf->nsteps;
    pl->nsteps = (int)n;
    pl->start = calloc(n, sizeof *pl->start);
    pl->end = calloc(n, sizeof *pl->end);
    pl->off = calloc(n + 1, sizeof *pl->off);
    for (size_t i = 0; pl->off && i < n; i++)
        pl->off[i + 1] = pl->off[i] + p->wf->steps[i].pods;
    pl->npods = pl->off ? pl->off[n] : 0;
    pl->node = calloc((size_t)(pl->npods ? pl->npods : 1), sizeof *pl->node);
    if (!pl->start || !pl->end || !pl->off || !pl->node) {
        pl_plan_free(pl);
        return -1;
    }
    return 0;
}

int pl_plan_copy(pl_plan *dst, const pl_plan *src) {
    memset(dst, 0, sizeof *dst);
    size_t n = (size_t)src->nsteps;
    dst->nsteps = src->nsteps;
    dst->npods = src->npods;
    dst->start = malloc(n * sizeof *dst->start);
    dst->end = malloc(n * sizeof *dst->end);
    dst->off = malloc((n + 1) * sizeof *dst->off);
    dst->node = malloc((size_t)(src->npods ? src->npods : 1) * sizeof *dst->node);
    if (!dst->start || !dst->end || !dst->off || !dst->node) {
        pl_plan_free(dst);
        return -1;
    }
    memcpy(dst->start, src->start, n * sizeof *dst->start);
    memcpy(dst->end, src->end, n * sizeof *dst->end);
    memcpy(dst->off, src->off, (n + 1) * sizeof *dst->off);
    memcpy(dst->node, src->node, (size_t)src->npods * sizeof *dst->node);
    return 0;
}

void pl_plan_free(pl_plan *pl) {
    free(pl->start);
    free(pl->end);
    free(pl->off);
    free(pl->node);
    memset(pl, 0, sizeof *pl);
}

int pl_plan_first(const pl_plan *pl) {
    int f = INT_MAX;
    for (int i = 0; i < pl->nsteps; i++)
        if (pl->start[i] < f)
            f = pl->start[i];
    return pl->nsteps ? f : 0;
}

int pl_plan_last(const pl_plan *pl) {
    int l = 0;
    for (int i = 0; i < pl->nsteps; i++)
        if (pl->end[i] > l)
            l = pl->end[i];
    return l;
}

double pl_plan_score(const pl_problem *p, const pl_plan *pl) {
    double span = pl_plan_last(pl) - pl_plan_first(pl), end = pl_plan_last(pl);
    /* the tie-break stays below one slot for any horizon under a million slots */
    return p->objective == PL_OBJ_MAKESPAN ? span + end * 1e-7 : end + span * 1e-7;
}

int pl_plan_check(const pl_problem *p, const pl_plan *pl, tm_err *err) {
    const pl_workflow *wf = p->wf;
    if (pl->nsteps != wf->nsteps)
        return tm_err_set(err, "plan has %d steps, the workflow %d", pl->nsteps, wf->nsteps);
    for (int i = 0; i < wf->nsteps; i++) {
        const char *nm = wf->steps[i].name;
        if (pl->start[i] < 0)
            return tm_err_set(err, "step %s starts before now (slot %d)", nm, pl->start[i]);
        if ((int64_t)pl->start[i] * p->slot_s < wf->steps[i].not_before_s)
            return tm_err_set(err, "step %s starts at slot %d, before its release at %lld s", nm,
                              pl->start[i], (long long)wf->steps[i].not_before_s);
        if (pl->off[i + 1] - pl->off[i] != wf->steps[i].pods)
            return tm_err_set(err, "step %s has %d pods placed, its gang is %d", nm,
                              pl->off[i + 1] - pl->off[i], wf->steps[i].pods);
        int slowest = -1;
        for (int k = pl->off[i]; k < pl->off[i + 1]; k++) {
            int n = pl->node[k];
            if (n < 0 || n >= p->cl->nnodes)
                return tm_err_set(err, "step %s: pod %d has no node", nm, k - pl->off[i]);
            if (slowest < 0 || pl_step_slots(p, i, p->cl->nodes[n].type) >
                                   pl_step_slots(p, i, p->cl->nodes[slowest].type))
                slowest = n;
        }
        int w = pl_step_slots_on(p, i, pl->node + pl->off[i], pl->off[i + 1] - pl->off[i]);
        if (slowest >= 0 && pl->end[i] - pl->start[i] != w)
            return tm_err_set(err, "step %s lasts %d slots on %s, its walltime is %d", nm,
                              pl->end[i] - pl->start[i], p->cl->nodes[slowest].name, w);
        for (int k = 0; k < wf->steps[i].nafter; k++) {
            int a = wf->steps[i].after[k];
            if (pl->start[i] < pl->end[a])
                return tm_err_set(err, "step %s starts at slot %d before %s ends at slot %d", nm,
                                  pl->start[i], wf->steps[a].name, pl->end[a]);
        }
    }
    pl_occ occ;
    if (pl_occ_copy(&occ, &p->base) < 0)
        return tm_err_set(err, "plan check: out of memory");
    int rc = 0;
    for (int i = 0; i < wf->nsteps && rc == 0; i++)
        for (int k = pl->off[i]; k < pl->off[i + 1] && rc == 0; k++)
            if (pl_occ_take(&occ, pl->node[k], pl->start[i], pl->end[i], p->cpu[i], p->mem[i], 1) <
                0)
                rc = tm_err_set(err, "plan check: out of memory");
    for (int n = 0; n < occ.nnodes && rc == 0; n++)
        for (int u = 0; u < occ.cap_slots && rc == 0; u++) {
            pl_cell c = pl_occ_get(&occ, n, u);
            if (c.cpu < 0 || c.mem < 0)
                rc = tm_err_set(err, "node %s is over its %s in slot %d (%d %s short)",
                                p->cl->nodes[n].name, c.cpu < 0 ? "cores" : "memory", u,
                                c.cpu < 0 ? -c.cpu : -c.mem, c.cpu < 0 ? "milli-cores" : "KiB");
        }
    pl_occ_free(&occ);
    return rc;
}
