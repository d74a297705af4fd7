/* backfill_test.c: time-aware backfill (scheduler/plugins/backfill/, docs/backfill.md) on
 * hand-worked cases: the shadow's start and nodes, the backfill rule (ends before the shadow,
 * capacity the shadow does not need, spare taken by placed pods), conservative against EASY,
 * pods with no known end, overruns, Reservations, config errors; and the starvation case end to
 * end through the framework: four 8-core nodes, a stream of 1-core 30 s pods, an 8-core pod or
 * a gang of 4x4 cores: with depth 0 it starves, with depth 1 it starts at the shadow's time. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/pod.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/policy/policy.h"

#define S  1000LL
#define T0 1795000000000LL /* now, a multiple of the resolution */

static sched_resources cpu(int cores) {
    sched_resources r = {0};
    r.v[SCHED_RES_CPU] = cores * 1000LL;
    r.v[SCHED_RES_PODS] = 1;
    return r;
}

/* A node's allocatable: cores and room for 110 pods. */
static sched_resources node_cpu(int cores) {
    sched_resources r = cpu(cores);
    r.v[SCHED_RES_PODS] = 110;
    return r;
}

/* Four 8-core nodes; node k runs eight 1-core pods, pod i (0..31) on node i % 4 ending at
 * T0 + (i + 1) s: node 0's end at 1, 5, ..., 29 s, node 3's at 4, 8, ..., 32 s. */
static size_t staggered(sched_resources alloc[4], bf_running run[32]) {
    for (int n = 0; n < 4; n++) {
        alloc[n] = cpu(8);
        alloc[n].v[SCHED_RES_PODS] = 110;
    }
    for (int i = 0; i < 32; i++)
        run[i] = (bf_running){.node = i % 4, .req = cpu(1), .end_ms = T0 + (i + 1) * S};
    return 32;
}

static bf_plan *plan_one(const bf_config *cfg, const bf_job *jobs, size_t n_jobs) {
    sched_resources alloc[4];
    bf_running run[32];
    size_t nr = staggered(alloc, run);
    bf_plan *p = bf_plan_new();
    tm_err err = {0};
    if (bf_plan_compute(p, cfg, alloc, 4, run, nr, NULL, 0, jobs, n_jobs, T0, &err) != 0)
        printf("    compute: %s\n", err.msg);
    return p;
}

/* An 8-core pod: node 0 is the first to have 8 cores free, at 29 s, if nothing starts there. */
static void test_shadow_whole_node(void) {
    sched_resources r8 = cpu(8);
    bf_job j = {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 60 * S};
    bf_config cfg = bf_config_default();
    bf_plan *p = plan_one(&cfg, &j, 1);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    const bf_shadow *s = bf_plan_shadow(p, 0);
    CHECK_INT(s->start_ms - T0, 29 * S);
    CHECK_INT(s->end_ms - T0, 89 * S);
    CHECK_INT(s->n_holds, 1);
    CHECK_INT(s->holds[0].node, 0);
    CHECK_INT(s->holds[0].spare.v[SCHED_RES_CPU], 0);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 29 * S);
    CHECK(bf_plan_shadow_of(p, "wide") == s);
    sched_resources r1 = cpu(1);
    /* ends at 10 s, before the shadow's 29 s: backfilled on node 0 */
    CHECK_INT(bf_plan_check(p, 0, "narrow", &r1, T0 + 10 * S, NULL), BF_OK);
    CHECK_INT(bf_plan_check(p, 0, "narrow", &r1, T0 + 29 * S, NULL), BF_OK); /* exactly then */
    /* 30 s from now ends after 29 s on the capacity the shadow needs: not on node 0 */
    size_t which = 99;
    CHECK_INT(bf_plan_check(p, 0, "narrow", &r1, T0 + 30 * S, &which), BF_DELAYS_SHADOW);
    CHECK_INT(which, 0);
    CHECK_INT(bf_plan_check(p, 0, "narrow", &r1, -1, NULL), BF_DELAYS_SHADOW); /* unknown end */
    /* nodes 1-3 the shadow does not need: anything goes */
    for (int n = 1; n < 4; n++)
        CHECK_INT(bf_plan_check(p, n, "narrow", &r1, -1, NULL), BF_OK);
    /* the job's own pod is not held back by its own shadow */
    CHECK_INT(bf_plan_check(p, 0, "wide", &r8, T0 + 60 * S, NULL), BF_OK);
    bf_plan_free(p);
}

/* A gang of 4 x 4 cores: 4 cores free on node 0 at 13 s, node 1 at 14, node 2 at 15, node 3 at
 * 16 s; at 16 s one member fits on each node. */
static void test_shadow_gang(void) {
    sched_resources r4[4] = {cpu(4), cpu(4), cpu(4), cpu(4)};
    bf_job j = {.key = "gang", .n_members = 4, .member_req = r4, .runtime_ms = 60 * S};
    bf_config cfg = bf_config_default();
    bf_plan *p = plan_one(&cfg, &j, 1);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    const bf_shadow *s = bf_plan_shadow(p, 0);
    CHECK_INT(s->start_ms - T0, 16 * S);
    CHECK_INT(s->n_holds, 4);
    for (size_t h = 0; h < s->n_holds; h++) {
        CHECK_INT(s->holds[h].node, (int)h);
        CHECK_INT(s->holds[h].req.v[SCHED_RES_CPU], 4000);
        /* at 16 s node h still runs 4 pods (4 ended), with the member: full */
        CHECK_INT(s->holds[h].spare.v[SCHED_RES_CPU], 0);
    }
    sched_resources r1 = cpu(1);
    CHECK_INT(bf_plan_check(p, 2, "narrow", &r1, T0 + 16 * S, NULL), BF_OK);
    CHECK_INT(bf_plan_check(p, 2, "narrow", &r1, T0 + 17 * S, NULL), BF_DELAYS_SHADOW);
    bf_plan_free(p);
}

