"""A corpus of damaged estates: every estate file (and the folders, the key, the
caches, the bytecode) replaced by garbage, a truncated copy, JSON of the wrong
shape, a FIFO, /dev/zero, a folder, something too large, or another owner.

For each case: `doctor` names the damaged path in a FAIL; SessionStart still
delivers a packet; the gate still refuses `rm -rf ~`; Stop answers; no hook hangs,
grows, or shows a traceback; nothing damaged is silently rewritten."""
import json
import os
import shutil

import pytest

from conftest import ANSWER_WITHIN_S, make_project, write_codex_trust
from faultlib import answer_of, clean, refused, tool_payload
import notrest

S = "s1"


def _line(record):
    return notrest.encode_line(record)


def not_json(text="{not json"):
    return ("write", text)


def shaped(value):
    return ("write", json.dumps(value))


def line(record):
    return ("append", _line(record))


CASES = {
    # config.json
    "config not JSON": ("config.json", not_json()),
    "config truncated": ("config.json", ("truncate", 0.5)),
    "config empty": ("config.json", ("write", "")),
    "config a list": ("config.json", shaped([1, 2])),
    "config python a number": ("config.json", ("merge", {"python": 5})),
    "config clients a string": ("config.json", ("merge", {"clients": "claude"})),
    "config clients of numbers": ("config.json", ("merge", {"clients": [1]})),
    "config packet_budget a string": ("config.json", ("merge", {"packet_budget": "big"})),
    "config cli a list": ("config.json", ("merge", {"cli": ["x"]})),
    "config NUL bytes": ("config.json", ("write", "\0\0\0\0")),
    "config too large": ("config.json", ("write", '{"x": "%s"}' % ("a" * (1 << 20)))),
    "config a FIFO": ("config.json", ("fifo",)),
    "config /dev/zero": ("config.json", ("symlink", "/dev/zero")),
    "config a folder": ("config.json", ("dir",)),
    "config another owner": ("config.json", ("chown",)),
    # laws.json
    "laws not JSON": ("laws.json", not_json()),
    "laws truncated": ("laws.json", ("truncate", 0.6)),
    "laws a FIFO": ("laws.json", ("fifo",)),
    "laws /dev/zero": ("laws.json", ("symlink", "/dev/zero")),
    "laws a device": ("laws.json", ("mknod",)),
    "laws a folder": ("laws.json", ("dir",)),
    "laws list of laws a number": ("laws.json", ("merge", {"laws": 5})),
    "laws disable a string": ("laws.json", ("merge", {"disable": "no-destroy"})),
    "laws a law without text": ("laws.json", ("merge", {"laws": [
        {"id": "x", "on": ["PreToolUse"], "program": ["curl"]}]})),
    "laws a law with a bad regex": ("laws.json", ("merge", {"laws": [
        {"id": "x", "text": "t", "on": ["PreToolUse"], "command": "(("}]})),
    "laws an unknown field": ("laws.json", ("merge", {"laws": [
        {"id": "x", "text": "t", "on": ["PreToolUse"], "program": ["a"], "zap": 1}]})),
    "laws a newer schema": ("laws.json", ("merge", {"schema_version": 99})),
    "laws a silly bound": ("laws.json", ("merge", {"stop_block_bound": 100})),
    "laws too large": ("laws.json", ("write", '{"comment": "%s"}' % ("a" * (5 << 20)))),
    # index.json
    "index not JSON": ("index.json", not_json()),
    "index truncated": ("index.json", ("truncate", 0.5)),
    "index a list": ("index.json", shaped([])),
    "index sessions a number": ("index.json", shaped({"sessions": 5})),
    "index entry started yesterday": ("index.json", shaped({"sessions": [
        {"session": S, "started": "yesterday"}]})),
    "index entry pid a string": ("index.json", shaped({"sessions": [
        {"session": S, "pid": "1234"}]})),
    "index entry without session": ("index.json", shaped({"sessions": [{"note": "x"}]})),
    "index entry a number": ("index.json", shaped({"sessions": [7]})),
    "index entry ended true": ("index.json", shaped({"sessions": [
        {"session": S, "ended": True}]})),
    "index a FIFO": ("index.json", ("fifo",)),
    "index /dev/zero": ("index.json", ("symlink", "/dev/zero")),
    "index a folder": ("index.json", ("dir",)),
    "index another owner": ("index.json", ("chown",)),
    # permits.json
    "permits not JSON": ("permits.json", not_json()),
    "permits a list": ("permits.json", shaped([])),
    "permits permits a number": ("permits.json", shaped({"permits": 5})),
    "permits expires never": ("permits.json", shaped({"permits": [
        {"id": "p-1", "law": "no-destroy", "created": 1, "expires": "never"}]})),
    "permits created yesterday": ("permits.json", shaped({"permits": [
        {"id": "p-1", "law": "no-destroy", "created": "yesterday", "expires": 9e12}]})),
    "permits without an id": ("permits.json", shaped({"permits": [
        {"law": "no-destroy", "created": 1, "expires": 9e12}]})),
    "permits an entry a string": ("permits.json", shaped({"permits": ["p-1"]})),
    "permits a FIFO": ("permits.json", ("fifo",)),
    "permits /dev/zero": ("permits.json", ("symlink", "/dev/zero")),
    "permits a folder": ("permits.json", ("dir",)),
    # acks.json (`notrest ack`)
    "acks not JSON": ("acks.json", not_json()),
    "acks a list": ("acks.json", shaped([])),
    "acks acked a number": ("acks.json", ("merge", {"acked": 5})),
    "acks a time a string": ("acks.json", shaped({"schema_version": 1,
                                                  "acked": {S: "yesterday"}})),
    "acks a FIFO": ("acks.json", ("fifo",)),
    "acks /dev/zero": ("acks.json", ("symlink", "/dev/zero")),
    "acks a folder": ("acks.json", ("dir",)),
    # sessions/<id>.json
    "record not JSON": ("sessions/s1.json", not_json()),
    "record truncated": ("sessions/s1.json", ("truncate", 0.5)),
    "record a list": ("sessions/s1.json", shaped([])),
    "record started yesterday": ("sessions/s1.json", ("merge", {"started": "yesterday"})),
    "record files a list": ("sessions/s1.json", ("merge", {"files": []})),
    "record failed of numbers": ("sessions/s1.json", ("merge", {"failed": [1]})),
    "record hook_ms short": ("sessions/s1.json", ("merge", {"hook_ms": {"Stop": [1]}})),
    "record changed a string": ("sessions/s1.json", ("merge", {
        "changed_since_note": "a.py"})),
    "record offset a string": ("sessions/s1.json", ("merge", {"journal_offset": "0"})),
    "record pending a number": ("sessions/s1.json", ("merge", {"pending": 5})),
    "record stop_blocks true": ("sessions/s1.json", ("merge", {"stop_blocks": True})),
    "record checks a list": ("sessions/s1.json", ("merge", {"checks": []})),
    "record a FIFO": ("sessions/s1.json", ("fifo",)),
    "record /dev/zero": ("sessions/s1.json", ("symlink", "/dev/zero")),
    "record a folder": ("sessions/s1.json", ("dir",)),
    "record another owner": ("sessions/s1.json", ("chown",)),
    # threads.jsonl
    "threads a torn line": ("threads.jsonl", ("append", '{"id": "t9", "text": "cut\n')),
    "threads garbage": ("threads.jsonl", ("append", "\0\0garbage\n")),
    "threads id a number": ("threads.jsonl", line({"k": "thread", "id": 5})),
    "threads text a list": ("threads.jsonl", line({"k": "thread", "id": "t7", "text": []})),
    "threads t a string": ("threads.jsonl", line({"k": "thread", "id": "t7", "t": "now"})),
    "threads a FIFO": ("threads.jsonl", ("fifo",)),
    "threads /dev/zero": ("threads.jsonl", ("symlink", "/dev/zero")),
    "threads a folder": ("threads.jsonl", ("dir",)),
    # journal/<id>.jsonl
    "journal a torn line": ("journal/s1.jsonl", ("append", '{"k": "tool", "what": "x\n')),
    "journal a flipped byte": ("journal/s1.jsonl", ("flip",)),
    "journal files a string": ("journal/s1.jsonl", line({"k": "tool", "files": "abc",
                                                         "t": 1})),
    "journal files of numbers": ("journal/s1.jsonl", line({"k": "tool", "files": [[1, 2]],
                                                           "t": 1})),
    "journal kind a number": ("journal/s1.jsonl", line({"k": 5, "t": 1})),
    "journal open a string": ("journal/s1.jsonl", line({"k": "note", "open": "t1",
                                                        "t": 1})),
    "journal t a string": ("journal/s1.jsonl", line({"k": "start", "t": "now"})),
    "journal laws a string": ("journal/s1.jsonl", line({"k": "stop", "laws": "x",
                                                        "decision": "block", "t": 1})),
    "journal items of numbers": ("journal/s1.jsonl", line({"k": "exits", "items": [1],
                                                           "t": 1})),
    "journal a FIFO": ("journal/s1.jsonl", ("fifo",)),
    "journal /dev/zero": ("journal/s1.jsonl", ("symlink", "/dev/zero")),
    "journal a folder": ("journal/s1.jsonl", ("dir",)),
    "journal another owner": ("journal/s1.jsonl", ("chown",)),
    # learned/
    "learn state not JSON": ("learned/state.json", not_json()),
    "learn state ngrams a list": ("learned/state.json", ("merge", {"ngrams": []})),
    "learn state an ngram of strings": ("learned/state.json", ("merge", {"ngrams": {
        "make": {"n": "5", "s": "abc", "ev": [], "vals": [], "ex": []}}})),
    "learn state sids a number": ("learned/state.json", ("merge", {"sids": 5})),
    "learn state tails short": ("learned/state.json", ("merge", {"tails": {S: [[1]]}})),
    "learn state a FIFO": ("learned/state.json", ("fifo",)),
    "learn state /dev/zero": ("learned/state.json", ("symlink", "/dev/zero")),
    "learn cursors not JSON": ("learned/cursors.json", not_json()),
    "learn cursors a number": ("learned/cursors.json", shaped({S: 5})),
    "learn cursors of strings": ("learned/cursors.json", shaped({S: ["a", 1]})),
    "learn cursors a folder": ("learned/cursors.json", ("dir",)),
    "learn candidates of numbers": ("learned/candidates.json", shaped({
        "candidates": [1]})),
    "learn candidates a number": ("learned/candidates.json", shaped({"candidates": 5})),
    "learn candidate without sessions": ("learned/candidates.json", shaped({
        "candidates": [{"id": "seq-1", "kind": "sequence", "occurrences": 3}]})),
    "learn candidates not JSON": ("learned/candidates.json", not_json()),
    "learn candidates a FIFO": ("learned/candidates.json", ("fifo",)),
    "learn decisions a list": ("learned/decisions.json", shaped([])),
    "learn decisions of numbers": ("learned/decisions.json", shaped({"seq-1": 5})),
    "learn decisions a FIFO": ("learned/decisions.json", ("fifo",)),
    # compiled/, install.json
    "compiled meta not JSON": ("compiled/make-test/meta.json", not_json()),
    "compiled meta pattern a number": ("compiled/make-test/meta.json", ("merge", {
        "pattern": 5})),
    "compiled meta a FIFO": ("compiled/make-test/meta.json", ("fifo",)),
    "install record not JSON": ("install.json", not_json()),
    "install record created a number": ("install.json", ("merge", {"created": 5})),
    "install record a FIFO": ("install.json", ("fifo",)),
    # folders where a folder belongs
    "journal folder a file": ("journal", ("file",)),
    "sessions folder a file": ("sessions", ("file",)),
    "learned folder a file": ("learned", ("file",)),
    # the generated modules, the hooks' bytecode, the CLI's bytecode
    "hot module a FIFO": ("notrest_hot.py", ("fifo",)),
    "warm module cut short": ("notrest_warm.py", ("truncate", 0.5)),
    "hot cache rewritten": ("<hot>", ("forge-pyc",)),
    "warm cache a FIFO": ("<warm>", ("fifo",)),
    "hot cache a folder": ("<hot>", ("dir",)),
    "bytecode stale": ("<pyc>", ("flip-source-hash",)),
    "bytecode by time only": ("<pyc>", ("timestamp-pyc",)),
}
# what doctor must name for a case, when not the path's last part
NAMED = {"<hot>": "notrest_hot.", "<warm>": "notrest_warm.", "<pyc>": "bytecode"}


