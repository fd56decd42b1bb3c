"""Estate scaling: do the verbs and the session hooks stay flat as history grows?

    python3 bench/estate.py [--runs N] [--slow-runs N] [--quick] [--keep DIR] [--regen]

Generates estates of 0, 1,000 and 10,000 finished sessions (100 journal lines each:
1,000,000 lines in the 10,000 estate), each a git project with notrest installed by
install.sh. Journals are written with notrest.encode_line; session records are folded
with notrest.fold_event and written with notrest.save_session; index.json is written
the way rebuild_estate writes it (bounded, newest first). Estates are cached (default
$TMPDIR/notrest-bench-estates, or --keep DIR) and reused while their parameters match;
each run re-installs the current notrest.py into them and removes what earlier runs
of the bench added.

Then, interleaved across estates round by round after a warm-up, each as a subprocess
the way an agent or client runs it:
  version, packet, bank, gate, status, doctor, rebuild   .notrest/notrest ...
  SessionStart hook, SessionEnd hook                     sh .notrest/hooks/... claude
and prints the median ms per command and estate, large/empty ratios and the peak RSS.
Stdlib only.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid

sys.dont_write_bytecode = True   # leave no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

GENERATOR = 1                 # bump when the generated estates change shape
LINES_PER_SESSION = 100
BENCH_SESSIONS = ("bench-bank", "bench-start", "bench-end")
RATIO_TARGET = 1.3            # packet, bank, gate: large / empty
SESSION_END_TARGET_MS = 150.0
HOOK_RSS_TARGET_MB = 40.0
REBUILD_RSS_TARGET_MB = 150.0


# ---- generating an estate --------------------------------------------------------

def session_records(index, sid, started, died=False):
    """LINES_PER_SESSION journal records of one finished session, shaped like the
    ones dispatch_hook and bank_session write."""
    rnd = random.Random(index)
    t = started
    out = []

    def base(event, kind, step=5.0):
        nonlocal t
        t += step * (0.5 + rnd.random())
        return {"v": 1, "t": round(t, 3), "c": "claude", "e": event, "k": kind}

    out.append(dict(base("SessionStart", "start"), source="startup", pid=4000000 + index,
                    pid_start=1000 + index, model="claude-sonnet-4-5",
                    ms=round(20 + 10 * rnd.random(), 2)))
    for turn in range(32):
        out.append(dict(base("UserPromptSubmit", "prompt"), ms=round(4 * rnd.random(), 2),
                        text="step %d of session %d: make the parser handle case %d and "
                             "keep the tests green" % (turn, index, turn)))
        kind = turn % 4
        if kind == 0:
            tool, what = "Edit", "Edit src/mod_%d.py" % rnd.randrange(40)
            files = [[what[5:], "write"]]
        elif kind == 1:
            tool, what, files = "Bash", "python3 -m pytest -q tests/test_%d.py" % turn, []
        elif kind == 2:
            tool, what = "Write", "Write docs/notes_%d.md" % rnd.randrange(40)
            files = [[what[6:], "write"]]
        else:
            tool, what, files = "Bash", "git diff --stat && ls src", []
        out.append(dict(base("PreToolUse", "call"), tool=tool, what=what,
                        ms=round(3 + 2 * rnd.random(), 2)))
        if turn % 9 == 5:
            out.append(dict(base("PostToolUseFailure", "tool", 20.0), tool=tool,
                            what=what, ok=False, files=files,
                            error="Exit code 1\nFAILED tests",
                            ms=round(3 + 2 * rnd.random(), 2)))
        else:
            out.append(dict(base("PostToolUse", "tool", 20.0), tool=tool, what=what,
                            ok=True, files=files, ms=round(3 + 2 * rnd.random(), 2)))
    note = base("", "note")
    del note["e"]
    out.append(dict(note, by="cli", c="", note="session %d: made the parser handle cases "
                    "0-31; tests green" % index, next="cover the error paths",
                    open=[], close=[]))
    out.append(dict(base("Stop", "stop"), decision="allow", laws=[], ms=7.5))
    if died:   # the newest one was killed: no end record
        out.append(dict(base("UserPromptSubmit", "prompt"), text="one more thing",
                        ms=2.0))
    else:
        out.append(dict(base("SessionEnd", "end"), reason="other", ms=9.0))
    assert len(out) == LINES_PER_SESSION
    return out


def generate(notrest, root, sessions, now):
    """Write `sessions` finished sessions into root's estate; returns their count of
    journal lines."""
    estate = notrest.Estate(root)
    os.makedirs(estate.path("journal"), exist_ok=True)
    os.makedirs(estate.path("sessions"), exist_ok=True)
    entries, lines = [], 0
    span = 20 * 60.0                      # a session every 20 minutes, the newest 2h ago
    for i in range(sessions):
        sid = str(uuid.UUID(int=random.Random(i * 7919 + 1).getrandbits(128), version=4))
        started = now - 2 * 3600 - (sessions - 1 - i) * span
        rec = notrest.new_session_record(sid)
        chunks = []
        for ev in session_records(i, sid, started, died=(i == sessions - 1)):
            chunks.append(notrest.encode_line(ev))
            notrest.fold_event(rec, ev)
        data = "".join(chunks).encode("utf-8")
        with open(estate.journal(sid), "wb") as handle:
            handle.write(data)
        rec["journal_offset"] = len(data)
        notrest.save_session(estate, rec)
        entries.append(notrest._index_entry(rec))
        lines += len(chunks)
    # the index, the way rebuild_estate writes it
    entries.sort(key=lambda e: -(e.get("started") or e.get("updated") or 0))
    with notrest._Lock(estate.path(".index.lock")):
        notrest.write_atomic(estate.path("index.json"), notrest.json_dumps(
            {"schema_version": notrest.SCHEMA_VERSION,
             "sessions": entries[:notrest.INDEX_MAX_SESSIONS]}) + "\n")
    return lines


def format_fingerprint(notrest):
    """What the cached estates depend on in the code: the journal line encoding, the
    session record's shape and the schema version. A change regenerates them."""
    probe = {"v": 1, "t": 1.5, "c": "claude", "e": "PreToolUse", "k": "call",
             "tool": "Bash", "what": "ls"}
    return "%s|%s|%s" % (notrest.SCHEMA_VERSION, notrest.encode_line(probe).strip(),
                         ",".join(sorted(notrest.new_session_record("x"))))


