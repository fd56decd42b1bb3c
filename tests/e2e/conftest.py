"""pytest fixtures for the end-to-end tests against the real clients.

``e2e(client, script=None)`` (function-scoped factory) builds a fresh
:class:`rig.E2EEnv`: a git project (one commit) under tmp_path, its own HOME and
CODEX_HOME, and a started fake model server for ``client`` ("claude" or "codex")
playing ``script``.  Every server is stopped when the test ends, pass or fail;
the client runs are reaped by rig.run_process itself.

Hook latency (issue #4, scenario 9): when an env's project has a notrest estate,
its journals are read at teardown (every record a hook writes carries "e", the
event, and "ms", the time spent in notrest's Python code), together with the
whole hook process time the client reported (rig.client_hook_times: Claude
``--debug-file``, Codex ``RUST_LOG=rig.CODEX_HOOK_LOG``); ``pytest_terminal_summary``
prints one table per client and event at the end of the run.  Not an assertion.
"""

import statistics
import sys
from pathlib import Path

import pytest

# the rig's modules are imported by their plain names (rig, fake_anthropic, ...);
# appended, not prepended, so that nothing here shadows a module of tests/
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)

import rig  # noqa: E402

CLIENTS = ("claude", "codex")
_BIN = {"claude": "claude", "codex": "codex"}


# (client, event) -> {"py": [ms, ...], "client": [ms, ...]}
HOOK_LATENCY = {}


def collect_hook_latency(env):
    """Add the hook timings of one E2EEnv to HOOK_LATENCY."""
    journal_dir = env.project / ".notrest" / "journal"
    if not journal_dir.is_dir():
        return
    for path in sorted(journal_dir.glob("*.jsonl")):
        for rec in rig.read_journal(path):
            if rec.get("e") and isinstance(rec.get("ms"), (int, float)):
                client = rec.get("c") or env.client
                HOOK_LATENCY.setdefault((client, rec["e"]), {"py": [], "client": []})[
                    "py"].append(float(rec["ms"]))
    for res in env.runs:
        for event, ms in rig.client_hook_times(res):
            HOOK_LATENCY.setdefault((res.client, event), {"py": [], "client": []})[
                "client"].append(ms)


def latency_table(latency):
    """The text table pytest_terminal_summary prints."""
    def cols(values):
        if not values:
            return "%5s %8s %8s" % (0, "-", "-")
        return "%5d %8.1f %8.1f" % (len(values), statistics.median(values), max(values))

    lines = ["%-7s %-19s %5s %8s %8s   %5s %8s %8s" % (
        "client", "event", "n", "median", "max", "n", "median", "max"),
        "%-7s %-19s %-23s   %s" % ("", "", "notrest Python (ms)", "hook process, client-seen (ms)")]
    for (client, event) in sorted(latency):
        row = latency[(client, event)]
        lines.append("%-7s %-19s %s   %s" % (client, event, cols(row["py"]),
                                             cols(row["client"])))
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter):
    if not HOOK_LATENCY:
        return
    terminalreporter.write_sep("=", "notrest hook latency inside the real clients")
    terminalreporter.write_line(
        "notrest Python = journal \"ms\" (from the start of hook_main, interpreter start-up "
        "not included); client-seen = Claude --debug-file \"finished ... (N ms)\", Codex "
        "RUST_LOG hook/started -> hook/completed (neither reports SessionEnd).")
    terminalreporter.write_line(latency_table(HOOK_LATENCY))


@pytest.fixture
def e2e(tmp_path, request):
    made = []

    def factory(client, script=None, name=None):
        rig.require_binary(_BIN[client])
        root = tmp_path / (name or "%s-%d" % (client, len(made)))
        env = rig.E2EEnv(client, root, script)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()
        try:
            collect_hook_latency(env)
        except Exception as exc:  # a table must never fail a test
            sys.stderr.write("e2e: hook latency not collected for %s: %r\n" % (env.root, exc))


@pytest.fixture(params=CLIENTS)
def client(request):
    """Parametrises a test over both clients."""
    return request.param
