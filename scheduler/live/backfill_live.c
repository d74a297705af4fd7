/* backfill_live.c: the live side of backfill (backfill_live.h): inputs from the cache, the
 * queue, the gangs and the reservation table; the plan is backfill.c's; outputs are the
 * plugin's plan, the expected-start annotations and the metrics. */
#include "scheduler/live/backfill_live.h"
#include "scheduler/live/backfill_live_internal.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/backfill/backfill_plugin.h"
#include "scheduler/plugins/reservation/resv_plan.h"

/* The plan is made again at least this many resolutions apart even when nothing changed: a pod
 * past its expected end moves the shadows behind it. */
#define REPLAN_IDLE_STEPS 10

/* One job of the plan being built: its pods (borrowed from the queue during the plan). */
typedef struct bjob {
    const sched_pod **pods; /* into the plan's members[] */
    size_t n;
} bjob;

static int cmp_bpod(const void *a, const void *b) {
    return strcmp(((const bpod *)a)->uid, ((const bpod *)b)->uid);
}

static bpod *find(const sched_backfill_live *b, const char *uid) {
    bpod key = {.uid = (char *)uid};
    void *f = tfind(&key, &b->tree, cmp_bpod);
    return f ? *(bpod **)f : NULL;
}

static void forget(sched_backfill_live *b, const char *uid) {
    bpod *p = find(b, uid);
    if (!p)
        return;
    tdelete(p, &b->tree, cmp_bpod);
    if (p->not_before_ms)
        b->n_not_before--;
    b->pods[p->idx] = b->pods[--b->n_pods];
    b->pods[p->idx]->idx = p->idx;
    free(p->uid);
    free(p);
}

static bpod *ensure(sched_backfill_live *b, const char *uid) {
    bpod *p = find(b, uid);
    if (p)
        return p;
    if (b->n_pods == b->cap_pods) {
        size_t nc = b->cap_pods ? b->cap_pods * 2 : 256;
        bpod **v = realloc(b->pods, nc * sizeof *v);
        if (!v)
            return NULL;
        b->pods = v;
        b->cap_pods = nc;
    }
    p = calloc(1, sizeof *p);
    if (!p || !(p->uid = strdup(uid)) || !tsearch(p, &b->tree, cmp_bpod)) {
        if (p)
            free(p->uid);
        free(p);
        return NULL;
    }
    p->idx = b->n_pods;
    p->announced_ms = -1;
    b->pods[b->n_pods++] = p;
    return p;
}

/* RFC 3339 UTC ("2026-11-29T08:00:00Z") -> ms since the epoch; -1 when it is not one. */
static int64_t parse_rfc3339(const char *s) {
    struct tm tm = {0};
    if (!s)
        return -1;
    const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!e || (*e != 'Z' && *e != '.'))
        return -1;
    return (int64_t)timegm(&tm) * 1000;
}

/* Whether the pod still waits at the order gate (lib/gates.h): its not-before counts only then
 * (once the gate goes, its predecessors have ended and it is a waiting pod like any other), and
 * only when that is its one gate, as the queue holds it. */
static bool order_gated(const json_t *obj) {
    const json_t *gates = tm_json_path(obj, "spec.schedulingGates");
    /* held as the queue holds it: the order gate and no other (sched_scheduling_held) */
    return json_array_size(gates) == 1 &&
           strcmp(tm_json_str(json_array_get(gates, 0), "name", ""), TM_GATE_ORDER) == 0;
}

