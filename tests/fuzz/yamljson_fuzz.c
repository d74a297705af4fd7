/* yamljson_fuzz.c: fuzzes YAML -> JSON (lib/yamljson.h), the path of every config file, node
 * file, kubeconfig and scenario. Checks that a stream whose every document parses also parses
 * as its first document, and that every result serialises. */
#include "fuzz/fuzz_util.h"
#include "lib/yamljson.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    json_t *one = tm_yaml_parse((const char *)data, size, "fuzz.yaml", &err);
    if (!one)
        FZ_CHECK(err.msg[0] != '\0');
    json_t *all = tm_yaml_parse_all((const char *)data, size, "fuzz.yaml", &err);
    if (!all)
        FZ_CHECK(err.msg[0] != '\0');
    else
        FZ_CHECK(json_is_array(all));
    if (all && !one)
        FZ_FAIL("every document parses but the first one alone does not");
    char *s = one ? json_dumps(one, JSON_ENCODE_ANY) : NULL;
    free(s);
    s = all ? json_dumps(all, JSON_ENCODE_ANY) : NULL;
    free(s);
    json_decref(one);
    json_decref(all);
    return 0;
}
