"""Issue #14: the estate travels through git. Clones of one bare remote in a temp
folder stand for machines, each with its own HOME (so its own data_dir() and
machine id); notrest is installed in each by install.sh, sessions run through the
installed sh hooks, and `notrest sync` runs as a person (or CI) runs it. What we
look at: the packets the hooks print, the estates, and every object in the
remote (`git cat-file --batch-all-objects --batch`)."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ANSWER_WITHIN_S, REPO, Project, read_results, simulate, step
import notrest

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args, check=True):
    env = dict(PATH=os.environ.get("PATH", "/usr/bin:/bin"), HOME=str(cwd), **GIT_ENV)
    proc = subprocess.run(["git"] + list(args), cwd=str(cwd), env=env,
                          capture_output=True, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError("git %s: %s" % (" ".join(args), proc.stderr.decode()))
    return proc.stdout.decode("utf-8", "replace")


class Machine(Project):
    """A clone of the team's remote with notrest installed, its own HOME."""

    def env(self, client="claude", **extra):
        env = super().env(client, **extra)
        env.update(GIT_ENV)
        return env

    def sync(self, *args, **env):
        return self.cli("sync", *args, **env)

    def sync_json(self, *args):
        res = self.sync("--json", *args)
        assert res.stdout, res.stderr
        return res.code, json.loads(res.stdout)

    def start(self, session, client="claude"):
        res = self.hook("SessionStart", self.payload("SessionStart", session, client,
                                                     source="startup"), client)
        assert res.code == 0, res.stderr
        return packet_text(res)

    def work(self, session, files=(), note="", next_step="", command=None, opened=(),
             client="claude"):
        """One session in a stand-in client process, through the installed hooks:
        start, writes, a command, a bank run by the session's agent, the end."""
        p = lambda event, **f: self.payload(event, session, client, **f)  # noqa: E731
        steps = [step("SessionStart", p("SessionStart", source="startup"), client)]
        for name in files:
            steps.append(step("PostToolUse", p(
                "PostToolUse", tool_name="Write", tool_input={
                    "file_path": str(self.root / name), "content": "x\n"},
                tool_response={"type": "create"}), client))
        if command:
            steps.append(step("PostToolUse", p(
                "PostToolUse", tool_name="Bash", tool_input={"command": command},
                tool_response={"stdout": ""}), client))
        if note or next_step or opened:
            args = ["bank", "--session", session, "--note", note, "--next", next_step]
            for text in opened:
                args += ["--open", text]
            steps.append({"cli": args})
        steps.append(step("SessionEnd", p("SessionEnd", reason="exit"), client))
        self.runs = getattr(self, "runs", 0) + 1
        _proc, results = simulate(self, steps, self.home, name="%s-%d" % (
            session, self.runs))
        for result in read_results(results):
            assert result["code"] == 0, result


def heading(packet, session):
    """The packet line that names a session (whatever the packet's layout)."""
    lines = [line for line in packet.splitlines() if notrest.short_id(session) in line
             and not line.startswith(">")]
    assert lines, packet
    return lines[0]


def packet_text(res):
    answer = res.answer
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "") or \
        answer.get("systemMessage", "")


