/* preemptor.c: the live half of preemption (preemptor.h): carries out what the pure
 * DefaultPreemption plugin chose, and keeps its nominated-pods and PDB tables current. */
#include "scheduler/live/preemptor.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/pdb.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/preemption/preemption.h"

struct sched_preemptor {
    tm_kube *k;
    sched_cache *cache;
    char *controller, *instance;
    sched_nominated *nominated;
    sched_pdbs *pdbs;
    /* kube-scheduler's names, then tarema's */
    tm_metric *m_k_attempts, *m_k_victims;
    tm_metric *m_attempts, *m_victims, *m_evictions;
    struct victim_ctx *inflight; /* requests unanswered, freed with the preemptor (a freed
                                  * client never calls back) */
};

/* One victim's requests in flight: status patch -> delete -> event. */
typedef struct victim_ctx {
    sched_preemptor *pr;
    struct victim_ctx *prev, *next;
    char *ns, *name, *uid, *node;
    /* who takes its place: a preemptor pod, or a Reservation whose window it overran */
    const char *p_kind, *p_api; /* static */
    char *p_ns, *p_name, *p_uid;
    const char *controller; /* its events' reportingController: the preemptor's profile */
} victim_ctx;

static void victim_free(victim_ctx *v) {
    if (!v)
        return;
    if (v->prev)
        v->prev->next = v->next;
    else if (v->pr && v->pr->inflight == v)
        v->pr->inflight = v->next;
    if (v->next)
        v->next->prev = v->prev;
    free(v->ns);
    free(v->name);
    free(v->uid);
    free(v->node);
    free(v->p_ns);
    free(v->p_name);
    free(v->p_uid);
    free(v);
}

static int register_metrics(sched_preemptor *pr, tm_metrics *reg, tm_err *err) {
    /* kube-scheduler's: every PostFilter preemption attempt, and the victims of each
     * preemption carried out (its buckets: 1, 2, 4, ..., 64) */
    double b[7];
    tm_metrics_exp_buckets(1, 2, 7, b);
    pr->m_k_attempts = tm_metrics_counter(reg, "scheduler_preemption_attempts_total",
                                          "Total preemption attempts in the cluster till now "
                                          "(kube-scheduler's name).",
                                          NULL, err);
    if (!pr->m_k_attempts)
        return -1;
    pr->m_k_victims = tm_metrics_histogram(reg, "scheduler_preemption_victims",
                                           "Number of selected preemption victims "
                                           "(kube-scheduler's name).",
                                           NULL, b, 7, err);
    if (!pr->m_k_victims)
        return -1;
    pr->m_attempts = tm_metrics_counter(reg, "tarema_preemption_attempts_total",
                                        "Preemption attempts by result (nominated: victims "
                                        "chosen and evicted; unschedulable: nothing to evict "
                                        "would help or the pod may not preempt; error).",
                                        TM_LABELS("result"), err);
    if (!pr->m_attempts)
        return -1;
    pr->m_victims = tm_metrics_counter(reg, "tarema_preemption_victims_total",
                                       "Pods chosen as preemption victims by reason "
                                       "(lower_priority; pdb_violation: chosen although evicting "
                                       "it takes a PodDisruptionBudget below zero; "
                                       "reservation_overrun: ran past the expected end it was "
                                       "let into a Reservation's held capacity on).",
                                       TM_LABELS("reason"), err);
    if (!pr->m_victims)
        return -1;
    pr->m_evictions = tm_metrics_counter(reg, "tarema_preemption_evictions_total",
                                         "Victim deletions by result (ok; gone: already deleted; "
                                         "error).",
                                         TM_LABELS("result"), err);
    return pr->m_evictions ? 0 : -1;
}

