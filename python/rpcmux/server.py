"""``SimpleXMLRPCServer`` as the standard library has it, served by rpcmux.

Change ``from xmlrpc.server import SimpleXMLRPCServer`` to
``from rpcmux.server import SimpleXMLRPCServer`` and keep every function: the same
constructor and methods, the same marshalling (``xmlrpc.client``'s), the same faults;
and the port also speaks JSON-RPC (HTTP, TCP, WebSocket, STOMP) and MessagePack-RPC,
with rpcmux's limits and timeouts. Registration and dispatch are the standard
library's own ``SimpleXMLRPCDispatcher`` (so ``_dispatch``, instances, dotted names,
introspection and multicall behave as they do there); the requests are read, and the
answers written, by rpcmux. What differs, and why: docs/python.md.
"""

import socketserver
import sys
import threading
import time
from xmlrpc.server import (  # noqa: F401  (re-exported, as the stdlib module has them)
    SimpleXMLRPCDispatcher,
    SimpleXMLRPCRequestHandler,
    list_public_methods,
    resolve_dotted_attribute,
)

from ._native import Core

__all__ = [
    "SimpleXMLRPCServer",
    "SimpleXMLRPCDispatcher",
    "SimpleXMLRPCRequestHandler",
    "list_public_methods",
    "resolve_dotted_attribute",
]

# The stdlib's month names for log lines (BaseHTTPRequestHandler.monthname).
_MONTHS = [None, "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

# What the dispatcher answers itself when its register_* methods are called; rpcmux's
# built-in verbs of these names are taken out so the answers are the standard library's.
_STDLIB_SYSTEM = ["system.listMethods", "system.methodHelp", "system.methodSignature", "system.multicall"]


def _refuse(what):
    raise TypeError(
        "rpcmux.server.SimpleXMLRPCServer: %s is not supported: rpcmux reads and writes "
        "the requests in Rust, so request handler customisation would be ignored "
        "(see docs/python.md)" % what
    )


class SimpleXMLRPCServer(SimpleXMLRPCDispatcher):
    """The standard library's ``SimpleXMLRPCServer``, served by rpcmux.

    Beyond the standard library's arguments, ``workers`` says how many calls may run
    at once (default 1, as the standard server runs one at a time; 16 when the class
    mixes in ``socketserver.ThreadingMixIn``), and ``call_timeout`` gives calls a
    deadline in seconds (their callers get error -32004; default none, as the stdlib).
    """

    allow_reuse_address = True
    timeout = None

    def __init__(
        self,
        addr,
        requestHandler=SimpleXMLRPCRequestHandler,
        logRequests=True,
        allow_none=False,
        encoding=None,
        bind_and_activate=True,
        use_builtin_types=False,
        *,
        workers=None,
        call_timeout=None,
    ):
        if requestHandler is not SimpleXMLRPCRequestHandler:
            _refuse("requestHandler=%r" % (requestHandler,))
        if encoding not in (None, "utf-8", "UTF-8", "utf8"):
            _refuse("encoding=%r (rpcmux answers in UTF-8)" % (encoding,))
        if type(self)._marshaled_dispatch is not SimpleXMLRPCDispatcher._marshaled_dispatch:
            _refuse("overriding _marshaled_dispatch")
        SimpleXMLRPCDispatcher.__init__(self, allow_none, encoding, use_builtin_types)
        self.logRequests = logRequests
        self.requestHandler = self.RequestHandlerClass = requestHandler
        self.server_address = tuple(addr)
        if workers is None:
            workers = 16 if isinstance(self, socketserver.ThreadingMixIn) else 1
        self._core_args = dict(
            workers=workers,
            allow_none=allow_none,
            use_builtin_types=use_builtin_types,
            call_timeout=call_timeout,
        )
        self._core = None
        self._is_shut_down = threading.Event()
        self._is_shut_down.set()
        if bind_and_activate:
            try:
                self.server_bind()
                self.server_activate()
            except BaseException:
                self.server_close()
                raise

    # --- socketserver's life cycle ---------------------------------------------------

    def server_bind(self):
        """Bind ``server_address`` (its port 0 resolved afterwards)."""
        host, port = self.server_address[:2]
        host = host or "0.0.0.0"
        spec = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        self._core = Core([spec], **self._core_args)
        self.server_address = tuple(self._core.addresses()[0])

    def server_activate(self):
        """Nothing to do: rpcmux listens when it binds."""

    def server_close(self):
        """Close the listening socket."""
        if self._core is not None:
            self._core.close()

    def fileno(self):
        _refuse("fileno() (there is no Python socket to select on)")

    def _serve(self, **until):
        if self._core is None:
            raise OSError("the server is not bound (call server_bind first)")
        self._core.set_fallback(self._rpcmux_call)
        self._core.without_builtins(_STDLIB_SYSTEM)
        for name in list(self.funcs):
            self._core.add(name, self._rpcmux_call, dispatcher=True)
        self._core.serve(**until)

    def serve_forever(self, poll_interval=0.5):
        """Serve until :meth:`shutdown` is called (from another thread) or Ctrl-C
        (``KeyboardInterrupt``, after the calls in flight are answered).
        ``poll_interval`` is accepted and unused: nothing is polled."""
        self._is_shut_down.clear()
        try:
            self._serve()
        finally:
            self._is_shut_down.set()

    def shutdown(self):
        """Stop ``serve_forever`` and wait until it has returned (from another
        thread, as with the standard library)."""
        if self._core is not None:
            self._core.shutdown()
        self._is_shut_down.wait()

    def handle_request(self):
        """Serve until one call has been answered, or ``self.timeout`` seconds (then
        ``handle_timeout()``). Connections open at the end are closed: a client
        that keeps its connection open for a second call must reconnect."""
        before = self._core.calls_answered() if self._core else 0
        self._serve(calls=1, timeout=self.timeout)
        if self._core.calls_answered() == before:
            self.handle_timeout()

    def handle_timeout(self):
        """Called when ``handle_request`` saw no call within ``self.timeout``."""

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.server_close()

    # --- one call ------------------------------------------------------------------

    def _rpcmux_call(self, method, args, kwargs, peer, protocol):
        """What rpcmux calls for every call: the dispatcher's ``_dispatch``, logged."""
        if self.logRequests:
            self._log_call(peer, protocol, method)
        if kwargs:
            # By-name parameters (a JSON object): the function itself, by keyword.
            func = self.funcs.get(method)
            if func is None:
                raise TypeError("%s takes positional parameters only" % method)
            return func(**kwargs)
        return self._dispatch(method, args)

    def _log_call(self, peer, protocol, method):
        # The stdlib logs the HTTP request line; rpcmux serves several protocols, so
        # the line names the protocol and the method instead: `"xmlrpc add" 200 -`.
        self.log_message(peer[0] if peer else "-", '"%s %s" %s %s', protocol, method, "200", "-")

    def log_message(self, client, format, *args):
        """Write a line as ``BaseHTTPRequestHandler.log_message`` does, to stderr."""
        sys.stderr.write("%s - - [%s] %s\n" % (client, self._log_date(), format % args))

    @staticmethod
    def _log_date():
        year, month, day, hh, mm, ss, _x, _y, _z = time.localtime(time.time())
        return "%02d/%3s/%04d %02d:%02d:%02d" % (day, _MONTHS[month], year, hh, mm, ss)
