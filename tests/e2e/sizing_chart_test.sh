#!/usr/bin/env bash
# tests/e2e/sizing_chart_test.sh: the chart's sizing webhook (webhook.enabled=true) on its own,
# no cluster needed: the MutatingWebhookConfiguration's caBundle is the CA of the chart's own
# certificates (the Helm-generated Secret; cert-manager's injection annotation when it issues
# them), failurePolicy Ignore, opt-in by namespace label, the Service in the certificate's
# DNS names, least-privilege RBAC (list nodes and pods, nothing written), the container's
# hardening, PostgreSQL reachable through the NetworkPolicy, and tarema-labeler accepting the
# Deployment's flags. Disabled (the default), nothing of it is rendered.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
HELM=$(command -v helm || echo "$HOME/.cache/tarema/bin/helm")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$HELM" template t charts/tarema --namespace tns --set webhook.enabled=true >"$work/on.yaml" 2>"$work/err" ||
  { fail "chart renders with webhook.enabled=true" "$(cat "$work/err")"; summary; exit 1; }
pass "chart renders with webhook.enabled=true"
"$HELM" template t charts/tarema --namespace tns --set webhook.enabled=true --api-versions cert-manager.io/v1 >"$work/cm.yaml" 2>&1
"$HELM" template t charts/tarema --namespace tns >"$work/off.yaml" 2>&1

py() { python3 - "$@"; }
check "caBundle is the CA of the generated Secret t-tarema-tls; Ignore; namespace label; Service on 443 /mutate" py "$work/on.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
ca = [d for d in docs if d['kind'] == 'Secret' and d['metadata']['name'] == 't-tarema-tls'][0]['data']['ca.crt']
[mw] = [d for d in docs if d['kind'] == 'MutatingWebhookConfiguration']
[w] = mw['webhooks']
cc = w['clientConfig']
assert cc['caBundle'] == ca, 'caBundle differs from the Secret ca.crt'
assert w['failurePolicy'] == 'Ignore', w['failurePolicy']
assert w['sideEffects'] == 'None'
assert w['namespaceSelector'] == {'matchLabels': {'tarema.io/sizing': 'enabled'}}, w['namespaceSelector']
assert w['rules'] == [{'operations': ['CREATE'], 'apiGroups': [''], 'apiVersions': ['v1'], 'resources': ['pods'], 'scope': 'Namespaced'}]
assert cc['service'] == {'name': 't-tarema-webhook', 'namespace': 'tns', 'path': '/mutate', 'port': 443}, cc['service']
[svc] = [d for d in docs if d['kind'] == 'Service' and d['metadata']['name'] == 't-tarema-webhook']
assert any(p['port'] == 443 and p['targetPort'] == 'https' for p in svc['spec']['ports'])
EOF
check "the server certificate names the webhook Service" py "$work/on.yaml" <<'EOF'
import sys, yaml, base64, subprocess
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
crt = base64.b64decode([d for d in docs if d['kind'] == 'Secret' and d['metadata']['name'] == 't-tarema-tls'][0]['data']['tls.crt'])
txt = subprocess.run(['openssl', 'x509', '-noout', '-ext', 'subjectAltName'], input=crt, capture_output=True).stdout.decode()
assert 'DNS:t-tarema-webhook.tns.svc' in txt, txt
EOF
check "cert-manager: the caBundle is injected from the chart's Certificate" py "$work/cm.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
[mw] = [d for d in docs if d['kind'] == 'MutatingWebhookConfiguration']
assert mw['metadata']['annotations']['cert-manager.io/inject-ca-from'] == 'tns/t-tarema-tls'
assert 'caBundle' not in mw['webhooks'][0]['clientConfig']
EOF
check "RBAC: the webhook only lists nodes and pods" py "$work/on.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
roles = [d for d in docs if d['kind'] in ('ClusterRole', 'Role') and d['metadata']['name'] == 't-tarema-webhook']
assert len(roles) == 1, roles
assert roles[0]['rules'] == [{'apiGroups': [''], 'resources': ['nodes', 'pods'], 'verbs': ['list']}], roles[0]['rules']
[b] = [d for d in docs if d['kind'] == 'ClusterRoleBinding' and d['metadata']['name'] == 't-tarema-webhook']
assert b['subjects'] == [{'kind': 'ServiceAccount', 'name': 't-tarema-webhook', 'namespace': 'tns'}]
EOF
check "webhook container hardened, probed, limited; TLS files mounted" py "$work/on.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
[dep] = [d for d in docs if d['kind'] == 'Deployment' and d['metadata']['name'] == 't-tarema-webhook']
[c] = dep['spec']['template']['spec']['containers']
sc = c['securityContext']
assert sc['runAsNonRoot'] and sc['readOnlyRootFilesystem'] and not sc['allowPrivilegeEscalation'], sc
assert sc['capabilities']['drop'] == ['ALL']
assert c['resources']['requests'] and c['resources']['limits']
assert c['livenessProbe']['httpGet']['path'] == '/healthz' and c['readinessProbe']['httpGet']['path'] == '/readyz'
assert '--tls-cert-file=/etc/tarema/tls/tls.crt' in c['args'] and c['args'][0] == 'webhook'
EOF
check "NetworkPolicy lets the webhook reach the bundled PostgreSQL" py "$work/on.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
[np] = [d for d in docs if d['kind'] == 'NetworkPolicy' and d['metadata']['name'] == 't-tarema-postgresql']
froms = [f['podSelector']['matchLabels'].get('app.kubernetes.io/component') for f in np['spec']['ingress'][0]['from']]
assert 'webhook' in froms, froms
EOF
args=$(py "$work/on.yaml" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
[dep] = [d for d in docs if d['kind'] == 'Deployment' and d['metadata']['name'] == 't-tarema-webhook']
print(' '.join(dep['spec']['template']['spec']['containers'][0]['args']))
EOF
)
# The flags parse (a flag error exits 2); the start then fails without a cluster (exit 1).
# shellcheck disable=SC2086
out=$(KUBECONFIG=/nonexistent KUBERNETES_SERVICE_HOST= timeout 10 "$BIN/tarema-labeler" $args --bind 127.0.0.1 --port 0 --health-port 0 2>&1)
rc=$?
[ "$rc" != 2 ] && ! grep -q "usage:" <<<"$out" && pass "tarema-labeler accepts the webhook Deployment's flags: $args" ||
  fail "tarema-labeler accepts the webhook Deployment's flags" "rc $rc: $(tail -n 3 <<<"$out")"
