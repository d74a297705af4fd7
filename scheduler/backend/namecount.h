/* namecount.h: a counted set of names: how many times each name was added and not dropped.
 * The snapshot keeps one for the image names its nodes report (how many nodes hold each), so
 * that ImageLocality reads an image's spread in O(1) instead of walking every node each
 * cycle. Depends on nothing of the scheduler. */
#ifndef TAREMA_SCHED_NAMECOUNT_H
#define TAREMA_SCHED_NAMECOUNT_H

#include <stddef.h>

typedef struct sched_namecount sched_namecount;

/* Counts name once more in *t (created on first use). 0, or -1 when out of memory. */
int sched_namecount_add(sched_namecount **t, const char *name);
/* Counts name once less (nothing when absent or at 0; t may be NULL). */
void sched_namecount_drop(sched_namecount *t, const char *name);
size_t sched_namecount_get(const sched_namecount *t, const char *name); /* 0 when absent */
size_t sched_namecount_live(const sched_namecount *t); /* names counted at least once now */
void sched_namecount_free(sched_namecount *t);

#endif
