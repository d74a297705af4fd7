/* explain_preempt.c: the preemption part of explain (explain.h): when no node fits, what
 * DefaultPreemption would do (plugins/preemption/preemption.h): the node it would nominate and
 * the victims, and per node it tried the victims it considered and why the node was or was not
 * chosen. Pure, like the rest of explain: the dry run restores the snapshot. */
#include <stdio.h>
#include <string.h>

#include "scheduler/cmd/explain.h"
#include "lib/jsonutil.h"
#include "scheduler/plugins/preemption/preemption.h"

static const char *const outcome_names[] = {
    [SCHED_PREEMPT_NODE_NOT_TRIED] = "not tried (the dry run had enough candidates)",
    [SCHED_PREEMPT_NODE_UNRESOLVABLE] = "preemption is not helpful (unresolvable rejection)",
    [SCHED_PREEMPT_NODE_NO_VICTIMS] = "no pod of lower priority",
    [SCHED_PREEMPT_NODE_NO_FIT] = "does not fit even without its lower-priority pods",
    [SCHED_PREEMPT_NODE_CANDIDATE] = "candidate, not chosen",
    [SCHED_PREEMPT_NODE_CHOSEN] = "chosen"};

static const char *const level_names[] = {
    [SCHED_PREEMPT_BY_PDB] = "more PodDisruptionBudget violations",
    [SCHED_PREEMPT_BY_HIGHEST] = "a higher highest victim priority",
    [SCHED_PREEMPT_BY_SUM] = "a larger sum of victim priorities",
    [SCHED_PREEMPT_BY_COUNT] = "more victims",
    [SCHED_PREEMPT_BY_START] = "its highest-priority victims started earlier",
    [SCHED_PREEMPT_BY_NAME] = "all equal, later in name order"};

static json_t *victim_json(const sched_victim *v) {
    char pod[512];
    snprintf(pod, sizeof pod, "%s/%s", v->ns, v->name);
    return json_pack("{s:s, s:i, s:b, s:s}", "pod", pod, "priority", (int)v->priority,
                     "pdbViolation", v->pdb_violation, "why", v->why);
}

static json_t *node_json(const sched_preemption_result *r, const sched_preempt_candidate *c) {
    json_t *vs = json_array();
    for (size_t i = 0; vs && i < c->n_victims; i++)
        json_array_append_new(vs, victim_json(&r->all_victims[c->first_victim + i]));
    json_t *n = json_pack("{s:s, s:s, s:o}", "name", c->node_name, "outcome",
                          outcome_names[c->outcome], "victims", vs);
    if (n && c->outcome == SCHED_PREEMPT_NODE_CANDIDATE)
        json_object_set_new(n, "lostBy", json_string(level_names[c->lost_at]));
    if (n &&
        (c->outcome == SCHED_PREEMPT_NODE_CANDIDATE || c->outcome == SCHED_PREEMPT_NODE_CHOSEN))
        json_object_set_new(n, "pdbViolations", json_integer((json_int_t)c->n_pdb_violations));
    return n;
}

json_t *sched_explain_preemption(sched_framework *fw, sched_snapshot *s, const sched_pod *pod,
                                 int64_t now_ms, tm_err *err) {
    sched_preemption_result r;
    sched_preemption_result_init(&r);
    if (sched_preemption_run(fw, s, pod, now_ms, &r, err) != 0) {
        sched_preemption_result_clear(&r);
        return NULL;
    }
    json_t *victims = json_array(), *nodes = json_array();
    for (size_t i = 0; victims && i < r.n_victims; i++)
        json_array_append_new(victims, victim_json(&r.victims[i]));
    size_t untried = 0, unresolvable = 0;
    for (size_t i = 0; nodes && i < r.n_nodes; i++) {
        const sched_preempt_candidate *c = &r.nodes[i];
        if (c->outcome == SCHED_PREEMPT_NODE_NOT_TRIED)
            untried++; /* counted, not listed: a large cluster would list thousands */
        else if (c->outcome == SCHED_PREEMPT_NODE_UNRESOLVABLE)
            unresolvable++;
        else
            json_array_append_new(nodes, node_json(&r, c));
    }
    json_t *doc = json_pack("{s:o, s:s, s:o, s:o, s:I, s:I}", "nominated",
                            r.status == SCHED_STATUS_OK ? json_string(r.node_name) : json_null(),
                            "message", r.status == SCHED_STATUS_OK ? "" : r.msg, "victims", victims,
                            "nodes", nodes, "nodesNotTried", (json_int_t)untried,
                            "nodesUnresolvable", (json_int_t)unresolvable);
    sched_preemption_result_clear(&r);
    if (!doc)
        tm_err_set(err, "out of memory building the preemption explanation");
    return doc;
}

