/* input.c: JOB.yaml and CLUSTERS.yaml (as jansson values) into dam_input and dam_job. */
#include "dam/input.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dam/scores.h"
#include "lib/jsonutil.h"
#include "lib/nodegroups.h"
#include "lib/quantity.h"

struct dam_request {
    json_t *job_doc, *clusters_doc;
    dam_input in;
    dam_job job;
    dam_cluster clusters[DAM_MAX_CLUSTERS];
    void **allocs; /* every array below, freed together */
    size_t nallocs, capallocs;
};

static void *req_alloc(dam_request *r, size_t n, size_t size) {
    if (r->nallocs == r->capallocs) {
        size_t cap = r->capallocs ? 2 * r->capallocs : 16;
        void **p = realloc(r->allocs, cap * sizeof *p);
        if (!p)
            return NULL;
        r->allocs = p;
        r->capallocs = cap;
    }
    void *p = calloc(n ? n : 1, size);
    if (p)
        r->allocs[r->nallocs++] = p;
    return p;
}

void dam_request_free(dam_request *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->nallocs; i++)
        free(r->allocs[i]);
    free(r->allocs);
    json_decref(r->job_doc);
    json_decref(r->clusters_doc);
    free(r);
}

const dam_input *dam_request_input(const dam_request *r) {
    return &r->in;
}
const dam_job *dam_request_job(const dam_request *r) {
    return &r->job;
}
void dam_request_set_now(dam_request *r, double now_s) {
    r->in.now_s = now_s;
}

/* ---- scalars ---- */

/* obj.key into *v: 1 when present, 0 when absent (or null) and optional, -1 with err when
 * absent and required. */
static int lookup(const json_t *obj, const char *key, const char *field, int required,
                  const json_t **v, tm_err *err) {
    *v = json_object_get(obj, key);
    if (*v && !json_is_null(*v))
        return 1;
    return required ? tm_err_set(err, "%s.%s: missing", field, key) : 0;
}

static int get_string(const json_t *obj, const char *key, const char *field, int required,
                      const char **out, tm_err *err) {
    const json_t *v;
    int present = lookup(obj, key, field, required, &v, err);
    if (present <= 0)
        return present;
    if (!json_is_string(v) || !*json_string_value(v))
        return tm_err_set(err, "%s.%s: expected a non-empty string", field, key);
    *out = json_string_value(v);
    return 0;
}

static int get_number(const json_t *obj, const char *key, const char *field, int required,
                      double *out, tm_err *err) {
    const json_t *v;
    int present = lookup(obj, key, field, required, &v, err);
    if (present <= 0)
        return present;
    if (!json_is_number(v))
        return tm_err_set(err, "%s.%s: expected a number", field, key);
    *out = json_number_value(v);
    return 0;
}

/* A byte size: a number or a Kubernetes quantity ("40Gi"). */
static int get_bytes(const json_t *obj, const char *key, const char *field, int required,
                     double *out, tm_err *err) {
    const json_t *v;
    int present = lookup(obj, key, field, required, &v, err);
    if (present <= 0)
        return present;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    int64_t q;
    tm_err qe = {0};
    if (!json_is_string(v) || tm_quantity_parse(json_string_value(v), &q, &qe) < 0)
        return tm_err_set(err, "%s.%s: expected a number or a quantity like 40Gi%s%s", field, key,
                          qe.msg[0] ? ": " : "", qe.msg);
    *out = (double)q;
    return 0;
}

int dam_parse_duration(const json_t *v, const char *field, double *out, tm_err *err) {
    if (json_is_number(v)) {
        *out = json_number_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        double x = strtod(s, &end);
        double unit = 1;
        if (end == s)
            return tm_err_set(err, "%s: '%s' is not a duration (90, 90s, 15m, 2h, 1d)", field, s);
        if (*end == 's')
            unit = 1, end++;
        else if (*end == 'm')
            unit = 60, end++;
        else if (*end == 'h')
            unit = 3600, end++;
        else if (*end == 'd')
            unit = 86400, end++;
        if (*end)
            return tm_err_set(err, "%s: '%s' is not a duration (90, 90s, 15m, 2h, 1d)", field, s);
        *out = x * unit;
    } else {
        return tm_err_set(err, "%s: expected a duration (90, 90s, 15m, 2h, 1d)", field);
    }
    if (!isfinite(*out) || *out < 0)
        return tm_err_set(err, "%s: a duration must be >= 0", field);
    return 0;
}

