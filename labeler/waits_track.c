/* waits_track.c: see waits_track.h. State as jansson objects used as maps:
 *   pods: uid -> {ns, gang, group, cpu, mem, queued, had_gates, held, released, bound, done}
 *         (held: first seen held, released: first seen ungated after that; -1 when not)
 *   gangs: "ns/gang" -> {members: {uid: true}, done: bool} */
#include "labeler/waits_track.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lab_waits_tracker {
    json_t *pods, *gangs;
    bool synced; /* the pod list was delivered: gangs can be judged */
};

lab_waits_tracker *lab_waits_tracker_new(void) {
    lab_waits_tracker *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->pods = json_object();
    t->gangs = json_object();
    if (!t->pods || !t->gangs) {
        lab_waits_tracker_free(t);
        return NULL;
    }
    return t;
}

void lab_waits_tracker_free(lab_waits_tracker *t) {
    if (!t)
        return;
    json_decref(t->pods);
    json_decref(t->gangs);
    free(t);
}

static double num(const json_t *o, const char *k) {
    return json_number_value(json_object_get(o, k));
}

static void gang_id(const char *ns, const char *gang, char *out, size_t size) {
    snprintf(out, size, "%s/%s", ns, gang);
}

/* Takes uid out of gang (ns, gang); the gang goes with its last member. */
static void gang_leave(lab_waits_tracker *t, const char *ns, const char *gang, const char *uid) {
    if (!gang || !gang[0])
        return;
    char gid[400];
    gang_id(ns, gang, gid, sizeof gid);
    json_t *g = json_object_get(t->gangs, gid);
    json_t *members = json_object_get(g, "members");
    json_object_del(members, uid);
    if (g && json_object_size(members) == 0)
        json_object_del(t->gangs, gid);
}

/* What a gang's members add up to: the last queued and bound times, the largest per-pod cpu
 * and memory, their count and the first member's state. */
typedef struct gang_sum {
    double queued, bound;
    double released; /* the last held member's release, -1 when none was held */
    long long cpu, mem;
    int n;
    const json_t *first;
} gang_sum;

/* Sums the members of gang g; false when one is unknown or not queued yet (or, with
 * need_bound, not bound yet). */
static bool gang_sum_of(const lab_waits_tracker *t, const json_t *g, bool need_bound, gang_sum *s) {
    *s = (gang_sum){.queued = -1, .bound = -1, .released = -1};
    const char *uid;
    json_t *v;
    json_object_foreach(json_object_get(g, "members"), uid, v) {
        const json_t *p = json_object_get(t->pods, uid);
        if (!p || num(p, "queued") < 0 || (need_bound && num(p, "bound") < 0))
            return false;
        s->first = s->first ? s->first : p;
        s->queued = fmax(s->queued, num(p, "queued"));
        s->bound = fmax(s->bound, num(p, "bound"));
        s->released = fmax(s->released, num(p, "released"));
        s->cpu = (long long)fmax((double)s->cpu, num(p, "cpu"));
        s->mem = (long long)fmax((double)s->mem, num(p, "mem"));
        s->n++;
    }
    return true;
}

/* Whether a held request released at `released` and bound at `bound` was bound at its
 * release: its wait is censored, not an observation (waits_track.h). */
static bool bound_at_release(double released, double bound) {
    return released >= 0 && bound - released <= LAB_WAITS_HELD_SLACK_S;
}

/* A gang whose every member is bound: its observation (censored when bound at its release:
 * claimed, nothing fed). 1 when complete. */
