"""JSON-RPC over HTTP with the real clients jsonrpclib-pelix and tinyrpc.

Usage: jsonrpc_http_clients.py URL. Asserts round trips and error mapping; prints one
line per check so the Rust test can see they all ran.
"""
import sys

import jsonrpclib
from tinyrpc import RPCClient
from tinyrpc.protocols.jsonrpc import JSONRPCProtocol
from tinyrpc.transports.http import HttpPostClientTransport

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

url = sys.argv[1]


def check(name, got, want):
    assert got == want, f"{name}: got {got!r}, want {want!r}"
    print("ok", name)


# jsonrpclib-pelix: Content-Type application/json-rpc, UUID string ids, no params key for
# no-argument calls.
s = jsonrpclib.ServerProxy(url)
check("jsonrpclib ping", s.ping(), True)
check("jsonrpclib echo MusicEntry", s.echo(MUSIC_ENTRY), MUSIC_ENTRY)
check("jsonrpclib namespaced create", s.VM.create("vm-jl", "web", 2048)["vmId"], "vm-jl")
s._notify.ping()  # a notification: must not raise (jsonrpclib wants HTTP 200)
print("ok jsonrpclib notification")
check("jsonrpclib named params", s.VM.getStats(vmID="vm-jl")["memSize"], 2048)
try:
    s.VM.create("vm-jl", "web", 2048)
    raise AssertionError("duplicate VM.create did not fail")
except jsonrpclib.jsonrpc.AppError as e:
    check("jsonrpclib domain error code", e.args[0][0], 4)
try:
    s.no.such.verb()
    raise AssertionError("unknown verb did not fail")
except jsonrpclib.jsonrpc.ProtocolError as e:
    check("jsonrpclib method not found", e.args[0][0], -32601)

# tinyrpc: no Content-Type at all, a new connection per call.
c = RPCClient(JSONRPCProtocol(), HttpPostClientTransport(url))
p = c.get_proxy()
check("tinyrpc echo MusicEntry", p.echo(MUSIC_ENTRY), MUSIC_ENTRY)
check("tinyrpc sleep", p.sleep(5), 5)
check("tinyrpc list", "vm-jl" in p.list(), True)
try:
    p.sleep("x")
    raise AssertionError("bad param did not fail")
except Exception as e:  # tinyrpc raises JSONRPCError carrying the message
    check("tinyrpc invalid params message", "ms: expected int, got string" in str(e), True)
check("tinyrpc destroy", c.call("VM.destroy", ["vm-jl"], None), True)
