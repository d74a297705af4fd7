/* labeler_trace_parse_test.c: Nextflow trace files in both unit styles, any column order,
 * bad rows reported with line numbers. Fixtures: tests/fixtures/labeler/. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "labeler/trace_parse.h"

#define FIX "tests/fixtures/labeler/"

typedef struct {
    lab_task_run rows[64];
    int n, bad;
    long bad_lines[8];
    char bad_msgs[8][256];
} parsed;

static int parse_file(const char *path, parsed *p) {
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    tm_err err = {{0}, 0};
    lab_trace_reader *r = lab_trace_open(f, path, &err);
    if (!r) {
        fclose(f);
        return -1;
    }
    int got;
    while (p->n < 64 && (got = lab_trace_next(r, &p->rows[p->n], &err)) != 0) {
        if (got > 0) {
            p->n++;
        } else if (p->bad < 8) {
            p->bad_lines[p->bad] = lab_trace_line(r);
            snprintf(p->bad_msgs[p->bad], sizeof p->bad_msgs[0], "%.255s", err.msg);
            p->bad++;
        }
    }
    lab_trace_close(r);
    fclose(f);
    return 0;
}

static void test_human_readable_fixture(void) {
    static parsed p;
    CHECK(parse_file(FIX "chipseq_trace_human.txt", &p) == 0);
    CHECK_INT(p.n, 40);
    CHECK_INT(p.bad, 2);
    CHECK_INT(p.bad_lines[0], 22); /* the short row */
    CHECK(strstr(p.bad_msgs[0], "chipseq_trace_human.txt:22:") != NULL);
    CHECK(strstr(p.bad_msgs[0], "fields") != NULL);
    CHECK_INT(p.bad_lines[1], 33); /* "12 XB" */
    CHECK(strstr(p.bad_msgs[1], ":33: column 'peak_rss'") != NULL);
    CHECK(strstr(p.bad_msgs[1], "12 XB") != NULL);
    const lab_task_run *r = &p.rows[0];
    CHECK_STR(r->process, "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC");
    CHECK_STR(r->name, "NFCORE_CHIPSEQ:CHIPSEQ:FASTQC (SPT5_T15_REP2)");
    CHECK_STR(r->hash, "3d/085794");
    CHECK_STR(r->status, "COMPLETED");
    CHECK_STR(r->node, "n1-node-1");
    CHECK_INT(r->task_id, 1);
    CHECK_INT(r->exit_code, 0);
    CHECK_INT(r->cpus, 6);
    CHECK_INT(r->memory, 15LL * 1024 * 1024 * 1024);
    CHECK_INT(r->attempt, 1);
    CHECK_NEAR(r->cpu_pct, 114.1, 1e-9);
    CHECK_INT(r->peak_rss, (int64_t)llround(617.1 * 1024 * 1024));
    CHECK_INT(r->rchar, (int64_t)llround(96.8 * 1024 * 1024));
    CHECK_INT(r->realtime_ms, 13700);
    CHECK_INT(r->submit_ms, 1682944503000LL);
    CHECK_INT(r->start_ms, 1682944504500LL);
    CHECK_INT(r->complete_ms, 1682944518222LL);
    /* Row 7 failed with 137 and row 8 is its retry: same hash, attempt 2. */
    CHECK_STR(p.rows[6].status, "FAILED");
    CHECK_INT(p.rows[6].exit_code, 137);
    CHECK_STR(p.rows[7].hash, p.rows[6].hash);
    CHECK_INT(p.rows[7].attempt, 2);
    /* Row 12 has "-" for %cpu and peak_rss: unknown, not zero. */
    CHECK(isnan(p.rows[11].cpu_pct));
    CHECK(p.rows[11].peak_rss == LAB_NONE);
}

