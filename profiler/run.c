/* run.c: see run.h. */
#include "profiler/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/fileutil.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "profiler/apply.h"
#include "profiler/nodeprofile.h"

static unsigned fnv1a(const char *s) {
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

void prof_job_name(const char *node, char *out, size_t cap) {
    size_t plen = strlen(PROF_CM_PREFIX);
    if (plen + strlen(node) <= 63) {
        snprintf(out, cap, "%s%s", PROF_CM_PREFIX, node);
        return;
    }
    /* 15 prefix + 39 of the name + '-' + 8 hex = 63; the hash keeps long names distinct. */
    snprintf(out, cap, "%s%.39s-%08x", PROF_CM_PREFIX, node, fnv1a(node));
}

/* The ConfigMap holding a node's profile: tarema-profile-<node> (node names are at most 253
 * characters, so out needs 270). */
static void cm_name(const char *node, char *out, size_t cap) {
    snprintf(out, cap, "%s%s", PROF_CM_PREFIX, node);
}

int prof_publish(tm_kube *k, const char *ns, const json_t *profile, tm_err *err) {
    const char *node = json_string_value(json_object_get(profile, "node"));
    if (!node || !*node)
        return tm_err_set(err, "publish: the profile has no 'node'");
    char name[300];
    cm_name(node, name, sizeof name);
    if (strlen(name) > 253)
        return tm_err_set(err, "publish: ConfigMap name '%s' is longer than 253 characters", name);
    char *data = json_dumps(profile, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *cm = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                           "ConfigMap", "metadata", "name", name, "namespace", ns, "labels",
                           "app.kubernetes.io/component", "tarema-profile", "data", PROF_CM_KEY,
                           data ? data : "{}");
    free(data);
    char *coll = tm_kube_path("v1", "configmaps", ns, NULL, NULL);
    json_t *r = tm_kube_create(k, coll, cm, err);
    free(coll);
    if (!r && err && err->http_status == 409) {
        char *one = tm_kube_path("v1", "configmaps", ns, name, NULL);
        r = tm_kube_replace(k, one, cm, err);
        free(one);
    }
    json_decref(cm);
    if (!r)
        return tm_err_wrap(err, "publishing profile of node %s to ConfigMap %s/%s", node, ns, name);
    json_decref(r);
    return 0;
}

json_t *prof_job_manifest(const char *node, const char *ns, const char *image,
                          const char *service_account, bool quick) {
    char name[64];
    prof_job_name(node, name, sizeof name);
    json_t *args = json_pack("[s,s,s,s,s,s,s]", "bench", "--node", node, "--publish", "--namespace",
                             ns, "--dir=/scratch");
    if (quick)
        json_array_append_new(args, json_string("--quick"));
    /* The pod passes the "restricted" Pod Security level: non-root, read-only root, no
     * privilege escalation, no capabilities, RuntimeDefault seccomp; fio writes only to the
     * emptyDir. Requests reserve what the benchmark uses (the fio file needs ephemeral
     * storage); there is deliberately no cpu limit, because a throttled container would
     * measure the quota instead of the node's cpu. */
    json_t *security =
        json_pack("{s:b,s:b,s:b,s:{s:[s]},s:{s:s}}", "runAsNonRoot", 1, "readOnlyRootFilesystem", 1,
                  "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL", "seccompProfile",
                  "type", "RuntimeDefault");
    json_t *resources =
        json_pack("{s:{s:s,s:s,s:s},s:{s:s,s:s}}", "requests", "cpu", "100m", "memory", "256Mi",
                  "ephemeral-storage", quick ? "2Gi" : "5Gi", "limits", "memory", "1Gi",
                  "ephemeral-storage", quick ? "3Gi" : "6Gi");
    json_t *container =
        json_pack("{s:s,s:s,s:o,s:[{s:s,s:{s:{s:s}}}],s:[{s:s,s:s}],s:o,s:o}", "name", "bench",
                  "image", image, "args", args, "env", "name", "NODE_NAME", "valueFrom", "fieldRef",
                  "fieldPath", "spec.nodeName", "volumeMounts", "name", "scratch", "mountPath",
                  "/scratch", "securityContext", security, "resources", resources);
    /* Pinned by nodeName (bypasses schedulers, so even a node our scheduler would avoid is
     * measured), tolerating every taint; the fio file goes to an emptyDir on the node's disk. */
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:i,s:i,s:{s:{s:{s:s}},s:{s:s,s:s,s:s,"
                     "s:{s:i,s:i,s:{s:s}},s:[{s:s}],s:[o],s:[{s:s,s:{}}]}}}}",
                     "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "namespace",
                     ns, "labels", "app.kubernetes.io/component", "tarema-profile", "spec",
                     "backoffLimit", 0, "ttlSecondsAfterFinished", 600, "template", "metadata",
                     "labels", "app.kubernetes.io/component", "tarema-profile", "spec", "nodeName",
                     node, "restartPolicy", "Never", "serviceAccountName",
                     service_account ? service_account : "tarema-profiler", "securityContext",
                     "runAsUser", 10001, "runAsGroup", 10001, "seccompProfile", "type",
                     "RuntimeDefault", "tolerations", "operator", "Exists", "containers", container,
                     "volumes", "name", "scratch", "emptyDir");
}

/* Deletes a namespaced object; 404 is fine. Background propagation removes a Job's pods. */
static void delete_quiet(tm_kube *k, const char *gv, const char *res, const char *ns,
                         const char *name) {
    char *p = tm_kube_path(gv, res, ns, name, NULL);
    tm_err e;
    json_t *body = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                             "propagationPolicy", "Background");
    json_t *r = tm_kube_request(k, "DELETE", p, body, NULL, NULL, &e);
    if (!r && e.http_status != 404)
        tm_warn("could not delete %s %s/%s: %s", res, ns, name, e.msg);
    json_decref(r);
    json_decref(body);
    free(p);
}

static bool in_list(const char *const *list, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0)
            return true;
    return false;
}

