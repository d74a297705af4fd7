/* cli.h: what the tarema-sim subcommands (sizing, asa, federation) parse and print alike. */
#ifndef TAREMA_SIM_CLI_H
#define TAREMA_SIM_CLI_H

#include <jansson.h>
#include <stddef.h>

/* --seed ARG of subcommand CMD (NULL: tarema-sim itself): a non-negative integer (strtoull
 * alone would wrap "-1"). Returns 0 with *out, or -1 after printing "tarema-sim CMD: --seed
 * 'ARG' is not a non-negative integer" (the caller exits with the usage status, 2). */
int sim_cli_seed(const char *cmd, const char *arg, unsigned long long *out);

/* --OPT ARG of subcommand CMD (NULL: tarema-sim itself): an integer from lo to hi. Returns 0
 * with *out, or -1 after printing "tarema-sim CMD: --OPT 'ARG' is not a count from LO to HI"
 * (the caller exits with the usage status, 2). */
int sim_cli_count(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out);

/* j on stdout as JSON with the given json_dumpf flags and a final newline; releases j. */
void sim_cli_print_json(json_t *j, size_t flags);

#endif
