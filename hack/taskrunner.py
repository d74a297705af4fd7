#!/usr/bin/env python3
"""hack/taskrunner.py: stands in for a kubelet and a container runtime on the local test cluster.

The local cluster (hack/cluster.sh) has no kubelets: its nodes are kwok's fake nodes, and kwok
only plays a pod's life (Pending -> Running, and Succeeded after a tarema.io/duration
annotation). This runner makes the pods of one namespace really run: when a pod bound to a kwok
node becomes Running, it runs the pod's first container's command and args as a process on
THIS machine, and then completes the pod with the process's exit code (phase Succeeded or
Failed, the container's state terminated), as a kubelet would. kwok's stages never touch a pod
once it is Succeeded or Failed (hack/kwok/stages.yaml), so the status it writes stays.

What it does not do, because there is no container: no image is pulled (the command runs with
this machine's programs), no cgroup limits, no mount namespace. Volumes therefore must already
be where the pod would see them: every persistentVolumeClaim a container mounts must be bound
to a hostPath PersistentVolume whose path is the mountPath itself (for Nextflow: the work
volume at k8s.storageMountPath); a pod that needs anything else fails with a message saying so.
Nextflow's task pods fit: their command is `/bin/bash -ue WORKDIR/.command.run`, which changes
to the task's work directory by itself.

It runs only pods of the namespaces it is told (--namespace, required) and at most
--concurrency of them at once (the others wait, Running as far as the API is concerned). Pods
with the tarema.io/duration annotation are left to kwok. A pod deleted while its process runs
gets the process group killed. One line per finished pod on stdout:
    finished NAMESPACE/POD node=NODE exit=CODE seconds=S
and each pod's output goes to --log-dir/NAMESPACE_POD.log.

Usage: hack/taskrunner.py --namespace NS [--namespace NS2] [--kubeconfig FILE]
                          [--concurrency N] [--log-dir DIR]
"""
import argparse
import base64
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import yaml

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
DURATION_ANNOTATION = "tarema.io/duration"


def log(msg):
    sys.stderr.write("taskrunner: %s\n" % msg)
    sys.stderr.flush()


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body[:300]))
        self.status = status


class Api:
    """A small Kubernetes API client from a kubeconfig (CA, client certificate or token)."""

    def __init__(self, kubeconfig, secrets_dir):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        ctx_name = cfg.get("current-context")
        ctx = next((c["context"] for c in cfg.get("contexts", []) if c["name"] == ctx_name), None)
        if ctx is None:
            raise SystemExit("kubeconfig %s: current context %r not found" % (kubeconfig, ctx_name))
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in cfg.get("users", []) if u["name"] == ctx.get("user")), {})
        base = os.path.dirname(os.path.abspath(kubeconfig))

        def material(obj, key):  # a file path for KEY or KEY-data (written privately)
            if obj.get(key + "-data"):
                path = os.path.join(secrets_dir, key)
                with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
                    out.write(base64.b64decode(obj[key + "-data"]))
                return path
            if obj.get(key):
                return os.path.join(base, obj[key])
            return None

        url = urllib.parse.urlparse(cluster["server"])
        if url.scheme != "https":
            raise SystemExit("kubeconfig %s: server %s is not https" % (kubeconfig, cluster["server"]))
        self.host, self.port = url.hostname, url.port or 443
        self.ctx = ssl.create_default_context(cafile=material(cluster, "certificate-authority"))
        cert, key = material(user, "client-certificate"), material(user, "client-key")
        if cert and key:
            self.ctx.load_cert_chain(cert, key)
        self.headers = {"Accept": "application/json"}
        token = user.get("token")
        if not token and user.get("tokenFile"):
            with open(user["tokenFile"]) as f:
                token = f.read().strip()
        if token:
            self.headers["Authorization"] = "Bearer " + token

    def _conn(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None, content_type="application/json"):
        conn = self._conn(30)
        try:
            headers = dict(self.headers)
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
            if resp.status >= 300:
                raise ApiError(resp.status, text)
            return json.loads(text) if text else None
        finally:
            conn.close()

    def watch(self, path):
        """Yields the events of a watch request until the server ends it."""
        conn = self._conn(90)
        try:
            conn.request("GET", path, headers=self.headers)
            resp = conn.getresponse()
            if resp.status >= 300:
                raise ApiError(resp.status, resp.read().decode("utf-8", "replace"))
            while True:
                line = resp.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