/* Capacity the shadow does not need on its own node: 16-core nodes, the 8-core pod's shadow
 * leaves spare that long pods may use, until they have taken it. */
static void test_spare_capacity(void) {
    sched_resources alloc[1] = {cpu(16)};
    alloc[0].v[SCHED_RES_PODS] = 110;
    bf_running run[2] = {{.node = 0, .req = cpu(12), .end_ms = T0 + 10 * S},
                         {.node = 0, .req = cpu(2), .end_ms = -1}};
    sched_resources r8 = cpu(8);
    bf_job j = {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 100 * S};
    bf_config cfg = bf_config_default();
    bf_plan *p = bf_plan_new();
    tm_err err = {0};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 1, run, 2, NULL, 0, &j, 1, T0, &err), 0);
    const bf_shadow *s = bf_plan_shadow(p, 0);
    CHECK(s != NULL);
    if (!s) {
        bf_plan_free(p);
        return;
    }
    CHECK_INT(s->start_ms - T0, 10 * S);
    /* 16 - 2 (the pod with no end) - 8 (the shadow) = 6 cores spare */
    CHECK_INT(s->holds[0].spare.v[SCHED_RES_CPU], 6000);
    sched_resources r4 = cpu(4), r3 = cpu(3);
    CHECK_INT(bf_plan_check(p, 0, "long", &r4, -1, NULL), BF_OK);
    bf_plan_take(p, 0, "long", &r4, -1);
    CHECK_INT(bf_plan_check(p, 0, "long2", &r3, -1, NULL), BF_DELAYS_SHADOW);
    /* a pod ending before 10 s takes nothing of the spare */
    bf_plan_take(p, 0, "short", &r4, T0 + 5 * S);
    CHECK_INT(s->holds[0].spare.v[SCHED_RES_CPU], 2000);
    bf_plan_give(p, 0, "long", &r4, -1); /* unreserved */
    CHECK_INT(bf_plan_check(p, 0, "long2", &r3, -1, NULL), BF_OK);
    bf_plan_free(p);
}

/* EASY holds one shadow, conservative every waiting job's, each planned after those ahead. */
static void test_conservative_vs_easy(void) {
    sched_resources r8 = cpu(8), r1 = cpu(1);
    bf_job jobs[3] = {
        {.key = "a", .n_members = 1, .member_req = &r8, .runtime_ms = 60 * S},
        {.key = "b", .n_members = 1, .member_req = &r8, .runtime_ms = 60 * S},
        {.key = "c", .n_members = 1, .member_req = &r1, .runtime_ms = 5 * S},
    };
    bf_config cfg = bf_config_default();
    bf_plan *p = plan_one(&cfg, jobs, 3);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 29 * S);
    CHECK_INT(bf_plan_job_start(p, 1), -1); /* past the depth */
    bf_plan_free(p);
    cfg.reserve_depth = BF_DEPTH_ALL;
    p = plan_one(&cfg, jobs, 3);
    CHECK_INT(bf_plan_shadow_count(p), 3);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 29 * S); /* node 0 */
    CHECK_INT(bf_plan_job_start(p, 1) - T0, 30 * S); /* node 1, free at 30 s: 0 is a's */
    CHECK_INT(bf_plan_shadow(p, 1)->holds[0].node, 1);
    /* c: no core is free now; node 0 frees one at 1 s and c (5 s) is gone long before a's
     * 29 s: a third shadow at 1 s on node 0 */
    CHECK_INT(bf_plan_job_start(p, 2) - T0, 1 * S);
    CHECK_INT(bf_plan_shadow(p, 2)->holds[0].node, 0);
    bf_plan_free(p);
}

/* A job that asks exactly what an earlier one that found no start asked is not tried again (it
 * cannot find one either) but still counts against maxJobTest; one that differs in anything,
 * here only its eligible nodes, is tried. The plan is the one trying every job would make. */
