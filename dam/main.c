/* main.c: tarema-dam, rank whole clusters for a job (the LEXIS DAM's greedy strategy).
 *
 *   tarema-dam rank JOB.yaml --clusters CLUSTERS.yaml | --federation FED.yaml [--json] [--now T]
 *   tarema-dam collect --federation FED.yaml
 *   tarema-dam serve --federation FED.yaml [--db URI] [--port N] ...
 *
 * rank: CLUSTERS.yaml holds each cluster's collected signals, or FED.yaml names the clusters'
 * kubeconfig contexts and they are collected now (docs/dam.md). Exit status 0 with a chosen
 * cluster, 3 when every cluster is excluded, 1 on bad input, 2 on usage. collect prints the
 * collected CLUSTERS document (JSON). serve runs the REST service (dam/serve.h). */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dam/collect.h"
#include "dam/input.h"
#include "dam/rank.h"
#include "dam/report.h"
#include "dam/serve.h"
#include "lib/args.h"
#include "lib/error.h"
#include "lib/log.h"
#include "lib/yamljson.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: tarema-dam rank JOB.yaml (--clusters CLUSTERS.yaml | --federation FED.yaml)\n"
        "                  [--json] [--now TIME]\n"
        "       tarema-dam collect --federation FED.yaml\n"
        "       tarema-dam serve --federation FED.yaml [--db URI] [--bind ADDR] [--port N]\n"
        "                  [--tls-cert-file F --tls-key-file F] [--client-ca-file F]\n"
        "                  [--auth-token-file F] [--insecure-no-auth] [--health-port N]\n"
        "                  [--poll-ms N] [--db-timeout-seconds N] [--cluster-timeout-seconds S]\n"
        "                  [--log-level L]\n"
        "  --clusters FILE  each cluster's collected signals (docs/dam.md)\n"
        "  --federation F   the clusters' kubeconfig contexts and the dataset registry;\n"
        "                   their signals are collected from the API servers now\n"
        "  --json           print the ranking as JSON\n"
        "  --now TIME       rank as of TIME (2026-11-23T21:00:00Z or epoch seconds);\n"
        "                   default: the file's 'now', else the clock\n"
        "exit status: 0 a cluster chosen, 3 none qualifies, 1 bad input, 2 usage\n");
}

static int rank_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"clusters", required_argument, 0, 'c'}, {"json", no_argument, 0, 'j'},
        {"now", required_argument, 0, 'n'},      {"federation", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *clusters_path = NULL, *now_arg = NULL, *fed_path = NULL;
    int as_json = 0, ch;
    while ((ch = getopt_long(argc, argv, "c:jn:f:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            clusters_path = optarg;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'n':
            now_arg = optarg;
            break;
        case 'f':
            fed_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !clusters_path == !fed_path) {
        usage(stderr);
        return 2;
    }
    tm_err err = {0};
    json_t *job_doc = tm_yaml_load_file(argv[optind], &err);
    json_t *clusters_doc = NULL;
    if (job_doc && clusters_path) {
        clusters_doc = tm_yaml_load_file(clusters_path, &err);
    } else if (job_doc) {
        dam_federation *fed = dam_federation_load(fed_path, &err);
        /* The job's shape (one pod of its cores and memory) selects its learned wait; the job
         * is read against the registry first, so a bad job is refused before collecting. */
        json_t *skel = fed ? dam_federation_skeleton(fed) : NULL;
        dam_request *probe = skel ? dam_request_new(job_doc, skel, (double)time(NULL), &err) : NULL;
        json_decref(skel);
        if (probe) {
            const dam_job *j = dam_request_job(probe);
            dam_shape shape = {.ns = NULL,
                               .pods = 1,
                               .cpu_milli = llround(j->cores * 1000.0),
                               .mem_bytes = llround(j->memory_bytes)};
            clusters_doc = dam_collect(fed, &shape, (double)time(NULL), 0, &err);
            dam_request_free(probe);
        }
        dam_federation_free(fed);
    }
    dam_request *req =
        clusters_doc ? dam_request_new(job_doc, clusters_doc, (double)time(NULL), &err) : NULL;
    json_decref(job_doc);
    json_decref(clusters_doc);
    if (req && now_arg) {
        json_t *v = json_string(now_arg);
        double now;
        if (dam_parse_time(v, "--now", &now, &err) < 0) {
            dam_request_free(req);
            req = NULL;
        } else {
            dam_request_set_now(req, now);
        }
        json_decref(v);
    }
    dam_ranking rk;
    if (!req || dam_rank(dam_request_input(req), dam_request_job(req), &rk, &err) < 0) {
        fprintf(stderr, "tarema-dam rank: %s\n", err.msg);
        dam_request_free(req);
        return 1;
    }
    const dam_input *in = dam_request_input(req);
    const dam_job *job = dam_request_job(req);
    if (as_json) {
        json_t *o = dam_ranking_json(in, job, &rk);
        json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(o);
    } else {
        dam_ranking_print(stdout, in, job, &rk);
    }
    int chosen = rk.chosen;
    dam_request_free(req);
    return chosen >= 0 ? 0 : 3;
}

static int collect_main(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[1], "--federation") != 0) {
        usage(stderr);
        return 2;
    }
    tm_err err = {0};
    dam_federation *fed = dam_federation_load(argv[2], &err);
    json_t *doc = fed ? dam_collect(fed, NULL, (double)time(NULL), 0, &err) : NULL;
    dam_federation_free(fed);
    if (!doc) {
        fprintf(stderr, "tarema-dam collect: %s\n", err.msg);
        return 1;
    }
    json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
    json_decref(doc);
    return 0;
}

