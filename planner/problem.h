/* problem.h: a planning problem in time slots, the occupancy model, and plans.
 *
 * Time is cut into slots of slot_s seconds from now (WARP: 1 minute). A step lasts exactly
 * ceil(runtime / slot) slots, where the runtime depends on the node group (node type) it runs
 * on: the step's duration, or its own runtime for that group (pl_step.group_s). A gang placed
 * on several groups lasts its slowest group's walltime (its pods start together and the step
 * ends with its last pod). The occupancy model holds, per node and per slot, the
 * free milli-cores and KiB of memory: the node's allocatable minus the busy entries (each
 * holds its node from slot 0 until ceil(until / slot)). Beyond the slots held in memory every
 * node is as free as the busy list leaves it after its last entry, that is entirely free.
 *
 * Pure code: no I/O. */
#ifndef TAREMA_PLANNER_PROBLEM_H
#define TAREMA_PLANNER_PROBLEM_H

#include <stdint.h>

#include "lib/error.h"
#include "planner/cluster.h"
#include "planner/workflow.h"

typedef enum { PL_OBJ_MAKESPAN = 0, PL_OBJ_END } pl_objective;

/* Free capacity of one node in one slot. */
typedef struct pl_cell {
    int32_t cpu; /* milli-cores */
    int32_t mem; /* KiB */
} pl_cell;

/* Per node, slots [0, cap_slots) in memory, node-major so a step's window on one node is
 * contiguous; slots from cap_slots on are the node's full capacity. */
typedef struct pl_occ {
    int nnodes, cap_slots;
    pl_cell *cell; /* [node * cap_slots + slot] */
    pl_cell *full; /* per node */
} pl_occ;

int pl_occ_init(pl_occ *o, const pl_cluster *c, int slots);
int pl_occ_copy(pl_occ *dst, const pl_occ *src);
void pl_occ_free(pl_occ *o);
/* Makes slots [0, slots) addressable; returns -1 when out of memory. */
int pl_occ_ensure(pl_occ *o, int slots);
static inline pl_cell pl_occ_get(const pl_occ *o, int n, int u) {
    return u < o->cap_slots ? o->cell[(size_t)n * (size_t)o->cap_slots + (size_t)u] : o->full[n];
}
/* How many pods of (cpu, mem) fit on node n in every slot of [from, to), at most limit. */
int pl_occ_fits(const pl_occ *o, int n, int from, int to, int32_t cpu, int32_t mem, int limit);
/* Takes count pods of (cpu, mem) from node n over [from, to); free capacity may go negative
 * (the plan checker reports it). Returns -1 when out of memory. */
int pl_occ_take(pl_occ *o, int n, int from, int to, int32_t cpu, int32_t mem, int count);

typedef struct pl_problem {
    const pl_workflow *wf;
    const pl_cluster *cl;
    int64_t slot_s;
    pl_objective objective;
    int *w;             /* walltime in slots per step: the shortest over the groups that fit */
    int ntypes;         /* node groups of the cluster */
    int *wt;            /* [i * ntypes + type]: walltime of step i on that group, in slots */
    int *nws, *ws;      /* step i's distinct walltimes where a pod fits: ws[i * ntypes + k] */
    int32_t *cpu, *mem; /* per pod, milli-cores and KiB (rounded up) */
    int *head;          /* earliest start by the dependencies alone, in slots */
    int *tail;          /* longest path from a step's start to the workflow's end, in slots */
    int *nsucc, **succ; /* successors of each step */
    int release;        /* first slot from which no busy entry holds anything */
    int critical;       /* critical path length in slots: a lower bound on the makespan */
    int work_bound;     /* slots the steps' core- and memory-slots need on the whole cluster */
    int lower;          /* max(critical, work_bound): a lower bound on makespan and end */
    pl_occ base;        /* the busy entries */
} pl_problem;

/* Builds the problem; a step whose gang does not fit the empty cluster is an error naming it. */
int pl_problem_init(pl_problem *p, const pl_workflow *wf, const pl_cluster *cl, const pl_busy *busy,
                    int nbusy, int64_t slot_s, pl_objective obj, tm_err *err);
void pl_problem_free(pl_problem *p);

/* Walltime of step i on node type t in slots: its runtime for that group when it has one,
 * else its duration. */
int pl_step_slots(const pl_problem *p, int i, int type);
/* Walltime of step i with its pods on nodes[0..count): the slowest of their groups. */
int pl_step_slots_on(const pl_problem *p, int i, const int *nodes, int count);
/* The distinct walltimes of step i over the groups where one of its pods fits an empty node,
 * ascending, into out (room for p->ntypes); returns how many. */
int pl_step_walltimes(const pl_problem *p, int i, int *out);
/* Pods of step i an empty node n holds (0 when one pod does not fit), at most its gang size. */
int pl_step_node_cap(const pl_problem *p, int i, int n);

typedef struct pl_plan {
    int nsteps, npods;
    int *start, *end; /* slots, per step */
    int *off;         /* the pods of step i are node[off[i]] .. node[off[i] + pods - 1] */
    int *node;        /* node index of every pod */
} pl_plan;

int pl_plan_init(pl_plan *pl, const pl_problem *p);
int pl_plan_copy(pl_plan *dst, const pl_plan *src);
void pl_plan_free(pl_plan *pl);
int pl_plan_first(const pl_plan *pl);
int pl_plan_last(const pl_plan *pl);
/* The objective in slots: makespan (last end - first start) or last end, whichever the problem
 * minimises, with the other as a tie-break below one slot. Smaller is better. */
double pl_plan_score(const pl_problem *p, const pl_plan *pl);

/* Verifies any plan: every step lasts exactly its walltime on the groups it is placed on
 * (the slowest of them), starts at or after now and after
 * every predecessor's end, has its whole gang on nodes, and no node is over its cores or
 * memory in any slot (busy entries included). Returns 0, or -1 with err naming the step, node
 * and slot. */
int pl_plan_check(const pl_problem *p, const pl_plan *pl, tm_err *err);

#endif