sched_preemptor *sched_preemptor_new(tm_kube *k, sched_cache *cache, const char *scheduler_name,
                                     const char *identity, tm_metrics *reg, tm_err *err) {
    sched_preemptor *pr = calloc(1, sizeof *pr);
    if (!pr) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    pr->k = k;
    pr->cache = cache;
    pr->controller = strdup(scheduler_name);
    pr->instance = strdup(identity);
    pr->nominated = sched_nominated_new();
    pr->pdbs = sched_pdbs_new();
    if (!pr->controller || !pr->instance || !pr->nominated || !pr->pdbs) {
        tm_err_set(err, "out of memory");
        sched_preemptor_free(pr);
        return NULL;
    }
    if (register_metrics(pr, reg, err)) {
        sched_preemptor_free(pr);
        return NULL;
    }
    sched_snapshot *s = sched_cache_snapshot(cache);
    sched_snapshot_set_nominated(s, pr->nominated);
    sched_snapshot_set_pdbs(s, pr->pdbs);
    return pr;
}

void sched_preemptor_free(sched_preemptor *pr) {
    if (!pr)
        return;
    sched_snapshot *s = pr->cache ? sched_cache_snapshot(pr->cache) : NULL;
    if (s && sched_snapshot_nominated(s) == pr->nominated)
        sched_snapshot_set_nominated(s, NULL);
    if (s && sched_snapshot_pdbs(s) == pr->pdbs)
        sched_snapshot_set_pdbs(s, NULL);
    while (pr->inflight)
        victim_free(pr->inflight);
    sched_nominated_free(pr->nominated);
    sched_pdbs_free(pr->pdbs);
    free(pr->controller);
    free(pr->instance);
    free(pr);
}

/* ---- the tables, from the informers -----------------------------------------------------------
 */

void sched_preemptor_pod_event(sched_preemptor *pr, tm_watch_type t, const json_t *obj,
                               const json_t *old) {
    if (!pr)
        return;
    const char *uid = tm_json_str(obj, "metadata.uid", "");
    const char *nom = tm_json_str(obj, "status.nominatedNodeName", "");
    /* A nomination ends when the pod is bound (by anyone), deleted or being deleted, or its
     * nominatedNodeName is cleared; only our own pending pods' count (kube-scheduler's
     * nominator holds the pods of its own queue). */
    if (t == TM_WATCH_DELETED || tm_json_str(obj, "spec.nodeName", "")[0] ||
        tm_json_path(obj, "metadata.deletionTimestamp") || !sched_cache_is_ours(pr->cache, obj)) {
        sched_nominated_remove(pr->nominated, uid);
        return;
    }
    if (!nom[0]) {
        /* Cleared only when the previous version had it. An update that shows none where the
         * previous one showed none either is a status write racing our nomination's patch (the
         * FailedScheduling condition, applied first): the nomination made in memory stays, as
         * kube-scheduler's nominator keeps it (updateNominatedPod). Dropped, its node looked
         * free to the next preemptor's dry run, which was nominated there too with no victim
         * (bench/preemption_bench.sh: 79 of 500 preemptors preempted twice). */
        const char *was = old ? tm_json_str(old, "status.nominatedNodeName", "") : "";
        if (was[0] || t != TM_WATCH_MODIFIED)
            sched_nominated_remove(pr->nominated, uid);
        return;
    }
    const char *cur = sched_nominated_node(pr->nominated, uid);
    if (cur && strcmp(cur, nom) == 0)
        return; /* unchanged, or our own nomination coming back through the watch */
    tm_err err = {0};
    sched_pod *p = sched_pod_from_json(sched_cache_snapshot(pr->cache), obj,
                                       sched_cache_keys(pr->cache), &err);
    if (!p || sched_nominated_set_pod(pr->nominated, p, nom, &err))
        tm_warn("nomination not recorded pod=%s/%s node=%s err=\"%s\"",
                tm_json_str(obj, "metadata.namespace", ""), tm_json_str(obj, "metadata.name", ""),
                nom, err.msg);
    sched_pod_free(p);
}

