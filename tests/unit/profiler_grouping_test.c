/* profiler_grouping_test.c: k-means++, silhouette and node grouping on profiles shaped like the
 * tarema paper's Table IV (5;5;5 and 5;4;4;2 clusters), homogeneous and identical sets, and
 * randomized well-separated sets whose planted grouping must be recovered. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "profiler/grouping.h"
#include "profiler/kmeans.h"
#include "profiler/report.h"
#include "profiler/silhouette.h"

/* A profile with the given CPU and memory figures and the paper's HDD I/O figures. */
static prof_profile mk(const char *name, double cpu, double mem, double rw) {
    prof_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.node, sizeof p.node, "%s", name);
    p.cores = 8;
    p.memory_bytes = 32LL << 30;
    p.cpu_single_eps = cpu;
    p.cpu_multi_eps = cpu * 8;
    p.mem_mibps = mem;
    p.rand_write_iops = rw;
    p.rand_read_iops = 102;
    p.seq_write_iops = 483;
    p.seq_read_iops = 481;
    return p;
}

static double uni(prof_rng *r, double lo, double hi) {
    return lo + (hi - lo) * prof_rng_uniform(r);
}

typedef struct shape {
    const char *prefix;
    int count;
    double cpu_lo, cpu_hi, mem_lo, mem_hi;
} shape;

/* Builds profiles from Table IV-like ranges; node names are prefix-index. */
static size_t build(const shape *s, int nshape, prof_profile *out, uint64_t seed) {
    prof_rng r;
    prof_rng_seed(&r, seed);
    size_t n = 0;
    for (int i = 0; i < nshape; i++)
        for (int j = 0; j < s[i].count; j++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%d", s[i].prefix, j + 1);
            out[n++] = mk(name, uni(&r, s[i].cpu_lo, s[i].cpu_hi),
                          uni(&r, s[i].mem_lo, s[i].mem_hi), uni(&r, 107, 108));
        }
    return n;
}

static const prof_group *group_of(const prof_grouping *g, size_t i) {
    return &g->groups[g->group_of[i]];
}

/* Groups with the default options; a failure's message is printed under the test. */
static int group_default(const prof_profile *p, size_t n, prof_grouping *g) {
    prof_group_opts o;
    prof_group_opts_default(&o);
    tm_err err;
    int rc = prof_group_nodes(p, n, &o, g, &err);
    if (rc != 0)
        printf("    grouping failed: %s\n", err.msg);
    return rc;
}

static void test_silhouette_by_hand(void) {
    double x[] = {0, 1, 10, 11};
    int a[] = {0, 0, 1, 1};
    tm_err err;
    CHECK_NEAR(prof_silhouette(x, 4, 1, a, 2, &err), (0.9047619048 + 0.8947368421) / 2, 1e-9);
    int single[] = {0, 1, 1, 1}; /* a singleton scores 0 */
    double s = prof_silhouette(x, 4, 1, single, 2, &err);
    /* point 1: a = (9+10)/2, b = 1; point 10: a = (9+1)/2, b = 10; point 11: a = (10+1)/2,
     * b = 11 */
    double e = (0 + (1 - 9.5) / 9.5 + (10 - 5.0) / 10 + (11 - 5.5) / 11) / 4;
    CHECK_NEAR(s, e, 1e-9);
    int bad[] = {0, 0, 2, 1};
    CHECK(isnan(prof_silhouette(x, 4, 1, bad, 2, &err)));
    CHECK(strstr(err.msg, "point 2") != NULL);
}

