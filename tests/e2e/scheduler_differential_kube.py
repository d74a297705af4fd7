#!/usr/bin/env python3
"""tests/e2e/scheduler_differential_kube.py: tarema-scheduler against the real kube-scheduler on
the real API server, pod by pod, on random clusters (issue 30's differential test).

Two identical node sets are created in one cluster, set "k" for kube-scheduler and set "t" for
tarema-scheduler; each set's pods live in their own namespace and select their set's nodes, so
the two never see each other (pod affinity, spread and ports are namespace- or node-scoped; the
random terms name no other namespace). Both sets get the same random nodes (labels, zones,
taints, capacity, an extended resource) and the same random pods placed by "other schedulers"
(spec.nodeName set directly: requests, labels, host ports, required anti-affinity). Then every
random test pod (requests, pod-level requests, node selectors, half of the pods pinned to one
node so that every node's verdict counts, required node affinity, required
pod affinity and anti-affinity, topology spread, host ports, tolerations) is created in both
namespaces and each scheduler's decision read back (bound, or PodScheduled=False). A pod both
bound to the same node may stay (the clusters grow alike, and kept pods end now and then);
otherwise both copies are deleted before the next pod, so the two clusters stay identical: only feasibility is compared (where a pod
lands is each scheduler's own policy). A pod that one scheduler binds and
the other leaves Pending is a disagreement, printed with everything needed to reproduce it.

Talks to the API server through `kubectl proxy` on loopback (the URL in --api). Prints one JSON
object per line: {"kind": "pod", ...} per test pod and a final {"kind": "summary", ...}.
"""
import argparse
import json
import random
import sys
import time
import urllib.error
import urllib.request

ZONES = ["a", "b", "c"]
APPS = ["a", "b", "c"]
GPU = "example.com/gpu"
# Taints a node may carry (NoExecute is left out: the taint manager would evict the placed pods
# on its own clock, in one set before the other).
TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "batch", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoSchedule"},
]


class Api:
    def __init__(self, base):
        self.base = base.rstrip("/")

    def req(self, method, path, body=None, ok=(200, 201, 202)):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.base + path, data=data, method=method)
        r.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read() or b"{}")
            except ValueError:
                detail = {}
            if e.code in ok:
                return e.code, detail
            return e.code, detail


def rand_nodes(rng, n):
    nodes = []
    for i in range(1, n + 1):
        labels = {"zone": rng.choice(ZONES), "tier": str(rng.randint(1, 5))}
        if rng.random() < 0.6:
            labels["disk"] = rng.choice(["ssd", "hdd"])
        taints = [t for t in TAINTS if rng.random() < 0.12]
        cap = {
            "cpu": str(rng.choice([2, 4, 8, 16])),
            "memory": "%dGi" % rng.choice([4, 8, 16, 32]),
            "pods": str(rng.choice([4, 10, 110])),
            "ephemeral-storage": "100Gi",
        }
        gpus = rng.choice([0, 0, 2, 4])
        if gpus:
            cap[GPU] = str(gpus)
        nodes.append({"i": i, "labels": labels, "taints": taints, "cap": cap})
    return nodes


def node_obj(prefix, s, nd):
    name = "%s%s-%d" % (prefix, s, nd["i"])
    labels = dict(nd["labels"])
    labels.update({"kubernetes.io/hostname": name, "tarema.io/diff-set": prefix + s, "pin": str(nd["i"]),
                   "type": "kwok", "kubernetes.io/os": "linux"})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"taints": nd["taints"]} if nd["taints"] else {},
        "status": {"capacity": nd["cap"], "allocatable": nd["cap"]},
    }


def term(rng):
    return {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
            "topologyKey": rng.choice(["kubernetes.io/hostname", "zone"])}


