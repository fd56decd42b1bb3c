"""The commands people and agents run by hand, through the installed wrapper."""
import json
import re

from conftest import REPO, make_project
import notrest


def busy_session(proj, session="cli-1"):
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    proj.hook("PostToolUse", proj.payload("PostToolUse", session, tool_name="Write",
                                          tool_input={"file_path": str(proj.root / "a.py"),
                                                      "content": "1"},
                                          tool_response={}))
    proj.hook("PreToolUse", proj.payload("PreToolUse", session, tool_name="Bash",
                                         tool_input={"command": "git push -f origin main"}))
    return session


def test_gate_by_hand_exit_codes_and_json(proj):
    deny = proj.cli("gate", "--command", "rm -rf /")
    assert deny.code == 2 and "no-destroy" in deny.stdout and "Instead:" in deny.stdout
    allow = proj.cli("gate", "--command", "rm -rf node_modules")
    assert allow.code == 0
    path = proj.cli("gate", "--path", ".codex/config.toml", "--json")
    assert path.code == 2 and json.loads(path.stdout)["law"] == "protect-harness"
    read = proj.cli("gate", "--path", ".env", "--read")
    assert read.code == 2 and "protect-secrets" in read.stdout
    payload = json.dumps(proj.payload("PreToolUse", "x", tool_name="Bash",
                                      tool_input={"command": "git push --force origin main"}))
    stdin = proj.cli("gate", input=payload.encode())
    assert stdin.code == 2 and "no-force-push" in stdin.stdout
    bad = proj.cli("gate", input=b"nope")
    assert bad.code == 2 and "Traceback" not in bad.stderr


def test_status_log_and_laws(proj):
    session = busy_session(proj)
    proj.cli("bank", "--session", session, "--note", "wrote a.py", "--open", "ship it")
    status = proj.cli("status")
    assert status.code == 0
    assert "last bank: cli-1: wrote a.py" in status.stdout
    assert "t1: ship it" in status.stdout
    data = json.loads(proj.cli("status", "--json").stdout)
    assert data["open_threads"][0]["text"] == "ship it"
    log = proj.cli("log", "--session", session)
    assert "DENIED by no-force-push" in log.stdout and "tool Write [ok]" in log.stdout
    records = json.loads(proj.cli("log", "--json").stdout)["records"]
    assert [r["k"] for r in records][:2] == ["start", "tool"]
    laws = proj.cli("laws")
    for law in notrest.BUILTIN_LAWS:
        assert law["id"] in laws.stdout
    listed = json.loads(proj.cli("laws", "--json").stdout)
    assert {l["id"] for l in listed["laws"]} >= {l["id"] for l in notrest.BUILTIN_LAWS}


def test_threads_open_and_close(proj):
    session = busy_session(proj, "th-1")
    proj.cli("bank", "--session", session, "--open", "one", "--open", "two")
    assert "t2" in proj.cli("status").stdout
    result = proj.cli("bank", "--session", session, "--close", "t1")
    assert result.code == 0
    status = proj.cli("status").stdout
    assert "t1: one" not in status and "t2: two" in status
    missing = proj.cli("bank", "--session", session, "--close", "t9")
    assert missing.code == 2 and "no thread named t9" in missing.stderr


def test_check_evaluates_one_law(proj):
    assert proj.cli("check", "no-destroy", "--command", "rm -rf ~").code == 1
    assert proj.cli("check", "no-destroy", "--command", "rm -rf build").code == 0
    assert proj.cli("check", "secret-in-prompt", "--prompt",
                    "key AKIAQX7TZ3MPLW4KJ2VA").code == 1
    assert proj.cli("check", "protect-harness").code == 0
    session = busy_session(proj, "chk-1")
    broken = proj.cli("check", "bank-before-stop", "--session", session)
    assert broken.code == 1 and "a.py" in broken.stdout
    proj.cli("bank", "--session", session, "--note", "done")
    assert proj.cli("check", "bank-before-stop", "--session", session).code == 0
    assert proj.cli("check", "no-such-law").code == 2
    assert proj.cli("check", "no-destroy").code == 2


