"""Hook launch cost: every notrest hook as the client runs it, against the floor.

    python3 bench/hooks.py [--runs N] [--quick] [--keep DIR] [--base DIR]

Installs notrest into a temp git project with install.sh (HOME inside the temp dir),
seeds sessions with a history (driven through notrest.hook_main in-process), then for
each event runs, interleaved round by round after a warm-up:

  floor  RECORDED_PYTHON -I -S -c pass           (the interpreter itself)
  hook   sh .notrest/hooks/<launcher> claude     (what the client runs)
  naive  python3 .notrest/notrest.py hook EVENT claude
         (python3 from PATH, maybe a shim; no -I -S; the file run as a script, so it
         is compiled on every call: what the launch design avoids)

  base   sh <base project>/.notrest/hooks/<launcher> claude   (with --base DIR: the
         notrest.py and install.sh in DIR, installed and seeded alike: before and
         after, side by side in one run)

each with the event's payload on stdin, and prints per event the medians (ms), the
ratios hook/floor and naive/floor (and base/floor, hook/base), and the peak RSS (MB)
of each child (os.wait4).
Stdlib only. Machines are noisy: read the ratios; the milliseconds are beside them.
"""
import argparse
import io
import json
import os
import shutil
import sys
import time
import uuid

sys.dont_write_bytecode = True   # leave no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

CODE_PROMPT = object()      # replaced by code_prompt(): 20 KB of the measured notrest.py
CODE_PROMPT_BYTES = 20 * 1024
# (label, event, launcher event, sample file, changes to the payload)
EVENTS = (
    ("PreToolUse allow", "PreToolUse", "claude-PreToolUse.json", {}),
    ("PreToolUse deny", "PreToolUse", "claude-PreToolUse.json",
     {"tool_input": {"command": "rm -rf ~", "description": "clean up"}}),
    ("PreToolUse reader", "PreToolUse", "claude-PreToolUse.json",
     {"tool_input": {"command": "python3 -c \"print(1)\"", "description": "inline"}}),
    ("PostToolUse", "PostToolUse", "claude-PostToolUse.json", {}),
    ("UserPromptSubmit", "UserPromptSubmit", "claude-UserPromptSubmit.json",
     {"prompt": "run the tests and fix what fails in src/app.py"}),
    ("UserPromptSubmit 20KB code", "UserPromptSubmit", "claude-UserPromptSubmit.json",
     {"prompt": CODE_PROMPT}),
    ("SessionStart", "SessionStart", "claude-SessionStart.json", {"source": "startup"}),
    ("Stop", "Stop", "claude-Stop.json", {}),
    ("SessionEnd", "SessionEnd", "claude-SessionEnd.json", {}),
)
TARGETS = {"PreToolUse allow": 1.6, "PostToolUse": 1.6,
           "PreToolUse reader": None}  # a call a gate reader judges: measured, no target
DEFAULT_TARGET = 2.0
RSS_TARGET_MB = 40.0
HISTORY_TURNS = 32          # prompt + PreToolUse + PostToolUse each: ~100 lines a session
PRIOR_SESSIONS = 6          # finished sessions before the benchmarked ones


def code_prompt(source):
    """An ordinary 20 KB code prompt: the shell-parsing section of the notrest.py being
    measured, with a question around it (code that talks about tokens and keys but
    holds none)."""
    with open(os.path.join(source, "notrest.py"), encoding="utf-8") as handle:
        text = handle.read()
    start = max(0, text.find("# ==== shell parsing"))
    code = text[start:start + CODE_PROMPT_BYTES - 200]
    return "Why does this parser mishandle nested quotes?\n```python\n%s\n```\n" % code


def session_id(label):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "notrest-bench/" + label))


# ---- seeding: a realistic history, through the real adapter, in-process ----------

