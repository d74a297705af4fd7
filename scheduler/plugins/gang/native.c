/* native.c: scheduling.k8s.io gangs at every served version (native.h). */
#include "scheduler/plugins/gang/native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"

/* v1alpha3 (1.37, alpha, with CompositePodGroup) has v1beta1's PodGroup shape; the beta is
 * preferred when both are served. */
const char *const sched_native_versions[] = {"v1beta1", "v1alpha3", "v1alpha2", "v1alpha1"};
const size_t sched_native_n_versions = sizeof sched_native_versions / sizeof *sched_native_versions;

/* The PodGroup condition type of each version (v1alpha1 has no PodGroup). */
static const char *condition_of(const char *version) {
    if (strcmp(version, "v1beta1") == 0 || strcmp(version, "v1alpha3") == 0)
        return "PodGroupInitiallyScheduled";
    if (strcmp(version, "v1alpha2") == 0)
        return "PodGroupScheduled";
    return NULL;
}

static ssize_t known_version(const char *v) {
    for (size_t i = 0; i < sched_native_n_versions; i++)
        if (strcmp(sched_native_versions[i], v) == 0)
            return (ssize_t)i;
    return -1;
}

int sched_native_api_versions(const json_t *group, const char **out, tm_err *err) {
    const json_t *versions = json_object_get(group, "versions");
    if (strcmp(tm_json_str(group, "name", ""), SCHED_NATIVE_GROUP) != 0 || !json_is_array(versions))
        return tm_err_set(err, "not the APIGroup document of %s (no name %s with versions)",
                          SCHED_NATIVE_GROUP, SCHED_NATIVE_GROUP);
    int n = 0;
    /* Our order (newest first), not the server's: its preferredVersion is v1 (PriorityClass),
     * which says nothing about gangs. */
    for (size_t k = 0; k < sched_native_n_versions; k++) {
        size_t i;
        const json_t *v;
        json_array_foreach(versions, i, v) {
            if (strcmp(tm_json_str(v, "version", ""), sched_native_versions[k]) == 0) {
                out[n++] = sched_native_versions[k];
                break;
            }
        }
    }
    return n;
}

int sched_native_api_from_resources(const json_t *list, sched_native_api *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *gv = tm_json_str(list, "groupVersion", "");
    size_t glen = strlen(SCHED_NATIVE_GROUP);
    const json_t *res = json_object_get(list, "resources");
    if (strncmp(gv, SCHED_NATIVE_GROUP "/", glen + 1) != 0 || !json_is_array(res))
        return tm_err_set(err, "not an APIResourceList of %s (groupVersion \"%s\")",
                          SCHED_NATIVE_GROUP, gv);
    const char *version = gv + glen + 1;
    if (known_version(version) < 0)
        return tm_err_set(err,
                          "%s is a version tarema does not know (known: v1beta1, v1alpha2, "
                          "v1alpha1)",
                          gv);
    snprintf(out->version, sizeof out->version, "%s", version);
    snprintf(out->group_version, sizeof out->group_version, "%s", gv);
    size_t i;
    const json_t *r;
    json_array_foreach(res, i, r) {
        const char *name = tm_json_str(r, "name", "");
        if (strcmp(name, "workloads") == 0)
            out->workloads = true;
        else if (strcmp(name, "podgroups") == 0)
            out->podgroups = true;
        else if (strcmp(name, "podgroups/status") == 0)
            out->podgroup_status = true;
    }
    out->condition = out->podgroups ? condition_of(version) : NULL;
    return 0;
}

void sched_native_podgroup_free(sched_native_podgroup *p) {
    if (!p)
        return;
    sched_gang_spec_free(&p->spec);
    free(p->workload);
    free(p->template_name);
    memset(p, 0, sizeof *p);
}

static int dup_opt(char **dst, const char *s, tm_err *err) {
    if (!s || !s[0])
        return 0;
    return (*dst = strdup(s)) ? 0 : tm_err_set(err, "out of memory");
}

