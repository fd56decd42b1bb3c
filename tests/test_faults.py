"""Issue #10: every fault fails in the right direction. Faults are injected into an
installed project the way they happen on real machines, and the installed sh hooks
are driven as the clients run them. For each: what the client does with the answer
(faultlib.refused / goes_on), whether anything journaled was lost, and that no
traceback reached anyone. Gates fail closed; advisory hooks fail open, quietly."""
import json
import marshal
import os
import select
import subprocess
import tempfile
import time

import pytest

from conftest import ANSWER_WITHIN_S, REPO, HookResult, Project
from faultlib import (answer_of, can_mount, clean, doctor_text, fill_disk, goes_on,
                      no_python_path, pad_to_page, reason, records, refused, remount,
                      tmpfs, tool_payload)
import notrest

SECRET = "sk-ant-api03-" + "Q7w8E9r0T1y2U3i4" * 4
MOUNTS = can_mount()
needs_mount = pytest.mark.skipif(not MOUNTS, reason="needs root and mount (tmpfs)")


def setup_project(root, home, clients="both"):
    """A git project at root (which may be a mount point) with notrest installed."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    (root / "README.txt").write_text("hello\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "first"], cwd=root, check=True, env=env)
    proc = subprocess.run(["sh", str(REPO / "install.sh"), "--client", clients, str(root)],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return Project(root, home)


def seed_session(proj, session):
    """A session that changed a file and banked nothing: the Stop gate has work."""
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", session,
                                               prompt="write a.py"))
    proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Write",
        tool_input={"file_path": str(proj.root / "a.py"), "content": "1"},
        tool_response={}))
    return records(proj, session)


def assert_unwritable_contract(proj, session, before, fault):
    """What every hook does on an estate it cannot write (disk full, read-only,
    owned by another user): gates still decide, advisory hooks go on quietly."""
    deny = proj.hook("PreToolUse", tool_payload(proj, session, "rm -rf ~"))
    assert refused(deny, "PreToolUse") and "no-destroy" in reason(deny), (fault,
                                                                          deny.stdout)
    allow = proj.hook("PreToolUse", tool_payload(proj, session, "rm FILL"))
    assert goes_on(allow, "PreToolUse"), (fault, allow.stdout, allow.stderr)
    assert allow.stderr.count("\n") <= 1 and "notrest" in allow.stderr, allow.stderr
    perm = proj.hook("PermissionRequest", tool_payload(proj, session, "rm -rf ~",
                                                       "PermissionRequest"))
    assert refused(perm, "PermissionRequest"), (fault, perm.stdout)
    secret = proj.hook("UserPromptSubmit", proj.payload(
        "UserPromptSubmit", session, prompt="use %s now" % SECRET))
    assert refused(secret, "UserPromptSubmit") and "secret-in-prompt" in reason(secret)
    prompt = proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", session,
                                                        prompt="run the tests"))
    assert goes_on(prompt, "UserPromptSubmit"), (fault, prompt.stdout, prompt.stderr)
    post = proj.hook("PostToolUse", proj.payload(
        "PostToolUse", session, tool_name="Bash", tool_input={"command": "ls"},
        tool_response={"stdout": ""}))
    assert goes_on(post, "PostToolUse") and post.stderr.count("\n") <= 1
    start = proj.hook("SessionStart", proj.payload("SessionStart", "next-" + session,
                                                   source="startup"))
    text = answer_of(start)["hookSpecificOutput"]["additionalContext"]
    assert "Laws in force" in text and session[:8] in text and "a.py" in text, (
        fault, text)
    stop = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=False))
    assert refused(stop, "Stop") and "bank-before-stop" in reason(stop), (fault,
                                                                          stop.stdout)
    again = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=True))
    assert goes_on(again, "Stop"), "a block the estate cannot count must not loop"
    end = proj.hook("SessionEnd", proj.payload("SessionEnd", session, reason="other"))
    assert goes_on(end, "SessionEnd")
    for result in (deny, allow, perm, secret, prompt, post, start, stop, again, end):
        assert clean(result) and result.seconds < ANSWER_WITHIN_S, (fault, result.stderr)
    assert records(proj, session)[:len(before)] == before, "journaled lines were lost"
    bank = proj.cli("bank", "--session", session, "--note", "done")
    assert clean(bank), (fault, bank.stderr)
    if bank.code == 0:  # a shell that cannot write hands the note to the hooks
        assert "notrest-bank-deferred" in bank.stderr and "read-only" in bank.stdout
    else:
        assert bank.code == 3 and str(proj.root / ".notrest") in bank.stderr, (
            fault, bank.stderr)
    cli = proj.cli("rebuild")
    assert cli.code == 3 and clean(cli), (fault, cli.stderr)
    assert str(proj.root / ".notrest") in cli.stderr and "notrest:" in cli.stderr


# ---- the estate cannot be written -------------------------------------------------

@needs_mount
def test_a_full_disk_keeps_the_gates_and_frees_itself(tmp_path):
    home = tmp_path / "home"
    root = home / "project"
    root.mkdir(parents=True)
    with tmpfs(root, "8m"):
        proj = setup_project(root, home)
        before = seed_session(proj, "full-1")
        pad_to_page(proj.estate.journal("full-1"))
        before = records(proj, "full-1")
        fill_disk(str(root))
        assert_unwritable_contract(proj, "full-1", before, "full disk")
        text, _ = doctor_text(proj.estate)
        assert "cannot be written" in text and "KB" in text and "free" in text, text
        os.unlink(root / "FILL")
        os.unlink(root / "FILL2")
        after = proj.hook("PostToolUse", proj.payload(
            "PostToolUse", "full-1", tool_name="Bash", tool_input={"command": "rm FILL"},
            tool_response={"stdout": ""}))
        assert goes_on(after, "PostToolUse") and after.stderr == ""
        assert records(proj, "full-1")[-1]["what"] == "rm FILL"


@needs_mount
def test_a_read_only_estate_keeps_the_gates_and_the_packet(tmp_path):
    home = tmp_path / "home"
    root = home / "project"
    root.mkdir(parents=True)
    with tmpfs(root, "16m"):
        proj = setup_project(root, home)
        before = seed_session(proj, "ro-1")
        remount(root, "ro")
        try:
            assert_unwritable_contract(proj, "ro-1", before, "read-only")
            text, _ = doctor_text(proj.estate)
            assert "cannot be written" in text and "read-only" in text, text
        finally:
            remount(root, "rw")


def test_an_estate_owned_by_another_user(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to run the hooks as another user")
    base = tempfile.mkdtemp(prefix="nr-owner-", dir="/tmp")
    os.chmod(base, 0o755)
    try:
        home = os.path.join(base, "home")
        os.makedirs(home)
        os.chmod(home, 0o777)
        proj = setup_project(__import__("pathlib").Path(base) / "project",
                             __import__("pathlib").Path(home))
        before = seed_session(proj, "own-1")
        subprocess.run(["chown", "-R", "65534:65534", str(proj.root / ".notrest")],
                       check=True)
        subprocess.run(["chmod", "-R", "go-w", str(proj.root / ".notrest")], check=True)
        original = subprocess.run

        def as_user(argv, **kw):  # the person's hooks and CLI run as uid 1000
            kw.setdefault("user", 1000)
            kw.setdefault("group", 1000)
            kw.setdefault("extra_groups", [])
            return original(argv, **kw)

        subprocess.run = as_user
        try:
            assert_unwritable_contract(proj, "own-1", before, "owned by another user")
            doctor = proj.cli("doctor")
            assert "belongs to uid 65534" in doctor.stdout, doctor.stdout
            assert "cannot be written" in doctor.stdout and clean(doctor)
        finally:
            subprocess.run = original
    finally:
        subprocess.run(["rm", "-rf", base])


# ---- no interpreter, an unloadable module ---------------------------------------

def test_no_interpreter_at_all_gates_answer_by_themselves(proj, tmp_path):
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    text = tail.read_text()
    recorded = text.split("py='", 1)[1].split("'", 1)[0]
    tail.write_text(text.replace("py='%s'" % recorded, "py='/gone/python3'", 1))
    path = no_python_path(tmp_path)
    session = "nopy-1"
    results = {}
    for event in notrest.HOOK_EVENTS:
        payload = tool_payload(proj, session, "ls", event) if event in (
            "PreToolUse", "PermissionRequest") else proj.payload(event, session,
                                                                 prompt="hi")
        results[event] = proj.hook(event, payload, PATH=path)
    for event, result in results.items():
        assert result.code == 0 and clean(result), (event, result.stderr)
        assert answer_of(result) is not None, (event, result.stdout)
        words = reason(result)
        assert "python3 is not on PATH" in words and "install.sh" in words, (event, words)
        if event in notrest.GATE_EVENTS:
            assert refused(result, event), (event, result.stdout)
        else:
            assert goes_on(result, event) and result.stderr.count("\n") == 1
    active = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=True),
                       PATH=path)
    assert goes_on(active, "Stop"), "the second stop in a row must pass (no loop)"
    wrapper = proj.root / ".notrest" / "notrest"
    wrapper.write_text(wrapper.read_text().replace("py='%s'" % recorded,
                                                   "py='/gone/python3'", 1))
    cli = subprocess.run(["sh", str(wrapper), "status"], capture_output=True,
                         env=dict(proj.env(), PATH=path))
    assert cli.returncode == 3 and b"python3 is not on PATH" in cli.stderr


@pytest.mark.parametrize("damage", ["truncated", "cut-cleanly", "import-error", "missing",
                                    "fifo"])
def test_an_unloadable_module_fails_gates_closed_and_the_rest_open(proj, damage):
    for name in ("notrest.py", "notrest_hot.py", "notrest_warm.py"):  # all a hook imports
        source = proj.root / ".notrest" / name
        text = source.read_text()
        source.unlink()
        if damage == "truncated":
            source.write_text(text[:len(text) // 2])  # a half-copied upgrade
        elif damage == "cut-cleanly":  # it compiles, and lacks what follows
            source.write_text(text[:text.index("\n# ==== CLI ====" if name == "notrest.py"
                                               else "\ndef hook_main(")])
        elif damage == "import-error":
            source.write_text("import notrest_helpers_that_are_not_there\n" + text)
        elif damage == "fifo":
            os.mkfifo(source)
    session = "mod-" + damage
    for event in ("PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop"):
        payload = tool_payload(proj, session, "ls", event) if "Tool" in event or \
            "Permission" in event else proj.payload(event, session, prompt="hi")
        result = proj.hook(event, payload, timeout=10)
        assert refused(result, event) and clean(result), (damage, event, result.stderr)
        assert "notrest doctor" in result.stderr and "install" in result.stderr
    stop = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=True))
    assert goes_on(stop, "Stop")
    for event in ("PostToolUse", "SessionStart", "SessionEnd"):
        result = proj.hook(event, proj.payload(event, session, tool_name="Bash",
                                               tool_input={"command": "ls"}))
        assert goes_on(result, event) and clean(result), (damage, event, result.stderr)
        assert result.stderr.count("\n") == 1 and result.seconds < ANSWER_WITHIN_S
    cli = proj.cli("status")
    assert cli.code == 3 and clean(cli) and "notrest.py" in cli.stderr, cli.stderr


def test_a_gate_process_that_dies_is_a_refusal(proj):
    """A crash past every guard (here: the interpreter is killed) is exit 2."""
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    text = tail.read_text()
    recorded = text.split("py='", 1)[1].split("'", 1)[0]
    crasher = proj.root / "crash-python"
    crasher.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crasher.chmod(0o755)
    tail.write_text(text.replace("py='%s'" % recorded, "py='%s'" % crasher, 1))
    result = proj.hook("PreToolUse", tool_payload(proj, "seg-1", "ls"))
    assert result.code == 2 and refused(result, "PreToolUse") and clean(result)
    assert "before it could judge" in result.stderr
    post = proj.hook("PostToolUse", tool_payload(proj, "seg-1", "ls", "PostToolUse"))
    assert post.code != 2  # advisory: the client goes on whatever the exit code



@pytest.mark.parametrize("stand_in", ["true", "silent-crash"])
def test_a_gate_process_that_ends_without_an_answer_is_a_refusal(proj, tmp_path, stand_in):
    """The interpreter replaced by /bin/true (exit 0, nothing printed) or a crash that
    prints nothing: no JSON object came back, so the gate refuses."""
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    text = tail.read_text()
    recorded = text.split("py='", 1)[1].split("'", 1)[0]
    if stand_in == "true":
        fake = "/bin/true"
    else:
        fake = str(tmp_path / "silent-python")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\nexit 0\n")
        os.chmod(fake, 0o755)
    tail.write_text(text.replace("py='%s'" % recorded, "py='%s'" % fake, 1))
    for event in ("PreToolUse", "PermissionRequest"):
        result = proj.hook(event, tool_payload(proj, "none-1", "ls", event))
        assert result.code == 2 and refused(result, event) and clean(result), result.stderr
        assert "without a JSON answer" in result.stderr
    prompt = proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", "none-1",
                                                         prompt="hi"))
    assert refused(prompt, "UserPromptSubmit")


def _installed_command(proj, client, event):
    if client == "claude":
        hooks = json.loads((proj.root / ".claude" / "settings.json").read_text())
    else:
        hooks = json.loads((proj.root / ".codex" / "hooks.json").read_text())
    return next(h["command"] for g in hooks["hooks"][event] for h in g["hooks"]
                if notrest.HOOK_MARK in h["command"])


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_an_sh_first_on_path_and_a_launcher_without_its_execute_bit_still_gate(
        proj, tmp_path, client):
    """Every hook command runs /bin/sh by absolute path on the launcher: an `sh`
    planted first on PATH is never run, and chmod -x on the launcher changes nothing."""
    planted = tmp_path / "planted-bin"
    planted.mkdir()
    marker = tmp_path / "planted-ran"
    (planted / "sh").write_text("#!/bin/sh\ntouch %s\nexit 0\n" % marker)
    (planted / "sh").chmod(0o755)
    launcher = proj.root / ".notrest" / "hooks" / notrest.HOOK_EVENTS["PreToolUse"][0]
    launcher.chmod(0o644)
    command = _installed_command(proj, client, "PreToolUse")
    assert command.startswith("/bin/sh "), command
    env = proj.env(client)
    env["PATH"] = "%s:%s" % (planted, env.get("PATH", os.environ["PATH"]))
    env["CLAUDE_PROJECT_DIR"] = str(proj.root)
    payload = proj.payload("PreToolUse", "path-1", client, tool_name="Bash",
                           tool_input={"command": "rm -rf ~"})
    proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(),
                          capture_output=True, cwd=str(proj.root), env=env, timeout=30)
    result = HookResult(proc, 0)
    assert not marker.exists(), "the planted sh ran"
    specific = (answer_of(result) or {}).get("hookSpecificOutput") or {}
    assert result.code == 0 and specific.get("permissionDecision") == "deny", (
        result.code, result.stdout, result.stderr)


# ---- the hooks' bytecode ----------------------------------------------------------

def _pyc_with(proj, part, text):
    """Bytecode of text under the header Python's import accepts for one part's
    module: what someone who could write the pycache folder would plant."""
    source = notrest.part_module(str(proj.root / ".notrest"), part)
    stat = os.stat(source)
    header = (notrest.sys.modules["_frozen_importlib_external"].MAGIC_NUMBER +
              b"\0\0\0\0" + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") +
              (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    return header + marshal.dumps(compile(text, source, "exec", dont_inherit=True))


def test_the_agent_cannot_write_the_hooks_bytecode(proj):
    """The hooks trust their bytecode because it lies in data_dir()/pycache, which
    protect-harness keeps from the agent's tools and commands."""
    pyc = notrest.hot_cache_path(str(proj.root / ".notrest"), "hot",
                                 {"HOME": str(proj.home)})
    for command in ("cp /tmp/evil.pyc %s" % pyc, "python3 -c 'open(\"%s\", \"wb\")'" % pyc,
                    "rm -rf %s" % os.path.dirname(pyc)):
        result = proj.hook("PreToolUse", tool_payload(proj, "pyc", command))
        assert refused(result, "PreToolUse") and (
            "protect-harness" in reason(result) or "no-destroy" in reason(result)), command
    write = proj.hook("PreToolUse", proj.payload("PreToolUse", "pyc", tool_name="Write",
                                                 tool_input={"file_path": pyc,
                                                             "content": "x"}))
    assert refused(write, "PreToolUse") and "protect-harness" in reason(write)


