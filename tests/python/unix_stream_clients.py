"""Stock clients dialling rpcmux's Unix-domain socket file: aio-msgpack-rpc on asyncio's
open_unix_connection, pynvim's socket_session (Neovim's own msgpack-rpc-over-a-socket-file
transport) and jsonrpcclient's messages over an AF_UNIX socket. Usage: PATH.
"""
import asyncio
import json
import socket
import sys

import aio_msgpack_rpc
from jsonrpcclient import Ok, parse, request
from pynvim.msgpack_rpc import socket_session

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

path = sys.argv[1]


async def aio():
    reader, writer = await asyncio.open_unix_connection(path)
    c = aio_msgpack_rpc.Client(reader, writer, response_timeout=10)
    assert await c.call("echo", MUSIC_ENTRY) == MUSIC_ENTRY
    assert await c.call("echo", 2**63 - 1) == 2**63 - 1
    peer = (await c.call("whoami"))["peer"]
    assert peer.startswith("unix(uid="), peer
    c.close()


asyncio.run(aio())
print("ok aio-msgpack-rpc")

s = socket_session(path)
assert s.request("echo", MUSIC_ENTRY) == MUSIC_ENTRY
assert s.request("whoami")["protocol"] == "msgpack-rpc"
s.close()
print("ok pynvim")

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(20)
sock.connect(path)
reader = sock.makefile("rb")
reqs = [request("echo", params=[MUSIC_ENTRY], id=1), request("whoami", id=2)]
sock.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
replies = {}
for _ in reqs:
    resp = parse(json.loads(reader.readline()))
    replies[resp.id] = resp
assert isinstance(replies[1], Ok) and replies[1].result == MUSIC_ENTRY, replies[1]
assert replies[2].result["protocol"] == "jsonrpc-tcp", replies[2]
assert replies[2].result["peer"].startswith("unix(uid="), replies[2]
print("ok jsonrpcclient")
