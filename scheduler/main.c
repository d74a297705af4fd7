/* main.c: tarema-scheduler, a thin CLI over the scheduler modules.
 *
 *   tarema-scheduler [run] [flags]                     schedule pods (--mode extender: serve
 *                                                      the kube-scheduler extender instead)
 *   tarema-scheduler explain NS/POD [-o text|json] [flags]
 *                                                      every node group's score and why each
 *                                                      node was filtered, for a pending or a
 *                                                      bound pod (read from the API, so it
 *                                                      needs no running scheduler)
 *   tarema-scheduler queue [-n NS | -A] [-o text|json] [flags]
 *                                                      the pending pods in queue order with
 *                                                      their expected start and why they wait
 *                                                      (scheduler/cmd/queue_cmd.h)
 * Flags: see `tarema-scheduler --help` (scheduler/live/config.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/duration.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/log.h"
#include "lib/malloc_tune.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/live/config.h"
#include "scheduler/cmd/explain.h"
#include "scheduler/cmd/queue_cmd.h"
#include "scheduler/live/gang_live.h"
#include "scheduler/live/loop.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plugin.h"
#include "scheduler/cmd/server.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

static tm_kube *connect_api(const sched_config *cfg, tm_err *err) {
    tm_kube_config *kc = tm_kube_config_auto(cfg->kubeconfig, cfg->context, err);
    if (!kc)
        return NULL;
    kc->qps = cfg->qps;
    kc->burst = cfg->burst;
    kc->max_active = cfg->api_concurrency;
    kc->json_only = cfg->api_json;
    tm_kube *k = tm_kube_new(kc, err);
    tm_kube_config_free(kc);
    return k;
}

static int fill_identity(sched_config *cfg) {
    if (cfg->identity)
        return 0;
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    char id[300];
    snprintf(id, sizeof id, "%s_%ld", host, (long)getpid());
    cfg->identity = strdup(id);
    return cfg->identity ? 0 : -1;
}

static int cmd_run(sched_config *cfg) {
    tm_err err = {0};
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    tm_kube *k = connect_api(cfg, &err);
    if (!k) {
        fprintf(stderr, "tarema-scheduler: %s\n", err.msg);
        return 1;
    }
    tm_metrics *reg = tm_metrics_new();
    sched_loop *loop = reg ? sched_loop_new(cfg, k, reg, &err) : NULL;
    sched_server *srv = NULL;
    int rc = 1;
    if (!loop || !(srv = sched_server_start(cfg, loop, reg, k, &err)) ||
        sched_loop_start(loop, &err)) {
        fprintf(stderr, "tarema-scheduler: %s\n", reg ? err.msg : "out of memory");
        goto out;
    }
    rc = 0;
    while (!g_stop) {
        if (sched_loop_step(loop, 200, &err)) {
            tm_error("kube loop failed err=\"%s\"", err.msg);
            rc = 1;
            break;
        }
    }
    sched_loop_stats st = sched_loop_get_stats(loop);
    tm_info("stopping scheduled=%zu bound=%zu unschedulable=%zu bind_failures=%zu errors=%zu",
            st.scheduled, st.bound, st.unschedulable, st.bind_failures, st.errors);
    sched_loop_stop(loop);
    /* Give the Lease release (and the last events) a moment to reach the API server. */
    for (int i = 0; i < 10 && tm_kube_inflight(k) > 0; i++)
        tm_kube_run(k, 100, &err);
out:
    sched_server_free(srv);
    sched_loop_stop(loop);
    tm_kube_free(k);
    sched_loop_free(loop);
    tm_metrics_free(reg);
    return rc;
}

/* ---- explain ------------------------------------------------------------------------------- */

/* Every listed object into the cache as an ADDED event; kind: 0 nodes, 1 pods, 2 TaskProfiles,
 * 3 PersistentVolumeClaims, 4 PersistentVolumes. Objects it cannot understand are skipped. */
