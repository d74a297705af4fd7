/* resv_plugin.c: the Reservation Filter plugin (resv_plugin.h). */
#include "scheduler/plugins/reservation/resv_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"

/* PreFilter's details: the held reservations are not in the plan yet; the pod's own reservation
 * is known but not admitted yet; its window has not opened yet */
#define RESV_NOT_RESTORED  100
#define RESV_WAIT_ADMITTED 101
#define RESV_WAIT_WINDOW   102

/* An owner's pod this plugin saw reserved on a node (Reserve), until the snapshot no longer has
 * it there: what its reservations' holds count as used even before the caller counts it. */
typedef struct placed_pod {
    char *uid, *node;
    sched_resources req;
    char **keys; /* the reservations it belonged to when reserved */
    size_t n_keys;
} placed_pod;

typedef struct plugin_state {
    resv_plan *plan;
    resv_plugin_source src;
    /* per cycle (PreFilter): the keys of the reservations the pod belongs to, borrowed from the
     * caller for the cycle */
    const char **owned;
    size_t n_owned, cap_owned;
    bool oom;
    /* the pod being checked in PreFilter (for the each callback) */
    const char *ns;
    const json_t *labels;
    const char *workload;
    int64_t now_ms;
    /* of the reservations the pod belongs to: how many have their window open (or passed), how
     * many are admitted with the window ahead, how many are not admitted yet */
    size_t n_open, n_ahead, n_unadmitted;
    /* owners' pods reserved by this framework and still on their node in the snapshot */
    placed_pod *placed;
    size_t n_placed, cap_placed;
} plugin_state;

static void placed_clear(placed_pod *pp) {
    free(pp->uid);
    free(pp->node);
    for (size_t i = 0; i < pp->n_keys; i++)
        free(pp->keys[i]);
    free(pp->keys);
}

static void placed_drop(plugin_state *st, size_t i) {
    placed_clear(&st->placed[i]);
    st->placed[i] = st->placed[--st->n_placed];
}

/* Forgets the placed pods the snapshot no longer has on their node (ended, deleted, an
 * assumption undone) and those whose reservations all left the plan. */
static void placed_purge(plugin_state *st, const sched_snapshot *s) {
    for (size_t i = 0; i < st->n_placed;) {
        const placed_pod *pp = &st->placed[i];
        const char *on = sched_snapshot_pod_node(s, pp->uid);
        bool held = false;
        for (size_t k = 0; k < pp->n_keys && !held; k++)
            held = resv_plan_has(st->plan, pp->keys[k]);
        if (!on || strcmp(on, pp->node) != 0 || !held)
            placed_drop(st, i);
        else
            i++;
    }
}

/* resv_used_adjust_fn: the hold's use is at least what the owner's pods placed here take (the
 * caller's count may not include them yet; taking the larger of the two counts nothing twice). */
static void adjust_used(void *ud, const char *key, const char *node, sched_resources *used) {
    const plugin_state *st = ud;
    sched_resources mine = {0};
    for (size_t i = 0; i < st->n_placed; i++) {
        const placed_pod *pp = &st->placed[i];
        if (strcmp(pp->node, node) != 0)
            continue;
        for (size_t k = 0; k < pp->n_keys; k++)
            if (strcmp(pp->keys[k], key) == 0) {
                for (int r = 0; r < SCHED_RES_MAX; r++)
                    mine.v[r] += pp->req.v[r];
                break;
            }
    }
    for (int r = 0; r < SCHED_RES_MAX; r++)
        if (mine.v[r] > used->v[r])
            used->v[r] = mine.v[r];
}

static bool cycle_owner(void *ud, const char *key) {
    const plugin_state *st = ud;
    for (size_t i = 0; i < st->n_owned; i++)
        if (strcmp(st->owned[i], key) == 0)
            return true;
    return false;
}

