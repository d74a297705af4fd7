/* metrics.c: the Prometheus registry behind metrics.h.
 *
 * Each metric owns a mutex and an array of series (one per label-value set). A series is found
 * by a hash of its label values, then compared exactly; it is created on first use and never
 * moves or goes away until the registry is freed, so updates after the first allocate nothing.
 * Rendering locks one metric at a time, so a scrape never stalls every updater at once. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

typedef enum { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM } metric_kind;

typedef struct series {
    uint64_t hash;
    char **lv;         /* nlabels values */
    double value;      /* counter or gauge value, histogram sum */
    uint64_t count;    /* histogram observations */
    uint64_t *buckets; /* histogram: per-bucket (not cumulative) counts, nbounds + 1 */
} series;

struct tm_metric {
    metric_kind kind;
    char *name, *help;
    char **labels;
    size_t nlabels;
    double *bounds;
    size_t nbounds;
    pthread_mutex_t mu; /* guards everything below */
    series **s;
    size_t ns, cap;
    bool warned;
    /* An alias (tm_metrics_alias) holds no series: it renders alias_of's under its own name,
     * with nconst constant labels (labels[0..nconst), values const_vals) before alias_of's. */
    tm_metric *alias_of;
    char **const_vals;
    size_t nconst;
};

struct tm_metrics {
    pthread_mutex_t mu; /* guards the metric list */
    tm_metric **m;
    size_t n, cap;
};

static const char *const kind_names[] = {"counter", "gauge", "histogram"};

tm_metrics *tm_metrics_new(void) {
    tm_metrics *reg = calloc(1, sizeof *reg);
    if (reg)
        pthread_mutex_init(&reg->mu, NULL);
    return reg;
}

static void series_free(series *s, size_t nlabels) {
    if (!s)
        return;
    for (size_t i = 0; i < nlabels; i++)
        free(s->lv[i]);
    free(s->lv);
    free(s->buckets);
    free(s);
}

static void metric_free(tm_metric *m) {
    if (!m)
        return;
    for (size_t i = 0; i < m->ns; i++)
        series_free(m->s[i], m->nlabels);
    free(m->s);
    for (size_t i = 0; i < m->nlabels; i++)
        free(m->labels[i]);
    free(m->labels);
    for (size_t i = 0; i < m->nconst; i++)
        free(m->const_vals[i]);
    free(m->const_vals);
    free(m->bounds);
    free(m->name);
    free(m->help);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void tm_metrics_free(tm_metrics *reg) {
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n; i++)
        metric_free(reg->m[i]);
    free(reg->m);
    pthread_mutex_destroy(&reg->mu);
    free(reg);
}

static bool valid_name(const char *s, bool colon) {
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
        if (!alpha && !(p != s && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

static int check_labels(const char *name, const char *const *labels, metric_kind kind,
                        tm_err *err) {
    for (size_t i = 0; labels && labels[i]; i++) {
        if (!valid_name(labels[i], false) || strncmp(labels[i], "__", 2) == 0)
            return tm_err_set(err,
                              "metric %s: invalid label name \"%s\" (must match "
                              "[a-zA-Z_][a-zA-Z0-9_]* and not start with __)",
                              name, labels[i]);
        if (kind == KIND_HISTOGRAM && strcmp(labels[i], "le") == 0)
            return tm_err_set(err, "metric %s: label name \"le\" is reserved for histograms", name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(labels[i], labels[j]) == 0)
                return tm_err_set(err, "metric %s: label name \"%s\" given twice", name, labels[i]);
    }
    return 0;
}

static int check_bounds(const char *name, const double *bounds, size_t n, tm_err *err) {
    if (n && !bounds)
        return tm_err_set(err, "histogram %s: %zu bucket bounds announced but none given", name, n);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bounds[i]))
            return tm_err_set(err,
                              "histogram %s: bucket bound %zu is not finite (+Inf is added "
                              "automatically)",
                              name, i);
        if (i > 0 && !(bounds[i] > bounds[i - 1]))
            return tm_err_set(err,
                              "histogram %s: bucket bounds must increase strictly, but bound %zu "
                              "(%g) follows %g",
                              name, i, bounds[i], bounds[i - 1]);
    }
    return 0;
}

