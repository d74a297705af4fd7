# tests/e2e/gang_lib.sh: helpers for gang scenarios on the real control plane, shared by the
# gang e2e tests (tarema's and the kube-scheduler reference) and bench/gang_bench.sh. Sourced
# after tests/e2e/lib.sh; needs kubectl (on PATH, or $KUBECTL) and jq.
#
# A gang is declared one of three ways (KIND):
#   podgroup  scheduling.x-k8s.io/v1alpha1 PodGroup NAME (spec.minMember; scheduler-plugins'
#             coscheduling API), pods labelled scheduling.x-k8s.io/pod-group: NAME
#   workload  scheduling.k8s.io/v1alpha1 Workload NAME (Kubernetes 1.35, needs `hack/cluster.sh
#             up --workload-api`) with one pod group $GANG_WL_GROUP (policy.gang.minCount), pods
#             with spec.workloadRef {name: NAME, podGroup: $GANG_WL_GROUP}
#   native    Kubernetes 1.36+ PodGroup NAME of scheduling.k8s.io at the version the API server
#             serves (v1alpha2 on 1.36, v1beta1 on 1.37; spec.schedulingPolicy.gang.minCount),
#             pods with spec.schedulingGroup {podGroupName: NAME}
# Pods are named NAME-1 .. NAME-SIZE. Every gang is identified in the checks by a key:
# "pg:NAME", "np:NAME" (native) or "wl:NAME/GROUP" (plus "/REPLICAKEY" when a pod sets
# podGroupReplicaKey).
#
# Options read from the environment by the object builders:
#   GANG_WL_GROUP=gang         pod group name inside each Workload
#   GANG_TIMEOUT_S=            PodGroup spec.scheduleTimeoutSeconds (unset: none)
#   GANG_MIN_RESOURCES=        PodGroup spec.minResources as JSON ({"cpu": "3"}; unset: none)
#   GANG_POD_PATCH=.           a jq filter applied to every pod (tolerations, nodeSelector,
#                              annotations, ...), e.g. '.spec.nodeSelector = {"pool": "a"}'
#
# All-or-nothing: at no time may a gang have 0 < bound members < min. The Kubernetes API binds
# pod by pod, so a gang whose binds are in flight is partly bound for a moment in any scheduler;
# the monitor therefore reports a gang as violating only when it is seen partly bound in samples
# spanning at least GANG_AON_GRACE_S seconds (default 3), or in the last sample (a settled
# state), and reports the longest transient partial state it saw in every case.

GANG_WL_GROUP=${GANG_WL_GROUP:-gang}
GANG_AON_GRACE_S=${GANG_AON_GRACE_S:-3}
GANG_LABEL=scheduling.x-k8s.io/pod-group

gang_kubectl() { "${KUBECTL:-kubectl}" "$@"; }

# gang_native_gv: the scheduling.k8s.io group version serving PodGroups (newest first), read off
# the API server's discovery like the scheduler does; empty (status 1) when none is.
gang_native_gv() {
  if [ -z "${GANG_NATIVE_GV:-}" ]; then
    local v
    for v in v1beta1 v1alpha3 v1alpha2; do
      if gang_kubectl get --raw "/apis/scheduling.k8s.io/$v" 2>/dev/null |
        jq -e '.resources[] | select(.name == "podgroups")' >/dev/null 2>&1; then
        GANG_NATIVE_GV=scheduling.k8s.io/$v
        break
      fi
    done
  fi
  [ -n "${GANG_NATIVE_GV:-}" ] && echo "$GANG_NATIVE_GV"
}

# ------------------------------------------------------------------------ object builders

# gang_group_json KIND NS NAME MIN: the PodGroup or Workload of one gang, one JSON line.
gang_group_json() {
  local kind=$1 ns=$2 name=$3 min=$4
  case $kind in
    podgroup)
      jq -cn --arg ns "$ns" --arg n "$name" --argjson min "$min" \
        --arg t "${GANG_TIMEOUT_S:-}" --arg r "${GANG_MIN_RESOURCES:-}" '
        {apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup",
         metadata: {namespace: $ns, name: $n}, spec: {minMember: $min}}
        | if $t != "" then .spec.scheduleTimeoutSeconds = ($t | tonumber) else . end
        | if $r != "" then .spec.minResources = ($r | fromjson) else . end'
      ;;
    workload)
      jq -cn --arg ns "$ns" --arg n "$name" --argjson min "$min" --arg g "$GANG_WL_GROUP" '
        {apiVersion: "scheduling.k8s.io/v1alpha1", kind: "Workload",
         metadata: {namespace: $ns, name: $n},
         spec: {podGroups: [{name: $g, policy: {gang: {minCount: $min}}}]}}'
      ;;
    native)
      local gv
      gv=$(gang_native_gv) || { echo "gang_group_json: the API server serves no scheduling.k8s.io PodGroups" >&2; return 2; }
      jq -cn --arg gv "$gv" --arg ns "$ns" --arg n "$name" --argjson min "$min" '
        {apiVersion: $gv, kind: "PodGroup", metadata: {namespace: $ns, name: $n},
         spec: {schedulingPolicy: {gang: {minCount: $min}}}}'
      ;;
    *) echo "gang_group_json: unknown gang kind '$kind' (podgroup, workload or native)" >&2; return 2 ;;
  esac
}

