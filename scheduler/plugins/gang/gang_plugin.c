/* gang_plugin.c: the Gang plugin (gang_plugin.h). */
#include "scheduler/plugins/gang/gang_plugin.h"

#include <stdio.h>
#include <string.h>

static sched_status pre_enqueue(void *state, const sched_snapshot *s, const sched_pod *p,
                                int64_t now_ms, char *msg, size_t size) {
    (void)s, (void)now_ms;
    sched_gang *g = sched_gang_registry_of(state, p->uid);
    if (!g || g->basic)
        return SCHED_STATUS_OK;
    if (g->spec_error) {
        snprintf(msg, size, "gang %s: %s", g->key, g->spec_error);
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (!g->declared) {
        snprintf(msg, size, "gang %s: waiting for %s %s/%s to exist", g->key,
                 sched_gang_kind_object(g->kind), g->ns, g->owner);
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    size_t live = g->n_members - sched_gang_count(g, SCHED_GANG_POD_FAILED) + g->done_succeeded;
    if (live < (size_t)g->spec.min_member) {
        snprintf(msg, size, "gang %s: %zu pod(s) exist, minMember %d: waiting for %zu more pod(s)",
                 g->key, live, (int)g->spec.min_member, (size_t)g->spec.min_member - live);
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    char why[256];
    if (sched_gang_waits_for_gates(g, why, sizeof why)) {
        snprintf(msg, size, "gang %s: %s", g->key, why);
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    return SCHED_STATUS_OK;
}

static int queue_cmp(void *state, const sched_snapshot *s, const sched_pod *a, const sched_pod *b) {
    (void)s;
    sched_gang *ga = sched_gang_registry_of(state, a->uid);
    sched_gang *gb = sched_gang_registry_of(state, b->uid);
    if (!ga || !gb || ga == gb)
        return 0;
    if (ga->first_seen_ms != gb->first_seen_ms)
        return ga->first_seen_ms < gb->first_seen_ms ? -1 : 1;
    return strcmp(ga->key, gb->key);
}

static sched_status permit(void *state, const sched_cycle *c, const sched_node *n,
                           int64_t *timeout_ms, char *msg, size_t size) {
    (void)n, (void)timeout_ms;
    sched_gang *g = sched_gang_registry_of(state, c->pod->uid);
    if (!sched_gang_active(g) || g->placing)
        return SCHED_STATUS_OK;
    snprintf(msg, size, "gang %s: a member is bound only with its gang", g->key);
    return SCHED_STATUS_UNSCHEDULABLE;
}

int sched_gang_plugin_add(sched_framework *fw, sched_gang_registry *reg, tm_err *err) {
    sched_plugin p = {.name = SCHED_GANG_PLUGIN,
                      .state = reg,
                      .pre_enqueue = pre_enqueue,
                      .queue_cmp = queue_cmp,
                      .permit = permit};
    return sched_framework_add_plugin(fw, &p, err);
}
