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
# The boot (no single quote may appear in it): it imports notrest_<part>.py, the
# generated module beside notrest.py, by importlib's SourceFileLoader with
# sys.pycache_prefix set to notrest's data folder, so its bytecode is read from,
# and on a change written to, a place the agent cannot write; then runs hook_main.
# It goes on only when the module and its bytecode are regular files (a FIFO would
# hold the hook until the client's timeout, and a client runs the call when a hook
# gives no answer); anything else runs the slow boot, an argument compiled only
# then (as is the answer to a failure, fail): a module that is missing falls back to notrest.py, bytecode that cannot
# be read or written to compiling, and LOAD_FALLBACKS says why (hook_main
# journals it). The interpreter runs with -OO: no docstrings to unmarshal
# (notrest reads none and has no assert). Measured (bench/callgrind.py, one
# PreToolUse allow, instructions): the collector off while the module body runs
# and its objects frozen afterwards saves 7%; the loader from
# sys.modules, not importlib.machinery and importlib.util, 22%;
# the slow boot kept out of the boot 3%; os._exit after the answer
# (exit_now) 7%.
boot='import sys, gc, os
gc.disable()
a = sys.argv
try:
    e = sys.modules["_frozen_importlib_external"]
    d = os.path.abspath(a[1])
    try:
        n = "notrest_" + a[5]
        f = d + "/" + n + ".py"
        sys.pycache_prefix = a[2]
        c = e.cache_from_source(f)
        s = os.stat(f)
        if s.st_mode >> 12 != 8 or s.st_size >> 24 or os.stat(c).st_mode >> 12 != 8:
            raise OSError(c)
        l = e.SourceFileLoader(n, f)
        b = l.get_code(n)
        w = []
    except Exception:
        exec(a[3])
    sys.pycache_prefix = None
    g = sys.modules[n] = type(sys)(n)
    g.__file__ = d + "/notrest.py"
    g.__loader__ = l
    exec(b, vars(g))
    g.LOAD_FALLBACKS.extend(w)
    gc.freeze()
    gc.enable()
    g.exit_now(g.hook_main(a[6:]))
except BaseException as x:
    exec(a[4])'
fail='os.write(2, ("notrest: the hook could not load notrest.py from %s (%r). Fix: reinstall notrest (sh install.sh DIR) or run notrest doctor\n" % (a[1:2], x)).encode("utf-8", "replace"))
x = a[6:7] and a[6] in "PreToolUse PermissionRequest UserPromptSubmit Stop"
x or os.write(1, b"{}\n")
os._exit(3 if x else 0)'
slow='w = []
for n in ("notrest_" + a[5], "notrest"):
    f = d + "/" + n + ".py"
    try:
        s = os.stat(f)
        if s.st_mode >> 12 == 8 and not s.st_size >> 24:
            break
    except OSError:
        pass
    w.append(f + " is missing or not a regular file")
else:
    raise OSError(d + ": no notrest.py to import")
sys.pycache_prefix = a[2] or os.path.expanduser("~/.local/share/notrest/pycache")
c = e.cache_from_source(f)
l = e.SourceFileLoader(n, f)
try:
    k = os.stat(c).st_mode >> 12
except OSError:
    k = 0
b = None
if k in (0, 8):
    try:
        b = l.get_code(n)
    except (ValueError, EOFError, TypeError):
        pass
if b is None:
    w.append(c + " is not a regular file of bytecode")
    b = l.source_to_code(l.get_data(f), f)
if k != 8 and not os.path.isfile(c):
    w.append("the bytecode cannot be written to " + c + ", so each hook compiles " + f)'
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
# the hooks' bytecode: pycache_prefix(), data_dir()/pycache by data_dir()'s rules
case ${NOTREST_DATA_DIR:-} in
/*) pyc=$NOTREST_DATA_DIR/pycache ;;
*) case ${XDG_DATA_HOME:-} in
  /*) pyc=$XDG_DATA_HOME/notrest/pycache ;;
  *) pyc=${HOME:+$HOME/.local/share/notrest/pycache} ;;
  esac ;;
esac
case $2 in
PreToolUse | PermissionRequest | UserPromptSubmit | Stop)
  # the answer is held, not streamed: a process that ends without a JSON object
  # (a crash printing nothing, the interpreter swapped for /bin/true) refuses,
  # whatever its exit code (exit 2 below is a refusal in both clients)
  out=$("$py" -I -S -OO -c "$boot" "$dir/.." "$pyc" "$slow" "$fail" "$@")
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
exec "$py" -I -S -OO -c "$boot" "$dir/.." "$pyc" "$slow" "$fail" "$@"