static void test_kmeans_recovers_and_is_seeded(void) {
    double x[30 * 2];
    prof_rng r;
    prof_rng_seed(&r, 7);
    for (int i = 0; i < 30; i++) {
        x[2 * i] = (i % 3) * 10 + uni(&r, -1, 1);
        x[2 * i + 1] = (i % 3 == 1) * 10 + uni(&r, -1, 1);
    }
    prof_kmeans_result a, b;
    tm_err err;
    prof_rng r1, r2;
    prof_rng_seed(&r1, 42);
    prof_rng_seed(&r2, 42);
    CHECK_INT(prof_kmeans(x, 30, 2, 3, 5, 100, &r1, &a, &err), 0);
    CHECK_INT(prof_kmeans(x, 30, 2, 3, 5, 100, &r2, &b, &err), 0);
    CHECK(memcmp(a.assign, b.assign, 30 * sizeof(int)) == 0);
    for (int i = 3; i < 30; i++)
        CHECK_INT(a.assign[i], a.assign[i % 3]);
    CHECK(a.assign[0] != a.assign[1] && a.assign[1] != a.assign[2] && a.assign[0] != a.assign[2]);
    CHECK(a.inertia < 30 * 2.0);
    prof_kmeans_result_free(&a);
    prof_kmeans_result_free(&b);
    double same[] = {1, 1, 1, 1, 2, 2};
    CHECK_INT(prof_kmeans(same, 3, 2, 3, 1, 10, &r1, &a, &err), 1); /* only 2 distinct points */
    CHECK_INT(prof_kmeans(same, 3, 2, 4, 1, 10, &r1, &a, &err), -1);
    CHECK(strstr(err.msg, "k=4") != NULL);
}

static void test_paper_555(void) {
    shape s[] = {{"n1", 5, 367, 384, 13800, 14300},
                 {"n2", 5, 458, 468, 17500, 17700},
                 {"c2", 5, 523, 525, 19800, 19900}};
    prof_profile p[15];
    size_t n = build(s, 3, p, 555);
    prof_grouping g;
    CHECK_INT(group_default(p, n, &g), 0);
    CHECK_INT(g.k, 3);
    for (size_t i = 0; i < n; i++) {
        int want = (int)(i / 5) + 1; /* n1 slowest: group 1, c2 fastest: group 3 */
        CHECK_INT(group_of(&g, i)->id, want);
        CHECK_INT(group_of(&g, i)->label[PROF_L_CPU], want);
        CHECK_INT(group_of(&g, i)->label[PROF_L_MEM], want);
        CHECK_INT(group_of(&g, i)->label[PROF_L_IO], 1); /* identical HDDs share the label */
    }
    CHECK(g.silhouette[3] > g.silhouette[2]);
    CHECK_INT(g.groups[0].total_cores, 40);
    printf("    5;5;5: k=%d silhouette k=2 %.3f k=3 %.3f k=4 %.3f\n", g.k, g.silhouette[2],
           g.silhouette[3], g.silhouette[4]);
    prof_group_opts o;
    prof_group_opts_default(&o);
    json_t *doc = prof_grouping_to_json(&g, p, &o);
    CHECK_INT(json_integer_value(json_object_get(doc, "k")), 3);
    json_t *g0 = json_array_get(json_object_get(doc, "groups"), 0);
    CHECK_STR(json_string_value(json_object_get(json_object_get(g0, "labels"), "tarema.io/cpu")),
              "1");
    CHECK_STR(json_string_value(json_array_get(json_object_get(g0, "nodes"), 0)), "n1-1");
    CHECK_INT(json_integer_value(json_object_get(g0, "id")), 1);
    CHECK_INT(json_integer_value(json_object_get(g0, "total_cores")), 40);
    double c0 = json_number_value(json_object_get(json_object_get(g0, "centroid"), "cpu_single"));
    CHECK(c0 >= 367 && c0 <= 384);
    CHECK_STR(json_string_value(json_object_get(json_object_get(g0, "labels"), "tarema.io/group")),
              "1");
    CHECK(json_is_real(json_object_get(json_object_get(doc, "silhouette"), "10")));
    CHECK_INT(json_array_size(json_object_get(doc, "nodes")), 15);
    json_decref(doc);
    /* The readable table: the silhouette of every k, one row per group, each group's nodes. */
    char *table = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&table, &len);
    prof_report_table(f, &g, p);
    fclose(f);
    CHECKF(strstr(table, "15 nodes, k=3") && strstr(table, "k=2 ") && strstr(table, "k=10 "), "%s",
           table);
    CHECKF(strstr(table, "\n1         5     40 ") && strstr(table, "\n3         5     40 "), "%s",
           table);
    CHECKF(strstr(table, "group 3: c2-1, c2-2, c2-3, c2-4, c2-5"), "%s", table);
    free(table);
    prof_grouping_free(&g);
}

