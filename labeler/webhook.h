/* webhook.h: `tarema-labeler webhook`: the mutating admission webhook that sizes Nextflow task
 * pods from their process's history (docs/sizing.md, "Applied to pods").
 *
 * POST /mutate takes an AdmissionReview v1 for a pod CREATE and answers it allowed, with a
 * JSONPatch of container 0's requests.cpu, requests.memory and limits.memory when the pod is a
 * task (labeler/sizing_pod.h decides; this file only does the I/O). The API server calls it
 * over HTTPS (the certificate from the chart, verified by the MutatingWebhookConfiguration's
 * caBundle) without credentials, so /mutate is open while the server's other routes keep its
 * authentication; it changes nothing anywhere, it only answers.
 *
 * Around it, one loop thread keeps what handlers read: every refresh_s (and at once when the
 * store NOTIFYs new runs), the plan of every (workflow, process) from the store's completed
 * runs and the largest node's allocatable cpu and memory; a handler lists the earlier pods of
 * the same task (labels nextflow.io/taskName and nextflow.io/runName) to see whether one was
 * OOMKilled. Anything missing (database down, nodes unknown) makes the webhook answer
 * "allowed, untouched" or the declared/whole-machine fallback, never an error: with
 * failurePolicy Ignore a broken webhook must not stop pods either. */
#ifndef TAREMA_LABELER_WEBHOOK_H
#define TAREMA_LABELER_WEBHOOK_H

#include <signal.h>

typedef struct lab_webhook_opts {
    const char *db;         /* conninfo; NULL/"" = PG* variables */
    const char *bind;       /* listen address */
    int port;               /* 0 = any free port (logged) */
    const char *kubeconfig; /* NULL = in-cluster or $KUBECONFIG */
    const char *tls_cert_file, *tls_key_file, *client_ca_file, *auth_token_file;
    int insecure_no_auth;
    /* POST /mutate needs the server's authentication (a client certificate of client_ca_file
     * or the token of auth_token_file), which the API server presents when its admission
     * configuration gives it one. 0 = /mutate open: the API server presents nothing unless so
     * configured, which managed clusters often do not allow. */
    int authenticate_mutate;
    int health_port;  /* 0 = none */
    int strategy;     /* a history sz_strategy, SZ_STRATEGY_BEST or SZ_STRATEGY_PAPER */
    int cold_start;   /* samples before a process's plan is used (>= 1) */
    int buckets;      /* n of quantized and kmeans */
    int refresh_s;    /* plans and node sizes re-read at least this often */
    int db_timeout_s; /* statement_timeout of the store (0 = 10) */
} lab_webhook_opts;

/* Runs until *stop becomes non-zero. Returns the process exit status (0, or 1 on a start-up
 * error, which is logged). */
int lab_webhook_main(const lab_webhook_opts *o, volatile sig_atomic_t *stop);

#endif
