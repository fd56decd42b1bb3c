"""Ring 1 against an agent that tries: tests/data/adversary_cases.json holds the
spellings an agent uses to get around the laws (its own CLI, folder
destinations, git work-tree rewriters, archives and patches, interpreters,
scripts it wrote, symlinks, unknown targets, wrappers, the protected paths, the
temp dir holding the home folder), each with the verdict the issue demands,
written from the spec. Every case runs through the real installed sh hook, for
both clients, in one project made for the module (a git repository with a
branch that rewrites the hook settings, the scripts the cases run, archives,
diffs, a symlink to the home folder), one hook process per case and client.

Case fields: id, class, client (both, claude or codex), tool, command (Bash,
apply_patch) or input (tool_input), optional cwd and env, expect (allow, deny,
ask), law, why. PROJECT, HOME and TMP stand for the project, its home folder
and the temp dir the hook is told about ($TMPDIR, which holds HOME here);
AGENTS_BLOCK for the notrest block install wrote into AGENTS.md. An ask is a
deny for Codex, which has no ask."""
import json
import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ANSWER_WITHIN_S, make_project

DATA = json.loads((Path(__file__).resolve().parent / "data" /
                   "adversary_cases.json").read_text())
CASES = DATA["cases"]
BY_ID = {case["id"]: case for case in CASES}
SESSION = "s-adv"
STRICT = ("deny", "ask")
_PLACEHOLDER = re.compile(r"(?<![\w$.{/-])(PROJECT|HOME|TMP|AGENTS_BLOCK)(?![\w])")


class Arena:
    def __init__(self, proj, temp):
        self.proj, self.temp = proj, temp
        self.block = ""
        self.results = {}

    def sub(self, value):
        if isinstance(value, str):
            table = {"PROJECT": str(self.proj.root), "HOME": str(self.proj.home),
                     "TMP": str(self.temp), "AGENTS_BLOCK": self.block}
            return _PLACEHOLDER.sub(lambda m: table[m.group(1)], value)
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        return value

    def run(self, tool, tool_input, client, cwd=None, env=None):
        """(decision, reason, result) of one PreToolUse through the installed hook."""
        proj = self.proj
        payload = proj.payload("PreToolUse", SESSION, client, tool_name=tool,
                               tool_input=tool_input, cwd=cwd or str(proj.root))
        extra = {"TMPDIR": str(self.temp)}
        extra.update(env or {})
        result = proj.hook("PreToolUse", payload, client, timeout=30, **extra)
        specific = result.answer.get("hookSpecificOutput") or {}
        return specific.get("permissionDecision"), specific.get(
            "permissionDecisionReason", ""), result


def _git(root, *args, env=None):
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(root.parent),
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    base.update(env or {})
    return subprocess.run(["git"] + list(args), cwd=root, env=base, check=True,
                          capture_output=True).stdout.decode().strip()


