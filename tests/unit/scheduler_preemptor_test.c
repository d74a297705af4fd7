/* Unit tests of the live half of preemption (scheduler/live/preemptor.c) against a fake API
 * server on 127.0.0.1 (no cluster): what goes to the API server when the DefaultPreemption
 * plugin made room (the preemptor's nominatedNodeName, the victim's DisruptionTarget condition,
 * then its delete with a uid precondition, then a Preempted event related to the preemptor, as
 * kube-scheduler writes them), that the nominated room is kept for the preemptor in the next
 * cycles and nothing is evicted twice, and that the nominated-pods and PDB tables follow the
 * informers (a restarted scheduler reads its nominations back from the pods). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_http.h"
#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/backend/cache.h"
#include "scheduler/backend/nominated.h"
#include "scheduler/backend/pdb.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/live/preemptor.h"
#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/preemption/preemption.h"

/* Every request the fake server saw, in order: "METHOD PATH" and the body. */
#define MAXR 32
static struct {
    int fd, port;
    volatile int stop;
    pthread_mutex_t mu;
    char line[MAXR][256];
    char *body[MAXR];
    int n;
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void serve_one(int c) {
    char head[8192];
    char *body = fake_http_read(c, head, sizeof head);
    if (!body)
        return;
    pthread_mutex_lock(&fk.mu);
    if (fk.n < MAXR) {
        char *eol = strstr(head, " HTTP/");
        size_t len = eol ? (size_t)(eol - head) : strcspn(head, "\r\n");
        snprintf(fk.line[fk.n], sizeof fk.line[fk.n], "%.*s", (int)len, head);
        fk.body[fk.n] = body;
        fk.n++;
        body = NULL;
    }
    pthread_mutex_unlock(&fk.mu);
    free(body);
    const char *hdr = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                      "Connection: close\r\n\r\n{}";
    send(c, hdr, strlen(hdr), MSG_NOSIGNAL);
}

static void *server_main(void *arg) {
    (void)arg;
    while (!fk.stop) {
        struct pollfd p = {fk.fd, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int c = accept(fk.fd, NULL, NULL);
        if (c < 0)
            continue;
        serve_one(c);
        close(c);
    }
    return NULL;
}

static pthread_t server_start(void) {
    fk.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fk.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fk.fd, (struct sockaddr *)&a, sizeof a);
    listen(fk.fd, 16);
    socklen_t len = sizeof a;
    getsockname(fk.fd, (struct sockaddr *)&a, &len);
    fk.port = ntohs(a.sin_port);
    fk.stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, server_main, NULL);
    return t;
}

static void server_stop(pthread_t t) {
    fk.stop = 1;
    pthread_join(t, NULL);
    close(fk.fd);
    for (int i = 0; i < fk.n; i++)
        free(fk.body[i]);
    fk.n = 0;
}

static int requests(void) {
    pthread_mutex_lock(&fk.mu);
    int n = fk.n;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

/* Index of the first request whose line is `line` and whose body has every one of the
 * NULL-ended strings, -1 when none. */
static int find_request(const char *line, ...) {
    va_list ap;
    for (int i = 0; i < requests(); i++) {
        if (strcmp(fk.line[i], line) != 0)
            continue;
        bool all = true;
        va_start(ap, line);
        for (const char *s; (s = va_arg(ap, const char *));)
            all = all && fk.body[i] && strstr(fk.body[i], s);
        va_end(ap);
        if (all)
            return i;
    }
    return -1;
}

static int count_lines(const char *line) {
    int n = 0;
    for (int i = 0; i < requests(); i++)
        n += strcmp(fk.line[i], line) == 0;
    return n;
}

static json_t *js(const char *s) {
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fprintf(stderr, "bad test JSON: %s\n", e.text);
    return j;
}

static const char node_json[] =
    "{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":"
    "\"8Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

/* A pod of namespace ns: NAME, UID, PRIORITY, CPU, NODE ("" pending), SCHEDULER. */
static json_t *pod(const char *name, const char *uid, int prio, const char *cpu, const char *node,
                   const char *sched) {
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"app\":\"%s\"}},"
             "\"spec\":{\"nodeName\":\"%s\",\"schedulerName\":\"%s\",\"priority\":%d,"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"%s\",\"startTime\":\"2026-01-01T00:00:01Z\"}}",
             name, uid, name, node, sched, prio, cpu, node[0] ? "Running" : "Pending");
    return js(buf);
}

