/* report.c: tables, JSON and the Gantt SVG for simulation results (see report.h). The SVG is
 * written with plain fprintf: it is a few element kinds, no library earns its keep here. */
#include "sim/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *group_name(int g, int ngroups, char *buf, size_t size) {
    snprintf(buf, size, "%d%s", g + 1,
             g == 0             ? " (weakest)"
             : g == ngroups - 1 ? " (strongest)"
                                : "");
    return buf;
}

/* Gang waits (ready -> start) and reservation figures, summed over a result. */
typedef struct gr_summary {
    long gangs, started, attempts;
    double wait_mean, wait_max;
    long admitted, failed, released, expired;
    double held_core_s, used_core_s;
} gr_summary;

static gr_summary summarise(const sim_result *r) {
    gr_summary g = {0};
    for (long i = 0; i < r->ngangs; i++) {
        const sim_gang_rec *x = &r->gangs[i];
        g.gangs++;
        g.attempts += x->attempts;
        if (isnan(x->start))
            continue;
        double wt = x->start - x->ready;
        g.started++;
        g.wait_mean += wt;
        g.wait_max = fmax(g.wait_max, wt);
    }
    if (g.started)
        g.wait_mean /= (double)g.started;
    for (long i = 0; i < r->nresvs; i++) {
        const sim_resv_rec *x = &r->resvs[i];
        if (strcmp(x->phase, "Failed") == 0) {
            g.failed++;
            continue;
        }
        g.admitted++;
        g.released += strcmp(x->phase, "Released") == 0;
        g.expired += strcmp(x->phase, "Expired") == 0;
        g.held_core_s += x->held_core_s;
        g.used_core_s += x->used_core_s;
    }
    return g;
}

/* The gang and reservation lines of the table (nothing when the workload has neither). */
static void table_gangs_resvs(FILE *out, const sim_result *r) {
    gr_summary g = summarise(r);
    if (g.gangs)
        fprintf(out, "gangs: %ld started of %ld, wait mean %.1f s, max %.1f s, %ld attempts\n",
                g.started, g.gangs, g.wait_mean, g.wait_max, g.attempts);
    if (g.admitted + g.failed)
        fprintf(out,
                "reservations: %ld admitted (%ld released, %ld expired), %ld failed; held %.0f "
                "core-s, used %.0f core-s (%.1f%%)\n",
                g.admitted, g.released, g.expired, g.failed, g.held_core_s, g.used_core_s,
                g.held_core_s > 0 ? 100.0 * g.used_core_s / g.held_core_s : 0);
    if (r->overrun_evictions)
        fprintf(out, "reservation windows evicted %ld overrunning task%s (work lost and redone)\n",
                r->overrun_evictions, r->overrun_evictions == 1 ? "" : "s");
    for (long i = 0; i < r->nresvs; i++) {
        const sim_resv_rec *x = &r->resvs[i];
        if (strcmp(x->phase, "Failed") == 0)
            fprintf(out, "  reservation %s/%s run %d failed: %s\n", r->workload->wfs[x->wf].name,
                    r->workload->wfs[x->wf].procs[x->proc].name, x->run + 1, x->reason);
    }
}

/* The paper's protocol: the history runs before the measured ones are not in any figure. */
static void history_note(FILE *out, int hruns) {
    if (hruns > 0)
        fprintf(out,
                "measured runs only: each workflow ran %d time%s before them to build history "
                "(--history-runs)\n",
                hruns, hruns == 1 ? "" : "s");
}

void sim_report_table(FILE *out, const sim_result *r) {
    const sim_workload *w = r->workload;
    fprintf(out,
            "policy %s: %d nodes in %d groups, %ld tasks, horizon %.1f s, simulated in %.3f s\n",
            r->policy, r->cluster->nnodes, r->ngroups, r->tasks, r->horizon, r->wall_s);
    history_note(out, r->history_runs);
    fprintf(out, "%-24s %5s %14s %12s %12s %14s %12s\n", "workflow", "runs", "makespan_mean",
            "first_run", "later_runs", "task_runtime", "pending");
    for (int i = 0; i < w->nworkflows; i++) {
        const sim_wf_stats *s = &r->wf[i];
        fprintf(out, "%-24.24s %5d %13.1fs %11.1fs %11.1fs %13.1fs %11.1fs\n", w->wfs[i].name,
                s->runs, s->makespan_mean, s->makespan_first, s->makespan_rest_mean,
                s->task_runtime_mean, s->pending_mean);
    }
    fprintf(out, "%-24s %5s %14s %12s %12s %13.1fs %11.1fs\n", "all", "", "", "", "",
            r->task_runtime_mean, r->pending_mean);
    fprintf(out, "%-16s %6s %8s %8s %8s %12s\n", "group", "nodes", "cores", "tasks", "share",
            "utilisation");
    for (int g = r->ngroups - 1; g >= 0; g--) {
        char b[48];
        const sim_group_stats *s = &r->groups[g];
        fprintf(out, "%-16s %6d %8.0f %8ld %7.1f%% %11.1f%%\n",
                group_name(g, r->ngroups, b, sizeof b), s->nodes, s->cores, s->tasks,
                r->tasks ? 100.0 * (double)s->tasks / (double)r->tasks : 0, 100.0 * s->utilisation);
    }
    table_gangs_resvs(out, r);
    if (r->gang_preemptions || r->gang_evictions)
        fprintf(out,
                "preemption: %ld tasks and %ld gangs placed by evicting %ld tasks of lower "
                "priority, %ld running gangs whole among them (their work lost and redone)\n",
                r->preemptions, r->gang_preemptions, r->evictions, r->gang_evictions);
    else if (r->preemptions || r->evictions)
        fprintf(out,
                "preemption: %ld tasks placed by evicting %ld of lower priority (their work "
                "lost and redone)\n",
                r->preemptions, r->evictions);
}

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* "gangs": {count, started, attempts, wait_mean_s, wait_max_s, list}, "reservations":
 * {admitted, released, expired, failed, held_core_s, used_core_s, utilisation,
 * overrun_evictions, list}. */
