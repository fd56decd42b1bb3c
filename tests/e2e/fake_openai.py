"""Fake OpenAI Responses API for driving the real Codex CLI offline.

Usage as a library::

    from fake_openai import FakeOpenAI
    with FakeOpenAI(script, log_path) as srv:
        ... base_url = srv.url + "/v1" in $CODEX_HOME/config.toml ...
        srv.requests()          # logged model requests, oldest first

As a script: ``python tests/e2e/fake_openai.py --script s.json --log l.jsonl``
prints ``{"url": ..., "log": ..., "pid": ...}`` and serves until SIGTERM/SIGINT.

Endpoints: ``POST /v1/responses`` answers a scripted turn as an SSE stream
(response.created, response.in_progress; per output item
response.output_item.added, then response.output_text.delta/done for a message,
response.function_call_arguments.delta/done for a function call or
response.custom_tool_call_input.delta/done for a freeform tool call, then
response.output_item.done; finally response.completed with usage), sent in one
piece with a Content-Length.  ``GET /v1/models`` answers an empty list, anything
else ``200 {}``.

Turns (see fakebase for the common keys)::

    {"text": "hello"}
    {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "touch x"}}]}
    {"tool_calls": [{"name": "apply_patch",
                     "input": "*** Begin Patch\\n*** Add File: a.txt\\n+hi\\n*** End Patch\\n"}]}
    {"tool_calls": [{"name": "spawn_agent", "arguments": {"message": "SUBTASK_1: ..."}}]}
    {"tool_calls": [{"name": "wait_agent", "arguments": {"targets": ["$agent"]}}]}
    {"input_tokens": 200000, "text": "big turn"}       # usage drives auto-compaction

Which tools Codex offers depends on the model name (its built-in metadata):
with ``gpt-5.5`` (rig's default) ``apply_patch`` is a **custom/freeform** tool
(``{"type": "custom", "format": {"type": "grammar", "syntax": "lark"}}``) and
the agent tools are deferred behind ``tool_search``; with an unknown name such
as ``fake-model`` there is no ``apply_patch`` at all and the agent tools are
listed inside ``{"type": "namespace", "name": "multi_agent_v1", "tools": [...]}``
(spawn_agent, wait_agent, send_input, close_agent, resume_agent).

``apply_patch`` is rendered the way the request's ``tools`` list offers it:
as a ``custom_tool_call`` (raw patch text in ``input``) when the tool is
``{"type": "custom"}``, else as a ``function_call`` with ``{"input": patch}``.
The agent tools must come back as a ``function_call`` with
``"namespace": "multi_agent_v1"`` (without it Codex answers "unsupported call:
spawn_agent"); we add it for them whether or not the namespace is listed
(``"namespace"`` on a call overrides).  ``"arguments"`` may be a dict
(JSON-encoded for you) or a string.  In any string argument ``$agent`` /
``$agents`` is replaced by the id(s) of the agent(s) spawned earlier in this
conversation (read back from the spawn_agent outputs in the request), so
``wait_agent`` can name them.  A subagent's requests carry the header
``x-openai-subagent: collab_spawn`` and start a fresh history whose first user
prompt is the spawn ``message``: key its script by a substring of that.

Compaction (observed with 0.171.0, ``model_auto_compact_token_limit`` small and a
turn reporting many ``input_tokens``): right after that turn's tool output
Codex sends a ``POST /v1/responses`` whose ``x-codex-turn-metadata`` header
says ``"request_kind":"compaction"`` (ordinary turns say ``"turn"``), with **no
tools**, ``parallel_tool_calls: false``, the whole history, and a last user
message "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff
summary ..." (either sign is enough for us).  We answer with a message holding
``[fake-summary script=KEY turns_done=N]``.  Codex replaces the history with
the environment context, the user prompts, and a user message "Another
language model started to solve this problem and produced a summary ...
<our text>", then carries on with the same turn: the next request has no
assistant stamps, so the marker is what tells the script where it is (without
it Codex replays turn 0, which reports many tokens again: an endless loop).
"""

import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

try:  # imported as part of the e2e package
    from .fakebase import Choice, FakeServer, new_hex, serve_main, start_subprocess
except ImportError:  # run as a script, or imported with tests/e2e on sys.path
    _HERE = str(Path(__file__).resolve().parent)
    if _HERE not in sys.path:
        sys.path.append(_HERE)
    from fakebase import (Choice, FakeServer, new_hex, serve_main,  # noqa: E402
                          start_subprocess)

COMPACT_MARKERS = ("CONTEXT CHECKPOINT COMPACTION",)
# user messages Codex injects itself; not "the first user prompt"
INJECTED_PREFIXES = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
                     "<permissions instructions>", "<skills_instructions>", "<INSTRUCTIONS>",
                     "<user_shell_command>", "<turn_aborted>", "<subagent_notification>")
