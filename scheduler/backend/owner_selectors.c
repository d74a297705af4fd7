/* owner_selectors.c: the Service / controller selector table and kube's DefaultSelector
 * (owner_selectors.h). One dense array per kind, searched linearly: the spread plugin computes a
 * pod's selector once per cycle (cached by the table's generation), and a cluster's Services and
 * controllers are few next to its pods. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/owner_selectors.h"

typedef struct entry {
    char *ns, *name;
    sched_labels *map; /* Service, ReplicationController: spec.selector; NULL = none */
    tm_selector *sel;  /* ReplicaSet, StatefulSet: spec.selector; NULL = none or unparsable */
} entry;

struct sched_owner_sels {
    entry *e[SCHED_OWNER_KINDS];
    size_t n[SCHED_OWNER_KINDS], cap[SCHED_OWNER_KINDS];
    uint64_t gen;
};

static const char *const kind_names[SCHED_OWNER_KINDS] = {"Service", "ReplicationController",
                                                          "ReplicaSet", "StatefulSet"};

const char *sched_owner_kind_name(sched_owner_kind k) {
    return k < SCHED_OWNER_KINDS ? kind_names[k] : "none";
}

const char *sched_owner_kind_path(sched_owner_kind k) {
    static const char *const paths[SCHED_OWNER_KINDS] = {
        "/api/v1/services", "/api/v1/replicationcontrollers", "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets"};
    return k < SCHED_OWNER_KINDS ? paths[k] : NULL;
}

sched_owner_kind sched_owner_kind_of_ref(const char *api_version, const char *kind) {
    if (!api_version || !kind)
        return SCHED_OWNER_NONE;
    if (strcmp(api_version, "v1") == 0 && strcmp(kind, "ReplicationController") == 0)
        return SCHED_OWNER_RC;
    if (strcmp(api_version, "apps/v1") == 0 && strcmp(kind, "ReplicaSet") == 0)
        return SCHED_OWNER_RS;
    if (strcmp(api_version, "apps/v1") == 0 && strcmp(kind, "StatefulSet") == 0)
        return SCHED_OWNER_SS;
    return SCHED_OWNER_NONE;
}

sched_owner_sels *sched_owner_sels_new(void) {
    return calloc(1, sizeof(sched_owner_sels));
}

static void entry_free(entry *x) {
    free(x->ns);
    free(x->name);
    free(x->map);
    tm_selector_free(x->sel);
}

void sched_owner_sels_free(sched_owner_sels *t) {
    if (!t)
        return;
    for (int k = 0; k < SCHED_OWNER_KINDS; k++) {
        for (size_t i = 0; i < t->n[k]; i++)
            entry_free(&t->e[k][i]);
        free(t->e[k]);
    }
    free(t);
}

static entry *find(const sched_owner_sels *t, sched_owner_kind k, const char *ns,
                   const char *name) {
    for (size_t i = 0; t && k < SCHED_OWNER_KINDS && i < t->n[k]; i++)
        if (strcmp(t->e[k][i].name, name) == 0 && strcmp(t->e[k][i].ns, ns) == 0)
            return &t->e[k][i];
    return NULL;
}

int sched_owner_sels_put_json(sched_owner_sels *t, sched_owner_kind k, const json_t *obj,
                              tm_err *err) {
    if (k >= SCHED_OWNER_KINDS)
        return tm_err_set(err, "unknown selector kind %d", (int)k);
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!json_is_object(obj) || !name || !*name)
        return tm_err_set(err, "%s without metadata.name", kind_names[k]);
    if (!ns || !*ns)
        ns = "default";
    const json_t *sel = json_object_get(json_object_get(obj, "spec"), "selector");
    entry x = {0};
    int bad = 0;
    if (sel && !json_is_null(sel)) {
        if (k == SCHED_OWNER_SERVICE || k == SCHED_OWNER_RC) {
            errno = 0;
            if (sched_labels_from_json(sel, &x.map) != 0) {
                if (errno != ENOMEM)
                    bad = tm_err_set(err, "%s %s/%s: spec.selector is not a map of strings",
                                     kind_names[k], ns, name);
                else
                    return tm_err_set(err, "out of memory");
            }
        } else {
            tm_err perr = {0};
            if (!(x.sel = tm_selector_from_label_selector(sel, &perr)))
                bad = tm_err_set(err, "%s %s/%s: spec.selector: %s", kind_names[k], ns, name,
                                 perr.msg);
        }
    }
    if (!(x.ns = strdup(ns)) || !(x.name = strdup(name))) {
        entry_free(&x);
        return tm_err_set(err, "out of memory");
    }
    entry *slot = find(t, k, ns, name);
    if (!slot) {
        if (t->n[k] == t->cap[k]) {
            size_t cap = t->cap[k] ? 2 * t->cap[k] : 16;
            entry *ne = realloc(t->e[k], cap * sizeof *ne);
            if (!ne) {
                entry_free(&x);
                return tm_err_set(err, "out of memory recording %s %s/%s", kind_names[k], ns, name);
            }
            t->e[k] = ne;
            t->cap[k] = cap;
        }
        slot = &t->e[k][t->n[k]++];
    } else {
        entry_free(slot);
    }
    *slot = x;
    t->gen++;
    return bad ? 1 : 0;
}

