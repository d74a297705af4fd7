/* collect.c: the federation file and the live collection of every cluster's signals. */
#include "dam/collect.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "labeler/waits_store.h"
#include "lib/jsonutil.h"
#include "lib/log.h"
#include "lib/yamljson.h"

typedef struct fed_cluster {
    char *name, *kubeconfig, *context, *ns;
    char *database; /* conninfo of its PostgreSQL (learned waits), or a file holding one; NULL */
    int database_is_file;
    json_t *statics; /* the entry's other keys, copied into the CLUSTERS entry */
} fed_cluster;

/* A member cluster's API client, kept between collections so its connections (TCP and TLS,
 * in tm_kube's pool of curl handles) are reused. Shared by the federation and the collections
 * using it; the last to let go frees it. A collection that failed marks it bad: the next one
 * makes a fresh client (new credentials, a restarted API server). */
typedef struct kube_ref {
    pthread_mutex_t mu;
    int refs, bad;
    tm_kube *k;
} kube_ref;

static void kube_ref_unref(kube_ref *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    int left = --r->refs;
    pthread_mutex_unlock(&r->mu);
    if (left > 0)
        return;
    tm_kube_free(r->k);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static int kube_ref_bad(kube_ref *r) {
    pthread_mutex_lock(&r->mu);
    int bad = r->bad;
    pthread_mutex_unlock(&r->mu);
    return bad;
}

static void kube_ref_mark_bad(kube_ref *r) {
    pthread_mutex_lock(&r->mu);
    r->bad = 1;
    pthread_mutex_unlock(&r->mu);
}

struct dam_federation {
    json_t *doc; /* weights, datasets, transfers */
    fed_cluster c[DAM_MAX_CLUSTERS];
    size_t n;
    pthread_mutex_t clients_mu; /* guards clients */
    kube_ref *clients[DAM_MAX_CLUSTERS];
};

void dam_federation_free(dam_federation *f) {
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        free(f->c[i].name);
        free(f->c[i].kubeconfig);
        free(f->c[i].context);
        free(f->c[i].ns);
        free(f->c[i].database);
        json_decref(f->c[i].statics);
        kube_ref_unref(f->clients[i]);
    }
    pthread_mutex_destroy(&f->clients_mu);
    json_decref(f->doc);
    free(f);
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

/* path relative to the federation file's folder unless absolute. */
static char *resolve(const char *fed_path, const char *p) {
    if (!p || p[0] == '/' || strcmp(p, DAM_IN_CLUSTER) == 0)
        return dup_or_null(p);
    char *copy = strdup(fed_path);
    char *dir = dirname(copy);
    size_t n = strlen(dir) + strlen(p) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", dir, p);
    free(copy);
    return out;
}

/* A PostgreSQL URI or key=value conninfo, as DATABASE_URL; anything else names a file. */
static int is_conninfo(const char *s) {
    return strncmp(s, "postgres://", 11) == 0 || strncmp(s, "postgresql://", 13) == 0 ||
           strchr(s, '=') != NULL;
}

static int opt_string(const json_t *o, const char *key, const char *f, const char **out,
                      tm_err *err) {
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || !*json_string_value(v))
        return tm_err_set(err, "%s.%s: expected a non-empty string", f, key);
    *out = json_string_value(v);
    return 0;
}

