#!/usr/bin/python3
"""Prints the ping answer twice (a debugging print left in)."""
import json
import sys

if len(sys.argv) == 2 and sys.argv[1] == '{"__test__": true}':
    print(json.dumps({"success": True, "_simple": True}))
    print(json.dumps({"success": True, "_simple": True}))
    sys.exit(0)
if len(sys.argv) == 2 and sys.argv[1] == "--fractalic-dump-schema":
    print(json.dumps({"description": "Echo text back", "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "Text"}}, "required": ["text"]}}))
    sys.exit(0)
print(json.dumps({"echo": json.loads(sys.argv[1]).get("text")}))
