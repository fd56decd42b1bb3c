"""The red-team train cases the gate judges by meaning (issue #26): wrappers
that run the command after their options (setpriv, proot, bwrap, gdb --args,
faketime, dbus-run-session ...), deferred and detached runners that take code
(at, batch, crontab -, screen -dm, tmux new -d, script -qc) and the ordinary
work that must stay allowed. tests/data/adversary_v3_train.json holds them in
the format of adversary_cases.json; each runs through the real installed sh
hook, for both clients, in the arena test_adversary.py builds."""
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import make_project
import test_adversary as adv

CASES = json.loads((Path(__file__).resolve().parent / "data" /
                    "adversary_v3_train.json").read_text())["cases"]


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    temp = tmp_path_factory.mktemp("adversary-v3")
    made = adv.Arena(make_project(temp), temp)
    adv._build(made)
    jobs = [(case, client) for case in CASES for client in adv._clients(case)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda job: adv._case_call(made, *job), jobs)
        for (case, client), outcome in zip(jobs, done):
            made.results[case["id"], client] = outcome
    return made


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_train_case(arena, case):
    for client in adv._clients(case):
        decision, reason, result = arena.results[case["id"], client]
        assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
        if case["expect"] == "allow":
            assert decision not in adv.STRICT, "%s: expected allow, got %s: %s" % (
                client, decision, reason)
            continue
        assert decision in adv.STRICT, "%s: expected %s by %s, got %s: %s" % (
            client, case["expect"], case["law"], decision, reason)
        if case["expect"] == "deny":
            assert decision == "deny", "%s: expected deny, got %s: %s" % (
                client, decision, reason)
