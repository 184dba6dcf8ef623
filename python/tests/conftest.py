"""Fixtures: servers run on a thread of the test process, stopped at the test's end.

A server's socket is bound and listening when it is made, so a client may connect
before ``serve_forever`` runs: its request waits in the backlog (no readiness polling,
no sleeps).
"""

import os
import sys
import threading

import pytest

# The benchmark payload, shared with the Rust tests' clients.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))

JOIN_TIMEOUT = 60


@pytest.fixture
def running():
    """``running(server)`` serves it on a thread until the test ends; returns it."""
    started = []

    def start(server):
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        started.append((server, t))
        return server

    yield start
    for server, t in started:
        server.shutdown()
        t.join(JOIN_TIMEOUT)
        assert not t.is_alive(), "serve_forever did not return after shutdown()"
        if hasattr(server, "server_close"):
            server.server_close()
        else:
            server.close()


def url(server, path="/RPC2"):
    host, port = server.server_address if hasattr(server, "server_address") else server.address
    return "http://%s:%d%s" % (host, port, path)
