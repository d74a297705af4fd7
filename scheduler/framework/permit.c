/* permit.c: the pods Permit holds (WAIT) until every plugin that made them wait allowed them,
 * one rejected them, or their deadline passed: the list of waiting pods and the plugins' and
 * callers' verdicts on them. The caller resolves each with sched_framework_waiting_resolve
 * (cycle.c; framework.h has the protocol), so this file calls nothing of the cycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/framework/framework_internal.h"

fw_waiting *fw_find_waiting(const sched_framework *fw, const char *uid) {
    for (size_t i = 0; uid && i < fw->n_waiting; i++)
        if (strcmp(fw->waiting[i].uid, uid) == 0)
            return &fw->waiting[i];
    return NULL;
}

void fw_drop_waiting(sched_framework *fw, fw_waiting *w) {
    free(w->uid);
    *w = fw->waiting[--fw->n_waiting]; /* order does not matter */
}

static size_t plugin_index(const sched_framework *fw, const char *name) {
    for (size_t k = 0; name && k < fw->n_plugins; k++)
        if (strcmp(fw->plugins[k].name, name) == 0)
            return k;
    return SIZE_MAX;
}

int fw_hold(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
            int64_t deadline_ms, uint64_t pending, tm_err *err) {
    if (fw->n_waiting == fw->cap_waiting) {
        size_t ncap = fw->cap_waiting ? fw->cap_waiting * 2 : 16;
        fw_waiting *nw = realloc(fw->waiting, ncap * sizeof *nw);
        if (!nw)
            return tm_err_set(err, "out of memory holding pod %s/%s in Permit", p->ns, p->name);
        fw->waiting = nw;
        fw->cap_waiting = ncap;
    }
    char *uid = strdup(p->uid);
    if (!uid)
        return tm_err_set(err, "out of memory holding pod %s/%s in Permit", p->ns, p->name);
    fw->waiting[fw->n_waiting++] = (fw_waiting){.uid = uid,
                                                .pod = p,
                                                .snap = s,
                                                .node = node,
                                                .deadline_ms = deadline_ms,
                                                .pending = pending};
    return 0;
}

int sched_framework_allow(sched_framework *fw, const char *uid, const char *plugin) {
    fw_waiting *w = fw_find_waiting(fw, uid);
    if (!w)
        return -1;
    size_t k = plugin_index(fw, plugin);
    if (k < fw->n_plugins)
        w->pending &= ~(1ull << k);
    return 0;
}

int sched_framework_reject(sched_framework *fw, const char *uid, const char *plugin,
                           const char *msg) {
    fw_waiting *w = fw_find_waiting(fw, uid);
    if (!w)
        return -1;
    if (!w->rejected)
        snprintf(w->msg, sizeof w->msg, "rejected by %s: %s", plugin ? plugin : "caller",
                 msg ? msg : "");
    w->rejected = true;
    return 0;
}

void sched_framework_waiting_each(const sched_framework *fw,
                                  void (*fn)(void *arg, const sched_pod *p, int node,
                                             int64_t deadline_ms),
                                  void *arg) {
    for (size_t i = 0; i < fw->n_waiting; i++)
        fn(arg, fw->waiting[i].pod, fw->waiting[i].node, fw->waiting[i].deadline_ms);
}

size_t sched_framework_waiting_count(const sched_framework *fw) {
    return fw->n_waiting;
}

int sched_framework_waiting_forget(sched_framework *fw, const char *uid) {
    fw_waiting *w = fw_find_waiting(fw, uid);
    if (!w)
        return -1;
    fw_drop_waiting(fw, w);
    return 0;
}