@pytest.mark.parametrize("where", ["NOTREST_DATA_DIR", "XDG_DATA_HOME", "HOME",
                                   "relative NOTREST_DATA_DIR"])
def test_the_launcher_keeps_bytecode_where_data_dir_says(proj, where):
    env = {"NOTREST_DATA_DIR": {"NOTREST_DATA_DIR": str(proj.home / "dd") + "/"},
           "XDG_DATA_HOME": {"XDG_DATA_HOME": str(proj.home / "xdg")},
           "HOME": {}, "relative NOTREST_DATA_DIR": {"NOTREST_DATA_DIR": "rel/dir",
                                                     "XDG_DATA_HOME": "also/rel"}}[where]
    result = proj.hook("PreToolUse", tool_payload(proj, "dd", "rm -rf ~"), **env)
    assert refused(result, "PreToolUse") and "no-destroy" in reason(result), result.stderr
    pyc = notrest.hot_cache_path(str(proj.root / ".notrest"), "hot",
                                 dict(env, HOME=str(proj.home)))
    assert os.path.isfile(pyc), (where, pyc)
    assert where == "HOME" or not result.stderr.strip(), result.stderr


def test_a_rewritten_bytecode_file_is_found_by_doctor_and_rebuilt(proj, monkeypatch):
    code = str(proj.root / ".notrest")
    env = {"HOME": str(proj.home)}
    monkeypatch.setenv("HOME", str(proj.home))  # doctor, in-process, reads the person's
    path = notrest.hot_cache_path(code, "hot", env)
    hot = (proj.root / ".notrest" / "notrest_hot.py").read_text().replace(
        "def hook_main(argv,", "def _real_hook_main(argv,")
    with open(path, "wb") as handle:
        handle.write(_pyc_with(proj, "hot", hot + "\ndef hook_main(argv, *a, **k):\n"
                               "    print('{}')\n    return 0\n"))
    assert notrest.judge_cache(code, "hot", {"path": path}) == "bad-signature"
    text, _ = doctor_text(proj.estate)
    assert "hooks' bytecode" in text and "bad-signature" in text and path in text
    assert notrest.judge_cache(code, "hot", {"path": path}) == "ok", "doctor rebuilt it"
    result = proj.hook("PreToolUse", tool_payload(proj, "poison", "rm -rf ~"))
    assert refused(result, "PreToolUse") and "no-destroy" in reason(result) and \
        clean(result)


