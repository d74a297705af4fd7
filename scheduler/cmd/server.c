/* server.c: health, readiness, metrics and extender routes of tarema-scheduler. */
#include "scheduler/cmd/server.h"

#include <stdlib.h>

#include "lib/duration.h"
#include "lib/auth.h"
#include "lib/httpd.h"
#include "lib/log.h"
#include "scheduler/cmd/extender.h"
#include "scheduler/live/backfill_live.h"
#include "scheduler/live/resv_controller.h"

struct sched_server {
    tm_httpd *httpd;
    sched_extender *ext;
    sched_cache *cache;
    resv_controller *resv;   /* the loop's: reservations honoured by /filter */
    sched_backfill_live *bf; /* the loop's backfill planner: its shadows kept by /filter */
    tm_kube *k;
    tm_auth *auth;
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

/* The extender's bind verb: a synchronous bind (thread-safe client call). */
static int ext_bind(void *ud, const char *ns, const char *name, const char *uid, const char *node,
                    tm_err *err) {
    sched_server *s = ud;
    return tm_kube_bind(s->k, ns, name, uid, node, err);
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
    if (!s->ext)
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
    tm_httpd_free(s->httpd); /* stops and waits for handlers before the extender goes */
    sched_extender_free(s->ext);
    tm_auth_free(s->auth);
    free(s);
}
