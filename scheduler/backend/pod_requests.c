/* pod_requests.c: a pod's effective requests as kube-scheduler 1.35 computes them
 * (k8s.io/component-helpers resource.PodRequests): the sum of the regular containers plus
 * restartable (sidecar) init containers, or the largest init container step if that is bigger
 * (each container's requests the larger of spec and what its status reports after an in-place
 * resize); pod-level spec.resources.requests (cpu, memory, hugepages-*) replacing that sum where
 * set; plus spec.overhead. Also the resource lists nodespec.c reads allocatable with. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/quantity.h"
#include "scheduler/backend/podspec.h"
#include "scheduler/backend/podspec_internal.h"

int podspec_quantity(const json_t *v, const char *name, int64_t *out, const char *what,
                     tm_err *err) {
    char buf[64];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        s = buf;
    } else if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        s = buf;
    } else {
        return tm_err_set(err, "%s: %s is not a quantity", what, name);
    }
    int rc = strcmp(name, "cpu") == 0 ? tm_quantity_parse_milli(s, out, err)
                                      : tm_quantity_parse(s, out, err);
    if (rc != 0)
        return tm_err_wrap(err, "%s: %s", what, name);
    return 0;
}

/* The slot of name in this pass, -2 when the pass skips it, -1 with err on OOM. */
static int pass_slot(podspec_res_pass *rp, const char *name, tm_err *err) {
    if (rp->only) {
        for (int k = 0; k < rp->n_only; k++)
            if (strcmp(rp->only[k], name) == 0)
                return k;
        return -2;
    }
    int slot = sched_snapshot_resource_slot(rp->s, name, err);
    if (slot != SCHED_RES_NO_SLOT)
        return slot;
    for (int k = 0; k < rp->n_over; k++)
        if (strcmp(rp->over[k], name) == 0)
            return -2;
    if (rp->n_over == rp->cap_over) {
        int ncap = rp->cap_over ? 2 * rp->cap_over : 8;
        const char **o = realloc(rp->over, (size_t)ncap * sizeof *o);
        if (!o)
            return tm_err_set(err, "out of memory");
        rp->over = o;
        rp->cap_over = ncap;
    }
    rp->over[rp->n_over++] = name;
    return -2;
}

/* The slots a pass fills: only these are ever non-zero in its vectors. */
static int pass_width(const podspec_res_pass *rp) {
    return rp->only ? rp->n_only : sched_snapshot_resource_count(rp->s);
}

int podspec_resource_list(podspec_res_pass *rp, const json_t *list, sched_resources *out,
                          const char *what, tm_err *err) {
    if (!list || json_is_null(list))
        return 0;
    if (!json_is_object(list))
        return tm_err_set(err, "%s is not an object", what);
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)list, name, v) {
        int64_t q;
        if (podspec_quantity(v, name, &q, what, err) != 0)
            return -1;
        int slot = pass_slot(rp, name, err);
        if (slot == -1)
            return tm_err_wrap(err, "%s", what); /* out of memory */
        if (slot >= 0)
            out->v[slot] += q;
    }
    return 0;
}

/* Only the slots in use (n): the others are 0 in every vector of the snapshot. */
static void res_max(sched_resources *a, const sched_resources *b, int n) {
    for (int i = 0; i < n; i++)
        if (b->v[i] > a->v[i])
            a->v[i] = b->v[i];
}

static void res_add(sched_resources *a, const sched_resources *b, int n) {
    for (int i = 0; i < n; i++)
        a->v[i] += b->v[i];
}

/* The status entry of the container called name (status.containerStatuses or
 * initContainerStatuses), NULL when none. */
static const json_t *container_status(const json_t *pod, const char *key, const char *name) {
    size_t i;
    const json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), key), i, cs) {
        const char *n = podspec_obj_str(cs, "name");
        if (n && name && strcmp(n, name) == 0)
            return cs;
    }
    return NULL;
}

/* Whether the pod's resize was found infeasible (condition PodResizePending, reason
 * Infeasible). */
static bool resize_infeasible(const json_t *pod) {
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *t = podspec_obj_str(c, "type");
        if (t && strcmp(t, "PodResizePending") == 0) {
            const char *r = podspec_obj_str(c, "reason");
            return r && strcmp(r, "Infeasible") == 0;
        }
    }
    return false;
}

/* A container's requests as kube-scheduler counts them (resource.PodRequests with
 * UseStatusResources, in-place resize being GA): when its status reports resources, the larger
 * of spec, actuated (status resources.requests) and allocated (allocatedResources) per
 * resource, or of the last two alone when the resize is infeasible. cs: its status entry, NULL
 * when it has none (then the spec's). */
static int container_requests(podspec_res_pass *rp, const json_t *pod, const json_t *c,
                              const json_t *cs, sched_resources *out, const char *what,
                              tm_err *err) {
    memset(out, 0, sizeof *out);
    const json_t *res = json_object_get(c, "resources");
    const json_t *actuated = json_object_get(cs, "resources");
    if (!actuated || json_is_null(actuated) || !resize_infeasible(pod)) {
        if (podspec_resource_list(rp, res ? json_object_get(res, "requests") : NULL, out, what,
                                  err) != 0)
            return -1;
    }
    if (!actuated || json_is_null(actuated))
        return 0;
    sched_resources st = {0}, alloc = {0};
    char swhat[400];
    snprintf(swhat, sizeof swhat, "%s (status resources.requests)", what);
    if (podspec_resource_list(rp, json_object_get(actuated, "requests"), &st, swhat, err) != 0)
        return -1;
    snprintf(swhat, sizeof swhat, "%s (status allocatedResources)", what);
    if (podspec_resource_list(rp, json_object_get(cs, "allocatedResources"), &alloc, swhat, err) !=
        0)
        return -1;
    int n = pass_width(rp);
    res_max(out, &st, n);
    res_max(out, &alloc, n);
    return 0;
}

