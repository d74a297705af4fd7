/* resv_plan.c: the table of admitted reservations, admission, honouring, release decisions.
 *
 * The table is indexed by node: each node name maps to the entries holding something there, so
 * the Filter plugin's per-node check and admission's per-node peak touch only the few
 * reservations on that node. Admission places the template pod on a planning snapshot: a copy
 * of the live nodes whose occupancy is what the window will see (kept between calls and
 * rebuilt only when the live nodes change), so the framework's filters and score plugins decide
 * exactly as they would for a pod. */
#include "scheduler/plugins/reservation/resv_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/quantity.h"
#include "scheduler/backend/podspec.h"

typedef struct entry {
    char *key;
    int64_t start, end;
    resv_hold *holds;
    sched_resources *used; /* per hold: the owner's pods' usage now */
    size_t n;
    int32_t priority; /* its PriorityClass' value: who may displace it (resv_plan_set_priority) */
    uint64_t seq;     /* admission order: among equals, the earlier one is kept first */
} entry;

typedef struct node_slot {
    char *name; /* NULL = empty slot */
    entry **entries;
    sched_resources *held; /* per linked entry: what it holds on this node in all */
    size_t n, cap;
} node_slot;

struct resv_plan {
    entry **entries;
    size_t n_entries, cap_entries;
    uint64_t next_seq;
    node_slot *slots; /* open addressing, power of two */
    size_t n_slots, used_slots;
    /* planning snapshot for admission */
    sched_snapshot *ps;
    uint64_t ps_fingerprint;
    size_t ps_nodes;
    sched_resources *ps_occ; /* per planning node: the occupancy recorded there */
    /* per planning node: its slot in the table (NULL: nothing held there), so admission does
     * not hash every node name; kept on slot creation, recomputed after a rehash */
    node_slot **ps_slot;
    bool ps_slot_valid;
    char **ps_uid; /* per planning node: the uid of its occupancy pod */
};

static uint64_t fnv(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

resv_plan *resv_plan_new(void) {
    resv_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n_slots = 64;
    p->slots = calloc(p->n_slots, sizeof *p->slots);
    if (!p->slots) {
        free(p);
        return NULL;
    }
    return p;
}

static void entry_free(entry *e) {
    if (!e)
        return;
    free(e->key);
    resv_holds_free(e->holds, e->n);
    free(e->used);
    free(e);
}

void resv_plan_free(resv_plan *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_entries; i++)
        entry_free(p->entries[i]);
    free(p->entries);
    for (size_t i = 0; i < p->n_slots; i++) {
        free(p->slots[i].name);
        free(p->slots[i].entries);
        free(p->slots[i].held);
    }
    free(p->slots);
    free(p->ps_occ);
    free(p->ps_slot);
    for (size_t i = 0; p->ps_uid && i < p->ps_nodes; i++)
        free(p->ps_uid[i]);
    free(p->ps_uid);
    sched_snapshot_free(p->ps);
    free(p);
}

/* The slot of node name (create: insert when absent). NULL when absent or out of memory. */
static node_slot *slot_find(resv_plan *p, const char *name, bool create) {
    if (create && (p->used_slots + 1) * 2 > p->n_slots) {
        size_t nn = p->n_slots * 2;
        node_slot *ns = calloc(nn, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < p->n_slots; i++) {
            if (!p->slots[i].name)
                continue;
            size_t j = fnv(p->slots[i].name) & (nn - 1);
            while (ns[j].name)
                j = (j + 1) & (nn - 1);
            ns[j] = p->slots[i];
        }
        free(p->slots);
        p->slots = ns;
        p->n_slots = nn;
        p->ps_slot_valid = false; /* every slot moved */
    }
    size_t j = fnv(name) & (p->n_slots - 1);
    while (p->slots[j].name) {
        if (strcmp(p->slots[j].name, name) == 0)
            return &p->slots[j];
        j = (j + 1) & (p->n_slots - 1);
    }
    if (!create || !(p->slots[j].name = strdup(name)))
        return NULL;
    p->used_slots++;
    if (p->ps && p->ps_slot) {
        int i = sched_snapshot_node_index(p->ps, name);
        if (i >= 0 && (size_t)i < p->ps_nodes)
            p->ps_slot[i] = &p->slots[j];
    }
    return &p->slots[j];
}

static const node_slot *slot_get(const resv_plan *p, const char *name) {
    return slot_find((resv_plan *)p, name, false);
}

static entry *entry_get(const resv_plan *p, const char *key, size_t *idx) {
    for (size_t i = 0; i < p->n_entries; i++)
        if (strcmp(p->entries[i]->key, key) == 0) {
            if (idx)
                *idx = i;
            return p->entries[i];
        }
    return NULL;
}

bool resv_plan_has(const resv_plan *p, const char *key) {
    return entry_get(p, key, NULL) != NULL;
}

bool resv_plan_window(const resv_plan *p, const char *key, int64_t *start_ms, int64_t *end_ms) {
    const entry *e = entry_get(p, key, NULL);
    if (!e)
        return false;
    *start_ms = e->start;
    *end_ms = e->end;
    return true;
}

size_t resv_plan_count(const resv_plan *p) {
    return p->n_entries;
}

static void unlink_entry(resv_plan *p, entry *e) {
    for (size_t h = 0; h < e->n; h++) {
        node_slot *s = slot_find(p, e->holds[h].node, false);
        for (size_t i = 0; s && i < s->n; i++)
            if (s->entries[i] == e) {
                s->n--;
                s->entries[i] = s->entries[s->n];
                s->held[i] = s->held[s->n];
                break;
            }
    }
}

