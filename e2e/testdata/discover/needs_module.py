#!/usr/bin/python3
"""Crashes at import: a module that is not installed."""
import json
import sys
import requests_not_installed_here  # noqa: F401

print(json.dumps({"success": True, "_simple": True}))