class Driver:
    def __init__(self, notrest, root, home, scratch):
        self.nr, self.root, self.home = notrest, root, home
        self.env = benchlib.base_env(root, home)
        self.path = os.path.join(scratch, ".seed.json")

    def hook(self, event, payload):
        with open(self.path, "w") as handle:
            json.dump(payload, handle)
        fd = os.open(self.path, os.O_RDONLY)
        out, err = io.StringIO(), io.StringIO()
        try:
            code = self.nr.hook_main([event, "claude"], stdin_fd=fd, env=self.env,
                                     out=out, err=err)
        finally:
            os.close(fd)
        if code != 0 or "failed" in err.getvalue():
            raise SystemExit("bench: seeding %s failed: %s" % (event, err.getvalue()))
        return out.getvalue()

    def payload(self, sample, session, **changes):
        return benchlib.sample_payload(sample, self.root, self.home, session_id=session,
                                       transcript_path=os.path.join(
                                           self.home, ".claude", "projects", "p",
                                           session + ".jsonl"), **changes)

    def history(self, session, end=False):
        """SessionStart, HISTORY_TURNS x (prompt, PreToolUse, PostToolUse), a bank note,
        Stop (and SessionEnd)."""
        self.hook("SessionStart", self.payload("claude-SessionStart.json", session))
        for turn in range(HISTORY_TURNS):
            self.hook("UserPromptSubmit", self.payload(
                "claude-UserPromptSubmit.json", session,
                prompt="step %d: make the parser handle case %d" % (turn, turn)))
            kind = turn % 4
            if kind == 0:
                tool, tin = "Edit", {"file_path": os.path.join(
                    self.root, "src", "mod_%d.py" % (turn % 7)), "old_string": "a",
                    "new_string": "b", "replace_all": False}
            elif kind == 1:
                tool, tin = "Bash", {"command": "python3 -m pytest -q tests/test_%d.py"
                                     % turn, "description": "run tests"}
            elif kind == 2:
                tool, tin = "Write", {"file_path": os.path.join(
                    self.root, "notes", "n%d.md" % turn), "content": "notes\n"}
            else:
                tool, tin = "Bash", {"command": "git diff --stat && ls src",
                                     "description": "look"}
            self.hook("PreToolUse", self.payload("claude-PreToolUse.json", session,
                                                 tool_name=tool, tool_input=tin))
            if turn % 9 == 5:
                self.hook("PostToolUseFailure", self.payload(
                    "claude-PostToolUseFailure-fail-ls.json", session, tool_name=tool,
                    tool_input=tin, error="Exit code 1\nFAILED tests"))
            else:
                self.hook("PostToolUse", self.payload("claude-PostToolUse.json", session,
                                                      tool_name=tool, tool_input=tin))
        self.nr.bank_session(self.nr.Estate(self.root), session,
                             note="made the parser handle cases 0-%d" % HISTORY_TURNS,
                             next_step="cover the error paths", by="cli",
                             client="claude", inside=True)  # as the agent banks
        self.hook("Stop", self.payload("claude-Stop.json", session))
        if end:
            self.hook("SessionEnd", self.payload("claude-SessionEnd.json", session))


# ---- the benchmark ---------------------------------------------------------------

def answer_problem(label, sample):
    """Why a hook's answer is not what the event should give, or None."""
    if sample.code != 0:
        return "exit %d: %s" % (sample.code, sample.err.decode("utf-8", "replace")[-300:])
    try:
        answer = json.loads(sample.out.decode("utf-8", "replace") or "null")
    except ValueError:
        return "stdout is not JSON: %r" % sample.out[:200]
    if not isinstance(answer, dict):
        return "stdout is not a JSON object"
    decision = (answer.get("hookSpecificOutput") or {}).get("permissionDecision")
    if label == "PreToolUse deny" and decision != "deny":
        return "expected a deny, got %r" % decision
    if label in ("PreToolUse allow", "PreToolUse reader") and decision:
        return "expected an allow, got %r" % decision
    if label == "Stop" and answer.get("decision") == "block":
        return "Stop blocked (%s)" % str(answer.get("reason"))[:200]
    if label == "SessionStart" and "additionalContext" not in (
            answer.get("hookSpecificOutput") or {}):
        return "SessionStart injected no packet"
    if sample.err.strip():
        return "stderr: %s" % sample.err.decode("utf-8", "replace")[-300:]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="measured rounds (30)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured rounds (3)")
    parser.add_argument("--quick", action="store_true", help="8 runs, 1 warm-up")
    parser.add_argument("--keep", metavar="DIR", help="build the project in DIR and "
                        "keep it (default: a temp dir, removed at the end)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive launcher")
    parser.add_argument("--source", metavar="DIR", help="measure the notrest.py and "
                        "install.sh in DIR instead of the checkout's")
    parser.add_argument("--base", metavar="DIR", help="also measure the notrest.py and "
                        "install.sh in DIR (an older version), interleaved with the hook")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.warmup = min(args.runs, 8), 1

    python = benchlib.bench_python()
    return benchlib.with_scratch(args.keep, "notrest-bench-hooks-",
                                 lambda parent: run(args, python, parent))