def test_a_call_that_needs_a_reader_imports_the_whole_module_from_the_data_folder(
        proj):
    """The gate readers lie below the cold line: a call that needs one imports
    notrest.py with the hooks' bytecode under data_dir()/pycache, never the .pyc in
    the project's __pycache__ (which the CLI reads, and the agent could write)."""
    code = str(proj.root / ".notrest")
    env = {"HOME": str(proj.home)}
    source = proj.root / ".notrest" / "notrest.py"
    mark = proj.home / "whole-module-ran"
    marked = source.read_text() + "\nopen(%r, 'a').write('ran\\n')\n" % str(mark)
    command = "python3 -c \"import shutil; shutil.rmtree('/home')\""
    with open(notrest.cli_pyc_path(code), "wb") as handle:  # the project's .pyc
        handle.write(_pyc_with(proj, "all", marked))
    result = proj.hook("PreToolUse", tool_payload(proj, "whole-1", command))
    assert refused(result, "PreToolUse") and "no-destroy" in reason(result), reason(result)
    assert not mark.exists(), "a .pyc in the project ran"
    with open(notrest.hot_cache_path(code, "all", env), "wb") as handle:
        handle.write(_pyc_with(proj, "all", marked))
    result = proj.hook("PreToolUse", tool_payload(proj, "whole-2", command))
    assert refused(result, "PreToolUse") and "no-destroy" in reason(result)
    assert mark.read_text() == "ran\n", "the data folder's bytecode is what ran"
    plain = proj.hook("PreToolUse", tool_payload(proj, "whole-3", "ls"))
    assert not refused(plain, "PreToolUse") and mark.read_text() == "ran\n", \
        "a call that needs no reader loads no more than the hot part"


