/* scheduler_differential_test.c: the framework's fast cycle (node columns, skipped filters,
 * batch scoring) against a straightforward reference kept here: the obvious loop over every
 * node with the public per-node API (sched_filter_node / sched_filter_node_pre) and each
 * policy's score written out from policy.h, best score first, ties to the first name.
 *
 * Random clusters (hundreds of nodes: random capacity, labels, taints, readiness,
 * unschedulable, tarema groups, unprofiled nodes, an extended resource) and a long random
 * stream of pods (requests, tolerations, node selectors, required node affinity, task labels,
 * some host ports, anti-affinity and spread constraints) interleaved with reservations,
 * removals, other schedulers' pods (random pods too, bound by the informer's own path: the
 * cache's transform and watch events, additions and deletions), node replacements, removals and
 * additions. For every pod
 * and every policy: the same chosen node, score and feasible count; every node's filter
 * outcome, detail and score; and the snapshot's node columns equal to what the nodes say (the
 * cached load bit for bit). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/backend/cache.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/backend/snapshot.h"

/* ---- deterministic random numbers (xorshift64*) ---- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnd(rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

static int rint_(rng *r, int n) { /* 0..n-1 */
    return (int)(rnd(r) % (uint64_t)n);
}

static bool chance(rng *r, int percent) {
    return rint_(r, 100) < percent;
}

/* ---- random cluster ---- */

static const char *const zones[] = {"zone-a", "zone-b", "zone-c"};
static const char *const taint_keys[] = {"dedicated", "gpu", "spot"};
static const int group_labels[][3] = {{1, 1, 1}, {2, 2, 3}, {3, 3, 2}, {4, 4, 4}, {2, 1, 4}};

/* A random node named name; gpu_slot is the extended resource's slot. */
static sched_node *random_node(rng *r, const char *name, int gpu_slot) {
    sched_node *n = sched_node_new(name);
    if (!n)
        return NULL;
    int size = 1 << rint_(r, 4);
    n->allocatable.v[SCHED_RES_CPU] = 1000LL * size + 250 * rint_(r, 4);
    n->allocatable.v[SCHED_RES_MEMORY] = ((int64_t)(2 + rint_(r, 6)) << 30) * size;
    n->allocatable.v[SCHED_RES_EPHEMERAL] = chance(r, 80) ? (int64_t)(10 + rint_(r, 90)) << 30 : 0;
    n->allocatable.v[SCHED_RES_PODS] = 2 + rint_(r, 20);
    if (chance(r, 15))
        n->allocatable.v[gpu_slot] = 1 + rint_(r, 4);
    if (chance(r, 3))
        n->allocatable.v[SCHED_RES_CPU] = 0; /* load 1 when allocatable is 0 */
    n->ready = !chance(r, 5);
    n->unschedulable = chance(r, 5);
    char v[32];
    sched_node_set_label(n, "kubernetes.io/hostname", name);
    sched_node_set_label(n, "topology.kubernetes.io/zone", zones[rint_(r, 3)]);
    if (chance(r, 70))
        sched_node_set_label(n, "disk", chance(r, 50) ? "ssd" : "hdd");
    snprintf(v, sizeof v, "%d", rint_(r, 10));
    sched_node_set_label(n, "rank", v);
    if (!chance(r, 12)) { /* profiled */
        const int *gl = group_labels[rint_(r, 5)];
        static const char *const keys[3] = {"tarema.io/cpu", "tarema.io/mem", "tarema.io/io"};
        for (int k = 0; k < 3; k++) {
            snprintf(v, sizeof v, "%d", gl[k]);
            sched_node_set_label(n, keys[k], v);
        }
        if (chance(r, 50)) {
            snprintf(v, sizeof v, "g%d%d%d", gl[0], gl[1], gl[2]);
            sched_node_set_label(n, "tarema.io/group", v);
        }
    }
    int nt = chance(r, 20) ? 1 + rint_(r, 2) : 0;
    for (int t = 0; t < nt; t++) {
        /* NONE is no valid node taint effect, but a hand-built node may carry one: the
         * filter treats it like NoSchedule and so must the fast path */
        static const sched_effect eff[] = {
            SCHED_EFFECT_NO_SCHEDULE, SCHED_EFFECT_NO_EXECUTE, SCHED_EFFECT_PREFER_NO_SCHEDULE,
            SCHED_EFFECT_NO_SCHEDULE, SCHED_EFFECT_NO_EXECUTE, SCHED_EFFECT_PREFER_NO_SCHEDULE,
            SCHED_EFFECT_NONE};
        sched_node_add_taint(n, taint_keys[rint_(r, 3)], chance(r, 50) ? "yes" : "",
                             eff[rint_(r, 7)]);
    }
    return n;
}

