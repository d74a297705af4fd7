/* main.c: the tarema-labeler command line. Thin: parses flags and calls the modules.
 *
 *   tarema-labeler migrate [--db URI]
 *   tarema-labeler ingest --workflow NAME [--run NAME] [--groups GROUPS.json] [--db URI]
 *                         TRACE.txt...
 *   tarema-labeler label --workflow W [--process P] [--groups GROUPS.json] [--json] [--db URI]
 *   tarema-labeler serve [--port N] [--bind ADDR] [--spool DIR] [--namespace NS] ...
 *                        [--node-selector SEL] [--resync-seconds N]
 *   tarema-labeler webhook [--port N] [--bind ADDR] [--strategy S] [--cold-start N] ...
 *
 * The database is --db, else $DATABASE_URL, else libpq's PG* environment variables. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/groups.h"
#include "labeler/groupsrc.h"
#include "labeler/ingest.h"
#include "labeler/labels.h"
#include "labeler/node_group.h"
#include "labeler/report.h"
#include "labeler/serve.h"
#include "labeler/sizing_plan.h"
#include "labeler/webhook.h"
#include "labeler/store.h"
#include "labeler/waits_feed.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "lib/malloc_tune.h"

/* Set by SIGINT/SIGTERM; the serve loop polls it. The one piece of mutable global state. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *out) {
    fputs("usage: tarema-labeler COMMAND [options]\n"
          "  migrate                       create or upgrade the database schema\n"
          "  ingest --workflow NAME [--run RUN] [--groups GROUPS.json] TRACE.txt...\n"
          "                                store Nextflow trace files (raw or human units),\n"
          "                                each run with the node group of its hostname\n"
          "                                (from --groups, else the cluster's Nodes)\n"
          "  label --workflow W [--process P] [--groups GROUPS.json] [--json]\n"
          "                                print task labels and the bounds behind them;\n"
          "                                node groups from --groups (the document\n"
          "                                `tarema-profiler group -o GROUPS.json` writes),\n"
          "                                else from the cluster's labelled Nodes\n"
          "  serve [--port 8080] [--bind 127.0.0.1] [--spool DIR] [--namespace NS]\n"
          "        [--workflow-key PATH] [--default-workflow W] [--groups GROUPS.json]\n"
          "        [--resync-seconds 300] [--no-publish] [--db-timeout-seconds 10]\n"
          "        [--tls-cert-file F --tls-key-file F] [--client-ca-file F]\n"
          "        [--auth-token-file F] [--insecure-no-auth] [--health-port N]\n"
          "        [--max-body-bytes N] [--memory-budget-bytes N] [--waits]\n"
          "                                a non-loopback --bind needs --auth-token-file or\n"
          "                                --client-ca-file (or --insecure-no-auth)\n"
          "                                weblog receiver, TaskProfile publisher; labels are\n"
          "                                refreshed when runs are stored or node groups change\n"
          "                                --waits: learn queue waits from every pod, write\n"
          "                                tarema.io/predicted-start on pending pods\n"
          "  webhook [--port 8080] [--bind 127.0.0.1] [--strategy paper|best|quantized|kmeans|\n"
          "          greedy|exhaustive|vpa] [--cold-start 2] [--buckets 1] [--resync-seconds 300]\n"
          "          [--tls-cert-file F --tls-key-file F] [--client-ca-file F]\n"
          "          [--auth-token-file F] [--authenticate-mutate] [--health-port N]\n"
          "                                mutating admission webhook (POST /mutate): sets the\n"
          "                                requests of Nextflow task pods from their process's\n"
          "                                history (docs/sizing.md); --authenticate-mutate:\n"
          "                                /mutate needs the client certificate or token that\n"
          "                                the API server's admission configuration presents\n"
          "common: --db URI (else $DATABASE_URL, else PG* variables), --kubeconfig PATH,\n"
          "        --node-selector SEL (the Nodes whose groups count; default all),\n"
          "        --log-level debug|info|warn|error, --log-format text|json\n",
          out);
}

typedef struct opts {
    const char *db, *workflow, *run, *process, *groups, *kubeconfig, *spool, *bind, *ns;
    const char *workflow_key, *default_workflow, *node_selector;
    int port, json, no_publish, resync_s, db_timeout_s;
    const char *tls_cert, *tls_key, *client_ca, *token_file;
    int insecure_no_auth, health_port, waits, authenticate_mutate;
    long long max_body, memory_budget;
    int strategy, cold_start, buckets; /* webhook */
} opts;

