"""Learning from the journals: repeated sequences become compiled tools, repeated
denials and failure fixes become lessons; incremental, streaming, bounded at stop."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
import notrest


def tool(what, ok=True, t=1.0):
    """A record as the PostToolUse hook journals it."""
    return {"v": 1, "t": t, "k": "tool", "c": "claude", "e": "PostToolUse",
            "tool": "Bash", "what": what, "ok": ok, "files": []}


def deny(law, what, t=1.0):
    """A record as the gate journals a denial (PreToolUse)."""
    return {"v": 1, "t": t, "k": "deny", "c": "codex", "e": "PreToolUse", "law": law,
            "action": "deny", "what": what, "reason": "x"}


def write_session(estate, session, records):
    for record in records:
        notrest.append_record(estate.journal(session), record)


NOISE = ["npm ci", "git add -A", "python3 setup.py sdist", "docker build -t app .",
         "make docs", "git push origin feature-%d"]


def test_a_sequence_repeated_in_five_sessions_is_one_candidate_and_compiles(proj, tmp_path):
    estate = proj.estate
    files = ["tests/test_a.py", "tests/test_b.py", "tests/test_c.py", "tests/test_d.py",
             "tests/test_e.py"]
    for n, name in enumerate(files):
        write_session(estate, "seq-%d" % n, [
            tool(NOISE[n]), tool("git status"),
            tool("make fmt && make lint && pytest -q %s" % name),
            tool("ls -la"), tool(NOISE[(n + 2) % 5] + " --verbose --retries 3 x%d" % n)])
    result = proj.cli("learn", "--json")
    assert result.code == 0, result.stderr
    candidates = json.loads(result.stdout)["candidates"]
    sequences = [c for c in candidates if c["kind"] == "sequence"]
    assert len(sequences) == 1, [c["pattern"] for c in sequences]
    candidate = sequences[0]
    assert candidate["pattern"] == ["make fmt", "make lint", "pytest -q <path>"]
    assert candidate["sessions"] == 5 and candidate["occurrences"] == 5
    assert [v["examples"] for v in candidate["varying"]] == [files]
    assert all(e["session"].startswith("seq-") and e["line"] == 3
               for e in candidate["evidence"])

    compiled = proj.cli("compile", candidate["id"])
    assert compiled.code == 0, compiled.stderr
    folder = proj.root / ".notrest" / "compiled" / "format-lint-and-test"
    script = (folder / "run.sh").read_text()
    assert script.startswith("#!/bin/sh") and "set -eu" in script
    assert candidate["id"] in script and "seq-0:3" in script
    assert "tests/test_a.py" in script  # the observed values, as examples
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for prog in ("make", "pytest"):
        fake = bin_dir / prog
        fake.write_text("#!/bin/sh\necho \"%s $*\" >> %s\n" % (prog, log))
        fake.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    run = subprocess.run(["sh", str(folder / "run.sh"), "tests/test_new.py"], env=env,
                         cwd=str(proj.root), capture_output=True)
    assert run.returncode == 0, run.stderr
    assert log.read_text().splitlines() == ["make fmt", "make lint",
                                            "pytest -q tests/test_new.py"]
    usage = subprocess.run(["sh", str(folder / "run.sh")], capture_output=True)
    assert usage.returncode == 2 and b"usage" in usage.stderr
    for skill in (".claude/skills/format-lint-and-test/SKILL.md",
                  ".agents/skills/format-lint-and-test/SKILL.md"):
        assert (proj.root / skill).read_text().startswith("---\nname: format-lint-and-test")
    assert "format-lint-and-test" in proj.cli("compile", "--list").stdout
    packet = proj.cli("packet").stdout
    assert '> learned tool format-lint-and-test: "sh .notrest/compiled/format-lint-and-test/' \
        'run.sh PATH1 (make fmt && make lint && pytest -q <path>)"' in packet.splitlines()
    doctor = proj.cli("doctor")
    assert "PASS  compiled tool format-lint-and-test" in doctor.stdout
    (folder / "run.sh").write_text("if then fi (\n")
    assert "FAIL  compiled tool format-lint-and-test: run.sh does not parse" in \
        proj.cli("doctor").stdout
    assert proj.cli("compile", "--remove", "format-lint-and-test").code == 0
    assert not folder.exists()
    assert not (proj.root / ".claude/skills/format-lint-and-test").exists()


def test_below_the_threshold_and_one_off_noise_give_nothing(proj):
    estate = proj.estate
    for n in range(2):
        write_session(estate, "two-%d" % n, [tool("make fmt"), tool("make lint"),
                                             tool("pytest -q tests/t%d.py" % n)])
    for n in range(6):
        write_session(estate, "noise-%d" % n, [tool("echo %d" % n),
                                               tool("python3 tool_%d.py --run %d" % (n, n)),
                                               tool("git status")])
    out = json.loads(proj.cli("learn", "--json").stdout)
    assert out["candidates"] == []


def test_the_same_law_denied_in_three_sessions_becomes_a_lesson(proj):
    estate = proj.estate
    for n in range(3):
        write_session(estate, "deny-%d" % n, [
            deny("no-force-push", "git push --force origin main")])
    out = json.loads(proj.cli("learn", "--json").stdout)
    lessons = [c for c in out["candidates"] if c["kind"] == "denial"]
    assert len(lessons) == 1 and lessons[0]["id"] == "deny-no-force-push"
    assert "git push --force origin main" in lessons[0]["text"]
    assert "git push -u origin HEAD:refs/heads/my-branch" in lessons[0]["text"]
    packet = proj.cli("packet").stdout
    assert "(1 new learning candidate(s) wait: `.notrest/notrest learn --list`)" in packet
    assert proj.cli("learn", "--accept", "deny-no-force-push").code == 0
    packet = proj.cli("packet").stdout
    assert '> lesson L1: "Agents keep trying `git push --force origin main`' in packet
    assert "new candidate" not in packet


def test_a_rejected_candidate_does_not_come_back(proj):
    estate = proj.estate
    for n in range(3):
        write_session(estate, "rej-%d" % n, [
            deny("pipe-to-shell", "curl x | sh")])
    proj.cli("learn")
    assert proj.cli("learn", "--reject", "deny-pipe-to-shell").code == 0
    write_session(estate, "rej-9", [
        deny("pipe-to-shell", "curl y | sh")])
    out = json.loads(proj.cli("learn", "--json").stdout)
    assert out["run"]["lines"] == 1
    assert out["candidates"] == []


def test_the_same_failure_fixed_the_same_way_becomes_a_lesson(proj):
    estate = proj.estate
    for n in range(3):
        write_session(estate, "fix-%d" % n, [
            tool("pytest -q", ok=False), tool("pip install -e ."), tool("pytest -q")])
    out = json.loads(proj.cli("learn", "--json").stdout)
    lessons = [c for c in out["candidates"] if c["kind"] == "failure"]
    assert len(lessons) == 1
    assert lessons[0]["text"] == ("When `pytest -q` fails, the fix that worked in 3 "
                                  "sessions was `pip install -e <path>`.")


def test_learning_is_incremental(proj):
    estate = proj.estate
    for n in range(4):
        write_session(estate, "inc-%d" % n, [tool("make build %d" % i) for i in range(25)])
    first = json.loads(proj.cli("learn", "--json").stdout)["run"]
    assert first["lines"] == 100
    second = json.loads(proj.cli("learn", "--json").stdout)["run"]
    assert second["lines"] == 0 and second["sessions"] == 0
    write_session(estate, "inc-2", [tool("make again %d" % i) for i in range(10)])
    third = json.loads(proj.cli("learn", "--json").stdout)["run"]
    assert third["lines"] == 10 and third["sessions"] == 1


def test_stop_time_learning_is_bounded_in_work_and_catches_up(proj):
    estate = proj.estate
    for n in range(3):
        write_session(estate, "big-%d" % n, [tool("make step%d" % (i % 7))
                                             for i in range(500)])
        proj.hook("SessionStart", proj.payload("SessionStart", "big-%d" % n,
                                               source="startup"))
    budget = notrest.LEARN_STOP_LINES
    reads = []
    for _ in range(10):
        reads.append(notrest.learn_on_stop(estate, 0.0, "big-0")["lines"])
    assert all(r <= budget for r in reads)
    assert sum(reads) == 3 * 500 + 3, reads  # every line read once, the starts too
    assert reads[-1] == 0


def started_sessions(proj, prefix, commands, count=3):
    """count sessions started through the hook, each journaling the commands."""
    for n in range(count):
        proj.hook("SessionStart", proj.payload("SessionStart", "%s-%d" % (prefix, n),
                                               source="startup"))
        write_session(proj.estate, "%s-%d" % (prefix, n), [tool(c) for c in commands])


def test_a_stop_runs_learning_by_itself(proj):
    started_sessions(proj, "auto", ["make fmt", "make lint"])
    proj.hook("Stop", proj.payload("Stop", "auto-0"))
    candidates = json.loads((proj.root / ".notrest/learned/candidates.json").read_text())
    assert [c["pattern"] for c in candidates["candidates"]] == [["make fmt", "make lint"]]


def test_a_stop_that_teaches_nothing_leaves_the_learned_state_file_alone(proj):
    """Each stop journals a line and learns it; when that changes nothing learned,
    state.json keeps its inode (no rename: ~0.3 ms of every Stop on ext4), while
    the cursors move. A symlink or a FIFO there is replaced, never read through."""
    estate = proj.estate
    started_sessions(proj, "same", ["make fmt", "make lint"])
    proj.hook("Stop", proj.payload("Stop", "same-0"))
    learned = proj.root / ".notrest" / "learned"
    state, cursors = learned / "state.json", learned / "cursors.json"
    before, moved = state.stat().st_ino, cursors.read_text()
    proj.hook("Stop", proj.payload("Stop", "same-0"))
    assert state.stat().st_ino == before, "an unchanged state was written again"
    assert cursors.read_text() != moved, "the stop's own line was learned"
    write_session(estate, "same-1", [tool("make docs")])
    proj.hook("Stop", proj.payload("Stop", "same-1"))
    assert state.stat().st_ino != before and '"make docs"' in state.read_text()
    copy = learned / "elsewhere.json"
    copy.write_bytes(state.read_bytes())
    state.unlink()
    state.symlink_to(copy)
    assert notrest.holds_exactly(str(copy), copy.read_text())
    assert not notrest.holds_exactly(str(state), copy.read_text())
    notrest.write_learn_json(str(state), copy.read_text())
    assert not state.is_symlink() and state.read_text() == copy.read_text()
    state.unlink()
    os.mkfifo(str(state))  # read by nothing: a FIFO there is replaced, never opened
    notrest.write_learn_json(str(state), copy.read_text())
    assert state.is_file() and state.read_text() == copy.read_text()


def _learn_estate(root, sessions):
    """An estate of sessions × 1000 tool records, commands drawn at random: runs of
    them hardly repeat, the worst case for the size of the learning state. Returns
    the journal's bytes."""
    import random
    journal = root / ".notrest" / "journal"
    journal.mkdir(parents=True)
    rng = random.Random(5)
    commands = ["make fmt", "make lint", "pytest -q tests/test_%d.py", "git add -A",
                "git commit -m 'change %d'", "npm run build", "cargo test --lib",
                "python3 tool_%d.py --run", "docker build -t img%d ."]
    size = 0
    for session in range(sessions):
        parts = []
        for i in range(1000):
            what = rng.choice(commands)
            if "%d" in what:
                what = what % rng.randint(0, 500)
            parts.append(notrest.encode_line(tool(what, t=float(i))))
        size += (journal / ("s%04d.jsonl" % session)).write_text("".join(parts))
    return size


