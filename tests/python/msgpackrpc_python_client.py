"""msgpack-rpc-python 0.4.1 (its own venv) against rpcmux. Usage: HOST PORT."""
import sys

import msgpackrpc

host, port = sys.argv[1], int(sys.argv[2])
c = msgpackrpc.Client(msgpackrpc.Address(host, port), timeout=10, unpack_encoding="utf-8")
assert c.call("ping") is True
entry = ["MusicEntry", {"city": "Sudbury", "key": 325629, "performers": ["An Evening with Karen Savoca"]}]
assert c.call("echo", entry) == entry, c.call("echo", entry)
futures = [c.call_async("sleep", 20) for _ in range(5)] + [c.call_async("echo", i) for i in range(5)]
assert [f.get() for f in futures] == [20] * 5 + list(range(5))
c.notify("ping")
try:
    c.call("VM.getStats", "missing")
    raise AssertionError("no error raised")
except msgpackrpc.error.RPCError as e:
    err = e.args[0]
    assert err[0] == 1 and "does not exist" in str(err[1]), err
try:
    c.call("nope")
    raise AssertionError("no error raised")
except msgpackrpc.error.RPCError as e:
    assert e.args[0][0] == -32601, e.args
assert c.call("ping") is True, "connection still usable after errors"
c.close()
print("ok msgpack-rpc-python")
