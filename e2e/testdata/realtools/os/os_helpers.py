"""Helpers shared by the tools of this folder (imported, never run)."""


def describe(value):
    """Names the JSON type of a value as the script received it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"
