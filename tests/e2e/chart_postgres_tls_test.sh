#!/usr/bin/env bash
# chart_postgres_tls_test.sh: the chart's bundled PostgreSQL serves TLS and its clients verify it
# (docs/operations.md, "Database"). Renders the chart with `helm template` (Helm-generated
# certificates), lays out the PostgreSQL container's mounts (its certificate Secret with the
# rendered file modes, the pg_hba.conf ConfigMap) and the clients' CA mount in a scratch
# directory, and starts a real local PostgreSQL (the Debian binaries hack/postgres.sh uses) with
# exactly the container's arguments. Then: the rendered URI plus the clients' CA connects with TLS
# under verify-full (host = the Service's DNS name, hostaddr = 127.0.0.1: the name check stays
# honest), a wrong CA, a wrong host name and a missing CA are refused, a client without TLS is
# refused by pg_hba (hostssl), the liveness probe reloads a renewed certificate, and the real
# tarema-labeler (when bin/ is built) migrates its schema over that connection. Then the server
# presents a certificate of another CA for db.example.test, as an external database: rendered with
# postgresql.external.caSecret, every client (labeler, webhook, DAM, planner) mounts only that
# key as PGSSLROOTCERT, and the labeler's rendered URI plus that file connects under verify-full
# (the chart's own CA refused); planner.database.caSecret wins for the planner; a rendered
# verify-full/verify-ca URI without any CA is refused. Also the rendered Deployments (labeler,
# webhook, DAM, planner), the cert-manager Certificate, an external database without a CA
# (unchanged) and tls.enabled=false. With a cluster (hack/cluster.sh env) also helm
# install and upgrade: the generated Secrets as Helm's lookup keeps or adds them, and the
# Deployments an install with postgresql.external.caSecret stores. Loopback only,
# about 30 s.
# e2e-run: alone (tests/run.sh runs it with no other test beside it): helm install: the chart's own pods go to kube-scheduler unconfined
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
PATH=$K8S_BIN:$TOOLS_BIN:$PATH
CHART=$REPO_ROOT/charts/tarema
REL=pt
NS=pgtls
FULL=$REL-tarema
SVC_HOST=$FULL-postgresql.$NS.svc
WORK=$(mktemp -d)
PGPID=
INSTALLED=
EXT_INSTALLED=
cleanup() {
  if [ -n "$INSTALLED" ]; then
    helm uninstall "$REL" -n "$INSTALLED" >/dev/null 2>&1
    kubectl delete namespace "$INSTALLED" --wait=false >/dev/null 2>&1
  fi
  if [ -n "$EXT_INSTALLED" ]; then
    helm uninstall "$REL-ext" -n "$EXT_INSTALLED" >/dev/null 2>&1
    kubectl delete namespace "$EXT_INSTALLED" --wait=false >/dev/null 2>&1
  fi
  if [ -n "$PGPID" ] && kill -0 "$PGPID" 2>/dev/null; then
    as_owner "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w -t 20 stop >/dev/null 2>&1 ||
      kill -s KILL "$PGPID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# as_owner CMD...: as the user the server runs as (postgres when we are root: it refuses root).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
give_owner() { [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$@"; return 0; }

if ! command -v helm >/dev/null; then
  fail "helm available" "no helm on PATH or in $TOOLS_BIN"
  summary
  exit 1
fi
# The binaries hack/postgres.sh uses: the newest /usr/lib/postgresql/*/bin.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  fail "PostgreSQL server binaries" "none under /usr/lib/postgresql/*/bin: run hack/install-deps.sh"
  summary
  exit 1
fi
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  fail "system user postgres" "missing: run hack/postgres.sh up once (it creates it)"
  summary
  exit 1
fi

render() { # render FILE SETS...
  local f=$1
  shift
  helm template "$REL" "$CHART" -n "$NS" "$@" >"$f" 2>"$WORK/err"
}

# layout FILE ROOT: for the PostgreSQL container and every client Deployment of FILE, writes
# what the kubelet would mount (Secret and ConfigMap volumes, with the rendered item/default
# modes) under ROOT/<component><mountPath>, and prints facts as KEY=VALUE lines: the server's
# args (arg=), liveness script (liveness= base64), volume modes (mode.<mountPath>/<file>=),
# each client's DATABASE_URL source, PGSSLMODE, PGSSLROOTCERT and the Secret and items behind
# the mount that holds that file (client.<component>.*), and the bundled Secret's URI (uri=).
layout() {
  python3 - "$1" "$2" <<'PY'
import base64, os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
root = sys.argv[2]
objs = {(d["kind"], d["metadata"]["name"]): d for d in docs}
def data_of(kind, name):
    o = objs.get((kind, name))
    if not o: return None
    if kind == "Secret":
        out = {k: base64.b64decode(v) for k, v in (o.get("data") or {}).items()}
        out.update({k: v.encode() for k, v in (o.get("stringData") or {}).items()})
        return out
    return {k: v.encode() for k, v in (o.get("data") or {}).items()}
def mount(comp, spec, c):
    """Writes the container's Secret/ConfigMap mounts; returns {mountPath: (kind, name, files)}."""
    vols = {v["name"]: v for v in spec.get("volumes") or []}
    res = {}
    for m in c.get("volumeMounts") or []:
        v = vols.get(m["name"]) or {}  # data: the StatefulSet's volumeClaimTemplate
        if "secret" in v: kind, src = "Secret", v["secret"]; name = src["secretName"]
        elif "configMap" in v: kind, src = "ConfigMap", v["configMap"]; name = src["name"]
        else: continue
        data = data_of(kind, name)
        if data is None: print("missing.%s=%s/%s" % (comp, kind, name)); continue
        items = src.get("items") or [{"key": k, "path": k} for k in data]
        d = root + "/" + comp + m["mountPath"]
        os.makedirs(d, exist_ok=True)
        files = []
        for it in items:
            mode = it.get("mode", src.get("defaultMode", 0o644))
            p = d + "/" + it["path"]
            open(p, "wb").write(data[it["key"]])
            os.chmod(p, mode)
            print("mode.%s/%s=%o" % (m["mountPath"], it["path"], mode))
            files.append(it["path"])
        print("mount.%s.%s=%s/%s:%s:%s" % (comp, m["mountPath"], kind, name, ",".join(files),
                                           "ro" if m.get("readOnly") else "rw"))
        res[m["mountPath"]] = (kind, name, files)
    return res
for d in docs:
    if d["kind"] == "StatefulSet" and d["metadata"]["name"].endswith("-postgresql"):
        spec = d["spec"]["template"]["spec"]; c = spec["containers"][0]
        mount("postgresql", spec, c)
        for a in c.get("args") or []: print("arg=" + a)
        cmd = c["livenessProbe"]["exec"]["command"]
        print("liveness=" + base64.b64encode(cmd[-1].encode()).decode())
        print("fsGroup=%s" % spec["securityContext"].get("fsGroup"))
    if d["kind"] == "Deployment":
        comp = d["metadata"]["labels"]["app.kubernetes.io/component"]
        if comp not in ("labeler", "webhook", "dam", "planner"): continue
        spec = d["spec"]["template"]["spec"]; c = spec["containers"][0]
        mounts = mount(comp, spec, c)
        for e in c.get("env") or []:
            if e["name"] == "DATABASE_URL":
                r = e["valueFrom"]["secretKeyRef"]
                print("client.%s.DATABASE_URL=secret:%s/%s" % (comp, r["name"], r["key"]))
            elif e["name"] in ("PGSSLMODE", "PGSSLROOTCERT"):
                print("client.%s.%s=%s" % (comp, e["name"], e["value"]))
                if e["name"] == "PGSSLROOTCERT":
                    for mp, (kind, name, files) in mounts.items():
                        if e["value"].startswith(mp + "/"):
                            print("client.%s.ca_from=%s/%s:%s" % (comp, kind, name, ",".join(files)))
for (kind, name), o in objs.items():
    if kind == "Secret" and name.endswith("-database"):
        print("exturi=" + o["stringData"]["uri"])
    if kind == "Secret" and name.endswith("-postgresql"):
        print("uri=" + o["stringData"]["uri"])
        for k in ("username", "password", "database"): print("%s=%s" % (k, o["stringData"][k]))
PY
}
val() { sed -n "s|^$2=||p" "$1" | head -n 1; }
has() { grep -qxF -- "$2" "$1" || { echo "no '$2' in:"; cat "$1"; return 1; }; }
hasnt() { ! grep -q -- "$2" "$1" || { echo "unexpected '$2' in:"; grep -- "$2" "$1"; return 1; }; }

ALL=(--set webhook.enabled=true --set dam.enabled=true --set planner.enabled=true)
mkdir -p "$WORK/mnt"
if ! render "$WORK/r.yaml" "${ALL[@]}" || ! layout "$WORK/r.yaml" "$WORK/mnt" >"$WORK/facts"; then
  fail "render and lay out the chart (bundled, Helm-generated certificates)" "$(cat "$WORK/err")"
  summary
  exit 1
fi
F=$WORK/facts
SRV=$WORK/mnt/postgresql

# 1. The rendered server: its certificate, the key's mode, TLS arguments, hostssl.
check "server: TLS on, with the mounted certificate and key" bash -c "grep -qxF 'arg=ssl=on' '$F' &&
  grep -qxF 'arg=ssl_cert_file=/etc/tarema/postgresql-tls/tls.crt' '$F' && grep -qxF 'arg=ssl_key_file=/etc/tarema/postgresql-tls/tls.key' '$F'"
check "server: certificate and key mounted read-only from Secret $FULL-postgresql-tls (no CA key, no other server's key)" \
  has "$F" "mount.postgresql./etc/tarema/postgresql-tls=Secret/$FULL-postgresql-tls:tls.crt,tls.key:ro"
check "server: the key's mode is 0640 or less (kubelet: root-owned, group fsGroup 999)" bash -c "
  m=\$(sed -n 's|^mode./etc/tarema/postgresql-tls/tls.key=||p' '$F'); [ -n \"\$m\" ] && [ \$((8#\$m & 8#137)) = 0 ] && grep -qxF fsGroup=999 '$F'"
python3 - "$WORK/r.yaml" "$FULL-postgresql-tls" "$WORK/server-ca.crt" <<'PY'
import base64, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Secret" and d["metadata"]["name"] == sys.argv[2]:
        open(sys.argv[3], "wb").write(base64.b64decode(d["data"]["ca.crt"]))
PY
check "server: its certificate names the Service in every form and is signed by its Secret's CA" bash -c "
  s=\$(openssl x509 -in '$SRV/etc/tarema/postgresql-tls/tls.crt' -noout -ext subjectAltName) &&
  for n in $FULL-postgresql $FULL-postgresql.$NS $SVC_HOST $SVC_HOST.cluster.local; do grep -qE \"DNS:\$n(,|\$)\" <<<\"\$s\" || { echo \"no \$n in \$s\"; exit 1; }; done
  openssl verify -CAfile '$WORK/server-ca.crt' '$SRV/etc/tarema/postgresql-tls/tls.crt'"
check "server: pg_hba.conf from the ConfigMap: network clients over TLS only" bash -c "
  grep -qxF 'arg=hba_file=/etc/tarema/postgresql/pg_hba.conf' '$F' &&
  grep -Eq '^hostssl +all +all +all +scram-sha-256' '$SRV/etc/tarema/postgresql/pg_hba.conf' &&
  ! grep -Eq '^host(nossl)? .*(trust|scram|md5|password)' '$SRV/etc/tarema/postgresql/pg_hba.conf'"

# 2. The rendered clients: the URI says verify-full; each mounts only the CA.
URI=$(val "$F" uri)
check "bundled Secret's URI: host is the Service, sslmode=verify-full" bash -c "[[ '$URI' == postgresql://*@$SVC_HOST:5432/*'?sslmode=verify-full' ]] || { echo '$URI'; exit 1; }"
for c in labeler webhook dam planner; do
  check "$c: DATABASE_URL from the bundled Secret, PGSSLROOTCERT = the CA of $FULL-postgresql-tls (ca.crt only)" bash -c "
    grep -qxF 'client.$c.DATABASE_URL=secret:$FULL-postgresql/uri' '$F' &&
    grep -qxF 'client.$c.PGSSLROOTCERT=/etc/tarema/db-ca/ca.crt' '$F' &&
    grep -qxF 'client.$c.ca_from=Secret/$FULL-postgresql-tls:ca.crt' '$F' &&
    grep -qxF 'mount.$c./etc/tarema/db-ca=Secret/$FULL-postgresql-tls:ca.crt:ro' '$F' || { grep '^client.$c\\|^mount.$c' '$F'; exit 1; }"
done
check "planner: PGSSLMODE verify-full for the bundled database" has "$F" "client.planner.PGSSLMODE=verify-full"
for c in labeler webhook dam; do
  check "$c: PGSSLMODE verify-full with the CA (libpq's default for a URI without sslmode, prefer, does not check the host name)" has "$F" "client.$c.PGSSLMODE=verify-full"
done
CLIENT_CA=$WORK/mnt/labeler$(val "$F" client.labeler.PGSSLROOTCERT)

# 3. A real PostgreSQL with exactly the container's arguments (paths under the scratch mounts).
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$WORK/pg/data" "$WORK/pg/run" "$WORK/pg/tmp"
chmod 711 "$WORK"
chmod 700 "$WORK/pg/data"
printf '%s\n' "$(val "$F" password)" >"$WORK/pg/pw"
chmod 600 "$WORK/pg/pw"
give_owner "$WORK/pg"
# As the kubelet mounts a Secret with fsGroup: files root-owned, group 999 (here: postgres).
# Not root: the files are the server's own user's, and PostgreSQL wants 0600 for those.
if [ "$(id -u)" = 0 ]; then
  chmod 755 "$WORK/mnt" "$WORK/mnt/postgresql"
  chgrp -R postgres "$SRV/etc"
  find "$SRV/etc" -type d -exec chmod 750 {} +
else
  chmod 600 "$SRV/etc/tarema/postgresql-tls/tls.key"
fi
PG_ARGS=()
while IFS= read -r a; do
  PG_ARGS+=("$(sed "s|=/etc/tarema/|=$SRV/etc/tarema/|" <<<"$a")")
done < <(sed -n 's/^arg=//p' "$F")
DBUSER=$(val "$F" username)
DBNAME=$(val "$F" database)
if ! as_owner "$PGBIN/initdb" -D "$WORK/pg/data" -U "$DBUSER" --pwfile="$WORK/pg/pw" -E UTF8 --no-locale \
  --no-sync --auth-local=trust --auth-host=scram-sha-256 >"$WORK/initdb.log" 2>&1; then
  fail "initdb" "$(tail -n 5 "$WORK/initdb.log")"
  summary
  exit 1
fi
as_owner "$PGBIN/postgres" -D "$WORK/pg/data" -c listen_addresses=127.0.0.1 -c port="$PORT" \
  -c unix_socket_directories="$WORK/pg/run" -c fsync=off "${PG_ARGS[@]}" >"$WORK/pg.log" 2>&1 &
PGPID=$!
if wait_for 30 "$PGBIN/pg_isready" -q -h "$WORK/pg/run" -p "$PORT"; then
  pass "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') starts with the rendered arguments (${PG_ARGS[*]})"
else
  fail "PostgreSQL starts with the rendered arguments" "$(tail -n 5 "$WORK/pg.log")"
  summary
  exit 1
fi
# The image's entrypoint creates POSTGRES_DB over the unix socket (trusted by the rendered hba).
"$PGBIN/psql" -X -q -h "$WORK/pg/run" -p "$PORT" -U "$DBUSER" -d postgres -c "CREATE DATABASE $DBNAME" >/dev/null 2>"$WORK/err" ||
  fail "create the database over the socket" "$(cat "$WORK/err")"

# client CA [URI]: psql with the rendered URI redirected to 127.0.0.1:PORT (hostaddr; host stays
# the Service name), a clean environment (but PGSSLMODE, when the caller sets it) and root
# certificate CA; prints "ssl" of its session.
LOCAL_URI=$(sed "s|@$SVC_HOST:5432/|@$SVC_HOST:$PORT/|" <<<"$URI")\&hostaddr=127.0.0.1
client() {
  env -i PATH="$PATH" HOME="$WORK/home" PGSSLROOTCERT="$1" PGCONNECT_TIMEOUT=5 ${PGSSLMODE:+PGSSLMODE="$PGSSLMODE"} \
    "$PGBIN/psql" -X -tA "${2:-$LOCAL_URI}" -c "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()" 2>&1
}
mkdir -p "$WORK/home"
out=$(client "$CLIENT_CA")
[ "$out" = t ] && pass "rendered URI + the clients' mounted CA: connected, pg_stat_ssl.ssl = t (verify-full)" ||
  fail "rendered URI + the clients' mounted CA connects with TLS" "$out"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=wrong-ca \
  -keyout "$WORK/wrong.key" -out "$WORK/wrong.crt" >/dev/null 2>&1
out=$(client "$WORK/wrong.crt")
[ "$out" != t ] && grep -qi "certificate verify failed" <<<"$out" && pass "a wrong CA is refused (certificate verify failed)" ||
  fail "a wrong CA is refused" "$out"
out=$(client "$WORK/none.crt")
[ "$out" != t ] && grep -qi "root certificate file" <<<"$out" && pass "no CA at all: the URI's verify-full fails closed" ||
  fail "no CA at all: refused" "$out"
out=$(client "$CLIENT_CA" "$(sed "s|@$SVC_HOST:|@$FULL-other.$NS.svc:|" <<<"$LOCAL_URI")")
[ "$out" != t ] && grep -qi "does not match host name" <<<"$out" && pass "another host name is refused (verify-full checks the name)" ||
  fail "another host name is refused" "$out"
out=$(client "$CLIENT_CA" "$(sed 's|sslmode=verify-full|sslmode=disable|' <<<"$LOCAL_URI")")
[ "$out" != t ] && grep -qi "pg_hba.conf.*no encryption" <<<"$out" && pass "a client without TLS is refused (pg_hba hostssl)" ||
  fail "a client without TLS is refused" "$out"

# 4. tarema's own client (libpq through lib/pg.c) with the rendered environment (without the
# binary: a failure naming it, not a skip).
if [ -x "$BIN/tarema-labeler" ] || { fail "$BIN/tarema-labeler built" "not found: run make"; false; }; then
  out=$(env -i PATH="$PATH" HOME="$WORK/home" DATABASE_URL="$LOCAL_URI" PGSSLROOTCERT="$CLIENT_CA" \
    "$BIN/tarema-labeler" migrate 2>&1)
  rc=$?
  tables=$(env -i PATH="$PATH" "$PGBIN/psql" -X -tA -h "$WORK/pg/run" -p "$PORT" -U "$DBUSER" -d "$DBNAME" \
    -c "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')" 2>&1)
  [ $rc = 0 ] && [ "$tables" -gt 0 ] 2>/dev/null &&
    pass "tarema-labeler migrate with the rendered URI and mounted CA (verify-full) creates its schema ($tables tables)" ||
    fail "tarema-labeler migrate over verify-full TLS" "rc=$rc tables=$tables: $out"
  out=$(env -i PATH="$PATH" HOME="$WORK/home" DATABASE_URL="$LOCAL_URI" PGSSLROOTCERT="$WORK/wrong.crt" \
    "$BIN/tarema-labeler" migrate 2>&1)
  rc=$?
  [ $rc != 0 ] && grep -qi "certificate verify failed" <<<"$out" && pass "tarema-labeler refuses the server under a wrong CA" ||
    fail "tarema-labeler refuses the server under a wrong CA" "rc=$rc: $out"
fi

# 5. The liveness probe reloads a renewed certificate (cert-manager renews in place): a
# certificate of another CA replaces the files; after the probe, only that CA verifies.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$FULL-postgresql" \
  -keyout "$WORK/new.key" -out "$WORK/new.csr" >/dev/null 2>&1 &&
  openssl x509 -req -in "$WORK/new.csr" -CA "$WORK/wrong.crt" -CAkey "$WORK/wrong.key" -CAcreateserial -days 1 \
    -out "$WORK/new.crt" -extfile <(printf 'subjectAltName=DNS:%s' "$SVC_HOST") >/dev/null 2>&1
PROBE=$(val "$F" liveness | base64 -d | sed -e "s|/etc/tarema/|$SRV/etc/tarema/|g" -e "s|/tmp/tls.cksum|$WORK/pg/tmp/tls.cksum|g")
probe() {
  as_owner env PATH="$PGBIN:$PATH" POSTGRES_USER="$DBUSER" POSTGRES_DB="$DBNAME" PGDATA="$WORK/pg/data" \
    PGPORT="$PORT" sh -c "$PROBE" >>"$WORK/probe.log" 2>&1
}
probe
rc=$?
[ $rc = 0 ] && [ -s "$WORK/pg/tmp/tls.cksum" ] && pass "liveness probe passes on a healthy server, remembers the files" ||
  fail "liveness probe passes on a healthy server" "rc=$rc: $(cat "$WORK/probe.log")"
key=$SRV/etc/tarema/postgresql-tls/tls.key
cat "$WORK/new.key" >"$key" && cat "$WORK/new.crt" >"$SRV/etc/tarema/postgresql-tls/tls.crt"
probe
reloaded=0
for _ in $(seq 1 25); do
  [ "$(client "$WORK/wrong.crt")" = t ] && { reloaded=1; break; }
  sleep 0.2
done
[ $reloaded = 1 ] && [ "$(client "$CLIENT_CA")" != t ] &&
  pass "liveness probe: a renewed certificate is served after the probe's reload" ||
  fail "liveness probe reloads a renewed certificate" "$(cat "$WORK/probe.log"; tail -n 3 "$WORK/pg.log")"

# 6. An external database with postgresql.external.caSecret: the server now presents a
# certificate for db.example.test from a CA of its own (not the chart's, as an external database
# would); the CA Secret is the user's (kubectl create secret, a key other than ca.crt and a
# second key that must not be mounted). Every client mounts only that key as PGSSLROOTCERT, and
# the labeler's rendered URI plus that file connects with TLS; the chart's own CA is refused.
EXT_HOST=db.example.test
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=ext-db-ca \
  -keyout "$WORK/ext-ca.key" -out "$WORK/ext-ca.crt" >/dev/null 2>&1 &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$EXT_HOST" \
    -keyout "$WORK/ext.key" -out "$WORK/ext.csr" >/dev/null 2>&1 &&
  openssl x509 -req -in "$WORK/ext.csr" -CA "$WORK/ext-ca.crt" -CAkey "$WORK/ext-ca.key" -CAcreateserial -days 1 \
    -out "$WORK/ext.crt" -extfile <(printf 'subjectAltName=DNS:%s' "$EXT_HOST") >/dev/null 2>&1 &&
  cat "$WORK/ext.key" >"$key" && cat "$WORK/ext.crt" >"$SRV/etc/tarema/postgresql-tls/tls.crt" &&
  as_owner "$PGBIN/pg_ctl" -D "$WORK/pg/data" reload >/dev/null 2>&1 ||
  fail "serve a certificate of an external CA for $EXT_HOST"
EXT_URI="postgresql://$DBUSER:$(val "$F" password)@$EXT_HOST:$PORT/$DBNAME?sslmode=verify-full&hostaddr=127.0.0.1"
# ca_secret NAME KEY FILE: the user's CA Secret as kubectl would store it (plus a key not to mount)
ca_secret() {
  printf -- '---\napiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\ndata:\n  %s: %s\n  unrelated.key: %s\n' \
    "$1" "$NS" "$2" "$(base64 -w0 <"$3")" "$(printf 'not for the clients' | base64 -w0)"
}
EXTCA=(--set postgresql.bundled=false --set-string postgresql.external.uri="$EXT_URI"
  --set postgresql.external.caSecret=ext-db-ca --set postgresql.external.caSecretKey=db-root.pem)
if render "$WORK/extca.yaml" "${ALL[@]}" "${EXTCA[@]}"; then
  ca_secret ext-db-ca db-root.pem "$WORK/ext-ca.crt" >>"$WORK/extca.yaml"
  mkdir -p "$WORK/extcamnt"
  layout "$WORK/extca.yaml" "$WORK/extcamnt" >"$WORK/extca.facts" 2>"$WORK/err" || fail "lay out the external-CA render" "$(cat "$WORK/err")"
else
  fail "render with an external database and postgresql.external.caSecret" "$(cat "$WORK/err")"
fi
EF=$WORK/extca.facts
for c in labeler webhook dam planner; do
  check "external caSecret: $c mounts only key db-root.pem of ext-db-ca read-only, PGSSLROOTCERT = it, DATABASE_URL from $FULL-database" bash -c "
    grep -qxF 'client.$c.DATABASE_URL=secret:$FULL-database/uri' '$EF' &&
    grep -qxF 'client.$c.PGSSLROOTCERT=/etc/tarema/db-ca/db-root.pem' '$EF' &&
    grep -qxF 'client.$c.ca_from=Secret/ext-db-ca:db-root.pem' '$EF' &&
    grep -qxF 'mount.$c./etc/tarema/db-ca=Secret/ext-db-ca:db-root.pem:ro' '$EF' || { grep '^client.$c\\|^mount.$c' '$EF'; exit 1; }"
done
check "external caSecret: no bundled PostgreSQL, no TLS Secret of the chart's for it" bash -c "
  grep -q 'kind: Deployment' '$WORK/extca.yaml' && ! grep -q 'postgresql-tls\|kind: StatefulSet' '$WORK/extca.yaml' && ! grep -q '^arg=' '$EF'"
EXT_CA_FILE=$WORK/extcamnt/labeler$(val "$EF" client.labeler.PGSSLROOTCERT)
RENDERED_EXT_URI=$(val "$EF" exturi)
check "external caSecret: the rendered Secret holds the URI as given" test "$RENDERED_EXT_URI" = "$EXT_URI"
out=$(client "$EXT_CA_FILE" "$RENDERED_EXT_URI")
[ "$out" = t ] && pass "external caSecret: the labeler's URI + its mounted CA connect with TLS to $EXT_HOST (verify-full, pg_stat_ssl.ssl = t)" ||
  fail "external caSecret: the labeler's URI + its mounted CA connect with TLS" "$out"
out=$(client "$CLIENT_CA" "$RENDERED_EXT_URI")
[ -n "$RENDERED_EXT_URI" ] && [ "$out" != t ] && grep -qi "certificate verify failed" <<<"$out" && pass "external caSecret: another CA (the chart's own) is refused" ||
  fail "external caSecret: another CA is refused" "$out"
# A URI without sslmode: the rendered PGSSLMODE makes libpq verify it fully too. Before it was
# set, libpq's default (prefer) checked the chain but not the host name (a root certificate file
# present), so a server with a certificate of the CA for another name was accepted: the last of
# these checks failed.
for c in labeler webhook dam; do
  check "external caSecret: $c gets PGSSLMODE=verify-full" has "$EF" "client.$c.PGSSLMODE=verify-full"
done
NOMODE_URI=${RENDERED_EXT_URI/sslmode=verify-full&/}
EXT_MODE=$(val "$EF" client.labeler.PGSSLMODE)
out=$(PGSSLMODE=$EXT_MODE client "$EXT_CA_FILE" "$NOMODE_URI")
[ "$out" = t ] && pass "external caSecret, URI without sslmode: the rendered PGSSLMODE ($EXT_MODE) and the mounted CA connect with TLS" ||
  fail "external caSecret, URI without sslmode: connects with the rendered PGSSLMODE" "$out"
out=$(PGSSLMODE=$EXT_MODE client "$EXT_CA_FILE" "${NOMODE_URI/@$EXT_HOST:/@other.example.test:}")
[ "$NOMODE_URI" != "$RENDERED_EXT_URI" ] && [ "$out" != t ] && grep -qi "does not match host name" <<<"$out" &&
  pass "external caSecret, URI without sslmode: a certificate for another host name is refused (the rendered PGSSLMODE)" ||
  fail "external caSecret, URI without sslmode: a certificate for another host name is refused" "PGSSLMODE=$EXT_MODE: $out"
if [ -x "$BIN/tarema-labeler" ]; then
  out=$(env -i PATH="$PATH" HOME="$WORK/home" DATABASE_URL="$RENDERED_EXT_URI" PGSSLROOTCERT="$EXT_CA_FILE" \
    "$BIN/tarema-labeler" migrate 2>&1)
  rc=$?
  [ $rc = 0 ] && pass "external caSecret: tarema-labeler migrate with the rendered URI and mounted CA" ||
    fail "external caSecret: tarema-labeler migrate" "rc=$rc: $out"
fi
# The planner's own planner.database.caSecret wins for the planner; the others keep the external one.
# deployments FILE: the rendered Deployments as a JSON array (for jq)
deployments() {
  python3 -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment"]))' "$1"
}
render "$WORK/extpl.yaml" "${ALL[@]}" "${EXTCA[@]}" --set planner.database.caSecret=planner-ca &&
  deployments "$WORK/extpl.yaml" >"$WORK/extpl.json" || fail "render with both CA Secrets" "$(cat "$WORK/err")"
# ca_of COMPONENT: "PGSSLROOTCERT SECRET ITEMS" of that Deployment's container and db-ca volume
ca_of() {
  jq -r --arg c "$1" '.[] | select(.metadata.labels["app.kubernetes.io/component"] == $c) | .spec.template.spec as $s |
    [($s.containers[0].env[] | select(.name == "PGSSLROOTCERT") | .value),
     ($s.volumes[] | select(.name == "db-ca") | .secret.secretName, (.secret.items | tojson))] | join(" ")' "$WORK/extpl.json"
}
got=$(ca_of planner)
[ "$got" = '/etc/tarema/db-ca/ca.crt planner-ca [{"key":"ca.crt","path":"ca.crt"}]' ] &&
  pass "planner.database.caSecret wins for the planner (only its key ca.crt)" ||
  fail "planner.database.caSecret wins for the planner" "got: $got"
for c in labeler webhook dam; do
  got=$(ca_of $c)
  [ "$got" = '/etc/tarema/db-ca/db-root.pem ext-db-ca [{"key":"db-root.pem","path":"db-root.pem"}]' ] &&
    pass "with planner.database.caSecret too: $c keeps postgresql.external.caSecret" ||
    fail "with planner.database.caSecret too: $c keeps postgresql.external.caSecret" "got: $got"
done
# A URI the chart renders that asks for verification without any CA for its clients is refused.
out=$(helm template "$REL" "$CHART" -n "$NS" --set postgresql.bundled=false \
  --set-string postgresql.external.uri="postgresql://tarema@$EXT_HOST:5432/tarema?sslmode=verify-full" 2>&1)
[ $? != 0 ] && grep -q 'postgresql.external.caSecret' <<<"$out" && grep -q 'labeler' <<<"$out" &&
  pass "external verify-full URI without caSecret: refused, naming postgresql.external.caSecret and the labeler" ||
  fail "external verify-full URI without caSecret: refused" "$(tail -c 300 <<<"$out")"
out=$(helm template "$REL" "$CHART" -n "$NS" --set postgresql.bundled=false \
  --set-string postgresql.external.uri="postgresql://tarema@$EXT_HOST:5432/tarema?sslmode=verify-ca" 2>&1)
[ $? != 0 ] && grep -q 'postgresql.external.caSecret' <<<"$out" &&
  pass "external verify-ca URI without caSecret: refused" || fail "external verify-ca URI without caSecret: refused" "$(tail -c 300 <<<"$out")"
check "external verify-full URI with its own sslrootcert, or sslmode=require: rendered" bash -c "
  helm template $REL '$CHART' -n $NS --set postgresql.bundled=false \
    --set-string postgresql.external.uri='postgresql://tarema@$EXT_HOST:5432/tarema?sslmode=verify-full&sslrootcert=/etc/ssl/db.pem' >/dev/null &&
  helm template $REL '$CHART' -n $NS --set postgresql.bundled=false \
    --set-string postgresql.external.uri='postgresql://tarema@$EXT_HOST:5432/tarema?sslmode=require' >/dev/null"

# 7. The other providers and modes, rendered.
cert_facts() { # cert_facts FILE: cert.NAME=SECRET:ISSUER:DNS,... and secret=NAME of *-tls Secrets
  python3 - "$1" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "Certificate":
        s = d["spec"]
        print("cert.%s=%s:%s:%s" % (d["metadata"]["name"], s["secretName"], s["issuerRef"]["name"], ",".join(s.get("dnsNames") or [])))
    if d and d["kind"] == "Secret" and d["metadata"]["name"].endswith("-tls"):
        print("secret=" + d["metadata"]["name"])
PY
}
render "$WORK/cm.yaml" --set tls.provider=cert-manager && cert_facts "$WORK/cm.yaml" >"$WORK/cm.facts" ||
  fail "render with tls.provider=cert-manager" "$(cat "$WORK/err")"
check "cert-manager: a Certificate for the PostgreSQL Service from the chart's CA Issuer, no generated Secret" bash -c "
  grep -qxF 'cert.$FULL-postgresql=$FULL-postgresql-tls:$FULL-ca:$FULL-postgresql,$FULL-postgresql.$NS,$SVC_HOST,$SVC_HOST.cluster.local' '$WORK/cm.facts' &&
  ! grep -q '^secret=' '$WORK/cm.facts' || { cat '$WORK/cm.facts'; exit 1; }"

render "$WORK/ext.yaml" "${ALL[@]}" --set postgresql.bundled=false \
  --set postgresql.external.uri='postgresql://tarema@db.example.org:5432/tarema?sslmode=require' &&
  mkdir -p "$WORK/extmnt" && layout "$WORK/ext.yaml" "$WORK/extmnt" >"$WORK/ext.facts" ||
  fail "render with an external database" "$(cat "$WORK/err")"
check "external database: no bundled TLS Secret, no CA mount; the URI's own sslmode" bash -c "
  ! grep -q 'postgresql-tls' '$WORK/ext.yaml' && ! grep -q '/etc/tarema/db-ca' '$WORK/ext.facts' &&
  grep -qxF 'client.labeler.DATABASE_URL=secret:$FULL-database/uri' '$WORK/ext.facts' &&
  grep -qF 'postgresql://tarema@db.example.org:5432/tarema?sslmode=require' '$WORK/ext.yaml' || { cat '$WORK/ext.facts'; exit 1; }"
check "external database: the planner as before (verify-full, the system CAs)" bash -c "
  grep -qxF client.planner.PGSSLMODE=verify-full '$WORK/ext.facts' &&
  grep -qxF client.planner.PGSSLROOTCERT=/etc/ssl/certs/ca-certificates.crt '$WORK/ext.facts'"

render "$WORK/notls.yaml" "${ALL[@]}" --set webhook.enabled=false --set tls.enabled=false &&
  mkdir -p "$WORK/notlsmnt" && layout "$WORK/notls.yaml" "$WORK/notlsmnt" >"$WORK/notls.facts" ||
  fail "render with tls.enabled=false" "$(cat "$WORK/err")"
check "tls.enabled=false: no server TLS, the URI without sslmode, the planner disable" bash -c "
  ! grep -q '^arg=' '$WORK/notls.facts' && ! grep -q 'sslmode' '$WORK/notls.yaml' &&
  grep -qxF client.planner.PGSSLMODE=disable '$WORK/notls.facts' || { cat '$WORK/notls.facts'; exit 1; }"

# 8. With a cluster (hack/cluster.sh env): what `helm template` cannot show, Helm's lookup of the
# generated Secrets on a real install and upgrades.
secret_file() { # secret_file NS NAME KEY OUT
  kubectl -n "$1" get secret "$2" -o "jsonpath={.data.${3//./\\.}}" | base64 -d >"$4" && [ -s "$4" ]
}
# Without a cluster, or one whose API server does not turn ready in 60 s, the test fails naming
# it (need_cluster): the install checks never drop silently.
if need_cluster 60; then
  INS=pgtls-$$
  kubectl create namespace "$INS" >/dev/null && INSTALLED=$INS
  HSETS=(--set profiler.run.enabled=false --set postgresql.persistence.enabled=false)
  if helm install "$REL" "$CHART" -n "$INS" "${HSETS[@]}" >"$WORK/install.log" 2>&1 &&
    secret_file "$INS" "$FULL-postgresql-tls" tls.crt "$WORK/i1.crt" && secret_file "$INS" "$FULL-tls" ca.crt "$WORK/i1-chart-ca.crt" &&
    secret_file "$INS" "$FULL-postgresql-tls" ca.crt "$WORK/i1-ca.crt"; then
    check "helm install: the PostgreSQL certificate is signed by the chart's CA (ca.crt of $FULL-tls)" bash -c "
      cmp -s '$WORK/i1-ca.crt' '$WORK/i1-chart-ca.crt' && openssl verify -CAfile '$WORK/i1-chart-ca.crt' '$WORK/i1.crt'"
    helm upgrade "$REL" "$CHART" -n "$INS" "${HSETS[@]}" >>"$WORK/install.log" 2>&1 &&
      secret_file "$INS" "$FULL-postgresql-tls" tls.crt "$WORK/i2.crt"
    check "helm upgrade keeps the PostgreSQL certificate" cmp "$WORK/i1.crt" "$WORK/i2.crt"
    # An upgrade from a chart without it: the other certificates exist, the CA key is gone.
    kubectl -n "$INS" delete secret "$FULL-postgresql-tls" >/dev/null
    helm upgrade "$REL" "$CHART" -n "$INS" "${HSETS[@]}" >>"$WORK/install.log" 2>&1 &&
      secret_file "$INS" "$FULL-postgresql-tls" tls.crt "$WORK/i3.crt" && secret_file "$INS" "$FULL-postgresql-tls" ca.crt "$WORK/i3-ca.crt" &&
      secret_file "$INS" "$FULL-tls" ca.crt "$WORK/i3-chart-ca.crt"
    check "upgrade without the PostgreSQL certificate: a new one, verified by its Secret's own ca.crt; $FULL-tls kept" bash -c "
      ! cmp -s '$WORK/i1.crt' '$WORK/i3.crt' && openssl verify -CAfile '$WORK/i3-ca.crt' '$WORK/i3.crt' &&
      cmp '$WORK/i1-chart-ca.crt' '$WORK/i3-chart-ca.crt' &&
      openssl x509 -in '$WORK/i3.crt' -noout -ext subjectAltName | qgrep 'DNS:$FULL-postgresql.$INS.svc'"
    kubectl -n "$INS" get deployment "$FULL-labeler" -o json >"$WORK/live-labeler.json"
    check "installed labeler Deployment: PGSSLROOTCERT and the CA mount kept by the API server" bash -c "
      jq -e '.spec.template.spec.containers[0].env[] | select(.name==\"PGSSLROOTCERT\" and .value==\"/etc/tarema/db-ca/ca.crt\")' '$WORK/live-labeler.json' &&
      jq -e '.spec.template.spec.volumes[] | select(.name==\"db-ca\" and .secret.secretName==\"$FULL-postgresql-tls\" and .secret.items==[{key: \"ca.crt\", path: \"ca.crt\"}])' '$WORK/live-labeler.json'"
  else
    fail "helm install with the bundled PostgreSQL" "$(tail -n 5 "$WORK/install.log")"
  fi
  # An external database with postgresql.external.caSecret: what the API server stores (another
  # release name: the cluster-scoped objects are per release).
  EXT_NS=pgtls-ext-$$
  kubectl create namespace "$EXT_NS" >/dev/null && EXT_INSTALLED=$EXT_NS
  if helm install "$REL-ext" "$CHART" -n "$EXT_NS" "${HSETS[@]}" --set planner.enabled=true "${EXTCA[@]}" >"$WORK/ext-install.log" 2>&1; then
    for c in labeler planner; do
      kubectl -n "$EXT_NS" get deployment "$REL-ext-tarema-$c" -o json >"$WORK/live-ext-$c.json"
      check "installed external database: the stored $c Deployment carries PGSSLROOTCERT and only key db-root.pem of ext-db-ca" bash -c "
        jq -e '.spec.template.spec.containers[0].env[] | select(.name==\"PGSSLROOTCERT\" and .value==\"/etc/tarema/db-ca/db-root.pem\")' '$WORK/live-ext-$c.json' &&
        jq -e '.spec.template.spec.volumes[] | select(.name==\"db-ca\" and .secret.secretName==\"ext-db-ca\" and .secret.items==[{key: \"db-root.pem\", path: \"db-root.pem\"}])' '$WORK/live-ext-$c.json' &&
        jq -e '.spec.template.spec.containers[0].volumeMounts[] | select(.name==\"db-ca\" and .readOnly==true)' '$WORK/live-ext-$c.json'"
    done
  else
    fail "helm install with an external database and postgresql.external.caSecret" "$(tail -n 5 "$WORK/ext-install.log")"
  fi
fi
summary
