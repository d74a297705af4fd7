/* gang_live.c: gangs in the running scheduler (gang_live.h). */
#include "scheduler/live/gang_live.h"
#include "scheduler/live/gang_live_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/live/gang_start.h"
#include "scheduler/plugins/gang/gang_preempt.h"

/* An unchanged FailedScheduling on the members is reported again after this long. */
#define REPORT_REPEAT_MS (5 * 60 * 1000)

/* A member that arrives before its PodGroup/Workload is in the cache, or before the rest of its
 * gang (kubectl create -f of a group and its pods, a controller creating pods one by one), waits
 * quietly this long for the informer to deliver what is missing: no FailedScheduling event, no
 * PodGroup event. The PodGroup/Workload event or the missing members' pod events requeue it; past
 * this, the wait is reported like any other (the cause is then likely a real mistake: a
 * misspelt group name, fewer pods than minMember). */
#define ARRIVAL_GRACE_MS (15 * 1000)

/* A gang whose reservations are held while its binds run: the first member's bind goes alone,
 * the others' only after it succeeded, so a refusal of the first (pod deleted, conflict, API
 * server refusing) undoes reservations no bind has touched yet. */
typedef struct gang_bind {
    char *key;
    char **uids, **nodes;
    bool *done; /* answered, or never sent */
    size_t n;
    bool first_done;
    struct gang_bind *next;
} gang_bind;

struct sched_gang_live {
    sched_queue *q;
    sched_cache *c;
    sched_framework *fw;
    sched_binder *b;
    sched_gang_registry *reg;
    gang_bind *binds;
    tm_metric *m_scheduled, *m_wait_s, *m_attempts;
    /* keys of gangs waiting quietly for their arrival (ARRIVAL_GRACE_MS) */
    char **quiet;
    size_t n_quiet, cap_quiet;
    /* scheduling.k8s.io PodGroups (1.36+): the version served (group_version "" while none),
     * and per gang key what the PodGroup last showed: {"conditions": [...], "generation": N},
     * so the condition is written as kube-scheduler writes it (native.h) */
    sched_native_api native;
    json_t *native_seen;
    sched_preemptor *preemptor; /* NULL: gangs never preempt (extender mode) */
    tm_metric *m_preempt;
    tm_kube *k; /* the PodGroups' expected start (gang_start.h) */
    /* an extender's registry only (sched_gang_live_observer_new): no queue, no binder, nothing
     * reported; kube-scheduler places the gangs */
    bool observe;
};

sched_gang_live *sched_gang_live_new(sched_queue *q, sched_cache *c, sched_framework *fw,
                                     sched_binder *b, tm_metrics *reg, tm_err *err) {
    sched_gang_live *gl = calloc(1, sizeof *gl);
    if (!gl || !(gl->reg = sched_gang_registry_new())) {
        free(gl);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    gl->q = q;
    gl->c = c;
    if (!(gl->native_seen = json_object())) {
        sched_gang_registry_free(gl->reg);
        free(gl);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    gl->fw = fw;
    gl->b = b;
    gl->k = sched_binder_kube(b);
    double wait[16];
    tm_metrics_exp_buckets(0.01, 2, 16, wait); /* 10 ms .. 5.5 min */
    if (!(gl->m_scheduled = tm_metrics_counter(
              reg, "tarema_gangs_scheduled_total",
              "Gangs placed whole (PodGroup or Workload pod groups).", NULL, err)) ||
        !(gl->m_wait_s = tm_metrics_histogram(reg, "tarema_gang_wait_seconds",
                                              "Time from a gang's first member seen to the gang "
                                              "placed whole.",
                                              NULL, wait, 16, err)) ||
        !(gl->m_attempts = tm_metrics_counter(reg, "tarema_gang_attempts_total",
                                              "Gang placement attempts by result (scheduled, "
                                              "unschedulable, waiting, timeout, bind_failed, "
                                              "error).",
                                              TM_LABELS("result"), err)) ||
        !(gl->m_preempt = tm_metrics_counter(reg, "tarema_gang_preemptions_total",
                                             "Gang preemption attempts by result (preempting: "
                                             "victims evicted; waiting: earlier victims still "
                                             "leaving suffice; unschedulable; error).",
                                             TM_LABELS("result"), err))) {
        sched_gang_live_free(gl);
        return NULL;
    }
    return gl;
}

sched_gang_live *sched_gang_live_observer_new(sched_cache *c, sched_framework *fw, tm_kube *k,
                                              tm_err *err) {
    sched_gang_live *gl = calloc(1, sizeof *gl);
    if (!gl || !(gl->reg = sched_gang_registry_new()) || !(gl->native_seen = json_object())) {
        sched_gang_live_free(gl);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    gl->c = c;
    gl->fw = fw;
    gl->k = k;
    gl->observe = true;
    return gl;
}

static void bind_free(gang_bind *gb) {
    for (size_t i = 0; i < gb->n; i++) {
        free(gb->uids[i]);
        free(gb->nodes[i]);
    }
    free(gb->uids);
    free(gb->nodes);
    free(gb->done);
    free(gb->key);
    free(gb);
}

void sched_gang_live_free(sched_gang_live *gl) {
    if (!gl)
        return;
    while (gl->binds) {
        gang_bind *gb = gl->binds;
        gl->binds = gb->next;
        bind_free(gb);
    }
    sched_gang_registry_free(gl->reg);
    for (size_t i = 0; i < gl->n_quiet; i++)
        free(gl->quiet[i]);
    free(gl->quiet);
    json_decref(gl->native_seen);
    free(gl);
}

sched_gang_registry *sched_gang_live_registry(sched_gang_live *gl) {
    return gl->reg;
}

/* ---- reports -------------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1; /* 0 = nothing sent */
}

/* An event on the gang's PodGroup or Workload; the same message is not sent twice in a row
 * unless always. */
static void gang_event(sched_gang_live *gl, sched_gang *g, const char *type, const char *reason,
                       const char *note, bool always) {
    if (gl->observe) /* kube-scheduler reports on the gangs it places */
        return;
    uint64_t h = hash_str(note) ^ hash_str(reason);
    if (!always && g->event_sent == h)
        return;
    g->event_sent = h;
    tm_err err = {0};
    const char *api = g->kind == SCHED_GANG_PODGROUP ? SCHED_PODGROUP_API
                      : g->kind == SCHED_GANG_NATIVE ? gl->native.group_version
                                                     : SCHED_WORKLOAD_API;
    if (sched_binder_event(gl->b, api, sched_gang_kind_object(g->kind), g->ns, g->owner, NULL, type,
                           reason, note, &err))
        tm_warn("%s", err.msg);
}

/* FailedScheduling (condition + event) on one member, deduplicated like single pods. */
static void member_report(sched_gang_live *gl, const sched_pod *p, const char *msg,
                          int64_t now_ms) {
    if (!sched_queue_should_report(gl->q, p->uid, msg, now_ms, REPORT_REPEAT_MS))
        return;
    tm_err err = {0};
    if (sched_binder_unschedulable(gl->b, p, msg, &err))
        tm_warn("%s", err.msg);
}

/* The scheduling condition of a scheduling.k8s.io PodGroup, as kube-scheduler sets it after
 * each attempt: True "Scheduled" once minCount members are placed, False "Unschedulable" with
 * the gang's message after a failed attempt, False "SchedulerError" for an invalid PodGroup.
 * Nothing before the first attempt (kube-scheduler writes none either). */
static void sync_native(sched_gang_live *gl, sched_gang *g) {
    if (!gl->native.condition || g->basic || (!g->declared && !g->spec_error))
        return;
    bool scheduled = !g->spec_error && sched_gang_placed_count(g) >= (size_t)g->spec.min_member;
    const char *reason = scheduled       ? "Scheduled"
                         : g->spec_error ? "SchedulerError"
                                         : "Unschedulable";
    const char *msg = scheduled ? "" : g->spec_error ? g->spec_error : g->message;
    if (!scheduled && !g->spec_error && (g->attempts == 0 || !msg[0]))
        return;
    char sig[256];
    snprintf(sig, sizeof sig, "native/%d/%s/%016llx", scheduled, reason,
             (unsigned long long)hash_str(msg));
    if (strcmp(sig, g->status_sent) == 0)
        return;
    json_t *seen = json_object_get(gl->native_seen, g->key);
    char now[32];
    time_t t = time(NULL);
    struct tm tmv;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tmv));
    sched_native_condition c = {
        gl->native.condition, scheduled, reason, msg, tm_json_int(seen, "generation", 0), now};
    json_t *list = NULL;
    tm_err err = {0};
    int rc = sched_native_set_condition(json_object_get(seen, "conditions"), &c, &list, &err);
    if (rc < 0) {
        tm_warn("PodGroup %s/%s: condition not written err=\"%s\"", g->ns, g->owner, err.msg);
        return;
    }
    if (rc == 1) {
        json_t *patch = json_pack("{s:{s:O}}", "status", "conditions", list);
        char *path = tm_kube_path(gl->native.group_version, "podgroups", g->ns, g->owner, "status");
        if (!patch || !path || sched_binder_merge_patch(gl->b, path, patch, &err)) {
            tm_warn("PodGroup %s/%s: status not written err=\"%s\"", g->ns, g->owner,
                    err.msg[0] ? err.msg : "out of memory");
            rc = -1;
        } else if (seen) {
            /* what the PodGroup holds now, until its watch event says so too */
            json_object_set(seen, "conditions", list);
        }
        json_decref(patch);
        free(path);
    }
    json_decref(list);
    if (rc >= 0)
        snprintf(g->status_sent, sizeof g->status_sent, "%s", sig);
}

