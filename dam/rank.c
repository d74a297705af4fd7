/* rank.c: validate a ranking request and rank the clusters (see rank.h). */
#include "dam/rank.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dam/maintenance.h"
#include "dam/scores.h"

static const char *const score_names[DAM_NSCORES] = {"load", "perf", "wait", "data"};

const char *dam_score_name(dam_score_kind k) {
    return k < DAM_NSCORES ? score_names[k] : "?";
}

void dam_weights_default(dam_weights *w) {
    for (int i = 0; i < DAM_NSCORES; i++)
        w->w[i] = 1;
}

const char *dam_wait_source_name(dam_wait_source s) {
    switch (s) {
    case DAM_WAIT_PREDICTED:
        return "predicted";
    case DAM_WAIT_PENDING_AGE:
        return "pending-age";
    default:
        return "none";
    }
}

const char *dam_exclusion_name(dam_exclusion e) {
    static const char *const names[] = {"ok",          "unreachable",  "banned",       "cores",
                                        "memory",      "architecture", "accelerators", "storage",
                                        "maintenance", "zero-score"};
    return (size_t)e < sizeof names / sizeof names[0] ? names[e] : "?";
}

/* ---- validation ---- */

static int empty(const char *s) {
    return !s || !*s;
}

static int bad_num(double v) {
    return !isfinite(v);
}

static int check_names(const char *const *names, size_t n, const char *what, tm_err *err) {
    if (n && !names)
        return tm_err_set(err, "%s: %zu entries but no array", what, n);
    for (size_t i = 0; i < n; i++)
        if (empty(names[i]))
            return tm_err_set(err, "%s[%zu]: empty name", what, i);
    return 0;
}

static int check_resources(const dam_resource *r, size_t n, const char *what, int need_positive,
                           tm_err *err) {
    if (n && !r)
        return tm_err_set(err, "%s: %zu entries but no array", what, n);
    for (size_t i = 0; i < n; i++) {
        if (empty(r[i].name))
            return tm_err_set(err, "%s[%zu]: empty name", what, i);
        if (bad_num(r[i].count) || r[i].count < 0 || (need_positive && r[i].count == 0))
            return tm_err_set(err, "%s.%s: count %g must be %s", what, r[i].name, r[i].count,
                              need_positive ? "> 0" : ">= 0");
    }
    return 0;
}

static int check_cluster(const dam_cluster *c, size_t i, tm_err *err) {
    char what[96];
    if (empty(c->name))
        return tm_err_set(err, "clusters[%zu].name: missing", i);
    if (c->unreachable)
        return 0; /* its signals could not be collected: nothing else to check */
    /* 0 is a reachable cluster without nodes: excluded for cores, not an error */
    if (bad_num(c->cores_total) || c->cores_total < 0)
        return tm_err_set(err, "clusters[%zu].cores.total: %g must be >= 0", i, c->cores_total);
    if (bad_num(c->cores_used) || c->cores_used < 0)
        return tm_err_set(err, "clusters[%zu].cores.used: %g must be >= 0", i, c->cores_used);
    if (c->cores_used > c->cores_total)
        return tm_err_set(err, "clusters[%zu].cores.used: %g is more than cores.total %g", i,
                          c->cores_used, c->cores_total);
    if (bad_num(c->memory_bytes) || c->memory_bytes < 0)
        return tm_err_set(err, "clusters[%zu].memory: %g must be >= 0", i, c->memory_bytes);
    if (bad_num(c->perf_per_core))
        return tm_err_set(err, "clusters[%zu].perf_per_core: not a number", i);
    if (bad_num(c->wait_s) || c->wait_s < 0)
        return tm_err_set(err, "clusters[%zu].wait.seconds: %g must be >= 0", i, c->wait_s);
    snprintf(what, sizeof what, "clusters[%zu].architectures", i);
    if (check_names(c->architectures, c->narchitectures, what, err) < 0)
        return -1;
    snprintf(what, sizeof what, "clusters[%zu].storage", i);
    if (check_names(c->storage, c->nstorage, what, err) < 0)
        return -1;
    snprintf(what, sizeof what, "clusters[%zu].accelerators", i);
    if (check_resources(c->accelerators, c->naccelerators, what, 0, err) < 0)
        return -1;
    if (c->nwindows > DAM_MAX_WINDOWS)
        return tm_err_set(err, "clusters[%zu].maintenance: %zu windows, at most %d", i, c->nwindows,
                          DAM_MAX_WINDOWS);
    if (c->nwindows && !c->windows)
        return tm_err_set(err, "clusters[%zu].maintenance: no array", i);
    for (size_t j = 0; j < c->nwindows; j++) {
        const dam_window *w = &c->windows[j];
        if (bad_num(w->start_s) || bad_num(w->end_s))
            return tm_err_set(err, "clusters[%zu].maintenance[%zu]: start or end not a number", i,
                              j);
        if (w->end_s <= w->start_s)
            return tm_err_set(err, "clusters[%zu].maintenance[%zu].end: not after its start", i, j);
    }
    return 0;
}

