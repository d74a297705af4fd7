/* kobj.c: the controller's Kubernetes objects (kobj.h). Pure. */
#include "planner/kobj.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"

int64_t pl_time_parse(const char *s) {
    if (!s)
        return -1;
    struct tm tm = {0};
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return -1;
    if (*rest == '.') /* fractions of a second: dropped */
        while (isdigit((unsigned char)*++rest))
            ;
    if (*rest != 'Z' || rest[1])
        return -1;
    return (int64_t)timegm(&tm);
}

char *pl_time_format(int64_t t, char *buf, size_t size) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

int pl_step_object_name(const char *wf, const char *step, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s-", wf);
    if (n < 0 || (size_t)n >= size)
        return -1;
    size_t k = (size_t)n;
    for (const char *c = step; *c && k + 1 < size; c++) {
        char ch = (char)tolower((unsigned char)*c);
        buf[k++] = (isalnum((unsigned char)ch)) ? ch : '-';
    }
    buf[k] = 0;
    while (k > 0 && buf[k - 1] == '-') /* a name must end alphanumeric */
        buf[--k] = 0;
    return strlen(step) + (size_t)n >= size || k > 63 ? -1 : 0;
}

pl_workflow *pl_workflow_from_object(const json_t *obj, tm_err *err) {
    const char *name = tm_json_str(obj, "metadata.name", NULL);
    json_t *steps = tm_json_path(obj, "spec.steps");
    if (!name) {
        tm_err_set(err, "Workflow without metadata.name");
        return NULL;
    }
    json_t *native = json_pack("{s:s, s:O}", "name", name, "steps", steps ? steps : json_null());
    char src[PL_NAME_MAX + 16];
    snprintf(src, sizeof src, "workflow %s", name);
    pl_workflow *wf = native ? pl_workflow_from_native(native, src, err) : NULL;
    json_decref(native);
    if (!wf)
        return NULL;
    /* Every step's objects are named WORKFLOW-STEP: two steps must not map to one name. */
    for (int i = 0; i < wf->nsteps; i++) {
        char a[PL_OBJNAME_MAX], b[PL_OBJNAME_MAX];
        if (pl_step_object_name(name, wf->steps[i].name, a, sizeof a) < 0) {
            tm_err_set(err,
                       "%s: step '%s': the object name %s-%s would be longer than 63 "
                       "characters; use a shorter workflow or step name",
                       src, wf->steps[i].name, name, wf->steps[i].name);
            goto fail;
        }
        for (int j = 0; j < i; j++) {
            pl_step_object_name(name, wf->steps[j].name, b, sizeof b);
            if (!strcmp(a, b)) {
                tm_err_set(err, "%s: steps '%s' and '%s' both map to the object name %s", src,
                           wf->steps[j].name, wf->steps[i].name, a);
                goto fail;
            }
        }
    }
    return wf;
fail:
    pl_workflow_free(wf);
    return NULL;
}

json_t *pl_workflow_object(const json_t *native, const char *ns, int retries) {
    json_t *o =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:O, s:i}}", "apiVersion", PL_GV, "kind", "Workflow",
                  "metadata", "name", tm_json_str(native, "name", ""), "namespace", ns, "spec",
                  "steps", json_object_get(native, "steps"), "retries", retries);
    return o;
}

static json_t *requests_json(int64_t cpu_milli, int64_t mem_bytes) {
    char c[TM_QUANTITY_BUF], m[TM_QUANTITY_BUF];
    return json_pack("{s:s, s:s}", "cpu", tm_quantity_format_milli(cpu_milli, c, sizeof c),
                     "memory", tm_quantity_format_bytes(mem_bytes, m, sizeof m));
}

