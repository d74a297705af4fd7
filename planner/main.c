/* main.c: tarema-planner, the workflow reservation planner's command line (WARP on
 * Kubernetes).
 *
 *   tarema-planner plan FILE --cluster CLUSTER.yaml [--busy BUSY.yaml] [--deployment D.yaml]
 *                  [--profiles TASKPROFILES.yaml] [--slot 60s] [--time-limit 10s]
 *                  [--objective makespan|end] [--solver auto|ilp|heuristic] [--json]
 *   tarema-planner run [flags]                  the Workflow controller (planner/controller.h)
 *   tarema-planner submit|list|show|cancel|gantt   against the API server (planner/cli.h)
 *
 * Reading files and printing happen here; everything else in planner/ is pure. */
#include <getopt.h>
#include <signal.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/args.h"
#include "lib/error.h"
#include "lib/yamljson.h"
#include "planner/answer.h"
#include "planner/cli.h"
#include "planner/cluster.h"
#include "planner/controller.h"
#include "planner/predict.h"
#include "planner/solve.h"
#include "planner/units.h"
#include "planner/waits_cli.h"
#include "planner/workflow.h"

static int fail(const char *msg) {
    fprintf(stderr, "tarema-planner: %s\n", msg);
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: tarema-planner plan FILE --cluster CLUSTER.yaml [options]\n"
            "  FILE                 native workflow YAML, or CWL v1.2 (with --deployment)\n"
            "  --cluster FILE       the simulator's cluster format (node_types); nodes TYPE-N\n"
            "  --busy FILE          capacity already held: - {node, cores, memory, until}\n"
            "  --deployment FILE    CWL only: tools: {NAME: {image: IMAGE}}\n"
            "  --slot D             time slot (default 60s)\n"
            "  --time-limit D       ILP time limit (default 10s)\n"
            "  --objective O        makespan (default: first start to end) or end\n"
            "  --solver S           auto (default), ilp or heuristic\n"
            "  --profiles FILE      TaskProfiles (a list, as kubectl get -o yaml) for task: steps\n"
            "  --json               print the plan as JSON\n"
            "       tarema-planner run [--namespace NS] [--cycle 10m] [--slot 60s]\n"
            "                  [--time-limit 10s] [--retries N] [--load-threshold 0.5]\n"
            "                  [--scheduler-name tarema] [--leader-elect true|false]\n"
            "                  [--node-selector k=v,...] [--require-admission true|false]\n"
            "                  [--reservation-retries 4] [--release-on-start true|false]\n"
            "                  [--release-lead 0s]\n"
            "                  [--db URI (learned waits; else $DATABASE_URL)]\n"
            "                  [--identity ID] [--kubeconfig F]\n"
            "       tarema-planner submit FILE [--namespace NS] [--deployment D] [--retries N]\n"
            "                  [--dry-run] [--wait 30s]\n"
            "       tarema-planner list | show NAME | cancel NAME\n"
            "       tarema-planner gantt NAME --svg FILE [--node-selector k=v,...]\n"
            "       tarema-planner waits [--namespace NS] [--json] [--db URI]   (docs/asa.md)\n"
            "See docs/planner.md.\n");
}

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

