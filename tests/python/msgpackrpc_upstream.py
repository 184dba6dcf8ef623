"""A real MessagePack-RPC server for the gateway tests (tests/gateway/peers.rs):
msgpack-rpc-python 0.4.1 (run it with the msgpackrpc venv's interpreter). It has no
introspection, so the gateway serves the `methods` list it is configured with.

Usage: msgpackrpc_upstream.py PORT
Prints "listening on PORT" once it accepts connections; runs until killed.
"""

import sys

import msgpackrpc


class Verbs:
    def echo(self, value):
        return value

    def add(self, a, b):
        return a + b

    def fail(self, message):
        # msgpack-rpc-python answers any exception with its text as the error.
        raise ValueError(message)


def main():
    port = int(sys.argv[1])
    server = msgpackrpc.Server(Verbs(), unpack_encoding="utf-8")
    server.listen(msgpackrpc.Address("127.0.0.1", port))
    print(f"listening on {port}", flush=True)
    server.start()


if __name__ == "__main__":
    main()