json_t *pl_workflow_native_json(const pl_workflow *wf) {
    json_t *steps = json_array();
    for (int i = 0; steps && i < wf->nsteps; i++) {
        const pl_step *s = &wf->steps[i];
        json_t *j = json_pack("{s:s, s:i, s:o}", "name", s->name, "pods", s->pods, "requests",
                              requests_json(s->cpu_milli, s->mem_bytes));
        if (!j)
            continue;
        if (s->task[0])
            json_object_set_new(j, "task", json_string(s->task));
        else
            json_object_set_new(j, "duration", json_sprintf("%llds", (long long)s->duration_s));
        if (!s->task[0] && s->group_s_given && s->ngroup_s) {
            json_t *ds = json_object();
            for (int g = 0; g < s->ngroup_s; g++)
                json_object_set_new(ds, s->group_s[g].group,
                                    json_sprintf("%llds", (long long)s->group_s[g].seconds));
            json_object_set_new(j, "durations", ds);
        }
        if (s->image[0])
            json_object_set_new(j, "image", json_string(s->image));
        if (s->nafter) {
            json_t *a = json_array();
            for (int k = 0; k < s->nafter; k++)
                json_array_append_new(a, json_string(wf->steps[s->after[k]].name));
            json_object_set_new(j, "after", a);
        }
        json_array_append_new(steps, j);
    }
    return json_pack("{s:s, s:o}", "name", wf->name, "steps", steps);
}

/* metadata for a step's object: name, namespace, labels, ownerReference to the Workflow. */
static json_t *step_meta(const json_t *wfobj, const pl_step *s, const char *name) {
    const char *wfname = tm_json_str(wfobj, "metadata.name", "");
    char stepname[PL_OBJNAME_MAX];
    pl_step_object_name(wfname, s->name, stepname, sizeof stepname);
    json_t *m = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "name", name, "namespace",
                          tm_json_str(wfobj, "metadata.namespace", "default"), "labels",
                          PL_LABEL_WF, wfname, PL_LABEL_STEP, stepname + strlen(wfname) + 1,
                          "app.kubernetes.io/managed-by", PL_MANAGED_BY);
    const char *uid = tm_json_str(wfobj, "metadata.uid", NULL);
    if (m && uid)
        json_object_set_new(m, "ownerReferences",
                            json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", PL_GV, "kind",
                                      "Workflow", "name", wfname, "uid", uid));
    return m;
}

json_t *pl_podgroup_object(const json_t *wfobj, const pl_step *s) {
    char name[PL_OBJNAME_MAX];
    pl_step_object_name(tm_json_str(wfobj, "metadata.name", ""), s->name, name, sizeof name);
    return json_pack("{s:s, s:s, s:o, s:{s:i, s:o}}", "apiVersion", PL_PG_GV, "kind", "PodGroup",
                     "metadata", step_meta(wfobj, s, name), "spec", "minMember", s->pods,
                     "minResources",
                     requests_json(s->cpu_milli * s->pods, s->mem_bytes * (int64_t)s->pods));
}

json_t *pl_reservation_spec(const pl_step *s, int64_t start, int64_t end, const char *const *nodes,
                            int npods, const char *owner, const char *scheduler_name) {
    char a[40], b[40];
    json_t *list = json_array();
    /* the plan's nodes, each once, in the plan's order: the template's pods go only there */
    for (int k = 0; k < npods && list; k++) {
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= !strcmp(nodes[j], nodes[k]);
        if (!seen)
            json_array_append_new(list, json_string(nodes[k]));
    }
    json_t *tmpl = json_pack("{s:o}", "requests", requests_json(s->cpu_milli, s->mem_bytes));
    if (tmpl && s->task[0]) { /* placed like the task's pods (its TaskProfile) */
        const char *slash = strchr(s->task, '/');
        json_object_set_new(tmpl, "labels",
                            json_pack("{s:s%, s:s}", "tarema.io/workflow", s->task,
                                      (size_t)(slash - s->task), "nextflow.io/processName",
                                      slash + 1));
    }
    return json_pack("{s:s, s:s, s:o, s:i, s:o, s:{s:s, s:s}, s:s}", "startTime",
                     pl_time_format(start, a, sizeof a), "endTime",
                     pl_time_format(end, b, sizeof b), "template", tmpl, "count", s->pods, "nodes",
                     list, "owner", "kind", "PodGroup", "name", owner, "schedulerName",
                     scheduler_name);
}

