/* gang_native_test.c: Kubernetes' own gang API (scheduler/plugins/gang/native.h, podgroup.h) on
 * objects captured from real API servers (tests/data/k8s/<version>/, see README.md there for
 * the commands that produced them), plus the shapes and bad input the captures do not cover. */
#include <stdio.h>
#include <unistd.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/gang/native.h"
#include "scheduler/live/gang_live_internal.h"
#include "scheduler/plugins/gang/podgroup.h"

#define D137 "tests/data/k8s/v1.37.2/"
#define D135 "tests/data/k8s/v1.35.4/"
#define D136 "tests/data/k8s/v1.36.3/"

static json_t *F(const char *path) {
    tm_err err = {0};
    json_t *j = tm_json_load_file(path, &err);
    if (!j)
        printf("    cannot load %s: %s\n", path, err.msg);
    return j;
}

static json_t *J(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        printf("    bad test JSON: %s\n", je.text);
    return j;
}

/* Discovery: 1.37.2 serves v1beta1 with workloads and podgroups; 1.35.4 only v1alpha1. */
static void test_discovery_137(void) {
    json_t *group = F(D137 "discovery-group.json");
    const char *v[8];
    tm_err err = {0};
    int n = sched_native_api_versions(group, v, &err);
    CHECKF(n >= 1, "%s", err.msg);
    if (n >= 1)
        CHECK_STR(v[0], "v1beta1");
    json_decref(group);
    json_t *list = F(D137 "discovery-v1beta1.json");
    sched_native_api api;
    CHECKF(sched_native_api_from_resources(list, &api, &err) == 0, "%s", err.msg);
    CHECK_STR(api.group_version, "scheduling.k8s.io/v1beta1");
    CHECK(api.workloads);
    CHECK(api.podgroups);
    CHECK(api.podgroup_status);
    CHECK_STR(api.condition ? api.condition : "(none)", "PodGroupInitiallyScheduled");
    json_decref(list);
}

static void test_discovery_135(void) {
    json_t *group = F(D135 "discovery-group.json");
    const char *v[8];
    tm_err err = {0};
    int n = sched_native_api_versions(group, v, &err);
    CHECK_INT(n, 1);
    if (n >= 1)
        CHECK_STR(v[0], "v1alpha1");
    json_decref(group);
    json_t *list = F(D135 "discovery-v1alpha1.json");
    sched_native_api api;
    CHECKF(sched_native_api_from_resources(list, &api, &err) == 0, "%s", err.msg);
    CHECK(api.workloads);
    CHECK(!api.podgroups);
    CHECK(api.condition == NULL);
    json_decref(list);
}

static void test_discovery_bad(void) {
    tm_err err = {0};
    const char *v[8];
    json_t *j = J("{\"kind\":\"APIGroup\",\"name\":\"apps\",\"versions\":[]}");
    CHECK_INT(sched_native_api_versions(j, v, &err), -1);
    CHECKF(strstr(err.msg, "not the APIGroup document of scheduling.k8s.io") != NULL, "%s",
           err.msg);
    json_decref(j);
    sched_native_api api;
    j = J("{\"kind\":\"APIResourceList\",\"groupVersion\":\"scheduling.k8s.io/v2\","
          "\"resources\":[]}");
    CHECK_INT(sched_native_api_from_resources(j, &api, &err), -1);
    CHECKF(strstr(err.msg, "scheduling.k8s.io/v2 is a version tarema does not know") != NULL, "%s",
           err.msg);
    json_decref(j);
}

/* The Workload of 1.37 is a template: its groups come from spec.podGroupTemplates. */
static void test_workload_137(void) {
    json_t *wl = F(D137 "workload.json");
    sched_workload w;
    tm_err err = {0};
    CHECKF(sched_workload_from_json(wl, &w, &err) == 0, "%s", err.msg);
    CHECK_INT(w.n_groups, 2);
    const sched_workload_group *g = sched_workload_group_find(&w, "workers");
    CHECK(g && g->gang && g->min_count == 4);
    g = sched_workload_group_find(&w, "driver");
    CHECK(g && !g->gang);
    sched_workload_free(&w);
    json_decref(wl);
}

