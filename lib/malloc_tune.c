/* malloc_tune.c: glibc malloc settings for the API-heavy components.
 *
 * Why: parsing API responses with jansson frees and allocates millions of small blocks, which
 * glibc parks in its "fastbins"; and every TLS record read makes OpenSSL allocate a fresh
 * 16 KB buffer (curl releases them between reads). Each such large request first consolidates
 * all fastbins, so listing a big cluster spent 44 % of its CPU inside malloc. Without fastbins
 * (small blocks still go through the per-thread cache) listing 5,000 nodes and 50,000 pods took
 * 5.2 instead of 8.2 CPU seconds, at the same peak RSS (docs/performance.md). */
#include "lib/malloc_tune.h"

#include <malloc.h>

void tm_malloc_tune(void) {
#ifdef M_MXFAST
    mallopt(M_MXFAST, 0);
#endif
}
