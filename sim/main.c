/* main.c: tarema-sim, the command line of the simulator: compare scheduling policies on a
 * simulated heterogeneous cluster with the scheduler's own policy code.
 *
 *   tarema-sim --cluster C.yaml --workload W.yaml [--policy NAME|all] [--seed N] [--isolate]
 *              [--contention] [--json] [--gantt FILE.svg] [--no-shuffle] [--ideal]
 *              [--noise SIGMA] [--seeds N]
 *   tarema-sim sizing --dataset NAME|FILE [--seed N] [--json] [--svg FILE]   (sim/sizing_cli.h)
 *   tarema-sim asa --scenario figure5 [--policy naive|tuned] [--json] [--svg FILE] (sim/asa_cli.h)
 *   tarema-sim federation --setup 1|2 [--seed N] [--json]   (sim/federation.h)
 *   tarema-sim turbine [--seeds N] [--json] [--svg FILE]    (sim/turbine.h, docs/planner.md)
 *   tarema-sim backfill [--nodes N] [--jobs N] [--load X] [--json] [--svg FILE]
 *                                                            (sim/backfill_sim.h, docs/backfill.md)
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/log.h"
#include "scheduler/plugins/policy/policy.h"
#include "sim/asa_cli.h"
#include "sim/cli.h"
#include "sim/engine.h"
#include "sim/federation.h"
#include "sim/model.h"
#include "sim/report.h"
#include "sim/sizing_cli.h"
#include "sim/turbine.h"
#include "sim/backfill_sim.h"

static void usage(FILE *f) {
    fprintf(
        f, "usage: tarema-sim --cluster FILE --workload FILE [options]\n"
           "  --policy NAME     tarema, round-robin, fair, fill-nodes, sjfn, adaptive (beyond "
           "the paper),\n"
           "                    or all (default tarema)\n"
           "  --seed N          node-order shuffle and bench draws (default 1)\n"
           "  --isolate         run each workflow alone with its own history, one after the "
           "other\n"
           "                    (the paper's design); default: all workflows share the cluster\n"
           "  --contention      with --ideal: the ideal model's cpu/memory contention term\n"
           "                    (the calibrated model has contention on; docs/simulation.md)\n"
           "  --ideal           the ideal model: no contention, no noise, one node shuffle\n"
           "  --noise SIGMA     lognormal run-to-run noise of task runtimes (default 0.09, 0 off)\n"
           "  --history-runs N  runs of each workflow before the measured ones that only build\n"
           "                    history (the paper's protocol; default 1, --ideal 0)\n"
           "  --seeds N         run seeds 1..N and report mean and spread over them\n"
           "  --preemption      a task that fits nowhere evicts running tasks of lower priority\n"
           "                    (workflow key priority; docs/preemption.md); a gang preempts\n"
           "                    and is evicted as one unit; off by default\n"
           "  --json            print JSON instead of tables\n"
           "  --gantt FILE.svg  draw which task ran where and when (with several policies:\n"
           "                    FILE-POLICY.svg for each)\n"
           "  --no-shuffle      keep the cluster file's node order\n"
           "  --log-level L     debug, info, warn, error (default warn)\n"
           "   or: tarema-sim sizing --dataset NAME|FILE [--json] [--svg FILE]   (sizing --help)\n"
           "   or: tarema-sim asa --scenario figure5 [--policy naive|tuned] [--seed N] [--json]\n"
           "                      [--svg FILE]                                   (asa --help)\n"
           "   or: tarema-sim federation --setup 1|2 [--seed N] [--json]         (docs/dam.md)\n"
           "   or: tarema-sim turbine [--seeds N] [--json] [--svg FILE]   (docs/planner.md)\n"
           "   or: tarema-sim backfill [--jobs N] [--load X] [--json] [--svg FILE]\n"
           "                                                      (backfill --help, "
           "docs/backfill.md)\n");
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

/* --seeds N: every policy under seeds 1..N (cluster bench draws, shuffles and noise all
 * follow the seed), reported as mean and spread over the seeds. */
