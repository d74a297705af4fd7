/* selector.c: see selector.h. A small hand-written scanner: the grammar is a comma-separated
 * list of requirements, each `[!]key [op value | in|notin (v, ...)]`. */
#include "selector.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tm_selector_free(tm_selector *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->reqs[i].key);
        for (size_t j = 0; j < s->reqs[i].nvalues; j++)
            free(s->reqs[i].values[j]);
        free(s->reqs[i].values);
    }
    free(s->reqs);
    free(s);
}

static bool name_char(char c) {
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* A label name or value: at most 63 characters, alphanumeric at both ends. */
static bool valid_name(const char *s, size_t n) {
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return false;
    return true;
}

/* A key: [DNS-1123 subdomain prefix '/'] name. */
static bool valid_key(const char *k) {
    const char *slash = strchr(k, '/');
    if (!slash)
        return valid_name(k, strlen(k));
    size_t pn = (size_t)(slash - k);
    if (pn == 0 || pn > 253 || !isalnum((unsigned char)k[0]) || !isalnum((unsigned char)k[pn - 1]))
        return false;
    for (size_t i = 0; i < pn; i++)
        if (!(islower((unsigned char)k[i]) || isdigit((unsigned char)k[i]) || k[i] == '-' ||
              k[i] == '.'))
            return false;
    return valid_name(slash + 1, strlen(slash + 1));
}

static bool valid_value(const char *v) {
    return *v == '\0' || valid_name(v, strlen(v));
}

static bool valid_int(const char *v) {
    if (!*v)
        return false;
    char *end;
    errno = 0;
    (void)strtoll(v, &end, 10);
    return errno == 0 && *end == '\0';
}

static int add_req(tm_selector *s, const char *key, tm_sel_op op, char **values, size_t nv,
                   const char *what, tm_err *err) {
    if (!valid_key(key)) {
        for (size_t i = 0; i < nv; i++)
            free(values[i]);
        free(values);
        return tm_err_set(err,
                          "%s: invalid label key '%s' (want [prefix/]name, name at most 63 "
                          "characters [A-Za-z0-9._-] starting and ending alphanumeric)",
                          what, key);
    }
    const char *bad = NULL;
    for (size_t i = 0; i < nv && !bad; i++) {
        if ((op == TM_SEL_GT || op == TM_SEL_LT) ? !valid_int(values[i]) : !valid_value(values[i]))
            bad = values[i];
    }
    if (bad) {
        tm_err_set(err, "%s: invalid value '%s' for key '%s'%s", what, bad, key,
                   (op == TM_SEL_GT || op == TM_SEL_LT) ? " (Gt/Lt need an integer)" : "");
    } else if ((op == TM_SEL_IN || op == TM_SEL_NOTIN) && nv == 0) {
        tm_err_set(err, "%s: 'in'/'notin' for key '%s' needs at least one value", what, key);
        bad = key;
    }
    if (bad) {
        for (size_t i = 0; i < nv; i++)
            free(values[i]);
        free(values);
        return -1;
    }
    tm_sel_req *nr = realloc(s->reqs, (s->n + 1) * sizeof *nr);
    if (!nr)
        return tm_err_set(err, "%s: out of memory", what);
    s->reqs = nr;
    s->reqs[s->n++] = (tm_sel_req){strdup(key), op, values, nv};
    return 0;
}

/* ---- string syntax ----------------------------------------------------------------------- */

typedef struct {
    const char *s, *p;
    char what[300];
} scan;

static void skip_ws(scan *sc) {
    while (*sc->p == ' ' || *sc->p == '\t')
        sc->p++;
}

static bool is_delim(char c) {
    return c == '\0' || c == ' ' || c == '\t' || c == ',' || c == '=' || c == '!' || c == '(' ||
           c == ')' || c == '<' || c == '>';
}

static char *take_word(scan *sc) {
    const char *b = sc->p;
    while (!is_delim(*sc->p))
        sc->p++;
    return strndup(b, (size_t)(sc->p - b));
}

static int push_value(char ***vals, size_t *nv, char *v) {
    char **nvs = realloc(*vals, (*nv + 1) * sizeof *nvs);
    if (!nvs) {
        free(v);
        return -1;
    }
    *vals = nvs;
    (*vals)[(*nv)++] = v;
    return 0;
}

static void free_values(char **vals, size_t nv) {
    for (size_t i = 0; i < nv; i++)
        free(vals[i]);
    free(vals);
}

static int parse_set(scan *sc, const char *key, char ***vals, size_t *nv, tm_err *err) {
    skip_ws(sc);
    if (*sc->p != '(')
        return tm_err_set(err, "%s: expected '(' after in/notin for key '%s'", sc->what, key);
    sc->p++;
    for (;;) {
        skip_ws(sc);
        char *v = take_word(sc);
        if (push_value(vals, nv, v) < 0)
            return tm_err_set(err, "%s: out of memory", sc->what);
        skip_ws(sc);
        if (*sc->p == ',') {
            sc->p++;
            continue;
        }
        if (*sc->p == ')') {
            sc->p++;
            break;
        }
        return tm_err_set(err, "%s: missing ')' after the values of key '%s'", sc->what, key);
    }
    /* "in ()" scans as one empty value and means exactly that, as in Kubernetes' parser
     * (labels.Parse gives the set {""}): it matches a label present with an empty value, and
     * it is what tm_selector_string prints for values [""]. */
    return 0;
}

static int parse_req(scan *sc, tm_selector *sel, tm_err *err) {
    skip_ws(sc);
    bool neg = false;
    if (*sc->p == '!') {
        neg = true;
        sc->p++;
        skip_ws(sc);
    }
    char *key = take_word(sc);
    if (!*key) {
        free(key);
        return tm_err_set(err, "%s: expected a label key at position %d", sc->what,
                          (int)(sc->p - sc->s) + 1);
    }
    skip_ws(sc);
    tm_sel_op op = TM_SEL_EXISTS;
    char **vals = NULL;
    size_t nv = 0;
    int rc = 0;
    if (neg) {
        op = TM_SEL_NOTEXISTS;
    } else if (*sc->p == '\0' || *sc->p == ',') {
        op = TM_SEL_EXISTS;
    } else if (*sc->p == '=' || *sc->p == '!' || *sc->p == '<' || *sc->p == '>') {
        if (sc->p[0] == '!' && sc->p[1] != '=') {
            rc = tm_err_set(err, "%s: expected '!=' after key '%s'", sc->what, key);
        } else {
            op = sc->p[0] == '='   ? TM_SEL_EQ
                 : sc->p[0] == '!' ? TM_SEL_NEQ
                 : sc->p[0] == '<' ? TM_SEL_LT
                                   : TM_SEL_GT;
            sc->p += (sc->p[0] == '!' || (sc->p[0] == '=' && sc->p[1] == '=')) ? 2 : 1;
            skip_ws(sc);
            if (*sc->p == '=' || *sc->p == '!' || *sc->p == '(' || *sc->p == ')')
                rc = tm_err_set(err, "%s: unexpected '%c' in the value of key '%s'", sc->what,
                                *sc->p, key);
            else if (push_value(&vals, &nv, take_word(sc)) < 0)
                rc = tm_err_set(err, "%s: out of memory", sc->what);
        }
    } else {
        char *word = take_word(sc);
        if (strcmp(word, "in") == 0 || strcmp(word, "notin") == 0) {
            op = word[0] == 'i' ? TM_SEL_IN : TM_SEL_NOTIN;
            rc = parse_set(sc, key, &vals, &nv, err);
        } else {
            rc = tm_err_set(err,
                            "%s: expected an operator (=, ==, !=, in, notin, <, >) after "
                            "key '%s', got '%s'",
                            sc->what, key, *word ? word : (char[]){*sc->p, 0});
        }
        free(word);
    }
    if (rc == 0) {
        rc = add_req(sel, key, op, vals, nv, sc->what, err);
    } else {
        free_values(vals, nv);
    }
    free(key);
    return rc;
}

tm_selector *tm_selector_parse(const char *s, tm_err *err) {
    tm_selector *sel = calloc(1, sizeof *sel);
    if (!sel || !s)
        return sel;
    scan sc = {s, s, {0}};
    snprintf(sc.what, sizeof sc.what, "label selector '%.200s'", s);
    skip_ws(&sc);
    if (*sc.p == '\0')
        return sel;
    for (;;) {
        if (parse_req(&sc, sel, err) < 0) {
            tm_selector_free(sel);
            return NULL;
        }
        skip_ws(&sc);
        if (*sc.p == '\0')
            return sel;
        if (*sc.p != ',') {
            tm_err_set(err, "%s: expected ',' or the end at position %d, got '%c'", sc.what,
                       (int)(sc.p - s) + 1, *sc.p);
            tm_selector_free(sel);
            return NULL;
        }
        sc.p++;
    }
}

/* ---- object forms ------------------------------------------------------------------------ */

static int add_expressions(tm_selector *sel, const json_t *exprs, bool node, const char *what,
                           tm_err *err) {
    if (!exprs || json_is_null(exprs))
        return 0;
    if (!json_is_array(exprs))
        return tm_err_set(err, "%s: matchExpressions must be a list", what);
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    static const tm_sel_op opv[] = {TM_SEL_IN,        TM_SEL_NOTIN, TM_SEL_EXISTS,
                                    TM_SEL_NOTEXISTS, TM_SEL_GT,    TM_SEL_LT};
    size_t i;
    json_t *e;
    json_array_foreach(exprs, i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        json_t *values = json_object_get(e, "values");
        int k = -1;
        for (int j = 0; op && j < (node ? 6 : 4); j++)
            if (strcmp(op, ops[j]) == 0)
                k = j;
        if (!key)
            return tm_err_set(err, "%s: matchExpressions[%zu] has no key", what, i);
        if (k < 0)
            return tm_err_set(err,
                              "%s: matchExpressions[%zu] (key '%s'): operator '%s' is not "
                              "one of In, NotIn, Exists, DoesNotExist%s",
                              what, i, key, op ? op : "(missing)", node ? ", Gt, Lt" : "");
        size_t nv = json_array_size(values);
        if (values && !json_is_array(values) && !json_is_null(values))
            return tm_err_set(err, "%s: matchExpressions[%zu] (key '%s'): values must be a list",
                              what, i, key);
        bool want_none = opv[k] == TM_SEL_EXISTS || opv[k] == TM_SEL_NOTEXISTS;
        bool want_one = opv[k] == TM_SEL_GT || opv[k] == TM_SEL_LT;
        if ((want_none && nv) || (want_one && nv != 1) || (!want_none && !want_one && !nv))
            return tm_err_set(err, "%s: matchExpressions[%zu] (key '%s'): operator %s takes %s",
                              what, i, key, op,
                              want_none  ? "no values"
                              : want_one ? "exactly one value"
                                         : "at least one value");
        char **vals = nv ? calloc(nv, sizeof *vals) : NULL;
        for (size_t j = 0; j < nv; j++) {
            const char *v = json_string_value(json_array_get(values, j));
            vals[j] = strdup(v ? v : "");
            if (!v) {
                free_values(vals, nv);
                return tm_err_set(err,
                                  "%s: matchExpressions[%zu] (key '%s'): values must be "
                                  "strings",
                                  what, i, key);
            }
        }
        if (add_req(sel, key, opv[k], vals, nv, what, err) < 0)
            return -1;
    }
    return 0;
}

tm_selector *tm_selector_from_label_selector(const json_t *ls, tm_err *err) {
    tm_selector *sel = calloc(1, sizeof *sel);
    if (!sel || !ls || json_is_null(ls))
        return sel;
    const char *what = "label selector object";
    if (!json_is_object(ls)) {
        tm_err_set(err, "%s: not an object", what);
        tm_selector_free(sel);
        return NULL;
    }
    json_t *ml = json_object_get(ls, "matchLabels");
    if (ml && !json_is_object(ml) && !json_is_null(ml)) {
        tm_err_set(err, "%s: matchLabels must be a mapping", what);
        tm_selector_free(sel);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(ml, key, v) {
        if (!json_is_string(v)) {
            tm_err_set(err, "%s: matchLabels value of '%s' must be a string", what, key);
            tm_selector_free(sel);
            return NULL;
        }
        char **vals = malloc(sizeof *vals);
        vals[0] = strdup(json_string_value(v));
        if (add_req(sel, key, TM_SEL_EQ, vals, 1, what, err) < 0) {
            tm_selector_free(sel);
            return NULL;
        }
    }
    if (add_expressions(sel, json_object_get(ls, "matchExpressions"), false, what, err) < 0) {
        tm_selector_free(sel);
        return NULL;
    }
    return sel;
}

tm_selector *tm_selector_from_node_selector_term(const json_t *term, tm_err *err) {
    const char *what = "node selector term";
    if (!json_is_object(term)) {
        tm_err_set(err, "%s: not an object", what);
        return NULL;
    }
    if (json_array_size(json_object_get(term, "matchFields")) > 0) {
        tm_err_set(err, "%s: matchFields selects on fields, not labels; match it separately", what);
        return NULL;
    }
    tm_selector *sel = calloc(1, sizeof *sel);
    if (sel &&
        add_expressions(sel, json_object_get(term, "matchExpressions"), true, what, err) < 0) {
        tm_selector_free(sel);
        return NULL;
    }
    return sel;
}

/* ---- matching and printing --------------------------------------------------------------- */

static bool in_values(const tm_sel_req *r, const char *v) {
    for (size_t i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

/* Whether requirement r holds for a label value (v NULL: the key is absent). */
static bool req_matches_value(const tm_sel_req *r, const char *v) {
    switch (r->op) {
    case TM_SEL_EQ:
    case TM_SEL_IN:
        return v && in_values(r, v);
    case TM_SEL_NEQ:
    case TM_SEL_NOTIN:
        return !v || !in_values(r, v);
    case TM_SEL_EXISTS:
        return v != NULL;
    case TM_SEL_NOTEXISTS:
        return v == NULL;
    case TM_SEL_GT:
    case TM_SEL_LT: {
        if (!v || !valid_int(v))
            return false;
        long long have = strtoll(v, NULL, 10), want = strtoll(r->values[0], NULL, 10);
        return r->op == TM_SEL_GT ? have > want : have < want;
    }
    }
    return false;
}

static const char *json_label(const void *labels, const char *key) {
    return json_string_value(json_object_get(labels, key));
}

bool tm_selector_matches(const tm_selector *s, const json_t *labels) {
    return tm_selector_matches_get(s, json_label, labels);
}

bool tm_selector_matches_get(const tm_selector *s,
                             const char *(*get)(const void *labels, const char *key),
                             const void *labels) {
    if (!s)
        return true;
    for (size_t i = 0; i < s->n; i++)
        if (!req_matches_value(&s->reqs[i], get(labels, s->reqs[i].key)))
            return false;
    return true;
}

static void app(char **buf, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        while (*len + n + 1 > *cap)
            *cap = *cap ? *cap * 2 : 64;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

char *tm_selector_string(const tm_selector *s) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    app(&buf, &len, &cap, "");
    for (size_t i = 0; s && i < s->n; i++) {
        const tm_sel_req *r = &s->reqs[i];
        if (i)
            app(&buf, &len, &cap, ",");
        if (r->op == TM_SEL_NOTEXISTS)
            app(&buf, &len, &cap, "!");
        app(&buf, &len, &cap, r->key);
        static const char *const opstr[] = {"=", "!=", " in (", " notin (", "", "", ">", "<"};
        app(&buf, &len, &cap, opstr[r->op]);
        for (size_t j = 0; j < r->nvalues; j++) {
            if (j)
                app(&buf, &len, &cap, ",");
            app(&buf, &len, &cap, r->values[j]);
        }
        if (r->op == TM_SEL_IN || r->op == TM_SEL_NOTIN)
            app(&buf, &len, &cap, ")");
    }
    return buf;
}
