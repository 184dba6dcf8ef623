"""A client loop of XML-RPC and JSON-RPC calls through a load balancer.

Usage: haproxy_loop.py HOST:PORT SECONDS SOURCE_IP

Alternates XML-RPC (encoded and decoded by the stdlib's xmlrpc.client) and JSON-RPC
calls of `echo` over keep-alive HTTP/1.1 connections from SOURCE_IP, for SECONDS, and
checks every answer. Prints {"ok": N, "failed": M, "errors": [...]} as JSON.
"""
import http.client
import json
import sys
import time
import xmlrpc.client

host, port = sys.argv[1].rsplit(":", 1)
seconds = float(sys.argv[2])
source = (sys.argv[3], 0)


def connect():
    return http.client.HTTPConnection(host, int(port), timeout=5, source_address=source)


conn = connect()
ok, failed, errors = 0, 0, []
end = time.monotonic() + seconds
i = 0
while time.monotonic() < end:
    i += 1
    try:
        if i % 2:
            body = xmlrpc.client.dumps((f"x{i}",), "echo").encode()
            conn.request("POST", "/RPC2", body, {"Content-Type": "text/xml"})
            r = conn.getresponse()
            data = r.read()
            (result,), _ = xmlrpc.client.loads(data)
            good = r.status == 200 and result == f"x{i}"
        else:
            body = json.dumps({"jsonrpc": "2.0", "method": "echo", "params": [i], "id": i})
            conn.request("POST", "/", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            reply = json.loads(r.read())
            good = r.status == 200 and reply.get("result") == i and reply.get("id") == i
        if good:
            ok += 1
        else:
            failed += 1
            errors.append(f"call {i}: wrong answer")
    except Exception as e:  # a failed call: count it, reconnect, go on
        failed += 1
        errors.append(f"call {i}: {type(e).__name__}: {e}")
        conn.close()
        conn = connect()
    time.sleep(0.002)
print(json.dumps({"ok": ok, "failed": failed, "errors": errors[:20]}))
