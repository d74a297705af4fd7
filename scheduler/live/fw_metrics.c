/* fw_metrics.c: the framework's timings into kube-scheduler's histograms (fw_metrics.h). */
#include "scheduler/live/fw_metrics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* kube-scheduler's layouts (pkg/scheduler/metrics): extension points 0.1 ms .. ~205 ms by 2,
 * plugins 10 us .. ~22 ms by 1.5 (plugin latencies are small and wanted finely). */
#define EP_BOUNDS 12
#define PL_BOUNDS 20

enum { C_SUCCESS, C_ERROR, C_UNSCHED, C_UNRESOLVABLE, C_WAIT, C_SKIP, C_COUNT };
static const char *const code_names[C_COUNT] = {[C_SUCCESS] = "Success",
                                                [C_ERROR] = "Error",
                                                [C_UNSCHED] = "Unschedulable",
                                                [C_UNRESOLVABLE] = "UnschedulableAndUnresolvable",
                                                [C_WAIT] = "Wait",
                                                [C_SKIP] = "Skip"};

struct sched_fw_metrics {
    tm_metric *point, *plugin; /* tarema_* series; the scheduler_* names are their aliases */
    double ep_bounds[EP_BOUNDS], pl_bounds[PL_BOUNDS];
    int percent;
    atomic_uint_fast64_t cycles;
};

/* One series' observations since the last flush. */
typedef struct cell {
    const char *plugin; /* NULL for an extension point's cell */
    uint8_t ep, code;
    bool touched;
    uint64_t counts[PL_BOUNDS + 1]; /* an extension point's cell uses EP_BOUNDS + 1 */
    double sum;
} cell;

#define N_PLUGIN_CELLS ((size_t)SCHED_MAX_PLUGINS * SCHED_EP_COUNT * C_COUNT)
/* plugin index 0 is the policy of the cycle's profile (framework.h, profiles): one set of cells
 * per policy name seen there, so that each policy's calls carry its own name */
#define N_POLICY_CELLS ((size_t)SCHED_MAX_PROFILES * SCHED_EP_COUNT * C_COUNT)

struct sched_fw_recorder {
    sched_fw_metrics *m;
    sched_observer obs;
    cell points[SCHED_EP_COUNT][C_COUNT];
    cell *plugins[N_PLUGIN_CELLS]; /* allocated on first use */
    cell *policies[N_POLICY_CELLS];
    const char *policy_names[SCHED_MAX_PROFILES];
    cell *touched[N_PLUGIN_CELLS + N_POLICY_CELLS + SCHED_EP_COUNT * C_COUNT];
    size_t n_touched;
};

static int code_of(sched_outcome o) {
    switch (o.status) {
    case SCHED_STATUS_OK:
        return C_SUCCESS;
    case SCHED_STATUS_SKIP:
        return C_SKIP;
    case SCHED_STATUS_WAIT:
        return C_WAIT;
    case SCHED_STATUS_ERROR:
        return C_ERROR;
    default: /* a rejection: resolvable by preemption or not, as kube's filters say it */
        return o.id == SCHED_FILTER_OK || o.id >= SCHED_FILTER_PLUGIN ||
                       sched_filter_resolvable(o.id, o.detail)
                   ? C_UNSCHED
                   : C_UNRESOLVABLE;
    }
}

const char *sched_fw_status_name(sched_outcome o) {
    return code_names[code_of(o)];
}

sched_fw_metrics *sched_fw_metrics_new(tm_metrics *reg, const char *profile, int sample_percent,
                                       tm_err *err) {
    if (sample_percent < 0 || sample_percent > 100) {
        tm_err_set(err, "plugin metrics sample percent %d is not within 0..100", sample_percent);
        return NULL;
    }
    sched_fw_metrics *m = calloc(1, sizeof *m);
    if (!m) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    m->percent = sample_percent;
    tm_metrics_exp_buckets(0.0001, 2, EP_BOUNDS, m->ep_bounds);
    tm_metrics_exp_buckets(0.00001, 1.5, PL_BOUNDS, m->pl_bounds);
    m->point =
        tm_metrics_histogram(reg, "tarema_framework_extension_point_duration_seconds",
                             "Latency for running all plugins of a specific extension point.",
                             TM_LABELS("extension_point", "status"), m->ep_bounds, EP_BOUNDS, err);
    m->plugin = m->point ? tm_metrics_histogram(
                               reg, "tarema_plugin_execution_duration_seconds",
                               "Duration for running a plugin at a specific extension point, in "
                               "the sampled scheduling cycles.",
                               TM_LABELS("plugin", "extension_point", "status"), m->pl_bounds,
                               PL_BOUNDS, err)
                         : NULL;
    if (!m->plugin ||
        !tm_metrics_alias(reg, m->point, "scheduler_framework_extension_point_duration_seconds",
                          "Latency for running all plugins of a specific extension point "
                          "(kube-scheduler's name for "
                          "tarema_framework_extension_point_duration_seconds).",
                          TM_LABELS("profile", profile), err) ||
        !tm_metrics_alias(reg, m->plugin, "scheduler_plugin_execution_duration_seconds",
                          "Duration for running a plugin at a specific extension point "
                          "(kube-scheduler's name for tarema_plugin_execution_duration_seconds).",
                          NULL, err)) {
        free(m);
        return NULL;
    }
    return m;
}

