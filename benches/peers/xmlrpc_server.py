"""The XML-RPC peer of benches/compare.sh: Python's stdlib SimpleXMLRPCServer, threaded,
HTTP/1.1 keep-alive, with echo(value) and ping().

Usage: python3 xmlrpc_server.py PORT   (prints `listening on 127.0.0.1:PORT`)
"""
import socketserver
import sys
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer


class Handler(SimpleXMLRPCRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as xmlrpc.client and wrk expect


class Server(socketserver.ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True
    request_queue_size = 1024  # the default 5 refuses wrk's burst of connections


def main():
    port = int(sys.argv[1])
    srv = Server(("127.0.0.1", port), requestHandler=Handler, logRequests=False, allow_none=True)
    srv.register_function(lambda value: value, "echo")
    srv.register_function(lambda: True, "ping")
    srv.register_introspection_functions()  # so rpcmux can stand in front of it as a gateway
    print(f"listening on 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
