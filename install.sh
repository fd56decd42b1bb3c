#!/bin/sh
# install.sh: copy notrest into a project and wire its hooks for Claude Code and Codex.
#   sh install.sh [--client claude|codex|both] [DIR]        install (DIR: default .)
#   sh install.sh --uninstall [--purge] [DIR]                remove what install wrote
# Needs only sh and python3 >= 3.9; works offline. Exit codes as `notrest --help`.
set -eu
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
py=''
for cand in "${NOTREST_PYTHON:-}" python3 python3.13 python3.12 python3.11 python3.10 python3.9; do
  [ -n "$cand" ] || continue
  command -v "$cand" >/dev/null 2>&1 || continue
  if found=$("$cand" -I -S -c 'import sys; sys.version_info >= (3, 9) or sys.exit(1); print(sys.executable)' 2>/dev/null); then
    py=$found
    break
  fi
done
if [ -z "$py" ]; then
  printf 'notrest: install needs python3 >= 3.9 on PATH (or NOTREST_PYTHON=/path/to/python3)\n' >&2
  exit 3
fi
exec "$py" -I -S "$here/notrest.py" install --python "$py" "$@"
