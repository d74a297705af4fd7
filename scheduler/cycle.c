/* cycle.c: the extension points around Filter and Score: plugin registration, PreEnqueue,
 * PostFilter, Permit (allow, reject, wait with a timeout) and its waiting pods, Unreserve, and
 * the binding cycle (PreBind -> Bind, Unreserve on failure). Pure: the only I/O is whatever the
 * caller's Bind/PreBind hooks do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/framework_internal.h"

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
    fw->plugins[fw->n_plugins++] = *p;
    fw->any_filter |= p->pre_filter || p->filter;
    return 0;
}

void *sched_framework_plugin_state(const sched_framework *fw, const char *name) {
    for (size_t k = 0; name && k < fw->n_plugins; k++)
        if (strcmp(fw->plugins[k].name, name) == 0)
            return fw->plugins[k].state;
    return NULL;
}

static const sched_plugin *filter_plugin(const sched_framework *fw, sched_filter_id id) {
    size_t k = (size_t)id - SCHED_FILTER_PLUGIN;
    return id >= SCHED_FILTER_PLUGIN && k > 0 && k < fw->n_plugins ? &fw->plugins[k] : NULL;
}

const char *sched_framework_filter_name(const sched_framework *fw, sched_filter_id id) {
    const sched_plugin *pl = filter_plugin(fw, id);
    return pl ? pl->name : sched_filter_name(id);
}

char *sched_framework_node_reason(const sched_framework *fw, size_t node, char *buf, size_t size) {
    if (!size)
        return buf;
    buf[0] = '\0';
    uint32_t detail;
    sched_filter_id id = sched_framework_node_status(fw, node, &detail, NULL);
    const sched_plugin *pl = filter_plugin(fw, id);
    if (pl && pl->filter_reason)
        pl->filter_reason(pl->state, &fw->cyc, detail, buf, size);
    else if (pl)
        snprintf(buf, size, "node(s) were rejected by plugin %s", pl->name);
    else if (id != SCHED_FILTER_COUNT)
        sched_filter_reason(fw->cyc.snap, sched_snapshot_node(fw->cyc.snap, node), fw->cyc.pod, id,
                            detail, buf, size);
    return buf;
}

/* A cycle for the hooks that run outside sched_framework_schedule. */
static sched_cycle cycle_for(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                             int64_t now_ms) {
    sched_cycle c = {.snap = s, .pod = p, .now_ms = now_ms, .fw = fw};
    sched_task_resolve(s, p, &c.task);
    return c;
}

/* ---- PreEnqueue, PostFilter ---- */

sched_status sched_framework_pre_enqueue(sched_framework *fw, const sched_snapshot *s,
                                         const sched_pod *p, int64_t now_ms, char *msg,
                                         size_t size) {
    if (size)
        msg[0] = '\0';
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->pre_enqueue)
            continue;
        char why[256] = "";
        sched_status st = pl->pre_enqueue(pl->state, s, p, now_ms, why, sizeof why);
        if (st != SCHED_STATUS_OK) {
            if (size)
                snprintf(msg, size, "%s: %s", pl->name, why);
            return SCHED_STATUS_UNSCHEDULABLE;
        }
    }
    return SCHED_STATUS_OK;
}

sched_status sched_framework_post_filter(sched_framework *fw, int *nominated, tm_err *err) {
    *nominated = -1;
    if (!fw->have_cycle)
        return tm_err_set(err, "post-filter without a scheduling cycle"), SCHED_STATUS_ERROR;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->post_filter)
            continue;
        int node = -1;
        sched_status st = pl->post_filter(pl->state, &fw->cyc, &node, err);
        if (st == SCHED_STATUS_ERROR) {
            tm_err_wrap(err, "post-filter %s", pl->name);
            return st;
        }
        if (st == SCHED_STATUS_OK) {
            *nominated = node;
            return st;
        }
    }
    return SCHED_STATUS_UNSCHEDULABLE;
}

/* ---- Unreserve ---- */