/* The nodes to profile now: --nodes (each must exist), --changed, or all. */
static json_t *select_targets(const json_t *nodes, const prof_run_opts *o, tm_err *err) {
    json_t *t = json_array();
    for (size_t i = 0; i < o->nnodes; i++) {
        bool found = false;
        size_t j;
        json_t *n;
        json_array_foreach(nodes, j, n) {
            found = found || strcmp(tm_json_str(n, "metadata.name", ""), o->nodes[i]) == 0;
        }
        if (!found) {
            json_decref(t);
            tm_err_set(err, "--nodes: node '%s' is not in the cluster", o->nodes[i]);
            return NULL;
        }
    }
    size_t j;
    json_t *n;
    json_array_foreach(nodes, j, n) {
        const char *name = tm_json_str(n, "metadata.name", NULL);
        if (!name)
            continue;
        if (o->nnodes ? in_list(o->nodes, o->nnodes, name) : (!o->changed || prof_node_changed(n)))
            json_array_append_new(t, json_string(name));
    }
    return t;
}

/* Why a target's Job failed, if it did ("" while it runs). */
static void job_failure(tm_kube *k, const char *ns, const char *node, char *why, size_t cap) {
    char name[64];
    prof_job_name(node, name, sizeof name);
    char *p = tm_kube_path("batch/v1", "jobs", ns, name, NULL);
    tm_err e;
    json_t *job = tm_kube_get(k, p, &e);
    free(p);
    why[0] = '\0';
    if (!job)
        return;
    if (tm_json_int(job, "status.failed", 0) > 0) {
        json_t *conds = tm_json_path(job, "status.conditions");
        size_t i;
        json_t *c;
        snprintf(why, cap, "benchmark Job %s failed", name);
        json_array_foreach(conds, i, c) {
            if (strcmp(tm_json_str(c, "type", ""), "Failed") == 0)
                snprintf(why, cap, "benchmark Job %s failed: %s", name,
                         tm_json_str(c, "message", tm_json_str(c, "reason", "")));
        }
    }
    json_decref(job);
}

/* A profile from ConfigMap data, or from a node's annotation figures (a node profiled
 * earlier whose ConfigMap is gone). New reference or NULL. */
static json_t *profile_from_cm(const json_t *cm) {
    /* The key has a dot in it, so it is looked up directly rather than as a path. */
    const char *data = json_string_value(json_object_get(json_object_get(cm, "data"), PROF_CM_KEY));
    return data ? json_loads(data, 0, NULL) : NULL;
}

static json_t *profile_from_annotation(const json_t *node) {
    json_t *ann = json_object_get(tm_json_path(node, "metadata.annotations"), PROF_PROFILE_ANNOT);
    if (!json_is_string(ann))
        return NULL;
    json_t *a = json_loads(json_string_value(ann), 0, NULL);
    json_t *fig = json_object_get(a, "figures");
    json_t *p = json_is_object(fig) ? json_deep_copy(fig) : NULL;
    if (p)
        json_object_set_new(p, "node", json_string(tm_json_str(node, "metadata.name", "")));
    json_decref(a);
    return p;
}

