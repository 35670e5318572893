#!/usr/bin/python3
"""Dumps a bare JSON Schema of its parameters."""
import json
import sys

if len(sys.argv) == 2 and sys.argv[1] == '{"__test__": true}':
    print(json.dumps({"success": True, "_simple": True}))
elif len(sys.argv) == 2 and sys.argv[1] == "--fractalic-dump-schema":
    print(json.dumps({"type": "object", "description": "Count words", "properties": {"text": {"type": "string", "description": "Text to count"}}, "required": ["text"]}))
else:
    print(json.dumps({"words": len(json.loads(sys.argv[1]).get("text", "").split())}))
