/* dam_federation_test.c: the DAM paper's simulation (sim/federation.h) with the dam/rank code
 * as its greedy strategy: greedy keeps the simulation jobs on the fast cluster that holds the
 * data in setup 1 and spreads them in setup 2, beats both baselines, and is deterministic. */
#include <string.h>

#include "harness.h"
#include "sim/federation.h"

static size_t hpc_index(const char *name) {
    for (size_t i = 0; i < fed_hpc_count(); i++)
        if (strcmp(fed_hpc_name(i), name) == 0)
            return i;
    return 99;
}

static void test_setup1_greedy_on_supermuc(void) {
    fed_result r;
    tm_err err = {0};
    CHECK_INT(fed_run(1, FED_GREEDY, 1, &r, &err), 0);
    /* lrz-supermuc-ng: fastest cores (s2 = 1), same site as the data (s4 = e^-1 against
     * e^-2 at IT4I), equal load; every simulation job goes there */
    CHECK_INT(r.hpc_choices[hpc_index("lrz-supermuc-ng")], FED_WORKFLOWS);
    int total = 0;
    for (size_t i = 0; i < fed_hpc_count(); i++)
        total += r.hpc_choices[i];
    CHECK_INT(total, FED_WORKFLOWS);
}

static void test_setup2_spreads(void) {
    fed_result r;
    tm_err err = {0};
    CHECK_INT(fed_run(2, FED_GREEDY, 1, &r, &err), 0);
    CHECK(r.hpc_choices[hpc_index("lrz-supermuc-ng")] < FED_WORKFLOWS);
    CHECK(r.hpc_choices[hpc_index("it4i-karolina")] > 0);
}

static void test_greedy_beats_baselines(void) {
    for (int setup = 1; setup <= 2; setup++) {
        fed_result g, rnd, rr;
        tm_err err = {0};
        CHECK_INT(fed_run(setup, FED_GREEDY, 1, &g, &err), 0);
        CHECK_INT(fed_run(setup, FED_RANDOM, 1, &rnd, &err), 0);
        CHECK_INT(fed_run(setup, FED_ROUND_ROBIN, 1, &rr, &err), 0);
        CHECKF(g.mean_s < 0.85 * rnd.mean_s && g.mean_s < 0.85 * rr.mean_s,
               "setup %d: greedy %.0f random %.0f round-robin %.0f", setup, g.mean_s, rnd.mean_s,
               rr.mean_s);
        /* every workflow takes at least its three jobs' run times on the fastest resources */
        for (int i = 0; i < FED_WORKFLOWS; i++)
            CHECK(g.time_s[i] >= 4000 + 80000 + 4000);
    }
}

static void test_deterministic(void) {
    fed_result a, b;
    tm_err err = {0};
    CHECK_INT(fed_run(2, FED_RANDOM, 7, &a, &err), 0);
    CHECK_INT(fed_run(2, FED_RANDOM, 7, &b, &err), 0);
    CHECK(memcmp(a.time_s, b.time_s, sizeof a.time_s) == 0);
    CHECK_INT(fed_run(3, FED_GREEDY, 1, &a, &err), -1);
    CHECK(strstr(err.msg, "setup") != NULL);
}

int main(void) {
    RUN(test_setup1_greedy_on_supermuc);
    RUN(test_setup2_spreads);
    RUN(test_greedy_beats_baselines);
    RUN(test_deterministic);
    return TEST_SUMMARY();
}
