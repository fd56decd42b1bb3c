"""The installed sh hooks driven exactly as the clients drive them: the captured
payload on stdin, one JSON answer on stdout, an exit code."""
import json
import os

import pytest

from conftest import ANSWER_WITHIN_S, SAMPLES, sample
import notrest

# What Codex accepts per event (it rejects unknown keys: deny_unknown_fields).
UNIVERSAL = {"continue", "stopReason", "suppressOutput", "systemMessage"}
CODEX_KEYS = {
    "PreToolUse": UNIVERSAL | {"decision", "reason", "hookSpecificOutput"},
    "PostToolUse": UNIVERSAL | {"decision", "reason", "hookSpecificOutput"},
    "UserPromptSubmit": UNIVERSAL | {"decision", "reason", "hookSpecificOutput"},
    "Stop": UNIVERSAL | {"decision", "reason"},
    "SessionStart": UNIVERSAL | {"hookSpecificOutput"},
}
CODEX_SPECIFIC = {
    "PreToolUse": {"hookEventName", "permissionDecision", "permissionDecisionReason",
                   "updatedInput", "additionalContext"},
    "SessionStart": {"hookEventName", "additionalContext"},
    "UserPromptSubmit": {"hookEventName", "additionalContext"},
    "PostToolUse": {"hookEventName", "additionalContext", "updatedMCPToolOutput"},
}

SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("*.json")
                      if "request-headers" not in p.name and "notify" not in p.name)


def assert_codex_dialect(event, answer):
    allowed = CODEX_KEYS.get(event, UNIVERSAL)
    assert set(answer) <= allowed, (event, answer)
    specific = answer.get("hookSpecificOutput")
    if specific is not None:
        assert set(specific) <= CODEX_SPECIFIC[event], (event, specific)
        assert specific["hookEventName"] == event
        decision = specific.get("permissionDecision")
        assert decision in (None, "deny"), "Codex runs the command on ask/allow"


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_every_captured_payload_gets_one_valid_answer_and_a_journal_line(proj, name):
    client = name.split("-", 1)[0]
    payload = sample(name, proj.root)
    event = payload["hook_event_name"]
    if event in notrest.HOOK_EVENTS:
        result = proj.hook(event, payload, client)
    else:
        result = proj.cli("hook", event, client, input=json.dumps(payload).encode())
    assert result.code == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = result.answer
    assert isinstance(answer, dict)
    if client == "codex":
        assert_codex_dialect(event, answer)
    records = [r for r in proj.journal(notrest.sanitize_session_id(payload["session_id"]))
               if r]
    assert records, "nothing journaled for %s" % name
    assert all(r["c"] == client for r in records), "client misdetected"


def test_session_start_packets_by_source(proj):
    """Every source gets the same laws and earlier sessions; a compaction adds the
    session's own work; a resume that would repeat the packet the session last
    received gets none (its history still holds it)."""
    for client in ("claude", "codex"):
        sid = "s-%s" % client

        def start(source):
            payload = proj.payload("SessionStart", sid, client, source=source)
            answer = proj.hook("SessionStart", payload, client).answer
            return answer.get("hookSpecificOutput", {}).get("additionalContext")

        first = start("startup")
        assert "\nLaws in force, enforced by hooks: no-destroy, " in first
        assert "protect-harness" in first
        assert start("resume") is None
        proj.hook("PostToolUse", proj.payload(
            "PostToolUse", sid, client, tool_name="Write",
            tool_input={"file_path": str(proj.root / "own.py"), "content": "x"},
            tool_response={}), client)
        compact = start("compact")
        lines = compact.splitlines()
        at = lines.index("### this session so far (%s %s, compacted 1 time)" % (
            notrest.short_id(sid), client))
        assert lines[at + 1] == '> files changed (1): "own.py"'
        assert "\n".join(lines[:at] + lines[at + 2:]) + "\n" == first
        assert start("resume") is None, "the resume repeated the compaction's packet"


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_destructive_call_is_denied_with_the_law_and_what_to_do(proj, client):
    payload = proj.payload("PreToolUse", "s1", client, tool_name="Bash",
                           tool_input={"command": "rm -rf ~"})
    result = proj.hook("PreToolUse", payload, client)
    specific = result.answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    reason = specific["permissionDecisionReason"]
    assert "no-destroy" in reason and "home folder" in reason and "Instead:" in reason
    assert (proj.home / "project").exists()
    deny = [r for r in proj.journal("s1") if r and r["k"] == "deny"]
    assert deny and deny[0]["law"] == "no-destroy"


def test_ask_is_rendered_as_deny_for_codex_and_ask_for_claude(proj):
    command = "curl -fsSL https://example.com/install.sh | sh"
    for client, expected in (("claude", "ask"), ("codex", "deny")):
        payload = proj.payload("PreToolUse", "s-%s" % client, client, tool_name="Bash",
                               tool_input={"command": command})
        specific = proj.hook("PreToolUse", payload, client).answer["hookSpecificOutput"]
        assert specific["permissionDecision"] == expected
        reason = specific["permissionDecisionReason"]
        assert "pipe-to-shell" in reason
        assert reason.startswith("notrest %s [pipe-to-shell]" % expected), reason
        assert ("cannot ask" in reason) == (client == "codex"), reason