static void feed_items(sched_cache *c, const json_t *items, int kind) {
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        tm_err e = {0};
        int rc = kind == 0   ? sched_cache_node_event(c, TM_WATCH_ADDED, it, NULL, &e)
                 : kind == 1 ? sched_cache_pod_event(c, TM_WATCH_ADDED, it, NULL, &e)
                 : kind == 2 ? sched_cache_task_event(c, TM_WATCH_ADDED, it, &e)
                 : kind == 3 ? sched_cache_claim_event(c, TM_WATCH_ADDED, it, NULL, &e)
                             : sched_cache_volume_event(c, TM_WATCH_ADDED, it, NULL, &e);
        if (rc)
            fprintf(stderr, "note: skipped: %s\n", e.msg);
    }
}

static int feed_list(tm_kube *k, sched_cache *c, const char *path, const char *field_selector,
                     int kind, bool optional, tm_err *err) {
    tm_list_opts lo = {.field_selector = field_selector};
    json_t *items = tm_kube_list(k, path, &lo, NULL, err);
    if (!items) {
        if (optional && (err->http_status == 404 || err->http_status == 403)) {
            fprintf(stderr, "note: %s unavailable (%s): task labels unknown\n", path, err->msg);
            return 0;
        }
        return -1;
    }
    feed_items(c, items, kind);
    json_decref(items);
    return 0;
}

/* As the live scheduler: the Services' and controllers' selectors, for PodTopologySpread's
 * default constraints, and the configured defaults. A kind it may not list is left out, with a
 * note (the live scheduler runs without it too). */
static int feed_owners(tm_kube *k, sched_cache *c, sched_framework *fw, const sched_config *cfg,
                       tm_err *err) {
    if (sched_config_apply_spread(cfg, fw, err) || sched_cache_track_owner_selectors(c, err))
        return -1;
    for (int kind = 0; kind < SCHED_OWNER_KINDS; kind++) {
        tm_list_opts lo = {0};
        tm_err e = {0};
        const char *path = sched_owner_kind_path((sched_owner_kind)kind);
        json_t *items = tm_kube_list(k, path, &lo, NULL, &e);
        if (!items) {
            fprintf(stderr, "note: %s unavailable (%s): default spreading without them\n", path,
                    e.msg);
            continue;
        }
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            e = (tm_err){0};
            if (sched_cache_owner_event(c, (sched_owner_kind)kind, TM_WATCH_ADDED, it, &e))
                fprintf(stderr, "note: %s\n", e.msg);
        }
        json_decref(items);
    }
    return 0;
}