void sched_framework_unreserve(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                               int64_t now_ms) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    sched_cycle c = cycle_for(fw, s, p, now_ms);
    for (size_t k = fw->n_plugins; k-- > 0;)
        if (fw->plugins[k].unreserve && n)
            fw->plugins[k].unreserve(fw->plugins[k].state, &c, n);
    if (fw->forget)
        fw->forget(fw->forget_arg, s, p->uid);
    else
        sched_snapshot_remove_pod(s, p->uid); /* -1 when absent: nothing was recorded */
}

void sched_framework_set_forget(sched_framework *fw,
                                void (*fn)(void *arg, sched_snapshot *s, const char *uid),
                                void *arg) {
    fw->forget = fn;
    fw->forget_arg = arg;
}

/* ---- Permit and the waiting pods ---- */

static fw_waiting *find_waiting(const sched_framework *fw, const char *uid) {
    for (size_t i = 0; uid && i < fw->n_waiting; i++)
        if (strcmp(fw->waiting[i].uid, uid) == 0)
            return &fw->waiting[i];
    return NULL;
}

static void drop_waiting(sched_framework *fw, fw_waiting *w) {
    free(w->uid);
    *w = fw->waiting[--fw->n_waiting]; /* order does not matter */
}

static size_t plugin_index(const sched_framework *fw, const char *name) {
    for (size_t k = 0; name && k < fw->n_plugins; k++)
        if (strcmp(fw->plugins[k].name, name) == 0)
            return k;
    return SIZE_MAX;
}

sched_status sched_framework_permit(sched_framework *fw, sched_snapshot *s, const sched_pod *p,
                                    int node, int64_t now_ms, int64_t *deadline_ms, char *msg,
                                    size_t size, tm_err *err) {
    if (size)
        msg[0] = '\0';
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n) {
        tm_err_set(err, "permit %s/%s: no node with index %d", p->ns, p->name, node);
        return SCHED_STATUS_ERROR;
    }
    if (find_waiting(fw, p->uid)) {
        tm_err_set(err, "permit %s/%s: the pod is already waiting", p->ns, p->name);
        return SCHED_STATUS_ERROR;
    }
    sched_cycle c = cycle_for(fw, s, p, now_ms);
    uint64_t pending = 0;
    int64_t deadline = INT64_MAX;
    for (size_t k = 0; k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (!pl->permit)
            continue;
        int64_t timeout = 0;
        char why[256] = "";
        sched_status st = pl->permit(pl->state, &c, n, &timeout, why, sizeof why);
        if (st == SCHED_STATUS_WAIT) {
            pending |= 1ull << k;
            int64_t d = now_ms + (timeout > 0 ? timeout : 0);
            deadline = d < deadline ? d : deadline;
        } else if (st != SCHED_STATUS_OK) { /* a reject (or a failing hook) ends it */
            if (size)
                snprintf(msg, size, "rejected by %s: %s", pl->name, why);
            sched_framework_unreserve(fw, s, p, node, now_ms);
            return SCHED_STATUS_UNSCHEDULABLE;
        }
    }
    if (!pending)
        return SCHED_STATUS_OK;
    if (fw->n_waiting == fw->cap_waiting) {
        size_t ncap = fw->cap_waiting ? fw->cap_waiting * 2 : 16;
        fw_waiting *nw = realloc(fw->waiting, ncap * sizeof *nw);
        if (!nw) {
            tm_err_set(err, "out of memory holding pod %s/%s in Permit", p->ns, p->name);
            return SCHED_STATUS_ERROR;
        }
        fw->waiting = nw;
        fw->cap_waiting = ncap;
    }
    char *uid = strdup(p->uid);
    if (!uid) {
        tm_err_set(err, "out of memory holding pod %s/%s in Permit", p->ns, p->name);
        return SCHED_STATUS_ERROR;
    }
    fw->waiting[fw->n_waiting++] = (fw_waiting){
        .uid = uid, .pod = p, .snap = s, .node = node, .deadline_ms = deadline, .pending = pending};
    if (deadline_ms)
        *deadline_ms = deadline;
    return SCHED_STATUS_WAIT;
}

int sched_framework_allow(sched_framework *fw, const char *uid, const char *plugin) {
    fw_waiting *w = find_waiting(fw, uid);
    if (!w)
        return -1;
    size_t k = plugin_index(fw, plugin);
    if (k < fw->n_plugins)
        w->pending &= ~(1ull << k);
    return 0;
}

