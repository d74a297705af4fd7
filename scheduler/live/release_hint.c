/* release_hint.c: the node-scoped requeue's question (release_hint.h). */
#include "scheduler/live/release_hint.h"

#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/nominated.h"
#include "scheduler/plugins/filters.h"

struct sched_release_hint {
    const sched_snapshot *snap;
    const sched_release *rel;
    size_t n;
    const sched_node **node;    /* per release, NULL: the node is gone */
    const sched_nominee **noms; /* the nominees of the released nodes, grouped by release */
    size_t *from;               /* release i's: noms[from[i] .. from[i + 1]) */
};

sched_release_hint *sched_release_hint_new(const sched_snapshot *s, const sched_release *r,
                                           size_t n) {
    sched_release_hint *h = calloc(1, sizeof *h);
    sched_nominated *t = sched_snapshot_nominated((sched_snapshot *)s);
    size_t nn = t ? sched_nominated_count(t) : 0;
    if (!h || !(h->node = calloc(n ? n : 1, sizeof *h->node)) ||
        !(h->from = calloc(n + 1, sizeof *h->from)) ||
        !(h->noms = malloc((nn ? nn : 1) * sizeof *h->noms))) {
        sched_release_hint_free(h);
        return NULL;
    }
    h->snap = s;
    h->rel = r;
    h->n = n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        h->node[i] = sched_snapshot_node_by_name(s, r[i].node);
        h->from[i] = k;
        for (size_t j = 0; j < nn && k < nn; j++) {
            const sched_nominee *e = sched_nominated_at(t, j);
            if (strcmp(e->node, r[i].node) == 0)
                h->noms[k++] = e;
        }
    }
    h->from[n] = k;
    return h;
}

void sched_release_hint_free(sched_release_hint *h) {
    if (!h)
        return;
    free(h->node);
    free(h->noms);
    free(h->from);
    free(h);
}

/* Whether pod fits on released node i with the pods nominated there that count for it. */
static bool fits_with_nominated(const sched_release_hint *h, size_t i, const sched_pod *pod) {
    if (!h->node[i])
        return false;
    sched_node n = *h->node[i]; /* a shallow copy: only its requested vector changes */
    for (size_t k = h->from[i]; k < h->from[i + 1]; k++) {
        const sched_nominee *e = h->noms[k];
        if (e->priority < pod->priority || strcmp(e->uid, pod->uid) == 0 ||
            sched_snapshot_pod_node(h->snap, e->uid))
            continue;
        for (int r = 0; r < SCHED_RES_MAX; r++)
            n.requested.v[r] += e->requests.v[r];
    }
    return sched_resources_fit(h->snap, pod, &n);
}

bool sched_release_hint_helps(const sched_release_hint *h, const sched_pod *pod) {
    for (size_t i = 0; i < h->n; i++) {
        if (!pod->preempt_never && h->rel[i].prio >= pod->priority)
            return true;
        for (size_t k = h->from[i]; k < h->from[i + 1]; k++)
            if (strcmp(h->noms[k]->uid, pod->uid) == 0)
                return true; /* its own nominated node */
        if (fits_with_nominated(h, i, pod))
            return true;
    }
    return false;
}
