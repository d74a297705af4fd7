/* labeler_labels_test.c: the percentile labelling formula (paper IV-C) on hand-computed
 * examples, and node groups -> per-feature classes. */
#include <math.h>

#include "harness.h"
#include "labeler/groups.h"
#include "labeler/labels.h"

static void test_quantile_interpolation(void) {
    double x[] = {10, 20, 30, 40};
    CHECK_NEAR(lab_quantile(x, 4, 0.0), 10, 0);
    CHECK_NEAR(lab_quantile(x, 4, 1.0), 40, 0);
    CHECK_NEAR(lab_quantile(x, 4, 0.5), 25, 1e-12); /* h = 1.5 */
    CHECK(lab_quantile(x, 4, 1.0 / 3) == 20);       /* h = 1, exactly an order statistic */
    CHECK(lab_quantile(x, 4, 1.0 / 3 + 1.0 / 3) == 30);
    double one[] = {7};
    CHECK_NEAR(lab_quantile(one, 1, 0.3), 7, 0);
}

/* Three groups with 4, 4, 8 cores; values 10..100: p1 = 0.25 -> h = 2.25 -> 32.5,
 * p2 = 0.5 -> h = 4.5 -> 55. */
static void test_three_groups(void) {
    double v[] = {100, 90, 80, 70, 60, 50, 40, 30, 20, 10}; /* unsorted on purpose */
    lab_classes c = {3, {4, 4, 8}};
    double b[LAB_MAX_CLASSES];
    tm_err err = {{0}, 0};
    CHECK_INT(lab_bounds(v, 10, &c, b, &err), 2);
    CHECK_NEAR(b[0], 32.5, 1e-12);
    CHECK_NEAR(b[1], 55, 1e-12);
    CHECK_INT(lab_label(20, b, 2), 1);
    CHECK_INT(lab_label(32.4999, b, 2), 1);
    CHECK_INT(lab_label(32.5, b, 2), 2); /* exactly on a bound: the upper interval */
    CHECK_INT(lab_label(40, b, 2), 2);
    CHECK_INT(lab_label(55, b, 2), 3);
    CHECK_INT(lab_label(1e9, b, 2), 3);
    CHECK_INT(lab_label(0, b, 2), 1);
}

static void test_one_group(void) {
    double v[] = {5, 1, 3};
    lab_classes c = {1, {16}};
    double b[LAB_MAX_CLASSES];
    tm_err err = {{0}, 0};
    CHECK_INT(lab_bounds(v, 3, &c, b, &err), 0);
    CHECK_INT(lab_label(0, b, 0), 1);
    CHECK_INT(lab_label(1e12, b, 0), 1);
}

/* Ties: four samples of 5 and one of 10, two equal groups: the median is 5, and every process
 * at 5 lies on the bound and is labelled 2. */
static void test_tied_values(void) {
    double v[] = {5, 10, 5, 5, 5};
    lab_classes c = {2, {8, 8}};
    double b[LAB_MAX_CLASSES];
    tm_err err = {{0}, 0};
    CHECK_INT(lab_bounds(v, 5, &c, b, &err), 1);
    CHECK(b[0] == 5);
    CHECK_INT(lab_label(5, b, 1), 2);
    CHECK_INT(lab_label(4.99, b, 1), 1);
}

static void test_bad_inputs(void) {
    double v[] = {1, 2};
    double b[LAB_MAX_CLASSES];
    tm_err err = {{0}, 0};
    lab_classes none = {0, {0}};
    CHECK_INT(lab_bounds(v, 2, &none, b, &err), -1);
    CHECK(strstr(err.msg, "0 node groups") != NULL);
    lab_classes zero = {2, {4, 0}};
    CHECK_INT(lab_bounds(v, 2, &zero, b, &err), -1);
    CHECK(strstr(err.msg, "group 2") != NULL);
    lab_classes ok = {2, {4, 4}};
    CHECK_INT(lab_bounds(v, 0, &ok, b, &err), -1);
}

/* A workflow with three processes. cpu samples sorted: 10 20 30 40 50 60 100; cores 1,1,2:
 * p1 = 0.25 -> h = 1.5 -> 25; p2 = 0.5 -> h = 3 -> 40. Means: a 15 -> 1, b 35 -> 2,
 * c 70 -> 3. Nobody reported memory: unlabeled. Only a reported io. */
