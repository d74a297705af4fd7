/* gang_preempt.c: a gang's preemption as one unit (gang_preempt.h): victim units across nodes,
 * everything out, then the reprieve, most important unit first. Every pod hidden here is shown
 * again before sched_gang_preempt returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/gang/gang_preempt.h"

/* One placed pod that may be evicted (or is leaving anyway). */
typedef struct cand {
    const char *uid;            /* the snapshot's (stays valid while hidden) */
    const sched_pod_meta *meta; /* the snapshot's record */
    size_t node;
    const char *key; /* its gang (unit_of), NULL: a unit of its own */
    size_t unit;
} cand;

/* A victim unit: one gang's placed pods of lower priority, or one pod. */
typedef struct unit {
    const char *key;
    size_t first, n; /* into the candidates, sorted by unit */
    int32_t prio;    /* its highest priority */
    int64_t start;   /* its earliest start (not started: now, as kube counts it) */
    bool excluded;   /* a member of it has the gang's priority or more: never a victim */
    bool out;        /* hidden now */
} unit;

void sched_gang_preemption_clear(sched_gang_preemption *r) {
    for (size_t i = 0; i < r->n_victims; i++)
        sched_victim_free(&r->victims[i]);
    free(r->victims);
    r->victims = NULL;
    r->n_victims = r->n_units = r->n_gangs = 0;
    r->ok = false;
    r->message[0] = '\0';
}

static int key_cmp(const char *a, const char *b) {
    if (!a || !b)
        return a ? 1 : b ? -1 : 0;
    return strcmp(a, b);
}

/* Candidates grouped by unit: gang keys together (NULL keys each alone, after). */
static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (!a->key || !b->key)
        return a->key ? -1 : b->key ? 1 : strcmp(a->uid, b->uid);
    return strcmp(a->key, b->key);
}

static int64_t start_of(int64_t start_ms, int64_t now_ms) {
    return start_ms > 0 ? start_ms : now_ms;
}

/* Units in order of importance: highest priority first, then earliest start, then key. */
static int unit_cmp(const void *pa, const void *pb) {
    const unit *a = pa, *b = pb;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return key_cmp(a->key, b->key);
}

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* kube's PodEligibleToPreemptOthers for a gang: NULL when eligible, else why not. */
static const char *ineligible(const sched_snapshot *s, sched_pod *const *pods, size_t n,
                              int32_t prio) {
    for (size_t i = 0; i < n; i++)
        if (pods[i]->preempt_never)
            return "not eligible: a member has preemptionPolicy=Never";
    sched_nominated *t = sched_snapshot_nominated(s);
    for (size_t i = 0; t && i < n; i++) {
        const char *node = sched_nominated_node(t, pods[i]->uid);
        int ni = node ? sched_snapshot_node_index(s, node) : -1;
        if (ni < 0)
            continue;
        for (size_t j = 0; j < sched_snapshot_node_pod_count(s, (size_t)ni); j++) {
            const sched_pod_meta *m = sched_snapshot_node_pod(s, (size_t)ni, j, NULL);
            if (m && m->terminating && m->priority < prio)
                return "not eligible: an earlier preemption for this gang is still under way "
                       "(a victim is terminating on a member's nominated node)";
        }
    }
    return NULL;
}

static void set_units_hidden(sched_snapshot *s, const cand *c, unit *u, bool hidden) {
    for (size_t k = 0; k < u->n; k++)
        sched_snapshot_hide_pod(s, c[u->first + k].uid, hidden);
    u->out = hidden;
}

/* One try of the gang with the snapshot as it is: 1 fits (nodes set), 0 not, -1 error. */
static int fits(sched_framework *fw, sched_snapshot *s, sched_gang *g, sched_pod *const *pods,
                size_t n, int64_t now_ms, int *nodes, tm_err *err) {
    sched_gang_placement pl = {.nodes = nodes};
    char why[512] = "";
    sched_gang_try t = sched_gang_try_place(fw, s, g, pods, n, now_ms, false, &pl, why, sizeof why);
    if (t == SCHED_GANG_TRY_ERROR)
        return tm_err_set(err, "gang preemption: %s", why);
    return t == SCHED_GANG_TRY_SCHEDULED;
}

/* The reprieve over units [lo, hi) in order of importance. Put back one unit at a time, as kube
 * does per node, it costs one try of the whole gang per unit: thousands on a big cluster full of
 * small low-priority pods. So a run of units is put back together first: when the gang still
 * fits, every one of them would have been kept one by one too (putting pods back only takes
 * room); when it does not, the run is halved and each half tried in order, down to single
 * units, which are the victims. The same victims as one at a time (room is monotone in the pods
 * present), in about (victims x log units) tries instead of one per unit. */
