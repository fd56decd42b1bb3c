"""Issue #21 in the real clients: a Claude Code session with every hook switched off
by a settings file, and a Codex session whose hooks Codex does not trust, each run a
command that notrest's gate never saw. The next session (hooks on) starts with a
packet that names the command (its SessionStart ran the audit; no command was run
in between); `notrest audit` exits 1 and names it. A project where every call was
judged, a denied one among them, gives exit 0 and no finding."""
import json
import subprocess

import rig
from rig import shell_call, text_turn, tool_turn

TIMEOUT = 180
NEXT = "NEXTLOOK: what is there to do"


def cli(env, *args):
    return subprocess.run([str(env.project / ".notrest" / "notrest")] + list(args),
                          cwd=str(env.project), env=rig.base_env(env.home, {
                              "CODEX_HOME": str(env.codex_home)}),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def installed(e2e, client, *calls):
    env = e2e(client, {"scripts": {
        "AUDITONE": [tool_turn(shell_call(client, c)) for c in calls] + [
            text_turn("done")],
        "NEXTLOOK": [text_turn("nothing")]}})
    rig.install_notrest(env.project, env.home, "both", env.codex_home)
    return env


def next_packet(env, **kw):
    """The model requests of the next session, which its SessionStart packet is in."""
    env.run(NEXT, timeout=TIMEOUT, **kw).check()
    texts = [t for t in env.request_texts() if "NEXTLOOK" in t]
    assert texts, "the next session made no model request"
    return texts[0]


def unjudged_lines(text, command):
    return [part for part in text.split("\\n") if "> UNJUDGED: " in part and
            command in part]


def test_a_claude_session_with_hooks_disabled_is_named_by_the_audit(e2e):
    env = installed(e2e, "claude", "touch ran-unjudged.txt")
    local = env.project / ".claude" / "settings.local.json"
    data = json.loads(local.read_text()) if local.exists() else {}
    local.write_text(json.dumps(dict(data, disableAllHooks=True)))
    env.run("AUDITONE: touch the file", timeout=TIMEOUT).check()
    assert (env.project / "ran-unjudged.txt").exists(), "the command did not run"
    journal = env.project / ".notrest" / "journal"
    assert not journal.exists() or not list(journal.glob("*.jsonl")), \
        "a hook fired although every hook was disabled"
    local.write_text(json.dumps(data))  # hooks on again: the next session is judged
    packet = next_packet(env)
    assert unjudged_lines(packet, "touch ran-unjudged.txt"), packet[-3000:]
    audit = cli(env, "audit")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert "touch ran-unjudged.txt" in audit.stdout
    assert "disableAllHooks" in audit.stdout or "no notrest hook fired" in audit.stdout
    assert audit.stdout.count("UNJUDGED") == 1, audit.stdout  # the next one was judged


def test_a_codex_session_with_untrusted_hooks_is_named_by_the_audit(e2e):
    env = installed(e2e, "codex", "touch ran-untrusted.txt")
    env.run("AUDITONE: touch the file", timeout=TIMEOUT, bypass_hook_trust=False).check()
    assert (env.project / "ran-untrusted.txt").exists(), "the command did not run"
    packet = next_packet(env)  # hooks trusted for this one (the rig's bypass)
    assert unjudged_lines(packet, "touch ran-untrusted.txt"), packet[-3000:]
    audit = cli(env, "audit")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert "touch ran-untrusted.txt" in audit.stdout and "trust codex" in audit.stdout
    assert audit.stdout.count("UNJUDGED") == 1, audit.stdout


def test_where_every_call_was_judged_the_audit_finds_nothing(e2e, client):
    """A call the gate allowed and one it denied (the client writes the refusal as
    the call's result): neither is a finding, in either client's transcript."""
    env = installed(e2e, client, "touch ran-judged.txt",
                    "git push --force origin main")
    env.run("AUDITONE: touch the file", timeout=TIMEOUT).check()
    assert (env.project / "ran-judged.txt").exists()
    journal = "".join(p.read_text() for p in (
        env.project / ".notrest" / "journal").glob("*.jsonl"))
    assert '"k":"deny"' in journal.replace(" ", "") and "no-force-push" in journal
    audit = cli(env, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "UNJUDGED" not in next_packet(env) and cli(env, "audit").returncode == 0


def test_codex_calls_of_other_tools_are_judged_or_never_ran(e2e):
    """Codex's other tools go through its hooks too (view_image); a call of a tool
    this Codex does not offer is answered "unsupported call" and never runs: none
    of them is a finding."""
    env = e2e("codex", {"scripts": {"AUDITONE": [
        tool_turn({"name": "update_plan", "arguments": {"plan": [
            {"step": "look", "status": "in_progress"}]}}),
        tool_turn({"name": "view_image", "arguments": {"path": "README.md"}}),
        tool_turn(shell_call("codex", "ls")), text_turn("done")]}})
    rig.install_notrest(env.project, env.home, "both", env.codex_home)
    env.run("AUDITONE: look around", timeout=TIMEOUT).check()
    audit = cli(env, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
