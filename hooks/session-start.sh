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
exec "$py" -I -S -c 'import sys, os
d = os.path.abspath(sys.argv[1])
sys.path.insert(0, d)
c = d + "/__pycache__"
if not os.access(c if os.path.isdir(c) else d, os.W_OK):
    c = os.path.expanduser("~/.cache/notrest") + d
    sys.pycache_prefix = os.path.expanduser("~/.cache/notrest/pycache")
try:
    s = os.stat(d + "/notrest.py")
    with open("%s/notrest.warm.%s.bin" % (c, sys.implementation.cache_tag), "rb") as f:
        b = f.read()
    if b[:20] != sys.modules["_frozen_importlib_external"].MAGIC_NUMBER + s.st_mtime_ns.to_bytes(8, "little") + s.st_size.to_bytes(8, "little"):
        raise OSError("stale")
    g = {"__name__": "notrest_hot", "__file__": d + "/notrest.py", "__builtins__": __builtins__}
    exec(__import__("marshal").loads(b[20:]), g)
except Exception:
    import notrest
    g = vars(notrest)
g["exit_now"](g["hook_main"](sys.argv[2:]))' "$dir/.." SessionStart "$@"