void sched_backfill_live_pod_event(sched_backfill_live *b, tm_watch_type t, const json_t *obj) {
    if (!b)
        return;
    b->dirty = true;
    const char *uid = tm_json_str(obj, "metadata.uid", NULL);
    if (!uid)
        return;
    if (t == TM_WATCH_DELETED || sched_pod_json_terminal(obj)) {
        forget(b, uid);
        return;
    }
    sched_snapshot *snap = sched_cache_snapshot(b->cache);
    tm_err err = {0};
    sched_pod *sp = sched_pod_from_json(snap, obj, &b->keys, &err);
    if (!sp) { /* the cache reports it; its end is unknown here */
        forget(b, uid);
        return;
    }
    bpod *p = ensure(b, uid);
    if (!p) {
        sched_pod_free(sp);
        tm_error("backfill: out of memory tracking pod uid=%s", uid);
        return;
    }
    const char *node = tm_json_str(obj, "spec.nodeName", "");
    /* the start dates the expected end; the cache's record of a pod placed by this scheduler
     * keeps the start it had when assumed (none), so it is tracked here */
    int64_t st = parse_rfc3339(tm_json_str(obj, "status.startTime", NULL));
    if (st > 0)
        p->start_ms = st;
    else if (node[0] && p->start_ms == 0)
        p->start_ms = tm_wall_ms();
    p->dur_ms =
        resv_expected_end(snap, sp, node[0] ? sched_snapshot_node_by_name(snap, node) : NULL, 0);
    const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const json_t *v = json_object_get(ann, SCHED_EXPECTED_START_ANNOTATION);
    int64_t seen = json_is_string(v) ? parse_rfc3339(json_string_value(v)) : -1;
    if (seen >= 0) /* an event without it may predate our write: keep what we wrote */
        p->announced_ms = seen;
    /* a pod released early and held by its order gate (ASA's pro-active submission): the
     * planner says when its predecessors are expected to end (docs/backfill.md) */
    v = json_object_get(ann, SCHED_NOT_BEFORE_ANNOTATION);
    int64_t nb =
        !node[0] && json_is_string(v) && order_gated(obj) && sched_cache_is_ours(b->cache, obj)
            ? parse_rfc3339(json_string_value(v))
            : -1;
    nb = nb > 0 ? nb : 0;
    if (nb != p->not_before_ms) {
        tm_debug("backfill: pod uid=%s not before %lld (was %lld)", uid, (long long)nb,
                 (long long)p->not_before_ms);
        /* new or earlier: plan now; a later one only makes the shadow start sooner than
         * needed until the next plan (within the resolution) */
        b->replan_now |= nb != 0 && (p->not_before_ms == 0 || nb < p->not_before_ms);
    }
    b->n_not_before += (nb != 0) - (p->not_before_ms != 0);
    p->not_before_ms = nb;
    if (!node[0]) {
        p->seen_pending = true;
    } else if (p->seen_pending) {
        /* Bound while this process watched: how far off was the last start announced? A pod
         * already bound when first seen (a restart, a re-list) was judged before, or never
         * announced by this process: not counted. The watch brings the binding within
         * milliseconds, so its arrival stands for the start. */
        p->seen_pending = false; /* judged once */
        if (p->announced_ms >= 0) {
            int64_t d = tm_wall_ms() - p->announced_ms;
            tm_metrics_observe(b->m_start_error, TM_LABELS(d < 0 ? "early" : "late"),
                               (double)(d < 0 ? -d : d) / 1000.0);
            tm_debug("backfill: bound %+.1f s from its expected start uid=%s", (double)d / 1000.0,
                     uid);
        }
    }
    sched_pod_free(sp);
}

bool sched_backfill_live_holding(const sched_backfill_live *b) {
    const bf_plan *p = b ? bf_plugin_plan(b->fw) : NULL;
    return p && bf_plan_shadow_count(p) > 0;
}

void sched_backfill_live_touch(sched_backfill_live *b) {
    if (b)
        b->dirty = true;
}

/* The plugin's job key of a pod: "gang <key>" for a gang member, else "pod ns/name"; "" (exempt)
 * for an owner's pod of a held Reservation: it runs on the reservation's capacity, which the plan
 * counts as taken, so it delays no shadow. */
const char *bf_live_job_key(void *ud, const sched_pod *p) {
    sched_backfill_live *b = ud;
    if (resv_controller_holds_for(b->resv, p))
        return "";
    sched_gang *g = b->gangs ? sched_gang_registry_of(b->gangs, p->uid) : NULL;
    if (g && g->key)
        snprintf(b->keybuf, sizeof b->keybuf, "gang %s", g->key);
    else
        snprintf(b->keybuf, sizeof b->keybuf, "pod %s/%s", p->ns, p->name);
    return b->keybuf;
}

