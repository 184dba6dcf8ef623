"""rpcmux for Python: every RPC protocol on one port, served by rpcmux.

Two ways in:

* :mod:`rpcmux.server` -- ``SimpleXMLRPCServer`` with the standard library's API: change
  the import, keep every function.
* :class:`Server` -- the native API for new code::

      import rpcmux
      server = rpcmux.Server(listen=["127.0.0.1:8000"])

      @server.verb("VM.create")
      def create(name, memory=1024):
          return {"vmId": name, "memory": memory}

      server.serve_forever()

Both fill rpcmux's one verb table, so XML-RPC, JSON-RPC (HTTP, raw TCP, WebSocket,
STOMP) and MessagePack-RPC callers reach the same functions, under the same limits,
timeouts, TLS and authentication as ``rpcmux serve`` (docs/python.md).
"""

import asyncio
import inspect
import pydoc

from . import _aio
from ._native import Core, __version__

__all__ = ["Server", "__version__"]


def _tls_args(tls):
    if tls is None:
        return {}
    if isinstance(tls, (tuple, list)):
        cert, key = tls
        return {"tls_cert": str(cert), "tls_key": str(key)}
    if isinstance(tls, dict):
        unknown = set(tls) - {"cert", "key", "client_ca"}
        if unknown:
            raise TypeError("tls: unknown keys %s (cert, key, client_ca)" % sorted(unknown))
        return {
            "tls_" + k: (None if v is None else str(v)) for k, v in tls.items()
        }
    raise TypeError("tls must be (cert, key) or a dict with cert, key, client_ca")


class Server:
    """An rpcmux server whose verbs are Python functions.

    ``listen``: addresses as ``rpcmux serve --listen`` takes them (``"127.0.0.1:8000"``,
    port 0 for a free one, ``"unix:/run/app.sock"``); ``config``: an ``rpcmux.toml`` file
    (limits, ``[ops]`` metrics and access log, ``[events]``, ...); ``auth``: a
    credentials file (``--auth``); ``tls``: ``(cert, key)`` or ``{"cert", "key",
    "client_ca"}``. ``workers``: how many plain functions may run at once (the
    server's worker threads); ``call_timeout``: seconds a call may take before
    its caller gets error -32004 (``None``: no deadline). Values are marshalled as
    ``xmlrpc.client`` does with ``allow_none`` and ``use_builtin_types`` (``None``,
    ``bytes``, ``datetime``) unless told otherwise.
    """

    def __init__(
        self,
        listen=("127.0.0.1:0",),
        *,
        config=None,
        auth=None,
        tls=None,
        workers=8,
        call_timeout=60.0,
        allow_none=True,
        use_builtin_types=True,
    ):
        if isinstance(listen, str):
            listen = [listen]
        self._core = Core(
            [str(a) for a in listen],
            config=None if config is None else str(config),
            auth=None if auth is None else str(auth),
            workers=workers,
            allow_none=allow_none,
            use_builtin_types=use_builtin_types,
            call_timeout=call_timeout,
            **_tls_args(tls),
        )
        self._has_async = False

    @property
    def addresses(self):
        """The TCP addresses served, ``(host, port)`` each (port 0 resolved)."""
        return self._core.addresses()

    @property
    def address(self):
        """The first TCP address, ``(host, port)``."""
        return self.addresses[0]

    def verb(self, name=None, *, timeout=None, help=None):
        """Register the decorated function (``def`` or ``async def``) as verb ``name``
        (default: the function's name). Callers' positional parameters arrive as
        positional arguments, named ones (JSON objects) as keyword arguments."""

        def register(func):
            is_async = inspect.iscoroutinefunction(func)
            self._has_async |= is_async
            self._core.add(
                name or func.__name__,
                func,
                is_async=is_async,
                timeout=timeout,
                help=help if help is not None else (pydoc.getdoc(func) or ""),
            )
            return func

        return register

    def publish(self, name, params):
        """Publish event ``name`` with ``params`` (a dict) to every subscriber, on
        every protocol (ids, resume with ``since``: docs/events.md). Returns how many
        connections it was queued for; 0 before the server first serves."""
        return self._core.publish(name, params)

    def serve_forever(self):
        """Serve until :meth:`shutdown` or Ctrl-C (``KeyboardInterrupt``, raised after
        the calls in flight are drained). ``async def`` verbs run on an asyncio loop
        of a thread of their own."""
        loop = _aio.LoopThread() if self._has_async else None
        self._core.set_submit(_aio.submitter(loop.loop) if loop else None)
        try:
            self._core.serve()
        finally:
            self._core.set_submit(None)
            if loop:
                loop.stop()

    async def serve(self):
        """Serve from asyncio: ``async def`` verbs run on the running loop. Cancel the
        task (or call :meth:`shutdown`) to stop; the calls in flight are drained."""
        loop = asyncio.get_running_loop()
        self._core.set_submit(_aio.submitter(loop))
        running = loop.run_in_executor(None, self._core.serve)
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            self._core.shutdown()
            await running
            raise
        finally:
            self._core.set_submit(None)

    def shutdown(self):
        """Ask the serving thread to stop (it drains first); returns at once."""
        self._core.shutdown()

    def close(self):
        """Close the listening sockets."""
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
