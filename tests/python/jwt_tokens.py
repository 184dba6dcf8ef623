"""JWTs minted by PyJWT (an implementation independent of the server's) against
`rpcmux serve --auth` (tests/operations/auth_tokens.rs).

Usage: jwt_tokens.py HOST PORT KIND KEYDIR   (KIND: hs256, rs256, es256, eddsa; KEYDIR
from jwt_keys.py)

The server's credentials file: anonymous may ping; alice is an operator (VM.*, Host.*,
echo, not VM.destroy); root may call anything and has no password; [jwt] with the key,
audience "rpcmux-tests", issuer "https://issuer.test", leeway 60 s. Each token goes
over three paths: JSON-RPC over HTTP with `requests` (Authorization: Bearer),
xmlrpc.client (its Transport's extra headers) and stomp.py (CONNECT passcode).
  - valid: served; `sub` is the principal: alice's VM.destroy is refused and the VM
    stays, root's runs; a subject not in the file has only anonymous's verbs; the
    STOMP `login` header does not override `sub`.
  - refused, each on every path: expired, not yet valid (nbf), wrong audience, no
    audience, wrong issuer, no exp, `alg: none`, signed by another key, a payload
    swapped under a valid signature, and for public keys algorithm confusion (HS256
    with the public key PEM as the HMAC secret). HTTP answers 401 with
    `WWW-Authenticate: Bearer ... error="invalid_token"`, STOMP an ERROR frame; the
    refused call (VM.create) created nothing, as a fresh valid token then sees.
Prints "ok KIND" on success.
"""
import base64
import hashlib
import hmac
import json
import os
import queue
import sys
import threading
import time
import uuid
import xmlrpc.client

import jwt
import requests
import stomp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

host, port, kind, keydir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
URL = f"http://{host}:{port}/"
AUD, ISS = "rpcmux-tests", "https://issuer.test"
TIMEOUT = 20
REQ, RESP = "jms.topic.vdsm_requests", "jms.topic.vdsm_responses"


def watchdog():
    print(f"timed out after {TIMEOUT * 10}s", file=sys.stderr, flush=True)
    os._exit(3)


# stomp.py waits forever for a frame that never comes: bound the whole run.
timer = threading.Timer(TIMEOUT * 10, watchdog)
timer.daemon = True
timer.start()


def read(name):
    with open(os.path.join(keydir, name), "rb") as f:
        return f.read()


if kind == "hs256":
    ALG = "HS256"
    KEY = bytes.fromhex(read("jwt.hex").decode().strip().removeprefix("0x"))
    OTHER = os.urandom(32)
    PUBLIC_PEM = None
else:
    ALG = {"rs256": "RS256", "es256": "ES256", "eddsa": "EdDSA"}[kind]
    KEY = serialization.load_pem_private_key(read("private.pem"), password=None)
    OTHER = {
        "rs256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "es256": lambda: ec.generate_private_key(ec.SECP256R1()),
        "eddsa": ed25519.Ed25519PrivateKey.generate,
    }[kind]()
    PUBLIC_PEM = read("public.pem")


def claims(sub="alice", **over):
    now = int(time.time())
    # jti: every token is new, so none is answered from the server's cache of
    # recent successes, and each success clears the failure count of this address
    # (the throttle would otherwise turn the refusals after the fifth into 429s).
    c = {"sub": sub, "aud": AUD, "iss": ISS, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


def mint(sub="alice", key=None, alg=None, **over):
    return jwt.encode(claims(sub, **over), KEY if key is None else key, algorithm=alg or ALG)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hs256_by_hand(secret, payload):
    """An HS256 token made without PyJWT, which will not take a PEM as an HMAC secret."""
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(payload).encode())
    sig = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


# --- the three paths ---------------------------------------------------------------------

def http_call(token, method, params=()):
    """JSON-RPC over HTTP with requests; a new connection each time (no keep-alive memo)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
    return requests.post(
        URL,
        json=body,
        headers={"Authorization": f"Bearer {token}", "Connection": "close"},
        timeout=TIMEOUT,
    )


def xmlrpc_proxy(token):
    transport = xmlrpc.client.Transport(headers=[("Authorization", f"Bearer {token}")])
    return xmlrpc.client.ServerProxy(URL + "RPC2", transport=transport)


class Inbox(stomp.ConnectionListener):
    def __init__(self):
        self.messages = queue.Queue()
        self.errors = queue.Queue()

    def on_message(self, frame):
        self.messages.put(json.loads(frame.body))

    def on_error(self, frame):
        self.errors.put(frame.body)


def stomp_session(token, login="root"):
    """stomp.py connected with `token` as its passcode (and a `login` it should ignore)."""
    conn = stomp.Connection12([(host, port)], heartbeats=(0, 0))
    inbox = Inbox()
    conn.set_listener("i", inbox)
    conn.connect(login, token, wait=True)
    conn.subscribe(RESP, id="1")
    return conn, inbox


def stomp_call(conn, inbox, method, params=()):
    rid = uuid.uuid4().hex
    conn.send(REQ, json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": list(params)}))
    reply = inbox.messages.get(timeout=TIMEOUT)
    assert reply["id"] == rid, reply
    return reply


# --- what the server did ------------------------------------------------------------------

def vms():
    """The VMs there are, asked with a fresh valid token."""
    r = http_call(mint("root"), "Host.getVMList")
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()["result"]


def served(token, label):
    """`token` is served on each path, as its `sub` (alice): the operator's rules hold."""
    vm = "vm-" + uuid.uuid4().hex[:8]
    r = http_call(token, "VM.create", [vm, "n"])
    assert r.status_code == 200 and "error" not in r.json(), (label, r.status_code, r.text)
    r = http_call(token, "VM.destroy", [vm])
    assert r.json()["error"]["code"] == -32021, (label, r.text)
    assert "alice" in r.json()["error"]["message"], (label, r.text)
    p = xmlrpc_proxy(token)
    assert vm in p.Host.getVMList(), label
    try:
        p.VM.destroy(vm)
        raise AssertionError(f"{label}: alice's VM.destroy over XML-RPC ran")
    except xmlrpc.client.Fault as e:
        assert e.faultCode == -32021, (label, e.faultCode, e.faultString)
    assert vm in vms(), f"{label}: a forbidden VM.destroy ran"
    return vm


