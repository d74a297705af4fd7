/* backfill_bind.c: the extender's Reserve at kube-scheduler's bind verb (backfill_live.h,
 * sched_backfill_live_bind_reserve), and the pods bound through it that the informer has not
 * seen bound yet, which every plan meanwhile counts on their node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/live/backfill_live.h"
#include "scheduler/live/backfill_live_internal.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"

/* The index of uid's entry, n_placed when it has none. */
static size_t placed_index(const sched_backfill_live *b, const char *uid) {
    size_t i = 0;
    while (i < b->n_placed && strcmp(b->placed[i].uid, uid) != 0)
        i++;
    return i;
}

static void forget_placed(sched_backfill_live *b, const char *uid) {
    size_t i = placed_index(b, uid);
    if (i < b->n_placed)
        b->placed[i] = b->placed[--b->n_placed];
}

/* Remembered until the informer sees it bound or gone (a plan meanwhile counts it running). */
static void record_placed(sched_backfill_live *b, const char *uid, const char *node,
                          const sched_resources *req, int64_t end_ms) {
    size_t i = placed_index(b, uid);
    if (i == b->n_placed) {
        if (b->n_placed == b->cap_placed) {
            size_t nc = b->cap_placed ? b->cap_placed * 2 : 16;
            bplaced *v = realloc(b->placed, nc * sizeof *v);
            if (!v)
                return; /* out of memory: the next plan sees it once bound, as without this */
            b->placed = v;
            b->cap_placed = nc;
        }
        b->n_placed++;
    }
    bplaced *e = &b->placed[i];
    snprintf(e->uid, sizeof e->uid, "%s", uid);
    snprintf(e->node, sizeof e->node, "%s", node);
    e->req = *req;
    e->end_ms = end_ms;
}

bool bf_live_is_placed(const sched_backfill_live *b, const char *uid) {
    return placed_index(b, uid) < b->n_placed;
}

/* The pods bound through the extender's /bind that the informer has not seen bound yet: on
 * their node from now (as nominated pods are), and no longer waiting jobs; the ones seen bound
 * or gone since are forgotten (the snapshot has them, or nothing). */
bool bf_live_add_placed(sched_backfill_live *b, const sched_snapshot *snap, int64_t now,
                        bf_running **run, size_t *n) {
    for (size_t i = 0; i < b->n_placed;)
        if (!sched_queue_get(b->q, b->placed[i].uid) ||
            sched_snapshot_pod_node(snap, b->placed[i].uid))
            b->placed[i] = b->placed[--b->n_placed];
        else
            i++;
    if (!b->n_placed)
        return true;
    bf_running *r = realloc(*run, (*n + b->n_placed) * sizeof *r);
    if (!r)
        return false;
    *run = r;
    for (size_t i = 0; i < b->n_placed; i++) {
        int node = sched_snapshot_node_index(snap, b->placed[i].node);
        if (node >= 0)
            r[(*n)++] = (bf_running){.node = node,
                                     .req = b->placed[i].req,
                                     .start_ms = now,
                                     .end_ms = b->placed[i].end_ms};
    }
    return true;
}

int sched_backfill_live_bind_reserve(sched_backfill_live *b, const char *uid, const char *node,
                                     int64_t wall_ms, sched_backfill_taken *taken, char *why,
                                     size_t why_size) {
    *taken = (sched_backfill_taken){0};
    /* the pod as the informer saw it wait; one not seen yet is let through as /filter judged it
     * (its requests are not known here: the bind verb names the pod only) */
    const sched_pod *pod = b && uid ? sched_queue_get(b->q, uid) : NULL;
    const char *key = pod ? bf_live_job_key(b, pod) : "";
    const sched_snapshot *s = b ? sched_cache_snapshot(b->cache) : NULL;
    int i = s ? sched_snapshot_node_index(s, node) : -1;
    if (!key[0] || i < 0)
        return 0; /* exempt (a reservation's own pod: its hold counts), or a node unknown here */
    int64_t end = bf_pod_end(s, pod, sched_snapshot_node(s, (size_t)i), &b->cfg->backfill, wall_ms);
    bf_plan *plan = bf_plugin_plan(b->fw);
    if (plan && bf_plan_shadow_count(plan) > 0) {
        size_t which = 0;
        if (bf_plan_check(plan, i, key, &pod->requests, end, &which) != BF_OK) {
            char held[400];
            snprintf(why, why_size,
                     "node %s is %s: another pod bound since the filter took what this one "
                     "needed",
                     node, bf_held_reason(plan, which, held, sizeof held));
            return 1;
        }
        taken->ahead = bf_plan_shadows_ahead(plan, key) > 0;
        bf_plan_take(plan, i, key, &pod->requests, end);
        taken->taken = true;
    }
    taken->placed = true;
    taken->gen = b->plan_gen;
    taken->node = i;
    taken->req = pod->requests;
    taken->end_ms = end;
    snprintf(taken->key, sizeof taken->key, "%s", key);
    snprintf(taken->uid, sizeof taken->uid, "%s", uid);
    record_placed(b, uid, node, &pod->requests, end);
    return 0;
}

void sched_backfill_live_bind_done(sched_backfill_live *b, const sched_backfill_taken *t,
                                   bool bound) {
    if (!b || !t->placed)
        return;
    if (bound) {
        if (t->ahead) /* started while an earlier job of the queue held a shadow */
            tm_metrics_inc(b->m_backfilled, NULL);
        return;
    }
    forget_placed(b, t->uid);
    if (t->gen != b->plan_gen) {
        /* a plan made since counted it running on its node and left it out of the jobs: plan
         * again (kube-scheduler's handling of the failure changes nothing the cache replans on) */
        b->dirty = true;
        return;
    }
    if (t->taken)
        bf_plan_give(bf_plugin_plan(b->fw), t->node, t->key, &t->req, t->end_ms);
}
