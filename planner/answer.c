/* answer.c: JSON and table views of a plan (answer.h). */
#include "planner/answer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ilp_status_name(pl_ilp_status s) {
    switch (s) {
    case PL_ILP_OPTIMAL:
        return "optimal";
    case PL_ILP_FEASIBLE:
        return "feasible";
    case PL_ILP_TOO_LARGE:
        return "too-large";
    default:
        return "no-plan";
    }
}

static double objective_slots(const pl_problem *p, const pl_plan *pl) {
    int last = pl_plan_last(pl);
    return p->objective == PL_OBJ_MAKESPAN ? last - pl_plan_first(pl) : last;
}

json_t *pl_answer_json(const pl_problem *p, const pl_plan *pl, const pl_outcome *o) {
    long long slot = p->slot_s;
    double obj = objective_slots(p, pl);
    json_t *steps = json_array();
    for (int i = 0; i < pl->nsteps; i++) {
        json_t *nodes = json_array();
        for (int k = pl->off[i]; k < pl->off[i + 1]; k++)
            json_array_append_new(nodes, json_string(p->cl->nodes[pl->node[k]].name));
        json_array_append_new(steps,
                              json_pack("{s:s, s:I, s:I, s:o}", "name", p->wf->steps[i].name,
                                        "start_s", (json_int_t)(pl->start[i] * slot), "end_s",
                                        (json_int_t)(pl->end[i] * slot), "nodes", nodes));
    }
    json_t *j = json_pack("{s:s, s:s, s:b, s:s, s:I, s:s, s:f, s:I, s:I, s:I, s:I, s:f, s:o}",
                          "workflow", p->wf->name, "solver", o->solver, "optimal", o->optimal,
                          "objective", p->objective == PL_OBJ_MAKESPAN ? "makespan" : "end",
                          "bound_s", (json_int_t)(o->bound * slot), "bound_from", o->bound_from,
                          "gap_pct", obj > 0 ? 100.0 * (obj - o->bound) / obj : 0.0, "makespan_s",
                          (json_int_t)((pl_plan_last(pl) - pl_plan_first(pl)) * slot), "end_s",
                          (json_int_t)(pl_plan_last(pl) * slot), "first_start_s",
                          (json_int_t)(pl_plan_first(pl) * slot), "slot_s", (json_int_t)slot,
                          "solve_s", o->seconds, "steps", steps);
    if (j && o->ilp_tried)
        json_object_set_new(
            j, "ilp",
            json_pack("{s:s, s:I, s:I, s:I, s:f}", "status", ilp_status_name(o->ilp.status),
                      "columns", (json_int_t)o->ilp.cols, "rows", (json_int_t)o->ilp.rows,
                      "horizon_s", (json_int_t)(o->ilp.horizon * slot), "seconds", o->ilp.seconds));
    return j;
}

char *pl_format_offset(long long s, char *buf, size_t size) {
    if (s >= 3600)
        snprintf(buf, size, "+%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, size, "+%lld:%02lld", s / 60, s % 60);
    return buf;
}

/* Appends to a growing string; keeps *buf NULL after a failed allocation. */
static void add(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    if (!*buf)
        return;
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return;
        }
        char *g = realloc(*buf, *cap * 2 + (size_t)n);
        if (!g) {
            free(*buf);
            *buf = NULL;
            return;
        }
        *buf = g;
        *cap = *cap * 2 + (size_t)n;
    }
}

char *pl_answer_table(const pl_problem *p, const pl_plan *pl, const pl_outcome *o) {
    size_t len = 0, cap = 1024;
    char *b = malloc(cap), t1[32], t2[32];
    if (!b)
        return NULL;
    b[0] = 0;
    long long slot = p->slot_s;
    for (int oi = 0; oi < pl->nsteps; oi++) {
        int i = p->wf->order[oi];
        add(&b, &len, &cap, "step %s starts at %s on ", p->wf->steps[i].name,
            pl_format_offset(pl->start[i] * slot, t1, sizeof t1));
        for (int k = pl->off[i]; k < pl->off[i + 1];) {
            int run = 1;
            while (k + run < pl->off[i + 1] && pl->node[k + run] == pl->node[k])
                run++;
            add(&b, &len, &cap, "%s%s", k > pl->off[i] ? "," : "", p->cl->nodes[pl->node[k]].name);
            if (run > 1)
                add(&b, &len, &cap, "(%d pods)", run);
            k += run;
        }
        add(&b, &len, &cap, ", ends %s\n", pl_format_offset(pl->end[i] * slot, t2, sizeof t2));
    }
    double obj = objective_slots(p, pl);
    char t3[32], t4[32];
    add(&b, &len, &cap,
        "makespan %s (first start %s, end %s); solver %s, %s; lower bound on the %s %s (%s), "
        "gap %.1f%%\n",
        pl_format_offset((pl_plan_last(pl) - pl_plan_first(pl)) * slot, t1, sizeof t1) + 1,
        pl_format_offset(pl_plan_first(pl) * slot, t2, sizeof t2),
        pl_format_offset(pl_plan_last(pl) * slot, t3, sizeof t3), o->solver,
        o->optimal ? "optimal" : "not proven optimal",
        p->objective == PL_OBJ_MAKESPAN ? "makespan" : "end",
        pl_format_offset(o->bound * slot, t4, sizeof t4) + 1, o->bound_from,
        obj > 0 ? 100.0 * (obj - o->bound) / obj : 0.0);
    return b;
}
