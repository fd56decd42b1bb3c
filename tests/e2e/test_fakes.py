"""The fake model servers on their own (no client needed): script selection,
stamps, compaction, tool shapes, delay, lifecycle."""

import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import fake_anthropic
import fake_openai
import fakebase
import rig
from fake_anthropic import FakeAnthropic
from fake_openai import FakeOpenAI


def post(url, body, headers=None, timeout=10):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers=dict({"Content-Type": "application/json"},
                                              **(headers or {})))
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read().decode()


def sse(text):
    """[(event, data)] of an SSE body."""
    out = []
    for chunk in text.strip().split("\n\n"):
        ev = data = None
        for line in chunk.splitlines():
            if line.startswith("event: "):
                ev = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        out.append((ev, data))
    return out


def a_user(text):
    return {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                        {"type": "text", "text": text}]}


# ---- Anthropic --------------------------------------------------------------
A_SCRIPT = {"scripts": {
    "job-1": [{"tool_calls": [{"name": "Bash", "input": {"command": "ls"}},
                              {"name": "Write", "input": {"file_path": "/x", "content": "y"}}]},
              {"text": "all good", "input_tokens": 1234}],
    "job": [{"text": "shorter key"}]},
    "default": [{"text": "from default"}]}


def anthropic_blocks(events):
    blocks = {}
    for ev, d in events:
        if ev == "content_block_start":
            blocks[d["index"]] = dict(d["content_block"])
        elif ev == "content_block_delta":
            b = blocks[d["index"]]
            if d["delta"]["type"] == "text_delta":
                b["text"] = b.get("text", "") + d["delta"]["text"]
            else:
                b["json"] = b.get("json", "") + d["delta"]["partial_json"]
    return [blocks[i] for i in sorted(blocks)]


def test_anthropic_turns_are_stateless(tmp_path):
    with FakeAnthropic(A_SCRIPT, tmp_path / "log.jsonl") as srv:
        url = srv.url + "/v1/messages?beta=true"
        _, body = post(url, {"model": "m", "messages": [a_user("please do job-1")]})
        events = sse(body)
        names = [e for e, _ in events]
        assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta",
                                                                         "message_stop"]
        assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
        blocks = anthropic_blocks(events)
        assert [b["name"] for b in blocks] == ["Bash", "Write"]
        assert all(b["id"].startswith("toolu_t0_") for b in blocks)
        assert json.loads(blocks[0]["json"]) == {"command": "ls"}
        history = [a_user("please do job-1"),
                   {"role": "assistant", "content": [{"type": "tool_use", "id": blocks[0]["id"],
                                                      "name": "Bash", "input": {}}]},
                   # a subagent's stamped result text in a user message does not count
                   {"role": "user", "content": [{"type": "tool_result",
                                                 "tool_use_id": blocks[0]["id"],
                                                 "content": "sub said done [t7]"}]}]
        _, body = post(url, {"messages": history})
        events = sse(body)
        assert anthropic_blocks(events) == [{"type": "text", "text": "all good [t1]"}]
        assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
        assert events[-2][1]["usage"]["input_tokens"] == 1234
        history.append({"role": "assistant", "content": [{"type": "text", "text": "all good [t1]"}]})
        history.append(a_user("more"))
        _, body = post(url, {"messages": history})
        assert anthropic_blocks(sse(body))[0]["text"] == "done [t2]"
        # longest matching key wins; unknown prompts use default
        _, body = post(url, {"messages": [a_user("job-2")]})
        assert anthropic_blocks(sse(body))[0]["text"] == "shorter key [t0]"
        _, body = post(url, {"messages": [a_user("hello")]})
        assert anthropic_blocks(sse(body))[0]["text"] == "from default [t0]"
        served = [r["served"] for r in srv.requests()]
    assert served == [{"kind": "turn", "script": "job-1", "turn": 0},
                      {"kind": "turn", "script": "job-1", "turn": 1},
                      {"kind": "exhausted", "script": "job-1", "turn": 2},
                      {"kind": "turn", "script": "job", "turn": 0},
                      {"kind": "turn", "script": fakebase.DEFAULT_KEY, "turn": 0}]