static const dam_dataset *find_dataset(const dam_input *in, const char *name) {
    for (size_t i = 0; i < in->ndatasets; i++)
        if (strcmp(in->datasets[i].name, name) == 0)
            return &in->datasets[i];
    return NULL;
}

static int check_registry(const dam_input *in, tm_err *err) {
    if (in->ndatasets && !in->datasets)
        return tm_err_set(err, "datasets: no array");
    for (size_t i = 0; i < in->ndatasets; i++) {
        const dam_dataset *d = &in->datasets[i];
        if (empty(d->name))
            return tm_err_set(err, "datasets[%zu].name: missing", i);
        if (empty(d->location))
            return tm_err_set(err, "datasets[%zu].location: missing", i);
        if (bad_num(d->size_bytes) || d->size_bytes < 0)
            return tm_err_set(err, "datasets[%zu].size: %g must be >= 0", i, d->size_bytes);
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->datasets[j].name, d->name) == 0)
                return tm_err_set(err, "datasets[%zu].name: '%s' also at datasets[%zu]", i, d->name,
                                  j);
    }
    if (in->ntransfers && !in->transfers)
        return tm_err_set(err, "transfers: no array");
    for (size_t i = 0; i < in->ntransfers; i++) {
        const dam_transfer *t = &in->transfers[i];
        if (empty(t->from) || empty(t->to))
            return tm_err_set(err, "transfers[%zu]: 'from' and 'to' are required", i);
        if (bad_num(t->bytes_per_s) || t->bytes_per_s <= 0)
            return tm_err_set(err, "transfers[%zu].bytes_per_s: %g must be > 0", i, t->bytes_per_s);
    }
    return 0;
}

static int check_job(const dam_input *in, const dam_job *job, tm_err *err) {
    if (empty(job->name))
        return tm_err_set(err, "job.name: missing");
    if (bad_num(job->cores) || job->cores <= 0)
        return tm_err_set(err, "job.cores: %g must be > 0", job->cores);
    if (bad_num(job->memory_bytes) || job->memory_bytes < 0)
        return tm_err_set(err, "job.memory: %g must be >= 0", job->memory_bytes);
    if (bad_num(job->runtime_s) || job->runtime_s <= 0)
        return tm_err_set(err, "job.runtime: %g s must be > 0", job->runtime_s);
    if (bad_num(job->reference_perf) || job->reference_perf < 0)
        return tm_err_set(err, "job.reference_perf: %g must be >= 0", job->reference_perf);
    if (job->architecture && !*job->architecture)
        return tm_err_set(err, "job.architecture: empty");
    if (check_resources(job->accelerators, job->naccelerators, "job.accelerators", 1, err) < 0 ||
        check_names(job->storage, job->nstorage, "job.storage", err) < 0 ||
        check_names(job->datasets, job->ndatasets, "job.datasets", err) < 0 ||
        check_names(job->failed_on, job->nfailed_on, "job.failed_on", err) < 0)
        return -1;
    if (job->ndatasets > DAM_MAX_JOB_DATASETS)
        return tm_err_set(err, "job.datasets: %zu given, at most %d", job->ndatasets,
                          DAM_MAX_JOB_DATASETS);
    for (size_t i = 0; i < job->ndatasets; i++)
        if (!find_dataset(in, job->datasets[i]))
            return tm_err_set(err, "job.datasets[%zu]: unknown dataset '%s' (not in the registry)",
                              i, job->datasets[i]);
    return 0;
}

