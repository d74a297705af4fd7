/* migrations.h: the labeler's database schema, as versioned SQL migrations.
 *
 * The SQL lives in labeler/migrations/NNN_name.sql and is compiled into the binary (so a
 * container needs no extra files); lib/pg.h's tm_pg_migrate applies what a database lacks. */
#ifndef TAREMA_LABELER_MIGRATIONS_H
#define TAREMA_LABELER_MIGRATIONS_H

#include <stddef.h>

#include "lib/pg.h"

/* The migrations in version order; *n gets their count. Static data, nothing to free. */
const tm_pg_migration *lab_migrations(size_t *n);

#endif
