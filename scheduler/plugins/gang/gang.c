/* gang.c: gang placement on one snapshot and the gang registry (gang.h). */
#include "scheduler/plugins/gang/gang.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- placement ------------------------------------------------------------------------------ */

/* Ranks of the snapshot's groups (0 = preferred) by the best score of a feasible node in each,
 * from the last schedule call; groups without a feasible node come last, in index order. */
static void rank_groups(sched_framework *fw, sched_snapshot *s, int *rank, size_t ng) {
    int64_t *best = malloc((ng ? ng : 1) * sizeof *best);
    bool *has = calloc(ng ? ng : 1, sizeof *has);
    size_t nn = sched_snapshot_node_count(s);
    for (size_t i = 0; best && has && i < nn; i++) {
        int64_t score;
        if (sched_framework_node_status(fw, i, NULL, &score) != SCHED_FILTER_OK)
            continue;
        int g = sched_snapshot_node(s, i)->group;
        if (g < 0 || (size_t)g >= ng)
            continue;
        if (!has[g] || score > best[g])
            best[g] = score;
        has[g] = true;
    }
    /* selection by rank: ng is small (a handful of node groups) */
    bool *done = calloc(ng ? ng : 1, sizeof *done);
    for (size_t r = 0; r < ng; r++) {
        int pick = -1;
        for (size_t g = 0; g < ng; g++) {
            if (done && done[g])
                continue;
            if (pick < 0) {
                pick = (int)g;
                continue;
            }
            bool hg = has && has[g], hp = has && has[pick];
            if (hg && (!hp || best[g] > best[pick]))
                pick = (int)g;
        }
        if (pick < 0)
            break;
        rank[pick] = (int)r;
        if (done)
            done[pick] = true;
        else
            rank[pick] = (int)pick;
    }
    free(done);
    free(best);
    free(has);
}

/* Schedules p and chooses among its feasible nodes: only group `only` when >= 0, else the
 * feasible node of the best-ranked group; within a group the best score, ties by name. *node
 * -1 when none. 0 or -1 with err. */
static int choose(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int64_t now_ms,
                  int only, const int *rank, size_t ng, int *node, tm_err *err) {
    sched_decision d;
    *node = -1;
    if (sched_framework_schedule(fw, s, p, now_ms, &d, err))
        return -1;
    if (d.node < 0)
        return 0;
    size_t nn = sched_snapshot_node_count(s);
    int best = -1, best_rank = 0;
    int64_t best_score = 0;
    for (size_t i = 0; i < nn; i++) {
        int64_t score;
        if (sched_framework_node_status(fw, i, NULL, &score) != SCHED_FILTER_OK)
            continue;
        const sched_node *n = sched_snapshot_node(s, i);
        int g = n->group;
        if (only >= 0 && g != only)
            continue;
        int r = (g >= 0 && (size_t)g < ng) ? rank[g] : (int)ng;
        bool better = best < 0 || r < best_rank || (r == best_rank && score > best_score) ||
                      (r == best_rank && score == best_score &&
                       n->name_rank < sched_snapshot_node(s, (size_t)best)->name_rank);
        if (better) {
            best = (int)i;
            best_rank = r;
            best_score = score;
        }
    }
    *node = best;
    return 0;
}

/* Takes the reservations of pods[i] with nodes[i] >= 0 back through the framework's Unreserve
 * (plugins that reserved something for the pod undo it too); forget: set nodes[i] to -1. */
static void unreserve(sched_framework *fw, sched_snapshot *s, sched_pod *const *pods, size_t n,
                      int *nodes, bool forget, int64_t now_ms) {
    for (size_t i = 0; i < n; i++) {
        if (nodes[i] >= 0)
            sched_framework_unreserve(fw, s, pods[i], nodes[i], now_ms);
        if (forget)
            nodes[i] = -1;
    }
}

static void undo(sched_framework *fw, sched_snapshot *s, sched_pod *const *pods, size_t n,
                 int *nodes, int64_t now_ms) {
    unreserve(fw, s, pods, n, nodes, true, now_ms);
}