void sched_fw_metrics_free(sched_fw_metrics *m) {
    free(m); /* the metric handles belong to the registry */
}

bool sched_fw_metrics_sample(sched_fw_metrics *m) {
    if (!m || m->percent <= 0)
        return false;
    uint64_t n = atomic_fetch_add(&m->cycles, 1);
    return (n % 100) * (uint64_t)m->percent % 100 < (uint64_t)m->percent;
}

/* The bucket of v among bounds (the first bound >= v; n = +Inf). */
static size_t bucket(const double *bounds, size_t n, double v) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v <= bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void add(sched_fw_recorder *r, cell *c, const double *bounds, size_t n, int64_t ns) {
    double v = ns > 0 ? (double)ns / 1e9 : 0;
    c->counts[bucket(bounds, n, v)]++;
    c->sum += v;
    if (!c->touched) {
        c->touched = true;
        r->touched[r->n_touched++] = c;
    }
}

static int64_t now_ns(void *arg) {
    (void)arg;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void on_point(void *arg, sched_ext_point ep, sched_outcome o, int64_t ns) {
    sched_fw_recorder *r = arg;
    if ((unsigned)ep >= SCHED_EP_COUNT)
        return;
    add(r, &r->points[ep][code_of(o)], r->m->ep_bounds, EP_BOUNDS, ns);
}

static void on_plugin(void *arg, size_t k, const char *name, sched_ext_point ep, sched_outcome o,
                      int64_t ns) {
    sched_fw_recorder *r = arg;
    if (k >= SCHED_MAX_PLUGINS || (unsigned)ep >= SCHED_EP_COUNT || !name)
        return;
    int code = code_of(o);
    cell **slot;
    if (k == 0) {
        size_t pi = 0;
        while (pi < SCHED_MAX_PROFILES && r->policy_names[pi] &&
               strcmp(r->policy_names[pi], name) != 0)
            pi++;
        if (pi == SCHED_MAX_PROFILES)
            return;
        r->policy_names[pi] = name;
        slot = &r->policies[(pi * SCHED_EP_COUNT + ep) * C_COUNT + (size_t)code];
    } else {
        slot = &r->plugins[(k * SCHED_EP_COUNT + ep) * C_COUNT + (size_t)code];
    }
    cell *c = *slot;
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            return; /* out of memory: this observation is lost, nothing else */
        *c = (cell){.plugin = name, .ep = (uint8_t)ep, .code = (uint8_t)code};
        *slot = c;
    }
    add(r, c, r->m->pl_bounds, PL_BOUNDS, ns);
}

sched_fw_recorder *sched_fw_recorder_new(sched_fw_metrics *m) {
    sched_fw_recorder *r = m ? calloc(1, sizeof *r) : NULL;
    if (!r)
        return NULL;
    r->m = m;
    for (int ep = 0; ep < SCHED_EP_COUNT; ep++)
        for (int c = 0; c < C_COUNT; c++)
            r->points[ep][c] = (cell){.ep = (uint8_t)ep, .code = (uint8_t)c};
    r->obs = (sched_observer){.now_ns = now_ns, .point = on_point, .plugin = on_plugin, .arg = r};
    return r;
}

void sched_fw_recorder_flush(sched_fw_recorder *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_touched; i++) {
        cell *c = r->touched[i];
        const char *ep = sched_ext_point_names[c->ep], *code = code_names[c->code];
        if (c->plugin)
            tm_metrics_observe_buckets(r->m->plugin, TM_LABELS(c->plugin, ep, code), c->counts,
                                       PL_BOUNDS + 1, c->sum);
        else
            tm_metrics_observe_buckets(r->m->point, TM_LABELS(ep, code), c->counts, EP_BOUNDS + 1,
                                       c->sum);
        memset(c->counts, 0, sizeof c->counts);
        c->sum = 0;
        c->touched = false;
    }
    r->n_touched = 0;
}

void sched_fw_recorder_free(sched_fw_recorder *r) {
    if (!r)
        return;
    sched_fw_recorder_flush(r);
    for (size_t i = 0; i < N_PLUGIN_CELLS; i++)
        free(r->plugins[i]);
    for (size_t i = 0; i < N_POLICY_CELLS; i++)
        free(r->policies[i]);
    free(r);
}

const sched_observer *sched_fw_recorder_observer(sched_fw_recorder *r) {
    return r ? &r->obs : NULL;
}
