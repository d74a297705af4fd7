/* sizing_cli.c: `tarema-sim sizing --dataset NAME|FILE [--seed N] [--json] [--svg FILE]
 * [--cores N] [--cold-start N]`: every sizing strategy at every level on one dataset (see
 * sizing_eval.h). */
#include "sim/sizing_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli.h"
#include "sim/sizing_eval.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tarema-sim sizing --dataset NAME|FILE [options]\n"
               "  --dataset D   normal, uniform, exponential, bimodal, trimodal (2,000 synthetic\n"
               "                tasks, docs/sizing.md), or a Nextflow trace / lotaru CSV file\n"
               "  --seed N      synthetic draws (default 1)\n"
               "  --cores N     cores every synthetic task uses (default 3; the paper varies only\n"
               "                memory, see docs/sizing.md)\n"
               "  --cold-start N  tasks per key on the whole machine before the history is used\n"
               "                (default 10, the paper's; the webhook uses 2)\n"
               "  --json        JSON instead of a table\n"
               "  --svg FILE    the paper's Figure 6: peaks and bucket delimiters over time\n");
}

static int is_synthetic(const char *name) {
    for (const char *const *n = sim_sz_synthetic_names(); *n; n++)
        if (strcmp(*n, name) == 0)
            return 1;
    return 0;
}

int sim_sizing_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"dataset", required_argument, 0, 'd'}, {"seed", required_argument, 0, 's'},
        {"cores", required_argument, 0, 'c'},   {"cold-start", required_argument, 0, 'C'},
        {"json", no_argument, 0, 'j'},          {"svg", required_argument, 0, 'g'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *dataset = NULL, *svg = NULL;
    unsigned long long seed = 1;
    double cores = 3;
    int as_json = 0, ch, cold_start = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "d:s:c:C:jg:h", longopts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'd':
            dataset = optarg;
            break;
        case 's':
            if (sim_cli_seed("sizing", optarg, &seed) < 0)
                return 2;
            break;
        case 'c':
            cores = strtod(optarg, &end);
            if (*end || !*optarg || !(cores >= 0 && cores <= 16)) {
                fprintf(stderr, "tarema-sim sizing: --cores '%s' is not a number in [0, 16]\n",
                        optarg);
                return 2;
            }
            break;
        case 'C': {
            long v = strtol(optarg, &end, 10);
            if (*end || !*optarg || v < 1 || v > 100000) {
                fprintf(stderr,
                        "tarema-sim sizing: --cold-start '%s' is not a number in "
                        "1..100000\n",
                        optarg);
                return 2;
            }
            cold_start = (int)v;
            break;
        }
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
    if (!dataset || optind < argc) {
        if (optind < argc)
            fprintf(stderr, "tarema-sim sizing: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "tarema-sim sizing: --dataset is required\n");
        usage(stderr);
        return 2;
    }
    tm_err err = {0};
    sim_sz_dataset d;
    int synth = is_synthetic(dataset);
    if ((synth ? sim_sz_synthetic(&d, dataset, seed, cores, &err)
               : sim_sz_load_file(&d, dataset, &err)) < 0) {
        fprintf(stderr, "tarema-sim sizing: %s\n", err.msg);
        return 1;
    }
    d.cold_start = cold_start;
    sim_sz_result r[SIM_SZ_MAX_RESULTS];
    sim_sz_recommendation *rec = NULL;
    int n = sim_sz_evaluate_all(&d, r, &err), rc = n < 0;
    if (rc == 0 && !synth) {
        rec = calloc((size_t)d.ntypes, sizeof *rec);
        if (!rec || sim_sz_recommend(&d, rec, &err) < 0) {
            if (!rec)
                snprintf(err.msg, sizeof err.msg, "out of memory");
            rc = 1;
        }
    }
    if (rc == 0 && svg && sim_sz_svg(svg, &d, &err) < 0)
        rc = 1;
    if (rc == 0) {
        if (as_json) {
            sim_cli_print_json(sim_sz_report_json(&d, r, n, rec),
                               JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        } else {
            sim_sz_report_table(stdout, &d, r, n, rec);
        }
    } else {
        fprintf(stderr, "tarema-sim sizing: %s\n", err.msg);
    }
    free(rec);
    sim_sz_dataset_free(&d);
    return rc;
}
