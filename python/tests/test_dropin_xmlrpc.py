"""The drop-in with the standard library's own client, xmlrpc.client: what a user of
``xmlrpc.server.SimpleXMLRPCServer`` relies on."""

import datetime
import os
import signal
import subprocess
import sys
import xmlrpc.client

import pytest

from conftest import url
from rpcmux.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer


class Inner:
    def twice(self, x):
        return 2 * x

    def _secret(self):
        return "leak"


class Api:
    def __init__(self):
        self.inner = Inner()

    def hello(self, name):
        "Say hello."
        return "hello " + name


class Dispatching:
    def _dispatch(self, method, params):
        return [method, list(params)]


def make(**kw):
    s = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False, **kw)
    s.register_introspection_functions()
    s.register_multicall_functions()

    @s.register_function(name="add")
    def add(a, b):
        "Add two numbers."
        return a + b

    def fault():
        raise xmlrpc.client.Fault(42, "the answer")

    def boom():
        raise ValueError("bad value")

    s.register_function(fault)
    s.register_function(boom)
    s.register_function(lambda x: x, "echo")
    s.register_function(lambda: {1, 2}, "unmarshallable")
    s.register_function(lambda: None, "none")
    s.register_function(lambda: 2**31, "big")
    return s


def test_port_zero_is_resolved_and_calls_answer(running):
    s = running(make())
    assert s.server_address[0] == "127.0.0.1" and s.server_address[1] > 0
    p = xmlrpc.client.ServerProxy(url(s))
    assert p.add(2, 3) == 5
    assert p.add(0.5, 0.25) == 0.75
    assert p.echo("é\U0001f600") == "é\U0001f600"
    assert p.echo({"a": [1, True, 2.5]}) == {"a": [1, True, 2.5]}
    assert p.echo(2**31 - 1) == 2**31 - 1 and p.echo(-(2**31)) == -(2**31)


def test_introspection(running):
    s = running(make())
    p = xmlrpc.client.ServerProxy(url(s))
    names = p.system.listMethods()
    assert "add" in names and "system.multicall" in names and names == sorted(names)
    assert p.system.methodHelp("add") == "Add two numbers."
    assert p.system.methodSignature("add") == "signatures not supported"


def test_multicall(running):
    s = running(make())
    p = xmlrpc.client.ServerProxy(url(s))
    mc = xmlrpc.client.MultiCall(p)
    mc.add(1, 2)
    mc.echo("x")
    mc.fault()
    results = mc()
    assert results[0] == 3 and results[1] == "x"
    with pytest.raises(xmlrpc.client.Fault) as e:
        results[2]
    assert (e.value.faultCode, e.value.faultString) == (42, "the answer")


def test_faults_keep_code_and_others_are_the_stdlibs(running):
    s = running(make())
    p = xmlrpc.client.ServerProxy(url(s))
    with pytest.raises(xmlrpc.client.Fault) as e:
        p.fault()
    assert (e.value.faultCode, e.value.faultString) == (42, "the answer")
    with pytest.raises(xmlrpc.client.Fault) as e:
        p.boom()
    assert (e.value.faultCode, e.value.faultString) == (1, "<class 'ValueError'>:bad value")
    with pytest.raises(xmlrpc.client.Fault) as e:
        p.nothing()
    assert e.value.faultString == "<class 'Exception'>:method \"nothing\" is not supported"
    # The server keeps serving.
    assert p.add(1, 1) == 2


def test_unmarshallable_results_are_faults_and_the_server_lives(running):
    s = running(make())
    p = xmlrpc.client.ServerProxy(url(s))
    for method, text in [
        ("unmarshallable", "<class 'TypeError'>:cannot marshal <class 'set'> objects"),
        ("none", "<class 'TypeError'>:cannot marshal None unless allow_none is enabled"),
        ("big", "<class 'OverflowError'>:int exceeds XML-RPC limits"),
    ]:
        with pytest.raises(xmlrpc.client.Fault) as e:
            getattr(p, method)()
        assert (e.value.faultCode, e.value.faultString) == (1, text)
    assert p.add(2, 2) == 4


def test_none_with_allow_none(running):
    s = running(make(allow_none=True))
    p = xmlrpc.client.ServerProxy(url(s), allow_none=True)
    assert p.none() is None
    assert p.echo([None, {"k": None}]) == [None, {"k": None}]


