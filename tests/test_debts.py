"""Issue #23 item 5: unfinished work is a debt. What a died session never finished
stays in every later packet, through the real sh hooks, until a later session runs
the same command to the end (exit 0) or a person acks it; `rebuild` gives the same."""
import os
import signal
import time

from conftest import read_results, simulate, step
import notrest

LOAD = "npm run load-test -- --users 500"
BENCH = "make bench"


def kill_after(proj, steps, tmp_path, answered, name):
    client, results = simulate(proj, steps, tmp_path, name, wait=False)
    deadline = time.monotonic() + 120  # a wait, not a bound
    while time.monotonic() < deadline and len(read_results(results)) < answered:
        time.sleep(0.05)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()


def packet_of(proj, session, source="startup"):
    """A session's start (a stand-in client that stays alive meanwhile is not
    needed: the session ends at once, so it is never taken for a live one)."""
    answer = proj.hook("SessionStart", proj.payload("SessionStart", session,
                                                    source=source)).answer
    text = answer.get("hookSpecificOutput", {}).get("additionalContext") or ""
    proj.hook("SessionEnd", proj.payload("SessionEnd", session, reason="other"))
    return text


def owed_lines(packet, what):
    return [line for line in packet.splitlines() if what in line and (
        line.startswith("> still owed ") or line.startswith("> never finished: "))]


def session_steps(proj, sid, commands=(), bank=None):
    p = lambda event, **f: proj.payload(event, sid, **f)  # noqa: E731
    steps = [step("SessionStart", p("SessionStart", source="startup"))]
    for command in commands:
        steps.append(step("PreToolUse", p("PreToolUse", tool_name="Bash",
                                          tool_input={"command": command})))
        steps.append(step("PostToolUse", p("PostToolUse", tool_name="Bash",
                                           tool_input={"command": command},
                                           tool_response={"stdout": "ok",
                                                          "stderr": ""})))
    if bank:
        steps.append({"cli": ["bank", "--note", bank, "--next", "go on"]})
    steps.append(step("SessionEnd", p("SessionEnd", reason="other")))
    return steps


def test_what_a_died_session_left_unfinished_stays_until_run_or_acked(proj, tmp_path):
    a = "aaaa0000-0000-4000-8000-00000000000a"
    p = lambda event, **f: proj.payload(event, a, **f)  # noqa: E731
    kill_after(proj, [
        step("SessionStart", p("SessionStart", source="startup")),
        step("PreToolUse", p("PreToolUse", tool_name="Bash",
                             tool_input={"command": LOAD})),
        step("PreToolUse", p("PreToolUse", tool_name="Bash",
                             tool_input={"command": BENCH})),
        {"sleep": 60}], tmp_path, 3, "a")

    # B: the packet names A's unfinished calls; B does other things and banks
    _proc, results = simulate(proj, session_steps(proj, "bbbb-session", ["ls -la"],
                                                  bank="tidied the README"), tmp_path, "b")
    done = read_results(results)
    assert all(r["code"] == 0 for r in done), done
    packet_b = notrest.current_session_record(proj.estate, "bbbb-session")
    assert packet_b["owed"], "B's start did not journal the debts it was shown"
    first = proj.journal("bbbb-session")[0]
    assert first["k"] == "start" and len(first["owed"]) == 2

    # C: A is no longer a session since the last note, and its work is still owed
    packet_c = packet_of(proj, "cccc-session")
    assert "### 0000000a" not in packet_c
    assert len(owed_lines(packet_c, LOAD)) == 1, packet_c
    assert len(owed_lines(packet_c, BENCH)) == 1, packet_c
    assert "never finished: \"%s\"" % LOAD in owed_lines(packet_c, LOAD)[0]
    assert "from session 0000000a (claude, died" in owed_lines(packet_c, LOAD)[0]

    # another start that does nothing: still owed
    assert owed_lines(packet_of(proj, "cccc-again"), LOAD)

    # D runs the load test to the end (exit 0): the next packet no longer owes it
    _proc, results = simulate(proj, session_steps(proj, "dddd-session", [LOAD]),
                              tmp_path, "d")
    assert all(r["code"] == 0 for r in read_results(results))
    packet_e = packet_of(proj, "eeee-session")
    assert not owed_lines(packet_e, LOAD), packet_e
    bench_line = owed_lines(packet_e, BENCH)
    assert len(bench_line) == 1, packet_e

    # rebuild derives the same from the journals
    assert proj.cli("rebuild").code == 0
    packet_r = packet_of(proj, "rrrr-session")
    assert not owed_lines(packet_r, LOAD) and owed_lines(packet_r, BENCH), packet_r

    # a person acks the other one by its id: gone from the next packet
    debt = bench_line[0].split()[3]
    assert debt.startswith("d"), bench_line
    status = proj.cli("status").stdout
    assert "work still owed: 1" in status and debt in status, status
    seen = proj.cli("ack")  # marks alerts seen: it settles no work
    assert seen.code == 0 and "1 debt(s) stay open" in seen.stdout and debt in \
        seen.stdout, seen.stdout
    assert owed_lines(packet_of(proj, "after-plain-ack"), BENCH)
    refused = proj.cli("ack", debt, CLAUDECODE="1")
    assert refused.code != 0
    acked = proj.cli("ack", debt)
    assert acked.code == 0, acked.stderr
    assert "acked debt %s" % debt in acked.stdout
    packet_f = packet_of(proj, "ffff-session")
    assert not owed_lines(packet_f, BENCH) and not owed_lines(packet_f, LOAD), packet_f


def test_a_failed_check_is_owed_and_a_denial_too(proj, tmp_path):
    """A test run that failed and was not fixed, and a denied call never resolved,
    stay owed after the session that left them was banked over."""
    x = "xxxx-session"
    p = lambda event, **f: proj.payload(event, x, **f)  # noqa: E731
    steps = [step("SessionStart", p("SessionStart", source="startup")),
             step("PostToolUseFailure", p("PostToolUseFailure", tool_name="Bash",
                                          tool_input={"command": "pytest -q tests"},
                                          error="Exit code 1\nFAILED tests/t.py::test_a")),
             step("PostToolUseFailure", p("PostToolUseFailure", tool_name="Bash",
                                          tool_input={"command": "ls nothere"},
                                          error="Exit code 2\nNo such file")),
             step("PreToolUse", p("PreToolUse", tool_name="Bash",
                                  tool_input={"command": "rm -rf ~"})),
             step("SessionEnd", p("SessionEnd", reason="other"))]
    _proc, _results = simulate(proj, steps, tmp_path, "x")
    simulate(proj, session_steps(proj, "yyyy-session", ["ls"], bank="other work"),
             tmp_path, "y")
    packet = packet_of(proj, "zzzz-session")
    assert owed_lines(packet, "pytest -q tests"), packet
    assert "failed, not fixed (exit 1)" in owed_lines(packet, "pytest -q tests")[0]
    assert not owed_lines(packet, "ls nothere")  # an ordinary failure is no debt
    simulate(proj, session_steps(proj, "wwww-session", ["pytest -q tests"]), tmp_path,
             "w")
    assert not owed_lines(packet_of(proj, "vvvv-session"), "pytest -q tests")
