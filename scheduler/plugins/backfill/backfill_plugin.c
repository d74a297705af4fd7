/* backfill_plugin.c: the Backfill Filter plugin (backfill_plugin.h). */
#include "scheduler/plugins/backfill/backfill_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/plugins/reservation/resv_plan.h"

typedef struct bf_state {
    bf_config cfg;
    bf_plan *plan;
    bf_key_fn key;
    void *ud;
    uint64_t backfilled; /* pods placed (Reserve) while a shadow of another job was held */
    /* bf_plugin_add_borrowed: the plan is another plugin's, its node indices those of plan_snap
     * (nodes are looked up there by name); NULL: the plan is this plugin's own */
    const sched_snapshot *plan_snap;
} bf_state;

int64_t bf_pod_end(const sched_snapshot *s, const sched_pod *p, const sched_node *n,
                   const bf_config *cfg, int64_t now_ms) {
    int64_t end = resv_expected_end(s, p, n, now_ms);
    if (end < 0 && cfg->default_runtime_ms > 0)
        end = now_ms + cfg->default_runtime_ms;
    return end;
}

static const char *pod_key(const bf_state *st, const sched_pod *p) {
    const char *k = st->key ? st->key(st->ud, p) : NULL;
    return k ? k : p->uid;
}

/* r (slots of snapshot from) in the slots of snapshot to, by resource name; a name to does not
 * have is left out: nothing of the plan holds it. */
static void map_slots(const sched_snapshot *from, const sched_snapshot *to,
                      const sched_resources *r, sched_resources *out) {
    memset(out, 0, sizeof *out);
    int nf = sched_snapshot_resource_count(from);
    for (int k = 0; k < nf; k++) {
        /* the fixed ones are the same everywhere */
        int j = !r->v[k] || k < SCHED_RES_FIRST_EXT
                    ? k
                    : sched_snapshot_resource_find(to, sched_snapshot_resource_name(from, k));
        if (j >= 0)
            out->v[j] = r->v[k];
    }
}

static int filter(void *state, const sched_cycle *c, size_t node, const sched_node *n) {
    bf_state *st = state;
    if (bf_plan_shadow_count(st->plan) == 0)
        return -1;
    const char *key = pod_key(st, c->pod);
    if (!key[0])
        return -1; /* exempt */
    const sched_snapshot *s = c->snap;
    const sched_resources *req = &c->pod->requests;
    sched_resources mapped;
    if (st->plan_snap && st->plan_snap != s) { /* the plan's node, by name */
        int i = sched_snapshot_node_index(st->plan_snap, n->name);
        if (i < 0)
            return -1; /* a node the plan does not know holds nothing for anyone */
        node = (size_t)i;
        /* and the pod's requests in the plan's slots: extended resources are numbered per
         * snapshot, in the order their names were met */
        map_slots(s, st->plan_snap, req, &mapped);
        req = &mapped;
        s = st->plan_snap;
        n = sched_snapshot_node(s, node);
    }
    int64_t end = bf_pod_end(s, c->pod, n, &st->cfg, c->now_ms);
    size_t which = 0;
    return bf_plan_check(st->plan, (int)node, key, req, end, &which) == BF_OK ? -1 : (int)which;
}

char *bf_held_reason(const bf_plan *p, size_t which, char *buf, size_t size) {
    const bf_shadow *s = bf_plan_shadow(p, which);
    if (!s) {
        snprintf(buf, size, "held for an earlier pod or gang of the queue (backfill)");
        return buf;
    }
    char when[32];
    bf_format_time(s->start_ms, when, sizeof when);
    snprintf(buf, size, "held for %s from %s (backfill)", s->key ? s->key : "?", when);
    return buf;
}

/* "node(s) were held for pod ns/a from 2026-11-29T08:00:00Z (backfill)": whom the node is
 * kept for and from when, so that FailedScheduling and explain say it. The detail is the index of
 * the shadow that decided; nodes held for different shadows give different reasons. */
