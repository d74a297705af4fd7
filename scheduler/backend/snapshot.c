/* snapshot.c: the cluster snapshot (nodes, pods per node, node groups, task profiles); what it
 * keeps of each placed pod (labels, terms, ports) is pod_meta.c.
 *
 * Lookups by name go through small open-addressing string maps so that the live cache can apply
 * watch events one by one on 5,000 nodes and 10,000 pods without scans; the scans that remain
 * (a node removed, a node added while pods already name it) are rare events.
 *
 * Next to the nodes the snapshot keeps their hot fields as columns (sched_node_cols: flags,
 * free resources, load, group, name rank), re-derived from the node on every change to it, so
 * the scheduling cycle scans arrays and never recomputes a node's load per pod. */
#include "scheduler/backend/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/labelvalue.h"
#include "scheduler/backend/namecount.h"

/* ---- string map: key -> void*, keys borrowed from the values' own storage ---- */

typedef struct smap_ent {
    const char *key; /* NULL empty; TOMB deleted */
    uint64_t hash;
    void *val;
} smap_ent;

typedef struct smap {
    smap_ent *e;
    size_t cap, used, live; /* used counts tombstones too */
} smap;

static const char smap_tomb_[1];
#define TOMB smap_tomb_

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static smap_ent *smap_find(const smap *m, const char *key, uint64_t h) {
    if (!m->cap)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        smap_ent *e = &m->e[i];
        if (!e->key)
            return NULL;
        if (e->key != TOMB && e->hash == h && strcmp(e->key, key) == 0)
            return e;
    }
}

static void *smap_get(const smap *m, const char *key) {
    smap_ent *e = smap_find(m, key, str_hash(key));
    return e ? e->val : NULL;
}

static int smap_grow(smap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    while (m->live * 2 >= ncap)
        ncap *= 2;
    smap_ent *ne = calloc(ncap, sizeof *ne);
    if (!ne)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        smap_ent *e = &m->e[i];
        if (!e->key || e->key == TOMB)
            continue;
        size_t j = e->hash & (ncap - 1);
        while (ne[j].key)
            j = (j + 1) & (ncap - 1);
        ne[j] = *e;
    }
    free(m->e);
    m->e = ne;
    m->cap = ncap;
    m->used = m->live;
    return 0;
}

/* Inserts or replaces; key must stay valid while in the map. */
static int smap_put(smap *m, const char *key, void *val) {
    uint64_t h = str_hash(key);
    smap_ent *e = smap_find(m, key, h);
    if (e) {
        e->key = key;
        e->val = val;
        return 0;
    }
    if ((m->used + 1) * 4 >= m->cap * 3 && smap_grow(m) != 0)
        return -1;
    size_t i = h & (m->cap - 1);
    while (m->e[i].key && m->e[i].key != TOMB)
        i = (i + 1) & (m->cap - 1);
    if (!m->e[i].key)
        m->used++;
    m->e[i] = (smap_ent){key, h, val};
    m->live++;
    return 0;
}

static void smap_del(smap *m, const char *key) {
    smap_ent *e = smap_find(m, key, str_hash(key));
    if (e) {
        e->key = TOMB;
        e->val = NULL;
        m->live--;
    }
}

/* ---- snapshot ---- */

struct spod;
/* The pods counted on one node, so that what is on a node (preemption's victims) costs that
 * node's pods, not every pod's. */
typedef struct npods {
    struct spod **p;
    uint32_t n, cap;
} npods;

typedef struct spod {
    char *uid;
    char *node;
    /* Its requests: slots 0..n_req-1 (the rest are 0). Most pods ask for three or four of the
     * 64 slots, and a full sched_resources per placed pod was a fifth of the scheduler's memory
     * on a cluster of 50,000 pods (heaptrack, docs/performance.md). */
    int64_t *req;
    sched_xres *x; /* its requests of resources kept sparsely (snapshot.h), NULL when none */
    uint8_t n_req;
    bool counted;      /* its requests are in its node's `requested` */
    bool listed;       /* in its node's pod list (npods): counted, and the list had room */
    bool hidden;       /* taken out for a what-if (sched_snapshot_hide_pod): neither counted nor in
                        * n_uncounted nor in any pod set */
    uint16_t n_x;      /* entries of x (nearly every pod: 0) */
    uint32_t node_pos; /* its position in its node's pod list */
    int32_t node_i;    /* its node's index while listed (kept when nodes move: remove_node),
                        * so that the pod sets answer it without a lookup by name */
    sched_pod_meta *meta;               /* NULL when recorded without metadata */
    size_t set_pos[SCHED_PODSET_COUNT]; /* index in each pod set it belongs to */
} spod;

/* Adds (sign 1) or takes away (-1) a placed pod's requests on node n: the fixed slots, and
 * the sparse ones the node advertises (a request of one it does not is not kept: no pod asking
 * for it fits there whatever is in use). */
static void req_add(sched_node *n, const spod *p, int sign) {
    for (int i = 0; i < p->n_req; i++)
        n->requested.v[i] += sign * p->req[i];
    for (uint16_t k = 0; k < p->n_x; k++) {
        int j = sched_xres_index(n->xalloc, n->n_xalloc, p->x[k].id);
        if (j >= 0)
            n->xused[j] += sign * p->x[k].v;
    }
}

/* Records r and x[0..nx-1] (sorted by id) as p's requests, both or neither: 0, or -1 when out
 * of memory (p's requests unchanged). */
static int req_store(spod *p, const sched_resources *r, const sched_xres *x, uint32_t nx) {
    int n = SCHED_RES_MAX;
    while (n > 0 && r->v[n - 1] == 0)
        n--;
    if (nx > UINT16_MAX)
        nx = UINT16_MAX; /* a pod names far fewer resources: the API server caps its size */
    int64_t *a = NULL;
    sched_xres *b = NULL;
    if ((n > 0 && !(a = malloc((size_t)n * sizeof *a))) ||
        (nx > 0 && !(b = malloc(nx * sizeof *b)))) {
        free(a);
        return -1;
    }
    if (n > 0)
        memcpy(a, r->v, (size_t)n * sizeof *a);
    if (nx > 0)
        memcpy(b, x, nx * sizeof *b);
    free(p->req);
    p->req = a;
    p->n_req = (uint8_t)n;
    free(p->x);
    p->x = b;
    p->n_x = (uint16_t)nx;
    return 0;
}

