# tests/e2e/dam_lib.sh: helpers of the DAM service's e2e tests (dam_service_test.sh,
# dam_failover_test.sh); sourced after lib.sh. Several local control planes at once: instances
# ${DAM_PREFIX}-a, -b, -c of hack/cluster.sh (small kwok node sets,
# tests/fixtures/dam/nodes-*.yaml), brought up here and down on exit unless DAM_KEEP_CLUSTERS=1.
# Needs DATABASE_URL (hack/postgres.sh env), openssl, curl, jq.
DAM="$BIN/tarema-dam"
DAM_CACHE=${TAREMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tarema}
DAM_PREFIX=${DAM_PREFIX:-${TAREMA_CLUSTER_NAME:-tarema}-dam}
DAM_TMP=$(mktemp -d)
DAM_PID=
DAM_UP=()

dam_cleanup() {
  [ -n "$DAM_PID" ] && kill "$DAM_PID" 2>/dev/null && wait "$DAM_PID" 2>/dev/null
  if [ "${DAM_KEEP_CLUSTERS:-0}" != 1 ]; then
    for c in "${DAM_UP[@]}"; do TAREMA_CLUSTER_NAME=$DAM_PREFIX-$c bash "$REPO_ROOT/hack/cluster.sh" down >/dev/null 2>&1; done
  fi
  rm -rf "$DAM_TMP"
}
trap dam_cleanup EXIT

# dam_clusters_up a b [c]: one control plane per letter, its nodes from nodes-<letter>.yaml.
# All started at once (hack/cluster.sh picks each instance's ports under a lock; one after the
# other they took some 10-20 s each, mostly waiting for readiness); every one is in DAM_UP, for
# dam_cleanup, as soon as it is started, and each must come up.
dam_clusters_up() {
  local c pids=() rc=0 i=0
  for c in "$@"; do
    DAM_UP+=("$c")
    TAREMA_CLUSTER_NAME=$DAM_PREFIX-$c bash "$REPO_ROOT/hack/cluster.sh" up \
      --nodes "$REPO_ROOT/tests/fixtures/dam/nodes-$c.yaml" >"$DAM_TMP/up-$c.log" 2>&1 &
    pids+=($!)
  done
  for c in "$@"; do
    wait "${pids[$i]}" ||
      { echo "cluster $DAM_PREFIX-$c did not start:"; tail -n 20 "$DAM_TMP/up-$c.log"; rc=1; }
    i=$((i + 1))
  done
  return $rc
}
dam_kubeconfig() { echo "$DAM_CACHE/clusters/$DAM_PREFIX-$1/admin.kubeconfig"; }
# kubectl against cluster <letter>: the cluster version's own (first on PATH: hack/cluster.sh env)
kc() { local c=$1; shift; KUBECONFIG=$(dam_kubeconfig "$c") kubectl "$@"; }

# A self-signed certificate for 127.0.0.1 and a token, for TLS and authentication.
dam_secrets() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$DAM_TMP/tls.key" -out "$DAM_TMP/tls.crt" >/dev/null 2>&1
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DAM_TMP/token"
  DAM_TOKEN=$(cat "$DAM_TMP/token")
}

# Requests left by an earlier run would be followed (and failed over) by this run's server.
dam_reset_db() { psql "$DATABASE_URL" -qc 'DELETE FROM dam_requests' >/dev/null 2>&1 || true; }

# dam_start FEDERATION [extra args]: serve over TLS with the token; sets DAM_URL, DAM_HEALTH.
dam_start() {
  local fed=$1; shift
  : >"$DAM_TMP/serve.log"
  "$DAM" serve --federation "$fed" --port 0 --health-port -1 --poll-ms 300 \
    --tls-cert-file "$DAM_TMP/tls.crt" --tls-key-file "$DAM_TMP/tls.key" \
    --auth-token-file "$DAM_TMP/token" "$@" >>"$DAM_TMP/serve.log" 2>&1 &
  DAM_PID=$!
  wait_for 20 grep -q 'listening on' "$DAM_TMP/serve.log" || { cat "$DAM_TMP/serve.log"; return 1; }
  local line port hp
  line=$(grep 'listening on' "$DAM_TMP/serve.log" | tail -n 1)
  port=$(sed -E 's/.*listening on [^ ]*:([0-9]+) .*/\1/' <<<"$line")
  hp=$(sed -E 's/.*health port ([0-9]+).*/\1/' <<<"$line")
  DAM_URL=https://127.0.0.1:$port
  DAM_HEALTH=http://127.0.0.1:$hp
}
dam_stop() { [ -n "$DAM_PID" ] && kill "${1:--TERM}" "$DAM_PID" 2>/dev/null; wait "$DAM_PID" 2>/dev/null; DAM_PID=; }

# api METHOD PATH [BODY]: prints the body, then the status on the last line.
api() {
  local args=(-sS --cacert "$DAM_TMP/tls.crt" -H "Authorization: Bearer $DAM_TOKEN" -X "$1")
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
  curl "${args[@]}" -w '\n%{http_code}' "$DAM_URL$2"
}
api_body() { api "$@" | sed '$d'; }

# post_job JSON: the id of the accepted request (fails unless 202).
post_job() {
  local out
  out=$(api POST /api/v1/requests "$1")
  [ "$(tail -n 1 <<<"$out")" = 202 ] || { echo "POST: $out" >&2; return 1; }
  sed '$d' <<<"$out" | jq -r .id
}
# wait_state ID JQ_EXPR [SECONDS]: polls GET until the record satisfies JQ_EXPR; prints it.
wait_state() {
  local deadline=$(($(date +%s) + ${3:-30})) rec
  while :; do
    rec=$(api_body GET "/api/v1/requests/$1")
    jq -e "$2" <<<"$rec" >/dev/null 2>&1 && { echo "$rec"; return 0; }
    [ "$(date +%s)" -ge "$deadline" ] && { echo "timeout waiting for $2: $rec" >&2; return 1; }
    sleep 0.3
  done
}
# has JQ_EXPR JSON: the JSON (non-empty: a timed-out wait leaves none) satisfies the expression.
has() { [ -n "$2" ] && jq -e "$1" <<<"$2" >/dev/null; }
# rank_job JSON: posts, waits until DONE, prints the record.
rank_job() { local id; id=$(post_job "$1") && wait_state "$id" '.state == "DONE"'; }

# load <letter> N: N pods of 8 cores bound to the cluster's nodes (kwok runs them).
load() {
  local c=$1 n=$2 i
  for i in $(seq 1 "$n"); do
    kc "$c" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: load-$i, namespace: default}
spec:
  nodeName: $c-$i
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "8"}}}]
EOF
  done
}
unload() { kc "$1" delete pods -l '!tarema.io/dam-request' --grace-period=0 --force >/dev/null 2>&1 || true; }
# speed <letter> EVENTS: every node's tarema.io/profile annotation says cpu_single EVENTS.
speed() {
  kc "$1" annotate nodes --all --overwrite "tarema.io/profile={\"figures\":{\"cpu_single\":$2},\"group\":1}" >/dev/null
}
