"""Prove the e2e rig against the real clients with tiny stand-in sh hooks
(not notrest): context injection, deny, stop gate, kill, compaction, subagents,
file tools."""

import json
import time

import rig
from rig import hook_entry, shell_call, text_turn, tool_turn

SESSION_START_CTX = ('printf \'%s\' \'{"hookSpecificOutput": {"hookEventName": '
                     '"SessionStart", "additionalContext": "MARKER-123"}}\'')
DENY_LAW_X = ('case "$payload" in *denied.txt*) printf \'%s\' \'{"hookSpecificOutput": '
              '{"hookEventName": "PreToolUse", "permissionDecision": "deny", '
              '"permissionDecisionReason": "LAW-X: no touching denied.txt"}}\';; esac')


LONG_COMMAND = "touch started.txt && python3 -c 'import time; time.sleep(300)' && touch never.txt"


def served(env):
    return [r["served"] for r in env.requests()]


# (a) ---------------------------------------------------------------------
def test_session_start_context_reaches_first_request(e2e, client):
    env = e2e(client, {"scripts": {"rig-a": [text_turn("ok")]}})
    env.write_hooks({"SessionStart": [hook_entry(env.recorder(SESSION_START_CTX))]})
    res = env.run("rig-a: say ok", timeout=60).check()
    reqs = env.request_texts()
    assert reqs, "no model request"
    assert "MARKER-123" in reqs[0]
    assert [p["source"] for p in env.hook_payloads("SessionStart")] == ["startup"]
    assert res.final_text() == "ok [t0]"


# (b) ---------------------------------------------------------------------
def test_pre_tool_use_deny(e2e, client):
    env = e2e(client, {"scripts": {"rig-b": [
        tool_turn(shell_call(client, "touch denied.txt")),
        tool_turn(shell_call(client, "touch allowed.txt")),
        text_turn("finished"),
    ]}})
    env.write_hooks({"PreToolUse": [hook_entry(env.recorder(DENY_LAW_X), matcher="Bash")]})
    env.run("rig-b: touch files", timeout=60).check()
    assert not (env.project / "denied.txt").exists()
    assert (env.project / "allowed.txt").exists()  # the gate lets others through
    reqs = env.request_texts()
    assert [s["turn"] for s in served(env)] == [0, 1, 2]
    assert "LAW-X" not in reqs[0]
    assert "LAW-X" in reqs[1]
    pre = env.hook_payloads("PreToolUse")
    assert [p["tool_name"] for p in pre] == ["Bash", "Bash"]
    assert "touch denied.txt" in pre[0]["tool_input"]["command"]


# (c) ---------------------------------------------------------------------
def test_stop_hook_blocks_once(e2e, client):
    env = e2e(client, {"scripts": {"rig-c": [text_turn("first answer")]}})
    counter = env.root / "stop.count"
    block_once = ('if [ ! -f %s ]; then echo 1 > %s; '
                  'printf \'%%s\' \'{"decision": "block", "reason": "BANK-FIRST"}\'; fi'
                  % (rig.sh_quote(str(counter)), rig.sh_quote(str(counter))))
    env.write_hooks({"Stop": [hook_entry(env.recorder(block_once))]})
    res = env.run("rig-c: answer", timeout=60).check()
    reqs = env.request_texts()
    assert len(reqs) == 2, served(env)
    assert "BANK-FIRST" not in reqs[0]
    assert "BANK-FIRST" in reqs[1]
    stops = env.hook_payloads("Stop")
    assert [p["stop_hook_active"] for p in stops] == [False, True]
    assert res.final_text() == "done [t1]"


# (d) ---------------------------------------------------------------------
def test_kill_mid_turn_leaves_no_process(e2e, client):
    env = e2e(client, {"scripts": {"rig-d": [text_turn("too late", delay=600)]}})
    env.write_hooks({"SessionStart": [hook_entry(env.recorder())]})
    # kill as soon as the (delayed) model request has arrived: killed, not timed
    # out, says the predicate fired (no wall-clock bound: load slows the client)
    res = env.run("rig-d: be slow", timeout=300,
                  kill_when=lambda: len(env.requests()) >= 1)
    assert res.killed and not res.timed_out and res.returncode == -9
    assert len(env.requests()) == 1  # the client was waiting for the model
    assert res.final_text() is None
    assert rig.marked_processes(res.marker) == []
    assert rig.group_members(res.pid) == []


def test_kill_during_tool_leaves_no_process(e2e, client):
    env = e2e(client, {"scripts": {"rig-d2": [
        # not "sleep 300": Claude's Bash tool refuses a leading long sleep by itself
        tool_turn(shell_call(client, LONG_COMMAND)), text_turn("x")]}})
    started = env.project / "started.txt"
    res = env.run("rig-d2: run a long command", timeout=60, kill_after=30,
                  kill_when=lambda: started.exists())
    assert res.killed
    assert rig.marked_processes(res.marker) == []
    assert rig.group_members(res.pid) == []
    time.sleep(0.5)
    assert not (env.project / "never.txt").exists()
    # what survived the SIGKILL of the client's process group (the rig then
    # killed it): Codex runs tool commands in a PTY, in a session of their own
    print("%s: %d process(es) outlived SIGKILL of the client's group: %s"
          % (client, len(res.strays), res.stray_cmds))