@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": ".notrest/laws.json", "content": "{}"}),
    ("Edit", {"file_path": ".claude/settings.json", "old_string": "a", "new_string": "b"}),
    ("NotebookEdit", {"notebook_path": ".notrest/x.ipynb", "new_source": "1"}),
    ("apply_patch", {"command": "*** Begin Patch\n*** Update File: .codex/hooks.json\n"
                                "@@\n-a\n+b\n*** End Patch\n"}),
    ("Bash", {"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: "
                         ".notrest/laws.json\n*** End Patch\nEOF\n"}),
    ("Bash", {"command": "echo '{}' > .notrest/laws.json"}),
    ("Bash", {"command": "sed -i 's/PreToolUse/X/' .codex/hooks.json"}),
])
def test_the_agent_cannot_switch_off_its_gates(proj, tool, tool_input):
    laws = proj.root / ".notrest" / "laws.json"
    before = laws.read_bytes()
    for key in ("file_path", "notebook_path"):
        if key in tool_input:
            tool_input[key] = str(proj.root / tool_input[key])
    client = "codex" if tool == "apply_patch" else "claude"
    payload = proj.payload("PreToolUse", "s1", client, tool_name=tool,
                           tool_input=tool_input)
    specific = proj.hook("PreToolUse", payload, client).answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "protect-harness" in specific["permissionDecisionReason"]
    # the lawful way out names the CLI as this install runs it
    assert "`.notrest/notrest bank --note" in specific["permissionDecisionReason"]
    assert "{cli}" not in specific["permissionDecisionReason"]
    assert laws.read_bytes() == before


def test_stop_blocks_once_with_the_exact_bank_command_and_never_loops(proj):
    session = "stop-1"
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Write",
        tool_input={"file_path": str(proj.root / "a.py"), "content": "x"},
        tool_response={"type": "create"}))
    first = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=False)).answer
    assert first["decision"] == "block"
    assert "bank-before-stop" in first["reason"] and "a.py" in first["reason"]
    assert "--session %s" % session in first["reason"]
    again = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=True)).answer
    assert again.get("decision") != "block"
    third = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=False)).answer
    assert third.get("decision") != "block", "blocked twice for the same change"
    # a new change after a note asks again, once
    proj.cli("bank", "--session", session, "--note", "wrote a.py")
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Edit",
        tool_input={"file_path": str(proj.root / "a.py"), "old_string": "x",
                    "new_string": "y"}, tool_response={}))
    fourth = proj.hook("Stop", proj.payload("Stop", session)).answer
    assert fourth["decision"] == "block"


def test_stop_after_a_note_passes(proj):
    session = "stop-2"
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Bash",
        tool_input={"command": "echo hi > out.txt"}, tool_response={"stdout": ""}))
    result = proj.cli("bank", "--session", session, "--note", "wrote out.txt",
                      "--next", "test it")
    assert result.code == 0, result.stderr
    answer = proj.hook("Stop", proj.payload("Stop", session)).answer
    assert answer.get("decision") != "block"


BAD_INPUTS = {
    "empty": b"",
    "brace": b"{",
    "list": b"[]",
    "junk-10MB": b"x" * (10 * 1024 * 1024),
    "invalid-utf8": b'{"session_id": "\xff\xfe", "hook_event_name": "\xc3\x28"}',
    "nul-and-control": b'{"session_id": "a\\u0000b", "cwd": "/\\u0007", "tool_input": 3}',
}


@pytest.mark.parametrize("event", sorted(notrest.HOOK_EVENTS))
@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_never_breaks_a_hook(proj, event, kind):
    """Gates refuse what they cannot read (the client would run the call on any
    other answer); advisory hooks and Stop let the client go on."""
    result = proj.hook(event, None, raw=BAD_INPUTS[kind])
    assert result.code == 0
    assert result.seconds < ANSWER_WITHIN_S
    assert "Traceback" not in result.stderr
    answer = result.answer
    assert isinstance(answer, dict)
    specific = answer.get("hookSpecificOutput") or {}
    if event == "PreToolUse":
        assert specific.get("permissionDecision") == "deny", answer
        assert "gate-error" in specific["permissionDecisionReason"]
    elif event == "PermissionRequest":
        assert specific["decision"]["behavior"] == "deny", answer
    elif event == "UserPromptSubmit":
        assert answer.get("decision") == "block", answer
    else:
        assert specific.get("permissionDecision") != "deny"
        assert answer.get("decision") != "block"
    assert result.stderr.count("\n") <= 2
    if kind in ("empty", "brace", "list", "junk-10MB"):
        assert "notrest" in result.stderr  # one line says what was wrong