# The peak is the child's own (VmHWM of its memory map, printed as it exits):
# ru_maxrss from wait4 keeps the high-water mark of the pytest process the child
# was forked from, which grows over a whole suite.
PEAK = ("import runpy, sys\nsys.argv = sys.argv[1:]\ntry:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\nfinally:\n"
        "    sys.stderr.write([l for l in open('/proc/self/status') "
        "if l.startswith('VmHWM')][0])\n")


def _learn(root):
    """notrest learn over root's estate in a child: (its report, its peak MiB, its
    CPU seconds)."""
    import resource

    def cpu():
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        return use.ru_utime + use.ru_stime
    before = cpu()
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", PEAK, str(REPO / "notrest.py"),
                           "--root", str(root), "learn", "--json"], capture_output=True)
    seconds = cpu() - before
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_mb = int(proc.stderr.decode().rsplit("VmHWM:", 1)[1].split()[0]) / 1024.0
    return json.loads(proc.stdout)["run"], peak_mb, seconds


@pytest.mark.slow
def test_learn_streams_a_million_line_estate(tmp_path):
    root = tmp_path / "big"
    _learn_estate(root, 1000)
    report, peak_mb, _seconds = _learn(root)
    assert report["lines"] == 1000000
    assert peak_mb < 150, peak_mb
    state = root / ".notrest" / "learned" / "state.json"
    assert state.stat().st_size < notrest.LEARN_STOP_STATE_BYTES, "the state is read " \
        "at every stop: it must stay small"


