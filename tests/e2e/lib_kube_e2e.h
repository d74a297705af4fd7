/* lib_kube_e2e.h: what the lib_kube end-to-end tests share: a client from $KUBECONFIG, a
 * monotonic clock in seconds, and waiting for a namespace's default ServiceAccount. Header-only
 * (static inline, so a test that uses only part of it still compiles warning-free). */
#ifndef TAREMA_LIB_KUBE_E2E_H
#define TAREMA_LIB_KUBE_E2E_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/kube.h"

static inline double e2e_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A client for $KUBECONFIG's current context with the given rate limit (0: none); NULL after
 * printing why. Caller frees with tm_kube_free. */
static inline tm_kube *e2e_client(double qps, int burst) {
    tm_err err = {0};
    tm_kube_config *cfg = tm_kube_config_load(NULL, NULL, &err);
    if (!cfg) {
        printf("    cannot load kubeconfig: %s\n", err.msg);
        return NULL;
    }
    cfg->qps = qps;
    cfg->burst = burst;
    tm_kube *k = tm_kube_new(cfg, &err);
    if (!k)
        printf("    cannot create client: %s\n", err.msg);
    tm_kube_config_free(cfg);
    return k;
}

/* A new namespace can take pods only once the controller-manager has made its "default"
 * ServiceAccount (the ServiceAccount admission plugin refuses them before). Waits for it. */
static inline bool e2e_wait_default_sa(tm_kube *k, const char *ns, double timeout_s) {
    char *path = tm_kube_path("v1", "serviceaccounts", ns, "default", NULL);
    struct timespec pause = {0, 200000000};
    double end = e2e_now_s() + timeout_s;
    json_t *sa = NULL;
    for (;;) {
        tm_err err = {0};
        sa = tm_kube_get(k, path, &err);
        if (sa || e2e_now_s() >= end)
            break;
        nanosleep(&pause, NULL);
    }
    if (!sa)
        printf("    namespace %s has no default ServiceAccount after %.0f s\n", ns, timeout_s);
    json_decref(sa);
    free(path);
    return sa != NULL;
}

/* Creates namespace ns (printing why when it cannot) and waits for its default ServiceAccount,
 * so the test's pods are admitted. */
static inline bool e2e_create_namespace(tm_kube *k, const char *ns) {
    tm_err err = {0};
    json_t *nsobj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                              "metadata", "name", ns);
    json_t *r = tm_kube_create(k, "/api/v1/namespaces", nsobj, &err);
    if (!r)
        printf("    cannot create namespace %s: %s\n", ns, err.msg);
    json_decref(r);
    json_decref(nsobj);
    return e2e_wait_default_sa(k, ns, 120);
}

#endif
