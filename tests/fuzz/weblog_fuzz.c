/* weblog_fuzz.c: fuzzes Nextflow weblog event decoding (labeler/weblog.h): the JSON bodies the
 * labeler's HTTP endpoint accepts from anyone who can reach it. */
#include "fuzz/fuzz_util.h"
#include "labeler/weblog.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void weblog_run(const json_t *j, const char *key) {
    lab_weblog_event ev;
    memset(&ev, 0xA5, sizeof ev);
    tm_err err = {{0}, 0};
    if (lab_weblog_parse(j, key, &ev, &err) != 0) {
        FZ_CHECK(err.msg[0] != '\0');
        return;
    }
    FZ_CHECK(memchr(ev.event, 0, sizeof ev.event) && memchr(ev.run_id, 0, sizeof ev.run_id));
    FZ_CHECK(memchr(ev.run_name, 0, sizeof ev.run_name) &&
             memchr(ev.workflow, 0, sizeof ev.workflow));
    if (ev.kind == LAB_WEBLOG_PROCESS_COMPLETED) {
        const lab_task_run *r = &ev.run;
        FZ_CHECK(memchr(r->process, 0, sizeof r->process) && memchr(r->name, 0, sizeof r->name));
        FZ_CHECK(memchr(r->hash, 0, sizeof r->hash) && memchr(r->status, 0, sizeof r->status));
        FZ_CHECK(memchr(r->node, 0, sizeof r->node) && memchr(r->run_name, 0, sizeof r->run_name));
        char k[128];
        lab_task_run_key(r, k, (int)sizeof k);
    }
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    json_t *j = fz_json(data, size);
    if (!j)
        return 0;
    weblog_run(j, NULL);
    weblog_run(j, "manifest.version");
    weblog_run(j, "");
    json_decref(j);
    return 0;
}