static int cmd_explain(sched_config *cfg, const char *target, bool as_json) {
    tm_err err = {0};
    char ns[256], name[256];
    const char *slash = strchr(target, '/');
    if (slash) {
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - target), target);
        snprintf(name, sizeof name, "%s", slash + 1);
    } else {
        snprintf(ns, sizeof ns, "default");
        snprintf(name, sizeof name, "%s", target);
    }
    if (!ns[0] || !name[0]) {
        fprintf(stderr, "tarema-scheduler explain: '%s' is not NAMESPACE/POD\n", target);
        return 2;
    }
    tm_kube *k = connect_api(cfg, &err);
    if (!k) {
        fprintf(stderr, "tarema-scheduler explain: %s\n", err.msg);
        return 1;
    }
    sched_keys keys = sched_config_keys(cfg);
    sched_cache *c = sched_cache_new(cfg->scheduler_name, NULL, &keys, NULL, &err);
    sched_framework *fw = c ? sched_policy_new(cfg->policy, &err) : NULL;
    /* the weights and profiles the live scheduler runs with: the pod is explained by its own */
    if (fw && (sched_framework_apply_weights(fw, &cfg->score_weights, &err) != 0 ||
               sched_config_add_profiles(cfg, fw, &err) != 0)) {
        sched_framework_free(fw);
        fw = NULL;
    }
    char *path = tm_kube_path("v1", "pods", ns, name, NULL);
    json_t *pod = NULL, *doc = NULL;
    sched_pod *sp = NULL;
    resv_plugin_book *book = NULL;
    sched_gang_registry *units = NULL; /* placed gangs, read by fw's preemption until it is freed */
    int rc = 1;
    if (!fw || !path)
        goto out;
    if (!(pod = tm_kube_get(k, path, &err)))
        goto out;
    if (feed_list(k, c, "/api/v1/nodes", NULL, 0, false, &err) ||
        feed_list(k, c, "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed", 1, false,
                  &err) ||
        feed_list(k, c, "/apis/tarema.io/v1alpha1/taskprofiles", NULL, 2, true, &err))
        goto out;
    if (cfg->mode == SCHED_MODE_SCHEDULER) { /* as the live scheduler: VolumeBinding too */
        if (sched_cache_track_volumes(c, &err))
            goto out;
        tm_list_opts lo = {0};
        json_t *claims = tm_kube_list(k, "/api/v1/persistentvolumeclaims", &lo, NULL, &err);
        json_t *vols =
            claims ? tm_kube_list(k, "/api/v1/persistentvolumes", &lo, NULL, &err) : NULL;
        if (!vols) { /* e.g. RBAC: explain without the volume filter rather than not at all */
            fprintf(stderr, "note: volumes unavailable (%s): VolumeBinding not evaluated\n",
                    err.msg);
            sched_cache_untrack_volumes(c);
        } else {
            feed_items(c, claims, 3);
            feed_items(c, vols, 4);
        }
        json_decref(claims);
        json_decref(vols);
    }
    if (cfg->mode == SCHED_MODE_SCHEDULER && feed_owners(k, c, fw, cfg, &err))
        goto out;
    sched_snapshot *snap = sched_cache_snapshot(c);
    if (!(sp = sched_pod_from_json(snap, pod, &keys, &err)))
        goto out;
    /* held reservations: their Filter plugin, as the live scheduler runs it (resv_plugin.h) */
    tm_list_opts ro = {0};
    json_t *resvs = tm_kube_list(k, "/apis/tarema.io/v1alpha1/reservations", &ro, NULL, &err);
    if (!resvs && err.http_status != 404 && err.http_status != 403)
        goto out;
    ro.field_selector = "status.phase!=Succeeded,status.phase!=Failed"; /* owners' use */
    json_t *pods = json_array_size(resvs) ? tm_kube_list(k, "/api/v1/pods", &ro, NULL, &err) : NULL;
    if (!json_array_size(resvs) || pods)
        book = resv_plugin_explain(snap, fw, resvs, cfg->scheduler_name, pod, pods, &keys, &err);
    json_decref(resvs);
    json_decref(pods);
    if (!book)
        goto out;
    /* a running gang is a single pod's victim only as a whole, as the live scheduler takes it */
    if (cfg->mode == SCHED_MODE_SCHEDULER &&
        (!(units = sched_gang_registry_new()) || sched_gang_explain_units(k, fw, units, &err))) {
        if (!units)
            tm_err_set(&err, "out of memory");
        goto out;
    }
    int64_t now = tm_wall_ms();
    doc = sched_explain(fw, snap, sp, now, &err);
    if (!doc)
        goto out;
    /* a gang member: the gang's state and why it waits (gang_live.h) */
    json_t *gang = sched_gang_explain(k, fw, snap, pod, &keys, &err);
    if (!gang)
        goto out;
    if (json_is_object(gang)) {
        /* a gang preempts as one unit (its own "preemption"), never for one member alone */
        if (!json_is_true(json_object_get(gang, "basic")))
            json_object_del(doc, "preemption");
        json_object_set_new(doc, "gang", gang);
    } else {
        json_decref(gang);
    }
    sched_explain_predicted_start(doc, pod, now / 1000 * 1000); /* issue 18 */
    sched_explain_expected_start(doc, pod, now / 1000 * 1000);  /* issue 32 */
    /* an owner of a held Reservation: which case of the owner's rule applies (resv_plugin.h) */
    char note[512];
    if (resv_plugin_book_owner_note(book, &sp->requests, now, note, sizeof note))
        json_object_set_new(doc, "reservationOwner", json_string(note));
    if (as_json) {
        json_dumpf(doc, stdout, JSON_INDENT(2));
        putchar('\n');
    } else {
        char *text = sched_explain_text(doc);
        if (!text) {
            tm_err_set(&err, "out of memory");
            goto out;
        }
        fputs(text, stdout);
        free(text);
    }
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "tarema-scheduler explain %s/%s: %s\n", ns, name, err.msg);
    json_decref(doc);
    json_decref(pod);
    sched_pod_free(sp);
    free(path);
    sched_framework_free(fw);
    sched_gang_registry_free(units);
    resv_plugin_book_free(book); /* the plugin reads it until fw is freed */
    sched_cache_free(c);
    tm_kube_free(k);
    return rc;
}

