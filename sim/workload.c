/* workload.c: reads and validates the simulator's workload YAML (see model.h for the format):
 * workflows, their processes and dependencies, arrivals, gangs and reservations, with the
 * measurements each names matched to its processes, ordered topologically and checked against
 * the cluster. All checks happen here, at load time, so the event loop can trust its input: every
 * message names the file and the offending key. */
#include "sim/model.h"
#include "sim/model_internal.h"

#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/jsonutil.h"
#include "lib/yamljson.h"

static void free_workflow(sim_workflow *wf) {
    for (int i = 0; i < wf->nprocs; i++) {
        free(wf->procs[i].after_all);
        free(wf->procs[i].after_each);
        free(wf->procs[i].meas);
    }
    free(wf->procs);
    free(wf->machines);
    free(wf->arrivals);
}

void sim_workload_free(sim_workload *w) {
    if (!w)
        return;
    for (int i = 0; i < w->nworkflows; i++)
        free_workflow(&w->wfs[i]);
    free(w->wfs);
    free(w);
}

static int parse_requests(const json_t *o, double *cpu, int64_t *mem, const char *what,
                          tm_err *err) {
    static const char *const keys[] = {"cpu", "memory", NULL};
    if (!json_is_object(o) || tm_json_check_keys(o, keys, what, err) < 0)
        return tm_err_set(err, "%s: requests must be a mapping of cpu and memory", what);
    double m;
    if (json_object_get(o, "cpu") &&
        tm_json_quantity(json_object_get(o, "cpu"), 1, cpu, "requests.cpu", err) < 0)
        return tm_err_wrap(err, "%s", what);
    if (json_object_get(o, "memory")) {
        if (tm_json_quantity(json_object_get(o, "memory"), 0, &m, "requests.memory", err) < 0)
            return tm_err_wrap(err, "%s", what);
        *mem = (int64_t)m;
    }
    return 0;
}

static int proc_index(const sim_workflow *wf, const char *name) {
    for (int i = 0; i < wf->nprocs; i++)
        if (strcmp(wf->procs[i].name, name) == 0)
            return i;
    return -1;
}

static int parse_deps(const json_t *arr, const sim_workflow *wf, int **out, int *n, const char *key,
                      const char *what, tm_err *err) {
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return tm_err_set(err, "%s: %s must be a list of process names", what, key);
    *out = calloc(json_array_size(arr) + 1, sizeof **out);
    if (!*out)
        return tm_err_set(err, "%s: out of memory", what);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *name = json_string_value(json_array_get(arr, i));
        int idx = name ? proc_index(wf, name) : -1;
        if (idx < 0)
            return tm_err_set(err, "%s: %s names '%s', which is not a process of this workflow",
                              what, key, name ? name : "(not a string)");
        /* a repeated name would count one predecessor twice: refuse the typo */
        for (int k = 0; k < *n; k++)
            if ((*out)[k] == idx)
                return tm_err_set(err, "%s: %s names '%s' twice", what, key, name);
        (*out)[(*n)++] = idx;
    }
    return 0;
}

/* gang: N and reservation: {start, duration, evict_overrunning} of a process (a workflow
 * step). */
static int parse_gang_resv(const json_t *o, sim_process *p, const char *what, tm_err *err) {
    p->resv_start = p->resv_duration = NAN;
    p->resv_evict_overrunning = true;
    json_t *g = json_object_get(o, "gang");
    if (g) {
        if (!json_is_integer(g))
            return tm_err_set(err, "%s: gang must be an integer (tasks that start together)", what);
        if (json_integer_value(g) < 1 || json_integer_value(g) > 1000000)
            return tm_err_set(err, "%s: gang must be from 1 to 1000000 tasks, got %lld", what,
                              (long long)json_integer_value(g));
        p->gang = (int)json_integer_value(g);
        if (p->instances < 1 && !json_object_get(o, "instances"))
            p->instances = p->gang; /* gang: N alone is one gang of N tasks */
    }
    json_t *r = json_object_get(o, "reservation");
    if (!r)
        return 0;
    static const char *const rkeys[] = {"start", "duration", "evict_overrunning", NULL};
    char rw[900];
    snprintf(rw, sizeof rw, "%s: reservation", what);
    if (!json_is_object(r))
        return tm_err_set(err, "%s: expected a mapping {start: OFFSET, duration: D}", rw);
    json_t *ev = json_object_get(r, "evict_overrunning");
    if (ev && !json_is_boolean(ev))
        return tm_err_set(err, "%s: evict_overrunning must be true or false", rw);
    if (tm_json_check_keys(r, rkeys, rw, err) < 0)
        return -1;
    json_t *st = json_object_get(r, "start"), *du = json_object_get(r, "duration");
    if (!json_is_number(st) || !isfinite(json_number_value(st)))
        return tm_err_set(err, "%s: start must be seconds after the run's arrival", rw);
    if (json_number_value(st) < 0)
        return tm_err_set(err, "%s: start must not be negative, got %g", rw, json_number_value(st));
    if (!json_is_number(du) || !isfinite(json_number_value(du)) || !(json_number_value(du) > 0))
        return tm_err_set(err, "%s: duration must be seconds > 0", rw);
    p->resv_start = json_number_value(st);
    p->resv_duration = json_number_value(du);
    p->resv_evict_overrunning = !ev || json_is_true(ev);
    return 0;
}

