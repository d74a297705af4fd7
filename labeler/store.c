/* store.c: see store.h. */
#include "labeler/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/migrations.h"

struct lab_store {
    PGconn *conn;
    char *buf; /* COPY buffer, reused across batches */
    size_t cap;
};

lab_store *lab_store_open(const char *conninfo, tm_err *err) {
    return lab_store_open_limited(conninfo, NULL, err);
}

lab_store *lab_store_open_limited(const char *conninfo, const tm_pg_limits *lim, tm_err *err) {
    lab_store *s = calloc(1, sizeof *s);
    if (!s) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    s->conn = tm_pg_connect_limited(conninfo, lim, err);
    size_t n;
    const tm_pg_migration *m = lab_migrations(&n);
    if (!s->conn || tm_pg_migrate(s->conn, m, n, NULL, err) < 0) {
        lab_store_close(s);
        return NULL;
    }
    return s;
}

void lab_store_close(lab_store *s) {
    if (!s)
        return;
    tm_pg_close(s->conn);
    free(s->buf);
    free(s);
}

bool lab_store_ensure(lab_store *s) {
    return tm_pg_ensure(s->conn);
}

bool lab_store_connected(const lab_store *s) {
    return s && PQstatus(s->conn) == CONNECTION_OK;
}

bool lab_store_retryable(const lab_store *s, const tm_err *err) {
    return !s || tm_pg_err_retryable(s->conn, err);
}

/* The staging table lives per session; it is recreated after a reconnect. */
static const char *const stage_sql =
    "CREATE TEMP TABLE IF NOT EXISTS lab_stage ("
    " ord bigint, workflow text, run_name text, task_key text, attempt integer,"
    " process text, task_name text, hash text, task_id bigint, status text, exit_code integer,"
    " node text, cpus integer, memory_bytes bigint, cpu_pct double precision, peak_rss bigint,"
    " rchar bigint, wchar bigint, read_bytes bigint, write_bytes bigint, realtime_ms bigint,"
    " submit_ms bigint, start_ms bigint, complete_ms bigint, node_group text)"
    " ON COMMIT DELETE ROWS";

/* DISTINCT ON keeps the last copy of a task that appears twice in one batch: ON CONFLICT DO
 * UPDATE may touch each row only once per statement. */
static const char *const merge_sql =
    "WITH m AS ("
    " INSERT INTO task_runs (workflow, run_name, task_key, attempt, process, task_name, hash,"
    "  task_id, status, exit_code, node, cpus, memory_bytes, cpu_pct, peak_rss, rchar, wchar,"
    "  read_bytes, write_bytes, realtime_ms, submit_time, start_time, complete_time, source,"
    "  node_group)"
    " SELECT DISTINCT ON (workflow, run_name, task_key, attempt)"
    "  workflow, run_name, task_key, attempt, process, task_name, hash, task_id, status,"
    "  exit_code, node, cpus, memory_bytes, cpu_pct, peak_rss, rchar, wchar, read_bytes,"
    "  write_bytes, realtime_ms, to_timestamp(submit_ms / 1000.0), to_timestamp(start_ms / 1000.0),"
    "  to_timestamp(complete_ms / 1000.0), $1, node_group"
    " FROM lab_stage ORDER BY workflow, run_name, task_key, attempt, ord DESC"
    " ON CONFLICT ON CONSTRAINT task_runs_identity DO UPDATE SET"
    "  process = EXCLUDED.process, task_name = EXCLUDED.task_name, hash = EXCLUDED.hash,"
    "  task_id = EXCLUDED.task_id, status = EXCLUDED.status, exit_code = EXCLUDED.exit_code,"
    "  node = EXCLUDED.node, cpus = EXCLUDED.cpus, memory_bytes = EXCLUDED.memory_bytes,"
    "  cpu_pct = EXCLUDED.cpu_pct, peak_rss = EXCLUDED.peak_rss, rchar = EXCLUDED.rchar,"
    "  wchar = EXCLUDED.wchar, read_bytes = EXCLUDED.read_bytes,"
    "  write_bytes = EXCLUDED.write_bytes, realtime_ms = EXCLUDED.realtime_ms,"
    "  submit_time = EXCLUDED.submit_time, start_time = EXCLUDED.start_time,"
    "  complete_time = EXCLUDED.complete_time, source = EXCLUDED.source, ingested_at = now(),"
    /* a re-ingest that cannot resolve the node (no cluster at hand) keeps the group known */
    "  node_group = CASE WHEN EXCLUDED.node IS NOT DISTINCT FROM task_runs.node"
    "   THEN COALESCE(EXCLUDED.node_group, task_runs.node_group) ELSE EXCLUDED.node_group END"
    " RETURNING (xmax = 0) AS fresh)"
    " SELECT count(*) FILTER (WHERE fresh), count(*) FILTER (WHERE NOT fresh) FROM m";