def _resolve(proj, where):
    code = str(proj.root / ".notrest")
    env = {"HOME": str(proj.home)}
    return {"<hot>": notrest.hot_cache_path(code, "hot", env),
            "<warm>": notrest.hot_cache_path(code, "warm", env),
            "<pyc>": os.path.join(code, "__pycache__", "notrest.%s.pyc" %
                                  __import__("sys").implementation.cache_tag),
            }.get(where, os.path.join(code, where))


def damage(path, action):
    kind = action[0]
    if kind in ("fifo", "symlink", "dir", "mknod", "file") and os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if kind == "write":
        with open(path, "w") as handle:
            handle.write(action[1])
    elif kind == "append":
        with open(path, "a") as handle:
            handle.write(action[1])
    elif kind == "truncate":
        data = open(path, "rb").read()
        open(path, "wb").write(data[:int(len(data) * action[1])])
    elif kind == "merge":
        data = json.load(open(path))
        data.update(action[1])
        open(path, "w").write(json.dumps(data))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(action[1], path)
    elif kind == "mknod":
        os.mknod(path, 0o20666, os.makedev(1, 5))  # /dev/zero's numbers
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "file":
        open(path, "w").write("not a folder\n")
    elif kind == "chown":
        os.chown(path, 65534, 65534)
    elif kind == "chmod":
        os.chmod(path, action[1])
    elif kind == "flip":
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0x5A
        open(path, "wb").write(bytes(data))
    elif kind == "forge-pyc":  # its header kept, other code in its body: what one
        # who could write the folder plants (a flipped byte may land in a line table,
        # which changes no behaviour, so doctor rightly lets it be)
        import marshal
        data = open(path, "rb").read()
        body = marshal.dumps(compile("import os\nos._exit(0)\n", str(path), "exec"))
        open(path, "wb").write(data[:16] + body)
    elif kind == "flip-source-hash":
        data = bytearray(open(path, "rb").read())
        data[10] ^= 0xFF
        open(path, "wb").write(bytes(data))
    elif kind == "timestamp-pyc":
        import py_compile
        source = os.path.join(os.path.dirname(os.path.dirname(path)), "notrest.py")
        py_compile.compile(source, cfile=path, invalidation_mode=(
            py_compile.PycInvalidationMode.TIMESTAMP))


