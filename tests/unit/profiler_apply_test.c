/* profiler_apply_test.c: the pure parts of apply and run: which merge patches a groups
 * document yields against given Node objects (label, clean stale, leave foreign labels, skip
 * unchanged, report missing), change detection for --changed, and the Job manifest. */
#include <stdlib.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "profiler/apply.h"
#include "profiler/run.h"

static json_t *node(const char *name, const char *labels_json, const char *annot) {
    json_t *n =
        json_pack("{s:{s:s,s:o,s:{}},s:{s:{s:s,s:s},s:{s:s}}}", "metadata", "name", name, "labels",
                  json_loads(labels_json, 0, NULL), "annotations", "status", "capacity", "cpu", "8",
                  "memory", "32Gi", "nodeInfo", "kernelVersion", "6.1.0");
    if (annot)
        json_object_set_new(json_object_get(json_object_get(n, "metadata"), "annotations"),
                            PROF_PROFILE_ANNOT, json_string(annot));
    return n;
}

static json_t *doc_node(const char *name, int group) {
    char g[8];
    snprintf(g, sizeof g, "%d", group);
    return json_pack("{s:s,s:i,s:{s:s,s:s,s:s,s:s},s:{s:i,s:f}}", "node", name, "group", group,
                     "labels", "tarema.io/cpu", g, "tarema.io/mem", g, "tarema.io/io", "1",
                     "tarema.io/group", g, "figures", "cores", 8, "cpu_single_eps", 400.0);
}

static json_t *find_patch(const json_t *plan, const char *name) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(plan, "patches"), i, p) {
        if (strcmp(json_string_value(json_object_get(p, "node")), name) == 0)
            return json_object_get(p, "patch");
    }
    return NULL;
}

static void test_plan(void) {
    json_t *doc =
        json_pack("{s:[o,o,o]}", "nodes", doc_node("a", 1), doc_node("b", 2), doc_node("ghost", 2));
    json_t *nodes = json_pack(
        "[o,o,o,o]",
        node("a", "{\"tarema.io/machine-type\": \"e2\", \"tarema.io/extra\": \"x\"}", NULL),
        node("b", "{\"tarema.io/cpu\": \"1\", \"tarema.io/gpu\": \"9\"}", NULL),
        node("old", "{\"tarema.io/group\": \"3\", \"tarema.io/machine-type\": \"c2\"}", "{}"),
        node("plain", "{\"kubernetes.io/os\": \"linux\"}", NULL));
    tm_err err;
    json_t *plan = prof_apply_plan(doc, nodes, &err);
    CHECKF(plan != NULL, "%s", err.msg);
    if (!plan)
        return;
    json_t *pa = find_patch(plan, "a"), *pb = find_patch(plan, "b"), *po = find_patch(plan, "old");
    CHECK(pa && pb && po);
    CHECK(find_patch(plan, "plain") == NULL);
    CHECK_INT(json_integer_value(json_object_get(plan, "unchanged")), 1);
    CHECK_INT(json_array_size(json_object_get(plan, "missing")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(plan, "missing"), 0)), "ghost");
    if (!pa || !pb || !po)
        return;
    json_t *la = json_object_get(json_object_get(pa, "metadata"), "labels");
    CHECK_STR(json_string_value(json_object_get(la, "tarema.io/group")), "1");
    CHECK(json_object_get(la, "tarema.io/machine-type") == NULL); /* not ours: untouched */
    CHECK(json_object_get(la, "tarema.io/extra") == NULL);
    const char *ann = json_string_value(json_object_get(
        json_object_get(json_object_get(pa, "metadata"), "annotations"), PROF_PROFILE_ANNOT));
    CHECK(ann && strstr(ann, "\"cpu_single_eps\"") && strstr(ann, "\"kernel\":\"6.1.0\""));
    json_t *lb = json_object_get(json_object_get(pb, "metadata"), "labels");
    CHECK_STR(json_string_value(json_object_get(lb, "tarema.io/cpu")), "2");
    CHECK(json_object_get(lb, "tarema.io/gpu") == NULL);
    json_t *lo = json_object_get(json_object_get(po, "metadata"), "labels");
    CHECK(json_is_null(json_object_get(lo, "tarema.io/group")));
    CHECK(json_object_get(lo, "tarema.io/machine-type") == NULL);
    CHECK(json_is_null(json_object_get(
        json_object_get(json_object_get(po, "metadata"), "annotations"), PROF_PROFILE_ANNOT)));
    /* Applying the patch's result again yields nothing for node a. */
    json_t *a2 = node("a",
                      "{\"tarema.io/machine-type\": \"e2\", \"tarema.io/cpu\": \"1\", "
                      "\"tarema.io/mem\": \"1\", \"tarema.io/io\": \"1\", "
                      "\"tarema.io/group\": \"1\"}",
                      ann);
    json_t *nodes2 = json_pack("[o]", a2);
    json_t *plan2 = prof_apply_plan(doc, nodes2, &err);
    CHECK_INT(json_array_size(json_object_get(plan2, "patches")), 0);
    CHECK(!prof_node_changed(a2));
    json_object_set_new(json_object_get(json_object_get(a2, "status"), "capacity"), "cpu",
                        json_string("16"));
    CHECK(prof_node_changed(a2)); /* resized machine: re-profile */
    json_t *fresh = node("new", "{}", NULL);
    CHECK(prof_node_changed(fresh)); /* never profiled */
    json_decref(fresh);
    json_decref(plan2);
    json_decref(nodes2);
    json_decref(plan);
    json_decref(nodes);
    json_decref(doc);
}