/* Delivered at commit, once per distinct workflow (the server folds equal payloads). */
static const char *const notify_sql =
    "SELECT pg_notify('" LAB_STORE_CHANNEL "', workflow) FROM (SELECT DISTINCT workflow FROM"
    " lab_stage) w";

typedef struct {
    char **buf;
    size_t len, cap;
    int failed;
} copybuf;

static void put_raw(copybuf *b, const char *v, size_t n) {
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > ncap)
            ncap *= 2;
        char *nb = realloc(*b->buf, ncap);
        if (!nb) {
            b->failed = 1;
            return;
        }
        *b->buf = nb, b->cap = ncap;
    }
    memcpy(*b->buf + b->len, v, n);
    b->len += n;
    (*b->buf)[b->len] = '\0';
}

/* One COPY text field and its terminator; NULL or "" is SQL NULL (\N). */
static void put_str(copybuf *b, const char *v, char term) {
    if (!v || !*v)
        put_raw(b, "\\N", 2);
    else if (!b->failed && tm_pg_copy_escape(b->buf, &b->len, &b->cap, v) < 0)
        b->failed = 1;
    put_raw(b, &term, 1);
}

static void put_int(copybuf *b, int64_t v, char term) {
    char tmp[32];
    if (v == LAB_NONE) {
        put_str(b, NULL, term);
        return;
    }
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put_str(b, tmp, term);
}

static void put_row(copybuf *b, long ord, const lab_task_run *r) {
    char key[80];
    lab_task_run_key(r, key, sizeof key);
    put_int(b, ord, '\t');
    put_str(b, r->workflow, '\t');
    put_str(b, r->run_name[0] ? r->run_name : "-", '\t');
    put_str(b, key, '\t');
    put_int(b, r->attempt == LAB_NONE ? 1 : r->attempt, '\t');
    put_str(b, r->process, '\t');
    put_str(b, r->name, '\t');
    put_str(b, r->hash, '\t');
    put_int(b, r->task_id, '\t');
    put_str(b, r->status, '\t');
    put_int(b, r->exit_code, '\t');
    put_str(b, r->node, '\t');
    put_int(b, r->cpus, '\t');
    put_int(b, r->memory, '\t');
    if (isnan(r->cpu_pct)) {
        put_str(b, NULL, '\t');
    } else {
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.17g", r->cpu_pct);
        put_str(b, tmp, '\t');
    }
    put_int(b, r->peak_rss, '\t');
    put_int(b, r->rchar, '\t');
    put_int(b, r->wchar, '\t');
    put_int(b, r->read_bytes, '\t');
    put_int(b, r->write_bytes, '\t');
    put_int(b, r->realtime_ms, '\t');
    put_int(b, r->submit_ms, '\t');
    put_int(b, r->start_ms, '\t');
    put_int(b, r->complete_ms, '\t');
    put_str(b, r->node_group, '\n');
}

int lab_store_put_runs(lab_store *s, const lab_task_run *runs, size_t n, const char *source,
                       long *inserted, long *updated, tm_err *err) {
    if (inserted)
        *inserted = 0;
    if (updated)
        *updated = 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!runs[i].workflow[0] || !runs[i].process[0])
            return tm_err_set(err, "task run %zu (%s) has no workflow or process", i, runs[i].name);
    copybuf b = {&s->buf, 0, s->cap, 0};
    for (size_t i = 0; i < n && !b.failed; i++)
        put_row(&b, (long)i, &runs[i]);
    s->cap = b.cap;
    if (b.failed)
        return tm_err_set(err, "out of memory building a batch of %zu task runs", n);
    if (tm_pg_begin(s->conn, err) < 0)
        return -1;
    const char *params[] = {source};
    PGresult *r = NULL;
    if (tm_pg_run(s->conn, stage_sql, 0, NULL, err) < 0 ||
        tm_pg_copy_in(s->conn, "COPY lab_stage FROM STDIN", s->buf, b.len, err) < 0 ||
        !(r = tm_pg_exec(s->conn, merge_sql, 1, params, err)) ||
        tm_pg_run(s->conn, notify_sql, 0, NULL, err) < 0 || tm_pg_commit(s->conn, err) < 0) {
        PQclear(r);
        tm_pg_rollback(s->conn);
        return tm_err_wrap(err, "storing %zu task runs", n);
    }
    if (inserted)
        *inserted = atol(PQgetvalue(r, 0, 0));
    if (updated)
        *updated = atol(PQgetvalue(r, 0, 1));
    PQclear(r);
    return 0;
}

