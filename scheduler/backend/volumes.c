/* volumes.c: claim and volume tables (tsearch trees keyed by "namespace/name" and by name) and
 * the VolumeBinding filter over them. */
#include "scheduler/backend/volumes.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/backend/podspec.h"

/* The key is the first member of both entry types, so one comparison serves both trees. */
typedef struct claim_ent {
    char *key;    /* namespace "/" name */
    char *volume; /* spec.volumeName once the binding completed, else "" (unbound) */
    bool deleting;
} claim_ent;

typedef struct volume_ent {
    char *name;
    sched_sel_term *terms; /* spec.nodeAffinity.required.nodeSelectorTerms */
    size_t n_terms;
    bool has_affinity; /* spec.nodeAffinity.required present */
} volume_ent;

struct sched_volumes {
    void *claims, *volumes; /* tsearch roots */
    size_t n_claims, n_volumes;
};

struct sched_volume_state {
    const volume_ent **pvs; /* bound volumes of the pod that have node affinity */
    size_t n, cap;
    int problem; /* -1, or the detail every node gets (a claim the pod cannot use) */
};

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void claim_free(void *p) {
    claim_ent *c = p;
    free(c->key);
    free(c->volume);
    free(c);
}

static void volume_free(void *p) {
    volume_ent *v = p;
    free(v->name);
    sched_sel_terms_free(v->terms, v->n_terms);
    free(v);
}

sched_volumes *sched_volumes_new(void) {
    return calloc(1, sizeof(sched_volumes));
}

void sched_volumes_free(sched_volumes *v) {
    if (!v)
        return;
    tdestroy(v->claims, claim_free);
    tdestroy(v->volumes, volume_free);
    free(v);
}

/* Inserts e into *root, replacing (and freeing) an entry with the same key. 0, -1 on OOM (e is
 * then freed). */
static int tree_put(void **root, void *e, void (*free_ent)(void *), size_t *count) {
    void **slot = tsearch(e, root, cmp_key);
    if (!slot) {
        free_ent(e);
        return -1;
    }
    if (*slot != e) {
        free_ent(*slot);
        *slot = e;
    } else {
        (*count)++;
    }
    return 0;
}

static int tree_remove(void **root, const char *key, void (*free_ent)(void *), size_t *count) {
    const char *const *k = &key;
    void **slot = tfind(k, root, cmp_key);
    if (!slot)
        return -1;
    void *e = *slot;
    tdelete(k, root, cmp_key);
    free_ent(e);
    (*count)--;
    return 0;
}

static const void *tree_get(void *const *root, const char *key) {
    const char *const *k = &key;
    void **slot = tfind(k, root, cmp_key);
    return slot ? *slot : NULL;
}

bool sched_volumes_claim_bind_completed(const json_t *pvc) {
    return json_object_get(tm_json_path(pvc, "metadata.annotations"),
                           "pv.kubernetes.io/bind-completed") != NULL;
}

int sched_volumes_put_claim(sched_volumes *v, const json_t *pvc, tm_err *err) {
    const char *ns = tm_json_str(pvc, "metadata.namespace", NULL);
    const char *name = tm_json_str(pvc, "metadata.name", NULL);
    if (!ns || !*ns || !name || !*name)
        return tm_err_set(err, "PersistentVolumeClaim without metadata.namespace and .name");
    const json_t *vol = tm_json_path(pvc, "spec.volumeName");
    if (vol && !json_is_string(vol) && !json_is_null(vol))
        return tm_err_set(err, "PersistentVolumeClaim %s/%s: spec.volumeName is not a string", ns,
                          name);
    claim_ent *c = calloc(1, sizeof *c);
    if (!c)
        return tm_err_set(err, "out of memory");
    size_t kl = strlen(ns) + strlen(name) + 2;
    c->key = malloc(kl);
    /* bound only once the binding completed, as kube-scheduler's isPVCFullyBound checks it: a
     * volumeName (set by a user to pre-bind, or by the PV controller's first write) alone is a
     * binding in progress */
    bool done = sched_volumes_claim_bind_completed(pvc);
    c->volume = strdup(json_is_string(vol) && done ? json_string_value(vol) : "");
    c->deleting = tm_json_path(pvc, "metadata.deletionTimestamp") != NULL;
    if (!c->key || !c->volume) {
        claim_free(c);
        return tm_err_set(err, "out of memory");
    }
    snprintf(c->key, kl, "%s/%s", ns, name);
    if (tree_put(&v->claims, c, claim_free, &v->n_claims) != 0)
        return tm_err_set(err, "out of memory");
    return 0;
}