static void test_same_ask_as_a_failed_job(void) {
    sched_resources r16 = cpu(16), r8 = cpu(8), r1 = cpu(1);
    bool none[4] = {false, false, false, false};
    bf_job jobs[5] = {
        {.key = "huge-1", .n_members = 1, .member_req = &r16, .runtime_ms = 60 * S},
        {.key = "huge-2", .n_members = 1, .member_req = &r16, .runtime_ms = 60 * S},
        {.key = "nowhere",
         .n_members = 1,
         .member_req = &r8,
         .runtime_ms = 60 * S,
         .eligible = none},
        {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 60 * S},
        {.key = "narrow", .n_members = 1, .member_req = &r1, .runtime_ms = 5 * S},
    };
    bf_config cfg = bf_config_default();
    cfg.reserve_depth = BF_DEPTH_ALL;
    bf_plan *p = plan_one(&cfg, jobs, 5);
    CHECK_INT(bf_plan_job_start(p, 0), -1);
    CHECK_INT(bf_plan_job_start(p, 1), -1);
    CHECK_INT(bf_plan_job_start(p, 2), -1);
    CHECK_INT(bf_plan_job_start(p, 3) - T0, 29 * S); /* the same request, every node */
    CHECK_INT(bf_plan_job_start(p, 4) - T0, 1 * S);
    CHECK_INT(bf_plan_shadow_count(p), 2);
    bf_plan_free(p);
    cfg.max_job_test = 4; /* huge-2 counted though skipped: narrow is past the bound */
    p = plan_one(&cfg, jobs, 5);
    CHECK_INT(bf_plan_job_start(p, 3) - T0, 29 * S);
    CHECK_INT(bf_plan_job_start(p, 4), -1);
    bf_plan_free(p);
    /* A gang whose members differ is tried again: first fit is not monotone for it. node0 (5
     * cores, 8 units of memory), node1 (5, 1); the gang {5/1, 1/8} fails (the 5-core member
     * takes node0 first), a 1-core job starts now on node0, and the same gang then fits (its
     * 5-core member on node1, the other on node0). */
    sched_resources alloc[2] = {cpu(5), cpu(5)};
    alloc[0].v[SCHED_RES_MEMORY] = 8;
    alloc[1].v[SCHED_RES_MEMORY] = 1;
    alloc[0].v[SCHED_RES_PODS] = alloc[1].v[SCHED_RES_PODS] = 110;
    sched_resources gang[2] = {cpu(5), cpu(1)};
    gang[0].v[SCHED_RES_MEMORY] = 1;
    gang[1].v[SCHED_RES_MEMORY] = 8;
    bf_job mixed[3] = {
        {.key = "gang-1", .n_members = 2, .member_req = gang, .runtime_ms = 60 * S},
        {.key = "one", .n_members = 1, .member_req = &r1, .runtime_ms = 60 * S},
        {.key = "gang-2", .n_members = 2, .member_req = gang, .runtime_ms = 60 * S},
    };
    p = bf_plan_new();
    tm_err err = {0};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, NULL, 0, NULL, 0, mixed, 3, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0), -1);
    CHECK_INT(bf_plan_job_start(p, 1) - T0, 0);
    CHECK_INT(bf_plan_job_start(p, 2) - T0, 0);
    bf_plan_free(p);
}

/* A 1-core job that fits now is planned as started now and counts for no depth. */
static void test_fits_now_no_depth(void) {
    sched_resources alloc[2] = {cpu(8), cpu(8)};
    bf_running run[1] = {{.node = 0, .req = cpu(8), .end_ms = T0 + 50 * S}};
    sched_resources r1 = cpu(1), r16 = cpu(16), r8 = cpu(8);
    bf_job jobs[3] = {
        {.key = "small", .n_members = 1, .member_req = &r1, .runtime_ms = 10 * S},
        {.key = "huge", .n_members = 1, .member_req = &r16, .runtime_ms = 10 * S},
        {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 10 * S},
    };
    bf_config cfg = bf_config_default();
    bf_plan *p = bf_plan_new();
    tm_err err = {0};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 3, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0), T0);          /* now, on node 1 */
    CHECK_INT(bf_plan_job_start(p, 1), -1);          /* larger than any node: never, no shadow */
    CHECK_INT(bf_plan_job_start(p, 2) - T0, 10 * S); /* node 1 once "small" ends */
    CHECK_INT(bf_plan_shadow_count(p), 1);
    CHECK_STR(bf_plan_shadow(p, 0)->key, "wide");
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 1);
    /* the spare leaves "small" out: its real placement is checked and taken like any pod's */
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].spare.v[SCHED_RES_CPU], 0);
    CHECK_INT(bf_plan_check(p, 1, "small", &r1, T0 + 10 * S, NULL), BF_OK);
    bf_plan_free(p);
}

/* Unknown ends, the default runtime, overruns, Reservations and the resolution. */
static void test_ends_and_reservations(void) {
    sched_resources alloc[2] = {cpu(8), cpu(8)};
    sched_resources r8 = cpu(8);
    bf_job j = {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 10 * S};
    bf_config cfg = bf_config_default();
    bf_plan *p = bf_plan_new();
    tm_err err = {0};
    /* node 0: a pod with no end (forever), node 1: one that overran its end */
    bf_running run[2] = {{.node = 0, .req = cpu(1), .end_ms = -1},
                         {.node = 1, .req = cpu(1), .end_ms = T0 - 5 * S}};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, NULL, 0, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 1 * S); /* the overrun is expected any moment */
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 1);
    /* with defaultRuntime 20 s the pod of unknown end, started 15 s ago, ends in 5 s */
    cfg.default_runtime_ms = 20 * S;
    run[0].start_ms = T0 - 15 * S;
    run[1].end_ms = T0 + 7300; /* 7.3 s: rounded up to 8 s */
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, NULL, 0, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 5 * S);
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 0);
    cfg.resolution_ms = 10 * S; /* 5 s rounds up to 10 s, 7.3 s too: node 0 first */
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, NULL, 0, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 10 * S);
    /* a Reservation holding node 0 from 8 s to 100 s: the shadow goes to node 1 at 8 s */
    cfg.resolution_ms = 1 * S;
    bf_busy busy = {.node = 0, .req = cpu(4), .start_ms = T0 + 8 * S, .end_ms = T0 + 100 * S};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, &busy, 1, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 8 * S);
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 1);
    /* depth 0: nothing held */
    cfg.reserve_depth = 0;
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, &busy, 1, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 0);
    sched_resources r1 = cpu(1);
    CHECK_INT(bf_plan_check(p, 0, "x", &r1, -1, NULL), BF_OK);
    bf_plan_free(p);
}