/* A --workflow or --run value must fit the store's columns and be UTF-8, like trace values. */
static int check_text(const char *flag, const char *v, size_t size) {
    char buf[512];
    tm_err err = {{0}, 0};
    if (!v || lab_set_text(buf, size < sizeof buf ? size : sizeof buf, v, &err) == 0)
        return 0;
    fprintf(stderr, "tarema-labeler: --%s: %s\n", flag, err.msg);
    return -1;
}

static int parse_opts(int argc, char **argv, opts *o) {
    static const struct option longopts[] = {
        {"db", required_argument, 0, 'd'},
        {"workflow", required_argument, 0, 'w'},
        {"run", required_argument, 0, 'r'},
        {"process", required_argument, 0, 'p'},
        {"groups", required_argument, 0, 'g'},
        {"kubeconfig", required_argument, 0, 'k'},
        {"spool", required_argument, 0, 's'},
        {"bind", required_argument, 0, 'b'},
        {"port", required_argument, 0, 'P'},
        {"namespace", required_argument, 0, 'n'},
        {"workflow-key", required_argument, 0, 'K'},
        {"default-workflow", required_argument, 0, 'D'},
        {"resync-seconds", required_argument, 0, 'R'},
        {"db-timeout-seconds", required_argument, 0, 'T'},
        {"refresh-seconds", required_argument, 0, 'O'},
        {"node-selector", required_argument, 0, 'S'},
        {"json", no_argument, 0, 'j'},
        {"no-publish", no_argument, 0, 'N'},
        {"log-level", required_argument, 0, 'L'},
        {"log-format", required_argument, 0, 'F'},
        {"tls-cert-file", required_argument, 0, 1001},
        {"tls-key-file", required_argument, 0, 1002},
        {"client-ca-file", required_argument, 0, 1003},
        {"auth-token-file", required_argument, 0, 1004},
        {"insecure-no-auth", no_argument, 0, 1005},
        {"health-port", required_argument, 0, 1006},
        {"max-body-bytes", required_argument, 0, 1007},
        {"memory-budget-bytes", required_argument, 0, 1008},
        {"strategy", required_argument, 0, 1009},
        {"cold-start", required_argument, 0, 1010},
        {"buckets", required_argument, 0, 1011},
        {"waits", no_argument, 0, 1012},
        {"authenticate-mutate", no_argument, 0, 1013},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *level = "info", *format = "text";
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->db = optarg;
            break;
        case 'w':
            o->workflow = optarg;
            break;
        case 'r':
            o->run = optarg;
            break;
        case 'p':
            o->process = optarg;
            break;
        case 'g':
            o->groups = optarg;
            break;
        case 'k':
            o->kubeconfig = optarg;
            break;
        case 's':
            o->spool = optarg;
            break;
        case 'b':
            o->bind = optarg;
            break;
        case 'n':
            o->ns = optarg;
            break;
        case 'K':
            o->workflow_key = optarg;
            break;
        case 'D':
            o->default_workflow = optarg;
            break;
        case 'S':
            o->node_selector = optarg;
            break;
        case 'O':
            /* The old fixed poll interval. Accepted so existing deployments keep starting. */
            fprintf(stderr, "tarema-labeler: --refresh-seconds is obsolete and ignored: labels "
                            "now follow stored runs and node group changes as they happen "
                            "(--resync-seconds sets the safety-net interval)\n");
            break;
        case 'j':
            o->json = 1;
            break;
        case 1001:
            o->tls_cert = optarg;
            break;
        case 1002:
            o->tls_key = optarg;
            break;
        case 1003:
            o->client_ca = optarg;
            break;
        case 1004:
            o->token_file = optarg;
            break;
        case 1005:
            o->insecure_no_auth = 1;
            break;
        case 1012:
            o->waits = 1;
            break;
        case 1013:
            o->authenticate_mutate = 1;
            break;
        case 1006:
        case 1007:
        case 1008: {
            char *end;
            long long v = strtoll(optarg, &end, 10);
            long long hi = c == 1006 ? 65535 : 1LL << 34;
            if (!*optarg || *end || v < 0 || v > hi) {
                fprintf(stderr, "tarema-labeler: '%s' is not a number in 0..%lld\n", optarg, hi);
                return -1;
            }
            if (c == 1006)
                o->health_port = (int)v;
            else
                *(c == 1007 ? &o->max_body : &o->memory_budget) = v;
            break;
        }
        case 1009:
            o->strategy = sz_plan_strategy_parse(optarg);
            if (o->strategy == -3) {
                fprintf(stderr,
                        "tarema-labeler: --strategy '%s': expected paper, best, quantized, "
                        "kmeans, greedy, exhaustive or vpa\n",
                        optarg);
                return -1;
            }
            break;
        case 1010:
        case 1011: {
            char *end;
            long v = strtol(optarg, &end, 10);
            long hi = c == 1010 ? 1000000 : SZ_MAX_BUCKETS;
            if (!*optarg || *end || v < 1 || v > hi) {
                fprintf(stderr, "tarema-labeler: --%s '%s' is not a number in 1..%ld\n",
                        c == 1010 ? "cold-start" : "buckets", optarg, hi);
                return -1;
            }
            *(c == 1010 ? &o->cold_start : &o->buckets) = (int)v;
            break;
        }
        case 'N':
            o->no_publish = 1;
            break;
        case 'L':
            level = optarg;
            break;
        case 'F':
            format = optarg;
            break;
        case 'P':
        case 'R':
        case 'T': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < (c == 'P' ? 0 : 1) || v > 65535) {
                fprintf(stderr, "tarema-labeler: --%s '%s' is not a number in %d..65535\n",
                        c == 'P'   ? "port"
                        : c == 'R' ? "resync-seconds"
                                   : "db-timeout-seconds",
                        optarg, c == 'P' ? 0 : 1);
                return -1;
            }
            *(c == 'P' ? &o->port : c == 'R' ? &o->resync_s : &o->db_timeout_s) = (int)v;
            break;
        }
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (tm_log_configure(level, format) < 0) {
        fprintf(stderr, "tarema-labeler: bad --log-level '%s' or --log-format '%s'\n", level,
                format);
        return -1;
    }
    if (!o->db)
        o->db = getenv("DATABASE_URL");
    if (check_text("workflow", o->workflow, sizeof((lab_task_run *)0)->workflow) < 0 ||
        check_text("run", o->run, sizeof((lab_task_run *)0)->run_name) < 0 ||
        check_text("default-workflow", o->default_workflow, sizeof((lab_task_run *)0)->workflow) <
            0)
        return -1;
    return 0;
}

