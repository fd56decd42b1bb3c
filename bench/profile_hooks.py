"""Where a hook's time goes: phases, imports, and a profile of hook_main.

    python3 bench/profile_hooks.py [--runs N] [--quick] [--top N] [--keep DIR]

Builds the same seeded project as bench/hooks.py (install.sh into a temp git project,
sessions with history), then, all in fresh `RECORDED_PYTHON -I -S` processes run the
way the launchers run them (payload on stdin):

1. phases: interpreter start-up / `import notrest` / `notrest.hook_main(...)`, timed
   inside the process (medians of N), beside the whole-process wall time; and the
   modules each event imports beyond the bare interpreter.
2. -X importtime of `import notrest`, and of a whole PreToolUse / PostToolUse hook:
   every module beyond the interpreter's own, self and cumulative microseconds
   (medians of N).
3. a profile (the C profiler `_lsprof`, which imports nothing else) of hook_main alone
   for PostToolUse, PreToolUse, SessionStart and Stop, summed over N processes and
   shown per call: the top functions by own time and by cumulative time.
Stdlib only.
"""
import argparse
import marshal
import os
import re
import sys

sys.dont_write_bytecode = True   # leave no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import hooks as hookbench  # noqa: E402

PHASES_CODE = r"""
import time
t0 = time.perf_counter()
import sys
before = set(sys.modules)
sys.path.insert(0, sys.argv[1])
import notrest
t1 = time.perf_counter()
after_import = set(sys.modules)
code = notrest.hook_main(sys.argv[3:])
t2 = time.perf_counter()
sys.stdout.flush()
with open(sys.argv[2], "w") as handle:
    handle.write("%f %f\n%s\n%s\n" % ((t1 - t0) * 1e3, (t2 - t1) * 1e3,
                 " ".join(sorted(after_import - before)),
                 " ".join(sorted(set(sys.modules) - after_import))))
sys.exit(code)
"""
LAUNCHER_CODE = ("import sys; sys.path.insert(0, sys.argv[1]); import notrest; "
                 "sys.exit(notrest.hook_main(sys.argv[2:]))")
EXIT_CODE = ("import sys, os; sys.path.insert(0, sys.argv[1]); import notrest; "
             "code = notrest.hook_main(sys.argv[2:]); sys.stdout.flush(); "
             "sys.stderr.flush(); os._exit(code)")
IMPORT_CODE = "import sys; sys.path.insert(0, sys.argv[1]); import notrest"
PROFILE_CODE = r"""
import sys, marshal
sys.path.insert(0, sys.argv[1])
import _lsprof
import notrest
prof = _lsprof.Profiler()
prof.enable()
code = notrest.hook_main(sys.argv[3:])
prof.disable()
rows = []
for entry in prof.getstats():
    c = entry.code
    if isinstance(c, str):
        label = c
    else:
        label = "%s:%d(%s)" % (c.co_filename, c.co_firstlineno, c.co_name)
    rows.append((label, entry.callcount, entry.totaltime, entry.inlinetime))
with open(sys.argv[2], "wb") as handle:
    marshal.dump(rows, handle)
sys.exit(code)
"""
PROFILE_EVENTS = ("PostToolUse", "PreToolUse allow", "PreToolUse deny", "SessionStart",
                  "Stop")
IMPORTTIME_EVENTS = ("PreToolUse allow", "PostToolUse")
WATCH = ("re", "json", "fcntl", "select", "zlib", "subprocess", "argparse", "signal",
         "threading", "tempfile", "hashlib", "shlex", "fnmatch", "glob", "pathlib",
         "traceback", "io", "_json", "enum", "functools", "collections", "selectors",
         "locale", "datetime", "random", "uuid", "struct", "base64", "string")
IMPORTTIME_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)")