/* More ends than BF_MAX_CANDIDATES start times: the step doubles, the window stays covered. A
 * node running 1,500 pods ending at 1..1,500 s (1 s apart) is whole again at 1,500 s: with the
 * step doubled to 2 s (750 times) the shadow is found there, not lost past the 1,024th time. */
static void test_many_ends_coarsen(void) {
    sched_resources alloc[1] = {cpu(8)};
    alloc[0].v[SCHED_RES_PODS] = 5000;
    bf_running *run = calloc(1500, sizeof *run);
    for (int i = 0; i < 1500; i++) {
        run[i] = (bf_running){.node = 0, .end_ms = T0 + (i + 1) * S};
        run[i].req.v[SCHED_RES_CPU] = 1;
    }
    sched_resources r8 = cpu(8);
    r8.v[SCHED_RES_PODS] = 0;
    bf_job j = {.key = "wide", .n_members = 1, .member_req = &r8, .runtime_ms = 10 * S};
    bf_config cfg = bf_config_default();
    bf_plan *p = bf_plan_new();
    tm_err err = {0};
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 1, run, 1500, NULL, 0, &j, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 1500 * S);
    bf_plan_free(p);
    free(run);
}

static void test_config_errors(void) {
    int d = 7;
    tm_err err = {0};
    CHECK_INT(bf_depth_parse("all", &d, &err), 0);
    CHECK_INT(d, BF_DEPTH_ALL);
    CHECK_INT(bf_depth_parse("0", &d, &err), 0);
    CHECK_INT(d, 0);
    CHECK_INT(bf_depth_parse("12", &d, &err), 0);
    CHECK_INT(d, 12);
    CHECK_INT(bf_depth_parse("-1", &d, &err), -1);
    CHECK(strstr(err.msg, "backfill.reserveDepth '-1'") != NULL);
    CHECK_INT(bf_depth_parse("one", &d, &err), -1);
    CHECK_INT(bf_depth_parse("", &d, &err), -1);
    bf_config c = bf_config_default();
    CHECK_INT(c.reserve_depth, 1);
    CHECK_INT(bf_config_check(&c, &err), 0);
    c.resolution_ms = 0;
    CHECK_INT(bf_config_check(&c, &err), -1);
    CHECK(strstr(err.msg, "backfill.resolution") != NULL);
    c = bf_config_default();
    c.max_job_test = 0;
    CHECK_INT(bf_config_check(&c, &err), -1);
    CHECK(strstr(err.msg, "backfill.maxJobTest") != NULL);
    bf_plan *p = bf_plan_new();
    CHECK_INT(bf_plan_compute(p, &c, NULL, 0, NULL, 0, NULL, 0, NULL, 0, T0, &err), -1);
    bf_plan_free(p);
}

/* ---- end to end through the framework: the starvation case ---- */

typedef struct spod {
    sched_pod *pod;
    int node;
    int64_t end; /* real end, -1 while pending */
} spod;

static const char *key_of(void *ud, const sched_pod *p) {
    return p->name;
}

/* Four 8-core nodes filled by the staggered pods; the wide job (members x cores, 60 s) arrives
 * at 0 s, then two 1-core 30 s pods a second for stream_s seconds. Each second (after the ends
 * and arrivals) the queue is scheduled in order, the wide job's members all or none. Returns
 * when the wide job started (s from T0), or -1 if not before horizon_s. */
