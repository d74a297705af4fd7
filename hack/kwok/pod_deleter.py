#!/usr/bin/env python3
"""hack/kwok/pod_deleter.py: completes the deletion of pods on kwok nodes, as a kubelet does.

A deleted pod that is bound to a node keeps existing, with a deletionTimestamp, until its node's
kubelet has stopped it and deletes it for good (grace period 0). kwok has no kubelets; its own
delete step deletes by name only, so when a pod is deleted and a new one of the same name is
created at once (Kubernetes' e2e specs do this), a late kwok delete removes the new pod. Here
every final delete carries the old pod's UID as a precondition, as a kubelet's does: a new pod
of the same name is never touched (the API server answers 409 Conflict).

Like kubelets, it watches bound pods only (a kubelet watches its node's: fieldSelector
spec.nodeName), and deletes in parallel (a kubelet per node; here a few workers, each on its own
kept-alive connection). A single process that read every pod event and opened a TLS connection
per delete fell far behind at 5,000 nodes: pending pods' status writes filled its stream, and
victims of preemption stayed Terminating for minutes (docs/preemption.md, "5,000 nodes").

Usage: pod_deleter.py --state DIR --server URL [--workers N]
  DIR holds pki/ca.crt and pki/admin.{crt,key} (hack/cluster.sh's instance state dir);
  run/pod-deleter.ready is written once the first list has been handled (the health check).
"""
import argparse
import http.client
import json
import os
import queue
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

# Bound pods only: the pending ones' status writes (a scheduler's conditions, nominations) are
# most of the pod events while a scheduler preempts, and none concerns a kubelet.
BOUND = "fieldSelector=" + urllib.parse.quote("spec.nodeName!=", safe="")
PAGE = 500  # pods per list page, as client-go's pager


def log(msg):
    print(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), msg, flush=True)


class Api:
    def __init__(self, server, state):
        pki = os.path.join(state, "pki")
        self.server = server.rstrip("/")
        self.url = urllib.parse.urlsplit(self.server)
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.local = threading.local()  # each worker's kept-alive connection

    def request(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)

    def delete(self, path, body):
        """DELETE on this thread's kept-alive connection; returns the HTTP status. A connection
        the server closed meanwhile is tried once more on a new one; a new one that fails
        raises (OSError, HTTPException)."""
        reused = getattr(self.local, "conn", None) is not None
        try:
            return self._delete_once(path, body)
        except (OSError, http.client.HTTPException):
            if not reused:
                raise
            return self._delete_once(path, body)

    def _delete_once(self, path, body):
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(
                self.url.hostname, self.url.port, context=self.ctx, timeout=60)
        try:
            conn.request("DELETE", path, json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            return r.status
        except BaseException:
            conn.close()
            self.local.conn = None
            raise


def terminating(pod):
    """A pod a kubelet would now delete for good: bound, and deletion requested."""
    return bool(pod.get("spec", {}).get("nodeName")) and bool(pod["metadata"].get("deletionTimestamp"))


def finish(api, pod):
    """The kubelet's final delete: grace period 0, only this UID. Returns False on a retryable error."""
    meta = pod["metadata"]
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
            "preconditions": {"uid": meta["uid"]}}
    path = "/api/v1/namespaces/%s/pods/%s" % (meta["namespace"], meta["name"])
    try:
        status = api.delete(path, body)
    except (OSError, http.client.HTTPException) as e:
        log("deleting pod %s/%s failed: %s" % (meta["namespace"], meta["name"], e))
        return False
    # 404: already gone; 409: the name now belongs to another pod (the UID precondition).
    if status >= 300 and status not in (404, 409):
        log("deleting pod %s/%s (uid %s) failed: HTTP %d" % (meta["namespace"], meta["name"], meta["uid"], status))
        return False
    return True


