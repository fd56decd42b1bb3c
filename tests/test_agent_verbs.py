"""Issue #28, item 3: a person's verbs (install, uninstall, trust, allow, ack) check
their own authority when they run, not only at the gate: the gate may be got past
(`base64 -d | sh`, awk's system(), a git alias, a copy of the CLI), the verb itself
then refuses a process that a client started. What the clients give away: Claude
Code sets CLAUDECODE in its tools' environment, Codex CODEX_THREAD_ID (and
CODEX_SANDBOX in its sandbox), notrest's SessionStart NOTREST_SESSION; and the
client is the process's ancestor."""
import os
import shutil
import subprocess

import pytest

from conftest import make_project

VERBS = [["install", "--client", "both", "."], ["uninstall", "."],
         ["trust", "codex"], ["allow", "no-force-push", "--why", "mine"], ["ack"]]


def harness_bytes(proj):
    files = [proj.root / ".claude" / "settings.json", proj.root / ".codex" / "hooks.json",
             proj.root / ".notrest" / "config.json"]
    return {str(p): p.read_bytes() for p in files if p.exists()}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return make_project(tmp_path_factory.mktemp("verbs"))


@pytest.mark.parametrize("marker", ["CLAUDECODE", "CODEX_THREAD_ID", "CODEX_SANDBOX",
                                    "NOTREST_SESSION"])
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_persons_verb_refuses_the_agents_environment(shared, verb, marker):
    before = harness_bytes(shared)
    result = shared.cli(*verb, **{marker: "1"})
    assert result.code == 2, (result.stdout, result.stderr)
    assert "is for a person" in result.stderr and marker in result.stderr
    assert "Traceback" not in result.stderr
    assert harness_bytes(shared) == before
    permits = shared.root / ".notrest" / "permits.json"
    assert not permits.exists() or "mine" not in permits.read_text()


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_persons_verb_refuses_a_process_under_a_client(shared, tmp_path, verb):
    """Started by a `claude` (here: a shell by that name), even detached by setsid
    while its parent lives, the verb sees the client among its ancestors."""
    client = tmp_path / "claude"
    shutil.copy("/bin/sh", client)
    before = harness_bytes(shared)
    cli = str(shared.root / ".notrest" / "notrest")
    script = '"$0" "$@"; echo "exit=$?"'
    proc = subprocess.run([str(client), "-c", script, cli] + verb, capture_output=True,
                          text=True, cwd=str(shared.root), env=shared.env(), timeout=60)
    assert "exit=2" in proc.stdout, (proc.stdout, proc.stderr)
    assert "is for a person, and it runs under claude" in proc.stderr
    assert harness_bytes(shared) == before


def test_from_a_persons_terminal_the_verbs_work(tmp_path):
    proj = make_project(tmp_path)
    assert proj.cli("allow", "no-force-push", "--why", "fixing history").code == 0
    again = proj.cli("install", "--client", "both", ".")
    assert again.code == 0, again.stderr
    gone = proj.cli("uninstall", ".")
    assert gone.code == 0, gone.stderr
    assert not (proj.root / ".codex" / "hooks.json").exists() or "notrest" not in (
        proj.root / ".codex" / "hooks.json").read_text()
