/* sim_equiv_test.c: the simulator and the live scheduler make the same placement for the same
 * snapshot. The simulator builds its snapshot and pods with sim_snapshot_new / sim_pod_new (what
 * its event loop uses); the live scheduler's cache builds them from Kubernetes Node, Pod and
 * TaskProfile JSON through scheduler/backend/podspec.h. For the paper's 5;4;4;2 cluster and a
 * stream of pods (labeled, unlabeled, with known and unknown runtimes, two sizes), every policy
 * must pick the same node on both, through reservations, completions and full nodes. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "labeler/groups.h"
#include "lib/yamljson.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/plugins/policy/policy.h"
#include "sim/engine.h"
#include "sim/model.h"

static sim_cluster *paper_cluster(void) {
    char path[4096];
    const char *root = getenv("REPO_ROOT");
    snprintf(path, sizeof path, "%s/sim/scenarios/cluster-5442.yaml", root ? root : ".");
    tm_err err = {0};
    sim_cluster *c = sim_cluster_load(path, 3, &err);
    if (!c)
        printf("    %s\n", err.msg);
    return c;
}

/* The Node object a profiled node of this cluster has in Kubernetes. */
static json_t *node_json(const sim_cluster *c, int i) {
    const sim_node *n = &c->nodes[i];
    const sim_node_type *t = &c->types[n->type];
    json_t *labels = json_pack("{s:s}", "node.kubernetes.io/instance-type", t->name);
    static const char *const keys[] = {"tarema.io/cpu", "tarema.io/mem", "tarema.io/io"};
    char v[16];
    for (int f = 0; f < LAB_NFEATURES; f++)
        if (n->label[f] > 0) {
            snprintf(v, sizeof v, "%d", n->label[f]);
            json_object_set_new(labels, keys[f], json_string(v));
        }
    snprintf(v, sizeof v, "%d", n->group + 1);
    json_object_set_new(labels, "tarema.io/group", json_string(v));
    char cpu[32], mem[32];
    snprintf(cpu, sizeof cpu, "%g", t->cores);
    snprintf(mem, sizeof mem, "%lld", (long long)t->memory);
    json_t *node =
        json_pack("{s:s, s:s, s:{s:s, s:o}, s:{}, s:{s:{s:s, s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
                  "apiVersion", "v1", "kind", "Node", "metadata", "name", n->name, "labels", labels,
                  "spec", "status", "allocatable", "cpu", cpu, "memory", mem, "pods", "110",
                  "ephemeral-storage", "1Ti", "conditions", "type", "Ready", "status", "True");
    json_t *status = json_object_get(node, "status");
    json_object_set_new(status, "capacity", json_deep_copy(json_object_get(status, "allocatable")));
    return node;
}

/* The classes task labels are computed against: the simulator's (sim_label_classes) and the
 * live labeler's, from the same cluster's Node objects (labeler/groups.h), are the same. */
static void test_same_label_classes(void) {
    sim_cluster *c = paper_cluster();
    CHECK(c != NULL);
    if (!c)
        return;
    json_t *nodes = json_array();
    for (int i = 0; i < c->nnodes; i++)
        json_array_append_new(nodes, node_json(c, i));
    tm_err err = {0};
    lab_groups g;
    lab_classes live[LAB_NFEATURES], sim[LAB_NFEATURES];
    CHECKF(lab_groups_from_nodes(nodes, &g, &err) == 0, "%s", err.msg);
    CHECKF(lab_groups_all_classes(&g, live, &err) == 0, "%s", err.msg);
    CHECKF(sim_label_classes(c, sim, &err) == 0, "%s", err.msg);
    for (int f = 0; f < LAB_NFEATURES; f++) {
        CHECK_INT(sim[f].n, live[f].n);
        for (int i = 0; i < sim[f].n && i < live[f].n; i++)
            CHECK_NEAR(sim[f].cores[i], live[f].cores[i], 1e-9);
    }
    /* 5;4;4;2: cpu classes e2+n1 (9 x 6 cores), n2 (4 x 8), c2 (2 x 16); io one class */
    CHECK_INT(sim[LAB_CPU].n, 3);
    CHECK_NEAR(sim[LAB_CPU].cores[0], 54, 1e-9);
    CHECK_NEAR(sim[LAB_CPU].cores[1], 32, 1e-9);
    CHECK_NEAR(sim[LAB_CPU].cores[2], 32, 1e-9);
    CHECK_INT(sim[LAB_IO].n, 1);
    json_decref(nodes);
    sim_cluster_free(c);
}

