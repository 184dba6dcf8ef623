"""XML-RPC with Python's stdlib xmlrpc.client against rpcmux: every type, faults,
MultiCall, introspection, one kept-alive connection. Usage: xmlrpc_client.py URL."""
import datetime
import http.client
import sys
import xmlrpc.client

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

url = sys.argv[1]
checks = 0


def check(name, got, want):
    global checks
    assert got == want, f"{name}: got {got!r}, want {want!r}"
    checks += 1


# Count TCP connections the client opens: xmlrpc.client keeps one alive only if the server
# answers HTTP/1.1 without closing.
connects = 0
_orig_connect = http.client.HTTPConnection.connect


def counting_connect(self):
    global connects
    connects += 1
    _orig_connect(self)


http.client.HTTPConnection.connect = counting_connect

s = xmlrpc.client.ServerProxy(url, allow_none=True, use_builtin_types=True)
check("ping", s.ping(), True)
check("echo MusicEntry", s.echo(MUSIC_ENTRY), MUSIC_ENTRY)
when = datetime.datetime(2002, 1, 26, 19, 30, 0)
every = {
    "int": 42, "negative": -7, "max32": 2**31 - 1, "min32": -(2**31),
    "bool": True, "false": False, "string": "héllo <&> \"quotes\" 'x' \u2603",
    "empty": "", "double": 3.25, "tiny": 1e-300, "nil": None, "bytes": b"\x00\x01\xff binary",
    "when": when, "array": [1, "two", [3.0, None]], "struct": {"nested": {"k": [True]}},
    "multiline": "line1\nline2\tline3",  # a raw CR is normalised away by XML itself
}
check("echo every type", s.echo(every), every)
check("echo nil", s.echo(None), None)
check("echo empty array", s.echo([]), [])
check("echo empty struct", s.echo({}), {})
check("big int from server comes as i8", s.VM.create("vm-x", "n", 2**31 - 1)["memSize"], 2**31 - 1)
check("sleep", s.sleep(1), 1)

# DateTime and Binary wrappers when use_builtin_types is off
old = xmlrpc.client.ServerProxy(url, allow_none=True)
got = old.echo(xmlrpc.client.DateTime(when))
check("DateTime wrapper", (type(got), got.value), (xmlrpc.client.DateTime, "20020126T19:30:00"))
got = old.echo(xmlrpc.client.Binary(b"\x00abc"))
check("Binary wrapper", (type(got), got.data), (xmlrpc.client.Binary, b"\x00abc"))

for call, code in [
    (lambda: s.nope(), -32601),
    (lambda: s.echo(), -32602),
    (lambda: s.sleep("x"), -32602),
    (lambda: s.VM.getStats("missing"), 1),
    (lambda: s.VM.create("vm-x", "n", 1), 4),
]:
    try:
        call()
        raise AssertionError(f"expected fault {code}")
    except xmlrpc.client.Fault as f:
        check(f"fault {code}", f.faultCode, code)
        assert f.faultString, "fault has a message"

m = xmlrpc.client.MultiCall(s)
m.ping()
m.nope()
m.echo(MUSIC_ENTRY)
m.sleep(10)
results = m()
check("multicall 0", results[0], True)
try:
    results[1]
    raise AssertionError("multicall fault not raised")
except xmlrpc.client.Fault as f:
    check("multicall fault in place", f.faultCode, -32601)
check("multicall 2", results[2], MUSIC_ENTRY)
check("multicall 3", results[3], 10)

methods = s.system.listMethods()
for name in ["ping", "echo", "VM.create", "system.multicall", "system.methodHelp"]:
    check(f"listMethods has {name}", name in methods, True)
check("methodHelp", "Sleep" in s.system.methodHelp("sleep"), True)
check("methodSignature", s.system.methodSignature("VM.create"), [["struct", "string", "string", "int"]])

check("one kept-alive connection per ServerProxy (two proxies)", connects, 2)
print(f"ok {checks} checks")
