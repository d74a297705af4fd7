/* serve.h: `tarema-labeler serve`: the weblog receiver and TaskProfile publisher.
 *
 * POST /weblog (any path under it, and POST /) takes Nextflow weblog events; with an auth
 * token configured they need it (Basic password from Nextflow's weblog.basicToken, a Bearer
 * header, or ?token= in the URL for Nextflow versions without basicToken). An event is
 * checked against what the store accepts (400 naming the field otherwise), appended to the
 * spool and fsync'ed, then acknowledged (202); the main loop stores the spool in order, so a
 * slow, locked or hung PostgreSQL never holds a POST. Events the store still refuses on replay
 * are kept in <spool>/dead-letter and counted (tarema_weblog_dead_letters_total).
 * /healthz; /readyz (ready = events can be accepted: the spool writes); /readyz/database
 * (503 while the database is down or a call to it is stuck); /metrics.
 *
 * Labels are refreshed on events, not by polling: a workflow is relabelled when new runs of
 * it are stored (the store NOTIFYs on every write, whether from this server's weblog or from
 * `tarema-labeler ingest` anywhere), and every workflow when the node groups change (a Node
 * informer watches tarema.io labels and cpu capacity). A slow resync (resync_s) relabels and
 * republishes everything as a safety net, e.g. for a TaskProfile deleted by hand. */
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
    const char *node_selector;    /* label selector for the Nodes to watch; NULL = all */
    int resync_s;                 /* full relabel and republish interval (safety net) */
    int publish;                  /* publish TaskProfiles (needs a cluster) */
    /* HTTP security and limits (lib/httpd.h): TLS, mTLS, a shared token (Bearer, Basic
     * password, or ?token= in the weblog URL), a plain-HTTP health port, body limits. */
    const char *tls_cert_file, *tls_key_file, *client_ca_file, *auth_token_file;
    int insecure_no_auth;
    int health_port;         /* 0 = none */
    long long max_body;      /* per weblog event; 0 = 2 MiB */
    long long memory_budget; /* all requests at once; 0 = 64 MiB */
    int db_timeout_s;        /* statement_timeout; lock_timeout is half; the client gives
                                up on an unanswering server 2 s later (0 = 10) */
} lab_serve_opts;

/* Runs until *stop becomes non-zero. Returns the process exit status (0, or 1 on a start-up
 * error, which is logged). */
int lab_serve_main(const lab_serve_opts *o, volatile sig_atomic_t *stop);

#endif
