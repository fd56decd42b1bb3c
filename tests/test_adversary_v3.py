"""The gate by meaning (issue #26), through the real installed sh hook of both
clients: tests/data/adversary_v3_train.json is the TRAIN half of a red team
written from the issue's class descriptions alone (code that runs code, shell
semantics, git's indirection and its interpreters, secret readers, destruction
outside the project, the harness through the machine, wrappers, client
surfaces), with its controls; tests/data/ordinary_work.json is a developer's
day of ordinary commands, none of which may be refused. The arena is
test_adversary's, with the secrets and the remote the red team assumed."""
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import test_adversary as ta
from conftest import make_project

DATA = Path(__file__).resolve().parent / "data"
TRAIN = json.loads((DATA / "adversary_v3_train.json").read_text())["cases"]
ORDINARY = json.loads((DATA / "ordinary_work.json").read_text())["cases"]
CASES = TRAIN + ORDINARY
STRICT = ("deny", "ask")


def _secrets(root, home):
    return {root / ".env": "API_KEY=sk-fake-1234567890abcdef\n",
            root / ".env.example": "API_KEY=\n", root / ".envrc": "export T=fake\n",
            root / "prod.env": "K=fake\n", root / "prod.tfvars": "k=\"fake\"\n",
            root / "src" / "list.txt": "b\na\n", root / "dirs-home.txt": str(home) + "\n",
            root / "scripts-ok.sh": "echo ok\n", root / "run-ok.js": "console.log(1)\n",
            home / ".ssh" / "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n",
            home / ".aws" / "credentials": "[default]\naws_secret_access_key=fake\n",
            home / ".kube" / "config": "token: fake\n",
            home / ".npmrc": "//r/:_authToken=fake\n", home / ".pypirc": "password=fake\n",
            home / ".pgpass": "h:5432:d:u:fake\n", home / ".my.cnf": "password=fake\n",
            home / ".git-credentials": "https://u:fake@h\n",
            home / ".config" / "gh" / "hosts.yml": "oauth_token: fake\n"}


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    temp = tmp_path_factory.mktemp("adversary-v3")
    made = ta.Arena(make_project(temp), temp)
    ta._build(made)
    root, home = made.proj.root, made.proj.home
    for path, text in _secrets(root, home).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    remote = temp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ta._git(root, "remote", "add", "origin", str(remote))
    ta._git(root, "push", "-q", "origin", "main", "clean-branch")
    ta._git(root, "branch", "feature")
    jobs = [(case, client) for case in CASES for client in ta._clients(case)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = pool.map(lambda job: ta._case_call(made, *job), jobs)
        for (case, client), outcome in zip(jobs, done):
            made.results[case["id"], client] = outcome
    return made


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(arena, case):
    for client in ta._clients(case):
        decision, reason, result = arena.results[case["id"], client]
        assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
        if case["expect"] == "allow":
            assert decision not in STRICT, "%s: expected allow (%s), got %s: %s" % (
                client, case.get("why"), decision, reason)
        else:
            assert decision in STRICT, "%s: expected a refusal (%s), got %s" % (
                client, case.get("why"), decision)
            assert " Instead: " in reason, reason


def test_every_class_is_caught_and_its_controls_allowed():
    classes = {c["class"] for c in TRAIN}
    assert len(classes) >= 12 and "controls" in classes
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids must be unique"