void sched_gang_live_sync_status(sched_gang_live *gl) {
    size_t n = gl->observe ? 0 : sched_gang_registry_count(gl->reg);
    for (size_t i = 0; i < n; i++) {
        sched_gang *g = sched_gang_registry_at(gl->reg, i);
        if (g->kind == SCHED_GANG_NATIVE) {
            sync_native(gl, g);
            continue;
        }
        /* Only PodGroups have a status of their own, and only existing ones can be patched. */
        if (g->kind != SCHED_GANG_PODGROUP || (!g->declared && !g->spec_error))
            continue;
        sched_gang_phase ph = sched_gang_phase_of(g);
        size_t running = sched_gang_count(g, SCHED_GANG_POD_RUNNING);
        size_t succeeded = sched_gang_succeeded(g);
        size_t failed = sched_gang_failed(g);
        size_t scheduled = sched_gang_count(g, SCHED_GANG_POD_BOUND) + running + succeeded;
        const char *msg = g->spec_error ? g->spec_error : g->message;
        char sig[256];
        snprintf(sig, sizeof sig, "%d/%zu/%zu/%zu/%zu/%016llx", (int)ph, scheduled, running,
                 succeeded, failed, (unsigned long long)hash_str(msg));
        if (strcmp(sig, g->status_sent) == 0)
            continue;
        json_t *patch = json_pack(
            "{s:{s:s, s:I, s:I, s:I, s:I, s:s}}", "status", "phase", sched_gang_phase_name(ph),
            "scheduled", (json_int_t)scheduled, "running", (json_int_t)running, "succeeded",
            (json_int_t)succeeded, "failed", (json_int_t)failed, "message", msg);
        char *path = tm_kube_path(SCHED_PODGROUP_API, "podgroups", g->ns, g->owner, "status");
        tm_err err = {0};
        if (!patch || !path || sched_binder_merge_patch(gl->b, path, patch, &err))
            tm_warn("PodGroup %s/%s: status not written err=\"%s\"", g->ns, g->owner,
                    err.msg[0] ? err.msg : "out of memory");
        else
            snprintf(g->status_sent, sizeof g->status_sent, "%s", sig);
        json_decref(patch);
        free(path);
    }
    /* backfill's expected start on the PodGroups of the gangs it holds shadows for */
    sched_gang_start_sync(gl->reg, gl->fw, gl->k,
                          gl->native.podgroups ? gl->native.group_version : NULL);
}

/* ---- informers ------------------------------------------------------------------------------ */

/* A member's state as its pod shows it (pending when not on a node yet); explain uses it as is. */
sched_gang_pod_state sched_gang_json_pod_state(const json_t *pod) {
    const char *phase = tm_json_str(pod, "status.phase", "");
    if (strcmp(phase, "Succeeded") == 0)
        return SCHED_GANG_POD_SUCCEEDED;
    if (strcmp(phase, "Failed") == 0)
        return SCHED_GANG_POD_FAILED;
    if (strcmp(phase, "Running") == 0)
        return SCHED_GANG_POD_RUNNING;
    if (tm_json_str(pod, "spec.nodeName", "")[0])
        return SCHED_GANG_POD_BOUND;
    return SCHED_GANG_POD_PENDING;
}

