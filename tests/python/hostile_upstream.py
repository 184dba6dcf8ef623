"""An XML-RPC upstream that describes itself with hostile sizes, for the gateway's input
bounds (tests/gateway/upstreams.rs): Python's stdlib SimpleXMLRPCServer whose
system.listMethods lists 10,000 verbs, two of them with control characters in their
names (DEL and a tab: XML 1.0 carries both), whose system.methodHelp answers 1 MiB of
help (with an escape sequence in it) for the first verbs, and whose signatures are huge.

Usage: hostile_upstream.py PORT   (0 picks a free one)
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys
from socketserver import ThreadingMixIn
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

COUNT = 10_000
NAMES = ["bad\x7fname", "tab\tname"] + [f"v{i}" for i in range(COUNT - 2)]
BIG_HELP = "\x1b[31m" + "h" * (1 << 20)


class Handler(SimpleXMLRPCRequestHandler):
    protocol_version = "HTTP/1.1"
    rpc_paths = ("/RPC2",)

    def log_message(self, *args):
        pass


class Server(ThreadingMixIn, SimpleXMLRPCServer):
    daemon_threads = True


def main():
    srv = Server(("127.0.0.1", int(sys.argv[1])), requestHandler=Handler,
                 logRequests=False, allow_none=True)

    def list_methods():
        return NAMES

    def method_help(name):
        # 1 MiB for the first few verbs: enough to show it is cut, quick to serve.
        return BIG_HELP if name in ("v0", "v1", "v2", "v3") else f"help of {name}"

    def method_signature(name):
        return [["string"] * 1000] * 100

    srv.register_function(list_methods, "system.listMethods")
    srv.register_function(method_help, "system.methodHelp")
    srv.register_function(method_signature, "system.methodSignature")
    srv.register_function(lambda: "v0 answered", "v0")
    print(f"listening on {srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
