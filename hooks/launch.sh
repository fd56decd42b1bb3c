# notrest: the common tail of the hook launchers (sourced by them, never run).
# Arguments: the part of notrest.py to load (hot or warm), the event, the client.
# It runs the interpreter recorded at install time (python3 on PATH is the
# fallback) with -I -S. When no interpreter can be found, or the gate process
# ends without a JSON answer (notrest.py unloadable, a crash), it answers itself:
# PreToolUse and PermissionRequest refuse the call, UserPromptSubmit blocks the
# prompt, Stop blocks once (not when the payload says stop_hook_active), every
# other event lets the client go on. Exit 2 is a refusal in both clients.
# shellcheck disable=SC2154  # dir is set by the launcher that sources this
py=''
{ [ -f "$py" ] && [ -x "$py" ]; } || py=$(command -v python3 2>/dev/null)
boot='import sys, gc
if "os" not in sys.modules:
    class MutableMapping:
        __slots__ = ()
        __hash__ = None
        def get(self, key, default=None):
            try:
                return self[key]
            except KeyError:
                return default
        def __contains__(self, key):
            try:
                self[key]
            except KeyError:
                return False
            return True
        def keys(self):
            return list(self)
        def items(self):
            return [(k, self[k]) for k in self]
        def values(self):
            return [self[k] for k in self]
        def __eq__(self, other):
            return dict(self.items()) == dict(other.items()) if hasattr(other, "items") else NotImplemented
        def pop(self, key, *default):
            try:
                value = self[key]
            except KeyError:
                if default:
                    return default[0]
                raise
            del self[key]
            return value
        def popitem(self):
            for key in self:
                return key, self.pop(key)
            raise KeyError("popitem(): empty")
        def clear(self):
            for key in list(self):
                del self[key]
        def update(self, other=(), **more):
            for key, value in list(other.items() if hasattr(other, "keys") else other) + list(more.items()):
                self[key] = value
        def setdefault(self, key, default=None):
            try:
                return self[key]
            except KeyError:
                self[key] = default
                return default
    def _check_methods(C, *methods):
        for method in methods:
            for B in C.__mro__:
                if method in B.__dict__:
                    if B.__dict__[method] is None:
                        return NotImplemented
                    break
            else:
                return NotImplemented
        return True
    m = type(sys)("_collections_abc")
    m.Mapping = m.MutableMapping = MutableMapping
    m._check_methods = _check_methods
    sys.modules["_collections_abc"] = m
    try:
        import os
    except Exception:
        sys.modules.pop("os", None)
    del sys.modules["_collections_abc"], m, MutableMapping, _check_methods
