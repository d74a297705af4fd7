/* podspec_fuzz.c: fuzzes Pod, Node and TaskProfile JSON -> scheduler structs
 * (scheduler/backend/podspec.h), the translation of everything the API server and the extender
 * protocol hand the scheduler. The input is tried as each kind of object; an accepted pod is
 * then run through every filter against two fixed nodes and the input-made one, and recorded
 * in the snapshot the way the cache records placed pods. */
#include "fuzz/fuzz_util.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/snapshot.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

/* Two ordinary nodes so filters have something to compare with (spread, anti-affinity). */
static const char *const podspec_nodes[] = {
    "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"kubernetes.io/hostname\":\"n1\","
    "\"topology.kubernetes.io/zone\":\"a\",\"tarema.io/cpu\":\"1\",\"tarema.io/mem\":\"1\","
    "\"tarema.io/io\":\"1\"}},\"spec\":{\"taints\":[{\"key\":\"k\",\"value\":\"v\","
    "\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":"
    "\"8Gi\",\"pods\":\"110\",\"example.com/gpu\":\"1\"},\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"}]}}",
    "{\"metadata\":{\"name\":\"n2\",\"labels\":{\"kubernetes.io/hostname\":\"n2\","
    "\"topology.kubernetes.io/zone\":\"b\",\"tarema.io/cpu\":\"2\",\"tarema.io/mem\":\"2\","
    "\"tarema.io/io\":\"2\"}},\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"8\","
    "\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
    "\"True\"}]}}",
};

static void podspec_add_node(sched_snapshot *s, const json_t *j) {
    tm_err err = {{0}, 0};
    sched_node *n = sched_node_from_json(s, j, &err);
    if (!n) {
        FZ_CHECK(err.msg[0] != '\0');
        return;
    }
    sched_snapshot_put_node(s, n, &err); /* takes ownership, also on error */
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *j = fz_json(data, size);
    if (!j)
        return 0;
    sched_snapshot *s = sched_snapshot_new();
    if (!s) {
        json_decref(j);
        return 0;
    }
    tm_err err = {{0}, 0};
    for (size_t i = 0; i < sizeof podspec_nodes / sizeof podspec_nodes[0]; i++) {
        json_t *nj = json_loads(podspec_nodes[i], 0, NULL);
        FZ_CHECK(nj != NULL);
        podspec_add_node(s, nj);
        json_decref(nj);
    }
    podspec_add_node(s, j);

    /* A placed pod, as the cache records pods bound to a node (also the input as one). */
    if (sched_snapshot_add_pod_json(s, j, "n2", &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    if (sched_snapshot_add_pod_json(s, j, NULL, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    sched_resources req;
    if (sched_pod_requests_from_json(s, j, &req, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');

    const char *wf = NULL, *proc = NULL;
    sched_task_profile prof;
    if (sched_task_profile_from_json(j, &wf, &proc, &prof, &err) == 0) {
        FZ_CHECK(wf != NULL && proc != NULL);
        if (sched_snapshot_set_task(s, wf, proc, &prof, &err) != 0)
            FZ_CHECK(err.msg[0] != '\0');
    }
    sched_pod_json_terminal(j);

    sched_keys keys = {.process_label = "app", .workflow_key = "wf"};
    for (int k = 0; k < 2; k++) {
        sched_pod *p = sched_pod_from_json(s, j, k ? &keys : NULL, &err);
        if (!p) {
            FZ_CHECK(err.msg[0] != '\0');
            continue;
        }
        sched_task_info ti;
        sched_task_resolve(s, p, &ti);
        sched_snapshot_refresh(s);
        for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
            uint32_t detail = 0;
            sched_filter_id f = sched_filter_node(s, p, sched_snapshot_node(s, i), &detail);
            FZ_CHECK(f <= SCHED_FILTER_COUNT);
            if (f != SCHED_FILTER_OK && f != SCHED_FILTER_COUNT)
                FZ_CHECK(sched_filter_name(f) != NULL);
        }
        sched_prefilter *pf = sched_prefilter_new();
        if (pf && sched_prefilter_compute(pf, s, p, &err) == 0) {
            for (size_t i = 0; i < sched_snapshot_node_count(s); i++) {
                uint32_t d1 = 0, d2 = 0;
                sched_filter_id a = sched_filter_node_pre(s, p, i, pf, &d1);
                sched_filter_id b = sched_filter_node(s, p, sched_snapshot_node(s, i), &d2);
                if (a != b) {
                    fprintf(stderr, "node %zu: with prefilter %s, without %s\n", i,
                            sched_filter_name(a), sched_filter_name(b));
                    FZ_FAIL("sched_filter_node_pre and sched_filter_node disagree");
                }
            }
        }
        sched_prefilter_free(pf);
        if (sched_pod_record(s, p, "n1", &err) != 0)
            FZ_CHECK(err.msg[0] != '\0');
        sched_pod_free(p);
    }
    sched_snapshot_free(s);
    json_decref(j);
    return 0;
}