def test_a_same_size_edit_within_the_second_reaches_the_cli(proj):
    source = proj.root / ".notrest" / "notrest.py"
    text = source.read_text()
    stat = source.stat()
    edited = text.replace('__version__ = "%s"' % notrest.__version__, '__version__ = "9.9.9"')
    assert len(edited) == len(text)
    source.write_text(edited)
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert proj.cli("--version").stdout.strip() == "9.9.9"


# ---- stdin: slow, cut, oversized, odd ------------------------------------------

def _launch(proj, event="PreToolUse", **env):
    name = notrest.HOOK_EVENTS[event][0]
    return subprocess.Popen(["sh", str(proj.root / ".notrest" / "hooks" / name),
                             "claude"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=proj.env(**env))


def test_a_slow_writer_is_read_to_the_end(proj):
    for command, denied in (("rm -rf ~", True), ("ls -la", False)):
        data = json.dumps(tool_payload(proj, "slow-1", command)).encode()
        proc = _launch(proj)
        proc.stdin.write(data[:40])
        proc.stdin.flush()
        time.sleep(2.0)
        proc.stdin.write(data[40:])
        proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=20)
        answer = json.loads(out)
        decision = answer.get("hookSpecificOutput", {}).get("permissionDecision")
        assert (decision == "deny") == denied, (command, out, err)
        if denied:
            assert "no-destroy" in out.decode(), "judged whole, not refused as cut"