json_t *pl_reservation_object(const json_t *wfobj, const pl_step *s, int64_t start, int64_t end,
                              const char *const *nodes, int npods, const char *scheduler_name) {
    char name[PL_OBJNAME_MAX];
    pl_step_object_name(tm_json_str(wfobj, "metadata.name", ""), s->name, name, sizeof name);
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", PL_GV, "kind", "Reservation", "metadata",
                     step_meta(wfobj, s, name), "spec",
                     pl_reservation_spec(s, start, end, nodes, npods, name, scheduler_name));
}

json_t *pl_pod_object(const json_t *wfobj, const pl_step *s, const json_t *step_json, int i,
                      int attempt, const char *scheduler_name) {
    char group[PL_OBJNAME_MAX], name[PL_OBJNAME_MAX + 32];
    pl_step_object_name(tm_json_str(wfobj, "metadata.name", ""), s->name, group, sizeof group);
    if (attempt > 0)
        snprintf(name, sizeof name, "%s-%d-r%d", group, i, attempt);
    else
        snprintf(name, sizeof name, "%s-%d", group, i);
    json_t *meta = step_meta(wfobj, s, name);
    json_t *labels = json_object_get(meta, "labels");
    json_object_set_new(labels, PL_LABEL_PG, json_string(group));
    json_object_set_new(labels, "planner.tarema.io/attempt", json_sprintf("%d", attempt));
    if (s->task[0]) { /* so that the scheduler finds the task's TaskProfile */
        const char *slash = strchr(s->task, '/');
        json_object_set_new(labels, "tarema.io/workflow",
                            json_stringn(s->task, (size_t)(slash - s->task)));
        json_object_set_new(labels, "nextflow.io/processName", json_string(slash + 1));
    }
    json_t *ann = json_object();
    json_t *given = json_object_get(step_json, "annotations");
    if (json_is_object(given))
        json_object_update(ann, given);
    json_object_set_new(ann, PL_ANN_EXPECT, json_sprintf("%llds", (long long)s->duration_s));
    json_object_set_new(meta, "annotations", ann);
    json_t *ctr = json_pack("{s:s, s:s, s:{s:o, s:o}}", "name", "step", "image",
                            s->image[0] ? s->image : "busybox:1.36", "resources", "requests",
                            requests_json(s->cpu_milli, s->mem_bytes), "limits",
                            requests_json(s->cpu_milli, s->mem_bytes));
    json_t *cmd = json_object_get(step_json, "command");
    if (json_is_array(cmd))
        json_object_set(ctr, "command", cmd);
    else if (json_is_string(cmd))
        json_object_set_new(ctr, "command", json_pack("[s, s, O]", "/bin/sh", "-c", (json_t *)cmd));
    json_t *pod =
        json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:[{s:s}], s:[o]}}", "apiVersion", "v1", "kind",
                  "Pod", "metadata", meta, "spec", "restartPolicy", "Never", "schedulerName",
                  scheduler_name, "schedulingGates", "name", PL_GATE, "containers", ctr);
    return pod;
}

int pl_pod_gated(const json_t *pod) {
    json_t *g = tm_json_path(pod, "spec.schedulingGates"), *e;
    size_t i;
    json_array_foreach(g, i, e) {
        if (!strcmp(tm_json_str(e, "name", ""), PL_GATE))
            return 1;
    }
    return 0;
}

json_t *pl_selector_parse(const char *sel) {
    json_t *o = json_object();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", sel ? sel : "");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t && o; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || eq == t) {
            json_decref(o);
            return NULL;
        }
        *eq = 0;
        json_object_set_new(o, t, json_string(eq + 1));
    }
    return o;
}

int pl_selector_match(const json_t *sel, const json_t *obj) {
    json_t *labels = tm_json_path(obj, "metadata.labels");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sel, k, v) {
        json_t *l = json_object_get(labels, k);
        if (!json_is_string(l) || strcmp(json_string_value(l), json_string_value(v)))
            return 0;
    }
    return 1;
}
