/* turbine_cli.c: `tarema-sim turbine`: WARP's turbine example over seeds (turbine.h), as a table
 * or JSON, next to the paper's Table 5 (16 vs 46 minutes). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli.h"
#include "sim/turbine.h"

#define PAPER_PLANNED_MIN 16
#define PAPER_PLAIN_MIN   46

static json_t *step_j(const sim_turbine_step *s) {
    json_t *j =
        json_pack("{s:f,s:f,s:f}", "ready_s", s->ready, "start_s", s->start, "end_s", s->end);
    if (!isnan(s->win_start)) {
        json_object_set_new(j, "window_start_s", json_real(s->win_start));
        json_object_set_new(j, "window_end_s", json_real(s->win_end));
        json_object_set_new(j, "reservation", json_string(s->phase));
    }
    return j;
}

static json_t *run_j(const sim_turbine_run *r) {
    return json_pack("{s:o,s:o,s:f,s:f}", "LES", step_j(&r->les), "HPDA", step_j(&r->hpda),
                     "makespan_min", r->makespan / 60, "submit_to_end_min", r->submit_to_end / 60);
}

/* mean, sample sd, min, max of v[0..n) */
static json_t *stats_j(const double *v, int n, double *mean, double *sd) {
    double s = 0, q = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        s += v[i];
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    *mean = s / n;
    for (int i = 0; i < n; i++)
        q += (v[i] - *mean) * (v[i] - *mean);
    *sd = n > 1 ? sqrt(q / (n - 1)) : 0;
    return json_pack("{s:f,s:f,s:f,s:f}", "mean", *mean, "sd", *sd, "min", lo, "max", hi);
}

static void usage(FILE *f) {
    fprintf(f, "usage: tarema-sim turbine [--seeds N] [--seed N] [--json] [--svg FILE]\n"
               "  WARP's turbine example: planned (reservations) vs plain per-step submission\n"
               "  --seeds N   seeds 1..N (default 10)\n"
               "  --seed N    one seed only\n"
               "  --json      JSON instead of a table\n"
               "  --svg FILE  makespan per seed and strategy as a bar chart\n");
}

static int write_svg(const char *path, const sim_turbine_result *r, int n) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tarema-sim turbine: cannot write %s\n", path);
        return -1;
    }
    double top = 60;
    for (int i = 0; i < n; i++)
        top = fmax(top, fmax(r[i].plain.makespan, r[i].planned.makespan) / 60);
    int w = 80 + n * 40, h = 260;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>\n", w, h);
    fprintf(f, "<text x='10' y='15' font-size='12'>turbine makespan (min) per seed: planned "
               "(blue) vs plain (red); paper: 16 vs 46</text>\n");
    for (int i = 0; i < n; i++) {
        double a = r[i].planned.makespan / 60 / top * 200, b = r[i].plain.makespan / 60 / top * 200;
        int x = 50 + i * 40;
        fprintf(f, "<rect x='%d' y='%.1f' width='15' height='%.1f' fill='steelblue'/>\n", x,
                240 - a, a);
        fprintf(f, "<rect x='%d' y='%.1f' width='15' height='%.1f' fill='firebrick'/>\n", x + 16,
                240 - b, b);
        fprintf(f, "<text x='%d' y='255' font-size='10'>%llu</text>\n", x + 8,
                (unsigned long long)r[i].seed);
    }
    fprintf(f, "<line x1='45' y1='240' x2='%d' y2='240' stroke='black'/>\n</svg>\n", w - 10);
    return fclose(f) == 0 ? 0 : -1;
}