/* p's requests as a full vector. */
static void req_load(const spod *p, sched_resources *out) {
    memset(out, 0, sizeof *out);
    if (p->n_req > 0)
        memcpy(out->v, p->req, (size_t)p->n_req * sizeof *p->req);
}

typedef struct stask {
    char *key; /* workflow "\x1f" process */
    sched_task_profile tp;
} stask;

struct sched_snapshot {
    char *res_names[SCHED_RES_MAX];
    int n_res;
    /* names refused a slot (all used), kept sparsely: the index is the id (sched_xres); the
     * first n_xnames_told were returned by sched_snapshot_xres_next */
    char **xnames;
    size_t n_xnames, n_xnames_told;
    sched_node **nodes;
    size_t n_nodes, cap_nodes;
    npods *npods;  /* per node index (cap_nodes entries): the pods counted on it */
    smap node_idx; /* name -> (index + 1) */
    smap pods;     /* uid -> spod* */
    size_t n_uncounted;
    smap tasks;                 /* key -> stask* */
    sched_volumes *volumes;     /* NULL: not tracked (volumes.h) */
    sched_nominated *nominated; /* NULL: none (nominated.h) */
    sched_pdbs *pdbs;           /* NULL: none (pdb.h) */
    sched_owner_sels *owners;   /* NULL: none (owner_selectors.h) */
    sched_group *groups;
    char **group_ids;
    size_t n_groups;
    uint32_t *by_name;
    bool dirty;
    spod **sets[SCHED_PODSET_COUNT]; /* dense pod sets, see sched_podset */
    size_t set_n[SCHED_PODSET_COUNT], set_cap[SCHED_PODSET_COUNT];
    /* node columns (sched_node_cols), cols_cap entries each, carved from one block so that
     * growing them either fully succeeds or changes nothing */
    void *cols_block;
    size_t cols_cap;
    uint8_t *c_flags;
    size_t n_flagged; /* nodes whose c_flags is not 0 */
    double *c_load;
    int32_t *c_group;
    uint32_t *c_rank;
    uint32_t *c_taint;
    int64_t *c_free[SCHED_RES_MAX];
    size_t n_prefer_taint;   /* nodes with a PreferNoSchedule taint (sched_node_cols) */
    sched_namecount *images; /* image name -> nodes holding it (namecount.h) */
};

static const char *const builtin_res[SCHED_RES_FIRST_EXT] = {"cpu", "memory", "ephemeral-storage",
                                                             "pods"};

sched_snapshot *sched_snapshot_new(void) {
    sched_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (int i = 0; i < SCHED_RES_FIRST_EXT; i++) {
        s->res_names[i] = strdup(builtin_res[i]);
        if (!s->res_names[i]) {
            sched_snapshot_free(s);
            return NULL;
        }
    }
    s->n_res = SCHED_RES_FIRST_EXT;
    return s;
}

static void free_groups(sched_snapshot *s) {
    for (size_t i = 0; i < s->n_groups; i++)
        free(s->group_ids[i]);
    free(s->group_ids);
    free(s->groups);
    s->group_ids = NULL;
    s->groups = NULL;
    s->n_groups = 0;
}

void sched_snapshot_free(sched_snapshot *s) {
    if (!s)
        return;
    for (int i = 0; i < SCHED_RES_MAX; i++)
        free(s->res_names[i]);
    for (size_t i = 0; i < s->n_xnames; i++)
        free(s->xnames[i]);
    free(s->xnames);
    for (size_t i = 0; i < s->n_nodes; i++)
        sched_node_free(s->nodes[i]);
    free(s->nodes);
    for (size_t i = 0; s->npods && i < s->cap_nodes; i++)
        free(s->npods[i].p);
    free(s->npods);
    free(s->node_idx.e);
    for (size_t i = 0; i < s->pods.cap; i++) {
        smap_ent *e = &s->pods.e[i];
        if (e->key && e->key != TOMB) {
            spod *p = e->val;
            sched_pod_meta_free(p->meta);
            free(p->uid);
            free(p->node);
            free(p->req);
            free(p->x);
            free(p);
        }
    }
    free(s->pods.e);
    for (int k = 0; k < SCHED_PODSET_COUNT; k++)
        free(s->sets[k]);
    for (size_t i = 0; i < s->tasks.cap; i++) {
        smap_ent *e = &s->tasks.e[i];
        if (e->key && e->key != TOMB) {
            stask *t = e->val;
            free(t->key);
            free(t);
        }
    }
    free(s->tasks.e);
    free_groups(s);
    free(s->by_name);
    free(s->cols_block);
    sched_namecount_free(s->images);
    free(s);
}

int sched_snapshot_xres_find(const sched_snapshot *s, const char *name) {
    for (size_t i = 0; i < s->n_xnames; i++)
        if (strcmp(s->xnames[i], name) == 0)
            return (int)i;
    return -1;
}

int sched_snapshot_xres_id(sched_snapshot *s, const char *name, tm_err *err) {
    int id = sched_snapshot_xres_find(s, name);
    if (id >= 0)
        return id;
    if (s->n_xnames >= INT32_MAX)
        return tm_err_set(err, "too many distinct resource names");
    char **u = realloc(s->xnames, (s->n_xnames + 1) * sizeof *u);
    if (!u)
        return tm_err_set(err, "out of memory");
    s->xnames = u;
    if (!(u[s->n_xnames] = strdup(name)))
        return tm_err_set(err, "out of memory");
    return (int)s->n_xnames++;
}

