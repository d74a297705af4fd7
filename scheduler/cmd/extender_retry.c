/* extender_retry.c: the extender's retries (extender.h, "Retries"). kube-scheduler parks a pod
 * its extender left without a node until the next cluster event (it files the refusal under
 * its fake plugin "Extender", requeued by any event). tarema's informer can be milliseconds
 * behind kube-scheduler's: kube-scheduler sees a pod end, retries a waiting pod at once, and
 * tarema, still counting the ended pod, refuses the node kube-scheduler found free. The event
 * that would have retried the pod has passed, and in a quiet cluster the pod waits for
 * kube-scheduler's five-minute flush. So such a refusal is kept for a while, and each time
 * tarema's view changes the pod is evaluated again on the nodes it was refused: if one passes
 * now, the caller makes an event kube-scheduler retries the pod on. */
#include <stdlib.h>
#include <string.h>

#include "lib/jsonutil.h"
#include "scheduler/cmd/extender_internal.h"

static void entry_free(ext_retry_entry *e) {
    free(e->uid);
    json_decref(e->pod);
    json_decref(e->names);
}

/* Drops uid's entry (lock held). */
static void drop_uid(sched_extender *x, const char *uid) {
    for (size_t i = 0; i < x->n_retry; i++)
        if (strcmp(x->retry[i].uid, uid) == 0) {
            entry_free(&x->retry[i]);
            memmove(&x->retry[i], &x->retry[i + 1], (x->n_retry - i - 1) * sizeof *x->retry);
            x->n_retry--;
            return;
        }
}

/* Appends e (lock held), dropping the oldest entry when the table is full; e is taken. */
static void append(sched_extender *x, ext_retry_entry e) {
    if (x->n_retry == SCHED_EXTENDER_RETRY_MAX) {
        entry_free(&x->retry[0]);
        memmove(&x->retry[0], &x->retry[1], (x->n_retry - 1) * sizeof *x->retry);
        x->n_retry--;
    }
    if (!x->retry && !(x->retry = calloc(SCHED_EXTENDER_RETRY_MAX, sizeof *x->retry))) {
        entry_free(&e); /* no memory: the pod just goes without a retry */
        return;
    }
    x->retry[x->n_retry++] = e;
}

void ext_retry_park(sched_extender *x, const json_t *pod, const json_t *failed, int64_t now_ms) {
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    if (!uid[0])
        return; /* no identity to retry it by */
    ext_retry_entry e = {.uid = strdup(uid), .names = json_array(), .at_ms = now_ms};
    const char *node;
    const json_t *v;
    json_object_foreach((json_t *)failed, node, v) {
        (void)v;
        json_array_append_new(e.names, json_string(node));
    }
    e.pod = json_deep_copy(pod); /* the request's args are freed when its answer is written */
    if (!e.uid || !e.pod || json_array_size(e.names) != json_object_size(failed)) {
        entry_free(&e);
        return;
    }
    pthread_mutex_lock(&x->retry_mu);
    drop_uid(x, uid); /* the latest refusal is the one that counts */
    e.gen = ++x->gen;
    append(x, e);
    pthread_mutex_unlock(&x->retry_mu);
}

void ext_retry_forget(sched_extender *x, const json_t *pod) {
    const char *uid = tm_json_str(pod, "metadata.uid", "");
    pthread_mutex_lock(&x->retry_mu);
    if (uid[0] && x->n_retry)
        drop_uid(x, uid);
    pthread_mutex_unlock(&x->retry_mu);
}

void ext_retry_free(sched_extender *x) {
    for (size_t i = 0; i < x->n_retry; i++)
        entry_free(&x->retry[i]);
    free(x->retry);
    x->retry = NULL;
    x->n_retry = 0;
}

size_t sched_extender_retry_pending(sched_extender *x) {
    pthread_mutex_lock(&x->retry_mu);
    size_t n = x->n_retry;
    pthread_mutex_unlock(&x->retry_mu);
    return n;
}

/* The first node of e's that passes the filters now, NULL when none does (or on an error: the
 * refusal stands as kube-scheduler has it). */
static const char *passes_now(sched_extender *x, const ext_retry_entry *e, json_t **res) {
    json_t *args = json_pack("{s:O, s:O}", "Pod", e->pod, "NodeNames", e->names);
    tm_err err = {0};
    *res = args ? ext_filter(x, args, false, &err) : NULL;
    json_decref(args);
    return json_string_value(json_array_get(json_object_get(*res, "NodeNames"), 0));
}

/* Removes uid's entry if it is still generation gen (lock held): true when it was. */
static bool take(sched_extender *x, const char *uid, uint64_t gen) {
    for (size_t i = 0; i < x->n_retry; i++)
        if (strcmp(x->retry[i].uid, uid) == 0) {
            if (x->retry[i].gen != gen)
                return false; /* refused again meanwhile: that newer refusal is the one kept */
            drop_uid(x, uid);
            return true;
        }
    return false; /* forgotten meanwhile: a node passed it */
}

size_t sched_extender_retry(sched_extender *x, int64_t now_ms, sched_extender_retry_fn retry,
                            void *ud) {
    /* the newest SCHED_EXTENDER_RETRY_BATCH within the window (the likeliest to have met a view
     * behind kube-scheduler's), referenced rather than copied: the entries stay in the table, so
     * /filter parks and forgets pods meanwhile, and a generation tells whether one changed */
    ext_retry_entry batch[SCHED_EXTENDER_RETRY_BATCH];
    size_t n = 0;
    pthread_mutex_lock(&x->retry_mu);
    size_t kept = 0;
    for (size_t i = 0; i < x->n_retry; i++) {
        if (now_ms - x->retry[i].at_ms > SCHED_EXTENDER_RETRY_WINDOW_MS)
            entry_free(&x->retry[i]); /* kube-scheduler has seen whatever tarema's view lagged */
        else
            x->retry[kept++] = x->retry[i];
    }
    x->n_retry = kept;
    for (size_t i = kept > SCHED_EXTENDER_RETRY_BATCH ? kept - SCHED_EXTENDER_RETRY_BATCH : 0;
         i < kept; i++) {
        const ext_retry_entry *e = &x->retry[i];
        char *uid = strdup(e->uid);
        if (!uid)
            continue;
        batch[n++] = (ext_retry_entry){.uid = uid,
                                       .pod = json_incref(e->pod), /* atomic in jansson 2.11+ */
                                       .names = json_incref(e->names),
                                       .gen = e->gen};
    }
    pthread_mutex_unlock(&x->retry_mu);
    size_t asked = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *res = NULL;
        const char *node = passes_now(x, &batch[i], &res);
        if (node) {
            pthread_mutex_lock(&x->retry_mu);
            bool mine = take(x, batch[i].uid, batch[i].gen);
            pthread_mutex_unlock(&x->retry_mu);
            if (mine) {
                retry(ud, tm_json_str(batch[i].pod, "metadata.namespace", ""),
                      tm_json_str(batch[i].pod, "metadata.name", ""), batch[i].uid, node);
                asked++;
            }
        }
        json_decref(res);
        entry_free(&batch[i]);
    }
    return asked;
}
