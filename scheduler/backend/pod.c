/* pod.c: the pod being scheduled: construction, freeing, recording it on a node of the
 * snapshot (what Reserve does), the task it is for the policies, and the pod-level wrappers of
 * match.h's node affinity and taint checks. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/backend/pod.h"

sched_pod *sched_pod_new(const char *ns, const char *name, const char *uid) {
    sched_pod *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ns = strdup(ns ? ns : "");
    p->name = strdup(name ? name : "");
    p->uid = strdup(uid ? uid : "");
    p->workflow = strdup("");
    p->process = strdup("");
    if (!p->ns || !p->name || !p->uid || !p->workflow || !p->process) {
        sched_pod_free(p);
        return NULL;
    }
    p->requests.v[SCHED_RES_PODS] = 1;
    p->controller_kind = SCHED_OWNER_NONE;
    return p;
}

void sched_pod_free(sched_pod *p) {
    if (!p)
        return;
    free(p->xreq);
    for (size_t i = 0; i < p->n_tolerations; i++) {
        free(p->tolerations[i].key);
        free(p->tolerations[i].value);
    }
    free(p->tolerations);
    for (size_t i = 0; i < p->n_node_selector; i++) {
        free(p->node_selector[i].key);
        free(p->node_selector[i].value);
    }
    free(p->node_selector);
    sched_sel_terms_free(p->affinity, p->n_affinity);
    sched_sel_terms_free(p->node_prefs, p->n_node_prefs);
    free(p->node_pref_weight);
    for (size_t i = 0; i < p->n_claims; i++)
        free(p->claims[i]);
    free(p->claims);
    json_decref(p->pod_labels);
    sched_pod_prefs_free(p->pod_prefs);
    sched_host_ports_free(p->host_ports, p->n_host_ports);
    sched_pod_terms_free(p->pod_affinity, p->n_pod_affinity);
    sched_pod_terms_free(p->pod_anti_affinity, p->n_pod_anti_affinity);
    for (size_t i = 0; i < p->n_spread; i++) {
        free(p->spread[i].topology_key);
        tm_selector_free(p->spread[i].selector);
    }
    free(p->spread);
    for (size_t i = 0; i < p->n_soft_spread; i++) {
        free(p->soft_spread[i].topology_key);
        tm_selector_free(p->soft_spread[i].selector);
    }
    free(p->soft_spread);
    for (size_t i = 0; i < p->n_images; i++)
        free(p->images[i]);
    free(p->images);
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->node_name);
    free(p->workflow);
    free(p->process);
    free(p->scheduling_gates);
    free(p->controller_name);
    free(p);
}

/* A copy of the metadata p was parsed with (podspec.c's parse_meta; the labels from
 * pod_labels, which a pod built by hand may set too): NULL when out of memory. */
sched_pod_meta *sched_pod_meta_of(const sched_pod *p) {
    sched_pod_meta *m = sched_pod_meta_new(p->ns);
    if (!m)
        return NULL;
    m->terminating = p->terminating;
    m->priority = p->priority; /* start_ms 0: an assumed pod has not started */
    m->generation = p->generation;
    bool ok = sched_pod_meta_set_name(m, p->name) == 0;
    ok = ok && sched_labels_from_json(p->pod_labels, &m->labels) == 0;
    ok = ok && sched_host_ports_copy(p->host_ports, p->n_host_ports, &m->ports) == 0;
    m->n_ports = ok ? (uint32_t)p->n_host_ports : 0;
    ok = ok && sched_pod_terms_copy(p->pod_anti_affinity, p->n_pod_anti_affinity, &m->anti) == 0;
    m->n_anti = ok ? (uint32_t)p->n_pod_anti_affinity : 0;
    ok = ok && sched_pod_terms_copy(p->pod_affinity, p->n_pod_affinity, &m->aff) == 0;
    m->n_aff = ok ? (uint32_t)p->n_pod_affinity : 0;
    ok = ok && (!p->pod_prefs || (m->pref = sched_pod_prefs_copy(p->pod_prefs)));
    if (!ok) {
        sched_pod_meta_free(m);
        return NULL;
    }
    return m;
}

int sched_pod_record(sched_snapshot *s, const sched_pod *p, const char *node_name, tm_err *err) {
    sched_pod_meta *m = sched_pod_meta_of(p);
    if (sched_snapshot_add_pod_x(s, p->uid, node_name, &p->requests, p->xreq, p->n_xreq, m, err) !=
        0)
        return -1;
    if (!m)
        return tm_err_set(err, "out of memory copying the metadata of pod %s/%s", p->ns, p->name);
    return 0;
}

bool sched_pod_spread_honours_taints(const sched_pod *p, bool defaults_honour) {
    for (size_t i = 0; i < p->n_spread; i++)
        if (p->spread[i].honor_node_taints)
            return true;
    return p->n_spread == 0 && p->n_soft_spread == 0 && defaults_honour;
}

bool sched_pod_helped_by(const sched_pod *p, const sched_pod_meta *m) {
    if (!m)
        return false;
    /* as kube-scheduler's InterPodAffinity hint: one placed pod must satisfy every required
     * affinity term to help (podMatchesAllAffinityTerms) */
    bool all = p->n_pod_affinity > 0;
    for (size_t t = 0; all && t < p->n_pod_affinity; t++)
        all = sched_pod_term_matches(&p->pod_affinity[t], m->ns, m->labels, false);
    if (all)
        return true;
    for (size_t c = 0; c < p->n_spread && strcmp(m->ns, p->ns) == 0; c++)
        if (p->spread[c].selector && sched_labels_match(p->spread[c].selector, m->labels))
            return true;
    return false;
}

void sched_task_resolve(const sched_snapshot *s, const sched_pod *p, sched_task_info *out) {
    memset(out, 0, sizeof *out);
    out->expected_runtime_ms = -1;
    const sched_task_profile *tp = sched_snapshot_task(s, p->workflow, p->process);
    if (!tp && p->workflow && *p->workflow) /* a profile learned without workflow identity */
        tp = sched_snapshot_task(s, "", p->process);
    bool explicit_labels = false;
    for (int k = 0; k < SCHED_NFEAT; k++)
        explicit_labels |= p->labels[k] > 0;
    for (int k = 0; k < SCHED_NFEAT; k++) {
        out->labels[k] = explicit_labels ? p->labels[k] : tp ? tp->labels[k] : 0;
        if (out->labels[k] < 0)
            out->labels[k] = 0;
        out->labeled |= out->labels[k] > 0;
    }
    if (tp)
        out->expected_runtime_ms = tp->expected_runtime_ms;
}

bool sched_pod_node_affinity_matches(const sched_pod *p, const sched_node *n) {
    return sched_match_node_affinity(p->node_selector, p->n_node_selector, p->has_affinity,
                                     p->affinity, p->n_affinity, n);
}

bool sched_pod_tolerates_node_taints(const sched_pod *p, const sched_node *n) {
    return sched_match_untolerated_taint(p->tolerations, p->n_tolerations, n) < 0;
}