static void test_plan_rejects_bad_documents(void) {
    tm_err err;
    json_t *nodes = json_array();
    json_t *d1 = json_pack("{s:i}", "k", 3);
    CHECK(prof_apply_plan(d1, nodes, &err) == NULL);
    CHECK(strstr(err.msg, "no 'nodes' array") != NULL);
    json_t *d2 = json_pack("{s:[{s:s,s:i,s:{s:s},s:{}}]}", "nodes", "node", "a", "group", 1,
                           "labels", "kubernetes.io/os", "x", "figures");
    CHECK(prof_apply_plan(d2, nodes, &err) == NULL);
    CHECKF(strstr(err.msg, "node 'a'") && strstr(err.msg, "kubernetes.io/os"), "%s", err.msg);
    json_decref(d1);
    json_decref(d2);
    json_decref(nodes);
}

static void test_job_manifest(void) {
    json_t *j = prof_job_manifest("n2-1", "tarema", "img:1", NULL, true);
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "metadata"), "name")),
              "tarema-profile-n2-1");
    json_t *spec = json_object_get(json_object_get(json_object_get(j, "spec"), "template"), "spec");
    CHECK_STR(json_string_value(json_object_get(spec, "nodeName")), "n2-1");
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(json_object_get(spec, "tolerations"), 0), "operator")),
              "Exists");
    json_t *args = json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "args");
    CHECK_STR(json_string_value(json_array_get(args, 0)), "bench");
    CHECK_STR(json_string_value(json_array_get(args, json_array_size(args) - 1)), "--quick");
    /* Restricted Pod Security: a namespace that enforces it must accept the bench pods. */
    json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
    CHECK(tm_json_bool(c, "securityContext.runAsNonRoot", false));
    CHECK(tm_json_bool(c, "securityContext.readOnlyRootFilesystem", false));
    CHECK(!tm_json_bool(c, "securityContext.allowPrivilegeEscalation", true));
    CHECK_STR(
        json_string_value(json_array_get(tm_json_path(c, "securityContext.capabilities.drop"), 0)),
        "ALL");
    CHECK_STR(tm_json_str(spec, "securityContext.seccompProfile.type", NULL), "RuntimeDefault");
    CHECK(tm_json_int(spec, "securityContext.runAsUser", 0) > 0);
    CHECK(tm_json_str(c, "resources.requests.ephemeral-storage", NULL) != NULL);
    CHECK(tm_json_str(c, "resources.limits.memory", NULL) != NULL);
    CHECK(tm_json_path(c, "resources.limits.cpu") == NULL); /* a cpu quota would skew the bench */
    json_decref(j);
    char name[64], longnode[200];
    memset(longnode, 'x', 120);
    longnode[120] = '\0';
    prof_job_name(longnode, name, sizeof name);
    CHECK_INT(strlen(name), 63);
    longnode[119] = 'y';
    char other[64];
    prof_job_name(longnode, other, sizeof other);
    CHECK(strcmp(name, other) != 0); /* the hash keeps long names apart */
}

int main(void) {
    RUN(test_plan);
    RUN(test_plan_rejects_bad_documents);
    RUN(test_job_manifest);
    return TEST_SUMMARY();
}
