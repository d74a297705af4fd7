/* server.c: health, readiness, metrics and extender routes of tarema-scheduler. */
#include "scheduler/cmd/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/duration.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/log.h"
#include "scheduler/cmd/extender.h"
#include "scheduler/live/backfill_live.h"
#include "scheduler/live/resv_controller.h"

/* How long an idle keep-alive connection is kept: longer than kube-scheduler's client keeps one
 * (Go's IdleConnTimeout, 90 s in the transport it builds for extenders), so that the client, not
 * the server, closes it. Closed here first (libmicrohttpd's default here was 10 s), a /filter
 * POST sent on it just as it closed fails; Go does not resend a POST, and kube-scheduler, the
 * extender being ignorable, places the pod without tarema's filter (suspected in a CI run of
 * scheduler_extender_backfill_test, with kube-scheduler paused past 10 s). */
#define SCHED_HTTP_IDLE_TIMEOUT_S 120

struct sched_server {
    tm_httpd *httpd;
    sched_extender *ext;
    sched_cache *cache;
    resv_controller *resv;   /* the loop's: reservations honoured by /filter */
    sched_backfill_live *bf; /* the loop's backfill planner: its shadows kept by /filter */
    tm_kube *k;
    tm_auth *auth;
    tm_metric *m_retries; /* tarema_extender_retries_total */
    sched_loop *loop;     /* calls view_changed while the server is up */
};

static void lock_cache(void *ud) {
    sched_cache_lock(ud);
}

static void unlock_cache(void *ud) {
    sched_cache_unlock(ud);
}

static int64_t now_ms(void *ud) {
    (void)ud;
    return tm_wall_ms();
}

/* The extender's bind verb: a synchronous bind (thread-safe client call). With backfill on it is
 * also the Reserve kube-scheduler's extender protocol lacks (backfill_live.h): the pod is checked
 * against the plan on its node once more, with every pod bound through here since, and it counts
 * on that node until the informer sees it bound. A refusal is a bind error to
 * kube-scheduler, which unreserves the pod and tries it again. */
static int ext_bind(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                    tm_err *err) {
    sched_server *s = ud;
    sched_backfill_taken t = {0};
    if (s->bf) {
        char why[800] = "";
        sched_cache_lock(s->cache);
        int held =
            sched_backfill_live_bind_reserve(s->bf, uid, node, tm_wall_ms(), &t, why, sizeof why);
        sched_cache_unlock(s->cache);
        if (held) {
            tm_info("extender: bind refused pod=%s/%s node=%s reason=\"%s\"", ns, name, node, why);
            return tm_err_set(err, "%s", why);
        }
    }
    int rc = tm_kube_bind(s->k, ns, name, uid, node, err);
    if (t.placed) {
        sched_cache_lock(s->cache);
        sched_backfill_live_bind_done(s->bf, &t, rc == 0);
        sched_cache_unlock(s->cache);
    }
    return rc;
}

static void retry_patched(void *ud, int status, json_t *body, const tm_err *err) {
    (void)ud;
    (void)body;
    if (err && status != 404 && status != 409) /* gone, or another pod of that name now */
        tm_warn("extender: retry annotation not written status=%d err=\"%s\"", status, err->msg);
}

/* A pod /filter refused passes a node now (extender.h, "Retries"): an update of the pod is a
 * cluster event kube-scheduler requeues it on (an extender's refusal is requeued by any). The
 * annotation changes each time; the uid in the patch is a precondition (a pod of the same name
 * created since is left alone). */
static void ext_retry(void *ud, const char *ns, const char *name, const char *uid,
                      const char *node) {
    sched_server *s = ud;
    char when[40];
    tm_kube_microtime(when, sizeof when);
    json_t *patch = json_pack("{s:{s:s, s:{s:s}}}", "metadata", "uid", uid, "annotations",
                              SCHED_EXTENDER_RETRY_ANNOTATION, when);
    char *path = tm_kube_path("v1", "pods", ns, name, NULL);
    if (!patch || !path ||
        tm_kube_write_async(s->k, "PATCH", path, patch, "application/merge-patch+json",
                            retry_patched, NULL))
        tm_warn("extender: retry annotation not started pod=%s/%s", ns, name);
    else {
        tm_metrics_inc(s->m_retries, NULL);
        tm_info("extender: pod=%s/%s passes node=%s now, refused on an older view; "
                "kube-scheduler asked to retry it (%s)",
                ns, name, node, SCHED_EXTENDER_RETRY_ANNOTATION);
    }
    json_decref(patch);
    free(path);
}

/* The loop's view changed: the pods /filter refused are evaluated again. */
static void view_changed(void *ud) {
    sched_server *s = ud;
    sched_extender_retry(s->ext, tm_wall_ms(), ext_retry, s);
}