static void collect_owned(void *arg, const char *key, const reservation *r) {
    plugin_state *st = arg;
    if (!r || !reservation_owns(r, st->ns, st->labels, st->workload))
        return;
    int64_t start, end;
    if (!resv_plan_window(st->plan, key, &start, &end)) {
        /* known, not held: Pending (admission comes with the next tick) counts; one that
         * failed, ended or is being deleted does not concern the pod any more */
        if (r->phase == RESV_PENDING && !r->deleting)
            st->n_unadmitted++;
        return;
    }
    /* the admitted window, which the holds keep, not the spec's (which may have moved since:
     * the planner patches it when its plan moves) */
    if (st->now_ms < start)
        st->n_ahead++;
    else
        st->n_open++;
    if (st->n_owned == st->cap_owned) {
        size_t nc = st->cap_owned ? st->cap_owned * 2 : 4;
        const char **no = realloc(st->owned, nc * sizeof *no);
        if (!no) {
            st->oom = true;
            return;
        }
        st->owned = no;
        st->cap_owned = nc;
    }
    st->owned[st->n_owned++] = key;
}

/* The reservations pod belongs to, counted into st (n_open, n_ahead, n_unadmitted; owned). false
 * on OOM. */
static bool collect_for(plugin_state *st, const sched_pod *pod, int64_t now_ms) {
    st->n_owned = 0;
    st->ns = pod->ns;
    st->labels = pod->pod_labels;
    st->workload = NULL;
    st->now_ms = now_ms;
    st->n_open = st->n_ahead = st->n_unadmitted = 0;
    if (st->src.identity)
        st->src.identity(st->src.ud, pod, &st->labels, &st->workload);
    st->oom = false;
    st->src.each(st->src.ud, collect_owned, st);
    return !st->oom;
}

/* PreEnqueue: an owner's pod whose reservation the scheduler knows but has not admitted yet
 * (they were created together: the admission comes with the controller's next tick) waits
 * outside the queue, quietly (WAIT: the live loop posts no FailedScheduling for it), and is
 * requeued by the admission (resv_controller_tick reports the change). Bounded: from
 * RESV_ARRIVAL_GRACE_MS after the pod's creation it is let through, and PreFilter then reports the
 * wait ("... is not admitted yet"). */
static sched_status plugin_pre_enqueue(void *state, const sched_snapshot *s, const sched_pod *p,
                                       int64_t now_ms, char *msg, size_t size) {
    (void)s;
    plugin_state *st = state;
    if ((st->src.ready && !st->src.ready(st->src.ud)) || p->created_ms <= 0 ||
        now_ms - p->created_ms >= RESV_ARRIVAL_GRACE_MS)
        return SCHED_STATUS_OK;
    if (!collect_for(st, p, now_ms) || st->n_open > 0 || st->n_unadmitted == 0)
        return SCHED_STATUS_OK; /* OOM: PreFilter meets it again and says so */
    snprintf(msg, size, "waiting for its Reservation to be admitted");
    return SCHED_STATUS_WAIT;
}

