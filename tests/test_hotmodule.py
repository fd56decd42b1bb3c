"""The generated modules the hook launchers import (issue 25, Build items 1 and 2).

notrest.py stays the one source file; install and tests/regenerate.py cut its text
above the cold line (and above the doctor section) into notrest_hot.py and
notrest_warm.py, which the launchers import with Python's own import machinery,
their bytecode under data_dir()/pycache. A hot function that names a helper below
its cut line would fail only inside a real hook (NameError): the static check here
fails the suite instead, in every run.
"""
import ast
import builtins
import json
import os
import symtable

import pytest

from conftest import REPO
import notrest

SOURCE = (REPO / "notrest.py").read_text()


def guarded_names(text):
    """Names the text looks up in globals() before it uses them ("x" in
    globals(), globals().get("x")): a part that lacks them takes the other way."""
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and isinstance(node.func.value, ast.Call) and \
                getattr(node.func.value.func, "id", "") == "globals" and node.args and \
                isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
                any(isinstance(c, ast.Call) and getattr(c.func, "id", "") == "globals"
                    for c in node.comparators):
            names.add(node.left.value)
    return names


def undefined_globals(text, filename="part.py"):
    """{name: [function, ...]}: the global names the functions (and classes) of text
    use that text never binds at its top level (nor a function through `global`),
    and that are no builtin. Read statically: symtable, from the ast."""
    top = symtable.symtable(text, filename, "exec")
    bound = set(dir(builtins)) | {"__file__", "__name__", "__builtins__"}
    bound.update(s.get_name() for s in top.get_symbols() if s.is_assigned() or
                 s.is_imported())
    uses = {}
    todo = list(top.get_children())
    while todo:
        table = todo.pop()
        todo.extend(table.get_children())
        for symbol in table.get_symbols():
            if symbol.is_global() and symbol.is_assigned():
                bound.add(symbol.get_name())
            elif symbol.is_global() and symbol.is_referenced():
                uses.setdefault(symbol.get_name(), []).append(table.get_name())
    return {name: where for name, where in uses.items() if name not in bound}


# Functions of the warm part (the compile section) that only commands call, so they
# always run in the whole module: they may use what lies below the doctor line.
# Moving them below it would empty this set (not done while other branches edit).
COMMAND_ONLY = {"warm": {"compiled_findings", "compile_candidate", "remove_compiled",
                         "render_compiled_skill"}, "hot": set()}


@pytest.mark.parametrize("part", sorted(notrest.MODULE_PARTS))
def test_a_part_names_nothing_it_does_not_define(part):
    """Every global name a function of the hot (or warm) part uses is defined in
    that part, or is looked up in globals() first."""
    text = notrest.part_text(SOURCE, part)
    missing = undefined_globals(text, "notrest_%s.py" % part)
    unguarded = {name: where for name, where in missing.items()
                 if name not in guarded_names(text) and not set(where) <= COMMAND_ONLY[part]}
    assert not unguarded, "the %s part uses names defined only below its %r line: %s" % (
        part, notrest.MODULE_PARTS[part].strip(), unguarded)


def test_the_check_sees_a_hot_function_that_calls_a_cold_helper():
    sample = ("import os\nLIMIT = 3\n\ndef hot(x):\n    return dispatch_cold(x, LIMIT, "
              "os.sep, len)\n\nclass Box:\n    def get(self):\n        return pack_judge("
              "self)\n\ndef guarded():\n    f = globals().get(\"later\")\n    return "
              "later() if \"later\" in globals() else f\n")
    missing = undefined_globals(sample)
    assert set(missing) == {"dispatch_cold", "pack_judge", "later"}
    assert missing["dispatch_cold"] == ["hot"] and guarded_names(sample) == {"later"}


def test_the_command_only_functions_are_only_called_by_commands():
    text = notrest.part_text(SOURCE, "warm")
    for name in COMMAND_ONLY["warm"]:
        callers = undefined_globals(text.replace("def %s(" % name, "def _x_%s(" % name),
                                    "warm.py").get(name, [])
        assert set(callers) <= COMMAND_ONLY["warm"], (name, callers)


@pytest.mark.parametrize("part", sorted(notrest.MODULE_PARTS))
def test_the_repositorys_generated_modules_are_current(part):
    """The plugin's launchers (hooks/) import these from the repository itself."""
    path = REPO / ("notrest_%s.py" % part)
    assert path.read_text() == notrest.part_text(SOURCE, part), \
        "%s is stale: regenerate it with tests/regenerate.py" % path.name