@pytest.fixture
def team(tmp_path):
    """make(name) -> a Machine: a fresh clone of one bare remote (seeded with a
    commit), its own HOME, notrest installed with install.sh."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "README.txt").write_text("hello\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "first commit")
    git(seed, "push", "-q", str(remote), "main")

    def make(name, install=True, install_args=()):
        home = tmp_path / ("home-" + name)
        home.mkdir()
        root = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(root))
        machine = Machine(root, home)
        if install:
            env = machine.env()
            proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", "both"] +
                                  list(install_args) + [str(root)], capture_output=True,
                                  env=env, timeout=120)
            assert proc.returncode == 0, proc.stderr.decode()
        return machine

    make.remote = remote
    return make


def remote_files(remote, ref="refs/notrest/estate"):
    out = git(remote, "ls-tree", "-r", "--name-only", ref, check=False)
    return set(out.split())


def remote_sessions(remote):
    return {Path(p).stem for p in remote_files(remote) if p.startswith("sessions/")}


def all_objects(remote):
    proc = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                          cwd=str(remote), capture_output=True, timeout=60,
                          env=dict(PATH=os.environ["PATH"], **GIT_ENV))
    assert proc.returncode == 0
    return proc.stdout


# ---- the story: machine A works, machine B starts knowing -----------------------------

def test_a_banks_and_syncs_b_starts_knowing_through_its_hook(team):
    a = team("a")
    a.cli("sync", "--label", "laptop-a")  # names this machine for the others
    a.work("a-sess-1", files=["greet.py", "docs/greet.md"],
           note="added the greet module", next_step="write tests for greet",
           opened=["decide the greeting's language"])
    res = a.sync()
    assert res.code == 0, res.stderr
    assert "went out: 1 session(s), 1 threads" in res.stdout
    b = team("b")
    res = b.sync()
    assert res.code == 0, res.stderr
    assert "came in: 1 session(s) (1 from laptop-a), 1 thread event(s)" in res.stdout
    packet = b.start("b-sess-1")
    line = heading(packet, "a-sess-1")
    assert "claude" in line and "on another machine: machine " in line and "ended" in \
        line, packet
    assert '> machine label: "laptop-a"' in packet  # a remote string: quoted data
    assert "added the greet module" in packet
    assert "write tests for greet" in packet
    assert "greet.py" in packet and "docs/greet.md" in packet
    assert "decide the greeting's language" in packet
    # nothing of A's machine leaves it: no absolute path of A's checkout or home
    blob = all_objects(team.remote)
    assert str(a.root).encode() not in blob and str(a.home).encode() not in blob


def test_sessions_of_other_machines_since_the_last_local_one_are_listed(team):
    a, b = team("a"), team("b")
    b.work("b-old", files=["b.txt"], note="b's own work", next_step="b's next")
    time.sleep(0.05)
    a.work("a-first", files=["one.py"], note="first on A", next_step="second on A")
    time.sleep(0.05)
    a.work("a-second", files=["two.py"], note="second on A", next_step="third on A")
    assert a.sync().code == 0
    assert b.sync().code == 0
    packet = b.start("b-new")
    name = "machine %s" % json.loads((a.home / ".local" / "share" / "notrest" /
                                      "machine.json").read_text())["id"][:6]
    for session, note, next_step, path in (("a-second", "second on A", "third on A",
                                            "two.py"),
                                           ("a-first", "first on A", "second on A",
                                            "one.py")):
        line = heading(packet, session)
        assert "on another machine: %s" % name in line or "on %s" % name in line, line
        assert note in packet and next_step in packet and path in packet, packet
    assert packet.index(heading(packet, "a-second")) < packet.index(
        heading(packet, "a-first"))  # the last note first, then those since
    assert "b's own work" not in packet  # this machine's own older session is not listed


def test_a_thread_closed_on_another_machine_arrives_as_a_proposal(team):
    a, b = team("a"), team("b")
    a.work("a1", files=["x.py"], note="n", next_step="m", opened=["flaky test_io"])
    a.sync()
    b.sync()
    thread = [line for line in b.start("b1").splitlines() if "flaky test_io" in line][0]
    tid = [w.strip(":") for w in thread.split() if "@" in w][0]
    assert tid.startswith("t1@") and len(tid) == 9, thread
    assert b.cli("bank", "--session", "b1", "--note", "fixed it", "--close", tid).code == 0
    assert b.sync().code == 0
    res = a.sync()
    assert "1 proposal(s) that a person decides (not applied)" in res.stdout, res.stdout
    packet = a.start("a2")
    # issue #28: B's event does not close A's thread; A's packet shows it, quoted
    assert "Proposals from other machines" in packet
    assert '> thread "t1" from machine' in packet and 'status "closed"' in packet
    opened = [t for t in notrest.load_threads(a.estate).values() if t["status"] == "open"]
    assert [t["text"] for t in opened] == ["flaky test_io"]
    # the opener closes it: that event applies everywhere
    assert a.cli("bank", "--session", "a2", "--note", "done", "--close", "t1").code == 0
    assert a.sync().code == 0 and b.sync().code == 0
    assert not [t for t in notrest.load_threads(b.estate).values() if t["status"] ==
                "open" and t["kind"] == "thread"]


def test_lessons_and_compiled_tools_travel_and_a_bad_tool_is_refused(team):
    a, b = team("a"), team("b")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    notrest.add_threads(a.estate, ["run the linter before the tests"], "learn",
                        time.time(), kind="lesson")
    good = {"id": "seq-1", "pattern": ["make fmt", "make lint"], "slots": [],
            "varying": [], "occurrences": 4, "sessions": 3, "evidence": []}
    bad = dict(good, id="seq-2", pattern=["make fmt", "rm -rf /"])
    for slug, candidate in (("make-fmt-lint", good), ("wipe-home", bad)):
        folder = a.root / ".notrest" / "compiled" / slug
        folder.mkdir(parents=True)
        script, args = notrest.render_run_script(candidate, slug)
        (folder / "run.sh").write_text(script)
        (folder / "SKILL.md").write_text(notrest.render_compiled_skill(slug, candidate,
                                                                        args))
        (folder / "meta.json").write_text(notrest.json_pretty(
            {"candidate": candidate["id"], "slug": slug, "pattern": candidate["pattern"],
             "args": args, "evidence": []}))
    assert a.sync().code == 0
    res = b.sync()
    assert res.code == 0
    assert "compiled tool(s) make-fmt-lint" in res.stdout, res.stdout
    assert "refused: compiled/wipe-home: `rm -rf /` breaks no-destroy" in res.stdout
    assert (b.root / ".notrest" / "compiled" / "make-fmt-lint" / "run.sh").is_file()
    assert (b.root / ".claude" / "skills" / "make-fmt-lint" / "SKILL.md").is_file()
    assert not (b.root / ".notrest" / "compiled" / "wipe-home").exists()
    packet = b.start("b1")
    assert "make-fmt-lint" in packet
    assert "run the linter before the tests" in packet
    # B never sends A's tool back as its own
    assert b.sync_json()[1]["went_out"]["compiled"] == 0


# ---- security -------------------------------------------------------------------------

SECRETS = ("sk-ant-api03-QwErTy0123456789AbCdEfGhIjKlMnOpQrStUv",
           "AKIAZ7QW3RTY5UIP2LKX", "q7Rv2/Lm9Xk4Tb8Wn3Zc6Yh1Jd5Fs0GaPe+HuK2M",
           "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "hunter2-Very-Secret-99")


def test_a_secret_in_a_command_never_reaches_any_object_of_the_remote(team):
    a, b = team("a"), team("b")
    command = ('curl -H "Authorization: Bearer %s" https://api.example.com && '
               'AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s aws s3 ls && '
               'git clone https://bob:%s@example.com/r.git && mysql --password=%s' %
               SECRETS)
    a.work("a1", files=["deploy.sh"], command=command,
           note="deployed with token %s" % SECRETS[3], next_step="rotate %s" % SECRETS[1],
           opened=["password=%s must go" % SECRETS[4]])
    res = a.hook("PostToolUseFailure", a.payload(
        "PostToolUseFailure", "a1", tool_name="Bash", tool_input={"command": command},
        error="exit 1: denied for key %s" % SECRETS[0]))
    assert res.code == 0
    res = a.sync("--journals")
    assert res.code == 0, res.stdout + res.stderr
    assert "1 journals" in res.stdout
    assert b.sync().code == 0
    blob = all_objects(team.remote)
    assert b"REDACTED" in blob  # the command did travel, redacted
    for secret in SECRETS:
        assert secret.encode() not in blob, secret
        for where in (b.root / ".notrest" / "sessions", b.root / ".notrest"):
            for path in where.glob("*.json*"):
                assert secret not in path.read_text(), (secret, path)


def test_the_second_scan_refuses_to_push_what_slipped_past_redaction(team):
    a = team("a")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    assert a.sync().code == 0
    before = all_objects(team.remote)
    # a journal line written raw (say, by an older notrest) that carries a key
    line = notrest.encode_line({"v": 1, "t": time.time(), "k": "tool",
                                "what": "export OPENAI_API_KEY=%s" % SECRETS[0]})
    with open(a.estate.journal("a1"), "a") as handle:
        handle.write(line)
    res = a.sync("--journals")
    assert res.code == 1
    assert "sync failed (refused): refused to push: journals/" in res.stdout, res.stdout
    assert "looks like a secret (anthropic-key)" in res.stdout
    assert SECRETS[0].encode() not in all_objects(team.remote)
    assert all_objects(team.remote) == before
    status = a.cli("status").stdout
    assert "sync: by hand, last run" in status and "FAILED (refused)" in status
    doctor = a.cli("doctor")
    assert doctor.code == 1 and "last sync" in doctor.stdout and "refused" in doctor.stdout
    # without --journals nothing raw leaves, and the sync goes through
    assert a.sync().code == 0


TAMPERING = [
    "git update-ref -d refs/notrest/estate",
    "git update-ref refs/notrest/estate HEAD",
    "git push origin :refs/notrest/estate",
    "git push --delete origin refs/notrest/estate",
    "git push --force origin HEAD:refs/notrest/estate",
    "git push origin +main:notrest/estate",
    "git push origin '+refs/*:refs/*'",
    "git push --mirror origin",
    "git fetch origin '+refs/heads/main:refs/notrest/estate'",
    "git for-each-ref --format='%(refname)' refs/notrest | xargs git update-ref -d",
    "git update-ref --stdin < /tmp/cmds",
    "git symbolic-ref HEAD refs/notrest/estate && git commit --allow-empty -m x",
    "git notes --ref=refs/notrest/estate add -m x",
    "git tag -f refs/notrest/estate",
    "git config remote.origin.push '+refs/*:refs/*'",
    "git config remote.origin.mirror true",
    "echo 0000 > .git/refs/notrest/estate",
    "rm -f .git/refs/notrest/estate",
    "sed -i /notrest/d .git/packed-refs",
    "bash -c 'git update-ref -d refs/notrest/remotes/origin/estate'",
    ".notrest/notrest sync --prune-before 2030-01-01",
    "python3 .notrest/notrest.py sync --prune-before=2020-01-01",
]
ALLOWED = ["git log --oneline refs/notrest/estate", "git show refs/notrest/estate:estate.json",
           ".notrest/notrest sync", ".notrest/notrest sync --dry-run --json",
           "git push origin HEAD:refs/heads/my-branch", "git fetch origin",
           "git update-ref refs/heads/topic HEAD"]


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_the_agent_cannot_rewrite_or_delete_the_estate_ref(team, client):
    a = team("a")
    for command in TAMPERING + ALLOWED:
        tool = "Bash"
        res = a.hook("PreToolUse", a.payload("PreToolUse", "s1", client, tool_name=tool,
                                             tool_input={"command": command}), client)
        assert res.code == 0, res.stderr
        text = res.stdout
        denied = '"deny"' in text or '"block"' in text
        assert denied == (command in TAMPERING), (command, text)
        if denied:
            assert any(law in text for law in ("protect-harness", "no-destroy",
                                               "no-force-push")), text


# ---- the repository stays as it was -----------------------------------------------

def repo_snapshot(machine):
    root = machine.root
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file():
            continue
        if rel.startswith(".notrest/") and rel.split("/")[1] in (
                "sessions", "index.json", "threads.jsonl", "sync", "journal",
                "compiled", ".index.lock", ".threads.lock"):
            continue  # the estate: what sync is for
        files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    gitdir = root / ".git"
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)")
    branch_refs = "\n".join(line for line in refs.splitlines()
                            if not line.startswith("refs/notrest/"))
    return {"files": files, "status": git(root, "status", "--porcelain=v2", "--branch"),
            "HEAD": (gitdir / "HEAD").read_bytes(), "index": (gitdir / "index").read_bytes(),
            "config": (gitdir / "config").read_bytes(), "refs": branch_refs,
            "packed": (gitdir / "packed-refs").read_bytes() if (gitdir / "packed-refs"
                                                                ).exists() else b"",
            "stash": git(root, "stash", "list"),
            "FETCH_HEAD": (gitdir / "FETCH_HEAD").exists(),
            "logs": sorted(p.relative_to(gitdir).as_posix() for p in (gitdir / "logs").rglob(
                "*") if p.is_file() and "notrest" not in p.as_posix())}


def test_head_branches_index_and_work_tree_are_byte_identical_after_syncs(team):
    a, b = team("a"), team("b")
    for m in (a, b):  # a dirty checkout: a staged change, an unstaged one, a new file
        git(m.root, "checkout", "-q", "-b", "topic")
        (m.root / "README.txt").write_text("staged\n")
        git(m.root, "add", "README.txt")
        (m.root / "README.txt").write_text("staged then edited\n")
        (m.root / "scratch.txt").write_text("untracked\n")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    b.work("b1", files=["y.py"], note="o", next_step="p")
    before = {m.root: repo_snapshot(m) for m in (a, b)}
    for m in (a, b, a, b):
        res = m.sync()
        assert res.code == 0, res.stdout + res.stderr
    a.sync("--dry-run")
    for m in (a, b):
        after = repo_snapshot(m)
        for key, value in before[m.root].items():
            assert after[key] == value, (m.root, key)
    assert remote_sessions(team.remote) == {"a1", "b1"}
    assert git(team.remote, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main", "refs/notrest/estate"]


# ---- when it runs: hooks start a detached sync, failures never block -----------------

def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def sync_processes(root):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path("/proc/%s/cmdline" % pid).read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"'--background'" in c for c in cmd) and str(root).encode() in cmd:
            found.append(int(pid))
    return found


def lock_busy(path):
    try:
        fd = os.open(str(path), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def test_install_sync_makes_session_end_start_a_detached_sync(team):
    a = team("a", install_args=["--sync"])
    config = json.loads((a.root / ".notrest" / "config.json").read_text())
    assert config["sync"]["auto"] is True
    a.work("a1", files=["x.py"], note="banked on A", next_step="more")  # ends: SessionEnd
    assert wait_for(lambda: "a1" in remote_sessions(team.remote)), \
        (a.root / ".notrest" / "sync" / "sync.log").read_text()
    assert wait_for(lambda: not sync_processes(a.root))
    log = (a.root / ".notrest" / "sync" / "sync.log").read_text()
    assert "went out: 1 session(s)" in log
    b = team("b")
    b.sync()
    assert "banked on A" in b.start("b1")


SLOW_REMOTE_S = 60


def test_a_slow_remote_never_holds_the_hook_or_its_pipes(team, tmp_path):
    a = team("a")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    proc = subprocess.run(["sh", str(REPO / "install.sh"), "--sync", str(a.root)],
                          env=a.env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "sync on: SessionEnd and Stop start" in proc.stdout
    git(a.root, "remote", "set-url", "origin", "ssh://git.example.invalid/team.git")
    slow = tmp_path / "slow-ssh"
    slow.write_text("#!/bin/sh\nsleep %d\n" % SLOW_REMOTE_S)
    slow.chmod(0o755)
    start = time.monotonic()
    res = a.hook("SessionEnd", a.payload("SessionEnd", "a1", reason="exit"),
                 GIT_SSH_COMMAND=str(slow))
    took = time.monotonic() - start
    assert res.code == 0 and res.stdout.strip() == "{}", res.stderr
    # subprocess.run returned long before the remote would answer: nobody held the
    # hook's pipes (a bound on the remote's time, not the hook's: load slows a hook)
    assert took < SLOW_REMOTE_S / 2, took
    lock_path = a.root / ".notrest" / "sync" / ".sync.lock"
    assert wait_for(lambda: lock_busy(lock_path), 10)  # one at a time: the lock is held
    pid = sync_processes(a.root)[0]
    fds = {int(fd): os.readlink("/proc/%d/fd/%s" % (pid, fd))
           for fd in os.listdir("/proc/%d/fd" % pid)}
    assert fds[0] == "/dev/null"
    assert fds[1] == fds[2] == str(a.root / ".notrest" / "sync" / "sync.log")
    assert not any(t.startswith("pipe:") or t.startswith("socket:") for fd, t in fds.items()
                   if fd <= 2)
    assert os.getsid(pid) == pid  # its own session: no terminal, no group of the client's
    # a second hook start within the minute does not pile up another one
    res = a.hook("Stop", a.payload("Stop", "a1"), GIT_SSH_COMMAND=str(slow))
    assert res.code == 0
    assert len(sync_processes(a.root)) == 1
    os.kill(pid, 9)


def test_offline_sync_fails_with_one_clear_line_and_loses_nothing(team):
    a = team("a", install_args=["--sync"])
    a.work("a1", files=["x.py"], note="first", next_step="second")
    assert wait_for(lambda: "a1" in remote_sessions(team.remote))
    assert wait_for(lambda: not sync_processes(a.root))
    moved = team.remote.with_name("remote-away.git")
    team.remote.rename(moved)  # the remote is gone: offline
    a.work("a2", files=["y.py"], note="made offline", next_step="push later")
    for event, payload in (("Stop", a.payload("Stop", "a2")),
                           ("SessionEnd", a.payload("SessionEnd", "a2", reason="exit"))):
        res = a.hook(event, payload)
        assert res.code == 0 and res.seconds < ANSWER_WITHIN_S, (event, res.stderr)
    res = a.sync()
    assert res.code == 1
    assert "sync failed (offline): cannot reach origin (%s)" % team.remote in res.stdout
    assert "nothing is lost" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
    assert "FAILED (offline)" in a.cli("status").stdout
    doctor = a.cli("doctor").stdout
    assert "FAIL  last sync" in doctor and "cannot reach origin" in doctor
    # the offline sync kept the estate on the local ref; back online, it all goes out
    assert "sessions/" in git(a.root, "ls-tree", "-r", "--name-only",
                              "refs/notrest/estate")
    moved.rename(team.remote)
    res = a.sync()
    assert res.code == 0, res.stdout
    assert remote_sessions(team.remote) == {"a1", "a2"}
    assert "last sync" in a.cli("doctor").stdout and "FAIL  last sync" not in \
        a.cli("doctor").stdout


def test_no_remote_and_no_git_say_what_to_do(team, tmp_path):
    a = team("a")
    git(a.root, "remote", "remove", "origin")
    res = a.sync()
    assert res.code == 1
    assert "there is no git remote named origin: add one" in res.stdout
    res = a.sync("--remote", "--upload-pack=touch /tmp/x")
    assert res.code == 2 and "is not a git remote name" in res.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    env = dict(a.env(), PATH=os.environ["PATH"])
    proc = subprocess.run(["sh", str(REPO / "install.sh"), str(plain)], env=env,
                          capture_output=True)
    assert proc.returncode == 0
    proc = subprocess.run([str(plain / ".notrest" / "notrest"), "sync"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "sync needs a git repository" in proc.stderr and "Traceback" not in proc.stderr
    (a.root / ".notrest" / "config.json").write_text(json.dumps(
        {"clients": ["claude"], "sync": {"ref": "refs/heads/main"}}))
    res = a.sync()
    assert res.code == 2 and "is not a ref under refs/notrest/" in res.stderr


# ---- merging: many machines at once, conflicts, pruning -----------------------------

def test_three_clones_syncing_at_once_for_20_rounds_lose_nothing(team):
    machines = [team(name) for name in ("a", "b", "c")]
    made, tries = set(), []
    for round_ in range(20):
        for m in machines:
            session = "%s-r%02d" % (m.root.name, round_)
            notrest.bank_session(m.estate, session, "round %d" % round_, "next")
            made.add(session)
        procs = [subprocess.Popen([str(m.root / ".notrest" / "notrest"), "sync", "--json"],
                                  cwd=str(m.root), env=m.env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for m in machines]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            report = json.loads(out)
            assert proc.returncode == 0, (report["outcome"], report["message"], err)
            tries.append(report["tries"])
    for _ in range(2):
        for m in machines:
            assert m.sync().code == 0
    print("push attempts per sync:", sorted(tries))
    assert max(tries) > 1  # pushes were overtaken, fetched, merged and retried
    assert remote_sessions(team.remote) == made
    for m in machines:
        held = {p.stem for p in (m.root / ".notrest" / "sessions").glob("*.json")}
        assert held == made, m.root
        index = json.loads((m.root / ".notrest" / "index.json").read_text())
        assert {e["session"] for e in index["sessions"]} == made


def test_the_same_record_on_two_sides_converges_on_the_newer_one(team):
    a, b = team("a"), team("b")
    a.work("shared", files=["x.py"], note="short", next_step="n")
    # the same session id on B with a longer journal (a copied estate): both sides
    # hold that file; the record with the higher sequence wins everywhere
    (b.root / ".notrest" / "journal").mkdir(exist_ok=True)
    shutil.copy(str(a.estate.journal("shared")), str(b.estate.journal("shared")))
    for i in range(3):
        b.cli("bank", "--session", "shared", "--note", "longer %d" % i)
    assert a.sync().code == 0
    assert b.sync().code == 0
    assert a.sync().code == 0
    path = git(team.remote, "ls-tree", "-r", "--name-only", "refs/notrest/estate").split()
    record = [p for p in path if p.endswith("/shared.json")][0]
    winner = json.loads(git(team.remote, "show", "refs/notrest/estate:" + record))
    b_id = json.loads((b.home / ".local" / "share" / "notrest" / "machine.json"
                       ).read_text())["id"]
    a_events = json.loads((a.root / ".notrest" / "sessions" / "shared.json").read_text())[
        "events"]
    assert winner["machine"]["id"] == b_id and winner["seq"] == a_events + 3, winner
    # A keeps its own record (its journal is the truth here) and does not fight
    assert json.loads((a.root / ".notrest" / "sessions" / "shared.json").read_text())[
        "note"] == "short"
    code, report = a.sync_json()
    assert code == 0 and report["went_out"]["sessions"] == 0 and not report["pushed"]


def test_prune_before_removes_old_sessions_everywhere_and_rewrites_history(team):
    a, b = team("a"), team("b")
    old = time.time() - 400 * 86400
    for i, t in enumerate((old, old + 3600, time.time())):
        session = "s%d" % i
        notrest.append_record(a.estate.journal(session), {
            "v": 1, "t": t, "k": "note", "by": "cli", "note": "session %d" % i, "next": ""})
        notrest.refresh_session(a.estate, session, force_index=True)
    assert a.sync().code == 0 and b.sync().code == 0
    assert remote_sessions(team.remote) == {"s0", "s1", "s2"}
    day = time.strftime("%Y-%m-%d", time.gmtime(old + 86400 * 30))
    res = a.sync("--prune-before", day)
    assert res.code == 0, res.stdout + res.stderr
    assert "2 session(s) pruned" in res.stdout
    assert remote_sessions(team.remote) == {"s2"}
    assert git(team.remote, "log", "--format=%P", "-1", "refs/notrest/estate").strip() == ""
    res = b.sync()
    assert res.code == 0 and "2 pruned session(s) removed" in res.stdout, res.stdout
    assert {p.stem for p in (b.root / ".notrest" / "sessions").glob("*.json")} == {"s2"}
    # A keeps its own records; nobody sends the old sessions back
    assert (a.root / ".notrest" / "sessions" / "s0.json").exists()
    notrest.append_record(a.estate.journal("s0"), {"v": 1, "t": old + 7200, "k": "note",
                                                   "by": "cli", "note": "late", "next": ""})
    notrest.refresh_session(a.estate, "s0")
    for m in (a, b, a):
        assert m.sync().code == 0
    assert remote_sessions(team.remote) == {"s2"}
    res = a.sync("--prune-before", "2999-01-01")
    assert res.code == 2 and "is in the future" in res.stderr
    res = a.sync("--prune-before", "last week")
    assert res.code == 2 and "is not a date" in res.stderr


def test_garbage_in_the_ref_is_skipped_with_a_line_never_a_traceback(team, tmp_path):
    a, b = team("a"), team("b")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    a.sync()
    # someone pushes junk into the estate ref by hand
    junk = tmp_path / "junk"
    git(tmp_path, "clone", "-q", str(team.remote), str(junk))
    git(junk, "fetch", "-q", "origin", "refs/notrest/estate:refs/notrest/estate")
    git(junk, "checkout", "-q", "refs/notrest/estate")
    for rel, body in (("sessions/zz/evil.json", "{not json"),
                      ("sessions/zz/spoof.json", json.dumps({"session": "other"})),
                      ("threads/zz/x.json", json.dumps({"k": "thread", "id": "../../x"})),
                      ("compiled/Bad Slug/run.sh", "rm -rf /")):
        (junk / rel).parent.mkdir(parents=True, exist_ok=True)
        (junk / rel).write_text(body)
    git(junk, "add", "-A")
    git(junk, "commit", "-qm", "junk")
    git(junk, "push", "-q", "origin", "HEAD:refs/notrest/estate")
    res = b.sync()
    assert res.code == 0, res.stdout + res.stderr
    assert "skipped 4 file(s) of the ref that are not what notrest writes" in res.stdout
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in (b.root / ".notrest" / "sessions").glob("*.json")) == [
        "a1.json"]
    assert "n" in b.start("b1")


# ---- scale: sharded, proportional to what changed -------------------------------------

class GitLog:
    """A `git` ahead of the real one on PATH that logs each call's subcommand."""

    def __init__(self, tmp_path):
        self.folder = tmp_path / "gitlog-bin"
        self.folder.mkdir()
        self.log = tmp_path / "gitlog.txt"
        real = shutil.which("git")
        script = self.folder / "git"
        script.write_text('#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s"\nexec %s "$@"\n' % (
            self.log, real))
        script.chmod(0o755)

    def env(self):
        return {"PATH": "%s:%s" % (self.folder, os.environ.get("PATH", ""))}

    def calls(self):
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        self.log.write_text("")
        return lines


