"""aio-msgpack-rpc 0.2.0 and pynvim 0.6.0's tcp_session against rpcmux. Usage: HOST PORT."""
import asyncio
import datetime
import sys

import aio_msgpack_rpc
from aio_msgpack_rpc.error import RPCResponseError
from pynvim.msgpack_rpc import tcp_session

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

host, port = sys.argv[1], int(sys.argv[2])


async def aio():
    reader, writer = await asyncio.open_connection(host, port)
    c = aio_msgpack_rpc.Client(reader, writer, response_timeout=10)
    assert await c.call("echo", MUSIC_ENTRY) == MUSIC_ENTRY
    when = datetime.datetime(2002, 1, 26, 19, 30, tzinfo=datetime.timezone.utc)
    import msgpack
    ts = msgpack.Timestamp.from_datetime(when)
    assert await c.call("echo", ts) == ts, "timestamp ext round trip"
    assert await c.call("echo", b"\x00\xffbin") == b"\x00\xffbin"
    assert await c.call("echo", 2**63 - 1) == 2**63 - 1
    # out of order: a slow call overtaken by fast ones, all on one connection
    slow = asyncio.ensure_future(c.call("sleep", 300))
    fast = await asyncio.gather(*(c.call("echo", i) for i in range(50)))
    assert fast == list(range(50)) and not slow.done(), "fast calls answered before the slow one"
    assert await slow == 300
    try:
        await c.call("VM.destroy", "missing")
        raise AssertionError("no error")
    except RPCResponseError as e:
        assert e.args[0][0] == 1, e.args
    await c.notify("ping")
    c.close()


asyncio.run(aio())
print("ok aio-msgpack-rpc")

# pynvim first sends a notification whose method name is bin ("nvim_set_client_info"),
# which the server does not know: it must be ignored, and the session go on.
s = tcp_session(host, port)
assert s.request("echo", MUSIC_ENTRY) == MUSIC_ENTRY
assert s.request("Host.getVMList") is not None
try:
    s.request("sleep", "x")
    raise AssertionError("no error")
except Exception as e:  # pynvim raises Exception(err[1]): the message
    assert "expected int" in str(e), str(e)
# events: subscribe, make one, read it as a notification
sub = s.request("subscribe", "|virt|")
assert isinstance(sub, int)
s.request("VM.create", "pyn-vm", "n", 64)
msg = s.next_message()
assert msg.type == "notification" and msg.name == "|virt|VM_status|pyn-vm", msg
assert msg.args[0]["pyn-vm"]["status"] == "Up", msg
s.close()
print("ok pynvim")
