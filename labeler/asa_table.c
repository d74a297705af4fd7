/* asa_table.c: the table of ASA learners keyed by job shape and namespace, and its JSON form. */
#include "labeler/asa_table.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    asa_key key;
    asa_learner l;
    long long last_seq; /* the table's observation counter when this shape was last fed */
} entry;

struct asa_table {
    asa_config cfg;
    entry *e;
    size_t n, cap;
    long long seq;
};

static int name_ok(const char *s, size_t max) {
    return s && strlen(s) <= max;
}

int asa_key_make(asa_key *k, const char *ns, const char *group, int pods, long long cpu_milli,
                 long long mem_bytes, tm_err *err) {
    if (!name_ok(ns, 63) || !*ns)
        return tm_err_set(err, "asa key: namespace '%.80s' is empty or longer than 63",
                          ns ? ns : "(null)");
    if (!name_ok(group ? group : "", 63))
        return tm_err_set(err, "asa key: node group '%.80s' is longer than 63", group);
    if (pods < 1 || pods > 100000)
        return tm_err_set(err, "asa key: pods %d not in 1..100000", pods);
    if (cpu_milli < 0 || cpu_milli > 1000000000LL) /* 0: a pod that requests no cpu */
        return tm_err_set(err, "asa key: cpu %lldm per pod not in 0..10^9 millicores", cpu_milli);
    if (mem_bytes < 0 || mem_bytes > (1LL << 50))
        return tm_err_set(err, "asa key: memory %lld bytes per pod not in 0..2^50", mem_bytes);
    memset(k, 0, sizeof *k);
    snprintf(k->ns, sizeof k->ns, "%s", ns);
    snprintf(k->group, sizeof k->group, "%s", group ? group : "");
    k->pods = pods;
    k->cpu_milli = cpu_milli;
    k->mem_bytes = mem_bytes;
    return 0;
}

static int key_eq(const asa_key *a, const asa_key *b) {
    return a->pods == b->pods && a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes &&
           strcmp(a->ns, b->ns) == 0 && strcmp(a->group, b->group) == 0;
}

asa_table *asa_table_new(const asa_config *cfg) {
    if (asa_config_check(cfg, NULL) < 0)
        return NULL;
    asa_table *t = calloc(1, sizeof *t);
    if (t)
        t->cfg = *cfg;
    return t;
}

void asa_table_free(asa_table *t) {
    if (!t)
        return;
    free(t->e);
    free(t);
}

size_t asa_table_size(const asa_table *t) {
    return t->n;
}

const asa_key *asa_table_key(const asa_table *t, size_t i) {
    return i < t->n ? &t->e[i].key : NULL;
}

const asa_learner *asa_table_learner(const asa_table *t, size_t i) {
    return i < t->n ? &t->e[i].l : NULL;
}

static entry *find(const asa_table *t, const asa_key *k) {
    for (size_t i = 0; i < t->n; i++)
        if (key_eq(&t->e[i].key, k))
            return &t->e[i];
    return NULL;
}

const asa_learner *asa_table_find(const asa_table *t, const asa_key *k) {
    const entry *e = find(t, k);
    return e ? &e->l : NULL;
}

double asa_table_estimate(const asa_table *t, const asa_key *k, asa_rng *r, int *action) {
    const entry *e = find(t, k);
    int a = e ? asa_sample(&e->l, r) : -1;
    if (action)
        *action = a;
    return a >= 0 ? asa_alternative(a) : ASA_DEFAULT_ESTIMATE_S;
}

/* A new entry for k with a fresh learner, evicting the least recently observed when full. */
static entry *add(asa_table *t, const asa_key *k) {
    if (t->n == ASA_TABLE_MAX) {
        size_t old = 0;
        for (size_t i = 1; i < t->n; i++)
            if (t->e[i].last_seq < t->e[old].last_seq)
                old = i;
        t->e[old] = t->e[--t->n];
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        entry *e = realloc(t->e, cap * sizeof *e);
        if (!e)
            return NULL;
        t->e = e;
        t->cap = cap;
    }
    entry *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    e->key = *k;
    asa_learner_init(&e->l);
    return e;
}

int asa_table_observe(asa_table *t, const asa_key *k, int acted, double wait_s, asa_rng *r,
                      tm_err *err) {
    entry *e = find(t, k);
    asa_learner trial;
    if (e)
        trial = e->l;
    else
        asa_learner_init(&trial);
    /* on a copy, so that a refused observation leaves no empty learner behind */
    if (asa_observe(&trial, &t->cfg, acted, wait_s, r, err) < 0)
        return -1;
    if (!e && !(e = add(t, k)))
        return tm_err_set(err, "asa table: out of memory");
    e->l = trial;
    e->last_seq = ++t->seq;
    return 0;
}

static json_t *reals(const double *v, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

char *asa_table_to_json(const asa_table *t) {
    double alts[ASA_M];
    for (int i = 0; i < ASA_M; i++)
        alts[i] = asa_alternative(i);
    json_t *entries = json_array();
    for (size_t i = 0; entries && i < t->n; i++) {
        const entry *e = &t->e[i];
        json_array_append_new(
            entries,
            json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "namespace",
                      e->key.ns, "node_group", e->key.group, "pods", e->key.pods, "cpu_milli",
                      (json_int_t)e->key.cpu_milli, "memory_bytes", (json_int_t)e->key.mem_bytes,
                      "round", (json_int_t)e->l.round, "cases", (json_int_t)e->l.cases, "samples",
                      (json_int_t)e->l.samples, "last_seq", (json_int_t)e->last_seq, "p",
                      reals(e->l.p, ASA_M), "round_loss", reals(e->l.round_loss, ASA_M)));
    }
    json_t *doc = json_pack("{s:i, s:o, s:f, s:I, s:o}", "version", ASA_STATE_VERSION,
                            "alternatives_s", reals(alts, ASA_M), "round_bound", ASA_ROUND_BOUND,
                            "seq", (json_int_t)t->seq, "entries", entries);
    char *s = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    return s;
}