def test_anthropic_compaction_and_resume(tmp_path):
    with FakeAnthropic(A_SCRIPT, tmp_path / "log.jsonl") as srv:
        url = srv.url + "/v1/messages"
        history = [a_user("job-1 now"),
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_t0_ab",
                                                      "name": "Bash", "input": {}}]},
                   {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": "toolu_t0_ab", "content": "ok"},
                       {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY.\n\nYour task is "
                                                "to create a detailed summary of the conversation "
                                                "so far"}]}]
        _, body = post(url, {"messages": history})
        summary = anthropic_blocks(sse(body))[0]["text"]
        assert "[fake-summary script=job-1 turns_done=1]" in summary
        after = [{"role": "user", "content": "This session is being continued ... Summary:\n"
                                             + summary},
                 a_user("go on")]
        _, body = post(url, {"messages": after})
        assert anthropic_blocks(sse(body))[0]["text"] == "all good [t1]"
        assert [r["served"]["kind"] for r in srv.requests()] == ["compact", "turn"]


def test_anthropic_other_endpoints_and_errors(tmp_path):
    script = {"default": [{"error": {"status": 529, "type": "overloaded_error"}}]}
    with FakeAnthropic(script, tmp_path / "log.jsonl") as srv:
        status, body = post(srv.url + "/v1/messages/count_tokens?beta=true", {"messages": []})
        assert status == 200 and json.loads(body)["input_tokens"] > 0
        with urllib.request.urlopen(srv.url + "/", timeout=5) as r:
            assert r.status == 200
        req = urllib.request.Request(srv.url + "/v1/models", method="HEAD")
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 200
        try:
            post(srv.url + "/v1/messages", {"messages": [a_user("x")]})
            raise AssertionError("expected HTTP 529")
        except urllib.error.HTTPError as exc:
            assert exc.code == 529
            assert json.loads(exc.read())["error"]["type"] == "overloaded_error"
        log = [json.loads(line) for line in Path(srv.log_path).read_text().splitlines()]
        assert [e["served"]["kind"] for e in log] == ["count_tokens", "other", "other", "turn"]
        assert len(srv.requests()) == 1


# ---- OpenAI -----------------------------------------------------------------
def o_user(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


O_TOOLS = [{"type": "function", "name": "exec_command"},
           {"type": "custom", "name": "apply_patch"},
           {"type": "namespace", "name": "multi_agent_v1",
            "tools": [{"type": "function", "name": "spawn_agent"},
                      {"type": "function", "name": "wait_agent"}]}]
O_SCRIPT = {"scripts": {
    "job-1": [{"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "ls"}},
                              {"name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"}],
               "input_tokens": 200000},
              {"tool_calls": [{"name": "spawn_agent", "arguments": {"message": "SUB: x"}}]},
              {"tool_calls": [{"name": "wait_agent", "arguments": {"targets": ["$agent"]}}]},
              {"text": "fin"}]}}


def openai_items(events):
    names = [e for e, _ in events]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    done = [d["item"] for e, d in events if e == "response.output_item.done"]
    assert done == events[-1][1]["response"]["output"]
    return done, events[-1][1]["response"]["usage"]


def test_openai_tool_shapes_and_agents(tmp_path):
    env_ctx = o_user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>")
    with FakeOpenAI(O_SCRIPT, tmp_path / "log.jsonl") as srv:
        url = srv.url + "/v1/responses"
        hist = [env_ctx, o_user("do job-1")]
        _, body = post(url, {"input": hist, "tools": O_TOOLS})
        events = sse(body)
        items, usage = openai_items(events)
        assert [i["type"] for i in items] == ["function_call", "custom_tool_call"]
        assert json.loads(items[0]["arguments"]) == {"cmd": "ls"}
        assert items[0]["call_id"].startswith("call_t0_")
        assert items[1]["input"].startswith("*** Begin Patch")
        assert "response.function_call_arguments.done" in [e for e, _ in events]
        assert "response.custom_tool_call_input.done" in [e for e, _ in events]
        assert usage["input_tokens"] == 200000 and usage["total_tokens"] == 200010
        # apply_patch offered as a function: answered as a function call
        _, body = post(url, {"input": hist, "tools": [{"type": "function", "name": "apply_patch"}]})
        fn = openai_items(sse(body))[0][1]
        assert fn["type"] == "function_call" and json.loads(fn["arguments"])["input"].startswith("***")
        hist += items + [{"type": "function_call_output", "call_id": items[0]["call_id"],
                          "output": "x"}]
        _, body = post(url, {"input": hist, "tools": O_TOOLS})
        spawn = openai_items(sse(body))[0][0]
        assert spawn["name"] == "spawn_agent" and spawn["namespace"] == "multi_agent_v1"
        hist += [spawn, {"type": "function_call_output", "call_id": spawn["call_id"],
                         "output": '{"agent_id":"agent-42","nickname":"N"}'}]
        _, body = post(url, {"input": hist, "tools": []})   # namespace deferred
        wait = openai_items(sse(body))[0][0]
        assert wait["namespace"] == "multi_agent_v1"
        assert json.loads(wait["arguments"]) == {"targets": ["agent-42"]}
        hist += [wait, {"type": "function_call_output", "call_id": wait["call_id"],
                        "output": '{"status": {"agent-42": {"completed": "sub done [t9]"}}}'},
                 o_user("<subagent_notification>sub done [t9]</subagent_notification>")]
        _, body = post(url, {"input": hist, "tools": O_TOOLS})
        msg = openai_items(sse(body))[0][0]
        assert msg["type"] == "message" and msg["content"][0]["text"] == "fin [t3]"


