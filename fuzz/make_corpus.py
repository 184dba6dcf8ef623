#!/usr/bin/env python3
"""Write the seed corpora under fuzz/corpus/<target>/ from the protocol crates' test
fixtures and hand-made samples. Re-run after adding seeds (it only adds files named
seed-*; files the fuzzer or `cargo fuzz cmin` left are not touched).

    python3 fuzz/make_corpus.py
"""
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fixture(crate, name):
    with open(os.path.join(ROOT, "protocols", crate, "tests", "fixtures", name), "rb") as f:
        return f.read()


def fixtures(crate, ext):
    d = os.path.join(ROOT, "protocols", crate, "tests", "fixtures")
    return [fixture(crate, n) for n in sorted(os.listdir(d)) if n.endswith(ext)]


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for s in seeds:
        name = "seed-" + hashlib.sha1(s).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(s)


def chunked(streams):
    """Stream-target inputs: byte-at-a-time, a few cut patterns, and small limits."""
    out = []
    for s in streams:
        out.append(b"\x00" + s)                 # one byte at a time
        out.append(b"\x02\x02\x06" + s)         # pieces of 3 and 7
        out.append(b"\x08" + s)                 # small limits, byte at a time
        out.append(b"\x0b\x00\x0f\x40" + s)      # small limits, pieces of 1, 16, 65
    return out


# ---------- XML-RPC ----------
XML_DECL = b"<?xml version='1.0'?>\n"
xml_calls = fixtures("xmlrpc", "_call.xml") + [
    XML_DECL + b"<methodCall><methodName>system.listMethods</methodName></methodCall>",
    b"<methodCall><methodName> echo </methodName><params/></methodCall>",
    b"<methodCall><methodName>echo</methodName><params><param><value>untyped &amp; &lt;x&gt; &#65;&#x42;</value></param>"
    b"<param><value><i8>-9223372036854775808</i8></value></param>"
    b"<param><value><ex:nil/></value></param><param><value><ex:i2>7</ex:i2></value></param>"
    b"<param><value><double>nan</double></value></param><param><value><double>-0.0</double></value></param>"
    b"<param><value><base64>AAEC\n/w==</base64></value></param>"
    b"<param><value><dateTime.iso8601>20240229T23:59:60</dateTime.iso8601></value></param>"
    b"<param><value><string><![CDATA[a<b]]></string></value></param>"
    b"</params></methodCall>",
    b"<!-- c --><?pi x?><methodCall><methodName>a</methodName><params><param><value><array><data>"
    b"<value><struct><member><name>k</name><value><boolean>1</boolean></value></member>"
    b"<member><name>k</name><value><nil/></value></member></struct></value>"
    b"</data></array></value></param></params></methodCall>",
    b"<!DOCTYPE x [<!ENTITY a 'b'>]><methodCall><methodName>&a;</methodName></methodCall>",
]
xml_responses = fixtures("xmlrpc", "_response.xml") + [
    XML_DECL + b"<methodResponse><params><param><value><string>hi\r\n&#13;</string></value></param></params></methodResponse>\n",
    b"<methodResponse><params/></methodResponse>",
    b"<methodResponse><params><param><value><ex:float>1.5e300</ex:float></value></param></params></methodResponse>",
    b"<methodResponse><fault><value><struct><member><name>faultCode</name><value><int>4000000000</int></value></member>"
    b"<member><name>faultString</name><value>boom</value></member></struct></value></fault></methodResponse>",
]
write("xmlrpc_call", xml_calls)
write("xmlrpc_response", xml_responses)
write("xmlrpc_roundtrip", xml_calls + xml_responses)

