"""JSON-RPC over WebSocket with an `Authorization` header on the upgrade, with the
`websockets` library, against `rpcmux serve --auth` (tests/operations/auth_http.rs).

Usage: auth_websocket.py HOST PORT KEYDIR   (KEYDIR holds jwt.hex, from jwt_keys.py)

The credentials file as in auth_http_clients.py (alice/wonderland an operator without
VM.destroy, root anything, [jwt] HS256 with audience and issuer). Checks:
  - Basic and Bearer (PyJWT) upgrades are served as alice: VM.create answers, VM.destroy
    is -32021 and the VM stays; a root token's session may destroy.
  - a wrong password and a bad token: the upgrade is refused 401 (websockets raises
    InvalidStatus) with the challenge, and no session opens.
  - no Authorization: the session opens (anonymous may ping) and VM.create is -32020.
Prints "ok" on success.
"""
import asyncio
import base64
import json
import os
import sys
import time
import uuid

import jwt
import websockets
from websockets.exceptions import InvalidStatus

host, port, keydir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
URL = f"ws://{host}:{port}/rpc"
with open(os.path.join(keydir, "jwt.hex")) as f:
    SECRET = bytes.fromhex(f.read().strip().removeprefix("0x"))


def bearer(sub="alice", **over):
    now = int(time.time())
    claims = {"sub": sub, "aud": "rpcmux-tests", "iss": "https://issuer.test", "exp": now + 300,
              "jti": uuid.uuid4().hex}
    claims.update(over)
    return "Bearer " + jwt.encode(claims, SECRET, algorithm="HS256")


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def session(authorization=None):
    headers = {"Authorization": authorization} if authorization else None
    return websockets.connect(URL, subprotocols=["jsonrpc"], additional_headers=headers, open_timeout=20)


async def call(ws, method, params=()):
    rid = uuid.uuid4().hex
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": list(params)}))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
    assert reply["id"] == rid, reply
    return reply


async def vms():
    async with session(basic("alice", "wonderland")) as ws:
        return (await call(ws, "Host.getVMList"))["result"]


async def main():
    for label, authorization in [("Basic", basic("alice", "wonderland")), ("Bearer", bearer())]:
        async with session(authorization) as ws:
            assert ws.subprotocol == "jsonrpc", ws.subprotocol
            vm = "vm-" + uuid.uuid4().hex[:8]
            r = await call(ws, "VM.create", [vm, "n"])
            assert r["result"]["vmId"] == vm, (label, r)
            r = await call(ws, "VM.destroy", [vm])
            assert r["error"]["code"] == -32021 and "alice" in r["error"]["message"], (label, r)
            assert vm in (await call(ws, "Host.getVMList"))["result"], label
        assert vm in await vms(), f"{label}: a forbidden VM.destroy ran"

    async with session(bearer("root")) as ws:
        assert "error" not in await call(ws, "VM.destroy", [vm])
    assert vm not in await vms(), "root's VM.destroy over WebSocket did nothing"

    for label, authorization, scheme in [
        ("wrong password", basic("alice", "nope"), "Basic"),
        ("expired token", bearer("root", exp=int(time.time()) - 600), "Bearer"),
        ("token signed by another key", "Bearer " + jwt.encode(
            {"sub": "root", "aud": "rpcmux-tests", "iss": "https://issuer.test",
             "exp": int(time.time()) + 300}, os.urandom(32), algorithm="HS256"), "Bearer"),
    ]:
        try:
            async with session(authorization):
                raise AssertionError(f"{label}: the upgrade was accepted")
        except InvalidStatus as e:
            assert e.response.status_code == 401, (label, e.response.status_code)
            challenges = e.response.headers.get_all("WWW-Authenticate")
            assert 'Basic realm="rpcmux", charset="UTF-8"' in challenges, (label, challenges)
            if scheme == "Bearer":
                assert 'Bearer realm="rpcmux", error="invalid_token"' in challenges, (label, challenges)
            assert b"nope" not in e.response.body, label

    async with session() as ws:
        assert (await call(ws, "ping"))["result"] is True
        vm = "vm-" + uuid.uuid4().hex[:8]
        r = await call(ws, "VM.create", [vm, "n"])
        assert r["error"]["code"] == -32020, r
    assert vm not in await vms(), "an anonymous VM.create over WebSocket ran"
    print("ok")


asyncio.run(main())
