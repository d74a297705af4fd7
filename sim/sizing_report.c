/* sizing_report.c: what `tarema-sim sizing` prints: the strategies' WRR and ATE as a table or
 * JSON, each process's recommended allocation, and the paper's Figure 6 as an SVG (plain
 * fprintf, like sim/report.c's Gantt chart). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sizing_eval.h"

#define GIB 1073741824.0

static const char *const res_names[SZ_NRES] = {"cores", "memory", "disk"};

void sim_sz_report_table(FILE *f, const sim_sz_dataset *d, const sim_sz_result *r, int n,
                         const sim_sz_recommendation *rec) {
    fprintf(f, "dataset %s: %zu tasks, %d task types; machine 16 cores, 64 GiB\n", d->name, d->n,
            d->ntypes);
    fprintf(f, "%-16s %5s %9s %9s %9s %9s %9s %12s %6s\n", "strategy", "level", "mem WRR",
            "mem ATE", "cpu WRR", "cpu ATE", "failures", "mem GiB-h", "OOM");
    for (int i = 0; i < n; i++) {
        char lv[16] = "-";
        if (r[i].level > 0)
            snprintf(lv, sizeof lv, "%d", r[i].level);
        fprintf(f, "%-16s %5s %8.1f%% %8.1f%% %8.1f%% %8.1f%% %9ld %12.1f %6ld\n",
                sz_strategy_name(r[i].strategy), lv, r[i].wrr[SZ_MEMORY], r[i].ate[SZ_MEMORY],
                r[i].wrr[SZ_CORES], r[i].ate[SZ_CORES], r[i].failures,
                r[i].waste[SZ_MEMORY] / GIB / 3600.0, r[i].oom);
    }
    if (!rec)
        return;
    fprintf(f, "\nrecommended allocation per process (level 3, whole history): greedy buckets, "
               "VPA target\n");
    fprintf(f, "%-28s %6s %10s %-28s %10s %7s %-16s %7s\n", "process", "tasks", "mem max",
            "mem buckets (GiB)", "mem VPA", "cpu max", "cpu buckets", "cpu VPA");
    for (int k = 0; k < d->ntypes; k++) {
        const sim_sz_recommendation *o = &rec[k];
        char mb[128] = "", cb[128] = "";
        for (int b = 0; b < o->nbuckets[SZ_MEMORY]; b++)
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), "%s%.2f", b ? " " : "",
                     o->buckets[SZ_MEMORY][b] / GIB);
        for (int b = 0; b < o->nbuckets[SZ_CORES]; b++)
            snprintf(cb + strlen(cb), sizeof cb - strlen(cb), "%s%.1f", b ? " " : "",
                     o->buckets[SZ_CORES][b]);
        fprintf(f, "%-28.28s %6ld %9.2fG %-28.28s %9.2fG %7.1f %-16.16s %7.1f\n", o->type, o->tasks,
                o->max_peak[SZ_MEMORY] / GIB, mb, o->vpa[SZ_MEMORY] / GIB, o->max_peak[SZ_CORES],
                cb, o->vpa[SZ_CORES]);
    }
}

/* A number, or JSON null for NaN (JSON has no NaN). */
static json_t *num(double x) {
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *sim_sz_report_json(const sim_sz_dataset *d, const sim_sz_result *r, int n,
                           const sim_sz_recommendation *rec) {
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "dataset", json_string(d->name));
    json_object_set_new(root, "tasks", json_integer((json_int_t)d->n));
    json_object_set_new(root, "types", json_integer(d->ntypes));
    for (int i = 0; i < n; i++) {
        json_t *o = json_object(), *per = json_object();
        json_object_set_new(o, "strategy", json_string(sz_strategy_name(r[i].strategy)));
        json_object_set_new(o, "level", r[i].level > 0 ? json_integer(r[i].level) : json_null());
        json_object_set_new(o, "wrr", num(r[i].wrr[SZ_MEMORY]));
        json_object_set_new(o, "ate", num(r[i].ate[SZ_MEMORY]));
        json_object_set_new(o, "failures", json_integer(r[i].failures));
        json_object_set_new(o, "oomRetries", json_integer(r[i].oom));
        for (int k = 0; k < SZ_NRES; k++)
            if (isfinite(r[i].ate[k]))
                json_object_set_new(per, res_names[k],
                                    json_pack("{s:o,s:o,s:o}", "wrr", num(r[i].wrr[k]), "ate",
                                              num(r[i].ate[k]), "waste", num(r[i].waste[k])));
        json_object_set_new(o, "resources", per);
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "results", arr);
    if (rec) {
        json_t *ra = json_array();
        for (int k = 0; k < d->ntypes; k++) {
            json_t *o = json_object();
            json_object_set_new(o, "process", json_string(rec[k].type));
            json_object_set_new(o, "tasks", json_integer(rec[k].tasks));
            for (int q = 0; q < SZ_NRES; q++) {
                if (!isfinite(rec[k].max_peak[q]))
                    continue;
                json_t *b = json_array();
                for (int j = 0; j < rec[k].nbuckets[q]; j++)
                    json_array_append_new(b, json_real(rec[k].buckets[q][j]));
                json_object_set_new(o, res_names[q],
                                    json_pack("{s:o,s:o,s:o}", "max", num(rec[k].max_peak[q]),
                                              "greedy_buckets", b, "vpa", num(rec[k].vpa[q])));
            }
            json_array_append_new(ra, o);
        }
        json_object_set_new(root, "recommendations", ra);
    }
    return root;
}