dam_federation *dam_federation_load(const char *path, tm_err *err) {
    static const char *const top[] = {"weights", "datasets", "transfers", "clusters", NULL};
    static const char *const ckeys[] = {"name",          "kubeconfig", "context", "namespace",
                                        "site",          "location",   "storage", "perf_per_core",
                                        "architectures", "database",   NULL};
    json_t *doc = tm_yaml_load_file(path, err);
    if (!doc)
        return NULL;
    dam_federation *f = calloc(1, sizeof *f);
    if (!f) {
        json_decref(doc);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&f->clients_mu, NULL);
    f->doc = doc;
    char what[512];
    snprintf(what, sizeof what, "%s", path);
    if (!json_is_object(doc)) {
        tm_err_set(err, "%s: expected a mapping with 'clusters'", path);
        goto fail;
    }
    if (tm_json_check_keys(doc, top, what, err) < 0)
        goto fail;
    const json_t *cl = json_object_get(doc, "clusters");
    if (!json_is_array(cl) || json_array_size(cl) == 0) {
        tm_err_set(err, "%s: clusters: expected a non-empty list", path);
        goto fail;
    }
    if (json_array_size(cl) > DAM_MAX_CLUSTERS) {
        tm_err_set(err, "%s: clusters: %zu clusters, at most %d", path, json_array_size(cl),
                   DAM_MAX_CLUSTERS);
        goto fail;
    }
    size_t i;
    json_t *c;
    json_array_foreach(cl, i, c) {
        char fld[600];
        snprintf(fld, sizeof fld, "%s: clusters[%zu]", path, i);
        if (!json_is_object(c)) {
            tm_err_set(err, "%s: expected a mapping", fld);
            goto fail;
        }
        const char *name, *kc, *ctx, *ns, *db;
        if (tm_json_check_keys(c, ckeys, fld, err) < 0 ||
            opt_string(c, "name", fld, &name, err) < 0 ||
            opt_string(c, "kubeconfig", fld, &kc, err) < 0 ||
            opt_string(c, "context", fld, &ctx, err) < 0 ||
            opt_string(c, "namespace", fld, &ns, err) < 0 ||
            opt_string(c, "database", fld, &db, err) < 0)
            goto fail;
        if (!name) {
            tm_err_set(err, "%s.name: missing", fld);
            goto fail;
        }
        for (size_t j = 0; j < f->n; j++)
            if (strcmp(f->c[j].name, name) == 0) {
                tm_err_set(err, "%s.name: '%s' appears twice", fld, name);
                goto fail;
            }
        fed_cluster *fc = &f->c[f->n++];
        fc->name = strdup(name);
        fc->kubeconfig = resolve(path, kc);
        fc->context = dup_or_null(ctx);
        fc->ns = strdup(ns ? ns : "default");
        if (db) {
            fc->database_is_file = !is_conninfo(db);
            fc->database = fc->database_is_file ? resolve(path, db) : strdup(db);
        }
        fc->statics = json_deep_copy(c);
        json_object_del(fc->statics, "database");
        json_object_del(fc->statics, "kubeconfig");
        json_object_del(fc->statics, "context");
        json_object_del(fc->statics, "namespace");
    }
    json_object_del(doc, "clusters");
    return f;
fail:
    dam_federation_free(f);
    return NULL;
}

