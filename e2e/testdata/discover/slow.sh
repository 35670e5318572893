#!/bin/bash
# Takes 300 ms to start (a slow interpreter or import), then answers.
sleep 0.3
case "$1" in
'{"__test__": true}') echo '{"success": true, "_simple": true}' ;;
--fractalic-dump-schema) echo '{"name": "slow_echo", "description": "Echo after a pause", "parameters": {"type": "object", "properties": {"msg": {"type": "string", "description": "Message"}}}}' ;;
*) printf '{"got": %s}\n' "$1" ;;
esac
