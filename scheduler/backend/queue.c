/* queue.c: active heap, backoff heaps and unschedulable set over one uid hash table. Every
 * entry remembers its index in the heap or vector it sits in, so removal and updates are
 * O(log n) without searching. Backoff is two heaps, as kube-scheduler's: pods that were
 * unschedulable (moved by a cluster change or the flush) and pods that failed with an error;
 * only the first may be popped before their backoff ends (queue.h, pop). */
#include "scheduler/backend/queue.h"

#include <stdlib.h>
#include <string.h>

typedef struct qent {
    sched_pod *pod;
    sched_q_state state;
    int attempts;
    int64_t ready_ms;      /* backoff: when it may go active */
    int64_t unsched_since; /* unschedulable: since when */
    int64_t since_wall;    /* when it joined the queue (wall ms), 0 = not yet: gated */
    uint64_t seq;          /* insertion order, for FIFO ties in the backoff heap */
    char *reported;        /* the last FailedScheduling message reported, or NULL */
    int64_t reported_ms;   /* when */
    bool err;              /* backoff after an error (sched_queue_backoff), not unschedulable */
    bool capacity_only;    /* unschedulable for capacity alone (sched_queue_set_capacity_only) */
    size_t idx;            /* position in the heap or vector of its state */
    struct qent *hnext;
} qent;

typedef struct heap {
    qent **v;
    size_t n, cap;
} heap;

struct sched_queue {
    sched_queue_cmp_fn cmp;
    void *ud;
    int64_t initial_ms, max_ms;
    qent **buckets;
    size_t nbuckets, nents;
    heap active, backoff, err_backoff, unsched, gated; /* unsched and gated: plain vectors */
    bool pop_from_backoff; /* KEP-5142: an empty active heap pops the unschedulable backoff */
    sched_queue_gate_fn gate;
    void *gate_ud;
    sched_queue_gate_fn held; /* gated but already queued (ASA's pro-active submission) */
    void *held_ud;
    int64_t wall_offset_ms; /* wall = now_ms + this */
    size_t inflight;
    uint64_t seq;
};

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static qent **slot_of(const sched_queue *q, const char *uid) {
    qent **p = &q->buckets[hash_str(uid) & (q->nbuckets - 1)];
    while (*p && strcmp((*p)->pod->uid, uid) != 0)
        p = &(*p)->hnext;
    return p;
}

static int grow_table(sched_queue *q) {
    size_t nb = q->nbuckets * 2;
    qent **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < q->nbuckets; i++) {
        for (qent *e = q->buckets[i], *next; e; e = next) {
            next = e->hnext;
            size_t h = hash_str(e->pod->uid) & (nb - 1);
            e->hnext = b[h];
            b[h] = e;
        }
    }
    free(q->buckets);
    q->buckets = b;
    q->nbuckets = nb;
    return 0;
}

/* ---- heaps --------------------------------------------------------------------------------- */

static bool is_backoff(const sched_queue *q, const heap *h) {
    return h == &q->backoff || h == &q->err_backoff;
}

static bool less(const sched_queue *q, const heap *h, const qent *a, const qent *b) {
    if (is_backoff(q, h)) {
        if (a->ready_ms != b->ready_ms)
            return a->ready_ms < b->ready_ms;
        /* Pods that failed in one batch share a backoff end. The unschedulable ones may be
         * popped from backoff (KEP-5142) and kube-scheduler orders those ties as the active
         * queue does (lessBackoffCompletedWithPriority); by insertion they followed the order
         * a cluster change happened to move them in, and a later arrival went first
         * (asa_queue_test, 1 run in 36 with three tests at once). */
        if (h == &q->backoff) {
            int c = q->cmp(q->ud, a->pod, b->pod);
            if (c)
                return c < 0;
        }
        return a->seq < b->seq;
    }
    int c = q->cmp(q->ud, a->pod, b->pod);
    return c != 0 ? c < 0 : a->seq < b->seq;
}

static void hswap(heap *h, size_t i, size_t j) {
    qent *t = h->v[i];
    h->v[i] = h->v[j];
    h->v[j] = t;
    h->v[i]->idx = i;
    h->v[j]->idx = j;
}

static void sift_up(const sched_queue *q, heap *h, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!less(q, h, h->v[i], h->v[p]))
            break;
        hswap(h, i, p);
        i = p;
    }
}