import os
a = sys.argv
try:
    d = os.path.abspath(a[1])
    f = d + "/notrest.py"
    g = None
    gc.disable()
    try:
        s = os.stat(f)
        h = os.open(a[2], 2048)
        t = os.fstat(h)
        q = os.read(h, 64)
        os.close(h)
        h = os.open("%s/notrest.%s.%s.bin" % (a[3] or os.path.expanduser("~/.cache/notrest") + d, a[4], sys.implementation.cache_tag), 2048)
        u = os.fstat(h)
        b = os.read(h, u.st_size + 1) if u.st_mode >> 12 == 8 and u.st_size < 33554432 else b""
        os.close(h)
        v = int(q[:16], 16)
        m = memoryview(b)
        if t.st_mode >> 12 == 8 and t.st_uid == os.getuid() and not t.st_mode & 63 and b[:44] == b"NRC\2" + a[4].encode().ljust(4, b"\0") + sys.modules["_frozen_importlib_external"].MAGIC_NUMBER + b"".join((n & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") for n in (s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)) and sys.modules["_imp"].source_hash(v - (v >> 63 << 64), m[:-8]) == b[-8:]:
            g = {"__name__": "notrest_hot", "__file__": f, "__builtins__": __builtins__, "_lazy_blob": m}
            exec(sys.modules["marshal"].loads(m[44:-8]), g)
    except Exception:
        g = None
    if g is None:
        exec("h = os.open(f, 2048)\nu = os.fstat(h)\nif u.st_mode >> 12 != 8 or u.st_size >> 24:\n    raise OSError(f + \": no regular file of a sane size\")\nb = os.read(h, u.st_size + 1)\nos.close(h)\ng = sys.modules[\"notrest\"] = type(sys)(\"notrest\")\ng.__file__ = f\ng = vars(g)\nexec(compile(b, f, \"exec\", dont_inherit=True), g)\ng[\"COMMANDS\"]")
    gc.freeze()
    gc.enable()
    g["exit_now"](g["hook_main"](a[5:]))
except BaseException as x:
    os.write(2, ("notrest: the hook could not load notrest.py from %s (%r). Fix: reinstall notrest (sh install.sh DIR) or run notrest doctor\n" % (a[1:2], x)).encode("utf-8", "replace"))
    x = a[5:6] and a[5] in "PreToolUse PermissionRequest UserPromptSubmit Stop"
    x or os.write(1, b"{}\n")
    os._exit(3 if x else 0)'
# the boot, compiled at install by that interpreter (boot.bin): the loader runs it,
# or compiles the boot above when it is absent or for another Python
load='import sys
a = sys.argv
s = a.pop(2)
try:
    p = sys.modules["posix"]
    h = p.open(a.pop(1), 2048)
    b = p.read(h, 65536) if p.fstat(h).st_mode >> 12 == 8 else b""
    p.close(h)
    if b[:4] == sys.modules["_frozen_importlib_external"].MAGIC_NUMBER:
        c = sys.modules["marshal"].loads(b[16:])
        s = c if hasattr(c, "co_code") else s
except Exception:
    pass
exec(s)'
if [ -z "$py" ]; then
  why='no Python to run the hook: the recorded interpreter (none) is gone and python3 is not on PATH. Fix: install Python 3.9+ and run install.sh again (sh install.sh DIR), then notrest doctor'
  case $2 in
  PreToolUse)
    printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"notrest deny [gate-error]: %s"}}\n' "$why" ;;
  PermissionRequest)
    printf '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"notrest deny [gate-error]: %s"}}}\n' "$why" ;;
  UserPromptSubmit)
    printf '{"decision":"block","reason":"notrest block [gate-error]: %s"}\n' "$why"
    printf 'notrest: %s\n' "$why" >&2 ;;
  Stop)
    case $(dd bs=4096 count=16 2>/dev/null | tr -d ' \t\r\n') in
    *'"stop_hook_active":true'*)
      printf '{}\n'
      printf 'notrest: %s\n' "$why" >&2 ;;
    *)
      printf '{"decision":"block","reason":"notrest block [gate-error]: %s Bank a note if you changed files and tell the person; the next stop is allowed."}\n' "$why" ;;
    esac ;;
  *)
    printf '{}\n'
    printf 'notrest: %s\n' "$why" >&2 ;;
  esac
  exit 0
fi
# the key that signs the caches: data_dir()/key, by data_dir()'s rules
case ${NOTREST_DATA_DIR:-} in
/*) key=$NOTREST_DATA_DIR/key ;;
*) case ${XDG_DATA_HOME:-} in
  /*) key=$XDG_DATA_HOME/notrest/key ;;
  *) key=${HOME:-}/.local/share/notrest/key ;;
  esac ;;
esac
# the caches: in __pycache__ when it (or the code folder) is writable, else the
# boot looks in the mirror under ~/.cache/notrest (cache_dir())
cache=$dir/../__pycache__
if [ -d "$cache" ]; then [ -w "$cache" ] || cache=; else [ -w "$dir/.." ] || cache=; fi
case $2 in
PreToolUse | PermissionRequest | UserPromptSubmit | Stop)
  # the answer is held, not streamed: a process that ends without a JSON object
  # (a crash printing nothing, the interpreter swapped for /bin/true) refuses,
  # whatever its exit code (exit 2 below is a refusal in both clients)
  out=$("$py" -I -S -c "$load" "$dir/boot.bin" "$boot" "$dir/.." "$key" "$cache" "$@")
  rc=$?
  case $rc$out in
  '0{'*'}')
    printf '%s
' "$out"
    exit 0 ;;
  esac
  if [ "$2" = Stop ]; then
    case $(dd bs=4096 count=16 2>/dev/null | tr -d ' \t\r\n') in
    *'"stop_hook_active":true'*)
      printf '{}\n'
      exit 0 ;;
    esac
  fi
  printf 'notrest %s [gate-error]: the hook process (%s) ended (exit %s) without a JSON answer before it could judge, so it refuses to stay safe. Fix: run notrest doctor (or reinstall: sh install.sh).\n' "$2" "$py" "$rc" >&2
  exit 2 ;;
esac
exec "$py" -I -S -c "$load" "$dir/boot.bin" "$boot" "$dir/.." "$key" "$cache" "$@"