int sched_framework_reject(sched_framework *fw, const char *uid, const char *plugin,
                           const char *msg) {
    fw_waiting *w = find_waiting(fw, uid);
    if (!w)
        return -1;
    if (!w->rejected)
        snprintf(w->msg, sizeof w->msg, "rejected by %s: %s", plugin ? plugin : "caller",
                 msg ? msg : "");
    w->rejected = true;
    return 0;
}

sched_status sched_framework_waiting_resolve(sched_framework *fw, const char *uid, int64_t now_ms,
                                             char *msg, size_t size) {
    if (size)
        msg[0] = '\0';
    fw_waiting *w = find_waiting(fw, uid);
    if (!w) {
        if (size)
            snprintf(msg, size, "pod %s is not waiting", uid ? uid : "(null)");
        return SCHED_STATUS_UNSCHEDULABLE;
    }
    if (!w->rejected && !w->pending) {
        drop_waiting(fw, w);
        return SCHED_STATUS_OK;
    }
    if (!w->rejected && now_ms < w->deadline_ms)
        return SCHED_STATUS_WAIT;
    if (!w->rejected) {
        size_t k = 0;
        while (k < fw->n_plugins && !(w->pending & (1ull << k)))
            k++;
        snprintf(w->msg, sizeof w->msg, "timed out waiting for %s after %lld ms",
                 k < fw->n_plugins ? fw->plugins[k].name : "permit",
                 (long long)(now_ms - w->deadline_ms));
    }
    if (size)
        snprintf(msg, size, "%s", w->msg);
    fw_waiting held = *w;
    drop_waiting(fw, w); /* before unreserve: a hook may look at the waiting pods */
    sched_framework_unreserve(fw, held.snap, held.pod, held.node, now_ms);
    return SCHED_STATUS_UNSCHEDULABLE;
}

void sched_framework_waiting_each(const sched_framework *fw,
                                  void (*fn)(void *arg, const sched_pod *p, int node,
                                             int64_t deadline_ms),
                                  void *arg) {
    for (size_t i = 0; i < fw->n_waiting; i++)
        fn(arg, fw->waiting[i].pod, fw->waiting[i].node, fw->waiting[i].deadline_ms);
}

size_t sched_framework_waiting_count(const sched_framework *fw) {
    return fw->n_waiting;
}

int sched_framework_waiting_forget(sched_framework *fw, const char *uid) {
    fw_waiting *w = find_waiting(fw, uid);
    if (!w)
        return -1;
    drop_waiting(fw, w);
    return 0;
}

/* ---- binding cycle ---- */

int sched_framework_bind(sched_framework *fw, sched_snapshot *s, const sched_pod *p, int node,
                         int64_t now_ms, tm_err *err) {
    const sched_node *n = sched_snapshot_node(s, (size_t)node);
    if (!n)
        return tm_err_set(err, "bind %s/%s: no node with index %d", p->ns, p->name, node);
    tm_err_clear(err); /* a hook may fail without a message */
    sched_cycle c = cycle_for(fw, s, p, now_ms);
    const char *failed = NULL, *point = NULL;
    for (size_t k = 0; !failed && k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        if (pl->pre_bind && pl->pre_bind(pl->state, &c, n, err) != SCHED_STATUS_OK)
            failed = pl->name, point = "pre-bind";
    }
    for (size_t k = 0; !failed && k < fw->n_plugins; k++) {
        const sched_plugin *pl = &fw->plugins[k];
        sched_status st = pl->bind ? pl->bind(pl->state, &c, n, err) : SCHED_STATUS_SKIP;
        if (st == SCHED_STATUS_OK)
            break;
        if (st != SCHED_STATUS_SKIP)
            failed = pl->name, point = "bind";
    }
    if (!failed)
        return 0;
    /* the hook's err first, then ours around it; unreserve only after (it may not fail) */
    tm_err_wrap(err, "%s %s of %s/%s on %s", point, failed, p->ns, p->name, n->name);
    sched_framework_unreserve(fw, s, p, node, now_ms);
    return -1;
}
