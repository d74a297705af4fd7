/* scheduler_explain_test.c: explain as a person reads it (scheduler/cmd/explain.h). A snapshot with
 * three tarema groups and one loaded node; the text shows each group's rank and label distance
 * written out, each node's load in words and numbers, and why the chosen node won; no packed
 * internal score appears in the text; the JSON has the same facts in named fields. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/cmd/explain.h"
#include "scheduler_filter_helpers.h"

/* A ready node of a tarema group with cpu cores, 8 GiB, 20 pods. */
static void tarema_node(sched_snapshot *s, const char *name, const char *group, const char *l,
                        int cpu) {
    sched_node *n = sched_node_new(name);
    n->allocatable.v[SCHED_RES_CPU] = cpu * 1000;
    n->allocatable.v[SCHED_RES_MEMORY] = 8LL << 30;
    n->allocatable.v[SCHED_RES_PODS] = 20;
    sched_node_set_label(n, "tarema.io/group", group);
    sched_node_set_label(n, "tarema.io/cpu", l);
    sched_node_set_label(n, "tarema.io/mem", l);
    sched_node_set_label(n, "tarema.io/io", l);
    tm_err err;
    if (sched_snapshot_put_node(s, n, &err) != 0)
        printf("    put_node: %s\n", err.msg);
}

/* Longest run of digits in s: packed scores are 17 digits long. */
static size_t longest_number(const char *s) {
    size_t best = 0, run = 0;
    for (; *s; s++) {
        run = isdigit((unsigned char)*s) ? run + 1 : 0;
        best = run > best ? run : best;
    }
    return best;
}

static void test_load_text(void) {
    json_t *load =
        json_pack("{s:f, s:i, s:i, s:I, s:I, s:i, s:i}", "share", 0.4375, "cpuRequestedMilli", 3500,
                  "cpuAllocatableMilli", 8000, "memoryRequestedBytes", (json_int_t)(3LL << 29),
                  "memoryAllocatableBytes", (json_int_t)(16LL << 30), "podsRequested", 3,
                  "podsAllocatable", 110);
    char buf[256];
    sched_explain_load_text(load, buf, sizeof buf);
    CHECK_STR(buf, "load 44 %: cpu requested 3.5 of 8 cores (44 %), memory 1.5 of 16 GiB (9 %), "
                   "3 of 110 pods");
    json_decref(load);
    load = json_pack("{s:f, s:i, s:i, s:I, s:I, s:i, s:i}", "share", 0.5, "cpuRequestedMilli", 250,
                     "cpuAllocatableMilli", 2000, "memoryRequestedBytes", (json_int_t)(256LL << 20),
                     "memoryAllocatableBytes", (json_int_t)(512LL << 20), "podsRequested", 1,
                     "podsAllocatable", 10);
    sched_explain_load_text(load, buf, sizeof buf);
    CHECK_STR(buf, "load 50 %: cpu requested 0.25 of 2 cores (12 %), memory 256 of 512 MiB (50 %), "
                   "1 of 10 pods");
    json_decref(load);
}

