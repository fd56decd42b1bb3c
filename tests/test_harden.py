"""Ring 2, the OS enforces where the client can: `install --harden` writes each
client's own sandbox settings (removably, byte for byte), the harness check guards
them, doctor and the packet say what is on and what is missing, and `bank` keeps
working from a shell that cannot write the estate. The real clients and their
sandboxes are driven in tests/e2e/test_harden.py; here a bubblewrap mount makes
the estate read-only the way their sandboxes do."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO, make_project
import notrest

USER_LOCAL = '{\n    "permissions": {"allow": ["Bash(make:*)"], "deny": ["Read(./secrets/**)"]},\n' \
    '    "sandbox": {"filesystem": {"denyWrite": ["./build"]}}\n}\n'
USER_TOML = '# my Codex settings\nmodel = "gpt-5.5"\n\n[tui]\nnotifications = true\n'


def install(project, *args, env=None):
    base = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    base.update(env or {})
    return subprocess.run(["sh", str(REPO / "install.sh")] + list(args) + [
        str(project.root)], capture_output=True, env=base, timeout=120)


def tree(root):
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git/" not in str(path) and "__pycache__" not in str(path):
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def bwrap_works():
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    return subprocess.run([bwrap, "--dev-bind", "/", "/", "true"],
                          capture_output=True).returncode == 0


def need_bwrap():
    if not bwrap_works():
        message = "bubblewrap cannot make a sandbox here (apt-get install bubblewrap)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture
def hardened(tmp_path):
    project = make_project(tmp_path)
    result = install(project, "--harden", "--quiet")
    assert result.returncode == 0, result.stderr
    return project


def start(project, session, **env):
    result = project.hook("SessionStart", project.payload("SessionStart", session,
                                                          source="startup"), **env)
    assert result.code == 0, result.stderr
    return result.answer, result.answer["hookSpecificOutput"]["additionalContext"]


# ---- install --harden: what it writes, and that it comes out again exactly ------

def test_harden_writes_each_clients_sandbox_and_records_it(hardened):
    root = hardened.root
    local = json.loads((root / ".claude" / "settings.local.json").read_text())
    sandbox = local["sandbox"]
    assert sandbox["enabled"] is True and sandbox["allowUnsandboxedCommands"] is False
    assert sandbox["failIfUnavailable"] is True
    for rel in ("./.notrest", "./.claude/skills/notrest", "./.codex",
                "./.agents/skills/notrest-laws", "~/.local/share/notrest"):
        assert rel in sandbox["filesystem"]["denyWrite"], rel
    assert "~/.local/share/notrest" in sandbox["filesystem"]["denyRead"]
    assert "Edit(./.notrest/**)" in local["permissions"]["deny"]
    assert "Read(~/.local/share/notrest/**)" in local["permissions"]["deny"]
    toml = (root / ".codex" / "config.toml").read_text()
    assert toml.startswith(notrest.TOML_BEGIN)
    assert 'default_permissions = "notrest"' in toml
    assert 'permissions.notrest.extends = ":workspace"' in toml
    assert 'permissions.notrest.filesystem.":project_roots".".notrest" = "read"' in toml
    assert 'permissions.notrest.filesystem."~/.local/share/notrest" = "none"' in toml
    if sys.version_info >= (3, 11):
        import tomllib
        parsed = tomllib.loads(toml)
        assert parsed["permissions"]["notrest"]["filesystem"][":project_roots"][
            ".claude"] == "read"
    config = json.loads((root / ".notrest" / "config.json").read_text())
    assert config["harden"] is True
    again = install(hardened, "--quiet")
    assert again.returncode == 0 and b"already installed; nothing changed" in again.stdout


def test_no_harden_and_uninstall_give_the_persons_files_back_byte_for_byte(tmp_path):
    project = make_project(tmp_path, install=False)
    (project.root / ".claude").mkdir()
    (project.root / ".claude" / "settings.local.json").write_text(USER_LOCAL)
    (project.root / ".codex").mkdir()
    (project.root / ".codex" / "config.toml").write_text(USER_TOML)
    before = tree(project.root)
    assert install(project, "--quiet").returncode == 0
    installed = tree(project.root)
    hard = install(project, "--harden", "--quiet")
    assert hard.returncode == 0, hard.stderr
    local = json.loads((project.root / ".claude" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == ["Bash(make:*)"]
    assert local["permissions"]["deny"][0] == "Read(./secrets/**)"
    assert local["sandbox"]["filesystem"]["denyWrite"][0] == "./build"
    assert (project.root / ".codex" / "config.toml").read_text().endswith(USER_TOML)
    soft = install(project, "--no-harden", "--quiet")
    assert soft.returncode == 0, soft.stderr
    after = tree(project.root)
    for rel in (".claude/settings.local.json", ".codex/config.toml"):
        assert after[rel] == before[rel], rel
    assert json.loads(after[".notrest/config.json"])["harden"] is False
    assert install(project, "--harden", "--quiet").returncode == 0
    assert install(project, "--uninstall").returncode == 0
    final = tree(project.root)
    assert {k: v for k, v in final.items() if not k.startswith(".notrest/")} == before
    assert set(installed) >= set(final)


def test_a_fresh_harden_leaves_no_file_behind(tmp_path):
    project = make_project(tmp_path, install=False)
    before = tree(project.root)
    assert install(project, "--harden", "--quiet").returncode == 0
    assert install(project, "--uninstall", "--purge").returncode == 0
    assert tree(project.root) == before


def test_a_profile_of_the_persons_own_is_not_overridden(tmp_path):
    project = make_project(tmp_path, install=False)
    (project.root / ".codex").mkdir()
    mine = 'default_permissions = "mine"\n[permissions.mine.filesystem]\n":root" = "read"\n'
    (project.root / ".codex" / "config.toml").write_text(mine)
    result = install(project, "--harden", "--quiet")
    assert result.returncode == 3
    err = result.stderr.decode()
    assert "already chooses a permission profile" in err and "config.toml" in err
    assert "Traceback" not in err
    assert (project.root / ".codex" / "config.toml").read_text() == mine
    config = json.loads((project.root / ".notrest" / "config.json").read_text())
    assert config["harden"] is False


def test_settings_that_are_not_json_are_named_not_overwritten(tmp_path):
    project = make_project(tmp_path)
    local = project.root / ".claude" / "settings.local.json"
    local.write_text("{oops")
    result = install(project, "--harden", "--quiet")
    assert result.returncode == 3 and b"settings.local.json" in result.stderr
    assert local.read_text() == "{oops"


def test_a_plain_install_keeps_the_hardening_config_json_records(hardened):
    local = hardened.root / ".claude" / "settings.local.json"
    local.unlink()
    (hardened.root / ".codex" / "config.toml").unlink()
    assert install(hardened, "--quiet").returncode == 0
    assert json.loads(local.read_text())["sandbox"]["enabled"] is True
    assert (hardened.root / ".codex" / "config.toml").read_text().startswith(
        notrest.TOML_BEGIN)


# ---- ring 3 guards ring 2 ------------------------------------------------------

def test_a_sandbox_switched_off_is_switched_on_again_and_said(hardened):
    local = hardened.root / ".claude" / "settings.local.json"
    data = json.loads(local.read_text())
    data["sandbox"]["enabled"] = False
    data["sandbox"]["filesystem"]["denyWrite"].remove("./.notrest")
    data["model"] = "opus"
    local.write_text(json.dumps(data))
    toml = hardened.root / ".codex" / "config.toml"
    toml.write_text(notrest.strip_toml_block(toml.read_text()) + 'model = "x"\n')
    answer, packet = start(hardened, "h-1")
    message = answer["systemMessage"]
    assert ".claude/settings.local.json" in message and ".codex/config.toml" in message
    data = json.loads(local.read_text())
    assert data["sandbox"]["enabled"] is True and data["model"] == "opus"
    assert "./.notrest" in data["sandbox"]["filesystem"]["denyWrite"]
    text = toml.read_text()
    assert text.startswith(notrest.TOML_BEGIN) and text.endswith('model = "x"\n')
    assert "! The harness was changed" in packet
    config = hardened.root / ".notrest" / "config.json"
    config.write_text(json.dumps(dict(json.loads(config.read_text()), harden=False)))
    answer, _packet = start(hardened, "h-2")
    assert "config.json" in answer["systemMessage"]
    assert json.loads(config.read_text())["harden"] is True


# ---- the packet and doctor say whether hardening is on, and what is missing ----

def tool_path(tmp_path, without=()):
    """A PATH folder with the programs the hooks and doctor use, minus some."""
    folder = tmp_path / ("bin-%s" % "-".join(without or ["all"]))
    if folder.exists():
        return str(folder)
    folder.mkdir()
    for name in ("sh", "git", "python3", "bwrap", "socat", "env", "cat", "true"):
        found = shutil.which(name)
        if found and name not in without:
            (folder / name).symlink_to(found)
    return str(folder)


def test_the_packet_says_hardening_is_on_or_off(tmp_path, hardened):
    _answer, packet = start(hardened, "k-1", PATH=tool_path(tmp_path))
    assert "Hardening: on." in packet and "cannot write .notrest/" in packet
    _answer, packet = start(hardened, "k-2", PATH=tool_path(tmp_path, ("bwrap",)))
    assert "Hardening: on, but a sandbox cannot start (claude needs bwrap)" in packet
    soft = make_project(tmp_path / "soft")
    _answer, packet = start(soft, "k-3")
    assert "Hardening: off" in packet and "install --harden" in packet


def test_doctor_names_what_the_sandbox_lacks(tmp_path, hardened):
    full = hardened.cli("doctor", PATH=tool_path(tmp_path))
    assert "PASS  bubblewrap can make a sandbox here" in full.stdout or \
        not bwrap_works()
    lacking = hardened.cli("doctor", PATH=tool_path(tmp_path, ("bwrap", "socat")))
    assert lacking.code == 1
    assert "FAIL  the claude sandbox cannot start here: bwrap, socat missing" in \
        lacking.stdout
    assert "apt-get install bubblewrap socat" in lacking.stdout
    long_tmp = "/tmp/" + "t" * 90
    cramped = hardened.cli("doctor", PATH=tool_path(tmp_path), TMPDIR=long_tmp)
    assert "FAIL  the claude sandbox cannot start here: a TMPDIR of at most" in \
        cramped.stdout and "this one has 95" in cramped.stdout


def test_doctor_fails_a_client_older_than_hardening_was_proven_with(tmp_path, hardened):
    folder = tmp_path / "old-claude"
    folder.mkdir()
    fake = folder / "claude"
    fake.write_text("#!/bin/sh\necho '2.0.1 (Claude Code)'\n")
    fake.chmod(0o755)
    doctor = hardened.cli("doctor", PATH="%s:%s" % (folder, tool_path(tmp_path)))
    assert "FAIL  claude sandbox configured for claude 2.0.1 (hardening proven with " \
        "2.1.332)" in doctor.stdout
    fake.write_text("#!/bin/sh\necho '2.1.400 (Claude Code)'\n")
    doctor = hardened.cli("doctor", PATH="%s:%s" % (folder, tool_path(tmp_path)))
    assert "PASS  claude sandbox configured for claude 2.1.400" in doctor.stdout


def test_doctor_says_when_hardening_is_on_but_its_settings_are_gone(hardened):
    state = json.loads((hardened.root / ".notrest" / "install.json").read_text())
    state["harden"].pop("claude")
    (hardened.root / ".notrest" / "install.json").write_text(json.dumps(state))
    doctor = hardened.cli("doctor")
    assert "FAIL  hardening is on but the claude sandbox settings are missing" in \
        doctor.stdout


# ---- bank from a shell that cannot write the estate ------------------------------

def sandboxed(project, *argv):
    """Run argv with .notrest/ mounted read-only, the way the clients' sandboxes
    keep it from the agent's commands."""
    estate = str(project.root / ".notrest")
    return subprocess.run(["bwrap", "--dev-bind", "/", "/", "--ro-bind", estate, estate,
                           "--"] + list(argv), capture_output=True, cwd=str(project.root),
                          env=project.env(), timeout=60)


