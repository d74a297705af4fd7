/* trace_fuzz.c: fuzzes the Nextflow trace reader (labeler/trace_parse.h): any header, any rows.
 * Every row read must hold NUL-terminated text fields, and a bad row must be reported with a
 * message and skipped, never end the reader or crash it. */
#include "fuzz/fuzz_util.h"
#include "labeler/trace_parse.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void trace_check_run(const lab_task_run *r) {
    FZ_CHECK(memchr(r->workflow, 0, sizeof r->workflow) &&
             memchr(r->run_name, 0, sizeof r->run_name));
    FZ_CHECK(memchr(r->process, 0, sizeof r->process) && memchr(r->name, 0, sizeof r->name));
    FZ_CHECK(memchr(r->hash, 0, sizeof r->hash) && memchr(r->status, 0, sizeof r->status));
    FZ_CHECK(memchr(r->node, 0, sizeof r->node) != NULL);
    char key[128];
    lab_task_run_key(r, key, (int)sizeof key);
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0; /* fmemopen refuses an empty buffer */
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    tm_err err = {{0}, 0};
    lab_trace_reader *r = lab_trace_open(f, "fuzz-trace.txt", &err);
    if (!r) {
        FZ_CHECK(err.msg[0] != '\0');
        fclose(f);
        return 0;
    }
    long last = lab_trace_line(r);
    for (;;) {
        lab_task_run run;
        memset(&run, 0xA5, sizeof run); /* the reader must fill every field it reports */
        int rc = lab_trace_next(r, &run, &err);
        if (rc == 0)
            break;
        long line = lab_trace_line(r);
        FZ_CHECK(line > last); /* every call consumes a line: the loop ends */
        last = line;
        if (rc < 0) {
            FZ_CHECK(strstr(err.msg, "fuzz-trace.txt:") != NULL);
            continue;
        }
        FZ_CHECK(rc == 1);
        trace_check_run(&run);
    }
    lab_trace_close(r);
    fclose(f);
    return 0;
}