static void json_gangs_resvs(json_t *o, const sim_result *r) {
    if (!r->ngangs && !r->nresvs)
        return;
    const sim_workload *w = r->workload;
    gr_summary g = summarise(r);
    json_t *gl = json_array(), *rl = json_array();
    for (long i = 0; i < r->ngangs; i++) {
        const sim_gang_rec *x = &r->gangs[i];
        json_array_append_new(gl, json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:o, s:o}",
                                            "workflow", w->wfs[x->wf].name, "process",
                                            w->wfs[x->wf].procs[x->proc].name, "run", x->run + 1,
                                            "gang", x->index, "size", x->size, "attempts",
                                            x->attempts, "ready_s", num(x->ready), "start_s",
                                            num(x->start), "wait_s", num(x->start - x->ready)));
    }
    for (long i = 0; i < r->nresvs; i++) {
        const sim_resv_rec *x = &r->resvs[i];
        json_t *nodes = json_array();
        for (long h = x->first_hold; h < x->first_hold + x->nholds; h++)
            json_array_append_new(nodes,
                                  json_pack("{s:s, s:i, s:o}", "node",
                                            r->cluster->nodes[r->holds[h].node].name, "pods",
                                            r->holds[h].pods, "cores", num(r->holds[h].cores)));
        json_array_append_new(
            rl, json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:o}",
                          "workflow", w->wfs[x->wf].name, "process",
                          w->wfs[x->wf].procs[x->proc].name, "run", x->run + 1, "count", x->count,
                          "phase", x->phase, "message", x->reason, "start_s", num(x->start),
                          "end_s", num(x->end), "released_s", num(x->released), "held_core_s",
                          num(x->held_core_s), "used_core_s", num(x->used_core_s),
                          "overrun_evictions", (json_int_t)x->overrun_evictions, "nodes", nodes));
    }
    json_object_set_new(o, "gangs",
                        json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "count", (json_int_t)g.gangs,
                                  "started", (json_int_t)g.started, "attempts",
                                  (json_int_t)g.attempts, "wait_mean_s", num(g.wait_mean),
                                  "wait_max_s", num(g.wait_max), "list", gl));
    json_object_set_new(
        o, "reservations",
        json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:I, s:o}", "admitted",
                  (json_int_t)g.admitted, "released", (json_int_t)g.released, "expired",
                  (json_int_t)g.expired, "failed", (json_int_t)g.failed, "held_core_s",
                  num(g.held_core_s), "used_core_s", num(g.used_core_s), "utilisation",
                  num(g.held_core_s > 0 ? g.used_core_s / g.held_core_s : NAN), "overrun_evictions",
                  (json_int_t)r->overrun_evictions, "list", rl));
}

json_t *sim_report_json(const sim_result *r) {
    json_t *o = json_object(), *wfs = json_array(), *groups = json_array(), *runs = json_array();
    json_object_set_new(o, "policy", json_string(r->policy));
    json_object_set_new(o, "nodes", json_integer(r->cluster->nnodes));
    json_object_set_new(o, "tasks", json_integer(r->tasks));
    json_object_set_new(o, "horizon_s", num(r->horizon));
    json_object_set_new(o, "task_runtime_mean_s", num(r->task_runtime_mean));
    json_object_set_new(o, "pending_mean_s", num(r->pending_mean));
    json_object_set_new(o, "schedule_attempts", json_integer(r->sched_attempts));
    json_object_set_new(o, "preemptions", json_integer(r->preemptions));
    json_object_set_new(o, "evictions", json_integer(r->evictions));
    json_object_set_new(o, "gang_preemptions", json_integer(r->gang_preemptions));
    json_object_set_new(o, "gang_evictions", json_integer(r->gang_evictions));
    json_object_set_new(o, "overrun_evictions", json_integer(r->overrun_evictions));
    json_object_set_new(o, "wall_s", num(r->wall_s));
    json_object_set_new(o, "history_runs", json_integer(r->history_runs));
    json_object_set_new(o, "makespan_bound_geomean_s", num(r->bound_geomean));
    for (int i = 0; i < r->workload->nworkflows; i++) {
        const sim_wf_stats *s = &r->wf[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(r->workload->wfs[i].name));
        json_object_set_new(x, "runs", json_integer(s->runs));
        json_object_set_new(x, "tasks", json_integer(s->tasks));
        json_object_set_new(x, "makespan_mean_s", num(s->makespan_mean));
        json_object_set_new(x, "makespan_first_s", num(s->makespan_first));
        json_object_set_new(x, "makespan_later_mean_s", num(s->makespan_rest_mean));
        json_object_set_new(x, "makespan_history_s", num(s->makespan_history));
        json_object_set_new(x, "makespan_bound_s", num(s->makespan_bound_mean));
        json_object_set_new(x, "task_runtime_mean_s", num(s->task_runtime_mean));
        json_object_set_new(x, "pending_mean_s", num(s->pending_mean));
        json_array_append_new(wfs, x);
    }
    for (int i = 0; i < r->nruns; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "workflow", json_string(r->workload->wfs[r->runs[i].wf].name));
        json_object_set_new(x, "run", json_integer(r->runs[i].run));
        json_object_set_new(x, "arrival_s", num(r->runs[i].arrival));
        json_object_set_new(x, "end_s", num(r->runs[i].end));
        json_object_set_new(x, "makespan_s", num(r->runs[i].end - r->runs[i].arrival));
        json_object_set_new(x, "bound_s", num(r->runs[i].bound));
        json_array_append_new(runs, x);
    }
    for (int g = 0; g < r->ngroups; g++) {
        const sim_group_stats *s = &r->groups[g];
        json_t *x = json_object();
        json_object_set_new(x, "group", json_integer(g + 1));
        json_object_set_new(x, "nodes", json_integer(s->nodes));
        json_object_set_new(x, "cores", num(s->cores));
        json_object_set_new(x, "tasks", json_integer(s->tasks));
        json_object_set_new(x, "busy_core_s", num(s->busy_core_s));
        json_object_set_new(x, "utilisation", num(s->utilisation));
        json_array_append_new(groups, x);
    }
    json_object_set_new(o, "workflows", wfs);
    json_object_set_new(o, "runs", runs);
    json_object_set_new(o, "groups", groups);
    json_gangs_resvs(o, r);
    return o;
}