static series *series_new(const tm_metric *m, const char *const *lv, uint64_t hash) {
    series *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->hash = hash;
    s->lv = calloc(m->nlabels ? m->nlabels : 1, sizeof *s->lv);
    if (!s->lv)
        goto fail;
    for (size_t i = 0; i < m->nlabels; i++) {
        s->lv[i] = strdup(lv && lv[i] ? lv[i] : "");
        if (!s->lv[i])
            goto fail;
    }
    if (m->kind == KIND_HISTOGRAM) {
        s->buckets = calloc(m->nbounds + 1, sizeof *s->buckets);
        if (!s->buckets)
            goto fail;
    }
    return s;
fail:
    series_free(s, m->nlabels);
    return NULL;
}

/* alias_of (NULL for a metric of its own): the metric an alias shows, with the nconst values
 * const_vals for the first nconst labels; set before the metric is published. */
static tm_metric *register_metric(tm_metrics *reg, metric_kind kind, const char *name,
                                  const char *help, const char *const *labels, const double *bounds,
                                  size_t nbounds, tm_metric *alias_of,
                                  const char *const *const_vals, size_t nconst, tm_err *err) {
    if (!reg)
        return tm_err_set(err, "metric %s: no registry", name ? name : "(null)"), NULL;
    if (!valid_name(name, true))
        return tm_err_set(err, "invalid metric name \"%s\" (must match [a-zA-Z_:][a-zA-Z0-9_:]*)",
                          name ? name : "(null)"),
               NULL;
    if (check_labels(name, labels, kind, err) < 0 ||
        (kind == KIND_HISTOGRAM && check_bounds(name, bounds, nbounds, err) < 0))
        return NULL;
    tm_metric *m = calloc(1, sizeof *m);
    if (!m)
        return tm_err_set(err, "metric %s: out of memory", name), NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->kind = kind;
    m->name = strdup(name);
    m->help = strdup(help ? help : "");
    while (labels && labels[m->nlabels])
        m->nlabels++;
    m->labels = calloc(m->nlabels ? m->nlabels : 1, sizeof *m->labels);
    bool oom = !m->name || !m->help || !m->labels;
    for (size_t i = 0; !oom && i < m->nlabels; i++)
        oom = !(m->labels[i] = strdup(labels[i]));
    if (!oom && kind == KIND_HISTOGRAM) {
        m->nbounds = nbounds;
        m->bounds = malloc((nbounds ? nbounds : 1) * sizeof *m->bounds);
        oom = !m->bounds;
        if (!oom && nbounds)
            memcpy(m->bounds, bounds, nbounds * sizeof *bounds);
    }
    if (!oom && alias_of) {
        m->const_vals = calloc(nconst ? nconst : 1, sizeof *m->const_vals);
        oom = !m->const_vals;
        m->nconst = oom ? 0 : nconst; /* zeroed: metric_free frees what was copied */
        for (size_t i = 0; !oom && i < nconst; i++)
            oom = !(m->const_vals[i] = strdup(const_vals[i] ? const_vals[i] : ""));
        m->alias_of = alias_of;
    }
    /* A metric without labels has its one series from the start, so it renders as 0 (an
     * alias shows its metric's). */
    if (!oom && m->nlabels == 0 && !alias_of) {
        m->s = malloc(sizeof *m->s);
        oom = !m->s || !(m->s[0] = series_new(m, NULL, 0));
        if (!oom)
            m->ns = m->cap = 1;
    }
    if (oom) {
        metric_free(m);
        return tm_err_set(err, "metric %s: out of memory", name), NULL;
    }

    pthread_mutex_lock(&reg->mu);
    for (size_t i = 0; i < reg->n; i++) {
        if (strcmp(reg->m[i]->name, name) == 0) {
            pthread_mutex_unlock(&reg->mu);
            metric_free(m);
            return tm_err_set(err, "metric %s registered twice", name), NULL;
        }
    }
    if (reg->n == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 16;
        tm_metric **grown = realloc(reg->m, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&reg->mu);
            metric_free(m);
            return tm_err_set(err, "metric %s: out of memory", name), NULL;
        }
        reg->m = grown;
        reg->cap = cap;
    }
    reg->m[reg->n++] = m;
    pthread_mutex_unlock(&reg->mu);
    return m;
}

