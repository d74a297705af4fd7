/* cli.c: submit, list, show, cancel, gantt against the API server (cli.h). */
#include "planner/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/args.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/yamljson.h"
#include "planner/gantt.h"
#include "planner/kobj.h"
#include "planner/occupancy.h"
#include "planner/predict.h"
#include "planner/problem.h"
#include "planner/units.h"

typedef struct cli_opts {
    const char *kubeconfig, *context, *ns, *deployment, *svg;
    const char *node_selector; /* gantt: only these nodes (the controller's --node-selector) */
    int dry_run, retries;
    int64_t wait_s;
} cli_opts;

static int fail(const char *fmt, const char *a) {
    fprintf(stderr, "tarema-planner: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return 1;
}

static tm_kube *connect_api(const cli_opts *o, tm_err *err) {
    tm_kube_config *kc = tm_kube_config_auto(o->kubeconfig, o->context, err);
    if (!kc)
        return NULL;
    tm_kube *k = tm_kube_new(kc, err);
    tm_kube_config_free(kc);
    return k;
}

static const char *ns_of(const cli_opts *o, tm_kube *k) {
    return o->ns ? o->ns : k ? tm_kube_namespace(k) : "default";
}

static char *wf_path(const char *ns, const char *name, const char *sub) {
    return tm_kube_path(PL_GV, "workflows", ns, name, sub);
}

static const char *clock_of(const char *rfc, char *buf, size_t size) {
    int64_t t = pl_time_parse(rfc);
    if (t < 0)
        return "-";
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    strftime(buf, size, "%H:%M:%S", &tm);
    return buf;
}

/* ---- submit ------------------------------------------------------------------------------ */

/* The plan's lines: "step LES starts at 10:57:00 on c2-1,c2-2 and ends 11:12:00". */
static void print_plan(const json_t *wf) {
    json_t *ss;
    size_t i;
    json_array_foreach(tm_json_path(wf, "status.steps"), i, ss) {
        char a[32], b[32];
        printf("step %s starts at %s on ", tm_json_str(ss, "name", ""),
               clock_of(tm_json_str(ss, "start", NULL), a, sizeof a));
        json_t *n;
        size_t k;
        json_array_foreach(json_object_get(ss, "nodes"), k, n) {
            printf("%s%s", k ? "," : "", json_string_value(n));
        }
        printf(" and ends %s\n", clock_of(tm_json_str(ss, "end", NULL), b, sizeof b));
    }
}

static int cmd_submit(const cli_opts *o, const char *file) {
    tm_err err = {0};
    json_t *doc = NULL, *dep = NULL, *native = NULL, *obj = NULL, *nodes = NULL, *got = NULL;
    pl_workflow *wf = NULL, *check = NULL;
    pl_cluster *cl = NULL;
    pl_problem prob = {0};
    tm_kube *k = NULL;
    int rc = 1;
    if (!(doc = tm_yaml_load_file(file, &err)))
        goto out;
    if (pl_is_cwl(doc)) {
        if (!o->deployment) {
            tm_err_set(&err,
                       "%s is CWL: --deployment FILE (tools: {NAME: {image: ...}}) is required",
                       file);
            goto out;
        }
        if (!(dep = tm_yaml_load_file(o->deployment, &err)) ||
            !(wf = pl_workflow_from_cwl(doc, file, dep, o->deployment, &err)))
            goto out;
        native = pl_workflow_native_json(wf);
    } else {
        if (!(wf = pl_workflow_from_native(doc, file, &err)))
            goto out;
        native = json_incref(doc);
    }
    k = connect_api(o, &err);
    if (!k && !o->dry_run)
        goto out;
    obj = pl_workflow_object(native, ns_of(o, k), o->retries);
    if (!obj || !(check = pl_workflow_from_object(obj, &err)))
        goto out;
    /* a step larger than the live cluster: refused here, before anything is created */
    if (k) {
        tm_list_opts lo = {0};
        if (!(nodes = tm_kube_list(k, "/api/v1/nodes", &lo, NULL, &err)))
            goto out;
        if (!(cl = pl_world_cluster(nodes, &err)))
            goto out;
        for (int i = 0; i < check->nsteps; i++)
            if (check->steps[i].task[0] && check->steps[i].duration_s <= 0)
                check->steps[i].duration_s = 1; /* predicted by the controller */
        if (pl_check_step_groups(check, cl, &err) < 0 ||
            pl_problem_init(&prob, check, cl, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) < 0) {
            tm_err_wrap(&err, "%s", file);
            goto out;
        }
    }
    if (o->dry_run) {
        char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s ? s : "");
        free(s);
        fprintf(stderr, "dry run: workflow %s checked, nothing created\n", wf->name);
        rc = 0;
        goto out;
    }
    char *path = wf_path(ns_of(o, k), NULL, NULL);
    got = tm_kube_create(k, path, obj, &err);
    free(path);
    if (!got)
        goto out;
    printf("workflow %s/%s submitted\n", ns_of(o, k), wf->name);
    rc = 0;
    path = wf_path(ns_of(o, k), wf->name, NULL);
    for (int64_t waited = 0; waited < o->wait_s * 10; waited++) {
        json_t *w = tm_kube_get(k, path, &err);
        const char *phase = tm_json_str(w, "status.phase", "");
        if (w && tm_json_str(w, "status.plannedAt", NULL)) {
            print_plan(w);
            json_decref(w);
            break;
        }
        if (w && !strcmp(phase, "Failed")) {
            fprintf(stderr, "tarema-planner: workflow %s failed: %s\n", wf->name,
                    tm_json_str(w, "status.message", ""));
            json_decref(w);
            rc = 1;
            break;
        }
        json_decref(w);
        if (waited + 1 >= o->wait_s * 10)
            printf("not planned yet: is `tarema-planner run` running? (tarema-planner show %s)\n",
                   wf->name);
        usleep(100000);
    }
    free(path);
out:
    if (rc && err.msg[0])
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
    if (prob.wf)
        pl_problem_free(&prob);
    pl_cluster_free(cl);
    pl_workflow_free(wf);
    pl_workflow_free(check);
    json_decref(doc);
    json_decref(dep);
    json_decref(native);
    json_decref(obj);
    json_decref(nodes);
    json_decref(got);
    tm_kube_free(k);
    return rc;
}

