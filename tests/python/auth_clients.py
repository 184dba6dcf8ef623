"""Authentication with stock clients against `rpcmux serve --auth` (tests/operations/auth.rs).

Usage: auth_clients.py HOST PORT

The credentials file the test writes: anonymous may call ping; alice (password
"wonderland") is an operator: VM.* and Host.* and echo, but not VM.destroy; she sees
|virt| events. Checks, each by what the server did, not only by the error:
  - xmlrpc.client with http://alice:wonderland@host/ (Basic auth, as every stock XML-RPC
    client sends it): allowed calls answer; VM.destroy is a Fault -32021 and the VM is
    still there; system.listMethods shows no VM.destroy.
  - a wrong password: ProtocolError 401 with a WWW-Authenticate challenge.
  - no credentials: ping answers, VM.create is a Fault -32020 and created nothing.
  - system.multicall smuggling VM.destroy: that member fails, the VM stays.
  - stomp.py CONNECT with login/passcode: calls answer; a wrong passcode gets ERROR.
Prints "ok" on success.
"""
import json
import queue
import sys
import threading
import uuid
import xmlrpc.client

import stomp

host, port = sys.argv[1], int(sys.argv[2])
base = f"http://{host}:{port}/"
alice = xmlrpc.client.ServerProxy(f"http://alice:wonderland@{host}:{port}/RPC2")
anon = xmlrpc.client.ServerProxy(base)


def fault(f, code):
    try:
        f()
    except xmlrpc.client.Fault as e:
        assert e.faultCode == code, (e.faultCode, e.faultString)
        return e.faultString
    raise AssertionError(f"no fault {code}")


vm = "vm-" + uuid.uuid4().hex[:8]
alice.VM.create(vm, "n")
assert vm in alice.Host.getVMList()
msg = fault(lambda: alice.VM.destroy(vm), -32021)
assert "alice" in msg and "VM.destroy" in msg, msg
assert vm in alice.Host.getVMList(), "a forbidden VM.destroy ran"
methods = alice.system.listMethods()
assert "VM.create" in methods and "VM.destroy" not in methods, methods
assert "Host.publishEvent" in methods

# system.multicall carrying a forbidden call: it alone fails, nothing destroyed.
mc = xmlrpc.client.MultiCall(alice)
mc.echo("x")
mc.VM.destroy(vm)
results = mc()
assert results[0] == "x"
fault(lambda: results[1], -32021)
assert vm in alice.Host.getVMList(), "VM.destroy ran inside system.multicall"

# A wrong password: HTTP 401 with a Basic challenge, nothing served.
try:
    xmlrpc.client.ServerProxy(f"http://alice:nope@{host}:{port}/").VM.destroy(vm)
    raise AssertionError("a wrong password was served")
except xmlrpc.client.ProtocolError as e:
    assert e.errcode == 401, e.errcode
    challenge = {k.lower(): v for k, v in dict(e.headers).items()}.get("www-authenticate", "")
    assert challenge.startswith("Basic"), dict(e.headers)
assert vm in alice.Host.getVMList()

# No credentials: what `anonymous` lists answers, the rest is -32020.
assert anon.ping() is True
vm2 = "vm-" + uuid.uuid4().hex[:8]
fault(lambda: anon.VM.create(vm2, "n"), -32020)
assert vm2 not in alice.Host.getVMList(), "an anonymous VM.create ran"
# Introspection is a verb like the others: not in `anonymous`, so not for anonymous callers.
fault(lambda: anon.system.listMethods(), -32020)

# stomp.py with login/passcode.
REQ, RESP = "jms.topic.vdsm_requests", "jms.topic.vdsm_responses"
replies = queue.Queue()


class L(stomp.ConnectionListener):
    def on_message(self, frame):
        replies.put(json.loads(frame.body))

    def on_error(self, frame):
        replies.put(("ERROR", frame.body))


conn = stomp.Connection12([(host, port)], heartbeats=(0, 0))
conn.set_listener("l", L())
conn.connect("alice", "wonderland", wait=True)
conn.subscribe(RESP, id="1")
conn.send(REQ, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": ["over stomp"]}))
r = replies.get(timeout=20)
assert r.get("result") == "over stomp", r
conn.send(REQ, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "VM.destroy", "params": [vm]}))
r = replies.get(timeout=20)
assert r["error"]["code"] == -32021, r
conn.disconnect()
assert vm in alice.Host.getVMList(), "VM.destroy ran over STOMP"

bad = stomp.Connection12([(host, port)], heartbeats=(0, 0))
errors = queue.Queue()


class E(stomp.ConnectionListener):
    def on_error(self, frame):
        errors.put(frame.body)


bad.set_listener("e", E())
done = threading.Event()
threading.Thread(target=lambda: (bad.connect("alice", "nope", wait=False), done.set()), daemon=True).start()
body = errors.get(timeout=20)
assert "login failed" in body, body
print("ok")
