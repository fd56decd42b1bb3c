"""Shared helpers for the notrest benchmarks (stdlib only, Python 3.9+).

Every timed run is one child process started with subprocess.Popen and reaped with
os.wait4, so each sample carries its wall time and the child's own rusage (peak RSS;
ru_maxrss is KiB on Linux, bytes on macOS). Variants are measured interleaved, round
by round, and the figures that count are ratios of medians taken in the same run.
"""
import hashlib
import json
import marshal
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO, "tests", "data", "samples")
CAPTURED_PROJECT = "/home/dev/project"
CAPTURED_HOME = "/home/dev"
RSS_DIVISOR = 1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0  # -> MB


# ---- the interpreter ----------------------------------------------------------

def bench_python():
    """The absolute interpreter the install records: sys.executable of this python
    (never a version-manager shim)."""
    exe = os.path.abspath(sys.executable)
    real = os.path.realpath(exe)
    for path in (exe, real):
        if os.sep + "shims" + os.sep in path:
            raise SystemExit("bench: %s is a version-manager shim; run the bench with "
                             "the real interpreter" % path)
    return exe


def snapshot_source(parent, source=None):
    """Copy install.sh and notrest.py as they are now (from the checkout, or from
    the folder `source`, e.g. an older version to compare with) into parent/src, so
    one run measures one version of the code even while someone edits it."""
    origin = os.path.abspath(source or REPO)
    folder = os.path.join(parent, "src")
    os.makedirs(folder, exist_ok=True)
    for name in ("install.sh", "notrest.py"):
        if not os.path.isfile(os.path.join(origin, name)):
            raise SystemExit("bench: %s has no %s" % (origin, name))
        shutil.copyfile(os.path.join(origin, name), os.path.join(folder, name))
    with open(os.path.join(folder, ".origin"), "w") as handle:
        handle.write(os.path.join(origin, "notrest.py"))
    return folder


def machine_header(title, python, code, extra=()):
    """The lines that say where and on what a table was measured (code: the copy of
    notrest.py that was installed and measured)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    with open(code, "rb") as handle:
        data = handle.read()
    origin = os.path.join(REPO, "notrest.py")
    marker = os.path.join(os.path.dirname(code), ".origin")
    if os.path.exists(marker):
        with open(marker) as handle:
            origin = handle.read().strip()
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "?"
    naive = shutil.which("python3", path=client_path()) or "(none)"
    lines = [
        "# %s" % title,
        "# date      %s" % time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "# machine   %s %s, nproc %s (cpu_count %s), load %s" % (
            platform.system(), platform.machine(), cpus, os.cpu_count(), load),
        "# python    %s %s (%s)" % (platform.python_implementation(),
                                     platform.python_version(), python),
        "# notrest   %d lines, sha256 %s (snapshot of %s)" % (
            data.count(b"\n"), hashlib.sha256(data).hexdigest()[:12], origin),
        "# PATH python3 = %s" % naive,
    ]
    lines += ["# %s" % line for line in extra]
    return "\n".join(lines)


# ---- one timed child process --------------------------------------------------
# The children are forked by a small spawner process (python -I -S with only
# builtin modules, ~8 MB), not by the bench itself: on Linux a child's ru_maxrss
# includes the memory image it was forked from (exec keeps the old mm's high-water
# mark), so forking from a 20+ MB bench would report every child as 20+ MB.

SPAWNER_CODE = r"""
import os, sys, time, marshal
def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            os._exit(0)
        data += chunk
    return data
while True:
    argv, env, cwd, stdin_path, out_path, err_path = marshal.loads(
        read_exact(int.from_bytes(read_exact(4), "big")))
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            if cwd:
                os.chdir(cwd)
            fd = os.open(stdin_path or os.devnull, os.O_RDONLY)
            os.dup2(fd, 0)
            fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 2)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    _pid, status, usage = os.wait4(pid, 0)
    ms = (time.perf_counter() - start) * 1000.0
    code = os.waitstatus_to_exitcode(status)
    reply = marshal.dumps((ms, usage.ru_maxrss, code,
                           (usage.ru_utime + usage.ru_stime) * 1000.0))
    os.write(1, len(reply).to_bytes(4, "big") + reply)
