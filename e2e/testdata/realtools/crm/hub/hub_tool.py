#!/usr/bin/env python3
"""Two tools in one script, told apart by "action"."""
import json
import sys

import hub_helpers

TOOLS = [
    {
        "name": "hub_search",
        "description": "Search records by name and tags",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "part of a name"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "any of these tags"},
                "limit": {"type": "integer", "minimum": 1, "description": "how many"},
                "filters": {"type": "object", "properties": {"min_id": {"type": "number"}}, "description": "more filters"},
            },
            "required": ["query"],
        },
    },
    {
        "name": "hub_count",
        "description": "Count records",
        "parameters": {"type": "object", "properties": {"verbose": {"type": ["boolean", "string"], "description": "say more"}}},
    },
]


def main():
    arg = sys.argv[1] if len(sys.argv) == 2 else ""
    if arg == '{"__test__": true}':
        print(json.dumps({"success": True, "_simple": True}))
        return
    if arg == "--fractalic-dump-multi-schema":
        print(json.dumps(TOOLS))
        return
    p = json.loads(arg)
    if p.get("action") == "hub_count":
        print(json.dumps({"count": len(hub_helpers.RECORDS), "verbose": p.get("verbose")}, sort_keys=True))
        return
    hits = hub_helpers.search(p["query"], p.get("tags", []), p.get("limit", 10))
    min_id = p.get("filters", {}).get("min_id", 0)
    hits = [h for h in hits if h["id"] >= min_id]
    print(json.dumps({"hits": hits, "limit": p.get("limit")}, sort_keys=True))


if __name__ == "__main__":
    main()
