#!/usr/bin/env python3
"""tests/e2e/http_attack.py: bounded hostile-client loads against one tarema HTTP server on
loopback, with health probes and the server's peak RSS sampled meanwhile. Prints one line of
figures (key=value) that the calling test asserts on; never fails by itself.

  http_attack.py slowloris --port P --probe-port H --pid PID [--conns 500] [--secs 8]
  http_attack.py bodies    --port P --probe-port H --pid PID [--conns 64] [--mb 8] [--secs 6]
  http_attack.py json      --port P --probe-port H --pid PID [--conns 32] [--mb 5]

The attackers connect from 127.0.0.2 and the probes from 127.0.0.1, as an attacking pod and the
kubelet would be different addresses. slowloris: each connection sends a request line and one
header line every 2 s, never finishing its headers. bodies: each connection announces an
--mb MiB body and sends all but the last KiB of it, then stalls. json: each connection sends a
whole --mb MB JSON object of short keys ({"k0":1,"k1":1,...}, ~12 bytes a key) and waits for
the answer. A probe is GET /healthz with a 1 s timeout every 0.25 s.
"""
import argparse
import os
import socket
import threading
import time

ATTACK_SRC = "127.0.0.2"


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class Sampler(threading.Thread):
    """Peak RSS of pid, sampled every 10 ms, and /healthz probes every 0.25 s."""

    def __init__(self, pid, probe_port):
        super().__init__(daemon=True)
        self.pid, self.probe_port = pid, probe_port
        self.peak = rss_mb(pid)
        self.start_rss = self.peak
        self.probes = self.answered = 0
        self.stop = threading.Event()
        # The probes run in threads of their own (a stalled one must not delay the next); the
        # figures are read only after join_probes, and answered is counted under the lock: a
        # probe still in flight when the figures were printed, or two increments racing, would
        # show an answered probe as missing.
        self.lock = threading.Lock()
        self.threads = []

    def probe(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.probe_port), timeout=1)
            s.settimeout(1)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
            data = s.recv(64)
            s.close()
            return data.startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def run(self):
        next_probe = time.time()
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            if time.time() >= next_probe:
                next_probe += 0.25
                self.probes += 1
                t = threading.Thread(target=self._probe_once, daemon=True)
                t.start()
                self.threads.append(t)
            time.sleep(0.01)

    def _probe_once(self):
        if self.probe():
            with self.lock:
                self.answered += 1

    def join_probes(self, grace):
        """Waits for the probes in flight, up to grace seconds in all; one still running then
        stays unanswered."""
        deadline = time.time() + grace
        for t in self.threads:
            t.join(max(0.0, deadline - time.time()))


def attacker_socket(port, timeout=2):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((ATTACK_SRC, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def slowloris(a, smp):
    socks = []
    for i in range(a.conns):
        try:
            s = attacker_socket(a.port, timeout=0.5)
            s.sendall(f"POST {a.path} HTTP/1.1\r\nHost: x\r\n".encode())
            socks.append(s)
        except OSError:
            pass
    end = time.time() + a.secs
    while time.time() < end:
        time.sleep(2)
        alive = []
        for s in socks:
            try:
                s.sendall(b"X-Slow: 1\r\n")
                alive.append(s)
            except OSError:
                s.close()
        socks = alive
    held = 0
    for s in socks:  # still open: the server kept it
        try:
            s.setblocking(False)
            if s.recv(1) == b"":
                raise OSError
        except BlockingIOError:
            held += 1
        except OSError:
            pass
        s.close()
    return {"conns": a.conns, "held": held}


def bodies(a, smp):
    size = int(a.mb * 1024 * 1024)
    stats = {"refused_early": 0, "sent_mb": 0.0}
    lock = threading.Lock()
    chunk = b"x" * (256 * 1024)
    stop = threading.Event()

    def one():
        try:
            s = attacker_socket(a.port)
            s.sendall(f"POST {a.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {a.token}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n".encode())
            sent = 0
            while sent < size - 1024 - len(chunk):
                s.sendall(chunk)
                sent += len(chunk)
            with lock:
                stats["sent_mb"] += sent / 1048576.0
            stop.wait(a.secs)
            s.close()
        except OSError:
            with lock:
                stats["refused_early"] += 1

    ts = [threading.Thread(target=one, daemon=True) for _ in range(a.conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(a.secs + 30)
    return {"conns": a.conns, "body_mb": a.mb, "refused_early": stats["refused_early"],
            "sent_mb": round(stats["sent_mb"])}


def json_flood(a, smp):
    target = int(a.mb * 1000 * 1000)
    parts, n, i = [], 1, 0
    while n < target - 16:
        p = f'"k{i}":1'
        parts.append(p)
        n += len(p) + 1
        i += 1
    body = ("{" + ",".join(parts) + "}").encode()
    statuses = {}
    lock = threading.Lock()

    def one():
        code = "none"
        try:
            s = attacker_socket(a.port, timeout=60)
            s.sendall(f"POST {a.path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {a.token}\r\n"
                      f"Content-Type: application/json\r\nConnection: close\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            data = s.recv(64)
            code = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
            s.close()
        except OSError:
            code = "reset"
        with lock:
            statuses[code] = statuses.get(code, 0) + 1

    ts = [threading.Thread(target=one, daemon=True) for _ in range(a.conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(90)
    return {"conns": a.conns, "keys": i, "body_mb": round(len(body) / 1e6, 1),
            "statuses": ",".join(f"{k}:{v}" for k, v in sorted(statuses.items()))}


def settle(port, limit=15.0):
    """Waits until the attacker address is served again (the last attack's connections are
    gone), so each attack starts from a quiet server."""
    end = time.time() + limit
    while time.time() < end:
        try:
            s = attacker_socket(port, timeout=1)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            ok = s.recv(16).startswith(b"HTTP/1.1 200")
            s.close()
            if ok:
                return
        except OSError:
            pass
        time.sleep(0.25)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attack", choices=["slowloris", "bodies", "json"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--probe-port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--path", default="/filter")
    ap.add_argument("--token", default="")
    ap.add_argument("--conns", type=int)
    ap.add_argument("--mb", type=float)
    ap.add_argument("--secs", type=float)
    a = ap.parse_args()
    defaults = {"slowloris": (500, 0, 8), "bodies": (64, 8, 6), "json": (32, 5, 0)}[a.attack]
    a.conns = a.conns or defaults[0]
    a.mb = a.mb or defaults[1]
    a.secs = a.secs or defaults[2]
    settle(a.port)
    smp = Sampler(a.pid, a.probe_port)
    smp.start()
    t0 = time.time()
    fig = {"slowloris": slowloris, "bodies": bodies, "json": json_flood}[a.attack](a, smp)
    time.sleep(0.5)
    smp.stop.set()
    smp.join()
    # A probe's worst case is its 1 s connect timeout plus its 1 s read timeout; 1.5 s beyond
    # that, one still running has not been answered.
    secs = round(time.time() - t0, 1)
    smp.join_probes(3.5)
    with smp.lock:
        answered = smp.answered
    fig.update({"attack": a.attack, "secs": secs, "probes": smp.probes,
                "answered": answered, "rss_start_mb": round(smp.start_rss),
                "peak_rss_mb": round(smp.peak)})
    print("figures: " + " ".join(f"{k}={v}" for k, v in fig.items()), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
