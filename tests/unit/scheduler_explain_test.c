/* scheduler_explain_test.c: explain as a person reads it (scheduler/explain.h). A snapshot with
 * three tarema groups and one loaded node; the text shows each group's rank and label distance
 * written out, each node's load in words and numbers, and why the chosen node won; no packed
 * internal score appears in the text; the JSON has the same facts in named fields. */
#include <ctype.h>
#include <stdlib.h>

#include "scheduler/explain.h"
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

int main(void) {
    (void)feasible; /* shared helpers this test does not need */
    (void)add_node;
    RUN(test_load_text);
    RUN(test_text_and_json);
    return TEST_SUMMARY();
}
