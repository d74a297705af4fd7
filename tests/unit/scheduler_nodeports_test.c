/* scheduler_nodeports_test.c: the NodePorts filter: host port conflicts per protocol and host
 * IP (0.0.0.0 against any address), which container ports count (containers and sidecar init
 * containers), its place in the filter order, its FailedScheduling reason, and that a pod
 * reserved in a batch holds its ports for the next pod. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler_filter_helpers.h"
#include "scheduler/framework/framework.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"

#define PORT(hp, extra) "{'containerPort':80,'hostPort':" #hp extra "}"
#define PORTS(list)     ",'containers':[{'name':'c','ports':[" list "]}]"

static void test_conflict_rules(void) {
    sched_host_port any80 = {"0.0.0.0", 80, SCHED_PROTO_TCP};
    sched_host_port ip1_80 = {"10.0.0.1", 80, SCHED_PROTO_TCP};
    sched_host_port ip2_80 = {"10.0.0.2", 80, SCHED_PROTO_TCP};
    sched_host_port udp80 = {"0.0.0.0", 80, SCHED_PROTO_UDP};
    sched_host_port sctp80 = {"10.0.0.1", 80, SCHED_PROTO_SCTP};
    sched_host_port any81 = {"0.0.0.0", 81, SCHED_PROTO_TCP};
    CHECK(sched_host_port_conflict(&any80, &any80));
    CHECK(sched_host_port_conflict(&any80, &ip1_80)); /* 0.0.0.0 wants every address */
    CHECK(sched_host_port_conflict(&ip1_80, &any80)); /* and holds every address */
    CHECK(sched_host_port_conflict(&ip1_80, &ip1_80));
    CHECK(!sched_host_port_conflict(&ip1_80, &ip2_80));
    CHECK(!sched_host_port_conflict(&any80, &udp80)); /* other protocol */
    CHECK(!sched_host_port_conflict(&ip1_80, &sctp80));
    CHECK(!sched_host_port_conflict(&any80, &any81));
}

static void test_parse_ports(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    /* containerPort without hostPort: no host port; sidecar init container: counts; plain init
     * container: has exited before the pod runs, does not */
    sched_pod *p = incoming(
        s,
        podtext("p", "ns", "",
                ",'initContainers':[{'name':'i','ports':[{'hostPort':7000}]},"
                "{'name':'side','restartPolicy':'Always','ports':[{'hostPort':7001,"
                "'protocol':'UDP'}]}],"
                "'containers':[{'name':'c','ports':[{'containerPort':80},{'containerPort':81,"
                "'hostPort':8081,'hostIP':'10.1.2.3','protocol':'SCTP'},{'hostPort':8080}]}]"),
        &err);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->n_host_ports, 3);
        CHECK_INT(p->host_ports[0].port, 7001);
        CHECK_INT(p->host_ports[0].proto, SCHED_PROTO_UDP);
        CHECK_STR(p->host_ports[0].ip, "0.0.0.0");
        CHECK_INT(p->host_ports[1].port, 8081);
        CHECK_STR(p->host_ports[1].ip, "10.1.2.3");
        CHECK_INT(p->host_ports[1].proto, SCHED_PROTO_SCTP);
        CHECK_INT(p->host_ports[2].port, 8080);
        CHECK_INT(p->host_ports[2].proto, SCHED_PROTO_TCP);
    }
    sched_pod_free(p);
    p = incoming(s, podtext("bad", "ns", "", PORTS("{'hostPort':80,'protocol':'ICMP'}")), &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "spec.containers[0].ports[0].protocol") != NULL, "%s", err.msg);
    CHECKF(strstr(err.msg, "ns/bad") != NULL, "%s", err.msg);
    p = incoming(s, podtext("bad2", "ns", "", PORTS("{'hostPort':70000}")), &err);
    CHECK(p == NULL);
    CHECKF(strstr(err.msg, "hostPort") != NULL, "%s", err.msg);
    sched_snapshot_free(s);
}

/* Three nodes each holding port 8080 differently: TCP on every address, UDP, TCP on one IP. */
static sched_snapshot *three_nodes(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", "a");
    add_node(s, "n2", "a");
    add_node(s, "n3", "a");
    place(s, "n1", podtext("h1", "ns", "", PORTS(PORT(8080, ""))));
    place(s, "n2", podtext("h2", "ns", "", PORTS(PORT(8080, ",'protocol':'UDP'"))));
    place(s, "n3", podtext("h3", "ns", "", PORTS(PORT(8080, ",'hostIP':'10.0.0.3'"))));
    return s;
}

