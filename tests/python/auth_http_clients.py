"""Basic and Bearer on JSON-RPC over HTTP with `requests` and jsonrpclib-pelix, against
`rpcmux serve --auth` (tests/operations/auth_http.rs).

Usage: auth_http_clients.py HOST PORT KEYDIR   (KEYDIR holds jwt.hex, from jwt_keys.py)

The credentials file: anonymous may ping; alice (password "wonderland") is an operator
(VM.*, Host.*, echo; not VM.destroy); root (no password) may call anything; [jwt] with
the HS256 secret, audience "rpcmux-tests", issuer "https://issuer.test". Checks:
  - requests with auth=(user, pass) and with a Bearer token minted by PyJWT: served as
    alice, VM.destroy refused (-32021) and the VM still there; a wrong password is 401
    with a Basic challenge, a bad token 401 with Bearer error="invalid_token", and the
    call they carried did nothing.
  - jsonrpclib-pelix with http://alice:wonderland@host/ and with a `headers` Bearer: the
    same; a wrong password raises its TransportError 401.
Prints "ok" on success.
"""
import os
import sys
import time
import uuid

import jsonrpclib
import jwt
import requests

host, port, keydir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
URL = f"http://{host}:{port}/"
with open(os.path.join(keydir, "jwt.hex")) as f:
    SECRET = bytes.fromhex(f.read().strip().removeprefix("0x"))


def token(sub="alice", **over):
    now = int(time.time())
    # jti: a new token each time, verified afresh (each success clears this address's
    # failure count, which would otherwise lock it out after five refusals).
    claims = {"sub": sub, "aud": "rpcmux-tests", "iss": "https://issuer.test", "exp": now + 300,
              "jti": uuid.uuid4().hex}
    claims.update(over)
    return jwt.encode(claims, SECRET, algorithm="HS256")


def call(method, params=(), **kw):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
    return requests.post(URL, json=body, timeout=20, **kw)


def vms():
    return call("Host.getVMList", auth=("alice", "wonderland")).json()["result"]


def new_vm():
    return "vm-" + uuid.uuid4().hex[:8]


# --- requests ------------------------------------------------------------------------------
for label, kw in [
    ("Basic", {"auth": ("alice", "wonderland")}),
    ("Bearer", {"headers": {"Authorization": f"Bearer {token()}"}}),
]:
    vm = new_vm()
    r = call("VM.create", [vm, "n"], **kw)
    assert r.status_code == 200 and r.json().get("result", {}).get("vmId") == vm, (label, r.text)
    r = call("VM.destroy", [vm], **kw)
    assert r.json()["error"]["code"] == -32021, (label, r.text)
    assert vm in vms(), f"{label}: a forbidden VM.destroy ran"

for label, kw, scheme in [
    ("wrong password", {"auth": ("alice", "nope")}, "Basic"),
    ("bad token", {"headers": {"Authorization": f"Bearer {token(aud='elsewhere')}"}}, "Bearer"),
]:
    vm = new_vm()
    r = call("VM.create", [vm, "n"], **kw)
    assert r.status_code == 401, (label, r.status_code, r.text)
    challenge = r.headers.get("WWW-Authenticate", "")
    assert challenge.startswith('Basic realm="rpcmux"'), (label, challenge)
    if scheme == "Bearer":
        assert 'Bearer realm="rpcmux", error="invalid_token"' in challenge, (label, challenge)
    assert "nope" not in r.text
    assert vm not in vms(), f"{label}: the refused VM.create ran"

# A token's subject is the principal whatever else is sent: root's token may destroy.
vm = new_vm()
call("VM.create", [vm, "n"], auth=("alice", "wonderland"))
r = call("VM.destroy", [vm], headers={"Authorization": f"Bearer {token('root')}"})
assert "error" not in r.json(), r.text
assert vm not in vms(), "root's VM.destroy did nothing"

# --- jsonrpclib-pelix ---------------------------------------------------------------------
basic = jsonrpclib.ServerProxy(f"http://alice:wonderland@{host}:{port}/")
bearer = jsonrpclib.ServerProxy(URL, headers={"Authorization": f"Bearer {token()}"})
for label, proxy in [("Basic", basic), ("Bearer", bearer)]:
    vm = new_vm()
    assert proxy.VM.create(vm, "n")["vmId"] == vm, label
    try:
        proxy.VM.destroy(vm)
        raise AssertionError(f"{label}: alice's VM.destroy was served")
    except jsonrpclib.jsonrpc.ProtocolError as e:
        code, message = e.args[0]
        assert code == -32021 and "alice" in message, (label, e.args)
    assert vm in proxy.Host.getVMList(), f"{label}: a forbidden VM.destroy ran"

anon = jsonrpclib.ServerProxy(URL)
assert anon.ping() is True
try:
    anon.VM.create(new_vm(), "n")
    raise AssertionError("an anonymous VM.create was served")
except jsonrpclib.jsonrpc.ProtocolError as e:
    assert e.args[0][0] == -32020, e.args

for label, proxy in [
    ("wrong password", jsonrpclib.ServerProxy(f"http://alice:nope@{host}:{port}/")),
    ("expired token", jsonrpclib.ServerProxy(
        URL, headers={"Authorization": f"Bearer {token(exp=int(time.time()) - 600)}"})),
]:
    vm = new_vm()
    try:
        proxy.VM.create(vm, "n")
        raise AssertionError(f"{label}: served")
    except jsonrpclib.jsonrpc.TransportError as e:
        _, status, _, headers = e.args
        assert status == 401, (label, e.args)
        challenges = headers.get_all("WWW-Authenticate")
        assert 'Basic realm="rpcmux", charset="UTF-8"' in challenges, (label, challenges)
        if label == "expired token":
            assert 'Bearer realm="rpcmux", error="invalid_token"' in challenges, challenges
    assert vm not in vms(), f"{label}: the refused VM.create ran"

print("ok")
