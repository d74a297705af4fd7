/* queue_cmd.c: `tarema-scheduler queue` against the API (queue_cmd.h). */
#include "scheduler/cmd/queue_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/duration.h"
#include "lib/kube.h"
#include "scheduler/backend/cache.h"
#include "scheduler/cmd/queue_view.h"

/* The value of flag argv[*i] (short or long name), "--flag=V" / "-fV" forms too; advances *i
 * past it. NULL when argv[*i] is not that flag; err set (and NULL) when its value is missing. */
static const char *flag_value(int argc, char **argv, int *i, const char *s, const char *l,
                              bool *missing) {
    const char *a = argv[*i];
    size_t ll = strlen(l), sl = strlen(s);
    if (strcmp(a, s) == 0 || strcmp(a, l) == 0) {
        if (*i + 1 >= argc) {
            *missing = true;
            return NULL;
        }
        *i += 2;
        return argv[*i - 1];
    }
    if (strncmp(a, l, ll) == 0 && a[ll] == '=') {
        *i += 1;
        return a + ll + 1;
    }
    if (strncmp(a, s, sl) == 0 && a[sl]) { /* -nNS, -n=NS */
        *i += 1;
        return a + sl + (a[sl] == '=');
    }
    return NULL;
}

int sched_queue_cmd_args(int *argc, char **argv, sched_queue_cmd_opts *o, tm_err *err) {
    int out = 1, i = 1;
    while (i < *argc) {
        bool missing = false;
        const char *v;
        if (strcmp(argv[i], "-A") == 0 || strcmp(argv[i], "--all-namespaces") == 0) {
            o->all = true;
            i++;
        } else if ((v = flag_value(*argc, argv, &i, "-n", "--namespace", &missing))) {
            if (!*v)
                return tm_err_set(err, "-n/--namespace needs a namespace name");
            o->ns = v;
        } else if ((v = flag_value(*argc, argv, &i, "-o", "--output", &missing))) {
            if (strcmp(v, "json") != 0 && strcmp(v, "text") != 0)
                return tm_err_set(err, "-o takes text or json, not '%s'", v);
            o->json = strcmp(v, "json") == 0;
        } else if (missing) {
            return tm_err_set(err, "flag '%s' needs a value", argv[i]);
        } else {
            argv[out++] = argv[i++]; /* a scheduler flag (or a bad one: the config parser says) */
        }
    }
    if (o->all && o->ns)
        return tm_err_set(err, "-n %s and -A exclude each other", o->ns);
    *argc = out;
    return 0;
}

/* The policies whose queue order reads TaskProfiles (sjfn's shortest job, adaptive's rank). */
static bool reads_profiles(const char *policy) {
    return strcmp(policy, "sjfn") == 0 || strcmp(policy, "adaptive") == 0;
}

/* The pending pods of one scheduler name: cluster-wide, else (forbidden) in ns. *narrowed
 * tells. */
static json_t *list_pending_of(tm_kube *k, const char *name, const char *ns, bool *narrowed,
                               tm_err *err) {
    char sel[512];
    snprintf(sel, sizeof sel, "spec.schedulerName=%s,spec.nodeName=", name);
    tm_list_opts lo = {.field_selector = sel};
    json_t *items = tm_kube_list(k, "/api/v1/pods", &lo, NULL, err);
    *narrowed = false;
    if (items || err->http_status != 403 || !ns)
        return items;
    char *path = tm_kube_path("v1", "pods", ns, NULL, NULL);
    if (!path) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    tm_err_clear(err);
    items = tm_kube_list(k, path, &lo, NULL, err);
    free(path);
    *narrowed = items != NULL;
    return items;
}

/* The pending pods of every profile of cfg (one queue serves them all), one list per name. */
static json_t *list_pending(tm_kube *k, const sched_config *cfg, const char *ns, bool *narrowed,
                            tm_err *err) {
    json_t *all = list_pending_of(k, cfg->scheduler_name, ns, narrowed, err);
    for (size_t i = 0; all && i < cfg->n_profiles; i++) {
        bool nar = false;
        json_t *more = list_pending_of(k, cfg->profiles[i].scheduler_name, ns, &nar, err);
        if (!more || json_array_extend(all, more) != 0) {
            json_decref(more);
            json_decref(all);
            if (!err->msg[0])
                tm_err_set(err, "out of memory");
            return NULL;
        }
        json_decref(more);
        *narrowed |= nar;
    }
    return all;
}

int sched_queue_cmd_run(const sched_config *cfg, const sched_queue_cmd_opts *o) {
    tm_err err = {0};
    tm_kube_config *kc = tm_kube_config_auto(cfg->kubeconfig, cfg->context, &err);
    tm_kube *k = kc ? tm_kube_new(kc, &err) : NULL;
    tm_kube_config_free(kc);
    sched_keys keys = sched_config_keys(cfg);
    sched_cache *c = NULL;
    json_t *pods = NULL, *rows = NULL;
    int rc = 1;
    if (!k)
        goto out;
    const char *ns = o->all ? NULL : o->ns ? o->ns : tm_kube_namespace(k);
    bool narrowed = false;
    if (!(pods = list_pending(k, cfg, ns, &narrowed, &err))) {
        tm_err_wrap(&err, "listing the pending pods of scheduler %s", cfg->scheduler_name);
        goto out;
    }
    if (narrowed)
        fprintf(stderr,
                "note: pods cannot be listed in all namespaces (forbidden): positions are among "
                "the pods of namespace %s only\n",
                ns);
    if (!(c = sched_cache_new(cfg->scheduler_name, (const char *const *)cfg->namespaces, &keys,
                              NULL, &err)))
        goto out;
    if (reads_profiles(cfg->policy)) {
        tm_list_opts lo = {0};
        tm_err te = {0};
        json_t *tps = tm_kube_list(k, "/apis/tarema.io/v1alpha1/taskprofiles", &lo, NULL, &te);
        if (!tps)
            fprintf(stderr, "note: TaskProfiles unavailable (%s): pods ordered as without them\n",
                    te.msg);
        size_t i;
        json_t *it;
        json_array_foreach(tps, i, it) {
            te = (tm_err){0};
            if (sched_cache_task_event(c, TM_WATCH_ADDED, it, &te))
                fprintf(stderr, "note: TaskProfile skipped: %s\n", te.msg);
        }
        json_decref(tps);
    }
    int64_t now_ms = tm_wall_ms();
    rows = sched_queue_view_rows(sched_cache_snapshot(c), cfg->policy, pods, cfg->scheduler_name,
                                 (const char *const *)cfg->namespaces, ns, &keys, now_ms, &err);
    if (!rows)
        goto out;
    if (o->json) {
        json_dumpf(rows, stdout, JSON_INDENT(2));
        putchar('\n');
    } else {
        char *text = sched_queue_view_text(rows);
        if (!text) {
            tm_err_set(&err, "out of memory");
            goto out;
        }
        fputs(text, stdout);
        if (!json_array_size(rows))
            printf("(no pod pending for scheduler %s%s%s)\n", cfg->scheduler_name,
                   ns ? " in namespace " : "", ns ? ns : "");
        free(text);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    if (rc && err.msg[0])
        fprintf(stderr, "tarema-scheduler queue: %s\n", err.msg);
    json_decref(rows);
    json_decref(pods);
    sched_cache_free(c);
    tm_kube_free(k);
    return rc;
}