const char *sched_snapshot_xres_name(const sched_snapshot *s, uint32_t id) {
    return id < s->n_xnames ? s->xnames[id] : NULL;
}

const char *sched_snapshot_xres_next(sched_snapshot *s) {
    return s->n_xnames_told < s->n_xnames ? s->xnames[s->n_xnames_told++] : NULL;
}

int sched_snapshot_resource_find(const sched_snapshot *s, const char *name) {
    for (int i = 0; i < s->n_res; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return i;
    return -1;
}

int sched_snapshot_resource_slot(sched_snapshot *s, const char *name, tm_err *err) {
    int found = sched_snapshot_resource_find(s, name);
    if (found >= 0)
        return found;
    if (s->n_res >= SCHED_RES_MAX)
        return SCHED_RES_NO_SLOT;
    char *dup = strdup(name);
    if (!dup)
        return tm_err_set(err, "out of memory");
    /* the slot's column held nothing so far: every node has 0 of it free (cols_sync_res only
     * writes the slots in use) */
    if (s->cols_cap)
        memset(s->c_free[s->n_res], 0, s->n_nodes * sizeof *s->c_free[s->n_res]);
    s->res_names[s->n_res] = dup;
    return s->n_res++;
}

const char *sched_snapshot_resource_name(const sched_snapshot *s, int slot) {
    return slot >= 0 && slot < s->n_res ? s->res_names[slot] : NULL;
}

int sched_snapshot_resource_count(const sched_snapshot *s) {
    return s->n_res;
}

/* Slots past n_res are 0 in every vector built for this snapshot: only used slots count. */
/* tarema.io/{cpu,mem,io}: positive integers, anything else is "unknown" (0). */
static int parse_label_int(const char *v) {
    if (!v || !*v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end || x < 1 || x > 1000000) ? 0 : (int)x;
}

static void node_parse_tarema(sched_node *n) {
    static const char *const keys[SCHED_NFEAT] = {"tarema.io/cpu", "tarema.io/mem", "tarema.io/io"};
    for (int k = 0; k < SCHED_NFEAT; k++)
        n->labels_t[k] = parse_label_int(sched_node_label(n, keys[k]));
}

/* ---- node columns ---- */

/* Makes room for `need` nodes in the columns, keeping the first n_nodes entries. 0, or -1 on
 * OOM with the old columns untouched. */
static int cols_reserve(sched_snapshot *s, size_t need) {
    if (need <= s->cols_cap)
        return 0;
    size_t ncap = s->cols_cap ? s->cols_cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    /* 8-byte columns first, then 4-byte, then bytes: every column stays aligned */
    size_t per = sizeof(double) + SCHED_RES_MAX * sizeof(int64_t) + sizeof(int32_t) +
                 2 * sizeof(uint32_t) + sizeof(uint8_t);
    char *b = malloc(ncap * per);
    if (!b)
        return -1;
    double *load = (double *)(void *)b;
    int64_t *fr[SCHED_RES_MAX];
    char *at = b + ncap * sizeof(double);
    for (int r = 0; r < SCHED_RES_MAX; r++, at += ncap * sizeof(int64_t))
        fr[r] = (int64_t *)(void *)at;
    int32_t *group = (int32_t *)(void *)at;
    at += ncap * sizeof(int32_t);
    uint32_t *rank = (uint32_t *)(void *)at;
    at += ncap * sizeof(uint32_t);
    uint32_t *taint = (uint32_t *)(void *)at;
    at += ncap * sizeof(uint32_t);
    uint8_t *flags = (uint8_t *)at;
    size_t n = s->n_nodes;
    if (n) {
        memcpy(load, s->c_load, n * sizeof *load);
        for (int r = 0; r < s->n_res; r++) /* the others are written when their slot is */
            memcpy(fr[r], s->c_free[r], n * sizeof *fr[r]);
        memcpy(group, s->c_group, n * sizeof *group);
        memcpy(rank, s->c_rank, n * sizeof *rank);
        memcpy(taint, s->c_taint, n * sizeof *taint);
        memcpy(flags, s->c_flags, n * sizeof *flags);
    }
    free(s->cols_block);
    s->cols_block = b;
    s->cols_cap = ncap;
    s->c_load = load;
    for (int r = 0; r < SCHED_RES_MAX; r++)
        s->c_free[r] = fr[r];
    s->c_group = group;
    s->c_rank = rank;
    s->c_taint = taint;
    s->c_flags = flags;
    return 0;
}

/* Re-derives the columns that depend on requests and allocatable for node i. */
static void cols_sync_res(sched_snapshot *s, size_t i) {
    const sched_node *n = s->nodes[i];
    s->c_load[i] = sched_node_load(n);
    for (int r = 0; r < s->n_res; r++)
        s->c_free[r][i] = n->allocatable.v[r] - n->requested.v[r];
}

/* Re-derives every column of node i (after it was put or moved); fresh: the slot held no
 * counted node before. */
static void cols_sync(sched_snapshot *s, size_t i, bool fresh) {
    const sched_node *n = s->nodes[i];
    if (!fresh && s->c_flags[i])
        s->n_flagged--;
    uint8_t f = 0;
    if (!n->ready)
        f |= SCHED_NODE_NOT_READY;
    if (n->unschedulable)
        f |= SCHED_NODE_UNSCHEDULABLE;
    uint32_t first = 0;
    for (size_t t = n->n_taints; t-- > 0;)
        if (n->taints[t].effect != SCHED_EFFECT_PREFER_NO_SCHEDULE) { /* as the taint filter */
            f |= SCHED_NODE_HARD_TAINT;
            first = (uint32_t)t;
        }
    s->c_taint[i] = first;
    s->c_flags[i] = f;
    s->n_flagged += f != 0;
    s->c_group[i] = n->group;
    s->c_rank[i] = n->name_rank;
    cols_sync_res(s, i);
}

void sched_snapshot_node_cols(const sched_snapshot *s, sched_node_cols *out) {
    out->n = s->n_nodes;
    out->n_flagged = s->n_flagged;
    out->flags = s->c_flags;
    out->load = s->c_load;
    out->group = s->c_group;
    out->name_rank = s->c_rank;
    out->hard_taint = s->c_taint;
    for (int r = 0; r < SCHED_RES_MAX; r++)
        out->free[r] = s->c_free[r];
    out->n_prefer_taint = s->n_prefer_taint;
}

static bool has_prefer_taint(const sched_node *n) {
    for (size_t t = 0; t < n->n_taints; t++)
        if (n->taints[t].effect == SCHED_EFFECT_PREFER_NO_SCHEDULE)
            return true;
    return false;
}

size_t sched_snapshot_image_nodes(const sched_snapshot *s, const char *name) {
    return sched_namecount_get(s->images, name);
}

size_t sched_snapshot_image_names(const sched_snapshot *s) {
    return sched_namecount_live(s->images);
}

/* Counts node n's image names once more (sign +1) or once less (-1). All or nothing: -1 when
 * out of memory adding (then none of n's names is counted). */
static int count_images(sched_snapshot *s, const sched_node *n, int sign) {
    for (size_t i = 0; i < n->n_images; i++) {
        if (sign < 0) {
            sched_namecount_drop(s->images, n->images[i].name);
        } else if (sched_namecount_add(&s->images, n->images[i].name) != 0) {
            while (i-- > 0)
                sched_namecount_drop(s->images, n->images[i].name);
            return -1;
        }
    }
    return 0;
}

/* Lists p on node index i (it was just counted there). Out of memory: not listed (it still
 * counts; it is then only invisible to sched_snapshot_node_pod). */
static void list_join(sched_snapshot *s, spod *p, size_t i) {
    npods *l = &s->npods[i];
    p->listed = false;
    if (l->n == l->cap) {
        uint32_t ncap = l->cap ? 2 * l->cap : 8;
        spod **np = realloc(l->p, ncap * sizeof *np);
        if (!np)
            return;
        l->p = np;
        l->cap = ncap;
    }
    p->node_pos = l->n;
    l->p[l->n++] = p;
    p->listed = true;
    p->node_i = (int32_t)i;
}

/* Unlists p from node index i. */
static void list_leave(sched_snapshot *s, spod *p, size_t i) {
    if (!p->listed)
        return;
    npods *l = &s->npods[i];
    spod *last = l->p[--l->n];
    l->p[p->node_pos] = last;
    last->node_pos = p->node_pos;
    p->listed = false;
}

/* Counts every recorded pod naming node n (index i) that is not counted yet. */
static void attach_pods(sched_snapshot *s, sched_node *n, size_t idx) {
    if (!s->n_uncounted)
        return;
    for (size_t i = 0; i < s->pods.cap; i++) {
        smap_ent *e = &s->pods.e[i];
        if (!e->key || e->key == TOMB)
            continue;
        spod *p = e->val;
        if (!p->counted && !p->hidden && strcmp(p->node, n->name) == 0) {
            req_add(n, p, 1);
            p->counted = true;
            list_join(s, p, idx);
            s->n_uncounted--;
        }
    }
}

/* Gives node its xused (snapshot.h): zeros for a new node (attach_pods counts its pods), and
 * for one replacing old what old had in use of the same resource, summed from the pods counted
 * there for a resource old did not advertise (rare: a pass over the pods only then). 0, or -1
 * when out of memory. */
static int xused_init(sched_snapshot *s, sched_node *node, const sched_node *old) {
    free(node->xused);
    node->xused = NULL;
    if (!node->n_xalloc)
        return 0;
    if (!(node->xused = calloc(node->n_xalloc, sizeof *node->xused)))
        return -1;
    for (uint32_t k = 0; old && k < node->n_xalloc; k++) {
        int j = sched_xres_index(old->xalloc, old->n_xalloc, node->xalloc[k].id);
        if (j >= 0) {
            node->xused[k] = old->xused[j];
            continue;
        }
        /* every pod counted there (a pod the node's list had no room for counts too) */
        for (size_t i = 0; i < s->pods.cap; i++) {
            smap_ent *e = &s->pods.e[i];
            if (!e->key || e->key == TOMB)
                continue;
            const spod *q = e->val;
            if (q->n_x && q->counted && strcmp(q->node, old->name) == 0)
                node->xused[k] += sched_xres_get(q->x, q->n_x, node->xalloc[k].id);
        }
    }
    return 0;
}

/* A new node that could not be added: its image and taint counts out again, the node freed. */
static int put_node_undo(sched_snapshot *s, sched_node *node, tm_err *err) {
    count_images(s, node, -1);
    s->n_prefer_taint -= has_prefer_taint(node);
    sched_node_free(node);
    return tm_err_set(err, "out of memory adding a node");
}

int sched_snapshot_put_node(sched_snapshot *s, sched_node *node, tm_err *err) {
    if (!node || !node->name || !*node->name) {
        sched_node_free(node);
        return tm_err_set(err, "node without a name");
    }
    node_parse_tarema(node);
    node->group = -1;
    /* the node's images are counted first: the only step here that can fail leaves nothing
     * changed (undone below if adding the node fails later) */
    if (count_images(s, node, +1) != 0) {
        sched_node_free(node);
        return tm_err_set(err, "out of memory adding a node's images");
    }
    s->n_prefer_taint += has_prefer_taint(node);
    s->dirty = true;
    uintptr_t idx1 = (uintptr_t)smap_get(&s->node_idx, node->name);
    if (idx1) {
        sched_node *old = s->nodes[idx1 - 1];
        if (xused_init(s, node, old) != 0)
            return put_node_undo(s, node, err);
        count_images(s, old, -1);
        s->n_prefer_taint -= has_prefer_taint(old);
        node->requested = old->requested;
        s->nodes[idx1 - 1] = node;
        cols_sync(s, idx1 - 1, false);
        /* the map key points into the node's name: repoint it before freeing the old one */
        smap_put(&s->node_idx, node->name, (void *)idx1);
        sched_node_free(old);
        return 0;
    }
    if (cols_reserve(s, s->n_nodes + 1) != 0)
        return put_node_undo(s, node, err);
    if (s->n_nodes == s->cap_nodes) {
        size_t ncap = s->cap_nodes ? s->cap_nodes * 2 : 64;
        sched_node **nn = realloc(s->nodes, ncap * sizeof *nn);
        if (!nn)
            return put_node_undo(s, node, err);
        s->nodes = nn;
        npods *nl = realloc(s->npods, ncap * sizeof *nl);
        if (!nl)
            return put_node_undo(s, node, err);
        memset(nl + s->cap_nodes, 0, (ncap - s->cap_nodes) * sizeof *nl);
        s->npods = nl;
        s->cap_nodes = ncap;
    }
    memset(&node->requested, 0, sizeof node->requested);
    if (xused_init(s, node, NULL) != 0)
        return put_node_undo(s, node, err);
    if (smap_put(&s->node_idx, node->name, (void *)(uintptr_t)(s->n_nodes + 1)) != 0)
        return put_node_undo(s, node, err);
    s->nodes[s->n_nodes++] = node;
    attach_pods(s, node, s->n_nodes - 1);
    cols_sync(s, s->n_nodes - 1, true);
    return 0;
}

int sched_snapshot_remove_node(sched_snapshot *s, const char *name) {
    uintptr_t idx1 = (uintptr_t)smap_get(&s->node_idx, name);
    if (!idx1)
        return -1;
    size_t i = idx1 - 1;
    sched_node *n = s->nodes[i];
    for (size_t k = 0; k < s->pods.cap; k++) {
        smap_ent *e = &s->pods.e[k];
        if (!e->key || e->key == TOMB)
            continue;
        spod *p = e->val;
        if (p->counted && strcmp(p->node, name) == 0) {
            p->counted = false;
            p->listed = false; /* the node's list goes with it */
            s->n_uncounted++;
        }
    }
    free(s->npods[i].p);
    smap_del(&s->node_idx, name);
    count_images(s, n, -1);
    s->n_prefer_taint -= has_prefer_taint(n);
    sched_node_free(n);
    s->n_flagged -= s->c_flags[i] != 0;
    s->n_nodes--;
    s->npods[i] = s->npods[s->n_nodes]; /* its pods' positions in it do not change */
    memset(&s->npods[s->n_nodes], 0, sizeof *s->npods);
    for (uint32_t k = 0; i != s->n_nodes && k < s->npods[i].n; k++)
        s->npods[i].p[k]->node_i = (int32_t)i; /* their node is at its new index */
    if (i != s->n_nodes) {                     /* the last node moves into the hole */
        s->n_flagged -= s->c_flags[s->n_nodes] != 0;
        s->nodes[i] = s->nodes[s->n_nodes];
        smap_put(&s->node_idx, s->nodes[i]->name, (void *)(uintptr_t)(i + 1));
        cols_sync(s, i, true);
    }
    s->dirty = true;
    return 0;
}

size_t sched_snapshot_node_count(const sched_snapshot *s) {
    return s->n_nodes;
}

const sched_node *sched_snapshot_node(const sched_snapshot *s, size_t i) {
    return i < s->n_nodes ? s->nodes[i] : NULL;
}

int sched_snapshot_node_index(const sched_snapshot *s, const char *name) {
    uintptr_t idx1 = name ? (uintptr_t)smap_get(&s->node_idx, name) : 0;
    return idx1 ? (int)(idx1 - 1) : -1;
}

const sched_node *sched_snapshot_node_by_name(const sched_snapshot *s, const char *name) {
    int i = sched_snapshot_node_index(s, name);
    return i < 0 ? NULL : s->nodes[i];
}

static void pod_uncount(sched_snapshot *s, spod *p) {
    if (p->counted) {
        int i = sched_snapshot_node_index(s, p->node);
        if (i >= 0) {
            req_add(s->nodes[i], p, -1);
            cols_sync_res(s, (size_t)i);
            list_leave(s, p, (size_t)i);
        }
        p->counted = false;
    } else {
        s->n_uncounted--;
    }
}

/* ---- pod sets ---- */

static bool in_set(const sched_pod_meta *m, int k) {
    if (!m)
        return false;
    return k == SCHED_PODSET_META || (k == SCHED_PODSET_ANTI && m->n_anti) ||
           (k == SCHED_PODSET_PORTS && m->n_ports) || (k == SCHED_PODSET_PREF && m->pref);
}

static void sets_leave(sched_snapshot *s, spod *p) {
    for (int k = 0; k < SCHED_PODSET_COUNT; k++) {
        if (!in_set(p->meta, k))
            continue;
        size_t i = p->set_pos[k];
        spod *last = s->sets[k][--s->set_n[k]];
        s->sets[k][i] = last;
        last->set_pos[k] = i;
    }
}

static int sets_join(sched_snapshot *s, spod *p) {
    for (int k = 0; k < SCHED_PODSET_COUNT; k++) {
        if (!in_set(p->meta, k))
            continue;
        if (s->set_n[k] == s->set_cap[k]) {
            size_t ncap = s->set_cap[k] ? s->set_cap[k] * 2 : 64;
            spod **ns = realloc(s->sets[k], ncap * sizeof *ns);
            if (!ns) { /* leave the sets consistent: drop the metadata altogether */
                for (int j = 0; j < k; j++)
                    if (in_set(p->meta, j)) {
                        size_t i = p->set_pos[j];
                        spod *last = s->sets[j][--s->set_n[j]];
                        s->sets[j][i] = last;
                        last->set_pos[j] = i;
                    }
                sched_pod_meta_free(p->meta);
                p->meta = NULL;
                return -1;
            }
            s->sets[k] = ns;
            s->set_cap[k] = ncap;
        }
        p->set_pos[k] = s->set_n[k];
        s->sets[k][s->set_n[k]++] = p;
    }
    return 0;
}

/* Brings a hidden pod back: in its pod sets again (they kept their capacity, so this does not
 * allocate unless pods joined meanwhile), counted on its node if the node is there. */
static void pod_show(sched_snapshot *s, spod *p) {
    p->hidden = false;
    sets_join(s, p);
    int i = sched_snapshot_node_index(s, p->node);
    if (i >= 0) {
        req_add(s->nodes[i], p, 1);
        cols_sync_res(s, (size_t)i);
        p->counted = true;
        list_join(s, p, (size_t)i);
    } else {
        p->counted = false;
        s->n_uncounted++;
    }
}

int sched_snapshot_hide_pod(sched_snapshot *s, const char *uid, bool hidden) {
    spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p)
        return -1;
    if (p->hidden == hidden)
        return 0;
    if (hidden) {
        pod_uncount(s, p);
        sets_leave(s, p);
        p->hidden = true;
    } else {
        pod_show(s, p);
    }
    return 0;
}

