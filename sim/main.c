/* main.c: tarema-sim, the command line of the simulator: compare scheduling policies on a
 * simulated heterogeneous cluster with the scheduler's own policy code.
 *
 *   tarema-sim --cluster C.yaml --workload W.yaml [--policy NAME|all] [--seed N] [--isolate]
 *              [--contention] [--json] [--gantt FILE.svg] [--no-shuffle]
 *   tarema-sim sizing --dataset NAME|FILE [--seed N] [--json] [--svg FILE]   (sim/sizing_cli.h)
 *   tarema-sim asa --scenario figure5 [--policy naive|tuned] [--json] [--svg FILE] (sim/asa_cli.h)
 *   tarema-sim federation --setup 1|2 [--seed N] [--json]   (sim/federation.h)
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/log.h"
#include "scheduler/policy.h"
#include "sim/asa_cli.h"
#include "sim/engine.h"
#include "sim/federation.h"
#include "sim/model.h"
#include "sim/report.h"
#include "sim/sizing_cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tarema-sim --cluster FILE --workload FILE [options]\n"
            "  --policy NAME     tarema, round-robin, fair, fill-nodes, sjfn, or all (default "
            "tarema)\n"
            "  --seed N          node-order shuffle and bench draws (default 1)\n"
            "  --isolate         run each workflow alone with its own history, one after the "
            "other\n"
            "                    (the paper's design); default: all workflows share the cluster\n"
            "  --contention      slow down co-located tasks that oversubscribe cpu or memory "
            "bandwidth\n"
            "  --json            print JSON instead of tables\n"
            "  --gantt FILE.svg  draw which task ran where and when (with several policies:\n"
            "                    FILE-POLICY.svg for each)\n"
            "  --no-shuffle      keep the cluster file's node order\n"
            "  --log-level L     debug, info, warn, error (default warn)\n"
            "   or: tarema-sim sizing --dataset NAME|FILE [--json] [--svg FILE]   (sizing --help)\n"
            "   or: tarema-sim asa --scenario figure5 [--policy naive|tuned] [--seed N] [--json]\n"
            "                      [--svg FILE]                                   (asa --help)\n"
            "   or: tarema-sim federation --setup 1|2 [--seed N] [--json]         (docs/dam.md)\n");
}

/* The Gantt file of one policy: FILE itself for a single policy, else FILE with "-POLICY"
 * before its .svg extension (g.svg -> g-tarema.svg), one chart per policy. */
static void gantt_path(const char *file, const char *policy, char *out, size_t size) {
    size_t n = strlen(file);
    if (!policy)
        snprintf(out, size, "%s", file);
    else if (n > 4 && strcmp(file + n - 4, ".svg") == 0)
        snprintf(out, size, "%.*s-%s.svg", (int)(n - 4), file, policy);
    else
        snprintf(out, size, "%s-%s", file, policy);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "sizing") == 0)
        return sim_sizing_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "asa") == 0) /* subcommand: ASA convergence (docs/asa.md) */
        return sim_asa_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "federation") == 0) /* DAM simulation (docs/dam.md) */
        return sim_federation_main(argc - 1, argv + 1);
    static const struct option longopts[] = {
        {"cluster", required_argument, 0, 'c'}, {"workload", required_argument, 0, 'w'},
        {"policy", required_argument, 0, 'p'},  {"seed", required_argument, 0, 's'},
        {"isolate", no_argument, 0, 'i'},       {"contention", no_argument, 0, 'C'},
        {"json", no_argument, 0, 'j'},          {"gantt", required_argument, 0, 'g'},
        {"no-shuffle", no_argument, 0, 'N'},    {"log-level", required_argument, 0, 'l'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    const char *cluster_path = NULL, *workload_path = NULL, *policy = "tarema", *gantt = NULL;
    int isolate = 0, as_json = 0;
    sim_opts o;
    sim_opts_default(&o);
    tm_log_configure("warn", "text");
    int ch;
    while ((ch = getopt_long(argc, argv, "c:w:p:s:iCjg:Nl:h", longopts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'c':
            cluster_path = optarg;
            break;
        case 'w':
            workload_path = optarg;
            break;
        case 'p':
            policy = optarg;
            break;
        case 's':
            o.seed = strtoull(optarg, &end, 10);
            if (*end || !*optarg || optarg[0] == '-') { /* strtoull would wrap "-1" */
                fprintf(stderr, "tarema-sim: --seed '%s' is not a non-negative integer\n", optarg);
                return 2;
            }
            break;
        case 'i':
            isolate = 1;
            break;
        case 'C':
            o.contention = true;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'g':
            gantt = optarg;
            break;
        case 'N':
            o.shuffle = false;
            break;
        case 'l':
            if (tm_log_configure(optarg, "text") < 0) {
                fprintf(stderr, "tarema-sim: unknown log level '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!cluster_path || !workload_path || optind < argc) {
        usage(stderr);
        return 2;
    }
    const char *const *names = sched_policy_names();
    const char *single[2] = {policy, NULL};
    const char *const *policies = strcmp(policy, "all") == 0 ? names : single;
    tm_err err = {0};
    sim_cluster *c = sim_cluster_load(cluster_path, o.seed, &err);
    sim_workload *w = c ? sim_workload_load(workload_path, c, &err) : NULL;
    if (!w) {
        fprintf(stderr, "tarema-sim: %s\n", err.msg);
        sim_cluster_free(c);
        return 1;
    }
    int n = 0;
    while (policies[n])
        n++;
    sim_result **rs = calloc((size_t)n, sizeof *rs);
    int rc = rs ? 0 : 1;
    o.record_tasks = gantt != NULL;
    for (int i = 0; i < n && rc == 0; i++) {
        o.policy = policies[i];
        rs[i] = isolate ? sim_run_isolated(c, w, &o, &err) : sim_run(c, w, &o, &err);
        if (!rs[i]) {
            fprintf(stderr, "tarema-sim: %s\n", err.msg);
            rc = 1;
        }
    }
    if (rc == 0) {
        if (as_json) {
            json_t *j = n == 1 ? sim_report_json(rs[0]) : sim_report_compare_json(rs, n);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
            json_decref(j);
        } else {
            for (int i = 0; i < n; i++) {
                sim_report_table(stdout, rs[i]);
                fputc('\n', stdout);
            }
            if (n > 1)
                sim_report_compare_table(stdout, rs, n);
        }
        for (int i = 0; gantt && i < n && rc == 0; i++) {
            char path[4096];
            gantt_path(gantt, n > 1 ? rs[i]->policy : NULL, path, sizeof path);
            if (sim_report_gantt(path, rs[i], &err) < 0) {
                fprintf(stderr, "tarema-sim: %s\n", err.msg);
                rc = 1;
            }
        }
    }
    for (int i = 0; rs && i < n; i++)
        sim_result_free(rs[i]);
    free(rs);
    sim_workload_free(w);
    sim_cluster_free(c);
    return rc;
}
