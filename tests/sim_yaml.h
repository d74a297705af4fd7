/* sim_yaml.h: a simulated cluster or workload from YAML text, for the simulator's unit tests.
 * Each prints the loader's message and returns NULL when the text is refused. */
#ifndef TAREMA_TEST_SIM_YAML_H
#define TAREMA_TEST_SIM_YAML_H

#include <stdio.h>
#include <string.h>

#include "lib/yamljson.h"
#include "sim/model.h"

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

#endif