/* ---- the plan's inputs ---------------------------------------------------------------------- */

/* Whether a waiting pod's gang could start at all once room is there: declared (not basic),
 * not waiting for a gated member (unless held, with a not-before: those ungate at once when its
 * predecessors end), and with enough members to reach minMember. A gang that
 * cannot start must hold nothing: a shadow for it would keep nodes from pods that can. Pods of
 * no gang always can. */
static bool gang_can_start(sched_backfill_live *b, const sched_pod *p, bool held) {
    sched_gang *g = b->gangs ? sched_gang_registry_of(b->gangs, p->uid) : NULL;
    if (!g || g->basic)
        return true;
    char why[256];
    if (!sched_gang_active(g))
        return false;
    if (held) /* its members wait for the order gate, which goes at its not-before */
        return g->n_members - sched_gang_count(g, SCHED_GANG_POD_FAILED) + g->done_succeeded >=
               (size_t)(g->spec.min_member > 0 ? g->spec.min_member : 1);
    if (sched_gang_waits_for_gates(g, why, sizeof why))
        return false;
    size_t have = sched_gang_count(g, SCHED_GANG_POD_PENDING) + sched_gang_placed_count(g);
    return have >= (size_t)g->spec.min_member;
}

/* A pod's tarema.io/not-before (0: none). */
static int64_t not_before(const sched_backfill_live *b, const sched_pod *p) {
    const bpod *bp = find(b, p->uid);
    return bp ? bp->not_before_ms : 0;
}

typedef struct busy_ctx {
    const sched_snapshot *snap;
    bf_busy *v;
    size_t n, cap;
} busy_ctx;

static void add_hold(void *ud, const char *key, int64_t start_ms, int64_t end_ms, const char *node,
                     const sched_resources *held, const sched_resources *used) {
    (void)key;
    busy_ctx *c = ud;
    int idx = sched_snapshot_node_index(c->snap, node);
    if (idx < 0)
        return;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        bf_busy *v = realloc(c->v, nc * sizeof *v);
        if (!v)
            return; /* out of memory: this hold is left out of the plan */
        c->v = v;
        c->cap = nc;
    }
    bf_busy *x = &c->v[c->n++];
    *x = (bf_busy){.node = idx, .start_ms = start_ms, .end_ms = end_ms};
    /* the owner's pods running there are counted as running pods already */
    for (int k = 0; k < SCHED_RES_MAX; k++)
        x->req.v[k] = held->v[k] > used->v[k] ? held->v[k] - used->v[k] : 0;
}

/* Every pod on a node, with its expected end: its start (status.startTime, else when it was seen
 * bound, else now: an assumed pod) plus its expected runtime. */
static bf_running *running_pods(sched_backfill_live *b, const sched_snapshot *snap, int64_t now,
                                size_t *n_out) {
    size_t nn = sched_snapshot_node_count(snap), total = 0;
    for (size_t i = 0; i < nn; i++)
        total += sched_snapshot_node_pod_count(snap, i);
    bf_running *run = malloc((total ? total : 1) * sizeof *run);
    if (!run)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < nn; i++) {
        size_t np = sched_snapshot_node_pod_count(snap, i);
        for (size_t j = 0; j < np && n < total; j++) {
            const char *uid = NULL;
            const sched_pod_meta *m = sched_snapshot_node_pod(snap, i, j, &uid);
            bf_running *r = &run[n];
            *r = (bf_running){.node = (int)i, .end_ms = -1};
            if (!uid || sched_snapshot_pod_requests(snap, uid, &r->req))
                continue;
            const bpod *p = find(b, uid);
            r->start_ms = p && p->start_ms > 0   ? p->start_ms
                          : m && m->start_ms > 0 ? m->start_ms
                                                 : now;
            if (p && p->dur_ms >= 0)
                r->end_ms = r->start_ms + p->dur_ms;
            n++;
        }
    }
    *n_out = n;
    return run;
}