/* The Reservation Filter plugin over the loop's table in each request's framework (the
 * extender holds the cache lock while it runs), so pods placed by kube-scheduler through this
 * extender leave reserved capacity to its owners as tarema's own pods do; then the Backfill
 * Filter over the loop's plan, so that they do not delay the shadows of the pods at the head of
 * the queue (backfill_live.h). */
static int ext_add_plugins(void *ud, sched_framework *fw, tm_err *err) {
    sched_server *s = ud;
    if (s->resv && resv_controller_add_plugin(s->resv, fw, err))
        return -1;
    return s->bf ? sched_backfill_live_add_plugin(s->bf, fw, err) : 0;
}

sched_server *sched_server_start(const sched_config *cfg, sched_loop *loop, tm_metrics *reg,
                                 tm_kube *k, tm_err *err) {
    sched_server *s = calloc(1, sizeof *s);
    if (!s) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    s->k = k;
    s->cache = sched_loop_cache(loop);
    s->resv = sched_loop_resv(loop);
    s->bf = cfg->mode == SCHED_MODE_EXTENDER ? sched_loop_backfill(loop) : NULL;
    sched_extender_opts xo = {.policy = cfg->policy,
                              .weights = &cfg->score_weights,
                              .keys = sched_config_keys(cfg),
                              .cache = sched_cache_snapshot(s->cache),
                              .cache_lock = lock_cache,
                              .cache_unlock = unlock_cache,
                              .cache_ud = s->cache,
                              /* /bind exists only when extender binding is configured */
                              .bind = cfg->extender_bind ? ext_bind : NULL,
                              .bind_ud = s,
                              .now_ms = now_ms,
                              .add_plugins = ext_add_plugins,
                              .plugins_ud = s,
                              .metrics = reg,
                              .fw_metrics = sched_loop_fw_metrics(loop)};
    s->ext = sched_extender_new(&xo, err);
    if (!s->ext ||
        !(s->m_retries = tm_metrics_counter(
              reg, "tarema_extender_retries_total",
              "Pods the extender's filter left without a node that passed one once tarema's "
              "view had moved on; kube-scheduler was asked to retry them "
              "(annotation " SCHED_EXTENDER_RETRY_ANNOTATION ")",
              NULL, err)))
        goto fail;
    bool review = cfg->review_users && cfg->review_users[0];
    if ((cfg->auth_token_file || review) && !(s->auth = tm_auth_new(cfg->auth_token_file, err)))
        goto fail;
    if (review &&
        tm_auth_enable_tokenreview(s->auth, k, (const char *const *)cfg->review_users, err))
        goto fail;
    tm_httpd_opts ho = {.bind_addr = cfg->bind_address,
                        .port = cfg->port,
                        .name = "scheduler",
                        .timeout_s = SCHED_HTTP_IDLE_TIMEOUT_S,
                        .max_body = (size_t)cfg->max_body_bytes,
                        .memory_budget = (size_t)cfg->memory_budget_bytes,
                        .health_port = cfg->health_port,
                        .tls_cert_file = cfg->tls_cert_file,
                        .tls_key_file = cfg->tls_key_file,
                        .client_ca_file = cfg->client_ca_file,
                        .auth = s->auth,
                        .insecure_no_auth = cfg->insecure_no_auth};
    s->httpd = tm_httpd_start(&ho, err);
    if (!s->httpd)
        goto fail;
    if (tm_httpd_enable_health(s->httpd, sched_loop_ready, loop, err) ||
        tm_httpd_enable_metrics(s->httpd, reg, err) ||
        sched_extender_register(s->ext, s->httpd, "", err))
        goto fail;
    tm_info("serving addr=%s port=%d health_port=%d tls=%s "
            "routes=/healthz,/readyz,/metrics,/filter,/prioritize,/preempt%s",
            cfg->bind_address, tm_httpd_port(s->httpd), tm_httpd_health_port(s->httpd),
            tm_httpd_is_tls(s->httpd) ? "on" : "off", cfg->extender_bind ? ",/bind" : "");
    s->loop = loop;
    sched_loop_on_view_change(loop, view_changed, s);
    return s;
fail:
    sched_server_free(s);
    return NULL;
}

int sched_server_port(const sched_server *s) {
    return tm_httpd_port(s->httpd);
}

void sched_server_free(sched_server *s) {
    if (!s)
        return;
    if (s->loop)
        sched_loop_on_view_change(s->loop, NULL, NULL);
    tm_httpd_free(s->httpd); /* stops and waits for handlers before the extender goes */
    sched_extender_free(s->ext);
    tm_auth_free(s->auth);
    free(s);
}
