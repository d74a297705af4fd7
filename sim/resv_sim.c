/* resv_sim.c: reservations through the scheduler's reservation code (see resv_sim.h). */
#include "sim/resv_sim.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/plugins/policy/policy.h"
#include "scheduler/plugins/reservation/resv_plugin.h"

typedef struct held {
    reservation *r;
    char key[600];
    bool live; /* admitted and not yet released */
} held;

struct sim_resv {
    resv_plan *plan;
    sched_framework *plan_fw; /* planning only: its plugin state sees template pods */
    held *v;
    size_t n, cap;
};

resv_plan *sim_resv_plan(sim_resv *rv) {
    return rv->plan;
}

/* The Reservation plugin's source (resv_plugin.h): the admitted, not yet released ones. Owner
 * pods carry the owner label, so the pod's own labels decide (no identity callback). */
static void src_each(void *ud, resv_each_fn fn, void *arg) {
    const sim_resv *rv = ud;
    for (size_t i = 0; i < rv->n; i++)
        if (rv->v[i].live)
            fn(arg, rv->v[i].key, rv->v[i].r);
}

sim_resv *sim_resv_new(sched_framework *fw, const char *policy, tm_err *err) {
    sim_resv *rv = calloc(1, sizeof *rv);
    if (!rv || !(rv->plan = resv_plan_new())) {
        free(rv);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    if (!(rv->plan_fw = sched_policy_new(policy, err))) {
        sim_resv_free(rv);
        return NULL;
    }
    /* the live scheduler's plugin; its state (not rv) is the framework's to free */
    resv_plugin_source src = {.each = src_each, .ud = rv};
    sched_plugin pl;
    if (resv_plugin_make(rv->plan, &src, &pl, err) || sched_framework_add_plugin(fw, &pl, err)) {
        sim_resv_free(rv);
        return NULL;
    }
    return rv;
}

void sim_resv_free(sim_resv *rv) {
    if (!rv)
        return;
    for (size_t i = 0; i < rv->n; i++)
        reservation_free(rv->v[i].r);
    free(rv->v);
    resv_plan_free(rv->plan);
    sched_framework_free(rv->plan_fw);
    free(rv);
}

int sim_resv_own(sched_pod *pod, const char *name) {
    if (!pod->pod_labels && !(pod->pod_labels = json_object()))
        return -1;
    return json_object_set_new(pod->pod_labels, SIM_RESV_OWNER_LABEL, json_string(name));
}

int sim_resv_admit(sim_resv *rv, sched_snapshot *snap, const char *name, const char *workflow,
                   const char *process, int64_t cpu_milli, int64_t mem, int count, int64_t start_ms,
                   int64_t end_ms, bool evict_overrunning, const resv_running *pods, size_t n_pods,
                   int64_t now_ms, const reservation **rp, resv_admission *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    if (rp)
        *rp = NULL;
    if (rv->n == rv->cap) {
        size_t nc = rv->cap ? rv->cap * 2 : 16;
        held *nv = realloc(rv->v, nc * sizeof *nv);
        if (!nv)
            return tm_err_set(err, "out of memory");
        rv->v = nv;
        rv->cap = nc;
    }
    /* The Reservation object the live controller would read: a template of the step's requests
     * and task identity (so tarema prefers the step's node group), count, the owner selector,
     * whether the window evicts overrunning pods. */
    char start[32], cpu[32], memq[32], dur[32];
    resv_format_time(start_ms, start, sizeof start);
    snprintf(cpu, sizeof cpu, "%lldm", (long long)cpu_milli);
    snprintf(memq, sizeof memq, "%lld", (long long)mem);
    snprintf(dur, sizeof dur, "%lld", (long long)ceil((double)(end_ms - start_ms) / 1000.0));
    json_t *obj = json_pack(
        "{s:{s:s, s:s}, s:{s:s, s:s, s:i, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:{s:{s:{s:s}}}, s:b}}",
        "metadata", "namespace", SIM_RESV_NS, "name", name, "spec", "startTime", start, "duration",
        dur, "count", count, "template", "requests", "cpu", cpu, "memory", memq, "labels",
        "nextflow.io/processName", process, "tarema.io/workflow", workflow, "owner", "selector",
        "matchLabels", SIM_RESV_OWNER_LABEL, name, "evictOverrunning", evict_overrunning);
    if (!obj)
        return tm_err_set(err, "out of memory");
    reservation *r = reservation_from_json(snap, obj, err);
    json_decref(obj);
    if (!r)
        return tm_err_wrap(err, "reservation %s", name);
    r->start_ms = start_ms; /* the object's times are whole seconds; the simulator's are not */
    r->end_ms = end_ms;
    held *h = &rv->v[rv->n++];
    h->r = r;
    h->live = false;
    reservation_key(r, h->key, sizeof h->key);
    if (rp)
        *rp = r;
    if (resv_plan_admit(rv->plan, rv->plan_fw, snap, r, NULL, pods, n_pods, now_ms, out, err))
        return tm_err_wrap(err, "admitting reservation %s", name);
    h->live = out->ok;
    return 0;
}

/* The plan's key of reservation name ("ns/name", as reservation_key). */
static char *key_of(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", SIM_RESV_NS, name);
    return buf;
}

void sim_resv_set_used(sim_resv *rv, const char *name, const char *node,
                       const sched_resources *used) {
    char key[600];
    resv_plan_set_used(rv->plan, key_of(name, key, sizeof key), node, used);
}

void sim_resv_drop(sim_resv *rv, const char *name) {
    char key[600];
    key_of(name, key, sizeof key);
    for (size_t i = 0; i < rv->n; i++)
        if (rv->v[i].live && strcmp(rv->v[i].key, key) == 0)
            rv->v[i].live = false;
    resv_plan_remove(rv->plan, key);
}