/* Pod-level requests (spec.resources.requests, PodLevelResources, on by default since 1.34):
 * when one of cpu, memory or hugepages-* is set, the set ones replace what the containers add
 * up to. */
static int pod_level_requests(podspec_res_pass *rp, const json_t *spec, sched_resources *out,
                              const char *pname, tm_err *err) {
    const json_t *req = json_object_get(json_object_get(spec, "resources"), "requests");
    if (!req || json_is_null(req))
        return 0;
    if (!json_is_object(req))
        return tm_err_set(err, "pod %s: spec.resources.requests is not an object", pname);
    char what[320];
    snprintf(what, sizeof what, "pod %s: spec.resources.requests", pname);
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)req, name, v) {
        if (strcmp(name, "cpu") != 0 && strcmp(name, "memory") != 0 &&
            strncmp(name, "hugepages-", 10) != 0)
            continue; /* not a pod-level resource: the containers' sum stands */
        int64_t q;
        if (podspec_quantity(v, name, &q, what, err) != 0)
            return -1;
        int slot = pass_slot(rp, name, err);
        if (slot == -1)
            return tm_err_wrap(err, "%s", what); /* out of memory */
        if (slot >= 0)
            out->v[slot] = q;
    }
    return 0;
}

/* The requests of the resources rp fills (kube-scheduler's formula, the top of this file). */
static int requests_pass(podspec_res_pass *rp, const json_t *pod, sched_resources *out,
                         tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *pname = tm_json_str(pod, "metadata.name", "?");
    const json_t *spec = json_object_get(pod, "spec");
    if (!json_is_object(spec))
        return tm_err_set(err, "pod %s: no spec", pname);
    char what[320];
    sched_resources c, sidecars = {0}, init_max = {0};
    size_t i;
    const json_t *ctr;
    json_array_foreach(json_object_get(spec, "containers"), i, ctr) {
        snprintf(what, sizeof what, "pod %s: spec.containers[%zu].resources.requests", pname, i);
        const json_t *cs = container_status(pod, "containerStatuses", podspec_obj_str(ctr, "name"));
        if (container_requests(rp, pod, ctr, cs, &c, what, err) != 0)
            return -1;
        res_add(out, &c, pass_width(rp));
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, ctr) {
        snprintf(what, sizeof what, "pod %s: spec.initContainers[%zu].resources.requests", pname,
                 i);
        const char *rpol = podspec_obj_str(ctr, "restartPolicy");
        bool sidecar = rpol && strcmp(rpol, "Always") == 0; /* only a sidecar is resized */
        const json_t *cs =
            sidecar ? container_status(pod, "initContainerStatuses", podspec_obj_str(ctr, "name"))
                    : NULL;
        if (container_requests(rp, pod, ctr, cs, &c, what, err) != 0)
            return -1;
        int n = pass_width(rp);
        if (sidecar) { /* a sidecar keeps running beside the rest */
            res_add(&sidecars, &c, n);
            res_max(&init_max, &sidecars, n);
        } else {
            res_add(&c, &sidecars, n);
            res_max(&init_max, &c, n);
        }
    }
    int n = pass_width(rp);
    res_add(out, &sidecars, n);
    res_max(out, &init_max, n);
    if (pod_level_requests(rp, spec, out, pname, err) != 0)
        return -1;
    snprintf(what, sizeof what, "pod %s: spec.overhead", pname);
    if (podspec_resource_list(rp, json_object_get(spec, "overhead"), out, what, err) != 0)
        return -1;
    if (!rp->only)
        out->v[SCHED_RES_PODS] = 1;
    return 0;
}

int sched_pod_requests_from_json(sched_snapshot *s, const json_t *pod, sched_resources *out,
                                 tm_err *err) {
    return sched_pod_requests_x(s, pod, out, NULL, NULL, err);
}

int sched_pod_requests_x(sched_snapshot *s, const json_t *pod, sched_resources *out, sched_xres **x,
                         uint32_t *nx, tm_err *err) {
    if (x) {
        *x = NULL;
        *nx = 0;
    }
    podspec_res_pass rp = {.s = s};
    int rc = requests_pass(&rp, pod, out, err);
    if (rc != 0 || !x || rp.n_over == 0) {
        free(rp.over);
        return rc;
    }
    /* the names without a fixed slot, at most SCHED_RES_MAX per pass, through the same formula */
    sched_xres *a = malloc((size_t)rp.n_over * sizeof *a);
    uint32_t n = 0;
    if (!a)
        rc = tm_err_set(err, "out of memory");
    for (int k = 0; rc == 0 && k < rp.n_over; k += SCHED_RES_MAX) {
        podspec_res_pass sp = {.s = s, .only = rp.over + k};
        sp.n_only = rp.n_over - k < SCHED_RES_MAX ? rp.n_over - k : SCHED_RES_MAX;
        sched_resources v;
        if ((rc = requests_pass(&sp, pod, &v, err)) != 0)
            break;
        for (int j = 0; j < sp.n_only; j++) {
            int id = sched_snapshot_xres_id(s, sp.only[j], err);
            if (id < 0) {
                rc = -1;
                break;
            }
            a[n++] = (sched_xres){(uint32_t)id, v.v[j]};
        }
    }
    free(rp.over);
    if (rc != 0) {
        free(a);
        return -1;
    }
    *nx = sched_xres_normalize(a, n); /* a zero request asks for nothing, as in kube-scheduler */
    if (*nx == 0)
        free(a);
    else
        *x = a;
    return 0;
}
