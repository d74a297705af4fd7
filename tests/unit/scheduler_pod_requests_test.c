/* scheduler_pod_requests_test.c: a pod's requests as kube-scheduler 1.35 counts them
 * (component-helpers resource.PodRequests with PodLevelResources and in-place resize on), after
 * the informer transform as live: pod-level spec.resources.requests replace the containers' sum
 * for cpu, memory and hugepages-* only; a resized container counts the larger of spec, actuated
 * (status resources.requests) and allocated (allocatedResources), or of the last two when the
 * resize is infeasible; overhead on top. A bound pod resized up takes its new size on the node.
 * And a pod with DRA resource claims is never placed (tarema allocates none): it fits no node,
 * the message says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler_cache_helpers.h"

/* Requests of the pod whose JSON text is given, after the informer transform; cpu in
 * millicores, memory in MiB (into *mem_mi). -1 on error. */
static long long cpu_of(sched_cache *c, const char *text, long long *mem_mi) {
    json_t *j = sched_cache_pod_transform(c, J(text));
    sched_resources r;
    tm_err err = {0};
    int rc = j ? sched_pod_requests_from_json(sched_cache_snapshot(c), j, &r, &err) : -1;
    json_decref(j);
    if (rc) {
        printf("    requests: %s\n", err.msg);
        return -1;
    }
    if (mem_mi)
        *mem_mi = r.v[SCHED_RES_MEMORY] >> 20;
    return r.v[SCHED_RES_CPU];
}

#define POD(spec, status)                                                                          \
    "{'metadata':{'name':'p','namespace':'ns','uid':'p-uid'},'spec':{'schedulerName':'other',"     \
    "'nodeName':'a'," spec "},'status':{'phase':'Running'" status "}}"
#define CTR(name, cpu, mem)                                                                        \
    "{'name':'" name "','image':'x','resources':{'requests':{'cpu':'" cpu "','memory':'" mem "'}}" \
    "}"

static void test_pod_level_resources(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema-scheduler", NULL, NULL, NULL, &err);
    long long mem = 0;
    /* no pod-level requests: the containers' sum */
    CHECK_INT(cpu_of(c, POD("'containers':[" CTR("a", "1", "1Gi") "," CTR("b", "1", "1Gi") "]", ""),
                     &mem),
              2000);
    CHECK_INT(mem, 2048);
    /* pod-level cpu replaces the sum of cpu; memory stays the containers' */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "1", "1Gi") "," CTR(
                             "b", "1", "1Gi") "],"
                                              "'resources':{'requests':{'cpu':'3'}}",
                         ""),
                     &mem),
              3000);
    CHECK_INT(mem, 2048);
    /* both, smaller than the sum, and overhead on top; ephemeral-storage is no pod-level
     * resource: ignored there */
    CHECK_INT(
        cpu_of(c,
               POD("'containers':[" CTR("a", "1", "1Gi") "," CTR(
                       "b", "1", "1Gi") "],"
                                        "'resources':{'requests':{'cpu':'500m','memory':'512Mi',"
                                        "'ephemeral-storage':'1Ti'}},'overhead':{'cpu':'100m'}",
                   ""),
               &mem),
        600);
    CHECK_INT(mem, 512);
    /* containers without requests: the pod-level ones alone */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[{'name':'a','image':'x'}],"
                         "'resources':{'requests':{'cpu':'4','memory':'1Gi'},"
                         "'limits':{'cpu':'4','memory':'1Gi'}}",
                         ""),
                     &mem),
              4000);
    CHECK_INT(mem, 1024);
    sched_cache_free(c);
}

static void test_in_place_resize(void) {
    tm_err err = {0};
    sched_cache *c = sched_cache_new("tarema-scheduler", NULL, NULL, NULL, &err);
    /* resized up: the kubelet reports the new size */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "1", "1Gi") "]",
                         ",'containerStatuses':[{'name':'a','ready':true,'resources':{'requests':"
                         "{'cpu':'2'}},'allocatedResources':{'cpu':'1500m'}}]"),
                     NULL),
              2000);
    /* a resize down in progress: the spec is smaller than what is still allocated */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "1", "1Gi") "]",
                         ",'containerStatuses':[{'name':'a','resources':{'requests':{'cpu':'3'}},"
                         "'allocatedResources':{'cpu':'3'}}]"),
                     NULL),
              3000);
    /* a resize up not yet actuated: the spec */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "3", "1Gi") "]",
                         ",'containerStatuses':[{'name':'a','resources':{'requests':{'cpu':'1'}},"
                         "'allocatedResources':{'cpu':'2'}}]"),
                     NULL),
              3000);
    /* ... unless found infeasible: the larger of actuated and allocated */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "3", "1Gi") "]",
                         ",'containerStatuses':[{'name':'a','resources':{'requests':{'cpu':'1'}},"
                         "'allocatedResources':{'cpu':'2'}}],'conditions':[{'type':'Ready',"
                         "'status':'True'},{'type':'PodResizePending','status':'True',"
                         "'reason':'Infeasible','message':'Node lacks capacity'}]"),
                     NULL),
              2000);
    /* a status without resources (no resize support reported): the spec */
    CHECK_INT(cpu_of(c,
                     POD("'containers':[" CTR("a", "1", "1Gi") "]",
                         ",'containerStatuses':[{'name':'a','allocatedResources':{'cpu':'4'}}]"),
                     NULL),
              1000);
    /* sidecars are resized too, plain init containers not */
    CHECK_INT(
        cpu_of(c,
               POD("'containers':[" CTR(
                       "a", "1",
                       "1Gi") "],'initContainers':["
                              "{'name':'s','restartPolicy':'Always','resources':{'requests':{'cpu':"
                              "'1'}}},{'name':'i','resources':{'requests':{'cpu':'1'}}}]",
                   ",'initContainerStatuses':[{'name':'s','resources':{'requests':{'cpu':"
                   "'2'}}},{'name':'i','resources':{'requests':{'cpu':'8'}}}]"),
               NULL),
        3000);
    sched_cache_free(c);
}