int resv_plan_remove(resv_plan *p, const char *key) {
    size_t i;
    entry *e = entry_get(p, key, &i);
    if (!e)
        return -1;
    unlink_entry(p, e);
    p->entries[i] = p->entries[--p->n_entries];
    entry_free(e);
    return 0;
}

/* What e holds on node (summed over its holds there). */
static void held_on(const entry *e, const char *node, sched_resources *out, sched_resources *used) {
    memset(out, 0, sizeof *out);
    if (used)
        memset(used, 0, sizeof *used);
    for (size_t h = 0; h < e->n; h++) {
        if (strcmp(e->holds[h].node, node) != 0)
            continue;
        for (int k = 0; k < SCHED_RES_MAX; k++) {
            out->v[k] += e->holds[h].res.v[k];
            if (used)
                used->v[k] += e->used[h].v[k];
        }
    }
}

/* resv_plan_put with the priority and admission order given (seq 0: a new one). */
static int put_entry(resv_plan *p, const char *key, int64_t start_ms, int64_t end_ms,
                     const resv_hold *holds, size_t n, int32_t priority, uint64_t seq,
                     tm_err *err) {
    resv_plan_remove(p, key);
    entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || resv_holds_copy(holds, n, &e->holds) ||
        (n && !(e->used = calloc(n, sizeof *e->used))))
        goto oom;
    e->n = n;
    e->start = start_ms;
    e->end = end_ms;
    e->priority = priority;
    e->seq = seq ? seq : ++p->next_seq;
    if (p->n_entries == p->cap_entries) {
        size_t nc = p->cap_entries ? p->cap_entries * 2 : 16;
        entry **ne = realloc(p->entries, nc * sizeof *ne);
        if (!ne)
            goto oom;
        p->entries = ne;
        p->cap_entries = nc;
    }
    for (size_t h = 0; h < n; h++) {
        node_slot *s = slot_find(p, holds[h].node, true);
        if (!s)
            goto oom_linked;
        bool dup = false; /* one node listed twice in the holds: link once */
        for (size_t i = 0; i < s->n; i++)
            dup |= s->entries[i] == e;
        if (dup)
            continue;
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 4;
            entry **ne = realloc(s->entries, nc * sizeof *ne);
            if (ne)
                s->entries = ne;
            sched_resources *nh = ne ? realloc(s->held, nc * sizeof *nh) : NULL;
            if (!nh)
                goto oom_linked;
            s->held = nh;
            s->cap = nc;
        }
        held_on(e, holds[h].node, &s->held[s->n], NULL);
        s->entries[s->n++] = e;
    }
    p->entries[p->n_entries++] = e;
    return 0;
oom_linked:
    unlink_entry(p, e);
oom:
    entry_free(e);
    return tm_err_set(err, "out of memory");
}

int resv_plan_put(resv_plan *p, const char *key, int64_t start_ms, int64_t end_ms,
                  const resv_hold *holds, size_t n, tm_err *err) {
    const entry *old = entry_get(p, key, NULL); /* replaced: it keeps its priority and place */
    return put_entry(p, key, start_ms, end_ms, holds, n, old ? old->priority : 0,
                     old ? old->seq : 0, err);
}

int resv_plan_set_priority(resv_plan *p, const char *key, int32_t priority) {
    entry *e = entry_get(p, key, NULL);
    if (!e)
        return -1;
    e->priority = priority;
    return 0;
}

int resv_plan_set_used(resv_plan *p, const char *key, const char *node,
                       const sched_resources *used) {
    entry *e = entry_get(p, key, NULL);
    for (size_t h = 0; e && h < e->n; h++)
        if (strcmp(e->holds[h].node, node) == 0) {
            e->used[h] = *used;
            return 0;
        }
    return -1;
}

void resv_plan_node_held(const resv_plan *p, const char *node, sched_resources *out,
                         size_t *n_entries) {
    memset(out, 0, sizeof *out);
    const node_slot *s = slot_get(p, node);
    if (n_entries)
        *n_entries = s ? s->n : 0;
    for (size_t i = 0; s && i < s->n; i++)
        for (int k = 0; k < SCHED_RES_MAX; k++)
            out->v[k] += s->held[i].v[k];
}

void resv_plan_each_hold(const resv_plan *p, resv_hold_fn fn, void *ud) {
    for (size_t i = 0; i < p->n_entries; i++) {
        const entry *e = p->entries[i];
        for (size_t h = 0; h < e->n; h++)
            fn(ud, e->key, e->start, e->end, e->holds[h].node, &e->holds[h].res, &e->used[h]);
    }
}

static void sum_at(const node_slot *s, int64_t t, const entry *except, sched_resources *out) {
    sched_resources sum = {0};
    for (size_t j = 0; j < s->n; j++) {
        const entry *e = s->entries[j];
        if (e->start > t || e->end <= t || e == except)
            continue;
        for (int k = 0; k < SCHED_RES_MAX; k++)
            sum.v[k] += s->held[j].v[k];
    }
    for (int k = 0; k < SCHED_RES_MAX; k++)
        if (sum.v[k] > out->v[k])
            out->v[k] = sum.v[k];
}

/* The peak on one node's slot (NULL: nothing held) over [t0, t1), without except. */
static void peak_in(const node_slot *s, int64_t t0, int64_t t1, const entry *except,
                    sched_resources *out) {
    memset(out, 0, sizeof *out);
    if (!s || !s->n)
        return;
    /* What is held only goes up at an entry's start: the peak is at t0 or at a start inside
     * the window. */
    sum_at(s, t0, except, out);
    for (size_t i = 0; i < s->n; i++)
        if (s->entries[i]->start > t0 && s->entries[i]->start < t1)
            sum_at(s, s->entries[i]->start, except, out);
}