static void node_name(char *buf, size_t size, int id) {
    /* names not in insertion order, so index order and name order differ */
    snprintf(buf, size, "node-%c%04d", 'a' + (id * 7) % 26, id);
}

/* ---- random pods ---- */

/* inter: may use host ports, pod anti-affinity and spread constraints (once a pod with
 * anti-affinity is placed every later cycle runs the inter-pod filters, so streams without
 * them keep the plain fast path in play). */
static json_t *random_pod_json(rng *r, int id, bool inter) {
    char name[32], v[64];
    snprintf(name, sizeof name, "pod-%06d", id);
    json_t *labels = json_object();
    snprintf(v, sizeof v, "svc-%d", rint_(r, 6));
    json_object_set_new(labels, "app", json_string(v));
    if (chance(r, 85)) {
        snprintf(v, sizeof v, "PROC_%d", rint_(r, 8));
        json_object_set_new(labels, "nextflow.io/processName", json_string(v));
        json_object_set_new(labels, "tarema.io/workflow", json_string("wf"));
    }
    json_t *meta = json_pack("{s:s, s:s, s:s, s:o}", "name", name, "namespace", "ns", "uid", name,
                             "labels", labels);
    if (chance(r, 5)) { /* explicit task labels */
        json_t *ann = json_object();
        snprintf(v, sizeof v, "%d", 1 + rint_(r, 4));
        json_object_set_new(ann, "tarema.io/cpu", json_string(v));
        json_object_set_new(meta, "annotations", ann);
    }
    json_t *req = json_object();
    if (chance(r, 90)) {
        snprintf(v, sizeof v, "%dm", 50 * rint_(r, 60));
        json_object_set_new(req, "cpu", json_string(v));
    }
    if (chance(r, 90)) {
        snprintf(v, sizeof v, "%dMi", 128 * rint_(r, 64));
        json_object_set_new(req, "memory", json_string(v));
    }
    if (chance(r, 10)) {
        snprintf(v, sizeof v, "%dGi", rint_(r, 40));
        json_object_set_new(req, "ephemeral-storage", json_string(v));
    }
    if (chance(r, 8)) {
        snprintf(v, sizeof v, "%d", 1 + rint_(r, 2));
        json_object_set_new(req, "nvidia.com/gpu", json_string(v));
    }
    json_t *c = json_pack("{s:s, s:{s:o}}", "name", "c", "resources", "requests", req);
    if (inter && chance(r, 4))
        json_object_set_new(
            c, "ports",
            json_pack("[{s:i, s:i}]", "containerPort", 80, "hostPort", 8080 + rint_(r, 3)));
    json_t *spec = json_pack("{s:[o]}", "containers", c);
    if (chance(r, 30)) {
        json_t *tols = json_array();
        int nt = 1 + rint_(r, 2);
        for (int t = 0; t < nt; t++) {
            int kind = rint_(r, 5);
            if (kind == 0)
                json_array_append_new(tols, json_pack("{s:s}", "operator", "Exists"));
            else if (kind == 1)
                json_array_append_new(
                    tols, json_pack("{s:s, s:s, s:s}", "key", "node.kubernetes.io/unschedulable",
                                    "operator", "Exists", "effect", "NoSchedule"));
            else if (kind == 2)
                json_array_append_new(tols, json_pack("{s:s, s:s}", "key", taint_keys[rint_(r, 3)],
                                                      "operator", "Exists"));
            else if (kind == 3)
                json_array_append_new(tols, json_pack("{s:s, s:s, s:s, s:s}", "key",
                                                      taint_keys[rint_(r, 3)], "operator", "Equal",
                                                      "value", "yes", "effect", "NoSchedule"));
            else
                json_array_append_new(tols,
                                      json_pack("{s:s, s:s, s:s}", "key", taint_keys[rint_(r, 3)],
                                                "value", "", "effect", "NoExecute"));
        }
        json_object_set_new(spec, "tolerations", tols);
    }
    if (chance(r, 15))
        json_object_set_new(
            spec, "nodeSelector",
            chance(r, 50) ? json_pack("{s:s}", "topology.kubernetes.io/zone", zones[rint_(r, 3)])
                          : json_pack("{s:s}", "disk", "ssd"));
    json_t *aff = json_object();
    if (chance(r, 10)) {
        static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
        const char *op = ops[rint_(r, 6)];
        json_t *expr =
            json_pack("{s:s, s:s}", "key", chance(r, 50) ? "rank" : "disk", "operator", op);
        if (!strcmp(op, "In") || !strcmp(op, "NotIn"))
            json_object_set_new(expr, "values", json_pack("[s, s]", "ssd", "3"));
        else if (!strcmp(op, "Gt") || !strcmp(op, "Lt"))
            json_object_set_new(expr, "values", json_pack("[s]", "4"));
        json_t *terms = json_pack("[{s:[o]}]", "matchExpressions", expr);
        if (chance(r, 30))
            json_array_append_new(terms, json_pack("{s:[{s:s, s:s, s:[s]}]}", "matchExpressions",
                                                   "key", "topology.kubernetes.io/zone", "operator",
                                                   "In", "values", zones[rint_(r, 3)]));
        json_object_set_new(aff, "nodeAffinity",
                            json_pack("{s:{s:o}}", "requiredDuringSchedulingIgnoredDuringExecution",
                                      "nodeSelectorTerms", terms));
    }
    if (inter && chance(r, 4)) {
        snprintf(v, sizeof v, "svc-%d", rint_(r, 6));
        json_object_set_new(
            aff, "podAntiAffinity",
            json_pack("{s:[{s:{s:{s:s}}, s:s}]}", "requiredDuringSchedulingIgnoredDuringExecution",
                      "labelSelector", "matchLabels", "app", v, "topologyKey",
                      chance(r, 50) ? "kubernetes.io/hostname" : "topology.kubernetes.io/zone"));
    }
    if (json_object_size(aff))
        json_object_set(spec, "affinity", aff);
    json_decref(aff);
    if (inter && chance(r, 4)) {
        snprintf(v, sizeof v, "svc-%d", rint_(r, 6));
        json_object_set_new(spec, "topologySpreadConstraints",
                            json_pack("[{s:i, s:s, s:s, s:{s:{s:s}}}]", "maxSkew", 1 + rint_(r, 3),
                                      "topologyKey", "topology.kubernetes.io/zone",
                                      "whenUnsatisfiable", "DoNotSchedule", "labelSelector",
                                      "matchLabels", "app", v));
    }
    return json_pack("{s:o, s:o}", "metadata", meta, "spec", spec);
}