static void test_podgroup_137(void) {
    json_t *pg = F(D137 "podgroup.json");
    sched_native_podgroup p;
    tm_err err = {0};
    CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
    CHECK_INT(p.spec.min_member, 4);
    CHECK(!p.basic);
    CHECK_STR(p.workload ? p.workload : "(null)", "train");
    CHECK_STR(p.template_name ? p.template_name : "(null)", "workers");
    /* the 1.37.2 API server sets no metadata.generation on a PodGroup (captured) */
    CHECK_INT(p.generation, tm_json_int(pg, "metadata.generation", 0));
    sched_native_podgroup_free(&p);
    json_decref(pg);
    pg = F(D137 "podgroup-basic.json");
    CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
    CHECK(p.basic);
    CHECK_INT(p.spec.min_member, 1);
    sched_native_podgroup_free(&p);
    json_decref(pg);
}

/* Kubernetes 1.36.3 as its API server serves and stores it (captured): v1alpha2 discovery with
 * PodGroupScheduled, the template Workload, PodGroups with podGroupTemplateRef and the
 * disruptionMode string it fills in, a member pod, and kube-scheduler 1.36.3's condition. */
static void test_captured_136(void) {
    json_t *group = F(D136 "discovery-group.json");
    const char *v[8];
    tm_err err = {0};
    int n = sched_native_api_versions(group, v, &err);
    CHECKF(n >= 1, "%s", err.msg);
    if (n >= 1)
        CHECK_STR(v[0], "v1alpha2");
    json_decref(group);
    json_t *list = F(D136 "discovery-v1alpha2.json");
    sched_native_api api;
    CHECKF(sched_native_api_from_resources(list, &api, &err) == 0, "%s", err.msg);
    CHECK_STR(api.group_version, "scheduling.k8s.io/v1alpha2");
    CHECK(api.workloads && api.podgroups && api.podgroup_status);
    CHECK_STR(api.condition ? api.condition : "(none)", "PodGroupScheduled");
    json_decref(list);

    json_t *wl = F(D136 "workload.json");
    sched_workload w;
    CHECKF(sched_workload_from_json(wl, &w, &err) == 0, "%s", err.msg);
    const sched_workload_group *g = sched_workload_group_find(&w, "workers");
    CHECK(g && g->gang && g->min_count == 4);
    g = sched_workload_group_find(&w, "driver");
    CHECK(g && !g->gang);
    sched_workload_free(&w);
    json_decref(wl);

    json_t *pg = F(D136 "podgroup.json");
    sched_native_podgroup p;
    CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
    CHECK_INT(p.spec.min_member, 4);
    CHECK_STR(p.workload ? p.workload : "(null)", "train");
    CHECK_STR(p.template_name ? p.template_name : "(null)", "workers");
    CHECK(p.disrupt_single); /* "Pod", as the API server filled it in */
    sched_native_podgroup_free(&p);
    json_decref(pg);
    pg = F(D136 "podgroup-basic.json");
    CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
    CHECK(p.basic);
    sched_native_podgroup_free(&p);
    json_decref(pg);

    json_t *pod = F(D136 "pod.json");
    sched_gang_ref r;
    char key[SCHED_GANG_KEY_MAX];
    CHECKF(sched_gang_ref_from_pod_json(pod, &r, &err) == 0, "%s", err.msg);
    CHECK_INT(r.kind, SCHED_GANG_NATIVE);
    CHECK_STR(sched_gang_ref_key(&r, key, sizeof key), "k8s-podgroup/default/train-workers");
    json_decref(pod);

    pg = F(D136 "podgroup-scheduled.json");
    const json_t *conds = tm_json_path(pg, "status.conditions");
    const json_t *c0 = json_array_get(conds, 0);
    CHECK_STR(tm_json_str(c0, "type", ""), "PodGroupScheduled");
    CHECK_STR(tm_json_str(c0, "status", ""), "True");
    CHECK_STR(tm_json_str(c0, "reason", ""), "Scheduled");
    CHECK(json_object_get(c0, "observedGeneration") == NULL); /* no generation here either */
    sched_native_condition c = {"PodGroupScheduled",   true, "Scheduled", "", 0,
                                "2030-01-01T00:00:00Z"};
    json_t *out = NULL;
    CHECK_INT(sched_native_set_condition(conds, &c, &out, &err), 0); /* nothing to write */
    json_decref(pg);
}

