/* store.c: the DAM's requests table (store.h). */
#include "dam/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pg.h"

struct dam_store {
    PGconn *c;
    pthread_mutex_t mu;
};

/* The DAM's own series of migrations, recorded in dam_schema_migrations (tm_pg_migrate_set):
 * the chart points the DAM at the labeler's database, whose versions live in schema_migrations
 * (one shared table made the labeler skip its migration 1 after the DAM's "1", and made the DAM
 * refuse a labeler database at version 4). IF NOT EXISTS: a database where an earlier build
 * created the table without recording it. */
static const tm_pg_migration migrations[] = {
    {1, "dam requests",
     "CREATE TABLE IF NOT EXISTS dam_requests ("
     " id text PRIMARY KEY,"
     " state text NOT NULL,"
     " record jsonb NOT NULL,"
     " created_at timestamptz NOT NULL DEFAULT now(),"
     " updated_at timestamptz NOT NULL DEFAULT now());"
     "CREATE INDEX IF NOT EXISTS dam_requests_state ON dam_requests (state, created_at);"},
};

dam_store *dam_store_open(const char *conninfo, int timeout_ms, tm_err *err) {
    tm_pg_limits lim = {.statement_ms = timeout_ms,
                        .lock_ms = timeout_ms / 2,
                        .answer_ms = timeout_ms + 2000,
                        .sync_commit = true};
    PGconn *c = tm_pg_connect_limited(conninfo, &lim, err);
    if (!c)
        return NULL;
    int applied = 0;
    /* its own series (dam_schema_migrations): the database may be the labeler's */
    if (tm_pg_migrate_set(c, "dam", migrations, sizeof migrations / sizeof *migrations, &applied,
                          err) < 0) {
        tm_pg_close(c);
        return NULL;
    }
    dam_store *s = calloc(1, sizeof *s);
    if (!s) {
        tm_pg_close(c);
        tm_err_set(err, "out of memory");
        return NULL;
    }
    s->c = c;
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void dam_store_close(dam_store *s) {
    if (!s)
        return;
    tm_pg_close(s->c);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Runs one statement under the lock, reconnecting once when the connection was lost. */
static PGresult *exec(dam_store *s, const char *sql, int n, const char *const *p, tm_err *err) {
    pthread_mutex_lock(&s->mu);
    tm_pg_ensure(s->c);
    PGresult *r = tm_pg_exec(s->c, sql, n, p, err);
    if (!r && tm_pg_err_retryable(s->c, err) && tm_pg_ensure(s->c))
        r = tm_pg_exec(s->c, sql, n, p, err);
    pthread_mutex_unlock(&s->mu);
    return r;
}

bool dam_store_ping(dam_store *s) {
    tm_err err = {0};
    PGresult *r = exec(s, "SELECT 1", 0, NULL, &err);
    PQclear(r);
    return r != NULL;
}

static int write_rec(dam_store *s, const char *sql, const json_t *rec, tm_err *err) {
    const char *id = json_string_value(json_object_get(rec, "id"));
    const char *state = json_string_value(json_object_get(rec, "state"));
    if (!id || !state)
        return tm_err_set(err, "request record without id or state");
    char *text = json_dumps(rec, JSON_COMPACT);
    if (!text)
        return tm_err_set(err, "out of memory");
    const char *p[] = {id, state, text};
    PGresult *r = exec(s, sql, 3, p, err);
    free(text);
    if (!r)
        return -1;
    int rows = atoi(PQcmdTuples(r));
    PQclear(r);
    return rows == 0 ? 1 : 0;
}

int dam_store_insert(dam_store *s, const json_t *rec, tm_err *err) {
    int rc =
        write_rec(s, "INSERT INTO dam_requests (id, state, record) VALUES ($1, $2, $3)", rec, err);
    return rc < 0 ? tm_err_wrap(err, "storing the request") : 0;
}

int dam_store_update(dam_store *s, const json_t *rec, tm_err *err) {
    int rc = write_rec(
        s, "UPDATE dam_requests SET state = $2, record = $3, updated_at = now() WHERE id = $1", rec,
        err);
    return rc < 0 ? tm_err_wrap(err, "updating the request") : rc;
}

static json_t *parse_record(const char *text, tm_err *err) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        tm_err_set(err, "stored request is not JSON: %s", je.text);
    return j;
}

json_t *dam_store_get(dam_store *s, const char *id, int *found, tm_err *err) {
    const char *p[] = {id};
    *found = 0;
    PGresult *r = exec(s, "SELECT record FROM dam_requests WHERE id = $1", 1, p, err);
    if (!r) {
        *found = 1; /* unknown: not "absent" */
        return NULL;
    }
    json_t *j = NULL;
    if (PQntuples(r) == 1) {
        *found = 1;
        j = parse_record(PQgetvalue(r, 0, 0), err);
    }
    PQclear(r);
    return j;
}

int dam_store_delete(dam_store *s, const char *id, tm_err *err) {
    const char *p[] = {id};
    PGresult *r = exec(s, "DELETE FROM dam_requests WHERE id = $1", 1, p, err);
    PQclear(r);
    return r ? 0 : -1;
}

json_t *dam_store_active(dam_store *s, tm_err *err) {
    PGresult *r = exec(s,
                       "SELECT record FROM dam_requests WHERE state IN ('PENDING', 'DELETED')"
                       " OR (state = 'DONE' AND record->'submission'->>'state' = 'RUNNING')"
                       " ORDER BY created_at, id",
                       0, NULL, err);
    if (!r)
        return NULL;
    json_t *a = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *j = parse_record(PQgetvalue(r, i, 0), err);
        if (j)
            json_array_append_new(a, j);
    }
    PQclear(r);
    return a;
}

json_t *dam_store_counts(dam_store *s, tm_err *err) {
    PGresult *r = exec(s, "SELECT state, count(*) FROM dam_requests GROUP BY state", 0, NULL, err);
    if (!r)
        return NULL;
    json_t *o = json_object();
    for (int i = 0; i < PQntuples(r); i++)
        json_object_set_new(o, PQgetvalue(r, i, 0), json_integer(atoll(PQgetvalue(r, i, 1))));
    PQclear(r);
    return o;
}