def test_a_noop_sync_is_one_fetch_and_a_change_touches_only_its_shard(team, tmp_path):
    a, b = team("a"), team("b")
    for i in range(40):
        notrest.append_record(a.estate.journal("s%02d" % i), {
            "v": 1, "t": time.time(), "k": "note", "by": "cli", "note": "n%d" % i,
            "next": ""})
        notrest.refresh_session(a.estate, "s%02d" % i)
    assert a.sync().code == 0 and b.sync().code == 0
    shards = git(team.remote, "ls-tree", "--name-only", "refs/notrest/estate:sessions")
    assert len(shards.split()) > 20  # spread by a hash of the id, not its head
    for i in range(40):
        assert "sessions/%s/s%02d.json" % (hashlib.sha256(b"s%02d" % i).hexdigest()[:2],
                                           i) in remote_files(team.remote)
    spy = GitLog(tmp_path)
    res = a.sync(**spy.env())
    assert res.code == 0 and "nothing to push" in res.stdout
    calls = spy.calls()
    network = [c for c in calls if " fetch " in " %s " % c or " push " in " %s " % c]
    assert len(network) == 1 and "fetch" in network[0], calls
    assert len(calls) <= 3, calls
    before = git(team.remote, "rev-parse", "refs/notrest/estate:sessions").strip()
    res = a.cli("bank", "--session", "s07", "--note", "changed", **spy.env())
    spy.calls()
    res = a.sync(**spy.env())
    assert res.code == 0 and "went out: 1 session(s)" in res.stdout
    calls = spy.calls()
    assert not any(" ls-tree -r" in c for c in calls), calls  # no full listing
    after = git(team.remote, "ls-tree", "refs/notrest/estate:sessions").splitlines()
    changed = [line for line in after if line not in git(
        team.remote, "ls-tree", before).splitlines()]
    assert len(changed) == 1 and changed[0].endswith(
        hashlib.sha256(b"s07").hexdigest()[:2]), changed
    res = b.sync()
    assert "came in: 1 session(s)" in res.stdout