int lab_store_listen(lab_store *s, tm_err *err) {
    return tm_pg_run(s->conn, "LISTEN " LAB_STORE_CHANNEL, 0, NULL, err);
}

int lab_store_notifications(lab_store *s, void (*fn)(void *ud, const char *workflow), void *ud,
                            tm_err *err) {
    if (PQconsumeInput(s->conn) != 1) {
        const char *m = PQerrorMessage(s->conn);
        return tm_err_set(err, "reading notifications: %.*s", (int)strcspn(m, "\n"), m);
    }
    int n = 0;
    PGnotify *nt;
    while ((nt = PQnotifies(s->conn))) {
        if (strcmp(nt->relname, LAB_STORE_CHANNEL) == 0 && nt->extra && *nt->extra) {
            fn(ud, nt->extra);
            n++;
        }
        PQfreemem(nt);
    }
    return n;
}

int lab_store_put_weblog_run(lab_store *s, const char *run_id, const char *run_name,
                             const char *workflow, long long started_ms, tm_err *err) {
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", started_ms);
    const char *params[] = {run_id, run_name, workflow, started_ms == LAB_NONE ? NULL : ms};
    return tm_pg_run(s->conn,
                     "INSERT INTO weblog_runs (run_id, run_name, workflow, started_at)"
                     " VALUES ($1, $2, $3, to_timestamp($4::bigint / 1000.0))"
                     " ON CONFLICT (run_id) DO UPDATE SET run_name = EXCLUDED.run_name,"
                     " workflow = EXCLUDED.workflow, started_at = EXCLUDED.started_at,"
                     " updated_at = now()",
                     4, params, err);
}

int lab_store_weblog_run_completed(lab_store *s, const char *run_id, long long completed_ms,
                                   tm_err *err) {
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", completed_ms);
    const char *params[] = {run_id, completed_ms == LAB_NONE ? NULL : ms};
    PGresult *r = tm_pg_exec(
        s->conn,
        "WITH u AS (UPDATE weblog_runs SET completed_at = COALESCE(to_timestamp($2::bigint"
        " / 1000.0), now()), updated_at = now() WHERE run_id = $1 RETURNING workflow)"
        " SELECT pg_notify('" LAB_STORE_CHANNEL "', workflow) FROM u",
        2, params, err);
    if (!r)
        return tm_err_wrap(err, "marking weblog run %s complete", run_id);
    int found = PQntuples(r) > 0;
    PQclear(r);
    return found;
}