/* Workflow i's mean makespan in r, or with bound the mean of its runs' lower bounds (bound.h). */
static double wf_makespan(const sim_result *r, int i, bool bound) {
    return bound ? r->wf[i].makespan_bound_mean : r->wf[i].makespan_mean;
}

/* Adds log(a / b) of every workflow's mean makespan (both positive) to *logsum and *k; with
 * a_bound a's lower bound instead of its makespan. */
static void add_log_ratios(const sim_result *a, bool a_bound, const sim_result *b, double *logsum,
                           int *k) {
    for (int i = 0; i < a->workload->nworkflows; i++) {
        double x = wf_makespan(a, i, a_bound), y = b->wf[i].makespan_mean;
        if (x > 0 && y > 0) {
            *logsum += log(x / y);
            (*k)++;
        }
    }
}

double sim_report_decrease(const sim_result *a, const sim_result *b) {
    double logsum = 0;
    int n = 0;
    add_log_ratios(a, false, b, &logsum, &n);
    return n ? 1.0 - exp(logsum / n) : NAN;
}

/* Adds log(bound / b's makespan) of every workflow to *logsum and *k: the joint bound's
 * geometric mean (sim_result.bound_geomean) where every workflow has a makespan, else each
 * workflow's own runs' bound. */
static void add_bound_log_ratios(const sim_result *b, double *logsum, int *k) {
    int n = b->workload->nworkflows;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (!(b->wf[i].makespan_mean > 0) || !(b->bound_geomean > 0)) {
            add_log_ratios(b, true, b, logsum, k);
            return;
        }
        sum += log(b->wf[i].makespan_mean);
    }
    *logsum += n * log(b->bound_geomean) - sum;
    *k += n;
}

double sim_report_headroom(const sim_result *b) {
    double logsum = 0;
    int n = 0;
    add_bound_log_ratios(b, &logsum, &n);
    return n ? 1.0 - exp(logsum / n) : NAN;
}

static int reference_index(sim_result *const *rs, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(rs[i]->policy, "tarema") == 0)
            return i;
    return 0;
}

/* The three resource-manager baselines of the paper, pooled as in its 17.87 % / 21.47 %. */
static int is_standard(const char *p) {
    return !strcmp(p, "round-robin") || !strcmp(p, "fair") || !strcmp(p, "fill-nodes");
}

/* ref's decrease against the three pooled; ref < 0: the lower bound's (each result's own, which
 * is the same for every policy of one seed). */
static double pooled_standard(sim_result *const *rs, int n, int ref) {
    double logsum = 0;
    int k = 0;
    for (int j = 0; j < n; j++) {
        if (!is_standard(rs[j]->policy))
            continue;
        if (ref < 0)
            add_bound_log_ratios(rs[j], &logsum, &k);
        else
            add_log_ratios(rs[ref], false, rs[j], &logsum, &k);
    }
    return k ? 1.0 - exp(logsum / k) : NAN;
}

/* One cell of a decrease table: 100 * (1 - mine / other), "-" when other is not positive (a
 * workflow of zero-second tasks has no ratio). */
static void decrease_cell(FILE *out, double mine, double other) {
    if (other > 0)
        fprintf(out, " %11.1f%%", 100.0 * (1.0 - mine / other));
    else
        fprintf(out, " %12s", "-");
}

static const char HEADROOM_TITLE[] =
    "\nheadroom: the lower bound's decrease vs each policy, the most any policy could gain\n"
    "(bound: every task at its fastest node type; critical path, requested cores and memory, cpu\n"
    "work under contention, and for workflows sharing the cluster the order they can finish in\n"
    "(geometric mean); sim/bound.h)\n";

