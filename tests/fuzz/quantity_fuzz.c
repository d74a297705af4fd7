/* quantity_fuzz.c: fuzzes Kubernetes quantity parsing (lib/quantity.h) and checks that what
 * the formatters print parses back to the same value. */
#include <inttypes.h>

#include "fuzz/fuzz_util.h"
#include "lib/quantity.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_err err = {{0}, 0};
    int64_t milli = 0, whole = 0;
    char buf[TM_QUANTITY_BUF];
    int rm = tm_quantity_parse_milli(s, &milli, &err);
    FZ_CHECK(rm == 0 || (rm == -1 && err.msg[0] != '\0'));
    int rw = tm_quantity_parse(s, &whole, &err);
    FZ_CHECK(rw == 0 || (rw == -1 && err.msg[0] != '\0'));
    if (rm == 0) {
        int64_t back = 0;
        tm_quantity_format_milli(milli, buf, sizeof buf);
        if (tm_quantity_parse_milli(buf, &back, &err) != 0 || back != milli) {
            fprintf(stderr, "'%s' -> %" PRId64 " -> '%s' -> %" PRId64 " (%s)\n", s, milli, buf,
                    back, err.msg);
            FZ_FAIL("tm_quantity_format_milli does not parse back to the same value");
        }
    }
    if (rw == 0) {
        int64_t back = 0;
        tm_quantity_format_bytes(whole, buf, sizeof buf);
        if (tm_quantity_parse(buf, &back, &err) != 0 || back != whole) {
            fprintf(stderr, "'%s' -> %" PRId64 " -> '%s' -> %" PRId64 " (%s)\n", s, whole, buf,
                    back, err.msg);
            FZ_FAIL("tm_quantity_format_bytes does not parse back to the same value");
        }
    }
    /* Both read the same grammar; a whole-unit value is 1000 times smaller than its milli
     * value, so only the milli one can be out of range. */
    if (rm == 0)
        FZ_CHECK(rw == 0);
    if (rw == 0 && rm != 0) {
        tm_quantity_parse_milli(s, &milli, &err);
        FZ_CHECK(strstr(err.msg, "too large") != NULL);
    }
    free(s);
    return 0;
}
