/* framework.c: the framework object: its plugins (the policy's, the in-tree filters, the
 * caller's) and their registration, the per-node outcomes of the last cycle, the extender's
 * 0..10 scores, queue order and kube-scheduler-style failure messages. The cycles themselves
 * are in cycle.c (the flow), scan.c (the Filter pass) and permit.c (the waiting pods). This
 * file knows no plugin: the in-tree filters are registered by registry.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/framework/framework_internal.h"

sched_framework *sched_framework_new_empty(const sched_plugin *plugin, tm_err *err) {
    sched_framework *fw = calloc(1, sizeof *fw);
    if (!fw) {
        if (plugin->free_state)
            plugin->free_state(plugin->state);
        tm_err_set(err, "out of memory creating the scheduling framework");
        return NULL;
    }
    fw->plugins[0] = *plugin;
    fw->n_plugins = 1;
    fw->policy_weight = SCHED_POLICY_WEIGHT_DEFAULT;
    return fw;
}

void sched_framework_free(sched_framework *fw) {
    if (!fw)
        return;
    for (size_t k = fw->n_plugins; k-- > 0;)
        if (fw->plugins[k].free_state)
            fw->plugins[k].free_state(fw->plugins[k].state);
    for (size_t i = 0; i < fw->n_profiles; i++) /* the one in effect was plugins[0] */
        if (i != fw->cur_profile && fw->profiles[i].policy.free_state)
            fw->profiles[i].policy.free_state(fw->profiles[i].policy.state);
    free(fw->profiles);
    for (size_t i = 0; i < fw->n_waiting; i++)
        free(fw->waiting[i].uid);
    free(fw->waiting);
    free(fw->status);
    free(fw->detail);
    free(fw->score);
    free(fw->feas);
    free(fw->fscore);
    free(fw->part);
    free(fw->lent);
    free(fw);
}

const char *sched_framework_name(const sched_framework *fw) {
    return fw->plugins[0].name;
}

/* ---- registration ---- */

int sched_framework_add_plugin(sched_framework *fw, const sched_plugin *p, tm_err *err) {
    const char *why = !p->name || !*p->name                ? "a plugin without a name"
                      : fw->n_plugins >= SCHED_MAX_PLUGINS ? "too many plugins"
                                                           : NULL;
    for (size_t k = 0; !why && k < fw->n_plugins; k++)
        if (strcmp(fw->plugins[k].name, p->name) == 0)
            why = "a plugin of that name is already registered";
    if (why) {
        if (p->free_state)
            p->free_state(p->state);
        return tm_err_set(err, "add plugin %s: %s", p->name ? p->name : "(null)", why);
    }
    size_t k = fw->n_plugins++;
    fw->plugins[k] = *p;
    for (size_t i = 0; i < fw->n_profiles; i++) /* every profile starts at its default weight */
        fw->profiles[i].pref_weight[k] = p->pref_weight;
    fw->sid[k] = (uint8_t)(p->filter_id ? p->filter_id : SCHED_FILTER_PLUGIN + k);
    if (p->filter || p->pre_filter)
        fw->filt[fw->n_filt++] = (uint8_t)k;
    if (p->filter_id && p->filter_id < 32)
        fw->columns |= 1u << p->filter_id;
    return 0;
}

/* ---- profiles ---- */

static void save_profile(sched_framework *fw, fw_profile *pr) {
    pr->policy = fw->plugins[0];
    pr->policy_weight = fw->policy_weight;
    pr->tie_break = fw->tie_break;
    for (size_t k = 1; k < fw->n_plugins; k++)
        pr->pref_weight[k] = fw->plugins[k].pref_weight;
}

void fw_switch_profile(sched_framework *fw, size_t i) {
    if (i >= fw->n_profiles)
        i = 0;
    if (i == fw->cur_profile)
        return;
    save_profile(fw, &fw->profiles[fw->cur_profile]);
    const fw_profile *pr = &fw->profiles[i];
    fw->plugins[0] = pr->policy;
    fw->policy_weight = pr->policy_weight;
    fw->tie_break = pr->tie_break;
    for (size_t k = 1; k < fw->n_plugins; k++)
        fw->plugins[k].pref_weight = pr->pref_weight[k];
    fw->cur_profile = i; /* the last cycle's outcomes stay readable: they are its pod's */
}