static json_t *list_profile_cms(tm_kube *k, const char *ns, tm_err *err) {
    char *p = tm_kube_path("v1", "configmaps", ns, NULL, NULL);
    tm_list_opts lo = {.label_selector = "app.kubernetes.io/component=tarema-profile"};
    json_t *l = tm_kube_list(k, p, &lo, NULL, err);
    free(p);
    return l;
}

static const json_t *find_cm(const json_t *cms, const char *node) {
    char name[300];
    cm_name(node, name, sizeof name);
    size_t i;
    json_t *c;
    json_array_foreach(cms, i, c) {
        if (strcmp(tm_json_str(c, "metadata.name", ""), name) == 0)
            return c;
    }
    return NULL;
}

static void add_failure(prof_run_report *rep, const char *node, const char *why) {
    json_array_append_new(rep->failed, json_pack("{s:s,s:s}", "node", node, "reason", why));
    tm_warn("node not profiled node=%s reason=\"%s\"", node, why);
}

/* Starts the Jobs after removing each target's old ConfigMap and Job. */
static int start_jobs(tm_kube *k, const char *ns, const json_t *targets, const prof_run_opts *o,
                      tm_err *err) {
    size_t i;
    json_t *t;
    json_array_foreach(targets, i, t) {
        const char *node = json_string_value(t);
        char cm[300], job[64];
        cm_name(node, cm, sizeof cm);
        prof_job_name(node, job, sizeof job);
        delete_quiet(k, "v1", "configmaps", ns, cm);
        delete_quiet(k, "batch/v1", "jobs", ns, job);
    }
    json_array_foreach(targets, i, t) {
        const char *node = json_string_value(t);
        json_t *m = prof_job_manifest(node, ns, o->image ? o->image : "tarema/profiler:latest",
                                      o->service_account, o->quick);
        char *p = tm_kube_path("batch/v1", "jobs", ns, NULL, NULL);
        json_t *r = NULL;
        /* A Job being deleted in the background still holds its name for a moment. */
        for (int attempt = 0; attempt < 20; attempt++) {
            r = tm_kube_create(k, p, m, err);
            if (r || !err || err->http_status != 409)
                break;
            struct timespec ts = {0, 250 * 1000000L};
            nanosleep(&ts, NULL);
        }
        free(p);
        json_decref(m);
        if (!r)
            return tm_err_wrap(err, "creating the benchmark Job for node %s", node);
        json_decref(r);
    }
    return 0;
}

/* Waits until every target has a ConfigMap, its Job failed, or the timeout. Fills *done with
 * target names that have a profile. */
