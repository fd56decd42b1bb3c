"""Issue #28, item 2: notrest's hooks and `sync` run git outside both clients'
sandboxes, so every git call they make must execute nothing that the repository,
the user's config, the caller's environment or PATH configures. A repository the
agent controls sets every key that names a program (core.fsmonitor, hooks, a clean
filter defined in an included file, a pager, an external diff, uploadpack, a
credential helper, ssh), so does ~/.gitconfig, the environment adds GIT_CONFIG_*,
and a `git` planted first on PATH logs itself: each writes a marker file. The
hooks, run as the clients run them, and `sync` must leave no marker, and still do
their work (the packet names the branch, the gate sees the uncommitted change)."""
import json
import os
import subprocess

import pytest

from conftest import make_project
import notrest

BASE_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
            "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args, env=None):
    full = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(cwd), **BASE_ENV)
    full.update(env or {})
    return subprocess.run(["git"] + list(args), cwd=str(cwd), env=full,
                          capture_output=True, timeout=60)


def marker_command(marks, name):
    return "touch %s/%s; cat" % (marks, name)


def make_hostile(proj, marks):
    """Program-naming git config everywhere git would read it; returns the env
    that a hook gets (GIT_* variables and a PATH with a logging `git` first)."""
    root, home = proj.root, proj.home
    (root / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (root / "a.txt").write_text("one\n")
    assert git(root, "add", "-A").returncode == 0
    assert git(root, "commit", "-qm", "a").returncode == 0
    hooks = root / ".git" / "evil-hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "pre-push", "reference-transaction",
                 "post-checkout"):
        (hooks / hook).write_text("#!/bin/sh\ntouch %s/hook-%s\n" % (marks, hook))
        (hooks / hook).chmod(0o755)
    included = root / ".git" / "more.config"
    included.write_text("\n".join([
        '[filter "evil"]', "  clean = %s" % marker_command(marks, "clean"),
        "  smudge = %s" % marker_command(marks, "smudge"), "  required = true",
        "[core]", "  pager = %s" % marker_command(marks, "pager"),
        "[diff]", "  external = %s" % marker_command(marks, "external"),
        '[diff "evil"]', "  textconv = %s" % marker_command(marks, "textconv"), ""]))
    config = {
        "core.fsmonitor": marker_command(marks, "fsmonitor"),
        "core.hooksPath": str(hooks),
        "include.path": "more.config",
        "core.sshCommand": marker_command(marks, "ssh"),
        "credential.helper": "!" + marker_command(marks, "credential"),
        "core.askPass": marker_command(marks, "askpass"),
        "remote.origin.uploadpack": marker_command(marks, "uploadpack"),
        "remote.origin.receivepack": marker_command(marks, "receivepack"),
        "core.alternateRefsCommand": marker_command(marks, "altrefs"),
    }
    for key, value in config.items():
        assert git(root, "config", key, value).returncode == 0
    (home / ".gitconfig").write_text("\n".join([
        "[core]", "  fsmonitor = %s" % marker_command(marks, "global-fsmonitor"),
        '[filter "global"]', "  clean = %s" % marker_command(marks, "global-clean"),
        "[include]", "  path = ~/.gitconfig.more", ""]))
    (home / ".gitconfig.more").write_text("[status]\n  relativePaths = true\n")
    with open(root / ".git" / "info" / "attributes", "w") as handle:
        handle.write("* filter=global\n")
    planted = home / ".local" / "bin"
    planted.mkdir(parents=True)
    (planted / "git").write_text("#!/bin/sh\ntouch %s/planted-git\nexec %s \"$@\"\n" % (
        marks, notrest.git_program()))
    (planted / "git").chmod(0o755)
    (root / "a.txt").write_text("two, uncommitted\n")  # a change the gate must see
    os.utime(root / "a.txt", (1, 1))
    return {"PATH": "%s:%s" % (planted, os.environ.get("PATH", "/usr/bin:/bin")),
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_CONFIG_VALUE_0": marker_command(marks, "env-fsmonitor"),
            "GIT_EXTERNAL_DIFF": marker_command(marks, "env-external"),
            "GIT_PAGER": marker_command(marks, "env-pager")}