/* Places every pod inside group g (all n or nothing). 1 placed, 0 not, -1 error. */
static int place_in_group(sched_framework *fw, sched_snapshot *s, sched_pod *const *pods, size_t n,
                          int64_t now_ms, int g, const int *rank, size_t ng, int *nodes,
                          tm_err *err) {
    for (size_t i = 0; i < n; i++) {
        int node;
        if (choose(fw, s, pods[i], now_ms, g, rank, ng, &node, err) ||
            (node >= 0 && sched_framework_reserve(fw, s, pods[i], node, err))) {
            undo(fw, s, pods, n, nodes, now_ms);
            return -1;
        }
        if (node < 0) {
            undo(fw, s, pods, n, nodes, now_ms);
            return 0;
        }
        nodes[i] = node;
    }
    return 1;
}

int sched_gang_place(sched_framework *fw, sched_snapshot *s, sched_pod *const *pods, size_t n,
                     size_t need, int64_t now_ms, bool keep, sched_gang_placement *out,
                     tm_err *err) {
    out->placed = 0;
    out->ok = false;
    out->group = -1;
    out->spilled = false;
    out->message[0] = '\0';
    for (size_t i = 0; i < n; i++)
        out->nodes[i] = -1;
    if (n == 0 || need > n) {
        snprintf(out->message, sizeof out->message,
                 "%zu pod(s) waiting, the gang needs %zu more to reach minMember", n, need);
        return 0;
    }
    sched_snapshot_refresh(s);
    size_t ng = sched_snapshot_group_count(s);
    int *rank = calloc(ng ? ng : 1, sizeof *rank);
    if (!rank)
        return tm_err_set(err, "out of memory");
    /* The first pod's view ranks the groups (every pod of a gang is usually the same task). */
    int first;
    if (choose(fw, s, pods[0], now_ms, -1, rank, 0, &first, err)) {
        free(rank);
        return -1;
    }
    rank_groups(fw, s, rank, ng);
    int rc = 0;
    char first_fail[800] = "";
    /* 1. The whole gang inside one group, best-ranked group first. */
    if (first >= 0 && ng > 1) {
        for (size_t r = 0; r < ng && !out->ok; r++) {
            int g = -1;
            for (size_t k = 0; k < ng; k++)
                if (rank[k] == (int)r)
                    g = (int)k;
            if (g < 0)
                continue;
            int got = place_in_group(fw, s, pods, n, now_ms, g, rank, ng, out->nodes, err);
            if (got < 0) {
                rc = -1;
                goto done;
            }
            if (got == 1) {
                out->ok = true;
                out->placed = n;
                out->group = g;
            }
        }
    }
    /* 2. Spill: each pod takes the best-ranked group that still has room. */
    if (!out->ok) {
        for (size_t i = 0; i < n; i++) {
            int node;
            if (choose(fw, s, pods[i], now_ms, -1, rank, ng, &node, err) ||
                (node >= 0 && sched_framework_reserve(fw, s, pods[i], node, err))) {
                undo(fw, s, pods, n, out->nodes, now_ms);
                out->placed = 0;
                rc = -1;
                goto done;
            }
            if (node < 0) {
                if (!first_fail[0]) {
                    char fit[600];
                    sched_framework_fit_message(fw, s, fit, sizeof fit);
                    snprintf(first_fail, sizeof first_fail, "pod %s/%s: %s", pods[i]->ns,
                             pods[i]->name, fit);
                }
                continue;
            }
            out->nodes[i] = node;
            out->placed++;
        }
        out->ok = out->placed >= need;
        int g0 = -1;
        for (size_t i = 0; i < n; i++) {
            if (out->nodes[i] < 0)
                continue;
            int g = sched_snapshot_node(s, (size_t)out->nodes[i])->group;
            if (g0 < 0)
                g0 = g;
            else if (g != g0)
                out->spilled = true;
        }
        out->group = out->spilled ? -1 : g0;
        if (!out->ok) {
            snprintf(out->message, sizeof out->message,
                     "only %zu of the %zu pod(s) fit at once, %zu needed: %s", out->placed, n, need,
                     first_fail);
            undo(fw, s, pods, n, out->nodes, now_ms);
            out->placed = 0;
        }
    }
    if (out->ok && !keep)
        unreserve(fw, s, pods, n, out->nodes, false, now_ms); /* the choices stay in out->nodes */
done:
    free(rank);
    return rc;
}

