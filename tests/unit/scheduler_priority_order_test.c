/* scheduler_priority_order_test.c: priority is a contract under every policy: the queue
 * (sched_framework_queue_cmp) orders by priority first; sjfn's shortest job, adaptive's
 * longest path and a gang's first-seen order only order pods of one priority. Each case pairs
 * a low-priority pod the policy would put first with a high-priority one, and checks that the
 * policy's own order still holds within one priority. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "scheduler/framework/framework.h"
#include "scheduler/plugins/gang/gang.h"
#include "scheduler/plugins/gang/gang_plugin.h"
#include "scheduler/plugins/policy/policy.h"

static sched_pod *task_pod(const char *name, const char *process, int32_t prio, int64_t created) {
    sched_pod *p = sched_pod_new("ns", name, name);
    if (!p)
        return NULL;
    free(p->workflow);
    free(p->process);
    p->workflow = strdup("wf");
    p->process = strdup(process);
    p->priority = prio;
    p->created_ms = created;
    return p;
}

/* short (1 s) and long (60 s, 2 min tail) tasks known to the task table. */
static sched_snapshot *tasks(void) {
    sched_snapshot *s = sched_snapshot_new();
    tm_err err = {0};
    sched_task_profile shortp = {.labels = {1, 1, 1}, .expected_runtime_ms = 1000};
    sched_task_profile longp = {
        .labels = {3, 3, 3}, .expected_runtime_ms = 60000, .tail_ms = 120000};
    sched_snapshot_set_task(s, "wf", "short", &shortp, &err);
    sched_snapshot_set_task(s, "wf", "long", &longp, &err);
    return s;
}

/* sjfn puts the shorter job first, adaptive the longer path; either way a pod of higher
 * priority goes first, and within a priority the policy's order holds. */
static void check_policy(const char *policy, const char *first_proc, const char *second_proc) {
    sched_snapshot *s = tasks();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new(policy, &err);
    CHECK(fw != NULL);
    /* the policy's favourite at priority 0, the other at 100 */
    sched_pod *fav = task_pod("fav", first_proc, 0, 1),
              *other = task_pod("other", second_proc, 100, 2);
    CHECKF(sched_framework_queue_cmp(fw, s, other, fav) < 0, "%s: priority 100 after 0", policy);
    CHECKF(sched_framework_queue_cmp(fw, s, fav, other) > 0, "%s: asymmetric", policy);
    /* one priority: the policy decides (the later-created favourite still first) */
    other->priority = 0;
    fav->created_ms = 3;
    CHECKF(sched_framework_queue_cmp(fw, s, fav, other) < 0, "%s: its own order within a priority",
           policy);
    sched_pod_free(fav);
    sched_pod_free(other);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

static void test_sjfn(void) {
    check_policy("sjfn", "short", "long");
}

static void test_adaptive(void) {
    check_policy("adaptive", "long", "short");
}

/* the default order (tarema): priority, then age */
static void test_default(void) {
    sched_snapshot *s = tasks();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_pod *old = task_pod("old", "short", 0, 1), *young = task_pod("young", "short", 5, 9);
    CHECK(sched_framework_queue_cmp(fw, s, young, old) < 0);
    young->priority = 0;
    CHECK(sched_framework_queue_cmp(fw, s, old, young) < 0);
    sched_pod_free(old);
    sched_pod_free(young);
    sched_framework_free(fw);
    sched_snapshot_free(s);
}

/* Gangs: the gang seen first goes first, but only among pods of one priority. */
static void test_gang(void) {
    sched_snapshot *s = tasks();
    tm_err err = {0};
    sched_framework *fw = sched_policy_new("tarema", &err);
    sched_gang_registry *reg = sched_gang_registry_new();
    CHECK(fw && reg && sched_gang_plugin_add(fw, reg, &err) == 0);
    sched_gang_ref early = {SCHED_GANG_PODGROUP, "ns", "early", "", ""};
    sched_gang_ref late = {SCHED_GANG_PODGROUP, "ns", "late", "", ""};
    CHECK(sched_gang_registry_set_member(reg, &early, "e1", "e1", SCHED_GANG_POD_PENDING, 10));
    CHECK(sched_gang_registry_set_member(reg, &late, "l1", "l1", SCHED_GANG_POD_PENDING, 20));
    sched_pod *e1 = task_pod("e1", "short", 0, 1), *l1 = task_pod("l1", "short", 100, 2);
    CHECK(sched_framework_queue_cmp(fw, s, l1, e1) < 0); /* higher priority, later gang */
    l1->priority = 0;
    l1->created_ms = 0; /* older pod, but its gang was seen later: the gang order decides */
    CHECK(sched_framework_queue_cmp(fw, s, e1, l1) < 0);
    sched_pod_free(e1);
    sched_pod_free(l1);
    sched_framework_free(fw); /* the plugin does not own the registry */
    sched_gang_registry_free(reg);
    sched_snapshot_free(s);
}

int main(void) {
    RUN(test_sjfn);
    RUN(test_adaptive);
    RUN(test_default);
    RUN(test_gang);
    return TEST_SUMMARY();
}