# gang_pods_json KIND NS NAME FROM TO SCHED [CPU] [MEM]: pods NAME-FROM .. NAME-TO of a gang,
# one JSON line each, for scheduler SCHED, requesting CPU (default 100m) and MEM (64Mi).
gang_pods_json() {
  local kind=$1 ns=$2 name=$3 from=$4 to=$5 sched=$6 cpu=${7:-100m} mem=${8:-64Mi}
  case $kind in podgroup | workload | native) ;; *) echo "gang_pods_json: unknown gang kind '$kind' (podgroup, workload or native)" >&2; return 2 ;; esac
  [ "$from" -le "$to" ] || return 0
  jq -cn --arg kind "$kind" --arg ns "$ns" --arg n "$name" --argjson from "$from" --argjson to "$to" \
    --arg s "$sched" --arg cpu "$cpu" --arg mem "$mem" --arg g "$GANG_WL_GROUP" --arg pglabel "$GANG_LABEL" '
    range($from; $to + 1) as $i |
    {apiVersion: "v1", kind: "Pod",
     metadata: {namespace: $ns, name: "\($n)-\($i)", labels: {"tarema.io/gang-e2e": $n}},
     spec: {schedulerName: $s, terminationGracePeriodSeconds: 0,
            containers: [{name: "c", image: "busybox",
                          resources: {requests: {cpu: $cpu, memory: $mem}}}]}}
    | if $kind == "podgroup" then .metadata.labels[$pglabel] = $n
      elif $kind == "native" then .spec.schedulingGroup = {podGroupName: $n}
      else .spec.workloadRef = {name: $n, podGroup: $g} end' |
    jq -c "${GANG_POD_PATCH:-.}"
}

# gang_objects KIND NS NAME SIZE MIN SCHED [CPU] [MEM]: the gang's group object, then its SIZE
# pods (JSON lines, for `kubectl create -f -`).
gang_objects() {
  gang_group_json "$1" "$2" "$3" "$5" || return
  gang_pods_json "$1" "$2" "$3" 1 "$4" "$6" "${7:-}" "${8:-}"
}

# gang_create KIND NS NAME SIZE MIN SCHED [CPU] [MEM]: creates the gang (group object first).
gang_create() {
  local objs out
  objs=$(gang_objects "$@") || return
  out=$(gang_kubectl create -f - <<<"$objs" 2>&1) || { echo "gang_create $3: $out" >&2; return 1; }
}