/* 1.36's v1alpha2 names the template reference differently (k8s.io/api v0.36 types). */
static void test_podgroup_v1alpha2(void) {
    json_t *pg = J("{\"apiVersion\":\"scheduling.k8s.io/v1alpha2\",\"kind\":\"PodGroup\","
                   "\"metadata\":{\"name\":\"train-workers\",\"namespace\":\"ml\","
                   "\"generation\":3},\"spec\":{\"podGroupTemplateRef\":{\"workload\":{"
                   "\"workloadName\":\"train\",\"podGroupTemplateName\":\"workers\"}},"
                   "\"schedulingPolicy\":{\"gang\":{\"minCount\":8}}}}");
    sched_native_podgroup p;
    tm_err err = {0};
    CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
    CHECK_INT(p.spec.min_member, 8);
    CHECK_STR(p.workload ? p.workload : "(null)", "train");
    CHECK_STR(p.template_name ? p.template_name : "(null)", "workers");
    CHECK_INT(p.generation, 3);
    sched_native_podgroup_free(&p);
    json_decref(pg);
}

static void bad_pg(const char *spec, const char *want) {
    char buf[512];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"g\",\"namespace\":\"n\"},\"spec\":%s}",
             spec);
    json_t *pg = J(buf);
    sched_native_podgroup p;
    tm_err err = {0};
    CHECK_INT(sched_native_podgroup_from_json(pg, &p, &err), -1);
    CHECKF(strstr(err.msg, want) != NULL, "got \"%s\", want \"%s\"", err.msg, want);
    CHECK(p.workload == NULL && p.spec.min_member == 0);
    json_decref(pg);
}

/* spec.disruptionMode: the 1.37.2 API server fills in single (captured); all, and v1alpha2's
 * strings; anything else is refused naming the field. */
static void test_disruption_mode(void) {
    json_t *pg = F(D137 "podgroup.json");
    sched_native_podgroup p;
    tm_err err = {0};
    if (pg) {
        CHECKF(sched_native_podgroup_from_json(pg, &p, &err) == 0, "%s", err.msg);
        CHECK(p.disrupt_single); /* {"single": {}}, as the API server stored it */
        sched_native_podgroup_free(&p);
        json_decref(pg);
    }
    static const struct {
        const char *mode;
        int rc;
        bool single;
    } cases[] = {{"{\"all\":{}}", 0, false},   {"{\"single\":{}}", 0, true},
                 {"\"Pod\"", 0, true},         {"\"PodGroup\"", 0, false},
                 {"null", 0, false},           {"{\"single\":{},\"all\":{}}", -1, false},
                 {"\"Sometimes\"", -1, false}, {"{}", -1, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf,
                 "{\"metadata\":{\"name\":\"g\",\"namespace\":\"n\"},\"spec\":{"
                 "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"disruptionMode\":%s}}",
                 cases[i].mode);
        json_t *j = J(buf);
        int rc = sched_native_podgroup_from_json(j, &p, &err);
        CHECKF(rc == cases[i].rc, "%s: rc %d", cases[i].mode, rc);
        if (rc == 0) {
            CHECKF(p.disrupt_single == cases[i].single, "%s", cases[i].mode);
            sched_native_podgroup_free(&p);
        } else {
            CHECKF(strstr(err.msg, "PodGroup n/g: spec.disruptionMode must be") != NULL, "%s",
                   err.msg);
        }
        json_decref(j);
    }
}