static void sift_down(const sched_queue *q, heap *h, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && less(q, h, h->v[l], h->v[m]))
            m = l;
        if (r < h->n && less(q, h, h->v[r], h->v[m]))
            m = r;
        if (m == i)
            return;
        hswap(h, i, m);
        i = m;
    }
}

static int vec_push(heap *h, qent *e) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        qent **v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    e->idx = h->n;
    h->v[h->n++] = e;
    return 0;
}

/* Removes v[i]; for heaps the moved last element is re-sifted. */
static void vec_remove(const sched_queue *q, heap *h, size_t i, bool is_heap) {
    h->n--;
    if (i == h->n)
        return;
    h->v[i] = h->v[h->n];
    h->v[i]->idx = i;
    if (is_heap) {
        sift_up(q, h, i);
        sift_down(q, h, h->v[i]->idx);
    }
}

static heap *heap_of(sched_queue *q, const qent *e, sched_q_state st) {
    switch (st) {
    case SCHED_Q_ACTIVE:
        return &q->active;
    case SCHED_Q_BACKOFF:
        return e->err ? &q->err_backoff : &q->backoff;
    case SCHED_Q_UNSCHEDULABLE:
        return &q->unsched;
    case SCHED_Q_GATED:
        return &q->gated;
    default:
        return NULL;
    }
}

/* Takes e out of its current container (state becomes NONE). */
static void detach(sched_queue *q, qent *e) {
    heap *h = heap_of(q, e, e->state);
    if (h)
        vec_remove(q, h, e->idx, h == &q->active || is_backoff(q, h));
    else if (e->state == SCHED_Q_IN_FLIGHT)
        q->inflight--;
    e->state = SCHED_Q_NONE;
}

/* Puts a detached e into state st. Only fails on OOM. */
static int attach(sched_queue *q, qent *e, sched_q_state st) {
    heap *h = heap_of(q, e, st);
    if (h) {
        if (vec_push(h, e))
            return -1;
        if (h == &q->active || is_backoff(q, h))
            sift_up(q, h, e->idx);
    } else if (st == SCHED_Q_IN_FLIGHT) {
        q->inflight++;
    }
    e->state = st;
    return 0;
}

/* ---- public -------------------------------------------------------------------------------- */

sched_queue *sched_queue_new(sched_queue_cmp_fn cmp, void *ud, int64_t initial_backoff_ms,
                             int64_t max_backoff_ms) {
    sched_queue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->cmp = cmp;
    q->ud = ud;
    q->initial_ms = initial_backoff_ms > 0 ? initial_backoff_ms : 1;
    q->max_ms = max_backoff_ms >= q->initial_ms ? max_backoff_ms : q->initial_ms;
    q->pop_from_backoff = true; /* kube-scheduler's default since 1.33 */
    q->nbuckets = 1024;
    q->buckets = calloc(q->nbuckets, sizeof *q->buckets);
    if (!q->buckets) {
        free(q);
        return NULL;
    }
    return q;
}

void sched_queue_free(sched_queue *q) {
    if (!q)
        return;
    for (size_t i = 0; i < q->nbuckets; i++) {
        for (qent *e = q->buckets[i], *next; e; e = next) {
            next = e->hnext;
            sched_pod_free(e->pod);
            free(e->reported);
            free(e);
        }
    }
    free(q->buckets);
    free(q->active.v);
    free(q->backoff.v);
    free(q->err_backoff.v);
    free(q->unsched.v);
    free(q->gated.v);
    free(q);
}

int64_t sched_queue_backoff_ms(const sched_queue *q, int attempts) {
    int64_t d = q->initial_ms;
    for (int i = 1; i < attempts && d < q->max_ms; i++)
        d *= 2;
    return d < q->max_ms ? d : q->max_ms;
}

/* Into backoff, or straight to active when the backoff is already over. */
static int requeue(sched_queue *q, qent *e, int64_t now_ms) {
    e->ready_ms = e->attempts > 0 ? e->ready_ms : now_ms;
    return attach(q, e, e->ready_ms > now_ms ? SCHED_Q_BACKOFF : SCHED_Q_ACTIVE);
}

void sched_queue_set_gate(sched_queue *q, sched_queue_gate_fn gate, void *ud) {
    q->gate = gate;
    q->gate_ud = ud;
}

void sched_queue_set_held(sched_queue *q, sched_queue_gate_fn held, void *ud) {
    q->held = held;
    q->held_ud = ud;
}