typedef struct {
    sched_cache *cache;
    sched_framework *fw;
    tm_metrics *reg;
    tm_kube *k;
    sched_preemptor *pr;
    json_t *seen; /* uid -> the last version delivered (the informer's old object) */
} env;

static void env_init(env *e) {
    tm_err err = {0};
    memset(e, 0, sizeof *e);
    e->cache = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    e->fw = sched_policy_new("tarema", &err);
    CHECK(e->cache && e->fw);
    CHECK(sched_preemption_plugin_add(e->fw, &err) == 0);
    e->reg = tm_metrics_new();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", fk.port);
    tm_kube_config cfg = {.server = url};
    e->k = tm_kube_new(&cfg, &err);
    CHECK(e->k != NULL);
    e->pr = sched_preemptor_new(e->k, e->cache, "tarema", "test", e->reg, &err);
    CHECKF(e->pr != NULL, "%s", err.msg);
    json_t *n = js(node_json);
    CHECK(sched_cache_node_event(e->cache, TM_WATCH_ADDED, n, NULL, &err) == 0);
    json_decref(n);
}

static void env_free(env *e) {
    json_decref(e->seen);
    tm_kube_free(e->k);
    sched_preemptor_free(e->pr);
    sched_framework_free(e->fw);
    sched_cache_free(e->cache);
    tm_metrics_free(e->reg);
}

/* A pod event through the transform, as the informer delivers it (nothing when the transform
 * drops the pod). */
static void deliver(env *e, tm_watch_type t, json_t *obj) {
    tm_err err = {0};
    json_t *o = sched_cache_pod_transform(e->cache, obj); /* takes obj */
    if (!o)
        return;
    if (!e->seen)
        e->seen = json_object();
    const char *uid = tm_json_str(o, "metadata.uid", "");
    json_t *old = json_incref(json_object_get(e->seen, uid));
    CHECKF(sched_cache_pod_event(e->cache, t, o, old, &err) == 0, "%s", err.msg);
    sched_preemptor_pod_event(e->pr, t, o, old);
    json_decref(old);
    if (t == TM_WATCH_DELETED)
        json_object_del(e->seen, uid);
    else
        json_object_set(e->seen, uid, o);
    json_decref(o);
}

/* One cycle for pending pod obj: true when it fits somewhere. With preempt, PostFilter runs
 * when it does not (its return in *preempted). */
static bool cycle(env *e, json_t *obj, bool preempt, bool *preempted) {
    tm_err err = {0};
    sched_snapshot *s = sched_cache_snapshot(e->cache);
    sched_pod *p = sched_pod_from_json(s, obj, NULL, &err);
    CHECKF(p != NULL, "%s", err.msg);
    if (!p)
        return false;
    sched_decision d;
    CHECK(sched_framework_schedule(e->fw, s, p, 1000, &d, &err) == 0);
    bool fits = d.node >= 0;
    if (!fits && preempt) {
        char msg[300];
        *preempted = sched_preemptor_run(e->pr, e->fw, p, msg, sizeof msg);
    }
    sched_pod_free(p);
    return fits;
}

static void run_until(env *e, int n, int max_ms) {
    tm_err err = {0};
    for (int waited = 0; requests() < n && waited < max_ms; waited += 20)
        tm_kube_run(e->k, 20, &err);
}

