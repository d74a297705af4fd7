/* asa_cli.c: `tarema-sim asa --scenario figure5 [--policy naive|tuned] [--loss hit|time]
 * [--seed N] [--json] [--svg FILE]`: runs the ASA paper's Figure 5 scenario and prints the hit
 * ratio per segment (a table, or JSON with every iteration), optionally drawing the SVG. */
#include "sim/asa_cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/asa_scenario.h"
#include "sim/cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tarema-sim asa --scenario figure5 [options]\n"
               "  --policy P   naive (the paper's default ASA) or tuned (each observed wait\n"
               "               replayed 50 times, section 4.5); default tuned\n"
               "  --loss L     hit (definition (3), the paper's Figure 5) or time (idle or late\n"
               "               time relative to the wait, section 3.2); default hit\n"
               "  --seed N     the learner's random draws (default 1)\n"
               "  --json       print JSON with every iteration instead of a table\n"
               "  --svg FILE   draw the true wait and the estimate\n");
}

int sim_asa_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"scenario", required_argument, 0, 'S'}, {"policy", required_argument, 0, 'p'},
        {"loss", required_argument, 0, 'L'},     {"seed", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},           {"svg", required_argument, 0, 'g'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *scenario = NULL, *svg = NULL;
    asa_policy policy = ASA_POLICY_TUNED;
    asa_loss_kind loss = ASA_LOSS_HIT;
    unsigned long long seed = 1;
    int as_json = 0, ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'S':
            scenario = optarg;
            break;
        case 'p':
            if (asa_policy_parse(optarg, &policy) < 0) {
                fprintf(stderr, "tarema-sim asa: unknown policy '%s' (naive or tuned)\n", optarg);
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
        usage(stderr);
        return 2;
    }
    if (strcmp(scenario, "figure5") != 0) {
        fprintf(stderr, "tarema-sim asa: unknown scenario '%s' (figure5)\n", scenario);
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
