"""A real JSON-RPC 2.0 server over HTTP for the gateway tests
(tests/gateway/peers.rs): jsonrpclib-pelix's SimpleJSONRPCServer (clients venv),
with XML-RPC-style introspection. It speaks HTTP/1.0: every call closes its connection.

Usage: jsonrpc_upstream.py PORT
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys

from jsonrpclib import Fault
from jsonrpclib.SimpleJSONRPCServer import SimpleJSONRPCServer


def main():
    port = int(sys.argv[1])
    srv = SimpleJSONRPCServer(("127.0.0.1", port), logRequests=False)
    srv.register_introspection_functions()

    def echo(value):
        """Return value unchanged."""
        return value

    def add(a, b):
        """Add two numbers."""
        return a + b

    def fail(code, message):
        """Answer a JSON-RPC error with this code and message."""
        # jsonrpclib's Fault is no exception: a method returns it to answer an error.
        return Fault(code, message)

    for f in (echo, add, fail):
        srv.register_function(f)
    print(f"listening on {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