bool sched_preemptor_pdb_event(sched_preemptor *pr, tm_watch_type t, const json_t *obj) {
    if (!pr)
        return false;
    const char *ns = tm_json_str(obj, "metadata.namespace", "");
    const char *name = tm_json_str(obj, "metadata.name", "");
    if (t == TM_WATCH_DELETED)
        return sched_pdbs_remove(pr->pdbs, ns, name) == 0;
    tm_err err = {0};
    if (sched_pdbs_put_json(pr->pdbs, obj, &err)) {
        tm_warn("PodDisruptionBudget skipped err=\"%s\"", err.msg);
        sched_pdbs_remove(pr->pdbs, ns, name); /* a stale budget must not outlive its change */
        return true;
    }
    return true;
}

void sched_preemptor_assumed(sched_preemptor *pr, const char *uid) {
    if (pr)
        sched_nominated_remove(pr->nominated, uid);
}

/* ---- carrying a preemption out ------------------------------------------------------------------
 */

static void now_rfc3339(char *buf, size_t size) {
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

static void log_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    if (!err || status == 404) /* a pod deleted meanwhile needs nothing more */
        return;
    /* The preemptor was bound before its nomination landed (its victims went at once): the API
     * server refuses nominatedNodeName on a bound pod, and a bound pod needs none. */
    if (status == 422 && strstr(err->msg, "already bound")) {
        tm_debug("preemption: %s not needed, the pod is bound err=\"%s\"", (const char *)ud,
                 err->msg);
        return;
    }
    tm_warn("preemption: %s failed status=%d err=\"%s\"", (const char *)ud, status, err->msg);
}

/* An event about pod ns/name (uid), related to the preemptor (r_kind in r_api) when r_name is
 * set. */
static void post_event(sched_preemptor *pr, const char *controller, const char *ns,
                       const char *name, const char *uid, const char *reason, const char *action,
                       const char *note, const char *r_kind, const char *r_api, const char *r_ns,
                       const char *r_name, const char *r_uid) {
    json_t *reg = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "kind", "Pod", "apiVersion", "v1",
                            "metadata", "name", name, "namespace", ns, "uid", uid);
    json_t *ev = reg ? tm_kube_event_new(reg, "Normal", reason, action, note,
                                         controller ? controller : pr->controller, pr->instance)
                     : NULL;
    if (ev && r_name)
        json_object_set_new(ev, "related",
                            json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", r_kind, "apiVersion",
                                      r_api, "name", r_name, "namespace", r_ns, "uid", r_uid));
    if (!ev || tm_kube_event_post_async(pr->k, ev, log_done, "event"))
        tm_warn("event not recorded pod=%s/%s reason=%s", ns, name, reason);
    json_decref(ev);
    json_decref(reg);
}

static void victim_deleted(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    victim_ctx *v = ud;
    sched_preemptor *pr = v->pr;
    if (!err) {
        tm_metrics_inc(pr->m_evictions, TM_LABELS("ok"));
        tm_info("preempted pod=%s/%s node=%s by=%s %s/%s", v->ns, v->name, v->node, v->p_kind,
                v->p_ns, v->p_name);
        char note[512];
        if (strcmp(v->p_kind, "Pod") == 0) /* kube-scheduler's note */
            snprintf(note, sizeof note, "Preempted by pod %s on node %s", v->p_uid, v->node);
        else
            snprintf(note, sizeof note,
                     "Preempted by Reservation %s/%s on node %s: ran past the expected end it "
                     "was let into the held capacity on",
                     v->p_ns, v->p_name, v->node);
        post_event(pr, v->controller, v->ns, v->name, v->uid, "Preempted", "Preempting", note,
                   v->p_kind, v->p_api, v->p_ns, v->p_name, v->p_uid);
    } else if (status == 404 || status == 409) {
        /* gone already, or another pod under that name now (the uid precondition) */
        tm_metrics_inc(pr->m_evictions, TM_LABELS("gone"));
        tm_info("preemption victim already gone pod=%s/%s status=%d", v->ns, v->name, status);
    } else {
        tm_metrics_inc(pr->m_evictions, TM_LABELS("error"));
        tm_warn("preemption: deleting pod=%s/%s failed status=%d err=\"%s\"", v->ns, v->name,
                status, err->msg);
    }
    victim_free(v);
}