size_t sched_snapshot_podset_count(const sched_snapshot *s, sched_podset set) {
    return set < SCHED_PODSET_COUNT ? s->set_n[set] : 0;
}

const sched_pod_meta *sched_snapshot_podset_pod(const sched_snapshot *s, sched_podset set, size_t i,
                                                const char **uid, int *node) {
    if (set >= SCHED_PODSET_COUNT || i >= s->set_n[set])
        return NULL;
    const spod *p = s->sets[set][i];
    if (uid)
        *uid = p->uid;
    if (node) /* a counted pod is listed unless its node's list was out of memory */
        *node = !p->counted ? -1 : p->listed ? p->node_i : sched_snapshot_node_index(s, p->node);
    return p->meta;
}

const sched_pod_meta *sched_snapshot_pod_meta(const sched_snapshot *s, const char *uid) {
    const spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    return p ? p->meta : NULL;
}

/* keep_meta: plain add_pod leaves a pod's metadata alone; meta is owned from here on. */
static int add_pod(sched_snapshot *s, const char *uid, const char *node_name,
                   const sched_resources *requests, const sched_xres *x, uint32_t nx,
                   bool keep_meta, sched_pod_meta *meta, tm_err *err) {
    if (!uid || !*uid || !node_name || !*node_name) {
        sched_pod_meta_free(meta);
        return tm_err_set(err, "pod record needs a uid and a node name (uid=%s node=%s)",
                          uid ? uid : "(null)", node_name ? node_name : "(null)");
    }
    spod *p = smap_get(&s->pods, uid);
    if (p && p->hidden)
        pod_show(s, p); /* recorded anew: whatever hid it is over */
    if (p) {
        pod_uncount(s, p);
        if (strcmp(p->node, node_name) != 0) {
            char *nn = strdup(node_name);
            if (!nn) {
                s->n_uncounted++; /* keep the record consistent: it is now uncounted */
                sched_pod_meta_free(meta);
                return tm_err_set(err, "out of memory");
            }
            free(p->node);
            p->node = nn;
        }
    } else {
        p = calloc(1, sizeof *p);
        if (!p || !(p->uid = strdup(uid)) || !(p->node = strdup(node_name)) ||
            smap_put(&s->pods, p->uid, p) != 0) {
            if (p) {
                free(p->uid);
                free(p->node);
            }
            free(p);
            sched_pod_meta_free(meta);
            return tm_err_set(err, "out of memory recording pod %s", uid);
        }
    }
    int rc = 0;
    if (keep_meta && !x) { /* plain add_pod: the sparse requests stay as recorded */
        x = p->x;
        nx = p->n_x;
    }
    if (req_store(p, requests, x, nx) != 0)
        rc = tm_err_set(err, "out of memory recording the requests of pod %s", uid);
    if (keep_meta) {
        sched_pod_meta_free(meta);
    } else {
        sets_leave(s, p);
        sched_pod_meta_free(p->meta);
        p->meta = meta;
        /* on failure the requests are still recorded below: capacity must always count */
        if (sets_join(s, p) != 0)
            rc = tm_err_set(err, "out of memory recording the metadata of pod %s", uid);
    }
    int i = sched_snapshot_node_index(s, node_name);
    if (i >= 0) {
        req_add(s->nodes[i], p, 1);
        cols_sync_res(s, (size_t)i);
        p->counted = true;
        list_join(s, p, (size_t)i);
    } else {
        p->counted = false;
        s->n_uncounted++;
    }
    return rc;
}

