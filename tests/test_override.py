"""An override is the person's (#9): NOTREST_OVERRIDE switches a law off only
when the client the hook runs under was started with it.

The agent's commands inherit the client's environment and may add to their
own, so an agent that wants a receipt reading as a person's override sets the
variable on a hook it runs itself. It cannot run the project's `notrest hook`
(the gate denies that verb however it is spelled), so it runs a copy the gate
cannot recognise: notrest.py transformed and renamed, outside the project. Each
way of doing that below runs inside a stand-in client (tests/client_sim.py, a
real process the hooks see as their client), started without the override; the
forged hook must deny and leave no receipt. The person's own way, a client
started with the override, must still work."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, read_results, simulate, step
from test_harden import need_bwrap

# what both clients' sandboxes do to the agent's commands (seen with Claude Code
# 2.1.332 and Codex 0.171.0): a pid namespace of their own, where the client and
# every process above the command are out of sight
SANDBOX = "bwrap --unshare-pid --dev-bind / / --proc /proc "

FORCE = "git push --force origin main"
LAW = "no-force-push"


def start(proj, session):
    return step("SessionStart", proj.payload("SessionStart", session, source="startup"))


def pre(proj, session, command=FORCE):
    return step("PreToolUse", proj.payload("PreToolUse", session, tool_name="Bash",
                                           tool_input={"command": command}))


def decision(stdout):
    answer = json.loads(stdout or "{}")
    return (answer.get("hookSpecificOutput") or {}).get("permissionDecision",
                                                        "allow"), answer


def receipts(proj, session):
    return [r for r in proj.journal(session) if r and r.get("k") == "receipt"]


def disguised_copy(proj, tmp_path):
    """notrest.py as an agent would hide it from the gate: another name, another
    folder, every line shifted (so no hash or text match finds it)."""
    source = (proj.root / ".notrest" / "notrest.py").read_text()
    tool = tmp_path / "agent-tools" / "lint_helper.py"
    tool.parent.mkdir()
    tool.write_text("# a lint helper\n" + source)
    return tool


def test_a_client_started_with_it_gives_the_override(proj, tmp_path):
    _proc, results = simulate(proj, [start(proj, "ov-real"), pre(proj, "ov-real")],
                              tmp_path, env={"NOTREST_OVERRIDE": LAW})
    done = read_results(results)
    verdict, answer = decision(done[1]["stdout"])
    assert verdict == "allow", answer
    assert "override of %s" % LAW in answer.get("systemMessage", "")
    assert [r["by"] for r in receipts(proj, "ov-real")] == ["NOTREST_OVERRIDE"]


def test_only_the_laws_the_client_was_started_with(proj, tmp_path):
    """The agent adds a law to the client's list on a forged run: the law the
    person gave still holds, the one added does not."""
    tool = disguised_copy(proj, tmp_path)
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(proj.payload(
        "PreToolUse", "ov-more", tool_name="Bash", tool_input={"command": "rm -rf ~"})))
    forge = "NOTREST_OVERRIDE=%s,no-destroy %s %s hook PreToolUse claude < %s" % (
        LAW, sys.executable, tool, payload)
    _proc, results = simulate(proj, [start(proj, "ov-more"), pre(proj, "ov-more"),
                                     {"argv": ["sh", "-c", forge]}],
                              tmp_path, env={"NOTREST_OVERRIDE": LAW})
    done = read_results(results)
    assert decision(done[1]["stdout"])[0] == "allow"
    verdict, answer = decision(done[2]["stdout"])
    assert verdict == "deny", answer
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "no-destroy" in reason and "was not started with it" in reason, reason
    assert [r["law"] for r in receipts(proj, "ov-more")] == [LAW]


# Each forge runs with {py} {tool} {payload} {out}; the forged hook's answer ends
# in {out}; `session` is the journal a receipt would go to.
FORGES = {
    "env-prefix": (
        "NOTREST_OVERRIDE=%s {py} {tool} hook PreToolUse claude < {payload} > {out}"
        % LAW, "ov-live"),
    "exec-env": (
        "exec env NOTREST_OVERRIDE=%s {py} {tool} hook PreToolUse claude "
        "< {payload} > {out}" % LAW, "ov-live"),
    "through-python": (
        "{py} -c \"import os, subprocess, sys; subprocess.run([sys.executable, "
        "'{tool}', 'hook', 'PreToolUse', 'claude'], stdin=open('{payload}'), "
        "stdout=open('{out}', 'w'), env=dict(os.environ, NOTREST_OVERRIDE='%s'))\""
        % LAW, "ov-live"),
    # a SessionStart of its own first, so the forger's python is registered as
    # the client of the session it then forges for
    "own-session": (
        "NOTREST_OVERRIDE=%s {py} -c \"import subprocess, sys, json; "
        "p = json.load(open('{payload}')); p['session_id'] = 'ov-own'; "
        "s = dict(p, hook_event_name='SessionStart', source='startup'); "
        "run = lambda e, d: subprocess.run([sys.executable, '{tool}', 'hook', e, "
        "'claude'], input=json.dumps(d).encode(), capture_output=True).stdout; "
        "run('SessionStart', s); open('{out}', 'wb').write(run('PreToolUse', p))\""
        % LAW, "ov-own"),
    # the same, re-registering the live session itself to the forger's process
    "re-register": (
        "NOTREST_OVERRIDE=%s {py} -c \"import subprocess, sys, json; "
        "p = json.load(open('{payload}')); "
        "s = dict(p, hook_event_name='SessionStart', source='resume'); "
        "run = lambda e, d: subprocess.run([sys.executable, '{tool}', 'hook', e, "
        "'claude'], input=json.dumps(d).encode(), capture_output=True).stdout; "
        "run('SessionStart', s); open('{out}', 'wb').write(run('PreToolUse', p))\""
        % LAW, "ov-live"),
    # in a pid namespace, as the clients' sandboxes run the agent's commands: no
    # process above it can be seen, so the session's client looks dead
    "in-a-sandbox": (
        SANDBOX + "sh -c 'NOTREST_OVERRIDE=%s {py} {tool} hook PreToolUse claude "
        "< {payload} > {out}'" % LAW, "ov-live"),
    # left running outside the client (its parent exits): no client above it,
    # while the session is live
    "detached": (
        "(NOTREST_OVERRIDE=%s {py} {tool} hook PreToolUse claude < {payload} "
        "> {out}.part && mv {out}.part {out} &)" % LAW, "ov-live"),
}


@pytest.mark.parametrize("how", sorted(FORGES))
def test_an_override_the_agent_sets_itself_is_refused(proj, tmp_path, how):
    forge, session = FORGES[how]
    if forge.startswith("bwrap"):
        need_bwrap()
    tool = disguised_copy(proj, tmp_path)
    payload, out = tmp_path / "payload.json", tmp_path / "forged.json"
    payload.write_text(json.dumps(proj.payload(
        "PreToolUse", "ov-live", tool_name="Bash", tool_input={"command": FORCE})))
    command = forge.format(py=sys.executable, tool=tool, payload=payload, out=out)
    wait = "i=0; while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done" % out
    _proc, results = simulate(proj, [start(proj, "ov-live"), {"argv": ["sh", "-c", command]},
                                     {"argv": ["sh", "-c", wait]}], tmp_path)
    done = read_results(results)
    assert done[1]["code"] == 0, done[1]
    verdict, answer = decision(out.read_text())
    assert verdict == "deny", answer
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "notrest deny [%s]" % LAW in reason and "NOTREST_OVERRIDE" in reason, reason
    assert receipts(proj, session) == []
    denies = [r for r in proj.journal(session) if r and r.get("k") == "deny"]
    assert denies and "NOTREST_OVERRIDE" in denies[-1]["reason"], denies


def test_a_client_the_agent_starts_with_it_gives_none(proj, tmp_path):
    """The agent starts a client of its own (here another stand-in) with the
    override: its hooks run under the person's client too, which was not."""
    inner_steps = tmp_path / "inner-steps.json"
    inner_results = tmp_path / "inner-results.jsonl"
    inner_steps.write_text(json.dumps([start(proj, "ov-inner"), pre(proj, "ov-inner")]))
    nested = {"argv": ["env", "NOTREST_OVERRIDE=%s" % LAW, sys.executable,
                       str(REPO / "tests" / "client_sim.py"), str(inner_steps),
                       str(inner_results)]}
    _proc, results = simulate(proj, [start(proj, "ov-outer"), nested], tmp_path)
    assert read_results(results)[1]["code"] == 0
    inner = read_results(inner_results)
    verdict, answer = decision(inner[1]["stdout"])
    assert verdict == "deny", answer
    assert "was not started with it" in answer["hookSpecificOutput"][
        "permissionDecisionReason"]
    assert receipts(proj, "ov-inner") == []


