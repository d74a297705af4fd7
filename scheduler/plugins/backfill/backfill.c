/* backfill.c: the shadow planner and the backfill rule (backfill.h). */
#include "scheduler/plugins/backfill/backfill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Something holding capacity on a node during [start, end). */
typedef struct ivl {
    int64_t start, end;
    sched_resources req;
    bool now_job; /* a job the plan starts now: left out of the spare (the scheduler's own
                   * placement of it is checked and taken like any pod's) */
} ivl;

typedef struct node_prof {
    ivl *v;
    size_t n, cap;
} node_prof;

struct bf_plan {
    bf_config cfg;
    size_t n_nodes;
    node_prof *prof;
    sched_resources *alloc; /* copy */
    bf_shadow *shadows;
    size_t n_shadows, cap_shadows;
    bf_shadow_hold *holds; /* every shadow's holds, in shadow order */
    size_t n_holds, cap_holds;
    int64_t *job_start;
    size_t n_jobs;
    int64_t now;
    /* the resource slots anything of this plan uses (the highest non-zero one + 1): the
     * planner's loops stop there, not at SCHED_RES_MAX (64 slots, of which a cluster uses a few) */
    int width;
};

bf_config bf_config_default(void) {
    return (bf_config){.reserve_depth = 1,
                       .resolution_ms = BF_RESOLUTION_MS_DEFAULT,
                       .max_job_test = BF_MAX_JOB_TEST_DEFAULT,
                       .window_ms = BF_WINDOW_MS_DEFAULT,
                       .default_runtime_ms = 0};
}