typedef struct reprieve_ctx {
    sched_framework *fw;
    sched_snapshot *s;
    sched_gang *g;
    sched_pod *const *pods;
    size_t n;
    int64_t now_ms;
    const cand *c;
    unit *u;
    int *try_nodes, *nodes;
    tm_err *err;
} reprieve_ctx;

static int reprieve(reprieve_ctx *x, size_t lo, size_t hi) {
    size_t out = 0;
    for (size_t i = lo; i < hi; i++)
        if (!x->u[i].excluded) {
            set_units_hidden(x->s, x->c, &x->u[i], false);
            out++;
        }
    if (out == 0)
        return 0;
    int f = fits(x->fw, x->s, x->g, x->pods, x->n, x->now_ms, x->try_nodes, x->err);
    if (f < 0)
        return -1;
    if (f == 1) { /* all of them kept */
        memcpy(x->nodes, x->try_nodes, x->n * sizeof *x->try_nodes);
        return 0;
    }
    for (size_t i = lo; i < hi; i++)
        if (!x->u[i].excluded)
            set_units_hidden(x->s, x->c, &x->u[i], true);
    if (out == 1) /* a victim */
        return 0;
    size_t mid = lo + (hi - lo) / 2;
    return reprieve(x, lo, mid) < 0 ? -1 : reprieve(x, mid, hi);
}

static char *dup0(const char *v) {
    return strdup(v ? v : "");
}