static void test_workflow(void) {
    lab_sample s[] = {
        {"c", {50, NAN, NAN}, 1000},  {"a", {10, NAN, 100}, 10}, {"b", {30, NAN, NAN}, NAN},
        {"c", {60, NAN, NAN}, 2000},  {"a", {20, NAN, 300}, 30}, {"b", {40, NAN, NAN}, NAN},
        {"c", {100, NAN, NAN}, 3000},
    };
    lab_classes cls[LAB_NFEATURES] = {{3, {1, 1, 2}}, {3, {1, 1, 2}}, {2, {1, 1}}};
    tm_err err = {{0}, 0};
    lab_labeling *l = lab_label_compute(s, 7, cls, &err);
    CHECK(l != NULL);
    if (!l)
        return;
    CHECK_INT(l->nprocs, 3);
    CHECK_INT(l->nbounds[LAB_CPU], 2);
    CHECK_NEAR(l->bounds[LAB_CPU][0], 25, 1e-12);
    CHECK_NEAR(l->bounds[LAB_CPU][1], 40, 1e-12);
    CHECK_STR(l->procs[0].process, "a");
    CHECK_STR(l->procs[1].process, "b");
    CHECK_STR(l->procs[2].process, "c");
    CHECK_NEAR(l->procs[0].mean[LAB_CPU], 15, 1e-12);
    CHECK_INT(l->procs[0].label[LAB_CPU], 1);
    CHECK_INT(l->procs[1].label[LAB_CPU], 2);
    CHECK_INT(l->procs[2].label[LAB_CPU], 3);
    CHECK_INT(l->procs[2].runs, 3);
    CHECK_NEAR(l->procs[2].mean_realtime_ms, 2000, 1e-9);
    CHECK(isnan(l->procs[1].mean_realtime_ms));
    CHECK_INT(l->nbounds[LAB_MEM], -1);
    for (int i = 0; i < 3; i++)
        CHECK_INT(l->procs[i].label[LAB_MEM], 0);
    /* io: samples 100, 300, two classes: bound at the median 200; a's mean 200 is on it. */
    CHECK_NEAR(l->bounds[LAB_IO][0], 200, 1e-12);
    CHECK_INT(l->procs[0].label[LAB_IO], 2);
    CHECK_INT(l->procs[1].label[LAB_IO], 0);
    lab_labeling_free(l);
}

/* The node-groups document in the shape `tarema-profiler group -o` writes (docs/node-groups.md):
 * labels are the Node labels, string values. */
