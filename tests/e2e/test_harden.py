"""Rings 2 and 3 inside the real clients (Claude Code 2.1.332 with bubblewrap and
socat, Codex 0.171.0 with its own bubblewrap), notrest installed with
``install.sh --harden`` exactly as a person would.

The gate is told to allow harness writes (protect-harness switched off in
laws.json ``disable``), so what stops them is the client's own sandbox: a python
one-liner that writes .notrest/laws.json fails with "Read-only file system" while
the same command writes the work tree. The hooks run outside the sandbox: the
journal still gets every call, and ``notrest bank`` from the agent's sandboxed shell
is banked by the PostToolUse hook. A launcher rewritten before a session is
repaired by its SessionStart, and said so.

Codex: CODEX_HOME must not lie under the client's TMPDIR (Codex then refuses to
make its sandbox helper and every sandboxed command fails); the rig keeps TMPDIR
at ROOT/tmp and CODEX_HOME at ROOT/home/.codex.
"""
import json
import os
import shutil
import subprocess

import pytest

import rig
from rig import shell_call, text_turn, tool_turn
import notrest  # noqa: E402  (tests/conftest.py puts the repository on sys.path)

TIMEOUT = 90
ONE_LINER = "python3 -c \"open('.notrest/laws.json', 'w').write('{}')\""
WRITES = "%s; echo rc=$?; echo fine > ok.txt; echo rc=$?" % ONE_LINER
BANK = '.notrest/notrest bank --note "sandboxed work done" --next "review it"'


def require_sandbox(client):
    """bubblewrap for Claude (Codex ships its own): skip with one line, fail in CI."""
    if client != "claude":
        return
    bwrap, socat = shutil.which("bwrap"), shutil.which("socat")
    ok = bool(bwrap and socat) and subprocess.run(
        [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "true"],
        capture_output=True).returncode == 0
    if not ok:
        message = "e2e: Claude's sandbox needs a working bubblewrap and socat here " \
                  "(apt-get install bubblewrap socat)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.fixture
def run_tmp(client, tmp_path):
    """The TMPDIR the client runs with. Claude's sandbox keeps its bridge sockets
    under it, and a pytest temp path is too long for a unix socket
    (notrest.CLAUDE_SOCKET_PATH_MAX): Claude gets a short folder in /tmp. Codex keeps
    a folder of the test's own (its CODEX_HOME must not lie under its TMPDIR)."""
    if client != "claude":
        folder = tmp_path / "codex-tmp"
        folder.mkdir()
        yield str(folder)
        return
    import tempfile
    folder = tempfile.mkdtemp(prefix="nrh-", dir="/tmp")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def hardened(e2e, client, script):
    require_sandbox(client)
    env = e2e(client, script)
    proc = subprocess.run(["sh", str(rig.REPO / "install.sh"), "--harden", "--quiet",
                           str(env.project)], capture_output=True, text=True, timeout=60,
                          env=rig.base_env(env.home, {"CODEX_HOME": str(env.codex_home)}))
    assert proc.returncode == 0, proc.stderr
    laws = env.project / ".notrest" / "laws.json"
    data = json.loads(laws.read_text())
    data["disable"] = ["protect-harness"]           # the gate is told to allow it
    laws.write_text(json.dumps(data, indent=2))
    return env


