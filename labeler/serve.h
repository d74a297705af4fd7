/* serve.h: `tarema-labeler serve`: the weblog receiver and TaskProfile publisher.
 *
 * POST /weblog (any path under it, and POST /) takes Nextflow weblog events. An event is
 * acknowledged (200 stored, 202 spooled) only once it is in PostgreSQL or fsync'ed in the
 * spool; while the spool holds events, new ones queue behind them so they are stored in
 * arrival order. The main loop reconnects to the database, drains the spool, and every
 * refresh interval re-labels the workflows that got new runs (or all of them when the node
 * groups change) and publishes their TaskProfiles. /healthz, /readyz, /metrics as usual. */
#ifndef TAREMA_LABELER_SERVE_H
#define TAREMA_LABELER_SERVE_H

#include <signal.h>

typedef struct lab_serve_opts {
    const char *db;               /* conninfo; NULL/"" = PG* variables */
    const char *bind;             /* listen address */
    int port;                     /* 0 = any free port (logged) */
    const char *spool_dir;        /* durable event queue */
    const char *ns;               /* TaskProfile namespace; NULL = the kubeconfig's */
    const char *kubeconfig;       /* NULL = in-cluster or $KUBECONFIG */
    const char *groups_file;      /* node groups from the profiler's JSON instead of Nodes */
    const char *workflow_key;     /* path under metadata.workflow naming the workflow */
    const char *default_workflow; /* for runs whose `started` event never arrived */
    int refresh_s;                /* label refresh interval */
    int publish;                  /* publish TaskProfiles (needs a cluster) */
} lab_serve_opts;

/* Runs until *stop becomes non-zero. Returns the process exit status (0, or 1 on a start-up
 * error, which is logged). */
int lab_serve_main(const lab_serve_opts *o, volatile sig_atomic_t *stop);

#endif