/* One seed's headroom against every policy, per workflow and geometric mean, then pooled. */
static void headroom_table(FILE *out, sim_result *const *rs, int n) {
    const sim_workload *w = rs[0]->workload;
    fprintf(out, "%s%-20s %12s", HEADROOM_TITLE, "workflow", "bound (s)");
    for (int j = 0; j < n; j++)
        fprintf(out, " %12s", rs[j]->policy);
    fprintf(out, "\n");
    for (int i = 0; i < w->nworkflows; i++) {
        fprintf(out, "%-20.20s %12.1f", w->wfs[i].name, rs[0]->wf[i].makespan_bound_mean);
        for (int j = 0; j < n; j++)
            decrease_cell(out, rs[j]->wf[i].makespan_bound_mean, rs[j]->wf[i].makespan_mean);
        fprintf(out, "\n");
    }
    fprintf(out, "%-20s %12s", "geometric mean", "");
    for (int j = 0; j < n; j++)
        fprintf(out, " %11.1f%%", 100.0 * sim_report_headroom(rs[j]));
    fprintf(out, "\n");
    double pooled = pooled_standard(rs, n, -1);
    if (!isnan(pooled))
        fprintf(out, "headroom vs round-robin, fair, fill-nodes pooled: %.1f%%\n", 100.0 * pooled);
}

void sim_report_compare_table(FILE *out, sim_result *const *rs, int n) {
    if (n == 0)
        return;
    int ref = reference_index(rs, n);
    const sim_workload *w = rs[0]->workload;
    history_note(out, rs[0]->history_runs);
    fprintf(out, "mean makespan per workflow (seconds, mean over its runs)\n%-20s", "workflow");
    for (int j = 0; j < n; j++)
        fprintf(out, " %12s", rs[j]->policy);
    fprintf(out, "\n");
    for (int i = 0; i < w->nworkflows; i++) {
        fprintf(out, "%-20.20s", w->wfs[i].name);
        for (int j = 0; j < n; j++)
            fprintf(out, " %12.1f", rs[j]->wf[i].makespan_mean);
        fprintf(out, "\n");
    }
    fprintf(out, "%-20s", "task runtime mean");
    for (int j = 0; j < n; j++)
        fprintf(out, " %12.1f", rs[j]->task_runtime_mean);
    fprintf(out, "\n%-20s", "pending mean");
    for (int j = 0; j < n; j++)
        fprintf(out, " %12.1f", rs[j]->pending_mean);
    fprintf(out, "\n\n%s runtime decrease vs each policy (100 * (1 - %s / other))\n%-20s",
            rs[ref]->policy, rs[ref]->policy, "workflow");
    for (int j = 0; j < n; j++)
        if (j != ref)
            fprintf(out, " %12s", rs[j]->policy);
    fprintf(out, "\n");
    for (int i = 0; i < w->nworkflows; i++) {
        fprintf(out, "%-20.20s", w->wfs[i].name);
        for (int j = 0; j < n; j++)
            if (j != ref)
                decrease_cell(out, rs[ref]->wf[i].makespan_mean, rs[j]->wf[i].makespan_mean);
        fprintf(out, "\n");
    }
    fprintf(out, "%-20s", "geometric mean");
    for (int j = 0; j < n; j++)
        if (j != ref)
            fprintf(out, " %11.1f%%", 100.0 * sim_report_decrease(rs[ref], rs[j]));
    fprintf(out, "\n");
    double pooled = pooled_standard(rs, n, ref);
    if (!isnan(pooled))
        fprintf(out, "%s vs round-robin, fair, fill-nodes pooled: %.1f%% geometric mean decrease\n",
                rs[ref]->policy, 100.0 * pooled);
    headroom_table(out, rs, n);
}

json_t *sim_report_compare_json(sim_result *const *rs, int n) {
    json_t *o = json_object(), *pol = json_array(), *dec = json_object();
    int ref = n ? reference_index(rs, n) : 0;
    for (int j = 0; j < n; j++) {
        json_array_append_new(pol, sim_report_json(rs[j]));
        if (j != ref)
            json_object_set_new(dec, rs[j]->policy,
                                num(100.0 * sim_report_decrease(rs[ref], rs[j])));
    }
    json_t *head = json_object();
    for (int j = 0; j < n; j++)
        json_object_set_new(head, rs[j]->policy, num(100.0 * sim_report_headroom(rs[j])));
    json_object_set_new(o, "headroom_pct", head);
    if (n)
        json_object_set_new(o, "headroom_vs_standard_pct", num(100.0 * pooled_standard(rs, n, -1)));
    json_object_set_new(o, "reference", json_string(n ? rs[ref]->policy : ""));
    json_object_set_new(o, "decrease_pct", dec);
    if (n)
        json_object_set_new(o, "decrease_vs_standard_pct",
                            num(100.0 * pooled_standard(rs, n, ref)));
    json_object_set_new(o, "policies", pol);
    return o;
}

/* ---- Gantt ---- */

static void hsl_hex(double h, double s, double l, char out[8]) {
    double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360.0) / 60.0;
    double x = c * (1 - fabs(fmod(hp, 2.0) - 1)), m = l - c / 2, r = 0, g = 0, b = 0;
    if (hp < 1)
        r = c, g = x;
    else if (hp < 2)
        r = x, g = c;
    else if (hp < 3)
        g = c, b = x;
    else if (hp < 4)
        g = x, b = c;
    else if (hp < 5)
        r = x, b = c;
    else
        r = c, b = x;
    snprintf(out, 8, "#%02x%02x%02x", (int)lround((r + m) * 255), (int)lround((g + m) * 255),
             (int)lround((b + m) * 255));
}