int sim_turbine_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"seeds", required_argument, 0, 'S'}, {"seed", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},        {"svg", required_argument, 0, 'g'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    int nseeds = 10, as_json = 0, ch;
    long first = 1;
    const char *svg = NULL;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "S:s:jg:h", longopts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'S':
            if (sim_cli_count("turbine", "seeds", optarg, 1, 1000, &nseeds) < 0)
                return 2;
            break;
        case 's':
            first = strtol(optarg, &end, 10);
            if (*end || !*optarg || first < 0) {
                fprintf(stderr, "tarema-sim turbine: --seed '%s' is not a non-negative integer\n",
                        optarg);
                return 2;
            }
            nseeds = 1;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'g':
            svg = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    sim_turbine_result *r = calloc((size_t)nseeds, sizeof *r);
    double *v[4];
    for (int k = 0; k < 4; k++)
        v[k] = calloc((size_t)nseeds, sizeof *v[k]);
    if (!r || !v[0] || !v[1] || !v[2] || !v[3]) {
        fprintf(stderr, "tarema-sim turbine: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < nseeds && rc == 0; i++) {
        tm_err err = {0};
        if (sim_turbine_run_seed((uint64_t)(first + i), &r[i], &err) < 0) {
            fprintf(stderr, "tarema-sim turbine: seed %ld: %s\n", first + i, err.msg);
            rc = 1;
        }
        v[0][i] = r[i].planned.makespan / 60;
        v[1][i] = r[i].plain.makespan / 60;
        v[2][i] = r[i].planned.submit_to_end / 60;
        v[3][i] = r[i].plain.submit_to_end / 60;
    }
    if (rc == 0) {
        double m[4], sd[4];
        json_t *st[4];
        for (int k = 0; k < 4; k++)
            st[k] = stats_j(v[k], nseeds, &m[k], &sd[k]);
        if (as_json) {
            json_t *seeds = json_array();
            for (int i = 0; i < nseeds; i++)
                json_array_append_new(
                    seeds,
                    json_pack("{s:I,s:i,s:i,s:s,s:b,s:f,s:o,s:o}", "seed", (json_int_t)r[i].seed,
                              "background_jobs", r[i].background_jobs, "busy_nodes_at_submit",
                              r[i].busy_nodes_at_submit, "solver", r[i].solver, "optimal",
                              r[i].optimal, "planned_end_s", r[i].planned_end_s, "planned",
                              run_j(&r[i].planned), "plain", run_j(&r[i].plain)));
            json_t *j = json_pack("{s:o,s:{s:{s:o,s:o},s:{s:o,s:o}},s:{s:i,s:i}}", "seeds", seeds,
                                  "summary", "planned", "makespan_min", st[0], "submit_to_end_min",
                                  st[2], "plain", "makespan_min", st[1], "submit_to_end_min", st[3],
                                  "paper", "planned_makespan_min", PAPER_PLANNED_MIN,
                                  "plain_makespan_min", PAPER_PLAIN_MIN);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
            json_decref(j);
        } else {
            printf("seed  bg-jobs  busy@submit  planned: makespan submit-to-end (min)  plain: "
                   "makespan submit-to-end (min)\n");
            for (int i = 0; i < nseeds; i++)
                printf("%4llu  %7d  %11d  %17.1f %14.1f  %15.1f %14.1f\n",
                       (unsigned long long)r[i].seed, r[i].background_jobs,
                       r[i].busy_nodes_at_submit, v[0][i], v[2][i], v[1][i], v[3][i]);
            printf("mean (sd)                     planned: makespan %.1f (%.1f), submit-to-end "
                   "%.1f (%.1f)\n",
                   m[0], sd[0], m[2], sd[2]);
            printf("                              plain:   makespan %.1f (%.1f), submit-to-end "
                   "%.1f (%.1f)\n",
                   m[1], sd[1], m[3], sd[3]);
            printf("paper (WARP, Table 5): makespan %d (planned) vs %d (plain) minutes\n",
                   PAPER_PLANNED_MIN, PAPER_PLAIN_MIN);
            for (int k = 0; k < 4; k++)
                json_decref(st[k]);
        }
        if (svg && write_svg(svg, r, nseeds) < 0)
            rc = 1;
    }
    for (int k = 0; k < 4; k++)
        free(v[k]);
    free(r);
    return rc;
}
