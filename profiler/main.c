/* main.c: the tarema-profiler command line (thin: parses options, calls the modules, prints).
 *
 *   tarema-profiler bench [--quick] [--node NAME] [--dir DIR] [--threads N] [-o FILE]
 *                         [--fio-size SIZE] [--fio-runtime S]
 *                         [--publish [--namespace NS] [--kubeconfig PATH] [--context C]]
 *   tarema-profiler group [--features a,b,..] [--seed N] [--restarts N] [--k-max N]
 *                         [--noise F] [--min-silhouette S] [-o GROUPS.json] [--json] PROFILES...
 *   tarema-profiler publish [--namespace NS] PROFILE.json...   (store as ConfigMaps, as
 *                         bench --publish does; for profiles measured elsewhere)
 *   tarema-profiler apply [--dry-run] [--kubeconfig PATH] [--context C] GROUPS.json
 *   tarema-profiler run   [--nodes a,b | --changed] [--quick] [--image IMG] [--namespace NS]
 *                         [--timeout S] [-o GROUPS.json] [--dry-run] [grouping options]
 *
 * Exit status: 0 ok, 1 failure (message on stderr), 2 usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fileutil.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "lib/malloc_tune.h"
#include "profiler/apply.h"
#include "profiler/bench.h"
#include "profiler/grouping.h"
#include "profiler/nodeprofile.h"
#include "profiler/report.h"
#include "profiler/run.h"

static void usage(FILE *f) {
    fputs("usage: tarema-profiler bench [--quick] [--node NAME] [--dir DIR] [--threads N]\n"
          "                             [--fio-size 4g] [--fio-runtime 10]\n"
          "                             [-o FILE] [--publish [--namespace NS]]\n"
          "       tarema-profiler group [--features LIST] [--seed N] [--restarts N] [--k-max N]\n"
          "                             [--noise F] [--min-silhouette S] [-o GROUPS.json]\n"
          "                             [--json] PROFILE.json...\n"
          "       tarema-profiler publish [--namespace NS] PROFILE.json...\n"
          "       tarema-profiler apply [--dry-run] GROUPS.json\n"
          "       tarema-profiler run [--nodes A,B | --changed] [--quick] [--image IMG]\n"
          "                           [--namespace NS] [--timeout S] [-o GROUPS.json] [--dry-run]\n"
          "common: --kubeconfig PATH --context NAME --log-level LEVEL --log-format text|json\n"
          "features: cpu_single cpu_multi mem seq_read seq_write rand_read rand_write seq_io\n"
          "          rand_io (default cpu_single,mem,seq_io,rand_io)\n",
          f);
}

enum {
    OPT_QUICK = 256,
    OPT_NODE,
    OPT_DIR,
    OPT_THREADS,
    OPT_PUBLISH,
    OPT_NAMESPACE,
    OPT_KUBECONFIG,
    OPT_CONTEXT,
    OPT_FEATURES,
    OPT_SEED,
    OPT_RESTARTS,
    OPT_KMAX,
    OPT_NOISE,
    OPT_MINSIL,
    OPT_JSON,
    OPT_DRYRUN,
    OPT_NODES,
    OPT_CHANGED,
    OPT_IMAGE,
    OPT_TIMEOUT,
    OPT_SA,
    OPT_LOGLEVEL,
    OPT_LOGFMT,
    OPT_HELP,
    OPT_FIOSIZE,
    OPT_FIORUNTIME
};

static const struct option long_opts[] = {
    {"quick", no_argument, 0, OPT_QUICK},
    {"node", required_argument, 0, OPT_NODE},
    {"dir", required_argument, 0, OPT_DIR},
    {"threads", required_argument, 0, OPT_THREADS},
    {"publish", no_argument, 0, OPT_PUBLISH},
    {"namespace", required_argument, 0, OPT_NAMESPACE},
    {"kubeconfig", required_argument, 0, OPT_KUBECONFIG},
    {"context", required_argument, 0, OPT_CONTEXT},
    {"features", required_argument, 0, OPT_FEATURES},
    {"seed", required_argument, 0, OPT_SEED},
    {"restarts", required_argument, 0, OPT_RESTARTS},
    {"k-max", required_argument, 0, OPT_KMAX},
    {"noise", required_argument, 0, OPT_NOISE},
    {"min-silhouette", required_argument, 0, OPT_MINSIL},
    {"json", no_argument, 0, OPT_JSON},
    {"dry-run", no_argument, 0, OPT_DRYRUN},
    {"nodes", required_argument, 0, OPT_NODES},
    {"changed", no_argument, 0, OPT_CHANGED},
    {"image", required_argument, 0, OPT_IMAGE},
    {"service-account", required_argument, 0, OPT_SA},
    {"timeout", required_argument, 0, OPT_TIMEOUT},
    {"output", required_argument, 0, 'o'},
    {"log-level", required_argument, 0, OPT_LOGLEVEL},
    {"log-format", required_argument, 0, OPT_LOGFMT},
    {"fio-size", required_argument, 0, OPT_FIOSIZE},
    {"fio-runtime", required_argument, 0, OPT_FIORUNTIME},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

typedef struct cli {
    prof_bench_opts bench;
    prof_group_opts group;
    bool publish, json, dry_run, changed, quick;
    const char *ns, *kubeconfig, *context, *output, *image, *sa;
    char *nodes_arg;
    int timeout_s;
    const char *log_level, *log_format;
} cli;

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "tarema-profiler: %s: '%s' is not an integer in %ld..%ld\n", opt, s, lo,
                hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "tarema-profiler: %s: '%s' is not a number in %g..%g\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_features(const char *s, prof_group_opts *g) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    g->nfeatures = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        tm_err err;
        if (g->nfeatures == PROF_F_COUNT) {
            fprintf(stderr, "tarema-profiler: --features: too many features\n");
            return -1;
        }
        if (prof_feature_parse(t, &g->features[g->nfeatures], &err) != 0) {
            fprintf(stderr, "tarema-profiler: --features: %s\n", err.msg);
            return -1;
        }
        g->nfeatures++;
    }
    if (g->nfeatures == 0) {
        fprintf(stderr, "tarema-profiler: --features: give at least one feature\n");
        return -1;
    }
    return 0;
}

/* Returns 0, or 2 on a usage error (message printed). */
static int parse_args(int argc, char **argv, cli *c) {
    int opt;
    long v;
    double d;
    while ((opt = getopt_long(argc, argv, "o:h", long_opts, NULL)) != -1) {
        switch (opt) {
        case OPT_QUICK:
            c->bench.quick = c->quick = true;
            break;
        case OPT_NODE:
            c->bench.node = optarg;
            break;
        case OPT_DIR:
            c->bench.dir = optarg;
            break;
        case OPT_THREADS:
            if (parse_long("--threads", optarg, 1, 4096, &v) != 0)
                return 2;
            c->bench.threads = (int)v;
            break;
        case OPT_FIOSIZE:
            if (strspn(optarg, "0123456789") == 0 ||
                strspn(optarg, "0123456789kmgKMG") != strlen(optarg)) {
                fprintf(stderr, "tarema-profiler: --fio-size: '%s' is not a size like 4g or 512m\n",
                        optarg);
                return 2;
            }
            c->bench.fio_size = optarg;
            break;
        case OPT_FIORUNTIME:
            if (parse_long("--fio-runtime", optarg, 1, 3600, &v) != 0)
                return 2;
            c->bench.fio_runtime = (int)v;
            break;
        case OPT_PUBLISH:
            c->publish = true;
            break;
        case OPT_NAMESPACE:
            c->ns = optarg;
            break;
        case OPT_KUBECONFIG:
            c->kubeconfig = optarg;
            break;
        case OPT_CONTEXT:
            c->context = optarg;
            break;
        case OPT_FEATURES:
            if (parse_features(optarg, &c->group) != 0)
                return 2;
            break;
        case OPT_SEED:
            if (parse_long("--seed", optarg, 0, 0x7fffffffL, &v) != 0)
                return 2;
            c->group.seed = (uint64_t)v;
            break;
        case OPT_RESTARTS:
            if (parse_long("--restarts", optarg, 1, 1000, &v) != 0)
                return 2;
            c->group.restarts = (int)v;
            break;
        case OPT_KMAX:
            if (parse_long("--k-max", optarg, 2, PROF_K_LIMIT, &v) != 0)
                return 2;
            c->group.k_max = (int)v;
            break;
        case OPT_NOISE:
            if (parse_double("--noise", optarg, 0, 0.99, &d) != 0)
                return 2;
            c->group.noise = d;
            break;
        case OPT_MINSIL:
            if (parse_double("--min-silhouette", optarg, -1, 1, &d) != 0)
                return 2;
            c->group.min_silhouette = d;
            break;
        case OPT_JSON:
            c->json = true;
            break;
        case OPT_DRYRUN:
            c->dry_run = true;
            break;
        case OPT_NODES:
            c->nodes_arg = optarg;
            break;
        case OPT_CHANGED:
            c->changed = true;
            break;
        case OPT_IMAGE:
            c->image = optarg;
            break;
        case OPT_SA:
            c->sa = optarg;
            break;
        case OPT_TIMEOUT:
            if (parse_long("--timeout", optarg, 1, 86400, &v) != 0)
                return 2;
            c->timeout_s = (int)v;
            break;
        case 'o':
            c->output = optarg;
            break;
        case OPT_LOGLEVEL:
            c->log_level = optarg;
            break;
        case OPT_LOGFMT:
            c->log_format = optarg;
            break;
        case OPT_HELP:
        case 'h':
            usage(stdout);
            return 3;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (tm_log_configure(c->log_level, c->log_format) != 0) {
        fprintf(stderr, "tarema-profiler: unknown --log-level or --log-format\n");
        return 2;
    }
    return 0;
}

static tm_kube *connect(const cli *c, tm_err *err) {
    tm_kube_config *cfg = tm_kube_config_auto(c->kubeconfig, c->context, err);
    if (!cfg)
        return NULL;
    tm_kube *k = tm_kube_new(cfg, err);
    tm_kube_config_free(cfg);
    return k;
}

static int write_json(const json_t *doc, const char *path, tm_err *err) {
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    if (!s)
        return tm_err_set(err, "out of memory serialising JSON");
    int rc = 0;
    if (!path || strcmp(path, "-") == 0) {
        puts(s);
    } else {
        size_t n = strlen(s);
        s[n] = '\n';
        rc = tm_write_file_atomic(path, s, n + 1, err);
    }
    free(s);
    return rc;
}

static void bench_progress(void *ud, const char *step) {
    (void)ud;
    tm_info("bench step=\"%s\"", step);
}

static int cmd_bench(cli *c, tm_err *err) {
    if (!c->bench.node)
        c->bench.node = getenv("NODE_NAME");
    c->bench.progress = bench_progress;
    json_t *p = prof_bench_run(&c->bench, err);
    if (!p)
        return -1;
    int rc = write_json(p, c->output, err);
    if (rc == 0 && c->publish) {
        tm_kube *k = connect(c, err);
        if (!k)
            rc = -1;
        else
            rc = prof_publish(k, c->ns ? c->ns : tm_kube_namespace(k), p, err);
        tm_kube_free(k);
    }
    json_decref(p);
    return rc;
}

/* Reads the NodeProfile files into set (left empty on error). Messages need no command
 * prefix: main() prints "tarema-profiler CMD: " before them. */
static int load_profiles(int nfiles, char **files, prof_profile_set *set, tm_err *err) {
    *set = (prof_profile_set){0};
    if (nfiles == 0)
        return tm_err_set(err, "give NodeProfile files (or one JSON array of them)");
    if (prof_profiles_load_files(set, (const char *const *)files, (size_t)nfiles, err) != 0) {
        prof_profile_set_free(set);
        return -1;
    }
    return 0;
}

static int cmd_group(cli *c, int nfiles, char **files, tm_err *err) {
    prof_profile_set set;
    if (load_profiles(nfiles, files, &set, err) != 0)
        return -1;
    prof_grouping g;
    if (prof_group_nodes(set.items, set.n, &c->group, &g, err) != 0) {
        prof_profile_set_free(&set);
        return -1;
    }
    json_t *doc = prof_grouping_to_json(&g, set.items, &c->group);
    int rc = 0;
    if (c->json)
        rc = write_json(doc, NULL, err);
    else
        prof_report_table(stdout, &g, set.items);
    if (rc == 0 && c->output)
        rc = write_json(doc, c->output, err);
    json_decref(doc);
    prof_grouping_free(&g);
    prof_profile_set_free(&set);
    return rc;
}

static int cmd_apply(cli *c, int nfiles, char **files, tm_err *err) {
    if (nfiles != 1)
        return tm_err_set(err, "give exactly one groups document (from `group -o`)");
    json_t *doc = tm_json_load_file(files[0], err);
    if (!doc)
        return -1;
    tm_kube *k = connect(c, err);
    if (!k) {
        json_decref(doc);
        return -1;
    }
    prof_apply_stats st;
    int rc = prof_apply(k, doc, c->dry_run, &st, err);
    /* No summary when the document was rejected or the cluster unreachable: nothing was done. */
    if (rc == 0 || st.labelled + st.cleaned + st.unchanged + st.missing > 0)
        printf("%s: %d node(s) labelled, %d cleaned, %d unchanged, %d missing\n",
               c->dry_run ? "dry run" : "applied", st.labelled, st.cleaned, st.unchanged,
               st.missing);
    tm_kube_free(k);
    json_decref(doc);
    return rc;
}

static int cmd_publish(cli *c, int nfiles, char **files, tm_err *err) {
    prof_profile_set set;
    if (load_profiles(nfiles, files, &set, err) != 0)
        return -1;
    tm_kube *k = connect(c, err);
    int rc = k ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < set.n; i++) {
        json_t *p = prof_profile_to_json(&set.items[i]);
        rc = prof_publish(k, c->ns ? c->ns : tm_kube_namespace(k), p, err);
        json_decref(p);
    }
    tm_kube_free(k);
    prof_profile_set_free(&set);
    return rc;
}

static int cmd_run(cli *c, tm_err *err) {
    if (c->nodes_arg && c->changed)
        return tm_err_set(err, "--nodes and --changed exclude each other");
    const char *list[4096];
    size_t n = 0;
    for (char *save = NULL, *t = c->nodes_arg ? strtok_r(c->nodes_arg, ",", &save) : NULL; t;
         t = strtok_r(NULL, ",", &save)) {
        if (n == sizeof list / sizeof list[0])
            return tm_err_set(err, "--nodes lists more than 4096 nodes");
        list[n++] = t;
    }
    /* An empty list (say --nodes "$EMPTY" in a script) must not mean "every node". */
    if (c->nodes_arg && n == 0)
        return tm_err_set(err, "--nodes: give at least one node name (omit --nodes to profile "
                               "every node)");
    tm_kube *k = connect(c, err);
    if (!k)
        return -1;
    prof_run_opts o = {.ns = c->ns,
                       .image = c->image,
                       .service_account = c->sa,
                       .nodes = n ? list : NULL,
                       .nnodes = n,
                       .changed = c->changed,
                       .quick = c->quick,
                       .timeout_s = c->timeout_s,
                       .output = c->output,
                       .dry_run = c->dry_run,
                       .group = c->group};
    prof_run_report rep;
    int rc = prof_run(k, &o, &rep, err);
    if (rc == 0 || rep.targets > 0)
        printf("run: %d node(s) targeted, %d profiled, %d reused, %zu failed, k=%d\n", rep.targets,
               rep.profiled, rep.reused, json_array_size(rep.failed), rep.k);
    size_t i;
    json_t *f;
    json_array_foreach(rep.failed, i, f) {
        printf("  not profiled: %s: %s\n", json_string_value(json_object_get(f, "node")),
               json_string_value(json_object_get(f, "reason")));
    }
    json_decref(rep.failed);
    tm_kube_free(k);
    return rc;
}

int main(int argc, char **argv) {
    tm_malloc_tune();
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    cli c;
    memset(&c, 0, sizeof c);
    prof_group_opts_default(&c.group);
    c.log_level = "info";
    c.log_format = "text";
    int prc = parse_args(argc - 1, argv + 1, &c);
    if (prc == 3)
        return 0;
    if (prc != 0)
        return 2;
    int nrest = argc - 1 - optind;
    char **rest = argv + 1 + optind;
    tm_err err;
    tm_err_clear(&err);
    int rc;
    if (strcmp(cmd, "bench") == 0 && nrest == 0)
        rc = cmd_bench(&c, &err);
    else if (strcmp(cmd, "group") == 0)
        rc = cmd_group(&c, nrest, rest, &err);
    else if (strcmp(cmd, "publish") == 0)
        rc = cmd_publish(&c, nrest, rest, &err);
    else if (strcmp(cmd, "apply") == 0)
        rc = cmd_apply(&c, nrest, rest, &err);
    else if (strcmp(cmd, "run") == 0 && nrest == 0)
        rc = cmd_run(&c, &err);
    else {
        fprintf(stderr, "tarema-profiler: unknown command or extra arguments: '%s'\n", cmd);
        usage(stderr);
        return 2;
    }
    if (rc != 0) {
        fprintf(stderr, "tarema-profiler %s: %s\n", cmd, err.msg);
        return 1;
    }
    return 0;
}