tm_metric *tm_metrics_counter(tm_metrics *reg, const char *name, const char *help,
                              const char *const *label_names, tm_err *err) {
    return register_metric(reg, KIND_COUNTER, name, help, label_names, NULL, 0, NULL, NULL, 0, err);
}

tm_metric *tm_metrics_gauge(tm_metrics *reg, const char *name, const char *help,
                            const char *const *label_names, tm_err *err) {
    return register_metric(reg, KIND_GAUGE, name, help, label_names, NULL, 0, NULL, NULL, 0, err);
}

tm_metric *tm_metrics_histogram(tm_metrics *reg, const char *name, const char *help,
                                const char *const *label_names, const double *bounds,
                                size_t nbounds, tm_err *err) {
    return register_metric(reg, KIND_HISTOGRAM, name, help, label_names, bounds, nbounds, NULL,
                           NULL, 0, err);
}

tm_metric *tm_metrics_alias(tm_metrics *reg, tm_metric *of, const char *name, const char *help,
                            const char *const *const_labels, tm_err *err) {
    if (!of)
        return tm_err_set(err, "metric alias %s: no metric to alias", name ? name : "(null)"), NULL;
    if (of->alias_of)
        of = of->alias_of;
    size_t nconst = 0;
    while (const_labels && const_labels[nconst])
        nconst++;
    if (nconst % 2)
        return tm_err_set(err, "metric alias %s: constant labels must come in name, value pairs",
                          name ? name : "(null)"),
               NULL;
    nconst /= 2;
    /* label names: the constant ones, then of's (checked together: none given twice) */
    const char **names = calloc(nconst + of->nlabels + 1, sizeof *names);
    if (!names)
        return tm_err_set(err, "metric alias %s: out of memory", name ? name : "(null)"), NULL;
    for (size_t i = 0; i < nconst; i++)
        names[i] = const_labels[2 * i];
    for (size_t i = 0; i < of->nlabels; i++)
        names[nconst + i] = of->labels[i];
    const char **vals = calloc(nconst ? nconst : 1, sizeof *vals);
    for (size_t i = 0; vals && i < nconst; i++)
        vals[i] = const_labels[2 * i + 1];
    tm_metric *m = vals ? register_metric(reg, of->kind, name, help, names, of->bounds, of->nbounds,
                                          of, vals, nconst, err)
                        : (tm_err_set(err, "metric alias %s: out of memory", name), NULL);
    free(names);
    free(vals);
    return m;
}

void tm_metrics_exp_buckets(double start, double factor, size_t n, double *out) {
    double v = start;
    for (size_t i = 0; i < n; i++, v *= factor)
        out[i] = v;
}

/* FNV-1a over the label values, each followed by a 0xff byte that no UTF-8 text contains. */
static uint64_t hash_lv(const tm_metric *m, const char *const *lv) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < m->nlabels; i++) {
        for (const unsigned char *p = (const unsigned char *)(lv && lv[i] ? lv[i] : ""); *p; p++)
            h = (h ^ *p) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h;
}

static bool same_lv(const tm_metric *m, const series *s, const char *const *lv) {
    for (size_t i = 0; i < m->nlabels; i++)
        if (strcmp(s->lv[i], lv && lv[i] ? lv[i] : "") != 0)
            return false;
    return true;
}

/* The series for lv, created when create is set. Called with m->mu held. */
static series *find_series(tm_metric *m, const char *const *lv, bool create) {
    if (m->nlabels == 0)
        return m->s[0];
    uint64_t h = hash_lv(m, lv);
    for (size_t i = 0; i < m->ns; i++)
        if (m->s[i]->hash == h && same_lv(m, m->s[i], lv))
            return m->s[i];
    if (!create)
        return NULL;
    if (m->ns == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 8;
        series **grown = realloc(m->s, cap * sizeof *grown);
        if (!grown)
            return NULL;
        m->s = grown;
        m->cap = cap;
    }
    series *s = series_new(m, lv, h);
    if (s)
        m->s[m->ns++] = s;
    return s;
}