/* The pods preemption nominated to a node and not placed yet, added to run (grown; *n updated):
 * each holds its node from now on, as the cycle counts it there for pods of no higher priority
 * (nominate.c), until its expected end. So no shadow is planned on capacity a preemption has
 * freed for its preemptor, and other pods are not held back by a shadow that would take it
 * (a preemptor blocked by the head's shadow lost its nomination and preempted again elsewhere:
 * bench/preemption_bench.sh). false on OOM (run unchanged). */
static bool add_nominated(sched_backfill_live *b, const sched_snapshot *snap, int64_t now,
                          bf_running **run, size_t *n) {
    sched_nominated *t = sched_snapshot_nominated(snap);
    size_t nn = t ? sched_nominated_count(t) : 0;
    if (!nn)
        return true;
    bf_running *r = realloc(*run, (*n + nn) * sizeof *r);
    if (!r)
        return false;
    *run = r;
    for (size_t i = 0; i < nn; i++) {
        const sched_nominee *e = sched_nominated_at(t, i);
        int node = sched_snapshot_node_index(snap, e->node);
        if (node < 0 || sched_snapshot_pod_node(snap, e->uid))
            continue; /* its node is gone, or it is placed (counted with the node's pods) */
        const bpod *p = find(b, e->uid);
        r[(*n)++] = (bf_running){.node = node,
                                 .req = e->requests,
                                 .start_ms = now,
                                 .end_ms = p && p->dur_ms >= 0 ? now + p->dur_ms : -1};
    }
    return true;
}

static void free_keys(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void free_job_keys(sched_backfill_live *b) {
    free_keys(b->job_keys, b->n_job_keys);
    b->job_keys = NULL;
    b->n_job_keys = 0;
}

/* The waiting pods in queue order grouped into at most max_jobs jobs: a gang's waiting members
 * form one job at the place of its first. jof (n entries) is scratch. Fills jobs (their pods in
 * members[]) and b->job_keys; returns how many jobs. */
static size_t group_jobs(sched_backfill_live *b, const sched_pod **order, size_t n, size_t *jof,
                         bjob *jobs, const sched_pod **members, size_t max_jobs) {
    size_t nj = 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = bf_live_job_key(b, order[i]);
        size_t j = 0;
        if (strncmp(key, "gang ", 5) == 0)
            while (j < nj && strcmp(b->job_keys[j], key) != 0)
                j++;
        else
            j = nj;
        if (j == nj) {
            jof[i] = SIZE_MAX;
            if (nj == max_jobs || !(b->job_keys[nj] = strdup(key)))
                continue; /* past maxJobTest: only later members of known gangs still join */
            b->n_job_keys = ++nj;
        }
        jof[i] = j;
        jobs[j].n++;
    }
    size_t used = 0;
    for (size_t j = 0; j < nj; j++) {
        jobs[j].pods = &members[used];
        used += jobs[j].n;
        jobs[j].n = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (jof[i] != SIZE_MAX) {
            bjob *jb = &jobs[jof[i]];
            ((const sched_pod **)jb->pods)[jb->n++] = order[i];
        }
    return nj;
}

/* Writes tarema.io/expected-start on pod when it is new or moved by at least the resolution. */
static void announce(sched_backfill_live *b, const sched_pod *pod, int64_t start_ms, int64_t wall);

static void patch_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    (void)ud;
    if (err && status != 404)
        tm_warn("backfill: expected-start annotation not written status=%d err=\"%s\"", status,
                err->msg);
}

static void announce(sched_backfill_live *b, const sched_pod *pod, int64_t start_ms, int64_t wall) {
    bpod *p = find(b, pod->uid);
    if (!p || b->quiet)
        return;
    /* a start announced and come stays as announced while the pod is held from now on (a job
     * held over, waiting out a backoff): moved to each plan's now, it was written once per
     * resolution until the pod was bound, and the start error measured against the last one */
    if (p->announced_ms >= 0 && p->announced_ms <= wall && start_ms <= wall)
        return;
    int64_t d = p->announced_ms >= 0 ? start_ms - p->announced_ms : INT64_MAX;
    if (d < 0)
        d = -d;
    if (d < b->cfg->backfill.resolution_ms)
        return;
    char when[32];
    bf_format_time(start_ms, when, sizeof when);
    json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                              SCHED_EXPECTED_START_ANNOTATION, when);
    char *path = tm_kube_path("v1", "pods", pod->ns, pod->name, NULL);
    if (!patch || !path ||
        tm_kube_write_async(b->k, "PATCH", path, patch, "application/merge-patch+json", patch_done,
                            NULL))
        tm_warn("backfill: expected-start annotation not started pod=%s/%s", pod->ns, pod->name);
    else {
        p->announced_ms = start_ms;
        tm_metrics_inc(b->m_announced, NULL);
        tm_info("backfill: expected start pod=%s/%s start=%s", pod->ns, pod->name, when);
    }
    json_decref(patch);
    free(path);
}

