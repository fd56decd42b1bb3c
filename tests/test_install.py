"""install.sh as a user runs it: idempotent, keeps the user's settings, reversible;
the hooks are POSIX sh; doctor proves each law in its three layers."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, make_project, write_codex_trust
import notrest

USER_CLAUDE = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo mine"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "./my-stop.sh"}]}]},
}
USER_CODEX = {"hooks": {"SessionStart": [{"hooks": [
    {"type": "command", "command": "echo codex-mine"}]}]}}


@pytest.fixture
def proj(tmp_path):
    """Install itself is the subject here: install.sh run for each test, not a
    clone of the suite's template (test_clone proves the two are the same)."""
    return make_project(tmp_path, fresh=True)


def install(project, *args):
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    return subprocess.run(["sh", str(REPO / "install.sh")] + list(args) + [
        str(project.root)], capture_output=True, env=env, timeout=120)


def snapshot_tree(root):
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git/" not in str(path) and "__pycache__" not in str(path):
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def test_install_keeps_the_users_settings_and_is_idempotent(tmp_path):
    project = make_project(tmp_path, install=False)
    (project.root / ".claude").mkdir()
    (project.root / ".claude" / "settings.json").write_text(json.dumps(USER_CLAUDE))
    (project.root / ".codex").mkdir()
    (project.root / ".codex" / "hooks.json").write_text(json.dumps(USER_CODEX))
    (project.root / "AGENTS.md").write_text("# My agents file\n\nBe nice.\n")
    first = install(project, "--client", "both")
    assert first.returncode == 0, first.stderr
    assert b"\nLaws in force, enforced by hooks: " in first.stdout, "install must print the packet"
    tree = snapshot_tree(project.root)
    claude = json.loads((project.root / ".claude" / "settings.json").read_text())
    assert claude["model"] == "opus" and claude["permissions"] == USER_CLAUDE["permissions"]
    commands = [h["command"] for g in claude["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert "echo mine" in commands and any("/.notrest/hooks/pre-tool-use.sh" in c
                                           for c in commands)
    assert set(notrest.CLIENT_EVENTS["claude"]) <= set(claude["hooks"])
    codex = json.loads((project.root / ".codex" / "hooks.json").read_text())
    assert set(notrest.CLIENT_EVENTS["codex"]) <= set(codex["hooks"])
    assert any("echo codex-mine" == h["command"] for g in codex["hooks"]["SessionStart"]
               for h in g["hooks"])
    agents = (project.root / "AGENTS.md").read_text()
    assert agents.startswith("# My agents file\n\nBe nice.\n")
    assert agents.count(notrest.BLOCK_BEGIN) == 1
    for skill in (".claude/skills/notrest/SKILL.md", ".claude/skills/notrest-laws/SKILL.md",
                  ".agents/skills/notrest/SKILL.md", ".agents/skills/notrest-laws/SKILL.md"):
        assert (project.root / skill).exists(), skill
    second = install(project, "--client", "both", "--quiet")
    assert second.returncode == 0
    assert b"already installed; nothing changed" in second.stdout
    assert snapshot_tree(project.root) == tree

    removed = install(project, "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert json.loads((project.root / ".claude" / "settings.json").read_text()) == \
        USER_CLAUDE
    assert json.loads((project.root / ".codex" / "hooks.json").read_text()) == USER_CODEX
    assert (project.root / "AGENTS.md").read_text() == "# My agents file\n\nBe nice.\n"
    assert not (project.root / ".claude" / "skills").exists()
    assert not (project.root / ".notrest" / "notrest.py").exists()
    assert (project.root / ".notrest" / "laws.json").exists(), "the estate is kept"


def test_uninstall_of_a_fresh_install_leaves_the_project_as_it_was(tmp_path):
    project = make_project(tmp_path, install=False)
    before = snapshot_tree(project.root)
    assert install(project).returncode == 0
    project.hook("SessionStart", project.payload("SessionStart", "s1", source="startup"))
    assert install(project, "--uninstall").returncode == 0
    after = snapshot_tree(project.root)
    kept = {k for k in after if k.startswith(".notrest/")}
    assert {k: v for k, v in after.items() if k not in kept} == before
    assert ".notrest/journal/s1.jsonl" in kept
    assert install(project, "--uninstall", "--purge").returncode == 0
    assert snapshot_tree(project.root) == before


def test_a_skill_that_is_not_ours_is_never_overwritten(tmp_path):
    project = make_project(tmp_path, install=False)
    mine = project.root / ".claude" / "skills" / "notrest" / "SKILL.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: notrest\ndescription: mine\n---\nmy own\n")
    result = install(project, "--client", "claude")
    assert result.returncode == 0
    assert mine.read_text().endswith("my own\n")
    assert b"left" in result.stdout and b"(not ours)" in result.stdout


def test_broken_settings_are_reported_not_overwritten(tmp_path):
    project = make_project(tmp_path, install=False)
    settings = project.root / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {')
    result = install(project, "--client", "claude")
    assert result.returncode == 3
    assert str(settings).encode() in result.stderr and b"fix" in result.stderr
    assert settings.read_text() == '{"hooks": {'


def _front_matter(text):
    assert text.startswith("---\n")
    head, _, _body = text[4:].partition("\n---\n")
    fields = {}
    for line in head.splitlines():
        key, sep, value = line.partition(": ")
        assert sep, line
        value = value.strip()
        if value.startswith('"'):
            assert value.endswith('"') and '"' not in value[1:-1]
            value = value[1:-1]
        else:
            assert ": " not in value and not value.startswith(("'", "[", "{", "&", "*"))
        fields[key] = value
    return fields


@pytest.mark.parametrize("path", ["skills/notrest/SKILL.md",
                                  "skills/notrest-laws/SKILL.md"])
def test_skills_have_valid_front_matter_and_are_current(path):
    text = (REPO / path).read_text()
    fields = _front_matter(text)
    name = path.split("/")[1]
    assert fields["name"] == name and len(name) <= 64
    assert 0 < len(fields["description"]) <= 1024
    assert text == notrest.render_skill(name, None, "notrest"), \
        "skills/ is stale: regenerate it with tests/regenerate.py"


def test_repo_hooks_are_the_rendered_launchers_and_the_plugin_lists_them():
    for event, (name, _timeout) in notrest.HOOK_EVENTS.items():
        text = (REPO / "hooks" / name).read_text()
        assert text == notrest.render_launcher(event), name
        assert os.access(REPO / "hooks" / name, os.X_OK)
    assert (REPO / "hooks" / notrest.LAUNCH_FILE).read_text() == \
        notrest.render_launch_tail("")
    assert (REPO / "hooks" / "hooks.json").read_text() == notrest.plugin_hooks("claude")
    assert (REPO / "hooks" / "codex-hooks.json").read_text() == notrest.plugin_hooks(
        "codex")
    plugin = json.loads((REPO / "hooks" / "hooks.json").read_text())
    for event in notrest.CLIENT_EVENTS["claude"]:
        command = plugin["hooks"][event][0]["hooks"][0]["command"]
        assert "${CLAUDE_PLUGIN_ROOT}" in command
        assert notrest.HOOK_EVENTS[event][0] in command
    for manifest in (".claude-plugin/plugin.json", ".codex-plugin/plugin.json"):
        data = json.loads((REPO / manifest).read_text())
        assert data["name"] == "notrest" and data["version"] == notrest.__version__
    codex = json.loads((REPO / ".codex-plugin" / "plugin.json").read_text())
    assert codex["hooks"] == "./hooks/codex-hooks.json" and codex["skills"] == "./skills/"
    for market in (".claude-plugin/marketplace.json", ".agents/plugins/marketplace.json"):
        data = json.loads((REPO / market).read_text())
        assert data["name"] == "notrest"
        assert [(p["name"], p["source"]) for p in data["plugins"]] == [("notrest", "./")]


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_sh_files_are_shellcheck_clean():
    files = [str(p) for p in (REPO / "hooks").glob("*.sh")] + [
        str(REPO / "install.sh"), str(REPO / ".ci" / "run"), str(REPO / "tests" / "run.sh")]
    result = subprocess.run(["shellcheck", "-s", "sh"] + files, capture_output=True)
    assert result.returncode == 0, result.stdout.decode()


@pytest.mark.skipif(not shutil.which("dash"), reason="dash not installed")
def test_hooks_run_under_dash(proj):
    payload = json.dumps(proj.payload("PreToolUse", "d1", tool_name="Bash",
                                      tool_input={"command": "rm -rf /"}))
    proc = subprocess.run(["dash", str(proj.root / ".notrest/hooks/pre-tool-use.sh"),
                           "claude"], input=payload.encode(), capture_output=True,
                          env=proj.env())
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_hooks_fall_back_to_python3_when_the_recorded_interpreter_is_gone(proj):
    launcher = proj.root / ".notrest" / "hooks" / "pre-tool-use.sh"
    tail = proj.root / ".notrest" / "hooks" / notrest.LAUNCH_FILE
    tail.write_text(tail.read_text().replace("py='", "py='/nonexistent/python", 1))
    payload = json.dumps(proj.payload("PreToolUse", "f1", tool_name="Bash",
                                      tool_input={"command": "rm -rf ~"}))
    proc = subprocess.run(["sh", str(launcher), "claude"], input=payload.encode(),
                          capture_output=True, env=proj.env())
    assert json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_doctor_passes_on_a_fresh_install_once_codex_trusts_the_hooks(proj):
    untrusted = proj.cli("doctor")
    assert untrusted.code == 1
    failed = [line for line in untrusted.stdout.splitlines() if line.startswith("FAIL")]
    assert failed[0].startswith("FAIL  Codex does not trust the project")
    assert sorted(failed[1:]) == sorted(
        "FAIL  Codex hook %s: untrusted (Codex skips it silently)" % event
        for event in notrest.CLIENT_EVENTS["codex"])
    assert "trust codex" in untrusted.stdout
    write_codex_trust(proj)
    result = proj.cli("doctor")
    assert result.code == 0, result.stdout
    assert "FAIL" not in result.stdout
    assert "PASS  Codex hook PreToolUse: trusted" in result.stdout
    for law in notrest.BUILTIN_LAWS:
        assert "law %s in all three layers" % law["id"] in result.stdout


def _strip_event(proj, client, event):
    path = notrest.client_settings_path(str(proj.root), client)
    data = json.loads(open(path).read())
    del data["hooks"][event]
    open(path, "w").write(json.dumps(data))


def test_doctor_fails_a_law_without_its_hook(proj):
    _strip_event(proj, "codex", "Stop")
    result = proj.cli("doctor")
    assert result.code == 1
    assert "law bank-before-stop lacks: hook for codex" in result.stdout
    assert "fix:" in result.stdout


def test_doctor_fails_a_law_without_its_text(proj):
    write_codex_trust(proj)
    laws = proj.root / ".notrest" / "laws.json"
    laws.write_text(json.dumps({"schema_version": 1, "laws": [
        {"id": "no-curl", "text": "Never call curl in this project.", "on": ["PreToolUse"],
         "program": ["curl"], "instead": "use the vendored client"}]}))
    result = proj.cli("doctor")
    assert result.code == 1
    assert "law no-curl lacks: text" in result.stdout
    # re-running install renders the laws skill again: the text layer is back
    env = {"PATH": os.environ["PATH"], "HOME": str(proj.home)}
    subprocess.run(["sh", str(REPO / "install.sh"), "--quiet", str(proj.root)], env=env,
                   check=True, capture_output=True)
    assert proj.cli("doctor").code == 0


def test_doctor_fails_a_law_without_a_check(proj):
    laws = proj.root / ".notrest" / "laws.json"
    laws.write_text(json.dumps({"schema_version": 1, "laws": [
        {"id": "tests-green", "text": "Tests pass before a stop.", "on": ["Stop"]}]}))
    result = proj.cli("doctor")
    assert result.code == 1
    assert "tests-green" in result.stdout and "check command" in result.stdout


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    opening = readme.split("## Three promises")[0]
    command = "sh tests/run.sh"
    assert "cd notrest && %s\n" % command in opening
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert ci[-1] == command, "CI runs exactly the README's test command, last"
    assert "sh notrest/install.sh --client both ~/code/myproject" in opening
    for way in ("git clone", "pipx install", "pip install", "notrest.py"):
        assert way in opening, way
    for package in ("bubblewrap", "socat", "shellcheck", "chromium", "python3-venv"):
        assert package in (REPO / ".ci" / "run").read_text(), package


def test_hook_bytecode_is_built_at_install_and_rewritten_when_stale(proj):
    """Install writes the generated modules beside notrest.py and their bytecode
    (and notrest.py's) under data_dir()/pycache; a hook whose module changed, or
    whose bytecode is gone, still judges, and Python's import writes it again."""
    code_dir = str(proj.root / ".notrest")
    env = {"HOME": str(proj.home)}
    text = (proj.root / ".notrest" / "notrest.py").read_text()
    for part in notrest.MODULE_PARTS:
        module = proj.root / ".notrest" / ("notrest_%s.py" % part)
        assert module.read_text() == notrest.part_text(text, part)
    paths = notrest.cache_paths(code_dir, env=env)
    for part in ("hot", "warm", "all"):
        assert paths[part].startswith(str(proj.home / ".local" / "share" / "notrest" /
                                          "pycache") + "/"), paths[part]
        assert notrest.judge_cache(code_dir, part, {"path": paths[part]}) == "ok", part
    module = proj.root / ".notrest" / "notrest_hot.py"
    module.write_text(module.read_text() + "# a local edit\n")
    assert notrest.judge_cache(code_dir, "hot", {"path": paths["hot"]}) == "stale"
    payload = proj.payload("PreToolUse", "hc-1", tool_name="Bash",
                           tool_input={"command": "rm -rf /"})
    stale = proj.hook("PreToolUse", payload)
    assert stale.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert notrest.judge_cache(code_dir, "hot", {"path": paths["hot"]}) == "ok", \
        "a stale launch must rewrite the bytecode"
    os.unlink(paths["hot"])
    gone = proj.hook("PreToolUse", payload)
    assert gone.answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert notrest.judge_cache(code_dir, "hot", {"path": paths["hot"]}) == "ok"
    assert not gone.stderr.strip(), "a bytecode file written again is no fallback"


def test_bytecode_stays_out_of_a_read_only_checkout(tmp_path, monkeypatch):
    """A read-only checkout gets no __pycache__: the hooks' bytecode goes under
    data_dir()/pycache, the CLI's under ~/.cache/notrest/pycache."""
    code_dir = tmp_path / "ro" / ".notrest"
    code_dir.mkdir(parents=True)
    (code_dir / "notrest.py").write_text((REPO / "notrest.py").read_text())
    notrest.write_modules(str(code_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert notrest.cli_pyc_path(str(code_dir)).startswith(
        str(tmp_path / "home" / ".cache" / "notrest" / "pycache") + str(code_dir))
    monkeypatch.setattr(notrest.sys, "pycache_prefix", None)
    assert notrest.precompile_here(str(code_dir / "notrest.py")) == []
    for part in ("hot", "warm", "all"):
        assert os.path.isfile(notrest.hot_cache_path(str(code_dir), part))
    assert not (code_dir / "__pycache__").exists()
    assert list((tmp_path / "home" / ".cache" / "notrest" / "pycache").rglob("*.pyc"))


EXTENSION_PROBE = """
import sys
sys.path.insert(0, %r)
import notrest
out = {}
for name in ("_json", "zlib", "_operator"):
    module = notrest._extension(name)
    out[name] = [module is sys.modules[name], getattr(module, "__file__", "built in"),
                 module.__spec__.origin]
out["finder"] = sorted(k for k in sys.path_importer_cache if "lib-dynload" in k)
try:
    notrest._extension("notrest_no_such_extension")
except ImportError as exc:
    out["absent"] = type(exc).__name__
out["scan"] = notrest.json_loads('{"a": [1, 2.5, "\\\\u00e9"]}')
out["crc"] = notrest._crc_fast("x" * 300) == notrest._crc("x" * 300)
import json
print(json.dumps(out))
"""


def test_extension_modules_load_straight_as_a_plain_import_would():
    """_extension loads _json and zlib from the interpreter's lib-dynload folder
    without the path finder: the same file a plain import finds, in sys.modules,
    working; a built-in one and an absent one behave as with import."""
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", EXTENSION_PROBE % str(
        REPO)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    plain = subprocess.run([sys.executable, "-I", "-S", "-c",
                            "import _json, zlib, json\nprint(json.dumps([getattr(m, "
                            "'__file__', 'built in') for m in (_json, zlib)]))"],
                           capture_output=True, text=True, timeout=60)
    assert [got["_json"][1], got["zlib"][1]] == json.loads(plain.stdout)
    assert all(got[name][0] for name in ("_json", "zlib", "_operator"))
    assert got["absent"] == "ModuleNotFoundError"
    assert got["scan"] == {"a": [1, 2.5, "\u00e9"]} and got["crc"] is True
    assert got["finder"] == [], "the path finder listed lib-dynload: no straight load"
