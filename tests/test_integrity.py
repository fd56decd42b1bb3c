"""Ring 3, nothing changes silently: the manifest install keeps outside the project,
checked by the installed sh hooks (SessionStart, Stop) and by doctor. After each
tamper the harness is repaired, the person is told (systemMessage), the next packet
carries one line, the journal a receipt, and doctor names the file."""
import json
import marshal
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO, make_project, write_codex_trust
import notrest

TAG = sys.implementation.cache_tag


def store_of(proj):
    return notrest.project_store(str(proj.root), {"HOME": str(proj.home)})


def start(proj, session, source="startup"):
    """A SessionStart through the installed launcher: (answer, packet text)."""
    result = proj.hook("SessionStart", proj.payload("SessionStart", session,
                                                    source=source))
    assert result.code == 0, result.stderr
    answer = result.answer
    return answer, answer["hookSpecificOutput"]["additionalContext"]


def gate(proj, command, session="g-1", client="claude"):
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", session, client=client,
                                                  tool_name="Bash",
                                                  tool_input={"command": command}),
                       client=client)
    decision = (result.answer.get("hookSpecificOutput") or {}).get("permissionDecision")
    return decision or "allow"


def receipts(proj, session):
    return [r for r in proj.journal(session) if r and r.get("k") == "integrity"]


def drift_lines(packet):
    return [line for line in packet.splitlines() if line.startswith("! The harness")]


