"""Parse rpcmux's GET /metrics with prometheus_client's parsers.

Usage: metrics_parse.py FILE openmetrics|classic

Prints one JSON object: {"name{label=value,...}": value} for every sample, labels sorted,
so a test can check counted values. Exits non-zero if the parser refuses the text.
"""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as classic

text = open(sys.argv[1]).read()
text_string_to_metric_families = {"openmetrics": openmetrics, "classic": classic}[sys.argv[2]]
samples = {}
for family in text_string_to_metric_families(text):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        samples[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps(samples))