int sched_snapshot_add_pod(sched_snapshot *s, const char *uid, const char *node_name,
                           const sched_resources *requests, tm_err *err) {
    return add_pod(s, uid, node_name, requests, NULL, 0, true, NULL, err);
}

int sched_snapshot_add_pod_meta(sched_snapshot *s, const char *uid, const char *node_name,
                                const sched_resources *requests, sched_pod_meta *meta,
                                tm_err *err) {
    return add_pod(s, uid, node_name, requests, NULL, 0, false, meta, err);
}

int sched_snapshot_add_pod_x(sched_snapshot *s, const char *uid, const char *node_name,
                             const sched_resources *requests, const sched_xres *x, uint32_t nx,
                             sched_pod_meta *meta, tm_err *err) {
    return add_pod(s, uid, node_name, requests, x, nx, false, meta, err);
}

int sched_snapshot_remove_pod(sched_snapshot *s, const char *uid) {
    spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p)
        return -1;
    if (p->hidden)
        pod_show(s, p);
    pod_uncount(s, p);
    sets_leave(s, p);
    sched_pod_meta_free(p->meta);
    smap_del(&s->pods, uid);
    free(p->uid);
    free(p->node);
    free(p->req);
    free(p->x);
    free(p);
    return 0;
}

int sched_snapshot_take_pod(sched_snapshot *s, const char *uid, sched_resources *requests,
                            sched_pod_meta **meta) {
    spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p)
        return -1;
    if (requests)
        req_load(p, requests);
    if (meta) {
        sets_leave(s, p);
        *meta = p->meta;
        p->meta = NULL; /* handed over: remove_pod frees nothing of it */
    }
    return sched_snapshot_remove_pod(s, uid);
}

