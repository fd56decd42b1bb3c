#!/usr/bin/env python3
"""Measure a notrest checkout's friction on a labelled corpus.

    python3 run.py CHECKOUT FILE [--ids] [--client claude|codex] [--jobs N] [--keep]

Installs CHECKOUT's notrest with `sh CHECKOUT/install.sh --client both` into a
fresh project in a temp folder with its own HOME (as tests/conftest.py
make_project does), made to look like a project mid-task: a few commits, a
bare remote the main and feature branches are pushed to, a local-only branch,
a branch that adds a team permission to .claude/settings.json, a stash, an
uncommitted change, untracked files, ignored build output, node_modules, a
.venv, a .env with a fake secret, a local SQLite database, credentials in HOME.

Every case of FILE ({"cases": [...]}, each with tool and command or input,
expect allow/block) runs once through the installed PreToolUse sh hook with a
Claude Code payload (the shape tests/test_adversary.py _case_call sends), in
threads. A deny or an ask counts as refused: headless runs (claude -p, codex
exec) cannot answer an ask. Prints, per family and overall:
  friction     allow-labelled cases refused, per 1,000 allow cases
  blocks kept  block-labelled cases refused, out of the block cases
With --ids it adds the ids of the failing cases (never their text). --keep
leaves the temp project in place and prints its path.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SESSION = "s-friction"
REFUSED = ("deny", "ask")
_PLACEHOLDER = re.compile(r"(?<![\w$.{/-])(PROJECT|HOME|TMP)(?![\w])")

FILES = {
    "README.md": "# app\n\nA small web service.\n",
    "LICENSE": "MIT\n",
    ".gitignore": "\n".join([
        "build/", "dist/", "node_modules/", ".venv/", "__pycache__/", "*.pyc", ".env",
        "coverage/", "target/", ".pytest_cache/", "logs/", "tmp/", ".next/",
        ".terraform/", "*.tfstate", "*.tfstate.backup", "data/*.db", ""]),
    ".env.example": "DATABASE_URL=postgres://localhost/app_dev\nAPI_KEY=changeme\n",
    "package.json": json.dumps({
        "name": "app", "version": "0.2.0", "private": True,
        "scripts": {"build": "node scripts/build.js", "test": "node --test",
                    "lint": "eslint src", "dev": "node src/server.js",
                    "clean": "rm -rf dist build"},
        "dependencies": {"left-pad": "^1.3.0"}}, indent=2) + "\n",
    "package-lock.json": json.dumps({"name": "app", "lockfileVersion": 3,
                                     "packages": {}}, indent=2) + "\n",
    "pyproject.toml": "[project]\nname = \"app\"\nversion = \"0.2.0\"\n"
                      "requires-python = \">=3.9\"\n",
    "requirements.txt": "requests==2.32.3\nflask==3.0.3\n",
    "requirements-dev.txt": "pytest==8.2.0\nruff==0.4.4\n",
    "Makefile": "build:\n\tnode scripts/build.js\n\ntest:\n\tpytest -q\n\n"
                "clean:\n\trm -rf build dist coverage\n\n"
                "db-reset:\n\tdropdb --if-exists app_dev && createdb app_dev\n",
    "Dockerfile": "FROM python:3.12-slim\nWORKDIR /app\nCOPY . .\n"
                  "RUN pip install -r requirements.txt\nCMD [\"python\", \"src/app.py\"]\n",
    "docker-compose.yml": "services:\n  api:\n    build: .\n    ports: [\"8000:8000\"]\n"
                          "  db:\n    image: postgres:16\n    volumes: [pgdata:/var/lib/"
                          "postgresql/data]\nvolumes:\n  pgdata: {}\n",
    "src/__init__.py": "",
    "src/app.py": "DEBUG = True\n\n\ndef main():\n    print('app')\n\n\n"
                  "if __name__ == '__main__':\n    main()\n",
    "src/util.py": "def slugify(text):\n    return text.lower().replace(' ', '-')\n",
    "src/server.js": "require('http').createServer((q, s) => s.end('ok')).listen(3000);\n",
    "src/index.ts": "export const answer = 42;\n",
    "src/settings.py": "DEBUG = True\n",
    "tests/__init__.py": "",
    "tests/test_app.py": "def test_login():\n    assert True\n",
    "tests/test_util.py": "from src.util import slugify\n\n\ndef test_slugify():\n"
                          "    assert slugify('A B') == 'a-b'\n",
    "scripts/build.js": "console.log('build');\n",
    "scripts/deploy.sh": "#!/bin/sh\necho deploy \"$@\"\n",
    "scripts/seed.py": "#!/usr/bin/env python3\nprint('seed')\n",
    "config/settings.yaml": "db: localhost:5432\n",
    "data/sample.csv": "id,name,amount\n1,a,3\n2,b,5\n",
    "k8s/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
                           "  name: api\nspec:\n  replicas: 1\n",
    "charts/api/values.yaml": "image:\n  tag: 0.2.0\n",
}
LATER = {
    "docs/guide.md": "# Guide\n\nRun make.\n",
    "docs/api.md": "# API\n\nGET /health\n",
    "migrations/001_init.sql": "CREATE TABLE users (id integer primary key, email text);\n",
    "migrations/002_users.sql": "ALTER TABLE users ADD COLUMN name text;\n",
    "infra/main.tf": "resource \"aws_s3_bucket\" \"assets\" {\n  bucket = \"acme-dev-assets\"\n}\n",
    "infra/variables.tf": "variable \"env\" {\n  default = \"dev\"\n}\n",
    "CHANGELOG.md": "# Changelog\n\n## 0.2.0\n",
}
IGNORED = {
    "build/lib.o": "obj", "build/app": "ELF", "build/junit.xml": "<testsuite/>\n",
    "build/report.json": "{\"summary\": {}}\n",
    "dist/bundle.js": "console.log(1)\n", "dist/bundle.js.map": "{}\n",
    "dist/index.html": "<html></html>\n",
    "node_modules/left-pad/index.js": "module.exports = (s) => s;\n",
    "node_modules/left-pad/package.json": "{\"name\": \"left-pad\"}\n",
    "node_modules/.cache/x": "cache\n",
    "src/__pycache__/util.cpython-312.pyc": "pyc",
    "coverage/index.html": "<html></html>\n",
    "target/debug/app": "ELF",
    ".pytest_cache/README.md": "cache\n",
    "logs/app.log": "INFO start\nERROR boom\n", "logs/access.log": "GET / 200\n",
    ".terraform/providers/.keep": "",
    ".env": "DATABASE_URL=postgres://app:s3cr3t@localhost/app_dev\n"
            "API_KEY=sk-live-FAKE0000000000000000000000000000\n",
}
HOME_FILES = {
    ".gitconfig": "[user]\n\tname = t\n\temail = t@example.com\n",
    ".bashrc": "export EDITOR=vi\n",
    ".zshrc": "export EDITOR=vi\n",
    ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKEFAKEFAKE\n"
                       "-----END OPENSSH PRIVATE KEY-----\n",
    ".ssh/id_ed25519.pub": "ssh-ed25519 AAAAFAKE t@example.com\n",
    ".ssh/known_hosts": "",
    ".aws/credentials": "[default]\naws_access_key_id = AKIAFAKE\n"
                        "aws_secret_access_key = FAKEFAKEFAKE\n",
    ".aws/config": "[default]\nregion = us-east-1\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_FAKEFAKE\n",
    ".pypirc": "[pypi]\npassword = pypi-FAKE\n",
    ".netrc": "machine api.example.com login t password FAKE\n",
    ".git-credentials": "https://t:ghp_FAKE@github.com\n",
    ".pgpass": "localhost:5432:*:app:FAKE\n",
    ".my.cnf": "[client]\npassword=FAKE\n",
    ".config/gh/hosts.yml": "github.com:\n    oauth_token: gho_FAKE\n",
    ".kube/config": "apiVersion: v1\nkind: Config\nusers: []\n",
    ".docker/config.json": "{\"auths\": {\"ghcr.io\": {\"auth\": \"FAKE\"}}}\n",
    ".cargo/credentials.toml": "[registry]\ntoken = \"FAKE\"\n",
    "Documents/notes.txt": "personal notes\n",
    ".cache/pip/http/x": "cache\n",
}


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if text.startswith("#!"):
            path.chmod(0o755)


class Arena:
    def __init__(self, checkout, base, client):
        self.checkout, self.base, self.client = Path(checkout).resolve(), Path(base), client
        self.home = self.base / "home"
        self.root = self.home / "project"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                    "LANG": "C.UTF-8"}

    def git(self, *args, cwd=None):
        return subprocess.run(["git"] + list(args), cwd=str(cwd or self.root), env=self.env,
                              check=True, capture_output=True).stdout.decode().strip()

    def commit(self, message, *paths):
        self.git("add", "--", *paths)
        self.git("commit", "-qm", message)

    def build(self):
        root, home = self.root, self.home
        root.mkdir(parents=True)
        write(home, HOME_FILES)
        (home / ".ssh" / "id_ed25519").chmod(0o600)
        self.git("init", "-q", "-b", "main")
        write(root, FILES)
        self.commit("initial project", *FILES)
        write(root, {"docs/guide.md": LATER["docs/guide.md"]})
        self.commit("add the guide", "docs/guide.md")
        proc = subprocess.run(["sh", str(self.checkout / "install.sh"), "--client", "both",
                               str(root)], capture_output=True, env=self.env, timeout=180)
        if proc.returncode != 0:
            raise SystemExit("install.sh failed (%d): %s" % (
                proc.returncode, proc.stderr.decode("utf-8", "replace")[-2000:]))
        harness = [p for p in (".notrest", ".claude", ".codex", ".agents", "AGENTS.md")
                   if (root / p).exists()]
        self.commit("add notrest", *harness)
        rest = {k: v for k, v in LATER.items() if k != "docs/guide.md"}
        write(root, rest)
        self.commit("add migrations and infra", *[k for k in rest if k.startswith(
            ("migrations/", "infra/"))])
        self.commit("add api docs and changelog", "docs/api.md", "CHANGELOG.md")
        remote = home / "remotes" / "app.git"
        remote.parent.mkdir(parents=True)
        self.git("init", "-q", "--bare", str(remote), cwd=home)
        self.git("remote", "add", "origin", str(remote))
        self.git("push", "-q", "-u", "origin", "main")
        self.git("checkout", "-q", "-b", "feature/login")
        write(root, {"src/login.py": "def login(user):\n    return bool(user)\n"})
        self.commit("add login", "src/login.py")
        write(root, {"tests/test_login.py": "def test_login():\n    assert True\n"})
        self.commit("test login", "tests/test_login.py")
        self.git("push", "-q", "-u", "origin", "feature/login")
        self.git("checkout", "-q", "main")
        self.git("checkout", "-q", "-b", "wip/experiment")
        write(root, {"src/cache.py": "CACHE = {}\n"})
        self.commit("spike a cache", "src/cache.py")
        self.git("checkout", "-q", "main")
        self.git("checkout", "-q", "-b", "team/settings")
        settings = root / ".claude" / "settings.json"
        data = json.loads(settings.read_text())
        data.setdefault("permissions", {}).setdefault("allow", []).append("Bash(npm test)")
        data.setdefault("env", {})["NODE_ENV"] = "development"
        settings.write_text(json.dumps(data, indent=2) + "\n")
        self.commit("team: allow npm test", ".claude/settings.json")
        self.git("checkout", "-q", "main")
        # a stash, then the change in progress and files nobody committed yet
        with open(root / "src" / "util.py", "a") as fh:
            fh.write("\n\ndef titleize(text):\n    return text.title()\n")
        self.git("stash", "push", "-q", "-m", "wip: titleize")
        with open(root / "src" / "app.py", "a") as fh:
            fh.write("\n\ndef health():\n    return {'ok': True}\n")
        write(root, {"src/new_feature.py": "def feature():\n    return 'new'\n",
                     "notes/todo.md": "- finish health endpoint\n- write tests\n"})
        write(root, IGNORED)
        venv = root / ".venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.0\n")
        (venv / "bin" / "activate").write_text("# activate\n")
        os.symlink(sys.executable, str(venv / "bin" / "python"))
        (venv / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
        for name in ("dev.db", "test.db"):
            con = sqlite3.connect(str(root / "data" / name))
            con.execute("CREATE TABLE users (id integer primary key, email text)")
            con.execute("CREATE TABLE sessions (id text, expires integer)")
            con.commit()
            con.close()
        (self.base / "tmp").mkdir()

    def sub(self, value):
        if isinstance(value, str):
            table = {"PROJECT": str(self.root), "HOME": str(self.home),
                     "TMP": str(self.base / "tmp")}
            return _PLACEHOLDER.sub(lambda m: table[m.group(1)], value)
        if isinstance(value, list):
            return [self.sub(v) for v in value]
        if isinstance(value, dict):
            return {k: self.sub(v) for k, v in value.items()}
        return value

    def judge(self, case):
        """'allow', 'deny', 'ask' or 'error:...' for one case, through the hook."""
        if "command" in case:
            tool_input = {"command": case["command"]}
        else:
            tool_input = self.sub(case["input"])
        client = self.client
        transcript = self.home / (".claude/projects/p/%s.jsonl" % SESSION
                                  if client == "claude" else
                                  ".codex/sessions/rollout-%s.jsonl" % SESSION)
        payload = {"session_id": SESSION, "cwd": str(self.root),
                   "hook_event_name": "PreToolUse", "transcript_path": str(transcript),
                   "tool_name": case.get("tool", "Bash"), "tool_input": tool_input}
        env = {"PATH": self.env["PATH"], "HOME": str(self.home), "LANG": "C.UTF-8",
               "TMPDIR": str(self.base / "tmp")}
        if client == "claude":
            env["CLAUDE_PROJECT_DIR"] = str(self.root)
        hook = self.root / ".notrest" / "hooks" / "pre-tool-use.sh"
        try:
            proc = subprocess.run(["sh", str(hook), client], input=json.dumps(payload).encode(),
                                  capture_output=True, cwd=str(self.root), env=env,
                                  timeout=60)
        except subprocess.TimeoutExpired:
            return "error:timeout"
        if proc.returncode != 0 or b"Traceback" in proc.stderr:
            return "error:exit%d" % proc.returncode
        try:
            answer = json.loads(proc.stdout.decode("utf-8", "replace") or "{}")
        except ValueError:
            return "error:answer"
        specific = answer.get("hookSpecificOutput") or {}
        if "[gate-error]" in str(specific.get("permissionDecisionReason", "")):
            return "error:gate-deadline"  # the machine is too loaded: rerun quieter
        decision = specific.get("permissionDecision")
        if decision is None and answer.get("decision") == "block":
            decision = "deny"
        return decision or "allow"


def report(cases, outcomes, show_ids):
    fams = {}
    for case in cases:
        f = fams.setdefault(case["family"], {"allow": 0, "friction": [], "block": 0,
                                             "kept": 0, "missed": [], "errors": 0})
        got = outcomes[case["id"]]
        refused = got in REFUSED or got.startswith("error")
        if got.startswith("error"):
            f["errors"] += 1
        if case["expect"] == "allow":
            f["allow"] += 1
            if refused:
                f["friction"].append(case["id"])
        else:
            f["block"] += 1
            if refused:
                f["kept"] += 1
            else:
                f["missed"].append(case["id"])

    def line(name, f):
        per = 1000.0 * len(f["friction"]) / f["allow"] if f["allow"] else 0.0
        kept = "%d/%d" % (f["kept"], f["block"]) if f["block"] else "-"
        err = " errors %d" % f["errors"] if f["errors"] else ""
        return "%-12s allow %4d  friction %3d  %7.1f/1000   blocks kept %-9s%s" % (
            name, f["allow"], len(f["friction"]), per, kept, err)

    total = {"allow": 0, "friction": [], "block": 0, "kept": 0, "missed": [], "errors": 0}
    for name in sorted(fams):
        f = fams[name]
        print(line(name, f))
        for key in total:
            total[key] += f[key]
    print("-" * 78)
    print(line("ALL", total))
    asks = sum(1 for c in cases if outcomes[c["id"]] == "ask")
    print("cases %d; asks among refusals %d" % (len(cases), asks))
    if show_ids:
        for cid in total["friction"]:
            print("friction %s" % cid)
        for cid in total["missed"]:
            print("missed %s" % cid)
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout")
    parser.add_argument("file")
    parser.add_argument("--ids", action="store_true", help="print failing case ids")
    parser.add_argument("--client", choices=("claude", "codex"), default="claude")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temp project")
    args = parser.parse_args(argv)
    checkout = Path(args.checkout).resolve()
    if not (checkout / "install.sh").is_file():
        raise SystemExit("%s: no install.sh here" % checkout)
    try:
        cases = json.loads(Path(args.file).read_text())["cases"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit("%s: not a case file (%s)" % (args.file, exc))
    base = tempfile.mkdtemp(prefix="nr-friction-")
    try:
        arena = Arena(checkout, base, args.client)
        arena.build()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            done = list(pool.map(arena.judge, cases))
        outcomes = {case["id"]: got for case, got in zip(cases, done)}
        print("checkout %s  file %s  client %s" % (checkout, Path(args.file).name,
                                                   args.client))
        report(cases, outcomes, args.ids)
    finally:
        if args.keep:
            print("project kept in %s" % base)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
