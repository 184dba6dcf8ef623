"""JSON-RPC 2.0 over WebSocket with the `websockets` library (its asyncio client).

Usage: websocket_client.py URL [CA_FILE]   (ws://... or wss://...; CA_FILE for wss)
Checks: pipelined calls answered out of order, exact numbers, a batch, a notification
(no reply), a subscription receiving the `VM.create` event (before the call's reply),
a binary message answered with -32700 while the session goes on, and the subprotocol.
"""
import asyncio
import json
import ssl
import sys

import websockets

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

url = sys.argv[1]
ctx = None
if url.startswith("wss://"):
    ctx = ssl.create_default_context(cafile=sys.argv[2])


def req(method, params=None, id=None):
    r = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        r["params"] = params
    if id is not None:
        r["id"] = id
    return json.dumps(r)


async def recv_json(ws):
    msg = await asyncio.wait_for(ws.recv(), 20)
    assert isinstance(msg, str), f"a text message expected, got {msg!r}"
    return json.loads(msg)


async def main():
    async with websockets.connect(url, ssl=ctx, subprotocols=["jsonrpc"], max_size=2**24) as ws:
        assert ws.subprotocol == "jsonrpc", ws.subprotocol
        # Pipelined: the slow call is overtaken.
        big = 2**53 + 1
        await ws.send(req("sleep", [300], 1))
        await ws.send(req("echo", [MUSIC_ENTRY], 2))
        await ws.send(req("echo", [[big, -0.1, 1e300, "\u00e9\U0001f600"]], 3))
        await ws.send(req("nope", None, 4))
        got = {}
        order = []
        for _ in range(4):
            r = await recv_json(ws)
            order.append(r["id"])
            got[r["id"]] = r
        assert order[-1] == 1, f"sleep(300) should be answered last: {order}"
        assert got[1]["result"] == 300
        assert got[2]["result"] == MUSIC_ENTRY, got[2]
        assert got[3]["result"] == [big, -0.1, 1e300, "\u00e9\U0001f600"], got[3]
        assert got[4]["error"]["code"] == -32601, got[4]

        # A batch: one message, one reply message with every member, in order.
        await ws.send("[" + ",".join([req("ping", None, 10), req("echo", ["x"], 11), req("ping")]) + "]")
        batch = await recv_json(ws)
        assert [m["id"] for m in batch] == [10, 11], batch
        assert batch[1]["result"] == "x"

        # A notification gets no reply: the next message is the call's after it.
        await ws.send(req("echo", ["note"]))
        await ws.send(req("ping", None, 20))
        r = await recv_json(ws)
        assert r.get("id") == 20 and r["result"] is True, r

        # A binary message: -32700, and the session goes on.
        await ws.send(b'{"jsonrpc":"2.0","method":"ping","id":30}')
        r = await recv_json(ws)
        assert r["error"]["code"] == -32700 and r["id"] is None, r
        await ws.send(req("ping", None, 31))
        assert (await recv_json(ws))["id"] == 31

        # Events: subscribe, create a VM, the event arrives (before the call's reply).
        await ws.send(req("subscribe", ["|virt|"], 40))
        r = await recv_json(ws)
        assert isinstance(r["result"], int), r
        await ws.send(req("VM.create", {"vmID": "ws-vm", "name": "n", "memSize": 256}, 41))
        ev = await recv_json(ws)
        assert ev["method"] == "|virt|VM_status|ws-vm", ev
        assert ev["params"]["ws-vm"]["status"] == "Up", ev
        assert "id" not in ev, ev
        r = await recv_json(ws)
        assert r["id"] == 41 and r["result"]["vmId"] == "ws-vm", r
    print("ok websocket", order)


asyncio.run(main())
