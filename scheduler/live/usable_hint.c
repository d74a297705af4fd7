/* usable_hint.c: the requeue's question for nodes usable again (usable_hint.h). */
#include "scheduler/live/usable_hint.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/nominated.h"
#include "scheduler/live/release_hint.h"
#include "scheduler/plugins/preemption/preemption.h"

struct sched_usable_hint {
    sched_release *rel;      /* the nodes, as releases (only the fit is asked of them) */
    sched_release_hint *fit; /* whether a pod fits on one of them outright */
    const sched_snapshot *snap;
    const sched_nominee **noms; /* the nominated pods not placed yet, by uid */
    size_t n_noms;
    size_t n_spared; /* how many helps() said no to: waiting, and no fit on these nodes */
};

static int cmp_nominee(const void *a, const void *b) {
    return strcmp((*(const sched_nominee *const *)a)->uid, (*(const sched_nominee *const *)b)->uid);
}

static int cmp_uid(const void *key, const void *e) {
    return strcmp(key, (*(const sched_nominee *const *)e)->uid);
}

sched_usable_hint *sched_usable_hint_new(const sched_snapshot *s, const char *const *names,
                                         size_t n) {
    sched_usable_hint *h = calloc(1, sizeof *h);
    sched_nominated *t = sched_snapshot_nominated(s);
    size_t nn = sched_nominated_count(t);
    if (!h || !(h->rel = calloc(n ? n : 1, sizeof *h->rel)) ||
        !(h->noms = malloc((nn ? nn : 1) * sizeof *h->noms))) {
        sched_usable_hint_free(h);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) /* borrowed names: the hint never frees them */
        h->rel[i] = (sched_release){(char *)names[i], INT32_MIN};
    if (!(h->fit = sched_release_hint_new(s, h->rel, n))) {
        sched_usable_hint_free(h);
        return NULL;
    }
    h->snap = s;
    for (size_t j = 0; j < nn; j++) {
        const sched_nominee *e = sched_nominated_at(t, j);
        if (!sched_snapshot_pod_node(s, e->uid)) /* placed: no longer waiting */
            h->noms[h->n_noms++] = e;
    }
    qsort(h->noms, h->n_noms, sizeof *h->noms, cmp_nominee);
    return h;
}

bool sched_usable_hint_helps(sched_usable_hint *h, const sched_pod *pod) {
    const sched_nominee *const *e = bsearch(pod->uid, h->noms, h->n_noms, sizeof *h->noms, cmp_uid);
    if (!e || !sched_preemption_awaits_victims(h->snap, pod, (*e)->node) ||
        sched_release_hint_fits(h->fit, pod))
        return true;
    h->n_spared++;
    return false;
}

size_t sched_usable_hint_spared(const sched_usable_hint *h) {
    return h ? h->n_spared : 0;
}

void sched_usable_hint_free(sched_usable_hint *h) {
    if (!h)
        return;
    sched_release_hint_free(h->fit);
    free(h->rel);
    free(h->noms);
    free(h);
}