/* The live state: a pending pod this scheduler reserved a node for is assumed. */
static sched_gang_pod_state pod_state(sched_gang_live *gl, const json_t *pod, const char *uid) {
    sched_gang_pod_state st = sched_gang_json_pod_state(pod);
    return st == SCHED_GANG_POD_PENDING && sched_cache_is_assumed(gl->c, uid)
               ? SCHED_GANG_POD_ASSUMED
               : st;
}

void sched_gang_live_pod_event(sched_gang_live *gl, tm_watch_type t, const json_t *pod,
                               int64_t now_ms) {
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    if (!uid[0])
        return;
    sched_gang_ref ref;
    tm_err err = {0};
    if (sched_gang_ref_from_pod_json(pod, &ref, &err)) {
        tm_warn("gang membership ignored err=\"%s\"", err.msg);
        return;
    }
    if (ref.kind == SCHED_GANG_NONE)
        return;
    /* Only our pods and pods on nodes (another scheduler's members count as placed). */
    if (!sched_cache_is_ours(gl->c, pod) && !tm_json_str(pod, "spec.nodeName", "")[0])
        return;
    sched_gang_pod_state st = pod_state(gl, pod, uid);
    /* A finished pod leaves the pod informer (its field selector) as a deletion: it is folded
     * into its gang's succeeded or failed count and forgotten (gang.h), so the registry does
     * not grow with every finished pod; any other deletion just removes the member. */
    if (t == TM_WATCH_DELETED) {
        if (sched_gang_registry_finish_member(gl->reg, &ref, uid, st, now_ms))
            tm_error("gang registry: out of memory");
        return;
    }
    if (!sched_gang_registry_set_member(gl->reg, &ref, uid, tm_json_str(pod, "metadata.name", ""),
                                        st, now_ms)) {
        tm_error("gang registry: out of memory");
        return;
    }
    const json_t *gates = json_object_get(json_object_get(pod, "spec"), "schedulingGates");
    sched_gang_registry_set_gated(gl->reg, uid, json_array_size(gates) > 0);
}

/* Records PodGroup obj (ns/name) in r: its spec, or why it is invalid (-1 with err), and the
 * counts its status keeps (finished members are no longer listed). *g: NULL when out of memory. */
static int podgroup_record(sched_gang_registry *r, const char *ns, const char *name,
                           const json_t *obj, int64_t now_ms, sched_gang **g, tm_err *err) {
    sched_gang_spec spec;
    int rc = sched_podgroup_from_json(obj, &spec, err);
    *g = sched_gang_registry_podgroup(r, ns, name, rc ? NULL : &spec, rc ? err->msg : NULL, now_ms);
    if (*g) {
        (*g)->seen_succeeded = (int32_t)tm_json_int(obj, "status.succeeded", 0);
        (*g)->seen_failed = (int32_t)tm_json_int(obj, "status.failed", 0);
        /* an event without it may predate our write: keep what we wrote */
        int64_t shown = sched_gang_start_seen(obj);
        if (shown)
            (*g)->start_shown_ms = shown;
    }
    return rc;
}

bool sched_gang_live_podgroup_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj,
                                    int64_t now_ms) {
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (t == TM_WATCH_DELETED) {
        sched_gang_registry_forget_owner(gl->reg, SCHED_GANG_PODGROUP, ns, name);
        return false;
    }
    sched_gang *g;
    tm_err err = {0};
    int rc = podgroup_record(gl->reg, ns, name, obj, now_ms, &g, &err);
    if (!g) {
        tm_error("gang registry: out of memory");
        return false;
    }
    if (rc) {
        tm_warn("PodGroup invalid: its pods wait err=\"%s\"", err.msg);
        gang_event(gl, g, "Warning", "Invalid", err.msg, false);
        return false;
    }
    return true;
}

void sched_gang_live_set_native_api(sched_gang_live *gl, const sched_native_api *api) {
    gl->native = *api;
}

/* Declares the native PodGroup obj (its spec, or invalid with *rc -1 and err saying why) with
 * its disruption mode. NULL on OOM. */
static sched_gang *declare_native(sched_gang_registry *r, const char *ns, const char *name,
                                  const json_t *obj, int64_t now_ms, int *rc, tm_err *err) {
    sched_native_podgroup pg;
    *rc = sched_native_podgroup_from_json(obj, &pg, err);
    sched_gang *g = sched_gang_registry_native(
        r, ns, name, *rc ? NULL : &pg.spec, *rc ? false : pg.basic, *rc ? err->msg : NULL, now_ms);
    if (g)
        g->disrupt_single = !*rc && pg.disrupt_single;
    if (!*rc)
        sched_native_podgroup_free(&pg);
    return g;
}

bool sched_gang_live_native_podgroup_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj,
                                           int64_t now_ms) {
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    const char *name = tm_json_str(obj, "metadata.name", "");
    sched_gang_ref ref = {SCHED_GANG_NATIVE, ns, name, "", ""};
    char key[SCHED_GANG_KEY_MAX];
    sched_gang_ref_key(&ref, key, sizeof key);
    if (t == TM_WATCH_DELETED) {
        json_object_del(gl->native_seen, key);
        sched_gang_registry_forget_owner(gl->reg, SCHED_GANG_NATIVE, ns, name);
        return false;
    }
    tm_err err = {0};
    json_t *seen = json_pack("{s:O?, s:I}", "conditions", tm_json_path(obj, "status.conditions"),
                             "generation", (json_int_t)tm_json_int(obj, "metadata.generation", 0));
    if (!seen || json_object_set_new(gl->native_seen, key, seen))
        tm_error("gang registry: out of memory");
    int rc;
    sched_gang *g = declare_native(gl->reg, ns, name, obj, now_ms, &rc, &err);
    if (!g) {
        tm_error("gang registry: out of memory");
        return false;
    }
    int64_t shown = sched_gang_start_seen(obj); /* kept when absent, as for PodGroups */
    if (shown)
        g->start_shown_ms = shown;
    if (rc) {
        tm_warn("PodGroup invalid: its pods wait err=\"%s\"", err.msg);
        gang_event(gl, g, "Warning", "Invalid", err.msg, false);
        return false;
    }
    return true;
}