/* The pod Nextflow would submit for task idx of process p, created at second `at`. */
static json_t *pod_json(const sim_workflow *wf, const sim_process *p, long idx, int at) {
    char name[32], ts[32], cpu[32], mem[32];
    snprintf(name, sizeof name, "t%010ld", idx);
    snprintf(ts, sizeof ts, "1970-01-01T00:%02d:%02dZ", at / 60, at % 60);
    snprintf(cpu, sizeof cpu, "%lldm", (long long)(p->req_cpu * 1000));
    snprintf(mem, sizeof mem, "%lld", (long long)p->req_mem);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}}, s:{s:s, s:[{s:s, s:{s:{s:s, "
                     "s:s}}}]}}",
                     "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
                     "sim", "uid", name, "creationTimestamp", ts, "labels",
                     "nextflow.io/processName", p->name, "tarema.io/workflow", wf->name, "spec",
                     "schedulerName", "tarema", "containers", "name", "main", "resources",
                     "requests", "cpu", cpu, "memory", mem);
}

static const char *workload_yaml =
    "workflows:\n"
    "  - name: wf\n"
    "    requests: {cpu: 2, memory: 5Gi}\n"
    "    processes:\n"
    "      - {name: ALIGN, instances: 1, base_runtime: 100}\n"
    "      - {name: QC, instances: 1, base_runtime: 10}\n"
    "      - {name: SORT, instances: 1, base_runtime: 30}\n"
    "      - {name: NEW, instances: 1, base_runtime: 50}\n"
    "      - {name: WIDE, instances: 1, base_runtime: 60, requests: {cpu: 6, memory: 12Gi}}\n";

/* Labels and mean runtimes as the labeler would publish them; NEW and WIDE have no history. */
static const struct {
    const char *process;
    int cpu, mem, io;
    int64_t runtime_ms;
} profiles[] = {{"ALIGN", 3, 3, 1, 100000}, {"QC", 1, 1, 1, 10000}, {"SORT", 2, 3, 1, 30000}};

static void set_profiles(sched_snapshot *sim_snap, sched_snapshot *kube_snap) {
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        tm_err err = {0};
        sched_task_profile tp = {.labels = {profiles[i].cpu, profiles[i].mem, profiles[i].io},
                                 .expected_runtime_ms = profiles[i].runtime_ms};
        CHECK(sched_snapshot_set_task(sim_snap, "wf", profiles[i].process, &tp, &err) == 0);
        json_t *j =
            json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}, s:{s:{s:i, s:i, s:i}, "
                      "s:{s:I}}}",
                      "apiVersion", "tarema.io/v1alpha1", "kind", "TaskProfile", "metadata", "name",
                      profiles[i].process, "spec", "workflow", "wf", "process", profiles[i].process,
                      "status", "labels", "cpu", profiles[i].cpu, "mem", profiles[i].mem, "io",
                      profiles[i].io, "mean", "realtimeMs", (json_int_t)profiles[i].runtime_ms);
        const char *w, *p;
        sched_task_profile kp;
        CHECK(sched_task_profile_from_json(j, &w, &p, &kp, &err) == 0);
        CHECK(sched_snapshot_set_task(kube_snap, w, p, &kp, &err) == 0);
        json_decref(j);
    }
}

static void compare_policy(const char *policy, const sim_cluster *c, const sim_workload *w) {
    tm_err err = {0};
    sched_snapshot *ss = sim_snapshot_new(c, false, 0, &err), *ks = sched_snapshot_new();
    sched_framework *fs = sched_policy_new(policy, &err), *fk = sched_policy_new(policy, &err);
    CHECK(ss && ks && fs && fk);
    if (!ss || !ks || !fs || !fk)
        goto out;
    for (int i = 0; i < c->nnodes; i++) {
        json_t *j = node_json(c, i);
        sched_node *n = sched_node_from_json(ks, j, &err);
        json_decref(j);
        CHECKF(n != NULL, "%s", err.msg);
        if (!n || sched_snapshot_put_node(ks, n, &err) != 0)
            goto out;
    }
    set_profiles(ss, ks);
    const sim_workflow *wf = &w->wfs[0];
    int placed = 0, unplaced = 0;
    /* 60 pods cycling through the processes; every 7th step the oldest placed pod completes */
    long done = 0;
    for (long k = 0; k < 60; k++) {
        const sim_process *p = &wf->procs[k % wf->nprocs];
        int at = (int)(k / 3);
        sched_pod *sp = sim_pod_new(wf, p, k, at);
        json_t *pj = pod_json(wf, p, k, at);
        sched_pod *kp = sched_pod_from_json(ks, pj, NULL, &err);
        json_decref(pj);
        CHECKF(sp && kp, "%s", err.msg);
        if (sp && kp) {
            sched_decision ds, dk;
            CHECK(sched_framework_schedule(fs, ss, sp, at * 1000, &ds, &err) == 0);
            CHECK(sched_framework_schedule(fk, ks, kp, at * 1000, &dk, &err) == 0);
            const char *ns = ds.node >= 0 ? ds.node_name : "(none)";
            const char *nk = dk.node >= 0 ? dk.node_name : "(none)";
            CHECKF(strcmp(ns, nk) == 0, "%s pod %ld (%s): simulator %s, live %s", policy, k,
                   p->name, ns, nk);
            if (ds.node >= 0 && dk.node >= 0) {
                CHECK(sched_framework_reserve(fs, ss, sp, ds.node, &err) == 0);
                CHECK(sched_framework_reserve(fk, ks, kp, dk.node, &err) == 0);
                placed++;
            } else {
                unplaced++;
            }
        }
        sched_pod_free(sp);
        sched_pod_free(kp);
        if (k % 7 == 6) {
            char uid[32];
            snprintf(uid, sizeof uid, "t%010ld", done++);
            sched_snapshot_remove_pod(ss, uid);
            sched_snapshot_remove_pod(ks, uid);
        }
    }
    /* the stream must exercise both full and free nodes */
    CHECKF(placed > 20 && unplaced > 0, "%s: %d placed, %d unplaced", policy, placed, unplaced);
out:
    sched_framework_free(fs);
    sched_framework_free(fk);
    sched_snapshot_free(ss);
    sched_snapshot_free(ks);
}

static void test_same_placement_every_policy(void) {
    sim_cluster *c = paper_cluster();
    tm_err err = {0};
    json_t *j = tm_yaml_parse(workload_yaml, strlen(workload_yaml), "w", &err);
    sim_workload *w = c && j ? sim_workload_from_json(j, "w", NULL, c, &err) : NULL;
    json_decref(j);
    CHECKF(w != NULL, "%s", err.msg);
    if (w) {
        CHECK_INT(c->nnodes, 15);
        CHECK_INT(c->ngroups, 3); /* Table IV: three groups, e2 and n1 together */
        const char *const *names = sched_policy_names();
        int n = 0;
        for (; names[n]; n++)
            compare_policy(names[n], c, w);
        CHECK(n >= 5);
    }
    sim_workload_free(w);
    sim_cluster_free(c);
}

int main(void) {
    RUN(test_same_placement_every_policy);
    RUN(test_same_label_classes);
    return TEST_SUMMARY();
}