static int64_t stream_case(int depth, int members, int cores, int stream_s, int horizon_s) {
    int max = 32 + 2 * stream_s + members;
    spod *ps = calloc((size_t)max, sizeof *ps);
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    for (int n = 0; n < 4; n++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", n);
        sched_node *nd = sched_node_new(name);
        nd->ready = true;
        nd->allocatable = cpu(8);
        nd->allocatable.v[SCHED_RES_MEMORY] = 32LL << 30;
        nd->allocatable.v[SCHED_RES_PODS] = 110;
        sched_snapshot_put_node(s, nd, &err);
    }
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    bf_config cfg = bf_config_default();
    cfg.reserve_depth = depth;
    CHECK_INT(bf_plugin_add(fw, &cfg, key_of, NULL, &err), 0);
    int n = 0;
    char nm[32], uid[32];
    for (int i = 0; i < 32; i++) { /* the running pods, ending at 1..32 s */
        snprintf(uid, sizeof uid, "r%d", i);
        ps[n] = (spod){sched_pod_new("t", uid, uid), i % 4, T0 + (i + 1) * S};
        ps[n].pod->requests = cpu(1);
        ps[n].pod->expected_duration_ms = 30 * S;
        sched_pod_record(s, ps[n].pod, sched_snapshot_node(s, (size_t)(i % 4))->name, &err);
        n++;
    }
    int wide0 = n;
    for (int m = 0; m < members; m++) {
        snprintf(uid, sizeof uid, "wide-%d", m);
        ps[n] = (spod){sched_pod_new("t", "wide", uid), -1, -1};
        ps[n].pod->requests = cpu(cores);
        ps[n].pod->expected_duration_ms = 60 * S;
        n++;
    }
    int64_t started = -1;
    for (int t = 0; t <= horizon_s && started < 0; t++) {
        int64_t now = T0 + t * S;
        for (int i = 0; i < n; i++)
            if (ps[i].end >= 0 && ps[i].end <= now && ps[i].node >= 0) {
                sched_snapshot_remove_pod(s, ps[i].pod->uid);
                ps[i].node = -2; /* done */
            }
        for (int k = 0; k < 2 && t < stream_s; k++) {
            snprintf(nm, sizeof nm, "narrow-%d-%d", t, k);
            ps[n] = (spod){sched_pod_new("t", nm, nm), -1, -1};
            ps[n].pod->requests = cpu(1);
            ps[n].pod->expected_duration_ms = 30 * S;
            n++;
        }
        /* the plan: running pods (expected ends), the queue in order (wide first) */
        bf_running run[64];
        size_t nr = 0;
        sched_resources alloc[4];
        for (int k = 0; k < 4; k++)
            alloc[k] = sched_snapshot_node(s, (size_t)k)->allocatable;
        for (int i = 0; i < n && nr < 64; i++)
            if (ps[i].node >= 0)
                run[nr++] = (bf_running){
                    .node = ps[i].node, .req = ps[i].pod->requests, .end_ms = ps[i].end};
        sched_resources wreq[8];
        for (int m = 0; m < members; m++)
            wreq[m] = cpu(cores);
        bf_job jobs[1] = {{.key = "wide",
                           .n_members = (size_t)members,
                           .member_req = wreq,
                           .runtime_ms = 60 * S}};
        bool wide_pending = ps[wide0].node == -1;
        CHECK_INT(bf_plan_compute(bf_plugin_plan(fw), &cfg, alloc, 4, run, nr, NULL, 0, jobs,
                                  wide_pending ? 1 : 0, now, &err),
                  0);
        /* the queue: wide (all members or none), then the narrow pods by arrival */
        int placed = 0;
        for (int m = 0; m < members && wide_pending; m++) {
            sched_decision d;
            sched_framework_schedule(fw, s, ps[wide0 + m].pod, now, &d, &err);
            if (d.node < 0)
                break;
            sched_framework_reserve(fw, s, ps[wide0 + m].pod, d.node, &err);
            ps[wide0 + m].node = d.node;
            placed++;
        }
        if (wide_pending && placed == members) {
            started = t;
            for (int m = 0; m < members; m++)
                ps[wide0 + m].end = now + 60 * S;
        } else {
            for (int m = 0; m < placed; m++) {
                sched_framework_unreserve(fw, s, ps[wide0 + m].pod, ps[wide0 + m].node, now);
                ps[wide0 + m].node = -1;
            }
        }
        for (int i = wide0 + members; i < n; i++) {
            if (ps[i].node != -1)
                continue;
            sched_decision d;
            sched_framework_schedule(fw, s, ps[i].pod, now, &d, &err);
            if (d.node < 0)
                continue;
            sched_framework_reserve(fw, s, ps[i].pod, d.node, &err);
            ps[i].node = d.node;
            ps[i].end = now + 30 * S;
        }
    }
    for (int i = 0; i < n; i++)
        sched_pod_free(ps[i].pod);
    free(ps);
    sched_framework_free(fw);
    sched_snapshot_free(s);
    return started;
}

static void test_starvation_whole_node_pod(void) {
    int64_t d0 = stream_case(0, 1, 8, 300, 300);
    printf("    8-core pod behind a 300 s stream of 1-core pods: depth 0 starts at %lld s "
           "(-1: not within 300 s), ",
           (long long)d0);
    CHECK_INT(d0, -1);
    int64_t d1 = stream_case(1, 1, 8, 300, 300);
    printf("depth 1 at %lld s (shadow: 29 s)\n", (long long)d1);
    CHECK_INT(d1, 29);
}

static void test_starvation_gang(void) {
    int64_t d0 = stream_case(0, 4, 4, 300, 300);
    printf("    gang of 4x4 cores behind the same stream: depth 0 starts at %lld s, ",
           (long long)d0);
    CHECK_INT(d0, -1);
    int64_t d1 = stream_case(1, 4, 4, 300, 300);
    printf("depth 1 at %lld s (shadow: 16 s)\n", (long long)d1);
    CHECK_INT(d1, 16);
}

/* The plugin's reason names whom the node is held for and from when (what FailedScheduling and
 * explain show), and counts a pod placed in front of a shadow as backfilled. */