bool sched_gang_min_resources_fit(sched_snapshot *s, const sched_gang_spec *spec, char *why,
                                  size_t cap) {
    if (cap)
        why[0] = '\0';
    if (!spec || spec->n_min_res == 0)
        return true;
    sched_node_cols c;
    sched_snapshot_node_cols(s, &c);
    for (size_t r = 0; r < spec->n_min_res; r++) {
        const sched_min_resource *m = &spec->min_res[r];
        int slot = sched_snapshot_resource_find(s, m->name);
        int64_t free_total = 0;
        for (size_t i = 0; slot >= 0 && i < c.n; i++) {
            if (c.flags[i] & (SCHED_NODE_NOT_READY | SCHED_NODE_UNSCHEDULABLE))
                continue;
            if (c.free[slot][i] > 0)
                free_total += c.free[slot][i];
        }
        int xid = slot < 0 ? sched_snapshot_xres_find(s, m->name) : -1;
        for (size_t i = 0; xid >= 0 && i < c.n; i++) { /* a name kept sparsely (snapshot.h) */
            if (c.flags[i] & (SCHED_NODE_NOT_READY | SCHED_NODE_UNSCHEDULABLE))
                continue;
            const sched_node *n = sched_snapshot_node(s, i);
            int j = sched_xres_index(n->xalloc, n->n_xalloc, (uint32_t)xid);
            if (j >= 0 && n->xalloc[j].v > n->xused[j])
                free_total += n->xalloc[j].v - n->xused[j];
        }
        if (free_total < m->amount) {
            snprintf(why, cap, "minResources %s %lld exceeds the free capacity %lld%s", m->name,
                     (long long)m->amount, (long long)free_total,
                     strcmp(m->name, "cpu") == 0 ? " (millicores)" : "");
            return false;
        }
    }
    return true;
}

/* ---- registry ------------------------------------------------------------------------------- */

typedef struct uid_ent {
    const char *uid; /* the member's string */
    sched_gang *g;
} uid_ent;

typedef struct wl_ent {
    char *ns, *name;
    sched_workload w;
    char *error;
} wl_ent;

struct sched_gang_registry {
    sched_gang **gangs;
    size_t n, cap;
    void *uids; /* tsearch tree of uid_ent */
    wl_ent *wls;
    size_t n_wls, cap_wls;
};

static int cmp_uid(const void *a, const void *b) {
    return strcmp(((const uid_ent *)a)->uid, ((const uid_ent *)b)->uid);
}

const char *sched_gang_phase_name(sched_gang_phase p) {
    static const char *const names[] = {"Pending", "Scheduling", "Scheduled",
                                        "Running", "Finished",   "Failed"};
    return (unsigned)p < 6 ? names[p] : "Unknown";
}

sched_gang_registry *sched_gang_registry_new(void) {
    return calloc(1, sizeof(sched_gang_registry));
}

static void gang_free(sched_gang *g) {
    if (!g)
        return;
    for (size_t i = 0; i < g->n_members; i++) {
        free(g->members[i].uid);
        free(g->members[i].name);
    }
    free(g->members);
    sched_gang_spec_free(&g->spec);
    free(g->spec_error);
    free(g->key);
    free(g->ns);
    free(g->owner);
    free(g->group);
    free(g->replica);
    free(g);
}

static void wl_free(wl_ent *e) {
    free(e->ns);
    free(e->name);
    sched_workload_free(&e->w);
    free(e->error);
}

static void noop_free(void *p) {
    free(p);
}

void sched_gang_registry_free(sched_gang_registry *r) {
    if (!r)
        return;
    tdestroy(r->uids, noop_free);
    for (size_t i = 0; i < r->n; i++)
        gang_free(r->gangs[i]);
    free(r->gangs);
    for (size_t i = 0; i < r->n_wls; i++)
        wl_free(&r->wls[i]);
    free(r->wls);
    free(r);
}

size_t sched_gang_registry_count(const sched_gang_registry *r) {
    return r->n;
}

sched_gang *sched_gang_registry_at(sched_gang_registry *r, size_t i) {
    return i < r->n ? r->gangs[i] : NULL;
}