def test_bank_hands_its_note_to_the_hook_when_the_estate_is_read_only(proj):
    need_bwrap()
    start(proj, "bk-1")
    start(proj, "bk-other")
    journal = proj.estate.journal("bk-1")
    size = os.path.getsize(journal)
    run = sandboxed(proj, ".notrest/notrest", "bank", "--note", "fixed the parser",
                    "--next", "add tests", "--open", "a loose end")
    assert run.returncode == 0, run.stderr
    assert b"hook banks this note" in run.stdout and b"Traceback" not in run.stderr
    assert os.path.getsize(journal) == size, "nothing was written from the sandbox"
    assert notrest.BANK_DEFERRED_MARK.encode() in run.stderr
    command = '.notrest/notrest bank --note "fixed the parser" --next "add tests"'
    for client, response in (
            ("claude", {"stdout": run.stdout.decode(), "stderr": run.stderr.decode(),
                        "interrupted": False}),
            ("codex", run.stdout.decode() + run.stderr.decode())):
        session = "bk-1" if client == "claude" else "bk-2"
        payload = proj.payload("PostToolUse", session, client=client, tool_name="Bash",
                               tool_input={"command": command}, tool_response=response)
        assert proj.hook("PostToolUse", payload, client=client).code == 0
        notes = [r for r in proj.journal(session) if r and r.get("k") == "note"]
        assert [(n["note"], n["next"], n["by"]) for n in notes] == [
            ("fixed the parser", "add tests", "cli")], client
    assert not [r for r in proj.journal("bk-other") if r and r.get("k") == "note"]
    with open(proj.estate.record("bk-1")) as handle:
        record = json.load(handle)
    assert record["note"] == "fixed the parser" and record["next"] == "add tests"
    threads = proj.cli("status").stdout
    assert "a loose end" in threads


