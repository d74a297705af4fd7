/* auth.h: shared-secret bearer tokens for tarema's HTTP endpoints.
 *
 *   tm_auth *a = tm_auth_new("/etc/tarema/auth/token", &err);   // the Secret's file
 *   if (tm_auth_check(a, presented, len)) ...                    // constant-time compare
 *
 * The token is the file's content with surrounding whitespace removed (a Secret mounted as a
 * file often ends in a newline); it must be at least 16 bytes. The file is re-read when its
 * modification time or size changes (checked at most once a second), so a rotated Secret
 * takes effect without a restart; while the new file is unreadable or empty the last good
 * token stays in force (and a warning is logged).
 *
 * Credential extraction from HTTP headers is here too, so every server parses them alike:
 *   Authorization: Bearer TOKEN
 *   Authorization: Basic base64(USER:TOKEN)   (any user; what Nextflow's weblog.basicToken
 *                                              "USER:PASSWORD" sends)
 *
 * Kubernetes tokens (optional): with tm_auth_enable_tokenreview, a token that is not the shared
 * one is sent to the API server as a TokenReview; it authenticates when the API server says
 * so and the user it names is on the allowed list (e.g.
 * "system:serviceaccount:nextflow:default"). Verdicts are cached by the token's SHA-256 (60 s
 * when accepted, 10 s when refused, 64 entries), so a client posting events does not cost an
 * API call each. The ServiceAccount of the component needs `create tokenreviews`
 * (authentication.k8s.io, cluster scope).
 *
 * Thread-safe: checks from any number of threads. */
#ifndef TAREMA_AUTH_H
#define TAREMA_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define TM_AUTH_MIN_TOKEN 16

typedef struct tm_auth tm_auth;
typedef struct tm_kube tm_kube;

/* Reads the token file now (an unreadable, empty or too short file is an error naming it).
 * token_file NULL: no shared token (only TokenReview, once enabled). Free with tm_auth_free. */
tm_auth *tm_auth_new(const char *token_file, tm_err *err);
/* Accepts API-server tokens of the given users (NULL-terminated, copied) via TokenReview on k
 * (borrowed, must outlive a; its synchronous calls are thread-safe). 0 or -1 with err. */
int tm_auth_enable_tokenreview(tm_auth *a, tm_kube *k, const char *const *users, tm_err *err);
void tm_auth_free(tm_auth *a);

/* True when token (len bytes, not NUL-terminated necessarily) equals the current token. The
 * comparison takes the same time whatever the position of the first difference. */
bool tm_auth_check(tm_auth *a, const char *token, size_t len);

/* The token presented in an Authorization header value: the Bearer token, or the password of
 * Basic credentials (decoded into buf). NULL when the header is absent or has another scheme.
 * *len gets the token's length. */
const char *tm_auth_from_header(const char *authorization, char *buf, size_t buf_size, size_t *len);

/* Constant-time equality of two byte strings (different lengths are unequal; the time depends
 * only on the longer length). */
bool tm_auth_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