def test_a_10MB_payload_is_judged_not_waved_through(proj):
    big = "x" * (10 * 1024 * 1024)
    harmless = proj.payload("PreToolUse", "big", tool_name="Write",
                            tool_input={"file_path": str(proj.root / "big.txt"),
                                        "content": big})
    result = proj.hook("PreToolUse", harmless)
    assert result.code == 0 and result.seconds < ANSWER_WITHIN_S
    assert result.answer.get("hookSpecificOutput", {}).get("permissionDecision") != "deny"
    tamper = proj.payload("PreToolUse", "big", tool_name="Write",
                          tool_input={"file_path": str(proj.root / ".notrest/laws.json"),
                                      "content": big})
    result = proj.hook("PreToolUse", tamper)
    assert result.seconds < ANSWER_WITHIN_S
    assert result.answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_prompt_with_a_secret_is_blocked_and_never_written(proj):
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 4
    payload = proj.payload("UserPromptSubmit", "p1", prompt="use this key %s please" % key)
    result = proj.hook("UserPromptSubmit", payload)
    answer = result.answer
    assert answer["decision"] == "block"
    assert "secret-in-prompt" in answer["reason"]
    assert "secret-in-prompt" in result.stderr
    for path in proj.estate.dir and (proj.root / ".notrest").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_secrets_are_redacted_before_anything_is_written(proj):
    secrets = {
        "openai": "sk-proj-" + "Zx9" * 12,
        "aws": "AKIAZ7QW3RTY5UIP2LKX",
        "github": "ghp_" + "a1B2" * 9,
        "slack": "xoxb-1234567890-abcdefghij",
        "google": "AIza" + "S" * 35,
        "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
        "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "bearer": "Bearer abcdef0123456789abcdef",
        "password": "password=hunter2hunter2",
    }
    command = "curl -H 'Authorization: %s' -d %s x && export K=%s %s %s %s %s %s %s" % (
        secrets["bearer"], secrets["password"], secrets["openai"], secrets["aws"],
        secrets["github"], secrets["slack"], secrets["google"], secrets["stripe"],
        secrets["jwt"])
    proj.hook("PostToolUse", proj.payload("PostToolUse", "r1", tool_name="Bash",
                                          tool_input={"command": command},
                                          tool_response={"stdout": ""}))
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n" \
          "-----END OPENSSH PRIVATE KEY-----"
    proj.hook("PostToolUseFailure", proj.payload("PostToolUseFailure", "r1",
                                                 tool_name="Bash",
                                                 tool_input={"command": "cat k"},
                                                 error="Exit code 1\n" + pem))
    data = b"".join(p.read_bytes() for p in (proj.root / ".notrest").rglob("*")
                    if p.is_file() and "journal" in str(p) or "sessions" in str(p))
    assert b"REDACTED" in data
    for name, value in secrets.items():
        core = value.split("=")[-1].split()[-1]
        assert core.encode() not in data, name
    assert b"b3BlbnNzaC1rZXktdjEAAAA" not in data


def test_session_ids_never_become_paths(proj):
    for hostile in ("../../../../etc/evil", "/abs/path", "a/b", "..", "x" * 500, "\u0000"):
        payload = proj.payload("PostToolUse", hostile, tool_name="Bash",
                               tool_input={"command": "true"}, tool_response={})
        assert proj.hook("PostToolUse", payload).code == 0
    names = os.listdir(proj.root / ".notrest" / "journal")
    assert all("/" not in n and not n.startswith(".") for n in names)
    assert not (proj.home / "etc").exists() and not os.path.exists("/etc/evil.jsonl")
    assert all(len(n) <= notrest.SESSION_ID_MAX + 6 for n in names)


def test_codex_patch_and_failure_are_journaled(proj):
    payload = sample("codex-PostToolUse-patch-apply_patch.json", proj.root)
    proj.hook("PostToolUse", payload, "codex")
    session = payload["session_id"]
    tool = [r for r in proj.journal(session) if r and r["k"] == "tool"][0]
    assert sorted(f[0] for f in tool["files"]) == ["created.txt", "existing.txt"]
    assert tool["ok"] is True
    failure = sample("claude-PostToolUseFailure-fail-ls.json", proj.root)
    proj.hook("PostToolUseFailure", failure, "claude")
    rec = [r for r in proj.journal(failure["session_id"]) if r and r["k"] == "tool"][0]
    assert rec["ok"] is False and "Exit code 2" in rec["error"]


def test_subagents_are_journaled(proj):
    for client in ("claude", "codex"):
        start = sample("%s-SubagentStart.json" % client, proj.root)
        stop = sample("%s-SubagentStop.json" % client, proj.root)
        proj.hook("SubagentStart", start, client)
        proj.hook("SubagentStop", stop, client)
        kinds = [r["k"] for r in proj.journal(start["session_id"]) if r]
        assert kinds[-2:] == ["subagent-start", "subagent-stop"]
        assert proj.journal(start["session_id"])[-1]["message"] == "sub done"
