/* planner_live_test.c: the pure parts of the planner's controller: the objects it writes
 * (kobj), the occupancy it reads from live objects (occupancy), walltimes predicted from
 * TaskProfiles and WARP's load threshold (predict), release dates and reservation windows in
 * the solver's input, and the Gantt SVG. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lib/jsonutil.h"
#include "lib/yamljson.h"
#include "planner/gantt.h"
#include "planner/kobj.h"
#include "planner/occupancy.h"
#include "planner/predict.h"
#include "planner/problem.h"
#include "planner/solve.h"

static json_t *yaml(const char *text) {
    tm_err err = {0};
    json_t *j = tm_yaml_parse(text, strlen(text), "test.yaml", &err);
    CHECKF(j != NULL, "yaml: %s", err.msg);
    return j;
}

static const char *const wf_yaml =
    "apiVersion: tarema.io/v1alpha1\nkind: Workflow\n"
    "metadata: {name: turbine, namespace: hpc, uid: u-1}\n"
    "spec:\n  steps:\n"
    "  - {name: LES, pods: 2, requests: {cpu: 36, memory: 64Gi}, duration: 15m, image: les:1,\n"
    "     annotations: {a: b}}\n"
    "  - {name: HPDA, after: [LES], pods: 5, requests: {cpu: 36, memory: 64Gi}, duration: 30m,\n"
    "     command: echo hi}\n";

static void test_time(void) {
    char buf[40];
    CHECK(pl_time_parse("2026-11-24T00:15:00Z") == 1795479300);
    CHECK(pl_time_parse("2026-11-24T00:15:00.123Z") == 1795479300);
    CHECK(pl_time_parse("2026-11-24T00:15:00+01:00") == -1);
    CHECK(pl_time_parse(NULL) == -1);
    CHECK(!strcmp(pl_time_format(1795479300, buf, sizeof buf), "2026-11-24T00:15:00Z"));
}

static void test_names(void) {
    char buf[PL_OBJNAME_MAX];
    CHECK(pl_step_object_name("turbine", "LES", buf, sizeof buf) == 0 &&
          !strcmp(buf, "turbine-les"));
    CHECK(pl_step_object_name("w", "Map_Reads.1", buf, sizeof buf) == 0 &&
          !strcmp(buf, "w-map-reads-1"));
    char longname[80];
    memset(longname, 'x', 70);
    longname[70] = 0;
    CHECK(pl_step_object_name("w", longname, buf, sizeof buf) < 0);
    /* two steps mapping to one object name are refused, naming both */
    json_t *o = yaml("metadata: {name: w}\nspec:\n  steps:\n"
                     "  - {name: A_1, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}\n"
                     "  - {name: a-1, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}\n");
    tm_err err = {0};
    pl_workflow *wf = pl_workflow_from_object(o, &err);
    CHECK(wf == NULL);
    CHECKF(strstr(err.msg, "'A_1' and 'a-1'") && strstr(err.msg, "w-a-1"), "%s", err.msg);
    json_decref(o);
}

