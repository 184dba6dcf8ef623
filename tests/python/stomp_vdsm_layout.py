"""VDSM's stomp_test.test_event layout with stomp.py: one destination, jms.queue.events,
is both the response queue (subscribed first, as yajsonrpc's StandAloneRpcClient does)
and an event subscription on the same connection. yajsonrpc's JsonRpcClient pops the
call a reply answers, so a reply arriving twice (once per subscription) raises in its
reader thread and no later reply is read: here every reply must come exactly once, on
the response subscription, and events on the event subscription.

Usage: stomp_vdsm_layout.py PORT. Prints one JSON document; exits non-zero on a failure.
"""
import json
import queue
import sys
import time
import uuid

import stomp

PORT = int(sys.argv[1])
QUEUE = "jms.queue.events"
frames = queue.Queue()


class Listener(stomp.ConnectionListener):
    def on_message(self, frame):
        frames.put((frame.headers.get("subscription"), json.loads(frame.body)))

    def on_error(self, frame):
        frames.put(("ERROR", frame.body))


conn = stomp.Connection12([("127.0.0.1", PORT)], heartbeats=(0, 0))
conn.set_listener("", Listener())
conn.connect(wait=True)
conn.subscribe(QUEUE, id="response-queue")
conn.subscribe(QUEUE, id="events", headers={"receipt": "subscribed"})
time.sleep(0.2)

pending = {}
events = []


def call(method, params):
    rid = str(uuid.uuid4())
    pending[rid] = None
    conn.send("jms.topic.vdsm_requests",
              json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": rid}),
              headers={"reply-to": QUEUE, "content-type": "application/json"})
    deadline = time.time() + 10
    while time.time() < deadline and pending.get(rid) is None:
        take(0.2)
    if pending.get(rid) is None:
        raise SystemExit(f"no reply to {method}")
    return pending[rid]


def take(timeout):
    try:
        sub, m = frames.get(timeout=timeout)
    except queue.Empty:
        return
    if sub == "ERROR":
        raise SystemExit(f"ERROR frame: {m}")
    if "result" in m or "error" in m:
        # yajsonrpc's JsonRpcClient: runningRequests.pop(id) -> KeyError on a second copy
        if m["id"] not in pending or pending[m["id"]] is not None:
            raise SystemExit(f"a reply came twice (on {sub}): {m}")
        pending[m["id"]] = (sub, m)
    else:
        events.append((sub, m["method"]))


created = call("VM.create", {"vmID": "layout", "name": "x", "memSize": 64})
destroyed = call("VM.destroy", ["layout"])
listed = call("Host.getVMList", [])
# Let late copies (duplicates) arrive, if any would.
end = time.time() + 1
while time.time() < end:
    take(0.1)
conn.disconnect()
print(json.dumps({
    "replies_on": sorted({created[0], destroyed[0], listed[0]}),
    "events": events,
}))