static void victim_marked(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    victim_ctx *v = ud;
    sched_preemptor *pr = v->pr;
    if (err) {
        /* as kube-scheduler: a victim whose condition could not be written is not deleted; the
         * preemptor is retried and preempts again if it must */
        tm_metrics_inc(pr->m_evictions, TM_LABELS(status == 404 ? "gone" : "error"));
        if (status != 404)
            tm_warn("preemption: DisruptionTarget not set pod=%s/%s status=%d err=\"%s\"", v->ns,
                    v->name, status, err->msg);
        victim_free(v);
        return;
    }
    char *path = tm_kube_path("v1", "pods", v->ns, v->name, NULL);
    json_t *opts = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "DeleteOptions",
                             "preconditions", "uid", v->uid);
    int rc = path && opts ? tm_kube_write_async(pr->k, "DELETE", path, opts, "application/json",
                                                victim_deleted, v)
                          : -1;
    json_decref(opts);
    free(path);
    if (rc) {
        tm_metrics_inc(pr->m_evictions, TM_LABELS("error"));
        tm_warn("preemption: delete of pod=%s/%s could not be started", v->ns, v->name);
        victim_free(v);
    }
}

/* Evicts vi for by (kind in api, ns/name, uid); msg: the DisruptionTarget's message. */
static void evict_for(sched_preemptor *pr, const char *kind, const char *api, const char *by_ns,
                      const char *by_name, const char *by_uid, const char *controller,
                      const sched_victim *vi, const char *msg) {
    victim_ctx *v = calloc(1, sizeof *v);
    if (v) {
        v->pr = pr;
        v->controller = controller;
        v->ns = strdup(vi->ns);
        v->name = strdup(vi->name);
        v->uid = strdup(vi->uid);
        v->node = strdup(vi->node);
        v->p_kind = kind;
        v->p_api = api;
        v->p_ns = strdup(by_ns);
        v->p_name = strdup(by_name);
        v->p_uid = strdup(by_uid);
    }
    if (!v || !v->ns || !v->name || !v->uid || !v->node || !v->p_ns || !v->p_name || !v->p_uid) {
        victim_free(v);
        tm_metrics_inc(pr->m_evictions, TM_LABELS("error"));
        tm_error("preemption: out of memory evicting pod=%s/%s", vi->ns, vi->name);
        return;
    }
    v->next = pr->inflight;
    if (pr->inflight)
        pr->inflight->prev = v;
    pr->inflight = v;
    /* kube-scheduler's condition, merged by type (strategic merge patch of pods/status) */
    char now[32];
    now_rfc3339(now, sizeof now);
    json_t *cond =
        json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "DisruptionTarget", "status", "True",
                  "reason", "PreemptionByScheduler", "message", msg, "lastTransitionTime", now);
    /* kube-scheduler 1.35 (PodObservedGenerationTracking, GA): the victim's generation */
    if (cond && vi->generation > 0)
        json_object_set_new(cond, "observedGeneration", json_integer(vi->generation));
    json_t *patch = cond ? json_pack("{s:{s:[o]}}", "status", "conditions", cond) : NULL;
    char *path = tm_kube_path("v1", "pods", vi->ns, vi->name, "status");
    int rc = patch && path
                 ? tm_kube_write_async(pr->k, "PATCH", path, patch,
                                       "application/strategic-merge-patch+json", victim_marked, v)
                 : -1;
    json_decref(patch);
    free(path);
    if (rc) {
        tm_metrics_inc(pr->m_evictions, TM_LABELS("error"));
        tm_warn("preemption: status patch of pod=%s/%s could not be started", vi->ns, vi->name);
        victim_free(v);
    }
}

/* Evicts vi for preemptor pod p, with kube-scheduler's message. */
static void evict(sched_preemptor *pr, const sched_pod *p, const sched_victim *vi) {
    /* kube-scheduler's per-profile recorder: the preemptor's profile (framework.h, profiles)
     * speaks; the cache's names outlive the victims in flight */
    const char *controller = sched_profile_name(sched_cache_keys(pr->cache)->profiles, p->profile);
    if (!controller)
        controller = pr->controller;
    char msg[320];
    snprintf(msg, sizeof msg, "%s: preempting to accommodate a higher priority pod", controller);
    evict_for(pr, "Pod", "v1", p->ns, p->name, p->uid, controller, vi, msg);
}

