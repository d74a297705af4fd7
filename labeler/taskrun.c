/* taskrun.c: see taskrun.h. */
#include "labeler/taskrun.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void lab_task_run_init(lab_task_run *r) {
    memset(r, 0, sizeof *r);
    r->task_id = LAB_NONE;
    r->attempt = 1; /* Nextflow starts counting attempts at 1 and omits it by default */
    r->exit_code = LAB_NONE;
    r->cpus = LAB_NONE;
    r->memory = LAB_NONE;
    r->cpu_pct = NAN;
    r->peak_rss = LAB_NONE;
    r->rchar = r->wchar = r->read_bytes = r->write_bytes = LAB_NONE;
    r->realtime_ms = LAB_NONE;
    r->submit_ms = r->start_ms = r->complete_ms = LAB_NONE;
}

bool lab_task_run_key(const lab_task_run *r, char *buf, int size) {
    if (r->hash[0]) {
        snprintf(buf, (size_t)size, "%s", r->hash);
        return true;
    }
    if (r->task_id != LAB_NONE) {
        snprintf(buf, (size_t)size, "id:%lld", (long long)r->task_id);
        return true;
    }
    return false;
}

void lab_process_from_name(const char *name, char *out, int size) {
    /* Nextflow names a task "<process> (<tag or index>)"; the process never contains " (". */
    const char *paren = strstr(name, " (");
    size_t n = paren ? (size_t)(paren - name) : strlen(name);
    if (n >= (size_t)size)
        n = (size_t)size - 1;
    memcpy(out, name, n);
    out[n] = '\0';
}