def test_dry_run_says_what_would_move_and_changes_nothing(team):
    a, b = team("a"), team("b")
    a.work("a1", files=["x.py"], note="from a", next_step="n")
    assert a.sync().code == 0
    b.work("b1", files=["y.py"], note="from b", next_step="n")
    before_remote = all_objects(team.remote)
    estate = b.root / ".notrest"
    before = {p: p.read_bytes() for p in estate.rglob("*") if p.is_file()}
    code, report = b.sync_json("--dry-run")
    before[estate / "sync" / ".sync.lock"] = b""  # the lock a sync takes, empty
    assert code == 0 and report["dry_run"] and not report["pushed"]
    assert [s["session"] for s in report["came_in"]["sessions"]] == ["a1"]
    assert report["went_out"]["sessions"] == 1
    assert all_objects(team.remote) == before_remote
    after = {p: p.read_bytes() for p in estate.rglob("*") if p.is_file()}
    assert after == before  # not even the cache: the real sync still does it all
    assert git(b.root, "for-each-ref", "--format=%(refname)", "refs/notrest/estate") == ""
    res = b.sync()
    assert "came in: 1 session(s)" in res.stdout and "went out: 1 session(s)" in res.stdout
    status = b.cli("status").stdout
    assert "a1" in status and "on machine " in status