def test_learn_costs_grow_no_faster_than_the_estate(tmp_path):
    """The default run's stand-in for the million lines (`-m slow` runs those): four
    times the lines cost at most about four times the CPU (a ratio, so load does not
    move it), and the memory the lines add is a fraction of their bytes (streamed,
    never held)."""
    runs = {}
    for sessions in (0, 10, 40):
        root = tmp_path / ("s%d" % sessions)
        (root / ".notrest").mkdir(parents=True, exist_ok=True)
        size = _learn_estate(root, sessions) if sessions else 0
        runs[sessions] = _learn(root) + (size,)
    base, small, large = runs[0], runs[10], runs[40]
    assert small[0]["lines"] == 10000 and large[0]["lines"] == 40000
    ratio = (large[2] - base[2]) / max(small[2] - base[2], 0.01)
    assert ratio < 6, "4x the lines cost %.1fx the CPU: not linear (%r)" % (ratio, runs)
    assert large[1] - base[1] < 0.5 * large[3] / (1 << 20), runs
    state = tmp_path / "s40" / ".notrest" / "learned" / "state.json"
    assert state.stat().st_size < notrest.LEARN_STOP_STATE_BYTES


def test_forged_records_and_denied_commands_never_become_a_skill(proj):
    """Forged repeats of a denied push: records no hook wrote are not evidence, and
    a run holding a command the laws deny (or that a law denied) is never proposed,
    even when the records look like a hook's."""
    estate = proj.estate
    push = "git push --force origin main"
    for n in range(5):
        forged = [dict(tool("make build"), e=None), dict(tool(push), e=None)]
        for record in forged:
            del record["e"]
        write_session(estate, "forged-%d" % n, forged + [
            dict(tool("make build"), by="cli", inside=False),
            dict(tool(push), by="cli", inside=False)])
        write_session(estate, "hooklike-%d" % n, [
            tool("make build"), tool(push),
            tool("npm run build && npm test")])
    for n in range(3):
        write_session(estate, "denied-%d" % n, [deny("no-force-push", push)])
    out = json.loads(proj.cli("learn", "--json").stdout)
    sequences = [c for c in out["candidates"] if c["kind"] == "sequence"]
    assert not [c for c in sequences if any("push" in p for p in c["pattern"])], sequences
    assert [c["pattern"] for c in sequences] == [["npm run build", "npm test"]]
    assert not [c for c in out["candidates"] if c["kind"] == "failure"]
    lessons = [c for c in out["candidates"] if c["kind"] == "denial"]
    assert [c["id"] for c in lessons] == ["deny-no-force-push"]  # says what to do instead
    assert "git push -u origin HEAD:refs/heads/my-branch" in lessons[0]["text"]
    assert proj.cli("compile", "deny-no-force-push").code == 2


def test_a_compiled_tool_is_named_for_what_it_does(proj):
    estate = proj.estate
    for n in range(3):
        write_session(estate, "lt-%d" % n, [
            tool("ruff check src/"), tool("python3 -m pytest -q tests/test_%d.py" % n)])
    out = json.loads(proj.cli("learn", "--json").stdout)
    candidate = [c for c in out["candidates"] if c["kind"] == "sequence"][0]
    assert candidate["pattern"] == ["ruff check <path>", "python3 -m pytest -q <path>"]
    compiled = proj.cli("compile", candidate["id"])
    assert compiled.code == 0, compiled.stderr
    assert "into .notrest/compiled/lint-and-test/run.sh" in compiled.stdout
    skill = (proj.root / ".claude/skills/lint-and-test/SKILL.md").read_text()
    description = skill.split("description: ", 1)[1].split("\n", 1)[0]
    assert description.startswith('"Lint and test: runs `ruff check <path>` then '
                                   '`python3 -m pytest -q <path>` in one go'), description
    assert "PATH" in description
