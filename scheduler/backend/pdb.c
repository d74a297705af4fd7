/* pdb.c: the PodDisruptionBudget table preemption reads (pdb.h): a dense array, searched
 * linearly (budgets are few), and the policy/v1 JSON parser. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/pdb.h"

struct sched_pdbs {
    sched_pdb *e;
    size_t n, cap;
};

sched_pdbs *sched_pdbs_new(void) {
    return calloc(1, sizeof(sched_pdbs));
}

static void pdb_free(sched_pdb *b) {
    free(b->ns);
    free(b->name);
    tm_selector_free(b->selector);
    for (size_t i = 0; i < b->n_disrupted; i++)
        free(b->disrupted[i]);
    free(b->disrupted);
}

void sched_pdbs_free(sched_pdbs *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        pdb_free(&t->e[i]);
    free(t->e);
    free(t);
}

static sched_pdb *find(const sched_pdbs *t, const char *ns, const char *name) {
    for (size_t i = 0; t && i < t->n; i++)
        if (strcmp(t->e[i].ns, ns) == 0 && strcmp(t->e[i].name, name) == 0)
            return &t->e[i];
    return NULL;
}

int sched_pdbs_put(sched_pdbs *t, const char *ns, const char *name, tm_selector *selector,
                   int32_t disruptions_allowed, const char *const *disrupted, size_t n_disrupted,
                   tm_err *err) {
    sched_pdb b = {.disruptions_allowed = disruptions_allowed, .selector = selector};
    if (!ns || !*ns || !name || !*name) {
        tm_selector_free(selector);
        return tm_err_set(err, "PodDisruptionBudget without namespace or name");
    }
    bool ok = (b.ns = strdup(ns)) && (b.name = strdup(name)) &&
              (!n_disrupted || (b.disrupted = calloc(n_disrupted, sizeof *b.disrupted)));
    for (size_t i = 0; ok && i < n_disrupted; i++, b.n_disrupted++)
        ok = (b.disrupted[i] = strdup(disrupted[i] ? disrupted[i] : "")) != NULL;
    sched_pdb *slot = ok ? find(t, ns, name) : NULL;
    if (ok && !slot) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 8;
            sched_pdb *ne = realloc(t->e, cap * sizeof *ne);
            ok = ne != NULL;
            if (ok) {
                t->e = ne;
                t->cap = cap;
            }
        }
        if (ok) {
            slot = &t->e[t->n++];
            memset(slot, 0, sizeof *slot);
        }
    }
    if (!ok) {
        pdb_free(&b);
        return tm_err_set(err, "out of memory recording PodDisruptionBudget %s/%s", ns, name);
    }
    pdb_free(slot);
    *slot = b;
    return 0;
}

int sched_pdbs_put_json(sched_pdbs *t, const json_t *pdb, tm_err *err) {
    const json_t *meta = json_object_get(pdb, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!json_is_object(pdb) || !name || !*name)
        return tm_err_set(err, "PodDisruptionBudget without metadata.name");
    if (!ns || !*ns)
        ns = "default";
    const json_t *spec = json_object_get(pdb, "spec");
    const json_t *status = json_object_get(pdb, "status");
    const json_t *ls = json_object_get(spec, "selector");
    tm_selector *sel = NULL;
    if (ls && !json_is_null(ls)) {
        if (!json_is_object(ls))
            return tm_err_set(err, "PodDisruptionBudget %s/%s: spec.selector is not an object", ns,
                              name);
        if (!(sel = tm_selector_from_label_selector(ls, err)))
            return tm_err_wrap(err, "PodDisruptionBudget %s/%s: spec.selector", ns, name);
    }
    const json_t *da = json_object_get(status, "disruptionsAllowed");
    if (da && !json_is_integer(da)) {
        tm_selector_free(sel);
        return tm_err_set(err,
                          "PodDisruptionBudget %s/%s: status.disruptionsAllowed is not an integer",
                          ns, name);
    }
    json_int_t allowed = da ? json_integer_value(da) : 0; /* not yet computed: nothing allowed */
    const json_t *dp = json_object_get(status, "disruptedPods");
    size_t nd = json_is_object(dp) ? json_object_size(dp) : 0, i = 0;
    const char **names = nd ? calloc(nd, sizeof *names) : NULL;
    if (nd && !names) {
        tm_selector_free(sel);
        return tm_err_set(err, "out of memory");
    }
    const char *k;
    const json_t *v;
    if (nd)
        json_object_foreach((json_t *)dp, k, v) names[i++] = k;
    int rc = sched_pdbs_put(t, ns, name, sel, allowed < 0 ? 0 : (int32_t)allowed, names, nd, err);
    free(names);
    return rc;
}

int sched_pdbs_remove(sched_pdbs *t, const char *ns, const char *name) {
    sched_pdb *b = find(t, ns, name);
    if (!b)
        return -1;
    pdb_free(b);
    *b = t->e[--t->n];
    return 0;
}

size_t sched_pdbs_count(const sched_pdbs *t) {
    return t ? t->n : 0;
}

const sched_pdb *sched_pdbs_at(const sched_pdbs *t, size_t i) {
    return t && i < t->n ? &t->e[i] : NULL;
}

bool sched_pdb_covers(const sched_pdb *b, const sched_pod_meta *m) {
    /* as kube-scheduler's filterPodsWithPDBViolation: a nil or empty selector covers nothing, a
     * pod without labels is covered by none, a pod the API server already counted (in
     * disruptedPods) is not counted again */
    if (!m || !b->selector || !b->selector->n || !sched_labels_count(m->labels) ||
        strcmp(b->ns, m->ns) != 0 || !sched_labels_match(b->selector, m->labels))
        return false;
    for (size_t i = 0; i < b->n_disrupted; i++)
        if (m->name && strcmp(b->disrupted[i], m->name) == 0)
            return false;
    return true;
}
