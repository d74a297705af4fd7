/* backfill_cli.c: `tarema-sim backfill`: the job mix of backfill_sim.h under first fit, strict
 * FIFO, EASY and conservative backfill, averaged over seeds, as a table or JSON, and a figure. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/args.h"
#include "sim/backfill_sim.h"
#include "sim/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tarema-sim backfill [--nodes N] [--cores N] [--jobs N] [--load X] [--wide X]\n"
            "                           [--overestimate X] [--seeds N] [--seed N] [--policy P]\n"
            "                           [--json] [--svg FILE]\n"
            "  narrow pods and wide pods/gangs under first-fit (nothing held), fifo, easy\n"
            "  (backfill.reserveDepth 1) and conservative (reserveDepth all); docs/backfill.md\n"
            "  --nodes N          identical nodes (default 16)\n"
            "  --cores N          cores per node (default 8)\n"
            "  --jobs N           jobs per seed (default 2000)\n"
            "  --load X           offered load, share of the cluster's cores (default 0.9)\n"
            "  --wide X           share of wide jobs (default 0.1)\n"
            "  --overestimate X   runtime estimates are real x U[1, X] (default 3)\n"
            "  --seeds N          seeds 1..N, results averaged (default 5)\n"
            "  --seed N           one seed only\n"
            "  --policy P         node choice (default fill-nodes)\n"
            "  --json             JSON instead of a table\n"
            "  --svg FILE         utilisation and waits per discipline as bar charts\n");
}

/* --OPT ARG as a number from lo to hi (lib's tm_arg_double); -1 after printing why. */
static int parse_real(const char *opt, const char *arg, double lo, double hi, double *out) {
    tm_err err = {0};
    if (tm_arg_double(opt, arg, lo, hi, out, &err) == 0)
        return 0;
    fprintf(stderr, "tarema-sim backfill: %s\n", err.msg);
    return -1;
}

/* Bar charts: utilisation (%) and waits (min: mean, p99, wide jobs' mean) per discipline. */
static int write_svg(const char *path, const sim_bf_mix *mix, int nseeds, const sim_bf_result *r) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tarema-sim backfill: cannot write %s\n", path);
        return -1;
    }
    static const char *const colour[SIM_BF_MODES] = {"#b0b0b0", "#e08a3c", "#3c78b4", "#5aa05a"};
    int w = 760, h = 330;
    fprintf(f,
            "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
            "font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
            w, h);
    fprintf(f,
            "<text x='10' y='18' font-size='13'>tarema-sim backfill: %d nodes x %d cores, %d "
            "jobs, load %.2f, %.0f %% wide, estimates up to %.1fx, mean of %d seeds</text>\n",
            mix->nodes, mix->cores, mix->jobs, mix->load, mix->wide_share * 100, mix->overestimate,
            nseeds);
    for (int m = 0; m < SIM_BF_MODES; m++) {
        fprintf(f, "<rect x='%d' y='28' width='12' height='12' fill='%s'/>", 20 + m * 140,
                colour[m]);
        fprintf(f, "<text x='%d' y='39' font-size='12'>%s</text>\n", 36 + m * 140,
                sim_bf_mode_name(m));
    }
    /* left panel: utilisation */
    int base = 300, ph = 220;
    fprintf(f, "<text x='20' y='62' font-size='12'>utilisation (%%)</text>\n");
    for (int m = 0; m < SIM_BF_MODES; m++) {
        double v = r[m].utilisation * 100, bh = v / 100 * ph;
        fprintf(f, "<rect x='%d' y='%.1f' width='30' height='%.1f' fill='%s'/>", 30 + m * 36,
                base - bh, bh, colour[m]);
        fprintf(f, "<text x='%d' y='%.1f' font-size='10'>%.1f</text>\n", 31 + m * 36, base - bh - 3,
                v);
    }
    fprintf(f, "<line x1='25' y1='%d' x2='180' y2='%d' stroke='black'/>\n", base, base);
    /* right panel: waits in minutes */
    static const char *const metric[3] = {"mean wait", "p99 wait", "wide jobs' mean wait"};
    double top = 1;
    for (int m = 0; m < SIM_BF_MODES; m++)
        top = fmax(top, fmax(r[m].wait_p99_s, fmax(r[m].wait_mean_s, r[m].wide_wait_mean_s)) / 60);
    fprintf(f, "<text x='220' y='62' font-size='12'>waits (min)</text>\n");
    for (int k = 0; k < 3; k++) {
        int x0 = 230 + k * 175;
        fprintf(f, "<text x='%d' y='%d' font-size='11'>%s</text>\n", x0, base + 16, metric[k]);
        for (int m = 0; m < SIM_BF_MODES; m++) {
            double v = (k == 0   ? r[m].wait_mean_s
                        : k == 1 ? r[m].wait_p99_s
                                 : r[m].wide_wait_mean_s) /
                       60;
            double bh = v / top * ph;
            fprintf(f, "<rect x='%d' y='%.1f' width='30' height='%.1f' fill='%s'/>", x0 + m * 36,
                    base - bh, bh, colour[m]);
            fprintf(f, "<text x='%d' y='%.1f' font-size='10'>%.1f</text>\n", x0 + m * 36,
                    base - bh - 3, v);
        }
    }
    fprintf(f, "<line x1='225' y1='%d' x2='%d' y2='%d' stroke='black'/>\n</svg>\n", base, w - 10,
            base);
    return fclose(f) == 0 ? 0 : -1;
}