SAVED = ("config.json", "laws.json", "index.json", "permits.json", "threads.jsonl",
         "install.json", "acks.json", "journal", "sessions", "learned", "compiled")


@pytest.fixture(scope="module")
def corpus_project(tmp_path_factory):
    proj = make_project(tmp_path_factory.mktemp("corpus"))
    write_codex_trust(proj)  # the person trusted it: Codex runs the hooks (doctor checks)
    # acks.json and permits.json as a person's `notrest ack` and `allow` write them
    # (before any session: this process becomes the client of the sessions below,
    # and neither is theirs)
    assert proj.cli("ack").code == 0
    assert proj.cli("allow", "no-force-push", "--once", "--why", "corpus").code == 0
    proj.hook("SessionStart", proj.payload("SessionStart", S, source="startup"))
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", S, tool_name="Write",
        tool_input={"file_path": str(proj.root / "a.py"), "content": "1"},
        tool_response={}))
    for n in range(3):
        other = "s-%d" % n
        proj.hook("PostToolUse", proj.payload(
            "PostToolUse", other, tool_name="Bash", tool_input={"command": "make test"},
            tool_response={"stdout": ""}))
    assert proj.cli("bank", "--session", S, "--note", "did a", "--open",
                    "finish b").code == 0
    assert proj.cli("learn").code == 0
    estate = proj.root / ".notrest"
    (estate / "learned" / "decisions.json").write_text('{"seq-0": "rejected"}\n')
    meta = estate / "compiled" / "make-test"
    meta.mkdir(parents=True)
    (meta / "meta.json").write_text(json.dumps({
        "schema_version": 1, "candidate": "seq-1", "slug": "make-test",
        "pattern": ["make test"], "args": [], "evidence": []}))
    (meta / "run.sh").write_text("#!/bin/sh\nmake test\n")
    (meta / "SKILL.md").write_text("x")
    for client in ("claude", "codex"):
        path = notrest.skill_path(str(proj.root), client, "make-test")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write("x")
    for name in ("state.json", "cursors.json", "candidates.json"):
        assert (estate / "learned" / name).exists(), name
    snapshot = proj.root.parent / "snapshot"
    snapshot.mkdir()
    for name in SAVED:
        source = estate / name
        if source.is_dir():
            shutil.copytree(source, snapshot / name, symlinks=True)
        else:
            shutil.copy2(source, snapshot / name)
    keep = {p: open(p, "rb").read() for p in (
        _resolve(proj, "<hot>"), _resolve(proj, "<warm>"), _resolve(proj, "<pyc>"),
        str(estate / "notrest_hot.py"), str(estate / "notrest_warm.py"))}
    proj.snapshot, proj.keep = snapshot, keep
    return proj


