#!/usr/bin/env bash
# tests/e2e/scheduler_bind_auth_test.sh: nobody binds pods through tarema-scheduler's HTTP port
# unless extender binding is configured and the caller authenticates (issue 13, defect 1).
# Against the real API server: the pod of another scheduler, POSTed to /bind of a scheduler in
# scheduler mode, stays unbound (404: no /bind route; before the fix it was bound, also onto a
# node that does not exist); in extender mode with --extender-bind, /bind without credentials
# is 401 and the pod stays unbound, with the token it binds (the route works when configured).
# API-server tokens are accepted through TokenReview for the allowed ServiceAccount only. A
# non-loopback address without authentication is refused at start unless --insecure-no-auth.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): binds a pod to the first node of the list, which may be another test's
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scheduler_lib.sh"

ID=$SCHED_E2E_ID
NS=bind-auth-$ID
WORK=$(mktemp -d)
cleanup() {
  stop_schedulers
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
TLS=$REPO_ROOT/tests/fixtures/tls
TOKEN=$(cat "$TLS/token")
kubectl create namespace "$NS" >/dev/null
wait_for 30 kubectl get serviceaccount default -n "$NS"
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
pod_json "$NS" victim "other-scheduler-$ID" 100m 64Mi | kubectl create -f - >/dev/null
pod_json "$NS" victim2 "other-scheduler-$ID" 100m 64Mi | kubectl create -f - >/dev/null
bind_args() { echo '{"PodName":"'"$1"'","PodNamespace":"'"$NS"'","PodUID":"","Node":"'"$2"'"}'; }
victim_bound() { [ -n "$(pod_node "$NS" victim)" ]; }
status() { curl -s -o "$WORK/resp" -w '%{http_code}' "$@"; }

# ---- scheduler mode: no /bind at all
if start_scheduler "$WORK/sched.log" --scheduler-name "tarema-$ID"; then
  pass "tarema-scheduler (scheduler mode) starts"
  code=$(status -X POST -d "$(bind_args victim "$NODE")" "http://127.0.0.1:$SCHED_PORT/bind")
  [ "$code" = 404 ] && pass "scheduler mode: POST /bind is 404" || fail "scheduler mode: POST /bind is 404" "status $code: $(cat "$WORK/resp")"
  code=$(status -X POST -d "$(bind_args victim2 no-such-node)" "http://127.0.0.1:$SCHED_PORT/bind")
  [ "$code" = 404 ] && pass "scheduler mode: POST /bind to a node that does not exist is 404" || fail "scheduler mode: /bind to a missing node is 404" "status $code"
  sleep 1
  [ -z "$(pod_node "$NS" victim)" ] && pass "the other scheduler's pod stays unbound" ||
    fail "the other scheduler's pod stays unbound" "bound to $(pod_node "$NS" victim)"
  [ -z "$(pod_node "$NS" victim2)" ] && pass "no pod bound to a node that does not exist" ||
    fail "no pod bound to a node that does not exist" "bound to $(pod_node "$NS" victim2)"
else
  fail "tarema-scheduler (scheduler mode) starts" "$(tail -n 5 "$WORK/sched.log")"
fi
stop_schedulers

# ---- extender mode with binding: only authenticated callers
if start_scheduler "$WORK/ext.log" --mode extender --extender-bind --scheduler-name "ext-$ID" \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" --client-ca-file "$TLS/ca.crt" \
  --auth-token-file "$TLS/token"; then
  pass "tarema-scheduler --mode extender --extender-bind starts with TLS, client CA and token"
  URL=https://127.0.0.1:$SCHED_PORT/bind
  code=$(status --cacert "$TLS/ca.crt" -X POST -d "$(bind_args victim "$NODE")" "$URL")
  [ "$code" = 401 ] && pass "extender /bind without credentials: 401" || fail "extender /bind without credentials: 401" "status $code"
  code=$(status --cacert "$TLS/ca.crt" -H "Authorization: Bearer wrong-token-wrong-token" -X POST -d "$(bind_args victim "$NODE")" "$URL")
  [ "$code" = 401 ] && pass "extender /bind with a wrong token: 401" || fail "extender /bind with a wrong token: 401" "status $code"
  sleep 1
  [ -z "$(pod_node "$NS" victim)" ] && pass "refused binds bound nothing" || fail "refused binds bound nothing" "bound to $(pod_node "$NS" victim)"
  code=$(status --cacert "$TLS/ca.crt" -H "Authorization: Bearer $TOKEN" -X POST -d "$(bind_args victim "$NODE")" "$URL")
  if [ "$code" = 200 ] && [ "$(jq -r .Error "$WORK/resp")" = "" ] && wait_for 10 victim_bound; then
    pass "extender /bind with the token binds (the route works when configured)"
  else
    fail "extender /bind with the token binds" "status $code: $(cat "$WORK/resp")"
  fi
else
  fail "tarema-scheduler --mode extender --extender-bind starts" "$(tail -n 5 "$WORK/ext.log")"
fi
stop_schedulers

# ---- Kubernetes tokens via TokenReview: only the allowed ServiceAccount
kubectl -n "$NS" create serviceaccount binder >/dev/null
kubectl -n "$NS" create serviceaccount intruder >/dev/null
if start_scheduler "$WORK/review.log" --mode extender --extender-bind --scheduler-name "rev-$ID" \
  --tls-cert-file "$TLS/server.crt" --tls-key-file "$TLS/server.key" \
  --auth-tokenreview-users "system:serviceaccount:$NS:binder"; then
  pass "tarema-scheduler starts with TokenReview for system:serviceaccount:$NS:binder"
  URL=https://127.0.0.1:$SCHED_PORT/bind
  T_IN=$(kubectl -n "$NS" create token intruder)
  T_OK=$(kubectl -n "$NS" create token binder)
  code=$(status --cacert "$TLS/ca.crt" -H "Authorization: Bearer $T_IN" -X POST -d "$(bind_args victim2 "$NODE")" "$URL")
  [ "$code" = 401 ] && pass "TokenReview: another ServiceAccount's valid token: 401" || fail "TokenReview: another ServiceAccount's token refused" "status $code"
  code=$(status --cacert "$TLS/ca.crt" -H "Authorization: Bearer not-a-token-at-all-xx" -X POST -d "$(bind_args victim2 "$NODE")" "$URL")
  [ "$code" = 401 ] && pass "TokenReview: an invalid token: 401" || fail "TokenReview: an invalid token refused" "status $code"
  [ -z "$(pod_node "$NS" victim2)" ] && pass "TokenReview: refused calls bound nothing" || fail "TokenReview: refused calls bound nothing"
  code=$(status --cacert "$TLS/ca.crt" -H "Authorization: Bearer $T_OK" -X POST -d "$(bind_args victim2 "$NODE")" "$URL")
  v2_bound() { [ -n "$(pod_node "$NS" victim2)" ]; }
  [ "$code" = 200 ] && wait_for 10 v2_bound && pass "TokenReview: the allowed ServiceAccount's token binds" ||
    fail "TokenReview: the allowed ServiceAccount's token binds" "status $code: $(cat "$WORK/resp")"
else
  fail "tarema-scheduler starts with TokenReview" "$(tail -n 5 "$WORK/review.log")"
fi
stop_schedulers

# ---- configuration guards
out=$("$BIN/tarema-scheduler" --extender-bind --port 0 2>&1)
[ $? = 2 ] && grep -q "needs mode: extender" <<<"$out" && pass "--extender-bind without --mode extender is refused" ||
  fail "--extender-bind without --mode extender is refused" "$out"
timeout 20 "$BIN/tarema-scheduler" --bind-address 0.0.0.0 --port 0 --scheduler-name "exp-$ID" >"$WORK/exp.log" 2>&1
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "without authentication" "$WORK/exp.log" &&
  pass "0.0.0.0 without authentication is refused at start" || fail "0.0.0.0 without authentication is refused" "rc $rc: $(tail -n 3 "$WORK/exp.log")"
if start_scheduler "$WORK/insecure.log" --bind-address 0.0.0.0 --insecure-no-auth --scheduler-name "ins-$ID"; then
  grep -q "INSECURE" "$WORK/insecure.log" && pass "--insecure-no-auth starts with a loud warning" ||
    fail "--insecure-no-auth warns" "$(head -n 5 "$WORK/insecure.log")"
else
  fail "--insecure-no-auth starts" "$(tail -n 5 "$WORK/insecure.log")"
fi
summary
