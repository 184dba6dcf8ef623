"""An event subscriber over STOMP 1.2 with the real stomp.py client, as the oVirt engine
subscribes to VDSM: SUBSCRIBE to `jms.queue` (a parent of the event destination).

Usage: stomp_events.py HOST PORT
Prints "subscribed" once the server has receipted the SUBSCRIBE, then each event's JSON
body, one line each, until stdin closes (the test holding it ends) or a watchdog fires.
"""
import json
import os
import sys
import threading

import stomp

host, port = sys.argv[1], int(sys.argv[2])
LIFETIME = 120  # seconds; the test is long done by then


def watchdog():
    print("watchdog: timed out", file=sys.stderr, flush=True)
    os._exit(3)


timer = threading.Timer(LIFETIME, watchdog)
timer.daemon = True
timer.start()
out_lock = threading.Lock()
subscribed = threading.Event()


class Listener(stomp.ConnectionListener):
    def on_receipt(self, frame):
        if frame.headers.get("receipt-id") == "sub":
            subscribed.set()

    def on_message(self, frame):
        if frame.headers.get("subscription") != "events":
            return
        body = json.loads(frame.body)
        with out_lock:
            print(json.dumps(body, separators=(",", ":")), flush=True)

    def on_error(self, frame):
        print("ERROR frame:", frame.headers, frame.body, file=sys.stderr, flush=True)
        os._exit(4)


conn = stomp.Connection12([(host, port)], heartbeats=(0, 0), vhost="localhost")
conn.set_listener("", Listener())
conn.connect(wait=True)
conn.subscribe(destination="jms.queue", id="events", ack="auto", headers={"receipt": "sub"})
if not subscribed.wait(20):
    print("no receipt for SUBSCRIBE", file=sys.stderr, flush=True)
    os._exit(5)
with out_lock:
    print("subscribed", flush=True)
sys.stdin.read()  # until the test closes it
os._exit(0)
