/* nominated.c: the table of pods nominated to nodes by preemption (nominated.h): a dense array
 * searched linearly, since nominations are few (one per preemptor until it lands). */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/nominated.h"

struct sched_nominated {
    sched_nominee *e;
    size_t n, cap;
    sched_nominated_end_fn on_end; /* a hold ended (sched_nominated_on_end) */
    void *on_end_ud;
};

void sched_nominated_on_end(sched_nominated *t, sched_nominated_end_fn fn, void *ud) {
    t->on_end = fn;
    t->on_end_ud = ud;
}

sched_nominated *sched_nominated_new(void) {
    return calloc(1, sizeof(sched_nominated));
}

static void entry_free(sched_nominee *e) {
    free(e->uid);
    free(e->node);
    sched_pod_meta_free(e->meta);
}

void sched_nominated_free(sched_nominated *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        entry_free(&t->e[i]);
    free(t->e);
    free(t);
}

static sched_nominee *find(const sched_nominated *t, const char *uid) {
    for (size_t i = 0; t && uid && i < t->n; i++)
        if (strcmp(t->e[i].uid, uid) == 0)
            return &t->e[i];
    return NULL;
}

int sched_nominated_set(sched_nominated *t, const char *uid, const char *node,
                        const sched_resources *requests, int32_t priority, sched_pod_meta *meta,
                        tm_err *err) {
    if (!uid || !*uid || !node || !*node || !meta) {
        sched_pod_meta_free(meta);
        return tm_err_set(err, "nomination needs a uid, a node and the pod's metadata (uid=%s)",
                          uid ? uid : "(null)");
    }
    char *nn = strdup(node);
    if (!nn) {
        sched_pod_meta_free(meta);
        return tm_err_set(err, "out of memory nominating pod %s", uid);
    }
    sched_nominee *e = find(t, uid);
    if (!e) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 8;
            sched_nominee *ne = realloc(t->e, cap * sizeof *ne);
            if (!ne) {
                free(nn);
                sched_pod_meta_free(meta);
                return tm_err_set(err, "out of memory nominating pod %s", uid);
            }
            t->e = ne;
            t->cap = cap;
        }
        e = &t->e[t->n];
        memset(e, 0, sizeof *e);
        if (!(e->uid = strdup(uid))) {
            free(nn);
            sched_pod_meta_free(meta);
            return tm_err_set(err, "out of memory nominating pod %s", uid);
        }
        t->n++;
    }
    if (e->node && t->on_end && strcmp(e->node, nn) != 0) /* moved: the old node is free */
        t->on_end(t->on_end_ud, e->uid, e->node, e->priority);
    free(e->node);
    sched_pod_meta_free(e->meta);
    e->node = nn;
    e->requests = *requests;
    e->priority = priority;
    e->meta = meta;
    e->meta->priority = priority;
    return 0;
}

int sched_nominated_set_pod(sched_nominated *t, const sched_pod *p, const char *node, tm_err *err) {
    sched_pod_meta *m = sched_pod_meta_of(p); /* the record Reserve would make */
    if (!m)
        return tm_err_set(err, "out of memory nominating pod %s/%s", p->ns, p->name);
    return sched_nominated_set(t, p->uid, node, &p->requests, p->priority, m, err);
}

int sched_nominated_remove(sched_nominated *t, const char *uid) {
    sched_nominee *e = find(t, uid);
    if (!e)
        return -1;
    if (t->on_end && e->node)
        t->on_end(t->on_end_ud, e->uid, e->node, e->priority);
    entry_free(e);
    *e = t->e[--t->n];
    return 0;
}

const char *sched_nominated_node(const sched_nominated *t, const char *uid) {
    const sched_nominee *e = find(t, uid);
    return e ? e->node : NULL;
}

size_t sched_nominated_count(const sched_nominated *t) {
    return t ? t->n : 0;
}

sched_nominee *sched_nominated_at(sched_nominated *t, size_t i) {
    return t && i < t->n ? &t->e[i] : NULL;
}