int main(int argc, char **argv) {
    tm_malloc_tune();
    const char *cmd = "run";
    int first = 1; /* index of the first flag */
    if (argc > 1 && argv[1][0] != '-') {
        cmd = argv[1];
        first = 2;
    }
    const char *target = NULL;
    bool as_json = false;
    bool queue = false;
    sched_queue_cmd_opts qo = {0};
    if (strcmp(cmd, "queue") == 0) {
        tm_err qerr = {0};
        int qargc = argc - first + 1; /* argv[first - 1] stands in for the program name */
        if (sched_queue_cmd_args(&qargc, argv + first - 1, &qo, &qerr)) {
            fprintf(stderr, "tarema-scheduler queue: %s\n", qerr.msg);
            return 2;
        }
        argc = first - 1 + qargc;
        queue = true;
    } else if (strcmp(cmd, "explain") == 0) {
        if (argc <= first || argv[first][0] == '-') {
            fprintf(stderr, "usage: tarema-scheduler explain NAMESPACE/POD [-o text|json] "
                            "[flags]\n");
            return 2;
        }
        target = argv[first++];
        if (argc > first + 1 && strcmp(argv[first], "-o") == 0) {
            if (strcmp(argv[first + 1], "json") != 0 && strcmp(argv[first + 1], "text") != 0) {
                fprintf(stderr, "tarema-scheduler explain: -o takes text or json, not '%s'\n",
                        argv[first + 1]);
                return 2;
            }
            as_json = strcmp(argv[first + 1], "json") == 0;
            first += 2;
        }
    } else if (strcmp(cmd, "run") != 0) {
        fprintf(stderr, "tarema-scheduler: unknown command '%s'\n%s", cmd, sched_config_usage());
        return 2;
    }
    sched_config *cfg = sched_config_new();
    if (!cfg) {
        fprintf(stderr, "tarema-scheduler: out of memory\n");
        return 1;
    }
    tm_err err = {0};
    bool help = false;
    /* The flags, with argv[first - 1] standing in for the program name. */
    int rc;
    if (sched_config_from_args(cfg, argc - first + 1, argv + first - 1, &help, &err) ||
        (!help && sched_config_validate(cfg, &err))) {
        fprintf(stderr, "tarema-scheduler: %s\n", err.msg);
        rc = 2;
    } else if (help) {
        fputs(sched_config_usage(), stdout);
        rc = 0;
    } else if (tm_log_configure(cfg->log_level, cfg->log_format) || fill_identity(cfg)) {
        fprintf(stderr, "tarema-scheduler: bad log settings or out of memory\n");
        rc = 2;
    } else if (queue) {
        rc = sched_queue_cmd_run(cfg, &qo);
    } else if (target) {
        rc = cmd_explain(cfg, target, as_json);
    } else {
        rc = cmd_run(cfg);
    }
    sched_config_free(cfg);
    return rc;
}
