"""Promise 3: it can die at any minute. Hooks and bank processes are SIGKILLed at
random points; no estate file ever becomes unparsable, and the next packet still
recovers the killed session. Concurrent hooks never tear or lose a line."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import simulate, step
import notrest


def assert_estate_parses(root):
    estate = root / ".notrest"
    for path in list((estate / "sessions").glob("*.json")) + [estate / "index.json"]:
        if path.exists():
            json.loads(path.read_text())  # raises on a torn record
    for path in (estate / "journal").glob("*.jsonl"):
        records = list(notrest.read_records(str(path)))
        torn = [line for rec, line, _ in records if rec is None]
        # a kill can only cut the last line short; every other line is intact
        assert len(torn) <= 1 and (not torn or torn[0] == len(records)), (path, torn)


# the storms at full size are slow (`-m slow`); the default run has the first runs
# of the same storm and the same eight writers with fewer hooks each
@pytest.mark.parametrize("runs", [10, pytest.param(50, marks=pytest.mark.slow)])
def test_sigkill_at_random_points_never_breaks_the_estate(proj, tmp_path, runs):
    rng = random.Random(20261130)
    for run in range(runs):
        session = "kill%02d-aaaa-4bbb-8ccc-%012d" % (run, run)
        p = lambda event, **f: proj.payload(event, session, **f)  # noqa: E731
        steps = [step("SessionStart", p("SessionStart", source="startup"))]
        for n in range(rng.randint(1, 4)):
            steps.append(step("PostToolUse", p(
                "PostToolUse", tool_name="Write",
                tool_input={"file_path": str(proj.root / ("f%d_%d.py" % (run, n))),
                            "content": "x"}, tool_response={})))
        steps.append(step("Stop", p("Stop")))
        steps.append({"cli": ["bank", "--note", "run %d" % run, "--next", "go on"]})
        steps.append(step("SessionEnd", p("SessionEnd", reason="other")))
        client, _ = simulate(proj, steps, tmp_path, "k%d" % run, wait=False)
        time.sleep(rng.uniform(0.0, 0.35))
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
        assert_estate_parses(proj.root)
        journal = proj.root / ".notrest" / "journal" / (session + ".jsonl")
        started = journal.exists() and any(
            rec and rec.get("k") == "start" for rec, _l, _e in notrest.read_records(
                str(journal)))
        packet = proj.hook("SessionStart", proj.payload(
            "SessionStart", "probe-%d" % run, source="startup")).answer
        text = packet["hookSpecificOutput"]["additionalContext"]
        if started:
            assert "### %s " % notrest.short_id(session) in text, (run, text)
            records = [r for r, _l, _e in notrest.read_records(str(journal)) if r]
            if not any(r["k"] == "end" for r in records):
                assert "DIED" in text, (run, text)
        proj.hook("SessionEnd", proj.payload("SessionEnd", "probe-%d" % run,
                                             reason="other"))
    result = proj.cli("doctor")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("hooks", [25, pytest.param(200, marks=pytest.mark.slow)])
def test_eight_writers_lose_nothing(proj, hooks):
    session = "busy-session"
    payload = json.dumps(proj.payload("PostToolUse", session, tool_name="Bash",
                                      tool_input={"command": "echo " + "x" * 300},
                                      tool_response={"stdout": "x"}))
    launcher = str(proj.root / ".notrest" / "hooks" / "post-tool-use.sh")
    writer = (
        "import subprocess, sys\n"
        "for i in range(int(sys.argv[3])):\n"
        "    subprocess.run(['sh', sys.argv[1], 'claude'], input=sys.argv[2].encode(),"
        " stdout=subprocess.DEVNULL, check=True)\n")
    env = proj.env()
    procs = [subprocess.Popen([sys.executable, "-c", writer, launcher, payload, str(hooks)],
                              env=env, cwd=str(proj.root)) for _ in range(8)]
    assert all(p.wait(timeout=600) == 0 for p in procs)
    path = proj.root / ".notrest" / "journal" / (session + ".jsonl")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [notrest.decode_line(line.decode()) for line in lines[:-1]]
    assert len(records) == 8 * hooks
    assert all(r is not None and r["k"] == "tool" for r in records)