/* pods/status merge patch of nominatedNodeName (node NULL: cleared). */
static void patch_nominated(sched_preemptor *pr, const char *ns, const char *name,
                            const char *node) {
    json_t *patch = json_pack("{s:{s:o}}", "status", "nominatedNodeName",
                              node ? json_string(node) : json_null());
    char *path = tm_kube_path("v1", "pods", ns, name, "status");
    if (!patch || !path ||
        tm_kube_write_async(pr->k, "PATCH", path, patch, "application/merge-patch+json", log_done,
                            "nominatedNodeName patch"))
        tm_warn("preemption: nominatedNodeName patch of pod=%s/%s could not be started", ns, name);
    json_decref(patch);
    free(path);
}

/* kube's getLowerPriorityNominatedPods: pods of lower priority nominated to node may no longer
 * fit there; their nomination is cleared (they are tried again wherever they fit). */
static void clear_lower_nominations(sched_preemptor *pr, const sched_pod *p, const char *node) {
    for (size_t i = 0; i < sched_nominated_count(pr->nominated);) {
        sched_nominee *e = sched_nominated_at(pr->nominated, i);
        if (strcmp(e->uid, p->uid) != 0 && strcmp(e->node, node) == 0 &&
            e->priority < p->priority && e->meta && e->meta->name && e->meta->name[0]) {
            tm_info("nomination cleared pod=%s/%s node=%s (a higher-priority pod preempted there)",
                    e->meta->ns, e->meta->name, node);
            patch_nominated(pr, e->meta->ns, e->meta->name, NULL);
            sched_nominated_remove(pr->nominated, e->uid); /* entries move: look at i again */
            continue;
        }
        i++;
    }
}

bool sched_preemptor_run(sched_preemptor *pr, sched_framework *fw, const sched_pod *p, char *msg,
                         size_t size) {
    if (msg && size)
        msg[0] = '\0';
    if (!pr)
        return false;
    int nominated = -1;
    tm_err err = {0};
    sched_status st = sched_framework_post_filter(fw, &nominated, &err);
    const sched_preemption_result *r = sched_preemption_last(fw);
    tm_metrics_inc(pr->m_k_attempts, NULL);
    if (st == SCHED_STATUS_ERROR) {
        tm_metrics_inc(pr->m_attempts, TM_LABELS("error"));
        tm_warn("preemption failed pod=%s/%s err=\"%s\"", p->ns, p->name, err.msg);
        return false;
    }
    if (st != SCHED_STATUS_OK || !r || r->status != SCHED_STATUS_OK || !r->node_name[0]) {
        tm_metrics_inc(pr->m_attempts, TM_LABELS("unschedulable"));
        /* Candidates were looked for (it was eligible) and none found: as kube-scheduler's
         * PostFilter result "nominated node: none", a nomination it held ends, on the API too
         * (its old node no longer suits it). A pod not eligible keeps its nomination. */
        if (r && r->n_nodes > 0 && sched_nominated_node(pr->nominated, p->uid)) {
            tm_info("nomination cleared pod=%s/%s (no preemption can make room any more)", p->ns,
                    p->name);
            sched_nominated_remove(pr->nominated, p->uid);
            patch_nominated(pr, p->ns, p->name, NULL);
        }
        if (msg && r && r->msg[0])
            snprintf(msg, size, "%s%s", strncmp(r->msg, "preemption:", 11) ? "preemption: " : "",
                     r->msg);
        return false;
    }
    tm_metrics_inc(pr->m_attempts, TM_LABELS("nominated"));
    tm_metrics_observe(pr->m_k_victims, NULL, (double)r->n_victims);
    tm_info("preempting pod=%s/%s node=%s victims=%zu", p->ns, p->name, r->node_name, r->n_victims);
    /* the room is kept at once, before any answer comes back */
    if (sched_nominated_set_pod(pr->nominated, p, r->node_name, &err))
        tm_warn("nomination not recorded pod=%s/%s err=\"%s\"", p->ns, p->name, err.msg);
    clear_lower_nominations(pr, p, r->node_name);
    patch_nominated(pr, p->ns, p->name, r->node_name);
    sched_snapshot *s = sched_cache_snapshot(pr->cache);
    for (size_t i = 0; i < r->n_victims; i++) {
        const sched_victim *v = &r->victims[i];
        tm_metrics_inc(pr->m_victims,
                       TM_LABELS(v->pdb_violation ? "pdb_violation" : "lower_priority"));
        /* chosen once: no later cycle may choose it again while its deletion is on its way */
        sched_snapshot_set_pod_terminating(s, v->uid);
        tm_info("preemption victim pod=%s/%s node=%s why=\"%s\"", v->ns, v->name, v->node, v->why);
        evict(pr, p, v);
    }
    return true;
}

