"""Upstreams on a Unix-domain socket for tests/gateway/unix_sockets.rs, from Python's
standard library (so `python3`), threaded:

  lines  JSON-RPC 2.0, one JSON value per line, answered in order (what rpcmux's
         jsonrpc+unix:// upstreams speak; geth's IPC endpoint has this shape).
  http   XML-RPC over HTTP/1.1 keep-alive at /RPC2 (SimpleXMLRPCServer's dispatcher).

Verbs: `add(a, b)`, `tag()` (the TAG argument), introspection; over http also `headers()`:
the Host and X-Forwarded-For headers of the request.

Usage: unix_upstream.py lines|http SOCKET TAG   (SOCKET: a path, or @NAME: abstract)
Prints "listening on SOCKET" once it accepts connections; runs until killed.
"""

import json
import socketserver
import sys
import threading
from xmlrpc.server import SimpleXMLRPCDispatcher, SimpleXMLRPCRequestHandler

MODE, SOCKET, TAG = sys.argv[1:4]
VERBS = {"add": lambda a, b: a + b, "tag": lambda: TAG}
# The headers of the HTTP request being answered (one thread per connection).
request = threading.local()


class Lines(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            req = json.loads(line)
            method, params = req["method"], req.get("params", [])
            if method == "system.listMethods":
                reply = {"result": sorted(VERBS)}
            elif method in VERBS:
                f = VERBS[method]
                r = f(**params) if isinstance(params, dict) else f(*params)
                reply = {"result": r}
            else:
                reply = {"error": {"code": -32601, "message": "no such method"}}
            if "id" in req:
                reply.update(jsonrpc="2.0", id=req["id"])
                self.wfile.write(json.dumps(reply).encode() + b"\n")
                self.wfile.flush()


class Http(SimpleXMLRPCRequestHandler):
    protocol_version = "HTTP/1.1"
    rpc_paths = ("/RPC2",)
    disable_nagle_algorithm = False  # TCP's: a Unix socket has no Nagle to turn off

    def do_POST(self):
        request.headers = [self.headers.get("Host"), self.headers.get("X-Forwarded-For")]
        super().do_POST()


class LinesServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class HttpServer(LinesServer, SimpleXMLRPCDispatcher):
    def __init__(self, addr):
        SimpleXMLRPCDispatcher.__init__(self, allow_none=True, encoding=None)
        LinesServer.__init__(self, addr, Http)
        self.logRequests = False
        self.register_introspection_functions()
        for name, f in VERBS.items():
            self.register_function(f, name)
        self.register_function(lambda: request.headers, "headers")


def main():
    # Linux's abstract namespace: a leading NUL byte instead of a file.
    addr = "\0" + SOCKET[1:] if SOCKET.startswith("@") else SOCKET
    srv = HttpServer(addr) if MODE == "http" else LinesServer(addr, Lines)
    print("listening on", SOCKET, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