static void test_raw_fixture_other_order(void) {
    static parsed p;
    CHECK(parse_file(FIX "eager_trace_raw.txt", &p) == 0);
    CHECK_INT(p.n, 30);
    CHECK_INT(p.bad, 1);
    CHECK_INT(p.bad_lines[0], 18); /* line 12 is blank and skipped silently */
    CHECK(strstr(p.bad_msgs[0], "column 'realtime'") != NULL);
    const lab_task_run *r = &p.rows[0];
    CHECK_STR(r->process, "fastqc"); /* no process column: derived from the name */
    CHECK_STR(r->hash, "38/e67ceb");
    CHECK_INT(r->realtime_ms, 104115);
    CHECK_INT(r->peak_rss, 341528576);
    CHECK_NEAR(r->cpu_pct, 186.8, 1e-9);
    CHECK_INT(r->rchar, 1561226676);
    CHECK_INT(r->wchar, 2041890);
    CHECK_INT(r->submit_ms, 1682944501000LL);
    CHECK(r->memory == LAB_NONE); /* column absent */
    CHECK(r->node[0] == '\0');
    CHECK_INT(r->attempt, 1);
}

static lab_trace_reader *open_str(const char *text, FILE **f, tm_err *err) {
    *f = fmemopen((void *)text, strlen(text), "r");
    return lab_trace_open(*f, "inline.txt", err);
}

static void test_header_errors(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    CHECK(open_str("", &f, &err) == NULL);
    CHECK(strstr(err.msg, "empty") != NULL);
    fclose(f);
    CHECK(open_str("task_id\trealtime\n1\t5s\n", &f, &err) == NULL);
    CHECK(strstr(err.msg, "inline.txt:1") != NULL && strstr(err.msg, "'name'") != NULL);
    fclose(f);
    CHECK(open_str("name\trealtime\nfoo (1)\t5s\n", &f, &err) == NULL);
    CHECK(strstr(err.msg, "'hash'") != NULL);
    fclose(f);
}

static void test_minimal_and_csv(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    lab_trace_reader *r = open_str("task_id,name,%cpu\r\n3,MAP (a),250.0%\r\n", &f, &err);
    CHECK(r != NULL);
    lab_task_run run;
    CHECK_INT(lab_trace_next(r, &run, &err), 1);
    CHECK_STR(run.process, "MAP");
    CHECK_INT(run.task_id, 3);
    CHECK_NEAR(run.cpu_pct, 250.0, 1e-12);
    CHECK(run.hash[0] == '\0');
    char key[80];
    CHECK(lab_task_run_key(&run, key, sizeof key));
    CHECK_STR(key, "id:3");
    CHECK_INT(lab_trace_next(r, &run, &err), 0);
    lab_trace_close(r);
    fclose(f);
    /* A row without any identity is bad, not silently merged. */
    r = open_str("task_id\tname\n-\tMAP (a)\n", &f, &err);
    CHECK(r != NULL);
    CHECK_INT(lab_trace_next(r, &run, &err), -1);
    CHECK(strstr(err.msg, "inline.txt:2") != NULL);
    lab_trace_close(r);
    fclose(f);
}

/* Regression: a header naming a column twice was read with the last copy silently winning. */
static void test_duplicate_columns(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    CHECK(open_str("hash\tprocess\t%cpu\thash\n01/a\tP\t5%\t02/b\n", &f, &err) == NULL);
    CHECK(strstr(err.msg, "column 'hash' twice (columns 1 and 4)") != NULL);
    fclose(f);
    /* Unknown columns may repeat: they are ignored anyway. */
    lab_trace_reader *r = open_str("hash\tprocess\tx\tx\n01/a\tP\t1\t2\n", &f, &err);
    CHECK(r != NULL);
    lab_trace_close(r);
    fclose(f);
}

/* Regression: the header error always said line 1, also after leading blank lines. */
static void test_header_line_number(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    CHECK(open_str("\n\r\n\nfoo\tbar\n", &f, &err) == NULL);
    CHECK(strstr(err.msg, "inline.txt:4:") != NULL);
    fclose(f);
    CHECK(open_str("\n\n", &f, &err) == NULL);
    CHECK(strstr(err.msg, "empty") != NULL);
    fclose(f);
}