static void filter_reason(void *state, const sched_cycle *c, uint32_t detail, char *buf,
                          size_t size) {
    (void)c;
    bf_state *st = state;
    char held[400];
    snprintf(buf, size, "node(s) were %s", bf_held_reason(st->plan, detail, held, sizeof held));
}

char *bf_format_time(int64_t ms, char *buf, size_t size) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (size == 0)
        return buf;
    if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        buf[0] = '\0';
    return buf;
}

static void reserved(void *state, const sched_cycle *c, const sched_node *n) {
    bf_state *st = state;
    int node = sched_snapshot_node_index(c->snap, n->name);
    const char *key = pod_key(st, c->pod);
    if (!key[0])
        return; /* exempt: nothing of a shadow taken */
    if (bf_plan_shadows_ahead(st->plan, key) > 0)
        st->backfilled++; /* started while an earlier job of the queue waits for its shadow */
    if (node >= 0)
        bf_plan_take(st->plan, node, key, &c->pod->requests,
                     bf_pod_end(c->snap, c->pod, n, &st->cfg, c->now_ms));
}

static void unreserve(void *state, const sched_cycle *c, const sched_node *n) {
    bf_state *st = state;
    int node = sched_snapshot_node_index(c->snap, n->name);
    const char *key = pod_key(st, c->pod);
    if (!key[0])
        return;
    if (st->backfilled && bf_plan_shadows_ahead(st->plan, key) > 0)
        st->backfilled--; /* counted at Reserve, undone */
    if (node >= 0)
        bf_plan_give(st->plan, node, key, &c->pod->requests,
                     bf_pod_end(c->snap, c->pod, n, &st->cfg, c->now_ms));
}

static void free_state(void *state) {
    bf_state *st = state;
    if (st && !st->plan_snap)
        bf_plan_free(st->plan);
    free(st);
}

int bf_plugin_add_borrowed(sched_framework *fw, const bf_config *cfg, bf_plan *plan,
                           const sched_snapshot *plan_snap, bf_key_fn key, void *ud, tm_err *err) {
    if (bf_config_check(cfg, err))
        return -1;
    if (!plan || !plan_snap)
        return tm_err_set(err, "backfill: no plan to borrow");
    bf_state *st = calloc(1, sizeof *st);
    if (!st)
        return tm_err_set(err, "backfill: out of memory");
    *st = (bf_state){.cfg = *cfg, .plan = plan, .key = key, .ud = ud, .plan_snap = plan_snap};
    /* Filter only: the lender's Reserve takes from the shadows' spare for the pods it places */
    sched_plugin pl = {.name = BF_PLUGIN_NAME,
                       .state = st,
                       .filter = filter,
                       .filter_reason = filter_reason,
                       .free_state = free_state};
    return sched_framework_add_plugin(fw, &pl, err);
}

int bf_plugin_add(sched_framework *fw, const bf_config *cfg, bf_key_fn key, void *ud, tm_err *err) {
    if (bf_config_check(cfg, err))
        return -1;
    bf_state *st = calloc(1, sizeof *st);
    if (!st || !(st->plan = bf_plan_new())) {
        free(st);
        return tm_err_set(err, "backfill: out of memory");
    }
    st->cfg = *cfg;
    st->key = key;
    st->ud = ud;
    sched_plugin pl = {.name = BF_PLUGIN_NAME,
                       .state = st,
                       .filter = filter,
                       .filter_reason = filter_reason,
                       .reserved = reserved,
                       .unreserve = unreserve,
                       .free_state = free_state};
    return sched_framework_add_plugin(fw, &pl, err);
}

bf_plan *bf_plugin_plan(const sched_framework *fw) {
    bf_state *st = sched_framework_plugin_state(fw, BF_PLUGIN_NAME);
    return st ? st->plan : NULL;
}

uint64_t bf_plugin_backfilled(const sched_framework *fw) {
    bf_state *st = sched_framework_plugin_state(fw, BF_PLUGIN_NAME);
    return st ? st->backfilled : 0;
}

const bf_config *bf_plugin_config(const sched_framework *fw) {
    bf_state *st = sched_framework_plugin_state(fw, BF_PLUGIN_NAME);
    return st ? &st->cfg : NULL;
}