sched_gang *sched_gang_registry_get(sched_gang_registry *r, const char *key) {
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->gangs[i]->key, key) == 0)
            return r->gangs[i];
    return NULL;
}

sched_gang *sched_gang_registry_of(sched_gang_registry *r, const char *uid) {
    uid_ent k = {uid, NULL};
    uid_ent **e = tfind(&k, &r->uids, cmp_uid);
    return e ? (*e)->g : NULL;
}

static const wl_ent *find_wl(const sched_gang_registry *r, const char *ns, const char *name) {
    for (size_t i = 0; i < r->n_wls; i++)
        if (strcmp(r->wls[i].ns, ns) == 0 && strcmp(r->wls[i].name, name) == 0)
            return &r->wls[i];
    return NULL;
}

/* Applies a Workload's declaration (or its absence) to one of its gangs. */
static int apply_wl(sched_gang *g, const wl_ent *e) {
    free(g->spec_error);
    g->spec_error = NULL;
    sched_gang_spec_free(&g->spec);
    g->declared = false;
    g->basic = false;
    if (!e)
        return 0;
    char msg[1024];
    if (e->error) {
        snprintf(msg, sizeof msg, "%s", e->error);
    } else {
        const sched_workload_group *wg = sched_workload_group_find(&e->w, g->group);
        if (!wg) {
            snprintf(msg, sizeof msg, "Workload %s/%s has no podGroup %s", g->ns, g->owner,
                     g->group);
        } else {
            g->declared = true;
            g->basic = !wg->gang;
            g->spec.min_member = wg->gang ? wg->min_count : 1;
            return 0;
        }
    }
    return (g->spec_error = strdup(msg)) ? 0 : -1;
}

static sched_gang *ensure(sched_gang_registry *r, const sched_gang_ref *ref, int64_t now_ms) {
    char key[SCHED_GANG_KEY_MAX];
    sched_gang_ref_key(ref, key, sizeof key);
    sched_gang *g = sched_gang_registry_get(r, key);
    if (g)
        return g;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        sched_gang **v = realloc(r->gangs, nc * sizeof *v);
        if (!v)
            return NULL;
        r->gangs = v;
        r->cap = nc;
    }
    g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->kind = ref->kind;
    g->key = strdup(key);
    g->ns = strdup(ref->ns);
    g->owner = strdup(ref->owner);
    g->group = strdup(ref->group ? ref->group : "");
    g->replica = strdup(ref->replica ? ref->replica : "");
    g->first_seen_ms = now_ms;
    if (!g->key || !g->ns || !g->owner || !g->group || !g->replica ||
        (g->kind == SCHED_GANG_WORKLOAD && apply_wl(g, find_wl(r, g->ns, g->owner)))) {
        gang_free(g);
        return NULL;
    }
    r->gangs[r->n++] = g;
    return g;
}

static sched_gang_member *member_of(sched_gang *g, const char *uid) {
    for (size_t i = 0; i < g->n_members; i++)
        if (strcmp(g->members[i].uid, uid) == 0)
            return &g->members[i];
    return NULL;
}

static void drop_gang_if_empty(sched_gang_registry *r, sched_gang *g) {
    if (g->n_members || g->declared || g->spec_error)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (r->gangs[i] == g) {
            r->gangs[i] = r->gangs[--r->n];
            gang_free(g);
            return;
        }
    }
}