int sched_gang_native_discover(tm_kube *k, sched_native_api *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    tm_err ge = {0};
    json_t *group = tm_kube_get(k, "/apis/" SCHED_NATIVE_GROUP, &ge);
    if (!group) {
        if (ge.http_status == 404)
            return 0; /* the group is not served at all */
        *err = ge;
        return tm_err_wrap(err, "discovery of " SCHED_NATIVE_GROUP);
    }
    const char *versions[8];
    int n = sched_native_api_versions(group, versions, err);
    json_decref(group);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, "/apis/%s/%s", SCHED_NATIVE_GROUP, versions[i]);
        json_t *list = tm_kube_get(k, path, err);
        if (!list)
            return tm_err_wrap(err, "discovery of %s", path);
        sched_native_api api;
        int rc = sched_native_api_from_resources(list, &api, err);
        json_decref(list);
        if (rc)
            return -1;
        /* the newest version with gangs: PodGroups (1.36+), else v1alpha1's Workloads */
        if (api.podgroups || api.workloads) {
            *out = api;
            return 0;
        }
    }
    return 0;
}

bool sched_gang_live_workload_event(sched_gang_live *gl, tm_watch_type t, const json_t *obj) {
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (t == TM_WATCH_DELETED) {
        sched_gang_registry_forget_owner(gl->reg, SCHED_GANG_WORKLOAD, ns, name);
        return false;
    }
    sched_workload w;
    tm_err err = {0};
    int rc = sched_workload_from_json(obj, &w, &err);
    if (sched_gang_registry_workload(gl->reg, ns, name, rc ? NULL : &w, rc ? err.msg : NULL)) {
        tm_error("gang registry: out of memory");
        return false;
    }
    if (rc) {
        tm_warn("Workload invalid: its pods wait err=\"%s\"", err.msg);
        tm_err e2 = {0};
        if (!gl->observe && sched_binder_event(gl->b, SCHED_WORKLOAD_API, "Workload", ns, name,
                                               NULL, "Warning", "Invalid", err.msg, &e2))
            tm_warn("%s", e2.msg);
        return false;
    }
    return true;
}

/* ---- the cycle ------------------------------------------------------------------------------ */

/* The members of g waiting in the queue, taken (in flight); pod (already in flight) first. */
static size_t take_members(sched_gang_live *gl, sched_gang *g, sched_pod *pod, sched_pod ***out) {
    sched_pod **v = malloc((g->n_members + 1) * sizeof *v);
    if (!v)
        return 0;
    size_t n = 0;
    v[n++] = pod;
    for (size_t i = 0; i < g->n_members; i++) {
        sched_gang_member *m = &g->members[i];
        if (m->state != SCHED_GANG_POD_PENDING || m->gated || strcmp(m->uid, pod->uid) == 0)
            continue;
        sched_pod *p = sched_queue_take(gl->q, m->uid);
        if (p)
            v[n++] = p;
    }
    *out = v;
    return n;
}

static void start_binds(sched_gang_live *gl, gang_bind *gb, size_t from, size_t to, int64_t now_ms);
static void undo_rest(sched_gang_live *gl, gang_bind *gb, int status, int64_t now_ms);

/* Whether g waits only for something still arriving: its PodGroup/Workload (not in the cache,
 * not invalid) or members up to minMember. */
static bool arriving(const sched_gang *g) {
    if (!g->declared)
        return !g->spec_error;
    size_t live = g->n_members - sched_gang_count(g, SCHED_GANG_POD_FAILED) + g->done_succeeded;
    return live < (size_t)g->spec.min_member;
}

static ssize_t quiet_find(const sched_gang_live *gl, const char *key) {
    for (size_t i = 0; i < gl->n_quiet; i++)
        if (strcmp(gl->quiet[i], key) == 0)
            return (ssize_t)i;
    return -1;
}

static void quiet_remove(sched_gang_live *gl, size_t i) {
    free(gl->quiet[i]);
    gl->quiet[i] = gl->quiet[--gl->n_quiet];
}

/* Marks g as waiting quietly (so check_timeouts requeues it when the grace ends). false on OOM
 * (it is then reported at once, as before). */
static bool quiet_add(sched_gang_live *gl, const sched_gang *g) {
    if (quiet_find(gl, g->key) >= 0)
        return true;
    if (gl->n_quiet == gl->cap_quiet) {
        size_t nc = gl->cap_quiet ? gl->cap_quiet * 2 : 8;
        char **nq = realloc(gl->quiet, nc * sizeof *nq);
        if (!nq)
            return false;
        gl->quiet = nq;
        gl->cap_quiet = nc;
    }
    if (!(gl->quiet[gl->n_quiet] = strdup(g->key)))
        return false;
    gl->n_quiet++;
    return true;
}

/* The gang's pending members that wait in the unschedulable queue go to backoff: retried soon,
 * not at the next flush. */
static void requeue_members(sched_gang_live *gl, sched_gang *g, int64_t now_ms) {
    for (size_t k = 0; k < g->n_members; k++) {
        const char *uid = g->members[k].uid;
        if (g->members[k].state == SCHED_GANG_POD_PENDING &&
            sched_queue_state(gl->q, uid) == SCHED_Q_UNSCHEDULABLE && sched_queue_take(gl->q, uid))
            sched_queue_backoff(gl->q, uid, now_ms);
    }
}

/* The gang waited scheduleTimeoutSeconds without fitting: say so, and start a new wait. */
static void time_out(sched_gang_live *gl, sched_gang *g, const char *why, int64_t now_ms) {
    g->timeouts++;
    g->wait_since_ms = 0;
    char msg[1024];
    snprintf(msg, sizeof msg,
             "gang not placed within scheduleTimeoutSeconds %lld: requeued with backoff: %s",
             (long long)(g->spec.timeout_ms / 1000), why);
    snprintf(g->message, sizeof g->message, "%s", msg);
    tm_metrics_inc(gl->m_attempts, TM_LABELS("timeout"));
    gang_event(gl, g, "Warning", "Timeout", msg, true);
    tm_info("gang timed out gang=%s msg=\"%s\"", g->key, msg);
    (void)now_ms;
}