int sched_framework_add_profile(sched_framework *fw, const sched_plugin *policy, tm_err *err) {
    const sched_plugin *first = fw->n_profiles ? &fw->profiles[0].policy : &fw->plugins[0];
    const char *why = fw->n_profiles >= SCHED_MAX_PROFILES ? "too many profiles"
                      : policy->queue_cmp != first->queue_cmp
                          ? "its policy orders the queue differently from the first profile's "
                            "(one queue serves every profile, as kube-scheduler's profiles share "
                            "one QueueSort plugin)"
                          : NULL;
    fw_profile *grown = why ? NULL
                            : realloc(fw->profiles, (fw->n_profiles ? fw->n_profiles + 1 : 2) *
                                                        sizeof *fw->profiles);
    if (!why && !grown)
        why = "out of memory";
    if (why) {
        if (policy->free_state)
            policy->free_state(policy->state);
        return tm_err_set(err, "profile with policy %s: %s", policy->name ? policy->name : "(null)",
                          why);
    }
    fw->profiles = grown;
    if (!fw->n_profiles) { /* the framework's own policy and weights become profile 0 */
        memset(&fw->profiles[0], 0, sizeof fw->profiles[0]);
        save_profile(fw, &fw->profiles[0]);
        fw->n_profiles = 1;
        fw->cur_profile = 0;
    }
    size_t i = fw->n_profiles++;
    fw_profile *pr = &fw->profiles[i];
    memset(pr, 0, sizeof *pr);
    pr->policy = *policy;
    pr->policy_weight = SCHED_POLICY_WEIGHT_DEFAULT;
    pr->tie_break = fw->cur_profile == 0 ? fw->tie_break : fw->profiles[0].tie_break;
    for (size_t k = 1; k < fw->n_plugins; k++) /* the weights of profile 0 as it was set up */
        pr->pref_weight[k] =
            fw->cur_profile == 0 ? fw->plugins[k].pref_weight : fw->profiles[0].pref_weight[k];
    if (fw->cur_profile == 0)
        pr->policy_weight = fw->policy_weight;
    else
        pr->policy_weight = fw->profiles[0].policy_weight;
    return (int)i;
}

int sched_framework_use_profile(sched_framework *fw, size_t i, tm_err *err) {
    if (i && i >= fw->n_profiles)
        return tm_err_set(err, "no profile %zu (the framework has %zu)", i,
                          fw->n_profiles ? fw->n_profiles : 1);
    if (fw->n_profiles)
        fw_switch_profile(fw, i);
    return 0;
}

size_t sched_framework_profile_count(const sched_framework *fw) {
    return fw->n_profiles ? fw->n_profiles : 1;
}

void *sched_framework_plugin_state(const sched_framework *fw, const char *name) {
    for (size_t k = 0; name && k < fw->n_plugins; k++)
        if (strcmp(fw->plugins[k].name, name) == 0)
            return fw->plugins[k].state;
    return NULL;
}

/* The added plugin with preference scoring called name, NULL when none. */
static sched_plugin *pref_plugin(const sched_framework *fw, const char *name) {
    for (size_t k = 1; k < fw->n_plugins; k++)
        if (fw->plugins[k].pref_score && strcmp(fw->plugins[k].name, name) == 0)
            return (sched_plugin *)&fw->plugins[k];
    return NULL;
}

int sched_framework_set_score_weight(sched_framework *fw, const char *plugin, int weight,
                                     tm_err *err) {
    sched_plugin *pl = strcmp(plugin, "policy") == 0 ? NULL : pref_plugin(fw, plugin);
    if (!pl && strcmp(plugin, "policy") != 0)
        return tm_err_set(err,
                          "scoreWeights.%s: no such score plugin (policy, NodeAffinity, "
                          "TaintToleration, PodTopologySpread, InterPodAffinity, "
                          "NodeResourcesBalancedAllocation, ImageLocality)",
                          plugin);
    if (weight < 0 || weight > SCHED_SCORE_WEIGHT_MAX)
        return tm_err_set(err, "scoreWeights.%s: weight %d is not in 0..%d", plugin, weight,
                          SCHED_SCORE_WEIGHT_MAX);
    if (pl)
        pl->pref_weight = weight;
    else
        fw->policy_weight = weight;
    return 0;
}

