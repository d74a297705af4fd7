#!/usr/bin/env bash
# deploy_chart_test.sh: the Helm chart on its own (no cluster needed): helm lint (plain and
# --strict, default and production values), values.schema.json rejecting bad values with a
# message naming the key, manifests/ in step with the chart, the CRD copy identical, the pod
# hardening the chart promises (non-root, read-only root, no capabilities, seccomp, requests
# and limits, probes), least-privilege RBAC shape, and the rendered scheduler config accepted
# by the real tarema-scheduler.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$REPO_ROOT/hack/lib.sh"
PATH=$K8S_BIN:$TOOLS_BIN:$PATH
CHART=$REPO_ROOT/charts/tarema
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

if ! command -v helm >/dev/null; then
  fail "helm available" "no helm on PATH or in $TOOLS_BIN: run hack/build-controlplane.sh"
  summary
  exit 1
fi

lint_clean() { # lint_clean ARGS...: exit 0 and no [WARNING]/[ERROR] lines
  local out
  out=$(helm lint "$CHART" "$@" 2>&1) || { echo "$out"; return 1; }
  ! grep -E '\[(WARNING|ERROR)\]' <<<"$out"
}
check "helm lint clean" lint_clean
check "helm lint --strict clean" lint_clean --strict
check "helm lint --strict clean with examples/values-production.yaml" lint_clean --strict -f "$CHART/examples/values-production.yaml"
check "helm lint --strict clean with extender and every option on" lint_clean --strict \
  --set scheduler.mode=extender --set extender.enabled=true --set extender.bind=true \
  --set profiler.cronJob.enabled=true --set metrics.serviceMonitor.enabled=true \
  --set labeler.spool.persistence.enabled=true

# bad_value SET EXPECTED: helm template with --set SET fails and its message contains EXPECTED.
bad_value() {
  local out
  if out=$(helm template t "$CHART" --set "$1" 2>&1); then
    fail "schema rejects $1" "helm template succeeded"
    return
  fi
  grep -qF -- "$2" <<<"$out" && pass "schema rejects $1 naming '$2'" ||
    fail "schema rejects $1 naming '$2'" "$out"
}
bad_value scheduler.replicas=two "/scheduler/replicas"
bad_value scheduler.config.policy=bogus "/scheduler/config/policy"
bad_value scheduler.config.polcy=tarema "'polcy' not allowed"
bad_value scheduler.config.mode=extender "'mode' not allowed"
bad_value scheduler.mode=both "/scheduler/mode"
bad_value labeler.replicas=2 "/labeler/replicas"
bad_value labeler.port=70000 "/labeler/port"
bad_value profiler.cronJob.schedule=weekly "/profiler/cronJob/schedule"
bad_value postgresql.persistence.size=lots "/postgresql/persistence/size"
bad_value image.pullPolicy=Sometimes "/image/pullPolicy"
bad_value postgresql.bundled=false "postgresql.external.uri is required"
bad_value scheduler.resources.limits=null "/scheduler/resources"
out=$(helm lint "$CHART" --set scheduler.replicas=two 2>&1) && fail "helm lint fails on a bad value" "$out" ||
  { grep -q '/scheduler/replicas' <<<"$out" && pass "helm lint fails on a bad value, naming it" || fail "helm lint names the bad value" "$out"; }

check "manifests/ match the chart (hack/render-manifests.sh --check)" bash "$REPO_ROOT/hack/render-manifests.sh" --check
check "chart CRD is manifests/crds/taskprofile.yaml" cmp "$REPO_ROOT/manifests/crds/taskprofile.yaml" "$CHART/crds/taskprofile.yaml"

# Every option on, so every workload template is checked.
helm template tarema "$CHART" --namespace tarema --set profiler.cronJob.enabled=true \
  --set labeler.spool.persistence.enabled=true --set extender.enabled=true >"$WORK/all.yaml" 2>"$WORK/err" ||
  fail "render with every workload" "$(cat "$WORK/err")"

python3 - "$WORK/all.yaml" "$REPO_ROOT/charts/tarema/values.yaml" "$REPO_ROOT/charts/tarema/values.schema.json" >"$WORK/py.out" 2>&1 <<'PY'
# Prints "ok - NAME" or "not ok - NAME\n    why" lines; the shell counts them.
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def report(name, problems):
    if problems:
        print("not ok - " + name)
        for p in problems[:8]: print("    " + p)
    else:
        print("ok - " + name)