/* ---- list, show, cancel ------------------------------------------------------------------ */

static int cmd_list(const cli_opts *o) {
    tm_err err = {0};
    tm_kube *k = connect_api(o, &err);
    if (!k)
        return fail("%s", err.msg);
    char *path = wf_path(o->ns, NULL, NULL);
    tm_list_opts lo = {0};
    json_t *items = tm_kube_list(k, path, &lo, NULL, &err);
    free(path);
    if (!items) {
        tm_kube_free(k);
        return fail("%s", err.msg);
    }
    printf("%-12s %-24s %-10s %5s %-10s %-14s %s\n", "NAMESPACE", "NAME", "PHASE", "STEPS", "NEXT",
           "PREDICTED-END", "MAKESPAN");
    size_t i;
    json_t *w;
    json_array_foreach(items, i, w) {
        char a[32], b[32];
        long long ms = tm_json_int(w, "status.makespanSeconds", -1);
        printf("%-12s %-24s %-10s %5zu %-10s %-14s ", tm_json_str(w, "metadata.namespace", ""),
               tm_json_str(w, "metadata.name", ""), tm_json_str(w, "status.phase", "Pending"),
               json_array_size(tm_json_path(w, "spec.steps")),
               clock_of(tm_json_str(w, "status.nextStart", NULL), a, sizeof a),
               clock_of(tm_json_str(w, "status.predictedEnd", NULL), b, sizeof b));
        if (ms >= 0)
            printf("%lld:%02lld\n", ms / 60, ms % 60);
        else
            printf("-\n");
    }
    json_decref(items);
    tm_kube_free(k);
    return 0;
}

static json_t *get_wf(const cli_opts *o, tm_kube *k, const char *name, tm_err *err) {
    char *path = wf_path(ns_of(o, k), name, NULL);
    json_t *w = tm_kube_get(k, path, err);
    free(path);
    return w;
}