void sched_gang_live_check_timeouts(sched_gang_live *gl, int64_t now_ms) {
    if (gl->observe) /* kube-scheduler times its gangs out */
        return;
    /* quiet arrivals: past the grace the members are retried, and then reported */
    for (size_t i = 0; i < gl->n_quiet;) {
        sched_gang *g = sched_gang_registry_get(gl->reg, gl->quiet[i]);
        if (!g || !arriving(g)) { /* arrived (its cycle placed it or reports it) or gone */
            quiet_remove(gl, i);
            continue;
        }
        if (now_ms - g->first_seen_ms >= ARRIVAL_GRACE_MS)
            requeue_members(gl, g, now_ms);
        i++;
    }
    size_t n = sched_gang_registry_count(gl->reg);
    for (size_t i = 0; i < n; i++) {
        sched_gang *g = sched_gang_registry_at(gl->reg, i);
        if (!sched_gang_active(g) || !sched_gang_timed_out(g, now_ms))
            continue;
        /* Its members wait for a cluster change that may never come: the whole gang goes to
         * backoff instead, and is retried when that ends (growing with each timeout). */
        char why[1024];
        snprintf(why, sizeof why, "%s", g->message);
        time_out(gl, g, why, now_ms);
        for (size_t k = 0; k < g->n_members; k++) {
            const char *uid = g->members[k].uid;
            if (g->members[k].state == SCHED_GANG_POD_PENDING &&
                sched_queue_state(gl->q, uid) == SCHED_Q_UNSCHEDULABLE &&
                sched_queue_take(gl->q, uid))
                sched_queue_backoff(gl->q, uid, now_ms);
        }
    }
}

void sched_gang_live_set_preemptor(sched_gang_live *gl, sched_preemptor *pr) {
    gl->preemptor = pr;
}

/* gang_preempt.h's unit_of over a registry (ctx): the gang of a placed pod, none for a pod in
 * no gang, in a group of the basic policy (its pods are scheduled one by one) or in a native
 * PodGroup whose disruptionMode is single (kube-scheduler 1.37 preempts those pod by pod). */
const char *sched_gang_live_unit_of(void *ctx, const char *uid) {
    sched_gang *g = sched_gang_registry_of(ctx, uid);
    return g && !g->basic && !g->disrupt_single ? g->key : NULL;
}

int sched_gang_live_set_preemption_units(sched_gang_live *gl, tm_err *err) {
    return sched_preemption_set_units(gl->fw, sched_gang_live_unit_of, gl->reg, err);
}

void sched_gang_live_victims_preempted(sched_gang_live *gl, const sched_pod *p,
                                       const sched_victim *v, size_t n) {
    for (size_t i = 0; gl && i < n; i++) {
        if (!sched_gang_live_unit_of(gl->reg, v[i].uid))
            continue; /* no gang, or one of the basic policy: a pod of its own */
        sched_gang *vg = sched_gang_registry_of(gl->reg, v[i].uid);
        bool told = false; /* a gang's members follow the one chosen: it hears it once */
        for (size_t j = 0; j < i && !told; j++)
            told = sched_gang_registry_of(gl->reg, v[j].uid) == vg;
        if (told)
            continue;
        char note[512];
        snprintf(note, sizeof note, "preempted whole by pod %s/%s (priority %d): %s", p->ns,
                 p->name, (int)p->priority, v[i].why);
        gang_event(gl, vg, "Warning", "Preempted", note, true);
    }
}

/* A gang that does not fit: can evicting lower-priority pods and whole lower-priority gangs
 * make it fit at once (gang_preempt.h)? Then the preemptor evicts them and nominates each
 * member to its node; the gang is tried again as the victims go. Events on the gang and on
 * each gang it preempts say so. */
static void preempt_for(sched_gang_live *gl, sched_gang *g, sched_pod **pods, size_t n,
                        int64_t wall_ms) {
    int *nodes = calloc(n, sizeof *nodes);
    if (!nodes)
        return;
    sched_gang_preemption r = {.nodes = nodes};
    tm_err err = {0};
    sched_snapshot *snap = sched_cache_snapshot(gl->c);
    if (sched_gang_preempt(gl->fw, snap, g, pods, n, wall_ms, sched_gang_live_unit_of, gl->reg, &r,
                           &err) < 0) {
        tm_metrics_inc(gl->m_preempt, TM_LABELS("error"));
        tm_warn("gang preemption failed gang=%s err=\"%s\"", g->key, err.msg);
    } else if (!r.ok) {
        tm_metrics_inc(gl->m_preempt, TM_LABELS("unschedulable"));
        tm_debug("gang preemption: none gang=%s why=\"%s\"", g->key, r.message);
    } else {
        tm_metrics_inc(gl->m_preempt, TM_LABELS(r.n_victims ? "preempting" : "waiting"));
        /* the gangs preempted whole hear it before their pods go */
        for (size_t i = 0; i < r.n_victims; i++) {
            sched_gang *vg = sched_gang_registry_of(gl->reg, r.victims[i].uid);
            if (!vg || (i > 0 && sched_gang_registry_of(gl->reg, r.victims[i - 1].uid) == vg))
                continue;
            char note[512];
            snprintf(note, sizeof note, "preempted whole by gang %s (priority %d): %s", g->key,
                     (int)pods[0]->priority, r.victims[i].why);
            gang_event(gl, vg, "Warning", "Preempted", note, true);
        }
        if (r.n_victims)
            sched_preemptor_run_gang(gl->preemptor, g->key, pods, n, nodes, r.victims, r.n_victims);
        snprintf(g->message, sizeof g->message, "preemption: %.1000s", r.message);
        gang_event(gl, g, "Normal", "Preempting", g->message, false);
    }
    sched_gang_preemption_clear(&r);
    free(nodes);
}

