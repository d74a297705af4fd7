/* scheduler_live_bench.c: load driver of the live scheduler benchmark (hack/bench-scheduler.sh):
 * creates pods fast through the asynchronous API (many creates in flight), watches the
 * namespace, and reports how quickly a scheduler binds them:
 *
 *   scheduler_live_bench --namespace NS --scheduler-name NAME --pods N [--concurrency C]
 *                        [--cpu 100m] [--memory 128Mi] [--timeout-s 600] [--kubeconfig FILE]
 *                        [--then CMD] [--priority-class NAME] [--bound-to PREFIX:N]
 *                        [--template FILE]
 *
 * --template: the pods are copies of the JSON Pod in FILE (bench/scheduler_perf_bench.sh writes
 * kube-scheduler's scheduler_perf templates there), each given its name, the namespace and the
 * scheduler name; --cpu and --memory are then not used, the template's requests stand.
 *
 * --bound-to: the pods are created already placed (spec.nodeName PREFIX-1 .. PREFIX-N, round
 * robin), as pods another scheduler placed look to a scheduler starting up (bench/
 * informer_sync_bench.sh). Nothing waits for binds then.
 *
 * --priority-class: the pods' spec.priorityClassName, with terminationGracePeriodSeconds 0 (the
 * preemption benchmark, bench/preemption_bench.sh, as kube-scheduler's scheduler_perf pods).
 *
 * Two ways to measure:
 *   streaming (default): the scheduler runs while the pods are created. On a small machine the
 *     figure is bounded by how fast the API server accepts creates, which the scheduler under
 *     test competes with for CPU, so it says as much about CPU thrift as about scheduling.
 *   backlog (--then CMD): every pod is created first with no scheduler running, then CMD is run
 *     through /bin/sh (it starts the scheduler, in the background or not) and the clock starts:
 *     start_s is that moment, and the backlog figures measure the scheduler alone (its start,
 *     informer sync and binding) against a full queue, as kube-scheduler's own scheduler_perf
 *     throughput does.
 *
 * Creation time of a pod = when its create request was answered; bind time = when the watch
 * first shows spec.nodeName set. The watch runs on its own thread and connection and resumes at
 * once from its last resourceVersion whenever the API server ends it (as client-go does; the
 * server closes watchers that fall behind during bursts), so the driver's own observation does
 * not lag behind what it measures. Prints one line of key=value figures:
 *   pods, bound, create_s (first create sent .. last answered), span_s (first create .. last
 *   bind), pods_per_s (bound / span_s), p50_ms, p99_ms, max_ms (creation -> bind); in backlog
 *   mode also backlog_s (CMD run .. last bind) and backlog_pods_per_s (bound / backlog_s).
 * Exit status 0 when every pod was bound before the timeout. It measures; it asserts nothing.
 *
 * Run without arguments (as `make bench` does for every bench/ program) it only says that the
 * figures come from hack/bench-scheduler.sh, which needs a dedicated cluster. */
#include <curl/curl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/watchstream.h"

typedef struct bench {
    tm_kube *k;
    const char *ns, *sched, *cpu, *memory;
    const char *priority_class; /* NULL: none */
    const char *bound_prefix;   /* --bound-to: NULL = pods are left to a scheduler */
    json_t *tmpl;               /* --template: NULL = the built-in pod */
    int bound_nodes;
    int n, concurrency;
    int next, inflight, created, create_failed, bound;
    double *created_at, *bound_at; /* seconds (monotonic), 0 = not yet */
    double t_first_create, t_last_create;
    const char *then;   /* backlog mode: command that starts the scheduler, NULL = streaming */
    double t_then;      /* when it was run */
    pthread_mutex_t mu; /* created_at, bound_at, bound: shared with the watch thread */
} bench;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A copy of the --template pod named NAME, in the run's namespace, for the scheduler measured. */
static json_t *from_template(const bench *b, const char *name) {
    json_t *pod = json_deep_copy(b->tmpl);
    json_t *meta = json_object_get(pod, "metadata");
    json_t *spec = json_object_get(pod, "spec");
    if (!meta || !spec) {
        json_decref(pod);
        return NULL;
    }
    json_object_del(meta, "generateName");
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "namespace", json_string(b->ns));
    json_object_set_new(spec, "schedulerName", json_string(b->sched));
    return pod;
}