static int gang_complete(lab_waits_tracker *t, const char *gid, const json_t *g, double now,
                         lab_waits_obs *obs, tm_err *err) {
    gang_sum s;
    if (!gang_sum_of(t, g, true, &s) || s.n == 0 || s.bound < now - LAB_WAITS_RECENT_S)
        return 0;
    if (asa_key_make(&obs->key, json_string_value(json_object_get(s.first, "ns")),
                     json_string_value(json_object_get(s.first, "group")), s.n, s.cpu, s.mem,
                     err) < 0)
        return -1;
    /* claimed by its members' uids, not by name and bound time: the time a re-list shows can
     * be a later rewrite of the PodScheduled condition (asa_waits_test counted a gang twice) */
    size_t len = 1;
    const char *uid;
    json_t *v;
    json_object_foreach(json_object_get(g, "members"), uid, v) len += strlen(uid) + 1;
    char *members = malloc(len), *at = members;
    if (!members)
        return tm_err_set(err, "out of memory observing gang %s", gid);
    json_object_foreach(json_object_get(g, "members"), uid, v) {
        at += sprintf(at, "%s%s", at == members ? "" : " ", uid);
    }
    *at = '\0';
    snprintf(obs->request_id, sizeof obs->request_id, "gang:%.300s", gid);
    obs->wait_s = fmax(0, s.bound - s.queued);
    obs->members = members;
    obs->censored = bound_at_release(s.released, s.bound);
    return 1;
}

void lab_waits_obs_clear(lab_waits_obs *o) {
    free(o->members);
    o->members = NULL;
}

/* The queued time a feed wrote on the pod before a restart, if it can be one: the annotation is
 * on the pod, where its owner can write anything, and a forged one would feed a made-up wait
 * (an earlier time, a longer wait) to every request of the shape. A request is queued no
 * earlier than its pod was created and no later than it was bound (or now). */
static bool queued_at_plausible(const lab_waits_pod *p, double now) {
    double latest = p->bound >= 0 ? fmin(now, p->bound) : now;
    return p->queued_at >= 0 && p->queued_at >= floor(p->created) && p->queued_at <= latest;
}

int lab_waits_tracker_update(lab_waits_tracker *t, const lab_waits_pod *p, double now,
                             lab_waits_obs *obs, tm_err *err) {
    if (p->mirror)
        return 0;
    asa_key probe;
    if (asa_key_make(&probe, p->ns, p->group, 1, p->cpu_milli, p->mem_bytes, err) < 0)
        return -1;
    json_t *st = json_object_get(t->pods, p->uid);
    if (!st) {
        st = json_pack("{s:s, s:s, s:f, s:b, s:f, s:f, s:f, s:b}", "ns", p->ns, "gang", p->gang,
                       "queued", -1.0, "had_gates", 0, "held", -1.0, "released", -1.0, "bound",
                       -1.0, "done", 0);
        if (!st || json_object_set_new(t->pods, p->uid, st) < 0)
            return tm_err_set(err, "out of memory tracking pod %s/%s", p->ns, p->name);
    }
    const char *was = json_string_value(json_object_get(st, "gang"));
    if (was && strcmp(was, p->gang) != 0) {
        /* the pod-group label is mutable: leave the old gang, or a pod relabelled again and
         * again would leave a gang behind each time (memory without bound, a gang never whole) */
        gang_leave(t, p->ns, was, p->uid);
        json_object_set_new(st, "gang", json_string(p->gang));
    }
    json_object_set_new(st, "group", json_string(p->group));
    json_object_set_new(st, "cpu", json_real((double)p->cpu_milli));
    json_object_set_new(st, "mem", json_real((double)p->mem_bytes));
    double queued = num(st, "queued");
    if (p->gated) {
        json_object_set_new(st, "had_gates", json_true());
        queued = -1;
        if (p->held && num(st, "held") < 0) { /* joined tarema-scheduler's queue now */
            json_object_set_new(st, "held", json_real(p->bound >= 0 ? fmin(now, p->bound) : now));
            /* ASA's point, when the planner released it before (release on start) */
            if (p->asa_at >= floor(p->created))
                json_object_set_new(st, "asa", json_real(p->asa_at));
        }
    } else if (queued < 0) {
        if (num(st, "held") >= 0) {
            /* queued since it was held; released now (or when bound, if seen only then) */
            double released = p->bound >= 0 ? fmin(now, p->bound) : now;
            queued = num(st, "held");
            /* released before ASA's point (the planner's release on start): what ASA learns is
             * the wait of a request that joins at its point, so counted from there, or from the
             * release when the predecessors ended before it (ASA's rule would have released it
             * then). Only ever later than when it was seen held: a shorter wait. */
            json_t *asa = json_object_get(st, "asa");
            if (asa && json_real_value(asa) > queued)
                queued = fmin(json_real_value(asa), released);
            json_object_set_new(st, "released", json_real(released));
        } else if (queued_at_plausible(p, now))
            queued = p->queued_at; /* written by this feed before a restart */
        else if (json_is_true(json_object_get(st, "had_gates")))
            queued = p->bound >= 0 ? fmin(now, p->bound) : now; /* first seen ungated */
        else
            queued = p->created;
    }
    json_object_set_new(st, "queued", json_real(queued));
    json_object_set_new(st, "bound", json_real(p->bound));
    if (p->gang[0]) {
        char gid[400];
        gang_id(p->ns, p->gang, gid, sizeof gid);
        json_t *g = json_object_get(t->gangs, gid);
        if (!g) {
            g = json_pack("{s:{}, s:b}", "members", "done", 0);
            json_object_set_new(t->gangs, gid, g);
        }
        json_object_set_new(json_object_get(g, "members"), p->uid, json_true());
        if (!t->synced || p->bound < 0 || json_is_true(json_object_get(g, "done")))
            return 0;
        int rc = gang_complete(t, gid, g, now, obs, err);
        if (rc == 1)
            json_object_set_new(g, "done", json_true());
        return rc;
    }
    if (p->bound < 0 || json_is_true(json_object_get(st, "done")) || queued < 0)
        return 0;
    json_object_set_new(st, "done", json_true());
    if (p->bound < now - LAB_WAITS_RECENT_S)
        return 0;
    obs->key = probe;
    snprintf(obs->request_id, sizeof obs->request_id, "pod:%s", p->uid);
    obs->wait_s = fmax(0, p->bound - queued);
    obs->members = NULL;
    obs->censored = bound_at_release(num(st, "released"), p->bound);
    return 1;
}