int dam_parse_time(const json_t *v, const char *field, double *out, tm_err *err) {
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return isfinite(*out) ? 0 : tm_err_set(err, "%s: not a number", field);
    }
    if (!json_is_string(v))
        return tm_err_set(err, "%s: expected a UTC time like 2026-11-23T21:00:00Z", field);
    const char *s = json_string_value(v);
    char *end;
    double x = strtod(s, &end);
    if (end != s && !*end) {
        *out = x;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    double frac = 0;
    if (rest && *rest == '.') {
        frac = strtod(rest, &end);
        rest = end;
    }
    if (!rest || strcmp(rest, "Z") != 0)
        return tm_err_set(err, "%s: '%s' is not a UTC time like 2026-11-23T21:00:00Z", field, s);
    *out = (double)timegm(&tm) + frac;
    return 0;
}

static int get_time(const json_t *obj, const char *key, const char *field, double *out,
                    tm_err *err) {
    const json_t *v;
    if (lookup(obj, key, field, 1, &v, err) < 0)
        return -1;
    char f[160];
    snprintf(f, sizeof f, "%s.%s", field, key);
    return dam_parse_time(v, f, out, err);
}

/* A list of strings. */
static int get_names(dam_request *r, const json_t *obj, const char *key, const char *field,
                     const char *const **out, size_t *n, tm_err *err) {
    const json_t *v = json_object_get(obj, key);
    *n = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return tm_err_set(err, "%s.%s: expected a list of strings", field, key);
    const char **names = req_alloc(r, json_array_size(v), sizeof *names);
    if (!names)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || !*json_string_value(e))
            return tm_err_set(err, "%s.%s[%zu]: expected a non-empty string", field, key, i);
        names[i] = json_string_value(e);
    }
    *out = names;
    *n = json_array_size(v);
    return 0;
}

/* {name: count} for accelerators. */
static int get_resources(dam_request *r, const json_t *obj, const char *key, const char *field,
                         const dam_resource **out, size_t *n, tm_err *err) {
    const json_t *v = json_object_get(obj, key);
    *n = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return tm_err_set(err, "%s.%s: expected a map like {nvidia.com/gpu: 2}", field, key);
    dam_resource *res = req_alloc(r, json_object_size(v), sizeof *res);
    if (!res)
        return tm_err_set(err, "out of memory");
    const char *name;
    const json_t *e;
    size_t i = 0;
    json_object_foreach((json_t *)v, name, e) {
        if (!json_is_number(e))
            return tm_err_set(err, "%s.%s.%s: expected a number", field, key, name);
        res[i].name = name;
        res[i].count = json_number_value(e);
        i++;
    }
    *out = res;
    *n = i;
    return 0;
}

static int check_object(const json_t *v, const char *field, const char *const *keys, tm_err *err) {
    if (!json_is_object(v))
        return tm_err_set(err, "%s: expected a map", field);
    return tm_json_check_keys(v, keys, field, err);
}

/* ---- the job ---- */

