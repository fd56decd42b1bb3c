"""How people install and look: settings files come back byte for byte, Codex hook
commands survive a move, a clone and a subdirectory, doctor names the installer that
exists, the CLI conventions (-V, help, bounded --json says so), the TOML reader."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, make_project, write_codex_trust
import notrest

# A person's settings: 4-space indent, keys in their own order, a hook of theirs,
# non-ASCII text, no trailing newline.
CLAUDE_SETTINGS = """{
    "permissions": {
        "deny": ["Read(./secrets/**)"],
        "allow": ["Bash(ls:*)"]
    },
    "model": "opus",
    "env": {"GREETING": "grüß dich"},
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "./my-stop.sh", "timeout": 30}
                ]
            }
        ]
    }
}"""
CODEX_HOOKS = """{
    "hooks": {
        "SessionStart": [
            {"hooks": [{"command": "echo mine", "type": "command"}]}
        ]
    }
}
"""
CODEX_NO_HOOKS = '{"zeta": 1, "alpha": [1, 2]}\n'


def run_install(project, *args, cwd=None):
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    return subprocess.run(["sh", str(REPO / "install.sh")] + list(args) + [
        str(project.root)], capture_output=True, env=env, timeout=120, cwd=cwd)


def put(project, rel, text):
    path = project.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("codex_text", [CODEX_HOOKS, CODEX_NO_HOOKS])
def test_uninstall_gives_back_the_settings_byte_for_byte(tmp_path, codex_text):
    project = make_project(tmp_path, install=False)
    claude = put(project, ".claude/settings.json", CLAUDE_SETTINGS)
    codex = put(project, ".codex/hooks.json", codex_text)
    os.chmod(claude, 0o600)
    assert run_install(project, "--client", "both").returncode == 0
    wired = claude.read_text()
    # installed, the person's own lines are still theirs: same indent, same order
    assert wired.startswith('{\n    "permissions": {\n        "deny"')
    assert '"env": {"GREETING": "grüß dich"}' in wired
    assert '{"type": "command", "command": "./my-stop.sh", "timeout": 30}' in wired
    data = json.loads(wired)
    assert list(data) == ["permissions", "model", "env", "hooks"]
    assert "/.notrest/hooks/stop.sh" in json.dumps(data["hooks"]["Stop"])
    assert json.loads(codex.read_text())["hooks"]["PreToolUse"]
    assert run_install(project, "--client", "both").returncode == 0
    assert claude.read_text() == wired, "a second install changes nothing"
    assert run_install(project, "--uninstall").returncode == 0
    assert claude.read_bytes() == CLAUDE_SETTINGS.encode("utf-8")
    assert codex.read_bytes() == codex_text.encode("utf-8")
    assert os.stat(claude).st_mode & 0o777 == 0o600


def test_uninstall_after_the_person_edited_removes_only_notrests_entries(tmp_path):
    project = make_project(tmp_path, install=False)
    claude = put(project, ".claude/settings.json", CLAUDE_SETTINGS)
    assert run_install(project, "--client", "claude").returncode == 0
    # the person adds a key of their own while notrest is installed
    edited = claude.read_text().replace('"model": "opus",', '"model": "opus",\n'
                                        '    "theme": "dark",')
    claude.write_text(edited)
    assert run_install(project, "--uninstall").returncode == 0
    assert claude.read_text() == CLAUDE_SETTINGS.replace(
        '"model": "opus",', '"model": "opus",\n    "theme": "dark",')


def test_settings_text_edits_are_exact_inverses_in_every_style():
    commands = notrest.hook_commands("/p", "claude")
    styles = [
        "{}", "{ }", '{"a":1}', '{"a": 1, "b": [1, 2]}', '{\n\t"a": 1\n}\n',
        '{\n  "hooks": {}\n}\n', '{\n    "hooks": {\n        "Stop": []\n    }\n}',
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}',
    ]
    for text in styles:
        wired, created = notrest.settings_with_hooks(text, "claude", commands)
        data = json.loads(wired)
        assert set(notrest.CLIENT_EVENTS["claude"]) <= set(data["hooks"]), text
        again, _ = notrest.settings_with_hooks(wired, "claude", commands)
        assert again == wired, text
        back = notrest.settings_without_hooks(wired, created)
        assert json.loads(back) == json.loads(text), (text, back)
        if text not in ("{ }",):
            assert back == text, (text, back)


def test_codex_hook_commands_name_no_path_and_stay_the_same_across_projects(tmp_path):
    a = notrest.hook_commands("/home/a/project", "codex")
    b = notrest.hook_commands("/srv/elsewhere/other", "codex")
    assert a == b
    for command, timeout in a.values():
        assert "/home/a" not in command and notrest.HOOK_MARK in command
        assert "!" not in command and "\\" not in command and command.count("'") == 2
    assert a["SessionEnd"][1] == 3, "Codex clamps SessionEnd to 3 s"


def _codex_hook(project_root, event, payload, cwd, shell="sh"):
    hooks = json.loads((project_root / ".codex" / "hooks.json").read_text())
    command = next(h["command"] for g in hooks["hooks"][event] for h in g["hooks"]
                   if notrest.HOOK_MARK in h["command"])
    env = {"PATH": os.environ["PATH"], "HOME": str(project_root.parent), "LANG": "C.UTF-8"}
    argv = [shell, "-lc", command] if shell != "sh" else ["sh", "-c", command]
    return subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True,
                          cwd=str(cwd), env=env, timeout=30)


def _deny_payload(root, cwd):
    return {"session_id": "mv-1", "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "cat .env"},
            "transcript_path": str(root.parent / ".codex/sessions/rollout-mv-1.jsonl")}


@pytest.mark.parametrize("shell", ["sh", "bash", "dash"])
def test_codex_hooks_work_from_a_subdirectory_after_a_move_and_in_a_clone(tmp_path, shell):
    if not shutil.which(shell):
        pytest.skip("%s not installed" % shell)
    project = make_project(tmp_path)
    (project.root / ".env").write_text("KEY=1\n")
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "PATH": os.environ["PATH"], "HOME": str(project.home)}
    subprocess.run(["git", "add", "-A"], cwd=project.root, check=True, env=git)
    subprocess.run(["git", "commit", "-qm", "notrest"], cwd=project.root, check=True,
                   env=git)
    moved = tmp_path / "home" / "renamed"
    os.rename(project.root, moved)
    clone = tmp_path / "home" / "clone"
    subprocess.run(["git", "clone", "-q", str(moved), str(clone)], check=True, env=git)
    for root in (moved, clone):
        sub = root / "src" / "deep"
        sub.mkdir(parents=True)
        for cwd in (root, sub):
            result = _codex_hook(root, "PreToolUse", _deny_payload(root, cwd), cwd, shell)
            answer = json.loads(result.stdout)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "deny", (root, cwd, result.stderr)
            assert "protect-secrets" in answer["permissionDecisionReason"]
        start = {"session_id": "mv-2", "cwd": str(sub), "hook_event_name": "SessionStart",
                 "source": "startup"}
        result = _codex_hook(root, "SessionStart", start, sub, shell)
        context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "notrest start packet for %s." % root.name in context
        assert (root / ".notrest" / "journal" / "mv-2.jsonl").exists()
        assert not (sub / ".notrest").exists()


def test_a_codex_gate_that_cannot_find_notrest_blocks(tmp_path):
    project = make_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _codex_hook(project.root, "PreToolUse", _deny_payload(project.root, elsewhere),
                         elsewhere)
    assert result.returncode == 2, "exit 2 blocks the call in both clients"
    assert b"no .notrest/hooks/pre-tool-use.sh above" in result.stderr
    quiet = _codex_hook(project.root, "PostToolUse", {}, elsewhere)
    assert quiet.returncode == 0


def test_doctor_sees_the_codex_trust_lost_by_a_move_and_names_the_fix(tmp_path):
    project = make_project(tmp_path)
    write_codex_trust(project)
    assert project.cli("doctor").code == 0
    moved = tmp_path / "home" / "moved"
    os.rename(project.root, moved)
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    result = subprocess.run([str(moved / ".notrest" / "notrest"), "doctor"],
                            capture_output=True, text=True, env=env, cwd=str(moved))
    assert result.returncode == 1
    assert "FAIL  Codex does not trust the project %s" % moved in result.stdout
    assert "FAIL  Codex hook PreToolUse: untrusted" in result.stdout
    assert "fix: run `.notrest/notrest trust codex`" in result.stdout
    # one cause, one fix line, and it is the next step named first
    assert result.stdout.count("fix: run `.notrest/notrest trust codex`") == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith("next step: run `.notrest/notrest trust codex`"), first
    assert "it fixes all" in first or "for " in first


def test_doctor_says_changed_since_trust_when_a_hook_is_edited(proj):
    write_codex_trust(proj)
    hooks = proj.root / ".codex" / "hooks.json"
    data = json.loads(hooks.read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 11
    hooks.write_text(json.dumps(data))
    result = proj.cli("doctor")
    assert "FAIL  Codex hook PreToolUse: changed since it was trusted" in result.stdout
    assert "PASS  Codex hook Stop: trusted" in result.stdout


@pytest.mark.parametrize("how", ["install.sh", "pip", "vendored"])
def test_doctor_fix_lines_name_the_installer_that_exists(tmp_path, how):
    project = make_project(tmp_path, install=False)
    env = {"PATH": os.environ["PATH"], "HOME": str(project.home)}
    if how == "install.sh":
        argv = ["sh", str(REPO / "install.sh"), str(project.root)]
        expect = "sh %s/install.sh --client both %s" % (REPO, project.root)
    elif how == "pip":
        site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
        site.mkdir(parents=True)
        shutil.copy(REPO / "notrest.py", site / "notrest.py")
        bindir = tmp_path / "venv" / "bin"
        bindir.mkdir()
        script = bindir / "notrest"
        # what pip writes for the console script `notrest = "notrest:main"`
        script.write_text("#!%s\nimport sys\nsys.path.insert(0, %r)\nfrom notrest "
                          "import main\nsys.exit(main())\n" % (sys.executable, str(site)))
        script.chmod(0o755)
        env["PATH"] = "%s:%s" % (bindir, env["PATH"])
        argv = [str(script), "install", str(project.root)]
        expect = "notrest install --client both %s" % project.root
    else:
        vendored = tmp_path / "tools" / "notrest.py"
        vendored.parent.mkdir()
        shutil.copy(REPO / "notrest.py", vendored)
        argv = [sys.executable, str(vendored), "install", str(project.root)]
        expect = "python3 %s install --client both %s" % (vendored, project.root)
    assert subprocess.run(argv, capture_output=True, env=env).returncode == 0
    os.unlink(project.root / ".notrest" / "hooks" / "stop.sh")
    result = subprocess.run([str(project.root / ".notrest" / "notrest"), "doctor"],
                            capture_output=True, text=True, env=env)
    assert "hook launcher %s missing" % (project.root / ".notrest/hooks/stop.sh") in \
        result.stdout
    assert "fix: run `%s` (or chmod +x it)" % expect in result.stdout


def test_version_help_and_bounded_json(proj):
    assert proj.cli("-V").stdout.strip() == notrest.__version__
    assert proj.cli("--version").stdout.strip() == notrest.__version__
    top = proj.cli("help")
    assert top.code == 0 and "COMMAND" in top.stdout and "trust" in top.stdout
    verb = proj.cli("help", "log")
    assert verb.code == 0 and "--limit" in verb.stdout
    assert proj.cli("help", "log").stdout == proj.cli("log", "--help").stdout
    bad = proj.cli("help", "nonsense")
    assert bad.code == 2 and "commands:" in bad.stderr
    payload = proj.payload("PostToolUse", "lj-1", tool_name="Bash",
                           tool_input={"command": "true"}, tool_response={"stdout": ""})
    for _ in range(5):
        proj.hook("PostToolUse", payload)
    full = json.loads(proj.cli("log", "--session", "lj-1", "--json").stdout)
    assert full["total"] == 5 and full["truncated"] is False
    cut = json.loads(proj.cli("log", "--session", "lj-1", "--json", "--limit", "2").stdout)
    assert cut["truncated"] is True and cut["total"] == 5 and len(cut["records"]) == 2
    text = proj.cli("log", "--session", "lj-1", "--limit", "2").stdout
    assert "5 record(s) (the newest 2 shown; --limit 0 shows all)" in text
    status = json.loads(proj.cli("status", "--json").stdout)
    assert status["total"] >= 1 and status["truncated"] is False


def test_the_toml_reader_agrees_with_tomllib():
    tomllib = pytest.importorskip("tomllib")
    text = (REPO / "tests" / "data" / "codex-config.toml").read_text()
    mine = notrest.parse_toml(text)

    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value if isinstance(value, (str, int, float, bool)) else str(value)

    reference = plain(tomllib.loads(text))

    def dates_as_text(a, b):
        if isinstance(a, dict):
            return {k: dates_as_text(a[k], b.get(k)) for k in a}
        if isinstance(a, list):
            return [dates_as_text(x, y) for x, y in zip(a, b)]
        return b if isinstance(a, str) and isinstance(b, str) and a[:4].isdigit() else a

    assert dates_as_text(mine, reference) == reference
    for bad, line in (('a = "x', 1), ("[t\n", 1), ("a = 1\nb = 1 2\n", 2),
                      ("a = [1 2]", 1), ("a = {x = 1", 1), ("a = 1\na = 2\n", 2)):
        with pytest.raises(notrest.TomlError) as err:
            notrest.parse_toml(bad)
        assert err.value.line == line, bad


def test_a_broken_codex_config_is_named_not_a_traceback(proj):
    config = proj.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('model = "x"\n[projects\n')
    result = proj.cli("doctor")
    assert result.code == 1 and "Traceback" not in result.stdout + result.stderr
    assert "Codex's config is not TOML (line 2" in result.stdout
    assert str(config) in result.stdout


def test_a_long_deny_fits_claudes_first_line_and_keeps_everything_after(proj):
    payload = proj.payload("PreToolUse", "dn-1", tool_name="Bash",
                           tool_input={"command": "rm -rf ~"})
    reason = proj.hook("PreToolUse", payload).answer["hookSpecificOutput"][
        "permissionDecisionReason"]
    first, _, rest = reason.partition("\n")
    # Claude's TUI shows the first line only, cut at ~200 characters after its own
    # 28-character "PreToolUse:Bash hook error: " label
    assert len(first) <= notrest.DENY_LINE_MAX
    assert first.startswith("notrest deny [no-destroy]: deletes your home folder")
    assert " Instead: delete only what you made" in first
    assert rest.startswith("In full: `rm -rf %s` deletes your home folder" % proj.home)
    assert rest.endswith("and ask the user to do anything wider")
    short = notrest.Verdict("deny", "no-force-push", "pushes with --force", "push a branch")
    assert notrest.deny_text(short) == short.text() == (
        "notrest deny [no-force-push]: pushes with --force. Instead: push a branch")


def _plugin_copy(tmp_path):
    """The plugin as a client installs it: the repository copied into its cache."""
    plugin = tmp_path / "plugin-cache" / "notrest" / notrest.__version__
    plugin.mkdir(parents=True)
    shutil.copy(REPO / "notrest.py", plugin / "notrest.py")
    shutil.copytree(REPO / "hooks", plugin / "hooks")
    return plugin


def _plugin_hook(plugin, project_root, home, event, payload, client):
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
           "CLAUDE_PLUGIN_ROOT": str(plugin)}
    if client == "claude":
        env["CLAUDE_PROJECT_DIR"] = str(project_root)
    else:
        env["PLUGIN_ROOT"] = str(plugin)
    name = notrest.HOOK_EVENTS[event][0]
    return subprocess.run(["sh", str(plugin / "hooks" / name), client],
                          input=json.dumps(payload).encode(), capture_output=True,
                          cwd=str(project_root), env=env, timeout=30)


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_a_plugin_acts_alone_then_steps_aside_for_the_project_install(tmp_path, client):
    plugin = _plugin_copy(tmp_path)
    project = make_project(tmp_path, install=False)
    sub = project.root / "src"
    sub.mkdir()
    start = project.payload("SessionStart", "pl-1", client=client, source="startup",
                            cwd=str(sub if client == "codex" else project.root))
    alone = _plugin_hook(plugin, project.root, project.home, "SessionStart", start, client)
    assert "notrest start packet for project." in alone.stdout.decode()
    estate = project.root / ".notrest"
    assert (estate / ".gitignore").read_text() == notrest.ESTATE_GITIGNORE
    assert (estate / "journal" / "pl-1.jsonl").exists() and not (sub / ".notrest").exists()
    # the project gets its own install: it acts, the plugin steps aside
    assert run_install(project, "--client", client).returncode == 0
    if client == "codex":
        untrusted = _plugin_hook(plugin, project.root, project.home, "SessionStart",
                                 dict(start, session_id="pl-2"), client)
        assert "notrest start packet" in untrusted.stdout.decode(), \
            "Codex skips untrusted project hooks: the plugin must still act"
        write_codex_trust(project)
    for event, payload in (("SessionStart", dict(start, session_id="pl-3")), (
            "PreToolUse", project.payload("PreToolUse", "pl-3", client=client,
                                          tool_name="Bash",
                                          tool_input={"command": "rm -rf ~"}))):
        aside = _plugin_hook(plugin, project.root, project.home, event, payload, client)
        assert aside.returncode == 0 and aside.stdout == b"{}\n", aside.stdout
    assert not (estate / "journal" / "pl-3.jsonl").exists(), "the plugin wrote nothing"


def test_trust_without_a_working_codex_says_what_to_do(proj, tmp_path):
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    for args, what in ((["--codex", str(tmp_path / "nope")], "no executable codex"),
                       (["--codex", str(fake)], "codex app-server "),
                       ([], "the codex command is not on PATH")):
        result = proj.cli("trust", "codex", *args, PATH="/usr/bin:/bin")
        assert result.code == 3, result.stderr
        assert what in result.stderr and "Traceback" not in result.stderr
        assert "/hooks" in result.stderr or "--codex" in result.stderr
    installed = proj.cli("install", str(proj.root), "--trust", "--codex", str(fake),
                         "--quiet")
    assert installed.code == 1 and "Codex trust FAILED" in installed.stdout


# A stand-in `codex app-server`: answers initialize, config/batchWrite (kept in
# trust.json next to it) and hooks/list (the project's notrest hooks, as Codex lists
# them). HANG names how many starts go silent at their first config/batchWrite,
# after a line on stderr; every start is counted in starts.
FAKE_APP_SERVER = r"""#!%(python)s
import json, os, sys, time
sys.path.insert(0, %(repo)r)
import notrest
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "starts"), "a") as f:
    f.write("x")
