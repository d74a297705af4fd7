/* asa_cli.c: `tarema-sim asa --scenario figure5 [--policy naive|tuned] [--loss hit|time]
 * [--seed N] [--json] [--svg FILE]`: runs the ASA paper's Figure 5 scenario and prints the hit
 * ratio per segment (a table, or JSON with every iteration), optionally drawing the SVG.
 * `tarema-sim asa --scenario tables [--runs N] [--seed N] [--json]`: the paper's Tables 1 and 2
 * (Big Job, per-stage, ASA pro-active and planner reservations; sim/asa_tables.h). */
#include "sim/asa_cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/asa_scenario.h"
#include "sim/asa_tables.h"
#include "sim/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tarema-sim asa --scenario figure5|tables [options]\n"
            "  tables: Tables 1 and 2 (Montage, BLAST, Statistics at 28-640 cores; Big Job,\n"
            "          per-stage, ASA pro-active, planner reservations); --runs N (default 20);\n"
            "          --early hold (default: a grant before the predecessor ends holds its\n"
            "          cores) or free (the paper's job dependencies: it costs nothing)\n"
            "  --policy P   naive (the paper's default ASA), tuned (each observed wait\n"
            "               replayed 50 times, section 4.5; default) or full (ours: every\n"
            "               alternative charged against each observed wait)\n"
            "  --loss L     hit (definition (3), the paper's Figure 5) or time (idle or late\n"
            "               time relative to the wait, section 3.2); default hit\n"
            "  --seed N     the learner's random draws (default 1)\n"
            "  --json       print JSON with every iteration instead of a table\n"
            "  --svg FILE   draw the true wait and the estimate\n");
}

static int run_tables(int runs, unsigned long long seed, asa_policy policy, int free_early,
                      int as_json) {
    asa_tables *t = malloc(sizeof *t);
    tm_err err = {0};
    if (!t || asa_tables_run(t, runs, seed, (int)policy, free_early, &err) < 0) {
        fprintf(stderr, "tarema-sim asa: %s\n", t ? err.msg : "out of memory");
        free(t);
        return 1;
    }
    if (as_json)
        sim_cli_print_json(asa_tables_json(t), JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    else
        asa_tables_print(stdout, t);
    free(t);
    return 0;
}

int sim_asa_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"scenario", required_argument, 0, 'S'}, {"policy", required_argument, 0, 'p'},
        {"loss", required_argument, 0, 'L'},     {"seed", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},           {"svg", required_argument, 0, 'g'},
        {"runs", required_argument, 0, 'r'},     {"early", required_argument, 0, 'e'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *scenario = NULL, *svg = NULL;
    asa_policy policy = ASA_POLICY_TUNED;
    asa_loss_kind loss = ASA_LOSS_HIT;
    unsigned long long seed = 1;
    int as_json = 0, ch, runs = 20, free_early = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'S':
            scenario = optarg;
            break;
        case 'p':
            if (asa_policy_parse(optarg, &policy) < 0) {
                fprintf(stderr, "tarema-sim asa: unknown policy '%s' (naive, tuned or full)\n",
                        optarg);
                return 2;
            }
            break;
        case 'L':
            if (asa_loss_parse(optarg, &loss) < 0) {
                fprintf(stderr, "tarema-sim asa: unknown loss '%s' (hit or time)\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (sim_cli_seed("asa", optarg, &seed) < 0)
                return 2;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'e':
            if (strcmp(optarg, "hold") != 0 && strcmp(optarg, "free") != 0) {
                fprintf(stderr, "tarema-sim asa: --early '%s' is not hold or free\n", optarg);
                return 2;
            }
            free_early = strcmp(optarg, "free") == 0;
            break;
        case 'r': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 1000) {
                fprintf(stderr, "tarema-sim asa: --runs '%s' is not a number in 1..1000\n", optarg);
                return 2;
            }
            runs = (int)v;
            break;
        }
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
    if (optind < argc || !scenario) {
        if (optind < argc)
            fprintf(stderr, "tarema-sim asa: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "tarema-sim asa: --scenario is required (figure5 or tables)\n");
        usage(stderr);
        return 2;
    }
    if (strcmp(scenario, "tables") == 0)
        return run_tables(runs, seed, policy, free_early, as_json);
    if (strcmp(scenario, "figure5") != 0) {
        fprintf(stderr, "tarema-sim asa: unknown scenario '%s' (figure5 or tables)\n", scenario);
        return 2;
    }
    asa_config cfg;
    asa_config_default(&cfg, policy);
    cfg.loss = loss;
    tm_err err = {0};
    asa_fig5 *f = malloc(sizeof *f);
    if (!f || asa_fig5_run(f, &cfg, seed, &err) < 0) {
        fprintf(stderr, "tarema-sim asa: %s\n", f ? err.msg : "out of memory");
        free(f);
        return 1;
    }
    if (as_json) {
        sim_cli_print_json(asa_fig5_json(f), JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    } else {
        asa_fig5_table(stdout, f);
    }
    int rc = 0;
    if (svg && asa_fig5_svg(svg, f, &err) < 0) {
        fprintf(stderr, "tarema-sim asa: %s\n", err.msg);
        rc = 1;
    }
    free(f);
    return rc;
}
