/* End-to-end tests of tm_informer against the real local control plane: several informers on
 * one loop; a watch sees pods created after it starts; kill -9 the kube-apiserver mid-watch
 * (hack/cluster.sh kill apiserver), restart it, change objects before the informer can
 * reconnect, and check every creation and deletion is still observed (through a resumed
 * watch or a re-list diff). Needs KUBECONFIG and, for a non-default instance,
 * TAREMA_CLUSTER_NAME in the environment; REPO_ROOT (set by tests/run.sh) or the current
 * directory locates hack/cluster.sh. */
/* e2e-run: alone (tests/run.sh runs it with no other test beside it): it kills and restarts
 * the shared kube-apiserver. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/kube.h"
#include "lib_kube_e2e.h"

static tm_kube *kube; /* synchronous helper client */
static char ns[64];

typedef struct {
    json_t *seen; /* name -> last event type ("ADDED", "MODIFIED", "DELETED") */
    int synced, events;
} watch_log;

static void on_event(void *ud, tm_watch_type t, json_t *obj, json_t *old) {
    watch_log *w = ud;
    static const char *names[] = {"ADDED", "MODIFIED", "DELETED"};
    json_object_set_new(w->seen, tm_json_str(obj, "metadata.name", "?"), json_string(names[t]));
    w->events++;
    if (t == TM_WATCH_MODIFIED || t == TM_WATCH_DELETED)
        CHECK(old != NULL);
}

static void on_synced(void *ud) {
    ((watch_log *)ud)->synced++;
}

static int create_pod(const char *name) {
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion",
                            "v1", "kind", "Pod", "metadata", "name", name, "labels", "app",
                            "kube-watch", "spec", "schedulerName", "nobody-schedules-this",
                            "containers", "name", "main", "image", "busybox");
    char *coll = tm_kube_path("v1", "pods", ns, NULL, NULL);
    tm_err err = {0};
    json_t *r = tm_kube_create(kube, coll, pod, &err);
    if (!r)
        printf("    create pod %s: %s\n", name, err.msg);
    json_decref(r);
    json_decref(pod);
    free(coll);
    return r ? 0 : -1;
}

static int delete_pod(const char *name) {
    char *path = tm_kube_path("v1", "pods", ns, name, NULL);
    tm_err err = {0};
    int rc = tm_kube_delete(kube, path, &err);
    if (rc < 0)
        printf("    delete pod %s: %s\n", name, err.msg);
    free(path);
    return rc;
}

static bool seen_as(const watch_log *w, const char *name, const char *type) {
    const char *t = json_string_value(json_object_get(w->seen, name));
    return t && strcmp(t, type) == 0;
}

/* Runs the loop until every name in `names` was last seen as `type` or timeout_s passes. */
static bool run_until_seen(tm_kube *k, const watch_log *w, const char *const *names, int n,
                           const char *type, double timeout_s) {
    double end = e2e_now_s() + timeout_s;
    tm_err err = {0};
    while (e2e_now_s() < end) {
        int ok = 0;
        for (int i = 0; i < n; i++)
            ok += seen_as(w, names[i], type);
        if (ok == n)
            return true;
        if (tm_kube_run(k, 100, &err) < 0) {
            printf("    loop: %s\n", err.msg);
            return false;
        }
    }
    return false;
}

