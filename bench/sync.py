"""Sync scaling: does `notrest sync` stay proportional to what changed?

    python3 bench/sync.py [--sessions N] [--history H] [--runs R] [--keep DIR]

For a small estate (100 sessions) and a large one (N, default 10,000), and the large
one again after H more syncs of history (default 200), each a bare remote with two
clones (machine A and machine B, each its own HOME) and notrest installed by
install.sh: machine A's estate is generated (3 journal lines per session, records
folded and written with the installed notrest), then timed as a person runs it
(`.notrest/notrest sync --json`, one child process each):

  first push   A's first sync: every session goes out
  first pull   B's first sync: every session comes in
  no-op        A syncs again with nothing new (median of R)
  one out      A banks one new session, then syncs (median of R; the bank is not timed)
  one in       B syncs the one session A just pushed (median of R)

and the git calls each made (the report's git_calls). Flat means the large/small
ratios of no-op, one out and one in stay near 1. Stdlib only.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import uuid

sys.dont_write_bytecode = True   # leave no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

GIT_ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def run_git(cwd, *args):
    env = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=cwd, **GIT_ENV)
    proc = subprocess.run(["git"] + list(args), cwd=cwd, env=env, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit("bench: git %s failed: %s" % (" ".join(args), proc.stderr.decode()))
    return proc.stdout.decode()


class Team:
    """A bare remote and two clones with notrest installed, each with its own HOME."""

    def __init__(self, parent, python, source):
        self.parent = parent
        self.remote = os.path.join(parent, "remote.git")
        run_git(parent, "init", "-q", "--bare", "-b", "main", self.remote)
        seed = os.path.join(parent, "seed")
        os.makedirs(seed)
        with open(os.path.join(seed, "README.md"), "w") as handle:
            handle.write("# bench\n")
        run_git(seed, "init", "-q", "-b", "main")
        run_git(seed, "add", "-A")
        run_git(seed, "commit", "-qm", "seed")
        run_git(seed, "push", "-q", self.remote, "main")
        self.machines = {}
        for name in ("a", "b"):
            root, home = os.path.join(parent, name), os.path.join(parent, "home-" + name)
            os.makedirs(home)
            run_git(parent, "clone", "-q", self.remote, root)
            benchlib.install(root, home, python, source)
            self.machines[name] = (root, home)

    def env(self, name):
        root, home = self.machines[name]
        return dict(benchlib.base_env(root, home), **GIT_ENV)

    def sync_argv(self, name):
        return [os.path.join(self.machines[name][0], ".notrest", "notrest"), "sync",
                "--json"]


def generate(notrest, root, count, start):
    """count finished sessions in root's estate, shaped like the hooks write them."""
    estate = notrest.Estate(root)
    os.makedirs(estate.path("journal"), exist_ok=True)
    entries = []
    for i in range(count):
        session = str(uuid.UUID(int=(start + i) * 7919 + 1, version=4))
        t = 1.7e9 + (start + i) * 60
        lines = [
            {"v": 1, "t": t, "c": "claude", "e": "SessionStart", "k": "start",
             "source": "startup"},
            {"v": 1, "t": t + 5, "c": "claude", "e": "PostToolUse", "k": "tool",
             "tool": "Write", "what": "Write src/mod%d.py" % i, "ok": True,
             "files": [["src/mod%d.py" % i, "write"]]},
            {"v": 1, "t": t + 9, "k": "note", "by": "cli", "note": "session %d did its "
             "part of the refactor" % i, "next": "the next part", "open": [], "close": []},
            {"v": 1, "t": t + 10, "c": "claude", "e": "SessionEnd", "k": "end",
             "reason": "exit"}]
        with open(estate.journal(session), "w") as handle:
            handle.write("".join(notrest.encode_line(rec) for rec in lines))
        rec = notrest.fold_journal(estate, session)
        notrest.save_session(estate, rec)
        entries.append(notrest._index_entry(rec))
    entries.sort(key=lambda e: -(e.get("started") or 0))
    with open(estate.path("index.json"), "w") as handle:
        handle.write(notrest.json_dumps({"schema_version": 1, "sessions": entries[
            :notrest.INDEX_MAX_SESSIONS]}) + "\n")


def bank_one(notrest, root, serial):
    estate = notrest.Estate(root)
    session = "bench-new-%05d" % serial
    notrest.bank_session(estate, session, "one more session %d" % serial, "next")