"""


class Sample:
    """One child: wall ms, peak RSS MB, exit code, output, and cpu_ms, the CPU time
    it and the children it waited for used (user + system): what a loaded machine
    inflates least."""
    __slots__ = ("ms", "rss_mb", "code", "out", "err", "cpu_ms")

    def __init__(self, ms, rss_mb, code, out, err, cpu_ms=float("nan")):
        self.ms, self.rss_mb, self.code, self.out, self.err = ms, rss_mb, code, out, err
        self.cpu_ms = cpu_ms


class Runner:
    """Runs children (through the spawner) with stdin from a file and stdout/stderr
    into scratch files; each run gives wall ms, peak RSS MB, exit code, output."""

    def __init__(self, scratch, python=None):
        self.out_path = os.path.join(scratch, ".bench.out")
        self.err_path = os.path.join(scratch, ".bench.err")
        self.proc = subprocess.Popen([python or sys.executable, "-I", "-S", "-c",
                                      SPAWNER_CODE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, close_fds=True)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()

    def _read_exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.proc.stdout.read(n - len(data))
            if not chunk:
                raise RuntimeError("bench: the spawner died")
            data += chunk
        return data

    def run(self, argv, stdin_path=None, env=None, cwd=None, keep_output=True):
        argv = list(argv)
        if os.sep not in argv[0]:
            found = shutil.which(argv[0], path=(env or os.environ).get("PATH"))
            if not found:
                raise SystemExit("bench: %s not found on PATH" % argv[0])
            argv[0] = found
        job = marshal.dumps((argv, dict(env if env is not None else os.environ),
                             cwd or "", stdin_path or "", self.out_path, self.err_path))
        self.proc.stdin.write(len(job).to_bytes(4, "big") + job)
        self.proc.stdin.flush()
        ms, maxrss, code, cpu_ms = marshal.loads(self._read_exact(
            int.from_bytes(self._read_exact(4), "big")))
        out = err = b""
        if keep_output:
            with open(self.out_path, "rb") as handle:
                out = handle.read()
            with open(self.err_path, "rb") as handle:
                err = handle.read()
        return Sample(ms, maxrss / RSS_DIVISOR, code, out, err, cpu_ms)


# ---- statistics and tables ----------------------------------------------------

def median(values):
    return statistics.median(values) if values else float("nan")


def ratio(a, b):
    return a / b if b else float("nan")


def fmt_ms(value):
    return "%.1f" % value if value == value else "-"


def fmt_mb(value):
    return "%.1f" % value if value == value else "-"


def fmt_ratio(value):
    return "%.2fx" % value if value == value else "-"


def table(headers, rows, align=None):
    """A plain fixed-width table; the first column left-aligned, the rest right."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    align = align or ["<"] + [">"] * (len(headers) - 1)

    def line(items):
        return "  ".join("%-*s" % (w, c) if a == "<" else "%*s" % (w, c)
                         for c, w, a in zip(items, widths, align)).rstrip()
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


# ---- a project with notrest installed -------------------------------------------

def client_path():
    """PATH as the user's shell has it. Run through a pyenv shim, this process sees
    the entries `pyenv exec` put in front (versions/X/bin, libexec, plugin bins);
    a client started from the shell would not, so they are dropped here."""
    entries = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    pyenv = os.environ.get("PYENV_ROOT")
    if pyenv:
        pyenv = pyenv.rstrip(os.sep) + os.sep
        injected = []
        for entry in entries:
            tail = entry[len(pyenv):] if entry.startswith(pyenv) else None
            if tail is not None and (tail.startswith("versions" + os.sep) or
                                     tail == "libexec" or (tail.startswith("plugins" +
                                                           os.sep) and tail.endswith(
                                                               os.sep + "bin"))):
                injected.append(entry)
        entries = [e for e in entries if e not in injected]
    return os.pathsep.join(entries)


