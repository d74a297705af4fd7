/* round_robin.c: the round-robin baseline: each pod goes to the first fitting node after
 * the node chosen last, in node-name order, wrapping around. The cursor is the last chosen
 * node's name (not an index) so it survives nodes coming and going. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/policy/policy.h"

typedef struct rr_state {
    char *last;   /* name of the node reserved last, NULL before the first */
    size_t start; /* name rank the current cycle starts from */
} rr_state;

static int rr_pre_score(void *st, const sched_cycle *c, tm_err *err) {
    (void)err;
    rr_state *rs = st;
    size_t n = sched_snapshot_node_count(c->snap);
    const uint32_t *by_name = sched_snapshot_by_name(c->snap);
    size_t lo = 0, hi = n;
    /* first name strictly after the last chosen one */
    while (rs->last && lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(sched_snapshot_node(c->snap, by_name[mid])->name, rs->last) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    rs->start = n ? lo % n : 0;
    return 0;
}

static int64_t rr_score(void *st, const sched_cycle *c, const sched_node *n) {
    const rr_state *rs = st;
    size_t count = sched_snapshot_node_count(c->snap);
    size_t dist = (n->name_rank + count - rs->start) % count;
    return -(int64_t)dist;
}

/* rr_score from the snapshot's name-rank column. */
static void rr_score_batch(void *st, const sched_cycle *c, const uint32_t *nodes, size_t n,
                           int64_t *out) {
    const rr_state *rs = st;
    sched_node_cols cols;
    sched_snapshot_node_cols(c->snap, &cols);
    size_t count = sched_snapshot_node_count(c->snap);
    for (size_t k = 0; k < n; k++) {
        size_t dist = (cols.name_rank[nodes[k]] + count - rs->start) % count;
        out[k] = -(int64_t)dist;
    }
}

static void rr_reserved(void *st, const sched_cycle *c, const sched_node *n) {
    (void)c;
    rr_state *rs = st;
    char *dup = strdup(n->name);
    if (dup) { /* on OOM the cursor stays put: the next pod may reuse this node, no harm */
        free(rs->last);
        rs->last = dup;
    }
}

static void rr_free(void *st) {
    rr_state *rs = st;
    if (rs)
        free(rs->last);
    free(rs);
}

int sched_plugin_round_robin(sched_plugin *out) {
    rr_state *rs = calloc(1, sizeof *rs);
    if (!rs)
        return -1;
    *out = (sched_plugin){.name = "round-robin",
                          .state = rs,
                          .pre_score = rr_pre_score,
                          .score = rr_score,
                          .score_batch = rr_score_batch,
                          .reserved = rr_reserved,
                          .free_state = rr_free};
    return 0;
}
