#!/usr/bin/env bash
# planner_rbac_test.sh: the chart's least-privilege RBAC for the planner is enough and no more:
# the chart's planner-rbac.yaml (release namespace = the managed namespace = the test's) is
# applied, the controller runs with its ServiceAccount's token and carries a workflow from
# submit to Succeeded with no request refused; the ServiceAccount may not touch pods of another
# namespace nor read Secrets.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/planner_lib.sh"
FX="$REPO_ROOT/tests/fixtures/planner"
HELM=$(command -v helm || echo "$HOME/.cache/tarema/bin/helm")

planner_e2e_begin

check "chart renders the planner's RBAC" bash -c "'$HELM' template pl '$REPO_ROOT/charts/tarema' -n '$NS' --set planner.enabled=true \
  --show-only templates/planner-rbac.yaml > '$W/rbac.yaml' && kubectl apply -n '$NS' -f '$W/rbac.yaml' >/dev/null"
SA=pl-tarema-planner
TOKEN=$(kubectl -n "$NS" create token "$SA" --duration 1h 2>/dev/null)
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$W/ca.crt"
cat >"$W/sa.kubeconfig" <<Y
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')", certificate-authority: "$W/ca.crt"}}]
users: [{name: sa, user: {token: "$TOKEN"}}]
contexts: [{name: c, context: {cluster: c, user: sa, namespace: "$NS"}}]
current-context: c
Y
planner_start --leader-elect true --kubeconfig "$W/sa.kubeconfig"
check "with the ServiceAccount: submit, planned" bash -c "'$PL' submit '$FX/e2e-3step.yaml' -n '$NS' --wait 30s | grep -q '^step post starts at'"
check "with the ServiceAccount: workflow Succeeded" wait_for 90 wf_phase_is e2e Succeeded
check "with the ServiceAccount: the Lease held" bash -c "[ -n \"\$(kubectl -n $NS get lease tarema-planner -o jsonpath='{.spec.holderIdentity}')\" ]"
check "no request refused (no 403 in the log)" bash -c "! grep -E 'HTTP 403|forbidden' '$PL_LOG_DIR/planner.log'"
check "the ServiceAccount may not create pods elsewhere nor read secrets" bash -c "
  [ \"\$(kubectl auth can-i create pods -n default --as system:serviceaccount:$NS:$SA)\" = no ] &&
  [ \"\$(kubectl auth can-i get secrets -n $NS --as system:serviceaccount:$NS:$SA)\" = no ] &&
  [ \"\$(kubectl auth can-i patch pods -n $NS --as system:serviceaccount:$NS:$SA)\" = yes ]"
summary
