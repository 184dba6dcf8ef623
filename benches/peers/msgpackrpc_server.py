"""The msgpack-rpc peer of benches/compare.sh: msgpack-rpc-python 0.4.1's server (tornado),
with echo(value) and ping(). Run it with the .venvs/msgpackrpc interpreter.

Usage: python msgpackrpc_server.py PORT   (prints `listening on 127.0.0.1:PORT`)
"""
import sys

import msgpackrpc


class Handler:
    def echo(self, value):
        return value

    def ping(self):
        return True


def main():
    port = int(sys.argv[1])
    server = msgpackrpc.Server(Handler())
    server.listen(msgpackrpc.Address("127.0.0.1", port))
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.start()


if __name__ == "__main__":
    main()
