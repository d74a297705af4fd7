/* dam_waits_test.c: the predicted wait from a member cluster's learned waits (the labeler's
 * asa_waits rows, as lab_waits_store_list returns them): the record for the job's shape, the
 * job's namespace first, and its precedence over the ASA ConfigMap and the pending pods. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dam/signals.h"
#include "harness.h"
#include "labeler/waits.h"
#include "lib/jsonutil.h"

/* A record of shape (ns, pods, cpu, mem) that observed `wait` n times. */
static waits_record fed(const char *ns, int pods, long long cpu, long long mem, double wait,
                        int n) {
    asa_config cfg;
    asa_config_default(&cfg, ASA_POLICY_TUNED);
    waits_record r;
    asa_key k;
    tm_err err = {0};
    asa_key_make(&k, ns, "", pods, cpu, mem, &err);
    waits_record_init(&r, &k);
    asa_rng rng;
    asa_rng_seed(&rng, 7);
    for (int i = 0; i < n; i++)
        waits_observe(&r, &cfg, wait, &rng, &err);
    return r;
}

static void test_pick_shape_and_namespace(void) {
    waits_record v[4] = {
        fed("other", 2, 4000, 1LL << 30, 60, 30), fed("science", 2, 4000, 1LL << 30, 600, 5),
        fed("science", 3, 4000, 1LL << 30, 3600, 30), fed("busy", 2, 4000, 1LL << 30, 3600, 50)};
    dam_shape sh = {.ns = "science", .pods = 2, .cpu_milli = 4000, .mem_bytes = 1LL << 30};
    double own = waits_estimate(&v[1]);
    CHECKF(fabs(dam_waits_pick(v, 4, &sh) - own) < 1e-9, "own namespace: %g, want %g",
           dam_waits_pick(v, 4, &sh), own);
    /* no record in its namespace: the most observed one of the same shape elsewhere */
    sh.ns = "nowhere";
    CHECK(fabs(dam_waits_pick(v, 4, &sh) - waits_estimate(&v[3])) < 1e-9);
    sh.pods = 5; /* unknown shape */
    CHECK(dam_waits_pick(v, 4, &sh) < 0);
    CHECK(dam_waits_pick(NULL, 0, &sh) < 0);
}

static void test_learned_wait_first(void) {
    waits_record v[1] = {fed("science", 2, 4000, 1LL << 30, 900, 20)};
    dam_shape sh = {.ns = "science", .pods = 2, .cpu_milli = 4000, .mem_bytes = 1LL << 30};
    json_t *pods = json_array(), *e = json_object();
    dam_cluster_objects o = {.pods = pods, .waits = v, .nwaits = 1, .has_waits = 1};
    tm_err err = {0};
    CHECK(dam_signals_fill(e, &o, &sh, 1e9, &err) == 0);
    double want = waits_estimate(&v[0]);
    CHECKF(fabs(tm_json_num(e, "wait.predicted", -1) - want) < 1e-9, "wait %s, want %g",
           json_dumps(e, JSON_COMPACT), want);
    json_decref(e);
    /* no record of the shape: no predicted wait from the database */
    sh.pods = 9;
    e = json_object();
    CHECK(dam_signals_fill(e, &o, &sh, 1e9, &err) == 0);
    CHECK(!tm_json_path(e, "wait.predicted"));
    json_decref(e);
    json_decref(pods);
}

int main(void) {
    RUN(test_pick_shape_and_namespace);
    RUN(test_learned_wait_first);
    return TEST_SUMMARY();
}