def test_a_forged_stop_override_is_refused(proj, tmp_path):
    """The stop laws take overrides too: bank-before-stop is not switched off by
    a Stop hook the agent runs with the override set."""
    tool = disguised_copy(proj, tmp_path)
    session = "ov-stop"
    write = step("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Write", tool_response={},
        tool_input={"file_path": str(proj.root / "a.py"), "content": "1"}))
    stop = tmp_path / "stop.json"
    stop.write_text(json.dumps(proj.payload("Stop", session, stop_hook_active=False)))
    forge = "NOTREST_OVERRIDE=bank-before-stop %s %s hook Stop claude < %s" % (
        sys.executable, tool, stop)
    _proc, results = simulate(proj, [start(proj, session), write,
                                     {"argv": ["sh", "-c", forge]}], tmp_path)
    answer = json.loads(read_results(results)[2]["stdout"])
    assert answer.get("decision") == "block", answer
    assert "NOTREST_OVERRIDE" in answer["reason"], answer
    assert receipts(proj, session) == []


def test_a_person_running_a_hook_by_hand_with_no_session_live(proj):
    """Outside any client, with no session of the project live, the override is
    the person's own (their terminal is all there is)."""
    payload = proj.payload("PreToolUse", "ov-hand", tool_name="Bash",
                           tool_input={"command": FORCE})
    result = proj.hook("PreToolUse", payload, NOTREST_OVERRIDE=LAW)
    assert decision(result.stdout)[0] == "allow"
    assert [r["by"] for r in receipts(proj, "ov-hand")] == ["NOTREST_OVERRIDE"]


