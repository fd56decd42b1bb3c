"""Fake Anthropic Messages API for driving the real Claude Code CLI offline.

Usage as a library::

    from fake_anthropic import FakeAnthropic
    with FakeAnthropic(script, log_path) as srv:
        ... ANTHROPIC_BASE_URL=srv.url ...
        srv.requests()          # logged model requests, oldest first

As a script: ``python tests/e2e/fake_anthropic.py --script s.json --log l.jsonl``
prints ``{"url": ..., "log": ..., "pid": ...}`` and serves until SIGTERM/SIGINT.

Endpoints: ``POST /v1/messages[?beta=true]`` answers a scripted turn as an SSE
stream (message_start, ping, content_block_start/delta/stop per block,
message_delta with stop_reason + usage, message_stop), sent in one piece with a
Content-Length.  ``POST /v1/messages/count_tokens`` answers a token count;
anything else gets ``200 {}``.

Turns (see fakebase for the common keys)::

    {"text": "hello"}
    {"tool_calls": [{"name": "Bash", "input": {"command": "touch x", "description": "t"}}]}
    {"tool_calls": [{"name": "Write", "input": {"file_path": "/abs/f.txt", "content": "hi\\n"}}]}
    {"tool_calls": [{"name": "Edit", "input": {"file_path": "/abs/f.txt",
                     "old_string": "hi", "new_string": "ho"}}]}
    {"tool_calls": [{"name": "Agent", "input": {"description": "sub task",
                     "prompt": "SUBTASK_1: ...", "subagent_type": "general-purpose"}}]}

A subagent's requests start a new conversation whose first user prompt is the
``Agent`` prompt, so give it its own script keyed by a substring of that prompt
(stamps are read only from assistant messages, so the subagent's stamped answer
coming back inside a tool_result/notification does not move the main script).
Claude 2.1.332 runs ``Agent`` in the background even with ``-p``: the main
thread gets "Async agent launched" at once and makes its next request; when
the subagent ends, one more main request carries a ``<task-notification>``, so
script one extra main turn for it.  A tool call may carry ``"id"`` to fix its
tool_use id (keep the ``toolu_t<N>_`` stamp).  Claude retries 5xx/529 answers
itself; a retry is the same request, so a scripted ``error`` turn repeats.

Compaction (observed with 2.1.332): ``claude -p "/compact" --continue`` sends one
ordinary streaming ``/v1/messages`` request with the same tools as any turn,
holding the previous conversation **minus its final assistant text**, whose
last user message ends with a text block "CRITICAL: Respond with TEXT ONLY. ...
Your task is to create a detailed summary of the conversation so far ...".  We
detect it by that text and answer ``<analysis>fake</analysis><summary>...
[fake-summary script=KEY turns_done=N]</summary>`` (KEY percent-encoded).
Claude then starts the history with a user message "This session is being
continued from a previous conversation ... <summary>" followed by a verbatim
tail of recent messages, so later requests carry both the marker and the
latest stamps, and the script resumes at max(turns_done, last stamp + 1).
"""

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

try:  # imported as part of the e2e package
    from .fakebase import Choice, FakeServer, new_hex, serve_main, start_subprocess
except ImportError:  # run as a script, or imported with tests/e2e on sys.path
    _HERE = str(Path(__file__).resolve().parent)
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    from fakebase import (Choice, FakeServer, new_hex, serve_main,  # noqa: E402
                          start_subprocess)

COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "Your task is to create a detailed summary",
)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(block.get("text", ""))
                elif block.get("type") == "tool_result":
                    parts.append(_content_text(block.get("content")))
    return "\n".join(parts)


def _sse(event: str, data: dict) -> str:
    return "event: %s\ndata: %s\n\n" % (event, json.dumps(data))