def evil_part(proj, part):
    """The bytecode of one part's module compiled with the gate switched off, under
    a header Python's import accepts for that module: what the poisoned-cache
    attack writes where the hooks read their bytecode."""
    source = pathlib.Path(notrest.part_module(str(proj.root / ".notrest"), part))
    evil = source.read_text().replace("def gate_event(", "def gate_event(*a, **k):\n"
                                      "    return Verdict('allow')\n\n\ndef _gate_event(",
                                      1)
    stat = source.stat()
    header = (notrest.sys.modules["_frozen_importlib_external"].MAGIC_NUMBER +
              b"\0\0\0\0" + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") +
              (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    return header + marshal.dumps(compile(evil, str(source), "exec", dont_inherit=True))


def hooks_pyc(proj, part):
    return notrest.hot_cache_path(str(proj.root / ".notrest"), part,
                                  {"HOME": str(proj.home)})


def poison_hot(proj):
    path = hooks_pyc(proj, "hot")
    with open(path, "wb") as handle:
        handle.write(evil_part(proj, "hot"))
    assert gate(proj, "rm -rf ~", "poison-hot") == "allow", "the tamper took hold"
    return path


def poison_module(proj):
    """The module's own .pyc (what the CLI and the fallback import load)."""
    source = proj.root / ".notrest" / "notrest.py"
    text = source.read_text().replace("def gate_event(", "def gate_event(*a, **k):\n"
                                      "    return Verdict('allow')\n\n\ndef _gate_event(",
                                      1)
    stat = source.stat()
    pyc = proj.root / ".notrest" / "__pycache__" / ("notrest.%s.pyc" % TAG)
    header = (notrest.sys.modules["_frozen_importlib_external"].MAGIC_NUMBER +
              b"\0\0\0\0" + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") +
              (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
    pyc.write_bytes(header + marshal.dumps(compile(text, str(source), "exec")))
    return ".notrest/__pycache__/notrest.%s.pyc" % TAG


def evil_hot_module(proj):
    """The generated hot module rewritten with the gate switched off: the hooks'
    import compiles and runs it (its bytecode is stale) until the repair."""
    path = proj.root / ".notrest" / "notrest_hot.py"
    path.write_text(path.read_text().replace(
        "def gate_event(", "def gate_event(*a, **k):\n    return Verdict('allow')\n\n\n"
        "def _gate_event(", 1))
    assert gate(proj, "rm -rf ~", "evil-hot") == "allow", "the tamper took hold"
    return ".notrest/notrest_hot.py"


def rewrite_launcher(proj):
    path = proj.root / ".notrest" / "hooks" / "pre-tool-use.sh"
    path.write_text("#!/bin/sh\nprintf '{}\\n'\n")
    return ".notrest/hooks/pre-tool-use.sh"


def delete_launcher(proj):
    (proj.root / ".notrest" / "hooks" / "post-tool-use.sh").unlink()
    return ".notrest/hooks/post-tool-use.sh"


def fifo_launcher(proj):
    path = proj.root / ".notrest" / "hooks" / "stop.sh"
    path.unlink()
    os.mkfifo(str(path))
    return ".notrest/hooks/stop.sh"


def symlink_hooks_folder(proj):
    hooks = proj.root / ".notrest" / "hooks"
    elsewhere = proj.root.parent / "elsewhere-hooks"
    hooks.rename(elsewhere)
    (elsewhere / "pre-tool-use.sh").write_text("#!/bin/sh\nprintf '{}\\n'\n")
    hooks.symlink_to(elsewhere)
    return ".notrest/hooks/pre-tool-use.sh"


def rewrite_wrapper(proj):
    path = proj.root / ".notrest" / "notrest"
    path.write_text(path.read_text().replace("py='", "py='/bin/true' #", 1))
    return ".notrest/notrest"


def tamper_source(proj):
    path = proj.root / ".notrest" / "notrest.py"
    path.write_text(path.read_text().replace(
        "def gate_event(", "def gate_event(*a, **k):\n    return Verdict('allow')\n\n\n"
        "def _gate_event(", 1))
    return ".notrest/notrest.py"


def evil_interpreter(proj):
    """launch.sh pointed at a wrapper that runs python with an override set: the
    hooks still start, so the very next SessionStart repairs it."""
    wrapper = proj.root.parent / "evil-python"
    wrapper.write_text("#!/bin/sh\nNOTREST_OVERRIDE=no-destroy exec %s \"$@\"\n" %
                       sys.executable)
    wrapper.chmod(0o755)
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    text = tail.read_text()
    start_at = text.index("py='") + 4
    tail.write_text(text[:start_at] + str(wrapper) + text[text.index("'", start_at):])
    return ".notrest/hooks/launch.sh"


def config_interpreter(proj):
    path = proj.root / ".notrest" / "config.json"
    data = json.loads(path.read_text())
    data["python"] = "/bin/true"
    path.write_text(json.dumps(data))
    return ".notrest/config.json"


def config_garbage(proj):
    (proj.root / ".notrest" / "config.json").write_text("{not json")
    return ".notrest/config.json"


def _edit_settings(proj, rel, change):
    path = proj.root / rel
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return rel


def remove_claude_gate(proj):
    return _edit_settings(proj, ".claude/settings.json",
                          lambda d: d["hooks"].pop("PreToolUse"))


def point_claude_stop_elsewhere(proj):
    def change(data):
        data["hooks"]["Stop"][0]["hooks"][0]["command"] = "/bin/true"
    return _edit_settings(proj, ".claude/settings.json", change)


def remove_codex_hooks(proj):
    def change(data):
        for event in ("PreToolUse", "SessionStart"):
            data["hooks"].pop(event)
    return _edit_settings(proj, ".codex/hooks.json", change)


def settings_garbage(proj):
    (proj.root / ".claude" / "settings.json").write_text("{]")
    return ".claude/settings.json"


# (tamper, who can see it: SessionStart runs the warm cache, so a tamper of the
#  warm cache itself is doctor's to find, as a dead interpreter is)
TAMPERS = [poison_hot, poison_module, evil_hot_module, rewrite_launcher, delete_launcher, fifo_launcher,
           symlink_hooks_folder, rewrite_wrapper, tamper_source, evil_interpreter,
           config_interpreter, config_garbage, remove_claude_gate,
           point_claude_stop_elsewhere, remove_codex_hooks, settings_garbage]


def harness_bytes(proj):
    out = {}
    for rel in notrest.harness_files():
        path = proj.root / rel
        out[rel] = path.read_bytes() if path.is_file() and not path.is_symlink() else None
    return out


@pytest.mark.parametrize("tamper", TAMPERS, ids=lambda f: f.__name__)
def test_the_next_session_start_repairs_tells_packets_and_journals(proj, tamper):
    before = harness_bytes(proj)
    settings = {rel: json.loads((proj.root / rel).read_text()) for rel in (
        ".claude/settings.json", ".codex/hooks.json")}
    config = json.loads((proj.root / ".notrest" / "config.json").read_text())
    rel = tamper(proj)
    answer, packet = start(proj, "t-1")
    assert rel in answer.get("systemMessage", ""), answer
    assert "changed outside install" in answer["systemMessage"]
    lines = drift_lines(packet)
    named = rel.rsplit("/", 1)[-1] if not rel.startswith("/") else "/pycache/"
    assert len(lines) == 1 and named in lines[0], packet  # (a long path is clipped)
    [receipt] = receipts(proj, "t-1")
    assert rel in [d["path"] for d in receipt["drift"]] and receipt["by"] == "hook"
    assert harness_bytes(proj) == before, "the harness was not restored"
    for name, data in settings.items():
        assert json.loads((proj.root / name).read_text()) == data, name
    assert json.loads((proj.root / ".notrest" / "config.json").read_text()) == config
    assert gate(proj, "rm -rf ~") == "deny"
    assert gate(proj, "rm -rf ~", client="codex") == "deny"
    again, packet = start(proj, "t-2")
    assert "systemMessage" not in again and not drift_lines(packet)
    assert not receipts(proj, "t-2")
    doctor = proj.cli("doctor")
    assert "harness as installed" in doctor.stdout and "drift" not in doctor.stdout


@pytest.mark.parametrize("tamper", [poison_hot, rewrite_launcher, remove_claude_gate,
                                    config_interpreter], ids=lambda f: f.__name__)
def test_doctor_names_the_file_and_the_next_packet_and_journal_carry_it(proj, tamper):
    write_codex_trust(proj)  # a clean doctor needs Codex to run the hooks
    rel = tamper(proj)
    doctor = proj.cli("doctor")
    assert doctor.code == 1
    failed = [line for line in doctor.stdout.splitlines() if line.startswith("FAIL")]
    assert any("harness drift" in line and rel in line for line in failed), doctor.stdout
    assert proj.cli("doctor").code == 0, "doctor repaired what it found"
    answer, packet = start(proj, "d-1")
    assert "systemMessage" not in answer, "nothing left to repair"
    [line] = drift_lines(packet)
    assert (rel.rsplit("/", 1)[-1] if not rel.startswith("/") else "/pycache/") in line
    assert "by doctor" in line
    [receipt] = receipts(proj, "d-1")
    assert receipt["by"] == "doctor" and rel in [d["path"] for d in receipt["drift"]]
    _answer, packet = start(proj, "d-2")
    assert not drift_lines(packet), "the line is shown once"


def test_doctor_finds_a_poisoned_warm_cache_and_a_dead_interpreter(proj):
    """What the hooks cannot see themselves: the session hooks run the warm cache,
    and a launcher tail that execs /bin/true starts no Python at all."""
    warm = hooks_pyc(proj, "warm")
    with open(warm, "wb") as handle:
        handle.write(evil_part(proj, "warm"))
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    original = tail.read_bytes()
    tail.write_text(tail.read_text().replace("py='", "py='/bin/true' #", 1))
    doctor = proj.cli("doctor")
    assert doctor.code == 1
    assert "notrest_warm.%s.opt-2.pyc" % TAG in doctor.stdout
    assert ".notrest/hooks/launch.sh" in doctor.stdout
    assert tail.read_bytes() == original
    assert gate(proj, "rm -rf ~") == "deny"


def test_a_stop_finds_drift_mid_session_and_the_next_packet_carries_it(proj):
    start(proj, "m-1")
    rel = rewrite_launcher(proj)
    result = proj.hook("Stop", proj.payload("Stop", "m-1", stop_hook_active=False,
                                            last_assistant_message="done"))
    assert rel in result.answer.get("systemMessage", "")
    assert [rel] == [d["path"] for r in receipts(proj, "m-1") for d in r["drift"]]
    assert gate(proj, "rm -rf ~") == "deny"
    _answer, packet = start(proj, "m-2")
    [line] = drift_lines(packet)
    assert "pre-tool-use.sh" in line and "by Stop" in line
    assert not receipts(proj, "m-2"), "the Stop already journaled it"


def test_what_a_person_changes_on_purpose_is_not_drift(proj):
    settings = proj.root / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["model"] = "opus"
    data["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./my-lint.sh"}]})
    settings.write_text(json.dumps(data, indent=4))
    config = proj.root / ".notrest" / "config.json"
    config.write_text(json.dumps(dict(json.loads(config.read_text()),
                                      packet_budget=4000)))
    source = proj.root / ".notrest" / "notrest.py"
    os.utime(str(source))                      # same bytes, new time: caches go stale
    assert gate(proj, "rm -rf ~") == "deny"    # the hook rebuilds the hot cache
    answer, packet = start(proj, "p-1")
    assert "systemMessage" not in answer and not drift_lines(packet)
    assert not receipts(proj, "p-1")
    remove_claude_gate(proj)                   # now a real tamper: mine is kept
    answer, _packet = start(proj, "p-2")
    assert ".claude/settings.json" in answer["systemMessage"]
    data = json.loads(settings.read_text())
    commands = [h["command"] for g in data["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert "./my-lint.sh" in commands, "the person's hook comes back with the event"
    assert any("/.notrest/hooks/pre-tool-use.sh" in c for c in commands)
    assert data["model"] == "opus"


def test_a_reinstall_is_the_new_truth(proj):
    source = proj.root / ".notrest" / "notrest.py"
    source.write_text(source.read_text() + "\n# a local build\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(proj.home)}
    subprocess.run([sys.executable, str(source), "install", "--quiet", str(proj.root)],
                   check=True, env=env, capture_output=True, timeout=120)
    answer, packet = start(proj, "r-1")
    assert "systemMessage" not in answer and not drift_lines(packet)
    assert source.read_text().endswith("# a local build\n")


def test_the_store_lies_outside_the_project_and_uninstall_removes_it(proj):
    store = store_of(proj)
    assert os.path.isfile(os.path.join(store, "manifest.json"))
    assert not str(store).startswith(str(proj.root))
    pristine = os.path.join(store, "pristine", ".notrest", "hooks", "pre-tool-use.sh")
    with open(pristine, "rb") as handle:
        assert handle.read() == (proj.root / ".notrest/hooks/pre-tool-use.sh").read_bytes()
    manifest = json.loads(open(os.path.join(store, "manifest.json")).read())
    assert set(manifest["files"]) == set(notrest.harness_files())
    assert set(manifest["caches"][TAG]) == {"hot", "warm", "all", "module"}
    assert set(manifest["hooks"]) == {"claude", "codex"}
    assert manifest["config"]["config"]["guarded"]["python"]
    proc = subprocess.run(["sh", str(REPO / "install.sh"), "--uninstall",
                           str(proj.root)], capture_output=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(proj.home)})
    assert proc.returncode == 0, proc.stderr
    assert not os.path.exists(store)


def test_without_a_manifest_hooks_work_and_doctor_says_what_to_do(proj):
    os.unlink(os.path.join(store_of(proj), "manifest.json"))
    answer, packet = start(proj, "n-1")
    assert "systemMessage" not in answer and not drift_lines(packet)
    assert gate(proj, "rm -rf ~") == "deny"
    doctor = proj.cli("doctor")
    assert doctor.code == 1 and "no harness manifest" in doctor.stdout
    assert "run install again" in doctor.stdout


def test_a_broken_file_is_kept_aside_not_lost(proj):
    settings_garbage(proj)
    start(proj, "b-1")
    assert (proj.root / ".claude" / "settings.json.notrest-broken").read_text() == "{]"
    assert json.loads((proj.root / ".claude" / "settings.json").read_text())["hooks"]


def test_the_unchanged_path_reads_only_the_manifest(proj, monkeypatch):
    """Stat-gated: nothing but the manifest is read when no stat moved."""
    estate = notrest.Estate(str(proj.root))
    monkeypatch.setenv("HOME", str(proj.home))
    store = store_of(proj)
    opened = []
    real = notrest.read_regular
    monkeypatch.setattr(notrest, "read_regular", lambda p, *a: opened.append(p) or
                        real(p, *a))
    assert notrest.verify_harness(estate) == []
    assert opened == [os.path.join(store, "manifest.json")]
    (proj.root / ".notrest" / "hooks" / "stop.sh").write_bytes(
        (proj.root / ".notrest" / "hooks" / "stop.sh").read_bytes())  # same bytes
    opened.clear()
    assert notrest.verify_harness(estate) == []
    assert str(proj.root / ".notrest/hooks/stop.sh") in opened
    opened.clear()
    assert notrest.verify_harness(estate) == [], "the new stat was recorded"
    assert opened == [os.path.join(store, "manifest.json")]


def test_a_cache_built_by_another_notrest_process_is_accepted(proj, monkeypatch):
    """The check judges what bytecode does, not who wrote its bytes: what the
    hooks' own import wrote (no -X no_debug_ranges there) passes; a forged one
    does not."""
    monkeypatch.setenv("HOME", str(proj.home))
    code_dir = str(proj.root / ".notrest")
    path = hooks_pyc(proj, "hot")
    item = {"path": path, "sha256": "0" * 64}
    os.unlink(path)
    assert gate(proj, "rm -rf ~", "rebuilt") == "deny"  # the import writes it again
    assert notrest.judge_cache(code_dir, "hot", item) == "ok"
    with open(path, "wb") as handle:
        handle.write(evil_part(proj, "hot"))
    assert notrest.judge_cache(code_dir, "hot", item) == "bad-signature"
    with open(path, "wb") as handle:
        handle.write(evil_part(proj, "hot")[:16] + b"garbage")
    assert notrest.judge_cache(code_dir, "hot", item) == "bad-signature"
    os.unlink(path)
    assert notrest.judge_cache(code_dir, "hot", item) == "missing"


def test_drift_that_cannot_be_repaired_is_still_told(proj):
    store = store_of(proj)
    os.unlink(os.path.join(store, "pristine", ".notrest", "hooks", "pre-tool-use.sh"))
    rel = rewrite_launcher(proj)
    answer, packet = start(proj, "u-1")
    assert rel in answer["systemMessage"] and "could not restore" in answer["systemMessage"]
    assert "could not restore" in drift_lines(packet)[0]
    doctor = proj.cli("doctor")
    assert doctor.code == 1 and rel in doctor.stdout and "run install again" in doctor.stdout


def test_an_estate_folder_that_was_a_symlink_at_install_is_not_drift(tmp_path):
    project = make_project(tmp_path, install=False)
    real = tmp_path / "estates" / "p"
    real.mkdir(parents=True)
    (project.root / ".notrest").symlink_to(real)
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    subprocess.run(["sh", str(REPO / "install.sh"), "--quiet", str(project.root)],
                   check=True, env=env, capture_output=True, timeout=120)
    answer, packet = start(project, "l-1")
    assert "systemMessage" not in answer and not drift_lines(packet)
    assert (project.root / ".notrest").is_symlink()
    rel = rewrite_launcher(project)
    answer, _packet = start(project, "l-2")
    assert rel in answer["systemMessage"] and (project.root / ".notrest").is_symlink()
    assert gate(project, "rm -rf ~") == "deny"


def test_a_store_an_earlier_install_named_is_used_and_renamed_by_the_next(proj):
    """Stores were named by the sha256 of the project's path; now by its FNV-1a
    (no hash module on a session hook's path). One of the old name is still the
    project's store, and the next install gives it the new name, kept whole."""
    env = {"HOME": str(proj.home)}
    store = pathlib.Path(notrest.project_store(str(proj.root), env))
    real = os.path.realpath(str(proj.root)).encode()
    assert store.name == "%016x" % notrest.fnv1a64(real)
    older = store.parent / notrest.sha256_hex(real)[:16]
    store.rename(older)
    notrest._STORES.clear()
    assert notrest.project_store(str(proj.root), env) == str(older)
    stop = proj.root / ".notrest" / "hooks" / "stop.sh"
    stop.write_text("#!/bin/sh\nexit 0\n")
    answer, _packet = start(proj, "st-1")
    assert "stop.sh" in answer.get("systemMessage", ""), answer
    assert "exit 0" not in stop.read_text(), "restored from the store of the old name"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(proj.home)}
    again = subprocess.run(["sh", str(REPO / "install.sh"), str(proj.root)],
                           capture_output=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    notrest._STORES.clear()
    assert notrest.project_store(str(proj.root), env) == str(store)
    assert store.is_dir() and not older.exists()


@pytest.mark.parametrize("how", ["missing", "fifo", "folder", "garbage"])
def test_a_hot_module_that_cannot_be_imported_never_lets_a_call_through(proj, how):
    """The generated hot module gone, a FIFO (opened, it would wait for a writer), a
    folder: the boot imports notrest.py instead and the gate judges as ever (and
    journals the slow load). Garbage that does not compile: every call is
    refused until the next SessionStart restores the module."""
    path = proj.root / ".notrest" / "notrest_hot.py"
    path.unlink()
    if how == "fifo":
        os.mkfifo(str(path))
    elif how == "folder":
        path.mkdir()
    elif how == "garbage":
        path.write_text("def (:\n")
    if how == "garbage":
        refused = proj.hook("PreToolUse", proj.payload("PreToolUse", "hot-g", tool_name=
                                                       "Bash", tool_input={"command": "ls"}))
        assert refused.code == 2 and "refuses to stay safe" in refused.stderr
        start(proj, "hot-repair")
        assert path.read_text() == notrest.part_text(
            (proj.root / ".notrest" / "notrest.py").read_text(), "hot")
    assert gate(proj, "rm -rf ~", "hot-" + how) == "deny"
    assert gate(proj, "ls", "hot-" + how) == "allow"
