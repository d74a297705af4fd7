/* controller_internal.h: what the files of the Workflow controller (controller.c: the loop and
 * the helpers; controller_plan.c: planning a workflow's steps; controller_reconcile.c: one
 * workflow's reconciliation) share and nobody else should use. Not part of the public surface
 * (that is planner/controller.h). */
#ifndef TAREMA_PLANNER_CONTROLLER_INTERNAL_H
#define TAREMA_PLANNER_CONTROLLER_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "labeler/waits_store.h"
#include "lib/error.h"
#include "lib/kube.h"
#include "planner/controller.h"
#include "planner/modes.h"
#include "planner/workflow.h"

typedef struct ctl {
    const pl_ctl_config *cfg;
    tm_kube *k;
    tm_informer *wfs, *nodes, *pods, *resvs, *profiles;
    tm_leader *leader;
    tm_timer *timer;
    int64_t next_tick_ms; /* when the pending tick runs (monotonic ms) */
    int64_t last_tick_ms; /* when the last tick began */
    int leading;
    int nodes_gone;         /* a node went away since the last tick: replan everything */
    json_t *replan;         /* "ns/name" -> true: replan at the next tick */
    json_t *warned;         /* one-time warnings already logged */
    json_t *nodesel;        /* --node-selector as an object */
    lab_waits_store *waits; /* learned waits (--db); NULL: the default estimate */
    char identity[300];
} ctl;

/* The pods of one step (its current attempt) in ns, from the pod informer. */
typedef struct step_pods {
    json_t *pods; /* array, borrowed elements */
    int succeeded, failed, running, bound, gated;
    int64_t first_start, last_end;
} step_pods;

/* controller.c: the controller's I/O helpers (events, objects, informer stores, the pods of a
 * step, learned waits) and the Workflow status fields they read and write. */
json_t *ctl_store_array(const tm_informer *inf);
void ctl_warn_once(ctl *c, const char *key, const char *msg);
void ctl_event(ctl *c, const json_t *wfobj, const char *type, const char *reason, const char *note);
int ctl_create_obj(ctl *c, const char *path, const json_t *obj, const char *what);
void ctl_delete_resv_uid(ctl *c, const char *ns, const char *name, const char *uid);
json_t *ctl_step_status(json_t *steps, const char *name);
int ctl_state_is(const json_t *ss, const char *st);
int ctl_finished(const json_t *ss);
void ctl_set_time(json_t *o, const char *key, int64_t t);
int64_t ctl_get_time(const json_t *o, const char *key);
int ctl_requested_mode(const json_t *wfobj, int i, pl_mode *m);
pl_mode ctl_status_mode(const json_t *ss);
int ctl_has_gate(const json_t *pod, const char *gate);
void ctl_refresh_estimate(ctl *c, const char *ns, const pl_step *s, json_t *ss, int64_t now);
const char *ctl_node_group(ctl *c, const char *node);
int64_t ctl_step_seconds(const json_t *ss, const pl_step *s);
void ctl_observe(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
                 step_pods *sp);
void ctl_release_step(ctl *c, const char *ns, const char *wf, const char *stepobj, int attempt,
                      int everything);

/* controller_plan.c */
int ctl_plan_steps(ctl *c, const json_t *wfobj, const pl_workflow *wf, json_t *steps_st,
                   int64_t now, int *moved, char *moved_names, size_t msize, json_t *status,
                   tm_err *err);

/* controller_reconcile.c */
void ctl_reconcile(ctl *c, json_t *wfobj, int64_t now);

#endif
