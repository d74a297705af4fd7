#!/usr/bin/env bash
# tests/data/k8s/capture.sh: captures, from a real API server of the chosen Kubernetes version,
# the scheduling.k8s.io objects tests/unit/gang_native_test.c parses, into
# tests/data/k8s/<version>/:
#   discovery-group.json          GET /apis/scheduling.k8s.io
#   discovery-<version>.json      GET /apis/scheduling.k8s.io/<each served version>
#   openapi-<version>.json        GET /openapi/v3/apis/scheduling.k8s.io/<version> (the schemas
#                                 the field names in docs/gangs.md were read from)
# and, from 1.36 on (PodGroup objects):
#   workload.json                 a Workload with a gang template (workers, minCount 4) and a
#                                 basic one (driver), as the API server stores it
#   podgroup.json                 PodGroup default/train-workers made from the workers template
#   podgroup-basic.json           PodGroup default/train-driver (basic policy)
#   pod.json                      a member pod (spec.schedulingGroup.podGroupName)
#   podgroup-scheduled.json       podgroup.json after the real kube-scheduler placed the gang
#                                 (4 pods): the status condition kube-scheduler writes
#
#   TAREMA_K8S_VERSION=v1.37.2 bash tests/data/k8s/capture.sh
#
# Starts its own cluster instance (hack/cluster.sh, --workload-api) and takes it down on exit.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. hack/lib.sh
export TAREMA_CLUSTER_NAME=capture-$$
OUT=tests/data/k8s/$KUBERNETES_VERSION
mkdir -p "$OUT"
trap 'bash hack/cluster.sh down >/dev/null 2>&1 || true' EXIT
bash hack/cluster.sh up --workload-api
eval "$(bash hack/cluster.sh env)"
# Volatile fields (uids, times, managedFields) stay: they are what the API server sends, and the
# parser must ignore them.
get() { kubectl get --raw "$1" | jq -S . >"$2"; }
get /apis/scheduling.k8s.io "$OUT/discovery-group.json"
for v in $(jq -r '.versions[].version' "$OUT/discovery-group.json"); do
  get "/apis/scheduling.k8s.io/$v" "$OUT/discovery-$v.json"
  # v1 is PriorityClass only; of the others only the group's own schemas (the document also
  # carries every core type they reference).
  [ "$v" = v1 ] && continue
  kubectl get --raw "/openapi/v3/apis/scheduling.k8s.io/$v" |
    jq -S --arg v "$v" '.components.schemas | with_entries(select(.key | startswith("io.k8s.api.scheduling." + $v + ".")))' \
      >"$OUT/openapi-$v.json"
done
# The pod's side: the field a member pod names its group with (1.35: workloadRef, 1.36+:
# schedulingGroup), as the API server's own schema explains it.
for f in workloadRef schedulingGroup; do
  kubectl explain "pod.spec.$f" --recursive >"$OUT/explain-pod.spec.$f.txt" 2>&1 ||
    echo "(kubectl explain pod.spec.$f: not served by Kubernetes $KUBERNETES_VERSION)" >"$OUT/explain-pod.spec.$f.txt"
done
if ! jq -e '.resources[] | select(.name == "podgroups")' "$OUT"/discovery-v1*.json >/dev/null 2>&1; then
  echo "Kubernetes $KUBERNETES_VERSION serves no PodGroups: discovery captured only" >&2
  exit 0
fi
gv=$(jq -r '.groupVersion' "$(grep -l '"podgroups"' "$OUT"/discovery-v1*.json | head -n 1)")
# v1alpha2 (1.36) names the PodGroup's template reference podGroupTemplateRef.workload.
if [ "${gv#*/}" = v1alpha2 ]; then
  ref='podGroupTemplateRef: {workload: {workloadName: train, podGroupTemplateName: TEMPLATE}}'
else
  ref='workloadRef: {workloadName: train, templateName: TEMPLATE}'
fi
kubectl apply -f - <<YAML
apiVersion: $gv
kind: Workload
metadata: {name: train, namespace: default}
spec:
  podGroupTemplates:
    - name: workers
      schedulingPolicy: {gang: {minCount: 4}}
    - name: driver
      schedulingPolicy: {basic: {}}
---
apiVersion: $gv
kind: PodGroup
metadata: {name: train-workers, namespace: default}
spec:
  ${ref/TEMPLATE/workers}
  schedulingPolicy: {gang: {minCount: 4}}
---
apiVersion: $gv
kind: PodGroup
metadata: {name: train-driver, namespace: default}
spec:
  ${ref/TEMPLATE/driver}
  schedulingPolicy: {basic: {}}
YAML
kubectl get "workloads.${gv%/*}" train -o json | jq -S . >"$OUT/workload.json"
kubectl get "podgroups.${gv%/*}" train-workers -o json | jq -S . >"$OUT/podgroup.json"
kubectl get "podgroups.${gv%/*}" train-driver -o json | jq -S . >"$OUT/podgroup-basic.json"
for i in 1 2 3 4; do
  kubectl apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: worker-$i, namespace: default}
spec:
  schedulingGroup: {podGroupName: train-workers}
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
YAML
done
kubectl get pod worker-1 -o json | jq -S . >"$OUT/pod.json"
bash hack/cluster.sh scheduler start
for _ in $(seq 1 300); do
  kubectl get "podgroups.${gv%/*}" train-workers -o json |
    jq -e '.status.conditions // [] | any(.status == "True")' >/dev/null && break
  sleep 0.2
done
kubectl get "podgroups.${gv%/*}" train-workers -o json | jq -S . >"$OUT/podgroup-scheduled.json"
kubectl get pods -o wide >&2
echo "captured into $OUT" >&2
