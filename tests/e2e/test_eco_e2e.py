"""Issue #15 in the real clients: Codex in one step (`install --trust`, then a
`codex exec` WITHOUT --dangerously-bypass-hook-trust runs notrest's hooks), a moved
and a cloned project keep every Codex hook (run from a subdirectory), and both
plugin forms install with each client's own plugin commands, with exactly one
notrest acting per event when the plugin and a project install are both there."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import notrest
import rig
from rig import shell_call, text_turn, tool_turn
from test_scenarios import TIMEOUT, bodies, git, packets, sid_of, tool_output

SECRET = "sk-live-4f9b2c1d8e7a6b5c"


def codex_bin():
    return str(rig.require_binary("codex"))


def notrest_cli(project, home, *args, codex_home=None):
    env = rig.base_env(home, {"CODEX_HOME": str(codex_home or Path(home) / ".codex"),
                              "PATH": "%s:%s" % (rig.bin_dir(), os.environ["PATH"])})
    return subprocess.run([str(Path(project) / ".notrest" / "notrest")] + list(args),
                          cwd=str(project), env=env, capture_output=True, text=True,
                          timeout=120)


def secret_script(key):
    return {"scripts": {key: [tool_turn(shell_call("codex", "cat .env")),
                              text_turn("read it")]}}


def codex_run(env, prompt, cwd=None, **kw):
    """codex exec as a person runs it: no bypass flag, the config as trust left it."""
    cwd = Path(cwd or env.project)
    res = rig.run_codex(cwd, env.home, prompt, env.url, bypass_hook_trust=False,
                        write_config=False, timeout=TIMEOUT,
                        env={"CODEX_HOME": str(env.codex_home),
                             "TMPDIR": str(env.tmpdir)}, **kw)
    env.runs.append(res)
    return res.check()


def first_packets(env, since):
    return packets(bodies(env)[since])


def test_install_trust_makes_codex_run_the_hooks_without_the_bypass(e2e):
    env = e2e("codex", secret_script("trust-1"))
    (env.project / ".env").write_text("API_KEY=%s\n" % SECRET)
    rig.write_codex_config(env.codex_home, env.url, env.project, trust_project=False,
                           tables='[projects."/somewhere/else"]\ntrust_level = "trusted"')
    rig.install_notrest(env.project, env.home, "codex", env.codex_home)
    before = notrest_cli(env.project, env.home, "doctor")
    assert before.returncode == 1
    assert "FAIL  Codex does not trust the project" in before.stdout
    assert "FAIL  Codex hook PreToolUse: untrusted (Codex skips it silently)" in \
        before.stdout

    # untrusted: Codex skips notrest silently, the secret reaches the model
    codex_run(env, "trust-1: read the env")
    assert first_packets(env, 0) == []
    assert SECRET in tool_output(bodies(env)[1], 0)

    proc = subprocess.run(["sh", str(rig.REPO / "install.sh"), "--client", "codex",
                           "--trust", "--codex", codex_bin(), "--quiet", str(env.project)],
                          env=rig.base_env(env.home, {"CODEX_HOME": str(env.codex_home)}),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "trusted the project %s in Codex" % env.project in proc.stdout
    assert "Codex trusts the 10 notrest project hooks for this project (10 newly)" in \
        proc.stdout
    after = notrest_cli(env.project, env.home, "doctor")
    assert "FAIL  Codex" not in after.stdout, after.stdout
    for event in ("SessionStart", "PreToolUse", "Stop", "SessionEnd"):
        assert "PASS  Codex hook %s: trusted" % event in after.stdout
    # the live canary still remembers the session that ran without the hooks
    assert "FAIL  codex ran here without notrest's hooks" in after.stdout
    assert "trust codex" in after.stdout
    config = (env.codex_home / "config.toml").read_text()
    assert '[projects."/somewhere/else"]' in config, "the person's config is kept"
    assert 'base_url = "%s/v1"' % env.url.rstrip("/") in config or "fake" in config

    seen = len(bodies(env))
    codex_run(env, "trust-1: read the env again")
    assert len(first_packets(env, seen)) == 1, "the packet reached the first request"
    out = tool_output(bodies(env)[seen + 1], 0)
    assert "Command blocked by PreToolUse hook" in out and "protect-secrets" in out, out
    assert SECRET not in json.dumps(bodies(env)[seen + 1])
    # the session before the trust ran unjudged: the audit names it, a person acks it
    audit = notrest_cli(env.project, env.home, "audit")
    assert audit.returncode == 1 and "trust codex" in audit.stdout, audit.stdout
    assert notrest_cli(env.project, env.home, "ack").returncode == 0
    clean = notrest_cli(env.project, env.home, "doctor")
    assert clean.returncode == 0 and "FAIL" not in clean.stdout, clean.stdout
    # trusting again changes nothing
    again = notrest_cli(env.project, env.home, "trust", "codex", "--codex", codex_bin())
    assert again.returncode == 0 and "(0 newly)" in again.stdout, again.stdout


def test_a_moved_and_a_cloned_project_keep_every_codex_hook(e2e):
    env = e2e("codex", secret_script("move-1"))
    rig.install_notrest(env.project, env.home, "codex", env.codex_home)
    (env.project / ".gitignore").write_text(".env\n")
    (env.project / "src" / "deep").mkdir(parents=True)
    (env.project / "src" / "deep" / "keep.txt").write_text("x\n")
    git(env.project, "add", "-A")
    git(env.project, "commit", "-q", "-m", "notrest")
    moved = env.root / "moved-project"
    shutil.move(str(env.project), str(moved))
    clone = env.root / "cloned-project"
    git(env.root, "clone", "-q", str(moved), str(clone))
    rig.write_codex_config(env.codex_home, env.url, env.root / "nowhere",
                           trust_project=False)
    for root in (moved, clone):
        (root / ".env").write_text("API_KEY=%s\n" % SECRET)
        doctor = notrest_cli(root, env.home, "doctor")
        assert "FAIL  Codex hook PreToolUse: untrusted" in doctor.stdout
        trusted = notrest_cli(root, env.home, "trust", "codex", "--codex", codex_bin())
        assert trusted.returncode == 0, trusted.stdout + trusted.stderr
        for cwd in (root, root / "src" / "deep"):
            seen = len(bodies(env))
            res = codex_run(env, "move-1: read the env", cwd=cwd)
            assert len(first_packets(env, seen)) == 1, (root, cwd)
            out = tool_output(bodies(env)[seen + 1], 0)
            assert "protect-secrets" in out, (root, cwd, out)
            sid = sid_of(res)
            assert (root / ".notrest" / "journal" / ("%s.jsonl" % sid)).exists()
        assert not (root / "src" / "deep" / ".notrest").exists()
    assert "protect-secrets" in notrest_cli(clone, env.home, "log").stdout


# --------------------------------------------------------------------------
# plugin forms
# --------------------------------------------------------------------------
def plugin_env(e2e, client, key, turns, name=None):
    env = e2e(client, {"scripts": {key: turns}}, name)
    source = rig.plugin_source(env.root / "notrest-src")
    rig.install_plugin(client, env.home, source, env.codex_home)
    if client == "codex":
        rig.write_codex_config(env.codex_home, env.url, env.project, tables=_codex_tables(
            env))
        trust = subprocess.run(["python3", str(source / "notrest.py"), "trust", "codex",
                                "--plugin", "--codex", codex_bin()], cwd=str(env.project),
                               env=rig.base_env(env.home, {"CODEX_HOME": str(
                                   env.codex_home)}), capture_output=True, text=True,
                               timeout=120)
        assert trust.returncode == 0, trust.stdout + trust.stderr
        assert "notrest plugin hooks (notrest@notrest) for every project" in trust.stdout
    return env, source


def _codex_tables(env):
    """The marketplace and plugin tables `codex plugin add` wrote (kept when the
    rig writes the model provider config)."""
    text = (env.codex_home / "config.toml").read_text()
    return text[text.index("[marketplaces."):] if "[marketplaces." in text else text


def plugin_run(env, prompt):
    if env.client == "claude":
        res = env.run(prompt, timeout=TIMEOUT)
    else:
        res = rig.run_codex(env.project, env.home, prompt, env.url, timeout=TIMEOUT,
                            bypass_hook_trust=False, write_config=False,
                            env={"CODEX_HOME": str(env.codex_home),
                                 "TMPDIR": str(env.tmpdir)})
        env.runs.append(res)
    return res.check()


def journal_of(project, sid):
    return rig.read_journal(project / ".notrest" / "journal" / ("%s.jsonl" % sid))


def test_the_plugin_form_installs_with_the_clients_own_commands(e2e, client):
    turns = [tool_turn(shell_call(client, "git push --force origin main")),
             text_turn("gave up")]
    env, _source = plugin_env(e2e, client, "plugin-1", turns)
    res = plugin_run(env, "plugin-1: push it")
    sid = sid_of(res)
    assert len(first_packets(env, 0)) == 1, "the plugin's packet reached the model"
    assert "notrest deny [no-force-push]" in tool_output(bodies(env)[1], 0)
    estate = env.project / ".notrest"
    assert (estate / ".gitignore").read_text() == notrest.ESTATE_GITIGNORE
    assert not (estate / "notrest.py").exists(), "the plugin runs from its own folder"
    records = journal_of(env.project, sid)
    assert {r.get("c") for r in records} == {client}
    starts = [r for r in records if r.get("k") == "start"]
    assert len(starts) == 1
    # git sees the estate's code-free runtime state as ignored
    status = git(env.project, "status", "--porcelain", "--untracked-files=all")
    assert ".notrest/journal" not in status and ".notrest/.gitignore" in status


def test_plugin_and_project_install_act_once_per_event(e2e, client):
    turns = [tool_turn(shell_call(client, "cat .env")), text_turn("gave up")]
    env, _source = plugin_env(e2e, client, "both-1", turns)
    (env.project / ".env").write_text("API_KEY=%s\n" % SECRET)
    rig.install_notrest(env.project, env.home, client, env.codex_home)
    if client == "codex":
        # untrusted project hooks are skipped by Codex: the plugin acts, alone
        res = plugin_run(env, "both-1: clean up")
        assert len(first_packets(env, 0)) == 1
        _assert_single(journal_of(env.project, sid_of(res)))
        trusted = notrest_cli(env.project, env.home, "trust", "codex", "--codex",
                              codex_bin())
        assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    seen = len(bodies(env))
    res = plugin_run(env, "both-1: clean up")
    assert len(first_packets(env, seen)) == 1, "one packet, not two"
    out = tool_output(bodies(env)[seen + 1], 0)
    assert out.count("notrest deny [protect-secrets]") == 1, out
    assert SECRET not in out
    records = journal_of(env.project, sid_of(res))
    _assert_single(records)


def _assert_single(records):
    """One journal line per event of the session: no second notrest wrote."""
    kinds = [r.get("k") for r in records]
    assert kinds.count("start") == 1, kinds
    assert kinds.count("prompt") == 1, kinds
    assert kinds.count("deny") == 1, kinds
    assert kinds.count("call") == 1, kinds
    stops = [r for r in records if r.get("k") == "stop"]
    assert len(stops) == 1, kinds


# --------------------------------------------------------------------------
# what the person sees of a deny in Claude's TUI
# --------------------------------------------------------------------------
def test_claudes_tui_shows_the_law_the_reason_and_the_instead(e2e):
    env = e2e("claude", {"scripts": {"tui-1": [tool_turn(shell_call("claude", "rm -rf ~")),
                                               text_turn("understood")]}})
    rig.install_notrest(env.project, env.home, "claude")
    screen = rig.run_claude_tui(env.project, env.home, "tui-1: clean my home", env.url,
                                width=120, done="understood")
    lines = screen.splitlines()
    at = next(i for i, line in enumerate(lines) if "Reason:" in line)
    shown = " ".join(line.strip(" │") for line in lines[at:at + 3])
    # Claude's own label stays (every hook deny is a "blocking error" in 2.1.x);
    # what follows it is notrest's first line: the law, why, and what to do instead
    assert "PreToolUse:Bash hook error: notrest deny [no-destroy]: deletes your home" \
        in shown, screen
    assert "Instead: delete only what you made" in shown, screen
    assert "In full:" not in shown