static int parse_job(dam_request *r, const json_t *j, tm_err *err) {
    static const char *const keys[] = {"name",
                                       "cores",
                                       "memory",
                                       "runtime",
                                       "reference_perf",
                                       "architecture",
                                       "accelerators",
                                       "storage",
                                       "datasets",
                                       "failed_on",
                                       NULL};
    dam_job *job = &r->job;
    if (check_object(j, "job", keys, err) < 0 ||
        get_string(j, "name", "job", 1, &job->name, err) < 0 ||
        get_number(j, "cores", "job", 1, &job->cores, err) < 0 ||
        get_bytes(j, "memory", "job", 0, &job->memory_bytes, err) < 0 ||
        get_number(j, "reference_perf", "job", 0, &job->reference_perf, err) < 0 ||
        get_string(j, "architecture", "job", 0, &job->architecture, err) < 0 ||
        get_resources(r, j, "accelerators", "job", &job->accelerators, &job->naccelerators, err) <
            0 ||
        get_names(r, j, "storage", "job", &job->storage, &job->nstorage, err) < 0 ||
        get_names(r, j, "datasets", "job", &job->datasets, &job->ndatasets, err) < 0 ||
        get_names(r, j, "failed_on", "job", &job->failed_on, &job->nfailed_on, err) < 0)
        return -1;
    const json_t *rt = json_object_get(j, "runtime");
    if (!rt)
        return tm_err_set(err, "job.runtime: missing");
    return dam_parse_duration(rt, "job.runtime", &job->runtime_s, err);
}

/* ---- the clusters document ---- */

static int parse_weights(dam_request *r, const json_t *doc, tm_err *err) {
    static const char *const keys[] = {"load", "perf", "wait", "data", NULL};
    dam_weights_default(&r->in.weights);
    const json_t *w = json_object_get(doc, "weights");
    if (!w || json_is_null(w))
        return 0;
    if (check_object(w, "weights", keys, err) < 0)
        return -1;
    for (int k = 0; k < DAM_NSCORES; k++)
        if (get_number(w, dam_score_name(k), "weights", 0, &r->in.weights.w[k], err) < 0)
            return -1;
    return 0;
}

static int parse_datasets(dam_request *r, const json_t *doc, tm_err *err) {
    static const char *const keys[] = {"name", "location", "site", "size", NULL};
    const json_t *a = json_object_get(doc, "datasets");
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return tm_err_set(err, "datasets: expected a list");
    dam_dataset *ds = req_alloc(r, json_array_size(a), sizeof *ds);
    if (!ds)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *d;
    json_array_foreach(a, i, d) {
        char f[64];
        snprintf(f, sizeof f, "datasets[%zu]", i);
        if (check_object(d, f, keys, err) < 0 ||
            get_string(d, "name", f, 1, &ds[i].name, err) < 0 ||
            get_string(d, "location", f, 1, &ds[i].location, err) < 0 ||
            get_string(d, "site", f, 0, &ds[i].site, err) < 0 ||
            get_bytes(d, "size", f, 1, &ds[i].size_bytes, err) < 0)
            return -1;
    }
    r->in.datasets = ds;
    r->in.ndatasets = json_array_size(a);
    return 0;
}

static int parse_transfers(dam_request *r, const json_t *doc, tm_err *err) {
    static const char *const keys[] = {"from", "to", "bytes_per_s", NULL};
    const json_t *a = json_object_get(doc, "transfers");
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_array(a))
        return tm_err_set(err, "transfers: expected a list");
    dam_transfer *ts = req_alloc(r, json_array_size(a), sizeof *ts);
    if (!ts)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *t;
    json_array_foreach(a, i, t) {
        char f[64];
        snprintf(f, sizeof f, "transfers[%zu]", i);
        if (check_object(t, f, keys, err) < 0 ||
            get_string(t, "from", f, 1, &ts[i].from, err) < 0 ||
            get_string(t, "to", f, 1, &ts[i].to, err) < 0 ||
            get_bytes(t, "bytes_per_s", f, 1, &ts[i].bytes_per_s, err) < 0)
            return -1;
    }
    r->in.transfers = ts;
    r->in.ntransfers = json_array_size(a);
    return 0;
}

/* node_groups: groups as in the node-groups document (docs/node-groups.md, field names from
 * lib/nodegroups.h); each one's total_cores and centroid.cpu_single (sysbench events/s of one
 * thread, the profiler's feature name) are used. */