static bool due(const sched_backfill_live *b, int64_t mono) {
    if (b->replan_now)
        return true;
    int64_t res = b->cfg->backfill.resolution_ms;
    if (b->last_plan_ms && mono - b->last_plan_ms < res)
        return false;
    if (b->dirty)
        return true;
    return !b->last_plan_ms || mono - b->last_plan_ms >= REPLAN_IDLE_STEPS * res;
}

static bool plan(sched_backfill_live *b, int64_t mono, int64_t wall);

bool sched_backfill_live_plan(sched_backfill_live *b, int64_t mono, int64_t wall) {
    if (!b || !due(b, mono))
        return false;
    return plan(b, mono, wall);
}

bool sched_backfill_live_unschedulable(sched_backfill_live *b, const sched_pod *pod, int64_t mono,
                                       int64_t wall) {
    if (!b || !pod || b->batch_planned)
        return false;
    int depth = b->cfg->backfill.reserve_depth;
    if (depth != BF_DEPTH_ALL && bf_plan_shadow_count(bf_plugin_plan(b->fw)) >= (size_t)depth &&
        pod->priority <= b->shadow_min_prio)
        return false; /* every shadow is taken by a job ahead of it; the next plan reorders */
    /* (a pod of higher priority than a shadowed job is ahead of it in the queue: planned now,
     * it takes that shadow before the narrow pods of this batch take what it needs) */
    const char *key = bf_live_job_key(b, pod);
    if (!key[0])
        return false; /* a Reservation's owner: its reservation holds its capacity */
    for (size_t j = 0; j < b->n_job_keys; j++)
        if (strcmp(b->job_keys[j], key) == 0)
            return false; /* the last plan knew it: it has its shadow, or cannot have one */
    b->batch_planned = true;
    tm_debug("backfill: planning at once, pod=%s/%s fits nowhere and no plan has seen it", pod->ns,
             pod->name);
    return plan(b, mono, wall);
}

