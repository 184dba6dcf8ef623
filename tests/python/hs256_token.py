"""Mint an HS256 JWT with the standard library alone (hmac, hashlib): an implementation
independent of the server's, for the bypass suite (tests/operations/auth_bypass/).

Usage: hs256_token.py SECRET_HEX SUB EXP_OFFSET_SECONDS
Prints the token: header {"alg":"HS256","typ":"JWT"}, claims {sub, iat, exp = now + offset}.
"""

import base64
import hashlib
import hmac
import json
import sys
import time


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def main():
    secret, sub, offset = bytes.fromhex(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    now = int(time.time())
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": sub, "iat": now, "exp": now + offset}).encode())
    signed = f"{head}.{claims}".encode()
    sig = b64(hmac.new(secret, signed, hashlib.sha256).digest())
    print(f"{head}.{claims}.{sig}")


if __name__ == "__main__":
    main()