static void test_text_and_json(void) {
    sched_snapshot *s = sched_snapshot_new();
    tarema_node(s, "slow-1", "slow", "1", 2);
    tarema_node(s, "mid-1", "mid", "2", 4);
    tarema_node(s, "mid-2", "mid", "2", 4);
    tarema_node(s, "fast-1", "fast", "3", 16);
    /* mid-1 carries 10 pods of 100m: 1 of its 4 cores */
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        place(s, "mid-1", podtext(name, "ns", "", ""));
    }
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *p = incoming(s,
                            "{'metadata':{'name':'t','namespace':'ns','uid':'t-uid','annotations':{"
                            "'tarema.io/cpu':'3','tarema.io/mem':'1','tarema.io/io':'2'}},"
                            "'spec':{'containers':[{'name':'c','resources':{'requests':{'cpu':"
                            "'500m','memory':'256Mi'}}}]}}",
                            &err);
    CHECKF(p != NULL, "%s", err.msg);
    json_t *doc = p ? sched_explain(fw, s, p, 0, &err) : NULL;
    CHECKF(doc != NULL, "%s", err.msg);
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECK(text != NULL); /* the text checks below must not be skipped by a missing text */
    if (text) {
        printf("%s", text);
        CHECK(strstr(text, "labels cpu 3, mem 1, io 2; requests 0.5 cores, 256 MiB memory"));
        CHECK(strstr(text, "rank 1  group mid          labels cpu 2, mem 2, io 2  distance "
                           "|2-3| + |2-1| + |2-2| = 2  power 6, 2 node(s), 2 fit"));
        /* fast and slow tie on distance 3: the more powerful group ranks first */
        CHECK(strstr(text, "rank 2  group fast") && strstr(text, "rank 3  group slow"));
        CHECK(strstr(text, "mid-1                    group mid (rank 1)     fits; load 25 %: "
                           "cpu requested 1 of 4 cores (25 %), memory 0 of 8 GiB (0 %), 10 of "
                           "20 pods"));
        CHECK(strstr(text, "selected: mid-2\n"));
        CHECKF(strstr(text, "why: group mid ranks 1: label distance 2, the best-ranked group with "
                            "a node that fits; within it mid-2 is the least-loaded of 2 node(s) "
                            "that fit (load 0 %; next: mid-1 at 25 %)"),
               "%s", text);
        CHECKF(longest_number(text) < 9, "a long number (packed score?) in the text");
    }
    free(text);
    if (doc) {
        const json_t *g0 = json_array_get(json_object_get(doc, "groups"), 0);
        CHECK_STR(json_string_value(json_object_get(g0, "id")), "mid");
        CHECK_INT(json_array_size(json_object_get(g0, "distanceTerms")), 3);
        const json_t *n = NULL, *x;
        size_t i;
        json_array_foreach(json_object_get(doc, "nodes"), i, x) {
            if (strcmp(json_string_value(json_object_get(x, "name")), "mid-1") == 0)
                n = x;
        }
        CHECK(n && json_integer_value(json_object_get(n, "groupRank")) == 1);
        CHECK(n && json_integer_value(
                       json_object_get(json_object_get(n, "load"), "cpuRequestedMilli")) == 1000);
        CHECK(json_is_string(json_object_get(doc, "why")));
    }
    json_decref(doc);
    /* Unlabeled task: every group alike, the least-loaded node wins, and the text says so. */
    sched_pod *u = incoming(s, podtext("u", "ns", "", ""), &err);
    doc = u ? sched_explain(fw, s, u, 0, &err) : NULL;
    char why[1024] = "";
    if (doc)
        snprintf(why, sizeof why, "%s", json_string_value(json_object_get(doc, "why")));
    CHECKF(strstr(why, "the task has no labels yet") && strstr(why, "least-loaded of the 4"), "%s",
           why);
    json_decref(doc);
    sched_pod_free(u);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* A task profile of workflow "wf": runtime per group (ms, runs), cores used (milli), mean. */
static void set_profile(sched_snapshot *s, const char *proc, int64_t fast_ms, int64_t slow_ms,
                        int64_t use_milli, int64_t mean_ms) {
    sched_task_profile tp;
    memset(&tp, 0, sizeof tp);
    for (int k = 0; k < SCHED_NFEAT; k++)
        tp.labels[k] = 1;
    tp.expected_runtime_ms = mean_ms;
    tp.cpu_use_milli = use_milli;
    tp.group_rt[0] = (sched_group_runtime){.group = "fast", .runtime_ms = fast_ms, .runs = 2};
    tp.group_rt[1] = (sched_group_runtime){.group = "slow", .runtime_ms = slow_ms, .runs = 3};
    tp.n_group_rt = 2;
    tm_err err;
    if (sched_snapshot_set_task(s, "wf", proc, &tp, &err) != 0)
        printf("    set_task: %s\n", err.msg);
}

