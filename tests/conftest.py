"""Shared fixtures: a throw-away git project with its own HOME, notrest installed
into it with install.sh exactly as a user would, and a runner that drives the
installed sh hooks the way the clients do (payload on stdin, JSON on stdout)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "tests" / "data" / "samples"
sys.path.insert(0, str(REPO))

import notrest  # noqa: E402

# How long a hook may take and still count as an answer: the clients' timeout for
# the tool hooks (notrest writes it into their settings). A hook past it is killed
# and the call runs unjudged; a bound any tighter is a deadline, which belongs in
# bench/ (a loaded machine is slow, not wrong).
ANSWER_WITHIN_S = notrest.HOOK_EVENTS["PreToolUse"][1]


def sample(name, project=None, **changes):
    """A captured payload with the capture machine's paths moved into project."""
    text = (SAMPLES / name).read_text()
    if project is not None:
        text = text.replace("/home/dev/project", str(project))
    data = json.loads(text)
    data.update(changes)
    return data


class HookResult:
    def __init__(self, proc, seconds):
        self.code = proc.returncode
        self.stdout = proc.stdout.decode("utf-8", "replace")
        self.stderr = proc.stderr.decode("utf-8", "replace")
        self.seconds = seconds

    @property
    def answer(self):
        return json.loads(self.stdout)


class Project:
    """A temp project with notrest installed; hooks run as the clients run them."""

    def __init__(self, root, home):
        self.root, self.home = root, home
        self.estate = notrest.Estate(str(root))

    def env(self, client="claude", **extra):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
               "LANG": "C.UTF-8"}
        if client == "claude":
            env["CLAUDE_PROJECT_DIR"] = str(self.root)
        env.update(extra)
        return env

    def hook(self, event, payload, client="claude", raw=None, timeout=20, **env):
        """Run the installed launcher for event with payload on stdin."""
        name = notrest.HOOK_EVENTS[event][0]
        data = raw if raw is not None else json.dumps(payload).encode()
        start = time.monotonic()
        proc = subprocess.run(["sh", str(self.root / ".notrest" / "hooks" / name), client],
                              input=data, capture_output=True, timeout=timeout,
                              cwd=str(self.root), env=self.env(client, **env))
        return HookResult(proc, time.monotonic() - start)

    def cli(self, *args, input=None, **env):
        proc = subprocess.run([str(self.root / ".notrest" / "notrest")] + list(args),
                              capture_output=True, cwd=str(self.root), input=input,
                              env=self.env(**env), timeout=60)
        return HookResult(proc, 0)

    def payload(self, event, session, client="claude", **fields):
        base = {"session_id": session, "cwd": str(self.root), "hook_event_name": event,
                "transcript_path": str(self.home / (".claude/projects/p/%s.jsonl" % session
                                                    if client == "claude" else
                                                    ".codex/sessions/rollout-%s.jsonl"
                                                    % session))}
        base.update(fields)
        return base

    def journal(self, session):
        records = []
        for rec, _line, _end in notrest.read_records(self.estate.journal(session)):
            records.append(rec)
        return records


def write_codex_trust(project, codex_home=None):
    """Record in $CODEX_HOME/config.toml (default HOME/.codex) that the person
    trusted the project and notrest's Codex hooks in it, with the hashes Codex
    computes (tests/e2e proves them against the real binary): what `notrest trust
    codex` has Codex write, without starting Codex."""
    codex_home = Path(codex_home or project.home / ".codex")
    codex_home.mkdir(parents=True, exist_ok=True)
    lines = ["[projects.%s]" % json.dumps(str(project.root)), 'trust_level = "trusted"', ""]
    for _event, key, digest in notrest.codex_project_hooks(str(project.root)):
        lines += ["[hooks.state.%s]" % json.dumps(key), "trusted_hash = %s" % json.dumps(
            digest), ""]
    path = codex_home / "config.toml"
    old = path.read_text() if path.exists() else ""
    path.write_text(old + "\n".join(lines))
    return path


def make_project(tmp_path, install=True, clients="both"):
    home = tmp_path / "home"
    root = home / "project"
    root.mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    (root / "README.txt").write_text("hello\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "first commit"], cwd=root, check=True, env=env)
    if install:
        proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", clients,
                               str(root)], capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
    return Project(root, home)


@pytest.fixture
def proj(tmp_path):
    return make_project(tmp_path)


def step(event, payload, client="claude"):
    """A client_sim step that runs the launcher of event."""
    return {"hook": event, "launcher": notrest.HOOK_EVENTS[event][0], "payload": payload,
            "client": client}


def simulate(project, steps, tmp_path, name="sim", linger=None, wait=True, env=None):
    """Run steps in a stand-in client process (started with env added to the
    project's); returns (Popen, results path)."""
    steps_file = tmp_path / ("%s-steps.json" % name)
    results = tmp_path / ("%s-results.jsonl" % name)
    steps_file.write_text(json.dumps(steps))
    env = project.env(SIM_PROJECT=str(project.root), **(env or {}))
    if linger is not None:
        env["SIM_LINGER"] = str(linger)
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "client_sim.py"),
                             str(steps_file), str(results)], env=env,
                            cwd=str(project.root), start_new_session=True)
    if wait:
        assert proc.wait(timeout=120) == 0
    return proc, results


def read_results(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
