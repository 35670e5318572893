#!/usr/bin/env python3
"""Runs nothing: reports how it was called, with the JSON types it got."""
import json
import sys

from os_helpers import describe

SCHEMA = {
    "name": "shell_tool",
    "description": "Reports a command line and its options",
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "the command"},
            "timeout": {"type": ["number", "boolean"], "description": "seconds, or false for none"},
            "args": {"type": "array", "items": {"type": "string"}, "description": "arguments"},
            "env": {"type": "object", "description": "environment"},
            "extra": {"description": "anything at all"},
        },
        "required": ["command"],
    },
}


def main():
    if len(sys.argv) == 2 and sys.argv[1] == '{"__test__": true}':
        print(json.dumps({"success": True, "_simple": True}))
        return
    if len(sys.argv) == 2 and sys.argv[1] == "--fractalic-dump-schema":
        print(json.dumps(SCHEMA))
        return
    try:
        p = json.loads(sys.argv[1])
        out = {"command": p["command"], "types": {k: describe(v) for k, v in p.items()}}
        t = p.get("timeout", 5)
        if t is not False:
            out["deadline"] = t + 1  # fails on a string, as real tools do
        out["argc"] = len(p.get("args", []))
        out["args"] = p.get("args", [])
        out["env"] = p.get("env", {})
        if "extra" in p:
            out["extra"] = p["extra"]
        print(json.dumps(out, sort_keys=True, ensure_ascii=False))
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": str(e)}))
        sys.exit(1)


if __name__ == "__main__":
    main()
