/* extender_preempt.c: the extender's preempt verb (kube-scheduler's ProcessPreemption; the
 * semantics are in extender.h): kube-scheduler's candidate nodes and victims in, the nodes where
 * the preemptor passes tarema's filters once those victims are gone out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "lib/log.h"
#include "scheduler/cmd/extender_internal.h"
#include "scheduler/plugins/policy/policy.h"

/* One candidate node of the request. Strings borrowed from the args. */
typedef struct cand {
    const char *node;
    const char **uids; /* the victims' uids, n_uids of them */
    size_t n_uids;
    json_int_t pdb; /* NumPDBViolations, handed back unchanged */
    char why[384];  /* why it was dropped, "" when kept */
} cand;

typedef struct req {
    const json_t *pod;
    const char *field; /* "NodeNameToVictims" or "NodeNameToMetaVictims" */
    bool meta;
    cand *c;
    size_t n;
} req;

static void req_free(req *r) {
    for (size_t i = 0; i < r->n; i++)
        free(r->c[i].uids);
    free(r->c);
}

/* The uid of victim j of node `node`: the Pod's metadata.uid (full form) or the MetaPod's UID. */
static const char *victim_uid(const req *r, const char *node, size_t j, const json_t *v,
                              tm_err *err) {
    const char *uid =
        json_is_object(v) ? tm_json_str(v, r->meta ? "UID" : "metadata.uid", NULL) : NULL;
    if (!uid || !*uid)
        tm_err_set(err, "ExtenderPreemptionArgs: %s[\"%s\"].Pods[%zu]%s is missing or not a string",
                   r->field, node, j, r->meta ? ".UID" : ".metadata.uid");
    return uid && *uid ? uid : NULL;
}

/* Checks the shape of the args and collects the candidates. 0, or -1 with err naming the
 * field. */
static int parse(const json_t *args, req *r, tm_err *err) {
    memset(r, 0, sizeof *r);
    if (!json_is_object(args))
        return tm_err_set(err, "ExtenderPreemptionArgs: body is not a JSON object");
    r->pod = json_object_get(args, "Pod");
    if (!json_is_object(r->pod))
        return tm_err_set(err, "ExtenderPreemptionArgs: Pod is missing or not an object");
    const json_t *full = json_object_get(args, "NodeNameToVictims");
    const json_t *meta = json_object_get(args, "NodeNameToMetaVictims");
    if (full && !json_is_null(full) && meta && !json_is_null(meta))
        return tm_err_set(err, "ExtenderPreemptionArgs: both NodeNameToVictims and "
                               "NodeNameToMetaVictims are given; kube-scheduler sends one");
    r->meta = meta && !json_is_null(meta);
    r->field = r->meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    const json_t *map = r->meta ? meta : full;
    if (!json_is_object(map))
        return tm_err_set(err, "ExtenderPreemptionArgs: %s",
                          map && !json_is_null(map)
                              ? (r->meta ? "NodeNameToMetaVictims is not an object"
                                         : "NodeNameToVictims is not an object")
                              : "neither NodeNameToVictims nor NodeNameToMetaVictims is given");
    size_t cnt = json_object_size(map);
    if (cnt && !(r->c = calloc(cnt, sizeof *r->c)))
        return tm_err_set(err, "out of memory");
    const char *node;
    const json_t *v;
    json_object_foreach((json_t *)map, node, v) {
        cand *c = &r->c[r->n++];
        c->node = node;
        if (!json_is_object(v))
            return tm_err_set(err, "ExtenderPreemptionArgs: %s[\"%s\"] is not an object", r->field,
                              node);
        const json_t *pods = json_object_get(v, "Pods");
        if (pods && !json_is_null(pods) && !json_is_array(pods))
            return tm_err_set(err, "ExtenderPreemptionArgs: %s[\"%s\"].Pods is not an array",
                              r->field, node);
        const json_t *pdb = json_object_get(v, "NumPDBViolations");
        if (pdb && !json_is_null(pdb) && (!json_is_integer(pdb) || json_integer_value(pdb) < 0))
            return tm_err_set(err,
                              "ExtenderPreemptionArgs: %s[\"%s\"].NumPDBViolations is not a "
                              "non-negative integer",
                              r->field, node);
        c->pdb = json_is_integer(pdb) ? json_integer_value(pdb) : 0;
        c->n_uids = json_array_size(pods);
        if (c->n_uids && !(c->uids = calloc(c->n_uids, sizeof *c->uids)))
            return tm_err_set(err, "out of memory");
        for (size_t j = 0; j < c->n_uids; j++)
            if (!(c->uids[j] = victim_uid(r, node, j, json_array_get(pods, j), err)))
                return -1;
    }
    return 0;
}

/* Whether p passes every filter of fw on the node once c's victims recorded there are hidden.
 * The snapshot is as it was when this returns. 1 yes, 0 no (c->why says why), -1 with err. */
