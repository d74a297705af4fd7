/* waits_store.c: see waits_store.h. */
#include "labeler/waits_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labeler/migrations.h"

struct lab_waits_store {
    PGconn *conn;
    lab_waits_warn_fn warn;
    void *ud;
};

lab_waits_store *lab_waits_store_open(const char *conninfo, const tm_pg_limits *lim,
                                      lab_waits_warn_fn warn, void *ud, tm_err *err) {
    lab_waits_store *s = calloc(1, sizeof *s);
    if (!s) {
        tm_err_set(err, "out of memory");
        return NULL;
    }
    s->warn = warn;
    s->ud = ud;
    s->conn = tm_pg_connect_limited(conninfo, lim, err);
    size_t n;
    const tm_pg_migration *m = lab_migrations(&n);
    if (!s->conn || tm_pg_migrate(s->conn, m, n, NULL, err) < 0) {
        lab_waits_store_close(s);
        return NULL;
    }
    return s;
}

void lab_waits_store_close(lab_waits_store *s) {
    if (!s)
        return;
    tm_pg_close(s->conn);
    free(s);
}

bool lab_waits_store_ensure(lab_waits_store *s) {
    return tm_pg_ensure(s->conn);
}

bool lab_waits_store_retryable(const lab_waits_store *s, const tm_err *err) {
    return !s || tm_pg_err_retryable(s->conn, err);
}

static void warnf(lab_waits_store *s, const asa_key *k, const char *why) {
    char msg[TM_ERR_MAX + 256];
    snprintf(msg, sizeof msg,
             "asa_waits row ignored (namespace %s, node group '%s', %d pods of %lldm cpu and %lld "
             "bytes): %s",
             k->ns, k->group, k->pods, k->cpu_milli, k->mem_bytes, why);
    if (s->warn)
        s->warn(s->ud, msg);
}

/* The key's five columns as text parameters. */
typedef struct {
    char pods[16], cpu[24], mem[24];
    const char *v[5];
} key_params;

static void key_params_make(key_params *p, const asa_key *k) {
    snprintf(p->pods, sizeof p->pods, "%d", k->pods);
    snprintf(p->cpu, sizeof p->cpu, "%lld", k->cpu_milli);
    snprintf(p->mem, sizeof p->mem, "%lld", k->mem_bytes);
    p->v[0] = k->ns;
    p->v[1] = k->group;
    p->v[2] = p->pods;
    p->v[3] = p->cpu;
    p->v[4] = p->mem;
}

#define KEY_WHERE                                                                                  \
    "namespace = $1 AND node_group = $2 AND pods = $3::integer AND cpu_milli = $4::bigint AND "    \
    "memory_bytes = $5::bigint"

/* Writes r's state over its row (which the caller's transaction holds). */
static int put_row(lab_waits_store *s, const waits_record *r, tm_err *err) {
    char *state = waits_state_to_json(r);
    if (!state)
        return tm_err_set(err, "out of memory writing the asa state");
    key_params kp = {.v = {0}};
    key_params_make(&kp, &r->key);
    char est[40], obs[24];
    snprintf(est, sizeof est, "%.17g", waits_estimate(r));
    snprintf(obs, sizeof obs, "%lld", r->st.observations);
    const char *params[] = {kp.v[0], kp.v[1], kp.v[2], kp.v[3], kp.v[4], state, est, obs};
    int rc = tm_pg_run(s->conn,
                       "INSERT INTO asa_waits (namespace, node_group, pods, cpu_milli,"
                       " memory_bytes, state, estimate_s, observations) VALUES ($1, $2,"
                       " $3::integer, $4::bigint, $5::bigint, $6, $7::double precision,"
                       " $8::bigint) ON CONFLICT (namespace, node_group, pods, cpu_milli,"
                       " memory_bytes) DO UPDATE SET state = EXCLUDED.state,"
                       " estimate_s = EXCLUDED.estimate_s, observations = EXCLUDED.observations,"
                       " updated_at = now()",
                       8, params, err);
    free(state);
    return rc;
}

/* Inside the observation's transaction: claims the request id, or each member of a gang
 * ("member:UID"). 1 when every claim is new, 0 when one was claimed before (the transaction is
 * then rolled back: nothing is kept). */
static int claim(lab_waits_store *s, const char *request_id, const char *members, tm_err *err) {
    const char *params[] = {members ? members : request_id};
    PGresult *r = tm_pg_exec(
        s->conn,
        members ? "INSERT INTO asa_observed (request_id) SELECT 'member:' || m FROM"
                  " unnest(string_to_array($1, ' ')) AS m ON CONFLICT (request_id) DO NOTHING"
                : "INSERT INTO asa_observed (request_id) VALUES ($1)"
                  " ON CONFLICT (request_id) DO NOTHING",
        1, params, err);
    if (!r)
        return -1;
    long want = 1;
    for (const char *c = members; c && *c; c++)
        want += *c == ' ';
    int fresh = atol(PQcmdTuples(r)) == want;
    PQclear(r);
    return fresh;
}

