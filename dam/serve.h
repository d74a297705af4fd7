/* serve.h: `tarema-dam serve`, the DAM as a service (docs/dam.md, "REST API").
 *
 *   POST   /api/v1/requests       {"job": JOB, "submit": {"pods": [...]}}  -> 202 {"id", "state"}
 *   GET    /api/v1/requests/ID    the record: state PENDING until DONE with the ranking (every
 *                                 score, the excluded clusters with reasons, the chosen one)
 *   DELETE /api/v1/requests/ID    forgets it (and deletes its submitted pods)
 *   GET    /api/v1/clusters       the signals collected now from every cluster
 *   /healthz, /readyz (the database answers), /metrics; on health_port too.
 *
 * A POST is checked at once (400 naming the field: "job.cores: missing", "job.datasets[0]:
 * unknown dataset 'x'"), stored in PostgreSQL with a synchronous commit, then acknowledged;
 * one worker thread collects the clusters' signals, ranks, and (with `submit`) creates the
 * pods on the chosen cluster, follows them and fails over: a failed pod bans its cluster for
 * the request, the request is ranked again without it and submitted to the next. Requests
 * not finished when the service stops are resumed by the next start. With a token or a client
 * CA every endpoint except health and metrics needs it. */
#ifndef TAREMA_DAM_SERVE_H
#define TAREMA_DAM_SERVE_H

#include <signal.h>

typedef struct dam_serve_opts {
    const char *db;         /* conninfo; NULL/"" = PG* variables */
    const char *federation; /* the federation file (dam/collect.h) */
    const char *bind;       /* NULL = 127.0.0.1 */
    int port;               /* 0 = a free port (logged) */
    const char *tls_cert_file, *tls_key_file, *client_ca_file, *auth_token_file;
    int insecure_no_auth;
    int health_port;          /* 0 = none */
    int poll_ms;              /* how often the worker looks at running submissions; 0 = 2000 */
    int db_timeout_s;         /* statement timeout; 0 = 10 */
    double cluster_timeout_s; /* a cluster not answered within it is unreachable; 0 = 10 */
} dam_serve_opts;

/* Runs until *stop becomes non-zero. Returns the exit status (1 on a start-up error, logged). */
int dam_serve_main(const dam_serve_opts *o, volatile sig_atomic_t *stop);

#endif