static int passes(sched_framework *fw, sched_snapshot *s, size_t node, cand *c, tm_err *err) {
    bool *hid = c->n_uids ? calloc(c->n_uids, sizeof *hid) : NULL;
    if (c->n_uids && !hid)
        return tm_err_set(err, "out of memory");
    int rc = 0;
    for (size_t j = 0; j < c->n_uids; j++) {
        /* only the pods the cache counts on this node: any other uid is counted nowhere here
         * (the informer has not seen it yet, or it left), so there is nothing to take away */
        const char *on = sched_snapshot_pod_node(s, c->uids[j]);
        if (!on || strcmp(on, c->node) != 0)
            continue;
        if (sched_snapshot_hide_pod(s, c->uids[j], true) != 0) {
            rc = tm_err_set(err, "preempt: pod %s vanished from the snapshot", c->uids[j]);
            goto out;
        }
        hid[j] = true;
    }
    /* cluster-wide filters (inter-pod affinity, spread, gangs) must see the victims gone */
    if (!sched_framework_whatif_node_local(fw) && sched_framework_whatif_prefilter(fw, err) != 0) {
        rc = -1;
        goto out;
    }
    uint32_t detail = 0;
    sched_filter_id id = sched_framework_whatif_filter(fw, node, &detail);
    if (id == SCHED_FILTER_OK) {
        rc = 1;
    } else {
        char reason[320];
        sched_framework_whatif_reason(fw, node, id, detail, reason, sizeof reason);
        snprintf(c->why, sizeof c->why,
                 "tarema's filters reject the pod even without the victims: %s",
                 *reason ? reason : "rejected");
    }
out:
    for (size_t j = 0; j < c->n_uids; j++)
        if (hid[j])
            sched_snapshot_hide_pod(s, c->uids[j], false);
    free(hid);
    return rc;
}

/* Decides every candidate (c->why empty = kept) on the cache snapshot, the lock held. */
static int evaluate(sched_extender *x, req *r, tm_err *err) {
    sched_snapshot *s = x->o.cache;
    sched_pod *p = sched_pod_from_json(s, r->pod, &x->o.keys, err);
    if (!p)
        return tm_err_wrap(err, "ExtenderPreemptionArgs: Pod");
    p->n_resource_claims = 0; /* kube-scheduler's to allocate in extender mode (see filter) */
    int rc = -1;
    sched_framework *fw = sched_policy_new(x->policy, err);
    if (!fw || sched_framework_apply_weights(fw, x->o.weights, err) != 0)
        goto out;
    if (x->o.add_plugins && x->o.add_plugins(x->o.plugins_ud, fw, err) != 0) {
        tm_err_wrap(err, "extender plugins");
        goto out;
    }
    int64_t now = x->o.now_ms ? x->o.now_ms(x->o.now_ud) : 0;
    if (sched_framework_whatif_begin(fw, s, p, now, err) != 0)
        goto out;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        cand *c = &r->c[i];
        int idx = sched_snapshot_node_index(s, c->node);
        if (idx < 0)
            snprintf(c->why, sizeof c->why, "node not in tarema's cache");
        else if (!c->n_uids) /* kube-scheduler refuses a kept node without victims */
            snprintf(c->why, sizeof c->why, "no victims given");
        else if (passes(fw, s, (size_t)idx, c, err) < 0)
            rc = -1;
    }
    sched_framework_whatif_end(fw);
out:
    sched_framework_free(fw);
    sched_pod_free(p);
    return rc;
}

static json_t *result_json(const req *r) {
    json_t *map = json_object();
    for (size_t i = 0; map && i < r->n; i++) {
        const cand *c = &r->c[i];
        if (c->why[0])
            continue;
        json_t *pods = json_array();
        for (size_t j = 0; pods && j < c->n_uids; j++)
            json_array_append_new(pods, json_pack("{s:s}", "UID", c->uids[j]));
        json_object_set_new(map, c->node,
                            json_pack("{s:o*, s:I}", "Pods", pods, "NumPDBViolations", c->pdb));
    }
    return map ? json_pack("{s:o}", "NodeNameToMetaVictims", map) : NULL;
}

json_t *sched_extender_preempt(sched_extender *x, const json_t *args, bool *bad_input,
                               tm_err *err) {
    *bad_input = false;
    req r;
    json_t *res = NULL;
    if (parse(args, &r, err) != 0) {
        *bad_input = strncmp(err->msg, "ExtenderPreemptionArgs", 22) == 0;
        goto out;
    }
    if (!x->o.cache) {
        tm_err_set(err, "the preempt verb needs tarema's node cache (the request names nodes "
                        "only); this extender has none");
        goto out;
    }
    if (x->o.cache_lock)
        x->o.cache_lock(x->o.cache_ud);
    int rc = evaluate(x, &r, err);
    if (x->o.cache_unlock)
        x->o.cache_unlock(x->o.cache_ud);
    if (rc != 0) {
        *bad_input = strncmp(err->msg, "ExtenderPreemptionArgs", 22) == 0;
        goto out;
    }
    size_t kept = 0;
    for (size_t i = 0; i < r.n; i++) {
        const cand *c = &r.c[i];
        kept += !c->why[0];
        if (c->why[0])
            tm_info("extender preempt: node dropped pod=%s/%s node=%s reason=\"%s\"",
                    tm_json_str(r.pod, "metadata.namespace", ""),
                    tm_json_str(r.pod, "metadata.name", ""), c->node, c->why);
    }
    tm_info("extender preempt pod=%s/%s form=%s candidates=%zu kept=%zu dropped=%zu",
            tm_json_str(r.pod, "metadata.namespace", ""), tm_json_str(r.pod, "metadata.name", ""),
            r.field, r.n, kept, r.n - kept);
    if (x->m_preempt_nodes) {
        tm_metrics_add(x->m_preempt_nodes, (const char *const[]){"kept"}, (double)kept);
        tm_metrics_add(x->m_preempt_nodes, (const char *const[]){"dropped"}, (double)(r.n - kept));
    }
    if (!(res = result_json(&r)))
        tm_err_set(err, "out of memory");
out:
    req_free(&r);
    return res;
}
