/* sizing_data.c: the datasets of `tarema-sim sizing`: the paper's five synthetic memory
 * distributions and measured Nextflow traces or lotaru CSVs (read by the simulator's own
 * reader, sim_meas_read). The distributions' parameters and why they are these are in
 * docs/sizing.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/model.h"
#include "sim/rng.h"
#include "sim/sizing_eval.h"

#define GIB     1073741824.0
#define NTASKS  2000
#define RUNTIME 60.0

typedef enum { D_NORMAL, D_UNIFORM, D_EXP } dist_kind;

/* One mode of a mixture: weight, kind and its parameters in GiB (normal: mean, sd; uniform:
 * low, high; exponential: mean, unused). */
typedef struct {
    double weight;
    dist_kind kind;
    double a, b;
} mode;

typedef struct {
    const char *name;
    int nmodes;
    mode modes[3];
} synthetic;

static const synthetic synthetics[] = {
    {"normal", 1, {{1, D_NORMAL, 7.94, 1.9}}},
    {"uniform", 1, {{1, D_UNIFORM, 10, 40}}},
    {"exponential", 1, {{1, D_EXP, 10.05, 0}}},
    {"bimodal", 2, {{0.476, D_NORMAL, 7, 0.15}, {0.524, D_NORMAL, 31.8, 0.5}}},
    {"trimodal", 3, {{0.3, D_NORMAL, 10.5, 2}, {0.3, D_NORMAL, 15, 0.3}, {0.4, D_NORMAL, 30, 4}}},
};
#define NSYNTH (sizeof synthetics / sizeof synthetics[0])

const char *const *sim_sz_synthetic_names(void) {
    static const char *const names[] = {"normal",  "uniform",  "exponential",
                                        "bimodal", "trimodal", NULL};
    return names;
}

static double draw(const mode *m, uint64_t *s) {
    switch (m->kind) {
    case D_NORMAL:
        return sim_rng_normal(s, m->a, m->b);
    case D_UNIFORM:
        return m->a + (m->b - m->a) * sim_rng_unit(s);
    default:
        return -m->a * log(sim_rng_unit(s));
    }
}

int sim_sz_add(sim_sz_dataset *d, const char *type, double runtime, const double peak[SZ_NRES],
               tm_err *err) {
    int t = 0;
    while (t < d->ntypes && strcmp(d->types[t], type) != 0)
        t++;
    if (t == d->ntypes) {
        char(*types)[128] = realloc(d->types, (size_t)(d->ntypes + 1) * sizeof *types);
        if (!types)
            return tm_err_set(err, "sizing dataset: out of memory");
        d->types = types;
        snprintf(d->types[d->ntypes++], sizeof *types, "%s", type);
    }
    if (sim_grow(&d->tasks, d->n, &d->cap, sizeof *d->tasks, 256) < 0)
        return tm_err_set(err, "sizing dataset: out of memory");
    sim_sz_task *k = &d->tasks[d->n++];
    k->type = t;
    k->runtime = runtime;
    memcpy(k->peak, peak, sizeof k->peak);
    return 0;
}

static void dataset_init(sim_sz_dataset *d, const char *name) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->machine[SZ_CORES] = 16;
    d->machine[SZ_MEMORY] = 64 * GIB;
    d->machine[SZ_DISK] = 64 * GIB;
}

int sim_sz_synthetic(sim_sz_dataset *d, const char *name, uint64_t seed, double cores,
                     tm_err *err) {
    const synthetic *syn = NULL;
    for (size_t i = 0; i < NSYNTH; i++)
        if (strcmp(synthetics[i].name, name) == 0)
            syn = &synthetics[i];
    if (!syn)
        return tm_err_set(err,
                          "unknown dataset '%s' (normal, uniform, exponential, bimodal, "
                          "trimodal, or a trace or lotaru CSV file)",
                          name);
    if (!(cores >= 0 && cores <= 16))
        return tm_err_set(err, "synthetic cores %g not in [0, 16]", cores);
    dataset_init(d, name);
    uint64_t s = seed * 0x2545f4914f6cdd1dULL + 1;
    for (int i = 0; i < NTASKS; i++) {
        /* the mode first, then its value: modes interleave in time as task types would */
        double u = sim_rng_unit(&s), acc = 0;
        int k = 0;
        while (k < syn->nmodes - 1 && u > (acc += syn->modes[k].weight))
            k++;
        double gib = draw(&syn->modes[k], &s);
        /* the paper assumes no task exceeds a machine; a peak is never below 10 MiB */
        gib = fmin(fmax(gib, 10.0 / 1024), 64);
        char type[32];
        snprintf(type, sizeof type, syn->nmodes == 1 ? "all" : "mode-%d", k + 1);
        double peak[SZ_NRES] = {cores, gib * GIB, NAN};
        if (sim_sz_add(d, type, RUNTIME, peak, err) < 0) {
            sim_sz_dataset_free(d);
            return -1;
        }
    }
    return 0;
}

int sim_sz_load_file(sim_sz_dataset *d, const char *path, tm_err *err) {
    sim_meas_table t = {0};
    if (sim_meas_read(&t, path, NULL, "trace", NULL, err) < 0) {
        sim_meas_table_free(&t);
        return -1;
    }
    const char *base = strrchr(path, '/');
    dataset_init(d, base ? base + 1 : path);
    for (size_t i = 0; i < t.n; i++) {
        const sim_meas *m = &t.rows[i].m;
        if (!isfinite(m->peak_rss) || m->peak_rss < 0)
            continue;
        double peak[SZ_NRES] = {isfinite(m->cpu_pct) && m->cpu_pct >= 0 ? m->cpu_pct / 100 : NAN,
                                m->peak_rss, NAN};
        double rt = isfinite(m->runtime_s) && m->runtime_s > 0 ? m->runtime_s : 1;
        if (sim_sz_add(d, t.rows[i].process, rt, peak, err) < 0) {
            sim_meas_table_free(&t);
            sim_sz_dataset_free(d);
            return -1;
        }
    }
    sim_meas_table_free(&t);
    if (d->n == 0) {
        sim_sz_dataset_free(d);
        return tm_err_set(err, "%s: no completed task with a peak_rss", path);
    }
    return 0;
}

void sim_sz_dataset_free(sim_sz_dataset *d) {
    free(d->types);
    free(d->tasks);
    d->types = NULL;
    d->tasks = NULL;
    d->n = d->cap = 0;
    d->ntypes = 0;
}
