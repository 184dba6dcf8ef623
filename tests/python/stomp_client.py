"""JSON-RPC over STOMP 1.2 with the real stomp.py 9.0.0 client (Connection12).

Usage: stomp_client.py HOST PORT MODE
  rpc     subscribe to the response destination, SEND requests (single, batch, with
          reply-to and ovirtCorrelationId), receive each reply as a MESSAGE
  events  subscribe to `jms.queue` (a parent of the event destination), call VM.create
          over STOMP, receive the |virt|VM_status|<id> event and the reply
  delivery  STOMP 1.2 delivery to every matching subscription: two subscriptions on the
          reply destination both get each reply; VDSM's client-test layout (replies and
          events both on jms.queue.events, two subscriptions) gets both on both; a
          reply-to with ':' (sent escaped as \c) is answered

Prints "ok <mode>" on success. A watchdog ends the process if anything hangs (stomp.py's
connect(wait=True) waits forever when no CONNECTED arrives).
"""
import json
import os
import queue
import sys
import threading
import uuid

import stomp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from payload import MUSIC_ENTRY  # noqa: E402

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TIMEOUT = 20
REQUESTS = "jms.topic.vdsm_requests"
RESPONSES = "jms.topic.vdsm_responses"


def watchdog():
    print(f"timed out after {TIMEOUT}s", file=sys.stderr, flush=True)
    os._exit(3)


timer = threading.Timer(TIMEOUT, watchdog)
timer.daemon = True
timer.start()


class Inbox(stomp.ConnectionListener):
    def __init__(self):
        self.messages = queue.Queue()
        self.errors = queue.Queue()

    def on_message(self, frame):
        self.messages.put(frame)

    def on_error(self, frame):
        self.errors.put(frame)

    def next(self):
        frame = self.messages.get(timeout=TIMEOUT)
        return frame, json.loads(frame.body)


conn = stomp.Connection12([(host, port)], heartbeats=(0, 0), vhost="localhost")
inbox = Inbox()
conn.set_listener("", inbox)
conn.connect(wait=True)


def request(method, params, id_):
    return {"jsonrpc": "2.0", "method": method, "params": params, "id": id_}


def rpc():
    conn.subscribe(destination=RESPONSES, id="responses", ack="auto")
    body = json.dumps(request("echo", [MUSIC_ENTRY], "r1"))
    conn.send(destination=REQUESTS, body=body, content_type="application/json",
              headers={"reply-to": RESPONSES, "ovirtCorrelationId": "flow-stomp-py"})
    frame, reply = inbox.next()
    assert reply == {"jsonrpc": "2.0", "result": MUSIC_ENTRY, "id": "r1"}, reply
    assert frame.headers["destination"] == RESPONSES, frame.headers
    assert frame.headers["subscription"] == "responses", frame.headers
    assert frame.headers["message-id"], frame.headers
    assert frame.headers["content-type"] == "application/json", frame.headers

    # No reply-to: the default response destination. A batch of one stays an array.
    conn.send(destination=REQUESTS, body=json.dumps([request("ping", [], 2)]))
    _, reply = inbox.next()
    assert reply == [{"jsonrpc": "2.0", "result": True, "id": 2}], reply

    # The IRS request destination works too; errors come back as JSON-RPC errors.
    conn.send(destination="jms.topic.vdsm_irs_requests",
              body=json.dumps(request("VM.getStats", {"vmID": "nope"}, 3)),
              headers={"reply-to": RESPONSES})
    _, reply = inbox.next()
    assert reply["error"]["code"] == 1 and reply["id"] == 3, reply

    conn.disconnect(receipt="bye")
    assert inbox.errors.empty(), inbox.errors.get()


def events():
    vm = "vm-" + uuid.uuid4().hex[:8]
    conn.subscribe(destination=RESPONSES, id="responses", ack="auto")
    conn.subscribe(destination="jms.queue", id="events", ack="auto")
    conn.send(destination=REQUESTS,
              body=json.dumps(request("VM.create", {"vmID": vm, "name": "n", "memSize": 64}, 1)),
              headers={"reply-to": RESPONSES})
    got = {}
    while len(got) < 2:
        frame, body = inbox.next()
        got[frame.headers["subscription"]] = (frame, body)
    frame, event = got["events"]
    assert frame.headers["destination"] == "jms.queue.events", frame.headers
    assert event["jsonrpc"] == "2.0" and "id" not in event, event
    assert event["method"] == f"|virt|VM_status|{vm}", event
    assert event["params"][vm] == {"status": "Up"}, event
    assert isinstance(event["params"]["notify_time"], int), event
    assert got["responses"][1]["result"]["vmId"] == vm, got["responses"]
    conn.disconnect(receipt="bye")


def delivery():
    def collect(n):
        got = []
        for _ in range(n):
            frame, body = inbox.next()
            got.append((frame.headers["subscription"], body.get("id", body.get("method"))))
        return sorted(got)

    conn.subscribe(destination=RESPONSES, id="own", ack="auto")
    conn.subscribe(destination=RESPONSES, id="spy", ack="auto")
    conn.send(destination=REQUESTS, body=json.dumps(request("ping", [], "p1")),
              headers={"reply-to": RESPONSES})
    # A reply answers one request: the first covering subscription gets it.
    got = collect(1)
    assert got == [("own", "p1")], got

    # stomp.py escapes header values of SEND (STOMP 1.2): ':' goes as \c.
    conn.send(destination=REQUESTS, body=json.dumps(request("ping", [], "p2")),
              headers={"reply-to": RESPONSES + ".client:7"})
    got = collect(1)
    assert got == [("own", "p2")], got
    conn.unsubscribe(id="own")
    conn.unsubscribe(id="spy")

    vm = "vm-" + uuid.uuid4().hex[:8]
    conn.subscribe(destination="jms.queue.events", id="a", ack="auto")
    conn.subscribe(destination="jms.queue.events", id="b", ack="auto")
    conn.send(destination=REQUESTS,
              body=json.dumps(request("VM.create", {"vmID": vm, "name": "n", "memSize": 64}, "c1")),
              headers={"reply-to": "jms.queue.events"})
    event = f"|virt|VM_status|{vm}"
    # An event goes to every covering subscription.
    got = collect(3)
    assert got == sorted([("a", "c1"), ("a", event), ("b", event)]), got
    conn.send(destination=REQUESTS, body=json.dumps(request("VM.destroy", [vm], "d1")),
              headers={"reply-to": "jms.queue.events"})
    got = [g for g in collect(3) if g[1] == "d1"]
    assert got == [("a", "d1")], got
    conn.disconnect(receipt="bye")
    assert inbox.errors.empty(), inbox.errors.get()


{"rpc": rpc, "events": events, "delivery": delivery}[mode]()
print("ok", mode)