# ---------- JSON-RPC ----------
json_requests = [
    b'{"jsonrpc":"2.0","method":"echo","params":[1,-2.5,"x\\u00e9\\ud83d\\ude00",null,true,[],{}],"id":1}',
    b'{"jsonrpc":"2.0","method":"greet","params":{"name":"a","n":1e300},"id":"abc"}',
    b'{"jsonrpc":"2.0","method":"notify","params":[18446744073709551615, -9223372036854775808]}',
    b'[{"jsonrpc":"2.0","method":"a","id":1},{"jsonrpc":"2.0","method":"b"},1,{"method":"c","id":null}]',
    b'[]',
    b'{"jsonrpc":"1.0","method":"x","id":[1]}',
    b'{"jsonrpc":"2.0","method":"x","id":1.5,"params":"bad"}',
    b' \n{"jsonrpc":"2.0","method":"x","id":1 ',
]
json_responses = [
    b'{"jsonrpc":"2.0","result":{"a":[1,2.0,"s",null]},"id":1}',
    b'{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: nope","data":{"x":1}},"id":"7"}',
    b'{"jsonrpc":"2.0","method":"event|vm|1","params":{"status":"up"}}',
    b'{"jsonrpc":"2.0","result":null,"id":null}',
    b'{"jsonrpc":"2.0","id":3}',
    b'{"jsonrpc":"2.0","result":-0.0,"id":1e3}',
]
write("jsonrpc_request", json_requests)
write("jsonrpc_response", json_responses)
write("jsonrpc_roundtrip", json_requests + json_responses)
json_streams = [
    b"\n".join(json_requests[:4]) + b"\n",
    b'{"a":"}]\\"{["}[1,[2,{"b":[]}]]  {"c":1}',
    b"garbage line\n{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1}\nxx{\"not\":1}\n[1]",
    b"   \r\n\t[" + b"[" * 20 + b"]" * 20 + b"]\n}\n",
]
write("jsonrpc_splitter", chunked(json_streams))

# ---------- msgpack-rpc ----------
mp = fixtures("msgpack-rpc", ".msgpack")
mp_hand = [
    bytes([0x94, 0x00, 0x01, 0xa4]) + b"echo" + bytes([0x91, 0xcb]) + struct.pack(">d", float("nan")),
    bytes([0x93, 0x02, 0xc4, 0x01]) + b"m" + bytes([0x90]),
    bytes([0x94, 0x01, 0xce, 0xff, 0xff, 0xff, 0xff, 0xc0, 0x81, 0x01, 0xc3]),   # response, int key
    bytes([0x94, 0x00, 0x05, 0x01, 0x90]),                                 # method not a str -> Invalid
    bytes([0x94, 0x00, 0x05, 0xa1]) + b"x" + bytes([0x91, 0xd7, 0x01]) + b"\0" * 8,   # unknown ext
    bytes([0x94, 0x00, 0xd0, 0xff, 0xa1]) + b"x" + bytes([0x90]),           # negative msgid
    bytes([0x94, 0x00, 0x01, 0xa1]) + b"x" + bytes([0xdd, 0xff, 0xff, 0xff, 0xff]),  # huge array header
    bytes([0xc1]),
]
write("msgpack_decode", [b"\x00" + m for m in mp + mp_hand] + [b"\x01" + m for m in mp_hand])
write("msgpack_roundtrip", mp + mp_hand)
write("msgpack_codec", chunked([b"".join(mp), mp[0], b"".join(mp_hand[:4]), mp_hand[6]]))

