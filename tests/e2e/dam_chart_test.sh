#!/usr/bin/env bash
# dam_chart_test.sh: the chart's DAM objects (dam.enabled) as tarema-dam reads them: the
# rendered federation ConfigMap loads (namespace "" becomes the release namespace, relative
# kubeconfigs resolve under the mounted Secret), the maintenance ConfigMap's windows parse, the
# RBAC is exactly what dam/ calls, the token Secret is the DAM's own, the server certificate
# names the DAM's Service, the schema refuses typos.
# Needs helm (hack/build-controlplane.sh puts it in the tools cache); no cluster.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
HELM=$(command -v helm || echo "${TAREMA_CACHE:-$HOME/.cache/tarema}/bin/helm")
CHART="$REPO_ROOT/charts/tarema"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/values.yaml" <<'YAML'
dam:
  enabled: true
  kubeconfigSecret: dam-kubeconfigs
  federation:
    datasets: [{name: era5, location: lrz-dss, site: lrz, size: 40Gi}]
    transfers: [{from: lrz-dss, to: it4i-lustre, bytes_per_s: 100Mi}]
    clusters:
      - {name: local, kubeconfig: in-cluster, namespace: "", location: it4i-lustre}
      - {name: lrz, kubeconfig: kubeconfigs/lrz, context: lrz, namespace: science, location: lrz-dss, database: kubeconfigs/lrz-db}
  maintenance:
    windows:
      - {start: "2026-12-01T06:00:00Z", end: "2026-12-01T10:00:00Z", reason: kernel}
      - {start: "2026-12-01T09:00:00Z", end: "2026-12-01T12:00:00Z", reason: storage}
YAML
check "helm lint --strict with dam enabled" "$HELM" lint --strict "$CHART" -f "$TMP/values.yaml"
"$HELM" template t "$CHART" -n science -f "$TMP/values.yaml" >"$TMP/all.yaml" 2>"$TMP/err" || cat "$TMP/err"
python3 - "$TMP/all.yaml" "$TMP" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d['kind'] == 'ConfigMap' and d['metadata']['name'].endswith('-dam-federation'):
        open(sys.argv[2] + '/federation.yaml', 'w').write(d['data']['federation.yaml'])
    if d['kind'] == 'ConfigMap' and d['metadata']['name'] == 'tarema-dam-maintenance':
        open(sys.argv[2] + '/windows.yaml', 'w').write(d['data']['windows'])