int dam_validate(const dam_input *in, const dam_job *job, tm_err *err) {
    if (!in->nclusters || !in->clusters)
        return tm_err_set(err, "clusters: none given");
    if (in->nclusters > DAM_MAX_CLUSTERS)
        return tm_err_set(err, "clusters: %zu given, at most %d", in->nclusters, DAM_MAX_CLUSTERS);
    if (bad_num(in->now_s))
        return tm_err_set(err, "now: not a number");
    double wsum = 0;
    for (int k = 0; k < DAM_NSCORES; k++) {
        if (bad_num(in->weights.w[k]) || in->weights.w[k] < 0)
            return tm_err_set(err, "weights.%s: %g must be >= 0", score_names[k], in->weights.w[k]);
        wsum += in->weights.w[k];
    }
    if (wsum <= 0)
        return tm_err_set(err, "weights: all zero; at least one must be > 0");
    for (size_t i = 0; i < in->nclusters; i++) {
        if (check_cluster(&in->clusters[i], i, err) < 0)
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(in->clusters[j].name, in->clusters[i].name) == 0)
                return tm_err_set(err, "clusters[%zu].name: '%s' also at clusters[%zu]", i,
                                  in->clusters[i].name, j);
    }
    if (check_registry(in, err) < 0)
        return -1;
    return check_job(in, job, err);
}

/* ---- compatibility ---- */

static int has_name(const char *const *names, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static double resource_count(const dam_resource *r, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i].count;
    return 0;
}

