/* report.h: the human-readable table `tarema-profiler group` prints. */
#ifndef TAREMA_PROFILER_REPORT_H
#define TAREMA_PROFILER_REPORT_H

#include <stdio.h>

#include "profiler/grouping.h"

/* Writes k, the silhouette of every k tried, the reason, and one row per group (id, size,
 * cores, centroid per feature, labels) followed by each group's nodes. */
void prof_report_table(FILE *f, const prof_grouping *g, const prof_profile *profiles);

#endif
