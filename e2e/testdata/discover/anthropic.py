#!/usr/bin/python3
"""Dumps input_schema/output_schema, and several tools."""
import json
import sys

TOOLS = [
    {"name": "to_upper", "description": "Upper-case text", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, "output_schema": {"type": "object", "properties": {"result": {"type": "string"}}}},
    {"name": "to_lower", "description": "Lower-case text", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}, "output_schema": {"type": "object", "properties": {"result": {"type": "string"}}}},
]

arg = sys.argv[1] if len(sys.argv) > 1 else ""
if arg == '{"__test__": true}':
    print(json.dumps({"success": True, "_simple": True}))
elif arg == "--fractalic-dump-multi-schema":
    print(json.dumps(TOOLS))
else:
    p = json.loads(arg)
    f = {"to_upper": str.upper, "to_lower": str.lower}.get(p.get("action"))
    if f is None:
        print(json.dumps({"error": "unknown action %r" % p.get("action")}))
        sys.exit(1)
    print(json.dumps({"result": f(p["text"])}))