int sim_backfill_main(int argc, char **argv) {
    static const struct option longopts[] = {{"nodes", required_argument, 0, 'n'},
                                             {"cores", required_argument, 0, 'c'},
                                             {"jobs", required_argument, 0, 'J'},
                                             {"load", required_argument, 0, 'l'},
                                             {"wide", required_argument, 0, 'w'},
                                             {"overestimate", required_argument, 0, 'o'},
                                             {"seeds", required_argument, 0, 'S'},
                                             {"seed", required_argument, 0, 's'},
                                             {"policy", required_argument, 0, 'p'},
                                             {"json", no_argument, 0, 'j'},
                                             {"svg", required_argument, 0, 'g'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    sim_bf_mix mix = sim_bf_mix_default();
    int nseeds = 5, as_json = 0, ch;
    unsigned long long first = 1;
    const char *svg = NULL;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "n:c:J:l:w:o:S:s:p:jg:h", longopts, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'n':
            bad = sim_cli_count("backfill", "nodes", optarg, 1, 10000, &mix.nodes);
            break;
        case 'c':
            bad = sim_cli_count("backfill", "cores", optarg, 1, 1024, &mix.cores);
            break;
        case 'J':
            bad = sim_cli_count("backfill", "jobs", optarg, 1, 1000000, &mix.jobs);
            break;
        case 'l':
            bad = parse_real("load", optarg, 0.01, 10, &mix.load);
            break;
        case 'w':
            bad = parse_real("wide", optarg, 0, 1, &mix.wide_share);
            break;
        case 'o':
            bad = parse_real("overestimate", optarg, 1, 100, &mix.overestimate);
            break;
        case 'S':
            bad = sim_cli_count("backfill", "seeds", optarg, 1, 1000, &nseeds);
            break;
        case 's':
            bad = sim_cli_seed("backfill", optarg, &first);
            nseeds = 1;
            break;
        case 'p':
            mix.policy = optarg;
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
        if (bad)
            return 2;
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    sim_bf_result mean[SIM_BF_MODES] = {0};
    for (int m = 0; m < SIM_BF_MODES; m++) {
        for (int k = 0; k < nseeds; k++) {
            sim_bf_mix one = mix;
            one.seed = first + (unsigned long long)k;
            sim_bf_result r;
            tm_err err = {0};
            if (sim_bf_run(&one, (sim_bf_mode)m, &r, &err) != 0) {
                fprintf(stderr, "tarema-sim backfill: %s\n", err.msg);
                return 1;
            }
            mean[m].makespan_s += r.makespan_s / nseeds;
            mean[m].utilisation += r.utilisation / nseeds;
            mean[m].wait_mean_s += r.wait_mean_s / nseeds;
            mean[m].wait_p99_s += r.wait_p99_s / nseeds;
            mean[m].wide_wait_mean_s += r.wide_wait_mean_s / nseeds;
            mean[m].wide_wait_max_s += r.wide_wait_max_s / nseeds;
            mean[m].narrow_wait_mean_s += r.narrow_wait_mean_s / nseeds;
            mean[m].backfilled += r.backfilled;
        }
        mean[m].mode = (sim_bf_mode)m;
    }
    if (as_json) {
        json_t *a = json_array();
        for (int m = 0; m < SIM_BF_MODES; m++)
            json_array_append_new(
                a,
                json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I}", "mode", sim_bf_mode_name(m),
                          "utilisation", mean[m].utilisation, "makespan_s", mean[m].makespan_s,
                          "wait_mean_s", mean[m].wait_mean_s, "wait_p99_s", mean[m].wait_p99_s,
                          "wide_wait_mean_s", mean[m].wide_wait_mean_s, "wide_wait_max_s",
                          mean[m].wide_wait_max_s, "narrow_wait_mean_s", mean[m].narrow_wait_mean_s,
                          "backfilled", (json_int_t)mean[m].backfilled));
        sim_cli_print_json(json_pack("{s:i,s:i,s:i,s:f,s:f,s:f,s:i,s:s,s:o}", "nodes", mix.nodes,
                                     "cores", mix.cores, "jobs", mix.jobs, "load", mix.load, "wide",
                                     mix.wide_share, "overestimate", mix.overestimate, "seeds",
                                     nseeds, "policy", mix.policy, "modes", a),
                           JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    } else {
        printf("%d nodes x %d cores, %d jobs, load %.2f, %.0f %% wide, estimates up to %.1fx, "
               "policy %s, mean of %d seed(s)\n",
               mix.nodes, mix.cores, mix.jobs, mix.load, mix.wide_share * 100, mix.overestimate,
               mix.policy, nseeds);
        printf("%-13s %6s %11s %10s %10s %15s %14s %16s %11s\n", "discipline", "util%",
               "makespan_s", "wait_mean", "wait_p99", "wide_wait_mean", "wide_wait_max",
               "narrow_wait_mean", "backfilled");
        for (int m = 0; m < SIM_BF_MODES; m++)
            printf("%-13s %6.1f %11.0f %10.1f %10.1f %15.1f %14.1f %16.1f %11ld\n",
                   sim_bf_mode_name(m), mean[m].utilisation * 100, mean[m].makespan_s,
                   mean[m].wait_mean_s, mean[m].wait_p99_s, mean[m].wide_wait_mean_s,
                   mean[m].wide_wait_max_s, mean[m].narrow_wait_mean_s, mean[m].backfilled);
    }
    if (svg && write_svg(svg, &mix, nseeds, mean) < 0)
        return 1;
    return 0;
}