def test_a_generated_module_keeps_notrest_pys_line_numbers():
    text = notrest.part_text(SOURCE, "hot")
    assert SOURCE.startswith(text[:text.index(notrest.GENERATED_TRAILER[:30])])
    assert "Edit notrest.py, never this file" in text.splitlines()[-1]


def test_the_boot_uses_no_platform_flag_numbers():
    """2048 is O_NONBLOCK on Linux but O_EXCL on macOS and the BSDs: the launchers
    name no open flags by number (the boot stats before it imports)."""
    tail = notrest.render_launch_tail("/usr/bin/python3")
    assert "2048" not in tail and "os.open(" not in tail
    for gone in ("boot.bin", "_collections_abc", "source_hash", "_lazy"):
        assert gone not in tail, gone
    for gone in ("boot.bin", "_collections_abc", "_lazy_code", "lazy_split"):
        assert gone not in SOURCE, gone


def _gate(proj, command, session):
    result = proj.hook("PreToolUse", proj.payload("PreToolUse", session, tool_name="Bash",
                                                  tool_input={"command": command}))
    assert result.code == 0, result.stderr
    return result, (result.answer.get("hookSpecificOutput") or {}).get(
        "permissionDecision") or "allow"


def _loads(proj, session):
    return [r for r in proj.journal(session) if r.get("k") == "load"]


def test_a_missing_hot_module_falls_back_to_notrest_py_and_says_so(proj):
    (proj.root / ".notrest" / "notrest_hot.py").unlink()
    result, verdict = _gate(proj, "rm -rf ~", "fb-1")
    assert verdict == "deny"
    assert "loaded the slow way" in result.stderr and "notrest_hot.py" in result.stderr
    assert _gate(proj, "ls", "fb-1")[1] == "allow"
    loads = _loads(proj, "fb-1")
    assert len(loads) == 2 and "notrest_hot.py is missing" in loads[0]["message"]
    doctor = proj.cli("doctor")
    assert "recent hook(s) loaded the slow way" in doctor.stdout
    assert "the hot module" in doctor.stdout and "missing" in doctor.stdout


@pytest.mark.parametrize("how", ["unwritable", "fifo"])
def test_bytecode_that_cannot_be_used_is_journaled_not_silent(proj, how):
    """A pycache folder that cannot be written (or a FIFO where the bytecode goes)
    makes every hook compile: it still judges, never hangs, and says why."""
    paths = notrest.cache_paths(str(proj.root / ".notrest"), env={"HOME": str(proj.home)})
    os.unlink(paths["hot"])
    folder = os.path.dirname(paths["hot"])
    if how == "fifo":
        os.mkfifo(paths["hot"])
    else:
        os.chmod(folder, 0o555)
    try:
        if how == "unwritable" and os.access(folder, os.W_OK):
            pytest.skip("running as a user whom permissions do not stop")
        result, verdict = _gate(proj, "rm -rf ~", "fb-" + how)
        assert verdict == "deny" and result.seconds < 15
        assert _gate(proj, "ls", "fb-" + how)[1] == "allow"
        loads = _loads(proj, "fb-" + how)
        assert loads and paths["hot"] in loads[-1]["message"]
        doctor = proj.cli("doctor")
        assert "loaded the slow way" in doctor.stdout and paths["hot"] in doctor.stdout
    finally:
        os.chmod(folder, 0o755)


def test_the_manifest_covers_the_generated_modules_and_their_bytecode(proj):
    """The generated modules are harness files: the manifest covers them and
    their bytecode, and a changed hot module is drift that SessionStart repairs."""
    store = notrest.project_store(str(proj.root), {"HOME": str(proj.home)})
    manifest = json.loads(open(os.path.join(store, notrest.MANIFEST_NAME)).read())
    for part in notrest.MODULE_PARTS:
        assert ".notrest/notrest_%s.py" % part in manifest["files"]
    caches = manifest["caches"][notrest.sys.implementation.cache_tag]
    assert set(caches) == {"hot", "warm", "all", "module"}
    assert all(item["sha256"] for item in caches.values())
    bytecode = os.path.dirname(caches["hot"]["path"])
    assert proj.cli("uninstall").code == 0
    assert not os.path.exists(bytecode), "uninstall leaves no bytecode behind"
    assert not (proj.root / ".notrest" / "notrest_hot.py").exists()