int sched_volumes_put_volume(sched_volumes *v, const json_t *pv, tm_err *err) {
    const char *name = tm_json_str(pv, "metadata.name", NULL);
    if (!name || !*name)
        return tm_err_set(err, "PersistentVolume without metadata.name");
    volume_ent *e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(name))) {
        free(e);
        return tm_err_set(err, "out of memory");
    }
    const json_t *req = tm_json_path(pv, "spec.nodeAffinity.required");
    if (req && !json_is_null(req)) {
        char owner[320];
        snprintf(owner, sizeof owner, "PersistentVolume %s", name);
        e->has_affinity = true;
        if (sched_sel_terms_from_json(json_object_get(req, "nodeSelectorTerms"), owner,
                                      "spec.nodeAffinity.required.nodeSelectorTerms", &e->terms,
                                      &e->n_terms, err) != 0) {
            volume_free(e);
            return -1;
        }
    }
    if (tree_put(&v->volumes, e, volume_free, &v->n_volumes) != 0)
        return tm_err_set(err, "out of memory");
    return 0;
}

int sched_volumes_remove_claim(sched_volumes *v, const char *ns, const char *name) {
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    return tree_remove(&v->claims, key, claim_free, &v->n_claims);
}

int sched_volumes_remove_volume(sched_volumes *v, const char *name) {
    return tree_remove(&v->volumes, name, volume_free, &v->n_volumes);
}

size_t sched_volumes_claim_count(const sched_volumes *v) {
    return v->n_claims;
}

size_t sched_volumes_volume_count(const sched_volumes *v) {
    return v->n_volumes;
}

/* ---- the filter ---- */

sched_volume_state *sched_volume_state_new(void) {
    sched_volume_state *st = calloc(1, sizeof *st);
    if (st)
        st->problem = -1;
    return st;
}

void sched_volume_state_free(sched_volume_state *st) {
    if (!st)
        return;
    free(st->pvs);
    free(st);
}

/* The problem with claim i of p, -1 when it is bound to a known volume (then *pv). */
static int claim_problem(const sched_volumes *v, const sched_pod *p, size_t i,
                         const volume_ent **pv) {
    char key[512];
    snprintf(key, sizeof key, "%s/%s", p->ns, p->claims[i]);
    const claim_ent *c = tree_get(&v->claims, key);
    int kind = -1;
    if (!c)
        kind = SCHED_VOLUME_CLAIM_MISSING;
    else if (c->deleting)
        kind = SCHED_VOLUME_CLAIM_DELETING;
    else if (!c->volume[0])
        kind = SCHED_VOLUME_CLAIM_UNBOUND;
    else if (!(*pv = tree_get(&v->volumes, c->volume)))
        kind = SCHED_VOLUME_PV_MISSING;
    return kind < 0 ? -1 : kind | (int)(i << 8);
}

int sched_volume_prefilter(sched_volume_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *on, tm_err *err) {
    st->n = 0;
    st->problem = -1;
    *on = false;
    const sched_volumes *v = sched_snapshot_volumes(s);
    if (!v || !p->n_claims)
        return 0;
    for (size_t i = 0; i < p->n_claims; i++) {
        const volume_ent *pv = NULL;
        if ((st->problem = claim_problem(v, p, i, &pv)) >= 0) {
            *on = true;
            return 0;
        }
        if (!pv->has_affinity)
            continue;
        if (st->n == st->cap) {
            size_t ncap = st->cap ? st->cap * 2 : 4;
            const volume_ent **np = realloc(st->pvs, ncap * sizeof *np);
            if (!np)
                return tm_err_set(err, "out of memory resolving the volumes of pod %s/%s", p->ns,
                                  p->name);
            st->pvs = np;
            st->cap = ncap;
        }
        st->pvs[st->n++] = pv;
    }
    *on = st->n > 0;
    return 0;
}

int sched_volume_filter(const sched_volume_state *st, const sched_node *n) {
    if (st->problem >= 0)
        return st->problem;
    for (size_t i = 0; i < st->n; i++)
        if (!sched_sel_terms_match(st->pvs[i]->terms, st->pvs[i]->n_terms, n))
            return SCHED_VOLUME_NODE_CONFLICT;
    return -1;
}

void sched_volume_reason(const sched_pod *p, uint32_t detail, char *buf, size_t size) {
    size_t i = detail >> 8;
    const char *claim = p && i < p->n_claims ? p->claims[i] : "of the pod";
    switch (detail & 0xff) {
    case SCHED_VOLUME_NODE_CONFLICT:
        snprintf(buf, size, "node(s) had volume node affinity conflict");
        break;
    case SCHED_VOLUME_CLAIM_MISSING:
        snprintf(buf, size, "persistentvolumeclaim \"%s\" not found", claim);
        break;
    case SCHED_VOLUME_CLAIM_DELETING:
        snprintf(buf, size, "persistentvolumeclaim \"%s\" is being deleted", claim);
        break;
    case SCHED_VOLUME_CLAIM_UNBOUND:
        snprintf(buf, size, "persistentvolumeclaim \"%s\" is not bound (tarema binds no volumes)",
                 claim);
        break;
    default:
        snprintf(buf, size,
                 "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
        break;
    }
}
