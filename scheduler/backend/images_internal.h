/* images_internal.h: the snapshot's image table (images.c), for snapshot.c only: how many
 * nodes report each image name, kept current as nodes come and go, so that ImageLocality
 * reads an image's spread in O(1) instead of walking every node each cycle. */
#ifndef TAREMA_SCHED_IMAGES_INTERNAL_H
#define TAREMA_SCHED_IMAGES_INTERNAL_H

#include <stddef.h>

#include "scheduler/backend/snapshot.h"

typedef struct sched_image_table sched_image_table;

/* Counts node n's image names once more (sign +1) or once less (-1) in *t (created on the
 * first image). 0, or -1 when out of memory adding (then nothing of n is counted). Removing
 * never fails. */
int sched_image_table_count(sched_image_table **t, const sched_node *n, int sign);
size_t sched_image_table_nodes(const sched_image_table *t, const char *name);
size_t sched_image_table_names(const sched_image_table *t); /* names held by >= 1 node */
void sched_image_table_free(sched_image_table *t);

#endif
