/* sim_workload_fuzz.c: fuzzes the simulator's workload YAML loader (sim/model.h) against a
 * fixed two-type cluster, with measurement files resolved in tests/fixtures/sim (only plain
 * file names there are let through, so no input reads other files). An accepted workload must
 * give every process a finite positive runtime on every node type. */
#include <math.h>

#include "fuzz/fuzz_util.h"
#include "lib/yamljson.h"
#include "sim/model.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static const char sim_workload_cluster[] =
    "node_types:\n"
    "  - {name: slow, count: 1, cores: 4, memory: 8Gi, bench: {cpu: 200, mem: 8000, io: 500}}\n"
    "  - {name: fast, count: 1, cores: 4, memory: 8Gi, bench: {cpu: 400, mem: 16000, io: 500}}\n";

/* Whether every measurements[].file names a plain file of the fixture directory. */
static int sim_workload_files_ok(const json_t *root) {
    size_t i, k;
    json_t *wf, *m;
    json_array_foreach(json_object_get(root, "workflows"), i, wf) {
        json_array_foreach(json_object_get(wf, "measurements"), k, m) {
            const json_t *f = json_object_get(m, "file");
            if (!json_is_string(f))
                continue; /* the loader reports it */
            const char *s = json_string_value(f);
            if (!*s || *s == '.' ||
                strspn(s, "abcdefghijklmnopqrstuvwxyz-_.0123456789") != strlen(s))
                return 0;
        }
    }
    return 1;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    json_t *root = tm_yaml_parse((const char *)data, size, "fuzz-workload.yaml", &err);
    if (!root)
        return 0;
    if (!sim_workload_files_ok(root)) {
        json_decref(root);
        return 0;
    }
    json_t *cj =
        tm_yaml_parse(sim_workload_cluster, sizeof sim_workload_cluster - 1, "cluster", &err);
    sim_cluster *c = cj ? sim_cluster_from_json(cj, "cluster", 1, &err) : NULL;
    FZ_CHECK(c != NULL);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/sim", fz_repo_root());
    sim_workload *w = c ? sim_workload_from_json(root, "fuzz-workload.yaml", dir, c, &err) : NULL;
    if (c && !w)
        FZ_CHECK(err.msg[0] != '\0');
    for (int i = 0; w && i < w->nworkflows; i++) {
        const sim_workflow *wf = &w->wfs[i];
        for (int p = 0; p < wf->nprocs; p++) {
            const sim_process *pr = &wf->procs[p];
            FZ_CHECK(pr->instances >= 1);
            for (int a = 0; a < pr->nall; a++)
                FZ_CHECK(pr->after_all[a] >= 0 && pr->after_all[a] < p); /* topological */
            for (int a = 0; a < pr->neach; a++)
                FZ_CHECK(pr->after_each[a] >= 0 && pr->after_each[a] < p);
            for (int inst = 0; inst < pr->instances && inst < 4; inst++)
                for (int t = 0; t < c->ntypes; t++) {
                    double rt = sim_runtime(c, wf, pr, inst, t);
                    if (!(isfinite(rt) && rt >= 0)) {
                        fprintf(stderr, "%s/%s[%d] on %s: runtime %g\n", wf->name, pr->name, inst,
                                c->types[t].name, rt);
                        FZ_FAIL("an accepted workload has a runtime that is not finite and >= 0");
                    }
                    sim_usage(c, wf, pr, inst, t);
                }
        }
    }
    sim_workload_free(w);
    sim_cluster_free(c);
    json_decref(cj);
    json_decref(root);
    return 0;
}