void sched_explain_preemption_text(FILE *f, const json_t *doc) {
    const json_t *pr = json_object_get(doc, "preemption");
    if (!json_is_object(pr))
        return;
    const char *nom = json_string_value(json_object_get(pr, "nominated"));
    size_t i, k;
    const json_t *v, *n;
    if (!nom) {
        fprintf(f, "preemption: none possible: %s\n",
                json_string_value(json_object_get(pr, "message")));
    } else {
        fprintf(f, "preemption: would nominate %s and evict", nom);
        json_array_foreach(json_object_get(pr, "victims"), i, v) {
            fprintf(f, "%s %s (priority %lld)", i ? "," : "",
                    json_string_value(json_object_get(v, "pod")),
                    (long long)json_integer_value(json_object_get(v, "priority")));
        }
        fprintf(f, "%s\n", json_array_size(json_object_get(pr, "victims")) ? "" : " nothing");
    }
    json_array_foreach(json_object_get(pr, "nodes"), i, n) {
        const char *lost = json_string_value(json_object_get(n, "lostBy"));
        fprintf(f, "  %-24s %s%s%s", json_string_value(json_object_get(n, "name")),
                json_string_value(json_object_get(n, "outcome")), lost ? ": " : "",
                lost ? lost : "");
        json_array_foreach(json_object_get(n, "victims"), k, v) {
            fprintf(f, "%s %s (%s)", k ? "," : "; victims",
                    json_string_value(json_object_get(v, "pod")),
                    json_string_value(json_object_get(v, "why")));
        }
        fprintf(f, "\n");
    }
    long long nt = json_integer_value(json_object_get(pr, "nodesNotTried")),
              nu = json_integer_value(json_object_get(pr, "nodesUnresolvable"));
    if (nt || nu)
        fprintf(f, "  (%lld node(s) not tried, %lld where preemption is not helpful)\n", nt, nu);
}

void sched_explain_gang_preemption_text(FILE *f, const json_t *gang) {
    const json_t *pr = json_object_get(gang, "preemption");
    if (!json_is_object(pr))
        return;
    if (!json_is_true(json_object_get(pr, "wouldPreempt"))) {
        fprintf(f, "gang preemption: none: %s\n", tm_json_str(pr, "message", ""));
        return;
    }
    fprintf(f, "gang preemption: %s\n", tm_json_str(pr, "message", ""));
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(pr, "victims"), i, v) {
        const char *unit = tm_json_str(v, "gang", NULL);
        fprintf(f, "  evict %s on %s (priority %lld%s%s): %s\n", tm_json_str(v, "pod", ""),
                tm_json_str(v, "node", ""), (long long)tm_json_int(v, "priority", 0),
                unit ? ", with its whole gang " : "", unit ? unit : "", tm_json_str(v, "why", ""));
    }
    json_array_foreach(json_object_get(pr, "members"), i, v) {
        const char *node = tm_json_str(v, "node", NULL);
        fprintf(f, "  then %s on %s\n", tm_json_str(v, "pod", ""), node ? node : "(not needed)");
    }
}