def base_env(root, home):
    """The environment a client gives its hooks (PATH as the user's shell has it)."""
    return {"PATH": client_path(), "HOME": home, "LANG": "C.UTF-8",
            "CLAUDE_PROJECT_DIR": root}


def git_init(root, home):
    """A git repository with one commit (the packet runs one `git status`)."""
    git = shutil.which("git")
    if not git:
        return False
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
           "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8"}
    with open(os.path.join(root, "README.md"), "w") as handle:
        handle.write("# bench project\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "README.md"],
                 ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                  "commit", "-q", "-m", "initial commit"]):
        proc = subprocess.run([git] + argv, cwd=root, env=env, capture_output=True)
        if proc.returncode != 0 and argv[0] == "init":  # git < 2.28 has no -b
            proc = subprocess.run([git, "init", "-q"], cwd=root, env=env,
                                  capture_output=True)
        if proc.returncode != 0:
            return False
    return True


def install(root, home, python, source):
    """`sh SOURCE/install.sh --client both ROOT` with HOME in the temp dir; returns
    the interpreter config.json recorded."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
           "LANG": "C.UTF-8", "NOTREST_PYTHON": python}
    proc = subprocess.run(["sh", os.path.join(source, "install.sh"), "--client", "both",
                           root], env=env, cwd=root, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit("bench: install.sh failed (%d):\n%s" % (
            proc.returncode, proc.stderr.decode("utf-8", "replace")))
    with open(os.path.join(root, ".notrest", "config.json")) as handle:
        recorded = json.load(handle).get("python")
    if not recorded or not os.path.isabs(recorded):
        raise SystemExit("bench: install recorded no absolute interpreter: %r" % recorded)
    return recorded


def make_project(parent, python, source, name="project"):
    """parent/home and parent/<name>: a git project with notrest (from the snapshot
    in source) installed."""
    root = os.path.join(parent, name)
    home = os.path.join(parent, "home")
    os.makedirs(root, exist_ok=True)
    os.makedirs(home, exist_ok=True)
    has_git = os.path.isdir(os.path.join(root, ".git")) or git_init(root, home)
    recorded = install(root, home, python, source)
    return root, home, recorded, has_git


def import_installed(root):
    """The installed copy of notrest (root/.notrest/notrest.py), imported here."""
    code_dir = os.path.join(root, ".notrest")
    loaded = sys.modules.get("notrest")
    if loaded is not None:   # an installed copy imported before: fine if it is the same
        if _digest(loaded.__file__) != _digest(os.path.join(code_dir, "notrest.py")):
            raise SystemExit("bench: %s changed during the run" % loaded.__file__)
        return loaded
    sys.path.insert(0, code_dir)
    try:
        import notrest
    finally:
        sys.path.remove(code_dir)
    if os.path.dirname(os.path.abspath(notrest.__file__)) != code_dir:
        raise SystemExit("bench: imported %s, not the installed copy" % notrest.__file__)
    return notrest


def _digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def sample_payload(name, root, home, **changes):
    """A captured Claude payload with the capture machine's paths moved into root."""
    with open(os.path.join(SAMPLES, name)) as handle:
        text = handle.read()
    text = text.replace(CAPTURED_PROJECT, root).replace(CAPTURED_HOME, home)
    data = json.loads(text)
    data.update(changes)
    return data


def write_payload(folder, name, payload):
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        json.dump(payload, handle)
    return path


def scratch_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix)


def with_scratch(keep, prefix, body):
    """Run body(parent) in DIR (--keep DIR: the project is rebuilt there and kept)
    or in a temp dir removed afterwards."""
    import shutil
    parent = os.path.abspath(keep) if keep else scratch_dir(prefix)
    if keep and os.path.exists(os.path.join(parent, "project")):
        shutil.rmtree(os.path.join(parent, "project"))
        shutil.rmtree(os.path.join(parent, "home"), ignore_errors=True)
    os.makedirs(parent, exist_ok=True)
    try:
        return body(parent)
    finally:
        if not keep:
            shutil.rmtree(parent, ignore_errors=True)