def rand_pod(rng, background, n_nodes=0):
    """A random pod spec (without namespace, name, set selector or scheduler)."""
    cpu = rng.choice(["50m", "100m", "250m", "500m", "1", "2", "4"])
    mem = rng.choice(["64Mi", "256Mi", "512Mi", "1Gi", "4Gi"])
    req = {"cpu": cpu, "memory": mem}
    if rng.random() < 0.15:
        req[GPU] = str(rng.choice([1, 2]))
    c = {"name": "c", "image": "busybox", "resources": {"requests": req}}
    if GPU in req:
        c["resources"]["limits"] = {GPU: req[GPU]}
    spec = {"containers": [c], "terminationGracePeriodSeconds": 0}
    labels = {"app": rng.choice(APPS)}
    # placed pods hold host ports often (DaemonSets such as node-exporter do), so that a pinned
    # pod asking for one meets a taken port now and then
    if rng.random() < (0.5 if background else 0.25):
        c["ports"] = [{"containerPort": 80, "hostPort": rng.choice([8080, 9100])}]
    aff = {}
    if rng.random() < 0.2:
        aff.setdefault("podAntiAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [term(rng)]
    if background:
        if aff:
            spec["affinity"] = aff
        return {"labels": labels, "spec": spec}
    # the pod being scheduled: everything else too
    if rng.random() < 0.1:  # pod-level requests: at least the container's (the API's rule)
        spec["resources"] = {"requests": {
            "cpu": "%dm" % (qty(cpu) * 1000 + rng.choice([0, 500, 2000])),
            "memory": "%dMi" % (qty(mem) / 1024 ** 2 + rng.choice([0, 1024, 4096]))}}
    if rng.random() < 0.5:
        # pinned to one node: the outcome is then that node's verdict under every filter, so
        # a filter that decides differently on any node shows, not only one that decides
        # differently on every node at once
        spec["nodeSelector"] = {"pin": str(rng.randint(1, n_nodes))}
    elif rng.random() < 0.4:
        k = rng.choice(["zone", "disk"])
        spec["nodeSelector"] = {k: rng.choice(ZONES if k == "zone" else ["ssd", "hdd"])}
    if rng.random() < 0.3:
        exprs = []
        for _ in range(rng.randint(1, 2)):
            op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
            if op in ("Gt", "Lt"):
                exprs.append({"key": "tier", "operator": op, "values": [str(rng.randint(1, 5))]})
            elif op in ("Exists", "DoesNotExist"):
                exprs.append({"key": rng.choice(["disk", "tier"]), "operator": op})
            else:
                exprs.append({"key": "zone", "operator": op, "values": rng.sample(ZONES, rng.randint(1, 2))})
        aff["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    if rng.random() < 0.15:
        aff.setdefault("podAffinity", {})["requiredDuringSchedulingIgnoredDuringExecution"] = [term(rng)]
    if aff:
        spec["affinity"] = aff
    if rng.random() < 0.2:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.choice([1, 2]), "topologyKey": rng.choice(["zone", "kubernetes.io/hostname"]),
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    if rng.random() < 0.5:
        tol = []
        for t in TAINTS:
            if rng.random() < 0.5:
                if rng.random() < 0.3:
                    tol.append({"key": t["key"], "operator": "Exists"})
                else:
                    tol.append({"key": t["key"], "operator": "Equal", "value": t.get("value", ""),
                                "effect": t["effect"]})
        if tol:
            spec["tolerations"] = tol
    return {"labels": labels, "spec": spec}


def pod_obj(ns, name, sched, set_label, p, node=None):
    spec = json.loads(json.dumps(p["spec"]))
    if node:
        spec["nodeName"] = node
    else:
        spec["schedulerName"] = sched
        spec.setdefault("nodeSelector", {})["tarema.io/diff-set"] = set_label
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": p["labels"]}, "spec": spec}


def qty(v):
    """Enough of resource.Quantity for the generator's own values."""
    units = {"m": 1e-3, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3}
    for u, f in units.items():
        if v.endswith(u):
            return float(v[: -len(u)]) * f
    return float(v)


def fits(nd, used, req):
    for k, v in req.items():
        if used.get(k, 0) + qty(v) > qty(nd["cap"].get(k, "0")):
            return False
    return used.get("pods", 0) + 1 <= qty(nd["cap"]["pods"])


def decided(api, ns, name):
    """'bound:<node>', 'pending:<message>' or None while undecided; 'gone' when absent."""
    st, pod = api.req("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name))
    if st != 200:
        return "gone" if st == 404 else None
    node = pod.get("spec", {}).get("nodeName")
    if node:
        return "bound:" + node
    for c in pod.get("status", {}).get("conditions", []) or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return "pending:" + (c.get("message") or c.get("reason") or "")
    return None


def wait_all(fn, timeout):
    end = time.time() + timeout
    while True:
        v = fn()
        if v is not None or time.time() > end:
            return v
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True, help="kubectl proxy URL on loopback")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--background", type=int, default=15)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--prefix", required=True, help="node name prefix (the test's id)")
    ap.add_argument("--ns-k", required=True)
    ap.add_argument("--ns-t", required=True)
    ap.add_argument("--sched-k", default="default-scheduler")
    ap.add_argument("--sched-t", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    api = Api(a.api)
    rng = random.Random(a.seed)
    out = sys.stdout
    sets = {"k": (a.ns_k, a.sched_k), "t": (a.ns_t, a.sched_t)}

    nodes = rand_nodes(rng, a.nodes)
    for s in sets:
        for nd in nodes:
            st, body = api.req("POST", "/api/v1/nodes", node_obj(a.prefix, s, nd))
            if st not in (200, 201, 409):
                print(json.dumps({"kind": "error", "what": "create node", "status": st, "body": body}))
                return 1

    def all_ready():
        st, lst = api.req("GET", "/api/v1/nodes?labelSelector=tarema.io/diff-set%%20in%%20(%sk,%st)" % (a.prefix, a.prefix))
        if st != 200:
            return None
        ready = [n for n in lst.get("items", []) if any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in n.get("status", {}).get("conditions", []) or [])]
        return True if len(ready) == 2 * len(nodes) else None

    if not wait_all(all_ready, a.timeout):
        print(json.dumps({"kind": "error", "what": "nodes not Ready", "timeout": a.timeout}))
        return 1

    # placed by other schedulers: the same pods on the same nodes in both sets
    used = {nd["i"]: {} for nd in nodes}
    placed = []
    for j in range(a.background):
        p = rand_pod(rng, background=True)
        nd = rng.choice(nodes)
        req = dict(p["spec"]["containers"][0]["resources"]["requests"])
        if not fits(nd, used[nd["i"]], req):
            continue
        for k, v in req.items():
            used[nd["i"]][k] = used[nd["i"]].get(k, 0) + qty(v)
        used[nd["i"]]["pods"] = used[nd["i"]].get("pods", 0) + 1
        placed.append((j, nd["i"], p))
        for s, (ns, _) in sets.items():
            st, body = api.req("POST", "/api/v1/namespaces/%s/pods" % ns,
                               pod_obj(ns, "bg-%d" % j, None, None, p, "%s%s-%d" % (a.prefix, s, nd["i"])))
            if st not in (200, 201):
                print(json.dumps({"kind": "error", "what": "create placed pod", "status": st, "body": body}))
                return 1

    def bg_running():
        for ns, _ in sets.values():
            st, lst = api.req("GET", "/api/v1/namespaces/%s/pods" % ns)
            if st != 200:
                return None
            if sum(1 for p in lst.get("items", []) if p.get("status", {}).get("phase") == "Running") != len(placed):
                return None
        return True

    if placed and not wait_all(bg_running, a.timeout):
        print(json.dumps({"kind": "error", "what": "placed pods not Running", "timeout": a.timeout}))
        return 1

    counts = {"bound": 0, "pending": 0, "disagree": 0, "refused": 0, "undecided": 0}
    kept = []
    for i in range(a.pods):
        p = rand_pod(rng, background=False, n_nodes=len(nodes))
        name = "p-%d" % i
        created = {}
        for s, (ns, sched) in sets.items():
            st, body = api.req("POST", "/api/v1/namespaces/%s/pods" % ns,
                               pod_obj(ns, name, sched, a.prefix + s, p))
            created[s] = (st, body.get("message", "") if st not in (200, 201) else "")
        if all(c[0] not in (200, 201) for c in created.values()):
            counts["refused"] += 1  # the API server refuses the spec: nothing to compare
            out.write(json.dumps({"kind": "pod", "i": i, "result": "refused", "why": created["k"][1]}) + "\n")
            continue
        res = {}
        for s, (ns, _) in sets.items():
            res[s] = wait_all(lambda ns=ns: decided(api, ns, name), a.timeout)
        kind_k = (res["k"] or "undecided").split(":")[0]
        kind_t = (res["t"] or "undecided").split(":")[0]
        if "undecided" in (kind_k, kind_t) or "gone" in (kind_k, kind_t):
            result = "undecided"
        elif kind_k == kind_t:
            result = kind_k
        else:
            result = "disagree"
        counts[result] += 1
        rec = {"kind": "pod", "i": i, "result": result, "kube": res["k"], "tarema": res["t"]}
        if result in ("disagree", "undecided"):
            rec["pod"] = p
            rec["nodes"] = nodes
            rec["placed"] = [{"bg": j, "node": n, "pod": q} for j, n, q in placed]
            rec["seed"] = a.seed
        out.write(json.dumps(rec) + "\n")
        out.flush()
        # Bound to the same node in both sets: kept, so that the clusters grow alike (ports,
        # anti-affinity, spread counts and capacity accumulate). Anything else is deleted in
        # both, which keeps them identical.
        same = result == "bound" and res["k"].split("-")[-1] == res["t"].split("-")[-1]
        gone = [] if same and rng.random() < 0.5 else [name]
        if not gone:
            kept.append(name)
        # churn: kept pods end too, one now and then, or the clusters fill up for good
        if kept and rng.random() < 0.3:
            gone.append(kept.pop(rng.randrange(len(kept))))
        for victim in gone:
            for s, (ns, _) in sets.items():
                api.req("DELETE", "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (ns, victim), ok=(200, 202, 404))
        for victim in gone:
            for s, (ns, _) in sets.items():
                wait_all(lambda ns=ns, v=victim: True if decided(api, ns, v) == "gone" else None, a.timeout)
    out.write(json.dumps({"kind": "summary", "seed": a.seed, "pods": a.pods, "kept": len(kept), **counts}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