int sched_native_podgroup_from_json(const json_t *pg, sched_native_podgroup *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    char obj[600];
    snprintf(obj, sizeof obj, "PodGroup %s/%s", tm_json_str(pg, "metadata.namespace", ""),
             tm_json_str(pg, "metadata.name", ""));
    const json_t *spec = json_object_get(pg, "spec");
    if (!json_is_object(spec))
        return tm_err_set(err, "%s: spec is missing", obj);
    const json_t *pol = json_object_get(spec, "schedulingPolicy");
    if (!json_is_object(pol))
        return tm_err_set(err, "%s: spec.schedulingPolicy is missing", obj);
    const json_t *gang = json_object_get(pol, "gang");
    const json_t *basic = json_object_get(pol, "basic");
    bool is_gang = gang && !json_is_null(gang), is_basic = basic && !json_is_null(basic);
    /* The API server accepts exactly one; a policy that is both or neither is refused rather
     * than guessed (a guess of "basic" would bind any subset of a gang). */
    if (is_gang == is_basic)
        return tm_err_set(err, "%s: spec.schedulingPolicy must have exactly one of gang and basic",
                          obj);
    if (is_gang) {
        const json_t *mc = json_object_get(gang, "minCount");
        if (!json_is_integer(mc))
            return tm_err_set(err, "%s: spec.schedulingPolicy.gang.minCount must be an integer",
                              obj);
        json_int_t v = json_integer_value(mc);
        if (v < 1 || v > INT32_MAX)
            return tm_err_set(err,
                              "%s: spec.schedulingPolicy.gang.minCount must be at least 1, "
                              "got %lld",
                              obj, (long long)v);
        out->spec.min_member = (int32_t)v;
    } else {
        out->basic = true;
        out->spec.min_member = 1;
    }
    /* spec.disruptionMode: v1beta1 {single: {}} | {all: {}} (the 1.37.2 API server fills in
     * single when it is left out), v1alpha2 "Pod" | "PodGroup". kube-scheduler 1.37 preempts
     * the members of a single-mode group one by one and an all-mode group as one unit
     * (pkg/scheduler/framework/preemption); absent (1.36 with its gate off): as all. */
    const json_t *dm = json_object_get(spec, "disruptionMode");
    if (dm && !json_is_null(dm)) {
        const json_t *single = json_is_object(dm) ? json_object_get(dm, "single") : NULL;
        const json_t *all = json_is_object(dm) ? json_object_get(dm, "all") : NULL;
        const char *str = json_string_value(dm);
        if (json_is_object(single) && !all)
            out->disrupt_single = true;
        else if (json_is_object(all) && !single)
            out->disrupt_single = false;
        else if (str && strcmp(str, "Pod") == 0)
            out->disrupt_single = true;
        else if (!str || strcmp(str, "PodGroup") != 0)
            return tm_err_set(err,
                              "%s: spec.disruptionMode must be {single: {}} or {all: {}} (or "
                              "\"Pod\" or \"PodGroup\" in v1alpha2)",
                              obj);
    }
    /* v1beta1: spec.workloadRef {workloadName, templateName}; v1alpha2:
     * spec.podGroupTemplateRef.workload {workloadName, podGroupTemplateName}. Informational:
     * the PodGroup carries its own copy of the policy. */
    const json_t *ref = json_object_get(spec, "workloadRef");
    const char *tkey = "templateName";
    if (!json_is_object(ref)) {
        ref = tm_json_path(spec, "podGroupTemplateRef.workload");
        tkey = "podGroupTemplateName";
    }
    if (json_is_object(ref) &&
        (dup_opt(&out->workload, tm_json_str(ref, "workloadName", ""), err) ||
         dup_opt(&out->template_name, tm_json_str(ref, tkey, ""), err))) {
        sched_native_podgroup_free(out);
        return -1;
    }
    out->generation = tm_json_int(pg, "metadata.generation", 0);
    return 0;
}

int sched_native_set_condition(const json_t *conditions, const sched_native_condition *c,
                               json_t **out, tm_err *err) {
    *out = NULL;
    if (!c->type || !c->type[0] || !c->reason || !c->reason[0] || !c->now || !c->now[0])
        return tm_err_set(err, "PodGroup condition: type, reason and time are required");
    if (conditions && !json_is_null(conditions) && !json_is_array(conditions))
        return tm_err_set(err, "PodGroup status.conditions is not a list");
    const char *status = c->scheduled ? "True" : "False";
    const char *msg = c->message ? c->message : "";
    const json_t *old = NULL;
    size_t i, at = 0;
    const json_t *e;
    json_array_foreach(conditions, i, e) {
        if (strcmp(tm_json_str(e, "type", ""), c->type) == 0) {
            old = e;
            at = i;
            break;
        }
    }
    if (old) {
        const char *ost = tm_json_str(old, "status", "");
        /* kube-scheduler (1.36 and 1.37 alike) never takes a True back: a later cycle for
         * extra pods failing does not undo the group's first success. */
        if (strcmp(ost, "True") == 0 && !c->scheduled)
            return 0;
        if (strcmp(ost, status) == 0 && strcmp(tm_json_str(old, "reason", ""), c->reason) == 0 &&
            strcmp(tm_json_str(old, "message", ""), msg) == 0 &&
            tm_json_int(old, "observedGeneration", 0) == c->generation)
            return 0;
    }
    const char *ltt = c->now;
    if (old && strcmp(tm_json_str(old, "status", ""), status) == 0)
        ltt = tm_json_str(old, "lastTransitionTime", c->now);
    json_t *cond = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", c->type, "status", status,
                             "reason", c->reason, "message", msg, "lastTransitionTime", ltt);
    /* metav1.Condition's observedGeneration is omitempty: the 1.37.2 API server sets no
     * metadata.generation on a PodGroup, and kube-scheduler's condition then has no such key
     * (tests/data/k8s/v1.37.2/podgroup-scheduled.json); write the same. */
    if (cond && c->generation > 0 &&
        json_object_set_new(cond, "observedGeneration", json_integer(c->generation)) != 0) {
        json_decref(cond);
        cond = NULL;
    }
    json_t *list = json_is_array(conditions) ? json_deep_copy(conditions) : json_array();
    if (!cond || !list ||
        (old ? json_array_set_new(list, at, cond) : json_array_append_new(list, cond))) {
        json_decref(list);
        return tm_err_set(err, "out of memory");
    }
    *out = list;
    return 1;
}