def refused(token, label):
    """`token` is refused on every path, and the call it carried did nothing."""
    vm = "vm-" + uuid.uuid4().hex[:8]
    r = http_call(token, "VM.create", [vm, "n"])
    assert r.status_code == 401, (label, r.status_code, r.text)
    challenge = r.headers.get("WWW-Authenticate", "")
    assert "Bearer" in challenge and 'error="invalid_token"' in challenge, (label, challenge)
    assert token not in r.text, f"{label}: the token echoed"
    assert vm not in vms(), f"{label}: VM.create ran over HTTP"

    try:
        xmlrpc_proxy(token).VM.create(vm, "n")
        raise AssertionError(f"{label}: served over XML-RPC")
    except xmlrpc.client.ProtocolError as e:
        # (xmlrpc.client keeps one header of each name: the challenges are checked above.)
        assert e.errcode == 401, (label, e.errcode)
    assert vm not in vms(), f"{label}: VM.create ran over XML-RPC"

    # STOMP: the refused CONNECT, with a SEND right behind it before any answer.
    conn = stomp.Connection12([(host, port)], heartbeats=(0, 0))
    inbox = Inbox()
    conn.set_listener("i", inbox)
    conn.connect("root", token, wait=False)
    try:
        conn.send(REQ, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "VM.create", "params": [vm, "n"]}))
    except (stomp.exception.NotConnectedException, OSError):
        pass  # the server had answered ERROR and closed already
    body = inbox.errors.get(timeout=TIMEOUT)
    assert "login failed" in body, (label, body)
    assert token not in body, f"{label}: the token echoed over STOMP"
    assert inbox.messages.empty(), (label, inbox.messages.get())
    assert vm not in vms(), f"{label}: VM.create ran over STOMP"


# --- valid tokens -------------------------------------------------------------------------

served(mint(), "alice")
served(mint(aud=["someone-else", AUD]), "aud as a list naming us")
now = int(time.time())
served(mint(exp=now - 20), "expired 20 s ago, within the 60 s leeway")
served(mint(nbf=now + 20), "valid in 20 s, within the leeway")
if kind == "rs256":
    served(mint(alg="PS256"), "PS256 with the RSA key")

# root may destroy: VM.destroy does something, so alice's refusals above mean something.
vm = served(mint(), "alice again")
r = http_call(mint("root"), "VM.destroy", [vm])
assert r.status_code == 200 and "error" not in r.json(), r.text
assert vm not in vms(), "root's VM.destroy did nothing"

# A subject the file does not name: only what anonymous may.
stranger = mint("mallory")
r = http_call(stranger, "ping")
assert r.json().get("result") is True, r.text
vm = "vm-" + uuid.uuid4().hex[:8]
r = http_call(stranger, "VM.create", [vm, "n"])
assert r.json()["error"]["code"] == -32021, r.text
assert vm not in vms()

# STOMP: the passcode is the token, its sub the principal, whatever `login` says.
conn, inbox = stomp_session(mint(), login="root")
assert stomp_call(conn, inbox, "echo", ["over stomp"]).get("result") == "over stomp"
vm = "vm-" + uuid.uuid4().hex[:8]
assert "error" not in stomp_call(conn, inbox, "VM.create", [vm, "n"])
r = stomp_call(conn, inbox, "VM.destroy", [vm])
assert r["error"]["code"] == -32021 and "alice" in r["error"]["message"], r
conn.disconnect()
assert vm in vms(), "alice's VM.destroy ran over STOMP"
conn, inbox = stomp_session(mint("root"), login="alice")
assert "error" not in stomp_call(conn, inbox, "VM.destroy", [vm])
conn.disconnect()
assert vm not in vms(), "root's VM.destroy over STOMP did nothing"

# --- refused tokens -----------------------------------------------------------------------

now = int(time.time())
refused(mint(exp=now - 600), "expired")
refused(mint(nbf=now + 600), "not yet valid")
refused(mint(aud="someone-else"), "wrong audience")
refused(mint(aud=None), "no audience")
refused(mint(iss="https://elsewhere.test"), "wrong issuer")
refused(mint(exp=None), "no exp")
refused(mint(sub=None), "no sub")
refused(jwt.encode(claims("root"), None, algorithm="none"), "alg: none")
refused(mint("root", key=OTHER), "signed by another key")
# A valid signature over alice's claims, under root's claims.
head, _, sig = mint("alice").split(".")
swapped = b64(json.dumps(claims("root")).encode())
refused(f"{head}.{swapped}.{sig}", "payload swapped under a valid signature")
if PUBLIC_PEM is not None:
    # The classic confusion: the public key, which anyone has, as an HMAC secret.
    refused(hs256_by_hand(PUBLIC_PEM, claims("root")), "HS256 keyed with the public key PEM")
    refused(hs256_by_hand(PUBLIC_PEM.strip(), claims("root")), "HS256 keyed with the trimmed PEM")
else:
    # An HS256 server given an RS256 token: the key decides the algorithm, not the header.
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused(mint("root", key=rsa_key, alg="RS256"), "RS256 token to an HS256 key")

print(f"ok {kind}")
