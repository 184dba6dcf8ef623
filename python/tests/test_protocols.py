"""One drop-in server, every protocol's real client: the same Python functions, the same
values and the same faults over JSON-RPC 2.0 (jsonrpclib-pelix), JSON-RPC 1.0
(python-bitcoinrpc), MessagePack-RPC (aio-msgpack-rpc) and STOMP (stomp.py)."""

import asyncio
import decimal
import json
import queue
import xmlrpc.client

import aio_msgpack_rpc
import jsonrpclib
import pytest
import stomp
from aio_msgpack_rpc.error import RPCResponseError
from bitcoinrpc.authproxy import AuthServiceProxy, JSONRPCException
from payload import MUSIC_ENTRY

from conftest import url
from rpcmux.server import SimpleXMLRPCServer

TIMEOUT = 20


@pytest.fixture
def server(running):
    s = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False, allow_none=True)

    def echo(x):
        return x

    def fault():
        raise xmlrpc.client.Fault(42, "the answer")

    def boom():
        raise KeyError("k")

    def big():
        return 2**40

    for f in (echo, fault, boom, big):
        s.register_function(f)
    return running(s)


def test_jsonrpclib_pelix(server):
    p = jsonrpclib.ServerProxy(url(server, "/"))
    assert p.echo(MUSIC_ENTRY) == MUSIC_ENTRY
    assert p.echo(None) is None
    # 64 bits outside XML-RPC: JSON carries them.
    assert p.big() == 2**40
    with pytest.raises(jsonrpclib.ProtocolError) as e:
        p.fault()
    assert e.value.args[0][:2] == (42, "the answer")
    with pytest.raises(jsonrpclib.ProtocolError) as e:
        p.boom()
    assert e.value.args[0][:2] == (1, "<class 'KeyError'>:'k'")


def test_python_bitcoinrpc_json_rpc_1_0(server):
    # It always sends Basic credentials (the server without auth ignores them).
    host, port = server.server_address
    p = AuthServiceProxy("http://user:pass@%s:%d/" % (host, port))
    assert p.echo({"n": 1.5, "s": "x"}) == {"n": decimal.Decimal("1.5"), "s": "x"}
    with pytest.raises(JSONRPCException) as e:
        p.fault()
    assert e.value.error["code"] == 42 and e.value.error["message"] == "the answer"


def test_msgpack_rpc(server):
    async def calls():
        reader, writer = await asyncio.open_connection(*server.server_address)
        c = aio_msgpack_rpc.Client(reader, writer, response_timeout=TIMEOUT)
        assert await c.call("echo", MUSIC_ENTRY) == MUSIC_ENTRY
        assert await c.call("echo", b"\x00\xff") == b"\x00\xff"
        assert await c.call("big") == 2**40
        with pytest.raises(RPCResponseError) as e:
            await c.call("fault")
        assert e.value.args[0][:2] == [42, "the answer"]
        with pytest.raises(RPCResponseError) as e:
            await c.call("boom")
        assert e.value.args[0][0] == 1
        c.close()

    asyncio.run(calls())


class Inbox(stomp.ConnectionListener):
    def __init__(self):
        self.messages = queue.Queue()

    def on_message(self, frame):
        self.messages.put(frame)


def test_stomp(server):
    conn = stomp.Connection12([server.server_address], heartbeats=(0, 0), vhost="localhost")
    inbox = Inbox()
    conn.set_listener("", inbox)
    conn.connect(wait=True)
    try:
        conn.subscribe(destination="jms.topic.vdsm_responses", id="r", ack="auto")
        for i, method in enumerate(["echo", "fault"]):
            body = {"jsonrpc": "2.0", "method": method, "params": [MUSIC_ENTRY] if method == "echo" else [], "id": i}
            conn.send(destination="jms.topic.vdsm_requests", body=json.dumps(body),
                      headers={"reply-to": "jms.topic.vdsm_responses"})
            reply = json.loads(inbox.messages.get(timeout=TIMEOUT).body)
            if method == "echo":
                assert reply["result"] == MUSIC_ENTRY, reply
            else:
                assert reply["error"]["code"] == 42 and reply["error"]["message"] == "the answer", reply
    finally:
        conn.disconnect()
