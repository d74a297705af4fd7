/* dam_rank_test.c: the DAM ranking: hand-computed means, exclusion reasons, the maintenance
 * mask, failover bans, deterministic ties and bad input. */
#include <string.h>

#include "dam/rank.h"
#include "harness.h"

static const char *const AMD64[] = {"amd64"};

static dam_cluster cl(const char *name, double used, double total, double perf, double wait) {
    dam_cluster c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.site = "s1";
    c.location = "l1";
    c.cores_used = used;
    c.cores_total = total;
    c.perf_per_core = perf;
    c.wait_s = wait;
    c.architectures = AMD64;
    c.narchitectures = 1;
    return c;
}

static dam_job jb(void) {
    dam_job j;
    memset(&j, 0, sizeof j);
    j.name = "j";
    j.cores = 10;
    j.runtime_s = 100;
    return j;
}

static dam_input inp(const dam_cluster *c, size_t n) {
    dam_input in;
    memset(&in, 0, sizeof in);
    in.clusters = c;
    in.nclusters = n;
    dam_weights_default(&in.weights);
    in.now_s = 1000;
    return in;
}

static const dam_result *find(const dam_ranking *rk, const dam_input *in, const char *name) {
    for (size_t i = 0; i < rk->n; i++)
        if (strcmp(in->clusters[rk->r[i].cluster].name, name) == 0)
            return &rk->r[i];
    return NULL;
}

static void test_hand_computed(void) {
    /* A: idle, fastest, no wait, no data: (1 + 1 + 1 + 1) / 4 = 1
     * B: half used (1/1.5), half as fast (0.5), waits as long as it runs (100/200 = 0.5), no
     *    data (1): (0.666667 + 0.5 + 0.5 + 1) / 4 = 0.666667 */
    dam_cluster c[] = {cl("b", 50, 100, 50, 100), cl("a", 0, 100, 100, 0)};
    dam_input in = inp(c, 2);
    dam_job j = jb();
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_INT(rk.nranked, 2);
    CHECK_STR(c[rk.chosen].name, "a");
    CHECK_NEAR(rk.r[0].mean, 1.0, 1e-12);
    CHECK_NEAR(rk.r[1].mean, (2.0 / 3 + 0.5 + 0.5 + 1) / 4, 1e-12);
    /* perf weight 0.25 (the paper's setup 2): B = (0.666667 + 0.125 + 0.5 + 1) / 3.25 */
    in.weights.w[DAM_S_PERF] = 0.25;
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_NEAR(rk.r[1].mean, (2.0 / 3 + 0.125 + 0.5 + 1) / 3.25, 1e-12);
}

static void test_runtime_scales_with_speed(void) {
    /* runtime 100 s at 50 events/s: 50 s on cores of 100; its wait score 50/(50+50) = 0.5 */
    dam_cluster c[] = {cl("a", 0, 100, 100, 50)};
    dam_input in = inp(c, 1);
    dam_job j = jb();
    j.reference_perf = 50;
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_NEAR(rk.r[0].run_s, 50, 1e-12);
    CHECK_NEAR(rk.r[0].score[DAM_S_WAIT], 0.5, 1e-12);
    CHECK_NEAR(rk.r[0].expected_end_s, 1000 + 50 + 50, 1e-9);
}

static void test_data_location_decides(void) {
    /* same clusters but for where the data lies: local x=0 (1) beats other site x=2 (e^-2) */
    dam_cluster c[] = {cl("far", 0, 100, 100, 0), cl("near", 0, 100, 100, 0)};
    c[0].site = "s2";
    c[0].location = "l2";
    dam_dataset d = {"in", "l1", "s1", 1e9};
    const char *names[] = {"in"};
    dam_input in = inp(c, 2);
    in.datasets = &d;
    in.ndatasets = 1;
    dam_job j = jb();
    j.datasets = names;
    j.ndatasets = 1;
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_STR(c[rk.chosen].name, "near");
    CHECK_NEAR(find(&rk, &in, "far")->score[DAM_S_DATA], 0.1353352832, 1e-9);
}

static void test_unmeasured_perf_counts_as_slowest(void) {
    dam_cluster c[] = {cl("fast", 0, 100, 200, 0), cl("slow", 0, 100, 100, 0),
                       cl("unknown", 0, 100, 0, 0)};
    dam_input in = inp(c, 3);
    dam_job j = jb();
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_NEAR(find(&rk, &in, "unknown")->score[DAM_S_PERF], 0.5, 1e-12); /* 100/200 */
}