static bool plan(sched_backfill_live *b, int64_t mono, int64_t wall) {
    bf_plan *plan = bf_plugin_plan(b->fw);
    b->replan_now = false;
    b->shadow_min_prio = INT32_MAX; /* no shadow yet: set again below once the plan has them */
    size_t waiting = sched_queue_count(b->q, SCHED_Q_ACTIVE) +
                     sched_queue_count(b->q, SCHED_Q_BACKOFF) +
                     sched_queue_count(b->q, SCHED_Q_UNSCHEDULABLE);
    /* the held pods (gated, queued) count only with a not-before (bf_job.not_before_ms) */
    size_t room = waiting + (b->n_not_before ? sched_queue_count(b->q, SCHED_Q_GATED) : 0);
    /* Nothing has failed to fit and nothing is held: no shadow is possible, skip the work.
     * Except the first time pods wait (a start, a restart, a new leader): none has been tried
     * by this process yet, so "nothing failed" says nothing. Skipped then, the first batch
     * tried a wide pod at the head, which did not fit, and went on to bind the narrow pods
     * behind it on the cores its shadow had held before the restart
     * (scheduler_backfill_restart_test: 4 of them, the head 2 min late). */
    if (!b->observe && bf_plan_shadow_count(plan) == 0 &&
        sched_queue_count(b->q, SCHED_Q_BACKOFF) == 0 &&
        sched_queue_count(b->q, SCHED_Q_UNSCHEDULABLE) == 0 && (b->primed || waiting == 0) &&
        b->n_not_before == 0) {
        b->primed = true;
        b->dirty = false;
        b->last_plan_ms = mono;
        return false;
    }
    b->primed = true;
    struct timespec a, z;
    clock_gettime(CLOCK_MONOTONIC, &a);
    const bf_config *cfg = &b->cfg->backfill;
    sched_snapshot *snap = sched_cache_snapshot(b->cache);
    size_t nn = sched_snapshot_node_count(snap);
    size_t max_jobs = (size_t)cfg->max_job_test;
    const sched_pod **order = malloc((room ? room : 1) * sizeof *order);
    const sched_pod **members = malloc((room ? room : 1) * sizeof *members);
    size_t *jof = malloc((room ? room : 1) * sizeof *jof);
    bjob *jobs = calloc(max_jobs, sizeof *jobs);
    bf_job *bj = calloc(max_jobs, sizeof *bj);
    sched_resources *alloc = malloc((nn ? nn : 1) * sizeof *alloc);
    sched_resources *mreq = malloc((room ? room : 1) * sizeof *mreq);
    bool *elig = NULL;
    bf_running *run = NULL;
    size_t n_run = 0;
    busy_ctx busy = {.snap = snap};
    tm_err err = {0};
    /* the last plan's keys (its shadows' keys) live until it has been read: in extender mode
     * the jobs that held a shadow carry their hold over (below) */
    char **last_keys = b->job_keys;
    size_t n_last = b->n_job_keys;
    b->n_job_keys = 0;
    b->job_keys = calloc(max_jobs, sizeof *b->job_keys);
    if (!order || !members || !jof || !jobs || !bj || !alloc || !mreq || !b->job_keys)
        goto oom;
    size_t n = b->n_not_before ? sched_queue_waiting_held(b->q, order, room)
                               : sched_queue_waiting(b->q, order, waiting);
    /* the owners' pods of a held Reservation are left out: the reservation holds their capacity
     * (in the plan as the holds less what they use) and the Reservation plugin places them; so
     * are the members of a gang that could not start even with room (gang_can_start) */
    /* and so are the pods nominated to a node by a preemption: the nomination holds their
     * place (add_nominated) */
    sched_nominated *nom = sched_snapshot_nominated(snap);
    size_t kept = 0;
    /* a held pod (gated, queued) only with a not-before: it ungates when its predecessors end */
    for (size_t i = 0; i < n; i++) {
        bool held = sched_queue_state(b->q, order[i]->uid) == SCHED_Q_GATED;
        if (held && !not_before(b, order[i]))
            continue;
        if (!resv_controller_holds_for(b->resv, order[i]) && gang_can_start(b, order[i], held) &&
            !(nom && sched_nominated_node(nom, order[i]->uid)) &&
            !bf_live_is_placed(b, order[i]->uid))
            order[kept++] = order[i];
    }
    n = kept;
    size_t nj = group_jobs(b, order, n, jof, jobs, members, max_jobs);
    elig = malloc((nj ? nj : 1) * (nn ? nn : 1) * sizeof *elig);
    if (!elig || !(run = running_pods(b, snap, wall, &n_run)) ||
        !add_nominated(b, snap, wall, &run, &n_run) ||
        !bf_live_add_placed(b, snap, wall, &run, &n_run))
        goto oom;
    for (size_t i = 0; i < nn; i++)
        alloc[i] = sched_snapshot_node(snap, i)->allocatable;
    if (!b->pf && !(b->pf = sched_prefilter_new()))
        goto oom;
    size_t m = 0;
    for (size_t j = 0; j < nj; j++) {
        const sched_pod *first = jobs[j].pods[0];
        /* nodes the first member's filters other than capacity allow (selectors, taints, ...);
         * the inter-pod filters' state computed once for the job, not once per node */
        bool *e = &elig[j * nn];
        bool pre_ok = sched_prefilter_compute(b->pf, snap, first, &err) == 0;
        for (size_t i = 0; i < nn; i++) {
            uint32_t detail = 0;
            sched_filter_id id =
                pre_ok ? sched_filter_node_pre(snap, first, i, b->pf, &detail) : SCHED_FILTER_COUNT;
            e[i] = id == SCHED_FILTER_OK || id == SCHED_FILTER_RESOURCES ||
                   (id != SCHED_FILTER_COUNT && sched_filter_resolvable(id, detail));
        }
        for (size_t k = 0; k < jobs[j].n; k++)
            mreq[m + k] = jobs[j].pods[k]->requests;
        const bpod *p = find(b, first->uid);
        int64_t rt = p ? p->dur_ms : -1;
        if (rt < 0 && cfg->default_runtime_ms > 0)
            rt = cfg->default_runtime_ms;
        /* a job waiting out a backoff is tried after the active pods behind it: when it fits
         * now it holds what it needs from now on (bf_job.hold_now). So is, in extender mode, a
         * job that held a shadow in the last plan: kube-scheduler, not tarema, tries the pods,
         * in its own order (a pod it found unschedulable goes back behind the others moved by
         * the same event), so when the capacity it waited for frees, a pod behind it could take
         * it first and push its start out by that pod's runtime (scheduler_extender_backfill_
         * test: long bound on wide's node, wide 2 min late). The hold then carries over from
         * plan to plan until the pod is bound; every replica plans it alike. */
        bool held = b->observe && bf_plan_shadow_of(plan, b->job_keys[j]);
        for (size_t k = 0; k < jobs[j].n && !held; k++)
            held = sched_queue_state(b->q, jobs[j].pods[k]->uid) != SCHED_Q_ACTIVE;
        int64_t nb = 0; /* the latest not-before of its members */
        for (size_t k = 0; k < jobs[j].n; k++)
            if (not_before(b, jobs[j].pods[k]) > nb)
                nb = not_before(b, jobs[j].pods[k]);
        bj[j] = (bf_job){.key = b->job_keys[j],
                         .n_members = jobs[j].n,
                         .member_req = &mreq[m],
                         .runtime_ms = rt,
                         .eligible = e,
                         .hold_now = held,
                         .not_before_ms = nb};
        m += jobs[j].n;
    }
    const resv_plan *rp = resv_controller_plan(b->resv);
    if (rp)
        resv_plan_each_hold(rp, add_hold, &busy);
    if (bf_plan_compute(plan, cfg, alloc, nn, run, n_run, busy.v, busy.n, bj, nj, wall, &err)) {
        tm_error("backfill: planning failed, nothing held err=\"%s\"", err.msg);
        goto out; /* a failed compute leaves the plan empty */
    }
    size_t ns = bf_plan_shadow_count(plan);
    b->shadow_min_prio = INT32_MAX;
    for (size_t s = 0; s < ns; s++) {
        const bf_shadow *sh = bf_plan_shadow(plan, s);
        for (size_t k = 0; k < jobs[sh->job].n; k++)
            announce(b, jobs[sh->job].pods[k], sh->start_ms, wall);
        for (size_t k = 0; k < jobs[sh->job].n; k++)
            if (jobs[sh->job].pods[k]->priority < b->shadow_min_prio)
                b->shadow_min_prio = jobs[sh->job].pods[k]->priority;
    }
    tm_metrics_set(b->m_shadows, NULL, (double)ns);
    clock_gettime(CLOCK_MONOTONIC, &z);
    double secs = (double)(z.tv_sec - a.tv_sec) + (double)(z.tv_nsec - a.tv_nsec) / 1e9;
    tm_metrics_observe(b->m_plan_s, NULL, secs);
    tm_debug("backfill: planned jobs=%zu running=%zu holds=%zu shadows=%zu ms=%.1f", nj, n_run,
             busy.n, ns, secs * 1000);
    goto out;
oom:
    /* the previous plan's keys are gone: hold nothing until the next plan */
    tm_error("backfill: out of memory planning, nothing held until the next plan");
    bf_plan_compute(plan, cfg, NULL, 0, NULL, 0, NULL, 0, NULL, 0, wall, &err);
out:
    b->dirty = false;
    b->last_plan_ms = mono;
    b->plan_gen++;
    free_keys(last_keys, n_last);
    free(order);
    free(members);
    free(jof);
    free(jobs);
    free(bj);
    free(alloc);
    free(mreq);
    free(elig);
    free(run);
    free(busy.v);
    return true;
}