/* ---- Figure 6 ---- */

#define W      900.0
#define PANEL  300.0
#define LEFT   70.0
#define TOP    40.0
#define GAP    70.0
#define PLOT_W (W - LEFT - 20)

/* One panel: the peaks as dots and, for bucket rank b, a polyline through the b-th delimiter
 * before every task (broken where the chain has fewer buckets, e.g. the cold start). */
static int panel(FILE *f, const sim_sz_dataset *d, sz_strategy s, int nb, double y0, double ymax,
                 tm_err *err) {
    sz_config c;
    sz_config_default(&c, s, d->machine[SZ_MEMORY]);
    c.buckets = nb;
    sz_alloc *a = sz_alloc_new(&c, err);
    if (!a)
        return -1;
    double(*delim)[SZ_MAX_BUCKETS] = calloc(d->n, sizeof *delim);
    int *k = calloc(d->n, sizeof *k);
    if (!delim || !k) {
        free(delim);
        free(k);
        sz_alloc_free(a);
        return tm_err_set(err, "svg: out of memory");
    }
    for (size_t i = 0; i < d->n; i++) {
        k[i] = sz_alloc_buckets(a, delim[i], SZ_MAX_BUCKETS);
        sz_alloc_record(a, d->tasks[i].peak[SZ_MEMORY], d->tasks[i].runtime, true);
    }
    sz_alloc_free(a);
    double xs = PLOT_W / (double)(d->n > 1 ? d->n - 1 : 1);
#define X(i) (LEFT + (double)(i)*xs)
#define Y(v) (y0 + PANEL - (v) / ymax * PANEL)
    fprintf(f, "<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' stroke='#888'/>\n",
            LEFT, y0, PLOT_W, PANEL);
    fprintf(f, "<text x='%.0f' y='%.0f' font-size='14'>%s bucketing, %d buckets</text>\n", LEFT,
            y0 - 8, sz_strategy_name(s), nb);
    for (int t = 0; t <= 4; t++) {
        double v = ymax * t / 4;
        fprintf(f, "<text x='%.0f' y='%.1f' font-size='11' text-anchor='end'>%.1f GiB</text>\n",
                LEFT - 4, Y(v) + 4, v / GIB);
    }
    fprintf(f, "<g fill='#1f77b4' fill-opacity='0.5'>\n");
    for (size_t i = 0; i < d->n; i++)
        if (isfinite(d->tasks[i].peak[SZ_MEMORY]))
            fprintf(f, "<circle cx='%.1f' cy='%.1f' r='1.5'/>\n", X(i),
                    Y(fmin(d->tasks[i].peak[SZ_MEMORY], ymax)));
    fprintf(f, "</g>\n");
    static const char *const colors[] = {"#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    for (int b = 0; b < SZ_MAX_BUCKETS; b++) {
        bool open = false;
        for (size_t i = 0; i < d->n; i++) {
            bool has = k[i] > b;
            if (has && !open)
                fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.2' points='",
                        colors[b % 5]);
            if (has)
                fprintf(f, "%.1f,%.1f ", X(i), Y(fmin(delim[i][b], ymax)));
            if (!has && open)
                fprintf(f, "'/>\n");
            open = has;
        }
        if (open)
            fprintf(f, "'/>\n");
    }
#undef X
#undef Y
    free(delim);
    free(k);
    return 0;
}

int sim_sz_svg(const char *path, const sim_sz_dataset *d, tm_err *err) {
    FILE *f = fopen(path, "w");
    if (!f)
        return tm_err_set(err, "%s: cannot write: %s", path, strerror(errno));
    double ymax = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->tasks[i].peak[SZ_MEMORY] > ymax)
            ymax = d->tasks[i].peak[SZ_MEMORY];
    ymax = ymax > 0 ? fmin(ymax * 1.1, d->machine[SZ_MEMORY]) : d->machine[SZ_MEMORY];
    int nb = d->ntypes < 2 ? 2 : d->ntypes > 5 ? 5 : d->ntypes;
    double h = TOP + 2 * PANEL + GAP + 40;
    fprintf(f,
            "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n"
            "<text x='%.0f' y='20' font-size='15'>%s: tasks' peak memory in order (dots) and "
            "the buckets' upper delimiters (lines)</text>\n",
            W, h, LEFT, d->name);
    int rc = panel(f, d, SZ_QUANTIZED, nb, TOP + 10, ymax, err);
    if (rc == 0)
        rc = panel(f, d, SZ_KMEANS, nb, TOP + 10 + PANEL + GAP, ymax, err);
    fprintf(f,
            "<text x='%.0f' y='%.0f' font-size='12' text-anchor='middle'>task (dataset "
            "order)</text>\n</svg>\n",
            LEFT + PLOT_W / 2, h - 8);
    if (fclose(f) != 0 && rc == 0)
        rc = tm_err_set(err, "%s: write failed", path);
    return rc;
}