DEFAULT_NAMESPACES = {n: "multi_agent_v1" for n in (
    "spawn_agent", "wait_agent", "send_input", "close_agent", "resume_agent")}
AGENT_ID_RE = re.compile(r'"agent_id"\s*:\s*"([^"]+)"')


def _item_text(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for c in content or []:
        if isinstance(c, dict) and isinstance(c.get("text"), str):
            parts.append(c["text"])
    return "\n".join(parts)


def _sse(data: dict) -> str:
    return "event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data))


class FakeOpenAI(FakeServer):
    name = "fake-openai"

    # ---- request analysis -------------------------------------------------
    @staticmethod
    def user_prompts(body: dict) -> List[str]:
        out = []
        for item in body.get("input") or []:
            if item.get("type", "message") == "message" and item.get("role") == "user":
                text = _item_text(item)
                if not text.lstrip().startswith(INJECTED_PREFIXES):
                    out.append(text)
        return out

    @classmethod
    def analyse(cls, body: dict, headers: Dict[str, str]):
        items = body.get("input") or []
        prompts = cls.user_prompts(body)
        first_prompt = prompts[0] if prompts else ""
        assistant = []
        for item in items:
            t = item.get("type", "message")
            if (t == "message" and item.get("role") == "assistant") or t in (
                    "function_call", "custom_tool_call", "local_shell_call"):
                assistant.append(json.dumps(item, ensure_ascii=False))
        every = [json.dumps(item, ensure_ascii=False) for item in items]
        compaction = False
        meta = headers.get("x-codex-turn-metadata") or headers.get("X-Codex-Turn-Metadata")
        if meta:
            try:
                kind = json.loads(meta).get("request_kind")
                compaction = kind in ("compaction", "compact")
            except ValueError:
                pass
        last_user = prompts[-1] if prompts else ""
        if any(m in last_user for m in COMPACT_MARKERS):
            compaction = True
        return first_prompt, assistant, every, compaction

    @staticmethod
    def spawned_agents(body: dict) -> List[str]:
        """Agent ids returned by spawn_agent calls earlier in this conversation."""
        spawn_ids = set()
        for item in body.get("input") or []:
            if item.get("type") == "function_call" and item.get("name") == "spawn_agent":
                spawn_ids.add(item.get("call_id"))
        ids = []
        for item in body.get("input") or []:
            if item.get("type") == "function_call_output" and item.get("call_id") in spawn_ids:
                out = item.get("output")
                text = out if isinstance(out, str) else json.dumps(out)
                for m in AGENT_ID_RE.finditer(text):
                    if m.group(1) not in ids:
                        ids.append(m.group(1))
        return ids

    @staticmethod
    def namespace_of(body: dict, name: str) -> Optional[str]:
        """The namespace tool offering `name`, if any (multi_agent_v1 for the
        agent tools even when Codex defers them behind tool_search)."""
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace":
                for sub in tool.get("tools") or []:
                    if sub.get("name") == name:
                        return tool.get("name")
        return DEFAULT_NAMESPACES.get(name)

    @staticmethod
    def tool_kind(body: dict, name: str) -> Optional[str]:
        for tool in body.get("tools") or []:
            if tool.get("name") == name:
                return tool.get("type")
        return None

    # ---- answers ----------------------------------------------------------
    def respond(self, method: str, path: str, headers: Dict[str, str], body: Any):
        p = path.split("?")[0].rstrip("/")
        if method == "POST" and p.endswith("/responses") and isinstance(body, dict):
            hdrs = {k.lower(): v for k, v in headers.items()}
            first, assistant, every, compaction = self.analyse(body, hdrs)
            choice = self.choose(first, assistant, every, compaction)
            served = choice.as_log()
            turn = choice.turn or {}
            delay = float(turn.get("delay") or 0)
            err = turn.get("error")
            if err:
                served["error"] = err
                return (int(err.get("status", 500)), {"Content-Type": "application/json"},
                        json.dumps({"error": {"type": err.get("type", "server_error"),
                                              "message": err.get("message", "scripted error"),
                                              "code": None}}).encode(), served, delay)
            payload = self.stream(choice, body)
            return (200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
                    payload.encode(), served, delay)
        if method == "GET" and p.endswith("/models"):
            return (200, {"Content-Type": "application/json"},
                    json.dumps({"object": "list", "data": [], "models": []}).encode(),
                    {"kind": "other"}, 0)
        return (200, {"Content-Type": "application/json"}, b"{}", {"kind": "other"}, 0)

    def items_for(self, choice: Choice, body: dict) -> List[dict]:
        n = choice.turn_index
        stamp = " [t%d]" % n
        if choice.kind == "compact":
            texts, calls = [self.summary_text(choice)], []
        elif choice.kind == "exhausted":
            texts, calls = ["done" + stamp], []
        else:
            turn = choice.turn or {}
            calls = turn.get("tool_calls") or []
            texts = []
            if turn.get("text") is not None or not calls:
                texts.append(str(turn.get("text", "")) + stamp)
        agents = self.spawned_agents(body) if calls else []
        items = []
        for text in texts:
            items.append({"type": "message", "id": "msg_t%d_%s" % (n, new_hex()),
                          "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": text,
                                       "annotations": []}]})
        for call in calls:
            name = call["name"]
            call_id = call.get("call_id") or "call_t%d_%s" % (n, new_hex())
            if "input" in call and not isinstance(call.get("input"), dict):
                raw_input = str(call["input"])
            else:
                raw_input = None
            kind = self.tool_kind(body, name)
            if raw_input is not None and kind == "custom":
                items.append({"type": "custom_tool_call", "id": "ctc_t%d_%s" % (n, new_hex()),
                              "status": "completed", "call_id": call_id, "name": name,
                              "input": self._subst(raw_input, agents)})
                continue
            args = call.get("arguments")
            if args is None:
                args = {"input": raw_input} if raw_input is not None else (call.get("input") or {})
            args_text = args if isinstance(args, str) else json.dumps(args)
            item = {"type": "function_call", "id": "fc_t%d_%s" % (n, new_hex()),
                    "status": "completed", "call_id": call_id, "name": name,
                    "arguments": self._subst(args_text, agents)}
            namespace = call.get("namespace", self.namespace_of(body, name))
            if namespace:
                item["namespace"] = namespace
            items.append(item)
        return items

    @staticmethod
    def _subst(text: str, agents: List[str]) -> str:
        if "$agent" not in text:
            return text
        text = text.replace('"$agents"', json.dumps(agents))
        text = text.replace("$agents", ",".join(agents))
        return text.replace("$agent", agents[-1] if agents else "")

    def stream(self, choice: Choice, body: dict) -> str:
        turn = choice.turn or {}
        rid = "resp_t%d_%s" % (choice.turn_index, new_hex())
        model = body.get("model") or "fake-model"
        items = self.items_for(choice, body)
        in_tok = int(turn.get("input_tokens", 100))
        out_tok = int(turn.get("output_tokens", 10))
        base = {"id": rid, "object": "response", "created_at": 0, "model": model,
                "status": "in_progress", "output": []}
        seq = [0]

        def ev(data):
            data["sequence_number"] = seq[0]
            seq[0] += 1
            return _sse(data)

        out = [ev({"type": "response.created", "response": dict(base)}),
               ev({"type": "response.in_progress", "response": dict(base)})]
        for i, item in enumerate(items):
            start = dict(item)
            if item["type"] == "message":
                start["content"] = []
                start["status"] = "in_progress"
            elif item["type"] == "function_call":
                start["arguments"] = ""
                start["status"] = "in_progress"
            elif item["type"] == "custom_tool_call":
                start["input"] = ""
                start["status"] = "in_progress"
            out.append(ev({"type": "response.output_item.added", "output_index": i,
                           "item": start}))
            if item["type"] == "message":
                text = item["content"][0]["text"]
                out.append(ev({"type": "response.content_part.added", "item_id": item["id"],
                               "output_index": i, "content_index": 0,
                               "part": {"type": "output_text", "text": "", "annotations": []}}))
                out.append(ev({"type": "response.output_text.delta", "item_id": item["id"],
                               "output_index": i, "content_index": 0, "delta": text}))
                out.append(ev({"type": "response.output_text.done", "item_id": item["id"],
                               "output_index": i, "content_index": 0, "text": text}))
                out.append(ev({"type": "response.content_part.done", "item_id": item["id"],
                               "output_index": i, "content_index": 0,
                               "part": item["content"][0]}))
            elif item["type"] == "function_call":
                out.append(ev({"type": "response.function_call_arguments.delta",
                               "item_id": item["id"], "output_index": i,
                               "delta": item["arguments"]}))
                out.append(ev({"type": "response.function_call_arguments.done",
                               "item_id": item["id"], "output_index": i,
                               "arguments": item["arguments"]}))
            elif item["type"] == "custom_tool_call":
                out.append(ev({"type": "response.custom_tool_call_input.delta",
                               "item_id": item["id"], "output_index": i,
                               "delta": item["input"]}))
                out.append(ev({"type": "response.custom_tool_call_input.done",
                               "item_id": item["id"], "output_index": i,
                               "input": item["input"]}))
            out.append(ev({"type": "response.output_item.done", "output_index": i,
                           "item": item}))
        done = dict(base)
        done.update({"status": "completed", "output": items, "usage": {
            "input_tokens": in_tok, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out_tok, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": in_tok + out_tok}})
        out.append(ev({"type": "response.completed", "response": done}))
        return "".join(out)


def start_in_subprocess(script=None, log_path=None):
    """Start this server as a child process; returns (url, stop)."""
    return start_subprocess(__file__, script, log_path)


if __name__ == "__main__":
    sys.exit(serve_main(FakeOpenAI))