def check_estate(notrest, root, sessions):
    """Fail loudly when the journals of a cached estate do not read back cleanly."""
    folder = os.path.join(root, ".notrest", "journal")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl")
                   and not n.startswith("bench-"))
    if len(names) != sessions:
        raise SystemExit("bench: %s holds %d journals, expected %d; rerun with --regen"
                         % (folder, len(names), sessions))
    for name in names[:3] + names[-3:]:
        records = [r for r, _n, _e in notrest.read_records(os.path.join(folder, name))]
        if len(records) != LINES_PER_SESSION or any(r is None for r in records):
            raise SystemExit("bench: %s does not read back cleanly with this notrest.py; "
                             "rerun with --regen" % os.path.join(folder, name))


def prepare(cache, sessions, python, source, regen, log):
    """The cached estate with `sessions` sessions: (root, home, recorded python,
    journal lines, generation seconds or None when reused)."""
    folder = os.path.join(cache, "estate-%d" % sessions)
    marker = os.path.join(folder, "generated.json")
    have = None
    if os.path.exists(marker) and not regen:
        with open(marker) as handle:
            have = json.load(handle)
    if have:
        root, home, recorded, _git = benchlib.make_project(folder, python, source)
        notrest = benchlib.import_installed(root)
        want = {"generator": GENERATOR, "sessions": sessions,
                "lines_per_session": LINES_PER_SESSION,
                "format": format_fingerprint(notrest)}
        stale = [k for k, v in want.items() if have.get(k) != v]
        if not stale:
            reset(root, folder)
            check_estate(notrest, root, sessions)
            return root, home, recorded, have["lines"], None
        log("the cached %d-session estate is stale (%s): regenerating" % (
            sessions, ", ".join(stale)))
    if os.path.exists(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    log("generating the %d-session estate in %s ..." % (sessions, folder))
    start = time.perf_counter()
    root, home, recorded, _git = benchlib.make_project(folder, python, source)
    notrest = benchlib.import_installed(root)
    want = {"generator": GENERATOR, "sessions": sessions,
            "lines_per_session": LINES_PER_SESSION, "format": format_fingerprint(notrest)}
    lines = generate(notrest, root, sessions, time.time())
    check_estate(notrest, root, sessions)
    shutil.copyfile(os.path.join(root, ".notrest", "index.json"),
                    os.path.join(folder, "index.pristine.json"))
    seconds = time.perf_counter() - start
    with open(marker, "w") as handle:
        json.dump(dict(want, lines=lines, seconds=round(seconds, 1)), handle)
    log("  %d sessions, %d journal lines in %.1fs" % (sessions, lines, seconds))
    return root, home, recorded, lines, seconds


def reset(root, folder):
    """Remove what earlier bench runs added (the bench-* sessions), restore the index."""
    dot = os.path.join(root, ".notrest")
    for sid in BENCH_SESSIONS:
        for path in (os.path.join(dot, "journal", sid + ".jsonl"),
                     os.path.join(dot, "sessions", sid + ".json"),
                     os.path.join(dot, "sessions", ".%s.lock" % sid)):
            if os.path.exists(path):
                os.unlink(path)
    for name in ("threads.jsonl", "permits.json"):
        if os.path.exists(os.path.join(dot, name)):
            os.unlink(os.path.join(dot, name))
    shutil.copyfile(os.path.join(folder, "index.pristine.json"),
                    os.path.join(dot, "index.json"))


# ---- the benchmark ---------------------------------------------------------------

IMPORT_CLI = ("import sys; sys.path.insert(0, sys.argv[1]); import notrest; "
              "sys.exit(notrest.main(sys.argv[2:]))")


def commands(root, home, via, python):
    """(label, argv, stdin payload or None, expected exit codes, slow)."""
    hooks = os.path.join(root, ".notrest", "hooks")
    if via == "wrapper":
        cli = [os.path.join(root, ".notrest", "notrest")]
    else:   # the module's cached bytecode, the way the hook launchers load it
        cli = [python, "-I", "-S", "-c", IMPORT_CLI, os.path.join(root, ".notrest"),
               "--root", root]

    def payload(sample, sid, **changes):
        return benchlib.sample_payload(sample, root, home, session_id=sid,
                                       transcript_path=os.path.join(
                                           home, ".claude", "projects", "p",
                                           sid + ".jsonl"), **changes)
    return [
        ("version", cli + ["--version"], None, (0,), False),
        ("packet", cli + ["packet"], None, (0,), False),
        ("bank", cli + ["bank", "--session", "bench-bank", "--note", "benchmark note",
                        "--next", "keep going"], None, (0,), False),
        ("gate", cli + ["gate", "--command", "rm -rf build"], None, (0,), False),
        ("status", cli + ["status"], None, (0,), False),
        ("doctor", cli + ["doctor"], None, (0, 1), True),
        ("rebuild", cli + ["rebuild"], None, (0,), True),
        ("SessionStart hook", ["sh", os.path.join(hooks, "session-start.sh"), "claude"],
         payload("claude-SessionStart.json", "bench-start"), (0,), False),
        ("SessionEnd hook", ["sh", os.path.join(hooks, "session-end.sh"), "claude"],
         payload("claude-SessionEnd.json", "bench-end"), (0,), False),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="measured rounds (20)")
    parser.add_argument("--slow-runs", type=int, default=None, help="measured rounds "
                        "of doctor and rebuild, which read every journal line (default: "
                        "--runs)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured rounds (2)")
    parser.add_argument("--quick", action="store_true", help="fewer runs; estates of "
                        "0, 100 and 1,000 sessions")
    parser.add_argument("--sizes", help="comma-separated session counts (default "
                        "0,1000,10000)")
    parser.add_argument("--keep", metavar="DIR", help="cache the estates in DIR "
                        "(default $TMPDIR/notrest-bench-estates)")
    parser.add_argument("--regen", action="store_true", help="regenerate the estates")
    parser.add_argument("--only", help="comma-separated command labels to run")
    parser.add_argument("--via", choices=("wrapper", "import"), default="wrapper",
                        help="run the CLI through .notrest/notrest (default; it compiles "
                        "notrest.py each call) or as `python -I -S -c 'import notrest; "
                        "notrest.main()'` from cached bytecode, which shows the work "
                        "itself more sharply")
    parser.add_argument("--source", metavar="DIR", help="measure the notrest.py and "
                        "install.sh in DIR instead of the checkout's")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.warmup = min(args.runs, 8), 1
        args.slow_runs = min(args.slow_runs or 3, 3)
    if args.slow_runs is None:
        args.slow_runs = args.runs
    sizes = [int(s) for s in (args.sizes or ("0,100,1000" if args.quick else
                                             "0,1000,10000")).split(",")]
    cache = os.path.abspath(args.keep or os.path.join(tempfile.gettempdir(),
                                                       "notrest-bench-estates"))
    os.makedirs(cache, exist_ok=True)
    python = benchlib.bench_python()
    source = benchlib.snapshot_source(cache, args.source)

    def log(text):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    estates = []
    for size in sizes:
        root, home, recorded, lines, seconds = prepare(cache, size, python, source,
                                                       args.regen, log)
        estates.append({"size": size, "root": root, "home": home, "lines": lines,
                        "gen": seconds, "python": recorded,
                        "cmds": commands(root, home, args.via, recorded)})
    for est in estates:
        payload_dir = os.path.join(os.path.dirname(est["root"]), "payloads")
        os.makedirs(payload_dir, exist_ok=True)
        est["stdin"] = {}
        for label, _argv, payload, _codes, _slow in est["cmds"]:
            if payload is not None:
                est["stdin"][label] = benchlib.write_payload(
                    payload_dir, label.replace(" ", "-") + ".json", payload)
    labels = [c[0] for c in estates[0]["cmds"]]
    if args.only:
        wanted = set(args.only.split(","))
        labels = [label for label in labels if label in wanted]
    slow = {c[0] for c in estates[0]["cmds"] if c[4]}
    samples = {(label, est["size"]): [] for label in labels for est in estates}
    problems = {}
    runner = benchlib.Runner(cache, recorded)
    rounds = args.warmup + max(args.runs, args.slow_runs)
    for rnd in range(rounds):
        measured = rnd >= args.warmup
        for k, label in enumerate(labels):
            limit = args.slow_runs if label in slow else args.runs
            if rnd >= args.warmup + limit:
                continue
            shift = (rnd + k) % len(estates)
            for est in estates[shift:] + estates[:shift]:
                cmd = next(c for c in est["cmds"] if c[0] == label)
                env = benchlib.base_env(est["root"], est["home"])
                sample = runner.run(cmd[1], stdin_path=est["stdin"].get(label), env=env,
                                    cwd=est["root"])
                if sample.code not in cmd[3] and (label, est["size"]) not in problems:
                    problems[(label, est["size"])] = "exit %d: %s" % (
                        sample.code, sample.err.decode("utf-8", "replace")[-300:].strip())
                if measured:
                    samples[(label, est["size"])].append(sample)
        if rnd == 0:
            log("warm-up round done")
    runner.close()
    report(args, estates, labels, slow, samples, problems, recorded, cache)
    return 0


def report(args, estates, labels, slow, samples, problems, recorded, cache):
    first, last = estates[0], estates[-1]
    extra = ["estates (cached in %s): %s" % (cache, ", ".join(
        "%d sessions/%d lines%s" % (e["size"], e["lines"], " (generated in %.0fs)" %
                                    e["gen"] if e["gen"] is not None else " (cached)")
        for e in estates)),
        ("CLI = .notrest/notrest (sh wrapper: exec %s -I -S -c 'import notrest; ...' "
         "--root .., cached bytecode)" % recorded) if args.via == "wrapper" else (
            "CLI = %s -I -S -c 'import notrest; notrest.main(...)' --root .. (cached "
            "bytecode; --via import)" % recorded),
        "runs = %d measured rounds%s after %d warm-up, interleaved across estates, "
        "order rotated each round" % (args.runs, " (doctor, rebuild: %d)" %
                                      args.slow_runs if slow & set(labels) else "",
                                      args.warmup),
        "version = `notrest --version`: the fixed cost of every CLI call (start-up, "
        "the whole module from cached bytecode, argparse)"]
    print(benchlib.machine_header("notrest bench/estate.py: estate scaling", recorded,
                                  os.path.join(cache, "src", "notrest.py"), extra))
    print()
    name = lambda e: "%d" % e["size"]
    headers = ["command"] + ["%s ms" % name(e) for e in estates] + [
        "%s/%s" % (name(last), name(first))] + ["%s MB" % name(e) for e in estates] + [
        "target", "verdict"]
    rows, missed = [], []
    for label in labels:
        med = [benchlib.median([s.ms for s in samples[(label, e["size"])]])
               for e in estates]
        peak = [max([s.rss_mb for s in samples[(label, e["size"])]] or [float("nan")])
                for e in estates]
        grow = benchlib.ratio(med[-1], med[0])
        target, verdict = "", []
        if label in ("packet", "bank", "gate"):
            target = "<=%.1fx" % RATIO_TARGET
            if grow > RATIO_TARGET:
                verdict.append("MISS +%.0f%%" % ((grow / RATIO_TARGET - 1) * 100))
                missed.append("%s %s/%s = %.2fx > %.1fx" % (
                    label, name(last), name(first), grow, RATIO_TARGET))
        if label == "SessionEnd hook":
            target = "<%.0fms" % SESSION_END_TARGET_MS
            if max(med) >= SESSION_END_TARGET_MS:
                verdict.append("MISS")
                missed.append("SessionEnd hook %.0f ms >= %.0f ms" % (
                    max(med), SESSION_END_TARGET_MS))
        if label.endswith("hook"):
            target += " <%.0fMB" % HOOK_RSS_TARGET_MB
            if max(peak) >= HOOK_RSS_TARGET_MB:
                verdict.append("RSS MISS")
                missed.append("%s peak %.1f MB >= %.0f MB" % (label, max(peak),
                                                            HOOK_RSS_TARGET_MB))
        if label == "rebuild":
            target = "<%.0fMB" % REBUILD_RSS_TARGET_MB
            if max(peak) >= REBUILD_RSS_TARGET_MB:
                verdict.append("RSS MISS")
                missed.append("rebuild peak %.1f MB >= %.0f MB" % (
                    max(peak), REBUILD_RSS_TARGET_MB))
        runs = len(samples[(label, first["size"])])
        rows.append(["%s%s" % (label, " (%d runs)" % runs if label in slow else "")] +
                    [benchlib.fmt_ms(m) for m in med] + [benchlib.fmt_ratio(grow)] +
                    [benchlib.fmt_mb(p) for p in peak] + [target.strip(),
                                                  " ".join(verdict) or ("ok" if target
                                                                        else "")])
    print(benchlib.table(headers, rows))
    print()
    print("medians (ms) per command and estate size; %s/%s = ratio of medians; MB = max "
          "peak RSS of the child (ru_maxrss via os.wait4)" % (name(last), name(first)))
    print("targets: packet, bank, gate %s/%s <= %.1fx; SessionEnd hook < %.0f ms on "
          "every estate; hook peak RSS < %.0f MB; rebuild peak < %.0f MB" % (
              name(last), name(first), RATIO_TARGET, SESSION_END_TARGET_MS,
              HOOK_RSS_TARGET_MB, REBUILD_RSS_TARGET_MB))
    print("missed: %s" % ("; ".join(missed) if missed else "none"))
    for (label, size), why in sorted(problems.items()):
        print("! %s on %d sessions: %s" % (label, size, why))


if __name__ == "__main__":
    raise SystemExit(main())
