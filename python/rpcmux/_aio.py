"""The asyncio side of ``async def`` verbs: one loop, fed from rpcmux's threads.

rpcmux hands a coroutine and a ``done`` callback to :func:`submitter`'s function from
one of its threads; the coroutine runs on the loop, and ``done`` gets the
``concurrent.futures.Future`` when it finishes (rpcmux converts the result there), or
is cancelled when the call's deadline passes first.
"""

import asyncio
import threading


def submitter(loop):
    """A ``submit(coroutine, done)`` that runs coroutines on ``loop``."""

    def submit(coro, done):
        fut = asyncio.run_coroutine_threadsafe(coro, loop)
        fut.add_done_callback(done)
        return fut

    return submit


class LoopThread:
    """An asyncio loop on a daemon thread of its own, for ``serve_forever``."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="rpcmux-asyncio", daemon=True
        )
        self._thread.start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def stop(self):
        """Stop the loop (coroutines still running are dropped) and join its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