int dam_format_time(double t, char *buf, size_t size) {
    time_t s = (time_t)floor(t);
    struct tm tm;
    if (gmtime_r(&s, &tm) && strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return 0;
    snprintf(buf, size, "%.0f", t);
    return -1;
}

/* The hardware and reachability checks (everything but maintenance and scores). */
static dam_exclusion incompatible(const dam_cluster *c, const dam_job *job, char *why,
                                  size_t size) {
    if (c->unreachable) {
        snprintf(why, size, "unreachable: %s",
                 empty(c->unreachable_reason) ? "no signals collected" : c->unreachable_reason);
        return DAM_UNREACHABLE;
    }
    if (has_name(job->failed_on, job->nfailed_on, c->name)) {
        snprintf(why, size, "banned: job '%s' failed here before (failover)", job->name);
        return DAM_BANNED;
    }
    if (job->cores > c->cores_total) {
        snprintf(why, size, "cores: the job needs %g, the cluster has %g in total", job->cores,
                 c->cores_total);
        return DAM_NO_CORES;
    }
    if (job->memory_bytes > 0 && c->memory_bytes > 0 && job->memory_bytes > c->memory_bytes) {
        snprintf(why, size, "memory: the job needs %.0f bytes, the largest node has %.0f",
                 job->memory_bytes, c->memory_bytes);
        return DAM_NO_MEMORY;
    }
    if (job->architecture && !has_name(c->architectures, c->narchitectures, job->architecture)) {
        snprintf(why, size, "architecture: the job needs %s, the cluster has no such node",
                 job->architecture);
        return DAM_NO_ARCH;
    }
    for (size_t i = 0; i < job->naccelerators; i++) {
        const dam_resource *a = &job->accelerators[i];
        double have = resource_count(c->accelerators, c->naccelerators, a->name);
        if (have < a->count) {
            snprintf(why, size, "accelerators: the job needs %g %s per node, the cluster has %g",
                     a->count, a->name, have);
            return DAM_NO_ACCEL;
        }
    }
    for (size_t i = 0; i < job->nstorage; i++)
        if (!has_name(c->storage, c->nstorage, job->storage[i])) {
            snprintf(why, size, "storage: the cluster offers no storage class '%s'",
                     job->storage[i]);
            return DAM_NO_STORAGE;
        }
    return DAM_OK;
}

/* ---- ranking ---- */

static int better(const dam_input *in, const dam_result *a, const dam_result *b) {
    int a_ok = a->excluded == DAM_OK, b_ok = b->excluded == DAM_OK;
    if (a_ok != b_ok) /* ranked ones first */
        return a_ok;
    if (a->excluded == DAM_OK && fabs(a->mean - b->mean) > 1e-12)
        return a->mean > b->mean;
    return strcmp(in->clusters[a->cluster].name, in->clusters[b->cluster].name) < 0;
}

static void sort_results(const dam_input *in, dam_result *r, size_t n) {
    for (size_t i = 1; i < n; i++) {
        dam_result v = r[i];
        size_t j = i;
        while (j > 0 && better(in, &v, &r[j - 1])) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = v;
    }
}

static void score_one(const dam_input *in, const dam_job *job, const dam_cluster *c, double perf,
                      double perf_max, dam_result *r) {
    const dam_dataset *ds[DAM_MAX_JOB_DATASETS];
    size_t nds = 0;
    for (size_t i = 0; i < job->ndatasets && nds < DAM_MAX_JOB_DATASETS; i++)
        ds[nds++] = find_dataset(in, job->datasets[i]);
    r->run_s = job->runtime_s;
    if (job->reference_perf > 0 && perf > 0)
        r->run_s = job->runtime_s * job->reference_perf / perf;
    r->data_x = dam_data_x(ds, nds, in->transfers, in->ntransfers, c->location, c->site, r->run_s);
    r->score[DAM_S_LOAD] = dam_score_load(c->cores_used, c->cores_total);
    r->score[DAM_S_PERF] = dam_score_perf(perf, perf_max);
    r->score[DAM_S_WAIT] = dam_score_wait(r->run_s, c->wait_s);
    r->score[DAM_S_DATA] = dam_score_data(r->data_x);
    r->expected_end_s = in->now_s + c->wait_s + r->run_s;
}

static void mask(const dam_input *in, const dam_cluster *c, dam_result *r) {
    dam_window merged[DAM_MAX_WINDOWS];
    size_t n = dam_windows_merge(c->windows, c->nwindows, merged, &r->windows_merged);
    const dam_window *hit = dam_windows_hit(merged, n, in->now_s, r->expected_end_s);
    if (!hit)
        return;
    char a[32], b[32], e[32];
    dam_format_time(hit->start_s, a, sizeof a);
    dam_format_time(hit->end_s, b, sizeof b);
    dam_format_time(r->expected_end_s, e, sizeof e);
    r->excluded = DAM_MAINTENANCE;
    if (hit->start_s <= in->now_s)
        snprintf(r->reason, sizeof r->reason, "maintenance: in a window now (%s to %s)", a, b);
    else
        snprintf(r->reason, sizeof r->reason,
                 "maintenance: a window starts at %s (to %s), before the job's expected end %s", a,
                 b, e);
}

int dam_rank(const dam_input *in, const dam_job *job, dam_ranking *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    out->chosen = -1;
    if (dam_validate(in, job, err) < 0)
        return -1;
    /* Hardware checks first: the fastest and slowest cores are taken among the compatible. */
    double perf_max = 0, perf_min = 0;
    for (size_t i = 0; i < in->nclusters; i++) {
        dam_result *r = &out->r[i];
        r->cluster = i;
        r->excluded = incompatible(&in->clusters[i], job, r->reason, sizeof r->reason);
        double p = in->clusters[i].perf_per_core;
        if (r->excluded == DAM_OK && p > 0) {
            perf_max = p > perf_max ? p : perf_max;
            perf_min = perf_min == 0 || p < perf_min ? p : perf_min;
        }
    }
    out->n = in->nclusters;
    for (size_t i = 0; i < in->nclusters; i++) {
        dam_result *r = &out->r[i];
        if (r->excluded != DAM_OK)
            continue;
        const dam_cluster *c = &in->clusters[i];
        /* unmeasured cores count as the slowest measured ones: never a reason to prefer */
        double perf = c->perf_per_core > 0 ? c->perf_per_core : perf_min;
        score_one(in, job, c, perf, perf_max, r);
        mask(in, c, r);
        if (r->excluded != DAM_OK)
            continue;
        for (int k = 0; k < DAM_NSCORES; k++)
            if (in->weights.w[k] > 0 && r->score[k] <= 0) {
                r->excluded = DAM_ZERO_SCORE;
                snprintf(r->reason, sizeof r->reason, "zero-score: score %s is %g", score_names[k],
                         r->score[k]);
                break;
            }
        if (r->excluded == DAM_OK) {
            r->mean = dam_weighted_mean(r->score, in->weights.w, DAM_NSCORES);
            out->nranked++;
        }
    }
    sort_results(in, out->r, out->n);
    if (out->nranked)
        out->chosen = (int)out->r[0].cluster;
    return 0;
}