def _build(arena):
    proj = arena.proj
    root = proj.root
    for name, text in DATA["files"].items():
        path = Path(arena.sub(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if text.startswith("#!"):
            path.chmod(0o755)
    for name, target in DATA["links"].items():
        os.symlink(arena.sub(target), arena.sub(name))
    with tarfile.open(root / "evil.tar", "w") as archive:
        archive.add(root / "fake" / ".claude" / "settings.json",
                    arcname=".claude/settings.json")
    with tarfile.open(root / "ok.tar", "w") as archive:
        archive.add(root / "README.md", arcname="docs/README.md")
    with zipfile.ZipFile(root / "evil.zip", "w") as archive:
        archive.writestr(".notrest/laws.json", "{}")
    agents = root / "AGENTS.md"
    agents.write_text(agents.read_text() + "\nmy notes\n")
    text = agents.read_text()
    arena.block = text[text.index("<!-- notrest:begin -->"):
                       text.index("<!-- notrest:end -->") + len("<!-- notrest:end -->")]
    mine = [p for p in DATA["files"] if p.startswith("PROJECT/")]
    _git(root, "add", "AGENTS.md", "evil.tar", "ok.tar", "evil.zip",
         *[p[len("PROJECT/"):] for p in mine])
    _git(root, "commit", "-qm", "the project")
    # clean-branch changes nothing of the harness; evil tracks other hook settings,
    # made without touching the work tree (a temporary index)
    _git(root, "branch", "clean-branch")
    _git(root, "checkout", "-q", "clean-branch")
    (root / "docs" / "notes.md").write_text("notes\n")
    _git(root, "add", "docs/notes.md")
    _git(root, "commit", "-qm", "notes")
    _git(root, "checkout", "-q", "main")
    index = {"GIT_INDEX_FILE": str(root / ".git" / "evil-index")}
    _git(root, "read-tree", "HEAD", env=index)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, check=True,
                          input=b'{"hooks": {}}\n', capture_output=True).stdout.decode()
    _git(root, "update-index", "--add", "--cacheinfo", "100644,%s,.claude/settings.json"
         % blob.strip(), env=index)
    tree = _git(root, "write-tree", env=index)
    commit = _git(root, "commit-tree", tree, "-p", "HEAD", "-m", "other hook settings")
    _git(root, "update-ref", "refs/heads/evil", commit)
    (arena.temp / "scratch").mkdir()
    # a copy of the wrapper the agent made in an earlier call
    shutil.copy(root / ".notrest" / "notrest", arena.temp / "nr-copy")


def _clients(case):
    return ("claude", "codex") if case["client"] == "both" else (case["client"],)


def _case_call(arena, case, client):
    tool = case["tool"]
    if "command" in case:
        tool_input = {"command": arena.sub(case["command"])}
    else:
        tool_input = arena.sub(case["input"])
    return arena.run(tool, tool_input, client, arena.sub(case.get("cwd")) if case.get(
        "cwd") else None, arena.sub(case.get("env") or {}))


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    temp = tmp_path_factory.mktemp("adversary")
    made = Arena(make_project(temp), temp)
    _build(made)
    jobs = [(case, client) for case in CASES for client in _clients(case)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = pool.map(lambda job: _case_call(made, *job), jobs)
        for (case, client), outcome in zip(jobs, done):
            made.results[case["id"], client] = outcome
    return made


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_adversary_case(arena, case):
    for client in _clients(case):
        decision, reason, result = arena.results[case["id"], client]
        assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
        if case["expect"] == "allow":
            assert decision not in STRICT, "%s: expected allow (%s), got %s: %s" % (
                client, case["why"], decision, reason)
            continue
        wanted = "ask" if case["expect"] == "ask" and client == "claude" else "deny"
        assert decision == wanted, "%s: expected %s by %s (%s), got %s: %s" % (
            client, wanted, case["law"], case["why"], decision, reason)
        assert "[%s]" % case["law"] in reason, "%s: expected law %s (%s): %s" % (
            client, case["law"], case["why"], reason)
        assert " Instead: " in reason, reason


def test_every_instead_passes_the_gate(arena):
    """What a deny says to do instead is itself allowed, through the same hook."""
    suggestions = set()
    for (case_id, client), (decision, reason, _r) in arena.results.items():
        if decision in STRICT:
            # a long deny's first line (what Claude's TUI shows) has its Instead cut;
            # the whole reason follows after "In full:" and ends with the whole Instead
            instead = reason.rsplit(" Instead: ", 1)[-1]
            suggestions.update(re.findall(r"`([^`]+)`", instead))
    assert suggestions
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(lambda cmd: (cmd, arena.run("Bash", {"command": cmd},
                                                             "claude")), suggestions))
    blocked = [(cmd, decision, reason) for cmd, (decision, reason, _r) in outcomes
               if decision in STRICT]
    assert not blocked, blocked


def test_the_corpus_covers_every_class_both_ways():
    assert len(CASES) >= 150
    assert len(BY_ID) == len(CASES), "case ids must be unique"
    classes = {c["class"] for c in CASES}
    assert {"cli", "folder", "git", "archive", "interp", "script", "symlink", "unknown",
            "wrapper", "protected", "temp", "bounds"} <= classes
    for name in classes:
        mine = [c for c in CASES if c["class"] == name]
        assert any(c["expect"] == "allow" for c in mine), name
        assert any(c["expect"] != "allow" for c in mine), name
    for case in CASES:
        assert case["expect"] in ("allow", "deny", "ask") and case.get("why"), case["id"]
        assert case["expect"] == "allow" or case.get("law"), case["id"]
        assert ("command" in case) != ("input" in case), case["id"]
    assert {c["law"] for c in CASES if c["expect"] != "allow"} == {
        "no-destroy", "protect-harness", "protect-secrets", "gate-bounds"}


def test_40000_arguments_are_judged_well_within_the_hook_timeout(arena):
    """The cost is linear: a 40,000-argument rm -rf ~ is denied, not timed out."""
    command = "rm -rf ~ " + " ".join(["a"] * 40000)
    decision, reason, result = arena.run("Bash", {"command": command}, "claude")
    assert decision == "deny" and "[no-destroy]" in reason, reason
    assert result.seconds < ANSWER_WITHIN_S  # the hook timeout is 10 s; usually well under 1 s
    command = "rm -rf " + " ".join("f%d" % i for i in range(40000)) + " ~"
    decision, reason, result = arena.run("Bash", {"command": command}, "codex")
    assert decision == "deny" and "[no-destroy]" in reason, reason
    assert result.seconds < ANSWER_WITHIN_S


def test_past_its_bounds_the_gate_denies_as_too_large_to_judge(arena):
    command = "true " + " x" * 60000
    decision, reason, result = arena.run("Bash", {"command": command}, "claude")
    assert decision == "deny" and "too large to judge" in reason, reason
    assert "Instead: " in reason and result.seconds < ANSWER_WITHIN_S


# ---- project laws: their regular expressions are checked, and matched bounded ----

@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a*)*b", r"(\w+\s?)+$", r"(a|aa)*b",
                                     r"(x+x+)+y", r".*a.*b.*c", r"(.|\n)*x", "(",
                                     "x" * 1200])