sched_gang *sched_gang_registry_set_member(sched_gang_registry *r, const sched_gang_ref *ref,
                                           const char *uid, const char *name,
                                           sched_gang_pod_state state, int64_t now_ms) {
    sched_gang *old = sched_gang_registry_of(r, uid);
    char key[SCHED_GANG_KEY_MAX];
    sched_gang_ref_key(ref, key, sizeof key);
    if (old && strcmp(old->key, key) != 0)
        sched_gang_registry_remove_member(r, uid);
    sched_gang *g = ensure(r, ref, now_ms);
    if (!g)
        return NULL;
    sched_gang_member *m = member_of(g, uid);
    if (m) {
        m->state = state;
        return g;
    }
    if (g->n_members == g->cap_members) {
        size_t nc = g->cap_members ? g->cap_members * 2 : 8;
        sched_gang_member *v = realloc(g->members, nc * sizeof *v);
        if (!v)
            return NULL;
        g->members = v;
        g->cap_members = nc;
    }
    uid_ent *e = malloc(sizeof *e);
    char *u = strdup(uid), *nm = strdup(name ? name : "");
    if (!e || !u || !nm) {
        free(e);
        free(u);
        free(nm);
        return NULL;
    }
    e->uid = u;
    e->g = g;
    if (!tsearch(e, &r->uids, cmp_uid)) {
        free(e);
        free(u);
        free(nm);
        return NULL;
    }
    if (g->n_members == 0)
        g->first_seen_ms = now_ms;
    sched_gang_member *nmem = &g->members[g->n_members++];
    nmem->uid = u;
    nmem->name = nm;
    nmem->state = state;
    nmem->gated = false; /* sched_gang_registry_set_gated says otherwise */
    return g;
}

void sched_gang_registry_remove_member(sched_gang_registry *r, const char *uid) {
    uid_ent k = {uid, NULL};
    uid_ent **found = tfind(&k, &r->uids, cmp_uid);
    if (!found)
        return;
    uid_ent *e = *found;
    sched_gang *g = e->g;
    tdelete(&k, &r->uids, cmp_uid);
    free(e);
    for (size_t i = 0; i < g->n_members; i++) {
        if (strcmp(g->members[i].uid, uid) == 0) {
            free(g->members[i].uid);
            free(g->members[i].name);
            g->members[i] = g->members[--g->n_members];
            break;
        }
    }
    drop_gang_if_empty(r, g);
}

int sched_gang_registry_finish_member(sched_gang_registry *r, const sched_gang_ref *ref,
                                      const char *uid, sched_gang_pod_state state, int64_t now_ms) {
    sched_gang *g = sched_gang_registry_of(r, uid);
    if (state != SCHED_GANG_POD_SUCCEEDED && state != SCHED_GANG_POD_FAILED) {
        sched_gang_registry_remove_member(r, uid);
        return 0;
    }
    if (!g && !(g = ensure(r, ref, now_ms))) /* finished before we saw it: counted all the same */
        return -1;
    if (state == SCHED_GANG_POD_SUCCEEDED)
        g->done_succeeded++;
    else
        g->done_failed++;
    if (member_of(g, uid))
        sched_gang_registry_remove_member(r, uid); /* drops g too when its owner is gone */
    else
        drop_gang_if_empty(r, g);
    return 0;
}

size_t sched_gang_registry_member_count(const sched_gang_registry *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->gangs[i]->n_members;
    return n;
}

void sched_gang_registry_set_gated(sched_gang_registry *r, const char *uid, bool gated) {
    sched_gang *g = sched_gang_registry_of(r, uid);
    sched_gang_member *m = g ? member_of(g, uid) : NULL;
    if (m)
        m->gated = gated;
}

void sched_gang_registry_set_state(sched_gang_registry *r, const char *uid,
                                   sched_gang_pod_state state) {
    sched_gang *g = sched_gang_registry_of(r, uid);
    sched_gang_member *m = g ? member_of(g, uid) : NULL;
    if (m)
        m->state = state;
}

/* A PodGroup of either API was seen: its declaration replaces the gang's. */
static sched_gang *declare(sched_gang_registry *r, sched_gang_kind kind, const char *ns,
                           const char *name, sched_gang_spec *spec, bool basic, const char *error,
                           int64_t now_ms) {
    sched_gang_ref ref = {kind, ns, name, "", ""};
    sched_gang *g = ensure(r, &ref, now_ms);
    if (!g) {
        if (spec)
            sched_gang_spec_free(spec);
        return NULL;
    }
    sched_gang_spec_free(&g->spec);
    free(g->spec_error);
    g->spec_error = NULL;
    g->declared = spec != NULL && !error;
    g->basic = false;
    if (g->declared) {
        g->spec = *spec;
        g->basic = basic;
        memset(spec, 0, sizeof *spec);
    } else {
        if (spec)
            sched_gang_spec_free(spec);
        g->spec_error = strdup(error ? error : "invalid PodGroup");
        if (!g->spec_error)
            return NULL;
    }
    return g;
}