#define CPU_SINGLE "cpu_single"
static int parse_node_groups(const json_t *a, const char *f, double *perf, tm_err *err) {
    if (!json_is_array(a))
        return tm_err_set(err, "%s.node_groups: expected a list of node groups", f);
    size_t n = json_array_size(a), i;
    double cores[256], eps[256];
    if (n > 256)
        return tm_err_set(err, "%s.node_groups: %zu groups, at most 256", f, n);
    const json_t *g;
    json_array_foreach(a, i, g) {
        char gf[160];
        snprintf(gf, sizeof gf, "%s.node_groups[%zu]", f, i);
        if (!json_is_object(g))
            return tm_err_set(err, "%s: expected a node group", gf);
        const json_t *c = json_object_get(g, TM_NG_G_TOTAL_CORES);
        const json_t *s = tm_json_path(g, TM_NG_G_CENTROID "." CPU_SINGLE);
        if (!json_is_number(c) || json_number_value(c) <= 0)
            return tm_err_set(err, "%s." TM_NG_G_TOTAL_CORES ": expected a number > 0", gf);
        if (s && !json_is_number(s))
            return tm_err_set(err, "%s." TM_NG_G_CENTROID "." CPU_SINGLE ": expected a number", gf);
        cores[i] = json_number_value(c);
        eps[i] = s ? json_number_value(s) : 0;
    }
    *perf = dam_perf_from_groups(cores, eps, n);
    return 0;
}

static int parse_wait(const json_t *w, const char *f, dam_cluster *c, tm_err *err) {
    static const char *const keys[] = {"predicted", "pending_age", NULL};
    char wf[160], vf[200];
    snprintf(wf, sizeof wf, "%s.wait", f);
    if (check_object(w, wf, keys, err) < 0)
        return -1;
    const json_t *p = json_object_get(w, "predicted"), *a = json_object_get(w, "pending_age");
    if (p && !json_is_null(p)) { /* the learned wait wins over the fallback */
        snprintf(vf, sizeof vf, "%s.predicted", wf);
        c->wait_source = DAM_WAIT_PREDICTED;
        return dam_parse_duration(p, vf, &c->wait_s, err);
    }
    if (a && !json_is_null(a)) {
        snprintf(vf, sizeof vf, "%s.pending_age", wf);
        c->wait_source = DAM_WAIT_PENDING_AGE;
        return dam_parse_duration(a, vf, &c->wait_s, err);
    }
    return 0;
}

static int parse_windows(dam_request *r, const json_t *a, const char *f, dam_cluster *c,
                         tm_err *err) {
    static const char *const keys[] = {"start", "end", "reason", NULL};
    if (!json_is_array(a))
        return tm_err_set(err, "%s.maintenance: expected a list of {start, end}", f);
    dam_window *w = req_alloc(r, json_array_size(a), sizeof *w);
    if (!w)
        return tm_err_set(err, "out of memory");
    size_t i;
    const json_t *e;
    json_array_foreach(a, i, e) {
        char wf[160];
        snprintf(wf, sizeof wf, "%s.maintenance[%zu]", f, i);
        if (check_object(e, wf, keys, err) < 0 ||
            get_time(e, "start", wf, &w[i].start_s, err) < 0 ||
            get_time(e, "end", wf, &w[i].end_s, err) < 0)
            return -1;
    }
    c->windows = w;
    c->nwindows = json_array_size(a);
    return 0;
}

