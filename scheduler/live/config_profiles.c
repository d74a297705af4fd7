/* config_profiles.c: the scheduler config's profiles (config.h, docs/profiles.md): several
 * spec.schedulerName values served by one process, each with its policy and score weights, as
 * kube-scheduler's profiles. The first profile is the top level's; these are the others. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/live/config.h"
#include "scheduler/plugins/policy/policy.h"

static void free_profile(sched_profile *p) {
    free(p->scheduler_name);
    free(p->policy);
}

int sched_config_refresh_profiles(sched_config *c) {
    free(c->profile_names);
    c->profile_names = NULL;
    if (!c->n_profiles)
        return 0;
    if (!(c->profile_names = calloc(c->n_profiles + 2, sizeof *c->profile_names)))
        return -1;
    c->profile_names[0] = c->scheduler_name;
    for (size_t i = 0; i < c->n_profiles; i++)
        c->profile_names[i + 1] = c->profiles[i].scheduler_name;
    return 0;
}

void sched_config_clear_profiles(sched_config *c) {
    for (size_t i = 0; i < c->n_profiles; i++)
        free_profile(&c->profiles[i]);
    free(c->profiles);
    free(c->profile_names);
    c->profiles = NULL;
    c->profile_names = NULL;
    c->n_profiles = 0;
}

/* Appends p (taken over, also on error). */
static int append(sched_config *c, sched_profile *p, tm_err *err) {
    sched_profile *grown = realloc(c->profiles, (c->n_profiles + 1) * sizeof *grown);
    if (!grown) {
        free_profile(p);
        return tm_err_set(err, "out of memory");
    }
    c->profiles = grown;
    c->profiles[c->n_profiles++] = *p;
    return sched_config_refresh_profiles(c) ? tm_err_set(err, "out of memory") : 0;
}

static int check_policy(const char *policy, const char *where, tm_err *err) {
    sched_plugin pl;
    tm_err e = {0};
    if (sched_policy_plugin(policy, &pl, &e) != 0)
        return tm_err_set(err, "%s: policy: %s", where, e.msg);
    if (pl.free_state)
        pl.free_state(pl.state);
    return 0;
}

int sched_config_apply_profiles(sched_config *c, const json_t *v, const char *what, tm_err *err) {
    static const char *const keys[] = {"schedulerName", "policy", "scoreWeights", NULL};
    if (!json_is_array(v))
        return tm_err_set(
            err, "%s: profiles must be a list of {schedulerName, policy, scoreWeights}", what);
    if (json_array_size(v) + 1 > SCHED_MAX_PROFILES)
        return tm_err_set(err, "%s: profiles: %zu profiles, at most %d beside the first", what,
                          json_array_size(v), SCHED_MAX_PROFILES - 1);
    sched_config_clear_profiles(c);
    size_t i;
    const json_t *e;
    json_array_foreach(v, i, e) {
        char where[256];
        snprintf(where, sizeof where, "%s: profiles[%zu]", what, i);
        if (!json_is_object(e))
            return tm_err_set(err, "%s must be a mapping", where);
        if (tm_json_check_keys(e, keys, where, err))
            return -1;
        const json_t *n = json_object_get(e, "schedulerName"), *pol = json_object_get(e, "policy");
        if (!json_is_string(n) || !json_string_value(n)[0])
            return tm_err_set(err, "%s: schedulerName must be a non-empty string", where);
        if (pol && !json_is_null(pol) && !json_is_string(pol))
            return tm_err_set(err, "%s: policy must be a string", where);
        const char *policy = json_is_string(pol) ? json_string_value(pol) : NULL;
        if (policy && check_policy(policy, where, err))
            return -1;
        sched_profile p = {.scheduler_name = strdup(json_string_value(n)),
                           .policy = policy ? strdup(policy) : NULL,
                           .score_weights = sched_score_weights_default()};
        if (!p.scheduler_name || (policy && !p.policy)) {
            free_profile(&p);
            return tm_err_set(err, "out of memory");
        }
        if (sched_config_parse_weights(json_object_get(e, "scoreWeights"), &p.score_weights, where,
                                       err)) {
            free_profile(&p);
            return -1;
        }
        if (append(c, &p, err))
            return -1;
    }
    return 0;
}

int sched_config_add_profile_flag(sched_config *c, const char *arg, tm_err *err) {
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    if (!nlen || (eq && !eq[1]))
        return tm_err_set(err, "--profile '%s': use NAME or NAME=POLICY", arg);
    if (c->n_profiles + 1 >= SCHED_MAX_PROFILES)
        return tm_err_set(err, "--profile '%s': at most %d profiles beside the first", arg,
                          SCHED_MAX_PROFILES - 1);
    if (eq && check_policy(eq + 1, "--profile", err))
        return -1;
    sched_profile p = {.scheduler_name = strndup(arg, nlen),
                       .policy = eq ? strdup(eq + 1) : NULL,
                       .score_weights = sched_score_weights_default()};
    if (!p.scheduler_name || (eq && !p.policy)) {
        free_profile(&p);
        return tm_err_set(err, "out of memory");
    }
    return append(c, &p, err);
}

sched_keys sched_config_keys(const sched_config *c) {
    return (sched_keys){.process_label = c->process_label,
                        .workflow_key = c->workflow_key,
                        .profiles = c->profile_names};
}

/* The weights of profile p: the top level's, with p's own over them. */
static sched_score_weights profile_weights(const sched_config *c, const sched_profile *p) {
    sched_score_weights ws = c->score_weights;
    for (size_t k = 0; k < SCHED_SCORE_WEIGHT_KEYS; k++)
        if (p->score_weights.w[k] >= 0)
            ws.w[k] = p->score_weights.w[k];
    if (p->score_weights.tie_break >= 0)
        ws.tie_break = p->score_weights.tie_break;
    return ws;
}

int sched_config_add_profiles(const sched_config *c, sched_framework *fw, tm_err *err) {
    for (size_t i = 0; i < c->n_profiles; i++) {
        const sched_profile *p = &c->profiles[i];
        const char *policy = p->policy ? p->policy : c->policy;
        sched_plugin pl;
        if (sched_policy_plugin(policy, &pl, err) != 0)
            return tm_err_wrap(err, "profile %s", p->scheduler_name);
        int idx = sched_framework_add_profile(fw, &pl, err);
        if (idx < 0)
            return tm_err_wrap(err, "profile %s", p->scheduler_name);
        sched_score_weights ws = profile_weights(c, p);
        int rc = sched_framework_use_profile(fw, (size_t)idx, err) ||
                 sched_framework_apply_weights(fw, &ws, err);
        sched_framework_use_profile(fw, 0, NULL);
        if (rc)
            return tm_err_wrap(err, "profile %s", p->scheduler_name);
    }
    return 0;
}