/* The colour of process number k (over all workflows): golden-angle hues, and since hues come
 * back close every 8, 13 and 21 steps, the lightness changes every 8 so those stay apart. */
static void process_colour(int k, char out[8]) {
    static const double light[3] = {0.50, 0.34, 0.68};
    hsl_hex(k * 137.508, 0.65, light[(k / 8) % 3], out);
}

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

static double nice_step(double span, int target) {
    double raw = span / target, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

typedef struct gnode {
    int node, group, lanes;
    double y;
} gnode;

static int cmp_gnode(const void *a, const void *b) {
    const gnode *x = a, *y = b;
    if (x->group != y->group)
        return y->group - x->group; /* strongest group on top */
    return x->node - y->node;
}

static int cmp_rec_by_node_start(const void *a, const void *b) {
    const sim_task_rec *x = *(const sim_task_rec *const *)a, *y = *(const sim_task_rec *const *)b;
    if (x->node != y->node)
        return x->node - y->node;
    return (x->start > y->start) - (x->start < y->start);
}

/* Dashed lines where each workflow's first run arrives, so workflows run one after the other
 * (--isolate) or staggered can be told apart, named at the top; workflows arriving within
 * 60 px of each other share one label ("a, b +2"). */
static void gantt_arrivals(FILE *f, const sim_result *r, double left, double top, double plot_w,
                           double plot_bottom, double horizon) {
    const sim_workload *w = r->workload;
    double *at = malloc((size_t)w->nworkflows * sizeof *at);
    if (!at)
        return; /* the chart is still right without the markers */
    for (int i = 0; i < w->nworkflows; i++) {
        at[i] = INFINITY;
        for (int k = 0; k < r->nruns; k++)
            if (r->runs[k].wf == i && r->runs[k].arrival < at[i])
                at[i] = r->runs[k].arrival;
    }
    for (int i = 0; i < w->nworkflows; i++) {
        /* the next unlabelled workflow in arrival order starts a label group */
        int first = -1;
        for (int j = 0; j < w->nworkflows; j++)
            if (isfinite(at[j]) && (first < 0 || at[j] < at[first]))
                first = j;
        if (first < 0)
            break;
        double x = left + plot_w * at[first] / horizon;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
                "stroke-dasharray=\"3,3\"/>\n<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\">",
                x, top - 14, x, plot_bottom, x + 2, top - 8);
        int named = 0, more = 0;
        for (int j = 0; j < w->nworkflows; j++) {
            if (!isfinite(at[j]) || left + plot_w * at[j] / horizon - x >= 60)
                continue;
            if (named < 2) {
                fputs(named ? ", " : "", f);
                xml_text(f, w->wfs[j].name);
                named++;
            } else {
                more++;
            }
            at[j] = INFINITY;
        }
        if (more)
            fprintf(f, " +%d", more);
        fprintf(f, "</text>\n");
    }
    free(at);
}

/* Reservations as hatched bars behind the tasks: on each held node, from the window's start
 * to the release (the whole row height: the capacity is the node's, not one lane's). */
static void gantt_reservations(FILE *f, const sim_result *r, const gnode *gn, const int *row_of,
                               double left, double plot_w, double lane_h, double horizon) {
    if (!r->nholds)
        return;
    fprintf(f, "<defs><pattern id=\"resv-hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" "
               "height=\"6\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
               "fill=\"#fff4d6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
               "stroke=\"#c8901e\" stroke-width=\"2\"/></pattern></defs>\n");
    for (long i = 0; i < r->nresvs; i++) {
        const sim_resv_rec *x = &r->resvs[i];
        if (!x->nholds || isnan(x->released))
            continue;
        double t0 = fmin(x->start, horizon), t1 = fmin(x->released, horizon);
        if (!(t1 > t0))
            t1 = t0; /* released before it opened: a sliver still marks it */
        const sim_workload *w = r->workload;
        for (long h = x->first_hold; h < x->first_hold + x->nholds; h++) {
            const gnode *g = &gn[row_of[r->holds[h].node]];
            fprintf(f,
                    "<rect class=\"reservation\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                    "height=\"%.1f\" fill=\"url(#resv-hatch)\" stroke=\"#c8901e\" "
                    "stroke-width=\"0.6\"><title>reservation ",
                    left + plot_w * t0 / horizon, g->y, fmax(plot_w * (t1 - t0) / horizon, 1.0),
                    g->lanes * lane_h);
            xml_text(f, w->wfs[x->wf].name);
            fputc(':', f);
            xml_text(f, w->wfs[x->wf].procs[x->proc].name);
            fprintf(f, " run %d: %d task(s) held %.1f-%.1f s, %s at %.1f s</title></rect>\n",
                    x->run + 1, r->holds[h].pods, x->start, x->end, x->phase, x->released);
        }
    }
}

