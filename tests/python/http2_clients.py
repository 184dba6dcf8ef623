"""httpx with http2=True against rpcmux: JSON-RPC and XML-RPC bodies, then many calls at
once on one connection (asyncio.gather), each checked to have gone over HTTP/2.

Usage: http2_clients.py URL N  (N concurrent `sleep` calls of SLEEP_MS each).
Prints `ok <what>` lines, then `elapsed <seconds>` for the concurrent calls; exits
non-zero (an assertion) on any wrong answer.
"""

import asyncio
import json
import sys
import time
import xmlrpc.client

import httpx

SLEEP_MS = 500


def check_v2(r: httpx.Response, what: str) -> None:
    assert r.http_version == "HTTP/2", f"{what}: {r.http_version}"
    assert r.status_code == 200, f"{what}: {r.status_code} {r.text[:200]}"


async def main(url: str, n: int) -> None:
    # http1=False: prior knowledge over cleartext (httpx then speaks HTTP/2 from the
    # first byte; with both, it would use HTTP/1.1 for http:// URLs).
    async with httpx.AsyncClient(http1=False, http2=True, timeout=30) as c:
        body = {"jsonrpc": "2.0", "method": "echo", "params": [{"k": [1, 2.5, None, "s"]}], "id": 7}
        r = await c.post(url, content=json.dumps(body), headers={"content-type": "application/json"})
        check_v2(r, "jsonrpc")
        assert r.json() == {"jsonrpc": "2.0", "result": {"k": [1, 2.5, None, "s"]}, "id": 7}, r.text
        print("ok jsonrpc echo")

        xml = xmlrpc.client.dumps(({"a": [1, "two", 3.5]},), methodname="echo")
        r = await c.post(url + "RPC2", content=xml, headers={"content-type": "text/xml"})
        check_v2(r, "xmlrpc")
        (result,), _ = xmlrpc.client.loads(r.content)
        assert result == {"a": [1, "two", 3.5]}, result
        print("ok xmlrpc echo")

        async def sleep(i: int) -> None:
            req = {"jsonrpc": "2.0", "method": "sleep", "params": [SLEEP_MS], "id": i}
            r = await c.post(url, json=req)
            check_v2(r, f"sleep {i}")
            assert r.json() == {"jsonrpc": "2.0", "result": SLEEP_MS, "id": i}, r.text

        t = time.monotonic()
        await asyncio.gather(*(sleep(i) for i in range(n)))
        print(f"ok {n} concurrent sleeps")
        print(f"elapsed {time.monotonic() - t:.3f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