int sched_snapshot_pod_requests(const sched_snapshot *s, const char *uid, sched_resources *out) {
    const spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p)
        return -1;
    req_load(p, out);
    return 0;
}

int sched_snapshot_set_pod_terminating(sched_snapshot *s, const char *uid) {
    spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p || !p->meta)
        return -1;
    p->meta->terminating = true;
    return 0;
}

int sched_snapshot_set_pod_start(sched_snapshot *s, const char *uid, int64_t start_ms) {
    spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    if (!p || !p->meta)
        return -1;
    p->meta->start_ms = start_ms;
    return 0;
}

size_t sched_snapshot_node_pod_count(const sched_snapshot *s, size_t node) {
    return node < s->n_nodes ? s->npods[node].n : 0;
}

const sched_pod_meta *sched_snapshot_node_pod(const sched_snapshot *s, size_t node, size_t i,
                                              const char **uid) {
    const spod *p = node < s->n_nodes && i < s->npods[node].n ? s->npods[node].p[i] : NULL;
    if (uid)
        *uid = p ? p->uid : NULL;
    return p ? p->meta : NULL;
}

const char *sched_snapshot_pod_node(const sched_snapshot *s, const char *uid) {
    const spod *p = uid ? smap_get(&s->pods, uid) : NULL;
    return p ? p->node : NULL;
}