def timed(runner, team, name):
    sample = runner.run(team.sync_argv(name), env=team.env(name),
                        cwd=team.machines[name][0])
    try:
        report = json.loads(sample.out)
    except ValueError:
        raise SystemExit("bench: sync printed no report (%d): %s" % (
            sample.code, sample.err.decode()[-800:]))
    if sample.code != 0:
        raise SystemExit("bench: sync failed: %s %s" % (report["outcome"],
                                                       report["message"]))
    return sample.ms, report


def measure(parent, python, source, label, sessions, history, runs, notrest_loader):
    team = Team(parent, python, source)
    notrest = notrest_loader(team.machines["a"][0])
    started = time.monotonic()
    generate(notrest, team.machines["a"][0], sessions, 0)
    made = time.monotonic() - started
    runner = benchlib.Runner(parent, python)
    try:
        first_push, report = timed(runner, team, "a")
        assert report["went_out"]["sessions"] == sessions, report["went_out"]
        first_pull, report = timed(runner, team, "b")
        assert len(report["came_in"]["sessions"]) == sessions
        serial = 0
        for _ in range(history):
            serial += 1
            bank_one(notrest, team.machines["a"][0], serial)
            timed(runner, team, "a")
        if history:
            timed(runner, team, "b")
        noop, one_out, one_in, calls = [], [], [], {}
        for _ in range(runs):
            ms, report = timed(runner, team, "a")
            noop.append(ms)
            calls["no-op"] = report["git_calls"]
            serial += 1
            bank_one(notrest, team.machines["a"][0], serial)
            ms, report = timed(runner, team, "a")
            assert report["went_out"]["sessions"] == 1, report["went_out"]
            one_out.append(ms)
            calls["one out"] = report["git_calls"]
            ms, report = timed(runner, team, "b")
            assert len(report["came_in"]["sessions"]) == 1
            one_in.append(ms)
            calls["one in"] = report["git_calls"]
    finally:
        runner.close()
    commits = len(run_git(team.remote, "rev-list", "refs/notrest/estate").split())
    return {"label": label, "sessions": sessions, "commits": commits,
            "generate_s": made, "first push": first_push, "first pull": first_pull,
            "no-op": benchlib.median(noop), "one out": benchlib.median(one_out),
            "one in": benchlib.median(one_in), "calls": calls}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--history", type=int, default=200)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", help="build the estates in DIR and keep them")
    args = parser.parse_args(argv)
    python = benchlib.bench_python()

    def body(parent):
        source = benchlib.snapshot_source(parent)
        loaded = {}

        def loader(root):
            if "m" not in loaded:
                loaded["m"] = benchlib.import_installed(root)
            return loaded["m"]

        results = []
        for label, sessions, history in (("small", 100, 0),
                                         ("large", args.sessions, 0),
                                         ("large+history", args.sessions, args.history)):
            folder = os.path.join(parent, label)
            os.makedirs(folder)
            results.append(measure(folder, python, source, label, sessions, history,
                                   args.runs, loader))
            sys.stderr.write("bench: %s done\n" % label)
        print(benchlib.machine_header("notrest sync scaling (bench/sync.py)", python,
                                      os.path.join(source, "notrest.py"),
                                      ["runs %d per median" % args.runs]))
        heads = ["estate", "sessions", "ref commits", "first push ms", "first pull ms",
                 "no-op ms", "one out ms", "one in ms", "git calls (no-op/out/in)"]
        rows = []
        for r in results:
            rows.append([r["label"], r["sessions"], r["commits"],
                         benchlib.fmt_ms(r["first push"]), benchlib.fmt_ms(r["first pull"]),
                         benchlib.fmt_ms(r["no-op"]), benchlib.fmt_ms(r["one out"]),
                         benchlib.fmt_ms(r["one in"]), "%d/%d/%d" % (
                             r["calls"]["no-op"], r["calls"]["one out"],
                             r["calls"]["one in"])])
        print(benchlib.table(heads, rows))
        small = results[0]
        print()
        print(benchlib.table(["ratio to small", "no-op", "one out", "one in"], [
            [r["label"]] + [benchlib.fmt_ratio(benchlib.ratio(r[k], small[k]))
                            for k in ("no-op", "one out", "one in")]
            for r in results[1:]]))
        return 0

    return benchlib.with_scratch(args.keep, "notrest-bench-sync-", body)


if __name__ == "__main__":
    raise SystemExit(main())