# ---------- differential targets (the oracles: docs/fuzzing.md) ----------
xml_edges = [
    b"\xef\xbb\xbf<methodCall a='1' b = \"2\"><methodName>m</methodName><params><param><value>"
    b"x<!-- c -->y<?pi?>&#x1F600;<![CDATA[]]>\r\nz\r</value></param></params></methodCall>",
    b"<methodCall><methodName>m</methodName><params><param><value><p:struct xmlns:p='u'>"
    b"<p:member><p:name> k&amp; </p:name><p:value><i4> -7 </i4></p:value></p:member>"
    b"</p:struct></value></param></params></methodCall >",
    b"<methodResponse><params><param><value><array><data><value><boolean>TRUE</boolean></value>"
    b"<value><base64>aGk</base64></value><value/><value><string/></value></data></array></value>"
    b"</param></params></methodResponse><!-- end -->\n",
    b"<methodCall><methodName>m</methodName><params><param><value>\n <nil/> \n</value></param></params></methodCall>",
    b"<methodResponse><fault><value><struct><member><name>faultCode</name><value><string> 12 </string></value>"
    b"</member></struct></value></fault></methodResponse>",
]
# Every entity and reference form, in text and in a member name: a reader that drops
# or mistakes one differs from the reference at once.
xml_edges.append(
    b"<methodCall><methodName>m&amp;</methodName><params><param><value><struct><member>"
    b"<name>&lt;&gt;&amp;&quot;&apos;</name><value>&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#0066;"
    b"&#x10FFFF;&#13;&#9;</value></member></struct></value></param></params></methodCall>"
)
write("xmlrpc_oracle", xml_calls + xml_responses + xml_edges)

json_edges = [
    b'{"jsonrpc":"2.0","method":"m","params":[9223372036854775808,18446744073709549568,'
    b'123456789012345678901234567890,1e20,-0,-0.0,0.1,5e-324,1.7976931348623157e308],"id":1}',
    b'{"jsonrpc":"2.0","method":"m","params":{"b":1,"a":{"z":[],"y":{}},"b":2},"id":null}',
    b'\xef\xbb\xbf[{"jsonrpc":"2.0","method":"m","params":["\\u0000\\ud800x"]},{"jsonrpc":"2.0","method":"m","params":{}}]',
]
# Integers just past i64 that no double holds (rpcmux must refuse them), and ones it does.
json_edges.append(
    b'{"jsonrpc":"2.0","method":"m","params":[9223372036854775809,'
    b'10000000000000000001,18446744073709551614],"id":2}'
)
json_edges.append(b'{"jsonrpc":"2.0","method":"m","params":{"a":[1e19,12345678901234567890]}}')
# One each on its own too: a value that makes rpcmux re-scan the text would catch the
# others in passing, and hide a visitor that lets one through.
json_edges.append(b'{"jsonrpc":"2.0","method":"m","params":[9223372036854775809],"id":3}')
json_edges.append(b'{"jsonrpc":"2.0","method":"m","params":{"n":10000000000000000001}}')
write("json_value_oracle", json_requests + json_edges)


def pack(v):
    """A small msgpack packer for the typed seeds (no msgpack module needed)."""
    if v is None:
        return b"\xc0"
    if v is True or v is False:
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        return (b"\xcf" + struct.pack(">Q", v)) if v >= 0 else (b"\xd3" + struct.pack(">q", v))
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xa0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, list):
        return bytes([0x90 | len(v)]) + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(v)


ints = {"a": 255, "b": 65535, "c": 2**32 - 1, "d": 2**64 - 1, "e": -128, "f": -32768, "g": -2**31, "h": -2**63}
texts = {"s": "h\u00e9", "b": b"\x00\xff", "c": "\u20ac", "flag": True}
typed = [
    (0, ints), (0, list(ints.values())), (0, dict(ints, a=256)),
    (1, {"x": 1.5, "y": float("-inf")}), (1, [3, -0.0]),
    (2, texts), (2, dict(texts, s=b"\xff")),
    (3, {"a": None, "b": "x", "c": None, "d": ints}), (3, {"a": 1, "b": None, "c": False, "d": None}),
    (4, "Dot"), (4, {"Circle": 2.5}), (4, {"Rect": {"w": 1, "h": 2}}), (4, {"Pair": [-1, 1]}), (4, {"Rect": [1, 2]}),
    (5, {"name": "n", "shapes": ["Dot", {"Pair": [1, 2]}], "inner": texts, "table": {"k": [1, 2]},
         "pair": [-5, "Dot"], "unit": None, "extra": {"x": [1, {"y": b"z"}]}}),
    (6, [True, ["Dot"], 2**64 - 1, ""]),
]
write("msgpack_typed_oracle", [bytes([k]) + pack(v) for k, v in typed])

