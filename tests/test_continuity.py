"""Promise 1 and 3 end to end through the real sh hooks: what one session did,
left open and meant to do next reaches the next session's packet, also when the
first session was killed."""
import json
import os
import signal
import time

import pytest

from conftest import read_results, simulate, step
import notrest


def session_a_steps(proj, client, session):
    p = lambda event, **f: proj.payload(event, session, client, **f)  # noqa: E731
    steps = [
        step("SessionStart", p("SessionStart", source="startup"), client),
        step("UserPromptSubmit", p("UserPromptSubmit", prompt="add a greeting module"),
             client),
    ]
    if client == "claude":
        steps.append(step("PostToolUse", p(
            "PostToolUse", tool_name="Write",
            tool_input={"file_path": str(proj.root / "greet.py"), "content": "x = 1\n"},
            tool_response={"type": "create"}), client))
        steps.append(step("PostToolUse", p(
            "PostToolUse", tool_name="Edit",
            tool_input={"file_path": str(proj.root / "README.txt"), "old_string": "a",
                        "new_string": "b"}, tool_response={}), client))
    else:
        steps.append(step("PostToolUse", p(
            "PostToolUse", tool_name="apply_patch",
            tool_input={"command": "*** Begin Patch\n*** Add File: greet.py\n+x = 1\n"
                                   "*** Update File: README.txt\n@@\n-a\n+b\n"
                                   "*** End Patch\n"},
            tool_response="Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess."),
            client))
    steps.append(step("PreToolUse", p("PreToolUse", tool_name="Bash",
                                      tool_input={"command": "rm -rf ~"}), client))
    if client == "claude":
        steps.append(step("PostToolUseFailure", p(
            "PostToolUseFailure", tool_name="Bash",
            tool_input={"command": "python3 -m pytest -q tests/test_greet.py"},
            error="Exit code 1\n1 failed, 3 passed"), client))
    else:
        steps.append(step("PostToolUse", p(
            "PostToolUse", tool_name="apply_patch",
            tool_input={"command": "*** Begin Patch\n*** Update File: nothere.py\n@@\n"
                                   "-q\n+r\n*** End Patch\n"},
            tool_response="Exit code: 1\nerror: nothere.py: No such file"), client))
        # Codex tells hooks nothing of exit codes: notrest reads its rollout file
        steps.append(step("PostToolUse", p(
            "PostToolUse", tool_name="Bash", tool_use_id="call_t9_x",
            tool_input={"command": "python3 -m pytest -q tests/test_greet.py"},
            tool_response="1 failed, 3 passed\n"), client))
        rollout = proj.home / ".codex" / "sessions" / ("rollout-%s.jsonl" % session)
        rollout.parent.mkdir(parents=True, exist_ok=True)
        item = {"type": "CommandExecution", "id": "call_t9_x", "exit_code": 1,
                "command": ["/bin/bash", "-lc", "python3 -m pytest -q tests/test_greet.py"],
                "status": "failed", "aggregated_output": "1 failed, 3 passed\n"}
        rollout.write_text(json.dumps({"type": "session_meta", "payload": {}}) + "\n" +
                           json.dumps({"type": "event_msg", "payload": {
                               "type": "item_completed", "item": item}}) + "\n")
    steps.append(step("Stop", p("Stop", stop_hook_active=False,
                                last_assistant_message="done"), client))
    steps.append({"cli": ["bank", "--note", "added greet.py; tests still red",
                          "--next", "make tests/test_greet.py pass",
                          "--open", "decide the greeting language"]})
    steps.append(step("Stop", p("Stop", stop_hook_active=True,
                                last_assistant_message="done"), client))
    steps.append(step("SessionEnd", p("SessionEnd", reason="other"), client))
    return steps


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_next_session_starts_knowing_what_the_last_one_did(proj, tmp_path, client):
    session_a = "aaaa1111-0000-4000-8000-000000000001"
    steps = session_a_steps(proj, client, session_a)
    _proc, results = simulate(proj, steps, tmp_path)
    done = {r["i"]: r for r in read_results(results)}
    first = next(i for i, s in enumerate(steps) if s.get("hook") == "Stop")
    first_stop = json.loads(done[first]["stdout"])
    assert first_stop["decision"] == "block"
    assert "bank-before-stop" in first_stop["reason"]
    bank = done[first + 1]
    assert bank["code"] == 0, bank["stderr"]
    assert session_a in bank["stdout"], "bank did not land on the calling session"
    assert json.loads(done[first + 2]["stdout"]).get("decision") != "block"
    record = json.loads((proj.root / ".notrest" / "sessions" /
                         (session_a + ".json")).read_text())
    assert record["note"] == "added greet.py; tests still red"

    result = proj.hook("SessionStart", proj.payload("SessionStart", "bbbb2222", client,
                                                    source="startup"), client)
    packet = result.answer["hookSpecificOutput"]["additionalContext"]
    lines = packet.splitlines()
    assert "### 00000001 %s, ended " % client in packet
    assert '> note: "added greet.py; tests still red"' in lines
    assert '> next: "make tests/test_greet.py pass"' in lines
    assert '> files changed (2): "README.txt", "greet.py"' in lines  # newest first
    assert '> denied (no-destroy): "rm -rf ~"' in lines
    assert '> failed (exit 1): "python3 -m pytest -q tests/test_greet.py"; first ' \
        'error: "1 failed, 3 passed"' in lines
    if client == "codex":
        assert '> failed (exit 1): "apply_patch nothere.py"; first error: "error: ' \
            'nothere.py: No such file"' in lines
    assert '> open thread t1: "decide the greeting language"' in lines


