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

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 when it is not one. Rejects
 * overlong forms, surrogates and code points above U+10FFFF, as PostgreSQL does. */
static size_t utf8_seq(const unsigned char *s) {
    if (s[0] < 0x80)
        return 1;
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

int lab_set_text(char *dst, size_t size, const char *src, tm_err *err) {
    dst[0] = '\0';
    if (strcmp(src, "-") == 0)
        return 0;
    const unsigned char *start = (const unsigned char *)src, *p = start;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0)
            return tm_err_set(err, "byte 0x%02x at offset %zu is not valid UTF-8", *p,
                              (size_t)(p - start));
        p += n;
    }
    size_t len = (size_t)(p - start);
    if (len >= size)
        return tm_err_set(err, "%zu bytes long, at most %zu allowed", len, size - 1);
    memcpy(dst, src, len + 1);
    return 0;
}

bool lab_process_from_name(const char *name, char *out, int size) {
    /* Nextflow names a task "<process> (<tag or index>)"; the process never contains " (". */
    const char *paren = strstr(name, " (");
    size_t n = paren ? (size_t)(paren - name) : strlen(name);
    out[0] = '\0';
    if (n >= (size_t)size)
        return false;
    memcpy(out, name, n);
    out[n] = '\0';
    return true;
}
