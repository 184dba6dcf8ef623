"""One HTTP request over a Unix-domain socket, with raw bytes the stock clients do not
send: run (as any uid) with the standard library alone.

    unix_raw.py SOCKET whoami-behind-proxy   PROXY v2 (TCP4 192.0.2.7) whose SSL TLV
                                             names a verified certificate "engine",
                                             then a JSON-RPC whoami
    unix_raw.py SOCKET basic USER PASSWORD   a JSON-RPC whoami with HTTP Basic

Prints the HTTP response as received.
"""

import base64
import socket
import struct
import sys


def tlv(kind, value):
    return bytes([kind]) + struct.pack(">H", len(value)) + value


def proxy_v2_with_cn(cn):
    # PP2_CLIENT_SSL | CERT_CONN | CERT_SESS, verify 0 (verified), PP2_SUBTYPE_SSL_CN.
    ssl = tlv(0x20, bytes([0x07]) + struct.pack(">I", 0) + tlv(0x22, cn))
    body = bytes([192, 0, 2, 7, 10, 0, 0, 1]) + struct.pack(">HH", 5555, 443) + ssl
    return b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", len(body)) + body


def request(headers=b""):
    body = b'{"jsonrpc":"2.0","id":1,"method":"whoami"}'
    return (
        b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + headers
        + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "whoami-behind-proxy":
        wire = proxy_v2_with_cn(b"engine") + request()
    elif mode == "basic":
        cred = base64.b64encode(("%s:%s" % (sys.argv[3], sys.argv[4])).encode())
        wire = request(b"Authorization: Basic " + cred + b"\r\n")
    else:
        sys.exit("unknown mode " + mode)
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(path)
    s.sendall(wire)
    out = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
    sys.stdout.write(out.decode("utf-8", "replace"))


main()
