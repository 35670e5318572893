#!/bin/sh
# A second tool that becomes the tool name "ls": discover skips it and says
# which script took the name.
case "$1" in
  '{"__test__": true}') echo '{"success": true, "_simple": true}' ;;
  --fractalic-dump-schema) echo '{"name": "ls", "parameters": {"type": "object", "properties": {}}}' ;;
  *) echo '{"error": "not for use"}'; exit 1 ;;
esac