# (e) ---------------------------------------------------------------------
def test_compaction_claude(e2e):
    env = e2e("claude", {"scripts": {"rig-e": [
        tool_turn(shell_call("claude", "echo one > one.txt")),
        text_turn("first part done"),
        text_turn("after compaction"),
    ]}})
    env.write_hooks({ev: [hook_entry(env.recorder())]
                     for ev in ("SessionStart", "PreCompact", "PostCompact")})
    env.run("rig-e: work", timeout=60).check()
    env.run("/compact", resume=True, timeout=60).check()
    kinds = [s["kind"] for s in served(env)]
    assert kinds == ["turn", "turn", "compact"]
    sources = [p["source"] for p in env.hook_payloads("SessionStart")]
    assert sources == ["startup", "resume", "compact"]
    post = env.hook_payloads("PostCompact")
    # Claude leaves the session's final answer ([t1]) out of the summarisation
    # request, so the summary says turns_done=1; the verbatim tail it keeps
    # after the summary still holds [t1], so the script resumes at turn 2
    assert post and "[fake-summary script=rig-e turns_done=1]" in post[0]["compact_summary"]
    assert [p["trigger"] for p in env.hook_payloads("PreCompact")] == ["manual"]
    # the script carries on after the summary
    res = env.run("go on", resume=True, timeout=60).check()
    assert res.final_text() == "after compaction [t2]"


def test_compaction_codex(e2e):
    env = e2e("codex", {"scripts": {"rig-e": [
        tool_turn(shell_call("codex", "echo one > one.txt"), input_tokens=200000),
        tool_turn(shell_call("codex", "echo two > two.txt")),
        text_turn("finished"),
    ]}})
    env.write_hooks({ev: [hook_entry(env.recorder())]
                     for ev in ("SessionStart", "PreCompact", "PostCompact")})
    res = env.run("rig-e: work", timeout=60,
                  config_top="model_auto_compact_token_limit = 5000").check()
    kinds = [(s["kind"], s["turn"]) for s in served(env)]
    assert kinds == [("turn", 0), ("compact", 1), ("turn", 1), ("turn", 2)]
    assert (env.project / "two.txt").exists()
    assert res.final_text() == "finished [t2]"
    sources = [p["source"] for p in env.hook_payloads("SessionStart")]
    print("codex SessionStart sources:", sources,
          "PreCompact:", [p.get("trigger") for p in env.hook_payloads("PreCompact")],
          "PostCompact:", [p.get("trigger") for p in env.hook_payloads("PostCompact")])
    assert sources == ["startup", "compact"]
    assert [p["trigger"] for p in env.hook_payloads("PreCompact")] == ["auto"]
    assert [p["trigger"] for p in env.hook_payloads("PostCompact")] == ["auto"]


# (f) ---------------------------------------------------------------------
def test_subagent_claude(e2e):
    # Claude 2.1.332 runs Agent in the background even in -p mode: the main
    # thread gets "Async agent launched" at once and answers (turn 1); when the
    # subagent ends, a <task-notification> brings one more main request (turn 2)
    env = e2e("claude", {"scripts": {
        "rig-f main": [
            tool_turn({"name": "Agent", "input": {
                "description": "sub task", "prompt": "SUBTASK-F: write sub.txt",
                "subagent_type": "general-purpose"}}),
            text_turn("waiting for the agent"),
            text_turn("main done"),
        ],
        "SUBTASK-F": [tool_turn(shell_call("claude", "echo sub > sub.txt")),
                      text_turn("sub done")],
    }})
    env.write_hooks({ev: [hook_entry(env.recorder())]
                     for ev in ("SubagentStart", "SubagentStop", "PreToolUse", "Stop")})
    res = env.run("rig-f main: delegate", timeout=60).check()
    assert res.final_text() == "main done [t2]"
    assert (env.project / "sub.txt").read_text() == "sub\n"
    starts, stops = env.hook_payloads("SubagentStart"), env.hook_payloads("SubagentStop")
    assert len(starts) == 1 and len(stops) == 1
    assert starts[0]["agent_type"] == "general-purpose"
    assert stops[0]["agent_id"] == starts[0]["agent_id"]
    assert stops[0]["last_assistant_message"] == "sub done [t1]"
    scripts = [s["script"] for s in served(env)]
    assert scripts.count("SUBTASK-F") == 2 and scripts.count("rig-f main") == 3
    assert "<task-notification>" in env.request_texts()[-1]
    in_sub = [p for p in env.hook_payloads("PreToolUse") if p.get("agent_id")]
    assert in_sub and in_sub[0]["tool_input"]["command"] == "echo sub > sub.txt"
    print("claude Stop hooks (main thread):",
          [p["last_assistant_message"] for p in env.hook_payloads("Stop")])


