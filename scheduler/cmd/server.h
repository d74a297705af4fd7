/* server.h: tarema-scheduler's HTTP endpoints on lib/httpd: /healthz, /readyz (cache synced),
 * Prometheus /metrics, and the kube-scheduler extender routes (/filter, /prioritize, and /bind
 * only with extender.bind) answered from the live cache; with TLS, mTLS and a bearer token
 * when configured (scheduler/live/config.h), health and metrics also on healthPort.
 *
 * Threads: handlers run on httpd's threads. Health reads atomics of the loop; the extender
 * reads the snapshot under the cache lock (sched_cache_lock), the same lock the loop thread
 * holds while it changes the snapshot, so a handler never sees a half-applied event. */
#ifndef TAREMA_SCHED_SERVER_H
#define TAREMA_SCHED_SERVER_H

#include "lib/error.h"
#include "lib/kube.h"
#include "lib/metrics.h"
#include "scheduler/live/config.h"
#include "scheduler/live/loop.h"

typedef struct sched_server sched_server;

/* Serves on cfg->bind_address:cfg->port. loop, reg and k (for the extender's bind verb, a
 * synchronous call, safe from any thread) are borrowed and must outlive the server. NULL with
 * err (port taken, unknown policy). Free with sched_server_free (stops serving first). */
sched_server *sched_server_start(const sched_config *cfg, sched_loop *loop, tm_metrics *reg,
                                 tm_kube *k, tm_err *err);
int sched_server_port(const sched_server *s);
void sched_server_free(sched_server *s);

#endif
