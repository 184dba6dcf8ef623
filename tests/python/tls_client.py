"""rpcmux over TLS (and behind a PROXY header) with Python's ssl module and real clients.

Usage: tls_client.py HOST PORT CA_PEM COMMAND [ARG] [--cert PEM --key PEM]
                     [--proxy-v1 IP:PORT | --proxy-v2 IP:PORT]

Prints one JSON document on stdout (what the Rust test checks). Commands:
  https       JSON-RPC over HTTPS: stdlib http.client (two calls on one kept-alive
              connection, whoami, the negotiated ALPN) and requests (verify=CA)
  tcp         JSON-RPC over raw TCP inside TLS: pipelined calls and whoami
  echo-big N  an N-byte string echoed over TLS, raw TCP and HTTPS; compared here
  xmlrpc      xmlrpc.client.ServerProxy over https: ping, echo, whoami
  msgpack     aio-msgpack-rpc over an asyncio TLS connection: echo, whoami
  stomp       stomp.py (Connection12, set_ssl) JSON-RPC over STOMP in TLS: whoami
  refused     expect the server to refuse this client (handshake or first read fails)
  call M      one JSON-RPC call of M (no params) over raw TCP inside TLS: the whole reply
--proxy-v1/--proxy-v2 send a PROXY header naming IP:PORT as the client, in plaintext,
before the TLS handshake (what HAProxy does with `send-proxy` in front of TLS).
"""
import argparse
import asyncio
import http.client
import ipaddress
import json
import socket
import ssl
import struct
import sys
import xmlrpc.client

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from payload import MUSIC_ENTRY  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("host")
p.add_argument("port", type=int)
p.add_argument("ca")
p.add_argument("command")
p.add_argument("arg", nargs="?")
p.add_argument("--cert")
p.add_argument("--key")
p.add_argument("--proxy-v1")
p.add_argument("--proxy-v2")
a = p.parse_args()


def context(alpn=None):
    ctx = ssl.create_default_context(cafile=a.ca)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    if a.cert:
        ctx.load_cert_chain(a.cert, a.key)
    return ctx


def proxy_header():
    """The PROXY header to send first, or b''. The destination is the server itself."""
    spec = a.proxy_v1 or a.proxy_v2
    if not spec:
        return b""
    ip, port = spec.rsplit(":", 1)
    src = ipaddress.ip_address(ip.strip("[]"))
    dst = ipaddress.ip_address("127.0.0.1" if src.version == 4 else "::1")
    if a.proxy_v1:
        fam = "TCP4" if src.version == 4 else "TCP6"
        return f"PROXY {fam} {src} {dst} {port} {a.port}\r\n".encode()
    body = src.packed + dst.packed + struct.pack("!HH", int(port), a.port)
    fam = 0x11 if src.version == 4 else 0x21
    return b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, fam]) + struct.pack("!H", len(body)) + body


def tls_socket(alpn=None):
    raw = socket.create_connection((a.host, a.port), timeout=30)
    raw.sendall(proxy_header())
    return context(alpn).wrap_socket(raw, server_hostname=a.host)


class HTTPSProxied(http.client.HTTPSConnection):
    """http.client's HTTPS connection (offering ALPN http/1.1, as http.client does by
    default), with the PROXY header sent before the handshake."""

    def connect(self):
        self.sock = tls_socket(["http/1.1"])


def rpc(method, params=None, id=1):
    return {"jsonrpc": "2.0", "method": method, "params": params or [], "id": id}


def read_lines(f, n):
    replies = {}
    for _ in range(n):
        line = f.readline()
        assert line.endswith(b"\n"), f"reply not newline-terminated: {line[:80]!r}"
        r = json.loads(line)
        replies[r["id"]] = r
    return replies


def https():
    out = {}
    conn = HTTPSProxied(a.host, a.port, timeout=30)
    results = []
    for req in (rpc("ping"), rpc("echo", [MUSIC_ENTRY], 2), rpc("whoami", id=3)):
        conn.request("POST", "/RPC2", json.dumps(req), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200, resp.status
        results.append(json.loads(resp.read())["result"])
    out["alpn"] = conn.sock.selected_alpn_protocol()
    out["tls_version"] = conn.sock.version()
    conn.close()
    assert results[0] is True and results[1] == MUSIC_ENTRY, results
    out["whoami"] = results[2]
    if not (a.proxy_v1 or a.proxy_v2):
        import requests  # a third-party HTTPS client, verifying against the test CA

        cert = (a.cert, a.key) if a.cert else None
        r = requests.post(f"https://{a.host}:{a.port}/", json=rpc("whoami", id=9),
                          verify=a.ca, cert=cert, timeout=30)
        r.raise_for_status()
        out["requests_whoami"] = r.json()["result"]
    return out


def tcp():
    s = tls_socket()
    f = s.makefile("rb")
    reqs = [rpc("sleep", [200], 1), rpc("echo", [MUSIC_ENTRY], 2), rpc("whoami", id=3)]
    s.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in reqs))
    replies = read_lines(f, len(reqs))
    assert replies[1]["result"] == 200 and replies[2]["result"] == MUSIC_ENTRY, replies
    out = {"whoami": replies[3]["result"], "alpn": s.selected_alpn_protocol()}
    s.close()
    return out