def test_a_writer_that_stalls_past_the_deadline_is_refused(proj):
    data = json.dumps(tool_payload(proj, "stall-1", "ls")).encode()
    proc = _launch(proj, NOTREST_HOOK_DEADLINE="2")
    proc.stdin.write(data[:30])
    proc.stdin.flush()
    # the writer keeps stdin open, never finishing: the answer comes at the hook's
    # deadline, within the client's timeout (past it the client kills the hook)
    assert select.select([proc.stdout], [], [], ANSWER_WITHIN_S)[0], "no answer"
    out = proc.stdout.read()
    proc.stdin.close()
    proc.wait(timeout=10)
    answer = json.loads(out)
    specific = answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny" and "cut" in specific[
        "permissionDecisionReason"]


BAD_PAYLOADS = {
    "cut at the cap": None,  # streamed from a file: see below
    "truncated": lambda p: json.dumps(p).encode()[:-20],
    "nested too deep": lambda p: json.dumps(dict(p, tool_input={
        "command": "ls", "x": json.loads("[" * 100 + "]" * 100)})).encode(),
    "nested past the parser": lambda p: b"[" * 200000 + b"]" * 200000,
    "tool_input a list": lambda p: json.dumps(dict(p, tool_input=["ls"])).encode(),
    "tool_input a string": lambda p: json.dumps(dict(p, tool_input="ls")).encode(),
    "tool_name a number": lambda p: json.dumps(dict(p, tool_name=7)).encode(),
    "no tool_name": lambda p: json.dumps({k: v for k, v in p.items()
                                          if k != "tool_name"}).encode(),
    "session_id a list": lambda p: json.dumps(dict(p, session_id=["a"])).encode(),
    "cwd a number": lambda p: json.dumps(dict(p, cwd=3)).encode(),
    "another event": lambda p: json.dumps(dict(p, hook_event_name="PostToolUse")).encode(),
    "not an object": lambda p: json.dumps([p]).encode(),
    "empty": lambda p: b"",
}


def _hook_from_file(proj, event, path):
    """A hook fed from a file (a payload too big to hold in the test process)."""
    name = notrest.HOOK_EVENTS[event][0]
    started = time.monotonic()
    with open(path, "rb") as handle:
        proc = subprocess.run(["sh", str(proj.root / ".notrest" / "hooks" / name),
                               "claude"], stdin=handle, capture_output=True, timeout=30,
                              cwd=str(proj.root), env=proj.env())
    return HookResult(proc, time.monotonic() - started)