def test_projects_in_subfolders_of_one_repository_get_a_ref_each(team):
    a = team("a", install=False)
    projects = []
    for name in ("api", "web app"):
        root = a.root / "services" / name
        root.mkdir(parents=True)
        proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", "claude",
                               str(root)], env=a.env(), capture_output=True)
        assert proc.returncode == 0, proc.stderr
        machine = Machine(root, a.home)
        machine.work("s-" + name.replace(" ", "-"), files=["main.py"], note=name,
                     next_step="n")
        res = machine.sync()
        assert res.code == 0, res.stdout + res.stderr
        projects.append(machine)
    refs = git(team.remote, "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/main", "refs/notrest/projects/services/api",
                    "refs/notrest/projects/services/web-app"]
    assert remote_sessions(team.remote) == set()  # nothing in the top-level estate
    assert "s-api.json" in " ".join(remote_files(team.remote,
                                                 "refs/notrest/projects/services/api"))


def test_a_detached_sync_waits_its_turn_and_one_waiter_covers_the_rest(team):
    a = team("a", install_args=["--sync"])
    folder = a.root / ".notrest" / "sync"
    folder.mkdir(exist_ok=True)
    held = os.open(str(folder / ".sync.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)  # a sync that is still running
    try:
        a.work("a1", files=["x.py"], note="the last word", next_step="n")
        assert wait_for(lambda: lock_busy(folder / ".sync.lock.wait"), 10)
        time.sleep(1.0)
        assert len(sync_processes(a.root)) == 1  # one waits; the others left
        assert remote_sessions(team.remote) == set()
    finally:
        os.close(held)
    assert wait_for(lambda: "a1" in remote_sessions(team.remote))
    record = [p for p in remote_files(team.remote) if p.endswith("/a1.json")][0]
    assert json.loads(git(team.remote, "show", "refs/notrest/estate:" + record))[
        "note"] == "the last word"  # it ran after the session's end, and saw all of it


def test_an_estate_sync_cannot_write_says_so_and_loses_nothing(team):
    a = team("a")
    a.work("a1", files=["x.py"], note="n", next_step="m")
    (a.root / ".notrest" / "sync").write_text("not a folder\n")
    res = a.sync()
    assert res.code == 3 and "Traceback" not in res.stderr
    assert "a file stands where a folder is needed" in res.stderr
    assert ".notrest/sync" in res.stderr
    (a.root / ".notrest" / "sync").unlink()
    data = a.home / ".local" / "share" / "notrest"
    shutil.rmtree(str(data), ignore_errors=True)
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("a file where the per-user folder goes\n")
    res = a.sync()
    assert res.code != 0 and "Traceback" not in res.stderr, res.stderr
    assert "a file stands where a folder is needed (%s)" % data in res.stderr
    data.unlink()
    assert a.sync().code == 0 and remote_sessions(team.remote) == {"a1"}


def test_a_failure_of_another_machine_reads_as_its_digest():
    """A session of another machine listed since this machine's last one shows each
    failure as the local packet does: exit code, failing tests or first error, and
    whether it passed later (the session record keeps that digest, not the text)."""
    rec = notrest.new_session_record("a-fail")
    for t, what, ok, error in ((1.0, "pytest -q", False,
                                "Exit code 1\nFAILED tests/test_two.py::test_login"),
                               (2.0, "make lint", False, "Exit code 2\nE501 line too long"),
                               (3.0, "make lint", True, "")):
        notrest.fold_event(rec, {"v": 1, "t": t, "k": "tool", "c": "claude", "e":
                                 "PostToolUse" if ok else "PostToolUseFailure",
                                 "tool": "Bash", "what": what, "ok": ok, "error": error,
                                 "files": []})
    item = {"session": "a-fail", "client": "claude", "from": "machine 1a2b3c",
            "ended": True, "updated": 3.0, "note": "", "next": "", "files": [],
            "failed": rec["failed"][-2:]}
    text = "\n".join(line for line, _weight in notrest.elsewhere_lines([item]))
    assert '> failed (exit 1): "pytest -q"; failing tests: "tests/test_two.py::' \
        'test_login"' in text, text
    assert '> fixed later in the session: "make lint" (it had failed: "E501 line too ' \
        'long")' in text, text


# ---- issue #23 item 8: acks travel ----------------------------------------------------

def start_and_end(machine, session):
    packet = machine.start(session)
    machine.hook("SessionEnd", machine.payload("SessionEnd", session, reason="exit"))
    return packet


def owed(packet, what):
    return [line for line in packet.splitlines() if line.startswith("> still owed ")
            and what in line]


def test_an_ack_made_by_a_person_on_one_machine_reaches_the_others(team):
    a, b = team("a"), team("b")
    p = lambda event, **f: a.payload(event, "a-red", **f)  # noqa: E731
    steps = [step("SessionStart", p("SessionStart", source="startup")),
             step("PostToolUseFailure", p("PostToolUseFailure", tool_name="Bash",
                                          tool_input={"command": "pytest -q tests/io"},
                                          error="Exit code 1\nFAILED tests/io.py::t")),
             step("SessionEnd", p("SessionEnd", reason="exit"))]
    _proc, results = simulate(a, steps, a.home, name="a-red")
    assert all(r["code"] == 0 for r in read_results(results))
    time.sleep(0.05)
    a.work("a-later", files=["x.py"], note="other work", next_step="more")
    assert a.sync().code == 0 and b.sync().code == 0
    line = owed(start_and_end(b, "b-1"), "pytest -q tests/io")
    assert line, "the debt did not reach B"
    debt = line[0].split()[3]
    # an agent on B cannot ack; a person on B can, and it travels to A
    assert b.cli("ack", debt, CLAUDECODE="1").code != 0
    acked = b.cli("ack", debt)
    assert acked.code == 0, acked.stderr
    assert owed(start_and_end(a, "a-2"), "pytest -q tests/io"), "A forgot before any sync"
    res = b.sync()
    assert res.code == 0 and "1 file of this machine's acks" in res.stdout, res.stdout
    res = a.sync()
    assert res.code == 0 and "1 ack(s) made by people on other machines" in res.stdout, \
        res.stdout
    assert not owed(start_and_end(a, "a-3"), "pytest -q tests/io")
    # what came in is never sent back as A's own
    assert a.sync().code == 0
    names = {p for p in remote_files(team.remote) if p.startswith("acks/")}
    assert len(names) == 1, names


def test_an_acks_file_has_no_authority_it_was_not_given():
    me = {"id": "a" * 16, "label": ""}
    other = "b" * 16
    body = json.dumps({"schema_version": 1, "acked": {"s": 5.0},
                       "debts": {"d1234567": 6.0}}).encode()
    path = "acks/%s.json" % other
    assert notrest._acks_in(path, body, me, other) == (
        other, {"acked": {"s": 5.0}, "debts": {"d1234567": 6.0}})
    assert "not pushed by" in notrest._acks_in(path, body, me, "c" * 16)
    assert "this machine" in notrest._acks_in("acks/%s.json" % me["id"], body, me,
                                              me["id"])
    future = json.dumps({"acked": {"s": time.time() + 86400}}).encode()
    assert "future" in notrest._acks_in(path, future, me, other)
    assert "shape" in notrest._acks_in(path, b'{"acked": []}', me, other)