int sim_report_gantt(const char *path, const sim_result *r, tm_err *err) {
    if (!r->task_recs)
        return tm_err_set(err, "gantt: the run did not record tasks");
    const sim_cluster *c = r->cluster;
    const sim_workload *w = r->workload;
    long nt = r->tasks;
    const sim_task_rec **recs = malloc(((size_t)nt + 1) * sizeof *recs);
    int *lane = malloc(((size_t)nt + 1) * sizeof *lane);
    gnode *gn = calloc((size_t)c->nnodes, sizeof *gn);
    int *row_of = malloc((size_t)c->nnodes * sizeof *row_of);
    double *lane_end = malloc(((size_t)nt + 1) * sizeof *lane_end);
    int *proc_base = calloc((size_t)w->nworkflows + 1, sizeof *proc_base);
    if (!recs || !lane || !gn || !row_of || !lane_end || !proc_base) {
        free(recs), free(lane), free(gn), free(row_of), free(lane_end), free(proc_base);
        return tm_err_set(err, "gantt: out of memory");
    }
    for (long i = 0; i < nt; i++)
        recs[i] = &r->task_recs[i];
    qsort(recs, (size_t)nt, sizeof *recs, cmp_rec_by_node_start);
    for (int i = 0; i < c->nnodes; i++)
        gn[i] = (gnode){i, c->nodes[i].group, 1, 0};
    /* lanes: greedy, first lane free at the task's start */
    for (long i = 0; i < nt;) {
        int node = recs[i]->node, nl = 0;
        long j = i;
        for (; j < nt && recs[j]->node == node; j++) {
            int l = 0;
            while (l < nl && lane_end[l] > recs[j]->start + 1e-9)
                l++;
            if (l == nl)
                nl++;
            lane_end[l] = recs[j]->end;
            lane[recs[j] - r->task_recs] = l;
        }
        gn[node].lanes = nl > 0 ? nl : 1;
        i = j;
    }
    qsort(gn, (size_t)c->nnodes, sizeof *gn, cmp_gnode);
    int nprocs = 0;
    for (int i = 0; i < w->nworkflows; i++) {
        proc_base[i] = nprocs;
        nprocs += w->wfs[i].nprocs;
    }
    const double left = 170, right = 30, top = 50, lane_h = c->nnodes > 100 ? 2 : 6, width = 1400,
                 plot_w = width - left - right, gap = 14;
    double y = top;
    int prev_group = -1;
    for (int i = 0; i < c->nnodes; i++) {
        if (gn[i].group != prev_group && prev_group != -1)
            y += gap;
        prev_group = gn[i].group;
        gn[i].y = y;
        row_of[gn[i].node] = i;
        y += gn[i].lanes * lane_h + 2;
    }
    double plot_bottom = y;
    int legend_cols = 4, legend_rows = (nprocs + legend_cols - 1) / legend_cols;
    double height = plot_bottom + 40 + legend_rows * 16 + 20;
    double horizon = r->horizon > 0 ? r->horizon : 1;
    FILE *f = fopen(path, "w");
    if (!f) {
        free(recs), free(lane), free(gn), free(row_of), free(lane_end), free(proc_base);
        return tm_err_set(err, "gantt: cannot write %s", path);
    }
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" "
            "height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    fprintf(f,
            "<text x=\"%.0f\" y=\"22\" font-size=\"15\">policy %s: %ld tasks on %d nodes, "
            "horizon %.0f s</text>\n",
            left, r->policy, r->tasks, c->nnodes, r->horizon);
    /* group bands and node names */
    for (int i = 0; i < c->nnodes; i++) {
        const gnode *g = &gn[i];
        double h = g->lanes * lane_h;
        if (g->group % 2)
            fprintf(
                f,
                "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.1f\" fill=\"#f3f3f3\"/>\n",
                left, g->y, plot_w, h + 2);
        if (c->nnodes <= 100 || i == 0 || gn[i - 1].group != g->group) {
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"%d\">",
                    left - 6, g->y + fmin(h, 10), c->nnodes <= 100 ? 10 : 11);
            if (c->nnodes > 100)
                fprintf(f, "group %d (%s...)", g->group + 1, c->nodes[g->node].name);
            else
                xml_text(f, c->nodes[g->node].name);
            fprintf(f, "</text>\n");
        }
        if (i == 0 || gn[i - 1].group != g->group)
            fprintf(f, "<text x=\"8\" y=\"%.1f\" font-weight=\"bold\">group %d</text>\n", g->y + 10,
                    g->group + 1);
    }
    /* time axis */
    double step = nice_step(horizon, 10);
    for (double t = 0; t <= horizon + 1e-9; t += step) {
        double x = left + plot_w * t / horizon;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                x, top - 4, x, plot_bottom, x, plot_bottom + 14, t);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">time (s)</text>\n",
            left + plot_w / 2, plot_bottom + 28);
    gantt_arrivals(f, r, left, top, plot_w, plot_bottom, horizon);
    gantt_reservations(f, r, gn, row_of, left, plot_w, lane_h, horizon);
    /* tasks */
    for (long i = 0; i < nt; i++) {
        const sim_task_rec *t = &r->task_recs[i];
        const gnode *g = &gn[row_of[t->node]];
        char col[8];
        int pi = proc_base[t->wf] + t->proc;
        process_colour(pi, col);
        double x = left + plot_w * t->start / horizon, wd = plot_w * (t->end - t->start) / horizon;
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                "stroke=\"white\" stroke-width=\"0.3\"><title>",
                x, g->y + lane[i] * lane_h, fmax(wd, 0.5), lane_h - 0.5, col);
        xml_text(f, w->wfs[t->wf].name);
        fputc(':', f);
        xml_text(f, w->wfs[t->wf].procs[t->proc].name);
        fprintf(f, " #%d run %d on %s: %.1f-%.1f s</title></rect>\n", t->inst, t->run,
                c->nodes[t->node].name, t->start, t->end);
    }
    /* legend */
    double ly = plot_bottom + 44;
    for (int i = 0; i < w->nworkflows; i++)
        for (int p = 0; p < w->wfs[i].nprocs; p++) {
            int k = proc_base[i] + p;
            char col[8];
            process_colour(k, col);
            double x = left + (k % legend_cols) * (plot_w / legend_cols),
                   yy = ly + (k / legend_cols) * 16;
            fprintf(f,
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"%.0f\">",
                    x, yy - 9, col, x + 14, yy);
            xml_text(f, w->wfs[i].name);
            fputc(':', f);
            xml_text(f, w->wfs[i].procs[p].name);
            fprintf(f, "</text>\n");
        }
    fprintf(f, "</svg>\n");
    int rc = fclose(f) == 0 ? 0 : tm_err_set(err, "gantt: error writing %s", path);
    free(recs), free(lane), free(gn), free(row_of), free(lane_end), free(proc_base);
    return rc;
}

