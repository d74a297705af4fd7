/* replan.c: when the controller replans and renews Reservations (replan.h). Pure. */
#include "planner/replan.h"

#include <string.h>

int64_t pl_pred_expected_end(int64_t planned_end, int64_t actual_start, int64_t walltime_s,
                             int64_t now, int64_t slot_s) {
    if (slot_s < 1)
        slot_s = 1;
    if (walltime_s < 1)
        walltime_s = slot_s;
    if (actual_start < 0) /* not started: its whole walltime is still ahead */
        return planned_end > now + walltime_s ? planned_end : now + walltime_s;
    int64_t end = actual_start + walltime_s;
    if (planned_end > end)
        end = planned_end;
    if (end > now)
        return end;
    /* running past it: as long again as it has overrun so far, at least a slot, so that a
     * late step moves its successors at doubling intervals, not by a slot every tick */
    int64_t over = now - end;
    return now + (over > slot_s ? over : slot_s);
}

int pl_refusal_permanent(const char *message) {
    /* tarema-scheduler's reasons (scheduler/plugins/reservation/resv_plan.c check_static,
     * resv_controller.c owner_exists) that no other window or node choice changes */
    static const char *const never[] = {"larger than the cluster", "no node group matches",
                                        "no node matches",         "the cluster has no nodes",
                                        "is not served",           NULL};
    if (!message || (!strncmp(message, "only ", 5) && strstr(message, " pods fit")))
        return 0; /* capacity, whatever the fit message after it names */
    for (const char *const *p = never; *p; p++)
        if (strstr(message, *p))
            return 1;
    return 0;
}

int pl_refusal_decide(const char *message, int refusals, int max_retries, int64_t now,
                      int64_t slot_s, int64_t cap_s, int64_t *retry_at) {
    if (pl_refusal_permanent(message) || refusals > max_retries)
        return 1;
    if (slot_s < 1)
        slot_s = 1;
    if (cap_s < slot_s)
        cap_s = slot_s;
    int64_t d = slot_s;
    for (int k = 1; k < refusals && d < cap_s; k++)
        d *= 2;
    *retry_at = now + (d < cap_s ? d : cap_s);
    return 0;
}

int pl_resv_needs_renewal(const char *phase, int64_t held_start, int64_t held_end,
                          int64_t new_start, int64_t slot_s) {
    if (phase &&
        (!strcmp(phase, "Failed") || !strcmp(phase, "Expired") || !strcmp(phase, "Released")))
        return 1;
    if (slot_s < 1)
        slot_s = 1;
    return (held_end >= 0 && new_start >= held_end) ||
           (held_start >= 0 && held_start - new_start >= slot_s);
}