static void test_podgroup_bad(void) {
    bad_pg("{}", "PodGroup n/g: spec.schedulingPolicy is missing");
    bad_pg("{\"schedulingPolicy\":{}}", "exactly one of gang and basic");
    bad_pg("{\"schedulingPolicy\":{\"gang\":{\"minCount\":2},\"basic\":{}}}",
           "exactly one of gang and basic");
    bad_pg("{\"schedulingPolicy\":{\"gang\":{}}}",
           "spec.schedulingPolicy.gang.minCount must be an integer");
    bad_pg("{\"schedulingPolicy\":{\"gang\":{\"minCount\":0}}}",
           "spec.schedulingPolicy.gang.minCount must be at least 1, got 0");
    json_t *pg = J("{\"metadata\":{\"name\":\"g\",\"namespace\":\"n\"}}");
    sched_native_podgroup p;
    tm_err err = {0};
    CHECK_INT(sched_native_podgroup_from_json(pg, &p, &err), -1);
    CHECKF(strstr(err.msg, "PodGroup n/g: spec is missing") != NULL, "%s", err.msg);
    json_decref(pg);
}

/* A pod of 1.37 points at its PodGroup with spec.schedulingGroup.podGroupName. */
static void test_pod_137(void) {
    json_t *pod = F(D137 "pod.json");
    sched_gang_ref r;
    tm_err err = {0};
    char key[SCHED_GANG_KEY_MAX];
    CHECKF(sched_gang_ref_from_pod_json(pod, &r, &err) == 0, "%s", err.msg);
    CHECK_INT(r.kind, SCHED_GANG_NATIVE);
    CHECK_STR(sched_gang_ref_key(&r, key, sizeof key), "k8s-podgroup/default/train-workers");
    json_decref(pod);
    pod = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"schedulingGroup\":"
            "{}}}");
    CHECK_INT(sched_gang_ref_from_pod_json(pod, &r, &err), -1);
    CHECKF(strstr(err.msg, "pod ml/p: spec.schedulingGroup needs podGroupName") != NULL, "%s",
           err.msg);
    json_decref(pod);
}

/* The condition as kube-scheduler 1.37 wrote it (podgroup-scheduled.json: captured after
 * kube-scheduler placed the gang), and how tarema sets the same. */