/* Logs a misuse once per metric (called with m->mu held). */
static void misuse(tm_metric *m, const char *what) {
    if (!m->warned) {
        m->warned = true;
        tm_warn("metric update ignored metric=%s type=%s reason=\"%s\"", m->name,
                kind_names[m->kind], what);
    }
}

static void update(tm_metric *m, const char *const *lv, double v, int op) {
    enum { OP_ADD, OP_SET, OP_OBSERVE };
    if (m && m->alias_of)
        m = m->alias_of;
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (op == OP_ADD && m->kind == KIND_COUNTER && !(v >= 0))
        misuse(m, "counters only go up");
    else if (op == OP_ADD && m->kind == KIND_HISTOGRAM)
        misuse(m, "add/inc on a histogram; use tm_metrics_observe");
    else if (op == OP_SET && m->kind != KIND_GAUGE)
        misuse(m, "set on a metric that is not a gauge");
    else if (op == OP_OBSERVE && m->kind != KIND_HISTOGRAM)
        misuse(m, "observe on a metric that is not a histogram");
    else {
        series *s = find_series(m, lv, true);
        if (!s)
            misuse(m, "out of memory creating a series");
        else if (op == OP_ADD)
            s->value += v;
        else if (op == OP_SET)
            s->value = v;
        else {
            size_t lo = 0, hi = m->nbounds; /* first bound >= v, else the +Inf bucket */
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (v <= m->bounds[mid])
                    hi = mid;
                else
                    lo = mid + 1;
            }
            s->buckets[lo]++;
            s->count++;
            s->value += v;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

void tm_metrics_inc(tm_metric *m, const char *const *lv) {
    update(m, lv, 1, 0);
}
void tm_metrics_add(tm_metric *m, const char *const *lv, double v) {
    update(m, lv, v, 0);
}
void tm_metrics_set(tm_metric *m, const char *const *lv, double v) {
    update(m, lv, v, 1);
}
void tm_metrics_observe(tm_metric *m, const char *const *lv, double v) {
    update(m, lv, v, 2);
}

void tm_metrics_observe_buckets(tm_metric *m, const char *const *lv, const uint64_t *counts,
                                size_t n, double sum) {
    if (m && m->alias_of)
        m = m->alias_of;
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (m->kind != KIND_HISTOGRAM) {
        misuse(m, "observe on a metric that is not a histogram");
    } else if (n != m->nbounds + 1) {
        misuse(m, "bucket counts for another bucket layout");
    } else {
        series *s = find_series(m, lv, true);
        if (!s) {
            misuse(m, "out of memory creating a series");
        } else {
            for (size_t i = 0; i < n; i++) {
                s->buckets[i] += counts[i];
                s->count += counts[i];
            }
            s->value += sum;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

double tm_metrics_value(tm_metric *m, const char *const *lv) {
    if (m && m->alias_of)
        m = m->alias_of;
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, lv, false);
    double v = s ? s->value : 0;
    pthread_mutex_unlock(&m->mu);
    return v;
}

uint64_t tm_metrics_count(tm_metric *m, const char *const *lv) {
    if (m && m->alias_of)
        m = m->alias_of;
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    series *s = find_series(m, lv, false);
    uint64_t c = s ? s->count : 0;
    pthread_mutex_unlock(&m->mu);
    return c;
}

/* ---- exposition ---- */

/* Formats v like Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus clients use: the
 * shortest digits that read back exactly, exponent form below 1e-4 and from 1e6 (e.g. 1e+06). */
static void fmt_value(char *buf, size_t size, double v) {
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        snprintf(buf, size, signbit(v) ? "-0" : "0");
        return;
    }
    int prec = 1;
    char tmp[64];
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
    int exp = atoi(strchr(tmp, 'e') + 1);
    if (exp < -4 || exp >= 6)
        snprintf(buf, size, "%s", tmp);
    else
        snprintf(buf, size, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, v);
}

static void put_escaped(FILE *f, const char *s, bool quote) {
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else if (quote && *s == '"')
            fputs("\\\"", f);
        else
            fputc(*s, f);
    }
}

/* Writes {a="x",b="y"[,le="..."]}, or nothing when there are no labels at all. m names the
 * labels (an alias: its constant ones first), s holds the values of the rest. */
static void put_labels(FILE *f, const tm_metric *m, const series *s, const char *le) {
    if (m->nlabels == 0 && !le)
        return;
    fputc('{', f);
    for (size_t i = 0; i < m->nlabels; i++) {
        fprintf(f, "%s%s=\"", i ? "," : "", m->labels[i]);
        put_escaped(f, i < m->nconst ? m->const_vals[i] : s->lv[i - m->nconst], true);
        fputc('"', f);
    }
    if (le)
        fprintf(f, "%sle=\"%s\"", m->nlabels ? "," : "", le);
    fputc('}', f);
}

static void render_series(FILE *f, const tm_metric *m, tm_metric *d);

static void render_metric(FILE *f, tm_metric *m) {
    /* d holds the series; m names them (the same metric, or an alias of d) */
    tm_metric *d = m->alias_of ? m->alias_of : m;
    if (m->help[0]) {
        fprintf(f, "# HELP %s ", m->name);
        put_escaped(f, m->help, false);
        fputc('\n', f);
    }
    fprintf(f, "# TYPE %s %s\n", m->name, kind_names[m->kind]);
    render_series(f, m, d);
}

static void render_series(FILE *f, const tm_metric *m, tm_metric *d) {
    pthread_mutex_lock(&d->mu);
    series **sorted = malloc((d->ns ? d->ns : 1) * sizeof *sorted);
    if (!sorted) {
        pthread_mutex_unlock(&d->mu);
        return;
    }
    if (d->ns)
        memcpy(sorted, d->s, d->ns * sizeof *sorted);
    /* Insertion sort: qsort has no context argument for the label count, series counts are
     * small, and this keeps rendering reentrant without shared state. */
    for (size_t i = 1; i < d->ns; i++) {
        series *key = sorted[i];
        size_t j = i;
        for (; j > 0; j--) {
            int c = 0;
            for (size_t k = 0; k < d->nlabels && !c; k++)
                c = strcmp(sorted[j - 1]->lv[k], key->lv[k]);
            if (c <= 0)
                break;
            sorted[j] = sorted[j - 1];
        }
        sorted[j] = key;
    }
    char num[64], le[64];
    for (size_t i = 0; i < d->ns; i++) {
        const series *s = sorted[i];
        if (d->kind != KIND_HISTOGRAM) {
            fputs(m->name, f);
            put_labels(f, m, s, NULL);
            fmt_value(num, sizeof num, s->value);
            fprintf(f, " %s\n", num);
            continue;
        }
        uint64_t cum = 0;
        for (size_t b = 0; b <= d->nbounds; b++) {
            cum += s->buckets[b];
            if (b < d->nbounds)
                fmt_value(le, sizeof le, d->bounds[b]);
            else
                snprintf(le, sizeof le, "+Inf");
            fprintf(f, "%s_bucket", m->name);
            put_labels(f, m, s, le);
            fprintf(f, " %llu\n", (unsigned long long)cum);
        }
        fprintf(f, "%s_sum", m->name);
        put_labels(f, m, s, NULL);
        fmt_value(num, sizeof num, s->value);
        fprintf(f, " %s\n", num);
        fprintf(f, "%s_count", m->name);
        put_labels(f, m, s, NULL);
        fprintf(f, " %llu\n", (unsigned long long)s->count);
    }
    pthread_mutex_unlock(&d->mu);
    free(sorted);
}

char *tm_metrics_render(tm_metrics *reg) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    if (reg) {
        /* Metrics are never removed, so a snapshot of the list stays valid unlocked. */
        pthread_mutex_lock(&reg->mu);
        size_t n = reg->n;
        tm_metric **list = malloc((n ? n : 1) * sizeof *list);
        if (list && n)
            memcpy(list, reg->m, n * sizeof *list);
        pthread_mutex_unlock(&reg->mu);
        for (size_t i = 0; list && i < n; i++)
            render_metric(f, list[i]);
        free(list);
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}