void resv_plan_peak(const resv_plan *p, const char *node, int64_t t0, int64_t t1,
                    const char *except, sched_resources *out) {
    peak_in(slot_get(p, node), t0, t1, except ? entry_get(p, except, NULL) : NULL, out);
}

/* ---- expected ends ------------------------------------------------------------------------- */

int64_t resv_expected_end(const sched_snapshot *s, const sched_pod *pod, const sched_node *n,
                          int64_t start_ms) {
    int64_t d = -1;
    if (pod->expected_duration_ms > 0) {
        d = pod->expected_duration_ms;
    } else {
        const sched_task_profile *tp = sched_snapshot_task(s, pod->workflow, pod->process);
        if (!tp && pod->workflow && *pod->workflow)
            tp = sched_snapshot_task(s, "", pod->process);
        const char *group = n ? sched_node_label(n, "tarema.io/group") : NULL;
        for (int i = 0; tp && group && i < tp->n_group_rt && i < SCHED_TASK_MAX_GROUPS; i++)
            if (tp->group_rt[i].runs > 0 && tp->group_rt[i].runtime_ms >= 0 &&
                strncmp(tp->group_rt[i].group, group, SCHED_GROUP_ID_MAX) == 0)
                d = tp->group_rt[i].runtime_ms;
        if (d < 0 && tp && tp->expected_runtime_ms >= 0)
            d = tp->expected_runtime_ms;
    }
    if (pod->active_deadline_s > 0) { /* the kubelet ends it by then, whatever it expects */
        int64_t dl = pod->active_deadline_s * 1000;
        if (d < 0 || dl < d)
            d = dl;
    }
    return d < 0 ? -1 : start_ms + d;
}

/* ---- honouring ----------------------------------------------------------------------------- */

resv_verdict resv_honour(const sched_resources *node_free, const resv_claim *claims, size_t n,
                         const sched_resources *req, int64_t pod_end_ms, int64_t now_ms,
                         size_t *which) {
    sched_resources blocked = {0};
    resv_verdict first = RESV_HONOUR_OK;
    size_t first_i = 0;
    for (size_t i = 0; i < n; i++) {
        const resv_claim *c = &claims[i];
        if (c->end_ms <= now_ms)
            continue;
        bool in_window = now_ms >= c->start_ms;
        if (in_window && c->pod_is_owner)
            continue;
        if (!in_window && pod_end_ms >= 0 && pod_end_ms <= c->start_ms)
            continue; /* backfill: gone before the window opens */
        bool any = false;
        for (int k = 0; k < SCHED_RES_MAX; k++) {
            int64_t left = c->held.v[k] - (in_window ? c->owner_used.v[k] : 0);
            if (left > 0) {
                blocked.v[k] += left;
                any = true;
            }
        }
        if (any && first == RESV_HONOUR_OK) {
            first = in_window ? RESV_HONOUR_RESERVED : RESV_HONOUR_NO_BACKFILL;
            first_i = i;
        }
    }
    if (first == RESV_HONOUR_OK)
        return RESV_HONOUR_OK;
    for (int k = 0; k < SCHED_RES_MAX; k++) {
        /* Only what the holds take away decides here: a pod that does not fit the node at all
         * is NodeResourcesFit's to report. */
        if (req->v[k] > 0 && req->v[k] <= node_free->v[k] &&
            req->v[k] > node_free->v[k] - blocked.v[k]) {
            if (which)
                *which = first_i;
            return first;
        }
    }
    return RESV_HONOUR_OK;
}

static bool fits(const sched_resources *req, const sched_resources *room) {
    for (int k = 0; k < SCHED_RES_MAX; k++)
        if (req->v[k] > 0 && req->v[k] > room->v[k])
            return false;
    return true;
}

/* What the owner's pods use of e's hold h: the table's count, raised by adjust (pods placed but
 * not counted yet) when given. */
static void hold_used(const entry *e, size_t h, resv_used_adjust_fn adjust, void *ud,
                      sched_resources *used) {
    *used = e->used[h];
    if (adjust)
        adjust(ud, e->key, e->holds[h].node, used);
}

/* Whether e (the pod's own reservation, window open) still has room for req on a node other
 * than node. */
static const char *room_elsewhere(const entry *e, const char *node, const sched_resources *req,
                                  resv_used_adjust_fn adjust, void *ud) {
    for (size_t h = 0; h < e->n; h++) {
        if (strcmp(e->holds[h].node, node) == 0)
            continue;
        sched_resources used, left;
        hold_used(e, h, adjust, ud, &used);
        for (int k = 0; k < SCHED_RES_MAX; k++)
            left.v[k] = e->holds[h].res.v[k] - used.v[k];
        if (fits(req, &left))
            return e->holds[h].node;
    }
    return NULL;
}

static void fmt_end(int64_t ms, char *buf, size_t size) {
    if (ms < 0)
        snprintf(buf, size, "unknown");
    else
        resv_format_time(ms, buf, size);
}

resv_verdict resv_plan_filter(const resv_plan *p, const char *node,
                              const sched_resources *node_free, const sched_resources *req,
                              int64_t pod_end_ms, resv_is_owner_fn is_owner, void *ud,
                              int64_t now_ms, char *why, size_t why_size) {
    return resv_plan_filter_adjusted(p, node, node_free, req, pod_end_ms, is_owner, NULL, ud,
                                     now_ms, why, why_size);
}