int sched_owner_sels_remove(sched_owner_sels *t, sched_owner_kind k, const char *ns,
                            const char *name) {
    entry *x = find(t, k, ns, name);
    if (!x)
        return -1;
    entry_free(x);
    *x = t->e[k][--t->n[k]];
    t->gen++;
    return 0;
}

size_t sched_owner_sels_count(const sched_owner_sels *t, sched_owner_kind k) {
    return t && k < SCHED_OWNER_KINDS ? t->n[k] : 0;
}

uint64_t sched_owner_sels_generation(const sched_owner_sels *t) {
    return t ? t->gen : 0;
}

/* ---- DefaultSelector ---- */

typedef struct pair {
    const char *key, *value;
} pair;

typedef struct labelset {
    pair *p;
    size_t n, cap;
} labelset;

/* labels.Merge: a key already present takes the new value. */
static int merge(labelset *s, const sched_labels *m) {
    for (size_t i = 0; i < sched_labels_count(m); i++) {
        const char *k, *v;
        sched_labels_at(m, i, &k, &v);
        size_t j = 0;
        while (j < s->n && strcmp(s->p[j].key, k) != 0)
            j++;
        if (j == s->n) {
            if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 8;
                pair *np = realloc(s->p, cap * sizeof *np);
                if (!np)
                    return -1;
                s->p = np;
                s->cap = cap;
            }
            s->n++;
        }
        s->p[j] = (pair){k, v};
    }
    return 0;
}

/* Whether every pair of a Service's selector is among the pod's labels. */
static bool map_matches(const sched_labels *m, const json_t *labels) {
    for (size_t i = 0; i < sched_labels_count(m); i++) {
        const char *k, *v;
        sched_labels_at(m, i, &k, &v);
        const char *pv = json_string_value(json_object_get(labels, k));
        if (!pv || strcmp(pv, v) != 0)
            return false;
    }
    return true;
}

static int cmp_pair(const void *a, const void *b) {
    return strcmp(((const pair *)a)->key, ((const pair *)b)->key);
}

static int add_req(tm_selector *s, const char *key, tm_sel_op op, const char *const *values,
                   size_t nv) {
    tm_sel_req *nr = realloc(s->reqs, (s->n + 1) * sizeof *nr);
    if (!nr)
        return -1;
    s->reqs = nr;
    tm_sel_req *r = &s->reqs[s->n];
    *r = (tm_sel_req){.op = op};
    if (!(r->key = strdup(key)) || (nv && !(r->values = calloc(nv, sizeof *r->values)))) {
        free(r->key);
        return -1;
    }
    for (; r->nvalues < nv; r->nvalues++)
        if (!(r->values[r->nvalues] = strdup(values[r->nvalues]))) {
            for (size_t i = 0; i < r->nvalues; i++)
                free(r->values[i]);
            free(r->values);
            free(r->key);
            return -1;
        }
    s->n++;
    return 0;
}

int sched_owner_sels_default_selector(const sched_owner_sels *t, const char *ns,
                                      const json_t *labels, sched_owner_kind owner_kind,
                                      const char *owner_name, tm_selector **out, tm_err *err) {
    *out = NULL;
    if (!t)
        return 0;
    labelset set = {0};
    int rc = 0;
    /* Services of the namespace that select the pod; one without a selector selects nothing */
    for (size_t i = 0; rc == 0 && i < t->n[SCHED_OWNER_SERVICE]; i++) {
        const entry *x = &t->e[SCHED_OWNER_SERVICE][i];
        if (x->map && strcmp(x->ns, ns) == 0 && map_matches(x->map, labels))
            rc = merge(&set, x->map);
    }
    const entry *owner = NULL;
    if (rc == 0 && owner_kind < SCHED_OWNER_KINDS && owner_kind != SCHED_OWNER_SERVICE &&
        owner_name)
        owner = find(t, owner_kind, ns, owner_name);
    if (rc == 0 && owner && owner_kind == SCHED_OWNER_RC && owner->map)
        rc = merge(&set, owner->map);
    tm_selector *s = calloc(1, sizeof *s);
    if (rc != 0 || !s) {
        free(set.p);
        free(s);
        return tm_err_set(err, "out of memory building a default spread selector");
    }
    if (set.n)
        qsort(set.p, set.n, sizeof *set.p, cmp_pair);
    for (size_t i = 0; rc == 0 && i < set.n; i++)
        rc = add_req(s, set.p[i].key, TM_SEL_EQ, &set.p[i].value, 1);
    free(set.p);
    /* a ReplicaSet's or StatefulSet's requirements are added to the Services' (kube's
     * selector.Add); one whose selector did not parse adds nothing */
    if (owner && owner_kind != SCHED_OWNER_RC && owner->sel)
        for (size_t i = 0; rc == 0 && i < owner->sel->n; i++) {
            const tm_sel_req *r = &owner->sel->reqs[i];
            rc = add_req(s, r->key, r->op, (const char *const *)r->values, r->nvalues);
        }
    if (rc != 0) {
        tm_selector_free(s);
        return tm_err_set(err, "out of memory building a default spread selector");
    }
    if (!s->n) { /* nothing selects the pod */
        tm_selector_free(s);
        return 0;
    }
    *out = s;
    return 0;
}
