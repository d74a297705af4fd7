/* queue_cmd.h: `tarema-scheduler queue` (issue 32): reads the scheduler's pending pods from the
 * API and prints them in queue order (queue_view.h) as a table or, with -o json, as JSON.
 *
 *   tarema-scheduler queue [-n NS | -A] [-o text|json] [--kubeconfig F] [--context C]
 *                          [--config F | --scheduler-name NAME] [--policy P]
 *
 * Without -n or -A the kubeconfig context's namespace is shown (as kubectl does). Positions are
 * always those in the scheduler's whole queue: the pods are listed cluster-wide (filtered by
 * spec.schedulerName and spec.nodeName on the server); a user who may list pods only in one
 * namespace gets that namespace's pods with their positions among them, and a note saying so.
 * RBAC: list pods (cluster-wide, else in the namespace); under the sjfn and adaptive policies,
 * whose order reads the labeler's TaskProfiles, list taskprofiles.tarema.io too (without it:
 * a note, and the order of pods without profiles). */
#ifndef TAREMA_SCHED_QUEUE_CMD_H
#define TAREMA_SCHED_QUEUE_CMD_H

#include <stdbool.h>

#include "lib/error.h"
#include "scheduler/live/config.h"

typedef struct sched_queue_cmd_opts {
    const char *ns; /* -n NS; NULL: the kubeconfig's namespace (unless all) */
    bool all;       /* -A */
    bool json;      /* -o json */
} sched_queue_cmd_opts;

/* Takes the queue's own flags (-n/--namespace, -A/--all-namespaces, -o/--output) out of
 * argv[1..*argc-1] (argv[0] stays), leaving the scheduler's flags in order for
 * sched_config_from_args. -1 with err on a bad value or a missing one. */
int sched_queue_cmd_args(int *argc, char **argv, sched_queue_cmd_opts *o, tm_err *err);

/* Runs the command; prints to stdout, errors to stderr. 0 on success, 1 on failure. */
int sched_queue_cmd_run(const sched_config *cfg, const sched_queue_cmd_opts *o);

#endif