# gang_require_api KIND: the API serves the gang's kind; for podgroup it installs the PodGroup
# CRD from the chart (charts/tarema/crds/*podgroup*) when it is missing. Prints why not.
gang_require_api() {
  case $1 in
    workload)
      # v1alpha1 exactly: 1.36+ serve Workloads too, but as templates of another shape.
      gang_kubectl get --raw /apis/scheduling.k8s.io/v1alpha1 2>/dev/null |
        jq -e '.resources[] | select(.name == "workloads")' >/dev/null 2>&1 && return 0
      echo "the API server does not serve scheduling.k8s.io/v1alpha1 workloads (Kubernetes 1.35 only): bring a 1.35 cluster up with 'hack/cluster.sh up --workload-api'"
      return 1
      ;;
    native)
      gang_native_gv >/dev/null && return 0
      echo "the API server serves no scheduling.k8s.io PodGroups (Kubernetes 1.36+): bring the cluster up with 'TAREMA_K8S_VERSION=v1.37.2 hack/cluster.sh up --workload-api'"
      return 1
      ;;
    podgroup)
      gang_kubectl api-resources --api-group=scheduling.x-k8s.io -o name 2>/dev/null | qgrep -x podgroups.scheduling.x-k8s.io && return 0
      local crd
      crd=$(ls "$REPO_ROOT"/charts/tarema/crds/*podgroup* 2>/dev/null | head -n 1)
      [ -n "$crd" ] || { echo "no PodGroup CRD served and none in charts/tarema/crds/"; return 1; }
      # a test beside this one may install it at the same moment (apply then says AlreadyExists)
      gang_kubectl apply -f "$crd" >/dev/null 2>&1 || gang_kubectl get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1 ||
        { echo "installing $crd failed"; return 1; }
      gang_kubectl wait --for condition=established --timeout=30s crd/podgroups.scheduling.x-k8s.io >/dev/null ||
        { echo "the PodGroup CRD of $crd did not become established"; return 1; }
      ;;
    *) echo "unknown gang kind '$1' (podgroup, workload or native)"; return 1 ;;
  esac
}

# gang_skip_on_native WHAT: on a cluster that serves 1.36+'s PodGroups instead of 1.35's
# v1alpha1 Workload (the API WHAT is written for no longer exists there), says so and ends the
# test with its summary (nothing failed, nothing passed). Elsewhere returns.
gang_skip_on_native() {
  if ! gang_require_api workload >/dev/null && gang_native_gv >/dev/null; then
    echo "skipped: $1 uses scheduling.k8s.io/v1alpha1 Workloads (Kubernetes 1.35); this cluster serves $(gang_native_gv) PodGroups instead (tests/e2e/gang_native_test.sh covers them)"
    summary
    exit 0
  fi
}

# ------------------------------------------------------------------------------- counting

# gang_state_json NS: {pods, workloads, podgroups} of namespace NS as one JSON document (the
# input of gang_counts_from_json). A kind the API does not serve counts as empty. Pods being
# deleted (metadata.deletionTimestamp set) are left out: a gang whose members are deleted one by
# one (kwok finalizes them later) would otherwise look partly bound until the last one is gone.
gang_state_json() {
  local ns=$1
  {
    gang_kubectl get pods -n "$ns" -o json || return 1
    gang_kubectl get workloads.scheduling.k8s.io -n "$ns" -o json 2>/dev/null || echo '{"items":[]}'
    gang_kubectl get podgroups.scheduling.x-k8s.io -n "$ns" -o json 2>/dev/null || echo '{"items":[]}'
    { gang_native_gv >/dev/null && gang_kubectl get podgroups.scheduling.k8s.io -n "$ns" -o json 2>/dev/null; } || echo '{"items":[]}'
  } | jq -cs 'if length != 4 then error("incomplete state") else
    # only what counting needs (one pod list is megabytes otherwise)
    {pods: [.[0].items[] | select(.metadata.deletionTimestamp == null)
                         | {metadata: {name: .metadata.name, labels: .metadata.labels},
                            spec: {nodeName: .spec.nodeName, workloadRef: .spec.workloadRef,
                                   schedulingGroup: .spec.schedulingGroup}}],
     workloads: [.[1].items[] | {metadata: {name: .metadata.name}, spec: {podGroups: .spec.podGroups}}],
     podgroups: [.[2].items[] | {metadata: {name: .metadata.name}, spec: {minMember: .spec.minMember}}],
     nativepodgroups: [.[3].items[] | {metadata: {name: .metadata.name}, spec: {schedulingPolicy: .spec.schedulingPolicy}}]} end'
}

# gang_counts_from_json: reads a gang_state_json document on stdin and prints one line per gang
# with a gang policy: KEY BOUND TOTAL MIN (bound = pods with spec.nodeName, deleted ones gone;
# MIN 0 when the pods' group object does not exist). Pure: no API access, so tests can feed it
# crafted states.
gang_counts_from_json() {
  jq -r --arg pglabel "$GANG_LABEL" '
    # "wl:W/G" -> its policy from Workload W (null when W or G does not exist)
    (reduce (.workloads[]? | .metadata.name as $w | .spec.podGroups[]?
             | {key: "wl:\($w)/\(.name)", value: .policy}) as $e ({}; .[$e.key] = $e.value)) as $wpol |
    (reduce (.podgroups[]? | {key: "pg:\(.metadata.name)", value: (.spec.minMember // 0)})
       as $e ({}; .[$e.key] = $e.value)) as $pmin |
    # "np:NAME" -> its policy (1.36+ PodGroup; basic = no gang)
    (reduce (.nativepodgroups[]? | {key: "np:\(.metadata.name)", value: .spec.schedulingPolicy})
       as $e ({}; .[$e.key] = $e.value)) as $npol |
    [.pods[]? |
      (if .spec.workloadRef then
         {key: ("wl:\(.spec.workloadRef.name)/\(.spec.workloadRef.podGroup)" +
                (if (.spec.workloadRef.podGroupReplicaKey // "") != "" then "/\(.spec.workloadRef.podGroupReplicaKey)" else "" end)),
          group: "wl:\(.spec.workloadRef.name)/\(.spec.workloadRef.podGroup)"}
       elif (.metadata.labels[$pglabel] // "") != "" then
         {key: "pg:\(.metadata.labels[$pglabel])", group: "pg:\(.metadata.labels[$pglabel])"}
       elif (.spec.schedulingGroup.podGroupName // "") != "" then
         {key: "np:\(.spec.schedulingGroup.podGroupName)", group: "np:\(.spec.schedulingGroup.podGroupName)"}
       else empty end) + {bound: ((.spec.nodeName // "") != "")}] |
    group_by(.key)[] |
    .[0] as $g |
    (if ($g.group | startswith("pg:")) then ($pmin[$g.group] // 0)
     elif ($g.group | startswith("np:")) then
       (if $npol[$g.group] == null then 0
        elif $npol[$g.group].gang != null then $npol[$g.group].gang.minCount else null end)
     elif $wpol[$g.group] == null then 0
     elif $wpol[$g.group].gang != null then $wpol[$g.group].gang.minCount
     else null end) as $min |
    # a Workload pod group with the basic policy is no gang
    select($min != null) |
    "\($g.key) \(map(select(.bound)) | length) \(length) \($min)"'
}

# gang_counts NS: gang_counts_from_json for the namespace as it is now.
gang_counts() {
  local s
  s=$(gang_state_json "$1") || return 1
  gang_counts_from_json <<<"$s"
}

# gang_bound NS KEY: how many members of gang KEY are bound (0 when it has no pods).
gang_bound() { gang_counts "$1" | awk -v k="$2" '$1 == k {print $2; f = 1} END {if (!f) print 0}'; }

# gang_key KIND NAME: the key of a gang made by gang_create.
gang_key() {
  case $1 in
    podgroup) echo "pg:$2" ;;
    native) echo "np:$2" ;;
    *) echo "wl:$2/$GANG_WL_GROUP" ;;
  esac
}

# gang_partial_from_counts: gang_counts lines on stdin -> the partly bound ones (0 < bound < min).
gang_partial_from_counts() { awk '$4 > 0 && $2 > 0 && $2 < $4'; }

# ------------------------------------------------------------------ all-or-nothing monitor

# gang_aon_monitor_start NS FILE [INTERVAL_S]: samples the namespace's gangs in the background
# every INTERVAL_S (default 0.5) until gang_aon_monitor_stop. FILE gets one line per sample,
# "S INDEX EPOCH_S END_S" (the read began at EPOCH_S, ended at END_S), each followed by
# "P INDEX EPOCH_S KEY BOUND TOTAL MIN" for every gang partly bound in it, and "E INDEX EPOCH_S"
# for a failed read; gang_aon_deleting adds "D 0 EPOCH_S KEY".
gang_aon_monitor_start() {
  local ns=$1 file=$2 every=${3:-0.5}
  : >"$file"
  (
    i=0
    while :; do
      i=$((i + 1))
      # the sample taken after the stop was asked for is the last: it shows the settled state
      last=0
      [ -e "$file.stop" ] && last=1
      t=$(date +%s.%N)
      if c=$(gang_counts "$ns" 2>/dev/null); then
        echo "S $i $t $(date +%s.%N)"
        gang_partial_from_counts <<<"$c" | sed "s/^/P $i $t /"
      else
        echo "E $i $t"
      fi
      [ $last = 1 ] && break
      sleep "$every"
    done >>"$file"
  ) &
  GANG_MON_PID=$!
  GANG_MON_FILE=$file
}

# gang_aon_deleting KEY...: the test deletes these gangs' pods from now on ("*": every gang).
# kubectl deletes a selection pod by pod, so under load a deleted gang shows some members gone
# and the rest still bound for seconds: partly bound by the test's own doing, not the
# scheduler's. The verdict leaves such a gang out from every sample whose read had not ended
# before this mark (a read in progress may already see the first deletes).
gang_aon_deleting() {
  [ -n "${GANG_MON_FILE:-}" ] && [ -n "${GANG_MON_PID:-}" ] || return 0
  local t k
  t=$(date +%s.%N)
  for k in "$@"; do echo "D 0 $t $k" >>"$GANG_MON_FILE"; done
}

# gang_aon_monitor_stop: lets the sampler take one last sample (begun after this call), stops it and prints its verdict
# (gang_aon_verdict). Returns 1 when a gang violated all-or-nothing.
gang_aon_monitor_stop() {
  [ -n "${GANG_MON_PID:-}" ] || { echo "gang_aon_monitor_stop: no monitor running"; return 2; }
  touch "$GANG_MON_FILE.stop"
  # Polled, not `wait`: called as out=$(gang_aon_monitor_stop) it runs in a subshell, whose
  # `wait` returns at once for a process that is not its child.
  while kill -0 "$GANG_MON_PID" 2>/dev/null; do sleep 0.1; done
  wait "$GANG_MON_PID" 2>/dev/null
  rm -f "$GANG_MON_FILE.stop"
  GANG_MON_PID=
  gang_aon_verdict "$GANG_MON_FILE"
}

# gang_aon_verdict FILE: reads a monitor file and prints one line:
#   samples=N read_errors=N partial_while_deleted=N longest_partial_s=X violations=N [KEY:bound/min:for_s ...]
# (partial_while_deleted: partial observations left out as gang_aon_deleting marked them)
# A gang violates when partly bound in consecutive samples spanning >= GANG_AON_GRACE_S, or in
# the last sample. Returns 1 on a violation, 2 when there were fewer than 2 good samples (the
# check did not really run). GANG_AON_IGNORE: space-separated gang keys left out (gangs a test
# left partly bound itself, e.g. by killing the scheduler in the middle of their binds). A gang
# marked by gang_aon_deleting is left out of the samples whose read ended after the mark.
gang_aon_verdict() {
  awk -v grace="$GANG_AON_GRACE_S" -v ignore="${GANG_AON_IGNORE:-}" '
    BEGIN { ni = split(ignore, il, " "); for (j = 1; j <= ni; j++) ign[il[j]] = 1 }
    # first pass: the deletion marks (appended by the test, anywhere in the file)
    NR == FNR { if ($1 == "D" && (!($4 in del) || $3 < del[$4])) del[$4] = $3; next }
    $1 == "S" { n++; last = $2; end[$2] = NF >= 4 ? $4 : $3 }
    $1 == "E" { errs++ }
    $1 == "P" && (($4 in del && end[$2] >= del[$4]) || ("*" in del && end[$2] >= del["*"])) { deleting++; next }
    $1 == "P" && !($4 in ign) {
      k = $4
      # a run of partial samples goes on while the gang was partial in the sample just before
      if (!(k in previdx) || previdx[k] != $2 - 1) start[k] = $3
      previdx[k] = $2
      span = $3 - start[k]
      if (!(k in longest) || span > longest[k]) longest[k] = span
      state[k] = $5 "/" $7
    }
    END {
      v = 0; list = ""; lp = 0
      for (k in longest) {
        if (longest[k] > lp) lp = longest[k]
        if (longest[k] >= grace || previdx[k] == last) {
          v++
          list = list sprintf(" %s:%s:%.1fs%s", k, state[k], longest[k], previdx[k] == last ? ":at-end" : "")
        }
      }
      printf "samples=%d read_errors=%d partial_while_deleted=%d longest_partial_s=%.1f violations=%d%s\n", n, errs, deleting, lp, v, list
      if (n < 2) exit 2
      exit v > 0 ? 1 : 0
    }' "$1" "$1"
}

# gang_aon_partials FILE [N]: the last N (default 12) partly bound observations of a monitor
# file, "+SECONDS KEY BOUND/TOTAL (min MIN)", seconds since its first sample, and the test's
# deletion marks: for a failure's
# detail, whether a partial gang's binds went on (bound count rising: binds in flight on a slow
# API server) or stood still (a gang left partly bound).
gang_aon_partials() {
  awk '$1 != "D" && t0 == "" { t0 = $3 }
       $1 == "P" { printf "+%.1fs %s %s/%s (min %s)\n", $3 - t0, $4, $5, $6, $7 }
       $1 == "D" { printf "+%.1fs %s deleted by the test\n", $3 - (t0 == "" ? $3 : t0), $4 }' "$1" |
    tail -n "${2:-12}"
}

# gang_wait_bound NS KEY N SECONDS: waits until gang KEY has at least N members bound.
gang_wait_bound() {
  local deadline=$(($(date +%s) + $4))
  while [ "$(gang_bound "$1" "$2")" -lt "$3" ]; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.3
  done
}