static sched_status plugin_pre_filter(void *state, const sched_cycle *cy, uint32_t *detail,
                                      tm_err *err) {
    plugin_state *st = state;
    st->n_owned = 0;
    placed_purge(st, cy->snap);
    if (st->src.ready && !st->src.ready(st->src.ud)) {
        /* a restart must not place pods on capacity held before it */
        *detail = RESV_NOT_RESTORED;
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (!collect_for(st, cy->pod, cy->now_ms))
        return tm_err_set(err, "out of memory"), SCHED_STATUS_ERROR;
    /* An owner's pod that became schedulable before its reservation is Active (created early,
     * ungated early, or the reservation not admitted yet) waits for it rather than bind
     * wherever there is room now and leave the hold unused: the window's opening (or the
     * admission) changes the plan, and the caller retries the unschedulable pods then. */
    if (st->n_open == 0 && st->n_unadmitted > 0) {
        *detail = RESV_WAIT_ADMITTED;
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (st->n_open == 0 && st->n_ahead > 0) {
        *detail = RESV_WAIT_WINDOW;
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (resv_plan_count(st->plan) == 0)
        return SCHED_STATUS_SKIP;
    return SCHED_STATUS_OK;
}

static int plugin_filter(void *state, const sched_cycle *cy, size_t node, const sched_node *n) {
    (void)node;
    plugin_state *st = state;
    /* Per node, so only what can refuse this node is looked at: its holds (with the pod's
     * expected end) and, for an owner's pod, its own holds elsewhere. A node with no holds
     * takes a pod that owns nothing as it is. */
    sched_resources held, free_now;
    size_t n_here = 0;
    resv_plan_node_held(st->plan, n->name, &held, &n_here);
    if (n_here == 0 && st->n_owned == 0)
        return -1;
    sched_node_room(n, &free_now);
    int64_t end = n_here ? resv_expected_end(cy->snap, cy->pod, n, cy->now_ms) : -1;
    resv_verdict v =
        resv_plan_filter_adjusted(st->plan, n->name, &free_now, &cy->pod->requests, end,
                                  cycle_owner, adjust_used, st, cy->now_ms, NULL, 0);
    return v == RESV_HONOUR_OK ? -1 : (int)v;
}

/* Reserve: an owner's pod placed on n counts against its holds from now on (adjust_used). */
static void plugin_reserved(void *state, const sched_cycle *cy, const sched_node *n) {
    plugin_state *st = state;
    if (st->n_owned == 0 || !cy->pod->uid)
        return;
    for (size_t i = 0; i < st->n_placed; i++)
        if (strcmp(st->placed[i].uid, cy->pod->uid) == 0) {
            placed_drop(st, i); /* re-placed: the new node counts */
            break;
        }
    if (st->n_placed == st->cap_placed) {
        size_t nc = st->cap_placed ? st->cap_placed * 2 : 8;
        placed_pod *np = realloc(st->placed, nc * sizeof *np);
        if (!np)
            return; /* the caller's count catches up once it sees the bind */
        st->placed = np;
        st->cap_placed = nc;
    }
    placed_pod pp = {.uid = strdup(cy->pod->uid),
                     .node = strdup(n->name),
                     .req = cy->pod->requests,
                     .keys = calloc(st->n_owned, sizeof(char *))};
    bool ok = pp.uid && pp.node && pp.keys;
    for (size_t k = 0; ok && k < st->n_owned; k++, pp.n_keys++)
        ok = (pp.keys[k] = strdup(st->owned[k])) != NULL;
    if (!ok) {
        placed_clear(&pp);
        return;
    }
    st->placed[st->n_placed++] = pp;
}

/* Unreserve (Permit rejected it, the bind failed, a gang that did not fit): it holds nothing. */
static void plugin_unreserve(void *state, const sched_cycle *cy, const sched_node *n) {
    (void)n;
    plugin_state *st = state;
    for (size_t i = 0; cy->pod->uid && i < st->n_placed; i++)
        if (strcmp(st->placed[i].uid, cy->pod->uid) == 0) {
            placed_drop(st, i);
            return;
        }
}

static void plugin_filter_reason(void *state, const sched_cycle *cy, uint32_t detail, char *buf,
                                 size_t size) {
    (void)state, (void)cy;
    snprintf(buf, size, "%s",
             detail == RESV_NOT_RESTORED ? "reservations not read yet (the scheduler is starting)"
             : detail == RESV_WAIT_ADMITTED
                 ? "node(s) were not tried: the pod's Reservation is not admitted yet"
             : detail == RESV_WAIT_WINDOW
                 ? "node(s) were not tried: the pod's Reservation window has not opened yet"
             : detail == RESV_HONOUR_RESERVED ? "node(s) were reserved for another owner's pods"
             : detail == RESV_HONOUR_NO_BACKFILL
                 ? "node(s) were reserved from a later time and the pod's expected end is "
                   "unknown or after it"
                 : "node(s) were not the ones reserved for the pod");
}

static void plugin_free(void *state) {
    plugin_state *st = state;
    if (!st)
        return;
    free(st->owned);
    for (size_t i = 0; i < st->n_placed; i++)
        placed_clear(&st->placed[i]);
    free(st->placed);
    free(st);
}

int resv_plugin_make(resv_plan *plan, const resv_plugin_source *src, sched_plugin *out,
                     tm_err *err) {
    memset(out, 0, sizeof *out);
    if (!plan || !src || !src->each)
        return tm_err_set(err, "Reservation plugin: no plan or no source of reservations");
    plugin_state *st = calloc(1, sizeof *st);
    if (!st)
        return tm_err_set(err, "out of memory");
    st->plan = plan;
    st->src = *src;
    *out = (sched_plugin){.name = RESV_PLUGIN_NAME,
                          .state = st,
                          .free_state = plugin_free,
                          .pre_filter = plugin_pre_filter,
                          .filter = plugin_filter,
                          .filter_reason = plugin_filter_reason,
                          .pre_enqueue = plugin_pre_enqueue,
                          .reserved = plugin_reserved,
                          .unreserve = plugin_unreserve};
    return 0;
}

/* ---- explain ------------------------------------------------------------------------------ */

typedef struct book_entry {
    char key[600];
    reservation *r;
    sched_resources *used; /* per hold: what the owner's bound pods use of it (owner_use) */
} book_entry;

struct resv_plugin_book {
    resv_plan *plan;
    book_entry *v;
    size_t n;
    char *ns;       /* the explained pod's namespace */
    json_t *labels; /* the explained pod's (owned reference), NULL when none */
    char *workload; /* its spec.workloadRef.name, NULL when none */
};

static void book_each(void *ud, resv_each_fn fn, void *arg) {
    const resv_plugin_book *b = ud;
    for (size_t i = 0; i < b->n; i++)
        fn(arg, b->v[i].key, b->v[i].r);
}

static void book_identity(void *ud, const sched_pod *pod, const json_t **labels,
                          const char **workload) {
    (void)pod; /* explain runs one cycle, for the pod the book was made for */
    const resv_plugin_book *b = ud;
    *labels = b->labels;
    *workload = b->workload;
}

size_t resv_plugin_book_count(const resv_plugin_book *b) {
    return b ? resv_plan_count(b->plan) : 0;
}

void resv_plugin_book_free(resv_plugin_book *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        reservation_free(b->v[i].r);
        free(b->v[i].used);
    }
    free(b->v);
    free(b->ns);
    resv_plan_free(b->plan);
    json_decref(b->labels);
    free(b->workload);
    free(b);
}

/* What the owners' bound pods use of each hold (resv_plan_set_used), as the controller's keep()
 * counts them: a pod's requests on the node of a hold of a reservation it belongs to. */
static int owner_use(resv_plugin_book *b, sched_snapshot *s, const json_t *pods,
                     const sched_keys *keys, tm_err *err) {
    size_t i;
    const json_t *po;
    for (size_t e = 0; e < b->n; e++) {
        const reservation *r = b->v[e].r;
        sched_resources *used = calloc(r->n_holds ? r->n_holds : 1, sizeof *used);
        if (!used)
            return tm_err_set(err, "out of memory");
        json_array_foreach(pods, i, po) {
            const char *node = tm_json_str(po, "spec.nodeName", "");
            if (!node[0] || sched_pod_json_terminal(po) ||
                !reservation_owns(r, tm_json_str(po, "metadata.namespace", ""),
                                  tm_json_path(po, "metadata.labels"),
                                  tm_json_str(po, "spec.workloadRef.name", NULL)))
                continue;
            for (size_t h = 0; h < r->n_holds; h++) {
                if (strcmp(node, r->holds[h].node) != 0)
                    continue;
                tm_err perr = {0};
                sched_pod *sp = sched_pod_from_json(s, po, keys, &perr);
                for (int k = 0; sp && k < SCHED_RES_MAX; k++)
                    used[h].v[k] += sp->requests.v[k];
                sched_pod_free(sp);
                break;
            }
        }
        for (size_t h = 0; h < r->n_holds; h++)
            resv_plan_set_used(b->plan, b->v[e].key, r->holds[h].node, &used[h]);
        b->v[e].used = used; /* for resv_plugin_book_owner_note */
    }
    return 0;
}

/* Whether a Reservation's schedulerName is ours: scheduler_name, or one of the profiles'. */
static bool named_ours(const char *sn, const char *scheduler_name, const sched_keys *keys) {
    return strcmp(sn, scheduler_name) == 0 ||
           (keys && sched_profile_index(keys->profiles, sn) >= 0);
}

resv_plugin_book *resv_plugin_explain(sched_snapshot *s, sched_framework *fw, const json_t *items,
                                      const char *scheduler_name, const json_t *pod,
                                      const json_t *pods, const sched_keys *keys, tm_err *err) {
    resv_plugin_book *b = calloc(1, sizeof *b);
    size_t n = json_array_size(items);
    if (!b || !(b->plan = resv_plan_new()) || !(b->v = calloc(n ? n : 1, sizeof *b->v))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    b->labels = json_incref(tm_json_path(pod, "metadata.labels"));
    if (!(b->ns = strdup(tm_json_str(pod, "metadata.namespace", "")))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    const char *wl = tm_json_str(pod, "spec.workloadRef.name", NULL);
    if (wl && !(b->workload = strdup(wl))) {
        tm_err_set(err, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *obj = json_array_get(items, i);
        if (!named_ours(reservation_scheduler_name(obj), scheduler_name, keys))
            continue; /* another scheduler's: it honours it, not us */
        tm_err perr = {0};
        reservation *r = reservation_from_json(s, obj, &perr);
        if (!r) /* the controller reports it (phase Failed); it holds nothing */
            continue;
        book_entry *e = &b->v[b->n];
        reservation_key(r, e->key, sizeof e->key);
        /* as the controller restores them after a restart: the held ones, by status.nodes */
        int64_t start, end; /* the admitted window, as the controller keeps it */
        reservation_held_window(r, &start, &end);
        if (!resv_phase_holds(r->phase) || r->deleting ||
            resv_plan_put(b->plan, e->key, start, end, r->holds, r->n_holds, &perr)) {
            reservation_free(r);
            continue;
        }
        e->r = r;
        b->n++;
    }
    if (owner_use(b, s, pods, keys, err))
        goto fail;
    resv_plugin_source src = {.each = book_each, .identity = book_identity, .ud = b};
    sched_plugin pl;
    if (resv_plugin_make(b->plan, &src, &pl, err) || sched_framework_add_plugin(fw, &pl, err))
        goto fail;
    return b;
fail:
    resv_plugin_book_free(b);
    return NULL;
}

bool resv_plugin_book_owner_note(const resv_plugin_book *b, const sched_resources *req,
                                 int64_t now_ms, char *buf, size_t size) {
    for (size_t i = 0; b && i < b->n; i++) {
        const book_entry *e = &b->v[i];
        const reservation *r = e->r;
        if (!reservation_owns(r, b->ns, b->labels, b->workload))
            continue;
        char t[32];
        int64_t start, end;
        reservation_held_window(r, &start, &end);
        if (now_ms < start) {
            snprintf(buf, size,
                     "owner of Reservation %s (%s, window opens at %s): the pod waits for the "
                     "window",
                     e->key, resv_phase_name(r->phase), resv_format_time(start, t, sizeof t));
            return true;
        }
        const char *room = NULL;
        for (size_t h = 0; h < r->n_holds && !room; h++) {
            bool fits = true;
            for (int k = 0; k < SCHED_RES_MAX; k++)
                if (req->v[k] > 0 &&
                    req->v[k] > r->holds[h].res.v[k] - (e->used ? e->used[h].v[k] : 0))
                    fits = false;
            if (fits)
                room = r->holds[h].node;
        }
        resv_format_time(end, t, sizeof t);
        if (room)
            snprintf(buf, size,
                     "owner of Reservation %s (window open until %s): its hold on %s has room "
                     "for the pod: it binds only on the held nodes",
                     e->key, t, room);
        else
            snprintf(buf, size,
                     "owner of Reservation %s (window open until %s): its holds have no room "
                     "left for the pod: placed like any pod (capacity held for others excepted)",
                     e->key, t);
        return true;
    }
    return false;
}