/* How many tasks of p's requests the cluster holds at once: per node, the fewest of its cores,
 * memory and pod slots over the requests. The filters look at nothing else in the simulator,
 * so this is exact for identical tasks. */
static long tasks_at_once(const sim_process *p, const sim_cluster *c) {
    long total = 0;
    for (int t = 0; t < c->ntypes; t++) {
        const sim_node_type *nt = &c->types[t];
        double k = SIM_POD_SLOTS;
        if (p->req_cpu > 0)
            k = fmin(k, floor(nt->cores / p->req_cpu + 1e-9));
        if (p->req_mem > 0)
            k = fmin(k, floor((double)nt->memory / (double)p->req_mem));
        total += (long)k * nt->count;
    }
    return total;
}

static int parse_process(const json_t *o, sim_workflow *wf, sim_process *p, double dcpu,
                         int64_t dmem, const char *what, tm_err *err) {
    static const char *const keys[] = {
        "name",         "instances",   "after", "after_each",  "requests", "usage", "runtime",
        "base_runtime", "sensitivity", "gang",  "reservation", "walltime", NULL};
    if (!json_is_object(o))
        return tm_err_set(err, "%s: expected a mapping", what);
    if (tm_json_check_keys(o, keys, what, err) < 0)
        return -1;
    p->req_cpu = dcpu;
    p->req_mem = dmem;
    if (json_object_get(o, "requests") &&
        parse_requests(json_object_get(o, "requests"), &p->req_cpu, &p->req_mem, what, err) < 0)
        return -1;
    json_t *inst = json_object_get(o, "instances");
    if (inst) {
        if (!json_is_integer(inst) || json_integer_value(inst) < 1 ||
            json_integer_value(inst) > 10000000)
            return tm_err_set(err, "%s: instances must be an integer from 1 to 10000000", what);
        p->instances = (int)json_integer_value(inst);
    }
    p->usage = (sim_meas){NAN, NAN, NAN, NAN};
    json_t *u = json_object_get(o, "usage");
    if (u) {
        static const char *const ukeys[] = {"cpu_pct", "peak_rss", "io_bytes", NULL};
        if (!json_is_object(u) || tm_json_check_keys(u, ukeys, "usage", err) < 0)
            return tm_err_wrap(err, "%s", what);
        if (tm_json_opt_nonneg(u, "cpu_pct", &p->usage.cpu_pct, what, err) < 0)
            return -1;
        if (json_object_get(u, "peak_rss") &&
            tm_json_quantity(json_object_get(u, "peak_rss"), 0, &p->usage.peak_rss, "peak_rss",
                             err) < 0)
            return tm_err_wrap(err, "%s: usage", what);
        if (json_object_get(u, "io_bytes") &&
            tm_json_quantity(json_object_get(u, "io_bytes"), 0, &p->usage.io_bytes, "io_bytes",
                             err) < 0)
            return tm_err_wrap(err, "%s: usage", what);
    }
    p->base_runtime = NAN;
    if (tm_json_opt_nonneg(o, "base_runtime", &p->base_runtime, what, err) < 0)
        return -1;
    p->walltime = NAN;
    if (tm_json_opt_nonneg(o, "walltime", &p->walltime, what, err) < 0)
        return -1;
    if (!isnan(p->walltime) && !(p->walltime > 0 && isfinite(p->walltime)))
        return tm_err_set(err, "%s: walltime must be seconds > 0, got %g", what, p->walltime);
    for (int f = 0; f < LAB_NFEATURES; f++)
        p->sens[f] = NAN;
    json_t *s = json_object_get(o, "sensitivity");
    if (s) {
        static const char *const skeys[] = {"cpu", "mem", "io", NULL};
        if (!json_is_object(s) || tm_json_check_keys(s, skeys, "sensitivity", err) < 0)
            return tm_err_wrap(err, "%s", what);
        double sum = 0;
        for (int f = 0; f < LAB_NFEATURES; f++) {
            p->sens[f] = 0;
            if (tm_json_opt_nonneg(s, lab_feature_name((lab_feature)f), &p->sens[f], what, err) < 0)
                return -1;
            sum += p->sens[f];
        }
        if (sum > 1.0 + 1e-9)
            return tm_err_set(err, "%s: sensitivities add up to %.3g; at most 1", what, sum);
    }
    return parse_gang_resv(o, p, what, err);
}

