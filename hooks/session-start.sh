#!/bin/sh
# notrest hook launcher: SessionStart (journal the start, inject the start packet).
# Called by Claude Code or Codex CLI with the event's JSON payload on stdin;
# the optional first argument names the client. It answers one JSON object on
# stdout and exits 0 (a deny or a block is inside that JSON). Whatever fails,
# the gates (PreToolUse, PermissionRequest, the prompt and stop laws) still
# answer a refusal; the other hooks let the client go on.
case $0 in */*) dir=${0%/*} ;; *) dir=. ;; esac
set -- warm SessionStart "$@"
# shellcheck source=/dev/null
. "$dir/launch.sh"