static void test_objects(void) {
    json_t *w = yaml(wf_yaml);
    tm_err err = {0};
    pl_workflow *wf = pl_workflow_from_object(w, &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf)
        return;
    const pl_step *les = &wf->steps[0], *hpda = &wf->steps[1];
    json_t *pg = pl_podgroup_object(w, hpda);
    CHECK(!strcmp(tm_json_str(pg, "metadata.name", ""), "turbine-hpda"));
    CHECK(!strcmp(tm_json_str(pg, "metadata.namespace", ""), "hpc"));
    CHECK(tm_json_int(pg, "spec.minMember", 0) == 5);
    CHECK(!strcmp(tm_json_str(pg, "spec.minResources.cpu", ""), "180"));
    CHECK(!strcmp(tm_json_str(pg, "metadata.ownerReferences", "x"), "x")); /* an array */
    CHECK(!strcmp(
        tm_json_str(json_array_get(tm_json_path(pg, "metadata.ownerReferences"), 0), "uid", ""),
        "u-1"));
    const char *nodes[] = {"c-1", "c-2", "c-1", "c-3", "c-2"};
    json_t *r = pl_reservation_object(w, hpda, 1795479300, 1795481100, nodes, 5, "tarema");
    CHECK(!strcmp(tm_json_str(r, "kind", ""), "Reservation"));
    CHECK(!strcmp(tm_json_str(r, "spec.startTime", ""), "2026-11-24T00:15:00Z"));
    CHECK(!strcmp(tm_json_str(r, "spec.endTime", ""), "2026-11-24T00:45:00Z"));
    CHECK(!strcmp(tm_json_str(r, "spec.owner.kind", ""), "PodGroup"));
    CHECK(!strcmp(tm_json_str(r, "spec.owner.name", ""), "turbine-hpda"));
    CHECK(!strcmp(tm_json_str(r, "spec.schedulerName", ""), "tarema"));
    CHECK(tm_json_int(r, "spec.count", 0) == 5);
    CHECK(!strcmp(tm_json_str(r, "spec.template.requests.cpu", ""), "36"));
    CHECK(!strcmp(tm_json_str(r, "spec.template.requests.memory", ""), "64Gi"));
    json_t *rn = tm_json_path(r, "spec.nodes");
    CHECK(json_array_size(rn) == 3); /* the planned nodes, each once, in the plan's order */
    CHECK(!strcmp(json_string_value(json_array_get(rn, 0)), "c-1"));
    CHECK(!strcmp(json_string_value(json_array_get(rn, 1)), "c-2"));
    CHECK(!strcmp(json_string_value(json_array_get(rn, 2)), "c-3"));

    json_t *p =
        pl_pod_object(w, les, json_array_get(tm_json_path(w, "spec.steps"), 0), 1, 0, "tarema");
    CHECK(!strcmp(tm_json_str(p, "metadata.name", ""), "turbine-les-1"));
    CHECK(pl_pod_gated(p));
    json_t *labels = tm_json_path(p, "metadata.labels");
    CHECK(!strcmp(json_string_value(json_object_get(labels, PL_LABEL_PG)), "turbine-les"));
    CHECK(!strcmp(json_string_value(json_object_get(labels, PL_LABEL_WF)), "turbine"));
    CHECK(!strcmp(json_string_value(json_object_get(labels, PL_LABEL_STEP)), "les"));
    json_t *ann = tm_json_path(p, "metadata.annotations");
    CHECK(!strcmp(json_string_value(json_object_get(ann, "a")), "b"));
    CHECK(!strcmp(json_string_value(json_object_get(ann, PL_ANN_EXPECT)), "900s"));
    CHECK(!strcmp(tm_json_str(p, "spec.schedulerName", ""), "tarema"));
    json_t *ctr = json_array_get(tm_json_path(p, "spec.containers"), 0);
    CHECK(!strcmp(tm_json_str(ctr, "image", ""), "les:1"));
    CHECK(!strcmp(tm_json_str(ctr, "resources.requests.memory", ""), "64Gi"));
    json_t *p2 =
        pl_pod_object(w, hpda, json_array_get(tm_json_path(w, "spec.steps"), 1), 0, 2, "tarema");
    CHECK(!strcmp(tm_json_str(p2, "metadata.name", ""), "turbine-hpda-0-r2"));
    json_t *cmd =
        json_object_get(json_array_get(tm_json_path(p2, "spec.containers"), 0), "command");
    CHECK(json_array_size(cmd) == 3 &&
          !strcmp(json_string_value(json_array_get(cmd, 2)), "echo hi"));
    json_decref(pg);
    json_decref(r);
    json_decref(p);
    json_decref(p2);
    pl_workflow_free(wf);
    json_decref(w);
}