static void test_plugin_reason_and_count(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_node *nd = sched_node_new("n0");
    nd->ready = true;
    nd->allocatable = cpu(8);
    nd->allocatable.v[SCHED_RES_MEMORY] = 32LL << 30;
    nd->allocatable.v[SCHED_RES_PODS] = 110;
    sched_snapshot_put_node(s, nd, &err);
    sched_pod *r = sched_pod_new("t", "running", "running");
    r->requests = cpu(4);
    sched_pod_record(s, r, "n0", &err);
    sched_framework *fw = sched_policy_new("fill-nodes", &err);
    bf_config cfg = bf_config_default();
    CHECK_INT(bf_plugin_add(fw, &cfg, key_of, NULL, &err), 0);
    sched_resources alloc[1] = {cpu(8)};
    bf_running run[1] = {{.node = 0, .req = cpu(4), .end_ms = T0 + 10 * S}};
    sched_resources wreq[1] = {cpu(8)};
    bf_job jobs[1] = {{.key = "pod t/wide", .n_members = 1, .member_req = wreq, .runtime_ms = S}};
    CHECK_INT(
        bf_plan_compute(bf_plugin_plan(fw), &cfg, alloc, 1, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(bf_plugin_plan(fw)), 1);
    sched_pod *lng = sched_pod_new("t", "long", "long");
    lng->requests = cpu(1);
    lng->expected_duration_ms = 30 * S;
    sched_decision d;
    CHECK_INT(sched_framework_schedule(fw, s, lng, T0, &d, &err), 0);
    CHECK_INT(d.node, -1);
    char msg[512];
    sched_framework_fit_message(fw, s, msg, sizeof msg);
    CHECK(strstr(msg, "node(s) were held for pod t/wide from 2026-11-18T") != NULL);
    if (!strstr(msg, "held for pod t/wide"))
        printf("    message: %s\n", msg);
    sched_pod *sh = sched_pod_new("t", "short", "short");
    sh->requests = cpu(1);
    sh->expected_duration_ms = 5 * S;
    CHECK_INT(sched_framework_schedule(fw, s, sh, T0, &d, &err), 0);
    CHECK_INT(d.node, 0);
    CHECK_INT(bf_plugin_backfilled(fw), 0);
    CHECK_INT(sched_framework_reserve(fw, s, sh, d.node, &err), 0);
    CHECK_INT(bf_plugin_backfilled(fw), 1);
    char when[32];
    CHECK_STR(bf_format_time(T0 + 10 * S, when, sizeof when), "2026-11-18T11:06:50Z");
    sched_pod_free(r);
    sched_pod_free(lng);
    sched_pod_free(sh);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A job that fits now but waits out a backoff (hold_now) gets a shadow starting now, counting
 * for the depth; without the flag it holds nothing and a pod behind it may take its place. */
static void test_hold_now(void) {
    bf_plan *p = bf_plan_new();
    bf_config cfg = bf_config_default();
    tm_err err = {0};
    sched_resources alloc[2] = {cpu(8), cpu(8)};
    bf_running run[1] = {{.node = 1, .req = cpu(4), .end_ms = T0 + 100 * S}};
    sched_resources wreq[1] = {cpu(8)};
    bf_job jobs[1] = {{.key = "wide", .n_members = 1, .member_req = wreq, .runtime_ms = 60 * S}};
    sched_resources one = cpu(1);
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 0);
    CHECK_INT(bf_plan_job_start(p, 0), T0);
    CHECK_INT(bf_plan_check(p, 0, "narrow", &one, T0 + 30 * S, NULL), BF_OK);
    jobs[0].hold_now = true;
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    CHECK_INT(bf_plan_shadow(p, 0)->start_ms, T0);
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 0);
    CHECK_INT(bf_plan_check(p, 0, "narrow", &one, T0 + 30 * S, NULL), BF_DELAYS_SHADOW);
    CHECK_INT(bf_plan_check(p, 1, "narrow", &one, T0 + 30 * S, NULL), BF_OK);
    CHECK_INT(bf_plan_check(p, 0, "wide", &wreq[0], T0 + 60 * S, NULL), BF_OK); /* its own */
    bf_plan_free(p);
}

/* Conservative (depth all): a gang held now (it waits out a backoff) with a 1-core pod's shadow
 * planned on its node right at its end. The gang's members, placed a moment after the plan (their
 * ends a second past its end), are not held back by that shadow behind them in the queue: it was
 * planned around them (on the cluster, a 4-pod Big Job on 2 nodes of 4 cores waited 36 s, its
 * last member refused by the shadows of the pods behind it, until no pod was queued behind it). */
static void test_not_held_by_shadows_behind(void) {
    bf_plan *p = bf_plan_new();
    bf_config cfg = bf_config_default();
    cfg.reserve_depth = BF_DEPTH_ALL;
    tm_err err = {0};
    sched_resources alloc[2] = {node_cpu(4), node_cpu(4)};
    bf_running run[1] = {{.node = 1, .req = cpu(4), .end_ms = T0 + 100 * S}};
    sched_resources one = cpu(1), g[4] = {cpu(1), cpu(1), cpu(1), cpu(1)};
    bf_job jobs[2] = {
        {.key = "gang", .n_members = 4, .member_req = g, .runtime_ms = 60 * S, .hold_now = true},
        {.key = "b", .n_members = 1, .member_req = &one, .runtime_ms = 20 * S},
    };
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 2, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 2);
    if (bf_plan_shadow_count(p) != 2) {
        bf_plan_free(p);
        return;
    }
    CHECK_INT(bf_plan_shadow(p, 0)->start_ms, T0);
    CHECK_INT(bf_plan_shadow(p, 1)->start_ms - T0, 60 * S); /* b: node 0 at the gang's end */
    CHECK_INT(bf_plan_shadow(p, 1)->holds[0].node, 0);
    /* the gang is at the head: its pods are not backfilled; b's and a pod of no shadow are */
    CHECK_INT(bf_plan_shadows_ahead(p, "gang"), 0);
    CHECK_INT(bf_plan_shadows_ahead(p, "b"), 1);
    CHECK_INT(bf_plan_shadows_ahead(p, "n"), 2);
    for (int m = 0; m < 4; m++) {
        CHECKF(bf_plan_check(p, 0, "gang", &one, T0 + 61 * S, NULL) == BF_OK, "member %d held", m);
        bf_plan_take(p, 0, "gang", &one, T0 + 61 * S);
    }
    /* b's shadow never counted them (planned from the gang's end): they went from its spare */
    CHECK_INT(bf_plan_shadow(p, 1)->holds[0].spare.v[SCHED_RES_CPU], -1000);
    /* and a member expected to run far into b's shadow is still not held back by it */
    CHECK_INT(bf_plan_check(p, 0, "gang", &one, T0 + 90 * S, NULL), BF_OK);
    /* a pod of no shadow is still held back, by the gang's shadow first */
    size_t which = 9;
    CHECK_INT(bf_plan_check(p, 0, "n", &one, T0 + 70 * S, &which), BF_DELAYS_SHADOW);
    CHECK_INT(which, 0);
    bf_plan_free(p);
}