void sched_queue_set_wall_offset(sched_queue *q, int64_t offset_ms) {
    q->wall_offset_ms = offset_ms;
}

/* The queue age rule (queue.h): the entry's joining time is set once, when its pod is first
 * seen free of every gate but the order gate; from then on every copy of the pod carries it as
 * created_ms, the time the queue-sort compares. */
static void stamp_since(sched_queue *q, qent *e, bool gated, bool first, int64_t now_ms) {
    if (!e->since_wall && (!gated || (q->held && q->held(q->held_ud, e->pod))))
        e->since_wall = first && !gated && e->pod->created_ms > 0
                            ? e->pod->created_ms /* never gated: its creation, as before */
                            : now_ms + q->wall_offset_ms;
    if (e->since_wall)
        e->pod->created_ms = e->since_wall;
}

/* Moves e (not in flight) to st unless it is there already. Only fails on OOM. */
static int move_to(sched_queue *q, qent *e, sched_q_state st) {
    if (e->state == st)
        return 0;
    detach(q, e);
    return attach(q, e, st);
}

int sched_queue_add(sched_queue *q, sched_pod *pod, int64_t now_ms) {
    qent **slot = slot_of(q, pod->uid);
    qent *e = *slot;
    bool gated = q->gate && q->gate(q->gate_ud, pod);
    if (e) {
        sched_pod *old = e->pod;
        e->pod = pod;
        sched_pod_free(old);
        stamp_since(q, e, gated, false, now_ms);
        if (e->state == SCHED_Q_IN_FLIGHT)
            return 0; /* its outcome decides; PreEnqueue checks again at the next pop */
        if (gated)
            return move_to(q, e, SCHED_Q_GATED);
        if (e->state == SCHED_Q_GATED) /* the last gate went: no backoff (kube-scheduler) */
            return move_to(q, e, SCHED_Q_ACTIVE);
        if (e->state == SCHED_Q_ACTIVE) {
            sift_up(q, &q->active, e->idx);
            sift_down(q, &q->active, e->idx);
        } else if (e->state == SCHED_Q_UNSCHEDULABLE) {
            detach(q, e);
            if (requeue(q, e, now_ms))
                return -1;
        }
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        sched_pod_free(pod);
        return -1;
    }
    e->pod = pod;
    e->seq = q->seq++;
    e->ready_ms = now_ms;
    stamp_since(q, e, gated, true, now_ms);
    if (attach(q, e, gated ? SCHED_Q_GATED : SCHED_Q_ACTIVE)) {
        free(e);
        sched_pod_free(pod);
        return -1;
    }
    e->hnext = *slot;
    *slot = e;
    if (++q->nents > q->nbuckets)
        (void)grow_table(q); /* a failed grow only makes chains longer */
    return 0;
}

int sched_queue_remove(sched_queue *q, const char *uid) {
    qent **slot = slot_of(q, uid);
    qent *e = *slot;
    if (!e)
        return -1;
    detach(q, e);
    *slot = e->hnext;
    q->nents--;
    sched_pod_free(e->pod);
    free(e->reported);
    free(e);
    return 0;
}

static void promote_due_in(sched_queue *q, heap *h, int64_t now_ms) {
    while (h->n && h->v[0]->ready_ms <= now_ms) {
        qent *e = h->v[0];
        detach(q, e);
        if (attach(q, e, SCHED_Q_ACTIVE)) {
            /* Out of memory growing the active heap: leave it in backoff for the next try. */
            (void)attach(q, e, SCHED_Q_BACKOFF);
            return;
        }
    }
}

static void promote_due(sched_queue *q, int64_t now_ms) {
    promote_due_in(q, &q->backoff, now_ms);
    promote_due_in(q, &q->err_backoff, now_ms);
}

void sched_queue_set_pop_from_backoff(sched_queue *q, bool on) {
    q->pop_from_backoff = on;
}

void sched_queue_reorder(sched_queue *q) {
    for (size_t i = q->active.n / 2; i-- > 0;)
        sift_down(q, &q->active, i);
}

