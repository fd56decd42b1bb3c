"""The packs: laws for git work not yet stored, databases, containers, clouds,
infrastructure and secret stores (on by default) and more families laws.json turns
on. tests/data/pack_cases.json holds tool calls with the verdict the packs demand
(gate_cases.json's format, plus `packs`: "all" for every pack on), judged in two
real git projects: PROJECT has something to lose (uncommitted changes, untracked and
ignored files, a stash, a branch with unmerged commits), CLEAN has nothing but that
branch. A sample runs through the installed hook; the packs' cheap pre-filter must
never hide a command a pack denies."""
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ANSWER_WITHIN_S
import notrest

DATA = Path(__file__).resolve().parent / "data"
CASES = json.loads((DATA / "pack_cases.json").read_text())
BY_ID = {case["id"]: case for case in CASES}
STRICT = ("deny", "ask", "block")
CLI = ".notrest/notrest"
EVERY_PACK = {"packs": {pack_id: True for pack_id in notrest.PACK_IDS}}
PEERS = Path(__file__).resolve().parents[1] / "bench" / "peers"

TRACKED = {
    "README.md": "# project\n",
    "file.txt": "committed\n",
    "src/app.py": "print('app')\n",
    "docs/guide.md": "guide\n",
    "db/schema.sql": "-- the schema, from scratch\nDROP TABLE IF EXISTS users;\n"
                     "CREATE TABLE users (id int);\n",
    "db/seed.sql": "INSERT INTO users VALUES (1);\n",
    "db/read.sql": "SELECT count(*) FROM users;\n",
    "scripts/cleanup.js": "db.sessions.drop();\n",
    ".gitignore": "*.log\n",
}
_PLACEHOLDER = re.compile(r"(?<![\w$.{/-])(PROJECT|CLEAN|HOME)(?![\w])")


def _git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(root))
    subprocess.run(["git", "-C", str(root)] + list(args), check=True, env=env,
                   capture_output=True)


