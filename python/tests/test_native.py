"""The native API, rpcmux.Server: sync and async verbs under concurrency, deadlines,
faults, events to WebSocket subscribers, and serving from asyncio."""

import asyncio
import concurrent.futures
import json
import threading
import time

import jsonrpclib
import pytest
import websockets
from payload import MUSIC_ENTRY

import rpcmux

TIMEOUT = 20
CLIENTS = 8
CALLS = 25


def proxy(server):
    return jsonrpclib.ServerProxy("http://%s:%d/" % server.address)


@pytest.fixture
def server(running):
    s = rpcmux.Server(listen=["127.0.0.1:0"], workers=4, call_timeout=1.0)
    release = threading.Event()
    inside = {"now": 0, "most": 0}
    lock = threading.Lock()

    @s.verb("echo")
    def echo(x):
        return x

    @s.verb("Slow.sync")
    def slow_sync(n):
        with lock:
            inside["now"] += 1
            inside["most"] = max(inside["most"], inside["now"])
        time.sleep(0.005)
        with lock:
            inside["now"] -= 1
        return n

    @s.verb("Slow.async")
    async def slow_async(n):
        await asyncio.sleep(0.005)
        return {"n": n, "loop": threading.current_thread().name}

    @s.verb("VM.create")
    def create(name, memory=1024):
        "Create a VM."
        return {"vmId": name, "memory": memory}

    @s.verb()
    def hang():
        # Never returns by itself: the deadline answers; the test releases it.
        release.wait()
        return "released"

    @s.verb()
    async def hang_async():
        await asyncio.Event().wait()

    @s.verb()
    def raising():
        raise RuntimeError("broken")

    @s.verb()
    def unmarshallable():
        return object()

    s.release = release
    s.inside = inside
    yield running(s)
    release.set()


def test_sync_and_async_verbs_under_concurrency(server):
    def client(i):
        p = proxy(server)
        out = []
        for j in range(CALLS):
            out.append(p.Slow.sync(i * 100 + j))
            r = p.Slow.__getattr__("async")(j)
            out.append((r["n"], r["loop"]))
        return out

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(client, range(CLIENTS)))
    for i, out in enumerate(results):
        assert out[0::2] == [i * 100 + j for j in range(CALLS)]
        assert [n for n, _ in out[1::2]] == list(range(CALLS))
        # Every async verb ran on the one asyncio loop thread.
        assert {loop for _, loop in out[1::2]} == {"rpcmux-asyncio"}
    # The bounded pool: never more plain functions at once than workers.
    assert 1 <= server.inside["most"] <= 4


def test_named_and_positional_parameters(server):
    p = proxy(server)
    assert p.VM.create("vm1") == {"vmId": "vm1", "memory": 1024}
    assert p.VM.create(name="vm2", memory=64) == {"vmId": "vm2", "memory": 64}
    assert p.echo(MUSIC_ENTRY) == MUSIC_ENTRY
    assert p.echo(None) is None
    assert p.echo(2**63 - 1) == 2**63 - 1


def test_the_call_deadline_answers_for_functions_that_never_return(server):
    p = proxy(server)
    for method in ("hang", "hang_async"):
        with pytest.raises(jsonrpclib.ProtocolError) as e:
            getattr(p, method)()
        assert e.value.args[0][0] == -32004, e.value.args
    # The server is alive, and the pool has room for others.
    assert p.echo("alive") == "alive"


def test_raising_and_unmarshallable_functions_are_faults(server):
    p = proxy(server)
    with pytest.raises(jsonrpclib.ProtocolError) as e:
        p.raising()
    assert e.value.args[0][:2] == (1, "<class 'RuntimeError'>:broken")
    with pytest.raises(jsonrpclib.ProtocolError) as e:
        p.unmarshallable()
    assert e.value.args[0][:2] == (1, "<class 'TypeError'>:cannot marshal <class 'object'> objects")
    assert p.echo(1) == 1


def test_introspection_shows_python_verbs(server):
    p = proxy(server)
    assert "VM.create" in p.system.listMethods()
    assert p.system.methodHelp("VM.create").startswith("Create a VM.")


def test_websocket_subscriber_receives_published_events(server):
    host, port = server.address

    async def subscriber():
        async with websockets.connect("ws://%s:%d/" % (host, port), subprotocols=["jsonrpc"]) as ws:
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "subscribe", "params": ["|vm|"], "id": 1}))
            reply = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            assert reply["id"] == 1 and "error" not in reply, reply
            # Subscribed (the reply comes after the subscription exists): publish.
            n = await asyncio.get_running_loop().run_in_executor(
                None, server.publish, "|vm|created", {"vmId": "vm7", "memory": 2**40}
            )
            assert n == 1
            ev = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            assert ev["method"] == "|vm|created", ev
            assert ev["params"]["vmId"] == "vm7" and ev["params"]["memory"] == 2**40, ev

    asyncio.run(subscriber())


def test_serve_from_asyncio():
    async def main():
        s = rpcmux.Server(listen="127.0.0.1:0")

        @s.verb()
        async def where():
            return threading.current_thread().name

        task = asyncio.ensure_future(s.serve())
        p = proxy(s)
        loop = asyncio.get_running_loop()
        name = await loop.run_in_executor(None, p.where)
        assert name == threading.current_thread().name, "async verbs run on the serving loop"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        s.close()

    asyncio.run(main())


def test_config_file_and_auth_are_rpcmux_serves(tmp_path, running):
    # The server's guarantees come from the library: a [limits] bound of the config
    # file and a credentials file (--auth) hold for Python verbs as for Rust ones.
    (tmp_path / "users.toml").write_text('anonymous = ["echo"]\n')
    (tmp_path / "rpcmux.toml").write_text('[limits]\nmax_body = 2048\n[auth]\nfile = "users.toml"\n')
    s = rpcmux.Server(listen="127.0.0.1:0", config=tmp_path / "rpcmux.toml")

    @s.verb()
    def echo(x):
        return x

    @s.verb()
    def secret():
        return "never"

    running(s)
    p = proxy(s)
    assert p.echo("small") == "small"
    with pytest.raises(jsonrpclib.ProtocolError) as e:
        p.secret()
    assert e.value.args[0][0] == -32020, e.value.args
    with pytest.raises(Exception) as e:
        p.echo("x" * 4096)
    assert "413" in str(e.value), e.value