def test_datetime_and_binary_as_wrappers_and_builtin_types(running):
    when = datetime.datetime(2002, 1, 26, 7, 30, 15)
    s = running(make())
    seen = []
    s.register_function(lambda v: seen.append(type(v).__name__) or v, "keep")
    p = xmlrpc.client.ServerProxy(url(s))
    got = p.keep(xmlrpc.client.DateTime(when))
    assert isinstance(got, xmlrpc.client.DateTime) and got.value == "20020126T07:30:15"
    got = p.keep(xmlrpc.client.Binary(b"\x00\xffbin"))
    assert isinstance(got, xmlrpc.client.Binary) and got.data == b"\x00\xffbin"
    assert seen == ["DateTime", "Binary"]

    s2 = running(make(use_builtin_types=True))
    seen2 = []
    s2.register_function(lambda v: seen2.append(type(v).__name__) or v, "keep")
    p2 = xmlrpc.client.ServerProxy(url(s2), use_builtin_types=True)
    assert p2.keep(when) == when
    assert p2.keep(b"\x00\xff") == b"\x00\xff"
    assert seen2 == ["datetime", "bytes"]


def test_instances_dotted_names_and_dispatch(running):
    s = running(make())
    s.register_instance(Api(), allow_dotted_names=True)
    p = xmlrpc.client.ServerProxy(url(s))
    assert p.hello("you") == "hello you"
    assert p.inner.twice(21) == 42
    with pytest.raises(xmlrpc.client.Fault) as e:
        p.inner._secret()
    assert e.value.faultString == "<class 'Exception'>:method \"inner._secret\" is not supported"
    assert "hello" in p.system.listMethods()
    assert p.system.methodHelp("hello") == "Say hello."

    s2 = running(make())
    s2.register_instance(Dispatching())
    p2 = xmlrpc.client.ServerProxy(url(s2))
    assert p2.any.name.at.all(1, "x") == ["any.name.at.all", [1, "x"]]
    assert p2.add(1, 2) == 3, "registered functions come first"


def test_functions_registered_while_serving_are_found(running):
    s = running(make())
    p = xmlrpc.client.ServerProxy(url(s))
    assert p.add(1, 2) == 3
    s.register_function(lambda: "late", "late")
    assert p.late() == "late"


def test_log_requests_prints_a_line_per_call(running, capfd):
    s = SimpleXMLRPCServer(("127.0.0.1", 0))
    s.register_function(lambda: 1, "one")
    running(s)
    xmlrpc.client.ServerProxy(url(s)).one()
    err = capfd.readouterr().err
    assert '127.0.0.1 - - [' in err and '"xmlrpc one" 200 -' in err, err


def test_context_manager_and_handle_request():
    with SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False) as s:
        s.register_function(lambda: "once", "once")
        host, port = s.server_address
        result = {}

        def call():
            result["r"] = xmlrpc.client.ServerProxy(url(s)).once()

        import threading

        t = threading.Thread(target=call)
        t.start()
        s.handle_request()
        t.join(30)
        assert result == {"r": "once"}
        s.timeout = 0.2
        timed_out = []
        s.handle_timeout = lambda: timed_out.append(True)
        s.handle_request()
        assert timed_out == [True]


def test_handler_customisation_is_refused():
    class Handler(SimpleXMLRPCRequestHandler):
        rpc_paths = ("/only",)

    with pytest.raises(TypeError, match="requestHandler"):
        SimpleXMLRPCServer(("127.0.0.1", 0), requestHandler=Handler)
    with pytest.raises(TypeError, match="encoding"):
        SimpleXMLRPCServer(("127.0.0.1", 0), encoding="iso-8859-1")


def test_bind_and_activate_false_binds_on_server_bind(running):
    s = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False, bind_and_activate=False)
    assert s.server_address == ("127.0.0.1", 0)
    s.server_bind()
    s.server_activate()
    assert s.server_address[1] > 0
    s.register_function(lambda: "ok", "ok")
    running(s)
    assert xmlrpc.client.ServerProxy(url(s)).ok() == "ok"


CTRL_C = r"""
import sys
from rpcmux.server import SimpleXMLRPCServer
s = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False)
s.register_function(lambda: "up", "up")
print(s.server_address[1], flush=True)
try:
    s.serve_forever()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(0)
"""


def test_ctrl_c_ends_serve_forever():
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(proc.stdout.readline())
        # A call answered: serve_forever is running.
        assert xmlrpc.client.ServerProxy("http://127.0.0.1:%d/" % port).up() == "up"
        os.kill(proc.pid, signal.SIGINT)
        assert proc.stdout.readline().strip() == "interrupted"
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()