int lab_waits_tracker_synced(lab_waits_tracker *t, double now, lab_waits_obs *obs, int max) {
    t->synced = true;
    int n = 0;
    const char *gid;
    json_t *g;
    json_object_foreach(t->gangs, gid, g) {
        if (n == max)
            break;
        if (json_is_true(json_object_get(g, "done")))
            continue;
        int rc = gang_complete(t, gid, g, now, &obs[n], NULL);
        if (rc == 1) {
            json_object_set_new(g, "done", json_true());
            n++;
        }
    }
    return n;
}

void lab_waits_tracker_delete(lab_waits_tracker *t, const lab_waits_pod *p) {
    /* the gang it was tracked in (its label may have changed since) */
    const json_t *st = json_object_get(t->pods, p->uid);
    gang_leave(t, p->ns, st ? json_string_value(json_object_get(st, "gang")) : p->gang, p->uid);
    json_object_del(t->pods, p->uid);
}

void lab_waits_tracker_counts(const lab_waits_tracker *t, size_t *pods, size_t *gangs) {
    *pods = json_object_size(t->pods);
    *gangs = json_object_size(t->gangs);
}

int lab_waits_tracker_pending(const lab_waits_tracker *t, const lab_waits_pod *p, asa_key *key,
                              double *queued_at) {
    const json_t *st = json_object_get(t->pods, p->uid);
    if (!st || p->bound >= 0 || p->gated || num(st, "queued") < 0)
        return 0;
    if (!p->gang[0]) {
        *queued_at = num(st, "queued");
        return asa_key_make(key, p->ns, p->group, 1, p->cpu_milli, p->mem_bytes, NULL) == 0;
    }
    char gid[400];
    gang_id(p->ns, p->gang, gid, sizeof gid);
    gang_sum s; /* a member still gated: the gang is not queued yet */
    if (!gang_sum_of(t, json_object_get(t->gangs, gid), false, &s) || s.n == 0)
        return 0;
    *queued_at = s.queued;
    return asa_key_make(key, p->ns, p->group, s.n, s.cpu, s.mem, NULL) == 0;
}