static int cmd_migrate(const opts *o) {
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(o->db, &err);
    if (!s) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
        return 1;
    }
    lab_store_close(s);
    printf("database schema is up to date\n");
    return 0;
}

/* Which node group each trace row's hostname is in (the runtime per group of the adaptive
 * policy): the --groups document's nodes, else the cluster's Nodes now. Without either the
 * runs are stored without a group, which only the adaptive policy misses. */
static json_t *ingest_node_groups(const opts *o) {
    tm_err err = {{0}, 0};
    json_t *doc = NULL, *map = NULL;
    if (o->groups) {
        if ((doc = tm_json_load_file(o->groups, &err)))
            map = lab_node_groups_from_doc(doc);
    } else {
        tm_kube_config *cfg = tm_kube_config_auto(o->kubeconfig, NULL, &err);
        tm_kube *k = cfg ? tm_kube_new(cfg, &err) : NULL;
        tm_kube_config_free(cfg);
        tm_list_opts lo = {.label_selector = o->node_selector};
        if (k && (doc = tm_kube_list(k, "/api/v1/nodes", &lo, NULL, &err)))
            map = lab_node_groups_from_nodes(doc);
        tm_kube_free(k);
    }
    json_decref(doc);
    if (!map)
        fprintf(stderr, "tarema-labeler: node groups unknown, runs are stored without theirs: %s\n",
                err.msg);
    return map;
}