static int run_seeds(const char *cluster_path, const char *workload_path, const char *policy,
                     int isolate, int as_json, int nseeds, const sim_opts *base) {
    const char *const *names = sched_policy_names();
    const char *single[2] = {policy, NULL};
    const char *const *policies = strcmp(policy, "all") == 0 ? names : single;
    int n = 0;
    while (policies[n])
        n++;
    sim_result **rs = calloc((size_t)n * (size_t)nseeds, sizeof *rs);
    sim_cluster **cs = calloc((size_t)nseeds, sizeof *cs);
    sim_workload **ws = calloc((size_t)nseeds, sizeof *ws);
    int rc = rs && cs && ws ? 0 : 1;
    tm_err err = {0};
    for (int k = 0; k < nseeds && rc == 0; k++) {
        sim_opts o = *base;
        o.seed = (uint64_t)k + 1;
        cs[k] = sim_cluster_load(cluster_path, o.seed, &err);
        ws[k] = cs[k] ? sim_workload_load(workload_path, cs[k], &err) : NULL;
        if (!ws[k]) {
            fprintf(stderr, "tarema-sim: %s\n", err.msg);
            rc = 1;
        }
        for (int j = 0; j < n && rc == 0; j++) {
            o.policy = policies[j];
            sim_result *r = isolate ? sim_run_isolated(cs[k], ws[k], &o, &err)
                                    : sim_run(cs[k], ws[k], &o, &err);
            if (!r) {
                fprintf(stderr, "tarema-sim: %s\n", err.msg);
                rc = 1;
            }
            rs[k * n + j] = r;
        }
    }
    if (rc == 0) {
        if (as_json) {
            json_t *j = sim_report_seeds_json(rs, n, nseeds);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
            json_decref(j);
        } else {
            sim_report_seeds_table(stdout, rs, n, nseeds);
        }
    }
    for (int k = 0; rs && k < n * nseeds; k++)
        sim_result_free(rs[k]);
    for (int k = 0; k < nseeds && cs && ws; k++) {
        sim_workload_free(ws[k]);
        sim_cluster_free(cs[k]);
    }
    free(rs);
    free(cs);
    free(ws);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "sizing") == 0)
        return sim_sizing_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "asa") == 0) /* subcommand: ASA convergence (docs/asa.md) */
        return sim_asa_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "federation") == 0) /* DAM simulation (docs/dam.md) */
        return sim_federation_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "backfill") == 0) /* queue disciplines (docs/backfill.md) */
        return sim_backfill_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "turbine") == 0) /* WARP's turbine example (docs/planner.md) */
        return sim_turbine_main(argc - 1, argv + 1);
    static const struct option longopts[] = {{"cluster", required_argument, 0, 'c'},
                                             {"workload", required_argument, 0, 'w'},
                                             {"policy", required_argument, 0, 'p'},
                                             {"seed", required_argument, 0, 's'},
                                             {"isolate", no_argument, 0, 'i'},
                                             {"contention", no_argument, 0, 'C'},
                                             {"json", no_argument, 0, 'j'},
                                             {"gantt", required_argument, 0, 'g'},
                                             {"no-shuffle", no_argument, 0, 'N'},
                                             {"log-level", required_argument, 0, 'l'},
                                             {"help", no_argument, 0, 'h'},
                                             {"ideal", no_argument, 0, 'I'},
                                             {"noise", required_argument, 0, 'n'},
                                             {"seeds", required_argument, 0, 'S'},
                                             {"history-runs", required_argument, 0, 'H'},
                                             {"preemption", no_argument, 0, 'P'},
                                             {0, 0, 0, 0}};
    const char *cluster_path = NULL, *workload_path = NULL, *policy = "tarema", *gantt = NULL;
    int isolate = 0, as_json = 0, ideal = 0, contention = 0, nseeds = 0, hruns = -1;
    double noise = NAN;
    sim_opts o;
    sim_opts_default(&o);
    tm_log_configure("warn", "text");
    int ch;
    while ((ch = getopt_long(argc, argv, "c:w:p:s:iCjg:Nl:hIn:S:H:P", longopts, NULL)) != -1) {
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
        case 's': {
            unsigned long long seed;
            if (sim_cli_seed(NULL, optarg, &seed) < 0)
                return 2;
            o.seed = seed;
            break;
        }
        case 'i':
            isolate = 1;
            break;
        case 'C':
            contention = 1;
            break;
        case 'I':
            ideal = 1;
            break;
        case 'n':
            noise = strtod(optarg, &end);
            if (*end || !*optarg || !(noise >= 0) || noise > 2) {
                fprintf(stderr, "tarema-sim: --noise '%s' is not a sigma from 0 to 2\n", optarg);
                return 2;
            }
            break;
        case 'S':
            if (sim_cli_count(NULL, "seeds", optarg, 1, 1000, &nseeds) < 0)
                return 2;
            break;
        case 'H':
            if (sim_cli_count(NULL, "history-runs", optarg, 0, 100, &hruns) < 0)
                return 2;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'P':
            o.preemption = true;
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
    if (ideal) { /* the ideal model, keeping what the options set (seed, node order) */
        sim_opts m;
        sim_opts_ideal(&m);
        m.seed = o.seed;
        m.shuffle = o.shuffle;
        m.contention = contention;
        m.preemption = o.preemption;
        o = m;
    }
    if (hruns >= 0)
        o.history_runs = hruns;
    if (!isnan(noise))
        o.noise_sigma = noise;
    if (nseeds > 0)
        return run_seeds(cluster_path, workload_path, policy, isolate, as_json, nseeds, &o);
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
