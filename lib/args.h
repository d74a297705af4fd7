/* args.h: numeric command-line values, checked. atoi("abc") is 0 and atoi("80x") is 80: a
 * typo in --port or --poll-ms would start a component on a value nobody asked for. These
 * parse the whole string and name the flag, the value and the accepted range when it is not
 * a number in range ("--port: 'abc' is not an integer from 0 to 65535"). */
#ifndef TAREMA_ARGS_H
#define TAREMA_ARGS_H

#include "lib/error.h"

/* flag without its dashes ("port"); 0 and *out set, or -1 and err. */
int tm_arg_long(const char *flag, const char *s, long long lo, long long hi, long long *out,
                tm_err *err);
int tm_arg_int(const char *flag, const char *s, int lo, int hi, int *out, tm_err *err);
/* A finite number (strtod: "2.5", "1e3") from lo to hi. */
int tm_arg_double(const char *flag, const char *s, double lo, double hi, double *out, tm_err *err);
/* "true" or "false", exactly: "yes", "1" or "True" are refused, not read as one of them. */
int tm_arg_bool(const char *flag, const char *s, int *out, tm_err *err);

#endif