static int cmd_ingest(const opts *o, int nfiles, char **files) {
    if (!o->workflow || !*o->workflow || nfiles == 0) {
        fprintf(stderr, "tarema-labeler ingest: needs --workflow NAME and at least one trace "
                        "file\n");
        return 2;
    }
    tm_err err = {{0}, 0};
    lab_store *s = lab_store_open(o->db, &err);
    if (!s) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
        return 1;
    }
    json_t *node_groups = ingest_node_groups(o);
    int rc = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *f = strcmp(files[i], "-") == 0 ? stdin : fopen(files[i], "r");
        if (!f) {
            fprintf(stderr, "tarema-labeler: cannot open %s: %m\n", files[i]);
            rc = 1;
            continue;
        }
        char run[128];
        if (o->run)
            snprintf(run, sizeof run, "%s", o->run);
        else
            lab_ingest_default_run(files[i], run, sizeof run);
        lab_ingest_stats st;
        if (lab_ingest_trace_groups(s, f, files[i], o->workflow, run, node_groups, &st, &err) < 0) {
            fprintf(stderr, "tarema-labeler: %s\n", err.msg);
            rc = 1;
        } else {
            printf("%s: stored %ld task runs (%ld new, %ld updated), skipped %ld bad rows "
                   "(workflow %s, run %s)\n",
                   files[i], st.stored, st.inserted, st.updated, st.skipped, o->workflow, run);
            if (st.stored == 0 && st.skipped > 0)
                rc = 1;
        }
        if (f != stdin)
            fclose(f);
    }
    json_decref(node_groups);
    lab_store_close(s);
    return rc;
}

/* Node groups from --groups, else from the live cluster's Node labels. */
static int load_groups(const opts *o, lab_groups *g, tm_err *err) {
    if (o->groups)
        return lab_groups_load_file(o->groups, g, err);
    tm_kube_config *cfg = tm_kube_config_auto(o->kubeconfig, NULL, err);
    if (!cfg)
        return tm_err_wrap(err, "node groups from the cluster");
    tm_kube *k = tm_kube_new(cfg, err);
    tm_kube_config_free(cfg);
    if (!k)
        return tm_err_wrap(err, "node groups from the cluster");
    int rc = lab_groups_load_cluster(k, o->node_selector, g, err);
    tm_kube_free(k);
    return rc;
}

/* Without --groups the labels need the cluster; a user without one (a first try on a laptop)
 * learns first that --groups exists and what to give it, then why the cluster failed. */
static void print_groups_error(const opts *o, const tm_err *err) {
    if (!o->groups)
        fprintf(stderr,
                "tarema-labeler: no node groups: pass --groups GROUPS.json (the node-groups "
                "document `tarema-profiler group -o GROUPS.json` writes, see "
                "docs/node-groups.md), or run where the cluster's Nodes carry the profiler's "
                "tarema.io labels\n  %s\n",
                err->msg);
    else
        fprintf(stderr, "tarema-labeler: %s\n", err->msg);
}

static int cmd_label(const opts *o) {
    if (!o->workflow) {
        fprintf(stderr, "tarema-labeler label: needs --workflow NAME\n");
        return 2;
    }
    tm_err err = {{0}, 0};
    lab_groups groups;
    lab_classes classes[LAB_NFEATURES];
    if (load_groups(o, &groups, &err) < 0) {
        print_groups_error(o, &err);
        return 1;
    }
    if (lab_groups_all_classes(&groups, classes, &err) < 0) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
        return 1;
    }
    lab_store *s = lab_store_open(o->db, &err);
    if (!s) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
        return 1;
    }
    lab_samples smp;
    int rc = 1;
    if (lab_store_samples(s, o->workflow, &smp, &err) < 0) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
        goto out;
    }
    if (smp.n == 0) {
        fprintf(stderr,
                "tarema-labeler: workflow '%s' has no completed task runs: every process is "
                "unlabeled (ingest a trace first)\n",
                o->workflow);
        lab_samples_free(&smp);
        goto out;
    }
    lab_labeling *l = lab_label_compute(smp.v, smp.n, classes, &err);
    if (!l) {
        fprintf(stderr, "tarema-labeler: %s\n", err.msg);
    } else if (o->json) {
        json_t *j = lab_report_json(l, o->workflow, o->process);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(j);
        rc = 0;
    } else {
        int printed = lab_report_text(stdout, l, o->workflow, o->process);
        if (o->process && printed == 0)
            fprintf(stderr,
                    "tarema-labeler: process '%s' has no completed runs in workflow "
                    "'%s': unlabeled\n",
                    o->process, o->workflow);
        else
            rc = 0;
    }
    lab_labeling_free(l);
    lab_samples_free(&smp);
