#!/usr/bin/env bash
# tests/e2e/sizing_webhook_auth_test.sh: `tarema-labeler webhook --authenticate-mutate`, POST
# /mutate authenticated, called by the real API server with the credential of its admission
# configuration (hack/cluster.sh: a client certificate of the instance CA for every webhook).
#   - /mutate refuses a request without credentials (401) and a client certificate of another
#     CA; it answers one with the token or a certificate of the trusted CA;
#   - registered with failurePolicy Fail (a refused call refuses the pod), the API server's
#     calls are answered: pods of an opted-in namespace are created and reviewed;
#   - the same webhook trusting another CA refuses the API server: the pod is refused, naming it;
#   - --authenticate-mutate without a token or a client CA does not start, saying why.
# Without the flag /mutate stays open (sizing_webhook_test.sh sends it reviews without any).
# Needs KUBECONFIG (hack/cluster.sh) and DATABASE_URL (hack/postgres.sh).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
: "${KUBECONFIG:?KUBECONFIG must point at the test control plane}"

ID=$(printf '%05d' $((RANDOM % 100000)))
ns=szauth-$ID
hook=tarema-sizing-auth-$ID
TLS=$REPO_ROOT/tests/fixtures/tls
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  kubectl delete mutatingwebhookconfiguration "$hook" --wait=false >/dev/null 2>&1
  kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# The instance CA: it signed the API server's webhook credential.
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$work/cluster-ca.crt"

# webhook PORT HPORT CLIENT_CA: a webhook requiring authentication on /mutate
webhook() {
  "$BIN/tarema-labeler" webhook --bind 127.0.0.1 --port "$1" --health-port "$2" \
    --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" \
    --client-ca-file "$3" --auth-token-file "$TLS/token" --authenticate-mutate \
    --resync-seconds 60 >>"$work/webhook-$1.log" 2>&1 &
  pids+=($!)
  wait_for 30 curl -sf "http://127.0.0.1:$2/readyz"
}
PORT=$(free_port) HPORT=$(free_port)
if webhook "$PORT" "$HPORT" "$work/cluster-ca.crt"; then
  pass "webhook with --authenticate-mutate serves HTTPS and is ready"
else
  fail "webhook with --authenticate-mutate ready" "$(tail -n 5 "$work/webhook-$PORT.log")"
  summary
  exit 1
fi
check "the log says /mutate needs authentication" grep -q 'mutate_auth=required' "$work/webhook-$PORT.log"

REVIEW='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"x","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
# code CURL_ARGS...: the HTTP status of a review sent to /mutate
code() { curl -s -o "$work/body" -w '%{http_code}' --cacert "$TLS/ca.crt" -H 'Content-Type: application/json' --data "$REVIEW" "$@" "https://127.0.0.1:$PORT/mutate"; }
c=$(code)
check "/mutate without credentials: 401 (was 200 before --authenticate-mutate)" test "$c" = 401
c=$(code --cert "$TLS/rogue-client.crt" --key "$TLS/rogue-client.key")
check "/mutate with a client certificate of another CA: refused ($c)" test "$c" != 200
c=$(code -H "Authorization: Bearer $(cat "$TLS/token")")
check "/mutate with the token: the review answered" bash -c "[ '$c' = 200 ] && grep -q '\"uid\": *\"u-1\"' '$work/body'"

# registration NAME PORT: failurePolicy Fail, so a call the webhook refuses refuses the pod
registration() {
  cat <<Y
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $hook
webhooks:
  - name: sizing.tarema.io
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 5
    clientConfig:
      url: https://127.0.0.1:$1/mutate
      caBundle: $(base64 -w0 <"$TLS/ca.crt")
    namespaceSelector:
      matchLabels: {tarema.io/sizing-auth: "$ID"}
    rules:
      - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}
Y
}
kubectl create namespace "$ns" >/dev/null && kubectl label namespace "$ns" "tarema.io/sizing-auth=$ID" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$ns" >/dev/null
registration "$PORT" >"$work/hook.yaml"
check "MutatingWebhookConfiguration (failurePolicy Fail) registered" kubectl apply -f "$work/hook.yaml"
reviews() { curl -sf "http://127.0.0.1:$1/metrics" | awk '$1 ~ /^tarema_webhook_reviews_total/ {s += $2} END {print s + 0}'; }
pod() { printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  containers: [{name: c, image: pause}]\n' "$1" "$ns"; }
before=$(reviews "$HPORT")
reviews_above() { [ "$(reviews "$HPORT")" -gt "$1" ]; }
# The API server picks up a new webhook configuration within a second or two: retry briefly.
# A create can succeed before the API server's informer has the new configuration, unreviewed:
# stopping at the first successful create read the review count too early. So a create counts
# only once the count grew (given 2 s: the counter may move just after the answer); else p1 is
# deleted and created again. ok: the last try's create succeeded.
for _ in $(seq 20); do
  ok=0
  if pod p1 | kubectl create -f - >"$work/create1" 2>&1; then
    ok=1
    wait_for 2 reviews_above "$before" && break
    kubectl -n "$ns" delete pod p1 --grace-period=0 --force >/dev/null 2>&1
  fi
  sleep 0.5
done
check "the API server's calls are authenticated: a pod of the namespace is created" bash -c "[ $ok = 1 ] || { cat '$work/create1'; echo 'a cluster started before hack/cluster.sh gave the API server its webhook credential: hack/cluster.sh down, then up'; exit 1; }"
after=$(reviews "$HPORT")
check "and the webhook reviewed it (reviews $before -> $after)" test "$after" -gt "$before"

# Negative control: the same webhook trusting another CA refuses the API server.
PORT2=$(free_port) HPORT2=$(free_port)
if webhook "$PORT2" "$HPORT2" "$TLS/ca.crt"; then
  registration "$PORT2" >"$work/hook2.yaml"
  kubectl apply -f "$work/hook2.yaml" >/dev/null
  refused=0
  for _ in $(seq 20); do
    if ! pod p2 | kubectl create -f - >"$work/create2" 2>&1 && grep -q "$hook\|sizing.tarema.io" "$work/create2"; then refused=1; break; fi
    kubectl -n "$ns" delete pod p2 --wait=false >/dev/null 2>&1
    sleep 0.5
  done
  check "a webhook trusting another CA refuses the API server: the pod is refused, naming the webhook" bash -c "[ $refused = 1 ] || { cat '$work/create2'; exit 1; }"
else
  fail "second webhook ready" "$(tail -n 5 "$work/webhook-$PORT2.log")"
fi

timeout 20 "$BIN/tarema-labeler" webhook --bind 127.0.0.1 --port 0 --tls-cert-file "$TLS/server.crt" \
  --tls-key-file "$TLS/server.key" --authenticate-mutate >"$work/noauth.log" 2>&1
rc=$?
check "--authenticate-mutate without a token or client CA: not started, says why" bash -c "[ $rc = 1 ] && grep -q 'authenticate-mutate needs --auth-token-file or --client-ca-file' '$work/noauth.log' || { echo rc=$rc; tail -n 3 '$work/noauth.log'; exit 1; }"
summary