sched_gang *sched_gang_registry_podgroup(sched_gang_registry *r, const char *ns, const char *name,
                                         sched_gang_spec *spec, const char *error, int64_t now_ms) {
    return declare(r, SCHED_GANG_PODGROUP, ns, name, spec, false, error, now_ms);
}

sched_gang *sched_gang_registry_native(sched_gang_registry *r, const char *ns, const char *name,
                                       sched_gang_spec *spec, bool basic, const char *error,
                                       int64_t now_ms) {
    return declare(r, SCHED_GANG_NATIVE, ns, name, spec, basic, error, now_ms);
}

int sched_gang_registry_workload(sched_gang_registry *r, const char *ns, const char *name,
                                 sched_workload *w, const char *error) {
    wl_ent *e = (wl_ent *)find_wl(r, ns, name);
    if (!e) {
        if (r->n_wls == r->cap_wls) {
            size_t nc = r->cap_wls ? r->cap_wls * 2 : 8;
            wl_ent *v = realloc(r->wls, nc * sizeof *v);
            if (!v)
                goto oom;
            r->wls = v;
            r->cap_wls = nc;
        }
        e = &r->wls[r->n_wls];
        memset(e, 0, sizeof *e);
        e->ns = strdup(ns);
        e->name = strdup(name);
        if (!e->ns || !e->name) {
            wl_free(e);
            goto oom;
        }
        r->n_wls++;
    }
    sched_workload_free(&e->w);
    free(e->error);
    e->error = NULL;
    if (w && !error) {
        e->w = *w;
        memset(w, 0, sizeof *w);
    } else {
        if (w)
            sched_workload_free(w);
        if (!(e->error = strdup(error ? error : "invalid Workload")))
            return -1;
    }
    for (size_t i = 0; i < r->n; i++) {
        sched_gang *g = r->gangs[i];
        if (g->kind == SCHED_GANG_WORKLOAD && strcmp(g->ns, ns) == 0 &&
            strcmp(g->owner, name) == 0 && apply_wl(g, e))
            return -1;
    }
    return 0;
oom:
    if (w)
        sched_workload_free(w);
    return -1;
}

void sched_gang_registry_forget_owner(sched_gang_registry *r, sched_gang_kind kind, const char *ns,
                                      const char *name) {
    if (kind == SCHED_GANG_WORKLOAD) {
        for (size_t i = 0; i < r->n_wls; i++) {
            if (strcmp(r->wls[i].ns, ns) == 0 && strcmp(r->wls[i].name, name) == 0) {
                wl_free(&r->wls[i]);
                r->wls[i] = r->wls[--r->n_wls];
                break;
            }
        }
    }
    for (size_t i = 0; i < r->n;) {
        sched_gang *g = r->gangs[i];
        if (g->kind == kind && strcmp(g->ns, ns) == 0 && strcmp(g->owner, name) == 0) {
            sched_gang_spec_free(&g->spec);
            free(g->spec_error);
            g->spec_error = NULL;
            g->declared = false;
            g->basic = false;
            size_t before = r->n;
            drop_gang_if_empty(r, g);
            if (r->n < before)
                continue; /* the last gang moved into slot i */
        }
        i++;
    }
}

size_t sched_gang_count(const sched_gang *g, sched_gang_pod_state state) {
    size_t c = 0;
    for (size_t i = 0; i < g->n_members; i++)
        c += g->members[i].state == state;
    return c;
}

size_t sched_gang_gated_count(const sched_gang *g) {
    size_t c = 0;
    for (size_t i = 0; i < g->n_members; i++)
        c += g->members[i].gated && g->members[i].state != SCHED_GANG_POD_FAILED;
    return c;
}

bool sched_gang_waits_for_gates(const sched_gang *g, char *why, size_t cap) {
    size_t gated = sched_gang_gated_count(g);
    if (gated == 0)
        return false;
    size_t live = g->n_members - sched_gang_count(g, SCHED_GANG_POD_FAILED) + g->done_succeeded;
    size_t ungated = live - gated;
    size_t min = g->spec.min_member > 0 ? (size_t)g->spec.min_member : 1;
    if (ungated >= min)
        return false;
    snprintf(why, cap, "waiting for %zu gated member(s): %zu of minMember %zu ungated", gated,
             ungated, min);
    return true;
}

