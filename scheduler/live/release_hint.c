/* release_hint.c: the node-scoped requeue's question (release_hint.h). */
#include "scheduler/live/release_hint.h"

#include <stdint.h>
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

/* The releases' indices sorted by node name (qsort_r), for the nominees' lookup. */
static int cmp_rel(const void *a, const void *b, void *r) {
    const sched_release *rel = r;
    return strcmp(rel[*(const size_t *)a].node, rel[*(const size_t *)b].node);
}

/* The release of node name among idx[0..n) (sorted by cmp_rel), or SIZE_MAX. */
static size_t find_rel(const sched_release *r, const size_t *idx, size_t n, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r[idx[mid]].node, name);
        if (c == 0)
            return idx[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

sched_release_hint *sched_release_hint_new(const sched_snapshot *s, const sched_release *r,
                                           size_t n) {
    sched_release_hint *h = calloc(1, sizeof *h);
    sched_nominated *t = sched_snapshot_nominated(s);
    size_t nn = t ? sched_nominated_count(t) : 0;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t *at = malloc((nn ? nn : 1) * sizeof *at); /* nominee j's release, or SIZE_MAX */
    if (!h || !idx || !at || !(h->node = calloc(n ? n : 1, sizeof *h->node)) ||
        !(h->from = calloc(n + 1, sizeof *h->from)) ||
        !(h->noms = malloc((nn ? nn : 1) * sizeof *h->noms))) {
        free(idx);
        free(at);
        sched_release_hint_free(h);
        return NULL;
    }
    h->snap = s;
    h->rel = r;
    h->n = n;
    for (size_t i = 0; i < n; i++) {
        h->node[i] = sched_snapshot_node_by_name(s, r[i].node);
        idx[i] = i;
    }
    qsort_r(idx, n, sizeof *idx, cmp_rel, (void *)r);
    /* grouped by release in one pass each way (a counting sort): the nominees are thousands
     * when thousands of preemptors wait, the nodes up to hundreds */
    size_t *count = h->from + 1;
    for (size_t j = 0; j < nn; j++) {
        at[j] = find_rel(r, idx, n, sched_nominated_at(t, j)->node);
        if (at[j] != SIZE_MAX)
            count[at[j]]++;
    }
    for (size_t i = 1; i <= n; i++)
        h->from[i] += h->from[i - 1];
    size_t *fill = idx; /* reused: the next free slot of release i */
    for (size_t i = 0; i < n; i++)
        fill[i] = h->from[i];
    for (size_t j = 0; j < nn; j++)
        if (at[j] != SIZE_MAX)
            h->noms[fill[at[j]]++] = sched_nominated_at(t, j);
    free(idx);
    free(at);
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

/* Whether release i's node is pod's nominated node, or pod fits there outright. */
static bool fits_at(const sched_release_hint *h, size_t i, const sched_pod *pod) {
    for (size_t k = h->from[i]; k < h->from[i + 1]; k++)
        if (strcmp(h->noms[k]->uid, pod->uid) == 0)
            return true; /* its own nominated node */
    return fits_with_nominated(h, i, pod);
}

bool sched_release_hint_helps(const sched_release_hint *h, const sched_pod *pod) {
    for (size_t i = 0; i < h->n; i++) {
        if (!pod->preempt_never && h->rel[i].prio >= pod->priority)
            return true;
        if (fits_at(h, i, pod))
            return true;
    }
    return false;
}

bool sched_release_hint_fits(const sched_release_hint *h, const sched_pod *pod) {
    for (size_t i = 0; i < h->n; i++)
        if (fits_at(h, i, pod))
            return true;
    return false;
}
