#!/usr/bin/env python3
"""hack/kwok/pod_deleter.py: completes the deletion of pods on kwok nodes, as a kubelet does.

A deleted pod that is bound to a node keeps existing, with a deletionTimestamp, until its node's
kubelet has stopped it and deletes it for good (grace period 0). kwok has no kubelets; its own
delete step deletes by name only, so when a pod is deleted and a new one of the same name is
created at once (Kubernetes' e2e specs do this), a late kwok delete removes the new pod. Here
every final delete carries the old pod's UID as a precondition, as a kubelet's does: a new pod
of the same name is never touched (the API server answers 409 Conflict).

Usage: pod_deleter.py --state DIR --server URL
  DIR holds pki/ca.crt and pki/admin.{crt,key} (hack/cluster.sh's instance state dir);
  run/pod-deleter.ready is written once the first list has been handled (the health check).
"""
import argparse
import http.client
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request


def log(msg):
    print(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), msg, flush=True)


class Api:
    def __init__(self, server, state):
        pki = os.path.join(state, "pki")
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def request(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)


def terminating(pod):
    """A pod a kubelet would now delete for good: bound, and deletion requested."""
    return bool(pod.get("spec", {}).get("nodeName")) and bool(pod["metadata"].get("deletionTimestamp"))


def finish(api, pod, done):
    """The kubelet's final delete: grace period 0, only this UID. Returns False on a retryable error."""
    meta = pod["metadata"]
    uid = meta["uid"]
    if uid in done:
        return True
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
            "preconditions": {"uid": uid}}
    path = "/api/v1/namespaces/%s/pods/%s" % (meta["namespace"], meta["name"])
    try:
        api.request("DELETE", path, body).close()
    except urllib.error.HTTPError as e:
        # 404: already gone; 409: the name now belongs to another pod (the UID precondition).
        if e.code not in (404, 409):
            log("deleting pod %s/%s (uid %s) failed: HTTP %d" % (meta["namespace"], meta["name"], uid, e.code))
            return False
    except (urllib.error.URLError, OSError) as e:
        log("deleting pod %s/%s failed: %s" % (meta["namespace"], meta["name"], e))
        return False
    done[uid] = time.monotonic()
    return True


def run(api, ready_file):
    done = {}  # UIDs whose final delete was sent (kept a while: watch events repeat them)
    retry = {}  # uid -> pod whose final delete failed with a retryable error
    while True:
        try:
            with api.request("GET", "/api/v1/pods") as r:
                lst = json.load(r)
            for pod in lst["items"]:
                if terminating(pod) and not finish(api, pod, done):
                    retry[pod["metadata"]["uid"]] = pod
            if ready_file and not os.path.exists(ready_file):
                with open(ready_file, "w") as f:
                    f.write("ok\n")
            rv = lst["metadata"]["resourceVersion"]
            path = "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" + rv
            with api.request("GET", path, timeout=330) as w:
                for line in w:
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        break  # 410 Gone and the like: list again
                    pod = ev.get("object", {})
                    uid = pod.get("metadata", {}).get("uid")
                    if ev.get("type") == "DELETED":
                        retry.pop(uid, None)
                        continue
                    if ev.get("type") in ("ADDED", "MODIFIED") and terminating(pod):
                        if not finish(api, pod, done):
                            retry[uid] = pod
                    for u, p in list(retry.items()):
                        if finish(api, p, done):
                            retry.pop(u, None)
            now = time.monotonic()
            for u in [u for u, t in done.items() if now - t > 600]:
                del done[u]
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
    a = ap.parse_args()
    for f in ("ca.crt", "admin.crt", "admin.key"):
        if not os.path.isfile(os.path.join(a.state, "pki", f)):
            sys.exit("error: %s not found (is --state a hack/cluster.sh instance directory?)" % os.path.join(a.state, "pki", f))
    log("pod-deleter: completing the deletion of pods on kwok nodes (UID preconditions)")
    run(Api(a.server, a.state), os.path.join(a.state, "run", "pod-deleter.ready"))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
