/* extender_fuzz.c: fuzzes the kube-scheduler extender request translation
 * (scheduler/cmd/extender.h): ExtenderArgs and ExtenderBindingArgs as they arrive over HTTP. Each
 * input goes through filter, prioritize and bind, once with a cache snapshot (two nodes and a
 * task profile, as the live scheduler has) and once without. Results must have the wire shape
 * kube-scheduler expects: scores within 0..10. */
#include "fuzz/fuzz_util.h"
#include "scheduler/cmd/extender.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static const char *const extender_cache_nodes[] = {
    "{\"metadata\":{\"name\":\"slow-1\",\"labels\":{\"tarema.io/cpu\":\"1\",\"tarema.io/mem\":"
    "\"1\",\"tarema.io/io\":\"1\",\"tarema.io/group\":\"g1\"}},\"spec\":{},\"status\":{"
    "\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},\"conditions\":[{"
    "\"type\":\"Ready\",\"status\":\"True\"}]}}",
    "{\"metadata\":{\"name\":\"fast-1\",\"labels\":{\"tarema.io/cpu\":\"3\",\"tarema.io/mem\":"
    "\"3\",\"tarema.io/io\":\"2\",\"tarema.io/group\":\"g3\"}},\"spec\":{},\"status\":{"
    "\"allocatable\":{\"cpu\":\"16\",\"memory\":\"64Gi\",\"pods\":\"110\"},\"conditions\":[{"
    "\"type\":\"Ready\",\"status\":\"True\"}]}}",
};
static const char extender_profile[] =
    "{\"apiVersion\":\"tarema.io/v1alpha1\",\"kind\":\"TaskProfile\",\"spec\":{\"workflow\":"
    "\"rnaseq\",\"process\":\"FASTQC\"},\"status\":{\"labels\":{\"cpu\":2,\"mem\":1,\"io\":3},"
    "\"mean\":{\"realtimeMs\":95000}}}";

static sched_snapshot *extender_cache(void) {
    sched_snapshot *s = sched_snapshot_new();
    if (!s)
        return NULL;
    tm_err err = {{0}, 0};
    for (size_t i = 0; i < sizeof extender_cache_nodes / sizeof extender_cache_nodes[0]; i++) {
        json_t *nj = json_loads(extender_cache_nodes[i], 0, NULL);
        sched_node *n = nj ? sched_node_from_json(s, nj, &err) : NULL;
        FZ_CHECK(n != NULL);
        if (n)
            sched_snapshot_put_node(s, n, &err);
        json_decref(nj);
    }
    json_t *tp = json_loads(extender_profile, 0, NULL);
    const char *wf, *proc;
    sched_task_profile prof;
    if (tp && sched_task_profile_from_json(tp, &wf, &proc, &prof, &err) == 0)
        sched_snapshot_set_task(s, wf, proc, &prof, &err);
    json_decref(tp);
    return s;
}

static int extender_bind_ok(void *ud, const char *ns, const char *name, const char *uid,
                            const char *node, tm_err *err) {
    (void)ud;
    if (!ns || !name || !node)
        return tm_err_set(err, "bind called without namespace, name or node");
    (void)uid;
    return 0;
}

static void extender_run(sched_snapshot *cache, const json_t *args) {
    sched_extender_opts o = {.cache = cache, .bind = extender_bind_ok};
    tm_err err = {{0}, 0};
    sched_extender *x = sched_extender_new(&o, &err);
    FZ_CHECK(x != NULL);
    if (!x)
        return;
    json_t *res = sched_extender_filter(x, args, &err);
    if (res) {
        FZ_CHECK(json_is_object(res));
        json_decref(res);
    } else {
        FZ_CHECK(err.msg[0] != '\0');
    }
    res = sched_extender_prioritize(x, args, &err);
    if (res) {
        FZ_CHECK(json_is_array(res));
        size_t i;
        json_t *e;
        json_array_foreach(res, i, e) {
            json_t *score = json_object_get(e, "Score");
            FZ_CHECK(json_is_integer(score));
            json_int_t sc = json_integer_value(score);
            if (sc < 0 || sc > 10) {
                fprintf(stderr, "score %lld\n", (long long)sc);
                FZ_FAIL("prioritize returned a score outside 0..10");
            }
            FZ_CHECK(json_is_string(json_object_get(e, "Host")));
        }
        json_decref(res);
    } else {
        FZ_CHECK(err.msg[0] != '\0');
    }
    res = sched_extender_bind(x, args);
    FZ_CHECK(res != NULL && json_is_object(res));
    json_decref(res);
    sched_extender_free(x);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *args = fz_json(data, size);
    if (!args)
        return 0;
    sched_snapshot *cache = extender_cache();
    extender_run(cache, args);
    extender_run(NULL, args);
    sched_snapshot_free(cache);
    json_decref(args);
    return 0;
}
