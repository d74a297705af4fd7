/* maintenance.h: maintenance windows of a cluster: merging overlapping ones and masking a
 * cluster out when the job's time frame meets one (the DAM's maintenance mask). Pure. */
#ifndef TAREMA_DAM_MAINTENANCE_H
#define TAREMA_DAM_MAINTENANCE_H

#include <stddef.h>

#include "dam/data.h"

/* Copies the n windows into out (room for n), sorted by start, with overlapping windows merged
 * into one (windows that only touch stay apart). Returns how many windows out holds; *merged
 * (may be NULL) gets how many input windows were folded into another. */
size_t dam_windows_merge(const dam_window *in, size_t n, dam_window *out, size_t *merged);

/* The first of the sorted, merged windows that meets the job's frame [from, to): the cluster is
 * in maintenance at `from` (now) or one starts before the job's expected end `to`. NULL when
 * none does. */
const dam_window *dam_windows_hit(const dam_window *w, size_t n, double from, double to);

#endif