static const json_t *node_of(const json_t *doc, const char *name) {
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(doc, "nodes"), i, x) {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0)
            return x;
    }
    return NULL;
}

/* Adaptive's node-level figures (issue 16): A runs 60 s on group fast, 100 s on slow, using 2
 * cores; fast-1 and slow-1 each run a BUSY task using 6 of their 4 cores (mean 40 s). On
 * fast-1: slowdown 1 + min(1, 2) ((6 + 2) / 4 - 1) = 2, harm min(1, 6) x 40 / 2 x (2 - 1.5) =
 * 10 s, finish 60 x 2 + 10 = 130 s; on fast-2 (idle) 60 s; on slow-2 100 s; on slow-1
 * 100 x 2 + 10 = 210 s. The policy takes fast-2; each group's best node is its idle one; the
 * text and JSON carry the figures. */
static void test_adaptive_node_finish(void) {
    sched_snapshot *s = sched_snapshot_new();
    tarema_node(s, "fast-1", "fast", "3", 4);
    tarema_node(s, "fast-2", "fast", "3", 4);
    tarema_node(s, "slow-1", "slow", "1", 4);
    tarema_node(s, "slow-2", "slow", "1", 4);
    set_profile(s, "A", 60000, 100000, 2000, 80000);
    set_profile(s, "BUSY", 40000, 40000, 6000, 40000);
    place(s, "fast-1",
          podtext("b1", "ns", "'nextflow.io/processName':'BUSY','tarema.io/workflow':'wf'", ""));
    place(s, "slow-1",
          podtext("b2", "ns", "'nextflow.io/processName':'BUSY','tarema.io/workflow':'wf'", ""));
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("adaptive", &err);
    sched_pod *p = incoming(
        s, podtext("a", "ns", "'nextflow.io/processName':'A','tarema.io/workflow':'wf'", ""), &err);
    json_t *doc = fw && p ? sched_explain(fw, s, p, 0, &err) : NULL;
    CHECKF(doc != NULL, "%s", err.msg);
    CHECK_STR(json_string_value(json_object_get(doc, "selected")), "fast-2");
    const json_t *f1 = json_object_get(node_of(doc, "fast-1"), "adaptive");
    CHECK(json_real_value(json_object_get(f1, "usedCores")) == 6.0);
    CHECK(json_real_value(json_object_get(f1, "ownCores")) == 2.0);
    CHECK(json_real_value(json_object_get(f1, "slowdown")) == 2.0);
    CHECK_INT(json_integer_value(json_object_get(f1, "harmMs")), 10000);
    CHECK_INT(json_integer_value(json_object_get(f1, "expectedFinishMs")), 130000);
    CHECK_INT(json_integer_value(json_object_get(
                  json_object_get(node_of(doc, "slow-1"), "adaptive"), "expectedFinishMs")),
              210000);
    size_t i;
    const json_t *g;
    int seen = 0;
    json_array_foreach(json_object_get(doc, "groups"), i, g) {
        const json_t *b = json_object_get(json_object_get(g, "adaptive"), "bestNode");
        const char *id = json_string_value(json_object_get(g, "id"));
        if (strcmp(id, "fast") == 0) {
            seen++;
            CHECK_STR(json_string_value(json_object_get(b, "name")), "fast-2");
            CHECK_INT(json_integer_value(json_object_get(b, "expectedFinishMs")), 60000);
            CHECK(json_real_value(json_object_get(b, "slowdown")) == 1.0);
        } else if (strcmp(id, "slow") == 0) {
            seen++;
            CHECK_STR(json_string_value(json_object_get(b, "name")), "slow-2");
            CHECK_INT(json_integer_value(json_object_get(b, "expectedFinishMs")), 100000);
        }
    }
    CHECK_INT(seen, 2);
    /* the selected node has the earliest finish of the feasible nodes: the figures are the
     * policy's */
    const json_t *x;
    json_array_foreach(json_object_get(doc, "nodes"), i, x) {
        CHECK(json_integer_value(
                  json_object_get(json_object_get(x, "adaptive"), "expectedFinishMs")) >= 60000);
    }
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECK(text != NULL); /* the text checks below must not be skipped by a missing text */
    if (text) {
        printf("%s", text);
        CHECK(strstr(text, "best node fast-2: slowdown x1.00 (uses 0.0 + 2.0 of 4 cores), "
                           "expected finish 60.0 s (+0.0 s to the tasks running there)"));
        CHECK(strstr(text, "best node slow-2: slowdown x1.00 (uses 0.0 + 2.0 of 4 cores), "
                           "expected finish 100.0 s"));
        CHECK(strstr(text, "adaptive: slowdown x2.00 (uses 6.0 + 2.0 of 4 cores), expected "
                           "finish 130.0 s (+10.0 s to the tasks running there)"));
        CHECKF(strstr(json_string_value(json_object_get(doc, "why")),
                      "; on fast-2: slowdown x1.00 (uses 0.0 + 2.0 of 4 cores), expected finish "
                      "60.0 s"),
               "%s", json_string_value(json_object_get(doc, "why")));
    }
    free(text);
    json_decref(doc);
    /* tarema's explain has none of it */
    sched_framework *ta = sched_policy_new("tarema", &err);
    doc = ta && p ? sched_explain(ta, s, p, 0, &err) : NULL;
    CHECK(doc && !json_object_get(node_of(doc, "fast-2"), "adaptive"));
    json_decref(doc);
    sched_framework_free(ta);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* No node fits: explain says what preemption would do, names the victims considered per node
 * and why a node was or was not chosen. n1 holds a pod of priority 10, n2 one of priority 5:
 * n2 is chosen, n1 loses on its higher highest victim priority; nothing is evicted for real
 * (the snapshot keeps both pods). */
static void test_preemption(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", NULL);
    add_node(s, "n2", NULL);
    place(s, "n1",
          "{'metadata':{'name':'ten','namespace':'ns','uid':'ten'},'spec':{'priority':10,"
          "'containers':[{'name':'c','resources':{'requests':{'cpu':'4'}}}]}}");
    place(s, "n2",
          "{'metadata':{'name':'five','namespace':'ns','uid':'five'},'spec':{'priority':5,"
          "'containers':[{'name':'c','resources':{'requests':{'cpu':'4'}}}]}}");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p = incoming(s,
                            "{'metadata':{'name':'urgent','namespace':'ns','uid':'u'},'spec':{"
                            "'priority':1000,'containers':[{'name':'c','resources':{"
                            "'requests':{'cpu':'1'}}}]}}",
                            &err);
    json_t *doc = fw && p ? sched_explain(fw, s, p, 0, &err) : NULL;
    const json_t *pre = json_object_get(doc, "preemption");
    CHECK(json_is_object(pre));
    CHECK_STR(json_string_value(json_object_get(pre, "nominated")), "n2");
    const json_t *v = json_array_get(json_object_get(pre, "victims"), 0);
    CHECK_STR(json_string_value(json_object_get(v, "pod")), "ns/five");
    CHECK_INT(json_array_size(json_object_get(pre, "nodes")), 2);
    char *text = doc ? sched_explain_text(doc) : NULL;
    CHECKF(text && strstr(text, "preemption: would nominate n2 and evict ns/five (priority 5)"),
           "%s", text ? text : "(null)");
    CHECKF(text && strstr(text, "candidate, not chosen: a higher highest victim priority; "
                                "victims ns/ten (priority 10 < 1000 of preemptor ns/urgent)"),
           "%s", text ? text : "(null)");
    CHECK_STR(sched_snapshot_pod_node(s, "five"), "n2");
    CHECK_STR(sched_snapshot_pod_node(s, "ten"), "n1");
    free(text);
    json_decref(doc);
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    (void)feasible; /* shared helpers this test does not need */
    (void)add_node;
    RUN(test_load_text);
    RUN(test_text_and_json);
    RUN(test_adaptive_node_finish);
    RUN(test_preemption);
    return TEST_SUMMARY();
}
