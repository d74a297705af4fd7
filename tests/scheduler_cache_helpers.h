/* scheduler_cache_helpers.h: test helpers for the scheduler's live cache: JSON written with
 * single quotes, a cluster of two 8-core nodes and pods fed through the informer's own path
 * (transform, then watch event, as the live loop does), and one scheduling cycle of policy
 * tarema on the cache's snapshot. Header-only, static inline: each test is one program. */
#ifndef TAREMA_TEST_SCHEDULER_CACHE_HELPERS_H
#define TAREMA_TEST_SCHEDULER_CACHE_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/backend/cache.h"
#include "scheduler/plugins/policy/policy.h"

/* JSON from text written with single quotes, so the test cases stay readable. */
static inline json_t *J(const char *text) {
    char *t = strdup(text);
    for (char *c = t; *c; c++)
        if (*c == '\'')
            *c = '"';
    json_error_t je;
    json_t *j = json_loads(t, 0, &je);
    if (!j)
        printf("    bad test JSON: %s in %s\n", je.text, t);
    free(t);
    return j;
}

/* A pod event (JSON texts; old_text NULL for none) through the informer's path: the transform,
 * then sched_cache_pod_event. Returns its status (the error printed). */
static inline int cache_feed(sched_cache *c, tm_watch_type t, const char *text,
                             const char *old_text) {
    json_t *obj = sched_cache_pod_transform(c, J(text));
    json_t *old = old_text ? sched_cache_pod_transform(c, J(old_text)) : NULL;
    tm_err err = {0};
    int rc = obj ? sched_cache_pod_event(c, t, obj, old, &err) : -1;
    if (rc)
        printf("    pod event: %s\n", err.msg);
    json_decref(obj);
    json_decref(old);
    return rc;
}

/* A cache (scheduler name tarema-scheduler, hooks may be NULL) with two ready 8-core nodes a
 * and b (label kubernetes.io/hostname), added through the node informer's path. */
static inline sched_cache *cache_cluster(const sched_cache_hooks *hooks) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema-scheduler", NULL, NULL, hooks, &err);
    CHECK(c != NULL);
    for (int i = 0; c && i < 2; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{'metadata':{'name':'%c','labels':{'kubernetes.io/hostname':'%c'}},"
                 "'status':{'allocatable':{'cpu':'8','memory':'16Gi','pods':'110'},"
                 "'conditions':[{'type':'Ready','status':'True'}]}}",
                 'a' + i, 'a' + i);
        json_t *n = sched_cache_node_transform(c, J(text));
        CHECK_INT(sched_cache_node_event(c, TM_WATCH_ADDED, n, NULL, &err), 0);
        json_decref(n);
    }
    return c;
}

/* One cycle of policy tarema for our pod (JSON text, through the transform): the chosen node's
 * name, or the fit message when none is feasible. With reserve, the pod is assumed on the
 * chosen node (sched_framework_reserve and sched_cache_assume_placed, as the live loop does).
 * Static buffer. */
static inline const char *cache_schedule(sched_cache *c, const char *text, bool reserve) {
    static char out[1100];
    tm_err err = {0};
    sched_snapshot *s = sched_cache_snapshot(c);
    json_t *j = sched_cache_pod_transform(c, J(text));
    sched_pod *p = j ? sched_pod_from_json(s, j, sched_cache_keys(c), &err) : NULL;
    json_decref(j);
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_decision d;
    if (!p || !fw || sched_framework_schedule(fw, s, p, 0, &d, &err) != 0)
        snprintf(out, sizeof out, "error: %s", err.msg);
    else if (d.node < 0)
        sched_framework_fit_message(fw, s, out, sizeof out);
    else {
        snprintf(out, sizeof out, "%s", d.node_name);
        if (reserve && (sched_framework_reserve(fw, sched_cache_snapshot(c), p, d.node, &err) ||
                        sched_cache_assume_placed(c, p->uid, &err)))
            snprintf(out, sizeof out, "error: %s", err.msg);
    }
    sched_framework_free(fw);
    sched_pod_free(p);
    return out;
}

#endif