sched_pod *sched_queue_pop(sched_queue *q, int64_t now_ms) {
    promote_due(q, now_ms);
    heap *from = &q->active;
    if (!q->active.n) {
        /* Nothing else to do: the unschedulable pod whose backoff ends first is tried now
         * rather than when it ends (its backoff only spaces out retries while others wait) */
        if (!q->pop_from_backoff || !q->backoff.n)
            return NULL;
        from = &q->backoff;
    }
    qent *e = from->v[0];
    detach(q, e);
    attach(q, e, SCHED_Q_IN_FLIGHT);
    return e->pod;
}

sched_pod *sched_queue_take(sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    if (!e || e->state == SCHED_Q_IN_FLIGHT || e->state == SCHED_Q_NONE ||
        e->state == SCHED_Q_GATED) /* a gated gang member is not there to be placed */
        return NULL;
    detach(q, e);
    attach(q, e, SCHED_Q_IN_FLIGHT);
    return e->pod;
}

static qent *in_flight(const sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    return e && e->state == SCHED_Q_IN_FLIGHT ? e : NULL;
}

int sched_queue_done(sched_queue *q, const char *uid) {
    if (!in_flight(q, uid))
        return -1;
    return sched_queue_remove(q, uid);
}

int sched_queue_gate(sched_queue *q, const char *uid) {
    qent *e = in_flight(q, uid);
    if (!e)
        return -1;
    detach(q, e);
    return attach(q, e, SCHED_Q_GATED);
}

int sched_queue_backoff(sched_queue *q, const char *uid, int64_t now_ms) {
    qent *e = in_flight(q, uid);
    if (!e)
        return -1;
    detach(q, e);
    e->attempts++;
    e->ready_ms = now_ms + sched_queue_backoff_ms(q, e->attempts);
    e->err = true; /* waits its backoff out, even when nothing else is queued */
    return attach(q, e, SCHED_Q_BACKOFF);
}

int sched_queue_unschedulable(sched_queue *q, const char *uid, int64_t now_ms) {
    qent *e = in_flight(q, uid);
    if (!e)
        return -1;
    detach(q, e);
    e->attempts++;
    e->ready_ms = now_ms + sched_queue_backoff_ms(q, e->attempts);
    e->unsched_since = now_ms;
    e->err = false;
    e->capacity_only = false;
    return attach(q, e, SCHED_Q_UNSCHEDULABLE);
}

void sched_queue_set_capacity_only(sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    if (e && e->state == SCHED_Q_UNSCHEDULABLE)
        e->capacity_only = true;
}

bool sched_queue_should_report(sched_queue *q, const char *uid, const char *message, int64_t now_ms,
                               int64_t repeat_ms) {
    qent *e = *slot_of(q, uid);
    if (!e || !message)
        return true;
    if (e->reported && strcmp(e->reported, message) == 0 && now_ms - e->reported_ms < repeat_ms)
        return false;
    char *m = strdup(message);
    if (m) { /* without memory, report every time rather than never */
        free(e->reported);
        e->reported = m;
        e->reported_ms = now_ms;
    }
    return true;
}

/* Moves the unschedulable pods unschedulable for max_age_ms or more (-1: all) for which
 * match (NULL: any) says yes. */
/* Moves the unschedulable pods older than max_age_ms (-1: any age) that match says yes for
 * (NULL: all); with capacity, match is asked about the capacity-only pods alone, the others
 * move. */
static size_t move_unsched(sched_queue *q, int64_t now_ms, int64_t max_age_ms, bool capacity,
                           bool (*match)(void *ud, const sched_pod *p), void *ud) {
    size_t moved = 0;
    for (size_t i = 0; i < q->unsched.n;) {
        qent *e = q->unsched.v[i];
        if ((max_age_ms >= 0 && now_ms - e->unsched_since < max_age_ms) ||
            (match && (!capacity || e->capacity_only) && !match(ud, e->pod))) {
            i++;
            continue;
        }
        detach(q, e); /* moves the last entry into slot i: do not advance */
        if (requeue(q, e, now_ms)) {
            (void)attach(q, e, SCHED_Q_UNSCHEDULABLE);
            break;
        }
        moved++;
    }
    return moved;
}

size_t sched_queue_move_all(sched_queue *q, int64_t now_ms) {
    return move_unsched(q, now_ms, -1, false, NULL, NULL);
}

size_t sched_queue_move_matching(sched_queue *q, int64_t now_ms,
                                 bool (*match)(void *ud, const sched_pod *p), void *ud) {
    return move_unsched(q, now_ms, -1, false, match, ud);
}