def outputs(res):
    """The text of every tool result the client reported, in order."""
    out = []
    for ev in res.events:
        if ev.get("type") == "user":                                   # Claude
            for block in ev.get("message", {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    out.append(content if isinstance(content, str) else json.dumps(
                        content))
        item = ev.get("item") or {}
        if ev.get("type") == "item.completed" and item.get("type") in (
                "command_execution", "file_change"):                  # Codex
            out.append(json.dumps(item))
    return out


def journal(env, session):
    return rig.read_journal(env.project / ".notrest" / "journal" / (session + ".jsonl"))


def test_the_clients_sandbox_refuses_what_the_gate_let_through(e2e, client, run_tmp):
    calls = [tool_turn(shell_call(client, WRITES)), tool_turn(shell_call(client, BANK))]
    if client == "claude":
        calls.append(tool_turn({"name": "Write", "input": {
            "file_path": "PROJECT/.notrest/laws.json", "content": "{}\n"}}))
    else:
        calls.append(tool_turn({"name": "apply_patch", "input": (
            "*** Begin Patch\n*** Add File: .notrest/new-law.json\n+{}\n*** End Patch\n")}))
    env = hardened(e2e, client, None)
    assert not str(env.codex_home).startswith(run_tmp + os.sep)
    env.set_script({"scripts": {"harden-go": json.loads(json.dumps(
        calls + [text_turn("done")]).replace("PROJECT", str(env.project)))}})
    laws = env.project / ".notrest" / "laws.json"
    before = laws.read_bytes()
    res = env.run("harden-go: try it", timeout=TIMEOUT, env={"TMPDIR": run_tmp}).check()
    session = rig.session_id(res)
    said = outputs(res)
    assert "Read-only file system" in said[0], said
    assert (env.project / "ok.txt").read_text() == "fine\n", "the work tree is writable"
    assert laws.read_bytes() == before, "the OS refused the write"
    assert not (env.project / ".notrest" / "new-law.json").exists()
    records = journal(env, session)
    kinds = [(r.get("k"), r.get("e")) for r in records]
    assert ("start", "SessionStart") in kinds and ("stop", "Stop") in kinds
    calls_seen = [r["what"] for r in records if r.get("k") == "call"]
    assert any("open('.notrest/laws.json'" in w for w in calls_seen), calls_seen
    tools = [r for r in records if r.get("k") == "tool" and r.get("e") == "PostToolUse"]
    assert tools, "the hooks run outside the sandbox and keep journaling"
    notes = [r for r in records if r.get("k") == "note"]
    assert [(n["note"], n["next"]) for n in notes] == [("sandboxed work done",
                                                        "review it")]
    assert "hook banks this note" in said[1]
    doctor = subprocess.run([str(env.project / ".notrest" / "notrest"), "doctor"],
                            capture_output=True, text=True, timeout=120,
                            cwd=str(env.project), env=rig.base_env(env.home, {
                                "CODEX_HOME": env.codex_home, "TMPDIR": run_tmp,
                                "PATH": "%s:%s" % (rig.bin_dir(), os.environ["PATH"])}))
    assert "FAIL  harness drift" not in doctor.stdout, doctor.stdout
    if client == "codex":
        assert "PASS  Codex's sandbox keeps .notrest/ read-only" in doctor.stdout, \
            doctor.stdout
        assert "PASS  codex sandbox configured for codex 0.171.0" in doctor.stdout
    else:
        assert "PASS  claude sandbox configured for claude 2.1.332" in doctor.stdout
        assert "PASS  bubblewrap can make a sandbox here" in doctor.stdout
    second = env.run("harden-next: go on", timeout=TIMEOUT, env={"TMPDIR": run_tmp}).check()
    packets = [t for t in env.request_texts() if "sandboxed work done" in t]
    assert packets, "the banked note reaches the next session's packet"
    last = env.request_texts()[-1]
    longest = notrest.CLAUDE_SOCKET_PATH_MAX - len("/claude-%d" % os.getuid())
    if len(run_tmp) > longest:  # Claude is wired too, and its sandbox could not start
        # with this TMPDIR (a pytest temp path): the packet says so, with the length
        assert "Hardening: on, but a sandbox cannot start (claude needs a TMPDIR of " \
            "at most %d characters" % longest in last, last[last.find("Hardening"):][:400]
    else:
        assert "Hardening: on." in last, last[last.find("Hardening"):][:400]
    assert rig.session_id(second) != session


def test_a_tampered_launcher_is_repaired_by_the_next_session(e2e, client, run_tmp):
    env = hardened(e2e, client, {"scripts": {"tamper-go": [
        tool_turn(shell_call(client, "git push --force origin main")),
        text_turn("done")]}})
    launcher = env.project / ".notrest" / "hooks" / "pre-tool-use.sh"
    original = launcher.read_bytes()
    launcher.write_text("#!/bin/sh\nprintf '{}\\n'\n")    # the gate, switched off
    extra = ["--include-hook-events"] if client == "claude" else []
    res = env.run("tamper-go: clean up", timeout=TIMEOUT, extra_args=extra,
                  env={"TMPDIR": run_tmp}).check()
    assert launcher.read_bytes() == original
    assert any("notrest deny [no-force-push]" in t for t in env.request_texts()), \
        "the repaired gate denied the force-push"
    session = rig.session_id(res)
    [receipt] = [r for r in journal(env, session) if r.get("k") == "integrity"]
    assert receipt["drift"][0]["path"] == ".notrest/hooks/pre-tool-use.sh"
    assert any("The harness was changed outside install" in t and "pre-tool-use.sh" in t
               for t in env.request_texts()), "the packet carries the line"
    if client == "claude":
        messages = [json.loads(ev["output"]).get("systemMessage", "") for ev in res.events
                    if ev.get("subtype") == "hook_response" and
                    ev.get("hook_event") == "SessionStart"]
        assert any("pre-tool-use.sh" in m for m in messages), messages
