"""A real XML-RPC server for the gateway tests (tests/gateway/upstreams.rs): Python's stdlib
SimpleXMLRPCServer, threaded (a hanging call must not stall the others), speaking
HTTP/1.1 keep-alive, with introspection and system.multicall.

Usage: xmlrpc_upstream.py PORT TAG   (PORT 0 picks a free one)
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys
import threading
import time
from socketserver import ThreadingMixIn
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer
from xmlrpc.client import Fault


# The X-Forwarded-For header of the request being answered (one thread per connection).
request = threading.local()
# HTTP requests answered so far (a multicall is one), for the tests that count them.
posts = 0
posts_lock = threading.Lock()


class Handler(SimpleXMLRPCRequestHandler):
    # Keep-alive, as production XML-RPC servers behind a gateway do.
    protocol_version = "HTTP/1.1"
    rpc_paths = ("/RPC2",)

    def do_POST(self):
        global posts
        with posts_lock:
            posts += 1
        request.forwarded_for = self.headers.get("X-Forwarded-For")
        super().do_POST()


class Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


def main():
    port, tag = int(sys.argv[1]), sys.argv[2]
    srv = Server(
        ("127.0.0.1", port),
        requestHandler=Handler,
        allow_none=True,
        use_builtin_types=True,
        logRequests=False,
    )
    srv.register_introspection_functions()
    srv.register_multicall_functions()

    def echo(value):
        """Return value unchanged."""
        return value

    def add(a, b):
        """Add two numbers."""
        return a + b

    def fail(code, message):
        """Raise an XML-RPC fault with this code and message."""
        raise Fault(code, message)

    def hang(seconds):
        """Sleep, then return the seconds slept."""
        time.sleep(seconds)
        return seconds

    def whoami():
        """The tag this server was started with."""
        return tag

    def forwarded_for():
        """The X-Forwarded-For header of this call's request, or nil."""
        return request.forwarded_for

    def requests():
        """HTTP requests this server answered, this one included."""
        return posts

    def learn(name):
        """Serve a new verb NAME from now on, answering its own name."""
        srv.register_function(lambda: name, name)
        return True

    def forget(name):
        """Stop serving verb NAME."""
        return srv.funcs.pop(name, None) is not None

    for f in (echo, add, fail, hang, whoami, forwarded_for, requests, learn, forget):
        srv.register_function(f)
    print(f"listening on {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