static void test_condition(void) {
    json_t *pg = F(D137 "podgroup-scheduled.json");
    const json_t *conds = tm_json_path(pg, "status.conditions");
    CHECK(json_array_size(conds) == 1);
    const json_t *c0 = json_array_get(conds, 0);
    CHECK_STR(tm_json_str(c0, "type", ""), "PodGroupInitiallyScheduled");
    CHECK_STR(tm_json_str(c0, "status", ""), "True");
    CHECK_STR(tm_json_str(c0, "reason", ""), "Scheduled");
    /* the same condition again: nothing to write */
    sched_native_condition c = {"PodGroupInitiallyScheduled",
                                true,
                                "Scheduled",
                                tm_json_str(c0, "message", ""),
                                tm_json_int(c0, "observedGeneration", 0),
                                "2030-01-01T00:00:00Z"};
    json_t *out = NULL;
    tm_err err = {0};
    CHECK_INT(sched_native_set_condition(conds, &c, &out, &err), 0);
    /* a later failure does not take back PodGroupInitiallyScheduled */
    c.scheduled = false;
    c.reason = "Unschedulable";
    c.message = "0/3 nodes are available";
    CHECK_INT(sched_native_set_condition(conds, &c, &out, &err), 0);
    CHECK(json_object_get(c0, "observedGeneration") == NULL);
    json_decref(pg);

    /* a PodGroup with no generation (as 1.37.2 stores them): the condition written has no
     * observedGeneration key, as kube-scheduler's (captured above) has none */
    json_t *empty = json_array();
    sched_native_condition g0 = {"PodGroupInitiallyScheduled", true, "Scheduled", "", 0,
                                 "2026-11-28T10:00:00Z"};
    CHECK_INT(sched_native_set_condition(empty, &g0, &out, &err), 1);
    CHECK(out && json_object_get(json_array_get(out, 0), "observedGeneration") == NULL);
    json_decref(out);
    json_decref(empty);

    /* not scheduled yet: False Unschedulable, then True with a new transition time */
    json_t *none = json_array();
    sched_native_condition u = {"PodGroupInitiallyScheduled", false, "Unschedulable",
                                "gang needs 4, 2 fit",        1,     "2026-11-28T10:00:00Z"};
    CHECK_INT(sched_native_set_condition(none, &u, &out, &err), 1);
    CHECK_INT(json_array_size(out), 1);
    CHECK_STR(tm_json_str(json_array_get(out, 0), "status", ""), "False");
    CHECK_STR(tm_json_str(json_array_get(out, 0), "lastTransitionTime", ""),
              "2026-11-28T10:00:00Z");
    CHECK_INT(tm_json_int(json_array_get(out, 0), "observedGeneration", 0), 1);
    /* the same failure later, other message: same transition time */
    json_t *prev = out;
    u.message = "gang needs 4, 3 fit";
    u.now = "2026-11-28T10:05:00Z";
    CHECK_INT(sched_native_set_condition(prev, &u, &out, &err), 1);
    CHECK_STR(tm_json_str(json_array_get(out, 0), "lastTransitionTime", ""),
              "2026-11-28T10:00:00Z");
    CHECK_STR(tm_json_str(json_array_get(out, 0), "message", ""), "gang needs 4, 3 fit");
    json_decref(prev);
    prev = out;
    sched_native_condition s = {"PodGroupInitiallyScheduled", true, "Scheduled", "", 1,
                                "2026-11-28T10:06:00Z"};
    CHECK_INT(sched_native_set_condition(prev, &s, &out, &err), 1);
    CHECK_STR(tm_json_str(json_array_get(out, 0), "status", ""), "True");
    CHECK_STR(tm_json_str(json_array_get(out, 0), "lastTransitionTime", ""),
              "2026-11-28T10:06:00Z");
    json_decref(prev);
    json_decref(out);
    /* 1.36's PodGroupScheduled: a True stays too; a False is updated in place, other
     * conditions kept */
    json_t *t = J("[{\"type\":\"PodGroupScheduled\",\"status\":\"True\",\"reason\":\"Scheduled\","
                  "\"message\":\"\",\"lastTransitionTime\":\"2026-11-28T10:00:00Z\","
                  "\"observedGeneration\":1},{\"type\":\"Other\",\"status\":\"True\"}]");
    sched_native_condition f = {"PodGroupScheduled",   false, "Unschedulable", "lost", 1,
                                "2026-11-28T11:00:00Z"};
    CHECK_INT(sched_native_set_condition(t, &f, &out, &err), 0);
    json_object_set_new(json_array_get(t, 0), "status", json_string("False"));
    CHECK_INT(sched_native_set_condition(t, &f, &out, &err), 1);
    CHECK_INT(json_array_size(out), 2);
    CHECK_STR(tm_json_str(json_array_get(out, 0), "message", ""), "lost");
    CHECK_STR(tm_json_str(json_array_get(out, 0), "lastTransitionTime", ""),
              "2026-11-28T10:00:00Z");
    CHECK_STR(tm_json_str(json_array_get(out, 1), "type", ""), "Other");
    json_decref(out);
    json_decref(t);
    json_t *obj = J("{}");
    CHECK_INT(sched_native_set_condition(obj, &f, &out, &err), -1);
    CHECKF(strstr(err.msg, "status.conditions is not a list") != NULL, "%s", err.msg);
    json_decref(obj);
    json_decref(none);
}