size_t sched_queue_move_released(sched_queue *q, int64_t now_ms,
                                 bool (*helps)(void *ud, const sched_pod *p), void *ud) {
    return move_unsched(q, now_ms, -1, true, helps, ud);
}

size_t sched_queue_flush_unschedulable(sched_queue *q, int64_t now_ms, int64_t max_age_ms) {
    return move_unsched(q, now_ms, max_age_ms < 0 ? 0 : max_age_ms, false, NULL, NULL);
}

int64_t sched_queue_next_backoff_ms(const sched_queue *q, int64_t now_ms) {
    int64_t first = -1;
    if (q->backoff.n)
        first = q->backoff.v[0]->ready_ms;
    if (q->err_backoff.n && (first < 0 || q->err_backoff.v[0]->ready_ms < first))
        first = q->err_backoff.v[0]->ready_ms;
    if (first < 0)
        return -1;
    return first > now_ms ? first - now_ms : 0;
}

int64_t sched_queue_since(const sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    return e ? e->since_wall : 0;
}

/* Before: a goes first in queue order (uid breaks ties, so the order is total). */
/* Queue order, as the active heap has it: the policy's order, then arrival (the order the
 * informer saw the pods: creationTimestamp has whole seconds, the API server's order of creation
 * decides within one). */
static bool ent_before(const sched_queue *q, const qent *a, const qent *b) {
    int c = q->cmp(q->ud, a->pod, b->pod);
    return c ? c < 0 : a->seq < b->seq;
}

/* Merge sort of v[0..n) by ent_before with scratch tmp (qsort has no context argument). */
static void sort_ents(const sched_queue *q, qent **v, qent **tmp, size_t n) {
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_ents(q, v, tmp, h);
    sort_ents(q, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = ent_before(q, v[j], v[i]) ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

/* The entries of the heaps hs[0..nh) (gated: only the held ones) in queue order, as pods into
 * out (at most cap). Without memory for the sort, they stay unsorted. */
static size_t waiting(const sched_queue *q, const heap *const *hs, int nh, const sched_pod **out,
                      size_t cap) {
    size_t n = 0;
    for (int h = 0; h < nh; h++)
        for (size_t i = 0; i < hs[h]->n && n < cap; i++)
            if (hs[h] != &q->gated || hs[h]->v[i]->since_wall) /* gated: only the held */
                n++;
    qent **v = malloc((n ? n : 1) * 2 * sizeof *v);
    size_t k = 0;
    for (int h = 0; h < nh; h++)
        for (size_t i = 0; i < hs[h]->n && k < n; i++)
            if (hs[h] != &q->gated || hs[h]->v[i]->since_wall) {
                if (v)
                    v[k] = hs[h]->v[i];
                else
                    out[k] = hs[h]->v[i]->pod;
                k++;
            }
    if (v) {
        sort_ents(q, v, v + n, n);
        for (size_t i = 0; i < n; i++)
            out[i] = v[i]->pod;
    }
    free(v);
    return n;
}

size_t sched_queue_waiting(const sched_queue *q, const sched_pod **out, size_t cap) {
    const heap *hs[4] = {&q->active, &q->backoff, &q->err_backoff, &q->unsched};
    return waiting(q, hs, 4, out, cap);
}

size_t sched_queue_waiting_held(const sched_queue *q, const sched_pod **out, size_t cap) {
    const heap *hs[5] = {&q->active, &q->backoff, &q->err_backoff, &q->unsched, &q->gated};
    return waiting(q, hs, 5, out, cap);
}

sched_q_state sched_queue_state(const sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    return e ? e->state : SCHED_Q_NONE;
}

const sched_pod *sched_queue_get(const sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    return e ? e->pod : NULL;
}

int sched_queue_attempts(const sched_queue *q, const char *uid) {
    qent *e = *slot_of(q, uid);
    return e ? e->attempts : 0;
}

size_t sched_queue_count(const sched_queue *q, sched_q_state state) {
    switch (state) {
    case SCHED_Q_ACTIVE:
        return q->active.n;
    case SCHED_Q_BACKOFF:
        return q->backoff.n + q->err_backoff.n;
    case SCHED_Q_UNSCHEDULABLE:
        return q->unsched.n;
    case SCHED_Q_IN_FLIGHT:
        return q->inflight;
    case SCHED_Q_GATED:
        return q->gated.n;
    default:
        return q->nents;
    }
}