size_t sched_snapshot_pod_count(const sched_snapshot *s) {
    return s->pods.live;
}

/* The task table key "workflow\x1fprocess", both parts in label-value form (see snapshot.h:
 * the pod carries Nextflow's sanitised names, the TaskProfile the traced ones). */
typedef struct {
    char s[2 * TM_LABEL_VALUE_MAX + 2];
} task_key_buf;

static const char *task_key(const char *wf, const char *proc, task_key_buf *k) {
    size_t lw = tm_label_value_sanitize(wf, k->s);
    k->s[lw] = '\x1f';
    tm_label_value_sanitize(proc, k->s + lw + 1);
    return k->s;
}

int sched_snapshot_set_task(sched_snapshot *s, const char *workflow, const char *process,
                            const sched_task_profile *tp, tm_err *err) {
    task_key_buf kb;
    const char *key = task_key(workflow, process, &kb);
    stask *t = smap_get(&s->tasks, key);
    if (t) {
        t->tp = *tp;
        return 0;
    }
    t = calloc(1, sizeof *t);
    if (!t || !(t->key = strdup(key)) || smap_put(&s->tasks, t->key, t) != 0) {
        if (t)
            free(t->key);
        free(t);
        return tm_err_set(err, "out of memory recording task %s/%s", workflow, process);
    }
    t->tp = *tp;
    return 0;
}

int sched_snapshot_remove_task(sched_snapshot *s, const char *workflow, const char *process) {
    task_key_buf kb;
    stask *t = smap_get(&s->tasks, task_key(workflow, process, &kb));
    if (!t)
        return -1;
    smap_del(&s->tasks, t->key);
    free(t->key);
    free(t);
    return 0;
}

const sched_task_profile *sched_snapshot_task(const sched_snapshot *s, const char *workflow,
                                              const char *process) {
    if (!process || !*process || !s->tasks.live)
        return NULL;
    task_key_buf kb;
    stask *t = smap_get(&s->tasks, task_key(workflow, process, &kb));
    return t ? &t->tp : NULL;
}

/* ---- groups and name order ---- */

static int cmp_name_idx(const void *a, const void *b, void *ctx) {
    const sched_snapshot *s = ctx;
    return strcmp(s->nodes[*(const uint32_t *)a]->name, s->nodes[*(const uint32_t *)b]->name);
}

/* Group id of a profiled node: its tarema.io/group label, else "L<cpu>-<mem>-<io>". */
static int group_id(const sched_node *n, char *buf, size_t size) {
    const char *g = sched_node_label(n, "tarema.io/group");
    if (g && *g)
        return snprintf(buf, size, "%s", g) < (int)size ? 0 : -1;
    return snprintf(buf, size, "L%d-%d-%d", n->labels_t[0], n->labels_t[1], n->labels_t[2]) <
                   (int)size
               ? 0
               : -1;
}

static int rebuild(sched_snapshot *s) {
    free_groups(s);
    free(s->by_name);
    s->by_name = malloc((s->n_nodes ? s->n_nodes : 1) * sizeof *s->by_name);
    size_t cap = 8;
    s->groups = calloc(cap, sizeof *s->groups);
    s->group_ids = calloc(cap, sizeof *s->group_ids);
    if (!s->by_name || !s->groups || !s->group_ids)
        return -1;
    smap ids = {0};
    int rc = 0;
    for (size_t i = 0; i < s->n_nodes && rc == 0; i++) {
        sched_node *n = s->nodes[i];
        bool profiled = n->labels_t[0] > 0 && n->labels_t[1] > 0 && n->labels_t[2] > 0;
        char idbuf[256] = "";
        if (profiled && group_id(n, idbuf, sizeof idbuf) != 0)
            profiled = false;
        uintptr_t g1 = (uintptr_t)smap_get(&ids, idbuf);
        if (!g1) {
            if (s->n_groups == cap) {
                cap *= 2;
                sched_group *ng = realloc(s->groups, cap * sizeof *ng);
                if (ng)
                    s->groups = ng;
                char **ni = realloc(s->group_ids, cap * sizeof *ni);
                if (ni)
                    s->group_ids = ni;
                if (!ng || !ni) {
                    rc = -1;
                    break;
                }
            }
            char *id = strdup(idbuf);
            if (!id) {
                rc = -1;
                break;
            }
            sched_group *g = &s->groups[s->n_groups];
            memset(g, 0, sizeof *g);
            g->id = id;
            g->unprofiled = !profiled;
            for (int k = 0; k < SCHED_NFEAT; k++) {
                /* the first node's labels stand for the group: the profiler labels a whole
                 * group at once, so they agree unless an operator edits one node by hand */
                g->labels[k] = profiled ? n->labels_t[k] : 0;
                g->power += g->labels[k];
            }
            s->group_ids[s->n_groups] = id;
            g1 = ++s->n_groups;
            if (smap_put(&ids, id, (void *)g1) != 0) {
                rc = -1;
                break;
            }
        }
        n->group = (int)(g1 - 1);
        s->groups[g1 - 1].n_nodes++;
    }
    free(ids.e);
    if (rc)
        return rc;
    for (size_t i = 0; i < s->n_nodes; i++)
        s->by_name[i] = (uint32_t)i;
    qsort_r(s->by_name, s->n_nodes, sizeof *s->by_name, cmp_name_idx, s);
    for (size_t i = 0; i < s->n_nodes; i++)
        s->nodes[s->by_name[i]]->name_rank = (uint32_t)i;
    return 0;
}