def test_openai_compaction(tmp_path):
    with FakeOpenAI(O_SCRIPT, tmp_path / "log.jsonl") as srv:
        url = srv.url + "/v1/responses"
        hist = [o_user("do job-1"),
                {"type": "function_call", "name": "exec_command", "arguments": "{}",
                 "call_id": "call_t0_aa"},
                {"type": "function_call_output", "call_id": "call_t0_aa", "output": "ok"},
                o_user("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff "
                       "summary")]
        meta = json.dumps({"request_kind": "compaction"})
        _, body = post(url, {"input": hist, "tools": []}, {"x-codex-turn-metadata": meta})
        text = openai_items(sse(body))[0][0]["content"][0]["text"]
        assert "[fake-summary script=job-1 turns_done=1]" in text
        # header alone is enough
        _, body = post(url, {"input": hist[:3]}, {"x-codex-turn-metadata": meta})
        assert "fake-summary" in openai_items(sse(body))[0][0]["content"][0]["text"]
        after = [o_user("do job-1"), o_user("Another language model started ...\n" + text)]
        _, body = post(url, {"input": after, "tools": O_TOOLS})
        item = openai_items(sse(body))[0][0]
        assert item["name"] == "spawn_agent" and item["call_id"].startswith("call_t1_")
        assert [r["served"]["kind"] for r in srv.requests()] == ["compact", "compact", "turn"]


# ---- lifecycle ----------------------------------------------------------------
def test_delay_and_stop_are_prompt(tmp_path):
    srv = FakeAnthropic({"default": [{"text": "slow", "delay": 600}]}, tmp_path / "l.jsonl")
    srv.start()
    errors = []

    def call():
        try:
            post(srv.url + "/v1/messages", {"messages": [a_user("x")]}, timeout=30)
        except Exception as exc:  # the server drops the connection on stop
            errors.append(exc)

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.monotonic() + 120  # a wait, not a bound: it ends at the request
    while not srv.requests() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.requests()[0]["served"]["turn"] == 0  # logged before the delay
    t0 = time.monotonic()
    srv.stop()
    t.join(120)
    # the call ended long before its turn's delay would have: stop cut it
    assert not t.is_alive() and time.monotonic() - t0 < 300


def test_subprocess_mode(tmp_path):
    for mod, path in ((fake_anthropic, "/v1/messages"), (fake_openai, "/v1/responses")):
        log = tmp_path / ("%s.jsonl" % mod.__name__)
        url, stop = mod.start_in_subprocess({"default": [{"text": "hi"}]}, log)
        try:
            status, body = post(url + path, {"messages": [a_user("x")], "input": [o_user("x")]})
            assert status == 200 and "hi [t0]" in body
            line = json.loads(log.read_text().splitlines()[0])
            assert line["path"] == path and line["served"]["turn"] == 0
            assert line["body"]["input"][0]["role"] == "user"
        finally:
            stop()
        try:
            post(url + path, {}, timeout=2)
            raise AssertionError("server still answering after stop()")
        except OSError:
            pass


def test_script_from_file_and_json_text(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"default": [{"text": "file"}]}))
    assert fakebase.load_script(str(p))["default"][0]["text"] == "file"
    assert fakebase.load_script(p)["scripts"] == {}
    assert fakebase.load_script('{"scripts": {"k": []}}')["default"] == []


def test_no_leftover_threads_or_children():
    # every server above was stopped: no serving thread is left in this process
    assert not [t for t in threading.enumerate() if t.name.endswith("-server")]
    # and no fake server child process of ours is alive
    kids = [rig.cmdline(p) for p in rig.descendants(os.getpid())]
    assert not [c for c in kids if "fake_anthropic" in c or "fake_openai" in c]