static void test_groups_json_and_pooling(void) {
    const char *text =
        "{\"k\":3,\"groups\":["
        "{\"id\":3,\"nodes\":[\"c2-1\"],\"total_cores\":8,\"labels\":{\"tarema.io/cpu\":\"3\","
        "\"tarema.io/mem\":\"2\",\"tarema.io/io\":\"1\",\"tarema.io/group\":\"3\"}},"
        "{\"id\":1,\"nodes\":[\"n1-1\",\"n1-2\"],\"total_cores\":4,\"labels\":{\"tarema.io/cpu\":"
        "\"1\",\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"2\",\"tarema.io/group\":\"1\"}},"
        "{\"id\":2,\"nodes\":[\"n2-1\"],\"total_cores\":4,\"labels\":{\"tarema.io/cpu\":\"2\","
        "\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"2\",\"tarema.io/group\":\"2\"}}]}";
    json_t *root = json_loads(text, 0, NULL);
    lab_groups g;
    tm_err err = {{0}, 0};
    CHECK(lab_groups_from_json(root, &g, &err) == 0);
    CHECK_INT(g.n, 3);
    lab_classes c;
    CHECK(lab_groups_classes(&g, LAB_CPU, &c, &err) == 0);
    CHECK_INT(c.n, 3); /* sorted by label: slow 4, mid 4, fast 8 */
    CHECK_NEAR(c.cores[0], 4, 0);
    CHECK_NEAR(c.cores[1], 4, 0);
    CHECK_NEAR(c.cores[2], 8, 0);
    CHECK(lab_groups_classes(&g, LAB_MEM, &c, &err) == 0);
    CHECK_INT(c.n, 2); /* slow and mid share mem=1: pooled */
    CHECK_NEAR(c.cores[0], 8, 0);
    CHECK_NEAR(c.cores[1], 8, 0);
    CHECK(lab_groups_classes(&g, LAB_IO, &c, &err) == 0);
    CHECK_INT(c.n, 2);
    CHECK_NEAR(c.cores[0], 8, 0); /* fast has io=1 */
    CHECK_NEAR(c.cores[1], 8, 0);
    json_decref(root);

    /* The labeler's old hand-written shape is not the document. */
    root = json_loads("{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,"
                      "\"labels\":{\"cpu\":1}}]}",
                      0, NULL);
    CHECK(lab_groups_from_json(root, &g, &err) == -1);
    CHECKF(strstr(err.msg, "group 1") && strstr(err.msg, "label 'cpu' is not one of"), "%s",
           err.msg);
    json_decref(root);
    /* A feature label in one group but not another. */
    root = json_loads("{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":"
                      "{\"tarema.io/cpu\":\"1\",\"tarema.io/group\":\"1\"}},{\"id\":2,\"nodes\":"
                      "[\"b\"],\"total_cores\":4,\"labels\":{\"tarema.io/group\":\"2\"}}]}",
                      0, NULL);
    CHECK(lab_groups_from_json(root, &g, &err) == -1);
    CHECKF(strstr(err.msg, "tarema.io/cpu is in group 1 but not in group 2"), "%s", err.msg);
    json_decref(root);
    /* No feature label at all (grouped on features that feed none): one class per feature. */
    root = json_loads("{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":"
                      "{\"tarema.io/group\":\"1\"}},{\"id\":2,\"nodes\":[\"b\"],\"total_cores\":"
                      "8,\"labels\":{\"tarema.io/group\":\"2\"}}]}",
                      0, NULL);
    CHECKF(lab_groups_from_json(root, &g, &err) == 0, "%s", err.msg);
    CHECK(lab_groups_classes(&g, LAB_MEM, &c, &err) == 0);
    CHECK_INT(c.n, 1);
    CHECK_NEAR(c.cores[0], 12, 0);
    json_decref(root);
}

static void test_groups_from_nodes(void) {
    const char *text =
        "[{\"metadata\":{\"name\":\"a\",\"labels\":{\"tarema.io/group\":\"0\",\"tarema.io/cpu\":"
        "\"1\",\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"1\"}},\"status\":{\"capacity\":"
        "{\"cpu\":\"4\"}}},"
        "{\"metadata\":{\"name\":\"b\",\"labels\":{\"tarema.io/group\":\"0\",\"tarema.io/cpu\":"
        "\"1\",\"tarema.io/mem\":\"1\",\"tarema.io/io\":\"1\"}},\"status\":{\"capacity\":"
        "{\"cpu\":\"3500m\"}}},"
        "{\"metadata\":{\"name\":\"c\",\"labels\":{\"tarema.io/group\":\"1\",\"tarema.io/cpu\":"
        "\"2\",\"tarema.io/mem\":\"2\",\"tarema.io/io\":\"2\"}},\"status\":{\"capacity\":"
        "{\"cpu\":\"16\"}}},"
        "{\"metadata\":{\"name\":\"unprofiled\"},\"status\":{\"capacity\":{\"cpu\":\"64\"}}}]";
    json_t *nodes = json_loads(text, 0, NULL);
    lab_groups g, g2;
    tm_err err = {{0}, 0};
    CHECK(lab_groups_from_nodes(nodes, &g, &err) == 0);
    CHECK_INT(g.n, 2);
    CHECK_STR(g.g[0].id, "0");
    CHECK_NEAR(g.g[0].cores, 7.5, 1e-12);
    CHECK_NEAR(g.g[1].cores, 16, 0);
    CHECK(lab_groups_from_nodes(nodes, &g2, &err) == 0);
    CHECK(lab_groups_equal(&g, &g2));
    g2.g[1].cores = 32;
    CHECK(!lab_groups_equal(&g, &g2));
    json_decref(nodes);

    nodes = json_loads("[{\"metadata\":{\"name\":\"x\"}}]", 0, NULL);
    CHECK(lab_groups_from_nodes(nodes, &g, &err) == -1);
    CHECK(strstr(err.msg, "run the profiler") != NULL);
    json_decref(nodes);
    nodes = json_loads("[{\"metadata\":{\"name\":\"x\",\"labels\":{\"tarema.io/group\":\"0\"}},"
                       "\"status\":{\"capacity\":{\"cpu\":\"4\"}}}]",
                       0, NULL);
    /* Only the group label (profiled on features that feed no cpu/mem/io label): unmeasured. */
    CHECKF(lab_groups_from_nodes(nodes, &g, &err) == 0, "%s", err.msg);
    CHECK_INT(g.n, 1);
    CHECK_INT(g.g[0].label[LAB_CPU], 0);
    json_decref(nodes);
    nodes = json_loads("[{\"metadata\":{\"name\":\"x\",\"labels\":{\"tarema.io/group\":\"0\","
                       "\"tarema.io/cpu\":\"fast\"}},\"status\":{\"capacity\":{\"cpu\":\"4\"}}}]",
                       0, NULL);
    CHECK(lab_groups_from_nodes(nodes, &g, &err) == -1);
    CHECK(strstr(err.msg, "node x") != NULL && strstr(err.msg, "tarema.io/cpu") != NULL);
    json_decref(nodes);
    nodes = json_loads("[{\"metadata\":{\"name\":\"x\",\"labels\":{\"tarema.io/group\":\"1\","
                       "\"tarema.io/io\":\"1\"}},\"status\":{\"capacity\":{\"cpu\":\"4\"}}},"
                       "{\"metadata\":{\"name\":\"y\",\"labels\":{\"tarema.io/group\":\"2\"}},"
                       "\"status\":{\"capacity\":{\"cpu\":\"4\"}}}]",
                       0, NULL);
    CHECK(lab_groups_from_nodes(nodes, &g, &err) == -1);
    CHECKF(strstr(err.msg, "tarema.io/io is on the nodes of group 1 but not on those of group 2"),
           "%s", err.msg);
    json_decref(nodes);
}