static void test_preemption_carried_out(void) {
    pthread_t t = server_start();
    env e;
    env_init(&e);
    /* n1 (4 cpu): a low pod of 3 cpu. A high pod of 2 cpu fits only once it is gone. */
    deliver(&e, TM_WATCH_ADDED, pod("low", "ulow", 10, "3", "n1", "default-scheduler"));
    json_t *high = pod("high", "uhigh", 1000, "2", "", "tarema");
    deliver(&e, TM_WATCH_ADDED, json_incref(high)); /* the informer saw it created */
    bool preempted = false;
    CHECK(!cycle(&e, high, true, &preempted));
    CHECK(preempted);
    /* a status write racing the nomination's patch (its FailedScheduling condition applied
     * first): neither this version nor the last shows nominatedNodeName; the nomination made in
     * memory stays (kube's nominator), else the next preemptor's dry run finds n1 free */
    json_t *cond_only = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(cond_only, "status"), "conditions",
                        json_pack("[{s:s, s:s}]", "type", "PodScheduled", "status", "False"));
    deliver(&e, TM_WATCH_MODIFIED, cond_only);
    const char *kept =
        sched_nominated_node(sched_snapshot_nominated(sched_cache_snapshot(e.cache)), "uhigh");
    CHECKF(kept && strcmp(kept, "n1") == 0, "nomination after a racing status update: %s",
           kept ? kept : "none");
    run_until(&e, 4, 3000);
    /* the preemptor's nomination */
    CHECK(find_request("PATCH /api/v1/namespaces/ns/pods/high/status", "\"nominatedNodeName\"",
                       "\"n1\"", NULL) >= 0);
    /* the victim: condition, then delete with its uid, then the event */
    int cond = find_request("PATCH /api/v1/namespaces/ns/pods/low/status", "DisruptionTarget",
                            "PreemptionByScheduler",
                            "tarema: preempting to accommodate a higher priority pod", NULL);
    int del = find_request("DELETE /api/v1/namespaces/ns/pods/low", "\"preconditions\"", "\"ulow\"",
                           NULL);
    CHECK(cond >= 0);
    CHECK(del > cond);
    run_until(&e, 4, 3000);
    tm_err err = {0};
    for (int w = 0; w < 3000 && find_request("POST /apis/events.k8s.io/v1/namespaces/ns/events",
                                             "\"Preempted\"", NULL) < 0;
         w += 20)
        tm_kube_run(e.k, 20, &err);
    int ev = find_request("POST /apis/events.k8s.io/v1/namespaces/ns/events", "\"Preempted\"",
                          "Preempted by pod uhigh on node n1", "\"related\"", "\"high\"", NULL);
    CHECK(ev > del);
    /* the room is kept: the preemptor is nominated in the table the snapshot reads */
    sched_snapshot *s = sched_cache_snapshot(e.cache);
    const char *nom = sched_nominated_node(sched_snapshot_nominated(s), "uhigh");
    CHECK(nom && strcmp(nom, "n1") == 0);
    /* the victim is gone: a 3-cpu pod of lower priority fits n1 as placed (empty) but not
     * beside the nominated preemptor's 2 cpu, so it must not take the room */
    deliver(&e, TM_WATCH_DELETED, pod("low", "ulow", 10, "3", "n1", "default-scheduler"));
    json_t *small = pod("small", "usmall", 5, "3", "", "tarema");
    CHECK(!cycle(&e, small, false, NULL));
    /* the preemptor itself fits now, where it was nominated */
    CHECK(cycle(&e, high, false, NULL));
    /* metrics: kube-scheduler's names and tarema's */
    char *m = tm_metrics_render(e.reg);
    CHECK(m && strstr(m, "scheduler_preemption_attempts_total 1\n"));
    CHECK(m && strstr(m, "scheduler_preemption_victims_count 1\n"));
    CHECK(m && strstr(m, "tarema_preemption_attempts_total{result=\"nominated\"} 1\n"));
    CHECK(m && strstr(m, "tarema_preemption_victims_total{reason=\"lower_priority\"} 1\n"));
    CHECK(m && strstr(m, "tarema_preemption_evictions_total{result=\"ok\"} 1\n"));
    free(m);
    json_decref(small);
    json_decref(high);
    env_free(&e);
    server_stop(t);
}