void sched_backfill_live_after_batch(sched_backfill_live *b) {
    if (!b)
        return;
    b->batch_planned = false;
    uint64_t c = bf_plugin_backfilled(b->fw);
    if (c > b->backfilled_seen)
        tm_metrics_add(b->m_backfilled, NULL, (double)(c - b->backfilled_seen));
    b->backfilled_seen = c;
}

static int register_metrics(sched_backfill_live *b, tm_metrics *reg, tm_err *err) {
    double buckets[16];
    tm_metrics_exp_buckets(0.0001, 2, 16, buckets); /* 0.1 ms .. 3.3 s */
    b->m_shadows = tm_metrics_gauge(reg, "tarema_backfill_shadows",
                                    "Shadows held by the last backfill plan: waiting pods or "
                                    "gangs of the head of the queue with a planned start.",
                                    NULL, err);
    if (!b->m_shadows)
        return -1;
    b->m_backfilled = tm_metrics_counter(reg, "tarema_backfill_pods_total",
                                         "Pods placed while an earlier pod or gang of the queue "
                                         "held a shadow (backfilled).",
                                         NULL, err);
    if (!b->m_backfilled)
        return -1;
    b->m_plan_s = tm_metrics_histogram(reg, "tarema_backfill_plan_duration_seconds",
                                       "Time of one backfill plan (inputs from the cache, "
                                       "shadows), CPU only.",
                                       NULL, buckets, 16, err);
    if (!b->m_plan_s)
        return -1;
    b->m_announced = tm_metrics_counter(reg, "tarema_backfill_expected_start_writes_total",
                                        "tarema.io/expected-start annotations written (new or "
                                        "moved by at least the resolution).",
                                        NULL, err);
    if (!b->m_announced)
        return -1;
    double err_buckets[16];
    tm_metrics_exp_buckets(0.5, 2, 16, err_buckets); /* 0.5 s .. 4.5 h */
    b->m_start_error = tm_metrics_histogram(
        reg, "tarema_backfill_start_error_seconds",
        "How far from its last announced tarema.io/expected-start a pod was bound (absolute), "
        "for pods this process announced and saw pending: early (bound before it) or late.",
        TM_LABELS("direction"), err_buckets, 16, err);
    return b->m_start_error ? 0 : -1;
}

