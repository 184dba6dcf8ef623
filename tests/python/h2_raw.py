"""A raw HTTP/2 client written with the `h2` library (python-hyper), frame by frame, for
what stock clients do not do on purpose: answers that come before the body is sent,
readers that withhold flow-control window, and the known HTTP/2 floods.

Usage: h2_raw.py PORT COMMAND [ARG]. Prints one JSON document; exits non-zero on a
protocol surprise.
  over-limit N     POST a JSON-RPC body of N bytes; the status and body the server sent
  zero-window      SETTINGS_INITIAL_WINDOW_SIZE=0, ask for a 300 kB echo, never read it:
                   how long until the server closed the connection
  rapid-reset N    open N streams (a 2 s `sleep` each) and reset each at once: the
                   GOAWAY error code if the server sent one, and how many streams went out
  continuation N   HEADERS without END_HEADERS, then up to N CONTINUATION frames of 16 KiB:
                   how many went out before the server closed
  ping-flood N     N PINGs and SETTINGS frames without reading the ACKs: whether the
                   connection was closed and how many frames went out
  too-many-streams N  read the server's SETTINGS_MAX_CONCURRENT_STREAMS, open N streams
                   more than it (HEADERS, bodies held back so every stream stays open), send
                   the bodies (an `echo` each) of the streams not refused: the limit, the
                   RST_STREAM codes, the answers, and whether the same connection still
                   answers a `ping` afterwards
  unread-echos PID CONNS STREAMS BYTES
                   CONNS connections granting no flow-control window, each with STREAMS
                   streams, each a gzip'd `echo` whose reply is BYTES bytes; once every
                   stream has its answer's HEADERS (every reply made and held), the
                   server's (PID) resident size and its output budget, then close
  ws-sessions PID CONNS STREAMS PATTERNS BYTES
                   CONNS connections, one after the other and all kept open, each
                   opening STREAMS WebSocket sessions (RFC 8441 extended CONNECT), each
                   session sending PATTERNS `subscribe` calls with distinct patterns of
                   BYTES bytes: the statuses and refusal bodies of the CONNECTs, the
                   subscriptions made and the errors refused, per connection, and the
                   server's (PID) resident size while all are held
"""
import json
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

PORT = int(sys.argv[1])
COMMAND = sys.argv[2]
ARG = int(sys.argv[3]) if len(sys.argv) > 3 else 0
ARGS = [int(a) for a in sys.argv[3:]]


def connect(settings=None, timeout=30):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    c.initiate_connection()
    if settings:
        c.update_settings(settings)
    s.sendall(c.data_to_send())
    return s, c


def headers(n=None):
    h = [(":method", "POST"), (":path", "/"), (":scheme", "http"), (":authority", "127.0.0.1"),
         ("content-type", "application/json")]
    if n is not None:
        h.append(("content-length", str(n)))
    return h


def call_body(method, params, id=1):
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()


def over_limit(n):
    s, c = connect()
    body = call_body("echo", ["x" * n])
    c.send_headers(1, headers(len(body)))
    status, data, sent = None, b"", 0
    while True:
        # Send what the window allows; the server may answer before it has it all.
        while sent < len(body) and c.local_flow_control_window(1) > 0:
            k = min(c.local_flow_control_window(1), c.max_outbound_frame_size, len(body) - sent)
            c.send_data(1, body[sent:sent + k], end_stream=sent + k == len(body))
            sent += k
        try:
            s.sendall(c.data_to_send())
        except OSError:
            pass
        d = s.recv(65536)
        if not d:
            break
        for e in c.receive_data(d):
            if isinstance(e, h2.events.ResponseReceived):
                status = int(dict(e.headers)[":status"])
            elif isinstance(e, h2.events.DataReceived):
                data += e.data
                c.acknowledge_received_data(e.flow_controlled_length, 1)
            elif isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)):
                s.close()
                return {"status": status, "body": data.decode()}
    raise SystemExit("connection closed without an answer")


def wait_closed(s, c, limit):
    """Read (acknowledging nothing) until the server closes; seconds it took."""
    t = time.monotonic()
    s.settimeout(limit)
    goaway = None
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            for e in c.receive_data(d):
                if isinstance(e, h2.events.ConnectionTerminated):
                    goaway = int(e.error_code)
    except socket.timeout:
        return {"closed_after": None, "goaway": goaway}
    except ConnectionResetError:
        pass
    return {"closed_after": round(time.monotonic() - t, 2), "goaway": goaway}


