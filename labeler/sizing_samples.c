/* sizing_samples.c: see sizing_samples.h. */
#include "labeler/sizing_samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lab_sizing_plan(const lab_sample *v, size_t n, const char *process, const sz_plan_opts *o,
                    sz_plan *out, tm_err *err) {
    double *buf = malloc(3 * (n ? n : 1) * sizeof *buf);
    if (!buf)
        return tm_err_set(err, "sizing plan of %s: out of memory for %zu samples", process, n);
    double *cores = buf, *bytes = buf + n, *runtime = buf + 2 * n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].process || strcmp(v[i].process, process) != 0)
            continue;
        cores[k] = v[i].value[LAB_CPU] / 100.0; /* NaN stays NaN: skipped by the plan */
        bytes[k] = v[i].value[LAB_MEM];
        runtime[k] = v[i].realtime_ms;
        k++;
    }
    int rc = sz_plan_build(out, o, cores, bytes, runtime, k, err);
    free(buf);
    return rc;
}

json_t *lab_sizing_status(const lab_sample *v, size_t n, const char *process) {
    sz_plan_opts o;
    sz_plan_opts_default(&o, 16, 64.0 * 1073741824);
    sz_plan p;
    tm_err err = {{0}, 0};
    if (lab_sizing_plan(v, n, process, &o, &p, &err) < 0)
        return json_null();
    json_t *j = sz_plan_json(&p);
    sz_plan_free(&p);
    return j ? j : json_null();
}