static int wait_profiles(tm_kube *k, const char *ns, const json_t *targets, const prof_run_opts *o,
                         prof_run_report *rep, json_t **cms_out, tm_err *err) {
    int timeout = o->timeout_s > 0 ? o->timeout_s : 300;
    int poll_ms = o->poll_ms > 0 ? o->poll_ms : 2000;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t total = json_array_size(targets);
    json_t *failed = json_object();
    int last = -1;
    for (;;) {
        json_t *cms = list_profile_cms(k, ns, err);
        if (!cms) {
            json_decref(failed);
            return tm_err_wrap(err, "listing profile ConfigMaps in %s", ns);
        }
        size_t have = 0, i;
        json_t *t;
        json_array_foreach(targets, i, t) {
            const char *node = json_string_value(t);
            if (find_cm(cms, node)) {
                have++;
                continue;
            }
            if (json_object_get(failed, node))
                continue;
            char why[512];
            job_failure(k, ns, node, why, sizeof why);
            if (why[0])
                json_object_set_new(failed, node, json_string(why));
        }
        if ((int)have != last) {
            tm_info("profiled %zu/%zu nodes", have, total);
            last = (int)have;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        bool timed_out = now.tv_sec - t0.tv_sec >= timeout;
        if (have + json_object_size(failed) >= total || timed_out) {
            json_array_foreach(targets, i, t) {
                const char *node = json_string_value(t);
                if (find_cm(cms, node))
                    continue;
                json_t *why = json_object_get(failed, node);
                char msg[128];
                snprintf(msg, sizeof msg, "no profile within %d s (Job did not finish)", timeout);
                add_failure(rep, node, why ? json_string_value(why) : msg);
            }
            *cms_out = cms;
            json_decref(failed);
            return 0;
        }
        json_decref(cms);
        struct timespec ts = {poll_ms / 1000, (long)(poll_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Collects the profiles to group: fresh ones of the targets, and for the other nodes their
 * ConfigMap or, failing that, their annotation. */
static int collect(const json_t *nodes, const json_t *targets, const json_t *cms,
                   prof_run_report *rep, prof_profile_set *set) {
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        const char *name = tm_json_str(n, "metadata.name", NULL);
        if (!name)
            continue;
        bool target = false;
        size_t j;
        json_t *t;
        json_array_foreach(targets, j, t) {
            target = target || strcmp(json_string_value(t), name) == 0;
        }
        const json_t *cm = find_cm(cms, name);
        json_t *p = cm ? profile_from_cm(cm) : NULL;
        if (!p && target && cm)
            add_failure(rep, name, "its ConfigMap holds no valid profile.json");
        bool fresh = p && target;
        /* A node not measured now (or whose measurement failed, which is already reported)
         * keeps its previous figures, so a failed re-profile never strips its labels. */
        if (!p)
            p = profile_from_annotation(n);
        if (!p) {
            if (!target)
                tm_info("node has no profile yet and was not profiled in this run node=%s "
                        "(use without --changed/--nodes to include it)",
                        name);
            continue;
        }
        tm_err e;
        if (prof_profiles_add_json(set, p, name, &e) != 0) {
            if (fresh)
                add_failure(rep, name, e.msg);
            else
                tm_warn("ignoring stored profile node=%s error=\"%s\"", name, e.msg);
        } else if (fresh) {
            rep->profiled++;
        } else {
            rep->reused++;
        }
        json_decref(p);
    }
    return 0;
}

int prof_run(tm_kube *k, const prof_run_opts *o, prof_run_report *rep, tm_err *err) {
    memset(rep, 0, sizeof *rep);
    rep->failed = json_array();
    const char *ns = o->ns ? o->ns : tm_kube_namespace(k);
    char *path = tm_kube_path("v1", "nodes", NULL, NULL, NULL);
    json_t *nodes = tm_kube_list(k, path, NULL, NULL, err);
    free(path);
    if (!nodes)
        return tm_err_wrap(err, "listing nodes");
    json_t *targets = select_targets(nodes, o, err);
    if (!targets) {
        json_decref(nodes);
        return -1;
    }
    rep->targets = (int)json_array_size(targets);
    tm_info("profiling nodes=%d namespace=%s", rep->targets, ns);
    json_t *cms = NULL;
    int rc = start_jobs(k, ns, targets, o, err);
    if (rc == 0)
        rc = wait_profiles(k, ns, targets, o, rep, &cms, err);
    prof_profile_set set = {0};
    if (rc == 0)
        collect(nodes, targets, cms, rep, &set);
    /* The Jobs did their work (or failed, which is reported): remove them and their pods. */
    size_t i;
    json_t *t;
    json_array_foreach(targets, i, t) {
        char job[64];
        prof_job_name(json_string_value(t), job, sizeof job);
        delete_quiet(k, "batch/v1", "jobs", ns, job);
    }
    if (rc == 0 && set.n == 0)
        rc =
            tm_err_set(err, "no node profiles to group (%zu failed)", json_array_size(rep->failed));
    prof_grouping g = {0};
    if (rc == 0)
        rc = prof_group_nodes(set.items, set.n, &o->group, &g, err);
    if (rc == 0) {
        rep->k = g.k;
        json_t *doc = prof_grouping_to_json(&g, set.items, &o->group);
        if (o->output) {
            char *s = json_dumps(doc, JSON_INDENT(2));
            rc = s ? tm_write_file_atomic(o->output, s, strlen(s), err)
                   : tm_err_set(err, "out of memory serialising the groups document");
            free(s);
        }
        prof_apply_stats st;
        if (rc == 0)
            rc = prof_apply(k, doc, o->dry_run, &st, err);
        json_decref(doc);
        prof_grouping_free(&g);
    }
    prof_profile_set_free(&set);
    json_decref(cms);
    json_decref(targets);
    json_decref(nodes);
    if (rc == 0 && json_array_size(rep->failed) > 0)
        rc = tm_err_set(err,
                        "%zu node(s) were not profiled (first: %s: %s); the others were "
                        "grouped and labelled",
                        json_array_size(rep->failed),
                        tm_json_str(json_array_get(rep->failed, 0), "node", "?"),
                        tm_json_str(json_array_get(rep->failed, 0), "reason", "?"));
    return rc;
}