def test_override_and_permit_leave_receipts_and_a_permit_is_used_once(proj):
    payload = proj.payload("PreToolUse", "ov-1", tool_name="Bash",
                           tool_input={"command": "git push --force origin main"})
    over = proj.hook("PreToolUse", payload, NOTREST_OVERRIDE="no-force-push")
    answer = over.answer
    assert "permissionDecision" not in answer.get("hookSpecificOutput", {})
    assert "override of no-force-push" in answer["systemMessage"]
    receipts = [r for r in proj.journal("ov-1") if r and r["k"] == "receipt"]
    assert receipts and receipts[0]["by"] == "NOTREST_OVERRIDE"

    granted = proj.cli("allow", "no-force-push", "--once", "--why", "fixing history",
                       USER="alice")
    assert granted.code == 0, granted.stderr
    first = proj.hook("PreToolUse", dict(payload, session_id="ov-2"))
    assert "permissionDecision" not in first.answer.get("hookSpecificOutput", {})
    second = proj.hook("PreToolUse", dict(payload, session_id="ov-2"))
    assert second.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    receipt = [r for r in proj.journal("ov-2") if r and r["k"] == "receipt"][0]
    assert receipt["who"] == "alice" and receipt["why"] == "fixing history"
    proj.hook("SessionEnd", proj.payload("SessionEnd", "ov-2", reason="other"))
    packet = proj.cli("packet").stdout
    # made by a test, with no terminal: the packet says so (tests/test_override.py)
    assert ('> override of no-force-push (permit p-1 of "alice", why: "fixing history", '
            'made with no terminal): "git push --force origin main"') in packet.splitlines()


def test_the_agent_cannot_grant_itself_a_permit(proj):
    for command in (".notrest/notrest allow no-destroy --once --why x",
                    "python3 .notrest/notrest.py uninstall",
                    "sh install.sh --uninstall ."):
        result = proj.cli("gate", "--command", command)
        assert result.code == 2 and "protect-harness" in result.stdout, command
    assert proj.cli("gate", "--command", ".notrest/notrest bank --note hi").code == 0


def test_rebuild_recreates_records_and_index(proj):
    session = busy_session(proj, "rb-1")
    proj.cli("bank", "--session", session, "--note", "rebuilt note")
    sessions = proj.root / ".notrest" / "sessions"
    before = json.loads((sessions / "rb-1.json").read_text())
    for path in sessions.glob("*.json"):
        path.unlink()
    (proj.root / ".notrest" / "index.json").unlink()
    result = proj.cli("rebuild")
    assert result.code == 0 and "rebuilt 1 session record" in result.stdout
    after = json.loads((sessions / "rb-1.json").read_text())
    assert after == before
    index = json.loads((proj.root / ".notrest" / "index.json").read_text())
    assert index["sessions"][0]["session"] == "rb-1"


def test_bank_outside_an_install_says_how_to_fix(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, str(REPO / "notrest.py"), "--root",
                           str(tmp_path), "bank", "--note", "x"], capture_output=True)
    assert proc.returncode == 3
    assert b"not installed" in proc.stderr and b"install.sh" in proc.stderr


def test_main_can_be_called_in_process(capsys, tmp_path):
    assert notrest.main(["--root", str(tmp_path), "gate", "--command", "ls -la"]) == 0
    assert "allowed" in capsys.readouterr().out
    assert notrest.main(["--root", str(tmp_path), "packet", "--budget", "800"]) == 0
    out = capsys.readouterr().out
    assert "\nLaws in force, enforced by hooks: no-destroy, " in out and len(out.encode()) <= 800