class Runner:
    def __init__(self, api, namespaces, concurrency, log_dir):
        self.api = api
        self.namespaces = namespaces
        self.log_dir = log_dir
        self.pool = ThreadPoolExecutor(max_workers=concurrency)
        self.lock = threading.Lock()
        self.taken = set()  # pod uids queued, running or finished: each pod runs once
        self.procs = {}  # uid -> Popen of a running pod
        self.deleted = set()  # uids deleted while queued or running
        self.kwok_nodes = {}  # node name -> is a kwok node
        self.stopping = False

    # ------------------------------------------------------------------ deciding what to run

    def is_kwok_node(self, name):
        if name not in self.kwok_nodes:
            try:
                node = self.api.call("GET", "/api/v1/nodes/" + urllib.parse.quote(name))
                ann = node["metadata"].get("annotations") or {}
                self.kwok_nodes[name] = ann.get(KWOK_NODE_ANNOTATION) == "fake"
            except ApiError as e:
                log("node %s: %s" % (name, e))
                return False
        return self.kwok_nodes[name]

    def consider(self, pod):
        meta, spec = pod["metadata"], pod.get("spec", {})
        uid = meta["uid"]
        if meta.get("deletionTimestamp"):
            self.kill(uid, "deleted")
            return
        if pod.get("status", {}).get("phase") != "Running" or not spec.get("nodeName"):
            return
        if DURATION_ANNOTATION in (meta.get("annotations") or {}):
            return  # kwok finishes it
        with self.lock:
            if uid in self.taken:
                return
            self.taken.add(uid)
        if not self.is_kwok_node(spec["nodeName"]):
            log("%s/%s: node %s is not a kwok node, left alone" % (meta["namespace"], meta["name"], spec["nodeName"]))
            return
        self.pool.submit(self.run_pod, pod)

    def kill(self, uid, why):
        with self.lock:
            self.deleted.add(uid)
            proc = self.procs.get(uid)
        if proc and proc.poll() is None:
            log("pod %s %s: killing its process group %d" % (uid, why, proc.pid))
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # ------------------------------------------------------------------------ running a pod

    def mounts_problem(self, pod, container):
        """Why this pod cannot run here without a mount namespace, or None."""
        ns = pod["metadata"]["namespace"]
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"]
                  for v in pod["spec"].get("volumes", []) if "persistentVolumeClaim" in v}
        for m in container.get("volumeMounts", []):
            claim = claims.get(m["name"])
            if claim is None:
                continue  # service account token and the like: not used by commands here
            try:
                pvc = self.api.call("GET", "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, claim))
            except ApiError as e:
                return "claim %s: %s" % (claim, e)
            pv_name = pvc["spec"].get("volumeName")
            if not pv_name:
                return "claim %s is not bound to a volume" % claim
            pv = self.api.call("GET", "/api/v1/persistentvolumes/" + pv_name)
            host = (pv["spec"].get("hostPath") or {}).get("path")
            if host is None:
                return "volume %s of claim %s is not a hostPath volume" % (pv_name, claim)
            if os.path.normpath(host) != os.path.normpath(m["mountPath"]):
                return ("claim %s is mounted at %s but its hostPath volume %s is %s: without a "
                        "container they must be the same path" % (claim, m["mountPath"], pv_name, host))
            if not os.path.isdir(host):
                return "hostPath %s of volume %s is not a directory on this machine" % (host, pv_name)
        return None

    def run_pod(self, pod):
        meta, spec = pod["metadata"], pod["spec"]
        ns, name, uid, node = meta["namespace"], meta["name"], meta["uid"], spec["nodeName"]
        container = spec["containers"][0]
        argv = (container.get("command") or []) + (container.get("args") or [])
        started = now_rfc3339()
        t0 = time.monotonic()
        code, message = None, None
        if self.stopping:
            return
        if not argv:
            code, message = 127, "no command or args: the image's entrypoint is unknown without a container runtime"
        else:
            message = self.mounts_problem(pod, container)
            if message:
                code = 126
        if code is None:
            env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR", "TZ") if k in os.environ}
            for e in container.get("env", []):
                if "value" in e:
                    env[e["name"]] = e["value"]
            cwd = container.get("workingDir") or "/"
            path = os.path.join(self.log_dir, "%s_%s.log" % (ns, name))
            with self.lock:
                if uid in self.deleted:
                    return
            try:
                with open(path, "wb") as out:
                    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                    with self.lock:
                        self.procs[uid] = proc
                    rc = proc.wait()
                code = rc if rc >= 0 else 128 - rc  # killed by signal N: 128+N, as a shell says
            except OSError as e:
                code, message = 127, "cannot start %s: %s" % (argv[0], e)
            finally:
                with self.lock:
                    self.procs.pop(uid, None)
        with self.lock:
            if uid in self.deleted or self.stopping:
                return  # the pod is gone (or we are): nothing to report
        self.complete(pod, code, message, started)
        print("finished %s/%s node=%s exit=%d seconds=%.1f" % (ns, name, node, code, time.monotonic() - t0), flush=True)

    def complete(self, pod, code, message, started):
        meta, spec = pod["metadata"], pod["spec"]
        finished = now_rfc3339()
        ok = code == 0
        reason = "Completed" if ok else "Error"
        terminated = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}
        if message:
            terminated["message"] = message
        scheduled = next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"), None)
        since = (scheduled or {}).get("lastTransitionTime", started)
        status = {
            "phase": "Succeeded" if ok else "Failed",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": since},
                {"type": "Initialized", "status": "True", "lastTransitionTime": since},
                {"type": "ContainersReady", "status": "False", "reason": "PodCompleted", "lastTransitionTime": finished},
                {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": finished},
            ],
            "containerStatuses": [
                {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "started": False,
                 "restartCount": 0,
                 "state": {"terminated": terminated if i == 0 else dict(terminated, exitCode=0, reason="Completed")}}
                for i, c in enumerate(spec["containers"])
            ],
        }
        if message:
            status["message"] = message
        path = "/api/v1/namespaces/%s/pods/%s/status" % (meta["namespace"], meta["name"])
        try:
            self.api.call("PATCH", path, {"status": status}, "application/merge-patch+json")
        except ApiError as e:
            if e.status != 404:
                log("completing %s/%s: %s" % (meta["namespace"], meta["name"], e))

    # ------------------------------------------------------------------------- the watch loop

    def follow(self, ns):
        base = "/api/v1/namespaces/%s/pods?fieldSelector=%s" % (ns, urllib.parse.quote("status.phase=Running"))
        while not self.stopping:
            try:
                lst = self.api.call("GET", base)
                for pod in lst["items"]:
                    self.consider(pod)
                rv = lst["metadata"]["resourceVersion"]
                while not self.stopping:
                    gone = False
                    for ev in self.api.watch("%s&watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=%s" % (base, rv)):
                        if ev["type"] == "ERROR":
                            gone = True  # 410 Gone and the like: list again
                            break
                        obj = ev["object"]
                        rv = obj["metadata"].get("resourceVersion", rv)
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            self.consider(obj)
                        elif ev["type"] == "DELETED":
                            self.kill(obj["metadata"]["uid"], "deleted")
                    if gone:
                        break
            except (OSError, ApiError, http.client.HTTPException, ValueError) as e:
                if self.stopping:
                    return
                log("namespace %s: %s; listing again in 1 s" % (ns, e))
                time.sleep(1)

    def stop(self):
        self.stopping = True
        with self.lock:
            procs = list(self.procs.values())
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespace", action="append", required=True, help="run the pods of this namespace (repeatable)")
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config"))
    ap.add_argument("--concurrency", type=int, default=os.cpu_count() or 2, help="pods run at once (default: cores)")
    ap.add_argument("--log-dir", default=None, help="each pod's output (default: a new temporary directory)")
    a = ap.parse_args()
    if a.concurrency < 1:
        ap.error("--concurrency must be at least 1")
    log_dir = a.log_dir or tempfile.mkdtemp(prefix="taskrunner-logs-")
    os.makedirs(log_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="taskrunner-") as secrets:
        os.chmod(secrets, 0o700)
        runner = Runner(Api(a.kubeconfig, secrets), a.namespace, a.concurrency, log_dir)
        done = threading.Event()

        def on_signal(signum, frame):
            runner.stop()
            done.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        for ns in a.namespace:
            threading.Thread(target=runner.follow, args=(ns,), daemon=True).start()
        log("running pods of %s on kwok nodes, %d at once, logs in %s" % (", ".join(a.namespace), a.concurrency, log_dir))
        print("ready", flush=True)
        done.wait()
        runner.pool.shutdown(wait=False, cancel_futures=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