def setup(parent, python, source):
    """Install the snapshot in source into parent/project and seed its history;
    returns (root, home, recorded python, git?, cases, seconds) with cases
    [(label, event, payload path, launcher path)]."""
    t0 = time.perf_counter()
    source = benchlib.snapshot_source(parent, source)
    root, home, recorded, has_git = benchlib.make_project(parent, python, source)
    notrest = benchlib.import_installed(root)
    driver = Driver(notrest, root, home, parent)
    for i in range(PRIOR_SESSIONS):
        driver.history(session_id("prior-%d" % i), end=True)
    payload_dir = os.path.join(parent, "payloads")
    os.makedirs(payload_dir, exist_ok=True)
    cases = []
    for label, event, sample, changes in EVENTS:
        session = session_id("bench-" + label)
        driver.history(session, end=(event == "SessionEnd"))
        if changes.get("prompt") is CODE_PROMPT:
            changes = dict(changes, prompt=code_prompt(source))
        payload = driver.payload(sample, session, **changes)
        path = benchlib.write_payload(payload_dir, label.replace(" ", "-") + ".json",
                                      payload)
        launcher = os.path.join(root, ".notrest", "hooks", notrest.HOOK_EVENTS[event][0])
        cases.append((label, event, path, launcher))
    return root, home, recorded, has_git, cases, time.perf_counter() - t0