class Finisher:
    """The final deletes, made by `workers` threads. A pod is deleted once (watch events repeat
    it; its UID is remembered ten minutes); a retryable failure is tried again a second later."""

    def __init__(self, api, workers):
        self.api = api
        self.todo = queue.Queue()
        self.lock = threading.Lock()
        self.busy = set()  # UIDs queued or being deleted
        self.done = {}  # UID -> when its final delete succeeded
        self.pruned = time.monotonic()
        for _ in range(workers):
            threading.Thread(target=self._work, daemon=True).start()

    def submit(self, pod):
        uid = pod["metadata"]["uid"]
        with self.lock:
            if uid in self.busy or uid in self.done:
                return
            self.busy.add(uid)
        self.todo.put(pod)

    def gone(self, uid):
        """The pod's DELETED event: nothing more to do for it."""
        with self.lock:
            self.done.pop(uid, None)

    def _work(self):
        while True:
            pod = self.todo.get()
            uid = pod["metadata"]["uid"]
            try:
                ok = finish(self.api, pod)
            except Exception as e:  # pylint: disable=broad-except
                log("deleting pod uid %s failed unexpectedly (%s: %s)" % (uid, type(e).__name__, e))
                ok = False
            if not ok:
                time.sleep(1)
                self.todo.put(pod)
            else:
                now = time.monotonic()
                with self.lock:
                    self.busy.discard(uid)
                    self.done[uid] = now
                    # UIDs whose DELETED event came first or was missed: forgotten after ten
                    # minutes, looked for once a minute
                    if now - self.pruned > 60:
                        self.pruned = now
                        for u in [u for u, t in self.done.items() if now - t > 600]:
                            del self.done[u]
            self.todo.task_done()

    def wait_idle(self):
        """Until every submitted delete succeeded (tests)."""
        self.todo.join()


def list_bound(api, finisher):
    """Lists the bound pods in pages of PAGE (one list of 20,000 pods from an API server under
    load took longer than any sane timeout, and the deleter listed again and again instead of
    deleting), hands the terminating ones to finisher; returns the list's resourceVersion."""
    cont = ""
    while True:
        path = "/api/v1/pods?%s&limit=%d" % (BOUND, PAGE)
        if cont:
            path += "&continue=" + urllib.parse.quote(cont, safe="")
        with api.request("GET", path, timeout=120) as r:
            lst = json.load(r)
        for pod in lst["items"]:
            if terminating(pod):
                finisher.submit(pod)
        cont = lst["metadata"].get("continue")
        if not cont:
            return lst["metadata"]["resourceVersion"]


def run(api, ready_file, finisher):
    while True:
        try:
            rv = list_bound(api, finisher)
            if ready_file and not os.path.exists(ready_file):
                with open(ready_file, "w") as f:
                    f.write("ok\n")
            path = "/api/v1/pods?%s&watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s" % (BOUND, rv)
            with api.request("GET", path, timeout=330) as w:
                for line in w:
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        break  # 410 Gone and the like: list again
                    pod = ev.get("object", {})
                    if ev.get("type") == "DELETED":
                        finisher.gone(pod.get("metadata", {}).get("uid"))
                    elif ev.get("type") in ("ADDED", "MODIFIED") and terminating(pod):
                        finisher.submit(pod)
        except (urllib.error.URLError, OSError, ValueError, KeyError, http.client.HTTPException) as e:
            # The API server restarting, a broken watch: list again after a moment. An API
            # server killed in the middle of a list's chunked body raises IncompleteRead (an
            # HTTPException, not an OSError): seen ending the deleter in a full test run, after
            # which every deleted pod stayed Terminating for good.
            log("pod watch interrupted (%s: %s); listing again" % (type(e).__name__, e))
            time.sleep(1)
        except Exception as e:  # pylint: disable=broad-except
            # Anything else: a kubelet does not stop completing deletions over one bad answer.
            log("pod watch failed unexpectedly (%s: %s); listing again" % (type(e).__name__, e))
            time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state", required=True, help="the cluster instance's state directory")
    ap.add_argument("--server", required=True, help="the API server URL")
    ap.add_argument("--workers", type=int, default=8, help="final deletes made at once (default 8)")
    a = ap.parse_args()
    if a.workers < 1:
        sys.exit("error: --workers must be at least 1, not %d" % a.workers)
    for f in ("ca.crt", "admin.crt", "admin.key"):
        if not os.path.isfile(os.path.join(a.state, "pki", f)):
            sys.exit("error: %s not found (is --state a hack/cluster.sh instance directory?)" % os.path.join(a.state, "pki", f))
    log("pod-deleter: completing the deletion of bound pods on kwok nodes (UID preconditions, %d workers)" % a.workers)
    api = Api(a.server, a.state)
    run(api, os.path.join(a.state, "run", "pod-deleter.ready"), Finisher(api, a.workers))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
