/* nodegroups_test.c: the node-groups document between its writer and its readers. The
 * profiler's grouping of Table IV-like profiles, serialised by prof_grouping_to_json, is read by
 * lib/nodegroups (tm_ng_read_groups), by the labeler (lab_groups_from_json, its classes) and by
 * the profiler's apply (prof_apply_plan), whose Node labels the scheduler reads back
 * (sched_node_from_json): the same groups, cores and labels on every side. */
#include <stdlib.h>

#include "harness.h"
#include "labeler/groups.h"
#include "lib/nodegroups.h"
#include "profiler/apply.h"
#include "profiler/grouping.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

static prof_profile mk(const char *name, long long cores, double cpu, double mem, double io) {
    prof_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.node, sizeof p.node, "%s", name);
    p.cores = cores;
    p.memory_bytes = 32LL << 30;
    p.cpu_single_eps = cpu;
    p.cpu_multi_eps = cpu * (double)cores;
    p.mem_mibps = mem;
    p.seq_read_iops = p.seq_write_iops = io * 4;
    p.rand_read_iops = p.rand_write_iops = io;
    return p;
}

/* 3 slow 4-core nodes, 3 middle 4-core nodes, 2 fast 8-core nodes with faster disks. */
static size_t cluster(prof_profile *p) {
    size_t n = 0;
    char name[32];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "n1-%d", i);
        p[n++] = mk(name, 4, 369 + i, 13400 + 10 * i, 100);
        snprintf(name, sizeof name, "n2-%d", i);
        p[n++] = mk(name, 4, 467 + i, 17000 + 10 * i, 101);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "c2-%d", i);
        p[n++] = mk(name, 8, 523 + i, 18900 + 10 * i, 400);
    }
    return n;
}

static json_t *grouped(const prof_profile *p, size_t n, const char *features) {
    prof_group_opts o;
    prof_group_opts_default(&o);
    tm_err err;
    if (features) {
        o.nfeatures = 0;
        char buf[128];
        snprintf(buf, sizeof buf, "%s", features);
        for (char *s = NULL, *t = strtok_r(buf, ",", &s); t; t = strtok_r(NULL, ",", &s))
            prof_feature_parse(t, &o.features[o.nfeatures++], &err);
    }
    prof_grouping g;
    if (prof_group_nodes(p, n, &o, &g, &err) != 0)
        return NULL;
    json_t *doc = prof_grouping_to_json(&g, p, &o);
    prof_grouping_free(&g);
    return doc;
}

static void test_profiler_output_read_by_labeler(void) {
    prof_profile p[8];
    size_t n = cluster(p);
    json_t *doc = grouped(p, n, NULL);
    CHECK(doc != NULL);
    if (!doc)
        return;
    tm_err err = {{0}, 0};
    tm_ng_groups ng;
    CHECKF(tm_ng_read_groups(doc, &ng, &err) == 0, "%s", err.msg);
    CHECK_INT(ng.n, 3);
    lab_groups lg;
    CHECKF(lab_groups_from_json(doc, &lg, &err) == 0, "%s", err.msg);
    CHECK_INT(lg.n, 3);
    /* Group ids by power: 1 = n1 (12 cores), 2 = n2 (12), 3 = c2 (16). */
    const double cores[3] = {12, 12, 16};
    const int cpu[3] = {1, 2, 3}, io[3] = {1, 1, 2};
    for (int i = 0; i < lg.n && i < 3; i++) {
        char id[8];
        snprintf(id, sizeof id, "%d", i + 1);
        CHECK_STR(lg.g[i].id, id);
        CHECK_NEAR(lg.g[i].cores, cores[i], 0);
        CHECK_INT(lg.g[i].label[LAB_CPU], cpu[i]);
        CHECK_INT(lg.g[i].label[LAB_MEM], cpu[i]);
        CHECK_INT(lg.g[i].label[LAB_IO], io[i]);
        CHECK_INT(ng.g[i].label[TM_NG_CPU], cpu[i]);
    }
    lab_classes c[LAB_NFEATURES];
    CHECKF(lab_groups_all_classes(&lg, c, &err) == 0, "%s", err.msg);
    CHECK_INT(c[LAB_IO].n, 2); /* n1 and n2 disks are alike: one io class of 24 cores */
    CHECK_NEAR(c[LAB_IO].cores[0], 24, 0);
    /* The Node labels apply would write are the document's, for every node. */
    json_t *nodes = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(nodes, json_pack("{s:{s:s}}", "metadata", "name", p[i].node));
    json_t *plan = prof_apply_plan(doc, nodes, &err);
    CHECKF(plan != NULL, "%s", err.msg);
    CHECK_INT(json_array_size(json_object_get(plan, "patches")), n);
    /* ...and the scheduler reads those Node labels back into the same groups. */
    sched_snapshot *snap = sched_snapshot_new();
    size_t i;
    json_t *pt;
    json_array_foreach(json_object_get(plan, "patches"), i, pt) {
        json_t *node = json_pack(
            "{s:{s:s, s:O}, s:{s:{s:s, s:s, s:s}}}", "metadata", "name",
            json_string_value(json_object_get(pt, "node")), "labels",
            json_object_get(json_object_get(json_object_get(pt, "patch"), "metadata"), "labels"),
            "status", "allocatable", "cpu", "4", "memory", "8Gi", "pods", "110");
        sched_node *sn = sched_node_from_json(snap, node, &err);
        CHECKF(sn && sched_snapshot_put_node(snap, sn, &err) == 0, "%s", err.msg);
        json_decref(node);
    }
    sched_snapshot_refresh(snap);
    CHECK_INT(sched_snapshot_group_count(snap), 3);
    for (size_t g = 0; g < sched_snapshot_group_count(snap); g++) {
        const sched_group *sg = sched_snapshot_group(snap, g);
        int id = atoi(sg->id);
        CHECKF(id >= 1 && id <= 3 && !sg->unprofiled, "group '%s'", sg->id);
        if (id >= 1 && id <= 3) {
            CHECK_INT(sg->labels[SCHED_FEAT_CPU], cpu[id - 1]);
            CHECK_INT(sg->labels[SCHED_FEAT_IO], io[id - 1]);
        }
    }
    sched_snapshot_free(snap);
    json_decref(plan);
    json_decref(nodes);
    json_decref(doc);
}

