/* kubeconfig_fuzz.c: fuzzes kubeconfig loading (tm_kube_config_load of lib/kube.h) from YAML
 * text. The API takes a path, so the input goes to a temporary file. Loading must not read the
 * files a kubeconfig names, so no input can make it block or touch other files. */
#include <limits.h>

#include "fuzz/fuzz_util.h"
#include "lib/kube.h"

int FUZZ_ENTRY(const uint8_t *data, size_t size);

static void kubeconfig_check(const tm_kube_config *cfg, const tm_err *err) {
    if (!cfg) {
        FZ_CHECK(err->msg[0] != '\0');
        return;
    }
    FZ_CHECK(cfg->server != NULL && cfg->namespace != NULL && cfg->namespace[0] != '\0');
    FZ_CHECK(cfg->context != NULL);
    /* A client needs both halves of a client certificate or neither. */
    FZ_CHECK(!(cfg->cert_file || cfg->cert_data) == !(cfg->key_file || cfg->key_data));
}

int FUZZ_ENTRY(const uint8_t *data, size_t size) {
    char *path = fz_temp_file(P_tmpdir, ".yaml", data, size);
    if (!path)
        return 0;
    tm_err err = {{0}, 0};
    tm_kube_config *cfg = tm_kube_config_load(path, NULL, &err);
    kubeconfig_check(cfg, &err);
    tm_kube_config_free(cfg);
    /* An explicit context, as `--context` gives it. */
    memset(&err, 0, sizeof err);
    cfg = tm_kube_config_load(path, "ctx", &err);
    kubeconfig_check(cfg, &err);
    tm_kube_config_free(cfg);
    unlink(path);
    free(path);
    return 0;
}
