"""An independent corpus for the gate: tests/data/gate_cases.json holds tool calls of
both clients with the verdict the issue's laws demand (written from the spec, not
from what the code does). Every case runs through the pure notrest.decide with a
real project and a real home folder on disk; a few run through the installed hook.

Case fields: id, client, tool, command (Bash, apply_patch) or input (tool_input),
optional cwd, kind (PreToolUse by default; PermissionRequest; UserPromptSubmit with
prompt), branch (the checked-out branch, my-feature by default), expect, law, why.
PROJECT and HOME in commands, inputs and cwd stand for the project root and the
home folder ($HOME and ${HOME} are shell text and stay as they are)."""
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

import notrest

CASES_FILE = Path(__file__).resolve().parent / "data" / "gate_cases.json"
CASES = json.loads(CASES_FILE.read_text())
BY_ID = {case["id"]: case for case in CASES}
STRICT = ("deny", "ask", "block")
CLI = ".notrest/notrest"
DEFAULT_BRANCH = "my-feature"

# A realistic layout: the project lives in the home folder, neither of them in a
# temp dir (the laws treat the temp dir as a free zone, and pytest's tmp_path is in
# /tmp), so the world is made under ~/.cache unless NOTREST_GATE_TESTDIR says where.
FILES = {
    "PROJECT/.notrest/laws.json": '{"schema_version": 1}\n',
    "PROJECT/.notrest/notrest": "#!/bin/sh\n",
    "PROJECT/.notrest/notrest.py": "# stand-in\n",
    "PROJECT/.notrest/hooks/pre-tool-use.sh": "#!/bin/sh\n",
    "PROJECT/.claude/settings.json": "{}\n",
    "PROJECT/.claude/settings.local.json": "{}\n",
    "PROJECT/.claude/agents/reviewer.md": "x\n",
    "PROJECT/.codex/hooks.json": "{}\n",
    "PROJECT/.codex/config.toml": "[features]\n",
    "PROJECT/.codex/prompts/review.md": "x\n",
    "PROJECT/.env": "API_KEY=x\n",
    "PROJECT/.env.example": "API_KEY=\n",
    "PROJECT/.env.sample": "API_KEY=\n",
    "PROJECT/.env.template": "API_KEY=\n",
    "PROJECT/.env.local": "API_KEY=x\n",
    "PROJECT/.env.production": "API_KEY=x\n",
    "PROJECT/config/.env": "API_KEY=x\n",
    "PROJECT/config/.env.production": "API_KEY=x\n",
    "PROJECT/.gitignore": ".env\n",
    "PROJECT/.git/HEAD": "ref: refs/heads/my-feature\n",
    "PROJECT/.git/objects/.keep": "",
    "PROJECT/.git/index.lock": "",
    "PROJECT/certs/server.pem": "-----BEGIN PRIVATE KEY-----\n",
    "PROJECT/certs/server.key": "-----BEGIN PRIVATE KEY-----\n",
    "PROJECT/certs/cert.crt": "-----BEGIN CERTIFICATE-----\n",
    "PROJECT/src/app.py": "print('app')\n",
    "PROJECT/src/env.py": "import os\n",
    "PROJECT/src/settings.json": "{}\n",
    "PROJECT/sub/tmp/x.txt": "x\n",
    "PROJECT/build/x.o": "",
    "PROJECT/dist/x.whl": "",
    "PROJECT/node_modules/x/index.js": "",
    "PROJECT/notebook.ipynb": "{}\n",
    "PROJECT/install.sh": "#!/bin/sh\n",
    "PROJECT/scripts/run.sh": "#!/bin/sh\n",
    "PROJECT/README.md": "hello\n",
    "HOME/.ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    "HOME/.ssh/id_rsa.pub": "ssh-rsa AAAA\n",
    "HOME/.ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    "HOME/.ssh/id_ed25519.pub": "ssh-ed25519 AAAA\n",
    "HOME/.ssh/known_hosts": "example.com ssh-ed25519 AAAA\n",
    "HOME/.aws/credentials": "[default]\n",
    "HOME/.aws/config": "[default]\n",
    "HOME/.netrc": "machine x\n",
    "HOME/.docker/config.json": "{}\n",
    "HOME/.config/gcloud/application_default_credentials.json": "{}\n",
    "HOME/.claude/settings.json": "{}\n",
    "HOME/.codex/config.toml": "\n",
    "HOME/.cache/pip/x": "",
    "HOME/.npm/x": "",
    "HOME/.bash_history": "",
    "HOME/Documents/a.txt": "",
    "HOME/work/other-project/a.txt": "",
}