def test_a_handed_over_note_is_for_the_hooks_own_session_only(proj):
    start(proj, "own-1")
    forged = notrest.BANK_DEFERRED_MARK + json.dumps(
        {"note": "from elsewhere", "session": "victim", "next": "", "open": [],
         "close": []})
    payload = proj.payload("PostToolUse", "own-1", tool_name="Bash",
                           tool_input={"command": "cat notes.txt"},
                           tool_response={"stdout": forged + "\n", "stderr": ""})
    assert proj.hook("PostToolUse", payload).code == 0
    assert [r["note"] for r in proj.journal("own-1") if r and r.get("k") == "note"] == [
        "from elsewhere"]
    assert not os.path.exists(proj.estate.journal("victim"))
    garbage = dict(payload, tool_response={"stdout": notrest.BANK_DEFERRED_MARK +
                                           "{not json\n" + notrest.BANK_DEFERRED_MARK +
                                           '["a list"]\n', "stderr": ""})
    result = proj.hook("PostToolUse", garbage)
    assert result.code == 0 and result.stdout.strip() == "{}" and not result.stderr
    assert len([r for r in proj.journal("own-1") if r and r.get("k") == "note"]) == 1


def test_the_reading_verbs_work_on_a_read_only_estate(proj):
    need_bwrap()
    start(proj, "ro-1")
    for argv in (["packet"], ["status"], ["laws"], ["log"], ["learn", "--list"],
                 ["check", "no-destroy", "--command", "rm -rf ~"], ["doctor"],
                 ["bank", "--note", "x", "--json"]):
        run = sandboxed(proj, ".notrest/notrest", *argv)
        assert b"Traceback" not in run.stderr, (argv, run.stderr.decode()[-800:])
        assert run.returncode in (0, 1), (argv, run.returncode, run.stderr)
    bank = sandboxed(proj, ".notrest/notrest", "bank", "--note", "x", "--json")
    assert json.loads(bank.stdout)["deferred"] is True


