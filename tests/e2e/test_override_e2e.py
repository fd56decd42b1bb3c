"""An override is the person's (#9), inside the real clients.

A person who starts Claude Code or Codex with NOTREST_OVERRIDE=no-force-push
gets the force push through, with a receipt. An agent in a client started
without it that sets the variable on a hook it runs itself gets a deny and
leaves no receipt. Its hook is a copy of notrest.py the gate cannot recognise
(renamed, outside the project, started through runpy): the test puts it there,
as if made by means the gate could not follow, so what refuses is the hook's
own check of the environment the client was started with.
"""
import json
import os
import shutil
import tempfile

import pytest

import rig
from rig import shell_call, text_turn, tool_turn
from test_scenarios import force_push_setup, git, installed, journal, run, sid_of

LAW = "no-force-push"
FORGED = "forged-e2e"


def disguised_hook(env, folder, client):
    """In folder: notrest.py as the agent would hide it from the gate (renamed,
    shifted a line), a run.py that starts its `hook PreToolUse` through runpy, and
    the payload of a force push for session FORGED. Returns run.py."""
    folder.mkdir()
    (folder / "lint_helper.py").write_text(
        "# a lint helper\n" + (env.project / ".notrest" / "notrest.py").read_text())
    # the override is set inside the script, its name built at run time: the gate
    # refuses a line that hands a NOTREST_ switch to a program it starts, and these
    # tests are about what the hook itself says when the gate could not see it
    (folder / "run.py").write_text(
        "import os, runpy, sys\nos.environ['NOTREST_' + 'OVERRIDE'] = %r\n"
        "sys.argv = ['x', 'hook', 'PreToolUse', %r]\n"
        "runpy.run_path(%r, run_name='__main__')\n" % (LAW, client,
                                                      str(folder / "lint_helper.py")))
    (folder / "payload.json").write_text(json.dumps({
        "session_id": FORGED, "cwd": str(env.project), "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "git push --force origin main"}}))
    return folder / "run.py"


def test_a_client_started_with_the_override_gives_it(e2e, client):
    env = installed(e2e, client, {"scripts": {"ov-real": [
        tool_turn(shell_call(client, "git push --force origin main")),
        text_turn("pushed")]}})
    remote, pushed = force_push_setup(env)
    # the person's own start: the variable is in the client's environment
    res = env.run("ov-real: push it", env={"NOTREST_OVERRIDE": LAW}, timeout=90).check()
    records = journal(env, sid_of(res))
    assert git(remote, "rev-parse", "refs/heads/main") != pushed, "the push went through"
    receipts = [r for r in records if r.get("k") == "receipt"]
    assert [(r["law"], r["by"]) for r in receipts] == [(LAW, "NOTREST_OVERRIDE")]


def test_an_override_the_agent_sets_on_its_own_hook_is_refused(e2e, client):
    env = installed(e2e, client, None)
    hide = env.root / "agent-tools"
    disguised_hook(env, hide, client)
    payload = hide / "payload.json"
    out = hide / "forged.json"
    forge = "python3 %s < %s > %s; echo forged=$?" % (hide / "run.py", payload, out)
    gate = rig.subprocess.run([str(env.project / ".notrest" / "notrest"), "gate",
                               "--command", forge], capture_output=True, text=True,
                              cwd=str(env.project), env=rig.base_env(env.home), timeout=60)
    assert gate.returncode == 0, "the gate lets the forge through: %s" % gate.stdout
    env.set_script({"scripts": {"ov-forge": [tool_turn(shell_call(client, forge)),
                                             text_turn("done")]}})
    res = run(env, "ov-forge: try it").check()
    session = sid_of(res)
    answer = json.loads(out.read_text())
    hook = answer["hookSpecificOutput"]
    assert hook["permissionDecision"] == "deny", answer
    assert "notrest deny [%s]" % LAW in hook["permissionDecisionReason"]
    assert "was not started with it" in hook["permissionDecisionReason"], hook
    journals = env.project / ".notrest" / "journal"
    forged = rig.read_journal(journals / ("%s.jsonl" % FORGED))
    assert not [r for r in forged if r.get("k") == "receipt"], forged
    denies = [r for r in forged if r.get("k") == "deny"]
    assert denies and "NOTREST_OVERRIDE" in denies[0]["reason"], forged
    assert not [r for r in journal(env, session) if r.get("k") == "receipt"]


@pytest.fixture
def short_tmp():
    """A short TMPDIR: Claude's sandbox keeps its bridge sockets under it (a unix
    socket path is bounded, see tests/e2e/test_harden.py)."""
    folder = tempfile.mkdtemp(prefix="nro-", dir="/tmp")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_override_forged_inside_the_clients_sandbox_is_refused(e2e, client, short_tmp):
    """The clients' sandboxes run the agent's commands in a pid namespace of their
    own, where the client cannot be seen (so its session looked dead to a forged
    hook in there). Not hardened: the sandbox lets the command write .notrest/, so
    only the hook's own check stands between the forge and a receipt."""
    if client == "claude" and not (shutil.which("bwrap") and shutil.which("socat")):
        message = "e2e: Claude's sandbox needs bubblewrap and socat"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    env = installed(e2e, client, None)
    tools = env.project / "tools"  # the sandbox lets a command write the project
    disguised_hook(env, tools, client)
    forge = ("readlink /proc/self/ns/pid; python3 tools/run.py "
             "< tools/payload.json > tools/forged.json; echo forged=$?")
    kw = {"env": {"TMPDIR": short_tmp}}
    if client == "claude":
        local = env.project / ".claude" / "settings.local.json"
        local.write_text(json.dumps({"sandbox": {"enabled": True,
                                                 "autoAllowBashIfSandboxed": True}}))
    else:
        kw["extra_args"] = ["-s", "workspace-write"]
    env.set_script({"scripts": {"ov-sandbox": [tool_turn(shell_call(client, forge)),
                                               text_turn("done")]}})
    res = env.run("ov-sandbox: try it", timeout=90, **kw).check()
    said = json.dumps(res.events)
    host = os.readlink("/proc/self/ns/pid")
    assert "pid:[" in said and host not in said, "the command ran in a pid namespace " \
        "of its own: %s" % said[-1500:]
    answer = json.loads((tools / "forged.json").read_text())
    hook = answer["hookSpecificOutput"]
    assert hook["permissionDecision"] == "deny", answer
    assert "NOTREST_OVERRIDE" in hook["permissionDecisionReason"], hook
    forged = rig.read_journal(env.project / ".notrest" / "journal" / ("%s.jsonl" % FORGED))
    assert forged, "the sandbox let the forged hook write the journal"
    assert not [r for r in forged if r.get("k") == "receipt"], forged
    assert sid_of(res)


def test_a_bank_in_codexs_own_sandbox_is_the_sessions_own(e2e):
    """Codex runs commands in its sandbox even unhardened (workspace-write): the
    agent's `notrest bank` there is the session's own bank (the client cannot be
    seen from in there, and was once taken for absent)."""
    env = installed(e2e, "codex", {"scripts": {"ov-bank": [
        tool_turn(shell_call("codex", "echo x > a.txt")),
        tool_turn(shell_call("codex", '.notrest/notrest bank --note "did it" --next '
                                      '"more"')),
        text_turn("done")]}})
    res = env.run("ov-bank: go", timeout=90, extra_args=["-s", "workspace-write"]).check()
    said = [ev.get("item", {}).get("aggregated_output") or "" for ev in res.events
            if ev.get("type") == "item.completed"]
    session = sid_of(res)
    # Codex names the session in the command's environment ($CODEX_THREAD_ID):
    # the bank finds it there, not by guessing the newest open one
    assert any("banked session %s ($CODEX_THREAD_ID)" % session in s for s in said), said
    assert not any("written outside the session" in s for s in said), said
    notes = [r for r in journal(env, session) if r.get("k") == "note"]
    assert [(n["note"], n.get("inside")) for n in notes] == [("did it", True)], notes
