/* schedconfig_fuzz.c: fuzzes the scheduler's YAML configuration (scheduler/live/config.h
 * sched_config_apply_json + sched_config_validate), what `tarema-scheduler --config` and the
 * chart's ConfigMap hand it. A rejected file names itself; a config that validates has the
 * values the scheduler later divides by and allocates with in range. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "lib/yamljson.h"
#include "scheduler/live/config.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    json_t *doc = tm_yaml_parse((const char *)data, size, "fuzz-sched.yaml", &err);
    if (!doc) {
        FZ_CHECK(strstr(err.msg, "fuzz-sched.yaml") != NULL);
        return 0;
    }
    sched_config *c = sched_config_new();
    if (!c) {
        json_decref(doc);
        return 0;
    }
    memset(&err, 0, sizeof err);
    if (sched_config_apply_json(c, doc, "fuzz-sched.yaml", &err) != 0) {
        FZ_CHECK(err.msg[0] != '\0');
    } else {
        FZ_CHECK(c->scheduler_name && c->policy && c->bind_address);
        FZ_CHECK(isfinite(c->qps) && c->qps >= 0);
        FZ_CHECK(c->n_namespaces == 0 || c->namespaces != NULL);
        for (size_t i = 0; i < c->n_namespaces; i++)
            FZ_CHECK(c->namespaces[i] != NULL);
        FZ_CHECK(c->namespaces == NULL || c->namespaces[c->n_namespaces] == NULL);
        memset(&err, 0, sizeof err);
        if (sched_config_validate(c, &err) == 0) {
            FZ_CHECK(c->port >= 0 && c->port <= 65535);
            FZ_CHECK(c->max_binds_in_flight > 0 && c->api_concurrency > 0);
            FZ_CHECK(c->pod_initial_backoff_ms > 0 &&
                     c->pod_initial_backoff_ms <= c->pod_max_backoff_ms);
            (void)sched_config_watches_namespace(c, "default");
        } else {
            FZ_CHECK(err.msg[0] != '\0');
        }
    }
    sched_config_free(c);
    json_decref(doc);
    return 0;
}
