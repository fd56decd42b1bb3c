"""Issue #21 in the real clients: a Claude Code session with every hook switched off
by a settings file, and a Codex session whose hooks Codex does not trust, each run a
command that notrest's gate never saw. Afterwards `notrest audit` exits 1 and names
each command, the next session's packet names it; a project where every call was
judged gives exit 0 and no finding."""
import json
import os
import subprocess

import rig
from rig import shell_call, text_turn, tool_turn

TIMEOUT = 180


def cli(env, *args):
    return subprocess.run([str(env.project / ".notrest" / "notrest")] + list(args),
                          cwd=str(env.project), env=rig.base_env(env.home, {
                              "CODEX_HOME": str(env.codex_home)}),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)


def installed(e2e, client, command):
    env = e2e(client, {"scripts": {"audit": [tool_turn(shell_call(client, command)),
                                             text_turn("done")]}})
    rig.install_notrest(env.project, env.home, "both", env.codex_home)
    return env


def test_a_claude_session_with_hooks_disabled_is_named_by_the_audit(e2e):
    env = installed(e2e, "claude", "touch ran-unjudged.txt")
    local = env.project / ".claude" / "settings.local.json"
    data = json.loads(local.read_text()) if local.exists() else {}
    data["disableAllHooks"] = True
    local.write_text(json.dumps(data))
    env.run("audit: touch the file", timeout=TIMEOUT).check()
    assert (env.project / "ran-unjudged.txt").exists(), "the command did not run"
    journal = env.project / ".notrest" / "journal"
    assert not journal.exists() or not list(journal.glob("*.jsonl")), \
        "a hook fired although every hook was disabled"
    audit = cli(env, "audit")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert "touch ran-unjudged.txt" in audit.stdout
    assert "disableAllHooks in %s" % local in audit.stdout
    packet = cli(env, "packet").stdout
    assert "> UNJUDGED: " in packet and "touch ran-unjudged.txt" in packet


def test_a_codex_session_with_untrusted_hooks_is_named_by_the_audit(e2e):
    env = installed(e2e, "codex", "touch ran-untrusted.txt")
    env.run("audit: touch the file", timeout=TIMEOUT, bypass_hook_trust=False).check()
    assert (env.project / "ran-untrusted.txt").exists(), "the command did not run"
    audit = cli(env, "audit")
    assert audit.returncode == 1, audit.stdout + audit.stderr
    assert "touch ran-untrusted.txt" in audit.stdout and "trust codex" in audit.stdout
    assert "touch ran-untrusted.txt" in cli(env, "packet").stdout


def test_where_every_call_was_judged_the_audit_finds_nothing(e2e, client):
    env = installed(e2e, client, "touch ran-judged.txt")
    env.run("audit: touch the file", timeout=TIMEOUT).check()
    assert (env.project / "ran-judged.txt").exists()
    audit = cli(env, "audit")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "UNJUDGED" not in cli(env, "packet").stdout
