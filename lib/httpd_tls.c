/* httpd_tls.c: the HTTP server's TLS files: read and checked at start, and watched afterwards:
 * when cert-manager renews them in place, serving moves to a daemon with the new certificate
 * (see httpd.h). */
#include "httpd.h"
#include "httpd_internal.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileutil.h"
#include "log.h"

static struct timespec file_mtime(const char *path) {
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return (struct timespec){0};
    return st.st_mtim;
}

/* Reads the PEM files of opts into srv. 0 or -1 with err naming the file. */
int tm_httpd_load_tls(tm_httpd *srv, const tm_httpd_opts *o, tm_err *err) {
    if (!o->tls_cert_file != !o->tls_key_file)
        return tm_err_set(err, "http server %s: TLS needs both a certificate and a key file",
                          srv->name);
    if (o->client_ca_file && !o->tls_cert_file)
        return tm_err_set(err,
                          "http server %s: a client CA (mTLS) needs TLS: give a certificate "
                          "and a key file too",
                          srv->name);
    if (!o->tls_cert_file)
        return 0;
    if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
        return tm_err_set(err, "http server %s: this libmicrohttpd was built without TLS",
                          srv->name);
    if (!(srv->cert_pem = tm_read_file(o->tls_cert_file, NULL, err)))
        return tm_err_wrap(err, "TLS certificate");
    if (!(srv->key_pem = tm_read_file(o->tls_key_file, NULL, err)))
        return tm_err_wrap(err, "TLS key");
    if (o->client_ca_file && !(srv->ca_pem = tm_read_file(o->client_ca_file, NULL, err)))
        return tm_err_wrap(err, "client CA");
    srv->tls = true;
    srv->client_ca = srv->ca_pem != NULL;
    const char *paths[3] = {o->tls_cert_file, o->tls_key_file, o->client_ca_file};
    for (int i = 0; i < 3; i++) {
        if (paths[i] && !(srv->tls_path[i] = strdup(paths[i])))
            return tm_err_set(err, "out of memory");
        srv->tls_mtime[i] = file_mtime(paths[i]);
    }
    return 0;
}

/* True when cert and key (PEM) form a usable pair and ca (when given) holds a certificate. */
static bool tls_pair_ok(const char *cert, const char *key, const char *ca, tm_err *err) {
    gnutls_certificate_credentials_t cred;
    if (gnutls_certificate_allocate_credentials(&cred) < 0)
        return tm_err_set(err, "out of memory"), false;
    gnutls_datum_t c = {(unsigned char *)cert, (unsigned int)strlen(cert)};
    gnutls_datum_t k = {(unsigned char *)key, (unsigned int)strlen(key)};
    int rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
    if (rc < 0)
        tm_err_set(err, "certificate and key: %s", gnutls_strerror(rc));
    if (rc >= 0 && ca) {
        gnutls_datum_t a = {(unsigned char *)ca, (unsigned int)strlen(ca)};
        rc = gnutls_certificate_set_x509_trust_mem(cred, &a, GNUTLS_X509_FMT_PEM);
        if (rc <= 0) {
            tm_err_set(err, "client CA: %s", rc < 0 ? gnutls_strerror(rc) : "no certificate");
            rc = -1;
        }
    }
    gnutls_certificate_free_credentials(cred);
    return rc >= 0;
}

/* Re-reads the TLS files and moves serving to a daemon with the new certificate. Keeps the
 * old certificate when a file cannot be read or the new daemon does not start. */
static void reload_tls(tm_httpd *srv) {
    tm_err err = {0};
    char *pem[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        if (srv->tls_path[i] && !(pem[i] = tm_read_file(srv->tls_path[i], NULL, &err))) {
            tm_warn("TLS files changed but cannot be read; keeping the current certificate "
                    "server=%s err=\"%s\"",
                    srv->name, err.msg);
            for (int j = 0; j < 3; j++)
                free(pem[j]);
            return;
        }
    }
    if (!tls_pair_ok(pem[0], pem[1], pem[2], &err)) {
        tm_warn("TLS files changed but do not work together; keeping the current certificate "
                "server=%s err=\"%s\"",
                srv->name, err.msg);
        for (int j = 0; j < 3; j++)
            free(pem[j]);
        return;
    }
    char *old_pem[3] = {srv->cert_pem, srv->key_pem, srv->ca_pem};
    struct MHD_Daemon *old = srv->daemon;
    MHD_socket fd = MHD_quiesce_daemon(old);
    if (fd == MHD_INVALID_SOCKET) {
        tm_warn("TLS reload: cannot take over the listening socket server=%s", srv->name);
        for (int j = 0; j < 3; j++)
            free(pem[j]);
        return;
    }
    srv->cert_pem = pem[0];
    srv->key_pem = pem[1];
    srv->ca_pem = pem[2];
    /* The new daemon gets a duplicate of the socket: libmicrohttpd closes a socket it was given
     * when it fails to start, and the old pair must still be able to take over then. */
    struct MHD_Daemon *fresh = tm_httpd_start_main(srv, NULL, 0, dup(fd));
    bool ok = fresh != NULL;
    if (!ok) {
        srv->cert_pem = old_pem[0];
        srv->key_pem = old_pem[1];
        srv->ca_pem = old_pem[2];
        fresh = tm_httpd_start_main(srv, NULL, 0, dup(fd));
    }
    close(fd); /* the new daemon holds its duplicate */
    if (!fresh) {
        tm_error("TLS reload: no daemon could take over the port server=%s port=%d: %s", srv->name,
                 srv->port, srv->start_err);
        return; /* the quiesced old daemon keeps its open connections until stop */
    }
    srv->daemon = fresh;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&srv->inflight) > 0 && tm_httpd_elapsed_ms(&t0) < 2000.0) {
        struct timespec tick = {.tv_nsec = 5 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    MHD_stop_daemon(old);
    char **unused = ok ? old_pem : pem;
    for (int j = 0; j < 3; j++)
        free(unused[j]);
    if (ok)
        tm_info("TLS certificate reloaded server=%s port=%d", srv->name, srv->port);
    else
        tm_warn("TLS files changed but do not work together; keeping the current certificate "
                "server=%s err=\"%s\"",
                srv->name, srv->start_err);
}

/* Checks the TLS files every reload_s seconds (cert-manager renews them in place) and reloads
 * when one changed. */
void *tm_httpd_tls_watch_main(void *arg) {
    tm_httpd *srv = arg;
    pthread_mutex_lock(&srv->watch_mu);
    while (!srv->watch_stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += srv->reload_s;
        pthread_cond_timedwait(&srv->watch_cv, &srv->watch_mu, &until);
        if (srv->watch_stop)
            break;
        bool changed = false;
        struct timespec now[3];
        for (int i = 0; i < 3; i++) {
            now[i] = file_mtime(srv->tls_path[i]);
            changed |= srv->tls_path[i] && (now[i].tv_sec != srv->tls_mtime[i].tv_sec ||
                                            now[i].tv_nsec != srv->tls_mtime[i].tv_nsec);
        }
        if (!changed)
            continue;
        memcpy(srv->tls_mtime, now, sizeof now);
        pthread_mutex_unlock(&srv->watch_mu);
        reload_tls(srv);
        pthread_mutex_lock(&srv->watch_mu);
    }
    pthread_mutex_unlock(&srv->watch_mu);
    return NULL;
}