size_t sched_gang_succeeded(const sched_gang *g) {
    size_t n = sched_gang_count(g, SCHED_GANG_POD_SUCCEEDED) + g->done_succeeded;
    return g->seen_succeeded > 0 && (size_t)g->seen_succeeded > n ? (size_t)g->seen_succeeded : n;
}

size_t sched_gang_failed(const sched_gang *g) {
    size_t n = sched_gang_count(g, SCHED_GANG_POD_FAILED) + g->done_failed;
    return g->seen_failed > 0 && (size_t)g->seen_failed > n ? (size_t)g->seen_failed : n;
}

size_t sched_gang_placed_count(const sched_gang *g) {
    size_t c = g->done_succeeded;
    for (size_t i = 0; i < g->n_members; i++)
        c += g->members[i].state != SCHED_GANG_POD_PENDING &&
             g->members[i].state != SCHED_GANG_POD_FAILED;
    return c;
}

sched_gang_phase sched_gang_phase_of(const sched_gang *g) {
    if (!g->declared && g->spec_error)
        return SCHED_GANG_FAILED;
    size_t min = g->spec.min_member > 0 ? (size_t)g->spec.min_member : 1;
    size_t running = sched_gang_count(g, SCHED_GANG_POD_RUNNING);
    size_t succeeded = sched_gang_succeeded(g);
    size_t failed = sched_gang_failed(g);
    size_t bound = sched_gang_count(g, SCHED_GANG_POD_BOUND) + running + succeeded;
    if (failed > 0 && running == 0)
        return SCHED_GANG_FAILED;
    if (succeeded >= min && running == 0)
        return SCHED_GANG_FINISHED;
    if (running + succeeded >= min)
        return SCHED_GANG_RUNNING;
    if (bound >= min)
        return SCHED_GANG_SCHEDULED;
    if (g->attempts > 0 || sched_gang_count(g, SCHED_GANG_POD_ASSUMED) > 0)
        return SCHED_GANG_SCHEDULING;
    return SCHED_GANG_PENDING;
}

bool sched_gang_active(const sched_gang *g) {
    return g && g->declared && !g->basic;
}

bool sched_gang_timed_out(const sched_gang *g, int64_t now_ms) {
    return g->spec.timeout_ms > 0 && g->wait_since_ms > 0 &&
           now_ms - g->wait_since_ms >= g->spec.timeout_ms;
}

json_t *sched_gang_describe(const sched_gang *g) {
    json_t *m =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "pending",
                  (json_int_t)sched_gang_count(g, SCHED_GANG_POD_PENDING), "assumed",
                  (json_int_t)sched_gang_count(g, SCHED_GANG_POD_ASSUMED), "bound",
                  (json_int_t)sched_gang_count(g, SCHED_GANG_POD_BOUND), "running",
                  (json_int_t)sched_gang_count(g, SCHED_GANG_POD_RUNNING), "succeeded",
                  (json_int_t)sched_gang_succeeded(g), "failed", (json_int_t)sched_gang_failed(g));
    if (!m)
        return NULL;
    const char *msg = g->spec_error ? g->spec_error : g->message;
    if (!g->declared && !g->spec_error)
        msg = g->kind == SCHED_GANG_WORKLOAD ? "waiting: the Workload does not exist (yet)"
                                             : "waiting: the PodGroup does not exist (yet)";
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:i, s:I, s:s, s:o, s:i, s:s}", "gang", g->key,
                     "kind", sched_gang_kind_object(g->kind), "name", g->owner, "podGroup",
                     g->group, "replicaKey", g->replica, "declared", g->declared, "minMember",
                     (int)g->spec.min_member, "timeoutSeconds",
                     (json_int_t)(g->spec.timeout_ms / 1000), "phase",
                     sched_gang_phase_name(sched_gang_phase_of(g)), "members", m, "attempts",
                     g->attempts, "message", msg);
}

const char *sched_gang_try_name(sched_gang_try t) {
    static const char *const names[] = {"scheduled", "waiting", "unschedulable", "error"};
    return (unsigned)t < 4 ? names[t] : "error";
}