static void test_paper_5442(void) {
    /* Table IV: the E2 and N1 nodes measure alike and form one group of nine. */
    shape s[] = {{"e2", 5, 368, 384, 13100, 14200},
                 {"n1", 4, 368, 384, 13100, 14200},
                 {"n2", 4, 469, 470, 17700, 17800},
                 {"c2", 2, 522, 524, 19800, 19800}};
    prof_profile p[15];
    size_t n = build(s, 4, p, 5442);
    prof_grouping g;
    CHECK_INT(group_default(p, n, &g), 0);
    CHECK_INT(g.k, 3);
    CHECK_INT(g.groups[0].nmembers, 9);
    CHECK_INT(g.groups[1].nmembers, 4);
    CHECK_INT(g.groups[2].nmembers, 2);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(group_of(&g, i)->id, i < 9 ? 1 : i < 13 ? 2 : 3);
    printf("    5;4;4;2: k=%d silhouette k=2 %.3f k=3 %.3f k=4 %.3f\n", g.k, g.silhouette[2],
           g.silhouette[3], g.silhouette[4]);
    prof_grouping_free(&g);
}

static void test_homogeneous_is_one_group(void) {
    shape s[] = {{"n1", 15, 367, 384, 13800, 14300}};
    prof_profile p[15];
    size_t n = build(s, 1, p, 1);
    prof_grouping g;
    CHECK_INT(group_default(p, n, &g), 0);
    CHECK_INT(g.k, 1);
    CHECK_INT(g.groups[0].nmembers, 15);
    CHECK_INT(g.groups[0].label[PROF_L_CPU], 1);
    CHECK(strstr(g.reason, "noise") != NULL);
    prof_grouping_free(&g);
    /* Identical nodes, with zero noise allowed: still one group, never a split. */
    for (size_t i = 0; i < n; i++)
        p[i] = mk(p[i].node, 400, 14000, 107);
    prof_group_opts o;
    prof_group_opts_default(&o);
    o.noise = 0;
    tm_err err;
    CHECK_INT(prof_group_nodes(p, n, &o, &g, &err), 0);
    CHECK_INT(g.k, 1);
    prof_grouping_free(&g);
}

static void test_noise_split_rejected(void) {
    /* Spread wider than the noise range overall (so k-means runs), but any split of a uniform
     * spread gives neighbouring groups closer than the noise: one group. */
    prof_profile p[40];
    prof_rng r;
    prof_rng_seed(&r, 3);
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        p[i] = mk(name, uni(&r, 400, 424), uni(&r, 14000, 14800), 107);
    }
    prof_grouping g;
    CHECK_INT(group_default(p, 40, &g), 0);
    CHECK_INT(g.k, 1);
    CHECK(g.k_tried_max == 10);
    CHECK(!isnan(g.silhouette[2]) && g.silhouette[2] > 0.3); /* silhouette alone would split */
    prof_grouping_free(&g);
}

static void test_small_sets(void) {
    prof_profile p[2] = {mk("a", 400, 14000, 107), mk("b", 800, 20000, 107)};
    prof_group_opts o;
    prof_group_opts_default(&o);
    prof_grouping g;
    tm_err err;
    CHECK_INT(prof_group_nodes(p, 1, &o, &g, &err), 0);
    CHECK_INT(g.k, 1);
    prof_grouping_free(&g);
    CHECK_INT(prof_group_nodes(p, 2, &o, &g, &err), 0);
    CHECK_INT(g.k, 2);
    CHECK_INT(group_of(&g, 1)->id, 2);
    prof_grouping_free(&g);
    CHECK_INT(prof_group_nodes(p, 0, &o, &g, &err), -1);
    CHECK(strstr(err.msg, "no node profiles") != NULL);
    o.features[1] = PROF_F_CPU_SINGLE;
    CHECK_INT(prof_group_nodes(p, 2, &o, &g, &err), -1);
    CHECK(strstr(err.msg, "cpu_single") != NULL);
    prof_feature f;
    CHECK_INT(prof_feature_parse("gpu", &f, &err), -1);
    CHECK(strstr(err.msg, "gpu") != NULL && strstr(err.msg, "rand_io") != NULL);
}