resv_verdict resv_plan_filter_adjusted(const resv_plan *p, const char *node,
                                       const sched_resources *node_free, const sched_resources *req,
                                       int64_t pod_end_ms, resv_is_owner_fn is_owner,
                                       resv_used_adjust_fn adjust, void *ud, int64_t now_ms,
                                       char *why, size_t why_size) {
    const node_slot *s = slot_get(p, node);
    resv_verdict v = RESV_HONOUR_OK;
    if (s && s->n) {
        resv_claim stack[32];
        resv_claim *cl = s->n <= 32 ? stack : malloc(s->n * sizeof *cl);
        if (!cl) { /* cannot tell: refuse the node rather than break a reservation */
            if (why)
                snprintf(why, why_size, "out of memory checking reservations");
            return RESV_HONOUR_RESERVED;
        }
        for (size_t i = 0; i < s->n; i++) {
            const entry *e = s->entries[i];
            cl[i].start_ms = e->start;
            cl[i].end_ms = e->end;
            held_on(e, node, &cl[i].held, &cl[i].owner_used); /* used: only in the entry */
            cl[i].pod_is_owner = is_owner && is_owner(ud, e->key);
        }
        size_t which = 0;
        v = resv_honour(node_free, cl, s->n, req, pod_end_ms, now_ms, &which);
        if (v != RESV_HONOUR_OK && why) {
            const entry *e = s->entries[which];
            char a[32], b[32], c[32];
            resv_format_time(e->start, a, sizeof a);
            resv_format_time(e->end, b, sizeof b);
            fmt_end(pod_end_ms, c, sizeof c);
            if (v == RESV_HONOUR_RESERVED)
                snprintf(why, why_size, "node's capacity is reserved for %s until %s", e->key, b);
            else
                snprintf(why, why_size,
                         "node's capacity is reserved for %s from %s to %s and the pod's "
                         "expected end is %s (backfill needs a known end before the window)",
                         e->key, a, b, c);
        }
        if (cl != stack)
            free(cl);
        if (v != RESV_HONOUR_OK)
            return v;
    }
    if (!is_owner)
        return RESV_HONOUR_OK;
    /* The owner's pods, inside the window, go where the capacity is held for them. */
    for (size_t i = 0; i < p->n_entries; i++) {
        const entry *e = p->entries[i];
        if (now_ms < e->start || now_ms >= e->end || !is_owner(ud, e->key))
            continue;
        sched_resources here, used_here, left;
        held_on(e, node, &here, &used_here);
        if (adjust)
            adjust(ud, e->key, node, &used_here);
        for (int k = 0; k < SCHED_RES_MAX; k++)
            left.v[k] = here.v[k] - used_here.v[k];
        if (fits(req, &left))
            continue;
        const char *other = room_elsewhere(e, node, req, adjust, ud);
        if (other) {
            if (why)
                snprintf(why, why_size, "reservation %s holds room for the pod on node %s", e->key,
                         other);
            return RESV_HONOUR_ELSEWHERE;
        }
    }
    return RESV_HONOUR_OK;
}

/* ---- phase and release --------------------------------------------------------------------- */

resv_decision resv_decide(const resv_facts *f) {
    resv_decision d = {f->phase, false, NULL};
    if (!resv_phase_holds(f->phase))
        return d;
    if (f->deleted)
        return (resv_decision){RESV_RELEASED, true, "the reservation was deleted"};
    if (f->owner_missing)
        return (resv_decision){RESV_RELEASED, true, "the owner was deleted"};
    if (f->now_ms >= f->end_ms)
        return (resv_decision){RESV_EXPIRED, true, "endTime passed"};
    if (f->phase == RESV_ACTIVE && f->owner_started && f->owner_pods_now == 0)
        return (resv_decision){RESV_RELEASED, true, "the owner's pods all finished"};
    if (f->phase == RESV_ADMITTED && f->now_ms >= f->start_ms)
        return (resv_decision){RESV_ACTIVE, false, "the window is open"};
    return d;
}

/* ---- admission ----------------------------------------------------------------------------- */

void resv_admission_clear(resv_admission *a) {
    resv_holds_free(a->holds, a->n_holds);
    for (size_t i = 0; i < a->n_displaced; i++)
        free(a->displaced[i].key);
    free(a->displaced);
    memset(a, 0, sizeof *a);
}

/* Changes of the live nodes that matter to planning: names, allocatable, labels, taints,
 * readiness. A changed node is a new sched_node (the snapshot replaces nodes whole, allocating
 * the new one while the old one still lives), so its name and label array pointers differ:
 * hashing those and the numbers is enough, and cheap enough to check on every admission. */
static uint64_t fingerprint(const sched_snapshot *live) {
    uint64_t h = 1469598103934665603ULL;
    size_t n = sched_snapshot_node_count(live);
    for (size_t i = 0; i < n; i++) {
        const sched_node *nd = sched_snapshot_node(live, i);
        uint64_t x[] = {(uint64_t)(uintptr_t)nd->name,
                        (uint64_t)(uintptr_t)nd->labels,
                        nd->n_labels,
                        nd->n_taints,
                        (uint64_t)(nd->ready * 2 + nd->unschedulable),
                        (uint64_t)nd->allocatable.v[SCHED_RES_CPU],
                        (uint64_t)nd->allocatable.v[SCHED_RES_MEMORY],
                        (uint64_t)nd->allocatable.v[SCHED_RES_PODS]};
        for (size_t k = 0; k < sizeof x / sizeof x[0]; k++)
            h = (h ^ x[k]) * 1099511628211ULL;
    }
    return h;
}

