/* gang_explain_preempt.c: explain's view of a gang's preemption (issue 31, gang_live.h). A gang
 * that does not fit is never helped by DefaultPreemption for one member (the live scheduler
 * runs the gang's own preemption, gang_preempt.h); so explain runs that dry run on its snapshot,
 * with every gang that has pods on nodes known as one victim unit, as the live registry knows
 * them: which pods it would evict (whole gangs and single pods), where each waiting member would
 * go, or why nothing would be evicted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/live/gang_live.h"
#include "scheduler/live/gang_live_internal.h"
#include "scheduler/plugins/gang/gang_preempt.h"

/* Every placed pod of a gang joins r as a member of its gang, whose owner object is read once
 * (its policy decides whether it is a unit: a basic native PodGroup is not). 0, or -1 with err
 * when the pods cannot be listed. */
static int register_placed_gangs(tm_kube *k, sched_gang_registry *r, const sched_native_api *napi,
                                 tm_err *err) {
    tm_list_opts lo = {.field_selector =
                           "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"};
    json_t *pods = tm_kube_list(k, "/api/v1/pods", &lo, NULL, err);
    if (!pods) {
        tm_err_wrap(err, "listing the placed pods for the gang's preemption");
        return -1;
    }
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        sched_gang_ref ref;
        tm_err me = {0};
        if (sched_gang_ref_from_pod_json(p, &ref, &me) || ref.kind == SCHED_GANG_NONE)
            continue;
        char key[SCHED_GANG_KEY_MAX];
        sched_gang_ref_key(&ref, key, sizeof key);
        if (!sched_gang_registry_get(r, key)) { /* its owner, once: the error stays the gang's */
            json_t *owner = NULL;
            sched_gang_explain_register_owner(k, r, napi, &ref, &owner, &me);
            json_decref(owner);
        }
        sched_gang_registry_set_member(r, &ref, tm_json_str(p, "metadata.uid", ""),
                                       tm_json_str(p, "metadata.name", ""),
                                       sched_gang_json_pod_state(p), 0);
    }
    json_decref(pods);
    return 0;
}

int sched_gang_explain_units(tm_kube *k, sched_framework *fw, sched_gang_registry *r, tm_err *err) {
    sched_native_api api = {0};
    tm_err de = {0};
    if (sched_gang_native_discover(k, &api, &de)) /* none: no native PodGroups to read */
        api = (sched_native_api){0};
    if (register_placed_gangs(k, r, &api, err))
        return -1;
    if (!sched_framework_plugin_state(fw, SCHED_PREEMPTION_PLUGIN) &&
        sched_preemption_plugin_add(fw, err) < 0)
        return -1;
    return sched_preemption_set_units(fw, sched_gang_live_unit_of, r, err);
}

json_t *sched_gang_explain_preemption(tm_kube *k, sched_framework *fw, sched_snapshot *snap,
                                      sched_gang_registry *r, const sched_native_api *napi,
                                      sched_gang *g, sched_pod *const *pods, size_t n,
                                      int64_t now_ms, tm_err *err) {
    sched_native_api api = *napi;
    tm_err de = {0};
    if (!api.version[0] && sched_gang_native_discover(k, &api, &de)) /* none: PodGroups absent */
        api = (sched_native_api){0};
    if (register_placed_gangs(k, r, &api, err))
        return NULL;
    int *nodes = calloc(n ? n : 1, sizeof *nodes);
    if (!nodes) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    sched_gang_preemption pr = {.nodes = nodes};
    json_t *out = NULL;
    if (sched_gang_preempt(fw, snap, g, pods, n, now_ms, sched_gang_live_unit_of, r, &pr, err) < 0)
        goto done;
    json_t *victims = json_array(), *members = json_array();
    for (size_t i = 0; victims && i < pr.n_victims; i++) {
        const sched_victim *v = &pr.victims[i];
        const char *unit = sched_gang_live_unit_of(r, v->uid);
        char pod[512];
        snprintf(pod, sizeof pod, "%s/%s", v->ns, v->name);
        json_array_append_new(victims,
                              json_pack("{s:s, s:s, s:i, s:o, s:s}", "pod", pod, "node", v->node,
                                        "priority", (int)v->priority, "gang",
                                        unit ? json_string(unit) : json_null(), "why", v->why));
    }
    for (size_t i = 0; pr.ok && members && i < n; i++) {
        const sched_node *node = nodes[i] >= 0 ? sched_snapshot_node(snap, (size_t)nodes[i]) : NULL;
        char pod[512];
        snprintf(pod, sizeof pod, "%s/%s", pods[i]->ns, pods[i]->name);
        json_array_append_new(members, json_pack("{s:s, s:o}", "pod", pod, "node",
                                                 node ? json_string(node->name) : json_null()));
    }
    out = json_pack("{s:b, s:s, s:o, s:I, s:I, s:o}", "wouldPreempt", pr.ok && pr.n_victims > 0,
                    "message", pr.message, "victims", victims, "units", (json_int_t)pr.n_units,
                    "gangs", (json_int_t)pr.n_gangs, "members", members);
    if (!out)
        tm_err_set(err, "out of memory building the gang's preemption");
done:
    sched_gang_preemption_clear(&pr);
    free(nodes);
    return out;
}