int sched_framework_score_weight(const sched_framework *fw, const char *plugin) {
    if (strcmp(plugin, "policy") == 0)
        return fw->policy_weight;
    const sched_plugin *pl = pref_plugin(fw, plugin);
    return pl ? pl->pref_weight : -1;
}

size_t sched_framework_score_parts(const sched_framework *fw, size_t node, const char **names,
                                   int64_t *parts, size_t max) {
    if (!fw->have_cycle || !fw->prefs || node >= fw->n_nodes || fw->status[node] != SCHED_FILTER_OK)
        return 0;
    size_t k = 0;
    while (fw->feas[k] != node)
        k++; /* feasible, so listed */
    size_t np = fw->n_plugins, n = 0;
    for (size_t j = 0; j < np && n < max; j++) {
        if (j && !fw->pref[j])
            continue;
        names[n] = j ? fw->plugins[j].name : "policy";
        parts[n++] = fw->part[k * np + j];
    }
    return n;
}

void sched_framework_set_tie_break(sched_framework *fw, bool on) {
    fw->tie_break = on;
}

size_t sched_framework_tie_parts(const sched_framework *fw, size_t node, const char **names,
                                 int64_t *parts, size_t max) {
    if (!fw->have_cycle || fw->prefs || !fw->secondary || !fw->tie_break || node >= fw->n_nodes ||
        fw->status[node] != SCHED_FILTER_OK)
        return 0;
    const sched_node *n = sched_snapshot_node(fw->cyc.snap, node);
    size_t k = 0;
    for (size_t j = 1; n && j < fw->n_plugins && k < max; j++) {
        const sched_plugin *pl = &fw->plugins[j];
        if (!pl->pref_secondary || !fw->pref[j])
            continue;
        names[k] = pl->name;
        parts[k++] = pl->pref_weight * pl->pref_score(pl->state, &fw->cyc, n);
    }
    return k;
}

const char *const sched_score_weight_keys[SCHED_SCORE_WEIGHT_KEYS + 1] = {
    "policy",           "NodeAffinity",
    "TaintToleration",  "PodTopologySpread",
    "InterPodAffinity", "NodeResourcesBalancedAllocation",
    "ImageLocality",    NULL};

const uint32_t *sched_framework_feasible(const sched_framework *fw, size_t *n) {
    *n = fw->n_feas;
    return fw->feas;
}

sched_score_weights sched_score_weights_default(void) {
    sched_score_weights ws;
    for (size_t k = 0; k < SCHED_SCORE_WEIGHT_KEYS; k++)
        ws.w[k] = -1;
    ws.tie_break = -1;
    return ws;
}

int sched_framework_apply_weights(sched_framework *fw, const sched_score_weights *ws, tm_err *err) {
    if (ws && ws->tie_break >= 0)
        fw->tie_break = ws->tie_break > 0;
    for (size_t k = 0; ws && k < SCHED_SCORE_WEIGHT_KEYS; k++) {
        const char *key = sched_score_weight_keys[k];
        if (ws->w[k] < 0 || (k && !pref_plugin(fw, key)))
            continue;
        if (sched_framework_set_score_weight(fw, key, ws->w[k], err) != 0)
            return -1;
    }
    return 0;
}

/* The plugin whose rejections carry status id (in-tree or added), NULL when none. */
static const sched_plugin *filter_plugin(const sched_framework *fw, sched_filter_id id) {
    for (size_t f = 0; id != SCHED_FILTER_OK && f < fw->n_filt; f++)
        if (fw->sid[fw->filt[f]] == (uint8_t)id)
            return &fw->plugins[fw->filt[f]];
    return NULL;
}

const char *sched_framework_filter_name(const sched_framework *fw, sched_filter_id id) {
    const sched_plugin *pl = filter_plugin(fw, id);
    return pl ? pl->name : "";
}

/* A Filter plugin's reason text: node_reason, else filter_reason, else a generic one. */
static void plugin_reason(const sched_plugin *pl, const sched_cycle *c, const sched_node *n,
                          uint32_t detail, char *buf, size_t size) {
    if (pl->node_reason)
        pl->node_reason(pl->state, c, n, detail, buf, size);
    else if (pl->filter_reason)
        pl->filter_reason(pl->state, c, detail, buf, size);
    else
        snprintf(buf, size, "node(s) were rejected by plugin %s", pl->name);
}