#define BOUND(name, node, cpu, status)                                                             \
    "{'metadata':{'name':'" name "','namespace':'ns','uid':'" name "-uid'},'spec':{"               \
    "'schedulerName':'default-scheduler','nodeName':'" node                                        \
    "','containers':[" CTR("c", cpu, "1Gi") "]},"                                                  \
                                            "'status':{'phase':'Running'" status "}}"
#define MINE(name, cpu, extra)                                                                     \
    "{'metadata':{'name':'" name "','namespace':'ns','uid':'" name "-uid'},'spec':{"               \
    "'schedulerName':'tarema-scheduler','containers':[" CTR("c", cpu,                              \
                                                            "1Gi") "]" extra "},"                  \
                                                                   "'status':{'phase':'Pending'}}"

static void test_bound_pods_take_their_effective_size(void) {
    sched_cache *c = cache_cluster(NULL);
    /* a: 4 cores by spec, resized to 7; b: 2 cores in containers, 7 at pod level */
    const char *a0 = BOUND("ra", "a", "4", "");
    const char *a1 = BOUND("ra", "a", "4",
                           ",'containerStatuses':[{'name':'c','resources':{'requests':{'cpu':"
                           "'7'}},'allocatedResources':{'cpu':'7'}}]");
    CHECK_INT(cache_feed(c, TM_WATCH_ADDED, a0, NULL), 0);
    /* 4 + 3 fits a, and b is empty */
    CHECK_STR(
        cache_schedule(c, MINE("m0", "3", ",'nodeSelector':{'kubernetes.io/hostname':'a'}"), false),
        "a");
    CHECK_INT(cache_feed(c, TM_WATCH_MODIFIED, a1, a0), 0); /* a status-only update that counts */
    CHECK_INT(
        cache_feed(
            c, TM_WATCH_ADDED,
            "{'metadata':{'name':'pl','namespace':'ns','uid':'pl-uid'},'spec':{'schedulerName':"
            "'default-scheduler','nodeName':'b','containers':[" CTR("c", "1", "1Gi") "," CTR(
                "d", "1", "1Gi") "],'resources':{'requests':{'cpu':'7'}}},'status':{'phase':"
                                 "'Running'}}",
            NULL),
        0);
    const char *r = cache_schedule(c, MINE("m1", "3", ""), false);
    CHECKF(strstr(r, "0/2 nodes are available: 2 Insufficient cpu"), "%s", r);
    sched_cache_free(c);
}

static void test_dra_claims_never_placed(void) {
    sched_cache *c = cache_cluster(NULL);
    const char *r = cache_schedule(c,
                                   MINE("gpu", "1",
                                        ",'resourceClaims':[{'name':'gpu','resourceClaimName':"
                                        "'gpu-claim'}]"),
                                   false);
    CHECKF(strstr(r, "0/2 nodes are available: 2 node(s) cannot be used: tarema-scheduler does "
                     "not allocate DRA resource claims"),
           "%s", r);
    /* the same pod without claims fits */
    CHECK_STR(cache_schedule(c, MINE("nogpu", "1", ",'resourceClaims':[]"), false), "a");
    /* sched_filter_node (no framework) says the same */
    tm_err err = {0};
    json_t *j = J(MINE("gpu2", "1", ",'resourceClaims':[{'name':'g','resourceClaimName':'x'}]"));
    sched_pod *p = sched_pod_from_json(sched_cache_snapshot(c), j, NULL, &err);
    json_decref(j);
    CHECK(p && p->n_resource_claims == 1);
    if (p) {
        CHECK_INT(sched_filter_node(sched_cache_snapshot(c), p,
                                    sched_snapshot_node_by_name(sched_cache_snapshot(c), "a"),
                                    NULL),
                  SCHED_FILTER_DRA);
        CHECK_STR(sched_filter_name(SCHED_FILTER_DRA), "DynamicResources");
        CHECK(!sched_filter_resolvable(SCHED_FILTER_DRA, 0)); /* preemption cannot help */
    }
    sched_pod_free(p);
    sched_cache_free(c);
}

int main(void) {
    RUN(test_pod_level_resources);
    RUN(test_in_place_resize);
    RUN(test_bound_pods_take_their_effective_size);
    RUN(test_dra_claims_never_placed);
    return TEST_SUMMARY();
}
