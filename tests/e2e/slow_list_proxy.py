#!/usr/bin/env python3
"""slow_list_proxy.py: a slow API server, as a client sees one, for tests that must not depend on
how loaded the machine is. It listens on 127.0.0.1 (plain HTTP, no credentials asked) and passes
every request through to the test cluster's kube-apiserver over TLS with the cluster's admin
client certificate, streaming the answer (watches included) as it comes. The first list of each
path given with --slow (a GET that is not a `limit=1` probe, streamed lists included) is held
for --delay seconds before it is passed on.

Usage: slow_list_proxy.py --server https://127.0.0.1:PORT --pki DIR --slow PATH [--slow PATH]
                          --delay SECONDS
Prints `listening PORT` on stdout once it accepts connections; each held list on stderr."""
import argparse
import http.client
import http.server
import ssl
import sys
import threading
import time
import urllib.parse

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade",
       "proxy-connection", "te", "trailer"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True, help="the kube-apiserver's https:// URL")
    ap.add_argument("--pki", required=True, help="directory with ca.crt, admin.crt, admin.key")
    ap.add_argument("--slow", action="append", default=[], help="collection path to hold back")
    ap.add_argument("--delay", type=float, required=True, help="seconds the first list waits")
    a = ap.parse_args()
    up = urllib.parse.urlsplit(a.server)
    if up.scheme != "https" or not up.hostname:
        sys.exit("slow_list_proxy: --server must be an https:// URL, not %r" % a.server)
    ctx = ssl.create_default_context(cafile=a.pki + "/ca.crt")
    ctx.load_cert_chain(a.pki + "/admin.crt", a.pki + "/admin.key")
    held, lock = set(), threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: only held lists are reported
            pass

        def hold(self):
            u = urllib.parse.urlsplit(self.path)
            q = urllib.parse.parse_qs(u.query)
            if self.command != "GET" or u.path not in a.slow or q.get("limit") == ["1"]:
                return
            with lock:
                if u.path in held:
                    return
                held.add(u.path)
            print("held %s for %.1f s" % (self.path, a.delay), file=sys.stderr, flush=True)
            time.sleep(a.delay)

        def relay(self):
            self.hold()
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            conn = http.client.HTTPSConnection(up.hostname, up.port or 443, context=ctx)
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                self.send_response(r.status, r.reason)
                for k, v in r.getheaders():
                    if k.lower() not in HOP:
                        self.send_header(k, v)
                self.send_header("Connection", "close")  # the body ends when the stream does
                self.end_headers()
                while True:
                    chunk = r.read1(65536)
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (OSError, http.client.HTTPException):
                pass  # either side went away: the client sees a closed stream, as from a server
            finally:
                conn.close()
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = relay

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print("listening %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