static int cluster_cmd(const char *verb, const char *component) {
    const char *root = getenv("REPO_ROOT");
    char script[4096];
    snprintf(script, sizeof script, "%s/hack/cluster.sh", root ? root : ".");
    pid_t pid = fork();
    if (pid == 0) {
        execlp("bash", "bash", script, verb, component, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static tm_kube *loop;
static tm_informer *pods;
static watch_log plog;

static void test_informers_share_one_loop_and_sync(void) {
    CHECK(create_pod("before-1") == 0);
    CHECK(create_pod("before-2") == 0);
    plog.seen = json_object();
    char path[200];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    tm_informer_opts po = {.path = path,
                           .label_selector = "app=kube-watch",
                           .page_size = 1, /* forces paging through continue tokens */
                           .on_event = on_event,
                           .on_synced = on_synced,
                           .ud = &plog};
    tm_err err = {0};
    pods = tm_informer_start(loop, &po, &err);
    CHECKF(pods != NULL, "%s", err.msg);
    watch_log nlog = {json_object(), 0, 0};
    tm_informer_opts no = {.path = "/api/v1/nodes",
                           .field_selector = "metadata.name!=nonexistent",
                           .on_event = on_event,
                           .on_synced = on_synced,
                           .ud = &nlog};
    tm_informer *nodes = tm_informer_start(loop, &no, &err);
    CHECKF(nodes != NULL, "%s", err.msg);
    double end = e2e_now_s() + 20;
    while (e2e_now_s() < end && !(tm_informer_synced(pods) && tm_informer_synced(nodes)))
        tm_kube_run(loop, 100, &err);
    CHECK(tm_informer_synced(pods));
    CHECK(tm_informer_synced(nodes));
    CHECK_INT(tm_informer_size(pods), 2);
    CHECK(tm_informer_size(nodes) >= 15);
    CHECK(seen_as(&plog, "before-1", "ADDED") && seen_as(&plog, "before-2", "ADDED"));
    CHECK(tm_informer_get(pods, ns, "before-1") != NULL);
    CHECK(tm_informer_get(nodes, NULL, "n2-1") != NULL);
    CHECK_STR(tm_json_str(tm_informer_get(nodes, NULL, "c2-1"), "kind", NULL), "Node");
    CHECK_INT(plog.synced, 1);
    tm_informer_stop(nodes);
    json_decref(nlog.seen);
}

static void test_watch_sees_pods_created_after_start(void) {
    const char *names[] = {"after-1", "after-2", "after-3"};
    for (int i = 0; i < 3; i++)
        CHECK(create_pod(names[i]) == 0);
    CHECK(run_until_seen(loop, &plog, names, 3, "ADDED", 20));
    CHECK(delete_pod("after-3") == 0);
    const char *gone[] = {"after-3"};
    CHECK(run_until_seen(loop, &plog, gone, 1, "DELETED", 20));
    CHECK_INT(tm_informer_size(pods), 4);
    CHECK_INT(tm_informer_relists(pods), 0);
}

/* kill -9 the API server under the informer, let it notice and back off for 2 s, start the
 * server again (hack/cluster.sh waits until it is healthy). Returns when it was back. */
static double kill9_and_restart_apiserver(void) {
    tm_err err = {0};
    CHECK_INT(cluster_cmd("kill", "apiserver"), 0);
    double killed = e2e_now_s();
    while (e2e_now_s() < killed + 2)
        tm_kube_run(loop, 100, &err);
    CHECK_INT(cluster_cmd("start", "apiserver"), 0);
    double back = e2e_now_s();
    printf("    apiserver down for %.1f s\n", back - killed);
    return back;
}

static void test_apiserver_kill9_restart_nothing_lost(void) {
    tm_err err = {0};
    /* Let the watch be established and idle, then kill the API server under it. */
    for (int i = 0; i < 10; i++)
        tm_kube_run(loop, 100, &err);
    unsigned reconnects0 = tm_informer_reconnects(pods);
    double back = kill9_and_restart_apiserver();
    /* Changes the informer cannot have watched: its loop does not run until they are done. */
    const char *names[] = {"during-1", "during-2", "during-3", "during-4", "during-5"};
    for (int i = 0; i < 5; i++)
        CHECK(create_pod(names[i]) == 0);
    CHECK(delete_pod("before-1") == 0);
    bool added = run_until_seen(loop, &plog, names, 5, "ADDED", 60);
    const char *gone[] = {"before-1"};
    bool deleted = run_until_seen(loop, &plog, gone, 1, "DELETED", 30);
    CHECK(added);
    CHECK(deleted);
    printf("    all changes observed %.1f s after the restart (reconnects %u, re-lists %u)\n",
           e2e_now_s() - back, tm_informer_reconnects(pods) - reconnects0,
           tm_informer_relists(pods));
    CHECK(tm_informer_reconnects(pods) > reconnects0 || tm_informer_relists(pods) > 0);
    CHECK_INT(tm_informer_size(pods), 8);
    CHECK(tm_informer_get(pods, ns, "before-1") == NULL);
    /* And the watch keeps working afterwards. */
    CHECK(create_pod("after-restart") == 0);
    const char *later[] = {"after-restart"};
    CHECK(run_until_seen(loop, &plog, later, 1, "ADDED", 20));
}

/* Compacts the instance's etcd at its current revision through etcd's JSON gateway, so no
 * watch can resume from an older resourceVersion. Port from $TAREMA_CLUSTER_DIR/ports.env. */
static int etcd_compact(void) {
    const char *dir = getenv("TAREMA_CLUSTER_DIR");
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/ports.env", dir ? dir : ".");
    FILE *f = fopen(path, "r");
    int port = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "ETCD_PORT=", 10) == 0)
            port = atoi(line + 10);
    if (f)
        fclose(f);
    if (!port) {
        printf("    no ETCD_PORT in %s\n", path);
        return -1;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    tm_kube_config cfg = {.server = url};
    tm_err err = {0};
    tm_kube *etcd = tm_kube_new(&cfg, &err);
    json_t *q = json_pack("{s:s}", "key", "YQ==");
    json_t *r = etcd ? tm_kube_request(etcd, "POST", "/v3/kv/range", q, NULL, NULL, &err) : NULL;
    const char *rev = tm_json_str(r, "header.revision", NULL);
    json_t *c = json_pack("{s:s, s:b}", "revision", rev ? rev : "0", "physical", 1);
    json_t *done =
        rev ? tm_kube_request(etcd, "POST", "/v3/kv/compaction", c, NULL, NULL, &err) : NULL;
    if (!done)
        printf("    etcd compaction: %s\n", err.msg);
    else
        printf("    etcd compacted at revision %s\n", rev);
    int rc = done ? 0 : -1;
    json_decref(done);
    json_decref(c);
    json_decref(r);
    json_decref(q);
    tm_kube_free(etcd);
    return rc;
}

static void test_kill9_then_etcd_compaction_nothing_lost(void) {
    /* As above, but etcd is also compacted before the informer reconnects, so the changes
     * cannot be replayed from etcd. The restarted API server either still serves the watch
     * from its watch cache or answers 410, and then only the re-list diff can report them
     * (which of the two happens depends on the cache's start revision: both must work). */
    tm_err err = {0};
    for (int i = 0; i < 10; i++)
        tm_kube_run(loop, 100, &err);
    unsigned relists0 = tm_informer_relists(pods);
    double back = kill9_and_restart_apiserver();
    const char *names[] = {"compact-1", "compact-2", "compact-3"};
    for (int i = 0; i < 3; i++)
        CHECK(create_pod(names[i]) == 0);
    CHECK(delete_pod("during-1") == 0);
    CHECK(etcd_compact() == 0);
    CHECK(run_until_seen(loop, &plog, names, 3, "ADDED", 60));
    const char *gone[] = {"during-1"};
    CHECK(run_until_seen(loop, &plog, gone, 1, "DELETED", 30));
    printf("    all changes observed %.1f s after the restart (re-lists %u)\n", e2e_now_s() - back,
           tm_informer_relists(pods) - relists0);
    CHECK_INT(tm_informer_size(pods), 11);
    CHECK(create_pod("after-compaction") == 0);
    const char *later[] = {"after-compaction"};
    CHECK(run_until_seen(loop, &plog, later, 1, "ADDED", 20));
}

/* Tests that run after this one need the controller-manager working at once: its watches must
 * not sit in client-go's reconnect backoff (up to a minute) after the restarts, which
 * hack/cluster.sh start prevents by restarting it. A new namespace gets its default
 * ServiceAccount within seconds. */
static void test_cluster_whole_again(void) {
    char probe[80];
    snprintf(probe, sizeof probe, "%s-probe", ns);
    json_t *nsobj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                              "metadata", "name", probe);
    tm_err err = {0};
    json_t *r = tm_kube_create(kube, "/api/v1/namespaces", nsobj, &err);
    CHECKF(r != NULL, "%s", err.msg);
    double t0 = e2e_now_s();
    CHECK(e2e_wait_default_sa(kube, probe, 15));
    printf("    controller-manager serving again after %.1f s\n", e2e_now_s() - t0);
    json_decref(r);
    json_decref(nsobj);
    char *path = tm_kube_path("v1", "namespaces", NULL, probe, NULL);
    tm_kube_delete(kube, path, &err);
    free(path);
}

int main(void) {
    kube = e2e_client(0, 0);
    loop = e2e_client(0, 0);
    if (!kube || !loop) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    snprintf(ns, sizeof ns, "kube-watch-%d", (int)getpid());
    tm_err err = {0};
    e2e_create_namespace(kube, ns);
    RUN(test_informers_share_one_loop_and_sync);
    RUN(test_watch_sees_pods_created_after_start);
    RUN(test_apiserver_kill9_restart_nothing_lost);
    RUN(test_kill9_then_etcd_compaction_nothing_lost);
    RUN(test_cluster_whole_again);
    tm_informer_stop(pods);
    json_decref(plog.seen);
    char *path = tm_kube_path("v1", "namespaces", NULL, ns, NULL);
    tm_kube_delete(kube, path, &err);
    free(path);
    tm_kube_free(loop);
    tm_kube_free(kube);
    return TEST_SUMMARY();
}