static int serve_main(int argc, char **argv) {
    static const struct option longopts[] = {
        {"federation", required_argument, 0, 'f'},
        {"db", required_argument, 0, 'd'},
        {"bind", required_argument, 0, 'b'},
        {"port", required_argument, 0, 'p'},
        {"tls-cert-file", required_argument, 0, 1001},
        {"tls-key-file", required_argument, 0, 1002},
        {"client-ca-file", required_argument, 0, 1003},
        {"auth-token-file", required_argument, 0, 1004},
        {"insecure-no-auth", no_argument, 0, 1005},
        {"health-port", required_argument, 0, 1006},
        {"poll-ms", required_argument, 0, 1007},
        {"db-timeout-seconds", required_argument, 0, 1008},
        {"cluster-timeout-seconds", required_argument, 0, 1009},
        {"log-level", required_argument, 0, 'L'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    dam_serve_opts o = {0};
    const char *level = "info";
    tm_err err = {0};
    int ch, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            o.federation = optarg;
            break;
        case 'd':
            o.db = optarg;
            break;
        case 'b':
            o.bind = optarg;
            break;
        case 'p':
            bad = tm_arg_int("port", optarg, 0, 65535, &o.port, &err);
            break;
        case 1001:
            o.tls_cert_file = optarg;
            break;
        case 1002:
            o.tls_key_file = optarg;
            break;
        case 1003:
            o.client_ca_file = optarg;
            break;
        case 1004:
            o.auth_token_file = optarg;
            break;
        case 1005:
            o.insecure_no_auth = 1;
            break;
        case 1006:
            bad = tm_arg_int("health-port", optarg, -1, 65535, &o.health_port, &err);
            break;
        case 1007:
            bad = tm_arg_int("poll-ms", optarg, 1, 3600000, &o.poll_ms, &err);
            break;
        case 1008:
            bad = tm_arg_int("db-timeout-seconds", optarg, 1, 3600, &o.db_timeout_s, &err);
            break;
        case 1009:
            bad = tm_arg_double("cluster-timeout-seconds", optarg, 0.001, 3600,
                                &o.cluster_timeout_s, &err);
            break;
        case 'L':
            level = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (bad) {
        fprintf(stderr, "tarema-dam serve: %s\n", err.msg);
        return 2;
    }
    if (optind != argc || !o.federation) {
        fprintf(stderr, "tarema-dam serve: --federation FILE is required\n");
        usage(stderr);
        return 2;
    }
    if (!o.db)
        o.db = getenv("DATABASE_URL");
    if (tm_log_configure(level, "text") < 0) {
        fprintf(stderr, "tarema-dam serve: --log-level: unknown level '%s'\n", level);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return dam_serve_main(&o, &stop_requested);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "rank") == 0)
        return rank_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "collect") == 0)
        return collect_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "serve") == 0)
        return serve_main(argc - 1, argv + 1);
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