char *sched_framework_node_reason(const sched_framework *fw, size_t node, char *buf, size_t size) {
    if (!size)
        return buf;
    buf[0] = '\0';
    uint32_t detail;
    sched_filter_id id = sched_framework_node_status(fw, node, &detail, NULL);
    const sched_plugin *pl = filter_plugin(fw, id);
    if (pl)
        plugin_reason(pl, &fw->cyc, sched_snapshot_node(fw->cyc.snap, node), detail, buf, size);
    return buf;
}

/* The what-if's own reason: its cycle (fw->cyc while a what-if runs) is the one the plugin's
 * reason must read, not the failed cycle's outcomes that node_reason answers for. */
char *sched_framework_whatif_reason(const sched_framework *fw, size_t node, sched_filter_id id,
                                    uint32_t detail, char *buf, size_t size) {
    if (!size)
        return buf;
    buf[0] = '\0';
    const sched_plugin *pl = filter_plugin(fw, id);
    if (pl && fw->whatif)
        plugin_reason(pl, &fw->cyc, sched_snapshot_node(fw->cyc.snap, node), detail, buf, size);
    return buf;
}

/* ---- outcomes of the last cycle ---- */

int fw_ensure_cap(sched_framework *fw, size_t n, tm_err *err) {
    if (n <= fw->cap)
        return 0;
    size_t ncap = fw->cap ? fw->cap : 64;
    while (ncap < n)
        ncap *= 2;
    uint8_t *st = realloc(fw->status, ncap * sizeof *st);
    if (st)
        fw->status = st;
    uint32_t *de = realloc(fw->detail, ncap * sizeof *de);
    if (de)
        fw->detail = de;
    int64_t *sc = realloc(fw->score, ncap * sizeof *sc);
    if (sc)
        fw->score = sc;
    uint32_t *fe = realloc(fw->feas, ncap * sizeof *fe);
    if (fe)
        fw->feas = fe;
    int64_t *fs = realloc(fw->fscore, ncap * sizeof *fs);
    if (fs)
        fw->fscore = fs;
    int64_t *pa = realloc(fw->part, ncap * SCHED_MAX_PLUGINS * sizeof *pa);
    if (pa)
        fw->part = pa;
    if (!st || !de || !sc || !fe || !fs || !pa)
        return tm_err_set(err, "out of memory for %zu nodes", n);
    fw->cap = ncap;
    return 0;
}

sched_filter_id sched_framework_node_status(const sched_framework *fw, size_t node,
                                            uint32_t *detail, int64_t *score) {
    if (!fw->have_cycle || node >= fw->n_nodes) {
        if (detail)
            *detail = 0;
        return SCHED_FILTER_COUNT;
    }
    if (detail)
        *detail = fw->detail[node];
    if (score)
        *score = fw->status[node] == SCHED_FILTER_OK ? fw->score[node] : 0;
    return (sched_filter_id)fw->status[node];
}

const sched_cycle *sched_framework_last_cycle(const sched_framework *fw) {
    return fw->have_cycle ? &fw->cyc : NULL;
}

int sched_framework_extender_score(const sched_framework *fw, size_t node) {
    if (!fw->have_cycle || node >= fw->n_nodes || fw->status[node] != SCHED_FILTER_OK)
        return -1;
    int64_t raw = fw->score[node];
    const sched_node *n = sched_snapshot_node(fw->cyc.snap, node);
    int v;
    /* with preferences the raw score is the weighted sum, not the policy's own: linear */
    if (fw->plugins[0].extender_score && !fw->prefs) {
        v = fw->plugins[0].extender_score(fw->plugins[0].state, &fw->cyc, n, raw, fw->min_score,
                                          fw->max_score);
    } else if (fw->max_score == fw->min_score) {
        v = 10;
    } else {
        double x = (double)(raw - fw->min_score) / (double)(fw->max_score - fw->min_score);
        v = (int)(x * 10.0 + 0.5);
    }
    return v < 0 ? 0 : v > 10 ? 10 : v;
}

static int cmp_str(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "");
}

/* ---- QueueSort ---- */

