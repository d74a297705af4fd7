/* labelvalue.c: names in Kubernetes label-value form, as Nextflow writes them on task pods
 * (labelvalue.h). */
#include "labelvalue.h"

#include <stdbool.h>
#include <string.h>

static bool label_alnum(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

size_t tm_label_value_sanitize(const char *in, char out[TM_LABEL_VALUE_MAX + 1]) {
    size_t n = 0;
    bool in_run = false;
    for (size_t i = 0; in && in[i] && i < TM_LABEL_VALUE_MAX; i++) {
        unsigned char c = (unsigned char)in[i];
        if (label_alnum(c) || c == '.' || c == '_' || c == '-') {
            out[n++] = (char)c;
            in_run = false;
        } else if (!in_run) {
            out[n++] = '_';
            in_run = true;
        }
    }
    size_t start = 0;
    while (start < n && !label_alnum((unsigned char)out[start]))
        start++;
    while (n > start && !label_alnum((unsigned char)out[n - 1]))
        n--;
    memmove(out, out + start, n - start);
    out[n - start] = '\0';
    return n - start;
}