/* Machine index in wf, adding it when new. */
static int machine_index(sim_workflow *wf, const char *name, size_t *cap) {
    for (int i = 0; i < wf->nmachines; i++)
        if (strcmp(wf->machines[i], name) == 0)
            return i;
    if (sim_grow(&wf->machines, (size_t)wf->nmachines, cap, sizeof *wf->machines, 8) < 0)
        return -1;
    snprintf(wf->machines[wf->nmachines], SIM_NAME_MAX, "%s", name);
    return wf->nmachines++;
}

static int row_matches(const char *row_proc, const char *name) {
    size_t a = strlen(row_proc), b = strlen(name);
    if (a == b)
        return strcmp(row_proc, name) == 0;
    return a > b && row_proc[a - b - 1] == ':' && strcmp(row_proc + a - b, name) == 0;
}

static int cmp_row_order(const void *a, const void *b) {
    const sim_meas_row *x = *(const sim_meas_row *const *)a, *y = *(const sim_meas_row *const *)b;
    int c = strcmp(x->machine, y->machine);
    if (c)
        return c;
    c = strcmp(x->label, y->label);
    if (c)
        return c;
    return (x->order > y->order) - (x->order < y->order);
}

/* Gives every process its instances from the measurement rows. Instance i on machine m is the
 * i-th row of m in (label, order); machines with fewer rows leave the rest unknown. */
static int attach_measurements(sim_workflow *wf, const sim_meas_table *t, const char *what,
                               tm_err *err) {
    size_t cap = 0;
    for (size_t i = 0; i < t->n; i++)
        if (machine_index(wf, t->rows[i].machine, &cap) < 0)
            return tm_err_set(err, "%s: out of memory", what);
    const sim_meas_row **sel = malloc((t->n + 1) * sizeof *sel);
    int *count = calloc((size_t)wf->nmachines + 1, sizeof *count);
    if (!sel || !count) {
        free(sel);
        free(count);
        return tm_err_set(err, "%s: out of memory", what);
    }
    int rc = 0;
    for (int pi = 0; pi < wf->nprocs && rc == 0; pi++) {
        sim_process *p = &wf->procs[pi];
        size_t ns = 0;
        for (size_t i = 0; i < t->n; i++)
            if (row_matches(t->rows[i].process, p->name))
                sel[ns++] = &t->rows[i];
        if (ns == 0) {
            if (p->instances == 0 && t->n > 0)
                rc = tm_err_set(err,
                                "%s: process %s has no rows in the measurement files and no "
                                "instances count",
                                what, p->name);
            continue;
        }
        qsort(sel, ns, sizeof *sel, cmp_row_order);
        memset(count, 0, (size_t)wf->nmachines * sizeof *count);
        int maxc = 0;
        for (size_t i = 0; i < ns; i++) {
            int m = machine_index(wf, sel[i]->machine, &cap);
            if (++count[m] > maxc)
                maxc = count[m];
        }
        if (p->instances == 0)
            p->instances = maxc;
        p->meas = malloc((size_t)p->instances * (size_t)wf->nmachines * sizeof *p->meas);
        if (!p->meas) {
            rc = tm_err_set(err, "%s: out of memory", what);
            break;
        }
        for (long k = 0; k < (long)p->instances * wf->nmachines; k++)
            p->meas[k] = (sim_meas){NAN, NAN, NAN, NAN};
        memset(count, 0, (size_t)wf->nmachines * sizeof *count);
        for (size_t i = 0; i < ns; i++) {
            int m = machine_index(wf, sel[i]->machine, &cap);
            /* more instances than the process declares: wrap around, so a declared count can
             * scale a measured process up or down */
            int inst = count[m]++;
            if (inst < p->instances)
                p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)m] = sel[i]->m;
        }
        /* a declared count larger than the rows: reuse the rows cyclically */
        for (int m = 0; m < wf->nmachines; m++)
            for (int inst = count[m]; inst < p->instances && count[m] > 0; inst++)
                p->meas[(size_t)inst * (size_t)wf->nmachines + (size_t)m] =
                    p->meas[(size_t)(inst % count[m]) * (size_t)wf->nmachines + (size_t)m];
    }
    free(sel);
    free(count);
    return rc;
}

