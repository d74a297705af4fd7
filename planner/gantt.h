/* gantt.h: a Workflow's plan as an SVG Gantt chart (pure: a string out).
 *
 * One row per node; the x axis runs from the earlier of now and the first step's start to the
 * plan's end. Grey bars: what already holds
 * capacity (pods and other reservations, the planner's busy entries), their height the share
 * of the node's cores they hold; hatched: the other reservations' windows; coloured and
 * labelled: this workflow's steps on their nodes, from status.steps. */
#ifndef TAREMA_PLANNER_GANTT_H
#define TAREMA_PLANNER_GANTT_H

#include <jansson.h>
#include <stdint.h>

#include "planner/cluster.h"

/* busy: the occupancy without this workflow's reservations; resv: the other reservations'
 * busy entries (drawn hatched; may overlap busy). malloc'd string, NULL when out of memory. */
char *pl_gantt_svg(const pl_cluster *c, const pl_busy *busy, int nbusy, const pl_busy *resv,
                   int nresv, const json_t *wfobj, int64_t now);

#endif
