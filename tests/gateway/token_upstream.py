"""An XML-RPC server that wants a bearer token, for tests/gateway/credentials.rs: Python's
stdlib SimpleXMLRPCServer (threaded, HTTP/1.1 keep-alive, with introspection) answering
HTTP 401 to any request without `Authorization: Bearer TOKEN`.

Verbs: `add(a, b)`, and `principal()`: the X-Rpcmux-Principal header of the request
(nil without one).

Usage: token_upstream.py TOKEN
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys
import threading
from socketserver import ThreadingMixIn
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

TOKEN = sys.argv[1]
# The principal header of the request being answered (one thread per connection).
request = threading.local()


class Handler(SimpleXMLRPCRequestHandler):
    protocol_version = "HTTP/1.1"
    rpc_paths = ("/RPC2",)

    def do_POST(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"no valid bearer token\n"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="token_upstream"')
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        request.principal = self.headers.get("X-Rpcmux-Principal")
        super().do_POST()


class Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


def main():
    srv = Server(
        ("127.0.0.1", 0),
        requestHandler=Handler,
        allow_none=True,
        logRequests=False,
    )
    srv.register_introspection_functions()
    srv.register_function(lambda a, b: a + b, "add")
    srv.register_function(lambda: getattr(request, "principal", None), "principal")
    print("listening on", srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
