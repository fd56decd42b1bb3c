"""End-to-end rig: drive the real Claude Code and Codex CLIs against local fake
model servers (stdlib only, Python 3.9+; pytest only for require_binary).

Pinned clients: ``npm install --prefix .e2e @anthropic-ai/claude-code@2.1.332
@openai/codex@0.171.0`` (REPO/.e2e is git-ignored).  The binaries are looked up
in $NOTREST_E2E_BIN or REPO/.e2e/node_modules/.bin; when absent the tests skip
with one line, or fail when $CI is set.

Quick start (pytest; fixtures in conftest.py)::

    def test_x(e2e):                                   # or (e2e, client) for both
        env = e2e("codex", {"scripts": {"my-task": [
            tool_turn(shell_call("codex", "touch a.txt")), text_turn("done")]}})
        env.write_hooks({"PreToolUse": [hook_entry(env.recorder(), matcher="Bash")]})
        res = env.run("my-task: go", timeout=60).check()
        assert env.hook_payloads("PreToolUse")[0]["tool_input"]["command"] == "touch a.txt"
        assert "a.txt" in env.request_texts()[1]

API
---
run_claude(project, home, prompt, base_url, *, extra_args=(), env=None,
           timeout=120, kill_after=None, kill_when=None, reap_strays=True, wrap=())
    ``claude -p PROMPT --output-format stream-json --verbose
    --dangerously-skip-permissions [extra_args]`` in project, stdin /dev/null,
    env: HOME=home, IS_SANDBOX=1, ANTHROPIC_BASE_URL=base_url (a trailing /v1 is
    dropped), ANTHROPIC_API_KEY=sk-test, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1,
    DISABLE_TELEMETRY=1, DISABLE_AUTOUPDATER=1, TMPDIR=home/.tmp, plus ``env``
    (a value None removes a variable).  ``extra_args=["--continue"]`` resumes.
run_codex(project, home, prompt, base_url, *, resume=False, extra_args=(),
          env=None, timeout=120, kill_after=None, kill_when=None,
          model="gpt-5.5", config_top="", config_tables="", write_config=True,
          reap_strays=True, wrap=())
    Writes $CODEX_HOME/config.toml (CODEX_HOME = env["CODEX_HOME"] or
    home/.codex; see codex_config_text: model, model_provider "fake" at
    base_url/v1 with env_key FAKE_KEY, wire_api responses, request/stream
    retries 0, approval never, danger-full-access, project trusted;
    ``config_top`` = extra top-level TOML such as
    ``model_auto_compact_token_limit = 5000``, ``config_tables`` = extra
    tables such as ``[hooks]``), then runs ``codex exec --skip-git-repo-check
    --dangerously-bypass-hook-trust --json -C PROJECT [extra_args] PROMPT``,
    or with resume=True ``codex exec resume --last ... PROMPT`` (cwd = project).
run_process(client, argv, cwd, env, *, timeout, kill_after, kill_when, reap_strays)
    The common runner.  Own process group (start_new_session), stdout/stderr
    to temp files, every process tagged with $NOTREST_E2E_RUN=<marker>.
    ``kill_after`` seconds or ``kill_when()`` true (polled every 50 ms):
    SIGKILL the client's process group, as when the client dies.  ``timeout``:
    kill group and all descendants, ``timed_out=True``.  Afterwards processes
    still alive in the group or carrying the marker are listed in ``strays`` /
    ``stray_cmds`` and killed (``reap_strays=False``: left alone; call
    ``reap(marker)`` yourself; E2EEnv.close() reaps every run anyway).
RunResult: client, argv, returncode, stdout, stderr, events (parsed JSON lines
    of stdout), duration, killed, timed_out, strays, stray_cmds, marker, pid;
    ``ok``; ``check()`` (raise with output tails unless ok; returns self);
    ``final_text()`` (Claude ``result`` event / Codex last ``agent_message``).
Processes: marked_processes(marker), group_members(pgid), descendants(pid),
    reap(marker), kill_tree(proc, marker), cmdline(pid).
Binaries: bin_dir(), find_binary(name), require_binary(name); CLAUDE_VERSION,
    CODEX_VERSION.
Codex config: codex_config_text(base_url, project, *, model, top, tables),
    write_codex_config(codex_home, base_url, project, **same).
E2EEnv(client, root, script=None): git_project(root/project) (git init -b main,
    README.md, one commit), home=root/home, codex_home=home/.codex,
    tmpdir=root/tmp, server = make_server(client, script, root/requests.jsonl)
    started.  .url, .set_script(s), .requests(model_only=True) (logged lines:
    ts, method, path, headers, body, served={kind, script, turn}),
    .request_texts() (bodies as JSON strings), .run(prompt, resume=False, **kw)
    (run_claude/run_codex; resume works for both), .write_hooks(hooks,
    scope="project"|"local"|"user"), .hooks_file(scope), .write_script(name,
    body) (executable sh in root/bin), .recorder(then="") (a hook command that
    saves its stdin to root/hook-payloads/<ns>-<pid>.json, then runs sh ``then``
    with "$payload" set; its stdout is the hook's answer), .hook_payloads(event=None),
    .close().
Helpers: hook_entry(command, matcher=None, timeout=30) -> one element of an
    event's list; shell_call(client, cmd) -> Bash / exec_command call;
    tool_turn(*calls, **extra); text_turn(text, **extra); sh_quote(s).
Plugins: plugin_source(dest) copies the repository as a clean marketplace folder;
    install_plugin(client, home, source, codex_home=None) installs notrest with
    the client's own plugin commands (claude plugin marketplace add / install,
    codex plugin marketplace add / add).
Trust: run_codex(..., bypass_hook_trust=False) runs without
    --dangerously-bypass-hook-trust; trust_project=False writes a config that
    does not trust the project.
notrest: install_notrest(project, home, clients="both", codex_home=None) runs
    ``sh REPO/install.sh --client CLIENTS PROJECT`` as a user would (raises
    unless it exits 0); read_journal(path) -> records (notrest.read_records);
    session_id(result) -> the session id the client printed.
TUI: run_claude_tui(project, home, prompt, base_url, width=120) -> the screen
    text of Claude Code's interactive TUI in a detached tmux pane after the
    prompt's turn (what a person sees; needs tmux).
Hook timing as the client reports it: client_hook_times(result) -> [(event,
    ms)], from Claude's ``--debug-file`` ("Hooks: EVENT[:matcher] [cmd] finished
    with status N (Mms)") or Codex's stderr with ``RUST_LOG=CODEX_HOOK_LOG``
    (hook/started -> hook/completed, named by the codex.hooks.command span);
    claude_hook_times(text), codex_hook_times(text).  Neither client times
    SessionEnd hooks.  ``wrap=[...]`` on run_claude/run_codex prepends a parent
    command (test_scenarios uses a parent sh to leave a killed client a zombie).
Fixtures (conftest.py): ``e2e`` -> factory ``e2e(client, script=None,
    name=None) -> E2EEnv`` under tmp_path (require_binary first; all envs
    closed at teardown, pass or fail); ``client`` -> parametrised "claude"/"codex".
    tests/e2e is a package (__init__.py) so that its conftest is imported as
    ``e2e.conftest`` and never shadows tests/conftest.py (tests/test_hooks.py
    does ``from conftest import ...``); this folder is appended to sys.path.

Script format (fakebase.py has the details)
-------------------------------------------
``{"scripts": {"<substring of the first user prompt>": [turn, ...]}, "default": [...]}``;
a turn is ``{"text": ...}`` and/or ``{"tool_calls": [...]}`` with optional
``delay`` (s), ``input_tokens``, ``output_tokens``, ``error``
({"status": 529, "type": ..., "message": ...}).  Next turn = highest stamp in
the assistant part of the request + 1 (or ``turns_done`` from a fake
compaction summary); past the end: "done [tN]".  Claude calls::

    {"name": "Bash",  "input": {"command": "make test", "description": "run tests"}}
    {"name": "Write", "input": {"file_path": "/abs/notes.txt", "content": "alpha\\n"}}
    {"name": "Edit",  "input": {"file_path": "/abs/notes.txt", "old_string": "alpha",
                                "new_string": "beta"}}
    {"name": "Agent", "input": {"description": "sub task", "prompt": "SUBTASK-1: ...",
                                "subagent_type": "general-purpose"}}
      + a script keyed "SUBTASK-1" for the subagent, and one extra main turn
        for the <task-notification> request that follows its end.

Codex calls::

    {"name": "exec_command", "arguments": {"cmd": "make test"}}
    {"name": "apply_patch", "input": "*** Begin Patch\\n*** Add File: a.txt\\n+hi\\n"
                                     "*** Update File: b.txt\\n@@\\n-old\\n+new\\n*** End Patch\\n"}
    {"name": "spawn_agent", "arguments": {"message": "SUBTASK-1: ..."}}
    {"name": "wait_agent",  "arguments": {"targets": ["$agent"]}}   # id substituted
      + a script keyed "SUBTASK-1"; always wait_agent before the main turn
        ends (codex exec kills running subagents when the main turn ends).
    auto-compaction: config_top="model_auto_compact_token_limit = 5000" and a
    turn with "input_tokens": 200000.

Compaction detection: Claude: last user message contains "Your task is to
create a detailed summary of the conversation so far" (sent by
``claude -p "/compact" --continue``).  Codex: header x-codex-turn-metadata
``"request_kind": "compaction"`` or a last user message "You are performing a
CONTEXT CHECKPOINT COMPACTION".  Both answered with
``[fake-summary script=KEY turns_done=N]``; details in fake_anthropic.py /
fake_openai.py.

Observed with these versions (surprises vs clients.md, which was written
against Claude Code 2.1.197)
--------------------------------------------------------------------------
Both clients
* Tool commands are NOT in the client's process group: after SIGKILL of the
  group, Claude leaves its ``/bin/bash -c source ~/.claude/shell-snapshots/...
  eval '<cmd>'`` wrapper and the command running, Codex the command (it runs in
  a PTY, its own session).  The rig finds them by the inherited marker
  variable.  A "client died" test must expect orphaned tool commands.
* Both start in ~0.5 s against the fake; a whole scripted session is < 1 s.
* SessionStart plain stdout (not only additionalContext) reaches the model;
  user-level and project-level hooks both run.
Claude Code 2.1.332
* ``messages`` holds ``{"role": "system"}`` entries (environment, deferred-tool
  list, agent types) after the first user message, and the first user message
  starts with <system-reminder> text blocks (git status, attribution) before
  the prompt.  Default model claude-opus-5-5.  Only POST /v1/messages?beta=true
  was called (no count_tokens, no probes).
* API tools: Agent, Bash, Edit, ListAgents, Read, ReportFindings,
  ScheduleWakeup, Skill, ToolSearch, Workflow, DeferredToolPlaceholder, Write
  (NotebookEdit, WebFetch, Monitor... deferred behind ToolSearch); the
  stream-json ``init`` event still calls the agent tool "Task".
* ``Agent`` runs asynchronously even with -p: tool_result "Async agent launched
  successfully ... agentId: ..."; the main thread answers at once (Stop hook
  fires), the subagent runs, then a ``<task-notification>`` user message brings
  one more main request (Stop fires again).  -p waits for the subagent.
* The Bash tool refuses a command that starts with a long ``sleep`` ("Blocked:
  sleep 300 followed by: ... use Monitor / run_in_background"): tests needing a
  long-running command must use something else.
* /compact: SessionStart fires twice in that run (``resume``, then
  ``compact``), PreCompact/PostCompact trigger "manual"; the summarisation
  request keeps all tools and omits the session's final assistant text.
* Writes ``$TMPDIR/claude-<hex>-cwd`` and ``$TMPDIR/claude-<uid>/<project>/``
  (default /tmp): the rig sets TMPDIR inside the test tree.
* npm 11 says the package's postinstall "is not covered by allowScripts" and
  warns about node < 22 (EBADENGINE); the native binary works anyway.
Codex 0.171.0
* The tool set depends on the model name: ``gpt-5.5`` gets apply_patch (a
  freeform ``custom`` tool) and defers the agent tools behind ``tool_search``;
  an unknown name (``fake-model``) gets no apply_patch at all, lists the agent
  tools in a ``namespace`` tool ``multi_agent_v1``, and prints "Model metadata
  for `fake-model` not found".  The rig uses gpt-5.5.
* Agent tool calls need ``"namespace": "multi_agent_v1"`` on the function_call
  item, else "unsupported call: spawn_agent".  Hooks then see tool_name
  ``spawn_agent`` but ``multi_agent_v1wait_agent`` (namespace glued on).
* ``--json`` reports the hook-trust bypass as two ``{"type": "error"}`` items;
  stderr always says "Reading additional input from stdin..." (stdin is
  /dev/null, harmless).
* With CODEX_HOME under the temp dir (e.g. pytest's /tmp tree and the default
  TMPDIR) Codex warns "Refusing to create helper binaries under temporary dir"
  and skips its PATH aliases; the rig points TMPDIR elsewhere.
* The heredoc form ``apply_patch <<'EOF' ... EOF`` through exec_command works
  too (reported as a ``file_change`` item).
* Auto-compaction: PreCompact/PostCompact trigger "auto", then SessionStart
  ``source: compact``, all inside the same turn; see fake_openai.py for the
  request.  Subagent requests carry header ``x-openai-subagent: collab_spawn``.
* ``codex exec resume --last`` (cwd = project) gives SessionStart ``resume``
  with the same session_id; the old history is sent again.
"""

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