/* ---- several seeds ---- */

typedef struct seed_stat {
    double mean, sd;
} seed_stat;

/* Mean and sample standard deviation of v[0..n) (sd 0 for one value; NAN values skipped). */
static seed_stat stat_of(const double *v, int n) {
    double s = 0, q = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i])) {
            s += v[i];
            k++;
        }
    if (k == 0)
        return (seed_stat){NAN, NAN};
    double m = s / k;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i]))
            q += (v[i] - m) * (v[i] - m);
    return (seed_stat){m, k > 1 ? sqrt(q / (k - 1)) : 0};
}

/* The policies the seeds report is about: tarema (the paper) and adaptive when present, else
 * the first. */
static int seed_refs(sim_result *const *rs, int n, int refs[2]) {
    int k = 0;
    for (int j = 0; j < n; j++)
        if (!strcmp(rs[j]->policy, "tarema") || !strcmp(rs[j]->policy, "adaptive"))
            refs[k++] = j;
    if (k == 0)
        refs[k++] = 0;
    return k;
}

/* Workflow i's mean makespan under policy j over the seeds, or with bound its lower bound. */
static seed_stat seed_makespan(sim_result *const *rs, int n, int nseeds, int j, int i, bool bound) {
    double *v = calloc((size_t)nseeds, sizeof *v);
    if (!v)
        return (seed_stat){NAN, NAN};
    for (int k = 0; k < nseeds; k++)
        v[k] = wf_makespan(rs[(size_t)k * (size_t)n + (size_t)j], i, bound);
    seed_stat st = stat_of(v, nseeds);
    free(v);
    return st;
}

/* Decrease (percent) of ref against policy j over seeds: row i < nworkflows is workflow i, row
 * nworkflows the geometric mean, nworkflows + 1 the pooled standard baselines (j ignored).
 * ref < 0: the lower bound's decrease, i.e. the headroom. */
static seed_stat seed_decrease(sim_result *const *rs, int n, int nseeds, int ref, int j, int row) {
    double *v = calloc((size_t)nseeds, sizeof *v);
    if (!v)
        return (seed_stat){NAN, NAN};
    int nwf = rs[0]->workload->nworkflows;
    for (int k = 0; k < nseeds; k++) {
        sim_result *const *r = rs + (size_t)k * (size_t)n;
        if (row < nwf) {
            double other = r[j]->wf[row].makespan_mean;
            double mine =
                ref < 0 ? r[j]->wf[row].makespan_bound_mean : r[ref]->wf[row].makespan_mean;
            v[k] = other > 0 ? 100.0 * (1.0 - mine / other) : NAN;
        } else if (row == nwf) {
            v[k] =
                100.0 * (ref < 0 ? sim_report_headroom(r[j]) : sim_report_decrease(r[ref], r[j]));
        } else {
            v[k] = 100.0 * pooled_standard(r, n, ref);
        }
    }
    seed_stat st = stat_of(v, nseeds);
    free(v);
    return st;
}

/* The headroom against every policy over the seeds (the seeds' version of headroom_table). */
static void seeds_headroom_table(FILE *out, sim_result *const *rs, int n, int nseeds) {
    int nwf = rs[0]->workload->nworkflows;
    fprintf(out, "%s%-20s %18s", HEADROOM_TITLE, "workflow", "bound (s)");
    for (int j = 0; j < n; j++)
        fprintf(out, " %15s", rs[j]->policy);
    fprintf(out, "\n");
    for (int row = 0; row <= nwf; row++) {
        fprintf(out, "%-20.20s", row < nwf ? rs[0]->workload->wfs[row].name : "geometric mean");
        if (row < nwf) {
            seed_stat b = seed_makespan(rs, n, nseeds, 0, row, true);
            fprintf(out, " %9.1f +- %5.1f", b.mean, b.sd);
        } else
            fprintf(out, " %18s", "");
        for (int j = 0; j < n; j++) {
            seed_stat st = seed_decrease(rs, n, nseeds, -1, j, row);
            fprintf(out, " %6.1f +- %5.1f", st.mean, st.sd);
        }
        fprintf(out, "\n");
    }
    seed_stat p = seed_decrease(rs, n, nseeds, -1, 0, nwf + 1);
    if (!isnan(p.mean))
        fprintf(out, "headroom vs round-robin, fair, fill-nodes pooled: %.1f +- %.1f %%\n", p.mean,
                p.sd);
}

