/* predict.c: walltimes from TaskProfiles and WARP's load threshold (predict.h). Pure. */
#include "planner/predict.h"

#include <string.h>

#include "planner/occupancy.h"

int pl_predict_durations(pl_workflow *wf, const json_t *profiles) {
    int missing = 0;
    for (int i = 0; i < wf->nsteps; i++) {
        pl_step *s = &wf->steps[i];
        if (!s->task[0])
            continue;
        char w[sizeof s->task];
        snprintf(w, sizeof w, "%s", s->task);
        char *slash = strchr(w, '/');
        if (!slash) {
            missing++;
            continue;
        }
        *slash = 0;
        int64_t rt = pl_profile_runtime(profiles, w, slash + 1);
        if (rt > 0)
            s->duration_s = rt;
        else
            missing++;
    }
    return missing;
}

double pl_predicted_load(const pl_problem *p, int window) {
    double held = 0, cap = 0;
    if (window < 1)
        window = 1;
    for (int n = 0; n < p->base.nnodes; n++)
        for (int u = 0; u < window; u++) {
            pl_cell c = pl_occ_get(&p->base, n, u);
            held += (double)p->base.full[n].cpu - (c.cpu > 0 ? c.cpu : 0);
            cap += p->base.full[n].cpu;
        }
    return cap > 0 ? held / cap : 0;
}