/* Kahn's algorithm over process dependencies, O(processes + edges) through a successor table
 * (first[u]..first[u+1] in succ); on a cycle names the processes in it. */
static int topo_order(sim_workflow *wf, const char *what, tm_err *err) {
    int n = wf->nprocs, nedges = 0;
    for (int v = 0; v < n; v++)
        nedges += wf->procs[v].nall + wf->procs[v].neach;
    int *indeg = calloc((size_t)n, sizeof *indeg), *order = malloc((size_t)n * sizeof *order);
    int *newpos = malloc((size_t)n * sizeof *newpos);
    int *first = calloc((size_t)n + 1, sizeof *first);
    int *succ = malloc(((size_t)nedges + 1) * sizeof *succ);
    if (!indeg || !order || !newpos || !first || !succ) {
        free(indeg);
        free(order);
        free(newpos);
        free(first);
        free(succ);
        return tm_err_set(err, "%s: out of memory", what);
    }
    for (int v = 0; v < n; v++) {
        const sim_process *p = &wf->procs[v];
        indeg[v] = p->nall + p->neach;
        for (int k = 0; k < p->nall; k++)
            first[p->after_all[k] + 1]++;
        for (int k = 0; k < p->neach; k++)
            first[p->after_each[k] + 1]++;
    }
    for (int u = 0; u < n; u++)
        first[u + 1] += first[u];
    memset(newpos, 0, (size_t)n * sizeof *newpos); /* the fill cursor per process, here */
    for (int v = 0; v < n; v++) {
        const sim_process *p = &wf->procs[v];
        for (int k = 0; k < p->nall + p->neach; k++) {
            int u = k < p->nall ? p->after_all[k] : p->after_each[k - p->nall];
            succ[first[u] + newpos[u]++] = v;
        }
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        int u = order[head++];
        for (int e = first[u]; e < first[u + 1]; e++)
            if (--indeg[succ[e]] == 0)
                order[tail++] = succ[e];
    }
    free(first);
    free(succ);
    int rc = 0;
    if (tail < n) {
        char names[512] = "";
        size_t len = 0;
        for (int i = 0; i < n && len < sizeof names - 140; i++)
            if (indeg[i] > 0)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                        wf->procs[i].name);
        rc = tm_err_set(err, "%s: the process dependencies form a cycle among: %s", what, names);
    } else {
        sim_process *np = malloc((size_t)n * sizeof *np);
        if (!np) {
            rc = tm_err_set(err, "%s: out of memory", what);
        } else {
            for (int i = 0; i < n; i++) {
                np[i] = wf->procs[order[i]];
                newpos[order[i]] = i;
            }
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < np[i].nall; k++)
                    np[i].after_all[k] = newpos[np[i].after_all[k]];
                for (int k = 0; k < np[i].neach; k++)
                    np[i].after_each[k] = newpos[np[i].after_each[k]];
            }
            free(wf->procs);
            wf->procs = np;
        }
    }
    free(indeg);
    free(order);
    free(newpos);
    return rc;
}

/* The compute share fitted to the speed-up of p between the pair of measured node types with
 * the largest cpu speed ratio, from the runtimes summed over instances measured on both. */