static void test_no_second_eviction(void) {
    pthread_t t = server_start();
    env e;
    env_init(&e);
    deliver(&e, TM_WATCH_ADDED, pod("low", "ulow", 10, "3", "n1", "default-scheduler"));
    json_t *high = pod("high", "uhigh", 1000, "2", "", "tarema");
    bool preempted = false;
    CHECK(!cycle(&e, high, true, &preempted));
    CHECK(preempted);
    run_until(&e, 4, 3000);
    /* retried while its victim is still there (terminating): no second round */
    preempted = true;
    CHECK(!cycle(&e, high, true, &preempted));
    CHECK(!preempted);
    run_until(&e, 5, 300); /* nothing more comes */
    CHECK_INT(count_lines("DELETE /api/v1/namespaces/ns/pods/low"), 1);
    json_decref(high);
    env_free(&e);
    server_stop(t);
}

static void test_restart_reads_nominations_back(void) {
    pthread_t t = server_start();
    env e;
    env_init(&e);
    /* as a restarted scheduler lists them: the victim terminating, the preemptor nominated */
    json_t *low = pod("low", "ulow", 10, "3", "n1", "default-scheduler");
    json_object_set_new(json_object_get(low, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:01:00Z"));
    deliver(&e, TM_WATCH_ADDED, low);
    json_t *high = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(high, "status"), "nominatedNodeName", json_string("n1"));
    deliver(&e, TM_WATCH_ADDED, json_incref(high));
    sched_nominated *tab = sched_snapshot_nominated(sched_cache_snapshot(e.cache));
    const char *nom = sched_nominated_node(tab, "uhigh");
    CHECK(nom && strcmp(nom, "n1") == 0);
    /* it does not fit yet and does not preempt again */
    bool preempted = true;
    CHECK(!cycle(&e, high, true, &preempted));
    CHECK(!preempted);
    run_until(&e, 1, 300);
    CHECK_INT(count_lines("DELETE /api/v1/namespaces/ns/pods/low"), 0);
    /* a pod of another scheduler with a nomination is not ours to count (even if the transform
     * kept it) */
    json_t *other = pod("other", "uother", 1000, "1", "", "default-scheduler");
    json_object_set_new(json_object_get(other, "status"), "nominatedNodeName", json_string("n1"));
    sched_preemptor_pod_event(e.pr, TM_WATCH_ADDED, other, NULL);
    json_decref(other);
    CHECK(sched_nominated_node(tab, "uother") == NULL);
    /* the nomination ends when it is bound, and when it is cleared */
    json_t *bound = pod("high", "uhigh", 1000, "2", "n1", "tarema");
    deliver(&e, TM_WATCH_MODIFIED, bound);
    CHECK(sched_nominated_node(tab, "uhigh") == NULL);
    json_t *again = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(again, "status"), "nominatedNodeName", json_string("n1"));
    deliver(&e, TM_WATCH_MODIFIED, again);
    CHECK(sched_nominated_node(tab, "uhigh") != NULL);
    deliver(&e, TM_WATCH_MODIFIED, pod("high", "uhigh", 1000, "2", "", "tarema"));
    CHECK(sched_nominated_node(tab, "uhigh") == NULL);
    /* and when the scheduler assumes it itself */
    json_t *third = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(third, "status"), "nominatedNodeName", json_string("n1"));
    deliver(&e, TM_WATCH_MODIFIED, third);
    sched_preemptor_assumed(e.pr, "uhigh");
    CHECK(sched_nominated_node(tab, "uhigh") == NULL);
    json_decref(high);
    env_free(&e);
    server_stop(t);
}