static int rebuild_planning(resv_plan *p, const sched_snapshot *live, tm_err *err) {
    for (size_t i = 0; p->ps_uid && i < p->ps_nodes; i++)
        free(p->ps_uid[i]);
    free(p->ps_uid);
    p->ps_uid = NULL;
    p->ps_nodes = 0;
    sched_snapshot_free(p->ps);
    p->ps = sched_snapshot_new();
    if (!p->ps)
        return tm_err_set(err, "out of memory");
    int slots = sched_snapshot_resource_count(live);
    for (int k = 0; k < slots; k++) {
        const char *name = sched_snapshot_resource_name(live, k);
        if (name && sched_snapshot_resource_slot(p->ps, name, err) != k)
            return tm_err_set(err, "planning snapshot: resource slots differ at %s", name);
    }
    size_t n = sched_snapshot_node_count(live);
    for (size_t i = 0; i < n; i++) {
        const sched_node *src = sched_snapshot_node(live, i);
        sched_node *c = sched_node_new(src->name);
        if (!c)
            return tm_err_set(err, "out of memory");
        bool bad = false;
        for (size_t l = 0; !bad && l < src->n_labels; l++)
            bad = sched_node_set_label(c, src->labels[l].key, src->labels[l].value) != 0;
        for (size_t t = 0; !bad && t < src->n_taints; t++)
            bad = sched_node_add_taint(c, src->taints[t].key, src->taints[t].value,
                                       src->taints[t].effect) != 0;
        c->ready = src->ready;
        c->unschedulable = src->unschedulable;
        c->allocatable = src->allocatable;
        if (bad) {
            sched_node_free(c);
            return tm_err_set(err, "out of memory");
        }
        if (sched_snapshot_put_node(p->ps, c, err))
            return -1;
    }
    free(p->ps_occ);
    free(p->ps_slot);
    p->ps_slot = NULL;
    p->ps_slot_valid = false;
    if (!(p->ps_occ = calloc(n ? n : 1, sizeof *p->ps_occ)) ||
        !(p->ps_slot = calloc(n ? n : 1, sizeof *p->ps_slot)) ||
        !(p->ps_uid = calloc(n ? n : 1, sizeof *p->ps_uid)))
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *name = sched_snapshot_node(p->ps, i)->name;
        size_t len = strlen(name) + sizeof "~occupied/";
        if (!(p->ps_uid[i] = malloc(len))) {
            for (size_t j = 0; j < i; j++)
                free(p->ps_uid[j]);
            free(p->ps_uid);
            p->ps_uid = NULL;
            return tm_err_set(err, "out of memory");
        }
        snprintf(p->ps_uid[i], len, "~occupied/%s", name);
    }
    p->ps_nodes = n;
    p->ps_fingerprint = fingerprint(live);
    return 0;
}

static void add_res(sched_resources *a, const sched_resources *b, int64_t times) {
    for (int k = 0; k < SCHED_RES_MAX; k++)
        a->v[k] += b->v[k] * times;
}

static const char *res_name(const sched_snapshot *s, int k) {
    const char *n = sched_snapshot_resource_name(s, k);
    return n ? n : "?";
}

static void res_fmt(const sched_snapshot *s, int k, int64_t v, char *buf, size_t size) {
    if (k == SCHED_RES_CPU)
        tm_quantity_format_milli(v, buf, size);
    else if (k == SCHED_RES_MEMORY || k == SCHED_RES_EPHEMERAL)
        tm_quantity_format_bytes(v, buf, size);
    else
        snprintf(buf, size, "%lld", (long long)v);
    (void)s;
}

/* Bad input and impossible requests, decided on the live nodes before any planning. Returns
 * false with out->reason set when r cannot be admitted whatever else runs. */
static bool check_static(sched_snapshot *live, const reservation *r, const sched_pod *pod,
                         resv_admission *out) {
    size_t n = sched_snapshot_node_count(live), matching = 0;
    sched_resources total = {0};
    bool one_fits = false;
    for (size_t i = 0; i < n; i++) {
        const sched_node *nd = sched_snapshot_node(live, i);
        if (!sched_pod_node_affinity_matches(pod, nd))
            continue;
        matching++;
        add_res(&total, &nd->allocatable, 1);
        one_fits |= fits(&pod->requests, &nd->allocatable);
    }
    if (!matching) {
        if (r->node_group)
            snprintf(out->reason, sizeof out->reason,
                     "no node group matches: no node has "
                     "tarema.io/group=%s",
                     r->node_group);
        else if (r->node_selector)
            snprintf(out->reason, sizeof out->reason, "no node matches spec.nodeSelector");
        else
            snprintf(out->reason, sizeof out->reason, "the cluster has no nodes");
        return false;
    }
    if (!r->tmpl)
        return true;
    sched_resources need = {0};
    add_res(&need, &pod->requests, r->count);
    for (int k = 0; k < SCHED_RES_MAX; k++) {
        if (k == SCHED_RES_PODS || need.v[k] <= total.v[k])
            continue;
        char a[32], b[32], c[32];
        res_fmt(live, k, pod->requests.v[k], a, sizeof a);
        res_fmt(live, k, need.v[k], b, sizeof b);
        res_fmt(live, k, total.v[k], c, sizeof c);
        snprintf(out->reason, sizeof out->reason,
                 "larger than the cluster: %d pods of %s %s need %s %s, the %zu matching nodes "
                 "have %s allocatable in total",
                 r->count, a, res_name(live, k), b, res_name(live, k), matching, c);
        return false;
    }
    if (!one_fits) {
        snprintf(out->reason, sizeof out->reason,
                 "larger than the cluster: one pod of spec.template fits no matching node's "
                 "allocatable");
        return false;
    }
    return true;
}

/* Sets every planning node's occupancy to what the window [start, end) will see. Only nodes
 * whose occupancy changed since the last admission are touched. */