static double fit_process_sens(const sim_cluster *c, const sim_workflow *wf, const sim_process *p) {
    if (!p->meas)
        return NAN;
    double best = NAN, best_ratio = 1.0;
    for (int u = 0; u < c->ntypes; u++)
        for (int v = 0; v < c->ntypes; v++) {
            int mu = sim_machine_of_type(c, wf, u), mv = sim_machine_of_type(c, wf, v);
            double su = c->types[u].speed[LAB_CPU], sv = c->types[v].speed[LAB_CPU];
            if (mu < 0 || mv < 0 || mu == mv || !(sv / su > best_ratio))
                continue;
            double tu = 0, tv = 0;
            for (int i = 0; i < p->instances; i++) {
                double a = p->meas[(size_t)i * (size_t)wf->nmachines + (size_t)mu].runtime_s;
                double b = p->meas[(size_t)i * (size_t)wf->nmachines + (size_t)mv].runtime_s;
                if (a > 0 && b > 0) {
                    tu += a;
                    tv += b;
                }
            }
            double fs = sim_speedup_sens(tu, tv, su, sv);
            if (!isnan(fs)) {
                best = fs;
                best_ratio = sv / su;
            }
        }
    return best;
}

/* A gang or a reservation the cluster can never hold is bad input, not an endless wait. */
static int check_gang_resv(const sim_process *p, const sim_cluster *c, const char *what,
                           tm_err *err) {
    long room = tasks_at_once(p, c);
    if (p->gang > 0 && p->instances % p->gang != 0)
        return tm_err_set(err, "%s: process %s: gang %d does not divide its %d instances", what,
                          p->name, p->gang, p->instances);
    if (p->gang > 0 && p->gang > room)
        return tm_err_set(err,
                          "%s: process %s: gang %d is larger than the cluster: at most %ld tasks "
                          "of %.3g cpu and %lld bytes fit at once",
                          what, p->name, p->gang, room, p->req_cpu, (long long)p->req_mem);
    if (p->resv_duration > 0 && p->instances > room)
        return tm_err_set(err,
                          "%s: process %s: reservation for %d tasks is larger than the cluster: "
                          "at most %ld tasks of %.3g cpu and %lld bytes fit at once",
                          what, p->name, p->instances, room, p->req_cpu, (long long)p->req_mem);
    return 0;
}

