/* yamljson_fuzz.c: fuzzes YAML -> JSON (lib/yamljson.h), the path of every config file, node
 * file, kubeconfig and scenario. Checks that a stream whose every document parses also parses
 * as its first document, that every result serialises, that no result is nested deeper than
 * TM_YAML_MAX_DEPTH (aliases included), and that every failure has a message. */
#include "fuzz/fuzz_util.h"
#include "lib/yamljson.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

/* Collection levels of v (0 for a scalar). Recursion is bounded by the limit under test plus
 * one level: deeper trees are reported, not descended. */
static int yamljson_depth(const json_t *v, int limit) {
    if (!json_is_array(v) && !json_is_object(v))
        return 0;
    if (limit < 0)
        return 1;
    int max = 0;
    size_t i;
    const char *k;
    json_t *c;
    if (json_is_array(v)) {
        json_array_foreach(v, i, c) {
            int d = yamljson_depth(c, limit - 1);
            max = d > max ? d : max;
        }
    } else {
        json_object_foreach((json_t *)v, k, c) {
            int d = yamljson_depth(c, limit - 1);
            max = d > max ? d : max;
        }
    }
    return max + 1;
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    tm_err err = {{0}, 0};
    json_t *one = tm_yaml_parse((const char *)data, size, "fuzz.yaml", &err);
    if (!one)
        FZ_CHECK(err.msg[0] != '\0');
    else
        FZ_CHECK(yamljson_depth(one, TM_YAML_MAX_DEPTH) <= TM_YAML_MAX_DEPTH);
    memset(&err, 0, sizeof err);
    json_t *all = tm_yaml_parse_all((const char *)data, size, "fuzz.yaml", &err);
    if (!all)
        FZ_CHECK(err.msg[0] != '\0');
    else
        FZ_CHECK(json_is_array(all) && yamljson_depth(all, TM_YAML_MAX_DEPTH + 1) <=
                                           TM_YAML_MAX_DEPTH + 1); /* + the stream's array */
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
