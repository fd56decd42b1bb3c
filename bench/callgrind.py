"""Instruction counts of one hook launch, with valgrind's callgrind (load does not move
them, unlike wall or CPU time): a PreToolUse allow and a PostToolUse, as the client
runs them, for the checkout and, with --base DIR, for an older notrest side by side.

    python3 bench/callgrind.py [--base DIR] [--variants] [--runs N]

Each project is installed with install.sh (HOME inside a temp dir) and warmed by one
run of each hook; then every hook runs under `valgrind --tool=callgrind
--trace-children=yes` (the sh launcher and the interpreter it starts) and the
instructions of all its processes are summed. --variants also measures the
checkout's launcher with one trick of its boot undone at a time (the figures the
comments in LAUNCH_TAIL cite). Stdlib only; needs valgrind on PATH.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

HOOKS = (("PreToolUse allow", "PreToolUse", "claude-PreToolUse.json",
          {"tool_input": {"command": "ls -la src", "description": "look"}}),
         ("PostToolUse", "PostToolUse", "claude-PostToolUse.json", {}))
# (name, what it undoes in the installed launch.sh: old text -> new text)
VARIANTS = (
    ("no gc off/freeze", (("gc.disable()\n", ""), ("    gc.freeze()\n    gc.enable()\n", ""))),
    ("importlib.machinery+util", (('e = sys.modules["_frozen_importlib_external"]',
                                   "import importlib.machinery as e, importlib.util as u\n"
                                   "    e.cache_from_source = u.cache_from_source"),)),
    ("slow boot inside the boot", lambda text: text.replace(
        "    except Exception:\n        exec(a[3])\n", "    except Exception:\n        "
        "exec(a[3])\n    if 0:\n" + "".join("        %s\n" % line for line in text.split(
            "\nslow=\'", 1)[1].split("\'\n", 1)[0].splitlines()), 1)),
    ("without -OO", ((" -OO -c", " -c"),)),
    ("with -X no_debug_ranges", ((" -OO -c", " -OO -X no_debug_ranges -c"),)),
    ("exit through teardown", (("g.exit_now(g.hook_main(a[6:]))",
                                "sys.stdout.flush()\n    r = g.hook_main(a[6:])"),
                               ("    exec(a[4])\'", "    exec(a[4])\nsys.exit(r)\'"))),
)


def collected(stderr):
    return sum(int(n.replace(",", "")) for n in re.findall(r"Collected : ([\d,]+)", stderr))


def count(launcher, payload, env, root, runs):
    best = None
    for _ in range(runs):
        with open(payload, "rb") as handle:
            proc = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                                   "--callgrind-out-file=/dev/null", "sh", launcher,
                                   "claude"], stdin=handle, capture_output=True, env=env,
                                  cwd=root, timeout=600)
        if b"{" not in proc.stdout:
            raise SystemExit("bench: %s gave no answer: %s" % (launcher, proc.stderr[-800:]))
        n = collected(proc.stderr.decode("utf-8", "replace"))
        best = n if best is None else min(best, n)
    return best


def project(parent, python, source):
    os.makedirs(parent, exist_ok=True)
    source = benchlib.snapshot_source(parent, source)
    root, home, _recorded, _git = benchlib.make_project(parent, python, source)
    env = benchlib.base_env(root, home)
    cases = []
    for label, event, sample, changes in HOOKS:
        payload = benchlib.sample_payload(sample, root, home, session_id="cg-" + event,
                                          **changes)
        path = benchlib.write_payload(parent, event + ".json", payload)
        launcher = os.path.join(root, ".notrest", "hooks", {
            "PreToolUse": "pre-tool-use.sh", "PostToolUse": "post-tool-use.sh"}[event])
        count(launcher, path, env, root, 1)  # warm: the first run may write bytecode
        cases.append((label, launcher, path))
    return root, env, cases


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", metavar="DIR", help="an older notrest to compare with")
    parser.add_argument("--variants", action="store_true",
                        help="also measure the boot with each trick undone")
    parser.add_argument("--runs", type=int, default=2, help="runs per figure (the least "
                        "counts; 2)")
    args = parser.parse_args(argv)
    if not shutil.which("valgrind"):
        raise SystemExit("bench: valgrind is not on PATH")
    python = benchlib.bench_python()
    return benchlib.with_scratch(None, "notrest-bench-callgrind-",
                                 lambda parent: run(args, python, parent))


def run(args, python, parent):
    versions = [("checkout", None)] + ([("base", args.base)] if args.base else [])
    results = {}
    projects = {}
    for name, source in versions:
        projects[name] = project(os.path.join(parent, name), python, source)
    for name, _source in versions:
        root, env, cases = projects[name]
        for label, launcher, payload in cases:
            results[(name, label)] = count(launcher, payload, env, root, args.runs)
    if args.variants:
        root, env, cases = projects["checkout"]
        tail = os.path.join(root, ".notrest", "hooks", "launch.sh")
        with open(tail) as handle:
            original = handle.read()
        try:
            for name, edits in VARIANTS:
                text = original
                for old, new in (() if callable(edits) else edits):
                    if old not in text:
                        raise SystemExit("bench: the boot has no %r" % old)
                    text = text.replace(old, new)
                text = edits(text) if callable(edits) else text
                if text == original:
                    raise SystemExit("bench: the variant %s changed nothing" % name)
                with open(tail, "w") as handle:
                    handle.write(text)
                for label, launcher, payload in cases:
                    results[(name, label)] = count(launcher, payload, env, root, args.runs)
        finally:
            with open(tail, "w") as handle:
                handle.write(original)
    rows = []
    names = [n for n, _ in versions] + ([n for n, _ in VARIANTS] if args.variants else [])
    for label, _event, _sample, _changes in HOOKS:
        mine = results[("checkout", label)]
        for name in names:
            n = results[(name, label)]
            rows.append([label, name, "{:,}".format(n), "%+.1f%%" % ((n / mine - 1) * 100)])
    print(benchlib.table(["hook", "version", "instructions", "vs checkout"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
