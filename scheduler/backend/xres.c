/* xres.c: resources kept sparsely, past the snapshot's fixed slots (snapshot.h, sched_xres):
 * sorted (id, amount) lists, looked up by binary search. They are rare (a cluster advertising
 * more than 60 distinct extended resources), so lists stay short and nothing here is hot. */
#include <stdlib.h>

#include "scheduler/backend/snapshot.h"

int sched_xres_index(const sched_xres *a, uint32_t n, uint32_t id) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo].id == id ? (int)lo : -1;
}

int64_t sched_xres_get(const sched_xres *a, uint32_t n, uint32_t id) {
    int k = sched_xres_index(a, n, id);
    return k < 0 ? 0 : a[k].v;
}

static int cmp_id(const void *x, const void *y) {
    const sched_xres *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

uint32_t sched_xres_normalize(sched_xres *a, uint32_t n) {
    if (n > 1)
        qsort(a, n, sizeof *a, cmp_id);
    uint32_t out = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (out > 0 && a[out - 1].id == a[i].id)
            a[out - 1].v += a[i].v;
        else
            a[out++] = a[i];
    }
    uint32_t kept = 0; /* a zero amount asks for (or offers) nothing */
    for (uint32_t i = 0; i < out; i++)
        if (a[i].v != 0)
            a[kept++] = a[i];
    return kept;
}
