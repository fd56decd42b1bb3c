"""notrest against its peers on their own test cases (not a test: a benchmark).

    python3 bench/peers.py [--pure] [--safety-net DIR] [--only sn|dcg] [--limit N]
                           [--world dirty|clean] [--misses FILE] [--keep DIR]

The cases are the peers' public test suites taken as facts (command, expected
verdict), extracted by bench/peers/extract.py into bench/peers/safety_net.json
(kenryu42/claude-code-safety-net, default-mode cases only) and bench/peers/dcg.json
(Dicklesworthstone/destructive_command_guard). Every case is judged:

  notrest, default packs   sh .notrest/hooks/pre-tool-use.sh claude  (installed hook)
  notrest, every pack on   the same, laws.json {"packs": {every pack: true}}
  safety-net               cc-safety-net hook -cc  (npm package cc-safety-net)

with the case's command as a Claude Code PreToolUse payload, cwd the project root,
in one world: a git project in a home folder (outside the temp dir), with
uncommitted changes in every file the cases name, untracked and ignored files, a
stash and unmerged branches (--world dirty, the peers' assumption: there is
something to lose), or all of it committed and nothing stashed (--world clean).
A call is blocked when the answer is deny or ask. notrest and safety-net run
interleaved, case by case, so their per-call times are comparable.

safety-net comes from the npm registry: `npm install --prefix DIR cc-safety-net`,
then --safety-net DIR (without it, the safety-net columns are left out).
--pure judges in-process (notrest.decide, no hook, no times): for development.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

PEERS = os.path.join(HERE, "peers")
SESSION = "0b7c2b43-7a54-4e8a-9c3e-peers0000001"
BRANCHES_WITH_WORK = ("feature", "feature-branch", "old-feature", "fix", "experiment",
                      "test", "branch", "topic")
# words of git cases that name refs, options' values or modes, not files
NOT_PATHS = frozenset(BRANCHES_WITH_WORK + (
    "main", "master", "develop", "merged-branch", "new-branch", "-", "@", "3",
    "checkout", "on-demand", "direct", "inherit", "merge", "diff3", "ours", "theirs",
    "unterminated", "'unterminated", "stash@{0}", "HEAD~1", "HEAD~5", "file`name"))


def load_cases(which):
    """[(corpus, case)] of the chosen corpora; safety-net: default-mode cases only."""
    out = []
    if which in ("all", "sn"):
        doc = json.load(open(os.path.join(PEERS, "safety_net.json")))
        out += [("safety-net", c) for c in doc["cases"] if c["mode"] == "default"]
    if which in ("all", "dcg"):
        doc = json.load(open(os.path.join(PEERS, "dcg.json")))
        out += [("dcg", c) for c in doc["cases"]]
    return out


# ---- the world ------------------------------------------------------------------

def _git(root, *args, env=None):
    return subprocess.run(["git", "-C", root] + list(args), capture_output=True,
                          env=env, check=True)


def _named_paths(notrest, cases):
    """Relative file paths the git cases name (they get uncommitted changes)."""
    names = set()
    for _corpus, case in cases:
        for cmd in notrest.parse_shell(case["command"], "/w", {"HOME": "/h"}):
            if cmd.prog != "git":
                continue
            plan = notrest.git_discard_plan(cmd.argv)
            if not plan or plan[0] not in ("tracked", "untracked", "ignored"):
                continue
            for path in plan[2]:
                if path not in NOT_PATHS and not path.startswith((
                        "/", "--", "~", ":", "$", "origin/", "HEAD")) and \
                        ".." not in path and not any(c in path for c in "*?[{}@") and \
                        len(path) < 80 and path.strip("./"):
                    names.add(path.rstrip("/"))
    return sorted(names)


def make_world(parent, notrest, cases, dirty=True):
    """parent/home/work/proj: a git project; returns (root, home)."""
    home = os.path.join(parent, "home")
    root = os.path.join(home, "work", "proj")
    os.makedirs(root)
    env = dict(os.environ, HOME=home, GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid")
    _git(root, "init", "-q", "-b", "main", env=env)
    files = ["README.md", "file.txt", "file1.txt", "file2.txt", "a.txt", "b.txt",
             "src/app.py", "src/main.rs", "docs/notes.txt"] + _named_paths(notrest, cases)
    made = []
    for rel in files:
        path = os.path.join(root, rel)
        if os.path.isdir(path):
            path = os.path.join(path, "inside.txt")
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write("committed %s\n" % rel)
            made.append(path)
        except OSError:
            continue
    with open(os.path.join(root, ".gitignore"), "w") as handle:
        handle.write("*.log\n.env\nnode_modules/\n")
    _git(root, "add", "-A", env=env)
    _git(root, "commit", "-qm", "initial", env=env)
    for branch in BRANCHES_WITH_WORK:
        _git(root, "checkout", "-qb", branch, env=env)
        with open(os.path.join(root, "branch-%s.txt" % branch), "w") as handle:
            handle.write("work only on %s\n" % branch)
        _git(root, "add", "-A", env=env)
        _git(root, "commit", "-qm", "work on %s" % branch, env=env)
        _git(root, "checkout", "-q", "main", env=env)
    _git(root, "branch", "merged-branch", env=env)
    nested = os.path.join(root, "repo")
    os.makedirs(nested)
    _git(nested, "init", "-q", "-b", "main", env=env)
    with open(os.path.join(nested, "file.txt"), "w") as handle:
        handle.write("nested\n")
    _git(nested, "add", "-A", env=env)
    _git(nested, "commit", "-qm", "nested", env=env)
    made.append(os.path.join(nested, "file.txt"))
    if dirty:
        with open(made[0], "a") as handle:
            handle.write("stashed change\n")
        _git(root, "stash", "push", "-q", "-m", "kept work", env=env)
        for path in made:
            with open(path, "a") as handle:
                handle.write("uncommitted change\n")
        for rel in ("untracked.txt", "notes/todo.md", "debug.log", ".env"):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write("not in git\n")
    return root, home


# ---- judging ---------------------------------------------------------------------

def payload(root, home, command):
    return {"session_id": SESSION, "cwd": root, "hook_event_name": "PreToolUse",
            "transcript_path": os.path.join(home, ".claude", "projects", "p",
                                            SESSION + ".jsonl"),
            "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "peer case"},
            "tool_use_id": "toolu_peers"}


def blocked_by(sample):
    """Whether a hook's answer stops the call (deny or ask), and its reason."""
    try:
        answer = json.loads(sample.out.decode("utf-8", "replace") or "{}")
    except ValueError:
        return sample.code == 2, "(no JSON: exit %d)" % sample.code
    specific = answer.get("hookSpecificOutput") or {} if isinstance(answer, dict) else {}
    decision = specific.get("permissionDecision")
    reason = specific.get("permissionDecisionReason") or ""
    if decision in ("deny", "ask") or sample.code == 2:
        return True, reason
    return False, ""