/* Regression: text values went to PostgreSQL unchecked: one row with a Latin-1 byte made
 * COPY refuse its whole batch (up to 10,000 rows) and aborted the ingest; an over-long hash
 * was cut to 63 bytes, so two tasks could merge into one. Both are now bad rows. */
static void test_bad_text_rows(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    char text[2048];
    char longhash[200];
    memset(longhash, 'a', sizeof longhash - 1);
    longhash[sizeof longhash - 1] = '\0';
    snprintf(text, sizeof text,
             "hash\tprocess\tstatus\r\n"
             "01/a\tGOOD\tCOMPLETED\r\n"
             "02/b\tBAD\xff\xfe\tCOMPLETED\r\n"
             "%s\tLONG\tCOMPLETED\r\n"
             "03/c\tFAST\xc3\xa9\tCOMPLETED\r\n", /* valid UTF-8 e-acute */
             longhash);
    lab_trace_reader *r = open_str(text, &f, &err);
    CHECK(r != NULL);
    if (!r) {
        fclose(f);
        return;
    }
    lab_task_run run;
    CHECK_INT(lab_trace_next(r, &run, &err), 1);
    CHECK_STR(run.status, "COMPLETED"); /* CRLF: no \r left on the last field */
    CHECK_INT(lab_trace_next(r, &run, &err), -1);
    CHECK(strstr(err.msg, "inline.txt:3: column 'process'") != NULL);
    CHECK(strstr(err.msg, "0xff") != NULL && strstr(err.msg, "UTF-8") != NULL);
    CHECK_INT(lab_trace_next(r, &run, &err), -1);
    CHECK(strstr(err.msg, "inline.txt:4: column 'hash'") != NULL);
    CHECK(strstr(err.msg, "199 bytes long, at most 63") != NULL);
    CHECK_INT(lab_trace_next(r, &run, &err), 1);
    CHECK_STR(run.process, "FAST\xc3\xa9");
    CHECK_INT(lab_trace_next(r, &run, &err), 0);
    lab_trace_close(r);
    fclose(f);
}

/* Binary garbage, a header with nothing after it, and a 1 MB field: errors or rows, never a
 * crash or an over-read (valgrind runs this). */
static void test_garbage_and_huge(void) {
    tm_err err = {{0}, 0};
    FILE *f;
    unsigned char bin[4096];
    unsigned s = 7;
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)((s = s * 1103515245u + 12345u) >> 16);
    f = fmemopen(bin, sizeof bin, "r");
    CHECK(lab_trace_open(f, "bin", &err) == NULL);
    CHECK(strstr(err.msg, "bin:") != NULL);
    fclose(f);
    lab_task_run run;
    lab_trace_reader *r = open_str("task_id\tname\n", &f, &err);
    CHECK(r != NULL && lab_trace_next(r, &run, &err) == 0);
    lab_trace_close(r);
    fclose(f);
    size_t n = 1 << 20;
    char *big = malloc(n + 64);
    strcpy(big, "task_id\tname\n7\t");
    size_t off = strlen(big);
    memset(big + off, 'N', n);
    strcpy(big + off + n, "\n8\tOK (1)\n");
    r = open_str(big, &f, &err);
    CHECK(r != NULL);
    CHECK_INT(lab_trace_next(r, &run, &err), -1);
    CHECK(strstr(err.msg, "inline.txt:2: column 'name'") != NULL);
    CHECK_INT(lab_trace_next(r, &run, &err), 1);
    CHECK_STR(run.process, "OK");
    lab_trace_close(r);
    fclose(f);
    free(big);
}

int main(void) {
    setenv("TZ", "UTC", 1);
    tzset();
    RUN(test_human_readable_fixture);
    RUN(test_raw_fixture_other_order);
    RUN(test_header_errors);
    RUN(test_minimal_and_csv);
    RUN(test_duplicate_columns);
    RUN(test_header_line_number);
    RUN(test_bad_text_rows);
    RUN(test_garbage_and_huge);
    return TEST_SUMMARY();
}