REPO = Path(__file__).resolve().parents[2]
CLAUDE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
MARKER_VAR = "NOTREST_E2E_RUN"

# variables of a surrounding coding client / model SDK that must not leak into
# the client under test
_SCRUB_PREFIXES = ("ANTHROPIC_", "CLAUDE", "CODEX_", "OPENAI_", "OTEL_", "MCP_",
                   "AWS_BEARER_TOKEN_BEDROCK", "GEMINI_")
_SCRUB_EXACT = {MARKER_VAR, "CLAUDECODE", "IS_SANDBOX", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER",
                "FAKE_KEY", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy", "no_proxy"}

PathLike = Union[str, os.PathLike]


# --------------------------------------------------------------------------
# binaries
# --------------------------------------------------------------------------
def bin_dir() -> Path:
    """Folder holding the ``claude`` and ``codex`` binaries."""
    env = os.environ.get("NOTREST_E2E_BIN")
    if env:
        return Path(env)
    return REPO / ".e2e" / "node_modules" / ".bin"


def find_binary(name: str) -> Optional[Path]:
    p = bin_dir() / name
    return p if p.exists() and os.access(str(p), os.X_OK) else None


def require_binary(name: str) -> Path:
    """The binary, or pytest.skip (pytest.fail when $CI is set) in one line."""
    import pytest
    p = find_binary(name)
    if p is None:
        msg = ("e2e: no %s in %s (npm install --prefix %s @anthropic-ai/claude-code@%s "
               "@openai/codex@%s, or set NOTREST_E2E_BIN)"
               % (name, bin_dir(), REPO / ".e2e", CLAUDE_VERSION, CODEX_VERSION))
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return p


# --------------------------------------------------------------------------
# process handling
# --------------------------------------------------------------------------
def _proc_table(with_pgrp: bool = False) -> Dict[int, int]:
    """pid -> ppid (or process group) for every live, non-zombie process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            # field 2 is "(comm)" and may hold spaces: split after the last ')'
            rest = stat[stat.rindex(")") + 2:].split()
            if rest[0] in ("Z", "X"):
                continue
            table[int(entry)] = int(rest[2] if with_pgrp else rest[1])
        except (OSError, ValueError, IndexError):
            continue
    return table


def group_members(pgid: int) -> List[int]:
    return [p for p, g in _proc_table(with_pgrp=True).items() if g == pgid]


def descendants(pid: int) -> List[int]:
    table = _proc_table()
    kids: Dict[int, List[int]] = {}
    for p, pp in table.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def marked_processes(marker: str) -> List[int]:
    """Live (non-zombie) processes whose environment holds MARKER_VAR=marker."""
    needle = ("%s=%s" % (MARKER_VAR, marker)).encode()
    live = _proc_table()
    found = []
    for pid in live:
        if pid == os.getpid():
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(pid)
    return found


def _kill(pids: Iterable[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(proc: subprocess.Popen, marker: Optional[str] = None) -> List[int]:
    """SIGKILL the process group of proc, every descendant, and every process
    carrying the run marker; reap proc.  Returns the pids that were killed
    (besides proc itself)."""
    killed = set()
    for _ in range(5):
        victims = set(descendants(proc.pid))
        if marker:
            victims.update(marked_processes(marker))
        victims.discard(proc.pid)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            _kill([proc.pid])
        _kill(victims)
        killed.update(victims)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.05)
        if not (marker and marked_processes(marker)) and proc.poll() is not None:
            break
    return sorted(killed)


class RunResult:
    """What one client run produced."""

    def __init__(self, client: str, argv: List[str], returncode: Optional[int],
                 stdout: str, stderr: str, duration: float, killed: bool,
                 timed_out: bool, strays: List[int], marker: str):
        self.client = client
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.duration = duration
        self.killed = killed          # kill_after / kill_when fired
        self.timed_out = timed_out    # timeout fired
        self.strays = strays          # processes still alive after the client ended
        self.marker = marker          # value of $NOTREST_E2E_RUN in the client's env
        self.pid = -1                 # the client's pid (= its process group id)
        self.stray_cmds: List[str] = []  # command lines of the strays
        self.events = []              # parsed JSON lines of stdout
        for line in stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.killed and not self.timed_out

    def check(self) -> "RunResult":
        """Raise AssertionError (with the output tails) unless the run succeeded."""
        if not self.ok:
            raise AssertionError(
                "%s run failed: rc=%r killed=%s timed_out=%s\nargv=%s\n--- stdout (tail)\n%s\n"
                "--- stderr (tail)\n%s" % (self.client, self.returncode, self.killed,
                                           self.timed_out, self.argv, self.stdout[-3000:],
                                           self.stderr[-3000:]))
        return self

    def final_text(self) -> Optional[str]:
        """The client's last answer text (Claude: result event; Codex: last
        agent_message)."""
        text = None
        for ev in self.events:
            if ev.get("type") == "result" and "result" in ev:
                text = ev["result"]
            item = ev.get("item") or {}
            if ev.get("type") == "item.completed" and item.get("type") == "agent_message":
                text = item.get("text")
        return text

    def __repr__(self):
        return "<RunResult %s rc=%r %.1fs killed=%s timed_out=%s events=%d>" % (
            self.client, self.returncode, self.duration, self.killed, self.timed_out,
            len(self.events))


def base_env(home: PathLike, env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The parent's environment minus other clients' variables, with HOME set."""
    out = {}
    for k, v in os.environ.items():
        if k in _SCRUB_EXACT or k.startswith(_SCRUB_PREFIXES):
            continue
        out[k] = v
    out["HOME"] = str(home)
    out.setdefault("LANG", "C.UTF-8")
    out["NO_COLOR"] = "1"
    if env:
        for k, v in env.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = str(v)
    return out