/* Pods carry tarema task labels (three kinds) so the tarema policy does its group work; other
 * schedulers ignore the annotations. */
static json_t *pod_obj(const bench *b, int i) {
    char name[64], lab[4];
    snprintf(name, sizeof name, "bench-%d", i);
    snprintf(lab, sizeof lab, "%d", 1 + i % 3);
    if (b->tmpl)
        return from_template(b, name);
    json_t *pod =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:{s:s, s:[{s:s, s:s, "
                  "s:{s:{s:s, s:s}}}]}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", b->ns,
                  "annotations", "tarema.io/cpu", lab, "tarema.io/mem", "2", "tarema.io/io", lab,
                  "spec", "schedulerName", b->sched, "containers", "name", "c", "image", "busybox",
                  "resources", "requests", "cpu", b->cpu, "memory", b->memory);
    json_t *spec = json_object_get(pod, "spec");
    if (spec && b->bound_prefix) {
        char node[128];
        snprintf(node, sizeof node, "%s-%d", b->bound_prefix, 1 + i % b->bound_nodes);
        json_object_set_new(spec, "nodeName", json_string(node));
    }
    if (spec && b->priority_class) {
        json_object_set_new(spec, "priorityClassName", json_string(b->priority_class));
        json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(0));
    }
    return pod;
}

static void start_creates(bench *b);

typedef struct create_ctx {
    bench *b;
    int i;
} create_ctx;

static void create_done(void *ud, int status, json_t *body, const tm_err *err) {
    (void)body;
    create_ctx *c = ud;
    bench *b = c->b;
    b->inflight--;
    if (err) {
        b->create_failed++;
        fprintf(stderr, "create bench-%d failed: HTTP %d %s\n", c->i, status, err->msg);
    } else {
        b->created++;
        double t = now_s();
        /* The watch may have seen it bound already (a fast scheduler): keep the earlier. */
        pthread_mutex_lock(&b->mu);
        if (!b->created_at[c->i])
            b->created_at[c->i] = t;
        pthread_mutex_unlock(&b->mu);
        b->t_last_create = t;
    }
    free(c);
    start_creates(b);
}

static void start_creates(bench *b) {
    char *path = tm_kube_path("v1", "pods", b->ns, NULL, NULL);
    while (b->next < b->n && b->inflight < b->concurrency) {
        int i = b->next++;
        create_ctx *c = malloc(sizeof *c);
        if (c)
            *c = (create_ctx){b, i};
        json_t *pod = pod_obj(b, i);
        if (!b->t_first_create)
            b->t_first_create = now_s();
        if (!c || !pod || tm_kube_request_async(b->k, "POST", path, pod, NULL, create_done, c)) {
            b->create_failed++;
            free(c);
        } else {
            b->inflight++;
        }
        json_decref(pod);
    }
    free(path);
}

/* Records a pod seen bound for the first time. */
static void saw_pod(bench *b, const json_t *obj) {
    const char *name = tm_json_str(obj, "metadata.name", "");
    const char *node = tm_json_str(obj, "spec.nodeName", "");
    int i;
    if (!node[0] || sscanf(name, "bench-%d", &i) != 1 || i < 0 || i >= b->n)
        return;
    double when = now_s();
    pthread_mutex_lock(&b->mu);
    if (!b->bound_at[i]) {
        b->bound_at[i] = when;
        if (!b->created_at[i]) /* the watch beat the create response */
            b->created_at[i] = when;
        b->bound++;
    }
    pthread_mutex_unlock(&b->mu);
}

typedef struct watcher {
    bench *b;
    const tm_kube_config *kc;
    tm_watchstream *ws;
    char rv[64];
    bool gone; /* 410: our resourceVersion is too old */
    volatile int stop;
    pthread_t th;
} watcher;

static size_t w_write(char *p, size_t size, size_t n, void *ud) {
    watcher *w = ud;
    if (tm_watchstream_feed(w->ws, p, size * n, NULL) < 0)
        return 0;
    tm_watch_event ev;
    tm_err err;
    int r;
    while ((r = tm_watchstream_next(w->ws, &ev, &err)) != 0) {
        if (r < 0)
            continue;
        if (ev.type == TM_WS_ERROR) {
            w->gone = ev.code == 410;
        } else {
            const char *rv = tm_json_str(ev.object, "metadata.resourceVersion", "");
            if (rv[0])
                snprintf(w->rv, sizeof w->rv, "%s", rv);
            if (ev.type == TM_WS_ADDED || ev.type == TM_WS_MODIFIED)
                saw_pod(w->b, ev.object);
        }
        json_decref(ev.object);
    }
    return size * n;
}

static int w_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    return ((watcher *)ud)->stop; /* non-zero aborts the transfer */
}