static int set_occupancy(resv_plan *p, const reservation *r, const char *key,
                         const resv_running *pods, const int *pod_node, size_t n_pods,
                         tm_err *err) {
    size_t n = sched_snapshot_node_count(p->ps);
    sched_resources *occ = calloc(n ? n : 1, sizeof *occ);
    if (!occ)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n_pods; i++) {
        if (pod_node[i] < 0 || (pods[i].end_ms >= 0 && pods[i].end_ms <= r->start_ms))
            continue; /* not on a known node, or done before the window opens */
        add_res(&occ[pod_node[i]], &pods[i].req, 1);
    }
    const entry *self = entry_get(p, key, NULL); /* re-admission: not against itself */
    if (!p->ps_slot_valid) {
        for (size_t i = 0; i < n; i++)
            p->ps_slot[i] = slot_find(p, sched_snapshot_node(p->ps, i)->name, false);
        p->ps_slot_valid = true;
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const sched_node *nd = sched_snapshot_node(p->ps, i);
        sched_resources peak;
        peak_in(p->ps_slot[i], r->start_ms, r->end_ms, self, &peak);
        add_res(&occ[i], &peak, 1);
        if (memcmp(&occ[i], &p->ps_occ[i], sizeof occ[i]) == 0)
            continue;
        if (!(rc = sched_snapshot_add_pod(p->ps, p->ps_uid[i], nd->name, &occ[i], err)))
            p->ps_occ[i] = occ[i];
    }
    free(occ);
    return rc;
}

static int place_template(resv_plan *p, sched_framework *fw, const reservation *r, sched_pod *pod,
                          resv_admission *out, tm_err *err) {
    size_t n = sched_snapshot_node_count(p->ps);
    int32_t *placed = calloc(n ? n : 1, sizeof *placed);
    if (!placed)
        return tm_err_set(err, "out of memory");
    int rc = 0;
    int32_t i;
    for (i = 0; i < r->count; i++) {
        char uid[64];
        snprintf(uid, sizeof uid, "~template/%d", i);
        char *u = strdup(uid);
        if (!u) {
            rc = tm_err_set(err, "out of memory");
            break;
        }
        free(pod->uid);
        pod->uid = u;
        sched_decision d;
        if ((rc = sched_framework_schedule(fw, p->ps, pod, r->start_ms, &d, err)) != 0)
            break;
        if (d.node < 0) {
            char msg[512];
            sched_framework_fit_message(fw, p->ps, msg, sizeof msg);
            char a[32], b[32];
            snprintf(out->reason, sizeof out->reason,
                     "only %d of %d pods fit between %s and %s (running pods and other "
                     "reservations hold the rest): %s",
                     i, r->count, resv_format_time(r->start_ms, a, sizeof a),
                     resv_format_time(r->end_ms, b, sizeof b), msg);
            break;
        }
        if ((rc = sched_framework_reserve(fw, p->ps, pod, d.node, err)) != 0)
            break;
        placed[d.node]++;
    }
    for (int32_t j = 0; j <= i && j < r->count; j++) { /* every template pod reserved */
        char uid[64];
        snprintf(uid, sizeof uid, "~template/%d", j);
        sched_snapshot_remove_pod(p->ps, uid);
    }
    if (!rc && i == r->count) {
        sched_snapshot_refresh(p->ps);
        const uint32_t *by_name = sched_snapshot_by_name(p->ps);
        size_t nh = 0;
        for (size_t k = 0; k < n; k++)
            nh += placed[k] > 0;
        out->holds = calloc(nh ? nh : 1, sizeof *out->holds);
        if (!out->holds)
            rc = tm_err_set(err, "out of memory");
        for (size_t k = 0; !rc && k < n; k++) {
            uint32_t idx = by_name[k];
            if (!placed[idx])
                continue;
            resv_hold *h = &out->holds[out->n_holds];
            if (!(h->node = strdup(sched_snapshot_node(p->ps, idx)->name))) {
                rc = tm_err_set(err, "out of memory");
                break;
            }
            out->n_holds++;
            h->pods = placed[idx];
            add_res(&h->res, &pod->requests, placed[idx]);
        }
        out->ok = !rc;
    }
    free(placed);
    return rc;
}

/* spec.nodes without a template: each node held whole, so it must be empty in the window. */
static int hold_whole_nodes(resv_plan *p, const reservation *r, const sched_pod *pod,
                            resv_admission *out, tm_err *err) {
    out->holds = calloc(r->n_nodes, sizeof *out->holds);
    if (!out->holds)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < r->n_nodes; i++) {
        const sched_node *nd = sched_snapshot_node_by_name(p->ps, r->nodes[i]);
        if (!sched_pod_node_affinity_matches(pod, nd)) {
            snprintf(out->reason, sizeof out->reason,
                     "spec.nodes: node %s does not match spec.nodeSelector/nodeGroup", nd->name);
            return 0;
        }
        if (!nd->ready || nd->unschedulable) {
            snprintf(out->reason, sizeof out->reason, "spec.nodes: node %s is %s", nd->name,
                     nd->ready ? "unschedulable" : "not ready");
            return 0;
        }
        if (nd->requested.v[SCHED_RES_PODS] > 0 || nd->requested.v[SCHED_RES_CPU] > 0 ||
            nd->requested.v[SCHED_RES_MEMORY] > 0) {
            char a[32], b[32];
            snprintf(out->reason, sizeof out->reason,
                     "spec.nodes: node %s is not free between %s and %s (running pods or "
                     "another reservation)",
                     nd->name, resv_format_time(r->start_ms, a, sizeof a),
                     resv_format_time(r->end_ms, b, sizeof b));
            return 0;
        }
        resv_hold *h = &out->holds[out->n_holds];
        if (!(h->node = strdup(nd->name)))
            return tm_err_set(err, "out of memory");
        out->n_holds++;
        h->res = nd->allocatable;
        h->pods = (int32_t)nd->allocatable.v[SCHED_RES_PODS];
    }
    out->ok = true;
    return 0;
}