void sched_preemptor_run_gang(sched_preemptor *pr, const char *gang, sched_pod *const *pods,
                              size_t n, const int *nodes, const sched_victim *victims,
                              size_t n_victims) {
    if (!pr)
        return;
    sched_snapshot *s = sched_cache_snapshot(pr->cache);
    tm_err err = {0};
    tm_metrics_inc(pr->m_k_attempts, NULL);
    tm_metrics_inc(pr->m_attempts, TM_LABELS("nominated"));
    tm_metrics_observe(pr->m_k_victims, NULL, (double)n_victims);
    tm_info("preempting for gang=%s members=%zu victims=%zu", gang, n, n_victims);
    /* every member's room is kept at once, on the node the dry run found for it */
    for (size_t i = 0; i < n; i++) {
        const sched_node *node = nodes[i] >= 0 ? sched_snapshot_node(s, (size_t)nodes[i]) : NULL;
        if (!node)
            continue;
        if (sched_nominated_set_pod(pr->nominated, pods[i], node->name, &err))
            tm_warn("nomination not recorded pod=%s/%s err=\"%s\"", pods[i]->ns, pods[i]->name,
                    err.msg);
        clear_lower_nominations(pr, pods[i], node->name);
        patch_nominated(pr, pods[i]->ns, pods[i]->name, node->name);
    }
    for (size_t k = 0; k < n_victims; k++) {
        const sched_victim *v = &victims[k];
        /* the event relates the victim to the member that takes its node (else the first) */
        const sched_pod *by = pods[0];
        for (size_t i = 0; i < n; i++) {
            const sched_node *node =
                nodes[i] >= 0 ? sched_snapshot_node(s, (size_t)nodes[i]) : NULL;
            if (node && strcmp(node->name, v->node) == 0) {
                by = pods[i];
                break;
            }
        }
        tm_metrics_inc(pr->m_victims, TM_LABELS("lower_priority"));
        sched_snapshot_set_pod_terminating(s, v->uid);
        tm_info("preemption victim pod=%s/%s node=%s why=\"%s\"", v->ns, v->name, v->node, v->why);
        evict(pr, by, v);
    }
}

void sched_preemptor_evict_overrun(sched_preemptor *pr, const sched_victim *v, const char *resv_ns,
                                   const char *resv_name, const char *resv_uid) {
    if (!pr)
        return;
    tm_metrics_inc(pr->m_victims, TM_LABELS("reservation_overrun"));
    sched_snapshot_set_pod_terminating(sched_cache_snapshot(pr->cache), v->uid);
    tm_info("reservation victim pod=%s/%s node=%s reservation=%s/%s why=\"%s\"", v->ns, v->name,
            v->node, resv_ns, resv_name, v->why);
    char msg[512];
    snprintf(msg, sizeof msg, "%s: Reservation %s/%s: %s", pr->controller, resv_ns, resv_name,
             v->why);
    evict_for(pr, "Reservation", "tarema.io/v1alpha1", resv_ns, resv_name, resv_uid, NULL, v, msg);
}