def make_repo(root, dirty):
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    for name, text in TRACKED.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "first")
    _git(root, "branch", "merged")
    _git(root, "checkout", "-qb", "feature")
    (root / "feature.txt").write_text("only on feature\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "feature work")
    _git(root, "checkout", "-q", "main")
    if not dirty:
        return
    (root / "file.txt").write_text("stashed\n")
    _git(root, "stash", "push", "-q")
    (root / "src" / "app.py").write_text("print('changed')\n")
    (root / "file.txt").write_text("changed\n")
    (root / "notes.txt").write_text("untracked\n")
    (root / "debug.log").write_text("ignored\n")
    _git(root, "worktree", "add", "-q", "wt", "merged")
    (root / "wt" / "README.md").write_text("changed in the worktree\n")


class World:
    def __init__(self, base):
        self.home = base / "home"
        self.root = self.home / "work" / "proj"
        self.clean = self.home / "work" / "clean"

    def sub(self, value):
        names = {"PROJECT": str(self.root), "CLEAN": str(self.clean),
                 "HOME": str(self.home)}
        return _PLACEHOLDER.sub(lambda m: names[m.group(1)], value)


def _base_dir(tmp_path_factory):
    """A folder outside the temp dir (the laws treat the temp dir as free)."""
    for parent in (os.environ.get("NOTREST_GATE_TESTDIR"),
                   os.path.join(os.path.expanduser("~"), ".cache")):
        if not parent:
            continue
        parent = os.path.realpath(parent)
        temp = os.path.realpath(tempfile.gettempdir())
        if parent == temp or parent.startswith(temp + "/") or parent.startswith("/tmp"):
            continue
        try:
            os.makedirs(parent, exist_ok=True)
            return Path(tempfile.mkdtemp(prefix="notrest-packs-", dir=parent)), True
        except OSError:
            continue
    return Path(str(tmp_path_factory.mktemp("packs"))), False


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base, own = _base_dir(tmp_path_factory)
    made = World(base)
    make_repo(made.root, dirty=True)
    make_repo(made.clean, dirty=False)
    (made.home / "Documents").mkdir(parents=True)
    yield made
    if own:
        shutil.rmtree(base, ignore_errors=True)


def make_event(world, case):
    cwd = world.sub(case.get("cwd", "PROJECT"))
    root = str(world.clean) if cwd.startswith(str(world.clean)) else str(world.root)
    return notrest.Event(
        kind=case.get("kind", "PreToolUse"), client=case["client"], tool=case["tool"],
        tool_input={"command": world.sub(case["command"])}, session="packs", cwd=cwd,
        root=root, home=str(world.home), env={"HOME": str(world.home)},
        branch=case.get("branch", notrest.current_branch(root) or "main"),
        facts={"cli": CLI})


def lawbook(case):
    return notrest.build_lawbook(EVERY_PACK if case.get("packs") == "all" else None)


def judge(world, case):
    return notrest.decide(lawbook(case), make_event(world, case))


def shown(verdicts):
    return [(v.action, v.law, v.reason) for v in verdicts]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(world, case):
    verdicts = judge(world, case)
    strict = [v for v in verdicts if v.action in STRICT]
    if case["expect"] == "quiet":
        assert not [v for v in verdicts if v.law == case["law"]], (
            "the %s pack spoke (%s): %s" % (case["law"], case["why"], shown(verdicts)))
        return
    if case["expect"] == "allow":
        assert not strict, "expected allow (%s), got %s" % (case["why"], shown(strict))
        return
    mine = [v for v in strict if v.law == case["law"]]
    assert mine, "expected %s by %s (%s), got %s" % (case["expect"], case["law"],
                                                      case["why"], shown(verdicts))
    assert mine[0].action == case["expect"]
    assert case["law"] in mine[0].law and mine[0].reason.strip()
    assert mine[0].instead.strip(), "a verdict must say what to do instead"


# ---- the corpus itself -------------------------------------------------------------

def test_the_corpus_covers_every_pack_both_ways():
    assert len(CASES) >= 300 and len(BY_ID) == len(CASES)
    denied = {c["law"] for c in CASES if c["expect"] == "deny"}
    assert set(notrest.PACK_IDS) <= denied
    for pack_id in notrest.PACK_IDS:
        allowed = [c for c in CASES if c["expect"] == "allow" and (
            c.get("packs") == "all" or pack_id in {p["id"] for p in notrest.PACKS
                                                   if p["default"]})]
        assert allowed, pack_id
    assert sum(c.get("cwd") == "CLEAN" for c in CASES) >= 10, "nothing-to-lose cases"
    for case in CASES:
        assert case["expect"] in ("allow", "deny", "quiet") and case.get("why"), case["id"]
        assert case["expect"] == "allow" or case["law"] in notrest.PACK_IDS, case["id"]
    quiet = {c["law"] for c in CASES if c["expect"] == "quiet"}
    assert quiet == {p["id"] for p in notrest.PACKS if not p["default"]}


def test_every_pack_is_a_law_with_three_layers_of_data():
    book = notrest.build_lawbook(None)
    for pack in notrest.PACKS:
        law = book.get(pack["id"])
        assert law is not None and law.source == "pack"
        assert law.disabled == (not pack["default"])
        assert law.text and law.instead and set(law.on) == {"PreToolUse",
                                                          "PermissionRequest"}
        line = "- %s: %s" % (law.id, law.text)
        assert len(line.encode()) <= notrest.PACKET_LINE_MAX, "packet clips it"
    assert notrest.PACK_IDS == tuple(p["id"] for p in notrest.PACKS)
    assert [p["id"] for p in notrest.PACKS if p["default"]] == [
        "git-discard", "databases", "containers", "cloud", "iac", "secret-managers"]


# ---- every suggestion passes the gate, with every pack on ------------------------

SUGGESTIONS = sorted({cmd for text in [p["instead"] for p in notrest.PACKS] + list(
    notrest.GIT_DISCARD_INSTEAD.values()) for cmd in re.findall(r"`([^`]+)`", text)})


@pytest.mark.parametrize("command", SUGGESTIONS)
def test_every_pack_suggestion_passes_the_gate(world, command):
    case = {"id": "instead", "client": "claude", "tool": "Bash", "command": command,
            "packs": "all"}
    blocked = [v for v in judge(world, case) if v.action in STRICT]
    assert not blocked, "the suggestion `%s` is stopped: %s" % (command, shown(blocked))


def test_the_suggestions_given_for_the_corpus_pass_the_gate(world):
    failures = []
    for case in CASES:
        for verdict in judge(world, case):
            if verdict.action not in STRICT:
                continue
            for command in re.findall(r"`([^`]+)`", verdict.instead):
                again = dict(case, command=command)
                blocked = [v for v in judge(world, again) if v.action in STRICT]
                if blocked:
                    failures.append((case["id"], command, shown(blocked)))
    assert not failures, failures


# ---- the pre-filter: cheap, and it hides nothing a pack denies ------------------------

def _all_commands():
    commands = [c["command"] for c in CASES]
    for name in ("safety_net.json", "dcg.json"):
        path = PEERS / name
        if path.exists():
            commands += [c["command"] for c in json.loads(path.read_text())["cases"]]
    return commands


def test_the_trigger_words_never_hide_a_command_a_pack_denies(world):
    book = notrest.build_lawbook(EVERY_PACK)
    checked = 0
    for command in _all_commands():
        event = make_event(world, {"client": "claude", "tool": "Bash",
                                   "command": world.sub(command)})
        ctx = notrest.GateContext(event, book)
        for pack in notrest.PACKS:
            for cmd in ctx.cmds:
                if cmd.prog not in pack["programs"]:
                    continue
                checked += 1
                if notrest.pack_triggered(pack["id"], cmd):
                    continue
                hit = notrest.judge_pack_commands(pack["id"], [cmd], ctx)
                assert hit is None, "%s: %r is denied (%s) but never looked at" % (
                    pack["id"], command, hit)
    assert checked > 1500


def test_ordinary_calls_never_reach_a_pack(world, monkeypatch):
    """`ls`, `pytest -q` and the read-only forms of the packs' own programs are
    settled by the pre-filter and trigger words: no judge runs, no git call."""
    def boom(*args, **kwargs):
        raise AssertionError("a judge ran for an ordinary call")
    monkeypatch.setattr(notrest, "judge_pack_commands", boom)
    monkeypatch.setattr(notrest, "_spawn_capture", boom)
    ordinary = ("ls", "pytest -q", "python3 -m pytest -q 2>&1 | tail -5",
                "cat README.md", "git status", "git diff", "git log --oneline",
                "git commit -m wip", "git stash", "git checkout main",
                "git switch feature", "git branch", "docker ps", "docker build -t app .",
                "kubectl get pods", "aws s3 ls", "terraform plan",
                "vault kv get secret/x", "psql -c 'SELECT 1'",
                "curl -fsS https://example.com -o /tmp/page.html")
    for every, commands in (("all", ordinary), (None, ordinary + ("git push",))):
        for command in commands:
            case = {"client": "claude", "tool": "Bash", "command": command,
                    "packs": every}
            assert not [v for v in judge(world, case) if v.action in STRICT], command
    for tool, tool_input in (("Edit", {"file_path": "PROJECT/src/app.py"}),
                             ("Read", {"file_path": "PROJECT/README.md"})):
        event = notrest.Event(kind="PreToolUse", client="claude", tool=tool,
                              tool_input={k: world.sub(v) for k, v in tool_input.items()},
                              cwd=str(world.root), root=str(world.root),
                              home=str(world.home), env={}, facts={"cli": CLI})
        assert not notrest.decide(notrest.build_lawbook(EVERY_PACK), event)


# ---- git-discard asks git once, bounded ------------------------------------------

def test_git_discard_makes_one_bounded_git_call(world, monkeypatch):
    calls = []
    real = notrest._spawn_capture

    def counted(argv, timeout):
        calls.append((argv, timeout))
        return real(argv, timeout)
    monkeypatch.setattr(notrest, "_spawn_capture", counted)
    for command in ("git reset --hard", "git clean -fdx", "git stash drop",
                    "git branch -D feature merged", "git checkout -- src/app.py"):
        calls.clear()
        judge(world, {"client": "claude", "tool": "Bash", "command": command})
        assert len(calls) == 1, (command, calls)
        argv, timeout = calls[0]
        assert argv[0] == notrest.git_program() and argv[0].startswith("/")
        assert argv[1:4] == ["--no-pager", "--no-optional-locks", "-C"] and timeout <= 3
        assert "core.fsmonitor=false" in argv  # see tests/test_gitsafe.py


def test_git_discard_stops_the_call_when_git_cannot_answer(world, monkeypatch):
    monkeypatch.setattr(notrest, "_spawn_capture", lambda argv, timeout: (124, b""))
    verdicts = judge(world, {"client": "claude", "tool": "Bash",
                             "command": "git reset --hard"})
    mine = [v for v in verdicts if v.law == "git-discard"]
    assert mine and mine[0].action in ("ask", "deny"), "unknown is dangerous here"
    assert "could not tell" in mine[0].reason


def test_git_discard_says_what_to_do_for_what_it_would_lose():
    found = notrest.pack_finding("x", notrest.GIT_DISCARD_INSTEAD["stash"])
    assert found == "x" and "git stash list" in found.instead and not found.uncertain
    assert {"tracked", "untracked", "ignored", "stash", "branch", "worktree"} <= set(
        notrest.GIT_DISCARD_INSTEAD)


def test_a_slow_git_is_cut_at_the_bound(tmp_path):
    slow = tmp_path / "git"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = "%s:%s" % (tmp_path, old)
    try:
        import time
        start = time.monotonic()
        code, _ = notrest._spawn_capture(["git", "status"], 0.5)
        # cut at its bound: it returned long before the slow git would have ended
        assert code == 124 and time.monotonic() - start < 30
    finally:
        os.environ["PATH"] = old


def test_a_remote_git_discard_cannot_be_probed_here(world):
    cmd = notrest.parse_shell("git reset --hard", str(world.clean), {})[0]
    cmd.via = ["ssh"]
    lost, detail = notrest.git_work_at_risk(cmd, notrest.git_discard_plan(cmd.argv))
    assert lost is None and "another machine" in detail


# ---- laws.json: packs on and off --------------------------------------------------------

def test_laws_json_switches_packs(world):
    book = notrest.build_lawbook({"packs": {"git-discard": False, "services": True}})
    assert book.get("git-discard").disabled and not book.get("services").disabled
    assert not book.problems
    case = {"client": "claude", "tool": "Bash", "command": "git reset --hard"}
    event = make_event(world, case)
    assert not [v for v in notrest.decide(book, event) if v.law == "git-discard"]
    book = notrest.build_lawbook({"disable": ["databases"], "packs": {"databases": True}})
    assert book.get("databases").disabled, "disable wins"


@pytest.mark.parametrize("doc, problem", [
    ({"packs": {"nope": True}}, "no pack"),
    ({"packs": {"cloud": "yes"}}, "true or false"),
    ({"packs": ["cloud"]}, "must be an object"),
    ({"disable": ["nope"]}, "no built-in law or pack"),
])
def test_a_bad_packs_setting_is_named_and_the_defaults_stay(doc, problem):
    book = notrest.build_lawbook(doc)
    assert any(problem in p for p in book.problems), book.problems
    assert not book.get("cloud").disabled


def test_notrest_laws_lists_every_pack_with_its_state(proj):
    laws = proj.estate.path("laws.json")
    doc = json.loads(Path(laws).read_text())
    assert doc["packs"] == {p["id"]: p["default"] for p in notrest.PACKS}
    doc["packs"].update({"services": True, "cloud": False})
    Path(laws).write_text(json.dumps(doc))
    out = proj.cli("laws")
    assert out.code == 0, out.stderr
    for pack in notrest.PACKS:
        assert re.search(r"^%s\s+(on|off)\b" % re.escape(pack["id"]), out.stdout, re.M)
    assert re.search(r"^services\s+on\s+\(laws.json packs\)", out.stdout, re.M)
    assert re.search(r"^cloud\s+off\s+\(laws.json packs\)", out.stdout, re.M)
    assert re.search(r"^backups\s+off\s+\(default\)", out.stdout, re.M)
    data = json.loads(proj.cli("laws", "--json").stdout)
    states = {p["id"]: p["on"] for p in data["packs"]}
    assert states["services"] and not states["cloud"] and states["git-discard"]
    assert {law["id"] for law in data["laws"]} >= set(notrest.PACK_IDS)


def test_doctor_proves_every_active_pack_in_three_layers(proj):
    laws = proj.estate.path("laws.json")
    doc = json.loads(Path(laws).read_text())
    doc["packs"]["strict-git"] = True
    Path(laws).write_text(json.dumps(doc))
    subprocess.run(["sh", str(Path(__file__).resolve().parents[1] / "install.sh"),
                    "--client", "both", str(proj.root)], env=proj.env(),
                   capture_output=True, check=True)
    out = proj.cli("doctor")
    for pack in notrest.PACKS:
        line = "law %s in all three layers" % pack["id"]
        if pack["default"] or pack["id"] == "strict-git":
            assert line in out.stdout, out.stdout
        else:
            assert line not in out.stdout
    assert proj.cli("check", "git-discard", "--command", "git stash list").code == 0
    assert proj.cli("check", "databases", "--command", "dropdb app").code == 1


# ---- through the installed hook ---------------------------------------------------------

HOOK_CASES = ["db-deny-00", "db-deny-38", "db-deny-48", "db-allow-00", "ct-deny-00",
              "ct-deny-15", "ct-allow-14", "cl-deny-00", "cl-allow-00", "iac-deny-00",
              "iac-allow-01", "sm-deny-00", "sm-allow-11", "pf-off-00", "sv-off-00",
              "ordinary-00", "db-deny-codex"]


@pytest.mark.parametrize("case_id", HOOK_CASES)
def test_through_the_installed_hook(proj, case_id):
    case = BY_ID[case_id]
    payload = proj.payload("PreToolUse", "packs-hook", case["client"], tool_name="Bash",
                           tool_input={"command": case["command"]})
    result = proj.hook("PreToolUse", payload, case["client"])
    assert result.code == 0, result.stderr
    specific = result.answer.get("hookSpecificOutput") or {}
    decision = specific.get("permissionDecision")
    if case["expect"] == "quiet":
        assert "[%s]" % case["law"] not in str(specific), specific
        return
    if case["expect"] == "allow":
        assert decision not in ("deny", "ask"), specific
        return
    assert decision == "deny", specific
    reason = specific["permissionDecisionReason"]
    assert case["law"] in reason and "Instead:" in reason, reason


def test_git_discard_through_the_hook_clean_then_dirty(proj):
    """The installed project: a clean tree loses nothing to `git checkout -- .`;
    a changed README.txt does."""
    def decision(command):
        payload = proj.payload("PreToolUse", "packs-git", "claude", tool_name="Bash",
                               tool_input={"command": command})
        result = proj.hook("PreToolUse", payload)
        assert result.code == 0, result.stderr
        return (result.answer.get("hookSpecificOutput") or {}).get("permissionDecision")
    assert decision("git checkout -- README.txt") not in ("deny", "ask")
    (proj.root / "README.txt").write_text("changed\n")
    assert decision("git checkout -- README.txt") == "deny"
    assert decision("git stash push") not in ("deny", "ask")


# ---- faults: what the packs read can be strange -----------------------------------

def _sql_verdict(world, command, cwd="PROJECT"):
    case = {"client": "claude", "tool": "Bash", "command": command, "cwd": cwd}
    return [v.law for v in judge(world, case) if v.action in STRICT]


def test_a_fifo_named_as_sql_file_never_blocks_the_gate(world):
    fifo = world.root / "pipe.sql"
    os.mkfifo(str(fifo))
    try:
        import time
        start = time.monotonic()
        assert "databases" not in _sql_verdict(world, "psql -f pipe.sql")
        assert "databases" not in _sql_verdict(world, "psql app < pipe.sql")
        # an open of the FIFO would block until a writer came: never
        assert time.monotonic() - start < ANSWER_WITHIN_S
    finally:
        fifo.unlink()


def test_sql_files_are_read_through_symlinks_but_not_secret_files(world, monkeypatch):
    link = world.root / "db" / "link.sql"
    link.symlink_to(world.root / "db" / "schema.sql")
    env = world.root / ".env"
    env.write_text("DROP TABLE users;\n")
    try:
        assert "databases" in _sql_verdict(world, "psql -f db/link.sql")
        monkeypatch.setenv("HOME", str(world.home))
        assert notrest._read_small(".env", str(world.root)) is None
        assert "databases" not in _sql_verdict(world, "psql -f .env")
    finally:
        link.unlink()
        env.unlink()


def test_garbage_and_huge_sql_files_are_bounded(world):
    junk = world.root / "junk.sql"
    noise = bytes(b for b in os.urandom(8192) if b not in b"'\"`[$-/;")[:4096]
    junk.write_bytes(noise + b";\nDROP TABLE users;\n")
    big = world.root / "big.sql"
    big.write_text("SELECT 1;\n" * 40000 + "DROP TABLE users;\n")
    try:
        assert "databases" in _sql_verdict(world, "psql -f junk.sql")
        # past the cap the rest of a file is not read: a bound, said in the README
        assert "databases" not in _sql_verdict(world, "psql -f big.sql")
    finally:
        junk.unlink()
        big.unlink()


def test_no_git_on_path_counts_as_something_to_lose(world, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    verdicts = judge(world, {"client": "claude", "tool": "Bash",
                             "command": "git clean -fd", "cwd": "CLEAN"})
    mine = [v for v in verdicts if v.law == "git-discard"]
    assert mine and mine[0].action in ("ask", "deny")
    assert "could not be started" in mine[0].reason


def test_an_override_lets_one_pack_through_with_a_receipt(proj):
    payload = proj.payload("PreToolUse", "packs-override", "claude", tool_name="Bash",
                           tool_input={"command": "dropdb app"})
    result = proj.hook("PreToolUse", payload, NOTREST_OVERRIDE="databases")
    assert result.code == 0, result.stderr
    assert (result.answer.get("hookSpecificOutput") or {}).get(
        "permissionDecision") not in ("deny", "ask")
    assert "override of databases" in result.answer.get("systemMessage", "")
    kinds = [r.get("k") for r in proj.journal("packs-override")]
    assert "receipt" in kinds


def test_no_two_top_level_names_of_the_module_collide():
    """A later definition silently replaces an earlier one: the packs share a
    module with the other sections, so no function, class or constant is defined
    twice (a hot-part stand-in assigned, then defined below the cold line, is one
    of each and fine)."""
    import ast
    import collections
    tree = ast.parse((Path(notrest.__file__)).read_text())
    defined, assigned = collections.Counter(), collections.Counter()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined[node.name] += 1
        elif isinstance(node, ast.Assign):
            assigned.update(t.id for t in node.targets if isinstance(t, ast.Name))
    assert not [name for name, count in defined.items() if count > 1]
    assert not [name for name, count in assigned.items() if count > 1]
