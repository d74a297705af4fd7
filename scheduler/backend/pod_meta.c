/* pod_meta.c: what the snapshot keeps of a placed pod for the inter-pod plugins (snapshot.h:
 * sched_pod_meta): its compact labels (one allocation: a header, sorted key/value offsets, the
 * strings), pod (anti-)affinity terms and their matching, preferred terms with weights, host
 * ports; construction, copies and freeing. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/snapshot.h"

/* ---- pod metadata, terms and host ports ---- */

sched_pod_meta *sched_pod_meta_new(const char *ns) {
    sched_pod_meta *m = calloc(1, sizeof *m);
    if (!m || !(m->ns = strdup(ns ? ns : "")) || !(m->name = strdup(""))) {
        if (m)
            free(m->ns);
        free(m);
        return NULL;
    }
    return m;
}

int sched_pod_meta_set_name(sched_pod_meta *m, const char *name) {
    char *n = strdup(name ? name : "");
    if (!n)
        return -1;
    free(m->name);
    m->name = n;
    return 0;
}

void sched_pod_meta_free(sched_pod_meta *m) {
    if (!m)
        return;
    free(m->ns);
    free(m->name);
    free(m->labels);
    sched_host_ports_free(m->ports, m->n_ports);
    sched_pod_terms_free(m->anti, m->n_anti);
    sched_pod_terms_free(m->aff, m->n_aff);
    sched_pod_prefs_free(m->pref);
    free(m);
}

/* ---- compact labels: a header, 2n offsets (key, value, ...; sorted by key), the strings ---- */

struct sched_labels {
    uint32_t n, size; /* pairs; bytes of the whole block */
    uint32_t off[];
};

static const char *lab_str(const sched_labels *l, size_t k) {
    return (const char *)l + l->off[k];
}

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int sched_labels_from_json(const json_t *labels, sched_labels **out) {
    *out = NULL;
    if (!labels || json_is_null(labels))
        return 0;
    if (!json_is_object(labels))
        return -1;
    size_t n = json_object_size(labels), bytes = 0, i = 0;
    if (!n)
        return 0;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return -1;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)labels, k, v) {
        if (!json_is_string(v)) {
            free(keys);
            return -1;
        }
        keys[i++] = k;
        bytes += strlen(k) + json_string_length(v) + 2;
    }
    qsort(keys, n, sizeof *keys, cmp_key);
    size_t head = sizeof(sched_labels) + 2 * n * sizeof(uint32_t);
    sched_labels *l = head + bytes <= UINT32_MAX ? malloc(head + bytes) : NULL;
    if (l) {
        l->n = (uint32_t)n;
        l->size = (uint32_t)(head + bytes);
        char *w = (char *)l + head;
        for (i = 0; i < n; i++) {
            const char *val = json_string_value(json_object_get(labels, keys[i]));
            size_t kl = strlen(keys[i]) + 1, vl = strlen(val) + 1;
            l->off[2 * i] = (uint32_t)(w - (char *)l);
            memcpy(w, keys[i], kl);
            w += kl;
            l->off[2 * i + 1] = (uint32_t)(w - (char *)l);
            memcpy(w, val, vl);
            w += vl;
        }
    }
    free(keys);
    *out = l;
    return l ? 0 : -1;
}

sched_labels *sched_labels_copy(const sched_labels *l) {
    sched_labels *c = l ? malloc(l->size) : NULL;
    if (c)
        memcpy(c, l, l->size);
    return c;
}