/* Grouped on CPU alone: no tarema.io/mem or io labels in the document; the labeler treats
 * those features as unmeasured (one class) instead of refusing the document. */
static void test_cpu_only_document(void) {
    prof_profile p[8];
    size_t n = cluster(p);
    json_t *doc = grouped(p, n, "cpu_single");
    CHECK(doc != NULL);
    if (!doc)
        return;
    json_t *labels = json_object_get(json_array_get(json_object_get(doc, "groups"), 0), "labels");
    CHECK(json_object_get(labels, "tarema.io/cpu") != NULL);
    CHECK(json_object_get(labels, "tarema.io/mem") == NULL);
    tm_err err = {{0}, 0};
    lab_groups lg;
    CHECKF(lab_groups_from_json(doc, &lg, &err) == 0, "%s", err.msg);
    lab_classes c;
    CHECK(lab_groups_classes(&lg, LAB_MEM, &c, &err) == 0);
    CHECK_INT(c.n, 1);
    CHECK_NEAR(c.cores[0], 40, 0);
    json_decref(doc);
}

/* What a reader refuses, with the field named. */
static void test_reader_errors(void) {
    static const struct {
        const char *doc, *want;
    } cases[] = {
        {"{}", "no \"groups\" array"},
        {"{\"groups\":[]}", "is empty"},
        {"{\"groups\":[{\"id\":\"1\",\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":{}}]}",
         "\"id\" must be an integer"},
        {"{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":{\"tarema.io/"
         "group\":\"2\"}}]}",
         "tarema.io/group must be \"1\""},
        {"{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":{\"tarema.io/"
         "group\":\"1\",\"tarema.io/cpu\":1}}]}",
         "must be a string holding an integer"},
        {"{\"groups\":[{\"id\":1,\"nodes\":[\"a\"],\"total_cores\":4,\"labels\":{\"tarema.io/"
         "group\":\"1\"}}],\"nodes\":[{\"node\":\"a\",\"group\":2,\"figures\":{},\"labels\":{"
         "\"tarema.io/group\":\"2\"}}]}",
         "group 2 is not in"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *d = json_loads(cases[i].doc, 0, NULL);
        tm_ng_groups ng;
        tm_err err = {{0}, 0};
        CHECKF(d && tm_ng_read_groups(d, &ng, &err) == -1 && strstr(err.msg, cases[i].want),
               "case %zu: '%s'", i, err.msg);
        json_decref(d);
    }
}

int main(void) {
    RUN(test_profiler_output_read_by_labeler);
    RUN(test_cpu_only_document);
    RUN(test_reader_errors);
    return TEST_SUMMARY();
}
