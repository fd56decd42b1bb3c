"""Identity by inode: a second name for a harness or secret file is the file.
The gate refuses making one (ln, link, cp -l, rsync --link-dest, os.link in
inline code) and judges a call on an existing hard link by the file it is."""
import os

import pytest

from conftest import make_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    project = make_project(tmp_path_factory.mktemp("inode"), clients="claude")
    (project.root / ".env").write_text("API_TOKEN=s3cr3tvalue\n")
    ssh = project.home / ".ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n")
    (project.root / "a").write_text("plain\n")
    return project


def call(proj, tool, tool_input):
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", "i1", tool_name=tool,
                                                  tool_input=tool_input))
    assert result.code == 0, result.stderr
    specific = result.answer.get("hookSpecificOutput") or {}
    return specific.get("permissionDecision"), specific.get(
        "permissionDecisionReason", "")


def bash(proj, command):
    return call(proj, "Bash", {"command": command})


def link(proj, source, name):
    path = proj.root / name
    if os.path.lexists(path):
        os.unlink(path)
    os.link(source, path)
    return path


@pytest.mark.parametrize("command,law", [
    ("ln .notrest/laws.json n.json", "protect-harness"),
    ("ln -f .notrest/laws.json n.json", "protect-harness"),
    ("ln -P .notrest/hooks/launch.sh .", "protect-harness"),
    ("ln -t /tmp .notrest/laws.json", "protect-harness"),
    ("link .notrest/laws.json n.json", "protect-harness"),
    ("cp -l .notrest/laws.json n.json", "protect-harness"),
    ("cp --link .claude/settings.json s.json", "protect-harness"),
    ("cp -al .notrest keep", "protect-harness"),
    ("rsync -a --link-dest=../.notrest .notrest/ keep/", "protect-harness"),
    ("python3 -c \"import os; os.link('.notrest/laws.json', 'n.json')\"",
     "protect-harness"),
    ("cp -l .env x", "protect-secrets"),
    ("ln .env x", "protect-secrets"),
    ("ln -s .env x", "protect-secrets"),
    ("ln ~/.ssh/id_rsa k", "protect-secrets"),
    ("link ~/.ssh/id_rsa k", "protect-secrets"),
    ("cp -al ~/.ssh keys", "protect-secrets"),
    ("ln -s ~/.ssh keys", "protect-secrets"),
    ("ln -s ../.env sub/x", "protect-secrets"),
    ("node -e \"require('fs').linkSync('.notrest/laws.json', 'n.json')\"",
     "protect-harness"),
])
def test_a_second_name_for_a_harness_or_secret_file_is_refused(proj, command, law):
    decision, reason = bash(proj, command)
    assert decision == "deny" and "[%s]" % law in reason, (command, decision, reason)


@pytest.mark.parametrize("command", ["ln a b", "cp -l a b", "ln -s a c", "link a d"])
def test_links_of_ordinary_files_are_allowed(proj, command):
    assert bash(proj, command)[0] != "deny", command


def test_a_write_through_a_hard_link_to_the_laws_is_refused(proj):
    path = link(proj, proj.root / ".notrest" / "laws.json", "n.json")
    for tool, tool_input in (
            ("Write", {"file_path": str(path), "content": "{}"}),
            ("Edit", {"file_path": str(path), "old_string": "{", "new_string": "{ "}),
            ("Bash", {"command": "echo x > n.json"})):
        decision, reason = call(proj, tool, tool_input)
        assert decision == "deny" and "[protect-harness]" in reason, (tool, reason)


def test_a_patch_through_a_hard_link_to_the_hook_settings_is_refused(proj):
    path = link(proj, proj.root / ".claude" / "settings.json", "s.json")
    patch = "*** Begin Patch\n*** Update File: s.json\n@@\n-{\n+{ \n*** End Patch\n"
    decision, reason = call(proj, "Bash", {"command": "apply_patch <<'EOF'\n%sEOF" % patch})
    assert decision == "deny" and "[protect-harness]" in reason, reason
    decision, reason = call(proj, "Write", {"file_path": str(path), "content": "{}"})
    assert decision == "deny" and "[protect-harness]" in reason, reason


def test_a_read_through_a_hard_link_to_a_secret_is_refused(proj):
    path = link(proj, proj.root / ".env", "notes.txt")
    decision, reason = call(proj, "Read", {"file_path": str(path)})
    assert decision == "deny" and "[protect-secrets]" in reason, reason
    link(proj, proj.home / ".ssh" / "id_rsa", "k")
    decision, reason = bash(proj, "cat k")
    assert decision == "deny" and "[protect-secrets]" in reason, reason


def test_an_ordinary_hard_link_reads_and_writes(proj):
    path = link(proj, proj.root / "a", "a2")
    assert call(proj, "Write", {"file_path": str(path), "content": "x"})[0] != "deny"
    assert bash(proj, "cat a2")[0] != "deny"


def test_doctor_names_a_harness_file_with_a_second_name_and_harden_refuses(tmp_path):
    import subprocess
    from conftest import REPO
    project = make_project(tmp_path, clients="claude")
    assert "PASS  no harness file has a second name" in project.cli("doctor").stdout
    laws = project.root / ".notrest" / "laws.json"
    os.link(laws, tmp_path / "elsewhere.json")
    doctor = project.cli("doctor")
    text = doctor.stdout + doctor.stderr
    assert doctor.code != 0 and "FAIL  .notrest/laws.json has 2 names" in text, text
    assert "remove the other name" in text and "then run install" in text
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    proc = subprocess.run(["sh", str(REPO / "install.sh"), "--harden", "--quiet",
                           str(project.root)], capture_output=True, env=env, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "will not harden" in err and "laws.json" in err, err
    assert not json_harden(project)
    os.unlink(tmp_path / "elsewhere.json")
    assert "has 2 names" not in project.cli("doctor").stdout


def json_harden(project):
    import json
    return json.loads((project.root / ".notrest" / "config.json").read_text()).get("harden")