/* ---- the reference ---- */

typedef struct ref_state {
    char last[64]; /* round-robin: the node reserved last, "" before the first */
} ref_state;

static int64_t ref_group_power(const sched_snapshot *s, const sched_node *n) {
    const sched_group *g = n->group >= 0 ? sched_snapshot_group(s, (size_t)n->group) : NULL;
    return g ? g->power : 0;
}

/* Each policy's score as policy.h describes it, in the plugins' documented encodings. */
static int64_t ref_score(const char *policy, const sched_snapshot *s, const sched_task_info *t,
                         const sched_node *n, const ref_state *rs) {
    double l = sched_node_load(n);
    if (!strcmp(policy, "tarema")) {
        /* (group preference, 1 - load) packed: distance asc, power desc, then load asc */
        int64_t gk = 0;
        const sched_group *g = n->group >= 0 ? sched_snapshot_group(s, (size_t)n->group) : NULL;
        int d = g ? sched_tarema_distance(g, t) : -1;
        if (t->labeled && d >= 0)
            gk = ((int64_t)(0xffff - (d > 0xfffe ? 0xfffe : d)) << 16) |
                 (g->power > 0xffff ? 0xffff : g->power);
        double c = l > 1 ? 1 : l < 0 ? 0 : l;
        return gk << 24 | (0xffffff - (int64_t)(c * 0xffffff));
    }
    if (!strcmp(policy, "adaptive")) {
        /* (finish, prior, 1 - load): without per-group runs every group's prediction is the
         * expected runtime in whole seconds; prior = (255 - distance) << 8 | power */
        const sched_group *g = n->group >= 0 ? sched_snapshot_group(s, (size_t)n->group) : NULL;
        int d = g && t->labeled ? sched_tarema_distance(g, t) : -1;
        int64_t prior =
            d >= 0 ? ((int64_t)(255 - (d > 255 ? 255 : d)) << 8) | (g->power > 255 ? 255 : g->power)
                   : 0;
        int64_t sec = (t->expected_runtime_ms + 500) / 1000;
        int64_t fin = t->expected_runtime_ms < 0 ? 0 : 0xfffff - (sec > 0xfffff ? 0xfffff : sec);
        double c = l > 1 ? 1 : l < 0 ? 0 : l;
        return ((fin << 16 | prior) << 24) | (0xffffff - (int64_t)(c * 0xffffff));
    }
    if (!strcmp(policy, "fair"))
        return -(int64_t)((l > 4 ? 4 : l) * 1e9);
    if (!strcmp(policy, "fill-nodes"))
        return (int64_t)((l > 4 ? 4 : l) * 1e9);
    if (!strcmp(policy, "sjfn")) {
        int64_t power = ref_group_power(s, n);
        if (power > 0xfffff)
            power = 0xfffff;
        double c = l > 1 ? 1 : l;
        return power << 32 | (int64_t)((1.0 - c) * (double)0x7fffffff);
    }
    /* round-robin: distance in name order from the first name after the last chosen one */
    size_t count = sched_snapshot_node_count(s), start = 0;
    for (size_t i = 0; rs->last[0] && i < count; i++)
        start += strcmp(sched_snapshot_node(s, i)->name, rs->last) <= 0;
    start %= count;
    return -(int64_t)((n->name_rank + count - start) % count);
}

