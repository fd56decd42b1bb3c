"""Issue #14 in the real clients: CI runners that start from nothing each time.

Each "run" is what a CI job does on a fresh runner: a fresh clone of the team's
bare remote and a fresh HOME (so a new machine id), `sh install.sh`, then
`notrest sync` (the estate comes in), a scripted session of the real client
against the fake model server, and `notrest sync` again (the estate goes out).
The second run's first model request must carry the first run's note, next
step and files, labelled as coming from another machine; the remote's estate
ref must end up with both runs' sessions and no work-tree branch touched.
"""
import json
import os
import shutil
import subprocess

import rig
from rig import shell_call, strings, text_turn, tool_turn

TIMEOUT = 90
GIT_ENV = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
NOTE = "NOTE-CI-1 added ci_report.txt"
NEXT = "NEXT-CI-1 publish ci_report.txt"


def git(cwd, *args):
    proc = subprocess.run(["git"] + list(args), cwd=str(cwd), capture_output=True,
                          env=dict(os.environ, **GIT_ENV), timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def team_remote(tmp_path):
    remote = tmp_path / "team.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("the team's project\n")
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "init")
    git(seed, "push", "-q", str(remote), "main")
    return remote


def ci_job(e2e, client, remote, name, script, prompt):
    """One CI job on a fresh runner; returns (env, result, pull report, push report)."""
    env = e2e(client, script, name=name)
    shutil.rmtree(str(env.project))
    git(env.root, "clone", "-q", str(remote), str(env.project))
    rig.install_notrest(env.project, env.home, "both", env.codex_home)

    def sync():
        proc = subprocess.run([str(env.project / ".notrest" / "notrest"), "sync", "--json"],
                              cwd=str(env.project), capture_output=True, text=True,
                              timeout=120, env=rig.base_env(env.home, GIT_ENV))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return json.loads(proc.stdout)

    pulled = sync()
    res = env.run(prompt, timeout=TIMEOUT).check()
    assert not res.strays, res.stray_cmds  # nothing of notrest outlives the session
    pushed = sync()
    return env, res, pulled, pushed


def test_a_second_ci_run_starts_with_the_first_runs_note(e2e, client, tmp_path):
    remote = team_remote(tmp_path)
    bank = '.notrest/notrest bank --note "%s" --next "%s"' % (NOTE, NEXT)
    first = {"scripts": {"ci-run-1": [
        tool_turn(shell_call(client, "echo green > ci_report.txt")),
        tool_turn(shell_call(client, bank)), text_turn("run 1 done")]}}
    env1, res1, pulled1, pushed1 = ci_job(e2e, client, remote, "run1", first,
                                          "ci-run-1: write the report")
    assert pulled1["came_in"]["sessions"] == [] and pulled1["outcome"] == "ok"
    assert pushed1["pushed"] and pushed1["went_out"]["sessions"] == 1
    sid1 = rig.session_id(res1)
    files = git(remote, "ls-tree", "-r", "--name-only", "refs/notrest/estate").split()
    assert any(f.endswith("/%s.json" % rig.session_id(res1)) for f in files), files

    second = {"scripts": {"ci-run-2": [text_turn("caught up")]}}
    env2, res2, pulled2, pushed2 = ci_job(e2e, client, remote, "run2", second,
                                          "ci-run-2: carry on")
    assert [s["session"] for s in pulled2["came_in"]["sessions"]] == [sid1]
    first_request = "\n".join(strings(env2.requests()[0]["body"]))
    import notrest
    heading = [line for line in first_request.splitlines() if notrest.short_id(sid1) in
               line and "on another machine: machine " in line and client in line]
    assert heading, first_request[-3000:]
    assert NOTE in first_request and NEXT in first_request
    assert "ci_report.txt" in first_request
    # the second job's own session went out too; only the estate ref moved
    assert pushed2["went_out"]["sessions"] == 1
    files = git(remote, "ls-tree", "-r", "--name-only", "refs/notrest/estate").split()
    assert any(f.endswith("/%s.json" % rig.session_id(res2)) for f in files)
    assert git(remote, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main", "refs/notrest/estate"]
    assert git(remote, "rev-list", "--count", "main").strip() == "1"


def test_install_sync_the_client_ends_at_once_and_the_sync_lands_after(e2e, client,
                                                                        tmp_path):
    """With `install --sync`, the real client's SessionEnd and Stop start a detached
    sync: the client never waits for it, even when the remote hangs, and the
    session reaches the remote once the client is gone."""
    remote = team_remote(tmp_path)
    env = e2e(client, {"scripts": {"ci-sync": [
        tool_turn(shell_call(client, "echo a > a.txt")),
        tool_turn(shell_call(client, '.notrest/notrest bank --note "NOTE-AUTO" --next '
                                     '"NEXT-AUTO"')), text_turn("done")]}}, name="auto")
    shutil.rmtree(str(env.project))
    git(env.root, "clone", "-q", str(remote), str(env.project))
    rig.install_notrest(env.project, env.home, "both", env.codex_home)
    proc = subprocess.run(["sh", str(rig.REPO / "install.sh"), "--sync", str(env.project)],
                          env=rig.base_env(env.home, GIT_ENV), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = env.run("ci-sync: go", timeout=TIMEOUT, reap_strays=False,
                  env=dict(GIT_ENV)).check()
    try:
        def landed():
            out = subprocess.run(["git", "ls-tree", "-r", "--name-only",
                                  "refs/notrest/estate"], cwd=str(remote),
                                 capture_output=True, text=True).stdout
            return "/%s.json" % rig.session_id(res) in out
        import time
        end = time.monotonic() + 60
        while not landed() and time.monotonic() < end:
            time.sleep(0.2)
        log = env.project / ".notrest" / "sync" / "sync.log"
        assert landed(), log.read_text() if log.exists() else "(no sync log)"
    finally:
        rig.reap(res.marker)
    # a remote that hangs: the client still ends at once, the sync runs on alone
    slow = tmp_path / "slow-ssh"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    git(env.project, "remote", "set-url", "origin", "ssh://git.example.invalid/team.git")
    (env.project / ".notrest" / "sync" / "started").unlink()
    env.set_script({"scripts": {"ci-slow": [text_turn("quick")]}})
    res = env.run("ci-slow: go", timeout=TIMEOUT, reap_strays=False,
                  env=dict(GIT_ENV, GIT_SSH_COMMAND=str(slow))).check()
    try:
        assert res.duration < 20, res.duration
        left = [rig.cmdline(p) for p in rig.marked_processes(res.marker)]
        assert any("'--background'" in c for c in left), left  # still syncing, alone
    finally:
        rig.reap(res.marker)