_PLACEHOLDER = re.compile(r"(?<![\w$.{/-])(PROJECT|HOME)(?![\w])")


class World:
    def __init__(self, root, home):
        self.root, self.home = str(root), str(home)

    def sub(self, value):
        """PROJECT/HOME replaced in strings, lists and dicts (recursively)."""
        if isinstance(value, str):
            return _PLACEHOLDER.sub(
                lambda m: self.root if m.group(1) == "PROJECT" else self.home, value)
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        return value


TEMP_DIRS = ("/tmp", "/var/tmp", "/private/tmp", "/private/var/folders", "/dev/shm",
             os.path.realpath(tempfile.gettempdir()))


def _in_temp_dir(path):
    return any(path == base or path.startswith(base.rstrip("/") + "/") for base in TEMP_DIRS)


def _make_base(tmp_path_factory):
    """A folder for the world outside every temp dir when there is one (the temp
    dir is where the laws let deletes happen): $NOTREST_GATE_TESTDIR, ~/.cache, or
    the checkout's own .pytest_cache; else a fresh folder in the temp dir."""
    candidates = [os.environ.get("NOTREST_GATE_TESTDIR"),
                  os.path.join(os.path.expanduser("~"), ".cache"),
                  str(Path(__file__).resolve().parents[1] / ".pytest_cache")]
    for parent in candidates:
        if not parent:
            continue
        parent = os.path.realpath(parent)
        if _in_temp_dir(parent):
            continue
        try:
            os.makedirs(parent, exist_ok=True)
            return os.path.realpath(tempfile.mkdtemp(prefix="notrest-gate-", dir=parent)), True
        except OSError:
            continue
    return os.path.realpath(tempfile.mkdtemp(prefix="notrest-gate-")), True


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    base, own = _make_base(tmp_path_factory)
    home = Path(base) / "home"
    root = home / "work" / "proj"
    made = World(root, home)
    made.home_in_temp = _in_temp_dir(str(home))
    for name, text in FILES.items():
        path = Path(made.sub(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    yield made
    if own:
        shutil.rmtree(base, ignore_errors=True)


def make_event(world, case):
    kind = case.get("kind", "PreToolUse")
    tool = case.get("tool")
    if "command" in case:
        tool_input = {"command": world.sub(case["command"])}
    else:
        tool_input = world.sub(case.get("input") or {})
    return notrest.Event(
        kind=kind, client=case["client"], tool=tool, tool_input=tool_input,
        prompt=case.get("prompt"), session="corpus",
        cwd=world.sub(case.get("cwd", "PROJECT")), root=world.root, home=world.home,
        env={"HOME": world.home}, branch=case.get("branch", DEFAULT_BRANCH),
        facts={"cli": CLI})


def judge(world, case):
    return notrest.decide(notrest.build_lawbook(None), make_event(world, case))


def shown(verdicts):
    return [(v.action, v.law, v.reason) for v in verdicts]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(world, case):
    if case.get("assumes") == "home outside the temp dir" and world.home_in_temp:
        pytest.skip("the world's home folder lies in the temp dir, where this case's "
                    "verdict differs (set NOTREST_GATE_TESTDIR outside it)")
    verdicts = judge(world, case)
    strict = [v for v in verdicts if v.action in STRICT]
    if case["expect"] == "allow":
        assert not strict, "expected allow (%s), got %s" % (case["why"], shown(strict))
        return
    assert verdicts, "expected %s by %s (%s), got allow" % (
        case["expect"], case["law"], case["why"])
    first = verdicts[0]
    assert first.action == case["expect"], "expected %s by %s (%s), got %s" % (
        case["expect"], case["law"], case["why"], shown(verdicts))
    # laws of equal severity may fire together; the expected one must be among the
    # most severe
    top = [v for v in verdicts if v.action == first.action]
    mine = [v for v in top if v.law == case["law"]]
    assert mine, "expected law %s (%s), got %s" % (case["law"], case["why"], shown(verdicts))
    assert mine[0].reason.strip(), "a verdict must say why"
    assert mine[0].instead.strip(), "a verdict must say what to do instead"


# ---- (a) every suggestion must itself pass the gate ------------------------------

def _instead_texts():
    """Every distinct `instead` a built-in law can give, {cli} filled in."""
    texts = {law["instead"].replace("{cli}", CLI) for law in notrest.BUILTIN_LAWS}
    stop = notrest.Event(kind="Stop", client="claude", session="corpus", cwd="/w/p",
                         root="/w/p", home="/h", env={"HOME": "/h"},
                         facts={"cli": CLI, "changed_since_note": ["a.py"]})
    for verdict in notrest.decide(notrest.build_lawbook(None), stop):
        texts.add(verdict.instead)
    return sorted(texts)


def _backticked(text):
    return re.findall(r"`([^`]+)`", text)


SUGGESTIONS = sorted({cmd for text in _instead_texts() for cmd in _backticked(text)})


def _suggestion_passes(world, command, branch):
    case = {"id": "instead", "client": "claude", "tool": "Bash", "command": command,
            "branch": branch}
    return [v for v in judge(world, case) if v.action in STRICT]


@pytest.mark.parametrize("command", SUGGESTIONS)
@pytest.mark.parametrize("branch", ["main", DEFAULT_BRANCH])
def test_every_suggested_command_passes_the_gate(world, command, branch):
    blocked = _suggestion_passes(world, command, branch)
    assert not blocked, "the gate's own suggestion `%s` is stopped: %s" % (
        command, shown(blocked))


def test_the_suggestions_given_for_the_corpus_pass_the_gate(world):
    """The `instead` of every verdict the corpus draws, as actually rendered."""
    failures = []
    for case in CASES:
        for verdict in judge(world, case):
            if verdict.action not in STRICT:
                continue
            for command in _backticked(verdict.instead):
                blocked = _suggestion_passes(world, command, case.get("branch", "main"))
                if blocked:
                    failures.append((case["id"], command, shown(blocked)))
    assert not failures, failures


def test_every_law_suggests_a_command():
    for law in notrest.BUILTIN_LAWS:
        if law["id"] == "secret-in-prompt":
            continue  # the remedy is to edit the prompt: there is no command to run
        assert _backticked(law["instead"]), law["id"]


# ---- (b) the corpus itself -----------------------------------------------------

def test_the_corpus_is_broad():
    assert len(CASES) >= 150
    assert len(BY_ID) == len(CASES), "case ids must be unique"
    # the laws that judge tool calls and prompts (bank-before-stop judges Stop only)
    gate_laws = {law["id"] for law in notrest.BUILTIN_LAWS if set(law["on"]) & {
        "PreToolUse", "PermissionRequest", "UserPromptSubmit"}}
    expected_laws = {c["law"] for c in CASES if c["expect"] != "allow"}
    assert gate_laws <= expected_laws, gate_laws - expected_laws
    assert {c["client"] for c in CASES} == {"claude", "codex"}
    assert sum(c["expect"] == "allow" for c in CASES) >= 60
    for case in CASES:
        assert case["expect"] in ("allow", "deny", "ask", "block"), case["id"]
        assert case["expect"] == "allow" or case.get("law"), case["id"]
        assert case.get("why"), case["id"]
        assert ("command" in case) == (case.get("tool") in ("Bash", "apply_patch")), \
            case["id"]
    tools = {c.get("tool") for c in CASES}
    assert {"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch",
            "Grep"} <= tools


# ---- (c) a few cases through the real installed hook -------------------------------

HOOK_CASES = ["destroy-home-tilde", "destroy-bash-c", "push-force-main", "secret-cat-env",
              "read-env", "harness-write-laws", "patch-codex-hooks",
              "heredoc-patch-delete-hook", "pipe-curl-sh", "pipe-codex",
              "allow-rm-node-modules", "allow-find-pyc", "secret-ok-env-example",
              "push-f-feature", "patch-ok-src", "harness-ok-bank"]


@pytest.mark.parametrize("case_id", HOOK_CASES)
def test_through_the_installed_hook(proj, case_id):
    case = BY_ID[case_id]
    world = World(proj.root, proj.home)
    event = make_event(world, case)
    client = case["client"]
    payload = proj.payload("PreToolUse", "corpus-%s" % client, client,
                           tool_name=event.tool, tool_input=event.tool_input, cwd=event.cwd)
    result = proj.hook("PreToolUse", payload, client)
    assert result.code == 0, result.stderr
    specific = result.answer.get("hookSpecificOutput") or {}
    decision = specific.get("permissionDecision")
    if case["expect"] == "allow":
        assert decision not in ("deny", "ask"), specific
        return
    wanted = "ask" if case["expect"] == "ask" and client == "claude" else "deny"
    assert decision == wanted, specific
    reason = specific["permissionDecisionReason"]
    assert case["law"] in reason and "Instead:" in reason, reason