/* A job's pods placed within its own hold are where the plan put it: the shadows ahead of it
 * counted them in their spare already, so they are not counted twice. Node 0 (11 cores) runs 8
 * until 30 s; "wide" (8 cores) gets node 0 at 30 s; a 2-pod gang held now fits beside it (8 + 2
 * of 11): the wide shadow's spare is 1 core, and stays 1 while the gang's own pods go. */
static void test_own_hold_counted_once(void) {
    bf_plan *p = bf_plan_new();
    bf_config cfg = bf_config_default();
    cfg.reserve_depth = BF_DEPTH_ALL;
    tm_err err = {0};
    sched_resources alloc[2] = {node_cpu(11), node_cpu(10)};
    bf_running run[2] = {{.node = 0, .req = cpu(8), .end_ms = T0 + 30 * S},
                         {.node = 1, .req = cpu(10), .end_ms = T0 + 200 * S}};
    sched_resources one = cpu(1), two = cpu(2), w = cpu(8), g[2] = {cpu(1), cpu(1)};
    bf_job jobs[2] = {
        {.key = "wide", .n_members = 1, .member_req = &w, .runtime_ms = 60 * S},
        {.key = "gang", .n_members = 2, .member_req = g, .runtime_ms = 60 * S, .hold_now = true},
    };
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 2, NULL, 0, jobs, 2, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 2);
    if (bf_plan_shadow_count(p) != 2) {
        bf_plan_free(p);
        return;
    }
    const bf_shadow_hold *wh = &bf_plan_shadow(p, 0)->holds[0];
    CHECK_INT(bf_plan_shadow(p, 0)->start_ms - T0, 30 * S);
    CHECK_INT(bf_plan_shadow(p, 1)->start_ms, T0);
    CHECK_INT(bf_plan_shadow(p, 1)->holds[0].node, 0);
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], 1000);
    for (int m = 0; m < 2; m++) {
        CHECKF(bf_plan_check(p, 0, "gang", &one, T0 + 60 * S, NULL) == BF_OK, "member %d held", m);
        bf_plan_take(p, 0, "gang", &one, T0 + 60 * S);
    }
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], 1000); /* not counted twice */
    /* so a pod of no shadow still has the 1 core the plan left beside both */
    CHECK_INT(bf_plan_check(p, 0, "n", &one, T0 + 60 * S, NULL), BF_OK);
    /* a pod of the gang beyond its hold is checked as any pod: it fits the 1 core too */
    CHECK_INT(bf_plan_check(p, 0, "gang", &one, T0 + 60 * S, NULL), BF_OK);
    bf_plan_take(p, 0, "n", &one, T0 + 60 * S);
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], 0);
    CHECK_INT(bf_plan_check(p, 0, "n2", &one, T0 + 60 * S, NULL), BF_DELAYS_SHADOW);
    CHECK_INT(bf_plan_check(p, 0, "gang", &one, T0 + 60 * S, NULL), BF_DELAYS_SHADOW);
    /* a member unreserved gives its place back to the gang, not to the others */
    bf_plan_give(p, 0, "gang", &one, T0 + 60 * S);
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], 0);
    CHECK_INT(bf_plan_check(p, 0, "n2", &one, T0 + 60 * S, NULL), BF_DELAYS_SHADOW);
    CHECK_INT(bf_plan_check(p, 0, "gang", &one, T0 + 60 * S, NULL), BF_OK);
    /* a member expected to run past the gang's planned end (its node group is slower): the
     * wide shadow, which runs on past it, never counted that part: checked in full */
    CHECK_INT(bf_plan_check(p, 0, "gang", &one, T0 + 90 * S, NULL), BF_DELAYS_SHADOW);
    /* takes and gives in any order: 2 cores (1 within the hold, 1 beyond), then the first
     * member given back leaves exactly the hold placed, nothing beyond it */
    bf_plan_take(p, 0, "gang", &two, T0 + 60 * S);
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], -1000);
    bf_plan_give(p, 0, "gang", &one, T0 + 60 * S);
    CHECK_INT(wh->spare.v[SCHED_RES_CPU], 0);
    CHECK_INT(bf_plan_shadow(p, 1)->holds[0].placed.v[SCHED_RES_CPU], 2000);
    bf_plan_free(p);
}