int sched_gang_preempt(sched_framework *fw, sched_snapshot *s, sched_gang *g,
                       sched_pod *const *pods, size_t n, int64_t now_ms, sched_gang_unit_fn unit_of,
                       void *ctx, sched_gang_preemption *out, tm_err *err) {
    sched_gang_preemption_clear(out);
    if (n == 0) {
        snprintf(out->message, sizeof out->message, "no member waits");
        return 0;
    }
    int32_t prio = pods[0]->priority;
    for (size_t i = 1; i < n; i++)
        if (pods[i]->priority < prio)
            prio = pods[i]->priority;
    const char *why = ineligible(s, pods, n, prio);
    if (why) {
        snprintf(out->message, sizeof out->message, "%s", why);
        return 0;
    }

    /* 2. the candidates (and the terminating pods, which leave anyway) */
    size_t nn = sched_snapshot_node_count(s), nc = 0, nt = 0, np = 0;
    size_t nu = 0;
    cand *c = NULL;
    const char **term = NULL, **prot = NULL; /* terminating uids; keys of protected gangs */
    unit *u = NULL;
    int *try_nodes = NULL;
    int rc = -1;
    /* every array holds at most one entry per placed pod: sized once */
    size_t total = 0;
    for (size_t i = 0; i < nn; i++)
        total += sched_snapshot_node_pod_count(s, i);
    c = malloc((total ? total : 1) * sizeof *c);
    term = malloc((total ? total : 1) * sizeof *term);
    prot = malloc((total ? total : 1) * sizeof *prot);
    if (!c || !term || !prot)
        goto oom;
    for (size_t i = 0; i < nn; i++) {
        size_t pc = sched_snapshot_node_pod_count(s, i);
        for (size_t j = 0; j < pc; j++) {
            const char *uid = NULL;
            const sched_pod_meta *m = sched_snapshot_node_pod(s, i, j, &uid);
            const char *key = unit_of && uid ? unit_of(ctx, uid) : NULL;
            if (!m || !m->name || !m->name[0] || m->priority >= prio) {
                if (key) /* a gang with a member the gang may not evict: none of it goes */
                    prot[np++] = key;
            } else if (m->terminating) {
                term[nt++] = uid;
            } else {
                c[nc++] = (cand){.uid = uid, .meta = m, .node = i, .key = key};
            }
        }
    }
    if (nc == 0) {
        snprintf(out->message, sizeof out->message, "no pod of priority < %d that could be evicted",
                 (int)prio);
        rc = 0;
        goto done;
    }
    qsort(c, nc, sizeof *c, cand_cmp);
    u = calloc(nc, sizeof *u);
    try_nodes = calloc(n, sizeof *try_nodes);
    if (!u || !try_nodes)
        goto oom;
    for (size_t i = 0; i < nc; i++) {
        if (i == 0 || !c[i].key || key_cmp(c[i].key, c[i - 1].key) != 0)
            u[nu++] = (unit){.key = c[i].key,
                             .first = i,
                             .prio = c[i].meta->priority,
                             .start = start_of(c[i].meta->start_ms, now_ms)};
        unit *cu = &u[nu - 1];
        c[i].unit = nu - 1;
        cu->n = i + 1 - cu->first;
        if (c[i].meta->priority > cu->prio)
            cu->prio = c[i].meta->priority;
        if (start_of(c[i].meta->start_ms, now_ms) < cu->start)
            cu->start = start_of(c[i].meta->start_ms, now_ms);
    }
    if (np)
        qsort(prot, np, sizeof *prot, str_cmp);
    for (size_t i = 0; i < nu; i++)
        if (u[i].key && np && bsearch(&u[i].key, prot, np, sizeof *prot, str_cmp))
            u[i].excluded = true;
    qsort(u, nu, sizeof *u, unit_cmp); /* units keep their candidate ranges */

    /* 3. everything out */
    for (size_t k = 0; k < nt; k++)
        sched_snapshot_hide_pod(s, term[k], true);
    size_t usable = 0;
    for (size_t i = 0; i < nu; i++)
        if (!u[i].excluded) {
            set_units_hidden(s, c, &u[i], true);
            usable++;
        }
    int f = usable ? fits(fw, s, g, pods, n, now_ms, try_nodes, err) : 0;
    if (f < 0)
        goto restore;
    if (f == 0) {
        snprintf(out->message, sizeof out->message,
                 "the gang would not fit even with all %zu pod(s) of priority < %d evicted "
                 "(%zu unit(s); gangs with a member of priority >= %d are never victims)",
                 nc, (int)prio, usable, (int)prio);
        rc = 0;
        goto restore;
    }
    memcpy(out->nodes, try_nodes, n * sizeof *try_nodes);

    /* 4. the reprieve, most important first */
    reprieve_ctx rc4 = {.fw = fw,
                        .s = s,
                        .g = g,
                        .pods = pods,
                        .n = n,
                        .now_ms = now_ms,
                        .c = c,
                        .u = u,
                        .try_nodes = try_nodes,
                        .nodes = out->nodes,
                        .err = err};
    if (reprieve(&rc4, 0, nu) < 0)
        goto restore;

    /* the units still out are the victims */
    size_t nv = 0;
    for (size_t i = 0; i < nu; i++)
        if (u[i].out)
            nv += u[i].n;
    out->victims = calloc(nv ? nv : 1, sizeof *out->victims);
    if (!out->victims) {
        tm_err_set(err, "out of memory");
        goto restore;
    }
    for (size_t i = 0; i < nu; i++) {
        if (!u[i].out)
            continue;
        out->n_units++;
        if (u[i].key)
            out->n_gangs++;
        for (size_t k = 0; k < u[i].n; k++) {
            const cand *cc = &c[u[i].first + k];
            sched_victim *v = &out->victims[out->n_victims];
            const sched_node *node = sched_snapshot_node(s, cc->node);
            *v = (sched_victim){.uid = dup0(cc->uid),
                                .ns = dup0(cc->meta->ns),
                                .name = dup0(cc->meta->name),
                                .node = dup0(node ? node->name : ""),
                                .priority = cc->meta->priority,
                                .generation = cc->meta->generation,
                                .start_ms = cc->meta->start_ms};
            out->n_victims++;
            if (!v->uid || !v->ns || !v->name || !v->node) {
                tm_err_set(err, "out of memory");
                goto restore;
            }
            if (u[i].key)
                snprintf(v->why, sizeof v->why, "priority %d < %d of gang %s; all of gang %s",
                         (int)v->priority, (int)prio, g->key, u[i].key);
            else
                snprintf(v->why, sizeof v->why, "priority %d < %d of gang %s", (int)v->priority,
                         (int)prio, g->key);
        }
    }
    out->ok = true;
    if (out->n_victims == 0) /* the pods already terminating are enough: wait for them */
        snprintf(out->message, sizeof out->message,
                 "no eviction needed: the gang fits once %zu terminating pod(s) are gone", nt);
    else
        snprintf(out->message, sizeof out->message,
                 "evicting %zu pod(s) (%zu gang(s) whole, %zu single pod(s)) of priority < %d",
                 out->n_victims, out->n_gangs, out->n_units - out->n_gangs, (int)prio);
    rc = 0;

restore:
    for (size_t i = 0; i < nu; i++)
        if (u[i].out)
            set_units_hidden(s, c, &u[i], false);
    for (size_t k = 0; k < nt; k++)
        sched_snapshot_hide_pod(s, term[k], false);
    if (rc < 0) {
        sched_gang_preemption_clear(out);
    }
    goto done;
oom:
    tm_err_set(err, "out of memory");
    rc = -1;
done:
    free(c);
    free(u);
    free(term);
    free(prot);
    free(try_nodes);
    return rc;
}