static void test_nomination_cleared_when_nothing_helps(void) {
    pthread_t t = server_start();
    env e;
    env_init(&e);
    /* nominated to n1, which now holds a pod of higher priority: no victims anywhere. As
     * kube-scheduler, the nomination ends (table and API); not so when merely not eligible. */
    deliver(&e, TM_WATCH_ADDED, pod("vip", "uvip", 2000, "3", "n1", "default-scheduler"));
    json_t *high = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(high, "status"), "nominatedNodeName", json_string("n1"));
    deliver(&e, TM_WATCH_ADDED, json_incref(high));
    sched_nominated *tab = sched_snapshot_nominated(sched_cache_snapshot(e.cache));
    CHECK(sched_nominated_node(tab, "uhigh") != NULL);
    bool preempted = true;
    CHECK(!cycle(&e, high, true, &preempted));
    CHECK(!preempted);
    CHECK(sched_nominated_node(tab, "uhigh") == NULL);
    run_until(&e, 1, 3000);
    CHECK(find_request("PATCH /api/v1/namespaces/ns/pods/high/status",
                       "\"nominatedNodeName\": null", NULL) >= 0 ||
          find_request("PATCH /api/v1/namespaces/ns/pods/high/status", "\"nominatedNodeName\":null",
                       NULL) >= 0);
    CHECK_INT(count_lines("DELETE /api/v1/namespaces/ns/pods/vip"), 0);
    /* preemptionPolicy Never (not eligible): a nomination it holds stays */
    json_t *never = pod("never", "unever", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(never, "spec"), "preemptionPolicy", json_string("Never"));
    json_object_set_new(json_object_get(never, "status"), "nominatedNodeName", json_string("n1"));
    deliver(&e, TM_WATCH_ADDED, json_incref(never));
    CHECK(!cycle(&e, never, true, &preempted));
    CHECK(!preempted);
    CHECK(sched_nominated_node(tab, "unever") != NULL);
    json_decref(never);
    json_decref(high);
    env_free(&e);
    server_stop(t);
}

static void test_transform_keeps_what_preemption_reads(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema", NULL, NULL, NULL, &err);
    json_t *p = pod("high", "uhigh", 1000, "2", "", "tarema");
    json_object_set_new(json_object_get(p, "status"), "nominatedNodeName", json_string("n1"));
    json_t *o = sched_cache_pod_transform(c, p);
    CHECK_STR(tm_json_str(o, "status.nominatedNodeName", ""), "n1");
    CHECK_STR(tm_json_str(o, "status.startTime", ""), "2026-01-01T00:00:01Z");
    CHECK_STR(tm_json_str(o, "spec.schedulerName", ""), "tarema");
    json_decref(o);
    /* another scheduler's pending pod is dropped, as by the cache's own transform */
    CHECK(sched_cache_pod_transform(c, pod("x", "ux", 1, "1", "", "other")) == NULL);
    sched_cache_free(c);
}

static void test_pdb_table(void) {
    pthread_t t = server_start();
    env e;
    env_init(&e);
    json_t *b =
        js("{\"metadata\":{\"name\":\"guard\",\"namespace\":\"ns\"},\"spec\":{\"minAvailable\":"
           "1,\"selector\":{\"matchLabels\":{\"app\":\"low\"}}},\"status\":"
           "{\"disruptionsAllowed\":0}}");
    sched_pdbs *tab = sched_snapshot_pdbs(sched_cache_snapshot(e.cache));
    CHECK(sched_preemptor_pdb_event(e.pr, TM_WATCH_ADDED, b));
    CHECK_INT((int)sched_pdbs_count(tab), 1);
    /* a malformed one is refused with a warning, and a stale version of it is not kept */
    json_t *bad =
        js("{\"metadata\":{\"name\":\"guard\",\"namespace\":\"ns\"},\"spec\":{\"selector\":"
           "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Nope\"}]}}}");
    sched_preemptor_pdb_event(e.pr, TM_WATCH_MODIFIED, bad);
    CHECK_INT((int)sched_pdbs_count(tab), 0);
    CHECK(sched_preemptor_pdb_event(e.pr, TM_WATCH_MODIFIED, b));
    CHECK(sched_preemptor_pdb_event(e.pr, TM_WATCH_DELETED, b));
    CHECK_INT((int)sched_pdbs_count(tab), 0);
    json_decref(b);
    json_decref(bad);
    env_free(&e);
    server_stop(t);
}

int main(void) {
    RUN(test_transform_keeps_what_preemption_reads);
    RUN(test_preemption_carried_out);
    RUN(test_no_second_eviction);
    RUN(test_restart_reads_nominations_back);
    RUN(test_nomination_cleared_when_nothing_helps);
    RUN(test_pdb_table);
    return TEST_SUMMARY();
}