def test_a_bank_finds_its_codex_session_by_the_thread_id_codex_gives_commands(proj):
    """Codex puts the session's id in every command's environment
    ($CODEX_THREAD_ID): with two sessions open, the bank goes to the one named
    there, not to the most recently active one."""
    for session in ("cx-mine", "cx-other"):
        proj.hook("SessionStart", proj.payload("SessionStart", session, "codex",
                                               source="startup"), client="codex")
    result = proj.cli("bank", "--note", "mine", CODEX_THREAD_ID="cx-mine")
    assert result.code == 0 and "banked session cx-mine ($CODEX_THREAD_ID)" in \
        result.stdout, result.stdout + result.stderr
    assert [r["note"] for r in proj.journal("cx-mine") if r.get("k") == "note"] == ["mine"]
    # an id with no journal is no session: the bank goes on to the other rules
    unknown = proj.cli("bank", "--note", "other", CODEX_THREAD_ID="cx-nosuch")
    assert unknown.code == 0 and "banked session cx-other (" in unknown.stdout and \
        "$CODEX_THREAD_ID" not in unknown.stdout, unknown.stdout


def test_one_version_everywhere_and_it_is_a_real_one():
    """--version, pyproject and both plugin manifests give one version, 2.x."""
    version = notrest.__version__
    assert version.split(".")[0] == "2" and len(version.split(".")) == 3
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '\nversion = "%s"\n' % version in pyproject
    for manifest in (".claude-plugin/plugin.json", ".codex-plugin/plugin.json"):
        assert json.loads((REPO / manifest).read_text())["version"] == version
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert {p["version"] for p in market["plugins"]} == {version}


def test_bare_notrest_lists_its_commands(proj):
    result = proj.cli()
    assert result.code == 0, result.stderr
    for verb in ("install", "doctor", "packet", "bank", "allow", "laws", "view"):
        assert re.search(r"\n    %s +\S" % verb, result.stdout), verb
    assert "required" not in result.stdout + result.stderr


def test_a_permit_needs_no_once_flag(proj):
    granted = proj.cli("allow", "no-force-push", "--why", "fixing history", USER="alice")
    assert granted.code == 0, granted.stderr
    payload = proj.payload("PreToolUse", "ov-3", tool_name="Bash",
                           tool_input={"command": "git push --force origin main"})
    first = proj.hook("PreToolUse", payload)
    assert "permissionDecision" not in first.answer.get("hookSpecificOutput", {})
    second = proj.hook("PreToolUse", payload)
    assert second.answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_the_log_shows_a_call_before_its_verdict_and_no_raw_json(proj):
    for command in ("git push --force origin main", "ls"):
        proj.hook("PreToolUse", proj.payload("PreToolUse", "log-1", tool_name="Bash",
                                             tool_input={"command": command}))
    proj.cli("bank", "--session", "log-1", "--open", "ship it")
    lines = proj.cli("log", "--session", "log-1").stdout.splitlines()[1:]
    kinds = [line.split("  ", 1)[1].split(" ")[0] for line in lines]
    call = kinds.index("call")
    assert kinds[call + 1] == "DENIED" and "git push --force" in lines[call]
    assert not any("{" in line for line in lines), lines


def test_a_persons_note_in_a_project_with_no_session_reaches_the_next_packet(proj):
    """Issue #23 item 7: a person with no session to bank into leaves a word for the
    next agent; it is marked as a person's, not an agent's."""
    result = proj.cli("bank", "--note", "the staging db is down, use the mock",
                      "--next", "finish the login form")
    assert result.code == 0, result.stderr
    assert "a person's note" in result.stdout
    start = proj.hook("SessionStart", proj.payload("SessionStart", "pn-1",
                                                   source="startup"))
    packet = json.dumps(start.answer)
    assert "a person's note, written outside any session" in packet
    assert "the staging db is down, use the mock" in packet
    later = proj.hook("SessionStart", proj.payload("SessionStart", "pn-2",
                                                   source="startup"))
    assert "the staging db is down" not in json.dumps(later.answer)  # seen once started
    doctor = proj.cli("doctor")
    assert not [line for line in doctor.stdout.splitlines() if line.startswith("FAIL")
                and "person-notes" in line], doctor.stdout


def test_an_agents_note_with_no_session_is_not_a_persons(tmp_path):
    proj = make_project(tmp_path)
    agent = proj.cli("bank", "--note", "from the agent", CLAUDECODE="1")
    assert agent.code == 2 and "no session to bank" in agent.stderr
    assert not (proj.root / ".notrest" / "person-notes.jsonl").exists()
