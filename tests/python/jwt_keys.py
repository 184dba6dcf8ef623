"""Make a JWT key for `rpcmux serve --auth` with `cryptography`, fresh for each test run.

Usage: jwt_keys.py DIR KIND    (KIND: hs256, rs256, es256, eddsa)

Writes into DIR what the token minter (jwt_tokens.py) signs with and what the server
checks with:
  hs256  jwt.hex: 32 random bytes as 0x-prefixed hex, geth's jwt.hex format (the same
         file is the minter's secret)
  other  private.pem (PKCS#8, the minter's) and public.pem (SubjectPublicKeyInfo, the
         server's): RSA 2048, EC P-256 or Ed25519
Prints the credentials-file line naming the server's file, for the [jwt] section.
"""
import os
import secrets
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

out, kind = sys.argv[1], sys.argv[2]


def private_key(kind):
    if kind == "rs256":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if kind == "es256":
        return ec.generate_private_key(ec.SECP256R1())
    if kind == "eddsa":
        return ed25519.Ed25519PrivateKey.generate()
    raise SystemExit(f"unknown key kind {kind!r}")


def write(name, data, mode):
    path = os.path.join(out, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


if kind == "hs256":
    write("jwt.hex", ("0x" + secrets.token_hex(32) + "\n").encode(), 0o600)
    print('hs256_secret_file = "jwt.hex"')
else:
    key = private_key(kind)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    write("private.pem", pem, 0o600)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    write("public.pem", public, 0o644)
    print('public_key_file = "public.pem"')
