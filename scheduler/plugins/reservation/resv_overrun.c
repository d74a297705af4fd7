/* resv_overrun.c: the backfilled pods a Reservation's opened window evicts (resv_overrun.h). */
#include "scheduler/plugins/reservation/resv_overrun.h"

bool resv_overrun_candidate(const resv_overrun_pod *p, int64_t window_start_ms, int64_t now_ms) {
    return !p->owner && p->end_ms >= 0 && p->end_ms <= window_start_ms && p->end_ms < now_ms &&
           now_ms >= window_start_ms;
}

/* Still short of what the owner needs on some resource. */
static bool short_of(const sched_resources *need) {
    for (int k = 0; k < SCHED_RES_MAX; k++)
        if (need->v[k] > 0)
            return true;
    return false;
}

static void release(sched_resources *need, const sched_resources *req) {
    for (int k = 0; k < SCHED_RES_MAX; k++)
        need->v[k] -= req->v[k];
}

size_t resv_overrun_victims(const sched_resources *node_free, const sched_resources *held,
                            const sched_resources *used, int64_t window_start_ms, int64_t now_ms,
                            const resv_overrun_pod *pods, size_t n, size_t *out) {
    if (now_ms < window_start_ms)
        return 0;
    sched_resources need;
    for (int k = 0; k < SCHED_RES_MAX; k++) {
        int64_t unused = held->v[k] - used->v[k];
        need.v[k] = unused > 0 ? unused - node_free->v[k] : 0;
    }
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!resv_overrun_candidate(&pods[i], window_start_ms, now_ms))
            continue;
        if (pods[i].terminating)
            release(&need, &pods[i].req); /* on its way out already */
        else
            out[nc++] = i;
    }
    if (!short_of(&need))
        return 0;
    /* earliest expected end first, then the caller's order; n is a node's pods: insertion sort */
    for (size_t i = 1; i < nc; i++) {
        size_t x = out[i], j = i;
        while (j > 0 && pods[out[j - 1]].end_ms > pods[x].end_ms) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    size_t taken = 0;
    while (taken < nc && short_of(&need))
        release(&need, &pods[out[taken++]].req);
    return taken;
}