static void w_tls(CURL *e, const tm_kube_config *kc, struct curl_slist **hdrs) {
    struct curl_blob blob;
    if (kc->ca_data) {
        blob = (struct curl_blob){kc->ca_data, strlen(kc->ca_data), CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    } else if (kc->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, kc->ca_file);
    }
    if (kc->cert_data) {
        blob = (struct curl_blob){kc->cert_data, strlen(kc->cert_data), CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (kc->cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, kc->cert_file);
    }
    if (kc->key_data) {
        blob = (struct curl_blob){kc->key_data, strlen(kc->key_data), CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (kc->key_file) {
        curl_easy_setopt(e, CURLOPT_SSLKEY, kc->key_file);
    }
    if (kc->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (kc->token) {
        char h[4096];
        snprintf(h, sizeof h, "Authorization: Bearer %s", kc->token);
        *hdrs = curl_slist_append(*hdrs, h);
    }
}

/* Watches the namespace until stopped; a watch that ends is resumed at once from the last
 * resourceVersion, one that fails after a short pause. */
static void *w_run(void *ud) {
    watcher *w = ud;
    CURL *e = curl_easy_init();
    while (e && !w->stop && !w->gone) {
        char url[2048];
        snprintf(url, sizeof url,
                 "%s/api/v1/namespaces/%s/pods?watch=1&allowWatchBookmarks=true"
                 "&timeoutSeconds=300%s%s",
                 w->kc->server, w->b->ns, w->rv[0] ? "&resourceVersion=" : "", w->rv);
        struct curl_slist *hdrs = NULL;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, w_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, w);
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, w_progress);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, w);
        curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
        w_tls(e, w->kc, &hdrs);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
        CURLcode rc = curl_easy_perform(e);
        curl_slist_free_all(hdrs);
        if (rc != CURLE_OK && !w->stop) {
            fprintf(stderr, "scheduler_live_bench: watch: %s\n", curl_easy_strerror(rc));
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
        }
    }
    if (w->gone)
        fprintf(stderr, "scheduler_live_bench: watch: resourceVersion too old (410); binds "
                        "after this point are not seen\n");
    curl_easy_cleanup(e);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int ensure_namespace(tm_kube *k, const char *ns, tm_err *err) {
    json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", ns);
    json_t *r = tm_kube_create(k, "/api/v1/namespaces", obj, err);
    json_decref(obj);
    if (!r && err->http_status != 409)
        return -1;
    json_decref(r);
    /* Admission wants the namespace's default ServiceAccount, made by the controller manager. */
    char *path = tm_kube_path("v1", "serviceaccounts", ns, "default", NULL);
    for (int i = 0; i < 300; i++) {
        json_t *sa = tm_kube_get(k, path, err);
        if (sa) {
            json_decref(sa);
            free(path);
            return 0;
        }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    free(path);
    return tm_err_set(err, "namespace %s: no default ServiceAccount after 30 s", ns);
}

int main(int argc, char **argv) {
    if (argc == 1) {
        printf("scheduler_live_bench: load driver of hack/bench-scheduler.sh (tarema-scheduler "
               "against kube-scheduler on a dedicated kwok cluster); `make bench` runs that "
               "script itself.\n");
        return 0;
    }
    bench b = {.cpu = "100m", .memory = "128Mi", .concurrency = 200};
    const char *kubeconfig = NULL;
    int timeout_s = 600;
    static const struct option opts[] = {{"namespace", required_argument, NULL, 'n'},
                                         {"scheduler-name", required_argument, NULL, 's'},
                                         {"pods", required_argument, NULL, 'p'},
                                         {"concurrency", required_argument, NULL, 'c'},
                                         {"cpu", required_argument, NULL, 'C'},
                                         {"memory", required_argument, NULL, 'M'},
                                         {"timeout-s", required_argument, NULL, 't'},
                                         {"kubeconfig", required_argument, NULL, 'k'},
                                         {"then", required_argument, NULL, 'T'},
                                         {"priority-class", required_argument, NULL, 'P'},
                                         {"bound-to", required_argument, NULL, 'B'},
                                         {"template", required_argument, NULL, 'J'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            b.ns = optarg;
            break;
        case 's':
            b.sched = optarg;
            break;
        case 'p':
            b.n = atoi(optarg);
            break;
        case 'c':
            b.concurrency = atoi(optarg);
            break;
        case 'C':
            b.cpu = optarg;
            break;
        case 'M':
            b.memory = optarg;
            break;
        case 't':
            timeout_s = atoi(optarg);
            break;
        case 'k':
            kubeconfig = optarg;
            break;
        case 'T':
            b.then = optarg;
            break;
        case 'P':
            b.priority_class = optarg;
            break;
        case 'B': {
            char *colon = strrchr(optarg, ':');
            b.bound_nodes = colon ? atoi(colon + 1) : 0;
            if (!colon || colon == optarg || b.bound_nodes <= 0) {
                fprintf(stderr,
                        "scheduler_live_bench: --bound-to wants PREFIX:N (N > 0), not "
                        "'%s'\n",
                        optarg);
                return 2;
            }
            *colon = '\0';
            b.bound_prefix = optarg;
            break;
        }
        case 'J': {
            json_error_t je;
            json_decref(b.tmpl);
            b.tmpl = json_load_file(optarg, 0, &je);
            if (!json_is_object(b.tmpl) || !json_is_object(json_object_get(b.tmpl, "metadata")) ||
                !json_is_object(json_object_get(b.tmpl, "spec"))) {
                fprintf(stderr, "scheduler_live_bench: --template %s: %s\n", optarg,
                        b.tmpl ? "not a Pod object with metadata and spec" : je.text);
                json_decref(b.tmpl);
                return 2;
            }
            break;
        }
        default:
            fprintf(stderr, "scheduler_live_bench: unknown flag (see the top of "
                            "bench/scheduler_live_bench.c)\n");
            return 2;
        }
    }
    if (!b.ns || !b.sched || b.n <= 0 || b.concurrency <= 0 || timeout_s <= 0) {
        fprintf(stderr, "scheduler_live_bench: --namespace, --scheduler-name and --pods N > 0 "
                        "are required\n");
        return 2;
    }
    tm_err err = {0};
    tm_kube_config *kc = tm_kube_config_auto(kubeconfig, NULL, &err);
    if (!kc) {
        fprintf(stderr, "scheduler_live_bench: %s\n", err.msg);
        return 1;
    }
    kc->qps = 0; /* the driver itself is not the subject: no client-side limit */
    b.k = tm_kube_new(kc, &err);
    if (!b.k || ensure_namespace(b.k, b.ns, &err)) {
        fprintf(stderr, "scheduler_live_bench: %s\n", err.msg);
        tm_kube_free(b.k);
        tm_kube_config_free(kc);
        return 1;
    }
    pthread_mutex_init(&b.mu, NULL);
    b.created_at = calloc((size_t)b.n, sizeof *b.created_at);
    b.bound_at = calloc((size_t)b.n, sizeof *b.bound_at);
    watcher w = {.b = &b, .kc = kc, .ws = tm_watchstream_new(0)};
    int rc = 1;
    bool started = false;
    if (!b.created_at || !b.bound_at || !w.ws) {
        fprintf(stderr, "scheduler_live_bench: out of memory\n");
        goto out;
    }
    if (pthread_create(&w.th, NULL, w_run, &w)) {
        fprintf(stderr, "scheduler_live_bench: cannot start the watch thread\n");
        goto out;
    }
    started = true;
    /* Let the watch connect before the first create, so no bind goes unseen. */
    struct timespec pause = {0, 500000000};
    nanosleep(&pause, NULL);
    double deadline = now_s() + timeout_s;
    start_creates(&b);
    for (;;) {
        pthread_mutex_lock(&b.mu);
        int bound = b.bound;
        pthread_mutex_unlock(&b.mu);
        if (bound >= b.n - b.create_failed || now_s() >= deadline)
            break;
        if (b.then && !b.t_then && b.next >= b.n && b.inflight == 0) {
            if (bound > 0) {
                fprintf(stderr,
                        "scheduler_live_bench: %d pods were bound before --then ran: a "
                        "scheduler named %s is already running\n",
                        bound, b.sched);
                break;
            }
            fprintf(stderr, "scheduler_live_bench: %d pods created in %.1f s; running: %s\n",
                    b.created, b.t_last_create - b.t_first_create, b.then);
            b.t_then = now_s();
            int st = system(b.then);
            if (st != 0) {
                fprintf(stderr, "scheduler_live_bench: --then command failed (status %d)\n", st);
                break;
            }
        }
        if (tm_kube_run(b.k, 50, &err)) {
            fprintf(stderr, "scheduler_live_bench: %s\n", err.msg);
            break;
        }
    }
    w.stop = 1;
    pthread_join(w.th, NULL);
    started = false;
    double *lat = calloc((size_t)b.n + 1, sizeof *lat);
    size_t nl = 0;
    double last_bind = 0;
    for (int i = 0; i < b.n && lat; i++) {
        if (!b.bound_at[i])
            continue;
        lat[nl++] = (b.bound_at[i] - b.created_at[i]) * 1000.0;
        if (b.bound_at[i] > last_bind)
            last_bind = b.bound_at[i];
    }
    if (lat)
        qsort(lat, nl, sizeof *lat, cmp_double);
    double span = last_bind > b.t_first_create ? last_bind - b.t_first_create : 0;
    printf("pods=%d created=%d bound=%d create_s=%.2f span_s=%.2f pods_per_s=%.1f p50_ms=%.0f "
           "p99_ms=%.0f max_ms=%.0f",
           b.n, b.created, b.bound, b.t_last_create - b.t_first_create, span,
           span > 0 ? b.bound / span : 0, nl ? lat[(size_t)(0.50 * (double)(nl - 1))] : 0,
           nl ? lat[(size_t)(0.99 * (double)(nl - 1))] : 0, nl ? lat[nl - 1] : 0);
    if (b.t_then) {
        double bs = last_bind > b.t_then ? last_bind - b.t_then : 0;
        printf(" backlog_s=%.2f backlog_pods_per_s=%.1f", bs, bs > 0 ? b.bound / bs : 0);
    }
    printf("\n");
    free(lat);
    rc = b.bound == b.n ? 0 : 1;
    if (rc)
        fprintf(stderr, "scheduler_live_bench: only %d of %d pods bound within %d s\n", b.bound,
                b.n, timeout_s);
out:
    if (started) {
        w.stop = 1;
        pthread_join(w.th, NULL);
    }
    tm_watchstream_free(w.ws);
    tm_kube_free(b.k);
    tm_kube_config_free(kc);
    pthread_mutex_destroy(&b.mu);
    free(b.created_at);
    free(b.bound_at);
    json_decref(b.tmpl);
    return rc;
}
