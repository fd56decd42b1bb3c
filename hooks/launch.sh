# notrest: the common tail of the hook launchers (sourced by them, never run).
# Arguments: the part of notrest.py to load (hot or warm), the event, the client.
# It execs the interpreter recorded at install time (python3 on PATH is the
# fallback) with -I -S, loading that part from a bytecode cache when fresh, else
# the whole module.
# shellcheck disable=SC2154  # dir is set by the launcher that sources this
py=''
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
    with open("%s/notrest.%s.%s.bin" % (c, sys.argv[2], sys.implementation.cache_tag), "rb") as f:
        b = f.read()
    if b[:20] != sys.modules["_frozen_importlib_external"].MAGIC_NUMBER + s.st_mtime_ns.to_bytes(8, "little") + s.st_size.to_bytes(8, "little"):
        raise OSError("stale")
    g = {"__name__": "notrest_hot", "__file__": d + "/notrest.py", "__builtins__": __builtins__}
    exec(__import__("marshal").loads(b[20:]), g)
except Exception:
    import notrest
    g = vars(notrest)
g["exit_now"](g["hook_main"](sys.argv[3:]))' "$dir/.." "$@"