static void test_exclusions_with_reasons(void) {
    static const char *const ARM[] = {"arm64"};
    static const char *const BB[] = {"burst-buffer"};
    dam_resource gpu_need = {"nvidia.com/gpu", 2}, gpu_have = {"nvidia.com/gpu", 1};
    dam_cluster c[] = {cl("ok", 0, 100, 100, 0),        cl("small", 0, 5, 100, 0),
                       cl("arm", 0, 100, 100, 0),       cl("onegpu", 0, 100, 100, 0),
                       cl("nostorage", 0, 100, 100, 0), cl("lowmem", 0, 100, 100, 0),
                       cl("gone", 0, 0, 0, 0)};
    for (int i = 0; i < 6; i++) {
        c[i].storage = BB;
        c[i].nstorage = 1;
        c[i].accelerators = &gpu_need;
        c[i].naccelerators = 1;
    }
    c[2].architectures = ARM;
    c[3].accelerators = &gpu_have;
    c[4].nstorage = 0;
    c[5].memory_bytes = 1e9;
    c[6].unreachable = 1;
    c[6].unreachable_reason = "connection refused";
    dam_input in = inp(c, 7);
    dam_job j = jb();
    j.architecture = "amd64";
    j.accelerators = &gpu_need;
    j.naccelerators = 1;
    j.storage = BB;
    j.nstorage = 1;
    j.memory_bytes = 2e9;
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_INT(rk.nranked, 1);
    CHECK_STR(c[rk.chosen].name, "ok");
    CHECK_INT(find(&rk, &in, "small")->excluded, DAM_NO_CORES);
    CHECK(strstr(find(&rk, &in, "small")->reason, "needs 10"));
    CHECK_INT(find(&rk, &in, "arm")->excluded, DAM_NO_ARCH);
    CHECK(strstr(find(&rk, &in, "arm")->reason, "amd64"));
    CHECK_INT(find(&rk, &in, "onegpu")->excluded, DAM_NO_ACCEL);
    CHECK(strstr(find(&rk, &in, "onegpu")->reason, "nvidia.com/gpu"));
    CHECK_INT(find(&rk, &in, "nostorage")->excluded, DAM_NO_STORAGE);
    CHECK(strstr(find(&rk, &in, "nostorage")->reason, "burst-buffer"));
    CHECK_INT(find(&rk, &in, "lowmem")->excluded, DAM_NO_MEMORY);
    CHECK_INT(find(&rk, &in, "gone")->excluded, DAM_UNREACHABLE);
    CHECK(strstr(find(&rk, &in, "gone")->reason, "connection refused"));
    CHECK_NEAR(find(&rk, &in, "gone")->mean, 0, 0);
    /* excluded ones come after the ranked, by name */
    CHECK_STR(c[rk.r[1].cluster].name, "arm");
    CHECK_STR(c[rk.r[6].cluster].name, "small");
}

static void test_maintenance_mask(void) {
    /* now 1000, run 100 s, wait 0: the job's frame is [1000, 1100) */
    dam_window now_in[] = {{900, 1050}};
    dam_window ends_in[] = {{1099, 1200}};
    dam_window after[] = {{1100, 1200}};
    dam_window overlapping[] = {{1300, 1400}, {1050, 1350}}; /* merged into [1050, 1400) */
    dam_cluster c[] = {cl("now", 0, 100, 100, 0), cl("ends", 0, 100, 100, 0),
                       cl("after", 0, 100, 100, 0), cl("overlap", 0, 100, 100, 0)};
    c[0].windows = now_in;
    c[0].nwindows = 1;
    c[1].windows = ends_in;
    c[1].nwindows = 1;
    c[2].windows = after;
    c[2].nwindows = 1;
    c[3].windows = overlapping;
    c[3].nwindows = 2;
    dam_input in = inp(c, 4);
    dam_job j = jb();
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_INT(rk.nranked, 1);
    CHECK_STR(c[rk.chosen].name, "after");
    CHECK_INT(find(&rk, &in, "now")->excluded, DAM_MAINTENANCE);
    CHECK(strstr(find(&rk, &in, "now")->reason, "in a window now"));
    CHECK_INT(find(&rk, &in, "ends")->excluded, DAM_MAINTENANCE);
    CHECK(strstr(find(&rk, &in, "ends")->reason, "before the job's expected end"));
    const dam_result *o = find(&rk, &in, "overlap");
    CHECK_INT(o->excluded, DAM_MAINTENANCE);
    CHECK_INT(o->windows_merged, 1);
    /* the merged window is named, running to 1400 (1970-01-01T00:23:20Z) */
    CHECK(strstr(o->reason, "00:23:20Z"));
    /* a long wait moves the expected end into the 'after' window too */
    c[2].wait_s = 50;
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_INT(rk.nranked, 0);
    CHECK_INT(rk.chosen, -1);
}

static void test_failover_ban(void) {
    dam_cluster c[] = {cl("best", 0, 100, 100, 0), cl("second", 50, 100, 100, 0)};
    dam_input in = inp(c, 2);
    dam_job j = jb();
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_STR(c[rk.chosen].name, "best");
    const char *failed[] = {"best"};
    j.failed_on = failed;
    j.nfailed_on = 1;
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_STR(c[rk.chosen].name, "second");
    CHECK_INT(find(&rk, &in, "best")->excluded, DAM_BANNED);
    CHECK(strstr(find(&rk, &in, "best")->reason, "failed here"));
}

