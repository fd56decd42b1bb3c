"""Stop laws: bank-before-stop plus declared checks; blocks escalate and are bounded,
and a stop let through unmet is journaled and shown to the next session."""
import json

from conftest import ANSWER_WITHIN_S


def declare(proj, check, timeout=20, bound=None):
    doc = {"schema_version": 1, "laws": [{
        "id": "tests-pass", "text": "The tests pass before a stop.", "on": ["Stop"],
        "check": check, "timeout": timeout, "instead": "fix the failing test"}]}
    if bound:
        doc["stop_block_bound"] = bound
    (proj.root / ".notrest" / "laws.json").write_text(json.dumps(doc))


def stop(proj, session, active):
    return proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=active))


def test_a_failing_check_blocks_with_its_output_and_escalates_to_a_bound(proj):
    declare(proj, "test -f ok.txt || { echo 'FAILED tests/test_x.py::test_y'; exit 1; }")
    session = "chk-1"
    reasons = []
    for n in range(3):
        answer = stop(proj, session, active=n > 0).answer
        assert answer.get("decision") == "block", (n, answer)
        reasons.append(answer["reason"])
    assert "tests-pass" in reasons[0] and "exit 1" in reasons[0]
    assert "FAILED tests/test_x.py::test_y" in reasons[0]
    assert "STILL UNMET after 1 block" in reasons[1] and "block 2 of 3" in reasons[1]
    assert "last block (3 of 3)" in reasons[2]
    assert len(set(reasons)) == 3, "each block must say something more"
    fourth = stop(proj, session, active=True)
    assert fourth.answer.get("decision") != "block"
    assert "stop allowed after 3 blocks" in fourth.answer["systemMessage"]
    records = [r for r in proj.journal(session) if r and r["k"] == "stop"]
    assert [r["decision"] for r in records] == ["block", "block", "block", "allow"]
    assert records[-1]["allowed_after"] == 3
    proj.hook("SessionEnd", proj.payload("SessionEnd", session, reason="other"))
    packet = proj.cli("packet").stdout
    assert "> stop allowed after 3 blocks; unmet: tests-pass" in packet.splitlines()


def test_the_bound_comes_from_laws_json_and_a_passing_check_lets_the_stop_go(proj):
    declare(proj, "test -f ok.txt", bound=1)
    assert stop(proj, "chk-2", False).answer.get("decision") == "block"
    assert stop(proj, "chk-2", True).answer.get("decision") != "block"
    (proj.root / "ok.txt").write_text("")
    assert stop(proj, "chk-3", False).answer.get("decision") != "block"
    check = [r for r in proj.journal("chk-3") if r and r["k"] == "check"]
    assert check and check[0]["ok"] is True


def test_a_check_that_hangs_is_cut_at_its_timeout(proj):
    declare(proj, "sleep 30", timeout=1)
    result = stop(proj, "chk-4", False)
    assert result.seconds < ANSWER_WITHIN_S
    answer = result.answer
    assert answer["decision"] == "block" and "exit 124" in answer["reason"]
    assert "timed out" in answer["reason"]


def test_stop_hook_active_is_honoured_for_the_bank_law(proj):
    session = "chk-5"
    proj.hook("PostToolUse", proj.payload("PostToolUse", session, tool_name="Bash",
                                          tool_input={"command": "touch x"},
                                          tool_response={}))
    # another plugin's stop gate blocked first: ours may still ask once
    assert stop(proj, session, True).answer.get("decision") == "block"
    for _ in range(5):
        assert stop(proj, session, True).answer.get("decision") != "block"


def test_check_runs_a_declared_check_by_hand(proj):
    declare(proj, "test -f ok.txt")
    assert proj.cli("check", "tests-pass").code == 1
    (proj.root / "ok.txt").write_text("")
    assert proj.cli("check", "tests-pass").code == 0
