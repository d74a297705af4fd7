#!/usr/bin/env bash
# planner_chart_test.sh: the chart wires the planner to the chart's database (docs/planner.md,
# "In the chart"): DATABASE_URL from the Secret the labeler reads, libpq's sslmode verify-full
# for an external database unless told otherwise and for the bundled PostgreSQL (TLS, the CA of
# its certificate mounted; disable with tls.enabled=false), a CA Secret mounted as the root
# certificate, the bundled PostgreSQL's NetworkPolicy opened to the planner; the schema refuses a
# bad sslMode. With a database ($DATABASE_URL, hack/postgres.sh) the real tarema-planner, given
# the rendered environment, is refused by a server without TLS under the default verify-full and
# connects with the bundled default without TLS (chart_postgres_tls_test.sh: with it); with a cluster, `helm
# install` puts that environment on the Deployment the API server stores.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): helm install: the chart's own pods go to kube-scheduler unconfined
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
PATH=$K8S_BIN:$TOOLS_BIN:$PATH
CHART=$REPO_ROOT/charts/tarema
WORK=$(mktemp -d)
NS=planner-chart-$$
cleanup() {
  if [ -n "${INSTALLED:-}" ]; then
    helm uninstall pc -n "$NS" >/dev/null 2>&1
    kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# render FILE SETS...: the chart with the planner on, as YAML documents in FILE
render() {
  local f=$1
  shift
  helm template pc "$CHART" -n "$NS" --set planner.enabled=true "$@" >"$f" 2>"$WORK/err"
}
# planner_env FILE: NAME=VALUE (or NAME=secret:NAME/KEY) lines of the planner container's env,
# then mount=PATH:SECRET lines, then netpol=NAME for the policies admitting the planner
planner_env() {
  python3 - "$1" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d: continue
    if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-planner"):
        spec = d["spec"]["template"]["spec"]
        c = spec["containers"][0]
        for e in c.get("env") or []:
            if "value" in e: print("%s=%s" % (e["name"], e["value"]))
            else:
                r = e["valueFrom"]["secretKeyRef"]; print("%s=secret:%s/%s" % (e["name"], r["name"], r["key"]))
        vols = {v["name"]: v for v in spec.get("volumes") or []}
        for m in c.get("volumeMounts") or []:
            print("mount=%s:%s" % (m["mountPath"], vols[m["name"]]["secret"]["secretName"]))
    if d["kind"] == "NetworkPolicy":
        for rule in d["spec"].get("ingress") or []:
            for peer in rule.get("from") or []:
                if (peer.get("podSelector") or {}).get("matchLabels", {}).get("app.kubernetes.io/component") == "planner":
                    print("netpol=" + d["metadata"]["name"])
PY
}
has() { grep -qxF -- "$2" "$1" || { echo "no '$2' in:"; cat "$1"; return 1; }; }
hasnt() { ! grep -q -- "$2" "$1" || { echo "unexpected '$2' in:"; cat "$1"; return 1; }; }

if ! command -v helm >/dev/null; then
  fail "helm available" "no helm on PATH or in $TOOLS_BIN"
  summary
  exit 1
fi

# 0. --reservation-retries from planner.reservationRetries (default 4), bounded by the schema
args_of() { python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Deployment" and d["metadata"]["name"].endswith("-planner"):
        print("\n".join(d["spec"]["template"]["spec"]["containers"][0]["args"]))' "$1"; }
render "$WORK/retries.yaml" && args_of "$WORK/retries.yaml" >"$WORK/retries.args"
check "planner args: --reservation-retries=4 by default" has "$WORK/retries.args" --reservation-retries=4
render "$WORK/retries7.yaml" --set planner.reservationRetries=7 && args_of "$WORK/retries7.yaml" >"$WORK/retries7.args"
check "planner.reservationRetries=7 -> --reservation-retries=7" has "$WORK/retries7.args" --reservation-retries=7
check "planner.reservationRetries=-1 refused by the schema" bash -c \
  "! helm template pc '$CHART' --set planner.enabled=true --set planner.reservationRetries=-1 >/dev/null 2>&1"

# 1. bundled PostgreSQL (the default): its Secret, TLS verified, the NetworkPolicy opened
render "$WORK/bundled.yaml" && planner_env "$WORK/bundled.yaml" >"$WORK/bundled.env" ||
  fail "render (bundled)" "$(cat "$WORK/err")"
check "bundled: DATABASE_URL from the bundled PostgreSQL's Secret" has "$WORK/bundled.env" "DATABASE_URL=secret:pc-tarema-postgresql/uri"
check "bundled: sslmode verify-full (the bundled server serves TLS)" has "$WORK/bundled.env" "PGSSLMODE=verify-full"
check "bundled: root certificate: the CA of its certificate, mounted" bash -c "grep -qxF 'PGSSLROOTCERT=/etc/tarema/db-ca/ca.crt' '$WORK/bundled.env' && grep -qxF 'mount=/etc/tarema/db-ca:pc-tarema-postgresql-tls' '$WORK/bundled.env'"
render "$WORK/notls.yaml" --set tls.enabled=false && planner_env "$WORK/notls.yaml" >"$WORK/notls.env" ||
  fail "render (bundled, tls.enabled=false)" "$(cat "$WORK/err")"
check "bundled, tls.enabled=false: sslmode disable (the server has no TLS then)" has "$WORK/notls.env" "PGSSLMODE=disable"
check "bundled: the PostgreSQL NetworkPolicy admits the planner" has "$WORK/bundled.env" "netpol=pc-tarema-postgresql-from-planner"

# 2. external database: the chart's Secret of postgresql.external.uri, TLS verified
EXT=(--set postgresql.bundled=false --set postgresql.external.uri=postgresql://tarema@db.example.org:5432/tarema)
render "$WORK/ext.yaml" "${EXT[@]}" && planner_env "$WORK/ext.yaml" >"$WORK/ext.env" ||
  fail "render (external)" "$(cat "$WORK/err")"
check "external: DATABASE_URL from the chart's database Secret" has "$WORK/ext.env" "DATABASE_URL=secret:pc-tarema-database/uri"
check "external: sslmode verify-full by default" has "$WORK/ext.env" "PGSSLMODE=verify-full"
check "external: root certificates: the system CAs" has "$WORK/ext.env" "PGSSLROOTCERT=/etc/ssl/certs/ca-certificates.crt"
check "external: no NetworkPolicy for a database outside the chart" hasnt "$WORK/ext.env" "netpol="

# 3. an existing Secret and a CA Secret
render "$WORK/ca.yaml" --set postgresql.bundled=false --set postgresql.external.existingSecret=mydb \
  --set postgresql.external.existingSecretKey=dsn --set planner.database.caSecret=db-ca \
  --set planner.database.caSecretKey=root.pem && planner_env "$WORK/ca.yaml" >"$WORK/ca.env" ||
  fail "render (CA Secret)" "$(cat "$WORK/err")"
check "existingSecret: DATABASE_URL from it" has "$WORK/ca.env" "DATABASE_URL=secret:mydb/dsn"
check "caSecret: mounted, and the root certificate" bash -c "grep -qxF 'mount=/etc/tarema/db-ca:db-ca' '$WORK/ca.env' && grep -qxF 'PGSSLROOTCERT=/etc/tarema/db-ca/root.pem' '$WORK/ca.env'"
render "$WORK/mode.yaml" "${EXT[@]}" --set planner.database.sslMode=require && planner_env "$WORK/mode.yaml" >"$WORK/mode.env"
check "sslMode set: it wins" has "$WORK/mode.env" "PGSSLMODE=require"

# 4. off
render "$WORK/off.yaml" --set planner.database.enabled=false && planner_env "$WORK/off.yaml" >"$WORK/off.env"
check "database.enabled=false: no DATABASE_URL, no NetworkPolicy" bash -c "! grep -q 'DATABASE_URL\|netpol=' '$WORK/off.env'"
check "schema refuses a bad sslMode" bash -c "out=\$(helm template pc '$CHART' --set planner.enabled=true --set planner.database.sslMode=maybe 2>&1); [ \$? != 0 ] && grep -q sslMode <<<\"\$out\""

# 5. the real planner with the rendered environment against a server without TLS (without
# DATABASE_URL or the binary: a failure naming it, not a skip)
if need_database && { [ -x "$BIN/tarema-planner" ] || { fail "$BIN/tarema-planner built" "not found: run make"; false; }; }; then
  val() { sed -n "s/^$2=//p" "$1"; }
  out=$(PGSSLMODE=$(val "$WORK/ext.env" PGSSLMODE) PGSSLROOTCERT=$(val "$WORK/ext.env" PGSSLROOTCERT) \
    "$BIN/tarema-planner" waits --json 2>&1)
  rc=$?
  [ $rc != 0 ] && grep -qiE 'ssl|certificate' <<<"$out" &&
    pass "external default: the planner refuses a server without TLS" ||
    fail "external default: the planner refuses a server without TLS" "rc=$rc: $out"
  out=$(PGSSLMODE=$(val "$WORK/notls.env" PGSSLMODE) "$BIN/tarema-planner" waits --json 2>&1)
  rc=$?
  [ $rc = 0 ] && pass "bundled without TLS: the planner reads the waits" ||
    fail "bundled without TLS: the planner reads the waits" "rc=$rc: $out"
fi

# 6. a real install: the Deployment the API server keeps carries the environment
# (without a cluster whose API server turns ready in 60 s: a failure naming it, need_cluster)
if need_cluster 60; then
  kubectl create namespace "$NS" >/dev/null && INSTALLED=1
  if helm install pc "$CHART" -n "$NS" --set planner.enabled=true "${EXT[@]}" >"$WORK/install.log" 2>&1; then
    pass "helm install with the planner and an external database"
    kubectl -n "$NS" get deployment pc-tarema-planner -o yaml >"$WORK/live.yaml"
    kubectl -n "$NS" get secret pc-tarema-database -o jsonpath='{.data.uri}' | base64 -d >"$WORK/uri"
    planner_env "$WORK/live.yaml" >"$WORK/live.env"
    check "installed Deployment: DATABASE_URL from the Secret, verify-full" bash -c "grep -qxF 'DATABASE_URL=secret:pc-tarema-database/uri' '$WORK/live.env' && grep -qxF 'PGSSLMODE=verify-full' '$WORK/live.env'"
    check "installed Secret holds the URI" grep -qxF postgresql://tarema@db.example.org:5432/tarema "$WORK/uri"
  else
    fail "helm install with the planner and an external database" "$(tail -n 5 "$WORK/install.log")"
  fi
fi
summary
