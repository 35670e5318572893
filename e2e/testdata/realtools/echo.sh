#!/bin/sh
# A shell tool at the top: answers the ping, echoes its JSON back.
case "$1" in
'{"__test__": true}') echo '{"success": true, "_simple": true}' ;;
--fractalic-dump-schema) echo '{"name": "echo_json", "description": "Echo the JSON it gets", "parameters": {"type": "object", "properties": {"value": {"description": "any JSON value"}}}}' ;;
*) printf '%s\n' "$1" ;;
esac