static int cmd_show(const cli_opts *o, const char *name) {
    tm_err err = {0};
    tm_kube *k = connect_api(o, &err);
    json_t *w = k ? get_wf(o, k, name, &err) : NULL;
    if (!w) {
        tm_kube_free(k);
        return fail("%s", err.msg);
    }
    printf("workflow %s/%s: %s", ns_of(o, k), name, tm_json_str(w, "status.phase", "Pending"));
    const char *msg = tm_json_str(w, "status.message", "");
    if (*msg)
        printf(" (%s)", msg);
    printf("; solver %s; replans %lld\n", tm_json_str(w, "status.solver", "-"),
           tm_json_int(w, "status.replans", 0));
    printf("%-16s %-10s %-13s %-9s %-9s %-9s %-9s %-12s %-10s %-10s %s\n", "STEP", "STATE", "MODE",
           "START", "END", "ACT-START", "ACT-END", "WAIT-EST", "PREDICTED", "ACTUAL", "NODES");
    json_t *ss;
    size_t i;
    json_array_foreach(tm_json_path(w, "status.steps"), i, ss) {
        char a[32], b[32], c[32], d[32];
        long long pr = tm_json_int(ss, "predictedSeconds", -1),
                  ac = tm_json_int(ss, "actualSeconds", -1);
        char ps[32] = "-", as[32] = "-";
        if (pr >= 0)
            snprintf(ps, sizeof ps, "%lld:%02lld", pr / 60, pr % 60);
        if (ac >= 0)
            snprintf(as, sizeof as, "%lld:%02lld", ac / 60, ac % 60);
        /* proactive steps: the queue wait they are (or were) released with, and its source */
        char est[32] = "-";
        const char *src = tm_json_str(ss, "estimateSource", NULL);
        if (src)
            snprintf(est, sizeof est, "%llds %s", (long long)tm_json_int(ss, "estimateSeconds", 0),
                     src);
        printf("%-16s %-10s %-13s %-9s %-9s %-9s %-9s %-12s %-10s %-10s ",
               tm_json_str(ss, "name", ""), tm_json_str(ss, "state", "-"),
               tm_json_str(ss, "mode", "-"), clock_of(tm_json_str(ss, "start", NULL), a, sizeof a),
               clock_of(tm_json_str(ss, "end", NULL), b, sizeof b),
               clock_of(tm_json_str(ss, "actualStart", NULL), c, sizeof c),
               clock_of(tm_json_str(ss, "actualEnd", NULL), d, sizeof d), est, ps, as);
        json_t *n;
        size_t kk;
        json_array_foreach(json_object_get(ss, "nodes"), kk, n) {
            printf("%s%s", kk ? "," : "", json_string_value(n));
        }
        printf("\n");
    }
    json_decref(w);
    tm_kube_free(k);
    return 0;
}

static int cmd_cancel(const cli_opts *o, const char *name) {
    tm_err err = {0};
    tm_kube *k = connect_api(o, &err);
    if (!k)
        return fail("%s", err.msg);
    char *path = wf_path(ns_of(o, k), name, NULL);
    json_t *patch = json_pack("{s:{s:b}}", "spec", "cancel", 1);
    json_t *r = tm_kube_patch(k, path, TM_PATCH_MERGE, patch, &err);
    int rc = r ? 0 : 1;
    if (r)
        printf("workflow %s/%s: cancel requested; the controller deletes its reservations and "
               "gated pods\n",
               ns_of(o, k), name);
    else
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
    for (int64_t waited = 0; r && waited < o->wait_s * 10; waited++) {
        json_t *w = tm_kube_get(k, path, &err);
        int done = w && !strcmp(tm_json_str(w, "status.phase", ""), "Cancelled");
        json_decref(w);
        if (done) {
            printf("workflow %s/%s: Cancelled\n", ns_of(o, k), name);
            break;
        }
        usleep(100000);
    }
    json_decref(r);
    json_decref(patch);
    free(path);
    tm_kube_free(k);
    return rc;
}

/* ---- gantt ------------------------------------------------------------------------------- */