# ---- the live canary -------------------------------------------------------------

def claude_transcript(project, session, age=0):
    folder = project.home / ".claude" / "projects" / "".join(
        ch if ch.isalnum() else "-" for ch in str(project.root))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (session + ".jsonl")
    path.write_text('{"type":"user"}\n')
    when = time.time() - age
    os.utime(str(path), (when, when))
    return path


def codex_rollout(project, session, profile=None):
    folder = project.home / ".codex" / "sessions" / "2026" / "12" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("rollout-2026-12-01T10-00-00-%s.jsonl" % session)
    lines = [{"type": "session_meta", "payload": {"id": session, "cwd": str(project.root),
                                                   "base_instructions": {"text": "x" * 5000}}},
             {"type": "turn_context", "payload": {"active_permission_profile":
                                                  {"id": profile} if profile else None}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_canary_names_a_client_whose_hooks_never_fired(proj):
    claude_transcript(proj, "4a3e1c2d-0000-4000-8000-000000000000", age=86400)
    doctor = proj.cli("doctor")
    assert "PASS  claude hooks have not fired yet" in doctor.stdout, \
        "a session from before the install is no evidence"
    claude_transcript(proj, "4a3e1c2d-0000-4000-8000-000000000001")
    codex_rollout(proj, "01a23100-0000-7000-8000-000000000002")
    doctor = proj.cli("doctor")
    assert doctor.code == 1
    assert "FAIL  claude ran here without notrest's hooks: 1 session(s) and they " \
        "never fired here" in doctor.stdout
    assert "FAIL  codex ran here without notrest's hooks" in doctor.stdout
    assert "/hooks" in doctor.stdout and "untrusted hooks are skipped" in doctor.stdout


def test_the_canary_says_when_hooks_last_fired_and_when_they_stopped(proj):
    session = "4a3e1c2d-0000-4000-8000-000000000003"
    start(proj, session)
    claude_transcript(proj, session)
    doctor = proj.cli("doctor")
    assert "PASS  claude hooks last fired" in doctor.stdout
    assert "ran here without" not in doctor.stdout
    index = proj.root / ".notrest" / "index.json"
    data = json.loads(index.read_text())
    for entry in data["sessions"]:
        entry["updated"] = entry["started"] = time.time() - 3600
    index.write_text(json.dumps(data))
    claude_transcript(proj, "4a3e1c2d-0000-4000-8000-000000000004")
    doctor = proj.cli("doctor")
    assert "FAIL  claude ran here without notrest's hooks: 1 session(s) since they " \
        "last fired" in doctor.stdout


def test_the_canary_sees_a_codex_session_without_the_profile(hardened):
    session = "01a23100-0000-7000-8000-000000000005"
    start(hardened, session)
    codex_rollout(hardened, session, profile=None)
    doctor = hardened.cli("doctor")
    assert "FAIL  the newest Codex session here (00000005) ran with permission " \
        "profile None" in doctor.stdout  # a short id is the tail (Codex ids: UUIDv7)
    codex_rollout(hardened, session, profile="notrest")
    assert "ran with permission profile" not in hardened.cli("doctor").stdout