void sim_report_seeds_table(FILE *out, sim_result *const *rs, int n, int nseeds) {
    if (n == 0 || nseeds == 0)
        return;
    const sim_workload *w = rs[0]->workload;
    int nwf = w->nworkflows, refs[2];
    int nref = seed_refs(rs, n, refs);
    fprintf(out, "%d seeds (1..%d); figures are mean +- standard deviation over seeds\n", nseeds,
            nseeds);
    history_note(out, rs[0]->history_runs);
    fputc('\n', out);
    fprintf(out, "mean makespan per workflow (seconds)\n%-20s", "workflow");
    for (int j = 0; j < n; j++)
        fprintf(out, " %18s", rs[j]->policy);
    fprintf(out, "\n");
    for (int i = 0; i < nwf; i++) {
        fprintf(out, "%-20.20s", w->wfs[i].name);
        for (int j = 0; j < n; j++) {
            seed_stat st = seed_makespan(rs, n, nseeds, j, i, false);
            fprintf(out, " %9.1f +- %5.1f", st.mean, st.sd);
        }
        fprintf(out, "\n");
    }
    for (int r = 0; r < nref; r++) {
        int ref = refs[r];
        fprintf(out, "\n%s runtime decrease vs each policy (100 * (1 - %s / other), %%)\n%-20s",
                rs[ref]->policy, rs[ref]->policy, "workflow");
        for (int j = 0; j < n; j++)
            if (j != ref)
                fprintf(out, " %15s", rs[j]->policy);
        fprintf(out, "\n");
        for (int row = 0; row <= nwf; row++) {
            fprintf(out, "%-20.20s", row < nwf ? w->wfs[row].name : "geometric mean");
            for (int j = 0; j < n; j++) {
                if (j == ref)
                    continue;
                seed_stat st = seed_decrease(rs, n, nseeds, ref, j, row);
                fprintf(out, " %6.1f +- %5.1f", st.mean, st.sd);
            }
            fprintf(out, "\n");
        }
        seed_stat p = seed_decrease(rs, n, nseeds, ref, 0, nwf + 1);
        if (!isnan(p.mean))
            fprintf(out, "%s vs round-robin, fair, fill-nodes pooled: %.1f +- %.1f %%\n",
                    rs[ref]->policy, p.mean, p.sd);
    }
    seeds_headroom_table(out, rs, n, nseeds);
}

static json_t *stat_json(seed_stat st) {
    json_t *sj = json_object();
    json_object_set_new(sj, "mean", num(st.mean));
    json_object_set_new(sj, "sd", num(st.sd));
    return sj;
}

/* {"bound_s": {workflow: stat}, policy: {"geomean": stat, "workflows": {name: stat}},
 * "pooled_standard": stat}: the headroom against every policy over the seeds. */
static json_t *seeds_headroom_json(sim_result *const *rs, int n, int nseeds) {
    const sim_workload *w = rs[0]->workload;
    int nwf = w->nworkflows;
    json_t *h = json_object(), *bounds = json_object();
    for (int i = 0; i < nwf; i++)
        json_object_set_new(bounds, w->wfs[i].name,
                            stat_json(seed_makespan(rs, n, nseeds, 0, i, true)));
    json_object_set_new(h, "bound_s", bounds);
    for (int j = 0; j < n; j++) {
        json_t *pj = json_object(), *wfj = json_object();
        for (int row = 0; row < nwf; row++)
            json_object_set_new(wfj, w->wfs[row].name,
                                stat_json(seed_decrease(rs, n, nseeds, -1, j, row)));
        json_object_set_new(pj, "geomean", stat_json(seed_decrease(rs, n, nseeds, -1, j, nwf)));
        json_object_set_new(pj, "workflows", wfj);
        json_object_set_new(h, rs[j]->policy, pj);
    }
    json_object_set_new(h, "pooled_standard",
                        stat_json(seed_decrease(rs, n, nseeds, -1, 0, nwf + 1)));
    return h;
}

json_t *sim_report_seeds_json(sim_result *const *rs, int n, int nseeds) {
    json_t *o = json_object(), *refs_j = json_object();
    json_object_set_new(o, "seeds", json_integer(nseeds));
    if (n == 0 || nseeds == 0) {
        json_object_set_new(o, "decrease", refs_j);
        return o;
    }
    const sim_workload *w = rs[0]->workload;
    int nwf = w->nworkflows, refs[2];
    int nref = seed_refs(rs, n, refs);
    json_object_set_new(o, "history_runs", json_integer(rs[0]->history_runs));
    for (int r = 0; r < nref; r++) {
        int ref = refs[r];
        json_t *per = json_object();
        for (int j = 0; j < n; j++) {
            if (j == ref)
                continue;
            json_t *pj = json_object(), *wfj = json_object();
            for (int row = 0; row <= nwf; row++) {
                json_t *sj = stat_json(seed_decrease(rs, n, nseeds, ref, j, row));
                if (row < nwf)
                    json_object_set_new(wfj, w->wfs[row].name, sj);
                else
                    json_object_set_new(pj, "geomean", sj);
            }
            json_object_set_new(pj, "workflows", wfj);
            json_object_set_new(per, rs[j]->policy, pj);
        }
        json_object_set_new(per, "pooled_standard",
                            stat_json(seed_decrease(rs, n, nseeds, ref, 0, nwf + 1)));
        json_object_set_new(refs_j, rs[ref]->policy, per);
    }
    json_object_set_new(o, "decrease", refs_j);
    json_object_set_new(o, "headroom", seeds_headroom_json(rs, n, nseeds));
    return o;
}
