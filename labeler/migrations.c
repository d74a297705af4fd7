/* migrations.c: see migrations.h. The .sql files are included byte for byte by the assembler
 * (.incbin, paths relative to the repository root where make runs) and NUL-terminated, so the
 * SQL has one source of truth and needs no code generator. Add a migration: write the next
 * NNN_name.sql, add an EMBED line and a table entry; never edit a released migration.
 * (.incbin is invisible to -MMD: a changed .sql needs this file rebuilt, which adding the
 * EMBED line does.) */
#include "labeler/migrations.h"

#define EMBED(sym, path)                                                                           \
    __asm__(".section .rodata\n"                                                                   \
            ".global " #sym "\n"                                                                   \
            ".type " #sym ", @object\n" #sym ":\n"                                                 \
            ".incbin \"" path "\"\n"                                                               \
            ".byte 0\n"                                                                            \
            ".previous\n")

EMBED(lab_sql_001, "labeler/migrations/001_task_runs.sql");
EMBED(lab_sql_002, "labeler/migrations/002_weblog_runs.sql");
EMBED(lab_sql_003, "labeler/migrations/003_identity_primary_key.sql");
EMBED(lab_sql_004, "labeler/migrations/004_asa_waits.sql");
EMBED(lab_sql_005, "labeler/migrations/005_run_node_group.sql");
EMBED(lab_sql_006, "labeler/migrations/006_weblog_run_completed.sql");
extern const char lab_sql_001[], lab_sql_002[], lab_sql_003[], lab_sql_004[], lab_sql_005[],
    lab_sql_006[];

static const tm_pg_migration migrations[] = {
    {1, "task_runs", lab_sql_001},
    {2, "weblog_runs", lab_sql_002},
    {3, "identity_primary_key", lab_sql_003},
    {4, "asa_waits", lab_sql_004},
    {5, "run_node_group", lab_sql_005},
    {6, "weblog_run_completed", lab_sql_006},
};

const tm_pg_migration *lab_migrations(size_t *n) {
    *n = sizeof migrations / sizeof migrations[0];
    return migrations;
}
