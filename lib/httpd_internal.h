/* httpd_internal.h: what the files of the HTTP server (httpd.c, httpd_resp.c, httpd_tls.c)
 * share and nobody else should use: the server and response structs and the calls between the
 * files. Not part of the public surface (that is lib/httpd.h). */
#ifndef TAREMA_HTTPD_INTERNAL_H
#define TAREMA_HTTPD_INTERNAL_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <time.h>

#include "auth.h"
#include "httpd.h"

typedef struct route {
    char *method; /* NULL: any method */
    char *pattern;
    size_t plen; /* pattern length without the trailing '*' */
    bool prefix;
    bool builtin; /* health or metrics: also served by the health listener */
    tm_httpd_route_opts ro;
    tm_httpd_handler fn;
    void *ud;
} route;

/* What libmicrohttpd passes back to the callbacks: the server and which listener. */
typedef struct listener {
    struct tm_httpd *srv;
    bool health_only;
} listener;

struct tm_httpd {
    struct MHD_Daemon *daemon, *health;
    listener main_l, health_l;
    char name[32];
    char bind_addr[INET6_ADDRSTRLEN];
    int port, health_port;
    size_t max_body, budget;
    atomic_size_t used; /* bytes of the budget charged by requests in progress */
    tm_auth *auth;
    bool client_ca, tls;
    char *cert_pem, *key_pem, *ca_pem; /* libmicrohttpd keeps pointers to these */
    /* What a restart of the main daemon needs (TLS files changed, see tls_watch_main). */
    unsigned threads, max_conns, per_ip, timeout_s, reload_s;
    bool v6;
    char *tls_path[3];            /* cert, key, client CA (NULL when not given) */
    struct timespec tls_mtime[3]; /* their modification times when last read */
    pthread_t watcher;
    bool watching, watch_stop;
    pthread_mutex_t watch_mu; /* guards watch_stop */
    pthread_cond_t watch_cv;
    pthread_rwlock_t routes_mu; /* guards routes, nroutes, cap, ready*, metrics */
    route *routes;
    size_t nroutes, cap;
    tm_httpd_ready_fn ready;
    void *ready_ud;
    tm_metrics *metrics;
    atomic_int inflight;  /* requests between their headers and their completed response */
    atomic_bool starting; /* MHD errors go into start_err instead of the log */
    char start_err[512];
};

typedef struct hdr {
    char *name, *value;
    struct hdr *next;
} hdr;

struct tm_httpd_resp {
    int status;
    char *content_type;
    char *body; /* malloc'd; handed to libmicrohttpd, which frees it */
    size_t len;
    hdr *headers;
};

/* httpd.c */
/* Milliseconds since start (CLOCK_MONOTONIC). */
double tm_httpd_elapsed_ms(const struct timespec *start);
/* Starts the main daemon on sa:port, or on the listening socket fd (not MHD_INVALID_SOCKET). */
struct MHD_Daemon *tm_httpd_start_main(tm_httpd *srv, const struct sockaddr *sa, int port,
                                       MHD_socket fd);

/* httpd_resp.c */
void tm_httpd_resp_reset_body(tm_httpd_resp *resp);
enum MHD_Result tm_httpd_send_resp(struct MHD_Connection *conn, tm_httpd_resp *resp);

/* httpd_tls.c */
int tm_httpd_load_tls(tm_httpd *srv, const tm_httpd_opts *o, tm_err *err);
/* The thread that reloads the TLS files when they change (arg: the server). */
void *tm_httpd_tls_watch_main(void *arg);

#endif
