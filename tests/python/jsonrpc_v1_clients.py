"""JSON-RPC 1.0 clients: python-bitcoinrpc's AuthServiceProxy (Bitcoin's own Python client,
strict about 1.0's shape) and jsonrpclib-pelix with version=1.0 over HTTP; then 1.0 requests
as raw lines over TCP and as WebSocket messages (no stock 1.0 client speaks those).

Usage: jsonrpc_v1_clients.py HOST PORT. Prints one "ok NAME" line per check.
"""
import asyncio
import decimal
import json
import socket
import sys

import jsonrpclib
import jsonrpclib.history
import websockets
from bitcoinrpc.authproxy import AuthServiceProxy, JSONRPCException

host, port = sys.argv[1], int(sys.argv[2])


def check(name, got, want):
    assert got == want, f"{name}: got {got!r}, want {want!r}"
    print("ok", name)


def v1_shape(name, reply, id):
    """A 1.0 reply: result and error both present, one null, no "jsonrpc", the id echoed."""
    assert "jsonrpc" not in reply, f"{name}: {reply}"
    assert "result" in reply and "error" in reply, f"{name}: {reply}"
    assert reply["result"] is None or reply["error"] is None, f"{name}: {reply}"
    check(name, reply["id"], id)


# python-bitcoinrpc: {"version":"1.1","method","params","id"} with Basic credentials it
# always sends (the server without --auth ignores them); reads response["error"] and
# response["result"] both, and wants Content-Type application/json exactly.
btc = AuthServiceProxy(f"http://user:pass@{host}:{port}/")
check("bitcoinrpc echo", btc.echo({"n": 1.5, "s": "x"}), {"n": decimal.Decimal("1.5"), "s": "x"})
check("bitcoinrpc ping", btc.ping(), True)
check("bitcoinrpc create", btc.VM.create("vm-v1", "btc", 512)["vmId"], "vm-v1")
try:
    btc.VM.create("vm-v1", "btc", 512)
    raise AssertionError("duplicate VM.create did not fail")
except JSONRPCException as e:
    check("bitcoinrpc domain error code", e.code, 4)
try:
    btc.no_such_verb()
    raise AssertionError("unknown verb did not fail")
except JSONRPCException as e:
    check("bitcoinrpc method not found", e.code, -32601)
# batch_ sends "jsonrpc":"2.0" members yet reads response["error"] of each, as bitcoind
# (before 28.0) always sent it: rpcmux tells the client by its User-Agent.
check("bitcoinrpc batch_", btc.batch_([["echo", 1], ["ping"], ["echo", "x"]]), [1, True, "x"])
try:
    btc.batch_([["ping"], ["no_such_verb"]])
    raise AssertionError("batch with an unknown verb did not fail")
except JSONRPCException as e:
    check("bitcoinrpc batch_ error", e.code, -32601)

# jsonrpclib-pelix as a 1.0 client: no "jsonrpc", params always an array, and a
# notification is "id": null (answered with an empty 200).
h = jsonrpclib.history.History()
s = jsonrpclib.ServerProxy(f"http://{host}:{port}/", version=1.0, history=h)
check("jsonrpclib 1.0 getStats", s.VM.getStats("vm-v1")["memSize"], 512)


def last():
    """The last request and reply, as jsonrpclib's history keeps their text."""
    return json.loads(h.requests[-1]), json.loads(h.responses[-1])


req, reply = last()
check("jsonrpclib 1.0 request has no jsonrpc", "jsonrpc" in req, False)
v1_shape("jsonrpclib 1.0 reply shape", reply, req["id"])
s._notify.VM.destroy("vm-v1")
check("jsonrpclib 1.0 notification ran", "vm-v1" in s.list(), False)
try:
    s.sleep("x")
    raise AssertionError("bad param did not fail")
except jsonrpclib.jsonrpc.ProtocolError as e:
    check("jsonrpclib 1.0 invalid params", e.args[0][0], -32602)
req, reply = last()
v1_shape("jsonrpclib 1.0 error shape", reply, req["id"])

# Raw TCP: one 1.0 request per line; a null id is a notification (no line back); a batch
# mixes 1.0 and 2.0 members, each answered in its own shape; the id keeps its spelling.
with socket.create_connection((host, port)) as c:
    f = c.makefile("rwb")
    f.write(b'{"method":"echo","params":[{"k":[1,2.5]}],"id":null}\n')
    f.write(b'{"method":"echo","params":[{"k":[1,2.5]}],"id":1e2}\n')
    f.write(b'[{"method":"ping","params":[],"id":"a"},{"jsonrpc":"2.0","method":"ping","id":"b"}]\n')
    f.flush()
    line = f.readline()
    check("tcp 1.0 reply bytes", line, b'{"result":{"k":[1,2.5]},"error":null,"id":1e2}\n')
    batch = json.loads(f.readline())
    v1_shape("tcp batch 1.0 member", batch[0], "a")
    check("tcp batch 2.0 member", batch[1], {"jsonrpc": "2.0", "result": True, "id": "b"})


async def ws():
    async with websockets.connect(f"ws://{host}:{port}/") as w:
        await w.send('{"method":"nope","params":[],"id":7}')
        reply = json.loads(await w.recv())
        v1_shape("websocket 1.0 error shape", reply, 7)
        check("websocket 1.0 error code", reply["error"]["code"], -32601)
        await w.send('{"method":"echo","params":["ws"],"id":8}')
        check("websocket 1.0 result", json.loads(await w.recv()),
              {"result": "ws", "error": None, "id": 8})


asyncio.run(ws())