def set_packs(root, every):
    path = os.path.join(root, ".notrest", "laws.json")
    with open(path) as handle:
        doc = json.load(handle)
    import notrest
    doc["packs"] = {p: True for p in notrest.PACK_IDS} if every else {}
    with open(path, "w") as handle:
        json.dump(doc, handle, indent=2)


class Judges:
    """The hooks under test, run through benchlib's spawner."""

    def __init__(self, scratch, root, home, python, safety_net):
        self.root, self.home = root, home
        self.runner = benchlib.Runner(scratch, python)
        self.stdin = os.path.join(scratch, ".payload.json")
        self.env = benchlib.base_env(root, home)
        self.sn = os.path.join(safety_net, "node_modules", ".bin", "cc-safety-net") if \
            safety_net else None
        self.sn_env = dict(self.env, PATH=os.path.dirname(shutil.which("node") or
                                                          "/usr/bin/node") + ":" +
                           self.env["PATH"])

    def _write(self, command):
        with open(self.stdin, "w") as handle:
            json.dump(payload(self.root, self.home, command), handle)

    def notrest(self, command):
        self._write(command)
        return self.runner.run(["sh", os.path.join(self.root, ".notrest", "hooks",
                                                   "pre-tool-use.sh"), "claude"],
                               stdin_path=self.stdin, env=self.env, cwd=self.root)

    def safety_net(self, command):
        self._write(command)
        return self.runner.run([self.sn, "hook", "-cc"], stdin_path=self.stdin,
                               env=self.sn_env, cwd=self.root)


def judge_pure(notrest, root, home, every):
    doc = {"packs": {p: True for p in notrest.PACK_IDS}} if every else None
    book = notrest.build_lawbook(doc)
    branch = notrest.current_branch(root)

    def judge(command):
        event = notrest.Event(kind="PreToolUse", client="claude", tool="Bash",
                              tool_input={"command": command}, session="peers",
                              cwd=root, root=root, home=home, env={"HOME": home},
                              branch=branch, facts={"cli": ".notrest/notrest"})
        strict = [v for v in notrest.decide(book, event) if v.action in ("deny", "ask")]
        return bool(strict), (strict[0].law + ": " + strict[0].reason) if strict else ""
    return judge


def _law_of(why):
    """The law (notrest) or rule (safety-net) a blocking answer names."""
    if why.startswith("notrest ") and "[" in why:
        return why.split("[", 1)[1].split("]", 1)[0]
    if ": " in why and why.split(": ", 1)[0].replace("-", "").isalnum():
        return why.split(": ", 1)[0]
    for line in why.splitlines():
        if line.startswith("Rule: "):
            return line[6:].strip()
    return "?"


def score(results):
    """{corpus: (caught, deny cases, false blocks, allow cases)}."""
    out = {}
    for corpus, case, blocked in results:
        row = out.setdefault(corpus, [0, 0, 0, 0])
        if case["expect"] == "deny":
            row[1] += 1
            row[0] += blocked
        else:
            row[3] += 1
            row[2] += blocked
    return out