n=$(grep -c "webhook" "$work/off.yaml")
[ "$n" = 0 ] && pass "webhook.enabled=false (default): nothing of the webhook rendered" ||
  fail "webhook disabled renders nothing" "$(grep -n webhook "$work/off.yaml" | head -3)"
"$HELM" template t charts/tarema --set webhook.enabled=true --set tls.enabled=false >/dev/null 2>"$work/err"
grep -q "webhook.enabled needs tls.enabled" "$work/err" && pass "webhook without TLS refused with a message" ||
  fail "webhook without TLS refused" "$(cat "$work/err")"
# webhook.authenticateApiServer: /mutate needs the chart's token or a client certificate of its CA.
"$HELM" template t charts/tarema --namespace tns --set webhook.enabled=true --set webhook.authenticateApiServer=true >"$work/auth.yaml" 2>"$work/err" ||
  fail "chart renders with webhook.authenticateApiServer=true" "$(cat "$work/err")"
wargs() { python3 -c 'import sys, yaml
[d] = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-webhook")]
print(" ".join(d["spec"]["template"]["spec"]["containers"][0]["args"]))' "$1"; }
a_on=$(wargs "$work/auth.yaml") a_off=$(wargs "$work/on.yaml")
[[ " $a_on " == *" --authenticate-mutate "* && " $a_on " == *" --client-ca-file="* && " $a_on " == *" --auth-token-file="* && " $a_off " != *" --authenticate-mutate "* ]] &&
  pass "webhook.authenticateApiServer=true: --authenticate-mutate with the chart's client CA and token (off by default)" ||
  fail "webhook.authenticateApiServer renders --authenticate-mutate" "on: $a_on; off: $a_off"
# shellcheck disable=SC2086
out=$(KUBECONFIG=/nonexistent KUBERNETES_SERVICE_HOST= timeout 10 "$BIN/tarema-labeler" $a_on --bind 127.0.0.1 --port 0 --health-port 0 2>&1)
rc=$?
[ "$rc" != 2 ] && ! grep -q "usage:" <<<"$out" && pass "tarema-labeler accepts those flags" ||
  fail "tarema-labeler accepts the authenticated webhook's flags" "rc $rc: $(tail -n 3 <<<"$out")"
"$HELM" template t charts/tarema --set webhook.enabled=true --set webhook.strategy=double >/dev/null 2>"$work/err"
grep -q "strategy" "$work/err" && pass "schema refuses a strategy that does not learn (double)" ||
  fail "schema refuses webhook.strategy=double" "$(cat "$work/err")"
summary
