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


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
# What this process did to give tests an installed project: install.sh runs (the
# template of each client choice, and the tests that ask for a real install) and
# clones of a template. Printed at the end of a run (pytest_terminal_summary).
COUNTS = {"installs": 0, "clones": 0}
_TEMPLATES = {}


def install_fresh(tmp_path, install=True, clients="both"):
    """A git project in tmp_path/home/project with its own HOME, notrest installed
    into it by install.sh exactly as a user installs it."""
    home = tmp_path / "home"
    root = home / "project"
    root.mkdir(parents=True)
    env = dict(GIT_ENV, PATH=os.environ.get("PATH", ""), HOME=str(home))
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    (root / "README.txt").write_text("hello\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "first commit"], cwd=root, check=True, env=env)
    if install:
        COUNTS["installs"] += 1
        proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", clients,
                               str(root)], capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr.decode()
    return Project(root, home)


def template(clients="both"):
    """This process's installed template for one client choice, made at its first
    use (each xdist worker is a process: each has its own); removed at exit."""
    if clients not in _TEMPLATES:
        import atexit
        import shutil
        import tempfile
        base = Path(tempfile.mkdtemp(prefix="notrest-template-"))
        atexit.register(shutil.rmtree, str(base), True)
        _TEMPLATES[clients] = install_fresh(base, clients=clients)
    return _TEMPLATES[clients]


def _path_swaps(src, dst):
    """(old, new) text pairs that carry src's paths to dst's: the home folder (the
    project is inside it), also as a relative path (a folder that mirrors absolute
    paths, as a pycache prefix does), and the names the product derives from the
    project's path (its store under the data folder)."""
    swaps = [(str(src.home), str(dst.home)),
             (str(src.home).lstrip("/"), str(dst.home).lstrip("/"))]
    old = notrest.project_store(str(src.root), {"HOME": str(src.home)})
    new = notrest.project_store(str(dst.root), {"HOME": str(dst.home)})
    if os.path.basename(old) != os.path.basename(new):
        swaps.append((os.path.basename(old), os.path.basename(new)))
    return swaps


def _swap(text, swaps):
    for old, new in swaps:
        text = text.replace(old, new)
    return text


def _relocated_pyc(data, swaps):
    """A .pyc whose code names src's paths, naming dst's, byte for byte what
    compiling at dst writes (None: not a .pyc of this interpreter, or a path
    not where marshal keeps a string). A string is marshalled once, then
    referenced: each path is one type byte, a length and the text, so only that
    string and its length change. The header stays: it is about the source's text
    (its hash, or mtime and size), not its path."""
    import importlib.util
    import marshal
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    short, long_ = b"zZ", b"aAut"  # one-byte and four-byte lengths (marshal.c)
    head, body = data[:16], data[16:]
    for old, new in swaps:
        old, new = old.encode("utf-8"), new.encode("utf-8")
        out, at = bytearray(), 0
        i = body.find(old)
        while i >= 0:
            if i >= 2 and body[i - 2] & 0x7F in short and body[i - 1] >= len(old):
                size = body[i - 1] - len(old) + len(new)
                if size > 255:  # too long for the short form: the four-byte one
                    kind = body[i - 2] & 0x80 | ord("a" if body[i - 2] & 0x7F == ord(
                        "z") else "A")
                    out += body[at:i - 2] + bytes([kind]) + size.to_bytes(4, "little") + new
                else:
                    out += body[at:i - 1] + bytes([size]) + new
            elif i >= 5 and body[i - 5] & 0x7F in long_ and int.from_bytes(
                    body[i - 4:i], "little") >= len(old):
                size = int.from_bytes(body[i - 4:i], "little") - len(old) + len(new)
                out += body[at:i - 4] + size.to_bytes(4, "little") + new
            else:
                return None
            at = i + len(old)
            i = body.find(old, at)
        body = bytes(out) + body[at:]
    try:
        marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None
    return head + body


def clone_install(src, dst_home):
    """Copy the installed project src (its project and its HOME) to dst_home, as
    the same install made there: every text file (and every name) with src's paths
    rewritten to dst's, a .pyc that names them relocated, any other binary that
    embeds them dropped; then the product settles what it keys by a file's
    identity (inode, ctime) in the clone itself: caches it lost are rebuilt, the
    manifest recorded again. Nothing here lists what install writes: test_clone
    proves a clone equals a fresh install, so a change to install that this does
    not carry fails there, loudly."""
    import shutil
    dst = Project(dst_home / src.root.relative_to(src.home), dst_home)
    swaps = _path_swaps(src, dst)
    old_bytes = [old.encode("utf-8", "surrogateescape") for old, _new in swaps]
    folders = []
    for folder, dirs, files in os.walk(str(src.home)):
        rel = os.path.relpath(folder, str(src.home))
        target = os.path.join(str(dst_home), _swap(rel, swaps))
        os.makedirs(target, exist_ok=True)
        folders.append((folder, target))
        for name in dirs + files:
            path = os.path.join(folder, name)
            out = os.path.join(target, _swap(name, swaps))
            if os.path.islink(path):
                os.symlink(_swap(os.readlink(path), swaps), out)
                if name in dirs:
                    dirs.remove(name)
                continue
            if name in dirs:
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            if any(old in data for old in old_bytes):
                text = None
                if b"\0" not in data:
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError:
                        pass
                data = _relocated_pyc(data, swaps) if text is None else _swap(
                    text, swaps).encode("utf-8")
                if data is None:  # a binary that names the template: dropped
                    continue
            with open(out, "wb") as handle:
                handle.write(data)
            shutil.copystat(path, out)
    for folder, target in reversed(folders):  # modes and times once all is written
        shutil.copystat(folder, target)
    _settle(dst)
    return dst


def _settle(project):
    """The product's own steps, run in the clone as its hooks run (its HOME, its
    interpreter, its copy of notrest.py): rebuild the caches a hook would rebuild,
    then record the manifest install records (inodes and hashes of this copy)."""
    estate = project.root / notrest.ESTATE_DIR
    try:
        python = json.loads((estate / "config.json").read_text()).get("python")
    except (OSError, ValueError):
        python = None
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import notrest\n"
            "if hasattr(notrest, 'ensure_hot_cache'):\n"
            "    notrest.ensure_hot_cache(sys.argv[1])\n"
            "notrest.record_manifest(notrest.Estate(sys.argv[2]))\n")
    proc = subprocess.run([python or sys.executable, "-B", "-I", "-S", "-c", code,
                           str(estate), str(project.root)], capture_output=True,
                          env=project.env(), cwd=str(project.root), timeout=120)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")


def make_project(tmp_path, install=True, clients="both", fresh=False):
    """A throw-away git project in tmp_path/home/project with its own HOME; with
    install, notrest installed for clients: a clone of this process's template
    (test_clone proves it equals a fresh install), or, with fresh, install.sh run
    for this test (tests whose subject is install itself)."""
    if not install or fresh:
        return install_fresh(tmp_path, install, clients)
    COUNTS["clones"] += 1
    return clone_install(template(clients), tmp_path / "home")


def pytest_terminal_summary(terminalreporter):
    if COUNTS["installs"] or COUNTS["clones"]:
        terminalreporter.write_line("notrest: %d install(s), %d clone(s) in this process" % (
            COUNTS["installs"], COUNTS["clones"]))


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