@pytest.mark.parametrize("verb", [["allow", LAW, "--once", "--why", "mine now"],
                                  ["ack"]])
@pytest.mark.parametrize("where", ["under-the-client", "in-a-sandbox"])
def test_a_persons_verbs_are_refused_to_a_copy_the_agent_runs(proj, tmp_path, verb,
                                                                where):
    """`allow` and `ack` are a person's: a disguised copy run by the agent is
    refused under the client, and in a sandbox where the client cannot be seen."""
    if where == "in-a-sandbox":
        need_bwrap()
    tool = disguised_copy(proj, tmp_path)
    argv = [sys.executable, str(tool), "--root", str(proj.root)] + verb
    if where == "in-a-sandbox":
        argv = SANDBOX.split() + argv
    _proc, results = simulate(proj, [start(proj, "ov-verb"), {"argv": argv}], tmp_path)
    done = read_results(results)[1]
    assert done["code"] == 2, done
    assert "is for a person, and it runs inside session" in done["stderr"], done
    assert "Traceback" not in done["stderr"]
    permits = proj.root / ".notrest" / "permits.json"
    assert not permits.exists() or LAW not in permits.read_text()


def _use_permit(proj, session):
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    result = proj.hook("PreToolUse", proj.payload(
        "PreToolUse", session, tool_name="Bash", tool_input={"command": FORCE}))
    assert decision(result.stdout)[0] == "allow", result.stdout
    return result.answer.get("systemMessage", "")


def test_a_permit_made_with_no_terminal_is_told_when_it_is_used(proj):
    """Nothing tells a person's terminal from a process the agent left running
    outside an unsandboxed client, but a person types `notrest allow` in a
    terminal: a permit made with none says so to the person when it is used, and
    in the next packet."""
    granted = proj.cli("allow", LAW, "--once", "--why", "fix history", USER="alice")
    assert granted.code == 0, granted.stderr
    message = _use_permit(proj, "ov-notty")
    assert "made with no terminal" in message and "the agent may have" in message
    proj.hook("SessionEnd", proj.payload("SessionEnd", "ov-notty", reason="exit"))
    packet = proj.hook("SessionStart", proj.payload("SessionStart", "ov-next",
                                                    source="startup"))
    context = packet.answer["hookSpecificOutput"]["additionalContext"]
    assert "override of %s (permit p-1 of" % LAW in context
    assert "made with no terminal" in context, context


def test_a_permit_made_in_a_terminal_is_a_plain_override(proj, tmp_path):
    if not shutil.which("script"):
        pytest.skip("no script(1) to give the command a terminal")
    command = "%s allow %s --once --why 'fix history'" % (
        proj.root / ".notrest" / "notrest", LAW)
    done = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True,
                          cwd=str(proj.root), env=proj.env(USER="alice"), timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    permits = json.loads((proj.root / ".notrest" / "permits.json").read_text())
    assert permits["permits"][0]["tty"].startswith("/dev/"), permits
    message = _use_permit(proj, "ov-tty")
    assert "override of %s used" % LAW in message
    assert "no terminal" not in message


def test_a_bank_from_the_clients_sandbox_is_the_sessions_own(proj, tmp_path):
    """The same blind spot, the other way round: Codex runs the agent's commands
    in its sandbox even unhardened (workspace-write), where the client is not an
    ancestor. The agent's own `notrest bank` there is the session's bank, not a
    note from outside."""
    need_bwrap()
    bank = SANDBOX.split() + [str(proj.root / ".notrest" / "notrest"), "bank",
                              "--session", "ov-bank", "--note", "did it", "--next", "more"]
    _proc, results = simulate(proj, [start(proj, "ov-bank"), {"argv": bank}], tmp_path)
    done = read_results(results)[1]
    assert done["code"] == 0, done
    assert "written outside the session" not in done["stdout"], done["stdout"]
    notes = [r for r in proj.journal("ov-bank") if r and r.get("k") == "note"]
    assert [(n["note"], n["inside"]) for n in notes] == [("did it", True)], notes
