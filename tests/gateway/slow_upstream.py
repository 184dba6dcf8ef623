"""An XML-RPC upstream for tests/gateway/upstreams.rs's slow-discovery test, from Python's
standard library (so `python3`): SimpleXMLRPCServer, threaded, HTTP/1.1 keep-alive, on a
free loopback port.

Verbs `v0` .. `v{N-1}`, each returning its own name.
  slow  introspection (system.listMethods, system.methodHelp, system.methodSignature),
        each introspection call sleeping DELAY seconds: an upstream that takes a while
        to describe its verbs.
  bare  no introspection at all: system.listMethods and rpc.discover answer a fault
        (SimpleXMLRPCServer's own `method "..." is not supported`).

Usage: slow_upstream.py slow|bare N DELAY
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys
import time
from socketserver import ThreadingMixIn
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer


class Handler(SimpleXMLRPCRequestHandler):
    protocol_version = "HTTP/1.1"
    rpc_paths = ("/RPC2",)


class Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


def main():
    mode, n, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    srv = Server(
        ("127.0.0.1", 0),
        requestHandler=Handler,
        allow_none=True,
        logRequests=False,
    )
    for i in range(n):
        name = f"v{i}"
        srv.register_function(lambda name=name: name, name)
    if mode == "slow":
        srv.register_introspection_functions()
        for verb in ("system.listMethods", "system.methodHelp", "system.methodSignature"):
            fast = srv.funcs[verb]

            def slow(*args, fast=fast):
                time.sleep(delay)
                return fast(*args)

            srv.register_function(slow, verb)
    print(f"listening on {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
