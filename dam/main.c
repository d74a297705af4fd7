/* main.c: tarema-dam, rank whole clusters for a job (the LEXIS DAM's greedy strategy).
 *
 *   tarema-dam rank JOB.yaml --clusters CLUSTERS.yaml [--json] [--now TIME]
 *
 * Offline: CLUSTERS.yaml holds each cluster's collected signals (docs/dam.md). Exit status 0
 * with a chosen cluster, 3 when every cluster is excluded, 1 on bad input, 2 on usage. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dam/input.h"
#include "dam/rank.h"
#include "dam/report.h"
#include "lib/error.h"
#include "lib/yamljson.h"

static void usage(FILE *f) {
    fprintf(f, "usage: tarema-dam rank JOB.yaml --clusters CLUSTERS.yaml [--json] [--now TIME]\n"
               "  --clusters FILE  each cluster's collected signals (docs/dam.md)\n"
               "  --json           print the ranking as JSON\n"
               "  --now TIME       rank as of TIME (2026-11-23T21:00:00Z or epoch seconds);\n"
               "                   default: the file's 'now', else the clock\n"
               "exit status: 0 a cluster chosen, 3 none qualifies, 1 bad input, 2 usage\n");
}

static int rank_main(int argc, char **argv) {
    static const struct option longopts[] = {{"clusters", required_argument, 0, 'c'},
                                             {"json", no_argument, 0, 'j'},
                                             {"now", required_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *clusters_path = NULL, *now_arg = NULL;
    int as_json = 0, ch;
    while ((ch = getopt_long(argc, argv, "c:jn:h", longopts, NULL)) != -1) {
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
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !clusters_path) {
        usage(stderr);
        return 2;
    }
    tm_err err = {0};
    json_t *job_doc = tm_yaml_load_file(argv[optind], &err);
    json_t *clusters_doc = job_doc ? tm_yaml_load_file(clusters_path, &err) : NULL;
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

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "rank") == 0)
        return rank_main(argc - 1, argv + 1);
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
