/* gang_start.c: backfill's expected start on a pending gang's PodGroup (gang_start.h). */
#include "scheduler/live/gang_start.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/live/backfill_live.h"
#include "scheduler/live/binder.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/gang/podgroup.h"

int64_t sched_gang_start_seen(const json_t *obj) {
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const json_t *v = json_object_get(ann, SCHED_EXPECTED_START_ANNOTATION);
    struct tm tm = {0};
    const char *e =
        json_is_string(v) ? strptime(json_string_value(v), "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!e || (*e != 'Z' && *e != '.'))
        return 0;
    return (int64_t)timegm(&tm) * 1000;
}

/* The gang's PodGroup object (its metadata: the annotation is not status), NULL when g has
 * none that can carry it. */
static char *object_path(const sched_gang *g, const char *native_gv) {
    if (g->kind == SCHED_GANG_PODGROUP && g->declared)
        return tm_kube_path(SCHED_PODGROUP_API, "podgroups", g->ns, g->owner, NULL);
    if (g->kind == SCHED_GANG_NATIVE && g->declared && native_gv)
        return tm_kube_path(native_gv, "podgroups", g->ns, g->owner, NULL);
    return NULL;
}

/* Sets (when is a time) or removes (when is NULL) the annotation; true when the patch started. */
static bool write_start(const sched_gang *g, const char *native_gv, tm_kube *k, const char *when) {
    char *path = object_path(g, native_gv);
    if (!path)
        return false;
    json_t *patch = when ? json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                                     SCHED_EXPECTED_START_ANNOTATION, when)
                         : json_pack("{s:{s:{s:n}}}", "metadata", "annotations",
                                     SCHED_EXPECTED_START_ANNOTATION);
    tm_err err = {0};
    bool ok = patch && sched_merge_patch_async(k, path, patch, &err) == 0;
    if (!ok)
        tm_warn("PodGroup %s/%s: expected start not written err=\"%s\"", g->ns, g->owner,
                err.msg[0] ? err.msg : "out of memory");
    json_decref(patch);
    free(path);
    return ok;
}

/* Members bound or beyond: the gang has started (assumed members may still be undone). */
static bool bound_whole(const sched_gang *g) {
    size_t n = sched_gang_count(g, SCHED_GANG_POD_BOUND) +
               sched_gang_count(g, SCHED_GANG_POD_RUNNING) + sched_gang_succeeded(g);
    return g->spec.min_member > 0 && n >= (size_t)g->spec.min_member;
}

void sched_gang_start_sync(sched_gang_registry *reg, const sched_framework *fw, tm_kube *k,
                           const char *native_gv) {
    const bf_plan *plan = bf_plugin_plan(fw);
    const bf_config *cfg = bf_plugin_config(fw);
    if (!plan || !cfg)
        return;
    size_t ns = bf_plan_shadow_count(plan);
    for (size_t s = 0; s < ns; s++) {
        const bf_shadow *sh = bf_plan_shadow(plan, s);
        if (!sh->key || strncmp(sh->key, "gang ", 5) != 0)
            continue;
        sched_gang *g = sched_gang_registry_get(reg, sh->key + 5);
        if (!g || bound_whole(g))
            continue;
        int64_t d = g->start_shown_ms ? sh->start_ms - g->start_shown_ms : INT64_MAX;
        if (d < 0)
            d = -d;
        if (d < cfg->resolution_ms)
            continue;
        char when[32];
        bf_format_time(sh->start_ms, when, sizeof when);
        if (write_start(g, native_gv, k, when)) {
            g->start_shown_ms = sh->start_ms;
            tm_info("backfill: expected start podgroup=%s/%s start=%s", g->ns, g->owner, when);
        }
    }
    /* a gang placed whole no longer waits: its start is no longer expected */
    size_t n = sched_gang_registry_count(reg);
    for (size_t i = 0; i < n; i++) {
        sched_gang *g = sched_gang_registry_at(reg, i);
        if (g->start_shown_ms && bound_whole(g) && write_start(g, native_gv, k, NULL))
            g->start_shown_ms = 0;
    }
}
