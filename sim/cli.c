/* cli.c: argument parsing and output shared by the tarema-sim subcommands (see cli.h). */
#include "sim/cli.h"

#include <stdio.h>
#include <stdlib.h>

int sim_cli_seed(const char *cmd, const char *arg, unsigned long long *out) {
    char *end;
    unsigned long long v = strtoull(arg, &end, 10);
    if (*end || !*arg || arg[0] == '-') {
        fprintf(stderr, "tarema-sim%s%s: --seed '%s' is not a non-negative integer\n",
                cmd ? " " : "", cmd ? cmd : "", arg);
        return -1;
    }
    *out = v;
    return 0;
}

int sim_cli_count(const char *cmd, const char *opt, const char *arg, int lo, int hi, int *out) {
    char *end;
    long v = strtol(arg, &end, 10);
    if (*end || !*arg || v < lo || v > hi) {
        fprintf(stderr, "tarema-sim%s%s: --%s '%s' is not a count from %d to %d\n", cmd ? " " : "",
                cmd ? cmd : "", opt, arg, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

void sim_cli_print_json(json_t *j, size_t flags) {
    json_dumpf(j, stdout, flags);
    fputc('\n', stdout);
    json_decref(j);
}