def restore(proj):
    estate = proj.root / ".notrest"
    for name in SAVED:
        target = estate / name
        if os.path.lexists(target):
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
        source = proj.snapshot / name
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target)
    for path, data in proj.keep.items():
        if os.path.lexists(path) and (os.path.isdir(path) and not os.path.islink(path)):
            shutil.rmtree(path)
        elif os.path.lexists(path) and not os.path.isfile(path):
            os.unlink(path)
        if not os.path.exists(path) or open(path, "rb").read() != data:
            with open(path, "wb") as handle:
                handle.write(data)
        os.chmod(path, 0o644)


def test_the_undamaged_corpus_project_is_all_good(corpus_project, monkeypatch):
    monkeypatch.setenv("HOME", str(corpus_project.home))
    findings = notrest.run_doctor(corpus_project.estate)
    assert all(f.ok for f in findings), [f.what for f in findings if not f.ok]


def test_the_corpus_is_large_and_covers_every_estate_file():
    assert len(CASES) >= 99
    touched = {where.split("/")[0] for where, _ in CASES.values()}
    for name in ("config.json", "laws.json", "index.json", "permits.json", "sessions",
                 "threads.jsonl", "journal", "learned", "compiled", "install.json",
                 "acks.json",
                 "notrest_hot.py", "notrest_warm.py", "<hot>", "<warm>", "<pyc>"):
        assert name in touched, name
    kinds = {action[0] for _, action in CASES.values()}
    assert {"fifo", "symlink", "dir", "chown", "merge", "write", "truncate"} <= kinds