int lab_store_weblog_runs(lab_store *s,
                          void (*fn)(void *ud, const char *run_id, const char *workflow), void *ud,
                          tm_err *err) {
    PGresult *r = tm_pg_exec(s->conn, "SELECT run_id, workflow FROM weblog_runs", 0, NULL, err);
    if (!r)
        return -1;
    int n = PQntuples(r);
    for (int i = 0; i < n; i++)
        fn(ud, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    PQclear(r);
    return n;
}

int lab_store_weblog_workflow(lab_store *s, const char *run_id, char *out, size_t size,
                              tm_err *err) {
    const char *params[] = {run_id};
    PGresult *r =
        tm_pg_exec(s->conn, "SELECT workflow FROM weblog_runs WHERE run_id = $1", 1, params, err);
    if (!r)
        return -1;
    int found = PQntuples(r) > 0;
    if (found)
        snprintf(out, size, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return found;
}

static double num_or_nan(PGresult *r, int row, int col) {
    return PQgetisnull(r, row, col) ? NAN : strtod(PQgetvalue(r, row, col), NULL);
}

int lab_store_samples(lab_store *s, const char *workflow, lab_samples *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *params[] = {workflow};
    /* A trace without a status column still counts a run that exited 0 as completed. */
    PGresult *r =
        tm_pg_exec(s->conn,
                   "SELECT process, cpu_pct, peak_rss,"
                   " CASE WHEN rchar IS NULL AND wchar IS NULL THEN NULL"
                   "  ELSE COALESCE(rchar, 0) + COALESCE(wchar, 0) END, realtime_ms, node_group"
                   " FROM task_runs WHERE workflow = $1 AND COALESCE(status,"
                   "  CASE WHEN COALESCE(exit_code, 0) = 0 THEN 'COMPLETED' END) = 'COMPLETED'",
                   1, params, err);
    if (!r)
        return -1;
    size_t n = (size_t)PQntuples(r);
    out->v = calloc(n ? n : 1, sizeof *out->v);
    out->group = calloc(n ? n : 1, sizeof *out->group);
    if (!out->v || !out->group) {
        free(out->v);
        free(out->group);
        out->v = NULL, out->group = NULL;
        PQclear(r);
        return tm_err_set(err, "out of memory for %zu samples", n);
    }
    for (size_t i = 0; i < n; i++) {
        lab_sample *smp = &out->v[i];
        smp->process = PQgetvalue(r, (int)i, 0);
        smp->value[LAB_CPU] = num_or_nan(r, (int)i, 1);
        smp->value[LAB_MEM] = num_or_nan(r, (int)i, 2);
        smp->value[LAB_IO] = num_or_nan(r, (int)i, 3);
        smp->realtime_ms = num_or_nan(r, (int)i, 4);
        out->group[i] = PQgetisnull(r, (int)i, 5) ? NULL : PQgetvalue(r, (int)i, 5);
    }
    out->n = n;
    out->owner = r;
    return 0;
}

void lab_samples_free(lab_samples *smp) {
    if (!smp)
        return;
    free(smp->v);
    free(smp->group);
    PQclear(smp->owner);
    memset(smp, 0, sizeof *smp);
}

int lab_store_tail_rows(lab_store *s, const char *workflow, lab_tail_rows *out, tm_err *err) {
    memset(out, 0, sizeof *out);
    const char *params[] = {workflow};
    /* complete runs: marked complete by the weblog, or with no weblog task (a trace) */
    PGresult *r = tm_pg_exec(
        s->conn,
        "WITH done AS (SELECT t.run_name FROM task_runs t WHERE t.workflow = $1"
        "  GROUP BY t.run_name HAVING bool_and(t.source <> 'weblog') OR EXISTS (SELECT 1"
        "  FROM weblog_runs w WHERE w.workflow = $1 AND w.run_name = t.run_name"
        "  AND w.completed_at IS NOT NULL))"
        " SELECT t.run_name, t.process, extract(epoch FROM t.complete_time) * 1000,"
        "  COALESCE(t.status, CASE WHEN COALESCE(t.exit_code, 0) = 0 THEN 'COMPLETED' END)"
        "  = 'COMPLETED'"
        " FROM task_runs t JOIN done USING (run_name)"
        " WHERE t.workflow = $1 AND t.complete_time IS NOT NULL",
        1, params, err);
    if (!r)
        return tm_err_wrap(err, "reading the complete runs of workflow %s", workflow);
    size_t n = (size_t)PQntuples(r);
    out->v = calloc(n ? n : 1, sizeof *out->v);
    if (!out->v) {
        PQclear(r);
        return tm_err_set(err, "out of memory for %zu task runs", n);
    }
    for (size_t i = 0; i < n; i++) {
        out->v[i].run = PQgetvalue(r, (int)i, 0);
        out->v[i].process = PQgetvalue(r, (int)i, 1);
        out->v[i].complete_ms = num_or_nan(r, (int)i, 2);
        out->v[i].completed = strcmp(PQgetvalue(r, (int)i, 3), "t") == 0;
    }
    out->n = n;
    out->owner = r;
    return 0;
}

void lab_tail_rows_free(lab_tail_rows *t) {
    if (!t)
        return;
    free(t->v);
    PQclear(t->owner);
    memset(t, 0, sizeof *t);
}

char **lab_store_changed_workflows(lab_store *s, const char *since, char *now_out, tm_err *err) {
    const char *params[] = {since && *since ? since : NULL};
    PGresult *r = tm_pg_exec(s->conn,
                             "SELECT DISTINCT workflow, now()::text FROM task_runs"
                             " WHERE $1::timestamptz IS NULL OR ingested_at >= $1::timestamptz",
                             1, params, err);
    if (!r)
        return NULL;
    int n = PQntuples(r);
    char **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; v && i < n; i++)
        v[i] = strdup(PQgetvalue(r, i, 0));
    PQclear(r);
    if (!v) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    /* ingested_at is the writer's transaction start, which can precede its commit by the
     * length of the transaction: look back five minutes so a slow commit is seen next time.
     * Re-labelling a workflow twice costs little; missing one would leave stale labels. */
    r = tm_pg_exec(s->conn, "SELECT (now() - interval '5 minutes')::text", 0, NULL, err);
    if (!r) {
        lab_strv_free(v);
        return NULL;
    }
    snprintf(now_out, 64, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

void lab_strv_free(char **v) {
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

long lab_store_count(lab_store *s, const char *workflow, tm_err *err) {
    const char *params[] = {workflow};
    PGresult *r =
        tm_pg_exec(s->conn, "SELECT count(*) FROM task_runs WHERE workflow = $1", 1, params, err);
    if (!r)
        return -1;
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}
