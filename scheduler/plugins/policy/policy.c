/* policy.c: the policy registry: --policy NAME -> a framework with that scoring plugin. */
#include "scheduler/plugins/policy/policy.h"

#include <string.h>

typedef struct policy_entry {
    const char *name;
    int (*make)(sched_plugin *out);
} policy_entry;

static const policy_entry policies[] = {
    {"tarema", sched_plugin_tarema}, {"round-robin", sched_plugin_round_robin},
    {"fair", sched_plugin_fair},     {"fill-nodes", sched_plugin_fill_nodes},
    {"sjfn", sched_plugin_sjfn},     {"adaptive", sched_plugin_adaptive},
};

static const char *const policy_names[] = {"tarema", "round-robin", "fair", "fill-nodes",
                                           "sjfn",   "adaptive",    NULL};

const char *const *sched_policy_names(void) {
    return policy_names;
}

int sched_policy_plugin(const char *name, sched_plugin *out, tm_err *err) {
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        if (!name || strcmp(name, policies[i].name) != 0)
            continue;
        if (policies[i].make(out) != 0)
            return tm_err_set(err, "out of memory creating policy %s", name);
        return 0;
    }
    return tm_err_set(err,
                      "unknown scheduling policy \"%s\": use one of tarema, round-robin, fair, "
                      "fill-nodes, sjfn, adaptive",
                      name ? name : "(null)");
}

sched_framework *sched_policy_new(const char *name, tm_err *err) {
    sched_plugin pl;
    return sched_policy_plugin(name, &pl, err) == 0 ? sched_framework_new(&pl, err) : NULL;
}