def test_subagent_codex(e2e):
    env = e2e("codex", {"scripts": {
        "rig-f main": [
            tool_turn({"name": "spawn_agent", "arguments": {"message": "SUBTASK-F: write sub.txt"}}),
            tool_turn({"name": "wait_agent", "arguments": {"targets": ["$agent"]}}),
            text_turn("main done"),
        ],
        "SUBTASK-F": [tool_turn(shell_call("codex", "echo sub > sub.txt")),
                      text_turn("sub done")],
    }})
    env.write_hooks({ev: [hook_entry(env.recorder())]
                     for ev in ("SubagentStart", "SubagentStop", "PreToolUse")})
    res = env.run("rig-f main: delegate", timeout=60).check()
    assert res.final_text() == "main done [t2]"
    assert (env.project / "sub.txt").read_text() == "sub\n"
    starts, stops = env.hook_payloads("SubagentStart"), env.hook_payloads("SubagentStop")
    assert len(starts) == 1 and len(stops) == 1
    assert stops[0]["agent_id"] == starts[0]["agent_id"]
    assert stops[0]["last_assistant_message"] == "sub done [t1]"
    names = [p["tool_name"] for p in env.hook_payloads("PreToolUse")]
    print("codex PreToolUse tool names:", names)
    assert "spawn_agent" in " ".join(names) and "wait_agent" in " ".join(names)


# (g) file tools are scriptable ----------------------------------------------
def test_file_tools_claude(e2e):
    env = e2e("claude")
    path = str(env.project / "notes.txt")
    env.set_script({"scripts": {"rig-g": [
        tool_turn({"name": "Write", "input": {"file_path": path, "content": "alpha\nbeta\n"}}),
        tool_turn({"name": "Edit", "input": {"file_path": path, "old_string": "beta",
                                             "new_string": "gamma"}}),
        text_turn("edited"),
    ]}})
    env.write_hooks({"PreToolUse": [hook_entry(env.recorder(), matcher="Write|Edit")]})
    env.run("rig-g: edit", timeout=60).check()
    assert (env.project / "notes.txt").read_text() == "alpha\ngamma\n"
    assert [p["tool_name"] for p in env.hook_payloads("PreToolUse")] == ["Write", "Edit"]


def test_apply_patch_codex(e2e):
    patch = ("*** Begin Patch\n*** Add File: notes.txt\n+alpha\n+beta\n"
             "*** Update File: README.md\n@@\n-e2e test project\n+patched\n*** End Patch\n")
    env = e2e("codex", {"scripts": {"rig-g": [
        tool_turn({"name": "apply_patch", "input": patch}),
        text_turn("patched"),
    ]}})
    env.write_hooks({"PreToolUse": [hook_entry(env.recorder(), matcher="apply_patch")]})
    env.run("rig-g: patch", timeout=60).check()
    assert (env.project / "notes.txt").read_text() == "alpha\nbeta\n"
    assert (env.project / "README.md").read_text() == "patched\n"
    pre = env.hook_payloads("PreToolUse")
    assert [p["tool_name"] for p in pre] == ["apply_patch"]
    assert pre[0]["tool_input"]["command"] == patch
    # offered as a freeform (custom) tool, answered as a custom_tool_call
    tools = env.requests()[0]["body"]["tools"]
    assert {"type": "custom", "name": "apply_patch"}.items() <= next(
        t for t in tools if t.get("name") == "apply_patch").items()


# (h) resuming the last session ------------------------------------------------
def test_resume(e2e, client):
    env = e2e(client, {"scripts": {"rig-h": [text_turn("first"), text_turn("second")]}})
    env.write_hooks({"SessionStart": [hook_entry(env.recorder())]})
    assert env.run("rig-h: start", timeout=60).check().final_text() == "first [t0]"
    res = env.run("and again", resume=True, timeout=60).check()
    assert res.final_text() == "second [t1]"  # the history came back with the resume
    starts = env.hook_payloads("SessionStart")
    assert [p["source"] for p in starts] == ["startup", "resume"]
    assert starts[0]["session_id"] == starts[1]["session_id"]
    last = env.requests()[-1]["body"]
    assert "and again" in json.dumps(last) and "first [t0]" in json.dumps(last)


# (i) user-level hooks run too -----------------------------------------------------
def test_user_level_hooks(e2e, client):
    env = e2e(client, {"scripts": {"rig-i": [text_turn("ok")]}})
    env.write_hooks({"SessionStart": [hook_entry(env.recorder("echo USER-LEVEL-CTX"))]},
                    scope="user")
    env.write_hooks({"SessionStart": [hook_entry(env.recorder())]}, scope="project")
    env.run("rig-i: hi", timeout=60).check()
    assert len(env.hook_payloads("SessionStart")) == 2   # both layers ran
    assert "USER-LEVEL-CTX" in env.request_texts()[0]    # plain stdout is context too