def strings(value) -> Iterable[str]:
    """Every string inside a JSON value (a request body, a payload), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def reap(marker: str, attempts: int = 10) -> List[int]:
    """SIGKILL every live process carrying the run marker until none is left;
    returns the pids that were killed."""
    killed: List[int] = []
    for _ in range(attempts):
        pids = marked_processes(marker)
        if not pids:
            break
        _kill(pids)
        killed.extend(p for p in pids if p not in killed)
        time.sleep(0.05)
    return killed


def run_process(client: str, argv: List[str], cwd: PathLike, env: Dict[str, str], *,
                timeout: float = 120, kill_after: Optional[float] = None,
                kill_when: Optional[Callable[[], bool]] = None,
                reap_strays: bool = True) -> RunResult:
    """Run argv in its own process group (stdin /dev/null, stdout/stderr to
    temp files) and always reap it.

    ``kill_after`` seconds, or as soon as ``kill_when()`` returns true
    (polled every 50 ms): SIGKILL the client's process group, as when the
    client dies.  ``timeout``: the same, then every descendant.  Afterwards
    every process that is still alive and carries the run marker
    ($NOTREST_E2E_RUN, inherited by hooks and tool commands) or sits in the
    client's process group is recorded in ``strays`` and, unless
    ``reap_strays=False``, killed (then call ``reap(result.marker)`` yourself)."""
    marker = env.get(MARKER_VAR) or uuid.uuid4().hex
    env = dict(env)
    env[MARKER_VAR] = marker
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    start = time.monotonic()
    killed = timed_out = False
    proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                            stdout=out_f, stderr=err_f, start_new_session=True)
    strays: List[int] = []
    stray_cmds: List[str] = []
    try:
        while proc.poll() is None:
            elapsed = time.monotonic() - start
            fire = kill_after is not None and elapsed >= kill_after
            if not fire and kill_when is not None:
                try:
                    fire = bool(kill_when())
                except Exception:
                    fire = False
            if fire:
                killed = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    kill_tree(proc, marker)
                break
            if elapsed >= timeout:
                timed_out = True
                kill_tree(proc, marker)
                break
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
    finally:
        if proc.poll() is None:  # KeyboardInterrupt or similar
            kill_tree(proc, marker)
        # what the client left running: its group, or anything with our marker
        time.sleep(0.2)
        left = set(marked_processes(marker)) | set(group_members(proc.pid))
        left.discard(proc.pid)
        strays = sorted(left)
        stray_cmds = [cmdline(p) for p in strays]
        if reap_strays and strays:
            _kill(strays)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            reap(marker)
    duration = time.monotonic() - start
    out_f.seek(0)
    err_f.seek(0)
    stdout = out_f.read().decode("utf-8", "replace")
    stderr = err_f.read().decode("utf-8", "replace")
    out_f.close()
    err_f.close()
    res = RunResult(client, argv, proc.returncode, stdout, stderr, duration, killed,
                    timed_out, strays, marker)
    res.pid = proc.pid
    res.stray_cmds = stray_cmds
    return res


# --------------------------------------------------------------------------
# Claude Code
# --------------------------------------------------------------------------
def _strip_v1(url: str) -> str:
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def _default_tmpdir(home: PathLike) -> str:
    """HOME/.tmp: keeps Claude's /tmp/claude-* files in the test's tree, and
    Codex creates its PATH helper aliases only when CODEX_HOME is not under
    the temp dir (it warns "Refusing to create helper binaries under
    temporary dir" otherwise)."""
    p = Path(home) / ".tmp"
    p.mkdir(parents=True, exist_ok=True)
    return str(p)


def claude_env(home: PathLike, base_url: str, env: Optional[Dict[str, str]] = None):
    e = base_env(home)
    e["TMPDIR"] = _default_tmpdir(home)
    e.update({
        "IS_SANDBOX": "1",
        "ANTHROPIC_BASE_URL": _strip_v1(base_url),
        "ANTHROPIC_API_KEY": "sk-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    })
    if env:
        for k, v in env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
    return e


def run_claude(project: PathLike, home: PathLike, prompt: str, base_url: str, *,
               extra_args: Sequence[str] = (), env: Optional[Dict[str, str]] = None,
               timeout: float = 120, kill_after: Optional[float] = None,
               kill_when: Optional[Callable[[], bool]] = None,
               reap_strays: bool = True, wrap: Sequence[str] = ()) -> RunResult:
    """``claude -p PROMPT --output-format stream-json --verbose
    --dangerously-skip-permissions [extra_args]`` in project (pass
    ``extra_args=["--continue"]`` to resume the last session).  ``wrap``:
    argv prepended to the command (e.g. a parent shell)."""
    claude = require_binary("claude")
    argv = list(wrap) + [str(claude), "-p", prompt, "--output-format", "stream-json",
                         "--verbose", "--dangerously-skip-permissions"] + list(extra_args)
    return run_process("claude", argv, project, claude_env(home, base_url, env),
                       timeout=timeout, kill_after=kill_after, kill_when=kill_when,
                       reap_strays=reap_strays)


def run_claude_tui(project: PathLike, home: PathLike, prompt: str, base_url: str, *,
                   width: int = 120, height: int = 40, settle: float = 25.0,
                   done: str = "done") -> str:
    """Claude Code's interactive TUI in a detached tmux pane (the person's view):
    starts ``claude --dangerously-skip-permissions`` in project, types prompt,
    waits until the screen shows ``done`` (at most ``settle`` s) and returns the
    screen text.  HOME's ~/.claude.json is written so that no first-run dialog
    (onboarding, folder trust, API key) stands in the way."""
    import shutil
    if not shutil.which("tmux"):
        import pytest
        if os.environ.get("CI"):
            pytest.fail("e2e: tmux is needed for the TUI test", pytrace=False)
        pytest.skip("e2e: tmux not installed")
    claude = require_binary("claude")
    project = str(Path(project).resolve())
    state = Path(home) / ".claude.json"
    state.write_text(json.dumps({
        "hasCompletedOnboarding": True, "bypassPermissionsModeAccepted": True,
        "theme": "dark", "customApiKeyResponses": {"approved": ["sk-test"],
                                                   "rejected": []},
        "projects": {project: {"hasTrustDialogAccepted": True,
                               "hasCompletedProjectOnboarding": True}}}),
        encoding="utf-8")
    env = claude_env(home, base_url)
    session = "notrest-%s" % uuid.uuid4().hex[:8]
    tmux = ["tmux", "-L", session]
    command = "exec env -i %s %s --dangerously-skip-permissions" % (" ".join(
        "%s=%s" % (k, sh_quote(v)) for k, v in env.items()), sh_quote(str(claude)))

    def screen():
        return subprocess.run(tmux + ["capture-pane", "-p", "-t", session],
                              capture_output=True, text=True).stdout

    def wait_for(text, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if text in screen():
                return True
            time.sleep(0.3)
        return False

    subprocess.run(tmux + ["new-session", "-d", "-s", session, "-x", str(width), "-y",
                           str(height), "-c", project, command], check=True,
                   env={"PATH": os.environ.get("PATH", ""), "TERM": "xterm-256color",
                        "HOME": str(home)})
    try:
        if not wait_for("bypass permissions on", settle):
            raise AssertionError("the TUI did not start:\n" + screen())
        subprocess.run(tmux + ["send-keys", "-t", session, "-l", prompt], check=True)
        wait_for(prompt[:20], 5)
        subprocess.run(tmux + ["send-keys", "-t", session, "Enter"], check=True)
        wait_for(done, settle)
        return screen()
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)


# --------------------------------------------------------------------------
# Codex
# --------------------------------------------------------------------------
def codex_home_of(home: PathLike, env: Optional[Dict[str, str]] = None) -> Path:
    if env and env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(home) / ".codex"


def _toml_str(s: str) -> str:
    return json.dumps(str(s))


def codex_config_text(base_url: str, project: PathLike, *, model: str = "gpt-5.5",
                      top: str = "", tables: str = "", trust_project: bool = True) -> str:
    project = str(Path(project).resolve())
    trust = ["[projects.%s]" % _toml_str(project), 'trust_level = "trusted"', ""] \
        if trust_project else []
    return "\n".join([
        "# written by tests/e2e/rig.py",
        "model = %s" % _toml_str(model),
        'model_provider = "fake"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        top.strip(),
        "",
        "[model_providers.fake]",
        'name = "fake"',
        "base_url = %s" % _toml_str(_strip_v1(base_url) + "/v1"),
        'env_key = "FAKE_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
    ] + trust + [
        tables.strip(),
        "",
    ])


def write_codex_config(codex_home: PathLike, base_url: str, project: PathLike, **kw) -> Path:
    p = Path(codex_home) / "config.toml"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(codex_config_text(base_url, project, **kw), encoding="utf-8")
    return p


def codex_env(home: PathLike, env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    e = base_env(home)
    e["TMPDIR"] = _default_tmpdir(home)
    e["CODEX_HOME"] = str(codex_home_of(home, env))
    e["FAKE_KEY"] = "x"
    if env:
        for k, v in env.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
    return e


def run_codex(project: PathLike, home: PathLike, prompt: str, base_url: str, *,
              resume: bool = False, extra_args: Sequence[str] = (),
              env: Optional[Dict[str, str]] = None, timeout: float = 120,
              kill_after: Optional[float] = None,
              kill_when: Optional[Callable[[], bool]] = None, model: str = "gpt-5.5",
              config_top: str = "", config_tables: str = "",
              write_config: bool = True, reap_strays: bool = True,
              wrap: Sequence[str] = (), bypass_hook_trust: bool = True,
              trust_project: bool = True) -> RunResult:
    """``codex exec --skip-git-repo-check --dangerously-bypass-hook-trust --json
    -C PROJECT [extra_args] PROMPT`` (or ``codex exec resume --last ...``);
    ``wrap``: argv prepended to the command.  ``bypass_hook_trust=False`` leaves
    the flag out: Codex then runs only the hooks its config trusts (write the
    config once, trust, then run with ``write_config=False`` so the trust stays);
    ``trust_project=False`` writes a config that does not trust the project."""
    codex = require_binary("codex")
    e = codex_env(home, env)
    if write_config:
        write_codex_config(e["CODEX_HOME"], base_url, project, model=model,
                           top=config_top, tables=config_tables,
                           trust_project=trust_project)
    project = str(Path(project).resolve())
    common = ["--skip-git-repo-check"] + (["--dangerously-bypass-hook-trust"]
                                          if bypass_hook_trust else []) + ["--json"]
    if resume:
        argv = [str(codex), "exec", "resume", "--last"] + common + list(extra_args) + [prompt]
    else:
        argv = [str(codex), "exec"] + common + ["-C", project] + list(extra_args) + [prompt]
    argv = list(wrap) + argv
    return run_process("codex", argv, project, e, timeout=timeout, kill_after=kill_after,
                       kill_when=kill_when, reap_strays=reap_strays)


# --------------------------------------------------------------------------
# a throw-away project + home + fake server, for one client
# --------------------------------------------------------------------------
def git_project(path: PathLike) -> Path:
    """``git init`` + one commit in path (created if needed)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    genv = dict(os.environ, GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.invalid",
                GIT_COMMITTER_NAME="e2e", GIT_COMMITTER_EMAIL="e2e@example.invalid",
                GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    (path / "README.md").write_text("e2e test project\n", encoding="utf-8")
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 ["git", "commit", "-q", "-m", "init"]):
        subprocess.run(argv, cwd=str(path), env=genv, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return path


def make_server(client: str, script=None, log_path: Optional[PathLike] = None):
    """An unstarted fake server for client ("claude" or "codex")."""
    if client == "claude":
        from fake_anthropic import FakeAnthropic
        return FakeAnthropic(script, log_path)
    if client == "codex":
        from fake_openai import FakeOpenAI
        return FakeOpenAI(script, log_path)
    raise ValueError("client must be 'claude' or 'codex', not %r" % (client,))


class E2EEnv:
    """One client, one temp git project, its own HOME (and CODEX_HOME =
    HOME/.codex), and a running fake model server.

    Attributes: client, root, project, home, codex_home, server, url.
    """

    def __init__(self, client: str, root: PathLike, script=None):
        self.client = client
        self.root = Path(root)
        self.project = git_project(self.root / "project")
        self.home = self.root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.hook_dir = self.root / "hook-payloads"
        self.tmpdir = self.root / "tmp"
        self.tmpdir.mkdir(exist_ok=True)
        self.server = make_server(client, script, self.root / "requests.jsonl")
        self.server.start()
        self.runs: List[RunResult] = []

    # -- server ---------------------------------------------------------
    @property
    def url(self) -> str:
        return self.server.url

    def set_script(self, script) -> None:
        self.server.set_script(script)

    def requests(self, model_only: bool = True) -> List[dict]:
        """Logged requests (JSON lines: method, path, headers, body, served)."""
        return self.server.requests(model_only)

    def request_texts(self) -> List[str]:
        """Each model request's body as one JSON string (for 'in' checks)."""
        return [json.dumps(r["body"], ensure_ascii=False) for r in self.requests()]

    def close(self) -> None:
        """Stop the server and kill whatever any run of this env left alive."""
        for r in self.runs:
            reap(r.marker)
        self.server.stop()

    # -- running ----------------------------------------------------------
    def run(self, prompt: str, **kw) -> RunResult:
        """run_claude / run_codex in this env; keyword args are passed on
        (``resume=True`` resumes the last session with either client: Claude
        ``--continue``, Codex ``exec resume --last``).  TMPDIR is ROOT/tmp."""
        kw["env"] = dict(kw.get("env") or {})
        kw["env"].setdefault("TMPDIR", str(self.tmpdir))
        if self.client == "claude":
            if kw.pop("resume", False):
                kw["extra_args"] = ["--continue"] + list(kw.get("extra_args", ()))
            res = run_claude(self.project, self.home, prompt, self.url, **kw)
        else:
            kw["env"].setdefault("CODEX_HOME", str(self.codex_home))
            res = run_codex(self.project, self.home, prompt, self.url, **kw)
        self.runs.append(res)
        return res

    # -- hooks ----------------------------------------------------------------
    def hooks_file(self, scope: str = "project") -> Path:
        """Where the client reads hooks: scope "project" (Claude
        .claude/settings.json, Codex .codex/hooks.json), "local" (Claude
        .claude/settings.local.json) or "user" (Claude ~/.claude/settings.json,
        Codex $CODEX_HOME/hooks.json)."""
        if self.client == "claude":
            return {"project": self.project / ".claude" / "settings.json",
                    "local": self.project / ".claude" / "settings.local.json",
                    "user": self.home / ".claude" / "settings.json"}[scope]
        return {"project": self.project / ".codex" / "hooks.json",
                "user": self.codex_home / "hooks.json"}[scope]

    def write_hooks(self, hooks: Dict[str, list], scope: str = "project") -> Path:
        """Write ``{"hooks": hooks}`` to hooks_file(scope) (replacing it)."""
        p = self.hooks_file(scope)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"hooks": hooks}, indent=1), encoding="utf-8")
        return p

    def write_script(self, name: str, body: str) -> Path:
        """An executable POSIX sh script in ROOT/bin (outside the project)."""
        d = self.root / "bin"
        d.mkdir(exist_ok=True)
        p = d / name
        p.write_text("#!/bin/sh\n" + body.lstrip("\n"), encoding="utf-8")
        p.chmod(0o755)
        return p

    def recorder(self, then: str = "") -> str:
        """A hook command that saves its stdin payload as one file in
        ``hook_dir`` (hooks of one event run in parallel, so one file each);
        ``then`` is sh code run afterwards, with the payload in "$payload" and
        stdin exhausted: its stdout is the hook's answer."""
        self.hook_dir.mkdir(exist_ok=True)
        script = self.write_script("record-%s.sh" % uuid.uuid4().hex[:8], (
            'payload=$(cat)\n'
            'f=%s/$(date +%%s%%N)-$$.json\n'
            'printf "%%s\\n" "$payload" > "$f.tmp" && mv "$f.tmp" "$f"\n'
            '%s\n') % (sh_quote(str(self.hook_dir)), then))
        return sh_quote(str(script))

    def hook_payloads(self, event: Optional[str] = None) -> List[dict]:
        """Payloads saved by recorder() hooks, oldest first, optionally only
        those of one event (``hook_event_name``)."""
        if not self.hook_dir.exists():
            return []
        out = []
        for p in sorted(self.hook_dir.glob("*.json"),
                        key=lambda p: tuple(int(x) for x in p.stem.split("-"))):
            try:
                d = json.loads(p.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if event is None or d.get("hook_event_name") == event:
                out.append(d)
        return out



# --------------------------------------------------------------------------
# notrest in a test project; what the clients report about hooks
# --------------------------------------------------------------------------
def install_notrest(project: PathLike, home: PathLike, clients: str = "both",
                    codex_home: Optional[PathLike] = None,
                    timeout: float = 60) -> subprocess.CompletedProcess:
    """``sh REPO/install.sh --client CLIENTS PROJECT`` exactly as a user runs it
    (HOME=home, CODEX_HOME=codex_home or home/.codex, cwd=project, the
    environment scrubbed like the clients'); raises AssertionError with its
    output unless it exits 0.  Returns the CompletedProcess (text)."""
    env = base_env(home, {"CODEX_HOME": str(codex_home or Path(home) / ".codex")})
    proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", clients, str(project)],
                          cwd=str(project), env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("install.sh exited %d\n--- stdout\n%s\n--- stderr\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


PLUGIN_SKIP = (".git", ".e2e", ".venv", "node_modules", "__pycache__", ".pytest_cache",
               "tests", "bench", "docs")


def plugin_source(dest: PathLike) -> Path:
    """A clean copy of the repository as a marketplace folder (what a fresh clone
    holds, without tests, caches or the installed clients): both clients copy a
    local marketplace's plugin whole into their plugin cache."""
    import shutil
    dest = Path(dest)
    shutil.copytree(str(REPO), str(dest), ignore=shutil.ignore_patterns(*PLUGIN_SKIP))
    return dest


def install_plugin(client: str, home: PathLike, source: PathLike,
                   codex_home: Optional[PathLike] = None,
                   timeout: float = 120) -> List[subprocess.CompletedProcess]:
    """Install notrest as a plugin with the client's own commands, as a user would:
    Claude ``claude plugin marketplace add SOURCE`` + ``claude plugin install
    notrest@notrest``; Codex ``codex plugin marketplace add SOURCE`` + ``codex plugin
    add notrest@notrest``.  Raises AssertionError with the output unless each exits
    0.  (Codex still runs the plugin's hooks only once they are trusted.)"""
    binary = str(require_binary(client))
    if client == "claude":
        env = claude_env(home, "http://127.0.0.1:9")
        steps = [[binary, "plugin", "marketplace", "add", str(source)],
                 [binary, "plugin", "install", "notrest@notrest"]]
    else:
        env = codex_env(home, {"CODEX_HOME": str(codex_home)} if codex_home else None)
        Path(env["CODEX_HOME"]).mkdir(parents=True, exist_ok=True)
        steps = [[binary, "plugin", "marketplace", "add", str(source)],
                 [binary, "plugin", "add", "notrest@notrest"]]
    done = []
    for argv in steps:
        proc = subprocess.run(argv, env=env, cwd=str(home), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError("%s exited %d\n--- stdout\n%s\n--- stderr\n%s" % (
                argv, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
        done.append(proc)
    return done


def read_journal(path: PathLike) -> List[dict]:
    """The records of one notrest journal, via ``notrest.read_records`` (REPO on
    sys.path; damaged lines skipped); plain JSON lines if notrest.py cannot be
    imported (it may be mid-edit)."""
    try:
        if str(REPO) not in sys.path:
            sys.path.append(str(REPO))
        import notrest
        return [rec for rec, _line, _end in notrest.read_records(str(path)) if rec is not None]
    except (ImportError, SyntaxError):
        out = []
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out


def session_id(res: "RunResult") -> Optional[str]:
    """The session id the client reported on stdout (Claude: ``session_id`` of
    its stream-json events; Codex: ``thread.started`` ``thread_id``)."""
    for ev in res.events:
        if res.client == "claude" and ev.get("session_id"):
            return ev["session_id"]
        if res.client == "codex" and ev.get("type") == "thread.started":
            return ev.get("thread_id")
    return None


# Claude's --debug-file says, per hook run (2.1.332):
#   "... [DEBUG] Hooks: PreToolUse:Bash [<command>] finished with status 0 (28ms)"
# (SessionEnd hooks are logged without a duration).
_CLAUDE_HOOK_DONE = re.compile(
    r"Hooks: ([A-Za-z]+)(?::[^ \[]*)? \[.*\] finished with status (-?\d+) \((\d+)ms\)")
# Codex 0.171 with RUST_LOG=CODEX_HOOK_LOG writes to stderr, per hook run,
# "app-server event: hook/started" and ".../hook/completed" (no name), and the
# lines logged while the hook's process is set up carry the span
# codex.hooks.command{hook.event_name="Stop" ...}.  Hooks run one at a time
# there; SessionEnd hooks produce no started/completed events.
CODEX_HOOK_LOG = ("error,codex_app_server::outgoing_message=trace,mio::poll=trace,"
                  "codex_hooks=trace")  # codex_hooks: enables the hook span
_CODEX_SPAN = re.compile(r'codex\.hooks\.command\{hook\.event_name="([A-Za-z]+)"')
_RUST_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z")


def claude_hook_times(debug_log: str) -> List[tuple]:
    """[(event, ms)] of every hook run Claude's --debug-file timed."""
    return [(m.group(1), float(m.group(3))) for m in _CLAUDE_HOOK_DONE.finditer(debug_log)]


def _rust_time(line: str) -> Optional[float]:
    m = _RUST_TS.match(line)
    if not m:
        return None
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    return base.replace(tzinfo=datetime.timezone.utc).timestamp() + float(m.group(2) or 0)


def codex_hook_times(stderr: str) -> List[tuple]:
    """[(event, ms)] from hook/started -> hook/completed pairs in Codex's stderr
    (RUST_LOG=CODEX_HOOK_LOG); the event is the one named by the last hook span
    logged before the start."""
    out, started, last = [], [], None
    for line in stderr.splitlines():
        m = _CODEX_SPAN.search(line)
        if m:
            last = m.group(1)
        if "app-server event: hook/started" in line:
            started.append((last, _rust_time(line)))
        elif "app-server event: hook/completed" in line and started:
            name, t0 = started.pop(0)
            t1 = _rust_time(line)
            if name and t0 is not None and t1 is not None:
                out.append((name, round((t1 - t0) * 1000, 1)))
    return out


def client_hook_times(res: "RunResult") -> List[tuple]:
    """[(event, ms)] of the hook runs one client run reported: Claude when run
    with ``--debug-file PATH``, Codex when run with RUST_LOG=CODEX_HOOK_LOG."""
    if res.client == "claude":
        if "--debug-file" in res.argv:
            path = res.argv[res.argv.index("--debug-file") + 1]
            try:
                return claude_hook_times(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                return []
        return []
    return codex_hook_times(res.stderr)


def sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def hook_entry(command: str, matcher: Optional[str] = None, timeout: int = 30) -> dict:
    """One element of a hooks event list (the same shape for both clients)."""
    d: dict = {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}
    if matcher is not None:
        d["matcher"] = matcher
    return d


# --------------------------------------------------------------------------
# script helpers (turn dicts for the fake servers)
# --------------------------------------------------------------------------
def shell_call(client: str, command: str) -> dict:
    """A tool call running a shell command: Claude ``Bash`` / Codex ``exec_command``."""
    if client == "claude":
        return {"name": "Bash", "input": {"command": command, "description": "run"}}
    return {"name": "exec_command", "arguments": {"cmd": command}}


def tool_turn(*calls: dict, **extra) -> dict:
    d = {"tool_calls": list(calls)}
    d.update(extra)
    return d


def text_turn(text: str, **extra) -> dict:
    d = {"text": text}
    d.update(extra)
    return d
