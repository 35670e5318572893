#!/usr/bin/python3
"""Rejects the ping (it validates every input) but dumps its schema."""
import json
import sys

if len(sys.argv) == 2 and sys.argv[1] == "--fractalic-dump-schema":
    print(json.dumps({"name": "strict_add", "description": "Add two numbers", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}, indent=2))
    sys.exit(0)
try:
    p = json.loads(sys.argv[1])
    if "a" not in p or "b" not in p:
        raise ValueError("a and b are required")
    print(json.dumps({"sum": p["a"] + p["b"]}))
except Exception as e:
    print(json.dumps({"error": str(e)}))
    sys.exit(1)