def echo_big(n):
    big = "".join(chr(ord("a") + i % 26) for i in range(26)) * (n // 26 + 1)
    big = big[:n]
    s = tls_socket()
    s.sendall(json.dumps(rpc("echo", [big], 7)).encode() + b"\n")
    line = s.makefile("rb").readline()
    got = json.loads(line)["result"]
    assert got == big, f"raw TCP: got {len(got)} bytes, want {n}"
    s.close()
    conn = HTTPSProxied(a.host, a.port, timeout=60)
    conn.request("POST", "/", json.dumps(rpc("echo", [big], 8)), {"Content-Type": "application/json"})
    body = conn.getresponse().read()
    got = json.loads(body)["result"]
    assert got == big, f"HTTPS: got {len(got)} bytes, want {n}"
    return {"tcp": n, "https": n, "reply_bytes": len(body)}


def xml():
    s = xmlrpc.client.ServerProxy(f"https://{a.host}:{a.port}/RPC2", context=context(["http/1.1"]),
                                  allow_none=True, use_builtin_types=True)
    assert s.ping() is True
    assert s.echo(MUSIC_ENTRY) == MUSIC_ENTRY
    return {"whoami": s.whoami()}


def msgpack():
    import aio_msgpack_rpc

    async def go():
        reader, writer = await asyncio.open_connection(a.host, a.port, ssl=context(),
                                                       server_hostname=a.host)
        c = aio_msgpack_rpc.Client(reader, writer, response_timeout=10)
        assert await c.call("echo", MUSIC_ENTRY) == MUSIC_ENTRY
        assert await c.call("echo", b"\x00\xffbin") == b"\x00\xffbin"
        who = await c.call("whoami")
        writer.close()
        return {"whoami": who}

    return asyncio.run(go())


def stomp_rpc():
    import queue

    import stomp

    replies = queue.Queue()

    class Inbox(stomp.ConnectionListener):
        def on_message(self, frame):
            replies.put(json.loads(frame.body))

    conn = stomp.Connection12([(a.host, a.port)], heartbeats=(0, 0), vhost="localhost")
    conn.set_ssl(for_hosts=[(a.host, a.port)], ca_certs=a.ca, cert_file=a.cert, key_file=a.key)
    conn.set_listener("", Inbox())
    conn.connect(wait=True)
    conn.subscribe(destination="jms.topic.vdsm_responses", id="r", ack="auto")
    for i, (method, params) in enumerate([("echo", [MUSIC_ENTRY]), ("whoami", [])]):
        conn.send(destination="jms.topic.vdsm_requests", body=json.dumps(rpc(method, params, i)),
                  headers={"reply-to": "jms.topic.vdsm_responses"})
    got = {}
    while len(got) < 2:
        r = replies.get(timeout=20)
        got[r["id"]] = r["result"]
    conn.disconnect(receipt="bye")
    assert got[0] == MUSIC_ENTRY, got[0]
    return {"whoami": got[1]}


def call(method):
    s = tls_socket()
    s.sendall(json.dumps(rpc(method)).encode() + b"\n")
    reply = json.loads(s.makefile("rb").readline())
    s.close()
    return reply


def refused():
    try:
        s = tls_socket()
        s.sendall(json.dumps(rpc("whoami")).encode() + b"\n")
        line = s.makefile("rb").readline()
    except (ssl.SSLError, ConnectionError, OSError) as e:
        return {"refused": f"{type(e).__name__}: {e}"}
    if not line:
        return {"refused": "closed without a reply"}
    raise SystemExit(f"expected a refusal, got a reply: {line[:200]!r}")


commands = {"https": https, "tcp": tcp, "xmlrpc": xml, "msgpack": msgpack, "stomp": stomp_rpc,
            "refused": refused, "call": lambda: call(a.arg),
            "echo-big": lambda: echo_big(int(a.arg))}
print(json.dumps(commands[a.command]()))