static void test_filter(void) {
    sched_snapshot *s = three_nodes();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_PORTS), 3);
    sched_pod *p = incoming(s, podtext("p", "ns", "", PORTS(PORT(8080, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "n2");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "", PORTS(PORT(8080, ",'hostIP':'10.0.0.4'"))), &err);
    CHECK_STR(feasible(fw, s, p), "n2,n3"); /* n1 holds 8080 on every address */
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "", PORTS(PORT(8080, ",'protocol':'UDP'"))), &err);
    CHECK_STR(feasible(fw, s, p), "n1,n3");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "", PORTS(PORT(9090, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "n1,n2,n3");
    sched_pod_free(p);
    p = incoming(s, podtext("p", "ns", "", ""), &err); /* no host ports at all */
    CHECK_STR(feasible(fw, s, p), "n1,n2,n3");
    sched_pod_free(p);
    /* TCP and UDP 8080 on every address: nowhere */
    p = incoming(
        s, podtext("p", "ns", "", PORTS(PORT(8080, "") "," PORT(8080, ",'protocol':'UDP'"))), &err);
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 3 node(s) didn't have free ports for the requested pod "
              "ports.");
    /* the single-node entry point agrees */
    uint32_t d;
    CHECK_INT(sched_filter_node(s, p, sched_snapshot_node_by_name(s, "n2"), &d),
              SCHED_FILTER_NODE_PORTS);
    CHECK_STR(sched_filter_name(SCHED_FILTER_NODE_PORTS), "NodePorts");
    CHECK(sched_filter_resolvable(SCHED_FILTER_NODE_PORTS, 0));
    sched_pod_free(p);
    /* a removed pod frees its port */
    CHECK_INT(sched_snapshot_remove_pod(s, "h1-uid"), 0);
    CHECK_INT(sched_snapshot_podset_count(s, SCHED_PODSET_PORTS), 2);
    p = incoming(s, podtext("p", "ns", "", PORTS(PORT(8080, ""))), &err);
    CHECK_STR(feasible(fw, s, p), "n1,n2");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* NodePorts runs after NodeAffinity and before NodeResourcesFit, as in kube-scheduler. */
static void test_order(void) {
    sched_snapshot *s = three_nodes();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fair", &err);
    sched_pod *p = incoming(
        s,
        "{'metadata':{'name':'big','namespace':'ns','uid':'big'},'spec':{'containers':[{'name':"
        "'c','ports':[{'hostPort':8080}],'resources':{'requests':{'cpu':'64'}}}]}}",
        &err);
    CHECK(p != NULL);
    CHECK_STR(feasible(fw, s, p), "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't "
                                  "have free ports for the requested pod ports.");
    sched_pod_free(p);
    p = incoming(s,
                 podtext("sel", "ns", "",
                         ",'nodeSelector':{'kubernetes.io/hostname':'n1'}" PORTS(PORT(8080, ""))),
                 &err);
    CHECK_STR(feasible(fw, s, p),
              "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod "
              "ports, 2 node(s) didn't match Pod's node affinity/selector.");
    sched_pod_free(p);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Reserve records the pod's ports: the next pod of a batch cannot take them. */
static void test_reserve_batch(void) {
    sched_snapshot *s = sched_snapshot_new();
    add_node(s, "n1", "a");
    add_node(s, "n2", "a");
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("fill-nodes", &err); /* would pack both on one node */
    sched_pod *a = incoming(s, podtext("a", "ns", "", PORTS(PORT(9000, ""))), &err);
    sched_pod *b = incoming(s, podtext("b", "ns", "", PORTS(PORT(9000, ""))), &err);
    sched_pod *c = incoming(s, podtext("c", "ns", "", PORTS(PORT(9000, ""))), &err);
    sched_decision d1, d2, d3;
    CHECK(sched_framework_schedule(fw, s, a, 0, &d1, &err) == 0 && d1.node >= 0);
    CHECK(sched_framework_reserve(fw, s, a, d1.node, &err) == 0);
    CHECK(sched_framework_schedule(fw, s, b, 0, &d2, &err) == 0 && d2.node >= 0);
    CHECK(d1.node != d2.node);
    CHECK(sched_framework_reserve(fw, s, b, d2.node, &err) == 0);
    CHECK(sched_framework_schedule(fw, s, c, 0, &d3, &err) == 0);
    CHECK_INT(d3.node, -1);
    /* plain add_pod (the simulator's call) keeps the metadata of a recorded pod */
    sched_resources r = {0};
    r.v[SCHED_RES_PODS] = 1;
    CHECK_INT(sched_snapshot_add_pod(s, "a-uid", d1.node_name, &r, &err), 0);
    CHECK(sched_snapshot_pod_meta(s, "a-uid") != NULL);
    CHECK(sched_framework_schedule(fw, s, c, 0, &d3, &err) == 0);
    CHECK_INT(d3.node, -1);
    sched_pod_free(a);
    sched_pod_free(b);
    sched_pod_free(c);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_conflict_rules);
    RUN(test_parse_ports);
    RUN(test_filter);
    RUN(test_order);
    RUN(test_reserve_batch);
    return TEST_SUMMARY();
}