static int parse_cluster(dam_request *r, const json_t *j, size_t i, dam_cluster *c, tm_err *err) {
    static const char *const keys[] = {
        "name",         "site",          "location",    "unreachable", "cores",
        "memory",       "perf_per_core", "node_groups", "wait",        "architectures",
        "accelerators", "storage",       "maintenance", NULL};
    static const char *const core_keys[] = {"used", "total", NULL};
    char f[64], cf[96];
    snprintf(f, sizeof f, "clusters[%zu]", i);
    if (check_object(j, f, keys, err) < 0 || get_string(j, "name", f, 1, &c->name, err) < 0 ||
        get_string(j, "site", f, 0, &c->site, err) < 0 ||
        get_string(j, "location", f, 0, &c->location, err) < 0)
        return -1;
    const json_t *u = json_object_get(j, "unreachable");
    if (u && !json_is_null(u) && !json_is_false(u)) {
        /* the collector's note: true, or why ("connection refused") */
        if (!json_is_true(u) && !json_is_string(u))
            return tm_err_set(err, "%s.unreachable: expected true or a reason", f);
        c->unreachable = 1;
        c->unreachable_reason = json_is_string(u) ? json_string_value(u) : NULL;
        return 0;
    }
    const json_t *cores = json_object_get(j, "cores");
    snprintf(cf, sizeof cf, "%s.cores", f);
    if (!cores)
        return tm_err_set(err, "%s: missing", cf);
    if (check_object(cores, cf, core_keys, err) < 0 ||
        get_number(cores, "used", cf, 1, &c->cores_used, err) < 0 ||
        get_number(cores, "total", cf, 1, &c->cores_total, err) < 0 ||
        get_bytes(j, "memory", f, 0, &c->memory_bytes, err) < 0 ||
        get_number(j, "perf_per_core", f, 0, &c->perf_per_core, err) < 0 ||
        get_names(r, j, "architectures", f, &c->architectures, &c->narchitectures, err) < 0 ||
        get_resources(r, j, "accelerators", f, &c->accelerators, &c->naccelerators, err) < 0 ||
        get_names(r, j, "storage", f, &c->storage, &c->nstorage, err) < 0)
        return -1;
    const json_t *groups = json_object_get(j, "node_groups");
    if (groups && json_object_get(j, "perf_per_core"))
        return tm_err_set(err, "%s: give perf_per_core or node_groups, not both", f);
    if (groups && parse_node_groups(groups, f, &c->perf_per_core, err) < 0)
        return -1;
    const json_t *w = json_object_get(j, "wait");
    if (w && !json_is_null(w) && parse_wait(w, f, c, err) < 0)
        return -1;
    const json_t *m = json_object_get(j, "maintenance");
    if (m && !json_is_null(m) && parse_windows(r, m, f, c, err) < 0)
        return -1;
    return 0;
}

static int parse_clusters(dam_request *r, const json_t *doc, double now_s, tm_err *err) {
    static const char *const keys[] = {"now", "weights", "datasets", "transfers", "clusters", NULL};
    if (check_object(doc, "clusters file", keys, err) < 0)
        return -1;
    r->in.now_s = now_s;
    const json_t *now = json_object_get(doc, "now");
    if (now && !json_is_null(now) && dam_parse_time(now, "now", &r->in.now_s, err) < 0)
        return -1;
    if (parse_weights(r, doc, err) < 0 || parse_datasets(r, doc, err) < 0 ||
        parse_transfers(r, doc, err) < 0)
        return -1;
    const json_t *a = json_object_get(doc, "clusters");
    if (!json_is_array(a) || json_array_size(a) == 0)
        return tm_err_set(err, "clusters: expected a non-empty list");
    if (json_array_size(a) > DAM_MAX_CLUSTERS)
        return tm_err_set(err, "clusters: %zu given, at most %d", json_array_size(a),
                          DAM_MAX_CLUSTERS);
    size_t i;
    const json_t *c;
    json_array_foreach(a, i, c) {
        if (parse_cluster(r, c, i, &r->clusters[i], err) < 0)
            return -1;
    }
    r->in.clusters = r->clusters;
    r->in.nclusters = json_array_size(a);
    return 0;
}

dam_request *dam_request_new(json_t *job_doc, json_t *clusters_doc, double now_s, tm_err *err) {
    dam_request *r = calloc(1, sizeof *r);
    if (!r) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    r->job_doc = json_incref(job_doc);
    r->clusters_doc = json_incref(clusters_doc);
    if (parse_job(r, job_doc, err) < 0 || parse_clusters(r, clusters_doc, now_s, err) < 0) {
        dam_request_free(r);
        return NULL;
    }
    return r;
}