def pod_specs():
    for d in docs:
        k = d["kind"]
        if k in ("Deployment", "StatefulSet", "Job"):
            yield d, d["spec"]["template"]["spec"]
        elif k == "CronJob":
            yield d, d["spec"]["jobTemplate"]["spec"]["template"]["spec"]

kinds = sorted({d["kind"] for d, _ in pod_specs()})
report("workloads rendered: Deployment, StatefulSet, Job, CronJob",
       [] if kinds == ["CronJob", "Deployment", "Job", "StatefulSet"] else ["got %s" % kinds])
hard, res, probes = [], [], []
for d, ps in pod_specs():
    name = "%s/%s" % (d["kind"], d["metadata"]["name"])
    psc = ps.get("securityContext", {})
    for c in ps["containers"]:
        sc = c.get("securityContext", {})
        where = "%s container %s" % (name, c["name"])
        if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")): hard.append(where + ": runAsNonRoot not set")
        if sc.get("readOnlyRootFilesystem") is not True: hard.append(where + ": root filesystem writable")
        if sc.get("allowPrivilegeEscalation") is not False: hard.append(where + ": privilege escalation allowed")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]: hard.append(where + ": capabilities not dropped")
        if (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            hard.append(where + ": no RuntimeDefault seccomp")
        r = c.get("resources", {})
        for part in ("requests", "limits"):
            for key in ("cpu", "memory"):
                if key not in r.get(part, {}): res.append("%s: no %s.%s" % (where, part, key))
        if d["kind"] == "Deployment":
            lp = c.get("livenessProbe", {}).get("httpGet", {}).get("path")
            rp = c.get("readinessProbe", {}).get("httpGet", {}).get("path")
            if (lp, rp) != ("/healthz", "/readyz"): probes.append("%s: liveness %s readiness %s" % (where, lp, rp))
        if d["kind"] == "StatefulSet" and not (c.get("livenessProbe") and c.get("readinessProbe")):
            probes.append(where + ": no probes")
report("every container: non-root, read-only root, no escalation, drop ALL, seccomp RuntimeDefault", hard)
report("every container has cpu and memory requests and limits", res)
report("Deployments probe /healthz (liveness) and /readyz (readiness); PostgreSQL has probes", probes)

dep = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
sched = dep.get("tarema-scheduler")
cm = next((d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "tarema-scheduler-config"), None)
cfg = yaml.safe_load(cm["data"]["scheduler.yaml"]) if cm else {}
report("scheduler: 2 replicas, leader election on in the release namespace",
       [] if sched and sched["spec"]["replicas"] == 2 and cfg.get("leaderElection", {}).get("enabled") is True
       and cfg["leaderElection"].get("namespace") == "tarema" else ["replicas/leaderElection wrong: %s" % cfg.get("leaderElection")])
open(sys.argv[1] + ".sched.yaml", "w").write(cm["data"]["scheduler.yaml"] if cm else "")
# The command lines the chart gives the labeler and the profiler, one argument per line, for
# the real binaries to parse below.
for d, ps in pod_specs():
    for c in ps["containers"]:
        prog = c.get("command", [""])[0].rsplit("/", 1)[-1]
        if prog in ("tarema-labeler", "tarema-profiler"):
            open("%s.args.%s.%s" % (sys.argv[1], d["kind"], prog), "w").write("\n".join(c["args"]) + "\n")

# RBAC: no wildcards, no Secrets, one ServiceAccount per component, each bound.
problems = []
for d in docs:
    if d["kind"] in ("Role", "ClusterRole"):
        for r in d.get("rules", []):
            for f in ("verbs", "resources", "apiGroups"):
                if "*" in r.get(f, []): problems.append("%s %s: wildcard in %s" % (d["kind"], d["metadata"]["name"], f))
            if "secrets" in r.get("resources", []): problems.append("%s %s grants secrets" % (d["kind"], d["metadata"]["name"]))
            if {"escalate", "bind", "impersonate"} & set(r.get("verbs", [])): problems.append("%s grants %s" % (d["metadata"]["name"], r["verbs"]))
sas = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount")
want = ["tarema-labeler", "tarema-profiler", "tarema-profiler-bench", "tarema-scheduler"]
if sas != want: problems.append("ServiceAccounts %s, want %s" % (sas, want))
bound = {s["name"] for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding") for s in d["subjects"]}
if set(want) - bound: problems.append("not bound: %s" % sorted(set(want) - bound))
for d, ps in pod_specs():
    if d["kind"] != "StatefulSet" and ps.get("serviceAccountName") not in want:
        problems.append("%s runs as %s" % (d["metadata"]["name"], ps.get("serviceAccountName")))
report("RBAC: one ServiceAccount per component, no wildcards, no Secrets, no escalate/bind", problems)

# What RBAC cannot express is enforced by admission policies (issue 13, defect 7): one for the
# profiler's Jobs, its ConfigMaps and its Node patches, one for the scheduler's pod status
# patches, each bound with Deny, failing closed, matching only requests of those accounts.
problems = []
vaps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
binds = {d["spec"]["policyName"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"}
prof_user, bench_user = "system:serviceaccount:tarema:tarema-profiler", "system:serviceaccount:tarema:tarema-profiler-bench"
sched_user = "system:serviceaccount:tarema:tarema-scheduler"
for name, users in (("tarema-profiler-jobs", [prof_user]), ("tarema-profiler-configmaps", [prof_user, bench_user]),
                    ("tarema-profiler-nodes", [prof_user]), ("tarema-scheduler-pod-status", [sched_user]),
                    ("tarema-scheduler-pod-annotation", [sched_user])):
    v = vaps.get(name)
    if not v: problems.append("no ValidatingAdmissionPolicy " + name); continue
    if v["spec"].get("failurePolicy") != "Fail": problems.append(name + ": failurePolicy is not Fail")
    conds = " ".join(c["expression"] for c in v["spec"].get("matchConditions", []))
    for u in users:
        if '"%s"' % u not in conds: problems.append("%s: does not match requests of %s" % (name, u))
    if not v["spec"].get("validations"): problems.append(name + ": no validations")
    b = binds.get(name)
    if not b or b["spec"].get("validationActions") != ["Deny"]: problems.append(name + ": not bound with Deny")
jobs = json.dumps(vaps.get("tarema-profiler-jobs", {}))
prof = next(d for d in docs if d["kind"] == "Job" and "profiler-run" in d["metadata"]["name"])
img = prof["spec"]["template"]["spec"]["containers"][0]["image"]
for want in ('\\"tarema-profiler-bench\\"', '\\"%s\\"' % img):
    if want not in jobs: problems.append("tarema-profiler-jobs does not pin %s" % want)
report("admission policies confine the profiler's Jobs, ConfigMaps and Node patches and the scheduler's pod status patches", problems)
# Security defaults (issue 13): TLS, client CA and auth token on both servers, probes on the
# plain health port, NetworkPolicies, the token and certificate Secrets, the extender over mTLS.
problems = []
for name in ("tarema-scheduler", "tarema-labeler"):
    d = dep.get(name)
    if not d:
        problems.append("no Deployment " + name); continue
    c = d["spec"]["template"]["spec"]["containers"][0]
    for f in ("--tls-cert-file=", "--tls-key-file=", "--client-ca-file=", "--auth-token-file=", "--health-port="):
        if not any(a.startswith(f) for a in c["args"]): problems.append("%s: no %s" % (name, f))
    for probe in ("livenessProbe", "readinessProbe"):
        if c[probe]["httpGet"]["port"] != "health": problems.append("%s: %s not on the health port" % (name, probe))
nps = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "NetworkPolicy")
if nps != ["tarema-labeler", "tarema-postgresql", "tarema-scheduler"]: problems.append("NetworkPolicies %s" % nps)
secrets = {d["metadata"]["name"] for d in docs if d["kind"] == "Secret"}
for want_secret in ("tarema-auth", "tarema-tls", "tarema-extender-client-tls"):
    if want_secret not in secrets: problems.append("no Secret " + want_secret)
ext = next((d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "tarema-extender-config"), None)
e = yaml.safe_load(ext["data"]["kube-scheduler-config.yaml"])["extenders"][0] if ext else {}
if not (e.get("urlPrefix", "").startswith("https://") and e.get("enableHTTPS") is True and
        set(e.get("tlsConfig", {})) == {"certFile", "keyFile", "caFile"}):
    problems.append("extender config not HTTPS with a client certificate: %s" % e)
if "bindVerb" in e: problems.append("extender config has bindVerb although extender.bind is false")
if e.get("preemptVerb") != "preempt": problems.append("extender config without preemptVerb: preempt: %s" % e)
report("security defaults: TLS + client CA + token on both servers, probes on the health port, NetworkPolicies, Secrets, extender over mTLS", problems)

# values.yaml and the schema describe the same keys.
vals = yaml.safe_load(open(sys.argv[2]))
schema = json.load(open(sys.argv[3]))
missing = []
def walk(v, s, path):
    if not isinstance(v, dict) or s.get("additionalProperties") is not False: return
    for k, sub in v.items():
        if k not in s.get("properties", {}): missing.append(path + k); continue
        walk(sub, s["properties"][k], path + k + ".")
walk(vals, schema, "")
report("every values.yaml key is in values.schema.json", missing)
# Documented key by key: a value is documented by a comment above it in its group of sibling
# keys, or (for settings passed through whole, like securityContext) by its parent's comment.
lines = open(sys.argv[2]).read().splitlines()
ind = lambda l: len(l) - len(l.lstrip())
def documented(i):
    j = i - 1
    while j >= 0:
        p = lines[j].strip()
        if p.startswith("#"): return True
        if p and ind(lines[j]) < ind(lines[i]): return documented(j)
        if not p and ind(lines[i]) == 0: return False
        j -= 1
    return False
undoc = []
for i, l in enumerate(lines):
    s = l.strip()
    if s and not s.startswith(("#", "-")) and ":" in s and not documented(i):
        undoc.append("line %d: %s" % (i + 1, s.split(":")[0]))
report("values.yaml: every value has a comment", undoc)
PY
grep '^ok - ' "$WORK/py.out" | while IFS= read -r line; do echo "$line"; done
E2E_PASSED=$((E2E_PASSED + $(grep -c '^ok - ' "$WORK/py.out")))
# Failures with their reasons.
awk '/^not ok - /{if(n)print n"\t"w; n=substr($0,10); w=""; next} /^    /{w=w substr($0,5)"; "; next} END{if(n)print n"\t"w}' "$WORK/py.out" |
  while IFS=$'\t' read -r n w; do echo "not ok - $n"; echo "    $w"; echo FAILED >>"$WORK/failed"; done
E2E_FAILED=$((E2E_FAILED + $(cat "$WORK/failed" 2>/dev/null | wc -l)))
grep -q . "$WORK/py.out" && ! grep -qvE '^(ok - |not ok - |    )' "$WORK/py.out" ||
  fail "chart checks ran" "$(cat "$WORK/py.out")"

# The rendered scheduler config must be one the real binary accepts: a config error exits 2
# before any connection; with no API reachable it exits 1 on the kubeconfig instead.
if [ -x "$BIN/tarema-scheduler" ]; then
  out=$(timeout 10 "$BIN/tarema-scheduler" run --config "$WORK/all.yaml.sched.yaml" --kubeconfig "$WORK/none" 2>&1)
  rc=$?
  [ $rc = 1 ] && grep -q "kubeconfig" <<<"$out" && pass "tarema-scheduler accepts the chart's config file" ||
    fail "tarema-scheduler accepts the chart's config file" "exit $rc: $out"
else
  fail "tarema-scheduler accepts the chart's config file" "$BIN/tarema-scheduler not built"
fi
# Every flag the chart passes is one the binary knows (and not an obsolete one): parsed up to
# a final --help, which exits 0 only when everything before it was accepted.
for f in "$WORK"/all.yaml.args.*; do
  [ -e "$f" ] || { fail "chart passes the labeler and profiler flags they know" "no command lines rendered"; break; }
  prog=${f##*.}
  kind=${f#"$WORK"/all.yaml.args.}
  kind=${kind%%.*}
  mapfile -t args <"$f"
  out=$(timeout 10 "$BIN/$prog" "${args[@]}" --help 2>&1 >/dev/null)
  rc=$?
  [ $rc = 0 ] && ! grep -qiE 'unrecognized|unknown|obsolete|ignored' <<<"$out" &&
    pass "$prog accepts the $kind's flags: ${args[*]}" || fail "$prog accepts the $kind's flags" "exit $rc: $out"
done
summary