/* Permit: the gang's decision for the taken pods. */
static void permit(sched_gang_live *gl, sched_gang *g, sched_pod **pods, size_t n, int64_t now_ms) {
    size_t placed_before = sched_gang_placed_count(g);
    char why[1024] = "";
    sched_snapshot *snap = sched_cache_snapshot(gl->c);
    int *nodes = calloc(n, sizeof *nodes);
    sched_gang_placement pl = {.nodes = nodes};
    int64_t wall = tm_wall_ms();
    sched_gang_try t = SCHED_GANG_TRY_ERROR;
    if (!nodes)
        snprintf(why, sizeof why, "out of memory");
    else
        t = sched_gang_try_place(gl->fw, snap, g, pods, n, wall, true, &pl, why, sizeof why);
    const char *result = sched_gang_try_name(t);
    if (strcmp(result, "scheduled") == 0) {
        gang_bind *gb = calloc(1, sizeof *gb);
        size_t k = 0;
        if (gb) {
            gb->key = strdup(g->key);
            gb->uids = calloc(pl.placed, sizeof *gb->uids);
            gb->nodes = calloc(pl.placed, sizeof *gb->nodes);
            gb->done = calloc(pl.placed, sizeof *gb->done);
        }
        bool oom = !gb || !gb->key || !gb->uids || !gb->nodes || !gb->done;
        for (size_t i = 0; i < n; i++) {
            if (nodes[i] < 0) {
                /* not needed for minMember and no room: waits alone */
                member_report(gl, pods[i], "gang member: no room left for it", now_ms);
                sched_queue_unschedulable(gl->q, pods[i]->uid, now_ms);
                continue;
            }
            tm_err err = {0};
            if (oom || sched_cache_assume_placed(gl->c, pods[i]->uid, &err)) {
                sched_snapshot_remove_pod(snap, pods[i]->uid);
                sched_queue_backoff(gl->q, pods[i]->uid, now_ms);
                continue;
            }
            gb->uids[k] = strdup(pods[i]->uid);
            gb->nodes[k] = strdup(sched_snapshot_node(snap, (size_t)nodes[i])->name);
            gb->n = ++k;
            sched_gang_registry_set_state(gl->reg, pods[i]->uid, SCHED_GANG_POD_ASSUMED);
        }
        tm_metrics_inc(gl->m_attempts, TM_LABELS("scheduled"));
        tm_metrics_inc(gl->m_scheduled, NULL);
        if (g->first_seen_ms > 0)
            tm_metrics_observe(gl->m_wait_s, NULL, (double)(now_ms - g->first_seen_ms) / 1000.0);
        const sched_group *grp =
            pl.group >= 0 ? sched_snapshot_group(snap, (size_t)pl.group) : NULL;
        snprintf(g->message, sizeof g->message, "gang placed: %zu pod(s) %s%s%s", pl.placed,
                 pl.spilled ? "spread over node groups" : "in node group ",
                 pl.spilled ? "" : (grp && grp->id[0] ? grp->id : "(unprofiled)"),
                 placed_before ? " (with the members already bound)" : "");
        tm_info("gang scheduled gang=%s pods=%zu attempts=%d %s", g->key, pl.placed,
                g->attempts + 1, g->message);
        gang_event(gl, g, "Normal", "Scheduled", g->message, true);
        g->attempts = 0;
        g->wait_since_ms = 0;
        g->first_seen_ms = now_ms; /* the next wait (members added later) counts from here */
        if (gb && gb->n) {
            gb->next = gl->binds;
            gl->binds = gb;
            start_binds(gl, gb, 0, 1, now_ms);
            if (gb->done[0]) { /* the first bind could not even start */
                undo_rest(gl, gb, 0, now_ms);
                gl->binds = gb->next;
                bind_free(gb);
            }
        } else if (gb) {
            bind_free(gb);
        }
        free(nodes);
        return;
    }
    /* Not placed: nothing is held (sched_gang_place undid its reservations). */
    g->attempts++;
    if (!g->wait_since_ms)
        g->wait_since_ms = now_ms;
    bool timeout = sched_gang_timed_out(g, now_ms);
    if (timeout) {
        time_out(gl, g, why, now_ms);
    } else {
        snprintf(g->message, sizeof g->message, "%s", why);
        tm_metrics_inc(gl->m_attempts, TM_LABELS(result));
        gang_event(gl, g, "Warning", "FailedScheduling", why, false);
        tm_debug("gang waits gang=%s msg=\"%s\"", g->key, why);
        if (t == SCHED_GANG_TRY_UNSCHEDULABLE && gl->preemptor)
            preempt_for(gl, g, pods, n, wall);
    }
    char msg[1200];
    snprintf(msg, sizeof msg, "gang %s: %s", g->key, timeout ? why : g->message);
    for (size_t i = 0; i < n; i++) {
        member_report(gl, pods[i], msg, now_ms);
        if (timeout || strcmp(result, "error") == 0)
            sched_queue_backoff(gl->q, pods[i]->uid, now_ms);
        else
            sched_queue_unschedulable(gl->q, pods[i]->uid, now_ms);
    }
    free(nodes);
}

/* Whether g only waits for its gated members (sched_gang_waits_for_gates). That is no failure:
 * the message says so, and there is no event, no attempt and no timeout clock; lifting the
 * gate that was missing brings the gang back (that pod's update queues it). */
static bool waits_for_gates(sched_gang *g) {
    char why[512];
    if (!sched_gang_active(g) || !sched_gang_waits_for_gates(g, why, sizeof why))
        return false;
    snprintf(g->message, sizeof g->message, "%s", why);
    g->wait_since_ms = 0;
    return true;
}

bool sched_gang_live_rejected(sched_gang_live *gl, const sched_pod *pod, const char *why,
                              int64_t now_ms) {
    sched_gang *g = sched_gang_registry_of(gl->reg, pod->uid);
    if (!g || g->basic)
        return false;
    if (waits_for_gates(g))
        return true;
    ssize_t qi = quiet_find(gl, g->key);
    if (arriving(g) && now_ms - g->first_seen_ms < ARRIVAL_GRACE_MS && quiet_add(gl, g)) {
        /* the informer delivers the rest: its event requeues the pod, the grace bounds it */
        snprintf(g->message, sizeof g->message, "%s", why);
        tm_debug("gang waits for its arrival gang=%s pod=%s/%s msg=\"%s\"", g->key, pod->ns,
                 pod->name, why);
        return true;
    }
    if (qi >= 0) {
        quiet_remove(gl, (size_t)qi);
        if (arriving(g))
            tm_info("gang still incomplete %ds after its first member gang=%s msg=\"%s\"",
                    ARRIVAL_GRACE_MS / 1000, g->key, why);
    }
    /* the gang's wait starts now: scheduleTimeoutSeconds counts from here */
    if (sched_gang_active(g) && !g->wait_since_ms)
        g->wait_since_ms = now_ms;
    const char *gw = strstr(why, ": gang ");
    gw = gw ? strchr(gw + 7, ':') : NULL; /* "Gang: gang KEY: reason" -> "reason" */
    snprintf(g->message, sizeof g->message, "%s", gw ? gw + 2 : why);
    tm_metrics_inc(gl->m_attempts, TM_LABELS("waiting"));
    if (g->declared)
        gang_event(gl, g, "Warning", "FailedScheduling", g->message, false);
    return false;
}