def test_a_payload_the_gate_cannot_trust_is_refused(proj, tmp_path):
    payload = tool_payload(proj, "bad-1", "ls")
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # past the 32 MiB cap, written in pieces
        handle.write(b'{"hook_event_name": "PreToolUse", "x": "')
        for _ in range(notrest.STDIN_CAP_BYTES // (1 << 20) + 1):
            handle.write(b"a" * (1 << 20))
        handle.write(b'"}')
    for case in sorted(BAD_PAYLOADS):
        for event in ("PreToolUse", "PermissionRequest"):
            if case == "cut at the cap":
                result = _hook_from_file(proj, event, big)
                assert "cap" in reason(result), reason(result)
            else:
                data = BAD_PAYLOADS[case](dict(payload, hook_event_name=event))
                if case == "another event":
                    data = json.dumps(dict(payload, hook_event_name="PostToolUse")
                                      ).encode()
                result = proj.hook(event, None, raw=data, timeout=30)
            assert refused(result, event) and result.code == 0 and clean(result), (
                case, event, result.stdout[:300], result.stderr)
            assert "gate-error" in reason(result), (case, reason(result))
            assert result.seconds < ANSWER_WITHIN_S
    assert not any(r.get("k") == "call" for r in records(proj, "bad-1")), \
        "an untrusted payload must not be journaled as a call"


@pytest.mark.parametrize("event", ["PostToolUse", "PostToolUseFailure"])
def test_a_call_whose_output_passes_the_cap_is_still_journaled(proj, tmp_path, event):
    """Issue #23 item 4: a tool that printed more than the payload cap ran; the
    journal records the call (what ran, that its output was not read) and the
    hook goes on quietly; a gate event cut the same way is still refused (above)."""
    head = json.dumps(tool_payload(proj, "big-out", "cat huge.log", event=event))[:-1]
    big = tmp_path / "big-output.json"
    with open(big, "wb") as handle:
        handle.write(head.encode() + b', "tool_response": {"stdout": "')
        for _ in range(notrest.STDIN_CAP_BYTES // (1 << 20) + 2):
            handle.write(b"x" * (1 << 20))
        handle.write(b'"}}')
    result = _hook_from_file(proj, event, big)
    assert result.code == 0 and clean(result), (result.stdout[:300], result.stderr)
    calls = [r for r in records(proj, "big-out") if r.get("k") == "tool"]
    assert calls and calls[0]["what"] == "cat huge.log", records(proj, "big-out")
    assert "payload cap" in calls[0]["error"]
    assert calls[0]["ok"] is (None if event == "PostToolUse" else False)

def test_a_bom_prefixed_payload_is_judged(proj):
    for command, denied in (("rm -rf ~", True), ("ls", False)):
        data = b"\xef\xbb\xbf" + json.dumps(tool_payload(proj, "bom-1", command)).encode()
        result = proj.hook("PreToolUse", None, raw=data)
        assert refused(result, "PreToolUse") == denied, result.stdout
        if denied:
            assert "no-destroy" in reason(result) and "gate-error" not in reason(result)


def test_a_prompt_the_laws_cannot_read_is_not_sent(proj):
    payload = proj.payload("UserPromptSubmit", "ups-1", prompt="use %s" % SECRET)
    for data in (json.dumps(payload).encode()[:-30], json.dumps(dict(payload, prompt=5))
                 .encode()):
        result = proj.hook("UserPromptSubmit", None, raw=data)
        assert refused(result, "UserPromptSubmit") and "gate-error" in result.stderr
    journal = proj.root / ".notrest" / "journal" / "ups-1.jsonl"
    assert not journal.exists() or SECRET not in journal.read_text()


# ---- deadlines and locks ----------------------------------------------------------

def test_a_gate_stuck_on_a_lock_refuses_at_its_deadline(proj):
    granted = proj.cli("allow", "no-destroy", "--once", "--why", "clean up")
    assert granted.code == 0
    lock = os.open(str(proj.root / ".notrest" / ".permits.lock"), os.O_RDWR)
    os.lockf(lock, os.F_LOCK, 0)  # a stuck process holds the permits (lock_whole)
    try:
        result = proj.hook("PreToolUse", tool_payload(proj, "dl-1", "rm -rf ~"),
                           NOTREST_HOOK_DEADLINE="1.5")
    finally:
        os.close(lock)
    assert refused(result, "PreToolUse") and "deadline" in reason(result)
    assert result.seconds < ANSWER_WITHIN_S
    permits = json.loads((proj.root / ".notrest" / "permits.json").read_text())
    assert len(permits["permits"]) == 1, "the permit was not used"


def test_session_end_never_waits_past_its_budget(proj):
    session = "end-1"
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    (proj.root / ".notrest" / "sessions").mkdir(exist_ok=True)
    lock = os.open(str(proj.root / ".notrest" / "sessions" / (".%s.lock" % session)),
                   os.O_RDWR | os.O_CREAT)
    os.lockf(lock, os.F_LOCK, 0)
    try:
        result = proj.hook("SessionEnd", proj.payload("SessionEnd", session,
                                                      reason="exit"))
    finally:
        os.close(lock)
    assert goes_on(result, "SessionEnd")
    assert result.seconds < notrest.HOOK_EVENTS["SessionEnd"][1]
    assert records(proj, session)[-1]["k"] == "end", "the end itself is journaled"


@pytest.mark.parametrize("thousands", [8, pytest.param(80, marks=pytest.mark.slow)])
def test_session_end_folds_a_huge_journal_only_as_far_as_its_budget(proj, thousands):
    session = "huge-1"
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    line = notrest.encode_line({"v": 1, "t": time.time(), "c": "claude", "k": "tool",
                                "e": "PostToolUse", "tool": "Bash", "ok": True,
                                "what": "make test " + "x" * 200, "files": []})
    journal = proj.estate.journal(session)
    with open(journal, "a") as handle:
        for _ in range(thousands):
            handle.write(line * 1000)
    proj.cli("bank", "--session", session, "--note", "the big one")
    os.unlink(proj.estate.record(session))  # the record is lost
    result = proj.hook("SessionEnd", proj.payload("SessionEnd", session, reason="exit"))
    assert goes_on(result, "SessionEnd")
    rec = json.loads(open(proj.estate.record(session)).read())
    # Within its budget SessionEnd folds all of it (a fast machine) or stops short
    # and leaves the rest to Stop or rebuild; either way the index knows it ended.
    assert rec["ended"] or rec["journal_offset"] < os.path.getsize(journal)
    index = json.loads((proj.root / ".notrest" / "index.json").read_text())
    entry = [e for e in index["sessions"] if e["session"] == session][0]
    assert entry["ended"], "the index knows it ended"
    assert proj.cli("rebuild").code == 0
    rec = json.loads(open(proj.estate.record(session)).read())
    assert rec["events"] >= thousands * 1000 and rec["note"] == "the big one" and rec[
        "ended"]


def test_session_end_reads_a_huge_rollout_only_as_far_as_its_budget(proj):
    """Codex's exit codes come from its rollout, read at SessionEnd within the
    hook's budget: a huge one is read as far as that goes, the rest at the next
    fold (here the Stop of the session resumed), and nothing is counted twice."""
    session = "roll-1"
    rollout = proj.home / ".codex" / "sessions" / "rollout-roll-1.jsonl"
    rollout.parent.mkdir(parents=True)
    count = 20000
    with open(rollout, "w") as handle:
        handle.write(json.dumps({"type": "session_meta", "payload": {}}) + "\n")
        for i in range(count):
            item = {"type": "CommandExecution", "id": "c%d" % i, "exit_code": i % 3,
                    "command": ["/bin/bash", "-lc", "make step-%d" % i],
                    "aggregated_output": "out %d " % i + "y" * 60}
            handle.write(json.dumps({"type": "event_msg", "payload": {
                "type": "item_completed", "item": item}}) + "\n")
    assert rollout.stat().st_size < notrest.ROLLOUT_READ_MAX
    proj.hook("SessionStart", proj.payload("SessionStart", session, "codex",
                                           source="startup",
                                           transcript_path=str(rollout)), "codex")
    result = proj.hook("SessionEnd", proj.payload("SessionEnd", session, "codex",
                                                  reason="other"), "codex")
    assert goes_on(result, "SessionEnd"), result.stderr
    assert result.seconds < notrest.CODEX_SESSION_END_TIMEOUT, result.seconds
    exits = [r for r in records(proj, session) if r["k"] == "exits"]
    assert exits, "SessionEnd read none of the rollout"
    proj.hook("SessionStart", proj.payload("SessionStart", session, "codex",
                                           source="resume",
                                           transcript_path=str(rollout)), "codex")
    stop = proj.hook("Stop", proj.payload("Stop", session, "codex"), "codex")
    assert stop.code in (0, 2) and clean(stop), stop.stderr
    items = [i for r in records(proj, session) if r["k"] == "exits" for i in r["items"]]
    assert len(items) == count and len({i["id"] for i in items}) == count
    assert items[-1]["what"] == "make step-%d" % (count - 1)


def test_a_rebuild_racing_banks_and_ends_loses_nothing(proj):
    line = notrest.encode_line({"v": 1, "t": time.time(), "c": "claude", "k": "tool",
                                "e": "PostToolUse", "tool": "Bash", "ok": True,
                                "what": "make " + "y" * 150, "files": []})
    (proj.root / ".notrest" / "journal").mkdir(exist_ok=True)
    for n in range(6):
        with open(proj.estate.journal("bulk-%d" % n), "a") as handle:
            for _ in range(6):
                handle.write(line * 1000)
    for run in range(4):
        session = "race-%d" % run
        proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
        rebuild = subprocess.Popen([str(proj.root / ".notrest" / "notrest"), "rebuild"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=proj.env(), cwd=str(proj.root))
        time.sleep(0.15 + 0.1 * run)
        bank = proj.cli("bank", "--session", session, "--note", "note %d" % run)
        end = proj.hook("SessionEnd", proj.payload("SessionEnd", session, reason="exit"))
        out, err = rebuild.communicate(timeout=120)
        assert rebuild.returncode == 0 and bank.code == 0, (err, bank.stderr)
        assert goes_on(end, "SessionEnd")
        index = json.loads((proj.root / ".notrest" / "index.json").read_text())
        entry = [e for e in index["sessions"] if e["session"] == session][0]
        assert entry["note"] == "note %d" % run and entry["ended"], (run, entry)


# ---- laws.json broken, permits and the clock -------------------------------------

def test_a_truncated_laws_file_still_enforces_what_it_can_read(proj):
    laws = proj.root / ".notrest" / "laws.json"
    doc = {"schema_version": 1, "disable": ["no-destroy"], "laws": [
        {"id": "no-npm-publish", "text": "Never publish to npm.", "on": ["PreToolUse"],
         "program": ["npm"], "command": "publish", "instead": "ask a person"},
        {"id": "no-curl", "text": "No curl.", "on": ["PreToolUse"], "program": ["curl"]}]}
    text = json.dumps(doc, indent=2)
    laws.write_text(text[:text.index('"no-curl"') + 8])  # cut mid-law
    publish = proj.hook("PreToolUse", tool_payload(proj, "laws-1", "npm publish"))
    assert refused(publish, "PreToolUse") and "no-npm-publish" in reason(publish)
    destroy = proj.hook("PreToolUse", tool_payload(proj, "laws-1", "rm -rf ~"))
    assert refused(destroy, "PreToolUse"), "an unreadable disable list switches nothing off"
    allowed = proj.hook("PreToolUse", tool_payload(proj, "laws-1", "ls"))
    assert goes_on(allowed, "PreToolUse")
    assert "laws.json" in answer_of(allowed)["systemMessage"] and "laws.json" in \
        allowed.stderr, "loudly: to the person and on stderr"
    text, _ = doctor_text(proj.estate)
    assert "laws.json" in text and "no-npm-publish" in text
    for junk in ("", "\0\0\0", "[", '{"laws": 5, "disable": "no-destroy"}'):
        laws.write_text(junk)
        destroy = proj.hook("PreToolUse", tool_payload(proj, "laws-1", "rm -rf ~"))
        assert refused(destroy, "PreToolUse") and clean(destroy), junk



def _fifo_in_place(path):
    path.unlink()
    os.mkfifo(str(path))


@pytest.mark.parametrize("broken", ["fifo", "dev-zero", "garbage", "wrong-shape",
                                    "a-list"])
def test_a_broken_laws_file_enforces_its_last_good_version(proj, broken):
    """Issue #23 item 1: the project's own laws and protected paths do not vanish
    when laws.json becomes unusable: SessionStart kept its last good version out of
    the project, and the gate enforces that (never its disable list), saying so."""
    laws = proj.root / ".notrest" / "laws.json"
    doc = {"schema_version": 1, "disable": ["pipe-to-shell"],
           "protected_paths": ["secrets-dir"], "laws": [
               {"id": "no-npm-publish", "text": "Never publish to npm.",
                "on": ["PreToolUse"], "program": ["npm"], "command": "publish",
                "instead": "ask a person"}]}
    laws.write_text(json.dumps(doc, indent=2))
    (proj.root / "secrets-dir").mkdir()
    start = proj.hook("SessionStart", proj.payload("SessionStart", "lkg-1",
                                                   source="startup"))
    assert start.code == 0, start.stderr
    if broken == "fifo":
        _fifo_in_place(laws)
    elif broken == "dev-zero":
        laws.unlink()
        laws.symlink_to("/dev/zero")
    else:
        laws.write_text({"garbage": "\0{{{ not json", "wrong-shape": '"laws"',
                         "a-list": '[{"id": 5}]'}[broken])
    publish = proj.hook("PreToolUse", tool_payload(proj, "lkg-1", "npm publish"))
    assert refused(publish, "PreToolUse") and "no-npm-publish" in reason(publish), \
        (broken, publish.stdout)
    assert clean(publish)
    wipe = proj.hook("PreToolUse", tool_payload(proj, "lkg-1", "rm -rf secrets-dir"))
    assert refused(wipe, "PreToolUse"), (broken, wipe.stdout)
    allowed = proj.hook("PreToolUse", tool_payload(proj, "lkg-1", "ls"))
    assert goes_on(allowed, "PreToolUse")
    assert "last good version" in answer_of(allowed).get("systemMessage", ""), broken


@pytest.mark.parametrize("broken", ["fifo", "dev-zero", "folder"])
def test_a_stop_gate_that_cannot_read_the_journal_blocks_once(proj, broken):
    """Issue #23 item 2: with the session's journal a FIFO or /dev/zero the stop
    gate cannot see the unbanked change: it blocks once, then lets the stop through
    (the client's stop_hook_active) saying why; it never opens silently."""
    session = "stop-broken"
    proj.hook("SessionStart", proj.payload("SessionStart", session, source="startup"))
    (proj.root / "work.py").write_text("print(1)\n")
    proj.hook("PostToolUse", proj.payload("PostToolUse", session, tool_name="Write",
                                          tool_input={"file_path": str(
                                              proj.root / "work.py"), "content": "x"},
                                          tool_response={"type": "create"}))
    journal = proj.root / ".notrest" / "journal" / ("%s.jsonl" % session)
    journal.unlink()
    if broken == "fifo":
        os.mkfifo(str(journal))
    elif broken == "dev-zero":
        journal.symlink_to("/dev/zero")
    else:
        journal.mkdir()
    first = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=False))
    assert refused(first, "Stop") and clean(first), (broken, first.stdout, first.stderr)
    assert "journal" in (first.stdout + first.stderr)
    second = proj.hook("Stop", proj.payload("Stop", session, stop_hook_active=True))
    assert goes_on(second, "Stop") and clean(second), (broken, second.stdout)
    assert "one block" in answer_of(second).get("systemMessage", "")

def test_permits_expire_by_the_clock_they_were_made_under():
    now, year = 1_800_000_000.0, 365 * 86400
    boot = "b1"
    ahead = {"created": now + year, "expires": now + year + 3600, "boot": boot,
             "uptime": 500.0}
    assert not notrest.permit_live(ahead, now, boot, 800.0), "made a year ahead"
    assert not notrest.permit_live(ahead, now, "", None), "no boot clock: wall checks"
    set_back = {"created": now, "expires": now + 3600, "boot": boot, "uptime": 100.0}
    assert notrest.permit_live(set_back, now + 60, boot, 160.0)
    assert not notrest.permit_live(set_back, now + 60, boot, 100.0 + 7200), \
        "the wall clock was set back; two hours really passed"
    assert notrest.permit_live(set_back, now + 60, "other-boot", 5.0)
    assert not notrest.permit_live(set_back, now + 3601, "other-boot", 5.0)


def test_a_permit_from_a_clock_a_year_ahead_is_not_honoured(proj):
    path = proj.root / ".notrest" / "permits.json"
    push = "git push --force origin main"
    year = 365 * 86400
    boot, uptime = notrest.clock_reading()
    for permit in ({"id": "p-1", "law": "no-force-push", "who": "a", "why": "x",
                    "created": time.time() + year, "expires": time.time() + year + 3600},
                   {"id": "p-2", "law": "no-force-push", "who": "a", "why": "x",
                    "created": time.time(), "expires": time.time() + 3600,
                    "boot": boot, "uptime": (uptime or 0) - 7200},
                   {"id": "p-3", "law": "no-force-push", "who": "a", "why": "x",
                    "created": "yesterday", "expires": "never"}):
        if permit["id"] == "p-2" and not boot:
            continue  # no boot clock here: only the wall clock is checked
        path.write_text(json.dumps({"schema_version": 1, "permits": [permit]}))
        result = proj.hook("PreToolUse", tool_payload(proj, "clock-1", push))
        assert refused(result, "PreToolUse") and clean(result), permit["id"]
        assert "no-force-push" in reason(result)
    granted = proj.cli("allow", "no-force-push", "--once", "--why", "real")
    assert granted.code == 0 and clean(granted)
    data = json.loads(path.read_text())
    assert data["permits"][0]["created"] == "yesterday", "a bad entry is never rewritten"
    assert data["permits"][-1].get("boot") == (boot or None)
    first = proj.hook("PreToolUse", tool_payload(proj, "clock-1", push))
    assert goes_on(first, "PreToolUse"), reason(first)
    second = proj.hook("PreToolUse", tool_payload(proj, "clock-1", push))
    assert refused(second, "PreToolUse"), "used once"


# ---- install and the CLI ----------------------------------------------------------

def test_install_into_a_path_that_is_not_utf8_says_so(tmp_path):
    target = os.path.join(os.fsencode(str(tmp_path)), b"proj\xffect")
    os.mkdir(target)
    proc = subprocess.run([b"sh", os.fsencode(str(REPO / "install.sh")), target],
                          capture_output=True, env={"PATH": os.environ["PATH"],
                                                    "HOME": str(tmp_path)})
    assert proc.returncode == 3 and b"Traceback" not in proc.stderr
    assert b"not valid UTF-8" in proc.stderr and b"rename" in proc.stderr
    assert not os.path.exists(os.path.join(target, b".notrest"))


def test_the_cli_names_the_path_and_the_fix_instead_of_a_traceback(proj):
    journal = proj.root / ".notrest" / "journal"
    journal.mkdir(exist_ok=True)
    (journal / "cli-x.jsonl").write_text("")
    (proj.root / ".notrest" / "sessions").write_text("not a folder")
    for verb in (["bank", "--session", "cli-x", "--note", "n"], ["rebuild"]):
        result = proj.cli(*verb)
        assert result.code == 3 and clean(result), result.stderr
        assert str(proj.root / ".notrest" / "sessions") in result.stderr
        assert "move it aside" in result.stderr