mp_values = [
    pack({1: "int key", True: [None, 1.5], "s": b"bin"}),
    b"\x82\xc4\x01k\x01\xa1k\x02",                                # bin key, repeated key
    b"\xd6\xff\x00\x00\x00\x01", b"\xd7\xff" + b"\x00" * 8, b"\xc7\x0c\xff" + b"\x00" * 12,   # timestamps
    b"\xa2\xff\xfe", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", b"\xca\x7f\xc0\x00\x00",
    b"\x91" * 64 + b"\xc0", b"\x91" * 65 + b"\xc0", b"\x81\x91\x01\x02",
]
write("msgpack_value_oracle", mp + mp_hand + mp_values)

# ---------- STOMP ----------
stomp_fix = fixtures("stomp", ".bin")
stomp_hand = [
    b"CONNECT\naccept-version:1.2\nhost:h\nheart-beat:1000,1000\n\n\0",
    b"STOMP\r\naccept-version:1.2\r\nlogin:u\r\npasscode:pa:ss\r\n\r\n\0\r\n",
    b"SEND\ndestination:a\\cb\\n\\r\\\\\ncontent-length:4\n\n\0\n\0\r\0\n",
    b"SUBSCRIBE\nid:sub-1\ndestination:/q\nack:auto\n\n\0",
    b"MESSAGE\nsubscription:0\nmessage-id:1\n\n{\"a\":1}\0\n\nACK\nid:1\n\n\0",
    b"\n\r\n\nDISCONNECT\nreceipt:bye\n\n\0",
    b"SEND\ncontent-length:3\ncontent-length:9\nx:y\n\nabc\0",
    b"CONNECTED\nversion:1.2\n\n\0ERROR\nmessage:bad\\x\n\n\0",
]
write("stomp_codec", chunked(stomp_fix + stomp_hand))
write("stomp_roundtrip", stomp_fix + stomp_hand)

# ---------- sniffing and PROXY ----------
def v2(cmd, fam, addr, tlv=b""):
    body = addr + tlv
    return b"\r\n\r\n\0\r\nQUIT\n" + bytes([0x20 | cmd, fam]) + struct.pack(">H", len(body)) + body

proxy = [
    b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n{\"jsonrpc\"",
    b"PROXY TCP6 2001:db8::9 2001:db8::1 6000 443\r\n",
    b"PROXY UNKNOWN\r\nGET",
    b"PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n",
    v2(1, 0x11, bytes([192, 0, 2, 7, 10, 0, 0, 1, 0x15, 0xb3, 0x01, 0xbb])) + b"POST ",
    v2(1, 0x21, bytes(range(16)) + bytes(range(16)) + b"\x17\x70\x01\xbb"),
    v2(0, 0x00, b""),
    v2(1, 0x31, b"/tmp/a".ljust(108, b"\0") + b"/tmp/b".ljust(108, b"\0")),
    v2(1, 0x11, bytes(12), tlv=b"\x01\x00\x02h2\x04\x00\x00"),
]
write("proxy_header", proxy)
write("sniff_probes", proxy + [
    b"POST /RPC2 HTTP/1.1\r\n", b"GET /health HTTP/1.0\r\n", b"M-SEARCH * HTTP/1.1",
    b"  \r\n{\"jsonrpc\"", b"[{", bytes([0x94, 0x00, 0x01]), bytes([0x93, 0x02]),
    b"CONNECT\naccept-version:1.2\n", b"\n\r\n\r\nSTOMP\r\n", b"\rX", b"UNSUBSCRIBE\r\n",
    bytes([0x16, 0x03, 0x01, 0x00, 0xf1, 0x01]),
    b"PROXY TCP4", b"\r\n\r\n\0\r\nQUI",
])
