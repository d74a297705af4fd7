#!/usr/bin/env bash
# tests/e2e/cluster_pod_deleter_test.sh: hack/kwok/pod_deleter.py (the local cluster's stand-in
# for a kubelet's final delete) outlives a broken API server. Its loop is driven, offline, by a
# fake API whose answers are the failures a killed kube-apiserver gives: a list whose chunked
# body stops half way (http.client.IncompleteRead: in a full test run this ended the deleter
# during fault_apiserver's kill -9, and every pod deleted afterwards stayed Terminating), a
# refused connection, a reset watch, a body that is not JSON. After each, the deleter must list
# again and complete the deletion of the terminating pod it then finds, with its UID as the
# precondition, and never touch a pod that is not terminating. The deletes are made by its
# worker threads (two here), each pod's once however often it is seen again, and it lists and
# watches bound pods only (a kubelet's view: pending pods' status writes are not its business), its
# list in pages (the terminating pod is on the second).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
out=$(python3 - "$REPO_ROOT/hack/kwok" <<'PY' 2>&1
import http.client, io, json, sys, urllib.error
sys.path.insert(0, sys.argv[1])
import pod_deleter
pod_deleter.time.sleep = lambda s: None  # no waiting between attempts

class Stop(BaseException):  # not an Exception: the deleter's catch-all must let it through
    pass

def body(obj):
    return io.BytesIO(json.dumps(obj).encode())

class Answer:  # what urlopen returns: a context manager with read() and line iteration
    def __init__(self, make):
        self.make = make
    def __enter__(self):
        return self.make()
    def __exit__(self, *a):
        return False
    def close(self):
        pass

class Truncated(io.BytesIO):
    def read(self, *a):
        raise http.client.IncompleteRead(b'{"items": [', 1139)

TERM = {"metadata": {"namespace": "ns", "name": "gone", "uid": "u-1", "deletionTimestamp": "2026-11-29T00:00:00Z"},
        "spec": {"nodeName": "n1"}}
LIVE = {"metadata": {"namespace": "ns", "name": "live", "uid": "u-2"}, "spec": {"nodeName": "n1"}}

def run(failure):
    """failure: raised or answered for the first list; then a good list, then the watch stops."""
    calls, deletes = [], []
    class Api:
        def delete(self, path, body_):
            deletes.append((path, body_["preconditions"]["uid"], body_["gracePeriodSeconds"]))
            return 200
        def request(self, method, path, body_=None, timeout=30):
            calls.append((method, path))
            if "fieldSelector=spec.nodeName%21%3D" not in path:
                raise Stop("a list or watch of every pod, not of bound ones: " + path)
            lists = sum(1 for m, p in calls if m == "GET" and "watch" not in p)
            if "watch" not in path and any("watch" in p for m, p in calls):
                fin.wait_idle()  # the list after the watch: the first delete is made
            if "watch" in path:
                if sum(1 for m, p in calls if "watch" in p) > 1:
                    raise Stop()
                # the live pod changes (nothing to do); the stream then ends, and the deleter
                # lists again, finds the terminating pod again (deleted already: not again), and
                # watches again (Stop)
                return Answer(lambda: io.BytesIO(b"".join(
                    json.dumps({"type": "MODIFIED", "object": LIVE}).encode() + b"\n" for _ in range(2))))
            if lists == 1:
                if isinstance(failure, Exception):
                    raise failure
                return Answer(failure)
            if "continue=c%3D1" in path:  # the second page (the token quoted) holds the terminating pod
                return Answer(lambda: body({"metadata": {"resourceVersion": "7"}, "items": [TERM]}))
            if "limit=" not in path:
                raise Stop("a list that is not paged: " + path)
            return Answer(lambda: body({"metadata": {"resourceVersion": "7", "continue": "c=1"}, "items": [LIVE]}))
    api = Api()
    fin = pod_deleter.Finisher(api, 2)
    try:
        pod_deleter.run(api, None, fin)
    except Stop as e:
        if str(e):
            return str(e)
    except BaseException as e:
        return "the deleter died: %s: %s" % (type(e).__name__, e)
    fin.wait_idle()
    want = [("/api/v1/namespaces/ns/pods/gone", "u-1", 0)]
    if deletes != want:
        return "deletes %s, want %s" % (deletes, want)
    return None

cases = [
    ("a list cut off half way (IncompleteRead)", lambda: Truncated(b"")),
    ("a refused connection", urllib.error.URLError(ConnectionRefusedError(111, "Connection refused"))),
    ("a connection reset", ConnectionResetError(104, "Connection reset by peer")),
    ("a server that hangs up before answering", http.client.RemoteDisconnected("Remote end closed connection")),
    ("a body that is not JSON", lambda: io.BytesIO(b"<html>502</html>")),
    ("an answer without items", lambda: body({"kind": "Status"})),
    ("something unforeseen (RuntimeError)", RuntimeError("unforeseen")),
]
for name, failure in cases:
    problem = run(failure)
    print(("not ok - after %s: lists again and deletes only the terminating pod, by UID\n    %s" % (name, problem))
          if problem else "ok - after %s: lists again and deletes only the terminating pod, by UID" % name)
PY
)
echo "$out"
E2E_PASSED=$(grep -c '^ok - ' <<<"$out")
E2E_FAILED=$(grep -c '^not ok - ' <<<"$out")
[ $((E2E_PASSED + E2E_FAILED)) = 7 ] || fail "all 7 cases ran" "$out"
summary