/* Edge shapes: eleven identical nodes and one faster (the faster one is its own group, the
 * eleven are never split), two nodes within noise (one group), and figures so large that the
 * product of read and write IOPS overflows a double (they are valid figures: the combined I/O
 * feature must still be their geometric mean, not infinity). */
static void test_edge_shapes(void) {
    prof_profile p[12];
    for (int i = 0; i < 11; i++) {
        char name[16];
        snprintf(name, sizeof name, "same-%02d", i);
        p[i] = mk(name, 400, 14000, 107);
    }
    p[11] = mk("fast", 800, 20000, 107);
    prof_grouping g;
    CHECK_INT(group_default(p, 12, &g), 0);
    CHECK_INT(g.k, 2);
    if (g.k == 2) {
        CHECK_INT(g.groups[0].nmembers, 11);
        CHECK_INT(group_of(&g, 11)->id, 2);
        CHECK_INT(group_of(&g, 11)->label[PROF_L_CPU], 2);
    }
    prof_grouping_free(&g);
    p[1] = mk("near", 410, 14100, 107); /* 2.5 % faster: within the 5 % noise */
    CHECK_INT(group_default(p, 2, &g), 0);
    CHECK_INT(g.k, 1);
    prof_grouping_free(&g);
    prof_profile big[4] = {mk("h1", 400, 14000, 107), mk("h2", 400, 14000, 107),
                           mk("h3", 400, 14000, 107), mk("h4", 400, 14000, 107)};
    for (int i = 2; i < 4; i++)
        big[i].seq_read_iops = big[i].seq_write_iops = 1e200;
    CHECK_NEAR(prof_feature_value(&big[2], PROF_F_SEQ_IO), 1e200, 1e188);
    CHECK_INT(group_default(big, 4, &g), 0);
    CHECK_INT(g.k, 2);
    if (g.k == 2)
        CHECK_INT(group_of(&g, 3)->label[PROF_L_IO], 2);
    prof_grouping_free(&g);
}

/* Scaling: memory in MiB/s (about 14,000, spread 7 %) must not outweigh CPU in events/s
 * (400 vs 800). Unscaled, the memory spread (1,000) exceeds the CPU gap (400) and k-means
 * would split by memory. Also a non-default feature selection: only the chosen features'
 * labels are set. */
static void test_scaling_and_features(void) {
    prof_profile p[20];
    prof_rng r;
    prof_rng_seed(&r, 11);
    for (int i = 0; i < 20; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%02d", i);
        p[i] = mk(name, i < 10 ? 400 : 800, uni(&r, 13500, 14500), 107);
    }
    prof_grouping g;
    CHECK_INT(group_default(p, 20, &g), 0);
    CHECK_INT(g.k, 2);
    for (int i = 0; i < 20 && g.k == 2; i++)
        CHECK_INT(group_of(&g, (size_t)i)->id, i < 10 ? 1 : 2);
    prof_grouping_free(&g);
    prof_group_opts o;
    prof_group_opts_default(&o);
    o.features[0] = PROF_F_CPU_MULTI;
    o.nfeatures = 1;
    tm_err err;
    CHECK_INT(prof_group_nodes(p, 20, &o, &g, &err), 0);
    CHECK_INT(g.k, 2);
    CHECK_INT(g.k_tried_max, 10);
    if (g.k == 2) {
        CHECK_INT(g.groups[1].label[PROF_L_CPU], 2);
        CHECK_INT(g.groups[1].label[PROF_L_MEM], 0); /* memory not selected: no mem label */
    }
    json_t *doc = prof_grouping_to_json(&g, p, &o);
    json_t *l = json_object_get(json_array_get(json_object_get(doc, "groups"), 1), "labels");
    CHECK_STR(json_string_value(json_object_get(l, "tarema.io/cpu")), "2");
    CHECK(json_object_get(l, "tarema.io/mem") == NULL &&
          json_object_get(l, "tarema.io/io") == NULL);
    json_decref(doc);
    prof_grouping_free(&g);
    CHECK_INT(prof_group_nodes(p + 8, 4, &o, &g, &err), 0); /* k = 2..min(10, n - 1) */
    CHECK_INT(g.k_tried_max, 3);
    prof_grouping_free(&g);
}

