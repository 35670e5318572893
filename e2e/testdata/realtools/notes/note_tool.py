#!/usr/bin/env python3
"""Appends a note to FOLDER/notes/NAME, making the notes folder if needed."""
import json
import os
import sys

SCHEMA = {
    "name": "note_tool",
    "description": "Appends a note to a file in a folder",
    "parameters": {
        "type": "object",
        "properties": {
            "folder": {"type": "string", "description": "the folder that keeps the notes"},
            "name": {"type": "string", "description": "the note's file name"},
            "text": {"type": "string", "description": "what to append"},
        },
        "required": ["folder", "name", "text"],
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
        notes = os.path.join(p["folder"], "notes")
        os.makedirs(notes, exist_ok=True)
        with open(os.path.join(notes, p["name"]), "a") as f:
            n = f.write(p["text"])
        print(json.dumps({"file": "notes/" + p["name"], "bytes": n}))
    except Exception as e:
        print(json.dumps({"error": str(e)}))
        sys.exit(1)


if __name__ == "__main__":
    main()