/* Inside the transaction: the shape's row, locked (created fresh when absent). */
static int lock_row(lab_waits_store *s, const asa_key *k, waits_record *rec, tm_err *err) {
    waits_record_init(rec, k);
    char *fresh = waits_state_to_json(rec);
    if (!fresh)
        return tm_err_set(err, "out of memory writing the asa state");
    key_params kp = {.v = {0}};
    key_params_make(&kp, k);
    const char *ins[] = {kp.v[0], kp.v[1], kp.v[2], kp.v[3], kp.v[4], fresh};
    int rc = tm_pg_run(s->conn,
                       "INSERT INTO asa_waits (namespace, node_group, pods, cpu_milli,"
                       " memory_bytes, state, estimate_s, observations) VALUES ($1, $2,"
                       " $3::integer, $4::bigint, $5::bigint, $6, 0, 0) ON CONFLICT DO NOTHING",
                       6, ins, err);
    free(fresh);
    if (rc < 0)
        return -1;
    PGresult *r = tm_pg_exec(s->conn, "SELECT state FROM asa_waits WHERE " KEY_WHERE " FOR UPDATE",
                             5, kp.v, err);
    if (!r)
        return -1;
    tm_err why = {0};
    if (PQntuples(r) != 1 || waits_state_from_json(PQgetvalue(r, 0, 0), rec, &why) < 0)
        warnf(s, k, PQntuples(r) != 1 ? "row vanished" : why.msg); /* rec stays fresh */
    PQclear(r);
    return 0;
}

int lab_waits_store_observe(lab_waits_store *s, const asa_key *k, const char *request_id,
                            const char *members, bool censored, double wait_s,
                            const asa_config *cfg, asa_rng *rng, waits_record *out, tm_err *err) {
    if (!request_id || !*request_id || strlen(request_id) > 200)
        return tm_err_set(err, "asa waits: request id '%.40s' is empty or longer than 200",
                          request_id ? request_id : "");
    if (members && (!*members || members[0] == ' ' || strstr(members, "  ") ||
                    members[strlen(members) - 1] == ' '))
        return tm_err_set(err,
                          "asa waits: %s: member list '%.40s' is not uids separated by "
                          "single spaces",
                          request_id, members);
    if (tm_pg_begin(s->conn, err) < 0)
        return -1;
    waits_record rec;
    int fresh = claim(s, request_id, members, err);
    if (fresh <= 0 || censored) { /* censored: the claim alone is kept */
        if (fresh > 0 && tm_pg_commit(s->conn, err) < 0) {
            tm_pg_rollback(s->conn);
            return tm_err_wrap(err, "asa waits: claiming %s", request_id);
        }
        if (fresh <= 0)
            tm_pg_rollback(s->conn);
        return 0;
    }
    if (lock_row(s, k, &rec, err) < 0 || waits_observe(&rec, cfg, wait_s, rng, err) < 0 ||
        put_row(s, &rec, err) < 0 || tm_pg_commit(s->conn, err) < 0) {
        tm_pg_rollback(s->conn);
        return tm_err_wrap(err, "asa waits: feeding the wait of %s", request_id);
    }
    if (out)
        *out = rec;
    return 1;
}

int lab_waits_store_list(lab_waits_store *s, const char *ns, waits_record **out, size_t *n,
                         tm_err *err) {
    *out = NULL;
    *n = 0;
    const char *params[] = {ns};
    PGresult *r = tm_pg_exec(s->conn,
                             "SELECT namespace, node_group, pods, cpu_milli, memory_bytes, state"
                             " FROM asa_waits WHERE $1::text IS NULL OR namespace = $1"
                             " ORDER BY namespace, node_group, pods, cpu_milli, memory_bytes",
                             1, params, err);
    if (!r)
        return -1;
    int rows = PQntuples(r);
    waits_record *v = calloc(rows ? (size_t)rows : 1, sizeof *v);
    if (!v) {
        PQclear(r);
        return tm_err_set(err, "out of memory for %d asa_waits rows", rows);
    }
    for (int i = 0; i < rows; i++) {
        asa_key k;
        tm_err why = {0};
        const char *pods = PQgetvalue(r, i, 2);
        long long np = strtoll(pods, NULL, 10);
        if (asa_key_make(&k, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
                         np > 0 && np <= 100000 ? (int)np : 0,
                         strtoll(PQgetvalue(r, i, 3), NULL, 10),
                         strtoll(PQgetvalue(r, i, 4), NULL, 10), &why) < 0) {
            memset(&k, 0, sizeof k);
            snprintf(k.ns, sizeof k.ns, "%.63s", PQgetvalue(r, i, 0));
            k.pods = (int)np;
            warnf(s, &k, why.msg);
            continue;
        }
        waits_record_init(&v[*n], &k);
        if (waits_state_from_json(PQgetvalue(r, i, 5), &v[*n], &why) < 0) {
            warnf(s, &k, why.msg);
            continue;
        }
        (*n)++;
    }
    PQclear(r);
    *out = v;
    return 0;
}

long lab_waits_store_prune(lab_waits_store *s, tm_err *err) {
    PGresult *r = tm_pg_exec(
        s->conn, "DELETE FROM asa_observed WHERE observed_at < now() - interval '2 days'", 0, NULL,
        err);
    if (!r)
        return -1;
    long n = atol(PQcmdTuples(r));
    PQclear(r);
    return n;
}