int sched_framework_queue_order(const sched_framework *fw, const sched_snapshot *s,
                                const sched_pod *a, const sched_pod *b) {
    /* Priority is a contract, whatever the policy: a pod of higher priority goes first (as
     * kube-scheduler's PrioritySort); a plugin's order (sjfn's shortest job, adaptive's longest
     * path, a gang's first-seen) only orders pods of one priority. */
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    int c = 0;
    for (size_t k = fw->n_plugins; k-- > 1 && !c;) /* added plugins, latest first */
        if (fw->plugins[k].queue_cmp)
            c = fw->plugins[k].queue_cmp(fw->plugins[k].state, s, a, b);
    if (c) {
        return c;
    } else if (fw->plugins[0].queue_cmp) {
        /* one order for every profile: the first's (their policies share the function;
         * sched_framework_add_profile) */
        const sched_plugin *q =
            fw->n_profiles && fw->cur_profile ? &fw->profiles[0].policy : &fw->plugins[0];
        c = q->queue_cmp(q->state, s, a, b);
    } else if (a->created_ms != b->created_ms) {
        c = a->created_ms < b->created_ms ? -1 : 1;
    }
    return c;
}

int sched_framework_queue_cmp(const sched_framework *fw, const sched_snapshot *s,
                              const sched_pod *a, const sched_pod *b) {
    int c = sched_framework_queue_order(fw, s, a, b);
    if (c || (c = cmp_str(a->ns, b->ns)) != 0 || (c = cmp_str(a->name, b->name)) != 0)
        return c;
    return cmp_str(a->uid, b->uid);
}

/* ---- FailedScheduling message ---- */

typedef struct reason_count {
    char text[192];
    size_t count;
} reason_count;

/* Counts text once more; returns its index in *rs, -1 when out of memory. */
static int add_reason(reason_count **rs, size_t *n, size_t *cap, const char *text) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*rs)[i].text, text) == 0) {
            (*rs)[i].count++;
            return (int)i;
        }
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        reason_count *nr = realloc(*rs, ncap * sizeof *nr);
        if (!nr)
            return -1;
        *rs = nr;
        *cap = ncap;
    }
    snprintf((*rs)[*n].text, sizeof(*rs)[*n].text, "%s", text);
    (*rs)[*n].count = 1;
    return (int)(*n)++;
}

/* NodeResourcesFit's reasons for the resources kept sparsely node n is short of (snapshot.h),
 * "Insufficient A, Insufficient B": each counted as a reason of its own, as kube-scheduler
 * counts each short resource. */