/* The existence checks of spec.nodes (cheap: done before planning). */
static bool nodes_exist(const sched_snapshot *live, const reservation *r, resv_admission *out) {
    for (size_t i = 0; i < r->n_nodes; i++)
        if (!sched_snapshot_node_by_name(live, r->nodes[i])) {
            snprintf(out->reason, sizeof out->reason, "spec.nodes: node %s does not exist",
                     r->nodes[i]);
            return false;
        }
    return true;
}

/* Places r on the planning snapshot as the window will see it (running pods, the table). */
static int place(resv_plan *p, sched_framework *fw, const reservation *r, const char *key,
                 sched_pod *pod, const resv_running *pods, const int *pod_node, size_t n_pods,
                 resv_admission *out, tm_err *err) {
    int rc = set_occupancy(p, r, key, pods, pod_node, n_pods, err);
    if (!rc)
        rc = r->tmpl ? place_template(p, fw, r, pod, out, err)
                     : hold_whole_nodes(p, r, pod, out, err);
    return rc;
}

/* ---- displacement: a reservation of higher priority makes way for itself ------------------- */

/* An admitted reservation taken out of the table while a higher one is planned without it. */
typedef struct victim {
    char *key;
    int64_t start, end;
    resv_hold *holds;
    size_t n;
    int32_t priority;
    uint64_t seq;
} victim;

static void victims_free(victim *v, size_t n) {
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].key);
        resv_holds_free(v[i].holds, v[i].n);
    }
    free(v);
}

/* Put back in this order: the highest priority first, then the earliest admitted (as
 * kube-scheduler reprieves the most important victims first). */
static int cmp_reprieve(const void *a, const void *b) {
    const victim *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Whether e holds something on a node r's template pod may use (its node selector, group,
 * spec.nodes): only there can displacing it make room. */
static bool holds_where(const resv_plan *p, const entry *e, const sched_pod *pod) {
    for (size_t h = 0; h < e->n; h++) {
        const sched_node *nd = sched_snapshot_node_by_name(p->ps, e->holds[h].node);
        if (nd && sched_pod_node_affinity_matches(pod, nd))
            return true;
    }
    return false;
}

/* Takes out of the table every admitted reservation r may displace: of lower priority, its
 * window overlapping r's and not open yet (an open window's owner may already run in it), on a
 * node r may use. */
static int take_victims(resv_plan *p, const reservation *r, const char *key, const sched_pod *pod,
                        int64_t now_ms, victim **out, size_t *n_out, tm_err *err) {
    *out = NULL;
    *n_out = 0;
    victim *v = calloc(p->n_entries ? p->n_entries : 1, sizeof *v);
    if (!v)
        return tm_err_set(err, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < p->n_entries;) {
        entry *e = p->entries[i];
        if (e->priority >= r->priority || e->start <= now_ms || e->start >= r->end_ms ||
            e->end <= r->start_ms || strcmp(e->key, key) == 0 || !holds_where(p, e, pod)) {
            i++;
            continue;
        }
        /* the victim takes the entry's key and holds; the entry goes */
        v[n] = (victim){e->key, e->start, e->end, e->holds, e->n, e->priority, e->seq};
        n++;
        unlink_entry(p, e);
        p->entries[i] = p->entries[--p->n_entries];
        e->key = NULL;
        e->holds = NULL;
        e->n = 0;
        entry_free(e);
    }
    *out = v;
    *n_out = n;
    return 0;
}

static int put_victim(resv_plan *p, const victim *v, tm_err *err) {
    return put_entry(p, v->key, v->start, v->end, v->holds, v->n, v->priority, v->seq, err);
}

/* r did not fit: plans it again without the reservations it may displace. When it fits then,
 * those are put back one at a time, the most important first, each kept only while r still fits
 * beside it (r planned again each time: kube-scheduler's reprieve); the rest are displaced and
 * named in out->displaced, and r is put into the table with its last holds. When r does not fit
 * even without them, or on an error, the table is as it was (every victim back) and out->reason
 * says that displacing did not help either. */