sched_backfill_live *sched_backfill_live_new(const sched_config *cfg, tm_kube *k,
                                             sched_cache *cache, sched_queue *q,
                                             sched_framework *fw, sched_gang_registry *gangs,
                                             const resv_controller *resv, tm_metrics *reg,
                                             tm_err *err) {
    sched_backfill_live *b = calloc(1, sizeof *b);
    if (!b) {
        tm_err_set(err, "backfill: out of memory");
        return NULL;
    }
    *b = (sched_backfill_live){.cfg = cfg,
                               .k = k,
                               .cache = cache,
                               .q = q,
                               .fw = fw,
                               .gangs = gangs,
                               .resv = resv,
                               .keys = sched_config_keys(cfg),
                               .dirty = true};
    if (register_metrics(b, reg, err) ||
        bf_plugin_add(fw, &cfg->backfill, bf_live_job_key, b, err)) {
        sched_backfill_live_free(b);
        return NULL;
    }
    return b;
}

void sched_backfill_live_observe(sched_backfill_live *b) {
    if (b)
        b->observe = true;
}

void sched_backfill_live_quiet(sched_backfill_live *b, bool quiet) {
    if (b)
        b->quiet = quiet;
}

int sched_backfill_live_add_plugin(sched_backfill_live *b, sched_framework *fw, tm_err *err) {
    return bf_plugin_add_borrowed(fw, &b->cfg->backfill, bf_plugin_plan(b->fw),
                                  sched_cache_snapshot(b->cache), bf_live_job_key, b, err);
}

void sched_backfill_live_free(sched_backfill_live *b) {
    if (!b)
        return;
    while (b->n_pods)
        forget(b, b->pods[b->n_pods - 1]->uid);
    free(b->pods);
    free(b->placed);
    free_job_keys(b);
    sched_prefilter_free(b->pf);
    free(b);
}
