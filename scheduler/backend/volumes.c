/* volumes.c: the storage tables (tsearch trees keyed by "namespace/name" or by name; pod uses in
 * an array, since only pods with claims are in it) and the VolumeBinding rules over them. */
#include "scheduler/backend/volumes.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "lib/selector.h"
#include "scheduler/backend/match.h"
#include "scheduler/backend/podspec.h"

#define ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"
#define NO_PROVISIONER    "kubernetes.io/no-provisioner"

/* The key is the first member of every entry type, so one comparison serves every tree. */
typedef struct claim_ent {
    char *key; /* namespace "/" name */
    char *ns, *name, *uid, *rv;
    char *volume; /* spec.volumeName, "" when none */
    bool bound;   /* volume set and the binding completed (isPVCFullyBound) */
    bool deleting;
    char *class;         /* GetPersistentVolumeClaimClass: beta annotation, else spec */
    int64_t request;     /* spec.resources.requests.storage in bytes */
    int access;          /* SCHED_ACCESS_* */
    bool block;          /* volumeMode Block */
    tm_selector *sel;    /* spec.selector, NULL when none */
    char *selected_node; /* the annotation, "" when absent */
    char *owner_uid;     /* the controller owner's uid, "" when none */
    char *assumed_node;  /* Reserve chose to provision it there (until the API shows it) */
} claim_ent;

typedef struct volume_ent {
    char *name, *rv;
    sched_sel_term *terms; /* spec.nodeAffinity.required.nodeSelectorTerms */
    size_t n_terms;
    bool has_affinity; /* spec.nodeAffinity.required present */
    int64_t capacity;
    char *class;
    int access;
    bool block, available, deleting;
    char *ref_ns, *ref_name, *ref_uid; /* spec.claimRef, "" when none */
    json_t *labels;                    /* metadata.labels (claim selectors, VolumeZone) */
    char *csi_driver, *csi_handle;     /* spec.csi, NULL when none */
    char *assumed_claim;               /* Reserve bound it to this claim key (until the API does) */
} volume_ent;

typedef struct class_ent {
    char *name, *provisioner;
    bool wffc;
    bool any_topology; /* no allowedTopologies */
    sched_sel_term *topo;
    size_t n_topo;
} class_ent;

typedef struct csinode_ent {
    char *name;
    json_t *drivers; /* {driver: count} of the drivers with allocatable.count */
} csinode_ent;

typedef struct use_ent {
    char *uid, *ns, *node;
    char **claims;
    size_t n;
} use_ent;

struct sched_volumes {
    void *claims, *volumes, *classes, *csinodes; /* tsearch roots */
    size_t n_claims, n_volumes, n_classes, n_csinodes;
    use_ent *uses;
    size_t n_uses, cap_uses;
};

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void claim_free(void *p) {
    claim_ent *c = p;
    free(c->key);
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->rv);
    free(c->volume);
    free(c->class);
    tm_selector_free(c->sel);
    free(c->selected_node);
    free(c->owner_uid);
    free(c->assumed_node);
    free(c);
}

static void volume_free(void *p) {
    volume_ent *v = p;
    free(v->name);
    free(v->rv);
    sched_sel_terms_free(v->terms, v->n_terms);
    free(v->class);
    free(v->ref_ns);
    free(v->ref_name);
    free(v->ref_uid);
    json_decref(v->labels);
    free(v->csi_driver);
    free(v->csi_handle);
    free(v->assumed_claim);
    free(v);
}

static void class_free(void *p) {
    class_ent *c = p;
    free(c->name);
    free(c->provisioner);
    sched_sel_terms_free(c->topo, c->n_topo);
    free(c);
}

static void csinode_free(void *p) {
    csinode_ent *c = p;
    free(c->name);
    json_decref(c->drivers);
    free(c);
}

static void use_clear(use_ent *u) {
    free(u->uid);
    free(u->ns);
    free(u->node);
    for (size_t i = 0; i < u->n; i++)
        free(u->claims[i]);
    free(u->claims);
}

sched_volumes *sched_volumes_new(void) {
    return calloc(1, sizeof(sched_volumes));
}

void sched_volumes_free(sched_volumes *v) {
    if (!v)
        return;
    tdestroy(v->claims, claim_free);
    tdestroy(v->volumes, volume_free);
    tdestroy(v->classes, class_free);
    tdestroy(v->csinodes, csinode_free);
    for (size_t i = 0; i < v->n_uses; i++)
        use_clear(&v->uses[i]);
    free(v->uses);
    free(v);
}

/* Inserts e into *root, replacing (and freeing) an entry with the same key; *old (may be NULL)
 * gets the replaced entry instead of freeing it. 0, -1 on OOM (e is then freed). */
