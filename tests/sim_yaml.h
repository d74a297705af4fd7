/* sim_yaml.h: a simulated cluster or workload from YAML text, for the simulator's unit tests.
 * Each prints the loader's message and returns NULL when the text is refused. */
#ifndef TAREMA_TEST_SIM_YAML_H
#define TAREMA_TEST_SIM_YAML_H

#include <stdio.h>
#include <string.h>

#include "lib/yamljson.h"
#include "sim/engine.h"
#include "sim/model.h"

/* Two nodes with room for two 2-cpu tasks each; fast has twice slow's cpu and memory speed. */
#define SIM_YAML_TINY_CLUSTER                                                                      \
    "node_types:\n"                                                                                \
    "  - {name: slow, count: 1, cores: 4, memory: 8Gi,\n"                                          \
    "     bench: {cpu: 200, mem: 8000, io: 500}}\n"                                                \
    "  - {name: fast, count: 1, cores: 4, memory: 8Gi,\n"                                          \
    "     bench: {cpu: 400, mem: 16000, io: 500}}\n"

/* Workflow tiny, RUNS runs (a number, made a string): small (fast 4 s, slow 8 s), big (10/20),
 * mid (6/12), all ready at once; their usage makes labels differ once history exists. */
#define SIM_YAML_TINY_WORKLOAD(RUNS)                                                               \
    "workflows:\n"                                                                                 \
    "  - name: tiny\n"                                                                             \
    "    runs: " #RUNS "\n"                                                                        \
    "    requests: {cpu: 2, memory: 1Gi}\n"                                                        \
    "    processes:\n"                                                                             \
    "      - {name: small, instances: 1, runtime: {fast: 4, slow: 8},\n"                           \
    "         usage: {cpu_pct: 50, peak_rss: 100Mi}}\n"                                            \
    "      - {name: big, instances: 1, runtime: {fast: 10, slow: 20},\n"                           \
    "         usage: {cpu_pct: 200, peak_rss: 2Gi}}\n"                                             \
    "      - {name: mid, instances: 1, runtime: {fast: 6, slow: 12},\n"                            \
    "         usage: {cpu_pct: 100, peak_rss: 1Gi}}\n"

static inline sim_cluster *sim_yaml_cluster(const char *yaml) {
    tm_err err = {0};
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "cluster", &err);
    sim_cluster *c = j ? sim_cluster_from_json(j, "cluster", 1, &err) : NULL;
    json_decref(j);
    if (!c)
        printf("    cluster: %s\n", err.msg);
    return c;
}

static inline sim_workload *sim_yaml_workload(const char *yaml, const sim_cluster *c) {
    tm_err err = {0};
    json_t *j = tm_yaml_parse(yaml, strlen(yaml), "workload", &err);
    sim_workload *w = j && c ? sim_workload_from_json(j, "workload", NULL, c, &err) : NULL;
    json_decref(j);
    if (!w)
        printf("    workload: %s\n", err.msg);
    return w;
}

/* Both, from YAML text: true, or false (the message printed) with *c and *w as far as they
 * got; free them with sim_yaml_free either way. */
static inline bool sim_yaml_load(const char *cluster, const char *workload, sim_cluster **c,
                                 sim_workload **w) {
    *c = sim_yaml_cluster(cluster);
    *w = *c ? sim_yaml_workload(workload, *c) : NULL;
    return *w != NULL;
}

static inline void sim_yaml_free(sim_result *r, sim_workload *w, sim_cluster *c) {
    sim_result_free(r);
    sim_workload_free(w);
    sim_cluster_free(c);
}

#endif