out:
    lab_store_close(s);
    return rc;
}

int main(int argc, char **argv) {
    tm_malloc_tune();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    opts o = {.port = 8080,
              .resync_s = 300,
              .db_timeout_s = 10,
              .strategy = SZ_STRATEGY_PAPER,
              .cold_start = 2,
              .buckets = 1};
    if (parse_opts(argc - 1, argv + 1, &o) < 0)
        return 2;
    int nrest = argc - 1 - optind;
    char **rest = argv + 1 + optind;
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(&o);
    if (strcmp(cmd, "ingest") == 0)
        return cmd_ingest(&o, nrest, rest);
    if (strcmp(cmd, "label") == 0)
        return cmd_label(&o);
    if (strcmp(cmd, "serve") == 0) {
        lab_serve_opts so = {
            .db = o.db,
            .bind = o.bind ? o.bind : "127.0.0.1",
            .port = o.port,
            .spool_dir = o.spool ? o.spool : "/var/lib/tarema-labeler/spool",
            .ns = o.ns,
            .kubeconfig = o.kubeconfig,
            .groups_file = o.groups,
            .workflow_key = o.workflow_key,
            .default_workflow = o.default_workflow,
            .node_selector = o.node_selector,
            .resync_s = o.resync_s,
            .publish = !o.no_publish,
            .tls_cert_file = o.tls_cert,
            .tls_key_file = o.tls_key,
            .client_ca_file = o.client_ca,
            .auth_token_file = o.token_file,
            .insecure_no_auth = o.insecure_no_auth,
            .health_port = o.health_port,
            .max_body = o.max_body,
            .memory_budget = o.memory_budget,
            .db_timeout_s = o.db_timeout_s,
        };
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        /* The queue-wait feed (labeler/waits_feed.h) runs beside serve on a thread of its own. */
        lab_waits_feed *wf = NULL;
        if (o.waits) {
            lab_waits_feed_opts wo = {.db = o.db,
                                      .kubeconfig = o.kubeconfig,
                                      .annotate = 1,
                                      .db_timeout_s = o.db_timeout_s};
            tm_err err = {{0}, 0};
            if (!(wf = lab_waits_feed_start(&wo, &err))) {
                fprintf(stderr, "tarema-labeler: --waits: %s\n", err.msg);
                return 1;
            }
        }
        int rc = lab_serve_main(&so, &stop_requested);
        lab_waits_feed_stop(wf);
        return rc;
    }
    if (strcmp(cmd, "webhook") == 0) {
        lab_webhook_opts wo = {
            .db = o.db,
            .bind = o.bind ? o.bind : "127.0.0.1",
            .port = o.port,
            .kubeconfig = o.kubeconfig,
            .tls_cert_file = o.tls_cert,
            .tls_key_file = o.tls_key,
            .client_ca_file = o.client_ca,
            .auth_token_file = o.token_file,
            .insecure_no_auth = o.insecure_no_auth,
            .authenticate_mutate = o.authenticate_mutate,
            .health_port = o.health_port,
            .strategy = o.strategy,
            .cold_start = o.cold_start,
            .buckets = o.buckets,
            .refresh_s = o.resync_s,
            .db_timeout_s = o.db_timeout_s,
        };
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        return lab_webhook_main(&wo, &stop_requested);
    }
    fprintf(stderr, "tarema-labeler: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