/* tarema-planner run: flags into the controller's configuration. */
static int cmd_run(int argc, char **argv) {
    static const struct option longopts[] = {{"kubeconfig", required_argument, 0, 'k'},
                                             {"context", required_argument, 0, 'C'},
                                             {"namespace", required_argument, 0, 'n'},
                                             {"identity", required_argument, 0, 'i'},
                                             {"lease-namespace", required_argument, 0, 'L'},
                                             {"scheduler-name", required_argument, 0, 'S'},
                                             {"cycle", required_argument, 0, 'c'},
                                             {"slot", required_argument, 0, 's'},
                                             {"time-limit", required_argument, 0, 't'},
                                             {"unknown-hold", required_argument, 0, 'u'},
                                             {"retries", required_argument, 0, 'r'},
                                             {"load-threshold", required_argument, 0, 'l'},
                                             {"tick", required_argument, 0, 'T'},
                                             {"leader-elect", required_argument, 0, 'e'},
                                             {"node-selector", required_argument, 0, 'N'},
                                             {"require-admission", required_argument, 0, 'A'},
                                             {"db", required_argument, 0, 'D'},
                                             {"reservation-retries", required_argument, 0, 'R'},
                                             {"release-on-start", required_argument, 0, 'O'},
                                             {"release-lead", required_argument, 0, 'P'},
                                             {0, 0, 0, 0}};
    pl_ctl_config cfg = {.lease_ns = "default",
                         .lease_name = "tarema-planner",
                         .scheduler_name = "tarema",
                         .cycle_s = 600,
                         .slot_s = 60,
                         .time_limit_s = 10,
                         .unknown_hold_s = 3600,
                         .tick_ms = 1000,
                         .leader_elect = 1,
                         .require_admission = 1,
                         .release_on_start = 1,
                         .reservation_retries = 4,
                         .db = getenv("DATABASE_URL")};
    tm_err err = {0};
    int64_t tick_s = 0;
    int c;
    optind = 2;
    tm_err aerr = {0};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        int64_t *d = c == 'c'   ? &cfg.cycle_s
                     : c == 's' ? &cfg.slot_s
                     : c == 't' ? &cfg.time_limit_s
                     : c == 'u' ? &cfg.unknown_hold_s
                     : c == 'T' ? &tick_s
                                : NULL;
        if (d) {
            if (pl_duration_parse(optarg, d, &err) < 0 || *d < 1)
                return fail(err.msg[0] ? err.msg : "durations must be at least 1s");
            continue;
        }
        switch (c) {
        case 'k':
            cfg.kubeconfig = optarg;
            break;
        case 'C':
            cfg.context = optarg;
            break;
        case 'n':
            cfg.namespace = optarg;
            break;
        case 'i':
            cfg.identity = optarg;
            break;
        case 'L':
            cfg.lease_ns = optarg;
            break;
        case 'S':
            cfg.scheduler_name = optarg;
            break;
        case 'r':
            if (tm_arg_int("retries", optarg, 0, 100, &cfg.retries, &aerr))
                return fail(aerr.msg);
            break;
        case 'l':
            if (tm_arg_double("load-threshold", optarg, 0, 1, &cfg.load_threshold, &aerr))
                return fail(aerr.msg); /* 0 = off, e.g. 0.5 */
            break;
        case 'N':
            cfg.node_selector = optarg;
            break;
        case 'R':
            if (tm_arg_int("reservation-retries", optarg, 0, 100, &cfg.reservation_retries, &aerr))
                return fail(aerr.msg);
            break;
        case 'D':
            cfg.db = optarg;
            break;
        case 'A':
            if (tm_arg_bool("require-admission", optarg, &cfg.require_admission, &aerr))
                return fail(aerr.msg);
            break;
        case 'P': /* 0 allowed: off */
            if (pl_duration_parse(optarg, &cfg.release_lead_s, &err) < 0) {
                char m[sizeof err.msg + 32];
                snprintf(m, sizeof m, "--release-lead: %s", err.msg);
                return fail(m);
            }
            break;
        case 'O':
            if (tm_arg_bool("release-on-start", optarg, &cfg.release_on_start, &aerr))
                return fail(aerr.msg);
            break;
        case 'e':
            if (tm_arg_bool("leader-elect", optarg, &cfg.leader_elect, &aerr))
                return fail(aerr.msg);
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc)
        return fail("run takes no positional argument");
    if (tick_s)
        cfg.tick_ms = (int)(tick_s * 1000);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return pl_ctl_run(&cfg, &g_stop);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "waits") == 0) /* the learned queue waits: planner/waits_cli.c */
        return planner_waits_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc, argv);
    if (!strcmp(argv[1], "submit") || !strcmp(argv[1], "list") || !strcmp(argv[1], "show") ||
        !strcmp(argv[1], "cancel") || !strcmp(argv[1], "gantt"))
        return pl_cli_main(argv[1], argc, argv);
    if (strcmp(argv[1], "plan") != 0) {
        fprintf(stderr, "tarema-planner: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    static const struct option longopts[] = {{"cluster", required_argument, 0, 'c'},
                                             {"busy", required_argument, 0, 'b'},
                                             {"deployment", required_argument, 0, 'd'},
                                             {"slot", required_argument, 0, 's'},
                                             {"time-limit", required_argument, 0, 't'},
                                             {"objective", required_argument, 0, 'o'},
                                             {"solver", required_argument, 0, 'S'},
                                             {"json", no_argument, 0, 'j'},
                                             {"profiles", required_argument, 0, 'p'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *cluster_path = NULL, *busy_path = NULL, *deploy_path = NULL, *prof_path = NULL;
    int64_t slot_s = 60, limit_s = 10;
    pl_objective obj = PL_OBJ_MAKESPAN;
    pl_solver solver = PL_SOLVER_AUTO;
    int as_json = 0, c;
    tm_err err = {0};
    optind = 2;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            cluster_path = optarg;
            break;
        case 'b':
            busy_path = optarg;
            break;
        case 'd':
            deploy_path = optarg;
            break;
        case 's':
            if (pl_duration_parse(optarg, &slot_s, &err) < 0 || slot_s < 1)
                return fail(slot_s < 1 ? "--slot must be at least 1s" : err.msg);
            break;
        case 't':
            if (pl_duration_parse(optarg, &limit_s, &err) < 0 || limit_s < 1)
                return fail(limit_s < 1 ? "--time-limit must be at least 1s" : err.msg);
            break;
        case 'o':
            if (!strcmp(optarg, "makespan"))
                obj = PL_OBJ_MAKESPAN;
            else if (!strcmp(optarg, "end"))
                obj = PL_OBJ_END;
            else
                return fail("--objective must be makespan or end");
            break;
        case 'S':
            if (!strcmp(optarg, "auto"))
                solver = PL_SOLVER_AUTO;
            else if (!strcmp(optarg, "ilp"))
                solver = PL_SOLVER_ILP;
            else if (!strcmp(optarg, "heuristic"))
                solver = PL_SOLVER_HEURISTIC;
            else
                return fail("--solver must be auto, ilp or heuristic");
            break;
        case 'j':
            as_json = 1;
            break;
        case 'p':
            prof_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return fail("plan needs exactly one workflow FILE");
    }
    if (!cluster_path)
        return fail("--cluster CLUSTER.yaml is required");
    const char *wf_path = argv[optind];
    json_t *wfj = NULL, *dj = NULL, *cj = NULL, *bj = NULL, *pj = NULL;
    pl_workflow *wf = NULL;
    pl_cluster *cl = NULL;
    pl_busy *busy = NULL;
    int nbusy = 0, rc = 1;
    pl_problem prob = {0};
    pl_plan plan = {0};
    if (!(wfj = tm_yaml_load_file(wf_path, &err)))
        goto out;
    if (pl_is_cwl(wfj)) {
        if (!deploy_path) {
            tm_err_set(&err,
                       "%s is CWL: --deployment FILE (tools: {NAME: {image: ...}}) is "
                       "required",
                       wf_path);
            goto out;
        }
        if (!(dj = tm_yaml_load_file(deploy_path, &err)))
            goto out;
        wf = pl_workflow_from_cwl(wfj, wf_path, dj, deploy_path, &err);
    } else {
        wf = pl_workflow_from_native(wfj, wf_path, &err);
    }
    if (!wf)
        goto out;
    if (prof_path) { /* a TaskProfile list: kubectl get taskprofiles -o yaml, or a plain list */
        if (!(pj = tm_yaml_load_file(prof_path, &err)))
            goto out;
        pl_predict_durations(wf, json_is_array(pj) ? pj : json_object_get(pj, "items"));
    }
    if (!(cj = tm_yaml_load_file(cluster_path, &err)) ||
        !(cl = pl_cluster_from_json(cj, cluster_path, &err)))
        goto out;
    if (busy_path && (!(bj = tm_yaml_load_file(busy_path, &err)) ||
                      pl_busy_from_json(bj, busy_path, cl, &busy, &nbusy, &err) < 0))
        goto out;
    if (pl_check_step_groups(wf, cl, &err) < 0 ||
        pl_problem_init(&prob, wf, cl, busy, nbusy, slot_s, obj, &err) < 0) {
        tm_err_wrap(&err, "%s", wf_path);
        goto out;
    }
    if (pl_plan_init(&plan, &prob) < 0) {
        tm_err_set(&err, "out of memory");
        goto out;
    }
    pl_outcome o;
    if (pl_solve(&prob, solver, (double)limit_s, &plan, &o, &err) < 0)
        goto out;
    if (as_json) {
        json_t *j = pl_answer_json(&prob, &plan, &o);
        char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
        rc = s ? 0 : 1;
    } else {
        char *t = pl_answer_table(&prob, &plan, &o);
        if (t)
            fputs(t, stdout);
        free(t);
        rc = t ? 0 : 1;
    }
out:
    if (rc && err.msg[0])
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
    pl_plan_free(&plan);
    if (prob.wf)
        pl_problem_free(&prob);
    free(busy);
    pl_cluster_free(cl);
    pl_workflow_free(wf);
    json_decref(wfj);
    json_decref(dj);
    json_decref(cj);
    json_decref(bj);
    json_decref(pj);
    return rc;
}