/* Planted groups: per feature, each group gets a distinct level base * 1.6^perm[g]; nodes
 * jitter by +-2 %. The recovered partition must equal the planted one. */
static void test_random_planted(void) {
    enum { TRIALS = 25, MAXN = 6 * 30 };
    prof_rng r;
    prof_rng_seed(&r, 2024);
    int recovered = 0;
    for (int t = 0; t < TRIALS; t++) {
        int k = 2 + (int)(prof_rng_uniform(&r) * 5); /* 2..6 */
        double lvl[6][4];
        for (int f = 0; f < 4; f++) {
            int perm[6] = {0, 1, 2, 3, 4, 5};
            for (int i = k - 1; i > 0; i--) {
                int j = (int)(prof_rng_uniform(&r) * (i + 1));
                int tmp = perm[i];
                perm[i] = perm[j];
                perm[j] = tmp;
            }
            for (int g = 0; g < k; g++)
                lvl[g][f] = pow(1.6, perm[g]);
        }
        static prof_profile p[MAXN];
        int planted[MAXN];
        size_t n = 0;
        for (int g = 0; g < k; g++) {
            int size = 2 + (int)(prof_rng_uniform(&r) * 29);
            for (int m = 0; m < size; m++) {
                char name[32];
                snprintf(name, sizeof name, "t%d-g%d-%d", t, g, m);
                prof_profile q = mk(name, 300 * lvl[g][0] * uni(&r, 0.98, 1.02),
                                    9000 * lvl[g][1] * uni(&r, 0.98, 1.02), 100);
                double io_s = 400 * lvl[g][2], io_r = 150 * lvl[g][3];
                q.seq_read_iops = io_s * uni(&r, 0.98, 1.02);
                q.seq_write_iops = io_s * uni(&r, 0.98, 1.02);
                q.rand_read_iops = io_r * uni(&r, 0.98, 1.02);
                q.rand_write_iops = io_r * uni(&r, 0.98, 1.02);
                planted[n] = g;
                p[n++] = q;
            }
        }
        prof_group_opts o;
        prof_group_opts_default(&o);
        o.seed = (uint64_t)t;
        prof_grouping gr;
        tm_err err;
        CHECK_INT(prof_group_nodes(p, n, &o, &gr, &err), 0);
        int same = gr.k == k;
        for (size_t i = 0; i < n && same; i++)
            for (size_t j = i + 1; j < n && same; j++)
                same = (planted[i] == planted[j]) == (gr.group_of[i] == gr.group_of[j]);
        CHECKF(same, "trial %d: planted k=%d, found k=%d", t, k, gr.k);
        recovered += same;
        prof_grouping_free(&gr);
    }
    printf("    planted groupings recovered: %d/%d\n", recovered, TRIALS);
}

int main(void) {
    RUN(test_silhouette_by_hand);
    RUN(test_kmeans_recovers_and_is_seeded);
    RUN(test_paper_555);
    RUN(test_paper_5442);
    RUN(test_homogeneous_is_one_group);
    RUN(test_noise_split_rejected);
    RUN(test_small_sets);
    RUN(test_edge_shapes);
    RUN(test_scaling_and_features);
    RUN(test_random_planted);
    return TEST_SUMMARY();
}