typedef struct ref_out {
    int node;
    size_t feasible;
    int64_t score;
    uint8_t *status;
    uint32_t *detail;
    int64_t *scores;
} ref_out;

/* The PreferNoSchedule taints of n that p does not tolerate. */
static int64_t ref_untolerated_prefer(const sched_pod *p, const sched_node *n) {
    int64_t cnt = 0;
    for (size_t i = 0; i < n->n_taints; i++) {
        const sched_taint *tt = &n->taints[i];
        bool ok = tt->effect != SCHED_EFFECT_PREFER_NO_SCHEDULE;
        for (size_t k = 0; !ok && k < p->n_tolerations; k++)
            ok = (p->tolerations[k].effect == SCHED_EFFECT_NONE ||
                  p->tolerations[k].effect == SCHED_EFFECT_PREFER_NO_SCHEDULE) &&
                 sched_toleration_tolerates(&p->tolerations[k], tt->key, tt->value, tt->effect);
        cnt += !ok;
    }
    return cnt;
}

/* NodeResourcesBalancedAllocation, written out: cpu and memory fractions with the pod, capped
 * at 1, (1 - |a - b| / 2) * 100 truncated; a resource the node has none of is left out (then
 * one fraction: 100). -1 for a pod without cpu and memory requests (the plugin skips it). */
static int64_t ref_balanced(const sched_pod *p, const sched_node *n) {
    if (p->requests.v[SCHED_RES_CPU] <= 0 && p->requests.v[SCHED_RES_MEMORY] <= 0)
        return -1;
    double f[2];
    int k = 0;
    for (int r = SCHED_RES_CPU; r <= SCHED_RES_MEMORY; r++)
        if (n->allocatable.v[r]) {
            double x = (double)(n->requested.v[r] + p->requests.v[r]) / (double)n->allocatable.v[r];
            f[k++] = x > 1 ? 1 : x;
        }
    return k == 2 ? (int64_t)((1 - fabs(f[0] - f[1]) / 2) * 100) : 100;
}

/* When the feasible nodes differ in the PreferNoSchedule taints the pod does not tolerate, their
 * scores become 1 * policy (min..max -> 0..100) + 3 * (100 - 100 * untolerated / max untolerated)
 * + 1 * balanced allocation (when the pod has requests); when every feasible node has as many
 * (none, usually), the policy's raw score stays. */