bool sched_gang_live_cycle(sched_gang_live *gl, sched_pod *pod, int64_t now_ms) {
    sched_gang *g = sched_gang_registry_of(gl->reg, pod->uid);
    if (!g || g->basic)
        return false;
    /* also here, where the Gang plugin's PreEnqueue is not registered: the pod waits quietly */
    if (waits_for_gates(g)) {
        tm_debug("gang waits for gated members gang=%s msg=\"%s\"", g->key, g->message);
        sched_queue_unschedulable(gl->q, pod->uid, now_ms);
        return true;
    }
    sched_pod **pods = NULL;
    size_t n = take_members(gl, g, pod, &pods);
    if (!pods) {
        sched_queue_backoff(gl->q, pod->uid, now_ms);
        return true;
    }
    permit(gl, g, pods, n, now_ms);
    free(pods);
    return true;
}

/* ---- binds ---------------------------------------------------------------------------------- */

static void start_binds(sched_gang_live *gl, gang_bind *gb, size_t from, size_t to,
                        int64_t now_ms) {
    for (size_t i = from; i < to && i < gb->n; i++) {
        const sched_pod *p = sched_queue_get(gl->q, gb->uids[i]);
        tm_err err = {0};
        if (!p || sched_binder_bind(gl->b, p, gb->nodes[i], &err)) {
            /* deleted meanwhile, or the request could not start: its reservation goes */
            gb->done[i] = true;
            sched_cache_forget(gl->c, gb->uids[i]);
            if (p) {
                tm_warn("gang bind not started gang=%s err=\"%s\"", gb->key, err.msg);
                sched_queue_backoff(gl->q, gb->uids[i], now_ms);
                sched_gang_registry_set_state(gl->reg, gb->uids[i], SCHED_GANG_POD_PENDING);
            }
        }
    }
}

/* Unreserve: the first member's bind failed; the others were not sent: their reservations go
 * and the whole gang requeues with backoff. */
static void undo_rest(sched_gang_live *gl, gang_bind *gb, int status, int64_t now_ms) {
    sched_gang *g = sched_gang_registry_get(gl->reg, gb->key);
    for (size_t i = 1; i < gb->n; i++) {
        gb->done[i] = true;
        sched_cache_forget(gl->c, gb->uids[i]);
        sched_queue_backoff(gl->q, gb->uids[i], now_ms);
        sched_gang_registry_set_state(gl->reg, gb->uids[i], SCHED_GANG_POD_PENDING);
    }
    tm_metrics_inc(gl->m_attempts, TM_LABELS("bind_failed"));
    if (g) {
        snprintf(g->message, sizeof g->message,
                 "bind of the first member failed (HTTP %d): the other %zu reservation(s) "
                 "undone, the gang requeued with backoff",
                 status, gb->n - 1);
        gang_event(gl, g, "Warning", "BindFailed", g->message, true);
    }
    tm_warn("gang bind failed gang=%s status=%d undone=%zu", gb->key, status, gb->n - 1);
}

static gang_bind **find_bind(sched_gang_live *gl, const char *uid, size_t *idx) {
    for (gang_bind **pp = &gl->binds; *pp; pp = &(*pp)->next) {
        for (size_t i = 0; i < (*pp)->n; i++) {
            if (strcmp((*pp)->uids[i], uid) == 0) {
                *idx = i;
                return pp;
            }
        }
    }
    return NULL;
}

void sched_gang_live_bind_result(sched_gang_live *gl, const char *uid, bool ok, int status,
                                 int64_t now_ms) {
    /* The watch may have shown the pod bound, even Running, before the bind's answer came:
     * only a member still waiting moves. */
    sched_gang *mg = sched_gang_registry_of(gl->reg, uid);
    for (size_t i = 0; mg && i < mg->n_members; i++) {
        sched_gang_member *m = &mg->members[i];
        if (strcmp(m->uid, uid) == 0 &&
            (m->state == SCHED_GANG_POD_PENDING || m->state == SCHED_GANG_POD_ASSUMED))
            m->state = ok ? SCHED_GANG_POD_BOUND : SCHED_GANG_POD_PENDING;
    }
    size_t idx;
    gang_bind **pp = find_bind(gl, uid, &idx);
    if (!pp)
        return;
    gang_bind *gb = *pp;
    if (idx == 0 && !gb->first_done) {
        gb->first_done = true;
        if (ok)
            start_binds(gl, gb, 1, gb->n, now_ms);
        else
            undo_rest(gl, gb, status, now_ms);
    }
    /* Forget the record once every member's bind is answered or was never sent. */
    gb->done[idx] = true;
    for (size_t i = 0; i < gb->n; i++)
        if (!gb->done[i])
            return;
    *pp = gb->next;
    bind_free(gb);
}

/* ---- explain -------------------------------------------------------------------------------- */