PY
check "the rendered federation loads; in-cluster and kubeconfigs/lrz are tried and reported, not refused" bash -c "
  set -o pipefail; env -u KUBERNETES_SERVICE_HOST '$BIN/tarema-dam' collect --federation '$TMP/federation.yaml' 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = {x[\"name\"]: x for x in d[\"clusters\"]}
assert set(c) == {\"local\", \"lrz\"}, c
assert \"unreachable\" in c[\"local\"] and \"$TMP/kubeconfigs/lrz\" in c[\"lrz\"][\"unreachable\"], c
assert d[\"datasets\"][0][\"size\"] == \"40Gi\"
'"
check "namespace \"\" is the release namespace in the federation file" grep -q 'namespace: science' "$TMP/federation.yaml"
check "a member's database (a file in the kubeconfig Secret) reaches the federation file" grep -q 'database: kubeconfigs/lrz-db' "$TMP/federation.yaml"
# the maintenance ConfigMap's windows through the ranking: both windows overlap, merged into one
cat >"$TMP/clusters.yaml" <<YAML
now: 2026-12-01T05:00:00Z
clusters:
  - name: local
    cores: {used: 0, total: 64}
    maintenance:
$(sed 's/^/      /' "$TMP/windows.yaml")
YAML
printf 'name: j\ncores: 4\nruntime: 2h\n' >"$TMP/job.yaml"
check "the maintenance ConfigMap's windows parse and merge (job ending in one is masked)" bash -c "
  '$BIN/tarema-dam' rank '$TMP/job.yaml' --clusters '$TMP/clusters.yaml' --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
e = d[\"excluded\"][0]
assert d[\"chosen\"] is None and e[\"kind\"] == \"maintenance\" and e[\"windows_merged\"] == 1, d
'"
check "RBAC: list nodes, pods, storageclasses; get only the two ConfigMaps; pods in the namespace" python3 - "$TMP/all.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cr = [d for d in docs if d['kind'] == 'ClusterRole' and d['metadata']['name'].endswith('-dam')][0]
rules = {(g, r): sorted(x['verbs']) for x in cr['rules'] for g in x['apiGroups'] for r in x['resources']}
assert rules == {('', 'nodes'): ['list'], ('', 'pods'): ['list'], ('storage.k8s.io', 'storageclasses'): ['list']}, rules
role = [d for d in docs if d['kind'] == 'Role' and d['metadata']['name'].endswith('-dam')][0]
cm = [x for x in role['rules'] if 'configmaps' in x['resources']][0]
assert cm['verbs'] == ['get'] and sorted(cm['resourceNames']) == ['tarema-asa-state', 'tarema-dam-maintenance'], cm
assert not any('secrets' in x['resources'] for x in cr['rules'] + role['rules'])
PY
check "RBAC: the planner Workflows it submits: create, get, delete in the namespace, nothing more" python3 - "$TMP/all.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
role = [d for d in docs if d['kind'] == 'Role' and d['metadata']['name'].endswith('-dam')][0]
wf = [x for x in role['rules'] if 'workflows' in x['resources']]
assert len(wf) == 1 and wf[0]['apiGroups'] == ['tarema.io'] and sorted(wf[0]['verbs']) == ['create', 'delete', 'get'], wf
PY
check "the DAM has its own token Secret, mounted as its --auth-token-file" python3 - "$TMP/all.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
dep = [d for d in docs if d['kind'] == 'Deployment' and d['metadata']['name'].endswith('-dam')][0]
spec = dep['spec']['template']['spec']
c = spec['containers'][0]
assert '--auth-token-file=/etc/tarema/dam-auth/token' in c['args'], c['args']
vol = [v for v in spec['volumes'] if v['name'] == 'dam-auth'][0]
assert vol['secret']['secretName'] == 't-tarema-dam-auth', vol
assert any(d['kind'] == 'Secret' and d['metadata']['name'] == 't-tarema-dam-auth' for d in docs)
assert spec['serviceAccountName'] == 't-tarema-dam' and dep['spec']['replicas'] == 1
PY
check "the bundled PostgreSQL admits the DAM (its NetworkPolicy admitted only the labeler)" python3 - "$TMP/all.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
dam = [d for d in docs if d['kind'] == 'Deployment' and d['metadata']['name'].endswith('-dam')][0]
pg = [d for d in docs if d['kind'] in ('StatefulSet', 'Deployment') and 'postgresql' in d['metadata']['name']][0]
dam_labels = dam['spec']['template']['metadata']['labels']
pg_labels = pg['spec']['template']['metadata']['labels']
ok = False
for d in docs:
    if d['kind'] != 'NetworkPolicy':
        continue
    sel = d['spec']['podSelector'].get('matchLabels', {})
    if not all(pg_labels.get(k) == v for k, v in sel.items()):
        continue
    for rule in d['spec'].get('ingress', []):
        ports = [p['port'] for p in rule.get('ports', [])]
        for f in rule.get('from', []):
            m = f.get('podSelector', {}).get('matchLabels', {})
            if 5432 in ports and m and all(dam_labels.get(k) == v for k, v in m.items()):
                ok = True
assert ok, 'no NetworkPolicy lets the DAM reach PostgreSQL on 5432'
PY
# TLS: the chart's server certificate names the DAM's Service in every form (clients of its REST
# API verify it without tls.extraDnsNames).
"$HELM" template t "$CHART" -n science -f "$TMP/values.yaml" --set tls.enabled=true >"$TMP/tls.yaml" 2>"$TMP/err" || cat "$TMP/err"
check "tls.enabled: the server certificate names the DAM Service t-tarema-dam in every form" python3 - "$TMP/tls.yaml" <<'PY'
import sys, yaml, base64, subprocess
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
crt = base64.b64decode([d for d in docs if d['kind'] == 'Secret' and d['metadata']['name'] == 't-tarema-tls'][0]['data']['tls.crt'])
txt = subprocess.run(['openssl', 'x509', '-noout', '-ext', 'subjectAltName'], input=crt, capture_output=True).stdout.decode()
for n in ('t-tarema-dam', 't-tarema-dam.science', 't-tarema-dam.science.svc', 't-tarema-dam.science.svc.cluster.local'):
    assert 'DNS:%s,' % n in txt.strip() + ',', (n, txt)
svc = [d for d in docs if d['kind'] == 'Service' and d['metadata']['name'] == 't-tarema-dam']
assert svc, 'no Service t-tarema-dam'
PY
check "schema: an unknown dam key is refused, naming it" bash -c "'$HELM' template t '$CHART' --set dam.enabled=true --set dam.bogus=1 2>&1 | grep -q \"'bogus' not allowed\""
# rendered first: a failing helm template renders nothing, which is no proof of "no DAM object"
check "dam disabled by default: no DAM object rendered" bash -c "'$HELM' template t '$CHART' >'$TMP/default.yaml' && grep -q '^kind: Deployment' '$TMP/default.yaml' && ! grep 'component: dam' '$TMP/default.yaml'"
summary