class FakeAnthropic(FakeServer):
    name = "fake-anthropic"

    # ---- request analysis -------------------------------------------------
    @staticmethod
    def analyse(body: dict):
        messages = body.get("messages") or []
        first_prompt = ""
        for m in messages:
            if m.get("role") == "user":
                first_prompt = _content_text(m.get("content"))
                break
        assistant = [json.dumps(m.get("content"), ensure_ascii=False)
                     for m in messages if m.get("role") == "assistant"]
        every = [json.dumps(m.get("content"), ensure_ascii=False) for m in messages]
        last_user = ""
        for m in reversed(messages):
            if m.get("role") == "user":
                last_user = _content_text(m.get("content"))
                break
        compaction = any(k in last_user for k in COMPACT_MARKERS)
        return first_prompt, assistant, every, compaction

    # ---- answers ----------------------------------------------------------
    def respond(self, method: str, path: str, headers: Dict[str, str], body: Any):
        p = path.split("?")[0].rstrip("/")
        if method == "POST" and p.endswith("/messages/count_tokens"):
            return self._json(200, {"input_tokens": 1000}, {"kind": "count_tokens"})
        if method == "POST" and p.endswith("/v1/messages") and isinstance(body, dict):
            first, assistant, every, compaction = self.analyse(body)
            choice = self.choose(first, assistant, every, compaction)
            served = choice.as_log()
            turn = choice.turn or {}
            delay = float(turn.get("delay") or 0)
            err = turn.get("error")
            if err:
                served["error"] = err
                status = int(err.get("status", 500))
                return (status, {"Content-Type": "application/json"},
                        json.dumps({"type": "error", "error": {
                            "type": err.get("type", "api_error"),
                            "message": err.get("message", "scripted error")}}).encode(),
                        served, delay)
            payload = self.stream(choice, body.get("model") or "claude-fake")
            return (200, {"Content-Type": "text/event-stream",
                          "Cache-Control": "no-cache"}, payload.encode(), served, delay)
        return self._json(200, {}, {"kind": "other"})

    @staticmethod
    def _json(status: int, obj: dict, served: dict):
        return (status, {"Content-Type": "application/json"},
                json.dumps(obj).encode(), served, 0)

    def blocks_for(self, choice: Choice) -> List[dict]:
        n = choice.turn_index
        stamp = " [t%d]" % n
        if choice.kind == "compact":
            return [{"type": "text", "text": self.summary_text(choice)}]
        if choice.kind == "exhausted":
            return [{"type": "text", "text": "done" + stamp}]
        turn = choice.turn or {}
        blocks = []
        calls = turn.get("tool_calls") or []
        if turn.get("text") is not None or not calls:
            blocks.append({"type": "text", "text": str(turn.get("text", "")) + stamp})
        for call in calls:
            blocks.append({"type": "tool_use",
                           "id": call.get("id") or "toolu_t%d_%s" % (n, new_hex(20)),
                           "name": call["name"],
                           "input": call.get("input") or {}})
        return blocks

    def stream(self, choice: Choice, model: str) -> str:
        turn = choice.turn or {}
        blocks = self.blocks_for(choice)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        in_tok = int(turn.get("input_tokens", 100))
        out_tok = int(turn.get("output_tokens", 10))
        out = [_sse("message_start", {"type": "message_start", "message": {
            "id": "msg_t%d_%s" % (choice.turn_index, new_hex(20)), "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": in_tok, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
            _sse("ping", {"type": "ping"})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                out.append(_sse("content_block_start", {
                    "type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}))
                out.append(_sse("content_block_delta", {
                    "type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": b["text"]}}))
            else:
                out.append(_sse("content_block_start", {
                    "type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": b["id"],
                                      "name": b["name"], "input": {}}}))
                out.append(_sse("content_block_delta", {
                    "type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta",
                              "partial_json": json.dumps(b["input"])}}))
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
        out.append(_sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"input_tokens": in_tok, "output_tokens": out_tok}}))
        out.append(_sse("message_stop", {"type": "message_stop"}))
        return "".join(out)


def start_in_subprocess(script=None, log_path=None):
    """Start this server as a child process; returns (url, stop)."""
    return start_subprocess(__file__, script, log_path)


if __name__ == "__main__":
    sys.exit(serve_main(FakeAnthropic))