int sched_gang_explain_register_owner(tm_kube *k, sched_gang_registry *r,
                                      const sched_native_api *napi, const sched_gang_ref *ref,
                                      json_t **owner, tm_err *err) {
    *owner = NULL;
    bool pg = ref->kind == SCHED_GANG_PODGROUP, native = ref->kind == SCHED_GANG_NATIVE;
    /* a cluster serving no PodGroups: the gang's PodGroup is simply absent (path NULL) */
    bool absent = native && !napi->podgroups;
    const char *api = pg ? SCHED_PODGROUP_API : native ? napi->group_version : SCHED_WORKLOAD_API;
    char *path = absent ? NULL
                        : tm_kube_path(api, pg || native ? "podgroups" : "workloads", ref->ns,
                                       ref->owner, NULL);
    if (!path && !absent)
        return tm_err_set(err, "out of memory");
    tm_err oe = {0};
    json_t *obj = path ? tm_kube_get(k, path, &oe) : NULL;
    free(path);
    if (!obj && !absent && oe.http_status != 404) {
        *err = oe;
        tm_err_wrap(err, "reading the gang's %s", sched_gang_kind_object(ref->kind));
        return -1;
    }
    if (obj && native) {
        tm_err pe = {0};
        int rc;
        declare_native(r, ref->ns, ref->owner, obj, 0, &rc, &pe);
    } else if (obj && pg) {
        sched_gang *og;
        tm_err pe = {0};
        podgroup_record(r, ref->ns, ref->owner, obj, 0, &og, &pe);
    } else if (obj) {
        sched_workload w;
        tm_err pe = {0};
        int rc = sched_workload_from_json(obj, &w, &pe);
        sched_gang_registry_workload(r, ref->ns, ref->owner, rc ? NULL : &w, rc ? pe.msg : NULL);
    }
    *owner = obj;
    return 0;
}

json_t *sched_gang_explain(tm_kube *k, sched_framework *fw, sched_snapshot *snap, const json_t *pod,
                           const sched_keys *keys, tm_err *err) {
    sched_gang_ref ref;
    if (sched_gang_ref_from_pod_json(pod, &ref, err))
        return NULL;
    if (ref.kind == SCHED_GANG_NONE)
        return json_null();
    char key[SCHED_GANG_KEY_MAX];
    sched_gang_ref_key(&ref, key, sizeof key);
    sched_gang_registry *r = sched_gang_registry_new();
    bool pg = ref.kind == SCHED_GANG_PODGROUP, native = ref.kind == SCHED_GANG_NATIVE;
    sched_native_api napi = {0};
    if (native && sched_gang_native_discover(k, &napi, err)) {
        sched_gang_registry_free(r);
        return NULL;
    }
    json_t *owner = NULL, *pods = NULL, *out = NULL;
    sched_pod **pend = NULL;
    size_t n_pend = 0;
    if (!r) {
        tm_err_set(err, "out of memory");
        goto done;
    }
    if (sched_gang_explain_register_owner(k, r, &napi, &ref, &owner, err))
        goto done;
    char sel[600];
    snprintf(sel, sizeof sel, "%s=%s", SCHED_PODGROUP_LABEL, ref.owner);
    tm_list_opts lo = {.label_selector = pg ? sel : NULL};
    char *ppath = tm_kube_path("v1", "pods", ref.ns, NULL, NULL);
    pods = ppath ? tm_kube_list(k, ppath, &lo, NULL, err) : NULL;
    free(ppath);
    if (!pods)
        goto done;
    pend = calloc(json_array_size(pods) + 1, sizeof *pend);
    if (!pend) {
        tm_err_set(err, "out of memory");
        goto done;
    }
    size_t i;
    json_t *p;
    json_array_foreach(pods, i, p) {
        sched_gang_ref pr;
        char pk[SCHED_GANG_KEY_MAX];
        tm_err me = {0};
        if (sched_gang_ref_from_pod_json(p, &pr, &me) || pr.kind == SCHED_GANG_NONE ||
            strcmp(sched_gang_ref_key(&pr, pk, sizeof pk), key) != 0 ||
            tm_json_str(p, "metadata.deletionTimestamp", "")[0])
            continue;
        sched_gang_pod_state st = sched_gang_json_pod_state(p);
        bool gated =
            json_array_size(json_object_get(json_object_get(p, "spec"), "schedulingGates")) > 0;
        sched_gang_registry_set_member(r, &pr, tm_json_str(p, "metadata.uid", ""),
                                       tm_json_str(p, "metadata.name", ""), st, 0);
        sched_gang_registry_set_gated(r, tm_json_str(p, "metadata.uid", ""), gated);
        if (st == SCHED_GANG_POD_PENDING && !gated &&
            (pend[n_pend] = sched_pod_from_json(snap, p, keys, &me)))
            n_pend++;
    }
    sched_gang *g = sched_gang_registry_get(r, key);
    if (!g) {
        out = json_null();
        goto done;
    }
    out = sched_gang_describe(g);
    if (!out) {
        tm_err_set(err, "out of memory");
        goto done;
    }
    /* Why it waits, now: the live scheduler's decision run on this snapshot without keeping
     * anything. */
    char why[1024] = "";
    int *nodes = calloc(n_pend + 1, sizeof *nodes);
    sched_gang_placement pl = {.nodes = nodes};
    sched_gang_try t = SCHED_GANG_TRY_ERROR;
    if (nodes && n_pend) /* whole seconds, as before */
        t = sched_gang_try_place(fw, snap, g, pend, n_pend, tm_wall_ms() / 1000 * 1000, false, &pl,
                                 why, sizeof why);
    else if (!n_pend)
        snprintf(why, sizeof why, "no member waits: %s",
                 sched_gang_phase_name(sched_gang_phase_of(g)));
    if (t == SCHED_GANG_TRY_SCHEDULED)
        snprintf(why, sizeof why,
                 "the %zu waiting pod(s) fit together now: the next attempt places them", n_pend);
    json_object_set_new(out, "message", json_string(why));
    json_object_set_new(out, "attempt", json_string(n_pend ? sched_gang_try_name(t) : "none"));
    json_object_set_new(out, "basic", json_boolean(g->basic)); /* scheduled pod by pod */
    /* It does not fit: what its own preemption would do (the live scheduler runs it, never
     * DefaultPreemption for one member) */
    if (t == SCHED_GANG_TRY_UNSCHEDULABLE && !g->basic) {
        json_t *pre = sched_gang_explain_preemption(k, fw, snap, r, &napi, g, pend, n_pend,
                                                    tm_wall_ms() / 1000 * 1000, err);
        if (!pre) {
            json_decref(out);
            out = NULL;
            free(nodes);
            goto done;
        }
        json_object_set_new(out, "preemption", pre);
    }
    if (owner && pg)
        json_object_set_new(out, "statusMessage",
                            json_string(tm_json_str(owner, "status.message", "")));
    free(nodes);
done:
    for (size_t j = 0; j < n_pend; j++)
        sched_pod_free(pend[j]);
    free(pend);
    json_decref(pods);
    json_decref(owner);
    sched_gang_registry_free(r);
    return out;
}