def test_bank_lands_on_the_calling_session_among_several(proj, tmp_path):
    """Two live sessions; the one that banks is not the most recently active, and no
    session id is in sight of the bank command: it still lands on its own session."""
    steps_a = [step("SessionStart", proj.payload("SessionStart", "sess-A",
                                                 source="startup")),
               {"sleep": 2.0},
               {"cli": ["bank", "--note", "note of A"]}]
    steps_b = [{"sleep": 0.5},
               step("SessionStart", proj.payload("SessionStart", "sess-B",
                                                 source="startup")),
               step("PostToolUse", proj.payload("PostToolUse", "sess-B", tool_name="Bash",
                                                tool_input={"command": "ls"},
                                                tool_response={}))]
    client_b, _ = simulate(proj, steps_b, tmp_path, "b", linger=20, wait=False)
    try:
        _, results = simulate(proj, steps_a, tmp_path, "a")
    finally:
        os.killpg(client_b.pid, signal.SIGKILL)
        client_b.wait()
    out = {r["i"]: r for r in read_results(results)}[2]
    assert out["code"] == 0, out["stderr"]
    assert "banked session sess-A (its client is this process's ancestor)" in out["stdout"]
    sessions = proj.root / ".notrest" / "sessions"
    assert json.loads((sessions / "sess-A.json").read_text())["note"] == "note of A"
    assert notrest.current_session_record(proj.estate, "sess-B")["note"] == ""


def test_a_killed_session_is_recovered_by_the_next_packet(proj, tmp_path):
    session = "dead0000-1111-4222-8333-444455556666"
    p = lambda event, **f: proj.payload(event, session, **f)  # noqa: E731
    steps = [
        step("SessionStart", p("SessionStart", source="startup")),
        step("PostToolUse", p("PostToolUse", tool_name="Write",
                              tool_input={"file_path": str(proj.root / "half.py"),
                                          "content": "x"}, tool_response={})),
        step("PreToolUse", p("PreToolUse", tool_name="Bash",
                             tool_input={"command": "make build"})),
        {"sleep": 60},
    ]
    client, results = simulate(proj, steps, tmp_path, wait=False)
    deadline = time.time() + 30
    while time.time() < deadline and len(read_results(results)) < 3:
        time.sleep(0.05)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    packet = proj.hook("SessionStart", proj.payload("SessionStart", "next-one",
                                                    source="startup")).answer
    lines = packet["hookSpecificOutput"]["additionalContext"].splitlines()
    assert [line for line in lines if line.startswith("### ")] == [
        "### 55556666 claude, DIED (killed or crashed, no end), last active %s, no note"
        % notrest.iso_time(notrest.current_session_record(proj.estate, session)[
            "updated"])]
    assert '> files changed (1): "half.py"' in lines
    assert '> never finished: "make build"' in lines