static const char *const nodes_yaml = "- metadata: {name: n-1, labels: {tarema.io/group: '1'}}\n"
                                      "  status: {allocatable: {cpu: '8', memory: 32Gi}, "
                                      "conditions: [{type: Ready, status: 'True'}]}\n"
                                      "- metadata: {name: n-2, labels: {tarema.io/group: '2'}}\n"
                                      "  status: {allocatable: {cpu: 8000m, memory: 32Gi}, "
                                      "conditions: [{type: Ready, status: 'True'}]}\n"
                                      "- metadata: {name: n-3}\n"
                                      "  status: {allocatable: {cpu: '8', memory: 32Gi}, "
                                      "conditions: [{type: Ready, status: 'False'}]}\n"
                                      "- metadata: {name: n-4}\n"
                                      "  spec: {unschedulable: true}\n"
                                      "  status: {allocatable: {cpu: '8', memory: 32Gi}, "
                                      "conditions: [{type: Ready, status: 'True'}]}\n";

#define NOW 1795479300 /* 2026-11-24T00:15:00Z */

static void test_occupancy(void) {
    json_t *nodes = yaml(nodes_yaml);
    tm_err err = {0};
    pl_cluster *c = pl_world_cluster(nodes, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    CHECK(c->nnodes == 2); /* NotReady and unschedulable nodes are left out */
    CHECK(c->ntypes == 2 && !strcmp(c->type_names[c->nodes[1].type], "2"));
    CHECK(c->nodes[1].cpu_milli == 8000);
    json_t *pods = yaml(
        /* expected end from the annotation: 10 min after its start 5 min ago */
        "- metadata: {name: a, namespace: x, annotations: {tarema.io/expected-duration: 10m}}\n"
        "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '2', memory: 1Gi}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:10:00Z'}\n"
        /* activeDeadlineSeconds */
        "- metadata: {name: b, namespace: x}\n"
        "  spec: {nodeName: n-2, activeDeadlineSeconds: 120, containers: [{resources: {requests: "
        "{cpu: '1'}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:15:00Z'}\n"
        /* TaskProfile mean runtime */
        "- metadata: {name: c, namespace: x, labels: {tarema.io/workflow: chipseq, "
        "nextflow.io/processName: BWA}}\n"
        "  spec: {nodeName: n-2, containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:14:00Z'}\n"
        /* past its expected end: one more overrun period */
        "- metadata: {name: d, namespace: x, annotations: {tarema.io/expected-duration: 1m}}\n"
        "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:00:00Z'}\n"
        /* unknown end */
        "- metadata: {name: e, namespace: x}\n"
        "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Running}\n"
        /* finished and on a node left out: nothing; g, pending, where it fits now (below) */
        "- metadata: {name: f, namespace: x}\n"
        "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Succeeded}\n"
        "- metadata: {name: g, namespace: x}\n"
        "  spec: {containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "- metadata: {name: h, namespace: x, labels: {scheduling.x-k8s.io/pod-group: w-s}}\n"
        "  spec: {nodeName: n-3, containers: [{resources: {requests: {cpu: '1'}}}]}\n");
    json_t *profiles = yaml("- spec: {workflow: chipseq, process: BWA}\n"
                            "  status: {mean: {realtimeMs: 300000}}\n");
    json_t *resvs = yaml(
        /* admitted, in 10 min for 20 min, on n-2: what status.nodes holds */
        "- metadata: {name: r1, namespace: y}\n"
        "  spec: {startTime: '2026-11-24T00:25:00Z', endTime: '2026-11-24T00:45:00Z',\n"
        "         template: {requests: {cpu: '1'}}, count: 4, nodes: [n-2]}\n"
        "  status: {phase: Admitted, nodes: [{name: n-2, pods: 4, requests: {cpu: '4', memory: "
        "8Gi}}]}\n"
        /* the planner's own, not admitted yet: counts, the whole node without a template */
        "- metadata: {name: r2, namespace: y, labels: {app.kubernetes.io/managed-by: "
        "tarema-planner, planner.tarema.io/workflow: other}}\n"
        "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z', nodes: "
        "[n-1]}\n"
        /* the workflow being planned: skipped */
        "- metadata: {name: r3, namespace: y, labels: {app.kubernetes.io/managed-by: "
        "tarema-planner, planner.tarema.io/workflow: me}}\n"
        "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z', nodes: "
        "[n-1]}\n"
        /* released, another's not admitted, over: skipped */
        "- metadata: {name: r4, namespace: y}\n"
        "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z', nodes: "
        "[n-1]}\n"
        "  status: {phase: Released}\n"
        "- metadata: {name: r5, namespace: y}\n"
        "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z', nodes: "
        "[n-1]}\n"
        "- metadata: {name: r6, namespace: y}\n"
        "  spec: {startTime: '2026-11-24T00:00:00Z', endTime: '2026-11-24T00:10:00Z', nodes: "
        "[n-1]}\n"
        "  status: {phase: Active}\n"
        /* the planner's, 3 pods of 1 core on two nodes: 2 cores each (rounded up) */
        "- metadata: {name: r7, namespace: y, labels: {app.kubernetes.io/managed-by: "
        "tarema-planner, planner.tarema.io/workflow: third}}\n"
        "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z',\n"
        "         template: {requests: {cpu: '1', memory: 1Gi}}, count: 3, nodes: [n-1, n-2]}\n");
    pl_world_opts o = {
        .now = NOW, .overrun_s = 60, .unknown_hold_s = 3600, .skip_ns = "y", .skip_wf = "me"};
    pl_busy *b = NULL;
    int n = 0;
    CHECK(pl_world_busy(c, pods, resvs, profiles, &o, &b, &n) == 0);
    CHECKF(n == 10, "%d busy entries", n);
    if (n == 10) {
        CHECK(b[0].node == 0 && b[0].cpu_milli == 2000 && b[0].mem_bytes == 1 << 30 &&
              b[0].until_s == 300 && b[0].from_s == 0);
        CHECK(b[1].node == 1 && b[1].until_s == 120);
        CHECK(b[2].node == 1 && b[2].until_s == 240); /* 5 min mean, started 1 min ago */
        CHECK(b[3].until_s == 60);                    /* overrun */
        CHECK(b[4].until_s == 3600);                  /* unknown */
        CHECK(b[5].node == 1 && b[5].from_s == 600 && b[5].until_s == 1800 &&
              b[5].cpu_milli == 4000);
        CHECK(b[6].node == 0 && b[6].until_s == 300 && b[6].cpu_milli == 8000); /* whole node */
        CHECK(b[7].node == 0 && b[7].cpu_milli == 2000 && b[7].mem_bytes == (int64_t)2 << 30);
        CHECK(b[8].node == 1 && b[8].cpu_milli == 2000);
        /* g, pending: n-1 is held whole by r2 now, so n-2, for the unknown hold */
        CHECK(b[9].node == 1 && b[9].cpu_milli == 1000 && b[9].from_s == 0 && b[9].until_s == 3600);
    }
    free(b);
    /* a reservation whose owner's pods are bound: the pods count, not the reservation */
    json_t *bound =
        yaml("- metadata: {name: p, namespace: y, labels: {scheduling.x-k8s.io/pod-group: g}}\n"
             "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '1'}}}]}\n"
             "  status: {phase: Running}\n");
    json_t *owned =
        yaml("- metadata: {name: g, namespace: y}\n"
             "  spec: {startTime: '2026-11-24T00:15:00Z', endTime: '2026-11-24T00:20:00Z',\n"
             "         nodes: [n-1], owner: {kind: PodGroup, name: g}}\n"
             "  status: {phase: Active}\n");
    CHECK(pl_world_busy(c, bound, owned, NULL, &o, &b, &n) == 0 && n == 1);
    free(b);
    /* the running task's end from its runs on its node's group (n-2 is group "2"): 10 min
     * there, not the 5-min process mean; and a reservation's admitted window (status), not a
     * spec patched after the admission */
    json_t *pods_c = json_array();
    json_array_append(pods_c, json_array_get(pods, 2)); /* c: BWA on n-2, started 00:14 */
    json_t *by_group = yaml("- spec: {workflow: chipseq, process: BWA}\n"
                            "  status: {mean: {realtimeMs: 300000}, runtimeByGroup: [\n"
                            "    {group: '1', runs: 4, meanSeconds: 60},\n"
                            "    {group: '2', runs: 3, meanSeconds: 599.2}]}\n");
    json_t *moved = yaml("- metadata: {name: m, namespace: y}\n"
                         "  spec: {startTime: '2026-11-24T00:25:00Z', endTime: "
                         "'2026-11-24T00:45:00Z', nodes: [n-1]}\n"
                         "  status: {phase: Admitted, heldStartTime: '2026-11-24T00:35:00Z',\n"
                         "           heldEndTime: '2026-11-24T00:55:00Z'}\n");
    CHECK(pl_world_busy(c, pods_c, moved, by_group, &o, &b, &n) == 0 && n == 2);
    if (n == 2) {
        CHECKF(b[0].node == 1 && b[0].until_s == 540, "until %lld", (long long)b[0].until_s);
        CHECKF(b[1].from_s == 1200 && b[1].until_s == 2400, "window %lld-%lld",
               (long long)b[1].from_s, (long long)b[1].until_s);
    }
    free(b);
    json_decref(pods_c);
    json_decref(by_group);
    json_decref(moved);
    json_decref(bound);
    json_decref(owned);
    pl_cluster_free(c);
    json_decref(nodes);
    json_decref(pods);
    json_decref(profiles);
    json_decref(resvs);
}

/* Pending pods: the scheduler binds those that fit now before it admits a Reservation planned
 * now, so they hold capacity in the plan (issue 15: a queued 1-core pod took the core the plan
 * gave a 4-pod step, "only 3 of 4 pods fit"). Oldest first, where each fits now for its
 * expected duration; gated ones, the planned workflow's own, a Reservation owner's, and those
 * that fit nowhere now are left out. */
static void test_occupancy_pending(void) {
    json_t *nodes = yaml("- metadata: {name: n-1, labels: {pool: a}}\n"
                         "  status: {allocatable: {cpu: '4', memory: 16Gi}, "
                         "conditions: [{type: Ready, status: 'True'}]}\n"
                         "- metadata: {name: n-2, labels: {pool: b}}\n"
                         "  status: {allocatable: {cpu: '4', memory: 16Gi}, "
                         "conditions: [{type: Ready, status: 'True'}]}\n");
    tm_err err = {0};
    pl_cluster *c = pl_world_cluster(nodes, &err);
    CHECKF(c != NULL, "%s", err.msg);
    if (!c)
        return;
    json_t *pods = yaml(
        /* n-1: 3 of 4 cores for 20 s; n-2: 4 of 4 for 30 s */
        "- metadata: {name: r1, namespace: x, annotations: {tarema.io/expected-duration: 20s}}\n"
        "  spec: {nodeName: n-1, containers: [{resources: {requests: {cpu: '3'}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:15:00Z'}\n"
        "- metadata: {name: r2, namespace: x, annotations: {tarema.io/expected-duration: 30s}}\n"
        "  spec: {nodeName: n-2, containers: [{resources: {requests: {cpu: '4'}}}]}\n"
        "  status: {phase: Running, startTime: '2026-11-24T00:15:00Z'}\n"
        /* queued, newest first in the list: the older one gets n-1's free core */
        "- metadata: {name: q2, namespace: x, creationTimestamp: '2026-11-24T00:14:59Z',\n"
        "    annotations: {tarema.io/expected-duration: 25s}}\n"
        "  spec: {containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Pending}\n"
        "- metadata: {name: q1, namespace: x, creationTimestamp: '2026-11-24T00:14:58Z',\n"
        "    annotations: {tarema.io/expected-duration: 15s}}\n"
        "  spec: {containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "  status: {phase: Pending}\n"
        /* behind a scheduling gate; the planned workflow's; a Reservation owner's: left out */
        "- metadata: {name: gated, namespace: x, creationTimestamp: '2026-11-24T00:14:00Z'}\n"
        "  spec: {schedulingGates: [{name: tarema.io/planned}], containers: [{resources: "
        "{requests: {cpu: '1'}}}]}\n"
        "- metadata: {name: mine, namespace: y, creationTimestamp: '2026-11-24T00:14:00Z',\n"
        "    labels: {planner.tarema.io/workflow: me}}\n"
        "  spec: {containers: [{resources: {requests: {cpu: '1'}}}]}\n"
        "- metadata: {name: owner, namespace: z, creationTimestamp: '2026-11-24T00:14:00Z',\n"
        "    labels: {scheduling.x-k8s.io/pod-group: g}}\n"
        "  spec: {containers: [{resources: {requests: {cpu: '1'}}}]}\n");
    json_t *resvs = yaml("- metadata: {name: g, namespace: z}\n"
                         "  spec: {startTime: '2026-11-24T00:20:00Z', endTime: "
                         "'2026-11-24T00:21:00Z', owner: {kind: PodGroup, name: g},\n"
                         "         template: {requests: {cpu: '1'}}, count: 1, nodes: [n-1]}\n"
                         "  status: {phase: Admitted}\n");
    pl_world_opts o = {.now = NOW,
                       .overrun_s = 1,
                       .unknown_hold_s = 3600,
                       .skip_ns = "y",
                       .skip_wf = "me",
                       .nodes = nodes};
    pl_busy *b = NULL;
    int n = 0;
    CHECK(pl_world_busy(c, pods, resvs, NULL, &o, &b, &n) == 0);
    /* r1, r2, the reservation, q1 on n-1 for its 15 s; q2 fits nowhere now: left out */
    CHECKF(n == 4, "%d busy entries", n);
    if (n == 4) {
        CHECK(b[3].node == 0 && b[3].cpu_milli == 1000 && b[3].from_s == 0 && b[3].until_s == 15);
    }
    free(b);
    /* a nodeSelector: only the nodes it matches; n-2 is full, so the pod waits: left out */
    json_t *sel = yaml("- metadata: {name: s, namespace: x}\n"
                       "  spec: {nodeSelector: {pool: b}, containers: [{resources: {requests: "
                       "{cpu: '1'}}}]}\n");
    json_t *two = json_array();
    json_array_append(two, json_array_get(pods, 0));
    json_array_append(two, json_array_get(pods, 1));
    json_array_append(two, json_array_get(sel, 0));
    CHECK(pl_world_busy(c, two, NULL, NULL, &o, &b, &n) == 0 && n == 2);
    free(b);
    /* pool a: n-1 has a free core */
    json_object_set_new(tm_json_path(json_array_get(sel, 0), "spec.nodeSelector"), "pool",
                        json_string("a"));
    CHECK(pl_world_busy(c, two, NULL, NULL, &o, &b, &n) == 0 && n == 3);
    if (n == 3)
        CHECK(b[2].node == 0 && b[2].until_s == 3600);
    free(b);
    /* a pod that would run into a reservation's window on the only node with room waits:
     * r1, r2 and the reservation only */
    json_t *into = yaml("- metadata: {name: g2, namespace: z}\n"
                        "  spec: {startTime: '2026-11-24T00:15:10Z', endTime: "
                        "'2026-11-24T00:16:00Z',\n"
                        "         template: {requests: {cpu: '1'}}, count: 1, nodes: [n-1]}\n"
                        "  status: {phase: Admitted}\n");
    CHECK(pl_world_busy(c, two, into, NULL, &o, &b, &n) == 0 && n == 3);
    free(b);
    /* the planned workflow's own admitted hold: not an entry (its steps may use it), but the
     * scheduler keeps other pods out of it, so the pending pod waits (issue 15: counted
     * free, a replan put queued pods there and moved a step away from its valid hold) */
    json_t *mine =
        yaml("- metadata: {name: me-a, namespace: y, labels: {planner.tarema.io/workflow: "
             "me}}\n"
             "  spec: {startTime: '2026-11-24T00:15:05Z', endTime: "
             "'2026-11-24T00:16:00Z',\n"
             "         template: {requests: {cpu: '1'}}, count: 1, nodes: [n-1]}\n"
             "  status: {phase: Admitted, nodes: [{name: n-1, pods: 1, requests: {cpu: "
             "'1'}}]}\n");
    CHECK(pl_world_busy(c, two, mine, NULL, &o, &b, &n) == 0 && n == 2);
    free(b);
    json_decref(mine);
    json_decref(two);
    json_decref(sel);
    json_decref(into);
    json_decref(pods);
    json_decref(resvs);
    json_decref(nodes);
    pl_cluster_free(c);
}

/* A reservation window ahead (from_s) and a release date (not_before_s) are honoured by every
 * solver and by the plan checker. */
static void test_windows_and_release_dates(void) {
    const char *names[] = {"c"};
    int count[] = {2};
    double cores[] = {4};
    int64_t mem[] = {(int64_t)8 << 30};
    tm_err err = {0};
    pl_cluster *c = pl_cluster_make(1, names, count, cores, mem, &err);
    json_t *w =
        yaml("metadata: {name: w}\nspec:\n  steps:\n"
             "  - {name: a, pods: 2, requests: {cpu: 4, memory: 1Gi}, duration: 2m, image: x}\n"
             "  - {name: b, requests: {cpu: 1, memory: 1Gi}, duration: 1m, image: x}\n");
    pl_workflow *wf = pl_workflow_from_object(w, &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf || !c)
        return;
    /* both nodes reserved from +2 to +4 min: a (whole nodes, 2 min) fits before the window */
    pl_busy busy[] = {{0, 4000, 0, 240, 120}, {1, 4000, 0, 240, 120}};
    wf->steps[1].not_before_s = 150; /* b: not before +2:30, so +3:00 in minute slots */
    for (int s = PL_SOLVER_ILP; s <= PL_SOLVER_HEURISTIC; s++) {
        pl_problem p;
        pl_plan plan;
        pl_outcome out;
        CHECK(pl_problem_init(&p, wf, c, busy, 2, 60, PL_OBJ_END, &err) == 0);
        CHECK(pl_plan_init(&plan, &p) == 0);
        CHECKF(pl_solve(&p, (pl_solver)s, 5, &plan, &out, &err) == 0, "%s", err.msg);
        CHECKF(plan.start[0] == 0, "solver %d: a at slot %d", s, plan.start[0]);
        CHECKF(plan.start[1] >= 3, "solver %d: b at slot %d", s, plan.start[1]);
        CHECK(pl_plan_check(&p, &plan, &err) == 0);
        plan.start[1] = 2; /* the checker refuses a start before the release date */
        plan.end[1] = 3;
        CHECK(pl_plan_check(&p, &plan, &err) < 0 && strstr(err.msg, "before its release"));
        pl_plan_free(&plan);
        pl_problem_free(&p);
    }
    pl_workflow_free(wf);
    pl_cluster_free(c);
    json_decref(w);
}

static void test_predict_and_load(void) {
    json_t *w =
        yaml("metadata: {name: w}\nspec:\n  steps:\n"
             "  - {name: a, requests: {cpu: 1, memory: 1Gi}, task: chipseq/BWA, image: x}\n"
             "  - {name: b, requests: {cpu: 1, memory: 1Gi}, task: chipseq/NONE, image: x}\n");
    tm_err err = {0};
    pl_workflow *wf = pl_workflow_from_object(w, &err);
    CHECKF(wf != NULL, "%s", err.msg);
    if (!wf)
        return;
    json_t *profiles = yaml("- spec: {workflow: chipseq, process: BWA}\n"
                            "  status: {mean: {realtimeMs: 90500}}\n"
                            "- spec: {workflow: chipseq, process: NONE}\n"
                            "  status: {runs: 0}\n");
    CHECK(pl_predict_durations(wf, profiles) == 1);
    CHECK(wf->steps[0].duration_s == 91); /* rounded up */
    CHECK(wf->steps[1].duration_s == 0);
    const char *names[] = {"c"};
    int count[] = {2};
    double cores[] = {4};
    int64_t mem[] = {(int64_t)8 << 30};
    pl_cluster *c = pl_cluster_make(1, names, count, cores, mem, &err);
    pl_problem p;
    /* an unpredicted task step is refused, naming the step and its task */
    CHECK(pl_problem_init(&p, wf, c, NULL, 0, 60, PL_OBJ_MAKESPAN, &err) < 0);
    CHECKF(strstr(err.msg, "step 'b'") && strstr(err.msg, "chipseq/NONE"), "%s", err.msg);
    pl_problem_free(&p);
    wf->steps[1].duration_s = 60;
    /* one node fully busy for 2 of the 3 slots of the critical path: load 1/3 */
    pl_busy busy[] = {{0, 4000, 0, 120, 0}};
    CHECK(pl_problem_init(&p, wf, c, busy, 1, 60, PL_OBJ_MAKESPAN, &err) == 0);
    double load = pl_predicted_load(&p, 3);
    CHECKF(load > 0.33 && load < 0.34, "load %f", load);
    CHECK(pl_predicted_load(&p, 1) == 0.5);
    pl_problem_free(&p);
    pl_cluster_free(c);
    pl_workflow_free(wf);
    json_decref(profiles);
    json_decref(w);
}

static void test_gantt(void) {
    json_t *nodes = yaml(nodes_yaml);
    tm_err err = {0};
    pl_cluster *c = pl_world_cluster(nodes, &err);
    json_t *w = yaml("metadata: {name: 'a<b'}\n"
                     "status:\n  phase: Planned\n  steps:\n"
                     "  - {name: s, start: '2026-11-24T00:16:00Z', end: '2026-11-24T00:20:00Z', "
                     "nodes: [n-1, n-2]}\n"
                     "  - {name: t, start: '2026-11-24T00:20:00Z', end: '2026-11-24T00:25:00Z', "
                     "nodes: [n-9]}\n");
    pl_busy busy[] = {{0, 4000, 0, 120, 0}};
    pl_busy resv[] = {{1, 8000, 0, 900, 600}};
    char *svg = pl_gantt_svg(c, busy, 1, resv, 1, w, NOW);
    CHECK(svg != NULL);
    if (svg) {
        int steps = 0;
        for (const char *p = svg; (p = strstr(p, "class=\"step\"")); p++)
            steps++;
        CHECKF(steps == 2, "%d step bars", steps); /* n-9 is not in the cluster */
        CHECK(strstr(svg, "class=\"busy\"") && strstr(svg, "class=\"reservation\""));
        CHECK(strstr(svg, "a&lt;b") && !strstr(svg, "a<b"));
        CHECK(strstr(svg, "</svg>"));
    }
    free(svg);
    pl_cluster_free(c);
    json_decref(nodes);
    json_decref(w);
}

int main(void) {
    RUN(test_time);
    RUN(test_names);
    RUN(test_objects);
    RUN(test_occupancy);
    RUN(test_occupancy_pending);
    RUN(test_windows_and_release_dates);
    RUN(test_predict_and_load);
    RUN(test_gantt);
    return TEST_SUMMARY();
}
