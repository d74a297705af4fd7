/* images.c: the images a node holds (status.images, for ImageLocality): one entry per image
 * name, sorted for bsearch, the names packed in one block. The snapshot counts the nodes per
 * name (namecount.h). */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/snapshot.h"

static int image_cmp(const void *a, const void *b) {
    return strcmp(((const sched_node_image *)a)->name, ((const sched_node_image *)b)->name);
}

int sched_node_set_images(sched_node *n, const char *const *names, const int64_t *sizes, size_t k) {
    free(n->images);
    free(n->image_block);
    n->images = NULL;
    n->image_block = NULL;
    n->n_images = 0;
    if (!k)
        return 0;
    size_t bytes = 0;
    for (size_t i = 0; i < k; i++)
        bytes += strlen(names[i]) + 1;
    sched_node_image *im = malloc(k * sizeof *im);
    char *block = malloc(bytes);
    if (!im || !block) {
        free(im);
        free(block);
        return -1;
    }
    char *at = block;
    for (size_t i = 0; i < k; i++) {
        size_t len = strlen(names[i]) + 1;
        memcpy(at, names[i], len);
        im[i] = (sched_node_image){.name = at, .size = sizes[i]};
        at += len;
    }
    /* stable order for repeated names: keep the first one listed */
    for (size_t i = 1; i < k; i++) /* insertion sort: a node lists tens of names */
        for (size_t j = i; j > 0 && image_cmp(&im[j - 1], &im[j]) > 0; j--) {
            sched_node_image t = im[j - 1];
            im[j - 1] = im[j];
            im[j] = t;
        }
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (!m || strcmp(im[m - 1].name, im[i].name) != 0)
            im[m++] = im[i];
    n->images = im;
    n->image_block = block;
    n->n_images = m;
    return 0;
}

int64_t sched_node_image_size(const sched_node *n, const char *name) {
    if (!n->n_images)
        return -1;
    sched_node_image key = {.name = name};
    const sched_node_image *e = bsearch(&key, n->images, n->n_images, sizeof key, image_cmp);
    return e ? e->size : -1;
}
