"""Validate an OpenRPC document (rpcmux's `rpc.discover`) with a real validator.

Usage: openrpc_validate.py URL

Calls `rpc.discover` over JSON-RPC/HTTP at URL, then validates the result with the
`jsonschema` package against the official OpenRPC meta-schema (openrpc/meta-schema-*.json,
from the npm package @open-rpc/meta-schema 1.14.9, and the JSON Schema meta-schema it
refers to, openrpc/json-schema-tools-meta-schema-*.json, from @json-schema-tools/meta-schema
1.8.0; both Apache-2.0; no network at test time) and checks every
parameter and result schema is itself a valid JSON Schema (draft-07). Prints
`valid: N methods` and exits 0, or prints each error and exits 1.
"""
import json
import pathlib
import sys
import urllib.request

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

here = pathlib.Path(__file__).parent / "openrpc"
meta = json.loads(next(here.glob("meta-schema-*.json")).read_text())
tools = json.loads(next(here.glob("json-schema-tools-meta-schema-*.json")).read_text())
# The OpenRPC schema refers to the JSON Schema meta-schema by URL: served from the file.
tools_resource = Resource.from_contents(tools, default_specification=DRAFT7)
registry = Registry().with_resources(
    [("https://meta.json-schema.tools", tools_resource), ("https://meta.json-schema.tools/", tools_resource)]
)

req = json.dumps({"jsonrpc": "2.0", "method": "rpc.discover", "id": 1}).encode()
with urllib.request.urlopen(
    urllib.request.Request(sys.argv[1], req, {"Content-Type": "application/json"}), timeout=10
) as r:
    reply = json.load(r)
doc = reply["result"]

errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in jsonschema.Draft7Validator(meta, registry=registry).iter_errors(doc)]
for m in doc.get("methods", []):
    for where, schema in [(p["name"], p["schema"]) for p in m.get("params", [])] + [("result", m["result"]["schema"])]:
        try:
            jsonschema.Draft7Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            errors.append(f"{m['name']} {where}: not a JSON Schema: {e.message}")
if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"valid: {len(doc['methods'])} methods")