static int tree_put(void **root, void *e, void (*free_ent)(void *), size_t *count, void **old) {
    if (old)
        *old = NULL;
    void **slot = tsearch(e, root, cmp_key);
    if (!slot) {
        free_ent(e);
        return -1;
    }
    if (*slot != e) {
        if (old)
            *old = *slot;
        else
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

static void *tree_get(void *const *root, const char *key) {
    const char *const *k = &key;
    void **slot = tfind(k, root, cmp_key);
    return slot ? *slot : NULL;
}

static claim_ent *get_claim(const sched_volumes *v, const char *ns, const char *name) {
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    return tree_get(&v->claims, key);
}

static char *dup0(const char *s) {
    return strdup(s ? s : "");
}

bool sched_volumes_claim_bind_completed(const json_t *pvc) {
    return json_object_get(tm_json_path(pvc, "metadata.annotations"),
                           "pv.kubernetes.io/bind-completed") != NULL;
}

/* accessModes JSON -> SCHED_ACCESS_* bits; -1 on an unknown mode. */
static int access_modes(const json_t *arr) {
    int m = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(arr, i, x) {
        const char *s = json_string_value(x);
        if (!s)
            return -1;
        if (strcmp(s, "ReadWriteOnce") == 0)
            m |= SCHED_ACCESS_RWO;
        else if (strcmp(s, "ReadOnlyMany") == 0)
            m |= SCHED_ACCESS_ROX;
        else if (strcmp(s, "ReadWriteMany") == 0)
            m |= SCHED_ACCESS_RWX;
        else if (strcmp(s, "ReadWriteOncePod") == 0)
            m |= SCHED_ACCESS_RWOP;
        else
            return -1;
    }
    return m;
}

/* A storage quantity (string or number) -> bytes; absent: 0. -1 when malformed. */
static int storage_bytes(const json_t *q, int64_t *out) {
    *out = 0;
    if (!q)
        return 0;
    if (json_is_integer(q)) {
        *out = json_integer_value(q);
        return 0;
    }
    tm_err e;
    return json_is_string(q) ? tm_quantity_parse(json_string_value(q), out, &e) : -1;
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
    int64_t req;
    if (storage_bytes(tm_json_path(pvc, "spec.resources.requests.storage"), &req) != 0)
        return tm_err_set(err,
                          "PersistentVolumeClaim %s/%s: spec.resources.requests.storage is not a "
                          "quantity",
                          ns, name);
    int access = access_modes(tm_json_path(pvc, "spec.accessModes"));
    if (access < 0)
        return tm_err_set(err, "PersistentVolumeClaim %s/%s: spec.accessModes has an unknown mode",
                          ns, name);
    claim_ent *c = calloc(1, sizeof *c);
    if (!c)
        return tm_err_set(err, "out of memory");
    const json_t *sel = tm_json_path(pvc, "spec.selector");
    if (sel && !json_is_null(sel) && !(c->sel = tm_selector_from_label_selector(sel, err))) {
        free(c);
        return tm_err_wrap(err, "PersistentVolumeClaim %s/%s: spec.selector", ns, name);
    }
    size_t kl = strlen(ns) + strlen(name) + 2;
    c->key = malloc(kl);
    c->ns = strdup(ns);
    c->name = strdup(name);
    c->uid = dup0(tm_json_str(pvc, "metadata.uid", ""));
    c->rv = dup0(tm_json_str(pvc, "metadata.resourceVersion", ""));
    c->volume = dup0(json_string_value(vol));
    /* bound only once the binding completed, as kube-scheduler's isPVCFullyBound checks it: a
     * volumeName (set by a user to pre-bind, or by the PV controller's first write) alone is a
     * binding in progress */
    c->bound = c->volume && c->volume[0] && sched_volumes_claim_bind_completed(pvc);
    c->deleting = tm_json_path(pvc, "metadata.deletionTimestamp") != NULL;
    const json_t *ann = tm_json_path(pvc, "metadata.annotations");
    const char *beta =
        json_string_value(json_object_get(ann, "volume.beta.kubernetes.io/storage-class"));
    c->class = dup0(beta ? beta : tm_json_str(pvc, "spec.storageClassName", ""));
    c->request = req;
    c->access = access;
    c->block = strcmp(tm_json_str(pvc, "spec.volumeMode", ""), "Block") == 0;
    c->selected_node = dup0(json_string_value(json_object_get(ann, ANN_SELECTED_NODE)));
    const char *owner = "";
    size_t i;
    const json_t *ref;
    json_array_foreach(tm_json_path(pvc, "metadata.ownerReferences"), i,
                       ref) if (json_is_true(json_object_get(ref, "controller"))) owner =
        tm_json_str(ref, "uid", "");
    c->owner_uid = dup0(owner);
    if (!c->key || !c->ns || !c->name || !c->uid || !c->rv || !c->volume || !c->class ||
        !c->selected_node || !c->owner_uid) {
        claim_free(c);
        return tm_err_set(err, "out of memory");
    }
    snprintf(c->key, kl, "%s/%s", ns, name);
    claim_ent *old;
    if (tree_put(&v->claims, c, claim_free, &v->n_claims, (void **)&old) != 0)
        return tm_err_set(err, "out of memory");
    if (old) {
        /* an assumption the API does not show yet survives unrelated updates */
        if (old->assumed_node && !c->selected_node[0] && !c->bound) {
            c->assumed_node = old->assumed_node;
            old->assumed_node = NULL;
        }
        claim_free(old);
    }
    return 0;
}

int sched_volumes_put_volume(sched_volumes *v, const json_t *pv, tm_err *err) {
    const char *name = tm_json_str(pv, "metadata.name", NULL);
    if (!name || !*name)
        return tm_err_set(err, "PersistentVolume without metadata.name");
    int64_t cap;
    if (storage_bytes(tm_json_path(pv, "spec.capacity.storage"), &cap) != 0)
        return tm_err_set(err, "PersistentVolume %s: spec.capacity.storage is not a quantity",
                          name);
    int access = access_modes(tm_json_path(pv, "spec.accessModes"));
    if (access < 0)
        return tm_err_set(err, "PersistentVolume %s: spec.accessModes has an unknown mode", name);
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
    e->rv = dup0(tm_json_str(pv, "metadata.resourceVersion", ""));
    e->capacity = cap;
    const char *beta = json_string_value(json_object_get(
        tm_json_path(pv, "metadata.annotations"), "volume.beta.kubernetes.io/storage-class"));
    e->class = dup0(beta ? beta : tm_json_str(pv, "spec.storageClassName", ""));
    e->access = access;
    e->block = strcmp(tm_json_str(pv, "spec.volumeMode", ""), "Block") == 0;
    e->available = strcmp(tm_json_str(pv, "status.phase", ""), "Available") == 0;
    e->deleting = tm_json_path(pv, "metadata.deletionTimestamp") != NULL;
    e->ref_ns = dup0(tm_json_str(pv, "spec.claimRef.namespace", ""));
    e->ref_name = dup0(tm_json_str(pv, "spec.claimRef.name", ""));
    e->ref_uid = dup0(tm_json_str(pv, "spec.claimRef.uid", ""));
    e->labels = json_incref(tm_json_path(pv, "metadata.labels"));
    const char *drv = tm_json_str(pv, "spec.csi.driver", NULL);
    if (drv) {
        e->csi_driver = strdup(drv);
        e->csi_handle = dup0(tm_json_str(pv, "spec.csi.volumeHandle", ""));
    }
    if (!e->rv || !e->class || !e->ref_ns || !e->ref_name || !e->ref_uid ||
        (drv && (!e->csi_driver || !e->csi_handle))) {
        volume_free(e);
        return tm_err_set(err, "out of memory");
    }
    volume_ent *old;
    if (tree_put(&v->volumes, e, volume_free, &v->n_volumes, (void **)&old) != 0)
        return tm_err_set(err, "out of memory");
    if (old) {
        if (old->assumed_claim && !e->ref_name[0]) {
            e->assumed_claim = old->assumed_claim;
            old->assumed_claim = NULL;
        }
        volume_free(old);
    }
    return 0;
}

/* allowedTopologies [{matchLabelExpressions: [{key, values}]}] -> node selector terms (each
 * expression an In requirement). */
static int topology_terms(const json_t *allowed, const char *owner, sched_sel_term **out, size_t *n,
                          tm_err *err) {
    json_t *terms = json_array();
    size_t i, j;
    const json_t *t, *x;
    json_array_foreach(allowed, i, t) {
        json_t *exprs = json_array();
        json_array_foreach(json_object_get(t, "matchLabelExpressions"), j, x) json_array_append_new(
            exprs, json_pack("{s:O?, s:s, s:O?}", "key", json_object_get(x, "key"), "operator",
                             "In", "values", json_object_get(x, "values")));
        json_array_append_new(terms, json_pack("{s:o}", "matchExpressions", exprs));
    }
    int rc = sched_sel_terms_from_json(terms, owner, "allowedTopologies", out, n, err);
    json_decref(terms);
    return rc;
}

int sched_volumes_put_class(sched_volumes *v, const json_t *sc, tm_err *err) {
    const char *name = tm_json_str(sc, "metadata.name", NULL);
    if (!name || !*name)
        return tm_err_set(err, "StorageClass without metadata.name");
    class_ent *c = calloc(1, sizeof *c);
    if (!c)
        return tm_err_set(err, "out of memory");
    c->name = strdup(name);
    c->provisioner = dup0(tm_json_str(sc, "provisioner", ""));
    c->wffc = strcmp(tm_json_str(sc, "volumeBindingMode", ""), "WaitForFirstConsumer") == 0;
    const json_t *allowed = json_object_get(sc, "allowedTopologies");
    c->any_topology = json_array_size(allowed) == 0;
    char owner[320];
    snprintf(owner, sizeof owner, "StorageClass %s", name);
    if (!c->name || !c->provisioner) {
        class_free(c);
        return tm_err_set(err, "out of memory");
    }
    if (!c->any_topology && topology_terms(allowed, owner, &c->topo, &c->n_topo, err) != 0) {
        class_free(c);
        return -1;
    }
    if (tree_put(&v->classes, c, class_free, &v->n_classes, NULL) != 0)
        return tm_err_set(err, "out of memory");
    return 0;
}

int sched_volumes_put_csinode(sched_volumes *v, const json_t *cn, tm_err *err) {
    const char *name = tm_json_str(cn, "metadata.name", NULL);
    if (!name || !*name)
        return tm_err_set(err, "CSINode without metadata.name");
    csinode_ent *c = calloc(1, sizeof *c);
    if (!c || !(c->name = strdup(name)) || !(c->drivers = json_object())) {
        if (c)
            csinode_free(c);
        return tm_err_set(err, "out of memory");
    }
    size_t i;
    const json_t *d;
    json_array_foreach(tm_json_path(cn, "spec.drivers"), i, d) {
        const json_t *count = tm_json_path(d, "allocatable.count");
        const char *dn = tm_json_str(d, "name", NULL);
        if (!dn)
            continue;
        if (count && !json_is_null(count)) {
            if (!json_is_integer(count) || json_integer_value(count) < 0) {
                csinode_free(c);
                return tm_err_set(err,
                                  "CSINode %s: spec.drivers[%zu].allocatable.count is not a "
                                  "non-negative integer",
                                  name, i);
            }
            json_object_set(c->drivers, dn, (json_t *)count);
        }
    }
    if (tree_put(&v->csinodes, c, csinode_free, &v->n_csinodes, NULL) != 0)
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

int sched_volumes_remove_class(sched_volumes *v, const char *name) {
    return tree_remove(&v->classes, name, class_free, &v->n_classes);
}

int sched_volumes_remove_csinode(sched_volumes *v, const char *name) {
    return tree_remove(&v->csinodes, name, csinode_free, &v->n_csinodes);
}

size_t sched_volumes_claim_count(const sched_volumes *v) {
    return v->n_claims;
}

size_t sched_volumes_volume_count(const sched_volumes *v) {
    return v->n_volumes;
}

/* ---- pod uses ---- */

int sched_volumes_pod_use(sched_volumes *v, const char *uid, const char *ns, const char *node,
                          char *const *claims, size_t n) {
    size_t k = 0;
    while (k < v->n_uses && strcmp(v->uses[k].uid, uid) != 0)
        k++;
    if (k < v->n_uses) {
        use_clear(&v->uses[k]);
        v->uses[k] = v->uses[--v->n_uses];
    }
    if (!n)
        return 0;
    if (v->n_uses == v->cap_uses) {
        size_t nc = v->cap_uses ? v->cap_uses * 2 : 8;
        use_ent *nu = realloc(v->uses, nc * sizeof *nu);
        if (!nu)
            return -1;
        v->uses = nu;
        v->cap_uses = nc;
    }
    use_ent u = {strdup(uid), strdup(ns), strdup(node), calloc(n, sizeof(char *)), n};
    bool ok = u.uid && u.ns && u.node && u.claims;
    for (size_t i = 0; ok && i < n; i++)
        ok = (u.claims[i] = strdup(claims[i])) != NULL;
    if (!ok) {
        use_clear(&u);
        return -1;
    }
    v->uses[v->n_uses++] = u;
    return 0;
}

size_t sched_volumes_claim_users(const sched_volumes *v, const char *ns, const char *name,
                                 const char *except_uid) {
    size_t count = 0;
    for (size_t k = 0; k < v->n_uses; k++) {
        if (strcmp(v->uses[k].ns, ns) != 0 || (except_uid && !strcmp(v->uses[k].uid, except_uid)))
            continue;
        for (size_t i = 0; i < v->uses[k].n; i++)
            if (strcmp(v->uses[k].claims[i], name) == 0) {
                count++;
                break;
            }
    }
    return count;
}

void sched_volumes_each_use(const sched_volumes *v,
                            void (*fn)(void *arg, const char *node, const char *ns,
                                       const char *claim),
                            void *arg) {
    for (size_t k = 0; k < v->n_uses; k++)
        for (size_t i = 0; i < v->uses[k].n; i++)
            fn(arg, v->uses[k].node, v->uses[k].ns, v->uses[k].claims[i]);
}

/* ---- accessors for the other volume plugins ---- */

int sched_volumes_claim_access(const sched_volumes *v, const char *ns, const char *name) {
    const claim_ent *c = get_claim(v, ns, name);
    return c ? c->access : -1;
}

const char *sched_volumes_claim_volume_name(const sched_volumes *v, const char *ns,
                                            const char *name) {
    const claim_ent *c = get_claim(v, ns, name);
    return c ? c->volume : NULL;
}

const char *sched_volumes_claim_class(const sched_volumes *v, const char *ns, const char *name) {
    const claim_ent *c = get_claim(v, ns, name);
    return c ? c->class : NULL;
}

bool sched_volumes_class(const sched_volumes *v, const char *name, bool *wffc,
                         const char **provisioner) {
    const class_ent *c = tree_get(&v->classes, name);
    if (!c)
        return false;
    if (wffc)
        *wffc = c->wffc;
    if (provisioner)
        *provisioner = c->provisioner;
    return true;
}

bool sched_volumes_volume_exists(const sched_volumes *v, const char *pv) {
    return tree_get(&v->volumes, pv) != NULL;
}

size_t sched_volumes_volume_topology(const sched_volumes *v, const char *pv,
                                     void (*fn)(void *arg, const char *key, const char *value),
                                     void *arg) {
    static const char *const keys[] = {
        "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/zone", "topology.kubernetes.io/region", NULL};
    const volume_ent *e = tree_get(&v->volumes, pv);
    if (!e)
        return 0;
    size_t n = 0;
    for (size_t i = 0; keys[i]; i++) {
        const char *val = json_string_value(json_object_get(e->labels, keys[i]));
        if (val) {
            fn(arg, keys[i], val);
            n++;
        }
    }
    return n;
}

const char *sched_volumes_volume_csi(const sched_volumes *v, const char *pv, const char **handle) {
    const volume_ent *e = tree_get(&v->volumes, pv);
    if (!e || !e->csi_driver)
        return NULL;
    if (handle)
        *handle = e->csi_handle;
    return e->csi_driver;
}

int64_t sched_volumes_csi_limit(const sched_volumes *v, const char *node, const char *driver) {
    const csinode_ent *c = tree_get(&v->csinodes, node);
    const json_t *n = c ? json_object_get(c->drivers, driver) : NULL;
    return n ? json_integer_value(n) : -1;
}

/* ---- VolumeBinding ---- */

/* One unbound claim of a delayed-binding class, with the PVs it could take on some node. */
typedef struct pending_claim {
    const claim_ent *c;
    size_t index;            /* in the pod's claims */
    const volume_ent **cand; /* matching on everything but the node, by capacity ascending */
    size_t n_cand, cap_cand;
    const volume_ent *prebound; /* a PV whose claimRef already names the claim */
    const class_ent *class;
} pending_claim;

struct sched_volume_state {
    const sched_volumes *v;
    const volume_ent **pvs; /* bound volumes of the pod that have node affinity */
    size_t n, cap;
    pending_claim *pend; /* by request ascending (kube sorts claims by size) */
    size_t n_pend, cap_pend;
    int problem; /* -1, or the detail every node gets (a claim the pod cannot use) */
};

sched_volume_state *sched_volume_state_new(void) {
    sched_volume_state *st = calloc(1, sizeof *st);
    if (st)
        st->problem = -1;
    return st;
}

void sched_volume_state_free(sched_volume_state *st) {
    if (!st)
        return;
    for (size_t i = 0; i < st->cap_pend; i++)
        free(st->pend[i].cand);
    free(st->pend);
    free(st->pvs);
    free(st);
}

/* The claim a PV is bound to, or assumed bound to: ns/name key, "" when free. */
static bool volume_claimed_by(const volume_ent *e, const claim_ent *c) {
    if (e->assumed_claim)
        return strcmp(e->assumed_claim, c->key) == 0;
    return e->ref_name[0] && strcmp(e->ref_ns, c->ns) == 0 && strcmp(e->ref_name, c->name) == 0 &&
           (!e->ref_uid[0] || strcmp(e->ref_uid, c->uid) == 0);
}

static bool volume_free_for_any(const volume_ent *e) {
    return !e->assumed_claim && !e->ref_name[0];
}

/* FindMatchingVolume's checks that do not depend on the node, for a PV not bound to the claim:
 * available, the class, capacity, volume mode, access modes, selector, not being deleted. */
static bool volume_fits_claim(const volume_ent *e, const claim_ent *c) {
    return volume_free_for_any(e) && e->available && !e->deleting &&
           strcmp(e->class, c->class) == 0 && e->capacity >= c->request && e->block == c->block &&
           (e->access & c->access) == c->access &&
           (!c->sel || tm_selector_matches(c->sel, e->labels));
}

typedef struct cand_walk {
    pending_claim *pc;
    int oom;
} cand_walk;

static void collect_cand(const void *nodep, VISIT which, void *arg) {
    if (which != postorder && which != leaf)
        return;
    cand_walk *w = arg;
    const volume_ent *e = *(volume_ent *const *)nodep;
    pending_claim *pc = w->pc;
    if (volume_claimed_by(e, pc->c)) {
        /* pre-bound by a user or by an earlier attempt: that PV or none (kube) */
        if (!e->deleting && e->capacity >= pc->c->request && e->block == pc->c->block)
            pc->prebound = e;
        return;
    }
    if (!volume_fits_claim(e, pc->c))
        return;
    if (pc->n_cand == pc->cap_cand) {
        size_t nc = pc->cap_cand ? pc->cap_cand * 2 : 8;
        const volume_ent **np = realloc(pc->cand, nc * sizeof *np);
        if (!np) {
            w->oom = 1;
            return;
        }
        pc->cand = np;
        pc->cap_cand = nc;
    }
    pc->cand[pc->n_cand++] = e;
}

static int cmp_cand(const void *a, const void *b) {
    const volume_ent *x = *(const volume_ent *const *)a, *y = *(const volume_ent *const *)b;
    if (x->capacity != y->capacity)
        return x->capacity < y->capacity ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_pend(const void *a, const void *b) {
    const pending_claim *x = a, *y = b;
    if (x->c->request != y->c->request)
        return x->c->request < y->c->request ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The problem with claim i of p, -1 when it is usable (then *out). */
static int claim_problem(const sched_volumes *v, const sched_pod *p, size_t i,
                         const claim_ent **out) {
    const claim_ent *c = get_claim(v, p->ns, p->claims[i]);
    bool eph = i < 64 && (p->ephemeral_claims >> i & 1);
    int kind = -1;
    if (!c)
        kind = eph ? SCHED_VOLUME_EPHEMERAL_WAIT : SCHED_VOLUME_CLAIM_MISSING;
    else if (eph && strcmp(c->owner_uid, p->uid) != 0)
        kind = SCHED_VOLUME_EPHEMERAL_OWNER;
    else if (c->deleting)
        kind = SCHED_VOLUME_CLAIM_DELETING;
    *out = c;
    return kind < 0 ? -1 : kind | (int)(i << 8);
}

static pending_claim *add_pending(sched_volume_state *st) {
    if (st->n_pend == st->cap_pend) {
        size_t nc = st->cap_pend ? st->cap_pend * 2 : 4;
        pending_claim *np = realloc(st->pend, nc * sizeof *np);
        if (!np)
            return NULL;
        memset(np + st->cap_pend, 0, (nc - st->cap_pend) * sizeof *np);
        st->pend = np;
        st->cap_pend = nc;
    }
    pending_claim *pc = &st->pend[st->n_pend++];
    pc->n_cand = 0;
    pc->prebound = NULL;
    return pc;
}

int sched_volume_prefilter(sched_volume_state *st, const sched_snapshot *s, const sched_pod *p,
                           bool *on, tm_err *err) {
    st->n = 0;
    st->n_pend = 0;
    st->problem = -1;
    *on = false;
    const sched_volumes *v = sched_snapshot_volumes(s);
    st->v = v;
    if (!v || !p->n_claims)
        return 0;
    for (size_t i = 0; i < p->n_claims; i++) {
        const claim_ent *c = NULL;
        if ((st->problem = claim_problem(v, p, i, &c)) >= 0) {
            *on = true;
            return 0;
        }
        if (c->bound) {
            const volume_ent *pv = tree_get(&v->volumes, c->volume);
            if (!pv) {
                st->problem = SCHED_VOLUME_PV_MISSING | (int)(i << 8);
                *on = true;
                return 0;
            }
            if (!pv->has_affinity)
                continue;
            if (st->n == st->cap) {
                size_t ncap = st->cap ? st->cap * 2 : 4;
                const volume_ent **np = realloc(st->pvs, ncap * sizeof *np);
                if (!np)
                    return tm_err_set(err, "out of memory resolving the volumes of pod %s/%s",
                                      p->ns, p->name);
                st->pvs = np;
                st->cap = ncap;
            }
            st->pvs[st->n++] = pv;
            continue;
        }
        /* unbound: delayed binding only for a known WaitForFirstConsumer class (kube's
         * IsDelayBindingMode: no class, or an unknown one, binds immediately) */
        const class_ent *cls = c->class[0] ? tree_get(&v->classes, c->class) : NULL;
        if (!cls || !cls->wffc) {
            st->problem = SCHED_VOLUME_IMMEDIATE_UNBOUND | (int)(i << 8);
            *on = true;
            return 0;
        }
        pending_claim *pc = add_pending(st);
        if (!pc)
            return tm_err_set(err, "out of memory resolving the volumes of pod %s/%s", p->ns,
                              p->name);
        pc->c = c;
        pc->index = i;
        pc->class = cls;
        if (!c->selected_node[0] && !c->assumed_node) {
            cand_walk w = {pc, 0};
            twalk_r(v->volumes, collect_cand, &w);
            if (w.oom)
                return tm_err_set(err, "out of memory matching volumes for pod %s/%s", p->ns,
                                  p->name);
            if (pc->n_cand > 1) /* qsort's base may not be NULL, even for 0 items */
                qsort(pc->cand, pc->n_cand, sizeof *pc->cand, cmp_cand);
        }
    }
    if (st->n_pend > 1)
        qsort(st->pend, st->n_pend, sizeof *st->pend, cmp_pend);
    *on = st->n > 0 || st->n_pend > 0;
    return 0;
}

/* Matches the pending claims on node n (kube's FindPodVolumes for delayed binding): chosen[k]
 * gets the PV of pending claim k, NULL to provision. -1 when every claim is satisfied, else the
 * detail. */
static int match_pending(const sched_volume_state *st, const sched_node *n,
                         const volume_ent **chosen) {
    for (size_t k = 0; k < st->n_pend; k++) {
        const pending_claim *pc = &st->pend[k];
        chosen[k] = NULL;
        const char *sel = pc->c->assumed_node ? pc->c->assumed_node : pc->c->selected_node;
        if (sel[0]) { /* a node was chosen for it already: that node only, to provision */
            if (strcmp(sel, n->name) != 0)
                return SCHED_VOLUME_BIND_CONFLICT;
            continue;
        }
        if (pc->prebound) {
            /* that PV or none: outside its node affinity, the claim is left to provisioning
             * (FindMatchingVolume returns no match) */
            if (!pc->prebound->has_affinity ||
                sched_sel_terms_match(pc->prebound->terms, pc->prebound->n_terms, n))
                chosen[k] = pc->prebound;
        }
        for (size_t j = 0; !pc->prebound && j < pc->n_cand && !chosen[k]; j++) {
            const volume_ent *e = pc->cand[j];
            if (e->has_affinity && !sched_sel_terms_match(e->terms, e->n_terms, n))
                continue;
            bool taken = false; /* by a smaller claim of the same pod */
            for (size_t q = 0; q < k && !taken; q++)
                taken = chosen[q] == e;
            if (!taken)
                chosen[k] = e;
        }
        if (chosen[k])
            continue;
        /* nothing to bind: provisioned, if the class has a provisioner and allows the node */
        const class_ent *cls = pc->class;
        if (!cls->provisioner[0] || strcmp(cls->provisioner, NO_PROVISIONER) == 0 ||
            (!cls->any_topology && !sched_sel_terms_match(cls->topo, cls->n_topo, n)))
            return SCHED_VOLUME_BIND_CONFLICT;
    }
    return -1;
}

int sched_volume_filter(const sched_volume_state *st, const sched_node *n) {
    if (st->problem >= 0)
        return st->problem;
    for (size_t i = 0; i < st->n; i++)
        if (!sched_sel_terms_match(st->pvs[i]->terms, st->pvs[i]->n_terms, n))
            return SCHED_VOLUME_NODE_CONFLICT;
    if (!st->n_pend)
        return -1;
    const volume_ent *small[8], **chosen = small;
    if (st->n_pend > 8 && !(chosen = malloc(st->n_pend * sizeof *chosen)))
        return SCHED_VOLUME_BIND_CONFLICT; /* refusing is safe */
    int r = match_pending(st, n, chosen);
    if (chosen != small)
        free(chosen);
    return r;
}

void sched_volume_plan_free(sched_volume_plan *pl) {
    if (!pl)
        return;
    for (size_t i = 0; i < pl->n; i++) {
        free(pl->b[i].ns);
        free(pl->b[i].claim);
        free(pl->b[i].claim_uid);
        free(pl->b[i].pv);
        free(pl->b[i].pv_rv);
        free(pl->b[i].claim_rv);
    }
    free(pl->b);
    free(pl->node);
    free(pl);
}

sched_volume_plan *sched_volume_state_plan(const sched_volume_state *st, const sched_node *n,
                                           tm_err *err) {
    if (st->problem >= 0 || !st->n_pend)
        return NULL;
    sched_volume_plan *pl = calloc(1, sizeof *pl);
    const volume_ent **chosen = calloc(st->n_pend, sizeof *chosen);
    if (pl)
        pl->b = calloc(st->n_pend, sizeof *pl->b);
    if (!pl || !chosen || !pl->b || !(pl->node = strdup(n->name)))
        goto oom;
    if (match_pending(st, n, chosen) >= 0) { /* not a node the filter passed */
        free(chosen);
        sched_volume_plan_free(pl);
        tm_err_set(err, "node %s does not fit the volumes any more", n->name);
        return NULL;
    }
    for (size_t k = 0; k < st->n_pend; k++) {
        const claim_ent *c = st->pend[k].c;
        sched_volume_bind *b = &pl->b[pl->n++];
        b->ns = strdup(c->ns);
        b->claim = strdup(c->name);
        b->claim_uid = strdup(c->uid);
        b->claim_rv = strdup(c->rv);
        if (chosen[k]) {
            b->pv = strdup(chosen[k]->name);
            b->pv_rv = strdup(chosen[k]->rv);
        }
        if (!b->ns || !b->claim || !b->claim_uid || !b->claim_rv ||
            (chosen[k] && (!b->pv || !b->pv_rv)))
            goto oom;
    }
    free(chosen);
    return pl;
oom:
    free(chosen);
    sched_volume_plan_free(pl);
    tm_err_set(err, "out of memory planning volumes");
    return NULL;
}

void sched_volumes_assume(sched_volumes *v, const sched_volume_plan *pl) {
    for (size_t i = 0; pl && i < pl->n; i++) {
        const sched_volume_bind *b = &pl->b[i];
        claim_ent *c = get_claim(v, b->ns, b->claim);
        if (!c)
            continue;
        if (b->pv) {
            volume_ent *e = tree_get(&v->volumes, b->pv);
            if (e && !e->assumed_claim)
                e->assumed_claim = strdup(c->key);
        } else if (!c->assumed_node && !c->selected_node[0]) {
            c->assumed_node = strdup(pl->node);
        }
    }
}

void sched_volumes_revert(sched_volumes *v, const sched_volume_plan *pl) {
    for (size_t i = 0; pl && i < pl->n; i++) {
        const sched_volume_bind *b = &pl->b[i];
        claim_ent *c = get_claim(v, b->ns, b->claim);
        if (b->pv) {
            volume_ent *e = tree_get(&v->volumes, b->pv);
            if (e && e->assumed_claim && c && strcmp(e->assumed_claim, c->key) == 0) {
                free(e->assumed_claim);
                e->assumed_claim = NULL;
            }
        } else if (c && c->assumed_node && strcmp(c->assumed_node, pl->node) == 0) {
            free(c->assumed_node);
            c->assumed_node = NULL;
        }
    }
}

int sched_volumes_plan_status(const sched_volumes *v, const sched_volume_plan *pl, char *msg,
                              size_t size) {
    int done = 1;
    for (size_t i = 0; i < pl->n; i++) {
        const sched_volume_bind *b = &pl->b[i];
        const claim_ent *c = get_claim(v, b->ns, b->claim);
        if (!c || strcmp(c->uid, b->claim_uid) != 0) {
            snprintf(msg, size, "persistentvolumeclaim \"%s\" was deleted", b->claim);
            return -1;
        }
        if (c->bound) {
            if (!tree_get(&v->volumes, c->volume)) {
                snprintf(msg, size, "pv \"%s\" bound to claim \"%s\" does not exist", c->volume,
                         b->claim);
                return -1;
            }
            continue;
        }
        done = 0;
        if (b->pv) {
            const volume_ent *e = tree_get(&v->volumes, b->pv);
            if (!e) {
                snprintf(msg, size, "pv \"%s\" was deleted", b->pv);
                return -1;
            }
            if (e->ref_name[0] && !volume_claimed_by(e, c)) {
                snprintf(msg, size, "pv \"%s\" was bound to another claim (%s/%s)", b->pv,
                         e->ref_ns, e->ref_name);
                return -1;
            }
        } else if (!c->selected_node[0] && !c->assumed_node) {
            /* the provisioner gave the node back (kube: "selectedNode annotation reset") */
            snprintf(msg, size, "selectedNode annotation reset for PVC \"%s\"", b->claim);
            return -1;
        }
    }
    return done;
}

bool sched_volumes_plan_undoable(const sched_volumes *v, const sched_volume_plan *pl, size_t i) {
    const sched_volume_bind *b = &pl->b[i];
    const claim_ent *c = get_claim(v, b->ns, b->claim);
    if (!c || c->volume[0] || strcmp(c->uid, b->claim_uid) != 0)
        return false;
    if (!b->pv)
        return strcmp(c->selected_node, pl->node) == 0;
    const volume_ent *e = tree_get(&v->volumes, b->pv);
    return e && strcmp(e->ref_ns, c->ns) == 0 && strcmp(e->ref_name, c->name) == 0;
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
    case SCHED_VOLUME_IMMEDIATE_UNBOUND:
        snprintf(buf, size, "pod has unbound immediate PersistentVolumeClaims");
        break;
    case SCHED_VOLUME_BIND_CONFLICT:
        snprintf(buf, size, "node(s) didn't find available persistent volumes to bind");
        break;
    case SCHED_VOLUME_EPHEMERAL_WAIT:
        snprintf(buf, size,
                 "waiting for ephemeral volume controller to create the persistentvolumeclaim "
                 "\"%s\"",
                 claim);
        break;
    case SCHED_VOLUME_EPHEMERAL_OWNER:
        snprintf(buf, size, "PVC %s/%s was not created for pod %s/%s (pod is not owner)",
                 p ? p->ns : "", claim, p ? p->ns : "", p ? p->name : "");
        break;
    default:
        snprintf(buf, size,
                 "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
        break;
    }
}