def run(args, python, parent):
    root, home, recorded, has_git, cases, seed_s = setup(parent, python, args.source)
    naive_python = shutil.which("python3", path=benchlib.client_path()) or "python3"

    env = benchlib.base_env(root, home)
    runner = benchlib.Runner(parent, recorded)
    code_path = os.path.join(root, ".notrest", "notrest.py")
    # each variant: (case index) -> (argv, stdin path, env, cwd)
    variants = [("floor", lambda k: ([recorded, "-I", "-S", "-c", "pass"], cases[k][2],
                                     env, root)),
                ("hook", lambda k: (["sh", cases[k][3], "claude"], cases[k][2], env, root))]
    if args.base:
        base_parent = os.path.join(parent, "base")
        os.makedirs(base_parent, exist_ok=True)
        ours = sys.modules.pop("notrest")  # the base seeds with its own notrest.py
        try:
            b_root, b_home, _rec, _git, b_cases, b_seed = setup(base_parent, python,
                                                                args.base)
        finally:
            sys.modules["notrest"] = ours
        b_env = benchlib.base_env(b_root, b_home)
        seed_s += b_seed
        variants.append(("base", lambda k: (["sh", b_cases[k][3], "claude"], b_cases[k][2],
                                            b_env, b_root)))
    if not args.no_naive:
        variants.append(("naive", lambda k: ([naive_python, code_path, "hook",
                                              cases[k][1], "claude"], cases[k][2], env,
                                             root)))
    samples = {(c[0], v[0]): [] for c in cases for v in variants}
    problems = {}
    total = args.warmup + args.runs
    for rnd in range(total):
        for k, (label, event, path, launcher) in enumerate(cases):
            order = variants[(rnd + k) % len(variants):] + variants[:(rnd + k) %
                                                                   len(variants)]
            for name, make in order:
                argv, stdin_path, run_env, cwd = make(k)
                sample = runner.run(argv, stdin_path=stdin_path, env=run_env, cwd=cwd,
                                    keep_output=(name != "floor"))
                if name != "floor":
                    why = answer_problem(label, sample)
                    if why and (label, name) not in problems:
                        problems[(label, name)] = why
                if rnd >= args.warmup:
                    samples[(label, name)].append(sample)
    runner.close()

    extra = ["floor = %s -I -S -c pass (the interpreter install.sh recorded)" % recorded,
             "hook  = sh .notrest/hooks/<launcher> claude (exec %s -I -S, cached "
             "bytecode)" % recorded,
             "naive = %s .notrest/notrest.py hook EVENT claude (no -I -S, script "
             "compiled each run)" % naive_python,
             "base  = the hook of the notrest.py in %s, installed alike" % (
                 args.base or "(no --base)"),
             "runs  = %d measured rounds after %d warm-up, interleaved "
             "floor/hook/naive, order rotated each round" % (args.runs, args.warmup),
             "project: git %s; %d prior sessions + 1 per event, each ~%d journal lines; "
             "seeded in %.1fs" % ("yes" if has_git else "no", PRIOR_SESSIONS,
                                 3 * HISTORY_TURNS + 4, seed_s)]
    print(benchlib.machine_header("notrest bench/hooks.py: hook launch cost", recorded,
                                  os.path.join(parent, "src", "notrest.py"), extra))
    print()
    headers = ["event", "floor ms", "hook ms", "naive ms", "hook/floor", "naive/floor",
               "target", "cpu hook/floor", "hook MB", "naive MB", "floor MB", "verdict"]
    if args.base:
        headers[4:4] = ["base ms", "base/floor", "hook/base", "cpu hook/base"]
    rows, missed = [], []
    for label, _event, _path, _launcher in cases:
        med = {name: benchlib.median([s.ms for s in samples[(label, name)]])
               for name, _ in variants}
        rss = {name: max([s.rss_mb for s in samples[(label, name)]] or [float("nan")])
               for name, _ in variants}
        hook_ratio = benchlib.ratio(med["hook"], med["floor"])
        cpu_ratio = benchlib.ratio(*[benchlib.median([s.cpu_ms for s in samples[(
            label, name)]]) for name in ("hook", "floor")])
        naive_ratio = benchlib.ratio(med.get("naive", float("nan")), med["floor"])
        target = TARGETS.get(label, DEFAULT_TARGET)
        verdict = []
        if target is not None and hook_ratio > target:
            verdict.append("MISS +%.0f%%" % ((hook_ratio / target - 1) * 100))
            missed.append("%s: hook/floor %.2fx > %.1fx" % (label, hook_ratio, target))
        if rss["hook"] >= RSS_TARGET_MB:
            verdict.append("RSS MISS")
            missed.append("%s: hook peak RSS %.1f MB >= %.0f MB" % (label, rss["hook"],
                                                                  RSS_TARGET_MB))
        row = [label, benchlib.fmt_ms(med["floor"]), benchlib.fmt_ms(med["hook"]),
                     benchlib.fmt_ms(med.get("naive", float("nan"))),
                     benchlib.fmt_ratio(hook_ratio), benchlib.fmt_ratio(naive_ratio),
                     "<=%.1fx" % target if target else "-",
                     benchlib.fmt_ratio(cpu_ratio), benchlib.fmt_mb(rss["hook"]),
                     benchlib.fmt_mb(rss.get("naive", float("nan"))),
                     benchlib.fmt_mb(rss["floor"]),
                     " ".join(verdict) or "ok"]
        if args.base:
            cpu = {name: benchlib.median([s.cpu_ms for s in samples[(label, name)]])
                   for name in ("hook", "base")}
            row[4:4] = [benchlib.fmt_ms(med["base"]),
                        benchlib.fmt_ratio(benchlib.ratio(med["base"], med["floor"])),
                        benchlib.fmt_ratio(benchlib.ratio(med["hook"], med["base"])),
                        benchlib.fmt_ratio(benchlib.ratio(cpu["hook"], cpu["base"]))]
        rows.append(row)
    print(benchlib.table(headers, rows))
    print()
    print("medians of %d runs; ratios are median/median from the same interleaved run; "
          "MB = max peak RSS of the child (ru_maxrss via os.wait4)" % args.runs)
    print("cpu hook/floor: the same, of CPU time (user + system, os.wait4): a loaded "
          "machine inflates it least; the targets are on wall time")
    print("targets: hook/floor <= 2.0x (PreToolUse allow, PostToolUse <= 1.6x); hook "
          "peak RSS < %.0f MB" % RSS_TARGET_MB)
    if missed:
        print("missed: " + "; ".join(missed))
    else:
        print("missed: none")
    for (label, name), why in sorted(problems.items()):
        print("! %s (%s): %s" % (label, name, why))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
