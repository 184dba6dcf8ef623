"""JSON-RPC over raw TCP: messages built and parsed by jsonrpcclient, over a plain socket.

Usage: jsonrpc_tcp_client.py HOST PORT. Sends requests pipelined (newline-separated and
back to back), reads one reply line per request, matches them by id.
"""
import json
import socket
import sys

from jsonrpcclient import Error, Ok, parse, request

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

host, port = sys.argv[1], int(sys.argv[2])
sock = socket.create_connection((host, port), timeout=20)
reader = sock.makefile("rb")

reqs = [
    request("sleep", params=[300], id=1),  # slow: must be overtaken
    request("echo", params=[MUSIC_ENTRY], id=2),
    request("ping", id=3),
    request("VM.getStats", params={"vmID": "missing"}, id=4),
    request("nope", id=5),
]
wire = b"".join(json.dumps(r).encode() + (b"\n" if i % 2 else b"") for i, r in enumerate(reqs))
sock.sendall(wire)

order = []
replies = {}
for _ in reqs:
    line = reader.readline()
    assert line.endswith(b"\n"), f"reply not newline-terminated: {line!r}"
    resp = parse(json.loads(line))
    order.append(resp.id)
    replies[resp.id] = resp

assert order[-1] == 1, f"slow sleep(300) should be answered last, order was {order}"
assert isinstance(replies[1], Ok) and replies[1].result == 300
assert isinstance(replies[2], Ok) and replies[2].result == MUSIC_ENTRY, replies[2]
assert isinstance(replies[3], Ok) and replies[3].result is True
assert isinstance(replies[4], Error) and replies[4].code == 1, replies[4]
assert isinstance(replies[5], Error) and replies[5].code == -32601, replies[5]
print("ok pipelined", order)
