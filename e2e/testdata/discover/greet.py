#!/usr/bin/python3
"""Greets someone: the simple JSON convention with a schema dump."""
import json
import sys


def main():
    if len(sys.argv) == 2 and sys.argv[1] == '{"__test__": true}':
        print(json.dumps({"success": True, "_simple": True}))
        return
    if len(sys.argv) == 2 and sys.argv[1] == "--fractalic-dump-schema":
        print(json.dumps({
            "name": "greet",
            "description": "Greet someone by name",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Who to greet"},
                    "times": {"type": "integer", "description": "How many times", "minimum": 1, "maximum": 3},
                },
                "required": ["name"],
            },
        }))
        return
    try:
        params = json.loads(sys.argv[1])
        if params.get("name") == "nobody":
            print(json.dumps({"error": "cannot greet nobody"}))
            sys.exit(1)
        n = int(params.get("times", 1))
        print(json.dumps({"greeting": " ".join(["Hello, %s!" % params["name"]] * n)}, ensure_ascii=False))
    except Exception as e:
        print(json.dumps({"error": str(e)}))
        sys.exit(1)


if __name__ == "__main__":
    main()