starts = len(open(os.path.join(here, "starts")).read())
hang = starts <= int(open(os.path.join(here, "HANG")).read())
store = os.path.join(here, "trust.json")
state = json.load(open(store)) if os.path.exists(store) else {}
for line in sys.stdin:
    msg = json.loads(line)
    method, result = msg.get("method"), {}
    if "id" not in msg:
        continue
    if method == "config/batchWrite":
        if hang:
            sys.stderr.write("ERROR codex: lock held; token ghp_%(token)s\n")
            sys.stderr.flush()
            time.sleep(3600)
        for edit in msg["params"]["edits"]:
            state.setdefault(edit["keyPath"], {}).update(edit["value"])
        json.dump(state, open(store, "w"))
    elif method == "hooks/list":
        trusted = state.get("hooks.state", {})
        path = notrest.client_settings_path(os.getcwd(), "codex")
        hooks = [{"key": key, "currentHash": digest, "source": "project",
                  "sourcePath": path, "command": notrest.HOOK_MARK, "enabled": True,
                  "trustStatus": "trusted" if trusted.get(key, {}).get(
                      "trusted_hash") == digest else "untrusted"}
                 for _e, key, digest in notrest.codex_project_hooks(os.getcwd())]
        result = {"data": [{"cwd": os.getcwd(), "hooks": hooks}]}
    sys.stdout.write(json.dumps({"id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def _fake_app_server(tmp_path, hang):
    fake = tmp_path / "fakecodex" / "codex"
    fake.parent.mkdir()
    fake.write_text(FAKE_APP_SERVER % {"python": sys.executable, "repo": str(REPO),
                                       "token": "A1b2" * 9})
    fake.chmod(0o755)
    (fake.parent / "HANG").write_text(str(hang))
    return fake


def test_trust_starts_a_second_app_server_when_the_first_goes_silent(proj, tmp_path,
                                                                       monkeypatch):
    # 4 s: the fake is a Python program; on a loaded machine its start alone can
    # take a second (the wait is for an answer, not a deadline on notrest)
    monkeypatch.setattr(notrest, "APP_SERVER_TIMEOUT_S", 4)
    fake = _fake_app_server(tmp_path, hang=1)
    env = dict(os.environ, HOME=str(proj.home), CODEX_HOME=str(proj.home / ".codex"))
    report = notrest.trust_codex(str(proj.root), env, str(fake))
    assert (fake.parent / "starts").read_text() == "xx"
    assert sum("trusted the project" in line for line in report) == 1, report
    hooks = notrest.codex_project_hooks(str(proj.root))
    assert "Codex trusts the %d notrest project hooks for this project (%d newly)" % (
        len(hooks), len(hooks)) in "\n".join(report), report
    kept = json.loads((fake.parent / "trust.json").read_text())
    assert kept["hooks.state"] == {key: {"trusted_hash": digest}
                                   for _e, key, digest in hooks}


def test_trust_against_an_app_server_that_stays_silent_names_its_last_words(
        proj, tmp_path, monkeypatch):
    monkeypatch.setattr(notrest, "APP_SERVER_TIMEOUT_S", 4)
    fake = _fake_app_server(tmp_path, hang=9)
    env = dict(os.environ, HOME=str(proj.home), CODEX_HOME=str(proj.home / ".codex"))
    with pytest.raises(notrest.NotrestError) as failed:
        notrest.trust_codex(str(proj.root), env, str(fake))
    said = str(failed.value)
    assert "gave no answer to config/batchWrite within 4 s" in said, said
    assert "its last words: ERROR codex: lock held" in said, said
    assert "ghp_" + "A1b2" * 9 not in said, "a secret in its stderr is redacted"
    assert (fake.parent / "starts").read_text() == "x" * notrest.APP_SERVER_ATTEMPTS
    assert not (fake.parent / "trust.json").exists()


# The trust Codex records covers each hook's command text and timeout: a change here
# makes every user's notrest hooks untrusted again (silently skipped until they run
# `trust codex` again). Change it only on purpose, and say so in the release notes.
PINNED_CODEX_HASHES = {  # changed on purpose: `/bin/sh` by absolute path (#28)
    "SessionStart": "15b9c507b1ed", "UserPromptSubmit": "74313f577bcf",
    "PreToolUse": "64ba7df9417a", "PostToolUse": "199f8b9229b2",
    "SubagentStart": "ff5112fb791c", "SubagentStop": "ea61a9d32f60",
    "Stop": "d11d84683eac", "PreCompact": "a1d1d0fbed0a", "PostCompact": "cdd04ab79ab3",
    "SessionEnd": "8f4052596be1",
}


def test_codex_hook_texts_keep_their_trust_hashes(proj):
    hashes = {event: digest[7:19] for event, _key, digest in
              notrest.codex_project_hooks(str(proj.root))}
    assert hashes == PINNED_CODEX_HASHES
