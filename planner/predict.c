/* predict.c: walltimes from TaskProfiles and WARP's load threshold (predict.h). Pure. */
#include "planner/predict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "planner/occupancy.h"

/* The TaskProfile of workflow/process in profiles, or NULL. */
static const json_t *find_profile(const json_t *profiles, const char *workflow,
                                  const char *process) {
    size_t i;
    json_t *p;
    json_array_foreach(profiles, i, p) {
        if (!strcmp(tm_json_str(p, "spec.workflow", ""), workflow) &&
            !strcmp(tm_json_str(p, "spec.process", ""), process))
            return p;
    }
    return NULL;
}

int pl_predict_group_runtimes(pl_step *s, const json_t *profile) {
    s->ngroup_s = 0;
    const json_t *arr = json_object_get(json_object_get(profile, "status"), "runtimeByGroup");
    size_t i;
    const json_t *e;
    json_array_foreach(arr, i, e) {
        const char *g = json_string_value(json_object_get(e, "group"));
        const json_t *runs = json_object_get(e, "runs"), *mean = json_object_get(e, "meanSeconds");
        /* only measured groups: no runs, no group-specific claim (the step keeps its mean) */
        if (!g || !*g || strlen(g) >= sizeof s->group_s[0].group || !json_is_integer(runs) ||
            json_integer_value(runs) < 1 || !json_is_number(mean) ||
            !isfinite(json_number_value(mean)) || json_number_value(mean) < 0 ||
            json_number_value(mean) > 366.0 * 86400 || s->ngroup_s == PL_GROUPS_MAX)
            continue;
        int dup = 0;
        for (int k = 0; k < s->ngroup_s; k++)
            dup |= !strcmp(s->group_s[k].group, g);
        if (dup)
            continue;
        pl_group_time *gt = &s->group_s[s->ngroup_s++];
        snprintf(gt->group, sizeof gt->group, "%s", g);
        int64_t sec = (int64_t)ceil(json_number_value(mean));
        gt->seconds = sec < 1 ? 1 : sec;
    }
    return s->ngroup_s;
}

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
        if (rt > 0) {
            s->duration_s = rt;
            pl_predict_group_runtimes(s, find_profile(profiles, w, slash + 1));
        } else {
            missing++;
        }
    }
    return missing;
}

int64_t pl_step_seconds_on(const pl_step *s, const char *const *groups, int n) {
    int64_t w = 0;
    for (int k = 0; k < n; k++) {
        int64_t wk = s->duration_s;
        for (int g = 0; groups[k] && g < s->ngroup_s; g++)
            if (!strcmp(s->group_s[g].group, groups[k]) && s->group_s[g].seconds > 0)
                wk = s->group_s[g].seconds;
        if (wk > w)
            w = wk;
    }
    return n > 0 ? w : s->duration_s;
}

int64_t pl_step_seconds_max(const pl_step *s) {
    int64_t w = s->duration_s;
    for (int g = 0; g < s->ngroup_s; g++)
        if (s->group_s[g].seconds > w)
            w = s->group_s[g].seconds;
    return w;
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