def pct(a, b):
    return "%.1f%% (%d/%d)" % (100.0 * a / b, a, b) if b else "-"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pure", action="store_true")
    parser.add_argument("--safety-net", metavar="DIR")
    parser.add_argument("--only", choices=("all", "sn", "dcg"), default="all")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--world", choices=("dirty", "clean"), default="dirty")
    parser.add_argument("--misses", metavar="FILE")
    parser.add_argument("--keep", metavar="DIR")
    args = parser.parse_args(argv)
    cases = load_cases(args.only)
    if args.limit:
        cases = cases[::max(1, len(cases) // args.limit)][:args.limit]
    base = args.keep or os.environ.get("NOTREST_BENCH_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache")
    os.makedirs(base, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="notrest-peers-", dir=base)
    python = benchlib.bench_python()
    source = benchlib.snapshot_source(scratch)
    sys.path.insert(0, source)
    import notrest
    root, home = make_world(scratch, notrest, cases, dirty=args.world == "dirty")
    modes = ("default packs", "every pack on")
    results = {mode: [] for mode in modes}
    results["safety-net"] = []
    times = {"notrest": [], "safety-net": []}
    lines = []
    extra = ["cases: %d safety-net (default mode), %d dcg; world %s" % (
        sum(c == "safety-net" for c, _ in cases), sum(c == "dcg" for c, _ in cases),
        args.world)]
    if args.safety_net:
        with open(os.path.join(args.safety_net, "node_modules", "cc-safety-net",
                               "package.json")) as handle:
            extra.append("safety-net: cc-safety-net %s (npm), hook -cc" %
                         json.load(handle)["version"])
    header = "# in-process (--pure), %s world" % args.world if args.pure else \
        benchlib.machine_header("notrest and its peers on the peers' cases", python,
                                os.path.join(source, "notrest.py"), extra)
    try:
        if args.pure:
            for every, mode in ((False, modes[0]), (True, modes[1])):
                judge = judge_pure(notrest, root, home, every)
                for corpus, case in cases:
                    hit, why = judge(case["command"])
                    results[mode].append((corpus, case, hit))
                    lines.append((mode, corpus, case, hit, why))
        else:
            benchlib.install(root, home, python, source)
            judges = Judges(scratch, root, home, python, args.safety_net)
            for every, mode in ((False, modes[0]), (True, modes[1])):
                set_packs(root, every)
                for n, (corpus, case) in enumerate(cases):
                    order = ("sn", "nr") if n % 2 else ("nr", "sn")
                    for who in order:
                        if who == "sn" and (every or not judges.sn):
                            continue
                        sample = judges.notrest(case["command"]) if who == "nr" else \
                            judges.safety_net(case["command"])
                        hit, why = blocked_by(sample)
                        label = mode if who == "nr" else "safety-net"
                        results[label].append((corpus, case, hit))
                        lines.append((label, corpus, case, hit, why))
                        if not every:
                            times["notrest" if who == "nr" else "safety-net"].append(
                                sample.ms)
            judges.runner.close()
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(header)
    rows = []
    for label in modes + ("safety-net",):
        table = score(results[label])
        for corpus in ("safety-net", "dcg"):
            if corpus in table:
                caught, deny, false, allow = table[corpus]
                rows.append([label, corpus + "'s cases", pct(caught, deny),
                             pct(false, allow)])
    print(benchlib.table(["judge", "cases", "caught", "false blocks"], rows))
    print()
    brows = []
    for label in modes + ("safety-net",):
        for corpus in ("safety-net", "dcg"):
            counts = {}
            for who, where, case, hit, why in lines:
                if who == label and where == corpus and hit and case["expect"] == "allow":
                    law = _law_of(why)
                    counts[law] = counts.get(law, 0) + 1
            if counts:
                brows.append([label, corpus + "'s cases", ", ".join(
                    "%s %d" % kv for kv in sorted(counts.items(), key=lambda kv: -kv[1]))])
    if brows:
        print(benchlib.table(["judge", "cases", "false blocks by law or rule"], brows))
        print()
    if times["notrest"]:
        print()
        trows = [[who, "%.1f" % statistics.median(ms), "%.1f" % sorted(ms)[
            int(len(ms) * 0.9)], len(ms)] for who, ms in times.items() if ms]
        print(benchlib.table(["per call (interleaved)", "median ms", "p90 ms", "calls"],
                             trows))
    if args.misses:
        with open(args.misses, "w") as handle:
            for label, corpus, case, hit, why in lines:
                wrong = hit != (case["expect"] == "deny")
                if wrong:
                    handle.write("%s\t%s\t%s\t%s\t%s\t%s\n" % (
                        label, corpus, case["expect"], case["id"],
                        case["command"].replace("\n", "\\n")[:200],
                        why.replace("\n", " ")[:160]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