/* The registry: a native PodGroup declares the gang its pods name; basic is no gang; deleting
 * the PodGroup leaves its pods waiting. */
static void test_registry(void) {
    sched_gang_registry *r = sched_gang_registry_new();
    json_t *pod = J("{\"metadata\":{\"name\":\"w-1\",\"namespace\":\"ml\",\"uid\":\"u1\"},"
                    "\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"train\"}}}");
    sched_gang_ref ref;
    tm_err err = {0};
    CHECK_INT(sched_gang_ref_from_pod_json(pod, &ref, &err), 0);
    sched_gang *g = sched_gang_registry_set_member(r, &ref, "u1", "w-1", SCHED_GANG_POD_PENDING, 0);
    CHECK(g != NULL && !sched_gang_active(g) && !g->declared);
    json_t *d = g ? sched_gang_describe(g) : NULL;
    CHECK_STR(tm_json_str(d, "kind", ""), "PodGroup");
    CHECK_STR(tm_json_str(d, "message", ""), "waiting: the PodGroup does not exist (yet)");
    json_decref(d);
    json_t *pg = J("{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}}}");
    sched_native_podgroup np;
    CHECK_INT(sched_native_podgroup_from_json(pg, &np, &err), 0);
    sched_gang *g2 = sched_gang_registry_native(r, "ml", "train", &np.spec, np.basic, NULL, 0);
    sched_native_podgroup_free(&np);
    CHECK(g2 == g);
    CHECK(sched_gang_active(g) && g->spec.min_member == 2);
    /* preemption's unit (gang_live_internal.h): the gang, unless its disruptionMode is single,
     * as the live scheduler sets it from the PodGroup (then its members go one by one) */
    const char *unit = sched_gang_live_unit_of(r, "u1");
    CHECK_STR(unit ? unit : "(none)", g->key);
    g->disrupt_single = true;
    CHECK(sched_gang_live_unit_of(r, "u1") == NULL);
    g->disrupt_single = false;
    /* the scheduler-plugins PodGroup of the same name is another gang */
    sched_gang_ref other = {SCHED_GANG_PODGROUP, "ml", "train", "", ""};
    char k1[SCHED_GANG_KEY_MAX], k2[SCHED_GANG_KEY_MAX];
    CHECK(strcmp(sched_gang_ref_key(&ref, k1, sizeof k1),
                 sched_gang_ref_key(&other, k2, sizeof k2)) != 0);
    sched_gang_spec basic = {.min_member = 1};
    sched_gang_registry_native(r, "ml", "train", &basic, true, NULL, 0);
    CHECK(g->declared && g->basic && !sched_gang_active(g));
    sched_gang_registry_forget_owner(r, SCHED_GANG_NATIVE, "ml", "train");
    CHECK(!g->declared && !g->basic);
    json_decref(pg);
    json_decref(pod);
    sched_gang_registry_free(r);
}

int main(void) {
    RUN(test_registry);
    RUN(test_discovery_135);
    RUN(test_discovery_bad);
    RUN(test_podgroup_v1alpha2);
    RUN(test_podgroup_bad);
    RUN(test_captured_136);
    /* The 1.37.2 captures need a 1.37.2 control plane (a long cold build): until they are in
     * the tree these cases are not run, and say so, rather than pass on guessed objects. */
    if (access(D137 "discovery-group.json", R_OK) != 0) {
        printf("skipped: 5 cases on Kubernetes 1.37.2 objects: %s not captured yet "
               "(TAREMA_K8S_VERSION=v1.37.2 bash tests/data/k8s/capture.sh)\n",
               D137);
        return TEST_SUMMARY();
    }
    RUN(test_discovery_137);
    RUN(test_workload_137);
    RUN(test_podgroup_137);
    RUN(test_pod_137);
    RUN(test_condition);
    RUN(test_disruption_mode);
    return TEST_SUMMARY();
}