/* Everything the event loop relies on: requests fit a node, a runtime exists everywhere. */
static int check_against_cluster(sim_workflow *wf, const sim_cluster *c, const char *what,
                                 tm_err *err) {
    for (int i = 0; i < wf->nprocs; i++) {
        sim_process *p = &wf->procs[i];
        if (p->instances < 1)
            return tm_err_set(err, "%s: process %s needs `instances` (or measurement rows)", what,
                              p->name);
        for (int k = 0; k < p->neach; k++) {
            const sim_process *d = &wf->procs[p->after_each[k]];
            if (d->instances != p->instances)
                return tm_err_set(err,
                                  "%s: process %s has %d instances but after_each %s has %d; "
                                  "use `after` for a gather",
                                  what, p->name, p->instances, d->name, d->instances);
        }
        int fits = 0;
        for (int t = 0; t < c->ntypes; t++)
            if (p->req_cpu <= c->types[t].cores + 1e-9 && p->req_mem <= c->types[t].memory)
                fits = 1;
        if (!fits)
            return tm_err_set(err,
                              "%s: process %s requests %.3g cpu and %lld bytes of memory, more "
                              "than any node type offers",
                              what, p->name, p->req_cpu, (long long)p->req_mem);
        if (check_gang_resv(p, c, what, err) < 0)
            return -1;
        int declared = !isnan(p->sens[LAB_CPU]);
        if (isnan(p->sens[LAB_CPU])) {
            sim_meas mu;
            double cpu = p->usage.cpu_pct;
            if (isnan(cpu) && sim_mean_usage(p, wf->nmachines, &mu) == 0)
                cpu = mu.cpu_pct;
            double req = p->req_cpu > 0 ? p->req_cpu : 1;
            p->sens[LAB_CPU] = isnan(cpu) ? 1.0 : fmin(1.0, cpu / (100.0 * req));
            p->sens[LAB_MEM] = p->sens[LAB_IO] = 0;
        }
        for (int f = 0; f < LAB_NFEATURES; f++)
            p->fit_sens[f] = p->sens[f];
        if (!declared) {
            double fs = fit_process_sens(c, wf, p);
            if (!isnan(fs))
                p->fit_sens[LAB_CPU] = fs;
        }
        for (int t = 0; t < c->ntypes; t++)
            for (int inst = 0; inst < p->instances; inst++) {
                double rt = sim_runtime(c, wf, p, inst, t);
                if (!(rt >= 0) || !isfinite(rt))
                    return tm_err_set(err,
                                      "%s: process %s instance %d has no runtime on node type %s: "
                                      "give runtime, base_runtime or measurements from a "
                                      "machine of the cluster",
                                      what, p->name, inst, c->types[t].name);
            }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_arrivals(const json_t *o, sim_workflow *wf, const char *what, tm_err *err) {
    json_t *arr = json_object_get(o, "arrivals");
    wf->start = 0;
    wf->gap = 0;
    wf->runs = 1;
    if (arr) {
        if (json_object_get(o, "runs") || json_object_get(o, "start") || json_object_get(o, "gap"))
            return tm_err_set(err, "%s: give either arrivals or start/runs/gap, not both", what);
        if (!json_is_array(arr) || json_array_size(arr) == 0)
            return tm_err_set(err, "%s: arrivals must be a non-empty list of seconds", what);
        wf->narrivals = (int)json_array_size(arr);
        wf->arrivals = malloc((size_t)wf->narrivals * sizeof *wf->arrivals);
        if (!wf->arrivals)
            return tm_err_set(err, "%s: out of memory", what);
        for (int i = 0; i < wf->narrivals; i++) {
            json_t *v = json_array_get(arr, (size_t)i);
            if (!json_is_number(v) || json_number_value(v) < 0)
                return tm_err_set(err, "%s: arrivals[%d] must be a number >= 0", what, i);
            wf->arrivals[i] = json_number_value(v);
        }
        /* run 1 is the earliest: it is the unlabeled one that "first run" reports */
        qsort(wf->arrivals, (size_t)wf->narrivals, sizeof *wf->arrivals, cmp_double);
        wf->runs = wf->narrivals;
        return 0;
    }
    if (tm_json_opt_nonneg(o, "start", &wf->start, what, err) < 0 ||
        tm_json_opt_nonneg(o, "gap", &wf->gap, what, err))
        return -1;
    json_t *runs = json_object_get(o, "runs");
    if (runs) {
        if (!json_is_integer(runs) || json_integer_value(runs) < 1 ||
            json_integer_value(runs) > 100000)
            return tm_err_set(err, "%s: runs must be an integer from 1 to 100000", what);
        wf->runs = (int)json_integer_value(runs);
    }
    return 0;
}

static int read_one_measurement(const json_t *arr, size_t i, const char *label,
                                const char *base_dir, sim_meas_table *t, const char *what,
                                tm_err *err);

static int parse_measurements(const json_t *arr, const char *label, const char *base_dir,
                              sim_meas_table *t, const char *what, tm_err *err) {
    if (!json_is_array(arr))
        return tm_err_set(err, "%s: measurements must be a list of {file, format, machine}", what);
    size_t nfiles = json_array_size(arr);
    size_t *start = calloc(nfiles + 1, sizeof *start);
    if (!start)
        return tm_err_set(err, "%s: out of memory", what);
    for (size_t i = 0; i < nfiles; i++) {
        start[i] = t->n;
        if (read_one_measurement(arr, i, label, base_dir, t, what, err) < 0) {
            free(start);
            return -1;
        }
        start[i + 1] = t->n;
        /* a file copying another machine's rows makes both machines look identical */
        for (size_t j = 0; j < i; j++) {
            if (start[i + 1] == start[i] || start[j + 1] == start[j] ||
                strcmp(t->rows[start[i]].machine, t->rows[start[j]].machine) == 0)
                continue;
            size_t d = sim_meas_duplicates(t->rows + start[j], start[j + 1] - start[j],
                                           t->rows + start[i], start[i + 1] - start[i]);
            if (d > 0)
                fprintf(stderr,
                        "tarema-sim: warning: %s: %zu of %zu rows of %s (machine %s) duplicate "
                        "rows of %s (machine %s) except for the machine column\n",
                        what, d, start[i + 1] - start[i],
                        tm_json_str(json_array_get(arr, i), "file", "?"), t->rows[start[i]].machine,
                        tm_json_str(json_array_get(arr, j), "file", "?"),
                        t->rows[start[j]].machine);
        }
    }
    free(start);
    return 0;
}

static int read_one_measurement(const json_t *arr, size_t i, const char *label,
                                const char *base_dir, sim_meas_table *t, const char *what,
                                tm_err *err) {
    static const char *const keys[] = {"file", "format", "machine", NULL};
    {
        json_t *m = json_array_get(arr, i);
        char w[700];
        snprintf(w, sizeof w, "%s: measurements[%zu]", what, i);
        if (!json_is_object(m) || tm_json_check_keys(m, keys, w, err) < 0)
            return tm_err_set(err, "%s: expected a mapping of file, format, machine", w);
        const char *file = tm_json_str(m, "file", NULL);
        if (!file)
            return tm_err_set(err, "%s: file is required", w);
        char path[PATH_MAX];
        int relative = file[0] != '/' && base_dir;
        if ((size_t)snprintf(path, sizeof path, "%s%s%s", relative ? base_dir : "",
                             relative ? "/" : "", file) >= sizeof path)
            return tm_err_set(err, "%s: file path is too long", w);
        if (sim_meas_read(t, path, tm_json_str(m, "format", NULL), tm_json_str(m, "machine", NULL),
                          label, err) < 0) {
            if (relative && access(path, F_OK) != 0) {
                /* the shipped scenarios point at shared/ beside the repository */
                char cause[TM_ERR_MAX];
                snprintf(cause, sizeof cause, "%s", err->msg);
                return tm_err_set(err,
                                  "%s: %s (`file: %s` is resolved against the workload file's "
                                  "directory %s; is the data there?)",
                                  w, cause, file, base_dir);
            }
            return tm_err_wrap(err, "%s", w);
        }
    }
    return 0;
}

static int parse_workflow(const json_t *o, sim_workflow *wf, const char *base_dir,
                          const sim_cluster *c, const char *what, tm_err *err) {
    static const char *const keys[] = {"name",      "start",    "runs",  "gap",
                                       "arrivals",  "requests", "label", "measurements",
                                       "processes", "priority", NULL};
    if (!json_is_object(o))
        return tm_err_set(err, "%s: expected a mapping", what);
    if (tm_json_check_keys(o, keys, what, err) < 0)
        return -1;
    if (tm_json_name(wf->name, SIM_NAME_MAX, json_object_get(o, "name"), what, err) < 0)
        return -1;
    char w[512];
    snprintf(w, sizeof w, "%s (%s)", what, wf->name);
    if (parse_arrivals(o, wf, w, err) < 0)
        return -1;
    const json_t *prio = json_object_get(o, "priority");
    if (prio && (!json_is_integer(prio) || json_integer_value(prio) < INT32_MIN ||
                 json_integer_value(prio) > INT32_MAX))
        return tm_err_set(err, "%s: priority must be an integer (a PriorityClass value)", w);
    wf->priority = prio ? (int32_t)json_integer_value(prio) : 0;
    double dcpu = 1;
    int64_t dmem = 0;
    if (json_object_get(o, "requests") &&
        parse_requests(json_object_get(o, "requests"), &dcpu, &dmem, w, err) < 0)
        return -1;
    json_t *procs = json_object_get(o, "processes");
    if (!json_is_array(procs) || json_array_size(procs) == 0)
        return tm_err_set(err, "%s: processes must be a non-empty list", w);
    size_t np = json_array_size(procs);
    if (!(wf->procs = calloc(np, sizeof *wf->procs)))
        return tm_err_set(err, "%s: out of memory", w);
    /* names first, so dependencies may point forward */
    for (size_t i = 0; i < np; i++) {
        char pw[600];
        snprintf(pw, sizeof pw, "%s: processes[%zu]", w, i);
        json_t *po = json_array_get(procs, i);
        if (!json_is_object(po))
            return tm_err_set(err, "%s: expected a mapping", pw);
        if (tm_json_name(wf->procs[i].name, SIM_NAME_MAX, json_object_get(po, "name"), pw, err) < 0)
            return -1;
        if (proc_index(wf, wf->procs[i].name) >= 0)
            return tm_err_set(err, "%s: process %s is defined twice", pw, wf->procs[i].name);
        wf->nprocs++;
    }
    for (size_t i = 0; i < np; i++) {
        char pw[800];
        sim_process *p = &wf->procs[i];
        snprintf(pw, sizeof pw, "%s: process %s", w, p->name);
        json_t *po = json_array_get(procs, i);
        if (parse_process(po, wf, p, dcpu, dmem, pw, err) < 0 ||
            parse_deps(json_object_get(po, "after"), wf, &p->after_all, &p->nall, "after", pw,
                       err) < 0 ||
            parse_deps(json_object_get(po, "after_each"), wf, &p->after_each, &p->neach,
                       "after_each", pw, err) < 0)
            return -1;
    }
    sim_meas_table t = {0};
    json_t *meas = json_object_get(o, "measurements");
    const char *label = tm_json_str(o, "label", NULL);
    int rc = 0;
    if (meas)
        rc = parse_measurements(meas, label, base_dir, &t, w, err);
    if (rc == 0 && meas && t.n == 0)
        rc = tm_err_set(err, "%s: the measurement files have no usable rows%s%s", w,
                        label ? " with label " : "", label ? label : "");
    /* declared runtime: {type: seconds} becomes a measurement of every instance */
    for (int i = 0; rc == 0 && i < wf->nprocs; i++) {
        json_t *rt = json_object_get(json_array_get(procs, (size_t)i), "runtime");
        if (!rt)
            continue;
        if (!json_is_object(rt)) {
            rc = tm_err_set(err, "%s: process %s: runtime must map node types to seconds", w,
                            wf->procs[i].name);
            break;
        }
        if (wf->procs[i].instances < 1) {
            rc = tm_err_set(err, "%s: process %s: a declared runtime needs `instances`", w,
                            wf->procs[i].name);
            break;
        }
        const char *k;
        json_t *v;
        json_object_foreach(rt, k, v) {
            if (sim_cluster_find_type(c, k) < 0) {
                rc = tm_err_set(err, "%s: process %s: runtime names '%s', not a node type", w,
                                wf->procs[i].name, k);
                break;
            }
            if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
                rc = tm_err_set(err, "%s: process %s: runtime.%s must be seconds >= 0", w,
                                wf->procs[i].name, k);
                break;
            }
            const sim_node_type *nt = &c->types[sim_cluster_find_type(c, k)];
            for (int inst = 0; inst < wf->procs[i].instances && rc == 0; inst++) {
                sim_meas_row r = {0};
                snprintf(r.process, sizeof r.process, "%s", wf->procs[i].name);
                snprintf(r.machine, sizeof r.machine, "%s", nt->measured_as);
                r.order = inst;
                r.m = wf->procs[i].usage;
                r.m.runtime_s = json_number_value(v);
                if (sim_meas_table_push(&t, &r) < 0)
                    rc = tm_err_set(err, "%s: out of memory", w);
            }
        }
    }
    if (rc == 0)
        rc = attach_measurements(wf, &t, w, err);
    sim_meas_table_free(&t);
    if (rc == 0)
        rc = topo_order(wf, w, err);
    if (rc == 0)
        rc = check_against_cluster(wf, c, w, err);
    wf->tasks_per_run = 0;
    for (int i = 0; i < wf->nprocs; i++)
        wf->tasks_per_run += wf->procs[i].instances;
    return rc;
}

sim_workload *sim_workload_from_json(const void *json_root, const char *source,
                                     const char *base_dir, const sim_cluster *c, tm_err *err) {
    static const char *const keys[] = {"workflows", NULL};
    json_t *arr = tm_json_top_list(json_root, keys, source, err);
    if (!arr)
        return NULL;
    sim_workload *w = calloc(1, sizeof *w);
    if (!w || !(w->wfs = calloc(json_array_size(arr), sizeof *w->wfs))) {
        free(w);
        tm_err_set(err, "%s: out of memory", source);
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char what[300];
        snprintf(what, sizeof what, "%s: workflows[%zu]", source, i);
        w->nworkflows++;
        if (parse_workflow(json_array_get(arr, i), &w->wfs[i], base_dir, c, what, err) < 0) {
            sim_workload_free(w);
            return NULL;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(w->wfs[j].name, w->wfs[i].name) == 0) {
                tm_err_set(err, "%s: workflow %s is defined twice", what, w->wfs[i].name);
                sim_workload_free(w);
                return NULL;
            }
    }
    return w;
}

sim_workload *sim_workload_load(const char *path, const sim_cluster *c, tm_err *err) {
    json_t *root = tm_yaml_load_file(path, err);
    if (!root)
        return NULL;
    /* measurement paths are relative to where the workload file really is, so a scenario
     * works from any current directory and through a symlink to it */
    char *copy = realpath(path, NULL);
    if (!copy)
        copy = strdup(path);
    if (!copy) {
        json_decref(root);
        tm_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    sim_workload *w = sim_workload_from_json(root, path, dirname(copy), c, err);
    free(copy);
    json_decref(root);
    return w;
}