static void ref_prefer_no_schedule(const sched_snapshot *s, const sched_pod *p, ref_out *o) {
    size_t nn = sched_snapshot_node_count(s);
    int64_t mn = INT64_MAX, mx = INT64_MIN, umax = 0, umin = INT64_MAX;
    for (size_t i = 0; i < nn; i++) {
        if (o->status[i] != SCHED_FILTER_OK)
            continue;
        mn = o->scores[i] < mn ? o->scores[i] : mn;
        mx = o->scores[i] > mx ? o->scores[i] : mx;
        int64_t u = ref_untolerated_prefer(p, sched_snapshot_node(s, i));
        umax = u > umax ? u : umax;
        umin = u < umin ? u : umin;
    }
    bool any = umin != INT64_MAX && umax != umin;
    for (size_t i = 0; any && i < nn; i++) {
        if (o->status[i] != SCHED_FILTER_OK)
            continue;
        int64_t pol =
            mx > mn ? (int64_t)((__int128)(o->scores[i] - mn) * 100 / ((__int128)mx - mn)) : 100;
        int64_t u = ref_untolerated_prefer(p, sched_snapshot_node(s, i));
        int64_t ba = ref_balanced(p, sched_snapshot_node(s, i));
        o->scores[i] = pol + 3 * (umax ? 100 - 100 * u / umax : 100) + (ba > 0 ? ba : 0);
    }
}

/* The obvious cycle: every node through the public per-node filter, the policy's score, the
 * best score, ties to the first in name order. per_node: sched_filter_node (which computes the
 * inter-pod state per node) rather than one sched_prefilter for the cycle. */
static int ref_schedule(const char *policy, sched_snapshot *s, const sched_pod *p,
                        const ref_state *rs, bool per_node, ref_out *o) {
    sched_snapshot_refresh(s);
    sched_task_info t;
    sched_task_resolve(s, p, &t);
    sched_prefilter *pf = sched_prefilter_new();
    tm_err err;
    if (!pf || sched_prefilter_compute(pf, s, p, &err) != 0) {
        sched_prefilter_free(pf);
        return -1;
    }
    o->node = -1;
    o->feasible = 0;
    o->score = 0;
    uint32_t best_rank = 0;
    for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        uint32_t d = 0;
        sched_filter_id id =
            per_node ? sched_filter_node(s, p, n, &d) : sched_filter_node_pre(s, p, i, pf, &d);
        o->status[i] = (uint8_t)id;
        o->detail[i] = d;
        if (id != SCHED_FILTER_OK)
            continue;
        o->scores[i] = ref_score(policy, s, &t, n, rs);
        o->feasible++;
    }
    ref_prefer_no_schedule(s, p, o);
    for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
        const sched_node *n = sched_snapshot_node(s, i);
        int64_t sc = o->scores[i];
        if (o->status[i] != SCHED_FILTER_OK)
            continue;
        /* (balanced allocation breaks no tie: scoreTieBreak is off by default) */
        if (o->node < 0 || sc > o->score || (sc == o->score && n->name_rank < best_rank)) {
            o->node = (int)i;
            o->score = sc;
            best_rank = n->name_rank;
        }
    }
    sched_prefilter_free(pf);
    return 0;
}

/* ---- checks ---- */

/* The node columns equal what the nodes say (the load bit for bit). */
static int cols_mismatches(const sched_snapshot *s) {
    sched_node_cols c;
    sched_snapshot_node_cols(s, &c);
    int bad = c.n != sched_snapshot_node_count(s);
    size_t flagged = 0;
    for (size_t i = 0; i < c.n && !bad; i++) {
        flagged += c.flags[i] != 0;
        const sched_node *n = sched_snapshot_node(s, i);
        double l = sched_node_load(n);
        bad += memcmp(&l, &c.load[i], sizeof l) != 0;
        for (int r = 0; r < sched_snapshot_resource_count(s); r++) /* the slots in use */
            bad += c.free[r][i] != n->allocatable.v[r] - n->requested.v[r];
        bool hard = false;
        for (size_t t = 0; t < n->n_taints; t++)
            if (!hard && n->taints[t].effect != SCHED_EFFECT_PREFER_NO_SCHEDULE) {
                hard = true;
                bad += c.hard_taint[i] != t;
            }
        bad += ((c.flags[i] & SCHED_NODE_NOT_READY) != 0) != !n->ready;
        bad += ((c.flags[i] & SCHED_NODE_UNSCHEDULABLE) != 0) != n->unschedulable;
        bad += ((c.flags[i] & SCHED_NODE_HARD_TAINT) != 0) != hard;
        bad += c.group[i] != n->group || c.name_rank[i] != n->name_rank;
    }
    return bad + (flagged != c.n_flagged);
}

typedef struct stats {
    long decisions, placed, unplaced, steps_checked, inter_pod, flagged_feasible, affinity, foreign;
    int first_failures;
} stats;

