/* namecount.c: a counted set of names (namecount.h): open addressing, name -> count; an entry
 * whose count drops to 0 stays (the names it holds, image names of a cluster, are few and
 * recur). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/namecount.h"

typedef struct name_ent {
    char *name; /* NULL: empty slot */
    uint64_t hash;
    size_t count;
} name_ent;

struct sched_namecount {
    name_ent *e;
    size_t cap, used, live; /* live: entries with count > 0 */
};

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static name_ent *find(const sched_namecount *t, const char *name, uint64_t h) {
    if (!t || !t->cap)
        return NULL;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        name_ent *e = &t->e[i];
        if (!e->name)
            return e;
        if (e->hash == h && strcmp(e->name, name) == 0)
            return e;
    }
}

static int grow(sched_namecount *t) {
    size_t ncap = t->cap ? t->cap * 2 : 64;
    name_ent *ne = calloc(ncap, sizeof *ne);
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
static int add_one(sched_namecount *t, const char *name) {
    uint64_t h = name_hash(name);
    name_ent *e = find(t, name, h);
    if (!e || !e->name) {
        if ((t->used + 1) * 4 > t->cap * 3 && grow(t) != 0)
            return -1;
        e = find(t, name, h);
        if (!(e->name = strdup(name)))
            return -1;
        e->hash = h;
        e->count = 0;
        t->used++;
    }
    t->live += e->count++ == 0;
    return 0;
}

static void drop_one(sched_namecount *t, const char *name) {
    name_ent *e = find(t, name, name_hash(name));
    if (e && e->name && e->count)
        t->live -= --e->count == 0;
}

int sched_namecount_add(sched_namecount **t, const char *name) {
    if (!*t && !(*t = calloc(1, sizeof **t)))
        return -1;
    return add_one(*t, name);
}

void sched_namecount_drop(sched_namecount *t, const char *name) {
    drop_one(t, name);
}

size_t sched_namecount_get(const sched_namecount *t, const char *name) {
    const name_ent *e = find(t, name, name_hash(name));
    return e && e->name ? e->count : 0;
}

size_t sched_namecount_live(const sched_namecount *t) {
    return t ? t->live : 0;
}

void sched_namecount_free(sched_namecount *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        free(t->e[i].name);
    free(t->e);
    free(t);
}