size_t dam_federation_size(const dam_federation *f) {
    return f->n;
}
const char *dam_federation_name(const dam_federation *f, size_t i) {
    return f->c[i].name;
}
const char *dam_federation_namespace(const dam_federation *f, size_t i) {
    return f->c[i].ns;
}
int dam_federation_find(const dam_federation *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->c[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* A ConfigMap of the cluster's namespace, or NULL: *missing set when it does not exist. */
static json_t *get_cm(tm_kube *k, const char *ns, const char *name, int *missing, tm_err *err) {
    char *p = tm_kube_path("v1", "configmaps", ns, name, NULL);
    tm_err e = {0};
    json_t *cm = tm_kube_get(k, p, &e);
    free(p);
    *missing = !cm && e.http_status == 404;
    if (!cm && !*missing)
        tm_err_set(err, "ConfigMap %s/%s: %s", ns, name, e.msg);
    return cm;
}

/* One cluster's collection. It owns copies of everything it reads, so a thread the caller
 * stopped waiting for (a hung API server) can finish on its own after the federation is gone;
 * the last of the caller and the thread to let go frees it. */
typedef struct job_ctx {
    pthread_mutex_t mu;
    int refs;
    fed_cluster c;    /* copies */
    kube_ref *client; /* a reference to the cluster's kept client, NULL: make one */
    dam_shape shape;
    int has_shape;
    double now_s;
    json_t *entry;
    char reason[TM_ERR_MAX];
} job_ctx;

static void job_unref(job_ctx *j) {
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left > 0)
        return;
    free(j->c.name);
    free(j->c.kubeconfig);
    free(j->c.database);
    free(j->c.context);
    free(j->c.ns);
    json_decref(j->c.statics);
    json_decref(j->entry);
    kube_ref_unref(j->client);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static tm_kube *client_of(const fed_cluster *c, tm_err *err) {
    tm_kube_config *cfg = c->kubeconfig && strcmp(c->kubeconfig, DAM_IN_CLUSTER) == 0
                              ? tm_kube_config_in_cluster(NULL, err)
                              : tm_kube_config_load(c->kubeconfig, c->context, err);
    if (!cfg)
        return NULL;
    tm_kube *k = tm_kube_new(cfg, err);
    tm_kube_config_free(cfg);
    return k;
}

tm_kube *dam_federation_client(const dam_federation *f, size_t i, tm_err *err) {
    return client_of(&f->c[i], err);
}

static void on_waits_warn(void *ud, const char *msg) {
    tm_log(TM_LOG_WARN, "dam: %s: learned waits: %s", (const char *)ud, msg);
}

/* The cluster's learned waits (table asa_waits, read by the labeler's own store code, as
 * `tarema-planner waits` does) into o. A database that cannot be read is not fatal: it is
 * logged and the wait falls back to the ASA ConfigMap, then to the age of pending pods. */
static void read_waits(const fed_cluster *fc, waits_record **out, dam_cluster_objects *o) {
    tm_err err = {0};
    char *conninfo = NULL;
    if (fc->database_is_file) {
        size_t len = 0;
        FILE *fp = fopen(fc->database, "r");
        if (!fp || getline(&conninfo, &len, fp) < 0) {
            tm_err_set(&err, "database file %s: %s", fc->database, fp ? "empty" : strerror(errno));
            if (fp)
                fclose(fp);
            goto fail;
        }
        fclose(fp);
        conninfo[strcspn(conninfo, "\r\n")] = 0;
    }
    lab_waits_store *s = lab_waits_store_open(conninfo ? conninfo : fc->database, NULL,
                                              on_waits_warn, fc->name, &err);
    size_t n = 0;
    if (!s || lab_waits_store_list(s, NULL, out, &n, &err) < 0) {
        lab_waits_store_close(s);
        goto fail;
    }
    lab_waits_store_close(s);
    o->waits = *out;
    o->nwaits = n;
    o->has_waits = 1;
    free(conninfo);
    return;
fail:
    free(conninfo);
    tm_log(TM_LOG_WARN, "dam: %s: learned waits not read: %s", fc->name, err.msg);
}

static int collect_one(job_ctx *j) {
    const fed_cluster *fc = &j->c;
    tm_err err = {0};
    tm_kube *k = j->client ? j->client->k : NULL;
    if (!k)
        k = client_of(fc, &err);
    json_t *nodes = NULL, *pods = NULL, *scs = NULL, *mcm = NULL, *acm = NULL;
    waits_record *waits = NULL;
    int rc = -1, missing;
    if (!k)
        goto out;
    if (!(nodes = tm_kube_list(k, "/api/v1/nodes", NULL, NULL, &err))) {
        tm_err_wrap(&err, "listing nodes");
        goto out;
    }
    tm_list_opts po = {.field_selector = "status.phase!=Succeeded,status.phase!=Failed"};
    if (!(pods = tm_kube_list(k, "/api/v1/pods", &po, NULL, &err))) {
        tm_err_wrap(&err, "listing pods");
        goto out;
    }
    tm_err se = {0};
    scs = tm_kube_list(k, "/apis/storage.k8s.io/v1/storageclasses", NULL, NULL, &se);
    mcm = get_cm(k, fc->ns, DAM_MAINTENANCE_CM, &missing, &err);
    if (!mcm && !missing)
        goto out;
    acm = get_cm(k, fc->ns, DAM_ASA_CM, &missing, &err);
    if (!acm && !missing)
        goto out;
    dam_cluster_objects o = {
        .nodes = nodes, .pods = pods, .storage_classes = scs, .maintenance_cm = mcm, .asa_cm = acm};
    dam_shape shape = j->shape;
    shape.ns = fc->ns;
    if (fc->database && j->has_shape)
        read_waits(fc, &waits, &o);
    rc = dam_signals_fill(j->entry, &o, j->has_shape ? &shape : NULL, j->now_s, &err);
out:
    free(waits);
    if (rc < 0)
        snprintf(j->reason, sizeof j->reason, "%s", err.msg);
    json_decref(nodes);
    json_decref(pods);
    json_decref(scs);
    json_decref(mcm);
    json_decref(acm);
    if (j->client && rc < 0)
        kube_ref_mark_bad(j->client);
    if (!j->client || j->client->k != k)
        tm_kube_free(k);
    return rc;
}

/* The entry of a cluster that could not be read: its static site and location, the reason. */
static json_t *unreachable_entry(const fed_cluster *c, const char *reason) {
    json_t *e = json_object(), *v;
    json_object_set_new(e, "name", json_string(c->name));
    if ((v = json_object_get(c->statics, "site")))
        json_object_set(e, "site", v);
    if ((v = json_object_get(c->statics, "location")))
        json_object_set(e, "location", v);
    json_object_set_new(e, "unreachable", json_string(reason));
    tm_log(TM_LOG_WARN, "dam: cluster %s excluded: %s", c->name, reason);
    return e;
}

static void *collect_thread(void *arg) {
    job_ctx *j = arg;
    if (collect_one(j) < 0) {
        json_decref(j->entry);
        j->entry = unreachable_entry(&j->c, j->reason);
    }
    job_unref(j);
    return NULL;
}

static job_ctx *job_new(const fed_cluster *c, const dam_shape *shape, double now_s) {
    job_ctx *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 1;
    j->c.name = strdup(c->name);
    j->c.kubeconfig = dup_or_null(c->kubeconfig);
    j->c.context = dup_or_null(c->context);
    j->c.ns = strdup(c->ns);
    j->c.database = dup_or_null(c->database);
    j->c.database_is_file = c->database_is_file;
    j->c.statics = json_deep_copy(c->statics);
    j->entry = json_deep_copy(c->statics);
    if (shape) {
        j->shape = *shape;
        j->has_shape = 1;
    }
    j->now_s = now_s;
    return j;
}

/* A reference to cluster i's kept client, made now when there is none or the last collection
 * with it failed; NULL when it cannot be made (the collection tries itself and reports why). */
static kube_ref *take_client(dam_federation *f, size_t i) {
    pthread_mutex_lock(&f->clients_mu);
    kube_ref *r = f->clients[i];
    if (r && kube_ref_bad(r)) {
        f->clients[i] = NULL;
        kube_ref_unref(r);
        r = NULL;
    }
    if (!r) {
        tm_err e = {0};
        tm_kube *k = client_of(&f->c[i], &e);
        if (k && (r = calloc(1, sizeof *r))) {
            pthread_mutex_init(&r->mu, NULL);
            r->refs = 1;
            r->k = k;
            f->clients[i] = r;
        } else {
            tm_kube_free(k);
        }
    }
    if (r) {
        pthread_mutex_lock(&r->mu);
        r->refs++;
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_unlock(&f->clients_mu);
    return r;
}

json_t *dam_collect(const dam_federation *f, const dam_shape *shape, double now_s, double timeout_s,
                    tm_err *err) {
    job_ctx *jobs[DAM_MAX_CLUSTERS] = {0};
    pthread_t th[DAM_MAX_CLUSTERS];
    int started[DAM_MAX_CLUSTERS] = {0};
    for (size_t i = 0; i < f->n; i++) {
        if (!(jobs[i] = job_new(&f->c[i], shape, now_s)))
            continue;
        jobs[i]->client = take_client((dam_federation *)f, i);
        jobs[i]->refs = 2; /* this caller and the thread */
        started[i] = pthread_create(&th[i], NULL, collect_thread, jobs[i]) == 0;
        if (!started[i])
            collect_thread(jobs[i]); /* drops the thread's reference itself */
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double secs = timeout_s > 0 ? timeout_s : DAM_COLLECT_TIMEOUT_S;
    deadline.tv_sec += (time_t)secs;
    deadline.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    json_t *doc = json_deep_copy(f->doc);
    json_t *arr = json_array();
    for (size_t i = 0; i < f->n; i++) {
        char why[128];
        if (!jobs[i]) {
            json_array_append_new(arr, unreachable_entry(&f->c[i], "out of memory"));
            continue;
        }
        if (started[i] && pthread_timedjoin_np(th[i], NULL, &deadline) != 0) {
            /* A hung API server: leave its thread to finish alone, rank without it. */
            pthread_detach(th[i]);
            snprintf(why, sizeof why, "no answer from the API server within %g s", secs);
            json_array_append_new(arr, unreachable_entry(&f->c[i], why));
            job_unref(jobs[i]);
            continue;
        }
        json_array_append(arr, jobs[i]->entry);
        job_unref(jobs[i]);
    }
    json_object_set_new(doc, "clusters", arr);
    json_object_set_new(doc, "now", json_real(now_s));
    (void)err;
    return doc;
}

json_t *dam_federation_skeleton(const dam_federation *f) {
    json_t *doc = json_deep_copy(f->doc);
    json_t *arr = json_array();
    for (size_t i = 0; i < f->n; i++)
        json_array_append_new(
            arr, json_pack("{s:s,s:s}", "name", f->c[i].name, "unreachable", "not collected"));
    json_object_set_new(doc, "clusters", arr);
    return doc;
}
