/* sim_backfill_test.c: tarema-sim backfill (sim/backfill_sim.h): every job runs under every
 * discipline, the same seed gives the same result, strict FIFO backfills nothing, a bad mix is
 * refused, and on the small overloaded cluster of docs/backfill.md (four 8-core nodes, 5 % wide
 * jobs) EASY bounds the wide jobs' wait that first fit leaves to chance. */
#include <string.h>

#include "harness.h"
#include "sim/backfill_sim.h"

static sim_bf_mix small(void) {
    sim_bf_mix m = sim_bf_mix_default();
    m.nodes = 4;
    m.wide_share = 0.05;
    m.load = 1.5;
    m.jobs = 400;
    m.seed = 1;
    return m;
}

static void test_every_mode_runs_and_repeats(void) {
    sim_bf_mix m = small();
    m.jobs = 150;
    for (int k = 0; k < SIM_BF_MODES; k++) {
        sim_bf_result a, b;
        tm_err err = {0};
        CHECKF(sim_bf_run(&m, (sim_bf_mode)k, &a, &err) == 0, "%s", err.msg);
        CHECKF(sim_bf_run(&m, (sim_bf_mode)k, &b, &err) == 0, "%s", err.msg);
        CHECK(a.utilisation > 0 && a.utilisation <= 1);
        CHECK(a.makespan_s > 0);
        CHECK(a.wait_p99_s >= 0 && a.wide_wait_max_s >= a.wide_wait_mean_s);
        CHECK(memcmp(&a, &b, sizeof a) == 0); /* deterministic */
        if (k == SIM_BF_FIFO)
            CHECK_INT(a.backfilled, 0);
        else
            CHECK(a.backfilled > 0);
    }
}

static void test_easy_bounds_wide_waits(void) {
    sim_bf_mix m = small();
    sim_bf_result ff, fifo, easy;
    tm_err err = {0};
    CHECKF(sim_bf_run(&m, SIM_BF_FIRST_FIT, &ff, &err) == 0, "%s", err.msg);
    CHECKF(sim_bf_run(&m, SIM_BF_FIFO, &fifo, &err) == 0, "%s", err.msg);
    CHECKF(sim_bf_run(&m, SIM_BF_EASY, &easy, &err) == 0, "%s", err.msg);
    printf("    first-fit: util %.3f, wide max wait %.0f s; fifo: util %.3f; easy: util %.3f, "
           "wide max wait %.0f s\n",
           ff.utilisation, ff.wide_wait_max_s, fifo.utilisation, easy.utilisation,
           easy.wide_wait_max_s);
    CHECK(easy.wide_wait_max_s < ff.wide_wait_max_s);
    CHECK(easy.wait_p99_s < ff.wait_p99_s);
    CHECK(easy.utilisation > fifo.utilisation);
}

static void test_bad_mix(void) {
    sim_bf_mix m = small();
    m.overestimate = 0.5;
    sim_bf_result r;
    tm_err err = {0};
    CHECK_INT(sim_bf_run(&m, SIM_BF_EASY, &r, &err), -1);
    CHECK(strstr(err.msg, "overestimate") != NULL);
    m = small();
    m.cores = 2; /* a whole-node wide job of 2 cores fits; gangs of 1-core members too */
    CHECKF(sim_bf_run(&m, SIM_BF_EASY, &r, &err) == 0, "%s", err.msg);
    m = small();
    m.policy = "no-such-policy";
    CHECK_INT(sim_bf_run(&m, SIM_BF_EASY, &r, &err), -1);
    CHECK(strstr(err.msg, "no-such-policy") != NULL);
}

int main(void) {
    RUN(test_every_mode_runs_and_repeats);
    RUN(test_easy_bounds_wide_waits);
    RUN(test_bad_mix);
    return TEST_SUMMARY();
}
