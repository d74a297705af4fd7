/* answer.h: the plan as the JSON answer and as a readable table (pure: strings, no I/O).
 *
 * JSON: {"workflow", "solver": "ilp"|"heuristic", "optimal", "objective", "bound_s",
 * "bound_from", "gap_pct", "makespan_s", "end_s", "slot_s", "solve_s", "ilp": {...} when
 * tried, "steps": [{"name", "start_s", "end_s", "nodes": [one node name per pod]}]}; times in
 * seconds from now. */
#ifndef TAREMA_PLANNER_ANSWER_H
#define TAREMA_PLANNER_ANSWER_H

#include <jansson.h>

#include "planner/problem.h"
#include "planner/solve.h"

json_t *pl_answer_json(const pl_problem *p, const pl_plan *pl, const pl_outcome *o);

/* "+15:00" (minutes:seconds) or "+1:05:00" past an hour; buf of at least 32 bytes. */
char *pl_format_offset(long long s, char *buf, size_t size);

/* The table; a malloc'd string (free it), NULL when out of memory. */
char *pl_answer_table(const pl_problem *p, const pl_plan *pl, const pl_outcome *o);

#endif