const char *sched_labels_get(const sched_labels *l, const char *key) {
    size_t lo = 0, hi = l ? l->n : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(lab_str(l, 2 * mid), key);
        if (c == 0)
            return lab_str(l, 2 * mid + 1);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

size_t sched_labels_count(const sched_labels *l) {
    return l ? l->n : 0;
}

void sched_labels_at(const sched_labels *l, size_t i, const char **key, const char **value) {
    *key = lab_str(l, 2 * i);
    *value = lab_str(l, 2 * i + 1);
}

bool sched_labels_equal(const sched_labels *a, const sched_labels *b) {
    if (sched_labels_count(a) != sched_labels_count(b))
        return false;
    for (size_t k = 0; k < 2 * sched_labels_count(a); k++)
        if (strcmp(lab_str(a, k), lab_str(b, k)) != 0)
            return false;
    return true;
}

static const char *labels_lookup(const void *l, const char *key) {
    return sched_labels_get(l, key);
}

bool sched_labels_match(const tm_selector *sel, const sched_labels *l) {
    return tm_selector_matches_get(sel, labels_lookup, l);
}

/* Whether namespace ns is one of the term's (see sched_pod_term_matches). */
static bool term_ns_ok(const sched_pod_term *t, const char *ns, bool assume_any_ns) {
    bool ns_ok = t->all_namespaces || (t->ns_selector && assume_any_ns);
    for (size_t i = 0; !ns_ok && i < t->n_namespaces; i++)
        ns_ok = strcmp(t->namespaces[i], ns ? ns : "") == 0;
    return ns_ok;
}

bool sched_pod_term_matches(const sched_pod_term *t, const char *ns, const sched_labels *labels,
                            bool assume_any_ns) {
    return t->selector && term_ns_ok(t, ns, assume_any_ns) &&
           sched_labels_match(t->selector, labels);
}

bool sched_pod_term_matches_json(const sched_pod_term *t, const char *ns, const json_t *labels,
                                 bool assume_any_ns) {
    return t->selector && term_ns_ok(t, ns, assume_any_ns) &&
           tm_selector_matches(t->selector, labels);
}

void sched_pod_terms_free(sched_pod_term *t, size_t n) {
    for (size_t i = 0; t && i < n; i++) {
        tm_selector_free(t[i].selector);
        for (size_t k = 0; k < t[i].n_namespaces; k++)
            free(t[i].namespaces[k]);
        free(t[i].namespaces);
        free(t[i].topology_key);
    }
    free(t);
}

static tm_selector *selector_copy(const tm_selector *src) {
    tm_selector *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->reqs = calloc(src->n + 1, sizeof *d->reqs);
    if (!d->reqs) {
        free(d);
        return NULL;
    }
    for (size_t i = 0; i < src->n; i++, d->n++) {
        const tm_sel_req *r = &src->reqs[i];
        tm_sel_req *o = &d->reqs[i];
        o->op = r->op;
        o->key = strdup(r->key);
        o->values = calloc(r->nvalues + 1, sizeof *o->values);
        if (!o->key || !o->values) {
            d->n++;
            tm_selector_free(d);
            return NULL;
        }
        for (size_t k = 0; k < r->nvalues; k++, o->nvalues++)
            if (!(o->values[k] = strdup(r->values[k]))) {
                d->n++;
                tm_selector_free(d);
                return NULL;
            }
    }
    return d;
}

int sched_pod_terms_copy(const sched_pod_term *src, size_t n, sched_pod_term **out) {
    *out = NULL;
    if (!n)
        return 0;
    sched_pod_term *d = calloc(n, sizeof *d);
    if (!d)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const sched_pod_term *t = &src[i];
        d[i].all_namespaces = t->all_namespaces;
        d[i].ns_selector = t->ns_selector;
        d[i].topology_key = strdup(t->topology_key ? t->topology_key : "");
        d[i].namespaces = calloc(t->n_namespaces + 1, sizeof *d[i].namespaces);
        bool ok = d[i].topology_key && d[i].namespaces;
        if (ok && t->selector)
            ok = (d[i].selector = selector_copy(t->selector)) != NULL;
        for (size_t k = 0; ok && k < t->n_namespaces; k++, d[i].n_namespaces++)
            ok = (d[i].namespaces[k] = strdup(t->namespaces[k])) != NULL;
        if (!ok) {
            sched_pod_terms_free(d, i + 1);
            return -1;
        }
    }
    *out = d;
    return 0;
}

void sched_pod_prefs_free(sched_pod_prefs *p) {
    if (!p)
        return;
    sched_pod_terms_free(p->aff, p->n_aff);
    sched_pod_terms_free(p->anti, p->n_anti);
    free(p->aff_weight);
    free(p->anti_weight);
    free(p);
}

static int32_t *weights_copy(const int32_t *w, size_t n) {
    int32_t *c = n ? malloc(n * sizeof *c) : NULL;
    if (c)
        memcpy(c, w, n * sizeof *c);
    return c;
}

sched_pod_prefs *sched_pod_prefs_copy(const sched_pod_prefs *src) {
    sched_pod_prefs *d = src ? calloc(1, sizeof *d) : NULL;
    if (!d)
        return NULL;
    bool ok = sched_pod_terms_copy(src->aff, src->n_aff, &d->aff) == 0;
    d->n_aff = ok ? src->n_aff : 0;
    ok = ok && sched_pod_terms_copy(src->anti, src->n_anti, &d->anti) == 0;
    d->n_anti = ok ? src->n_anti : 0;
    ok = ok && (!src->n_aff || (d->aff_weight = weights_copy(src->aff_weight, src->n_aff)));
    ok = ok && (!src->n_anti || (d->anti_weight = weights_copy(src->anti_weight, src->n_anti)));
    if (!ok) {
        sched_pod_prefs_free(d);
        return NULL;
    }
    return d;
}

void sched_host_ports_free(sched_host_port *p, size_t n) {
    for (size_t i = 0; p && i < n; i++)
        free(p[i].ip);
    free(p);
}

int sched_host_ports_copy(const sched_host_port *src, size_t n, sched_host_port **out) {
    *out = NULL;
    if (!n)
        return 0;
    sched_host_port *d = calloc(n, sizeof *d);
    if (!d)
        return -1;
    for (size_t i = 0; i < n; i++) {
        d[i] = src[i];
        if (!(d[i].ip = strdup(src[i].ip ? src[i].ip : "0.0.0.0"))) {
            sched_host_ports_free(d, i);
            return -1;
        }
    }
    *out = d;
    return 0;
}