@pytest.mark.parametrize("case", sorted(CASES))
def test_doctor_names_the_damage_and_the_hooks_keep_their_contract(
        corpus_project, monkeypatch, case):
    proj = corpus_project
    monkeypatch.setenv("HOME", str(proj.home))
    where, action = CASES[case]
    path = _resolve(proj, where)
    restore(proj)
    damage(path, action)
    try:
        findings = notrest.run_doctor(proj.estate)
        named = NAMED.get(where, os.path.basename(where))
        failed = [f.what for f in findings if not f.ok]
        assert any(named in what for what in failed), (case, failed)
        start = proj.hook("SessionStart", proj.payload("SessionStart", "probe",
                                                       source="resume"), timeout=15)
        assert start.code == 0 and clean(start) and start.seconds < ANSWER_WITHIN_S, (case,
                                                                         start.stderr)
        text = answer_of(start)["hookSpecificOutput"]["additionalContext"]
        assert "Laws in force" in text and "no-destroy" in text, (case, text)
        deny = proj.hook("PreToolUse", tool_payload(proj, S, "rm -rf ~"), timeout=15)
        assert refused(deny, "PreToolUse") and clean(deny) and deny.seconds < ANSWER_WITHIN_S, (
            case, deny.stdout, deny.stderr)
        stop = proj.hook("Stop", proj.payload("Stop", S), timeout=15)
        assert stop.code in (0, 2) and clean(stop) and stop.seconds < ANSWER_WITHIN_S, (case,
                                                                          stop.stderr)
        assert stop.code == 2 or answer_of(stop) is not None, (case, stop.stdout)
        if where not in ("sessions", "journal") and os.path.isfile(
                proj.estate.record(S)):
            _rec, problem = notrest.read_session_record(proj.estate, S)
            assert problem is None, "a fold wrote a record it cannot read: %s" % problem
        if action[0] in ("write", "merge", "truncate") and where.endswith(".json") and \
                not where.startswith("<"):
            moved = [n for n in os.listdir(os.path.dirname(path)) if n.startswith(
                os.path.basename(path)) and ".damaged-" in n]
            still = os.path.exists(path) and open(path, "rb").read()
            assert moved or still is not None, "a damaged file vanished: %s" % case
    finally:
        restore(proj)


def test_ack_keeps_a_damaged_acks_file_aside_and_says_so(proj):
    path = proj.root / ".notrest" / "acks.json"
    path.write_text('{"acked": {"s1": 17')
    result = proj.cli("ack")
    assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
    assert str(path) in result.stderr and "kept it as" in result.stderr, result.stderr
    kept = [p for p in path.parent.iterdir() if p.name.startswith("acks.json.damaged-")]
    assert [p.read_text() for p in kept] == ['{"acked": {"s1": 17']
    assert json.loads(path.read_text())["acked"] == {}