/* One policy over one random stream. */
static void run_stream(const char *policy, uint64_t seed, int nodes, int steps, stats *st) {
    rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
    tm_err err = {0};
    /* the live cache's snapshot, so that other schedulers' pods arrive as they do live */
    sched_cache *cache = sched_cache_new("tarema-scheduler", NULL, NULL, NULL, &err);
    CHECK(cache != NULL);
    sched_snapshot *s = sched_cache_snapshot(cache);
    int gpu = sched_snapshot_resource_slot(s, "nvidia.com/gpu", &err);
    CHECK(gpu >= SCHED_RES_FIRST_EXT);
    int next_node = 0;
    for (int i = 0; i < nodes; i++, next_node++) {
        char name[32];
        node_name(name, sizeof name, next_node);
        CHECK(sched_snapshot_put_node(s, random_node(&r, name, gpu), &err) == 0);
    }
    for (int t = 0; t < 8; t++) { /* PROC_6 and PROC_7 stay unlabeled */
        char proc[16];
        snprintf(proc, sizeof proc, "PROC_%d", t);
        sched_task_profile tp = {.labels = {1 + t % 4, 1 + (t / 2) % 4, t % 3 ? 1 + t % 3 : 0},
                                 .expected_runtime_ms = 1000 * (t + 1)};
        if (t < 6)
            CHECK(sched_snapshot_set_task(s, "wf", proc, &tp, &err) == 0);
    }
    sched_framework *fw;
    if (seed % 3 == 2) { /* the same plugin without its batch scorer: the per-node fallback */
        static const char *const names[] = {"tarema",     "round-robin", "fair",
                                            "fill-nodes", "sjfn",        "adaptive"};
        int (*makers[])(sched_plugin *) = {sched_plugin_tarema, sched_plugin_round_robin,
                                           sched_plugin_fair,   sched_plugin_fill_nodes,
                                           sched_plugin_sjfn,   sched_plugin_adaptive};
        sched_plugin pl = {0};
        for (int k = 0; k < 6; k++)
            if (!strcmp(policy, names[k]))
                CHECK(makers[k](&pl) == 0);
        CHECK(pl.score_batch != NULL);
        pl.score_batch = NULL;
        fw = pl.score ? sched_framework_new(&pl, &err) : NULL;
    } else {
        fw = sched_policy_new(policy, &err);
    }
    CHECK(fw != NULL);
    ref_state rs = {""};
    size_t cap = (size_t)nodes * 2 + 16;
    ref_out o = {.status = calloc(cap, 1),
                 .detail = calloc(cap, sizeof(uint32_t)),
                 .scores = calloc(cap, sizeof(int64_t))};
    char **placed = calloc((size_t)steps, sizeof *placed); /* uids of reserved pods */
    size_t nplaced = 0;
    json_t *foreign = json_array(); /* other schedulers' bound pods, as the informer keeps them */
    for (int step = 0; fw && step < steps; step++) {
        /* the cluster changes under the scheduler */
        int what = rint_(&r, 100);
        if (what < 4 && json_array_size(foreign)) { /* another scheduler's pod is deleted */
            size_t k = (size_t)rint_(&r, (int)json_array_size(foreign));
            CHECK(sched_cache_pod_event(cache, TM_WATCH_DELETED, json_array_get(foreign, k), NULL,
                                        &err) == 0);
            CHECK(sched_snapshot_pod_node(
                      s, tm_json_str(json_array_get(foreign, k), "metadata.uid", "")) == NULL);
            json_array_remove(foreign, k);
        } else if (what < 20 && nplaced) { /* a pod finishes, or a bind failed */
            size_t k = (size_t)rint_(&r, (int)nplaced);
            CHECK(sched_snapshot_remove_pod(s, placed[k]) == 0);
            free(placed[k]);
            placed[k] = placed[--nplaced];
        } else if (what < 26) { /* another scheduler's pod, maybe on a node not known yet */
            char uid[32], nn[32];
            snprintf(uid, sizeof uid, "foreign-%d", step);
            node_name(nn, sizeof nn, rint_(&r, next_node + 3));
            json_t *pj = random_pod_json(&r, step, seed % 3 == 0);
            json_t *meta = json_object_get(pj, "metadata");
            json_object_set_new(meta, "name", json_string(uid));
            json_object_set_new(meta, "uid", json_string(uid));
            json_object_set_new(json_object_get(pj, "spec"), "nodeName", json_string(nn));
            json_object_set_new(json_object_get(pj, "spec"), "schedulerName",
                                json_string("default-scheduler"));
            pj = sched_cache_pod_transform(cache, pj); /* the informer's path */
            CHECKF(sched_cache_pod_event(cache, TM_WATCH_ADDED, pj, NULL, &err) == 0, "%s",
                   err.msg);
            CHECK(sched_snapshot_pod_meta(s, uid) != NULL);
            st->foreign++;
            json_array_append_new(foreign, pj);
        } else if (what < 28 && sched_snapshot_node_count(s) > 1) { /* a node is updated */
            const sched_node *old =
                sched_snapshot_node(s, (size_t)rint_(&r, (int)sched_snapshot_node_count(s)));
            char name[32];
            snprintf(name, sizeof name, "%s", old->name);
            CHECK(sched_snapshot_put_node(s, random_node(&r, name, gpu), &err) == 0);
        } else if (what < 29 && sched_snapshot_node_count(s) > 2) { /* a node goes away */
            const sched_node *old =
                sched_snapshot_node(s, (size_t)rint_(&r, (int)sched_snapshot_node_count(s)));
            char name[32];
            snprintf(name, sizeof name, "%s", old->name);
            CHECK(sched_snapshot_remove_node(s, name) == 0);
        } else if (what < 31 && sched_snapshot_node_count(s) < cap) { /* one (re)appears */
            char name[32];
            node_name(name, sizeof name, rint_(&r, 100) < 50 ? rint_(&r, next_node) : next_node++);
            CHECK(sched_snapshot_put_node(s, random_node(&r, name, gpu), &err) == 0);
        } else if (what < 32) { /* a task profile changes */
            sched_task_profile tp = {.labels = {1 + rint_(&r, 4), 1 + rint_(&r, 4), rint_(&r, 5)},
                                     .expected_runtime_ms = -1};
            char proc[16];
            snprintf(proc, sizeof proc, "PROC_%d", rint_(&r, 6));
            CHECK(sched_snapshot_set_task(s, "wf", proc, &tp, &err) == 0);
        }

        json_t *pj = random_pod_json(&r, step, seed % 3 == 0);
        sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
        json_decref(pj);
        CHECKF(p != NULL, "pod %d: %s", step, err.msg);
        if (!p)
            break;
        bool inter = p->n_host_ports || p->n_spread || p->n_pod_affinity ||
                     p->n_pod_anti_affinity || sched_snapshot_podset_count(s, SCHED_PODSET_ANTI);
        st->inter_pod += inter;
        st->affinity += p->n_node_selector || p->has_affinity;
        /* sched_filter_node recomputes the inter-pod state per node: only now and then */
        bool per_node = !inter || step % 16 == 0;
        CHECK(ref_schedule(policy, s, p, &rs, per_node, &o) == 0);
        sched_decision d;
        int rc = sched_framework_schedule(fw, s, p, 0, &d, &err);
        CHECKF(rc == 0, "%s", err.msg);
        st->decisions++;
        int bad = 0;
        bad += d.node != o.node || d.n_feasible != o.feasible ||
               d.n_nodes != sched_snapshot_node_count(s) || (d.node >= 0 && d.score != o.score);
        for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
            uint32_t det;
            int64_t sc;
            sched_filter_id id = sched_framework_node_status(fw, i, &det, &sc);
            bad += id != o.status[i] || det != o.detail[i];
            if (id == SCHED_FILTER_OK) {
                bad += sc != o.scores[i];
                sched_node_cols c;
                sched_snapshot_node_cols(s, &c);
                st->flagged_feasible += c.flags[i] != 0;
            }
        }
        bad += cols_mismatches(s);
        st->steps_checked++;
        if (bad && st->first_failures++ < 5)
            printf("    %s seed %" PRIu64 " step %d pod %s: fast node %d score %" PRId64
                   " feasible %zu, reference node %d score %" PRId64 " feasible %zu, %d "
                   "mismatches\n",
                   policy, seed, step, p->name, d.node, d.score, d.n_feasible, o.node, o.score,
                   o.feasible, bad);
        CHECK(bad == 0);
        if (d.node >= 0) {
            CHECK(sched_framework_reserve(fw, s, p, d.node, &err) == 0);
            snprintf(rs.last, sizeof rs.last, "%s", sched_snapshot_node(s, (size_t)d.node)->name);
            placed[nplaced++] = strdup(p->uid);
            st->placed++;
        } else {
            st->unplaced++;
        }
        sched_pod_free(p);
    }
    for (size_t k = 0; k < nplaced; k++)
        free(placed[k]);
    free(placed);
    free(o.status);
    free(o.detail);
    free(o.scores);
    json_decref(foreign);
    sched_framework_free(fw);
    sched_cache_free(cache);
}