@pytest.fixture
def hostile(tmp_path):
    proj = make_project(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = make_hostile(proj, marks)
    return proj, marks, env


def test_the_hostile_config_does_run_programs_in_a_plain_git(hostile):
    """The control: the same repository, a plain `git status` and `git diff`, as
    notrest's own calls used to run them, execute what the config says."""
    proj, marks, env = hostile
    full = dict(os.environ, HOME=str(proj.home), **env)
    for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        full.pop(key, None)
    subprocess.run(["git", "status", "--porcelain"], cwd=str(proj.root), env=full,
                   capture_output=True, timeout=60)
    subprocess.run(["git", "diff"], cwd=str(proj.root), env=full, capture_output=True,
                   timeout=60)
    ran = {p.name for p in marks.iterdir()}
    assert "planted-git" in ran and "hook-post-index-change" in ran, ran
    assert ran & {"fsmonitor", "env-fsmonitor"} and ran & {"clean", "global-clean"}, ran


def test_no_hook_runs_what_the_repository_or_the_user_configures(hostile):
    proj, marks, env = hostile
    session = "gs-1"
    for client in ("claude", "codex"):
        start = proj.hook("SessionStart", proj.payload(
            "SessionStart", session + client, client, source="startup"), client, **env)
        assert start.code == 0, start.stderr
        context = json.dumps(start.answer)
        assert "main" in context, context  # the packet still reads the branch
    discard = proj.hook("PreToolUse", proj.payload(
        "PreToolUse", session + "claude", tool_name="Bash",
        tool_input={"command": "git checkout -- a.txt"}), **env)
    answer = discard.answer.get("hookSpecificOutput", {})
    assert answer.get("permissionDecision") in ("deny", "ask"), discard.answer
    assert "a.txt" in answer.get("permissionDecisionReason", ""), answer
    for command in ("git clean -fdx", "git stash drop", "git branch -D main",
                    "git -C . reset --hard", "git status"):
        result = proj.hook("PreToolUse", proj.payload(
            "PreToolUse", session + "claude", tool_name="Bash",
            tool_input={"command": command}), **env)
        assert result.code in (0, 2), result.stderr
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session + "claude", tool_name="Bash",
        tool_input={"command": "git status"}, tool_response={"stdout": ""}), **env)
    proj.cli("bank", "--session", session + "claude", "--note", "n", **env)
    proj.hook("Stop", proj.payload("Stop", session + "claude"), **env)
    proj.hook("SessionEnd", proj.payload("SessionEnd", session + "claude",
                                         reason="exit"), **env)
    assert proj.cli("doctor", **env).code in (0, 1)
    assert sorted(p.name for p in marks.iterdir()) == []


def test_sync_runs_nothing_the_repository_configures(hostile, tmp_path):
    proj, marks, env = hostile
    remote = tmp_path / "remote.git"
    assert git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote)).returncode == 0
    assert git(proj.root, "config", "remote.origin.url", str(remote)).returncode == 0
    proj.hook("SessionStart", proj.payload("SessionStart", "gs-sync", source="startup"),
              **env)
    proj.cli("bank", "--session", "gs-sync", "--note", "synced", **env)
    first = proj.cli("sync", **env)
    assert first.code == 0, first.stdout + first.stderr
    again = proj.cli("sync", **env)
    assert again.code == 0, again.stdout + again.stderr
    assert git(remote, "rev-parse", "--verify", "-q", notrest.ESTATE_REF).returncode == 0
    assert sorted(p.name for p in marks.iterdir()) == []


def test_filter_names_come_from_every_config_file_git_would_read(tmp_path):
    dot_git = tmp_path / "repo" / ".git"
    dot_git.mkdir(parents=True)
    (tmp_path / "inc").mkdir()
    (dot_git / "config").write_text(
        '[core]\n\tbare = false\n[filter "One"]\n\tclean = x\n'
        '[include]\n\tpath = ../../inc/a.conf\n[includeIf "gitdir:/"]\n'
        '\tpath = "%s"\n' % (tmp_path / "inc" / "b.conf"))
    (tmp_path / "inc" / "a.conf").write_text('[filter "two \\"q\\""] clean = y\n')
    (tmp_path / "inc" / "b.conf").write_text("[filter.Three]\nclean = z\n"
                                             "[include]\npath = b.conf\n")
    names = notrest.git_filter_names([str(dot_git)])
    assert names == {"One", 'two "q"', "three"}
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: %s\n" % dot_git)
    assert notrest.git_config_dirs(str(worktree)) == [str(dot_git)]
    argv = notrest.git_argv(str(worktree), ["status"])
    assert argv[0].startswith("/") and argv[-1] == "status"
    assert "filter.One.clean=" in argv and "core.fsmonitor=false" in argv


def test_a_repository_with_config_git_cannot_be_read_in_full_runs_no_git(tmp_path):
    dot_git = tmp_path / ".git"
    dot_git.mkdir()
    lines = ['[filter "f%d"]\n\tclean = x\n' % i for i in range(
        notrest.GIT_FILTERS_MAX + 1)]
    (dot_git / "config").write_text("".join(lines))
    with pytest.raises(notrest.GitUnsafe):
        notrest.git_argv(str(tmp_path), ["status"])
    assert notrest.git_state(str(tmp_path)) is None