static int displace(resv_plan *p, sched_framework *fw, const reservation *r, const char *key,
                    sched_pod *pod, const resv_running *pods, const int *pod_node, size_t n_pods,
                    int64_t now_ms, resv_admission *out, tm_err *err) {
    victim *v;
    size_t nv;
    if (take_victims(p, r, key, pod, now_ms, &v, &nv, err))
        return -1;
    if (!nv) {
        free(v);
        return 0;
    }
    resv_admission trial = {0};
    int rc = place(p, fw, r, key, pod, pods, pod_node, n_pods, &trial, err);
    bool *back = calloc(nv, sizeof *back); /* put back (kept) */
    if (!rc && !back)
        rc = tm_err_set(err, "out of memory");
    if (!rc && trial.ok) {
        qsort(v, nv, sizeof *v, cmp_reprieve);
        for (size_t i = 0; i < nv && !rc; i++) {
            if ((rc = put_victim(p, &v[i], err)) != 0)
                break;
            back[i] = true;
            resv_admission again = {0};
            rc = place(p, fw, r, key, pod, pods, pod_node, n_pods, &again, err);
            if (!rc && again.ok) { /* r still fits beside it: reprieved, r's holds as now */
                resv_admission_clear(&trial);
                trial = again;
                continue;
            }
            resv_admission_clear(&again);
            resv_plan_remove(p, v[i].key); /* needed out of the way: displaced */
            back[i] = false;
        }
    }
    if (!rc && trial.ok) {
        if (!(out->displaced = calloc(nv, sizeof *out->displaced)))
            rc = tm_err_set(err, "out of memory");
        else
            rc = put_entry(p, key, r->start_ms, r->end_ms, trial.holds, trial.n_holds, r->priority,
                           0, err);
    }
    if (rc || !trial.ok) { /* no better, or an error: every victim back, r not in */
        if (rc)
            resv_plan_remove(p, key);
        int prc = 0;
        for (size_t i = 0; i < nv; i++)
            if (!back || !back[i]) {
                int e = put_victim(p, &v[i], err);
                prc = prc ? prc : e;
            }
        rc = rc ? rc : prc;
        free(out->displaced);
        out->displaced = NULL;
        size_t len = strlen(out->reason);
        if (!rc && len + 1 < sizeof out->reason)
            snprintf(out->reason + len, sizeof out->reason - len,
                     "; displacing the %zu admitted reservation%s of lower priority would not make "
                     "room either",
                     nv, nv == 1 ? "" : "s");
        resv_admission_clear(&trial);
        victims_free(v, nv);
        free(back);
        return rc;
    }
    for (size_t i = 0; i < nv; i++) {
        if (back[i])
            continue;
        out->displaced[out->n_displaced].key = v[i].key;
        out->displaced[out->n_displaced++].priority = v[i].priority;
        v[i].key = NULL; /* the outcome owns it now */
    }
    resv_holds_free(out->holds, out->n_holds); /* a first try's partial holds (whole nodes) */
    out->holds = trial.holds;
    out->n_holds = trial.n_holds;
    out->ok = true;
    out->reason[0] = '\0';
    victims_free(v, nv);
    free(back);
    return 0;
}

/* One admission on a current planning snapshot; pod_node[i]: pods[i]'s planning node index. */
static int admit_one(resv_plan *p, sched_framework *fw, sched_snapshot *live, const reservation *r,
                     const sched_keys *keys, const resv_running *pods, const int *pod_node,
                     size_t n_pods, int64_t now_ms, resv_admission *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    char key[600];
    reservation_key(r, key, sizeof key);
    if (r->end_ms <= now_ms) {
        snprintf(out->reason, sizeof out->reason, "endTime is already past");
        return 0;
    }
    if (!nodes_exist(live, r, out))
        return 0;
    json_t *pj = reservation_template_pod(r);
    sched_pod *pod = pj ? sched_pod_from_json(live, pj, keys, err) : NULL;
    json_decref(pj);
    if (!pod)
        return pj ? tm_err_wrap(err, "reservation %s", key) : tm_err_set(err, "out of memory");
    /* the planning snapshot has the fixed resource slots only: a resource kept sparsely
     * (snapshot.h) is not planned (docs/operations.md, "Resources"); the owners' pods are still
     * checked for it by NodeResourcesFit when they bind */
    free(pod->xreq);
    pod->xreq = NULL;
    pod->n_xreq = 0;
    sched_task_info ti; /* the planning snapshot has no task table: carry the labels */
    sched_task_resolve(live, pod, &ti);
    if (ti.labeled)
        memcpy(pod->labels, ti.labels, sizeof pod->labels);
    int rc = place(p, fw, r, key, pod, pods, pod_node, n_pods, out, err);
    /* Not admitted: say why in the most useful words. Bad input and impossible requests
     * (checked only now: they cost a pass over every node) come before "only 3 of 5 fit". Only
     * a reservation that could fit is worth planning again without those it may displace. */
    if (!rc && !out->ok) {
        resv_admission diag = {0};
        if (!check_static(live, r, pod, &diag))
            memcpy(out->reason, diag.reason, sizeof out->reason);
        else
            rc = displace(p, fw, r, key, pod, pods, pod_node, n_pods, now_ms, out, err);
    }
    if (!rc && out->ok)
        rc = put_entry(p, key, r->start_ms, r->end_ms, out->holds, out->n_holds, r->priority, 0,
                       err);
    if (rc && out->ok) /* put in by displace, then failed: not admitted, not held */
        resv_plan_remove(p, key);
    if (rc || !out->ok) {
        resv_holds_free(out->holds, out->n_holds);
        out->holds = NULL;
        out->n_holds = 0;
        out->ok = false;
    }
    sched_pod_free(pod);
    return rc;
}

int resv_plan_admit_batch(resv_plan *p, sched_framework *fw, sched_snapshot *live,
                          const reservation *const *rs, size_t n, const sched_keys *keys,
                          const resv_running *pods, size_t n_pods, int64_t now_ms,
                          resv_admission *outs, tm_err *err) {
    for (size_t i = 0; i < n; i++)
        memset(&outs[i], 0, sizeof outs[i]);
    if (!p->ps || p->ps_nodes != sched_snapshot_node_count(live) ||
        p->ps_fingerprint != fingerprint(live))
        if (rebuild_planning(p, live, err))
            return -1;
    int *pod_node = calloc(n_pods ? n_pods : 1, sizeof *pod_node);
    if (!pod_node)
        return tm_err_set(err, "out of memory");
    for (size_t i = 0; i < n_pods; i++)
        pod_node[i] = sched_snapshot_node_index(p->ps, pods[i].node);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = admit_one(p, fw, live, rs[i], keys, pods, pod_node, n_pods, now_ms, &outs[i], err);
    free(pod_node);
    return rc;
}

int resv_plan_admit(resv_plan *p, sched_framework *fw, sched_snapshot *live, const reservation *r,
                    const sched_keys *keys, const resv_running *pods, size_t n_pods, int64_t now_ms,
                    resv_admission *out, tm_err *err) {
    return resv_plan_admit_batch(p, fw, live, &r, 1, keys, pods, n_pods, now_ms, out, err);
}