static json_t *node(const char *group, const char *cpu_label, const char *capacity,
                    const char *heartbeat) {
    return json_pack("{s:{s:s, s:{s:s, s:s, s:s, s:s}}, s:{s:{s:s}, s:s}}", "metadata", "name",
                     "n1", "labels", "tarema.io/group", group, "tarema.io/cpu", cpu_label,
                     "tarema.io/mem", "1", "tarema.io/io", "1", "status", "capacity", "cpu",
                     capacity, "heartbeat", heartbeat);
}

/* Which Node updates can change the groups (the informer filter of `serve`). */
static void test_node_relevance(void) {
    json_t *a = node("g1", "1", "4", "t1");
    json_t *hb = node("g1", "1", "4", "t2");
    json_t *relabelled = node("g1", "2", "4", "t2");
    json_t *resized = node("g1", "1", "8", "t2");
    json_t *moved = node("g2", "1", "4", "t2");
    json_t *plain = json_pack("{s:{s:s}}", "metadata", "name", "n2");
    CHECK(!lab_groups_node_relevant(hb, a)); /* heartbeat only */
    CHECK(lab_groups_node_relevant(relabelled, a));
    CHECK(lab_groups_node_relevant(resized, a));
    CHECK(lab_groups_node_relevant(moved, a));
    CHECK(lab_groups_node_relevant(plain, a));     /* profiler labels removed */
    CHECK(lab_groups_node_relevant(a, NULL));      /* a profiled node added */
    CHECK(lab_groups_node_relevant(NULL, a));      /* ... and deleted */
    CHECK(!lab_groups_node_relevant(plain, NULL)); /* unprofiled nodes do not count */
    CHECK(!lab_groups_node_relevant(NULL, plain));
    json_decref(a), json_decref(hb), json_decref(relabelled), json_decref(resized);
    json_decref(moved), json_decref(plain);
}

static void test_feature_names(void) {
    lab_feature f;
    tm_err err = {{0}, 0};
    CHECK(lab_feature_parse("io", &f, &err) == 0 && f == LAB_IO);
    CHECK(lab_feature_parse("gpu", &f, &err) == -1);
    CHECK(strstr(err.msg, "gpu") != NULL);
}

int main(void) {
    RUN(test_quantile_interpolation);
    RUN(test_three_groups);
    RUN(test_one_group);
    RUN(test_tied_values);
    RUN(test_bad_inputs);
    RUN(test_workflow);
    RUN(test_groups_json_and_pooling);
    RUN(test_groups_from_nodes);
    RUN(test_node_relevance);
    RUN(test_feature_names);
    return TEST_SUMMARY();
}