def parse_importtime(text):
    """[(module, self us, cumulative us, depth)] in the order -X importtime prints."""
    rows = []
    for line in text.splitlines():
        match = IMPORTTIME_LINE.match(line)
        if match:
            rows.append((match.group(4), int(match.group(1)), int(match.group(2)),
                         (len(match.group(3)) - 1) // 2))
    return rows


def short(label, code_dir):
    label = label.replace(code_dir + os.sep, "")
    label = re.sub(r"^.*/lib/python3\.\d+/", "", label)
    return label if len(label) <= 70 else label[:67] + "..."


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per figure (15)")
    parser.add_argument("--quick", action="store_true", help="5 processes per figure")
    parser.add_argument("--top", type=int, default=15, help="functions listed (15)")
    parser.add_argument("--keep", metavar="DIR", help="build the project in DIR")
    parser.add_argument("--source", metavar="DIR", help="measure the notrest.py and "
                        "install.sh in DIR instead of the checkout's")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = min(args.runs, 5)
    python = benchlib.bench_python()
    return benchlib.with_scratch(args.keep, "notrest-bench-profile-",
                                 lambda parent: run(args, python, parent))


def run(args, python, parent):
    root, home, recorded, _git, case_list, _seconds = hookbench.setup(parent, python,
                                                                      args.source)
    cases = {label: (event, payload, launcher)
             for label, event, payload, launcher in case_list}
    code_dir = os.path.join(root, ".notrest")
    env = benchlib.base_env(root, home)
    runner = benchlib.Runner(parent, recorded)
    result_path = os.path.join(parent, ".bench.result")
    print(benchlib.machine_header(
        "notrest bench/profile_hooks.py: where the hook time goes", recorded,
        os.path.join(parent, "src", "notrest.py"),
        ["%d processes per figure; project seeded as in bench/hooks.py" % args.runs]))

    # ---- 1. phases -------------------------------------------------------------
    print()
    print("## 1. phases (ms, medians of %d, variants interleaved per round)" % args.runs)
    rows, imported = [], {}
    for label, (event, payload, launcher) in cases.items():
        variants = {
            "floor": [recorded, "-I", "-S", "-c", "pass"],
            "launcher": ["sh", launcher, "claude"],
            "direct": [recorded, "-I", "-S", "-c", LAUNCHER_CODE, code_dir, event,
                       "claude"],
            "_exit": [recorded, "-I", "-S", "-c", EXIT_CODE, code_dir, event, "claude"],
            "phases": [recorded, "-I", "-S", "-c", PHASES_CODE, code_dir, result_path,
                       event, "claude"],
        }
        ms = {name: [] for name in variants}
        imps, mains = [], []
        names = list(variants)
        for rnd in range(args.runs + 1):
            for name in names[rnd % len(names):] + names[:rnd % len(names)]:
                sample = runner.run(variants[name], stdin_path=payload, env=env,
                                    cwd=root, keep_output=False)
                if rnd == 0:
                    continue   # warm-up
                ms[name].append(sample.ms)
                if name == "phases":
                    with open(result_path) as handle:
                        times, at_import, at_hook = handle.read().split("\n")[:3]
                    imp, main_ms = (float(x) for x in times.split())
                    imps.append(imp)
                    mains.append(main_ms)
                    imported[label] = (at_import.split(), at_hook.split())
        med = {name: benchlib.median(values) for name, values in ms.items()}
        imp, main_ms = benchlib.median(imps), benchlib.median(mains)
        rows.append([label] + [benchlib.fmt_ms(med[n]) for n in ("floor", "launcher",
                                                                 "direct")] +
                    [benchlib.fmt_ms(med["launcher"] - med["direct"]),
                     benchlib.fmt_ms(imp), benchlib.fmt_ms(main_ms),
                     benchlib.fmt_ms(med["direct"] - med["floor"] - imp - main_ms),
                     benchlib.fmt_ms(med["direct"] - med["_exit"]),
                     benchlib.fmt_ratio(med["launcher"] / med["floor"]),
                     len(imported[label][1])])
    print(benchlib.table(["event", "floor", "launcher", "direct", "sh", "import",
                          "hook_main", "other", "_exit saves", "launcher/floor",
                          "+modules"], rows))
    print("floor = -I -S -c pass; launcher = sh .notrest/hooks/X claude; direct = the "
          "launcher's python -c line without sh;")
    print("sh = launcher - direct; import = `import notrest` and hook_main = the call, "
          "both timed in-process;")
    print("other = direct - floor - import - hook_main (the -c line, sys.path, "
          "finalising a bigger heap at exit);")
    print("_exit saves = direct - the same line ending in sys.stdout.flush(); "
          "os._exit(code) (no interpreter finalisation)")
    print()
    first = next(iter(imported.values()))[0]
    print("`import notrest` imports %d modules: %s" % (len(first), " ".join(first)))
    print("modules hook_main imports on top, per event:")
    for label, (_at_import, at_hook) in imported.items():
        watched = [m for m in at_hook if m in WATCH]
        print("  %-17s %2d: %s" % (label, len(at_hook), " ".join(at_hook) or "-"))
        if watched:
            print("  %-17s     watched: %s" % ("", " ".join(watched)))

    # ---- 2. importtime ---------------------------------------------------------
    print()
    print("## 2. -X importtime (us, medians; only modules the bare interpreter does not "
          "import)")
    base_mods = {row[0] for row in parse_importtime(runner.run(
        [recorded, "-X", "importtime", "-I", "-S", "-c", "pass"], env=env,
        cwd=root).err.decode())}
    jobs = [("import notrest", [recorded, "-X", "importtime", "-I", "-S", "-c",
                                IMPORT_CODE, code_dir], None)]
    for label in IMPORTTIME_EVENTS:
        event, payload, _launcher = cases[label]
        jobs.append(("%s hook" % label, [recorded, "-X", "importtime", "-I", "-S", "-c",
                                         LAUNCHER_CODE, code_dir, event, "claude"],
                     payload))
    for title, argv_, payload in jobs:
        per = {}
        order = []
        for _ in range(args.runs):
            rows_ = parse_importtime(runner.run(argv_, stdin_path=payload, env=env,
                                                cwd=root).err.decode("utf-8", "replace"))
            for mod, self_us, cum_us, depth in rows_:
                if mod in base_mods:
                    continue
                if mod not in per:
                    per[mod] = ([], [], depth)
                    order.append(mod)
                per[mod][0].append(self_us)
                per[mod][1].append(cum_us)
        top = [m for m in order if per[m][2] == 0]
        total = sum(benchlib.median(per[m][1]) for m in top)
        print()
        print("%s: %d modules beyond the interpreter's, top-level cumulative %.1f ms" % (
            title, len(order), total / 1000.0))
        table_rows = []
        for mod in order:
            self_med, cum_med = benchlib.median(per[mod][0]), benchlib.median(per[mod][1])
            table_rows.append(["  " * per[mod][2] + mod, "%d" % self_med, "%d" % cum_med,
                               "*" if mod.split(".")[0] in WATCH else ""])
        print(benchlib.table(["module (import order; indent = imported by the line "
                              "below)", "self us", "cumul us", "watched"], table_rows))

    # ---- 3. profile of hook_main -----------------------------------------------
    print()
    print("## 3. profile of hook_main (the C profiler _lsprof; per call, averaged over "
          "%d processes; profiling inflates pure-Python call-heavy code)" % args.runs)
    for label in PROFILE_EVENTS:
        event, payload, _launcher = cases[label]
        agg = {}
        for _ in range(args.runs):
            runner.run([recorded, "-I", "-S", "-c", PROFILE_CODE, code_dir, result_path,
                        event, "claude"], stdin_path=payload, env=env, cwd=root,
                       keep_output=False)
            with open(result_path, "rb") as handle:
                for name, calls, total, inline in marshal.load(handle):
                    row = agg.setdefault(name, [0, 0.0, 0.0])
                    row[0] += calls
                    row[1] += total
                    row[2] += inline
        n = float(args.runs)
        whole = max((r[1] for k, r in agg.items() if k.endswith("(hook_main)")),
                    default=0.0) / n
        own_total = sum(r[2] for r in agg.values()) / n
        print()
        print("### %s: hook_main %.2f ms under the profiler (sum of own times %.2f ms)"
              % (label, whole * 1e3, own_total * 1e3))
        by_own = sorted(agg.items(), key=lambda kv: -kv[1][2])[:args.top]
        print(benchlib.table(["by own time", "calls", "own ms", "cum ms"],
                             [[short(k, code_dir), "%g" % round(v[0] / n, 1),
                               "%.3f" % (v[2] / n * 1e3), "%.3f" % (v[1] / n * 1e3)]
                              for k, v in by_own]))
        print()
        by_cum = sorted((kv for kv in agg.items() if not kv[0].endswith(
            "(hook_main)")), key=lambda kv: -kv[1][1])[:args.top]
        print(benchlib.table(["by cumulative time", "calls", "own ms", "cum ms"],
                             [[short(k, code_dir), "%g" % round(v[0] / n, 1),
                               "%.3f" % (v[2] / n * 1e3), "%.3f" % (v[1] / n * 1e3)]
                              for k, v in by_cum]))
    runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
