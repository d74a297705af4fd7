/* images.c: the images a node holds (status.images, for ImageLocality) and the snapshot's
 * table of how many nodes hold each image name (images_internal.h). A node keeps one entry per
 * image name, sorted for bsearch, the names packed in one block. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/images_internal.h"

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

/* ---- the table: open addressing, name -> nodes; an entry whose count drops to 0 stays (the
 * set of image names in a cluster is small and recurs) ---- */

typedef struct img_ent {
    char *name; /* NULL: empty slot */
    uint64_t hash;
    size_t nodes;
} img_ent;

struct sched_image_table {
    img_ent *e;
    size_t cap, used, live; /* live: entries with nodes > 0 */
};

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static img_ent *find(const sched_image_table *t, const char *name, uint64_t h) {
    if (!t || !t->cap)
        return NULL;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        img_ent *e = &t->e[i];
        if (!e->name)
            return e;
        if (e->hash == h && strcmp(e->name, name) == 0)
            return e;
    }
}

static int grow(sched_image_table *t) {
    size_t ncap = t->cap ? t->cap * 2 : 64;
    img_ent *ne = calloc(ncap, sizeof *ne);
    if (!ne)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].name)
            continue;
        size_t j = t->e[i].hash & (ncap - 1);
        while (ne[j].name)
            j = (j + 1) & (ncap - 1);
        ne[j] = t->e[i];
    }
    free(t->e);
    t->e = ne;
    t->cap = ncap;
    return 0;
}

/* +1 for one name; -1 when out of memory. */
static int add_one(sched_image_table *t, const char *name) {
    uint64_t h = name_hash(name);
    img_ent *e = find(t, name, h);
    if (!e || !e->name) {
        if ((t->used + 1) * 4 > t->cap * 3 && grow(t) != 0)
            return -1;
        e = find(t, name, h);
        if (!(e->name = strdup(name)))
            return -1;
        e->hash = h;
        e->nodes = 0;
        t->used++;
    }
    t->live += e->nodes++ == 0;
    return 0;
}

static void drop_one(sched_image_table *t, const char *name) {
    img_ent *e = find(t, name, name_hash(name));
    if (e && e->name && e->nodes)
        t->live -= --e->nodes == 0;
}

int sched_image_table_count(sched_image_table **t, const sched_node *n, int sign) {
    if (!n->n_images)
        return 0;
    if (sign < 0) {
        for (size_t i = 0; i < n->n_images; i++)
            drop_one(*t, n->images[i].name);
        return 0;
    }
    if (!*t && !(*t = calloc(1, sizeof **t)))
        return -1;
    for (size_t i = 0; i < n->n_images; i++)
        if (add_one(*t, n->images[i].name) != 0) {
            while (i-- > 0) /* all or nothing */
                drop_one(*t, n->images[i].name);
            return -1;
        }
    return 0;
}

size_t sched_image_table_nodes(const sched_image_table *t, const char *name) {
    const img_ent *e = find(t, name, name_hash(name));
    return e && e->name ? e->nodes : 0;
}

size_t sched_image_table_names(const sched_image_table *t) {
    return t ? t->live : 0;
}

void sched_image_table_free(sched_image_table *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].name);
    free(t->e);
    free(t);
}