def test_catastrophic_regexes_are_rejected(pattern):
    assert notrest_module().regex_problem(pattern)


@pytest.mark.parametrize("pattern", [r"\bnpm publish\b", r"git\s+push\s+.*--force",
                                     r"(foo|bar)+", r"^(ls|cat) ", r"(\s|\S)*",
                                     r"\bcurl\b.*\|\s*(sh|bash)\b", r"[a-z]+\.env$"])
def test_ordinary_regexes_are_accepted(pattern):
    assert notrest_module().regex_problem(pattern) is None


def notrest_module():
    import notrest
    return notrest


def test_a_catastrophic_law_is_refused_by_name_and_costs_nothing(proj):
    laws = proj.root / ".notrest" / "laws.json"
    doc = json.loads(laws.read_text())
    doc["laws"] = [{"id": "no-aaa", "text": "No a's.", "on": ["PreToolUse"],
                    "command": "^(a+)+$", "instead": "write b's"},
                   {"id": "no-publish", "text": "Never publish.", "on": ["PreToolUse"],
                    "command": r"\bnpm\s+publish\b", "instead": "ask the maintainer"}]
    laws.write_text(json.dumps(doc))
    evil = "a" * 40 + "!"
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", "r1", tool_name="Bash",
                                                  tool_input={"command": evil}))
    assert result.seconds < ANSWER_WITHIN_S
    answer = result.answer
    assert (answer.get("hookSpecificOutput") or {}).get("permissionDecision") is None
    assert "no-aaa" in answer.get("systemMessage", "") and "exponential" in answer[
        "systemMessage"]
    # the sound law next to it still holds, and the built-ins too
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", "r1", tool_name="Bash",
                                                  tool_input={"command": "npm publish"}))
    specific = result.answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny" and "[no-publish]" in specific[
        "permissionDecisionReason"]
    doctor = proj.cli("doctor")
    assert "no-aaa" in doctor.stdout + doctor.stderr


def test_a_quadratic_law_is_matched_on_clipped_text(proj):
    laws = proj.root / ".notrest" / "laws.json"
    doc = json.loads(laws.read_text())
    doc["laws"] = [{"id": "no-xy", "text": "No x then y.", "on": ["PreToolUse"],
                    "command": "x.*y.*!", "instead": "leave it"}]
    laws.write_text(json.dumps(doc))
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", "r2", tool_name="Bash",
                                                  tool_input={"command": "echo " + "xy" * 50000}))
    assert result.seconds < ANSWER_WITHIN_S
    assert (result.answer.get("hookSpecificOutput") or {}).get("permissionDecision") is None


def test_the_hot_part_names_nothing_it_does_not_hold():
    """A tool-call hook loads only the part above the cold line; what it needs
    below that line it reaches through readers(). Every global name the hot
    part's code uses must be defined in the hot part itself."""
    import ast
    import builtins
    import dis
    import types
    source = (Path(__file__).resolve().parents[1] / "notrest.py").read_text()
    hot = source[:source.index("\n# ==== cold ====") + 1]
    tree = ast.parse(hot)
    defined = set(dir(builtins)) | {"__file__", "__name__"}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                defined.add(sub.id)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                defined.update((a.asname or a.name).split(".")[0] for a in sub.names)
    guarded = {"ensure_hot_cache", "start_git_state"}  # looked up in globals() first
    missing = set()

    def walk(code):
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval not in defined:
                missing.add(ins.argval)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    walk(compile(hot, "notrest.py", "exec"))
    assert missing <= guarded, sorted(missing - guarded)
