/* units_fuzz.c: fuzzes the Nextflow trace value parsers (labeler/units.h): durations, byte
 * sizes, percentages, timestamps (with and without the reader's hour cache) and integers, all
 * on the same text. The cached timestamp parser must agree with the uncached one. */
#include "fuzz/fuzz_util.h"
#include "labeler/units.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *s = fz_cstr(data, size);
    if (!s)
        return 0;
    tm_err err = {{0}, 0};
    int64_t v = 0, c1 = 0, c2 = 0;
    double d = 0;
    if (lab_parse_duration_ms(s, &v, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    if (lab_parse_bytes(s, &v, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    if (lab_parse_percent(s, &d, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    if (lab_parse_int(s, &v, &err) != 0)
        FZ_CHECK(err.msg[0] != '\0');
    int ru = lab_parse_timestamp_ms(s, &v, &err);
    lab_ts_cache cache;
    memset(&cache, 0, sizeof cache);
    int r1 = lab_parse_timestamp_ms_cached(s, &c1, &cache, &err);
    int r2 = lab_parse_timestamp_ms_cached(s, &c2, &cache, &err); /* now from the cache */
    FZ_CHECK(ru == r1 && r1 == r2);
    if (ru == 0 && (v != c1 || c1 != c2)) {
        fprintf(stderr, "'%s': uncached %lld, cached %lld then %lld\n", s, (long long)v,
                (long long)c1, (long long)c2);
        FZ_FAIL("cached timestamp parse differs from uncached");
    }
    free(s);
    return 0;
}