int bf_depth_parse(const char *v, int *out, tm_err *err) {
    if (v && strcmp(v, "all") == 0) {
        *out = BF_DEPTH_ALL;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    long d = v && *v ? strtol(v, &end, 10) : -1;
    if (!v || !*v || *end || errno || d < 0 || d > 100000)
        return tm_err_set(err, "backfill.reserveDepth '%s' is not \"all\" or an integer 0..100000",
                          v ? v : "");
    *out = (int)d;
    return 0;
}

int bf_config_check(const bf_config *c, tm_err *err) {
    if (c->reserve_depth < BF_DEPTH_ALL || c->reserve_depth > 100000)
        return tm_err_set(err, "backfill.reserveDepth %d is not \"all\" or 0..100000",
                          c->reserve_depth);
    if (c->resolution_ms <= 0)
        return tm_err_set(err, "backfill.resolution must be positive (got %lld ms)",
                          (long long)c->resolution_ms);
    if (c->max_job_test <= 0)
        return tm_err_set(err, "backfill.maxJobTest must be positive (got %d)", c->max_job_test);
    if (c->window_ms <= 0)
        return tm_err_set(err, "backfill.window must be positive (got %lld ms)",
                          (long long)c->window_ms);
    if (c->default_runtime_ms < 0)
        return tm_err_set(err, "backfill.defaultRuntime must not be negative (got %lld ms)",
                          (long long)c->default_runtime_ms);
    return 0;
}

bf_plan *bf_plan_new(void) {
    return calloc(1, sizeof(bf_plan));
}

static void reset(bf_plan *p) {
    for (size_t i = 0; i < p->n_nodes; i++)
        free(p->prof[i].v);
    free(p->prof);
    free(p->alloc);
    free(p->job_start);
    p->prof = NULL;
    p->alloc = NULL;
    p->job_start = NULL;
    p->n_nodes = p->n_jobs = p->n_shadows = p->n_holds = 0;
}

void bf_plan_free(bf_plan *p) {
    if (!p)
        return;
    reset(p);
    free(p->shadows);
    free(p->holds);
    free(p);
}

/* v (n used of *cap elements of elem bytes) with room for one more: v itself while there is,
 * else reallocated to twice *cap (first when empty) with *cap updated. NULL on OOM (v kept). */
static void *room_for_one(void *v, size_t n, size_t *cap, size_t elem, size_t first) {
    if (n < *cap)
        return v;
    size_t c = *cap ? *cap * 2 : first;
    void *nv = realloc(v, c * elem);
    if (nv)
        *cap = c;
    return nv;
}

static int prof_add(node_prof *np, int64_t start, int64_t end, const sched_resources *req,
                    bool now_job) {
    ivl *v = room_for_one(np->v, np->n, &np->cap, sizeof *v, 8);
    if (!v)
        return -1;
    np->v = v;
    np->v[np->n++] = (ivl){.start = start, .end = end, .req = *req, .now_job = now_job};
    return 0;
}

/* Peak use of node np over [t0, t1): use only rises where an interval starts, so the peak is
 * at t0 or at a start inside the window. with_now: count the jobs planned to start now. */
static void peak(const node_prof *np, int64_t t0, int64_t t1, bool with_now, int width,
                 sched_resources *out) {
    memset(out, 0, (size_t)width * sizeof out->v[0]);
    for (size_t c = 0; c <= np->n; c++) {
        int64_t t = c == np->n ? t0 : np->v[c].start;
        if (c < np->n && (t <= t0 || t >= t1))
            continue;
        int64_t u[SCHED_RES_MAX];
        memset(u, 0, (size_t)width * sizeof u[0]);
        for (size_t i = 0; i < np->n; i++) {
            const ivl *x = &np->v[i];
            if ((x->now_job && !with_now) || x->start > t || x->end <= t)
                continue;
            for (int k = 0; k < width; k++)
                u[k] += x->req.v[k];
        }
        for (int k = 0; k < width; k++)
            if (u[k] > out->v[k])
                out->v[k] = u[k];
    }
}

/* Whether req fits in avail over the first width slots (the plan's; the rule's checks pass
 * SCHED_RES_MAX: a pod may ask for what nothing in the plan has). */
static bool fits(const sched_resources *avail, const sched_resources *req, int width) {
    for (int k = 0; k < width; k++)
        if (req->v[k] > 0 && req->v[k] > avail->v[k])
            return false;
    return true;
}

static void sub(sched_resources *a, const sched_resources *b, int width) {
    for (int k = 0; k < width; k++)
        a->v[k] -= b->v[k];
}

/* The highest non-zero slot of r + 1, at least w. */
static int widen(int w, const sched_resources *r) {
    for (int k = SCHED_RES_MAX; k > w; k--)
        if (r->v[k - 1] != 0)
            return k;
    return w;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t round_up(int64_t t, int64_t res) {
    int64_t r = t % res;
    return r ? t + (res - r) : t;
}

/* Candidate start times: now, then every end after now rounded up to the resolution, sorted,
 * distinct, none past now + window. When there are more than BF_MAX_CANDIDATES, the step is
 * doubled until they fit: the whole window stays covered, more coarsely (a shadow may start up
 * to one step late, never early). buf holds one slot per interval (+1). Returns how many. */
static size_t candidates(const bf_plan *p, int64_t *buf) {
    size_t n = 0;
    int64_t last = p->now + p->cfg.window_ms;
    buf[n++] = p->now;
    for (size_t i = 0; i < p->n_nodes; i++)
        for (size_t j = 0; j < p->prof[i].n; j++) {
            int64_t e = p->prof[i].v[j].end;
            if (e > p->now && e != INT64_MAX && e <= last)
                buf[n++] = e;
        }
    qsort(buf + 1, n - 1, sizeof *buf, cmp_i64);
    for (int64_t res = p->cfg.resolution_ms;; res *= 2) {
        size_t m = 1;
        for (size_t i = 1; i < n; i++) {
            int64_t e = round_up(buf[i], res);
            if (e <= last && e > buf[m - 1])
                buf[m++] = e;
        }
        /* rounding the rounded values up to twice the step is rounding the ends up to it */
        n = m;
        if (m <= BF_MAX_CANDIDATES || res > p->cfg.window_ms) {
            n = m < BF_MAX_CANDIDATES ? m : BF_MAX_CANDIDATES;
            break;
        }
    }
    return n;
}

/* First fit of job's members at [t, t1): node of member i into where[i]. false: no fit. */
static bool place_at(const bf_plan *p, const bf_job *job, int64_t t, int64_t t1,
                     sched_resources *avail, bool *known, int *where) {
    memset(known, 0, p->n_nodes * sizeof *known);
    for (size_t m = 0; m < job->n_members; m++) {
        where[m] = -1;
        for (size_t n = 0; n < p->n_nodes; n++) {
            if (job->eligible && !job->eligible[n])
                continue;
            if (!known[n]) {
                sched_resources pk;
                peak(&p->prof[n], t, t1, true, p->width, &pk);
                memcpy(avail[n].v, p->alloc[n].v, (size_t)p->width * sizeof avail[n].v[0]);
                sub(&avail[n], &pk, p->width);
                known[n] = true;
            }
            if (fits(&avail[n], &job->member_req[m], p->width)) {
                sub(&avail[n], &job->member_req[m], p->width);
                where[m] = (int)n;
                break;
            }
        }
        if (where[m] < 0)
            return false;
    }
    return true;
}

static int add_shadow(bf_plan *p, size_t j, const bf_job *job, int64_t t, int64_t t1,
                      const int *where) {
    bf_shadow *sv = room_for_one(p->shadows, p->n_shadows, &p->cap_shadows, sizeof *sv, 4);
    if (!sv)
        return -1;
    p->shadows = sv;
    bf_shadow *s = &p->shadows[p->n_shadows++];
    *s = (bf_shadow){.job = j, .key = job->key, .start_ms = t, .end_ms = t1};
    size_t first = p->n_holds;
    for (size_t m = 0; m < job->n_members; m++) {
        size_t h = first;
        while (h < p->n_holds && p->holds[h].node != where[m])
            h++;
        if (h == p->n_holds) {
            bf_shadow_hold *hv = room_for_one(p->holds, p->n_holds, &p->cap_holds, sizeof *hv, 16);
            if (!hv)
                return -1;
            p->holds = hv;
            p->holds[p->n_holds++] = (bf_shadow_hold){.node = where[m]};
        }
        for (int k = 0; k < p->width; k++)
            p->holds[h].req.v[k] += job->member_req[m].v[k];
    }
    s->n_holds = p->n_holds - first;
    /* holds are pointed at once the array stops moving (the end of compute) */
    s->holds = (const bf_shadow_hold *)(uintptr_t)first;
    return 0;
}

/* Jobs that found no start at all, remembered within one plan (the latest BF_FAILED_KEPT). */
#define BF_FAILED_KEPT 4

/* Whether b asks exactly what a asked: the same members' requests over the plan's width, runtime,
 * not-before and eligible nodes. */
static bool same_ask(const bf_job *a, const bf_job *b, int width, size_t n_nodes) {
    if (a->n_members != b->n_members || a->runtime_ms != b->runtime_ms ||
        a->not_before_ms != b->not_before_ms || !a->eligible != !b->eligible)
        return false;
    for (size_t m = 0; m < a->n_members; m++)
        if (memcmp(a->member_req[m].v, b->member_req[m].v,
                   (size_t)width * sizeof a->member_req[m].v[0]))
            return false;
    return !a->eligible || a->eligible == b->eligible ||
           memcmp(a->eligible, b->eligible, n_nodes * sizeof *a->eligible) == 0;
}

/* Whether every member asks what the first asks. Only such a job's failure carries over: the
 * members are placed first fit, one by one, and for members that differ (a driver and its
 * workers) that is not monotone: less room on one node can send the first member elsewhere and
 * let the job fit. For identical members it fits exactly when the nodes' counts add up. */
static bool uniform(const bf_job *job, int width) {
    for (size_t m = 1; m < job->n_members; m++)
        if (memcmp(job->member_req[m].v, job->member_req[0].v,
                   (size_t)width * sizeof job->member_req[0].v[0]))
            return false;
    return true;
}

int bf_plan_compute(bf_plan *p, const bf_config *cfg, const sched_resources *alloc, size_t n_nodes,
                    const bf_running *run, size_t n_run, const bf_busy *busy, size_t n_busy,
                    const bf_job *jobs, size_t n_jobs, int64_t now_ms, tm_err *err) {
    if (bf_config_check(cfg, err))
        return -1;
    reset(p);
    p->cfg = *cfg;
    p->now = now_ms;
    p->n_nodes = n_nodes;
    p->n_jobs = n_jobs;
    p->prof = calloc(n_nodes ? n_nodes : 1, sizeof *p->prof);
    p->alloc = malloc((n_nodes ? n_nodes : 1) * sizeof *p->alloc);
    p->job_start = malloc((n_jobs ? n_jobs : 1) * sizeof *p->job_start);
    sched_resources *avail = malloc((n_nodes ? n_nodes : 1) * sizeof *avail);
    bool *known = malloc(n_nodes ? n_nodes : 1);
    int64_t *cand = NULL; /* candidate buffer, one slot per interval (+1), grown as needed */
    size_t cap_cand = 0;
    int *where = NULL;
    size_t max_members = 1;
    for (size_t j = 0; j < n_jobs; j++)
        if (jobs[j].n_members > max_members)
            max_members = jobs[j].n_members;
    where = malloc(max_members * sizeof *where);
    if (!p->prof || !p->alloc || !p->job_start || !avail || !known || !where)
        goto oom;
    if (n_nodes)
        memcpy(p->alloc, alloc, n_nodes * sizeof *alloc);
    int width = SCHED_RES_FIRST_EXT;
    for (size_t i = 0; i < n_nodes; i++)
        width = widen(width, &alloc[i]);
    for (size_t i = 0; i < n_run; i++)
        width = widen(width, &run[i].req);
    for (size_t i = 0; i < n_busy; i++)
        width = widen(width, &busy[i].req);
    for (size_t j = 0; j < n_jobs; j++)
        for (size_t m = 0; m < jobs[j].n_members; m++)
            width = widen(width, &jobs[j].member_req[m]);
    p->width = width;
    for (size_t j = 0; j < n_jobs; j++)
        p->job_start[j] = -1;
    int64_t step = cfg->resolution_ms;
    for (size_t i = 0; i < n_run; i++) {
        if (run[i].node < 0 || (size_t)run[i].node >= n_nodes)
            continue;
        int64_t end = run[i].end_ms;
        if (end < 0 && cfg->default_runtime_ms > 0)
            end = (run[i].start_ms > 0 ? run[i].start_ms : now_ms) + cfg->default_runtime_ms;
        if (end < 0)
            end = INT64_MAX; /* unknown: it may run forever */
        else if (end <= now_ms)
            end = now_ms + step; /* overrun: expected any moment */
        if (prof_add(&p->prof[run[i].node], now_ms, end, &run[i].req, false))
            goto oom;
    }
    for (size_t i = 0; i < n_busy; i++) {
        if (busy[i].node < 0 || (size_t)busy[i].node >= n_nodes || busy[i].end_ms <= now_ms)
            continue;
        int64_t s = busy[i].start_ms > now_ms ? busy[i].start_ms : now_ms;
        if (prof_add(&p->prof[busy[i].node], s, busy[i].end_ms, &busy[i].req, false))
            goto oom;
    }
    size_t tested = 0;
    /* A job that asks exactly what one that found no start asked finds none either, when its
     * members are alike (uniform): a job that fails adds nothing to the profiles, the ones placed
     * after it only add use, and the earliest feasible start is always now or an interval's
     * end, all of which were tried. So it is
     * skipped, still counted against maxJobTest: the plan is the same, made without trying
     * 5,000 nodes at every candidate time for each of thousands of identical pods (preemptors
     * waiting for their victims, a stream of the same wide pod). */
    size_t failed[BF_FAILED_KEPT], n_failed = 0;
    for (size_t j = 0; j < n_jobs && tested < (size_t)cfg->max_job_test; j++) {
        if (cfg->reserve_depth != BF_DEPTH_ALL && p->n_shadows >= (size_t)cfg->reserve_depth)
            break;
        const bf_job *job = &jobs[j];
        /* not before a time to come: never now, and no later than the window allows */
        int64_t nb = job->not_before_ms > now_ms ? job->not_before_ms : 0;
        if (job->n_members == 0 || (nb && nb > now_ms + cfg->window_ms))
            continue;
        tested++;
        bool hopeless = false;
        for (size_t f = 0; f < n_failed && f < BF_FAILED_KEPT && !hopeless; f++)
            hopeless = same_ask(&jobs[failed[f]], job, width, n_nodes);
        if (hopeless)
            continue;
        /* most jobs fit now: try that before working out the later start times */
        size_t nc = 1;
        int64_t t_now = now_ms;
        int64_t *times = &t_now;
        int64_t t1_now = job->runtime_ms >= 0 ? now_ms + job->runtime_ms : INT64_MAX;
        if (nb ||
            !place_at(p, job, now_ms, t1_now > now_ms ? t1_now : now_ms + 1, avail, known, where)) {
            size_t need = 1;
            for (size_t i = 0; i < n_nodes; i++)
                need += p->prof[i].n;
            if (need > cap_cand) {
                int64_t *v = realloc(cand, need * 2 * sizeof *v);
                if (!v)
                    goto oom;
                cand = v;
                cap_cand = need * 2;
            }
            nc = candidates(p, cand);
            times = cand;
        }
        int64_t tried = -1;
        for (size_t c = times == cand && !nb ? 1 : 0; c < nc; c++) { /* cand[0]: now, tried */
            int64_t t = times[c] < nb ? nb : times[c];
            if (t == tried)
                continue; /* every candidate before nb is nb */
            tried = t;
            int64_t t1 = job->runtime_ms >= 0 ? t + job->runtime_ms : INT64_MAX;
            if (t1 <= t)
                t1 = t + 1;
            if (!place_at(p, job, t, t1, avail, known, where))
                continue;
            bool now_job = t == now_ms && !job->hold_now;
            for (size_t m = 0; m < job->n_members; m++)
                if (prof_add(&p->prof[where[m]], t, t1, &job->member_req[m], now_job))
                    goto oom;
            if (!now_job && add_shadow(p, j, job, t, t1, where))
                goto oom;
            p->job_start[j] = t;
            break;
        }
        if (p->job_start[j] < 0 && uniform(job, width))
            failed[n_failed++ % BF_FAILED_KEPT] = j;
    }
    /* The holds array is final: point the shadows at it and work out each hold's spare, what
     * the node has beyond the running pods, the Reservations and every shadow during this
     * shadow (the pods planned to start now left out: their real placement is taken). */
    for (size_t i = 0; i < p->n_shadows; i++) {
        bf_shadow *s = &p->shadows[i];
        s->holds = p->holds + (size_t)(uintptr_t)s->holds;
        for (size_t h = 0; h < s->n_holds; h++) {
            bf_shadow_hold *sh = (bf_shadow_hold *)&s->holds[h];
            sched_resources pk;
            peak(&p->prof[sh->node], s->start_ms, s->end_ms, false, p->width, &pk);
            sh->spare = p->alloc[sh->node];
            sub(&sh->spare, &pk, p->width);
        }
    }
    free(avail);
    free(known);
    free(cand);
    free(where);
    return 0;
oom:
    free(avail);
    free(known);
    free(cand);
    free(where);
    reset(p);
    return tm_err_set(err, "backfill: out of memory planning shadows");
}

size_t bf_plan_shadow_count(const bf_plan *p) {
    return p->n_shadows;
}
const bf_shadow *bf_plan_shadow(const bf_plan *p, size_t i) {
    return i < p->n_shadows ? &p->shadows[i] : NULL;
}
int64_t bf_plan_job_start(const bf_plan *p, size_t j) {
    return j < p->n_jobs ? p->job_start[j] : -1;
}
const bf_shadow *bf_plan_shadow_of(const bf_plan *p, const char *key) {
    for (size_t i = 0; key && i < p->n_shadows; i++)
        if (p->shadows[i].key && strcmp(p->shadows[i].key, key) == 0)
            return &p->shadows[i];
    return NULL;
}

/* The hold of shadow s on node, NULL when s needs nothing there or does not bind the pod. */
static bf_shadow_hold *binding_hold(const bf_plan *p, size_t i, int node, const char *key,
                                    int64_t end_ms) {
    const bf_shadow *s = &p->shadows[i];
    if (key && s->key && strcmp(key, s->key) == 0)
        return NULL; /* its own shadow */
    if (end_ms >= 0 && end_ms <= s->start_ms)
        return NULL; /* gone before the shadow starts */
    for (size_t h = 0; h < s->n_holds; h++)
        if (s->holds[h].node == node)
            return (bf_shadow_hold *)&s->holds[h];
    return NULL;
}

/* The index of the shadow of the job with this key, n_shadows when it has none. Shadows are in
 * queue order: those before it are of jobs ahead of it. */
static size_t own_index(const bf_plan *p, const char *key) {
    for (size_t i = 0; key && i < p->n_shadows; i++)
        if (p->shadows[i].key && strcmp(p->shadows[i].key, key) == 0)
            return i;
    return p->n_shadows;
}

size_t bf_plan_shadows_ahead(const bf_plan *p, const char *key) {
    return own_index(p, key);
}

/* The job's own shadow own when it starts at the plan's now (a job held now), else NULL: a shadow
 * that starts later gives its pods no allowance, since started before its time a pod would use
 * the node while the plan had it free for others. */
static const bf_shadow *own_now(const bf_plan *p, size_t own) {
    return own < p->n_shadows && p->shadows[own].start_ms <= p->now ? &p->shadows[own] : NULL;
}

/* Its hold on node, NULL when none. */
static bf_shadow_hold *own_hold(const bf_plan *p, const bf_shadow *o, int node) {
    for (size_t h = 0; o && h < o->n_holds; h++)
        if (o->holds[h].node == node)
            return (bf_shadow_hold *)&o->holds[h];
    return NULL;
}

/* Whether shadow i's spare already counts own shadow o's hold for the whole stay of a pod ending
 * at end_ms (-1 unknown): their times overlap (o starts now, so o is counted from i's start) and
 * either i ends by o's end or the pod does (within the resolution: the pod starts a moment after
 * the plan). Otherwise the pod's requests are all new to i. */
static bool counted(const bf_plan *p, const bf_shadow *o, size_t i, int64_t end_ms) {
    const bf_shadow *s = &p->shadows[i];
    if (o->end_ms <= s->start_ms || s->end_ms <= o->start_ms)
        return false;
    if (s->end_ms <= o->end_ms)
        return true;
    return end_ms >= 0 && end_ms <= (o->end_ms > INT64_MAX - p->cfg.resolution_ms
                                         ? INT64_MAX
                                         : o->end_ms + p->cfg.resolution_ms);
}

/* What of req lies beyond the hold oh (may be NULL: all of it) once placed there, given what the
 * job's pods placed on it took (sign +1, bf_plan_take and check) or before one is given back
 * (sign -1, bf_plan_give): the change in max(placed - held, 0). Exact in any order of takes and
 * gives. */
static void beyond(const bf_shadow_hold *oh, const sched_resources *req, int sign,
                   sched_resources *out) {
    for (int k = 0; k < SCHED_RES_MAX; k++) {
        if (!oh) {
            out->v[k] = req->v[k];
            continue;
        }
        int64_t before = oh->placed.v[k], after = before + sign * req->v[k];
        int64_t ob = before > oh->req.v[k] ? before - oh->req.v[k] : 0;
        int64_t oa = after > oh->req.v[k] ? after - oh->req.v[k] : 0;
        out->v[k] = sign > 0 ? oa - ob : ob - oa;
    }
}

bf_verdict bf_plan_check(const bf_plan *p, int node, const char *key, const sched_resources *req,
                         int64_t end_ms, size_t *which) {
    size_t own = own_index(p, key);
    const bf_shadow *o = own_now(p, own);
    const bf_shadow_hold *oh = own_hold(p, o, node);
    sched_resources over;
    beyond(oh, req, +1, &over);
    for (size_t i = 0; i < own; i++) { /* the jobs ahead of it only */
        const bf_shadow_hold *h = binding_hold(p, i, node, key, end_ms);
        if (h && !fits(&h->spare, oh && counted(p, o, i, end_ms) ? &over : req, SCHED_RES_MAX)) {
            if (which)
                *which = i;
            return BF_DELAYS_SHADOW;
        }
    }
    return BF_OK;
}

/* bf_plan_take (sign +1) and bf_plan_give (-1): the other shadows binding the pod see its
 * requests, or only what of them lies beyond its own hold where they counted that, go or come
 * back; the shadows behind it too (they see less room there). */
static void account(bf_plan *p, int node, const char *key, const sched_resources *req,
                    int64_t end_ms, int sign) {
    size_t own = own_index(p, key);
    const bf_shadow *o = own_now(p, own);
    bf_shadow_hold *oh = own_hold(p, o, node);
    sched_resources over;
    beyond(oh, req, sign, &over);
    for (size_t i = 0; i < p->n_shadows; i++) {
        bf_shadow_hold *h = binding_hold(p, i, node, key, end_ms);
        const sched_resources *d = oh && counted(p, o, i, end_ms) ? &over : req;
        for (int k = 0; h && k < SCHED_RES_MAX; k++)
            h->spare.v[k] -= sign * d->v[k];
    }
    for (int k = 0; oh && k < SCHED_RES_MAX; k++)
        oh->placed.v[k] += sign * req->v[k];
}

void bf_plan_take(bf_plan *p, int node, const char *key, const sched_resources *req,
                  int64_t end_ms) {
    account(p, node, key, req, end_ms, +1);
}

void bf_plan_give(bf_plan *p, int node, const char *key, const sched_resources *req,
                  int64_t end_ms) {
    account(p, node, key, req, end_ms, -1);
}
