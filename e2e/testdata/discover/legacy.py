#!/usr/bin/python3
"""The legacy argparse pattern: a schema dump, --option arguments."""
import argparse
import json

SCHEMA = {
    "name": "legacy_convert",
    "description": "Convert a temperature",
    "parameters": {
        "type": "object",
        "properties": {
            "celsius": {"type": "number", "description": "Degrees Celsius"},
            "to_unit": {"type": "string", "enum": ["F", "K"], "description": "Target unit"},
            "verbose": {"type": "boolean", "description": "Say more"},
        },
        "required": ["celsius"],
    },
}

parser = argparse.ArgumentParser(description="Convert a temperature")
parser.add_argument("--celsius", type=float)
parser.add_argument("--to-unit", choices=["F", "K"], default="F")
parser.add_argument("--verbose", action="store_true")
parser.add_argument("--fractalic-dump-schema", action="store_true", help=argparse.SUPPRESS)
args = parser.parse_args()
if args.fractalic_dump_schema:
    print(json.dumps(SCHEMA, indent=2))
else:
    v = args.celsius * 9 / 5 + 32 if args.to_unit == "F" else args.celsius + 273.15
    out = {"value": v}
    if args.verbose:
        out["unit"] = args.to_unit
    print(json.dumps(out))
