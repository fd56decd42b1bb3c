"""Issue #23 item 3: doctor sees what every hook sees. For every estate file and
every way it can be broken (a FIFO, a device like /dev/zero, a symlink to
/dev/zero, garbage bytes, JSON of the wrong shape, a folder in its place, a path
that cannot be read), `notrest doctor` exits 1, names the path and a fix, and
never hangs."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import make_project, write_codex_trust
import notrest

S = "s1"
GARBAGE = b"\x00\xff\xfe\x89PNG\r\n\x1a\ngarbage \xc3\x28 not json at all\x00\n"

# the estate's files, as a path relative to .notrest/ or one resolved below
FILES = ("config.json", "laws.json", "index.json", "sessions/s1.json",
         "journal/s1.jsonl", "acks.json", "permits.json", "threads.jsonl",
         "install.json", "person-notes.jsonl", "learned/candidates.json",
         "learned/state.json", "audit.json", "<manifest>", "<laws-last-good>", "<hot>", "<warm>",
         "notrest_hot.py", "notrest_warm.py")
CORRUPTIONS = ("fifo", "device", "dev-zero", "garbage", "wrong-shape", "folder",
               "unreadable")
# a wrong shape of each JSON file (a line for the .jsonl ones)
WRONG = {".json": "[1, 2, 3]\n", ".jsonl": "[1, 2, 3]\n"}


def _resolve(proj, where):
    code = str(proj.root / ".notrest")
    store = notrest.project_store(str(proj.root), {"HOME": str(proj.home)})
    env = {"HOME": str(proj.home)}
    special = {"<hot>": notrest.hot_cache_path(code, "hot", env),
               "<warm>": notrest.hot_cache_path(code, "warm", env),
               "<manifest>": os.path.join(store, notrest.MANIFEST_NAME),
               "<laws-last-good>": os.path.join(store, "laws.last-good.json")}
    return special.get(where) or os.path.join(code, where)


@pytest.fixture(scope="module")
def estate_project(tmp_path_factory):
    proj = make_project(tmp_path_factory.mktemp("sees"))
    write_codex_trust(proj)
    laws = proj.root / ".notrest" / "laws.json"
    if not laws.exists():
        laws.write_text(json.dumps({"schema_version": 1, "laws": []}) + "\n")
    assert proj.cli("ack").code == 0
    assert proj.cli("allow", "no-force-push", "--once", "--why", "sees").code == 0
    assert proj.cli("bank", "--note", "a person's word").code == 0
    proj.hook("SessionStart", proj.payload("SessionStart", S, source="startup"))
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", S, tool_name="Bash", tool_input={"command": "make test"},
        tool_response={"stdout": ""}))
    for n in range(3):
        proj.hook("PostToolUse", proj.payload(
            "PostToolUse", "s-%d" % n, tool_name="Bash",
            tool_input={"command": "make test"}, tool_response={"stdout": ""}))
    assert proj.cli("bank", "--session", S, "--note", "did a", "--open", "b").code == 0
    assert proj.cli("learn").code == 0
    assert doctor(proj)[0] == 0, doctor(proj)[1]  # it writes audit.json
    saved = {}
    for where in FILES:
        path = _resolve(proj, where)
        assert os.path.isfile(path), where
        saved[where] = (open(path, "rb").read(), os.stat(path).st_mode & 0o7777)
    proj.saved = saved
    assert doctor(proj)[0] == 0, doctor(proj)[1]
    return proj


def doctor(proj):
    env = proj.env()
    proc = subprocess.run([str(proj.root / ".notrest" / "notrest"), "doctor"],
                          capture_output=True, cwd=str(proj.root), env=env, timeout=30)
    return proc.returncode, proc.stdout.decode("utf-8", "replace") + proc.stderr.decode(
        "utf-8", "replace")


def _clear(path):
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def damage(path, corruption):
    if corruption in ("garbage", "wrong-shape"):
        _clear(path)
        with open(path, "wb") as handle:
            handle.write(GARBAGE if corruption == "garbage" else WRONG[
                ".jsonl" if path.endswith(".jsonl") else ".json"].encode())
        return
    _clear(path)
    if corruption == "fifo":
        os.mkfifo(path)
    elif corruption == "device":
        os.mknod(path, 0o20666, os.makedev(1, 5))  # /dev/zero's numbers
    elif corruption == "dev-zero":
        os.symlink("/dev/zero", path)
    elif corruption == "folder":
        os.mkdir(path)
    elif corruption == "unreadable":
        os.symlink(os.path.basename(path), path)  # a loop: ELOOP, even for root


def restore(proj, where):
    path = _resolve(proj, where)
    _clear(path)
    data, mode = proj.saved[where]
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


CASES = [(f, c) for f in FILES for c in CORRUPTIONS if not (
    c == "wrong-shape" and f in ("<hot>", "<warm>", "notrest_hot.py", "notrest_warm.py"))]


@pytest.mark.parametrize("where,corruption", CASES,
                         ids=["%s %s" % case for case in CASES])
def test_doctor_names_every_broken_estate_file(estate_project, where, corruption):
    proj = estate_project
    path = _resolve(proj, where)
    damage(path, corruption)
    try:
        code, out = doctor(proj)
    finally:
        restore(proj, where)
    fails = out.split("FAIL  ")[1:]
    named = [f for f in fails if path in f]
    assert code == 1 and named, (where, corruption, code, out)
    assert any("fix: " in f.split("FAIL  ")[0] for f in named), (where, corruption, out)


# more wrong shapes of the files people and hooks lean on most
SHAPES = {
    "index.json": [{"sessions": {}}, {"sessions": [{"session": 5}]},
                   {"schema_version": "1", "sessions": []}, {"sessions": [[1]]},
                   {"sessions": [{"session": S, "debts": 5}]}],
    "config.json": [{"python": 5}, {"clients": "claude"}, {"packet_budget": "big"}, 7],
    "sessions/s1.json": [{"session": S, "failed": 5}, {"files": []}, "a record"],
    "acks.json": [{"acked": []}, {"acked": {S: "now"}}, {"debts": {"d1": "x"}}],
    "audit.json": [{"cursors": []}, {"findings": 5}],
}
SHAPE_CASES = [(f, i) for f, shapes in SHAPES.items() for i in range(len(shapes))]


@pytest.mark.parametrize("where,i", SHAPE_CASES, ids=["%s shape %d" % c for c in
                                                      SHAPE_CASES])
def test_doctor_names_a_wrong_shape(estate_project, where, i):
    proj = estate_project
    path = _resolve(proj, where)
    _clear(path)
    with open(path, "w") as handle:
        json.dump(SHAPES[where][i], handle)
    try:
        code, out = doctor(proj)
    finally:
        restore(proj, where)
    named = [f for f in out.split("FAIL  ")[1:] if path in f]
    assert code == 1 and named and "fix: " in named[0], (where, i, out)