sched_gang_try sched_gang_try_place(sched_framework *fw, sched_snapshot *s, sched_gang *g,
                                    sched_pod *const *pods, size_t n, int64_t now_ms, bool keep,
                                    sched_gang_placement *pl, char *why, size_t cap) {
    if (cap)
        why[0] = '\0';
    pl->ok = false;
    pl->placed = 0;
    for (size_t i = 0; i < n; i++)
        pl->nodes[i] = -1;
    if (g->spec_error) {
        snprintf(why, cap, "%s", g->spec_error);
        return SCHED_GANG_TRY_WAITING;
    }
    if (!g->declared) {
        snprintf(why, cap, "waiting for %s %s/%s to exist", sched_gang_kind_object(g->kind), g->ns,
                 g->owner);
        return SCHED_GANG_TRY_WAITING;
    }
    if (sched_gang_waits_for_gates(g, why, cap))
        return SCHED_GANG_TRY_WAITING;
    size_t placed_before = sched_gang_placed_count(g);
    size_t min = (size_t)g->spec.min_member;
    size_t need = placed_before >= min ? 0 : min - placed_before;
    if (need > n) {
        snprintf(why, cap,
                 "%zu pod(s) waiting and %zu placed, minMember %zu: waiting for %zu more pod(s)", n,
                 placed_before, min, need - n);
        return SCHED_GANG_TRY_WAITING;
    }
    /* minResources: not worth trying when the free capacity cannot hold it */
    if (need > 0 && !sched_gang_min_resources_fit(s, &g->spec, why, cap))
        return SCHED_GANG_TRY_UNSCHEDULABLE;
    tm_err err = {0};
    if (sched_gang_place(fw, s, pods, n, need, now_ms, keep, pl, &err)) {
        snprintf(why, cap, "%s", err.msg);
        return SCHED_GANG_TRY_ERROR;
    }
    if (!pl->ok) {
        snprintf(why, cap, "%s", pl->message);
        return SCHED_GANG_TRY_UNSCHEDULABLE;
    }
    if (!keep)
        return SCHED_GANG_TRY_SCHEDULED;
    /* Permit on every placed member, while the gang is marked as placing (the Gang plugin
     * allows it then): any other plugin's reject or wait fails the whole gang. */
    g->placing = true;
    sched_gang_try t = SCHED_GANG_TRY_SCHEDULED;
    size_t i;
    for (i = 0; i < n && t == SCHED_GANG_TRY_SCHEDULED; i++) {
        if (pl->nodes[i] < 0)
            continue;
        char msg[512];
        sched_status st = sched_framework_permit(fw, s, pods[i], pl->nodes[i], now_ms, NULL, msg,
                                                 sizeof msg, &err);
        if (st == SCHED_STATUS_OK)
            continue;
        if (st == SCHED_STATUS_WAIT) {
            /* a gang is decided in one cycle: a member cannot wait while the others are bound */
            sched_framework_waiting_forget(fw, pods[i]->uid);
            snprintf(msg, sizeof msg, "a plugin asked pod %s/%s to wait in Permit", pods[i]->ns,
                     pods[i]->name);
        } else if (st == SCHED_STATUS_ERROR) {
            snprintf(msg, sizeof msg, "%.500s", err.msg);
        }
        /* a rejected member was unreserved by the framework already */
        if (st != SCHED_STATUS_UNSCHEDULABLE)
            sched_framework_unreserve(fw, s, pods[i], pl->nodes[i], now_ms);
        pl->nodes[i] = -1;
        snprintf(why, cap, "Permit: %s", msg);
        t = st == SCHED_STATUS_ERROR ? SCHED_GANG_TRY_ERROR : SCHED_GANG_TRY_UNSCHEDULABLE;
    }
    g->placing = false;
    if (t != SCHED_GANG_TRY_SCHEDULED) {
        for (size_t k = 0; k < n; k++) {
            if (pl->nodes[k] >= 0)
                sched_framework_unreserve(fw, s, pods[k], pl->nodes[k], now_ms);
            pl->nodes[k] = -1;
        }
        pl->ok = false;
        pl->placed = 0;
    }
    return t;
}