/* Appends one warning to warn (size n), separated by "; ", cut at the end of the buffer. */
static void warnf(char *warn, size_t n, const char *fmt, ...) {
    size_t used = strlen(warn);
    if (used + 3 >= n)
        return;
    if (used)
        used += (size_t)snprintf(warn + used, n - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(warn + used, n - used, fmt, ap);
    va_end(ap);
}

/* Reads an array of exactly ASA_M finite numbers into out. */
static int read_reals(const json_t *a, double *out) {
    if (!json_is_array(a) || json_array_size(a) != ASA_M)
        return -1;
    for (int i = 0; i < ASA_M; i++) {
        const json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_number(v) || !isfinite(out[i] = json_number_value(v)))
            return -1;
    }
    return 0;
}

static int read_int(const json_t *obj, const char *name, long long *out) {
    const json_t *v = json_object_get(obj, name);
    if (!json_is_integer(v))
        return -1;
    *out = json_integer_value(v);
    return 0;
}

/* One stored entry into e; -1 with the reason in err. */
static int read_entry(const json_t *o, entry *e, tm_err *err) {
    long long pods, cpu, mem;
    const char *ns = json_string_value(json_object_get(o, "namespace"));
    const char *group = json_string_value(json_object_get(o, "node_group"));
    if (!json_is_object(o) || !ns || !group || read_int(o, "pods", &pods) < 0 ||
        read_int(o, "cpu_milli", &cpu) < 0 || read_int(o, "memory_bytes", &mem) < 0)
        return tm_err_set(err, "no namespace, node_group, pods, cpu_milli or memory_bytes");
    if (pods < 1 || pods > 100000)
        return tm_err_set(err, "pods %lld not in 1..100000", pods);
    if (asa_key_make(&e->key, ns, group, (int)pods, cpu, mem, err) < 0)
        return -1;
    if (read_int(o, "round", &e->l.round) < 0 || read_int(o, "cases", &e->l.cases) < 0 ||
        read_int(o, "samples", &e->l.samples) < 0 || read_int(o, "last_seq", &e->last_seq) < 0)
        return tm_err_set(err, "no integer round, cases, samples or last_seq");
    if (e->last_seq < 0)
        return tm_err_set(err, "last_seq %lld is negative", e->last_seq);
    if (read_reals(json_object_get(o, "p"), e->l.p) < 0 ||
        read_reals(json_object_get(o, "round_loss"), e->l.round_loss) < 0)
        return tm_err_set(err, "p or round_loss is not %d finite numbers", ASA_M);
    return asa_learner_check(&e->l, err);
}

asa_table *asa_table_from_json(const char *text, const asa_config *cfg, char *warn, size_t n) {
    char dummy[1];
    if (!warn || n == 0) {
        warn = dummy;
        n = sizeof dummy;
    }
    warn[0] = 0;
    asa_table *t = asa_table_new(cfg);
    if (!t)
        return NULL;
    json_error_t jerr;
    json_t *doc = text ? json_loads(text, 0, &jerr) : NULL;
    if (!doc) {
        warnf(warn, n, "asa state ignored: not JSON (%s)", text ? jerr.text : "no text");
        return t;
    }
    const json_t *entries = json_object_get(doc, "entries");
    double alts[ASA_M];
    long long version = 0, seq = 0;
    int same_grid = read_reals(json_object_get(doc, "alternatives_s"), alts) == 0;
    for (int i = 0; same_grid && i < ASA_M; i++)
        same_grid = alts[i] == asa_alternative(i);
    if (read_int(doc, "version", &version) < 0 || version != ASA_STATE_VERSION)
        warnf(warn, n, "asa state ignored: version is not %d", ASA_STATE_VERSION);
    else if (!same_grid)
        warnf(warn, n, "asa state ignored: its alternatives are not this build's %d", ASA_M);
    else if (!json_is_array(entries) || read_int(doc, "seq", &seq) < 0 || seq < 0)
        warnf(warn, n, "asa state ignored: no entries array or seq");
    else {
        size_t i;
        const json_t *o;
        json_array_foreach(entries, i, o) {
            entry e;
            tm_err err = {0};
            memset(&e, 0, sizeof e);
            if (read_entry(o, &e, &err) < 0)
                warnf(warn, n, "asa state: entry %zu skipped: %s", i, err.msg);
            else if (find(t, &e.key))
                warnf(warn, n, "asa state: entry %zu skipped: duplicate of an earlier shape", i);
            else if (t->n == ASA_TABLE_MAX)
                warnf(warn, n, "asa state: entry %zu skipped: more than %d shapes", i,
                      ASA_TABLE_MAX);
            else {
                entry *slot = add(t, &e.key);
                if (!slot)
                    break;
                *slot = e;
                if (e.last_seq > seq)
                    seq = e.last_seq;
            }
        }
        t->seq = seq;
    }
    json_decref(doc);
    return t;
}