/* A shadow that starts later than now gives its pods no such allowance: started early, a pod
 * would use the node while the plan had it free for the shadows ahead of it. */
static void test_future_hold_checked_in_full(void) {
    bf_plan *p = bf_plan_new();
    bf_config cfg = bf_config_default();
    cfg.reserve_depth = BF_DEPTH_ALL;
    tm_err err = {0};
    sched_resources alloc[1] = {node_cpu(4)};
    bf_running run[1] = {{.node = 0, .req = cpu(4), .end_ms = T0 + 10 * S}};
    sched_resources four = cpu(4), one = cpu(1);
    bf_job jobs[2] = {
        {.key = "a", .n_members = 1, .member_req = &four, .runtime_ms = 20 * S},
        {.key = "b", .n_members = 1, .member_req = &four, .runtime_ms = 20 * S},
    };
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 1, run, 1, NULL, 0, jobs, 2, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 2);
    if (bf_plan_shadow_count(p) != 2) {
        bf_plan_free(p);
        return;
    }
    CHECK_INT(bf_plan_shadow(p, 1)->start_ms - T0, 30 * S);
    /* b's pod now (a's capacity, ending at 25 s, after a's start): a's shadow holds it back */
    CHECK_INT(bf_plan_check(p, 0, "b", &one, T0 + 25 * S, NULL), BF_DELAYS_SHADOW);
    /* and a's pod is never held back by b's shadow, behind it */
    CHECK_INT(bf_plan_check(p, 0, "a", &four, T0 + 40 * S, NULL), BF_OK);
    bf_plan_free(p);
}

/* not_before_ms (a pod released early, held by its order gate until its predecessors end): its
 * shadow starts then at the earliest, on the first node with room then, never now; pods that end
 * by then are backfilled on it, the others are kept off; past the window, no shadow. */
static void test_not_before(void) {
    bf_plan *p = bf_plan_new();
    bf_config cfg = bf_config_default();
    tm_err err = {0};
    sched_resources alloc[2] = {cpu(8), cpu(8)};
    alloc[0].v[SCHED_RES_PODS] = alloc[1].v[SCHED_RES_PODS] = 110;
    /* node 0 half busy until 100 s, node 1 empty */
    bf_running run[1] = {{.node = 0, .req = cpu(4), .end_ms = T0 + 100 * S}};
    sched_resources req[1] = {cpu(4)};
    bf_job jobs[1] = {{.key = "held",
                       .n_members = 1,
                       .member_req = req,
                       .runtime_ms = 30 * S,
                       .not_before_ms = T0 + 20 * S}};
    sched_resources one = cpu(1);
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 1);
    const bf_shadow *sh = bf_plan_shadow(p, 0);
    CHECK_INT(sh->start_ms - T0, 20 * S); /* it would fit now: it may not start before 20 s */
    CHECK_INT(sh->end_ms - T0, 50 * S);
    CHECK_INT(sh->holds[0].node, 0); /* first fit at 20 s: node 0's free half */
    CHECK_INT(bf_plan_job_start(p, 0) - T0, 20 * S);
    CHECK_INT(bf_plan_check(p, 0, "narrow", &one, T0 + 20 * S, NULL), BF_OK); /* ends by then */
    CHECK_INT(bf_plan_check(p, 0, "narrow", &one, T0 + 21 * S, NULL), BF_DELAYS_SHADOW);
    CHECK_INT(bf_plan_check(p, 1, "narrow", &one, -1, NULL), BF_OK);
    /* an 8-core member: node 0 has 8 free only at 100 s, node 1 at once: 20 s on node 1 */
    req[0] = cpu(8);
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow(p, 0)->start_ms - T0, 20 * S);
    CHECK_INT(bf_plan_shadow(p, 0)->holds[0].node, 1);
    /* in the past: an ordinary job (fits now, nothing held) */
    jobs[0].not_before_ms = T0 - 5 * S;
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 0);
    CHECK_INT(bf_plan_job_start(p, 0), T0);
    /* beyond the window: not planned */
    jobs[0].not_before_ms = T0 + cfg.window_ms + S;
    CHECK_INT(bf_plan_compute(p, &cfg, alloc, 2, run, 1, NULL, 0, jobs, 1, T0, &err), 0);
    CHECK_INT(bf_plan_shadow_count(p), 0);
    CHECK_INT(bf_plan_job_start(p, 0), -1);
    bf_plan_free(p);
}

int main(void) {
    RUN(test_plugin_reason_and_count);
    RUN(test_hold_now);
    RUN(test_not_before);
    RUN(test_not_held_by_shadows_behind);
    RUN(test_own_hold_counted_once);
    RUN(test_future_hold_checked_in_full);
    RUN(test_shadow_whole_node);
    RUN(test_shadow_gang);
    RUN(test_spare_capacity);
    RUN(test_conservative_vs_easy);
    RUN(test_same_ask_as_a_failed_job);
    RUN(test_fits_now_no_depth);
    RUN(test_ends_and_reservations);
    RUN(test_many_ends_coarsen);
    RUN(test_config_errors);
    RUN(test_starvation_whole_node_pod);
    RUN(test_starvation_gang);
    return TEST_SUMMARY();
}
