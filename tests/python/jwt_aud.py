"""`aud` against a server whose `[jwt]` names no audience (RFC 7519 §4.1.3): PyJWT mints
HS256 tokens with the server's secret; one without `aud` is served, one for another
service (`aud` a string or a list) is refused over HTTP Bearer (401) and `rpc.login` on
raw TCP (-32022).

Usage: jwt_aud.py HOST PORT SECRET_HEX
Prints "ok" last when every case behaved.
"""

import json
import socket
import sys
import time

import jwt
import requests

HOST, PORT, SECRET = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])


def mint(**extra):
    now = int(time.time())
    return jwt.encode({"sub": "alice", "iat": now, "exp": now + 300, **extra}, SECRET, "HS256")


def bearer(token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["hi"]}
    r = requests.post(
        f"http://{HOST}:{PORT}/",
        json=body,
        headers={"Authorization": f"Bearer {token}", "Connection": "close"},
        timeout=20,
    )
    return r.status_code


def rpc_login(token):
    with socket.create_connection((HOST, PORT), timeout=20) as s:
        line = {"jsonrpc": "2.0", "id": 1, "method": "rpc.login", "params": {"token": token}}
        s.sendall(json.dumps(line).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            d = s.recv(65536)
            if not d:
                break
            reply += d
    return json.loads(reply)


good = mint()
assert bearer(good) == 200, "a token without aud"
assert rpc_login(good).get("result", {}).get("principal") == "alice", rpc_login(good)
for label, token in [
    ("aud for another service", mint(aud="billing-service")),
    ("aud as a list", mint(aud=["billing-service", "rpcmux"])),
]:
    status = bearer(token)
    assert status == 401, (label, status)
    reply = rpc_login(token)
    assert reply.get("error", {}).get("code") == -32022, (label, reply)
print("ok")