static int cmd_gantt(const cli_opts *o, const char *name) {
    tm_err err = {0};
    if (!o->svg)
        return fail("%s", "gantt needs --svg FILE");
    tm_kube *k = connect_api(o, &err);
    json_t *w = k ? get_wf(o, k, name, &err) : NULL, *nodes = NULL, *pods = NULL, *resvs = NULL,
           *none = json_array();
    pl_cluster *cl = NULL;
    pl_busy *busy = NULL, *all = NULL;
    int nbusy = 0, nall = 0, rc = 1;
    tm_list_opts lo = {0};
    char *rpath = tm_kube_path(PL_GV, "reservations", NULL, NULL, NULL);
    if (!w || !(nodes = tm_kube_list(k, "/api/v1/nodes", &lo, NULL, &err)) ||
        !(pods = tm_kube_list(k, "/api/v1/pods", &lo, NULL, &err)))
        goto out;
    resvs = tm_kube_list(k, rpath, &lo, NULL, &err);
    if (!resvs) /* no Reservation CRD: nothing reserved */
        resvs = json_array();
    json_t *sel = pl_selector_parse(o->node_selector);
    if (!sel) {
        tm_err_set(&err, "--node-selector '%s': expected k=v[,k=v...]", o->node_selector);
        goto out;
    }
    for (size_t i = json_array_size(nodes); i-- > 0;)
        if (!pl_selector_match(sel, json_array_get(nodes, i)))
            json_array_remove(nodes, i);
    json_decref(sel);
    if (!(cl = pl_world_cluster(nodes, &err)))
        goto out;
    int64_t now = (int64_t)time(NULL);
    pl_world_opts wo = {.now = now,
                        .overrun_s = 60,
                        .unknown_hold_s = 3600,
                        .skip_ns = tm_json_str(w, "metadata.namespace", ""),
                        .skip_wf = name};
    if (pl_world_busy(cl, pods, none, NULL, &wo, &busy, &nbusy) < 0 ||
        pl_world_busy(cl, pods, resvs, NULL, &wo, &all, &nall) < 0) {
        tm_err_set(&err, "out of memory");
        goto out;
    }
    char *svg = pl_gantt_svg(cl, busy, nbusy, all + nbusy, nall - nbusy, w, now);
    FILE *f = svg ? fopen(o->svg, "w") : NULL;
    if (!svg || !f || fputs(svg, f) < 0) {
        tm_err_set(&err, "cannot write %s", o->svg);
    } else {
        printf("wrote %s (%d nodes, %d steps)\n", o->svg, cl->nnodes,
               (int)json_array_size(tm_json_path(w, "status.steps")));
        rc = 0;
    }
    if (f && fclose(f) != 0 && rc == 0) {
        tm_err_set(&err, "cannot write %s", o->svg);
        rc = 1;
    }
    free(svg);
out:
    if (rc && err.msg[0])
        fprintf(stderr, "tarema-planner: %s\n", err.msg);
    free(rpath);
    free(busy);
    free(all);
    pl_cluster_free(cl);
    json_decref(w);
    json_decref(nodes);
    json_decref(pods);
    json_decref(resvs);
    json_decref(none);
    tm_kube_free(k);
    return rc;
}

int pl_cli_main(const char *cmd, int argc, char **argv) {
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, 0, 'k'},    {"context", required_argument, 0, 'C'},
        {"namespace", required_argument, 0, 'n'},     {"deployment", required_argument, 0, 'd'},
        {"retries", required_argument, 0, 'r'},       {"dry-run", no_argument, 0, 'D'},
        {"wait", required_argument, 0, 'w'},          {"svg", required_argument, 0, 's'},
        {"node-selector", required_argument, 0, 'N'}, {0, 0, 0, 0}};
    cli_opts o = {.wait_s = !strcmp(cmd, "submit") ? 30 : 0};
    tm_err err = {0};
    int c;
    optind = 2;
    tm_err aerr = {0};
    while ((c = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
        switch (c) {
        case 'k':
            o.kubeconfig = optarg;
            break;
        case 'C':
            o.context = optarg;
            break;
        case 'n':
            o.ns = optarg;
            break;
        case 'd':
            o.deployment = optarg;
            break;
        case 'r':
            if (tm_arg_int("retries", optarg, 0, 100, &o.retries, &aerr))
                return fail("%s", aerr.msg);
            break;
        case 'D':
            o.dry_run = 1;
            break;
        case 'w':
            if (pl_duration_parse(optarg, &o.wait_s, &err) < 0)
                return fail("--wait: %s", err.msg);
            break;
        case 's':
            o.svg = optarg;
            break;
        case 'N':
            o.node_selector = optarg;
            break;
        default:
            return 2;
        }
    }
    int rest = argc - optind;
    if (!strcmp(cmd, "list"))
        return rest == 0 ? cmd_list(&o) : fail("%s", "list takes no argument");
    if (rest != 1)
        return fail("%s needs exactly one argument (a FILE for submit, else a workflow NAME)", cmd);
    const char *arg = argv[optind];
    if (!strcmp(cmd, "submit"))
        return cmd_submit(&o, arg);
    if (!strcmp(cmd, "show"))
        return cmd_show(&o, arg);
    if (!strcmp(cmd, "cancel"))
        return cmd_cancel(&o, arg);
    if (!strcmp(cmd, "gantt"))
        return cmd_gantt(&o, arg);
    return fail("unknown command '%s'", cmd);
}