def zero_window():
    s, c = connect({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    body = call_body("echo", ["z" * 300_000])
    c.send_headers(1, headers(len(body)))
    sent = 0
    s.settimeout(30)
    t = time.monotonic()
    while sent < len(body):
        w = c.local_flow_control_window(1)
        if w > 0:
            k = min(w, c.max_outbound_frame_size, len(body) - sent)
            c.send_data(1, body[sent:sent + k], end_stream=sent + k == len(body))
            sent += k
            s.sendall(c.data_to_send())
            continue
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed before the request was sent")
        c.receive_data(d)
        s.sendall(c.data_to_send())
    # Never a WINDOW_UPDATE for stream 1: the reply can only wait.
    out = wait_closed(s, c, 120)
    out["closed_after"] = round(time.monotonic() - t, 2) if out["closed_after"] is not None else None
    return out


def rapid_reset(n):
    s, c = connect()
    body = call_body("sleep", [2000])
    sent = 0
    goaway = None
    s.settimeout(0.0)
    try:
        for i in range(n):
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, headers(len(body)))
            c.send_data(sid, body, end_stream=True)
            c.reset_stream(sid)
            s.sendall(c.data_to_send())
            sent += 1
            try:
                d = s.recv(65536)
                if d == b"":
                    break
                for e in c.receive_data(d):
                    if isinstance(e, h2.events.ConnectionTerminated):
                        goaway = int(e.error_code)
            except BlockingIOError:
                pass
            if goaway is not None:
                break
    except (BrokenPipeError, ConnectionResetError, h2.exceptions.ProtocolError):
        pass
    if goaway is None:
        s.settimeout(5)
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                for e in c.receive_data(d):
                    if isinstance(e, h2.events.ConnectionTerminated):
                        goaway = int(e.error_code)
        except (socket.timeout, ConnectionResetError, h2.exceptions.ProtocolError):
            pass
    return {"streams": sent, "goaway": goaway}


def frame(kind, flags, stream, payload):
    return struct.pack("!I", len(payload))[1:] + bytes([kind, flags]) + struct.pack("!I", stream) + payload


def continuation(n):
    s, c = connect()
    block = c.encoder.encode(headers())
    s.sendall(frame(0x1, 0x0, 1, block))  # HEADERS, no END_HEADERS
    sent = 0
    junk = c.encoder.encode([("x-pad", "p" * 16000)])
    try:
        for _ in range(n):
            s.sendall(frame(0x9, 0x0, 1, junk))  # CONTINUATION, no END_HEADERS
            sent += 1
    except (BrokenPipeError, ConnectionResetError):
        pass
    out = wait_closed(s, c, 30)
    out["frames"] = sent
    return out


def ping_flood(n):
    s, c = connect()
    s.settimeout(10)
    sent = 0
    try:
        for i in range(n):
            s.sendall(frame(0x6, 0x0, 0, struct.pack("!Q", i)) + frame(0x4, 0x0, 0, b""))
            sent += 1
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    out = wait_closed(s, c, 5)
    out["frames"] = sent
    return out


def first_frame(s):
    """The server's first frame, raw (its SETTINGS), before the h2 state machine sees it."""
    buf = b""
    while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed before the server's SETTINGS")
        buf += d
    return buf[3], buf[9:9 + int.from_bytes(buf[:3], "big")], buf


def too_many_streams(extra):
    s, c = connect(timeout=10)
    # Read the server's SETTINGS by hand, so `c` does not know the limit yet and lets
    # this client open more streams than the server allows (it would refuse to).
    kind, payload, buf = first_frame(s)
    if kind != 0x4:
        raise SystemExit(f"first frame of type {kind}, not SETTINGS")
    settings = {int.from_bytes(payload[i:i + 2], "big"): int.from_bytes(payload[i + 2:i + 6], "big")
                for i in range(0, len(payload) - 5, 6)}
    limit = settings.get(0x3)
    if limit is None or limit > 1000:
        raise SystemExit(f"MAX_CONCURRENT_STREAMS {limit}: too many to exceed")
    bodies = {}
    for i in range(limit + extra):
        sid = c.get_next_available_stream_id()
        bodies[sid] = call_body("echo", [f"stream {sid}"], id=sid)
        # No END_STREAM: the body is held back, the stream stays open on both sides.
        c.send_headers(sid, headers(len(bodies[sid])))
    s.sendall(c.data_to_send())
    status, data, ended, resets, goaway = {}, {}, set(), {}, None
    closed = False

    def feed(d):
        nonlocal goaway
        for e in c.receive_data(d):
            if isinstance(e, h2.events.ResponseReceived):
                status[e.stream_id] = int(dict(e.headers)[":status"])
            elif isinstance(e, h2.events.DataReceived):
                data[e.stream_id] = data.get(e.stream_id, b"") + e.data
                c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                resets[e.stream_id] = int(e.error_code)
            elif isinstance(e, h2.events.ConnectionTerminated):
                goaway = int(e.error_code)
        s.sendall(c.data_to_send())

    def read_until(done, within):
        nonlocal closed
        end = time.monotonic() + within
        while not done() and not closed and goaway is None:
            s.settimeout(max(0.01, end - time.monotonic()))
            try:
                d = s.recv(65536)
            except socket.timeout:
                return
            except ConnectionResetError:
                d = b""
            if not d:
                closed = True
                return
            feed(d)

    feed(buf)
    # The refusals come as the server reads the HEADERS; wait for as many as should come
    # (a server that refuses none is found out when the wait runs out).
    read_until(lambda: len(resets) >= extra, 5)
    refused_early = dict(resets)
    for sid, body in bodies.items():
        if sid not in resets and not closed and goaway is None:
            c.send_data(sid, body, end_stream=True)
    if not closed:
        s.sendall(c.data_to_send())
    read_until(lambda: all(sid in ended or sid in resets for sid in bodies), 15)
    answered = {str(sid): {"status": status.get(sid), "body": json.loads(data[sid])}
                for sid in bodies if sid in ended and sid in data}
    # Every stream over: the connection should still take a call.
    after = None
    if not closed and goaway is None:
        sid = c.get_next_available_stream_id()
        body = call_body("ping", [], id=sid)
        c.send_headers(sid, headers(len(body)))
        c.send_data(sid, body, end_stream=True)
        s.sendall(c.data_to_send())
        read_until(lambda: sid in ended or sid in resets, 10)
        if sid in ended and sid in data:
            after = {"status": status.get(sid), "body": json.loads(data[sid])}
    s.close()
    return {
        "advertised": limit,
        "opened": len(bodies),
        "refused": sorted(sid for sid, code in refused_early.items() if code == 7),
        "resets": {str(sid): code for sid, code in resets.items()},
        "answered": answered,
        "goaway": goaway,
        "closed": closed,
        "after": after,
    }


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def output_budget():
    import http.client
    h = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    h.request("GET", "/metrics")
    text = h.getresponse().read().decode()
    h.close()
    for line in text.splitlines():
        if line.startswith('rpcmux_budget_used_bytes{budget="output"}'):
            return float(line.split()[-1])
    return None


def unread_echos(pid, conns, streams, size):
    import gzip
    body = gzip.compress(call_body("echo", ["x" * (size - 64)]), 9)
    gz = headers(len(body)) + [("content-encoding", "gzip")]
    held = []
    for _ in range(conns):
        s, c = connect({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        s.setblocking(False)
        sids = []
        for _ in range(streams):
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, gz)
            sids.append(sid)
        held.append({"s": s, "c": c, "todo": {sid: 0 for sid in sids}, "headers": set(),
                     "resets": {}, "closed": False})
    # Send the bodies as the server's windows allow, read (never acknowledging DATA)
    # until every stream has its answer's HEADERS.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        busy = False
        for h in held:
            if h["closed"]:
                continue
            c, s = h["c"], h["s"]
            for sid, sent in list(h["todo"].items()):
                w = min(c.local_flow_control_window(sid), c.max_outbound_frame_size)
                if sent < len(body) and w > 0:
                    k = min(w, len(body) - sent)
                    c.send_data(sid, body[sent:sent + k], end_stream=sent + k == len(body))
                    h["todo"][sid] = sent + k
            out = c.data_to_send()
            try:
                if out:
                    s.setblocking(True)
                    s.sendall(out)
                    s.setblocking(False)
                d = s.recv(1 << 20)
                if not d:
                    h["closed"] = True
                    continue
                for e in c.receive_data(d):
                    if isinstance(e, h2.events.ResponseReceived):
                        h["headers"].add(e.stream_id)
                    elif isinstance(e, h2.events.StreamReset):
                        h["resets"][e.stream_id] = int(e.error_code)
                    elif isinstance(e, h2.events.ConnectionTerminated):
                        h["closed"] = True
                out = c.data_to_send()
                if out:
                    s.setblocking(True)
                    s.sendall(out)
                    s.setblocking(False)
            except BlockingIOError:
                pass
            except OSError:
                h["closed"] = True
            if len(h["headers"]) + len(h["resets"]) < streams and not h["closed"]:
                busy = True
        if not busy:
            break
        time.sleep(0.01)
    result = {
        "streams": conns * streams,
        "answered": sum(len(h["headers"]) for h in held),
        "reset": sum(len(h["resets"]) for h in held),
        "closed": sum(1 for h in held if h["closed"]),
        "rss_kib_held": rss_kib(pid),
        "output_budget_held": output_budget(),
    }
    for h in held:
        h["s"].close()
    return result


def ws_frame(text):
    """A masked text frame (a client's), RFC 6455."""
    payload = text.encode()
    mask = b"\x01\x02\x03\x04"
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_messages(buf):
    """Complete unmasked server frames in buf: (texts, rest)."""
    out = []
    while len(buf) >= 2:
        n, at = buf[1] & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                break
            n, at = struct.unpack("!H", buf[2:4])[0], 4
        elif n == 127:
            if len(buf) < 10:
                break
            n, at = struct.unpack("!Q", buf[2:10])[0], 10
        if len(buf) < at + n:
            break
        if buf[0] & 0x0F == 1:
            out.append(buf[at:at + n].decode())
        buf = buf[at + n:]
    return out, buf


def ws_sessions(pid, conns, streams, patterns, size):
    held, per_conn = [], []
    for k in range(conns):
        s, c = connect()
        s.settimeout(10)
        # The server's SETTINGS must allow extended CONNECT before :protocol may be sent.
        while not c.remote_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL):
            d = s.recv(65536)
            if not d:
                raise SystemExit("closed before SETTINGS")
            c.receive_data(d)
            s.sendall(c.data_to_send())
        sids = []
        for _ in range(streams):
            sid = c.get_next_available_stream_id()
            c.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"),
                                 (":scheme", "http"), (":path", "/"), (":authority", "127.0.0.1"),
                                 ("sec-websocket-version", "13"),
                                 ("sec-websocket-protocol", "jsonrpc")])
            sids.append(sid)
        s.sendall(c.data_to_send())
        status, bodies, buf, made, refused, answers = {}, {}, {}, 0, [], 0
        pending = {}
        want = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(status) == streams and want is None:
                ok = [sid for sid in sids if status[sid] == 200]
                want = len(ok) * patterns
                for sid in ok:
                    for j in range(patterns):
                        tag = f"c{k}s{sid}p{j}."
                        pattern = tag + "x" * max(0, size - len(tag))
                        msg = json.dumps({"jsonrpc": "2.0", "id": j, "method": "subscribe",
                                          "params": [pattern]})
                        pending[sid] = pending.get(sid, b"") + ws_frame(msg)
            # Send what the flow-control windows allow; the rest as they open.
            for sid, rest in list(pending.items()):
                w = min(c.local_flow_control_window(sid), c.max_outbound_frame_size, len(rest))
                if w > 0:
                    c.send_data(sid, rest[:w])
                    pending[sid] = rest[w:]
                if not pending[sid]:
                    del pending[sid]
            s.sendall(c.data_to_send())
            if want is not None and answers >= want:
                break
            d = s.recv(1 << 20)
            if not d:
                raise SystemExit("connection closed")
            for e in c.receive_data(d):
                if isinstance(e, h2.events.ResponseReceived):
                    status[e.stream_id] = int(dict(e.headers)[":status"])
                elif isinstance(e, h2.events.DataReceived):
                    c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                    if status.get(e.stream_id) == 200:
                        msgs, buf[e.stream_id] = ws_messages(buf.get(e.stream_id, b"") + e.data)
                        for m in msgs:
                            v = json.loads(m)
                            if "id" not in v:
                                continue
                            answers += 1
                            if "result" in v:
                                made += 1
                            else:
                                refused.append(v["error"])
                    else:
                        bodies[e.stream_id] = bodies.get(e.stream_id, b"") + e.data
                elif isinstance(e, h2.events.StreamReset):
                    status.setdefault(e.stream_id, -int(e.error_code))
            s.sendall(c.data_to_send())
        else:
            raise SystemExit(f"connection {k}: no answer in time: {status} {answers}/{want}")
        per_conn.append({
            "statuses": [status[sid] for sid in sids],
            "refusal": sorted({b.decode() for b in bodies.values()}),
            "made": made,
            "refused": len(refused),
            "errors": sorted({(e["code"], e["message"]) for e in refused}),
        })
        held.append(s)
    result = {"conns": per_conn, "rss_kib_held": rss_kib(pid)}
    for s in held:
        s.close()
    return result


COMMANDS = {
    "over-limit": lambda: over_limit(ARG),
    "zero-window": zero_window,
    "rapid-reset": lambda: rapid_reset(ARG),
    "continuation": lambda: continuation(ARG),
    "ping-flood": lambda: ping_flood(ARG),
    "too-many-streams": lambda: too_many_streams(ARG),
    "unread-echos": lambda: unread_echos(*ARGS),
    "ws-sessions": lambda: ws_sessions(*ARGS),
}
print(json.dumps(COMMANDS[COMMAND]()))