static void test_every_policy_matches_reference(void) {
    stats st = {0};
    for (const char *const *pn = sched_policy_names(); *pn; pn++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            run_stream(*pn, seed, 150 + 50 * (int)seed, 700, &st);
    printf("    %ld decisions (%ld placed, %ld unplaced, %ld with inter-pod filters, %ld with node "
           "selector or affinity), %ld feasible flagged nodes, %ld other schedulers' pods\n",
           st.decisions, st.placed, st.unplaced, st.inter_pod, st.affinity, st.flagged_feasible,
           st.foreign);
    CHECK(st.decisions == 6 * 3 * 700);
    /* the stream must exercise both outcomes and the paths it is meant to */
    CHECK(st.placed > 1000 && st.unplaced > 100);
    CHECK(st.inter_pod > 100 && st.decisions - st.inter_pod > 5000); /* both scans */
    CHECK(st.affinity > 1000);
    CHECK(st.flagged_feasible > 0); /* tolerated taints / unschedulable went the full way */
    CHECK(st.foreign > 500);
}

/* The reference itself agrees with the plugins' own per-node score on a small cluster, so a
 * wrong encoding here cannot hide a wrong fast path. */
static void test_reference_matches_plugin_score(void) {
    rng r = {77};
    tm_err err = {0};
    sched_snapshot *s = sched_snapshot_new();
    int gpu = sched_snapshot_resource_slot(s, "nvidia.com/gpu", &err);
    for (int i = 0; i < 60; i++) {
        char name[32];
        node_name(name, sizeof name, i);
        sched_snapshot_put_node(s, random_node(&r, name, gpu), &err);
        sched_resources req = {{0}};
        req.v[SCHED_RES_CPU] = 300 * rint_(&r, 10);
        req.v[SCHED_RES_MEMORY] = (int64_t)rint_(&r, 10) << 29;
        req.v[SCHED_RES_PODS] = 1;
        char uid[16];
        snprintf(uid, sizeof uid, "u%d", i);
        sched_snapshot_add_pod(s, uid, name, &req, &err);
    }
    sched_task_profile tp = {.labels = {2, 3, 1}, .expected_runtime_ms = 500};
    sched_snapshot_set_task(s, "wf", "PROC_1", &tp, &err);
    sched_snapshot_refresh(s);
    int compared = 0, bad = 0;
    int (*makers[])(sched_plugin *) = {sched_plugin_tarema, sched_plugin_round_robin,
                                       sched_plugin_fair, sched_plugin_fill_nodes,
                                       sched_plugin_sjfn};
    const char *names[] = {"tarema", "round-robin", "fair", "fill-nodes", "sjfn"};
    for (int k = 0; k < 5; k++)
        for (int pi = 0; pi < 8; pi++) {
            json_t *pj = random_pod_json(&r, pi, true);
            sched_pod *p = sched_pod_from_json(s, pj, NULL, &err);
            json_decref(pj);
            if (!p)
                continue;
            sched_plugin pl;
            CHECK(makers[k](&pl) == 0);
            sched_cycle c = {.snap = s, .pod = p};
            sched_task_resolve(s, p, &c.task);
            if (pl.pre_score)
                CHECK(pl.pre_score(pl.state, &c, &err) == 0);
            ref_state rs = {""};
            if (pi % 2) /* round-robin after a reservation */
                snprintf(rs.last, sizeof rs.last, "%s", sched_snapshot_node(s, 7)->name);
            if (pl.reserved && rs.last[0])
                pl.reserved(pl.state, &c, sched_snapshot_node(s, 7));
            if (pl.pre_score)
                CHECK(pl.pre_score(pl.state, &c, &err) == 0);
            for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
                const sched_node *n = sched_snapshot_node(s, i);
                bad += pl.score(pl.state, &c, n) != ref_score(names[k], s, &c.task, n, &rs);
                compared++;
            }
            if (pl.free_state)
                pl.free_state(pl.state);
            sched_pod_free(p);
        }
    CHECK(compared == 5 * 8 * 60);
    CHECK_INT(bad, 0);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_reference_matches_plugin_score);
    RUN(test_every_policy_matches_reference);
    return TEST_SUMMARY();
}