static void sparse_reasons(const sched_plugin *pl, const sched_cycle *c, const sched_node *n,
                           reason_count **rs, size_t *nr, size_t *cap) {
    char text[512];
    text[0] = '\0';
    plugin_reason(pl, c, n, SCHED_FIT_SPARSE, text, sizeof text);
    for (char *part = text, *next; part && *part; part = next) {
        next = strstr(part, ", ");
        if (next) {
            *next = '\0';
            next += 2;
        }
        add_reason(rs, nr, cap, part);
    }
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the in-tree filter of plugin k reads more than its node's own pods: spread, inter-pod
 * terms, volumes (a pod leaving another node can change its verdict, and so what preemption can
 * do). Host ports are the node's own; added plugins (reservations, backfill, gangs) answer to
 * their own events (a reservation's tick moves every pod). */
static bool reads_other_nodes(const sched_framework *fw, size_t k) {
    sched_filter_id id = fw->plugins[k].filter_id;
    return id && id != SCHED_FILTER_NODE_PORTS;
}

bool sched_framework_capacity_only(const sched_framework *fw) {
    if (!fw->have_cycle)
        return false;
    /* such a filter ran for the pod, or would have after NodeResourcesFit's rejection (a node's
     * status names the first filter only) */
    for (size_t h = 0; h < fw->n_hook_pre; h++)
        if (reads_other_nodes(fw, fw->hook_pre[h]))
            return false;
    for (size_t h = 0; h < fw->n_hook_post; h++)
        if (reads_other_nodes(fw, fw->hook_post[h]))
            return false;
    for (size_t f = 0; f < fw->n_filt; f++)
        if (fw->reject_all[fw->filt[f]])
            return false;
    bool short_somewhere = false;
    for (size_t i = 0; i < fw->n_nodes; i++)
        switch ((sched_filter_id)fw->status[i]) {
        case SCHED_FILTER_RESOURCES:
            short_somewhere = true;
            break;
        case SCHED_FILTER_NODE_READY: /* node-only: no pod's leaving changes them */
        case SCHED_FILTER_NODE_UNSCHEDULABLE:
        case SCHED_FILTER_TAINT:
        case SCHED_FILTER_NODE_AFFINITY:
            break;
        default: /* fits, or held back by other pods, volumes or a plugin */
            return false;
        }
    return short_somewhere;
}

char *sched_framework_fit_message(const sched_framework *fw, const sched_snapshot *s, char *buf,
                                  size_t size) {
    if (!size)
        return buf;
    if (!fw->have_cycle || fw->n_nodes == 0) {
        snprintf(buf, size, "no nodes available to schedule pods");
        return buf;
    }
    reason_count *rs = NULL;
    size_t nr = 0, cap = 0, feasible = 0;
    /* a short resource's text depends on the resource alone: made once, then counted (on a
     * full cluster every node says "Insufficient cpu") */
    int bit_reason[31];
    for (int b = 0; b < 31; b++)
        bit_reason[b] = -1;
    for (size_t i = 0; i < fw->n_nodes; i++) {
        sched_filter_id id = (sched_filter_id)fw->status[i];
        if (id == SCHED_FILTER_OK) {
            feasible++;
            continue;
        }
        char one[192];
        const sched_plugin *pl = id == SCHED_FILTER_RESOURCES ? filter_plugin(fw, id) : NULL;
        if (pl) {                        /* each short resource is its own reason */
            for (int b = 0; b < 31; b++) /* every bit NodeResourcesFit uses (sched_fit_bit) */
                if (fw->detail[i] & (1u << b)) {
                    if ((1u << b) == SCHED_FIT_SPARSE) { /* which ones differs per node */
                        sparse_reasons(pl, &fw->cyc, sched_snapshot_node(s, i), &rs, &nr, &cap);
                        continue;
                    }
                    if (bit_reason[b] >= 0) {
                        rs[bit_reason[b]].count++;
                        continue;
                    }
                    plugin_reason(pl, &fw->cyc, NULL, 1u << b, one, sizeof one);
                    bit_reason[b] = add_reason(&rs, &nr, &cap, one);
                }
        } else {
            sched_framework_node_reason(fw, i, one, sizeof one);
            add_reason(&rs, &nr, &cap, one);
        }
    }
    /* kube-scheduler sorts the "N reason" strings themselves */
    char **lines = calloc(nr ? nr : 1, sizeof *lines);
    size_t len = (size_t)snprintf(buf, size, "%zu/%zu nodes are available", feasible, fw->n_nodes);
    for (size_t i = 0; lines && i < nr; i++) {
        lines[i] = malloc(224);
        if (lines[i])
            snprintf(lines[i], 224, "%zu %s", rs[i].count, rs[i].text);
    }
    if (lines) {
        size_t ok = 0;
        for (size_t i = 0; i < nr; i++)
            if (lines[i])
                lines[ok++] = lines[i];
        qsort(lines, ok, sizeof *lines, cmp_cstr);
        for (size_t i = 0; i < ok; i++) {
            if (len < size)
                len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : ": ", lines[i]);
            free(lines[i]);
        }
        if (len < size)
            snprintf(buf + len, size - len, ".");
    }
    free(lines);
    free(rs);
    return buf;
}

/* ---- timing (framework.h) ---- */

const char *const sched_ext_point_names[SCHED_EP_COUNT] = {
    [SCHED_EP_PRE_FILTER] = "PreFilter",
    [SCHED_EP_FILTER] = "Filter",
    [SCHED_EP_POST_FILTER] = "PostFilter",
    [SCHED_EP_PRE_SCORE] = "PreScore",
    [SCHED_EP_SCORE] = "Score",
    [SCHED_EP_RESERVE] = "Reserve",
    [SCHED_EP_UNRESERVE] = "Unreserve",
    [SCHED_EP_PERMIT] = "Permit",
    [SCHED_EP_PRE_BIND] = "PreBind",
    [SCHED_EP_BIND] = "Bind",
};

void sched_framework_set_observer(sched_framework *fw, const sched_observer *obs) {
    fw->obs = obs && obs->now_ns ? obs : NULL;
}

void sched_framework_sample(sched_framework *fw, bool on) {
    fw->sample = on;
}