static void test_ties_by_name_any_order(void) {
    dam_cluster c1[] = {cl("zeta", 10, 100, 100, 0), cl("alpha", 10, 100, 100, 0),
                        cl("mid", 10, 100, 100, 0)};
    dam_cluster c2[] = {c1[2], c1[0], c1[1]};
    dam_job j = jb();
    dam_ranking r1, r2;
    tm_err err = {0};
    dam_input i1 = inp(c1, 3), i2 = inp(c2, 3);
    CHECK_INT(dam_rank(&i1, &j, &r1, &err), 0);
    CHECK_INT(dam_rank(&i2, &j, &r2, &err), 0);
    CHECK_STR(c1[r1.chosen].name, "alpha");
    CHECK_STR(c2[r2.chosen].name, "alpha");
    for (size_t k = 0; k < 3; k++)
        CHECK_STR(c1[r1.r[k].cluster].name, c2[r2.r[k].cluster].name);
}

#define EXPECT_ERR(in, job, needle)                                                                \
    do {                                                                                           \
        dam_ranking rk_;                                                                           \
        tm_err e_ = {0};                                                                           \
        CHECK_INT(dam_rank(&(in), &(job), &rk_, &e_), -1);                                         \
        CHECKF(strstr(e_.msg, needle) != NULL, "message '%s' lacks '%s'", e_.msg, needle);         \
    } while (0)

static void test_bad_input(void) {
    dam_cluster c[] = {cl("a", 0, 100, 100, 0), cl("b", 0, 100, 100, 0)};
    dam_input in = inp(c, 2);
    dam_job j = jb();
    const char *unknown[] = {"nope"};
    j.datasets = unknown;
    j.ndatasets = 1;
    EXPECT_ERR(in, j, "job.datasets[0]: unknown dataset 'nope'");
    j = jb();
    j.cores = 0;
    EXPECT_ERR(in, j, "job.cores");
    j = jb();
    j.runtime_s = -5;
    EXPECT_ERR(in, j, "job.runtime");
    j = jb();
    c[1].cores_used = 200;
    EXPECT_ERR(in, j, "clusters[1].cores.used: 200 is more than cores.total 100");
    c[1].cores_used = 0;
    c[1].name = "a";
    EXPECT_ERR(in, j, "clusters[1].name: 'a' also at clusters[0]");
    c[1].name = "b";
    dam_window bad[] = {{200, 100}};
    c[0].windows = bad;
    c[0].nwindows = 1;
    EXPECT_ERR(in, j, "clusters[0].maintenance[0].end");
    c[0].nwindows = 0;
    in.weights.w[DAM_S_WAIT] = -1;
    EXPECT_ERR(in, j, "weights.wait");
    dam_weights_default(&in.weights);
    for (int k = 0; k < DAM_NSCORES; k++)
        in.weights.w[k] = 0;
    EXPECT_ERR(in, j, "weights: all zero");
    dam_weights_default(&in.weights);
    c[0].wait_s = -1;
    EXPECT_ERR(in, j, "clusters[0].wait");
}

static void test_unreachable_still_answers(void) {
    dam_cluster c[] = {cl("down", 0, 0, 0, -1), cl("up", 10, 100, 100, 0)};
    c[0].unreachable = 1; /* its signals are garbage: not checked, not ranked */
    dam_input in = inp(c, 2);
    dam_job j = jb();
    dam_ranking rk;
    tm_err err = {0};
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_STR(c[rk.chosen].name, "up");
    CHECK_INT(find(&rk, &in, "down")->excluded, DAM_UNREACHABLE);
    /* reachable but without nodes: excluded for cores, the others still ranked */
    c[0].unreachable = 0;
    c[0].wait_s = 0;
    CHECK_INT(dam_rank(&in, &j, &rk, &err), 0);
    CHECK_INT(rk.chosen, 1);
    const dam_result *down = find(&rk, &in, "down");
    CHECK(down && down->excluded == DAM_NO_CORES);
    c[0].cores_total = -1;
    EXPECT_ERR(in, j, "clusters[0].cores.total: -1 must be >= 0");
}

int main(void) {
    RUN(test_hand_computed);
    RUN(test_runtime_scales_with_speed);
    RUN(test_data_location_decides);
    RUN(test_unmeasured_perf_counts_as_slowest);
    RUN(test_exclusions_with_reasons);
    RUN(test_maintenance_mask);
    RUN(test_failover_ban);
    RUN(test_ties_by_name_any_order);
    RUN(test_bad_input);
    RUN(test_unreachable_still_answers);
    return TEST_SUMMARY();
}