void sched_snapshot_refresh(sched_snapshot *s) {
    if (!s->dirty)
        return;
    if (rebuild(s) == 0)
        s->dirty = false;
    /* mirror whatever rebuild left in the nodes, also after a failed (out of memory) one */
    for (size_t i = 0; i < s->n_nodes; i++) {
        s->c_group[i] = s->nodes[i]->group;
        s->c_rank[i] = s->nodes[i]->name_rank;
    }
}

size_t sched_snapshot_group_count(const sched_snapshot *s) {
    return s->n_groups;
}

const sched_group *sched_snapshot_group(const sched_snapshot *s, size_t i) {
    return i < s->n_groups ? &s->groups[i] : NULL;
}

const uint32_t *sched_snapshot_by_name(const sched_snapshot *s) {
    return s->by_name;
}

double sched_node_load(const sched_node *n) {
    double share = 0;
    for (int r = SCHED_RES_CPU; r <= SCHED_RES_MEMORY; r++) {
        int64_t a = n->allocatable.v[r], q = n->requested.v[r];
        double x = a > 0 ? (double)q / (double)a : 1.0;
        if (x > share)
            share = x;
    }
    return share;
}

/* ---- node construction ---- */

sched_node *sched_node_new(const char *name) {
    sched_node *n = calloc(1, sizeof *n);
    if (!n || !(n->name = strdup(name))) {
        free(n);
        return NULL;
    }
    n->ready = true;
    n->group = -1;
    return n;
}

static int label_cmp(const void *k, const void *e) {
    return strcmp(k, ((const sched_label *)e)->key);
}

const char *sched_node_label(const sched_node *n, const char *key) {
    if (n->n_labels == 0) /* labels is NULL then, and bsearch's base must not be (fuzzing) */
        return NULL;
    const sched_label *l = bsearch(key, n->labels, n->n_labels, sizeof *n->labels, label_cmp);
    return l ? l->value : NULL;
}

int sched_node_set_label(sched_node *n, const char *key, const char *value) {
    size_t lo = 0, hi = n->n_labels;
    while (lo < hi) { /* insertion point keeping keys sorted */
        size_t mid = (lo + hi) / 2;
        int c = strcmp(n->labels[mid].key, key);
        if (c == 0) {
            char *v = strdup(value);
            if (!v)
                return -1;
            free(n->labels[mid].value);
            n->labels[mid].value = v;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    sched_label *nl = realloc(n->labels, (n->n_labels + 1) * sizeof *nl);
    if (!nl)
        return -1;
    n->labels = nl;
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    memmove(&nl[lo + 1], &nl[lo], (n->n_labels - lo) * sizeof *nl);
    nl[lo] = (sched_label){k, v};
    n->n_labels++;
    return 0;
}

int sched_node_add_taint(sched_node *n, const char *key, const char *value, sched_effect effect) {
    sched_taint *nt = realloc(n->taints, (n->n_taints + 1) * sizeof *nt);
    if (!nt)
        return -1;
    n->taints = nt;
    char *k = strdup(key), *v = strdup(value ? value : "");
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    sched_taint *t = &nt[n->n_taints++];
    t->key = k;
    t->value = v;
    t->effect = effect;
    return 0;
}

void sched_node_room(const sched_node *n, sched_resources *out) {
    for (int k = 0; k < SCHED_RES_MAX; k++)
        out->v[k] = n->allocatable.v[k] - n->requested.v[k];
}

void sched_node_free(sched_node *n) {
    if (!n)
        return;
    for (size_t i = 0; i < n->n_labels; i++) {
        free(n->labels[i].key);
        free(n->labels[i].value);
    }
    for (size_t i = 0; i < n->n_taints; i++) {
        free(n->taints[i].key);
        free(n->taints[i].value);
    }
    free(n->labels);
    free(n->taints);
    free(n->xalloc);
    free(n->xused);
    free(n->images);
    free(n->image_block);
    free(n->name);
    free(n);
}

void sched_snapshot_set_volumes(sched_snapshot *s, sched_volumes *v) {
    s->volumes = v;
}

sched_volumes *sched_snapshot_volumes(const sched_snapshot *s) {
    return s->volumes;
}

void sched_snapshot_set_nominated(sched_snapshot *s, sched_nominated *t) {
    s->nominated = t;
}

sched_nominated *sched_snapshot_nominated(const sched_snapshot *s) {
    return s->nominated;
}

void sched_snapshot_set_pdbs(sched_snapshot *s, sched_pdbs *t) {
    s->pdbs = t;
}

sched_pdbs *sched_snapshot_pdbs(const sched_snapshot *s) {
    return s->pdbs;
}

void sched_snapshot_set_owner_selectors(sched_snapshot *s, sched_owner_sels *t) {
    s->owners = t;
}

sched_owner_sels *sched_snapshot_owner_selectors(const sched_snapshot *s) {
    return s->owners;
}
