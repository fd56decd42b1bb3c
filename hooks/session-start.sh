#!/bin/sh
# notrest hook launcher: SessionStart (journal the start, inject the start packet).
# Called by Claude Code or Codex CLI with the event's JSON payload on stdin;
# the optional first argument names the client. It answers one JSON object on
# stdout and exits 0 (a deny or a block is inside that JSON). It never blocks on
# its own failure, except the PreToolUse gate, which fails closed.
# The interpreter was recorded at install time; python3 on PATH is the fallback.
py=''
case $0 in */*) dir=${0%/*} ;; *) dir=. ;; esac
[ -x "$py" ] || py=python3
exec "$py" -I -S -c 'import sys; sys.path.insert(0, sys.argv[1]); import notrest; sys.exit(notrest.hook_main(sys.argv[2:]))' "$dir/.." SessionStart "$@"
