"""Ordinary work is never in the way (issue #27): each class of friction the issue
names, run through the installed PreToolUse hook of a project caught mid-task (an
uncommitted change, an untracked file, a stash, pushed and unpushed branches,
ignored build output, a secret .env), with the ordinary command allowed and a
dangerous sibling still blocked."""
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import make_project

STRICT = ("deny", "ask")

# (command, expected: "allow" or the law that must deny or ask it)
CASES = [
    # 1. packs match programs, not words: a package manager's remove is no cloud delete
    ("uv remove requests", "allow"),
    ("poetry remove requests --dry-run", "allow"),
    ("poetry env remove --all", "allow"),
    ("yarn remove axios", "allow"),
    ("pnpm rm zod", "allow"),
    ("pnpm remove lodash", "allow"),
    ("npm rm left-pad", "allow"),
    ("npm rb", "allow"),
    ("npm pkg delete scripts.build", "allow"),
    ("npx vercel rm my-app --yes", "cloud"),
    ("vercel remove my-app", "cloud"),
    # ... and a cloud CLI's help, skeleton, dry run and plan forms are reads
    ("aws s3 rm help", "allow"),
    ("aws ec2 terminate-instances --generate-cli-skeleton", "allow"),
    ("gcloud projects delete my-proj --help", "allow"),
    ("gcloud help projects delete", "allow"),
    ("az deployment group create -g rg -f main.bicep --what-if", "allow"),
    ("kubectl delete ns prod --dry-run=client", "allow"),
    ("terraform plan -destroy", "allow"),
    ("terraform destroy -help", "allow"),
    ("aws s3 rm s3://bucket --recursive", "cloud"),
    ("aws s3 rm s3://bucket/help", "cloud"),
    ("aws s3 rm s3://bucket --recursive -- --help", "cloud"),
    ("gcloud projects delete my-proj", "cloud"),
    ("kubectl delete ns prod --dry-run=none", "containers"),
    ("terraform destroy -auto-approve", "iac"),
    # 2. a glob is judged by what it expands to on disk; a regex in code is no path
    ("cat dist/*", "allow"),
    ("tar czf out.tgz dist/*", "allow"),
    ("scp dist/* host:/srv/www/", "allow"),
    ("python3 -c 'print(\".*\")'", "allow"),
    ("python3 -c 'import re; print(re.findall(\"a.*b\", \"axb\"))'", "allow"),
    ("npm run build && cp -r dist/* /srv/www/plugin-friction-test/", "allow"),
    ("cp dist/app.js /etc/app-friction-test.js", "no-destroy"),
    ("cp dist/app.js /etc/hosts", "no-destroy"),
    ("grep -rI --include='*.py' 'import requests' .", "allow"),
    ("rg --hidden -g '*.py' FIXME", "allow"),
    ("printf 'DEBUG=1\\nAPI_URL=http://localhost:8000\\n' > .env.test", "allow"),
    ("grep -r --include='*.env' KEY .", "protect-secrets"),
    ("grep -r KEY .", "protect-secrets"),
    ("echo API_KEY=x > .env", "protect-secrets"),
    ("cp .env .env.bak", "protect-secrets"),
    ("cat .e*", "protect-secrets"),
    ("cat secrets/*", "protect-secrets"),
    ("tar czf out.tgz ./*", "protect-secrets"),
    ("cat linked/*", "protect-secrets"),
    ("python3 -c 'import glob; print(open(glob.glob(\".e*\")[0]).read())'",
     "protect-secrets"),
    # 3. find -exec and xargs: judged on what find's predicates and xargs's input name
    ("find . -type d -exec chmod 755 {} \\;", "allow"),
    ("find . -type f -name '*.sh' -exec chmod +x {} \\;", "allow"),
    ("find . -exec touch {} \\;", "allow"),
    ("git ls-files '*.py' | xargs pytest -q", "allow"),
    ("git diff --name-only | xargs ruff check", "allow"),
    ("git ls-files -z '*.py' | xargs -0 black --check", "allow"),
    ("grep -rl oldName src | xargs sed -i 's/oldName/newName/g'", "allow"),
    ("cat requirements.txt | xargs -n 1 pip install", "allow"),
    ("find . -exec chmod 000 {} \\;", "protect-harness"),
    ("find . -exec chmod u-r {} \\;", "protect-harness"),
    ("find . -name '*.sh' -exec sed -i 's/a/b/' {} \\;", "protect-harness"),
    ("git ls-files | xargs black", "protect-harness"),
    ("git ls-files '*.py' | xargs sed -i 's/a/b/'", "protect-harness"),
    ("git ls-files src | xargs rm", "protect-harness"),
    # 4. recoverable deletes: empty files and folders
    ("find . -type f -empty -delete", "allow"),
    ("find . -type d -empty -delete", "allow"),
    ("find . -empty -o -name '*.py' -delete", "protect-harness"),
    ("find . -type f -delete", "no-destroy"),
    # ... judged by what would be lost: build output, caches and folders the agent
    # made pass; uncommitted changes and untracked files of a source folder do not
    ("rm -rf dist build node_modules src/__pycache__", "allow"),
    ("mkdir -p out && touch out/x && rm -rf out", "allow"),
    ("rm src/util.py", "allow"),
    ("find /tmp -maxdepth 1 -name 'nomatch-friction-*' -exec rm -rf {} +", "allow"),
    ("find /tmp -name 'pytest-of-*' -exec rm -rf {} +", "no-destroy"),   # the home's
    ("find /tmp -name '*.txt' -delete", "no-destroy"),     # goes down into the home
    ("rm -rf src", "no-destroy"),
    ("npx rimraf src", "no-destroy"),
    ("find src -type f -delete", "no-destroy"),
    ("rm src/app.py", "no-destroy"),
    # ... an untracked file of a source folder, the .env, a move to /dev/null and an
    # rsync --delete into the project lose what no other copy holds
    ("rm -f dist/app.js", "allow"),
    ("mv dist/app.js /dev/null", "allow"),
    ("rsync -a --delete src/ /tmp/src-mirror-friction/", "allow"),
    ("rsync -a --delete --dry-run dist/ src/", "allow"),
    ("rm -f src/new_feature.py", "no-destroy"),
    ("rm .env", "no-destroy"),
    ("mv src/app.py /dev/null", "no-destroy"),
    ("rsync -a --delete dist/ src/", "no-destroy"),
    ("mv ~/.cache/pip /tmp/pip-cache-old", "allow"),
    ("mv ~/.gnupg /tmp/gpg-old", "no-destroy"),
    # ... local, rebuildable Docker state
    ("docker system prune -f", "allow"),
    ("docker container prune -f", "allow"),
    ("docker rmi -f app:latest", "allow"),
    ("docker system prune -af --volumes", "containers"),
    ("docker system prune -af", "allow"),     # unused images: a build or pull again
    ("docker volume rm pgdata", "containers"),
    ("docker rm -f web", "containers"),
    # ... scratch databases: local and named test/dev/tmp
    ("dropdb --if-exists app_test && createdb app_test", "allow"),
    ("psql -d app_test -c 'TRUNCATE users'", "allow"),
    ("redis-cli -n 1 FLUSHDB", "allow"),
    ("mysql -u root -h 127.0.0.1 -e 'DROP DATABASE IF EXISTS shop_test; CREATE "
     "DATABASE shop_test'", "allow"),
    ("sqlite3 /tmp/test.db 'DROP TABLE t'", "allow"),
    ("python manage.py flush --no-input --database test", "allow"),
    ("dropdb app", "databases"),
    ("dropdb app_production_test", "databases"),
    ("psql -d app_prod -c 'TRUNCATE users'", "databases"),
    ("psql -h db.example.com -d app_test -c 'TRUNCATE users'", "databases"),
    ("psql -d app_test -c 'DROP DATABASE prod'", "databases"),
    ("PGHOST=db.internal dropdb app_test", "databases"),
    ("redis-cli FLUSHDB", "databases"),
    ("redis-cli -n 1 FLUSHALL", "databases"),
    ("redis-cli -h cache.internal -n 1 FLUSHDB", "databases"),
    # ... a scratch container's force-remove and its own environment; unused images
    ("docker rm -f worker-test", "allow"),
    ("docker container rm -f db_tmp", "allow"),
    ("docker system prune --all --force", "allow"),
    ("docker rm -f worker", "containers"),
    ("docker rm -f -v worker-test", "containers"),
    ("docker rm -f cache-dev api-prod", "containers"),
    ("docker exec worker-test env | wc -l", "allow"),
    ("docker exec web-dev printenv", "allow"),
    ("docker exec worker env", "protect-secrets"),
    ("docker exec --env-file .env web-dev env", "protect-secrets"),
    # ... a preview namespace, a manifest of pods only; scratch Mongo databases
    ("kubectl delete ns preview-signup", "allow"),
    ("kubectl delete namespace pr-311", "allow"),
    ("kubectl delete -f k8s/scratch-job.yaml", "allow"),
    ("kubectl delete ns billing", "containers"),
    ("kubectl delete ns feature-x --context prod-eu", "containers"),
    ("kubectl delete ns prod-preview", "containers"),
    ("kubectl delete -f k8s/api.yaml", "containers"),
    ("mongosh shop_dev --eval 'db.dropDatabase()'", "allow"),
    ("mongorestore --drop -d shop_test /tmp/dump/shop", "allow"),
    ("mongosh shop --eval 'db.dropDatabase()'", "databases"),
    ("mongosh mongodb://mongo.internal:27017/shop_test --eval 'db.dropDatabase()'",
     "databases"),
    ("mongosh shop_test --eval 'db.getSiblingDB(\"shop\").dropDatabase()'", "databases"),
    ("mongorestore --drop --nsInclude 'shop.*' /tmp/dump", "databases"),
    # ... a cloud delete on a target named for dev, test or staging
    ("aws s3 rm s3://shop-test-uploads/a.png", "allow"),
    ("aws s3 sync public/ s3://docs-preview-bucket --delete", "allow"),
    ("aws dynamodb delete-item --table-name carts-staging --key '{\"id\":{\"S\":\"1\"}}'",
     "allow"),
    ("aws s3 rm s3://shop-uploads/test.png", "cloud"),
    ("aws s3 rm s3://shop-test-uploads --recursive --profile production", "cloud"),
    ("aws dynamodb delete-table --table-name carts", "cloud"),
    ("aws s3 rm s3://shop-dev-backups/db.sql", "cloud"),
    # ... a tool's download cache in the home folder fills again
    ("rm -rf ~/.cache/uv", "allow"),
    ("rm -rf ~/.gradle/caches", "allow"),
    ("find ~/.npm/_cacache -type f -mtime +7 -delete", "allow"),
    ("rm -rf ~/.cache", "no-destroy"),
    ("rm -rf ~/.gradle", "no-destroy"),
    ("rm -rf ~/.cache/uv/../../.ssh", "no-destroy"),
    # ... xargs fed by git diff --name-only gets the files git names now
    ("git diff --name-only | xargs black -q", "allow"),
    ("git diff --name-only --cached | xargs -r prettier --write", "allow"),
    ("git diff --name-only | xargs rm", "no-destroy"),
    ("git diff --name-only HEAD~2 | xargs prettier --write", "protect-harness"),
    # ... a registry token piped straight into a login that reads it on stdin
    ("aws ecr get-login-password --region us-west-2 | podman login --username AWS "
     "--password-stdin 1.dkr.ecr.us-west-2.amazonaws.com", "allow"),
    ("aws ecr get-login-password --region us-west-2", "protect-secrets"),
    ("aws ecr get-login-password | tee pw.txt | docker login --username AWS "
     "--password-stdin 1.dkr.ecr.us-west-2.amazonaws.com", "protect-secrets"),
    # ... production secrets, nodes and migrations; a registry's token files
    ("aws secretsmanager get-secret-value --secret-id staging/api-key", "allow"),
    ("kubectl get secret api-token -n dev -o json", "allow"),
    ("kubectl drain minikube --ignore-daemonsets", "allow"),
    ("python manage.py migrate billing zero", "allow"),
    ("aws secretsmanager get-secret-value --secret-id production/stripe", "secret-managers"),
    ("kubectl get secret api-token -n live -o go-template='{{.data.key}}'", "containers"),
    ("kubectl drain node-7 --context prod-eu --force", "containers"),
    ("python manage.py migrate billing zero --settings=site.settings.production",
     "databases"),
    ("cat ~/.cargo/config.toml", "allow"),
    ("head -3 ~/.cargo/credentials.toml", "protect-secrets"),
    ("grep token ~/.gem/credentials", "protect-secrets"),
    # 5. a branch that changes .claude/settings.json but keeps notrest's entries
    ("git checkout team-settings", "allow"),
    ("git switch team-settings", "allow"),
    ("git merge team-settings", "allow"),
    ("git rebase team-settings", "allow"),
    ("git checkout drops-hooks", "protect-harness"),
    ("git merge drops-hooks", "protect-harness"),
    ("git rebase drops-hooks", "protect-harness"),
    ("git checkout hooks-off", "protect-harness"),
    ("git merge sets-override", "protect-harness"),
]


def _settings_branch(root, name, change):
    _git(root, "checkout", "-q", "-b", name, "main")
    path = root / ".claude" / "settings.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    _git(root, "commit", "-qam", name)
    _git(root, "checkout", "-q", "main")


def _git(root, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", *args], cwd=root, check=True, env=env,
                          capture_output=True, text=True).stdout


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def midtask(tmp_path_factory):
    temp = tmp_path_factory.mktemp("friction")
    proj = make_project(temp)
    root = proj.root
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "install notrest")
    _write(root, {"src/app.py": "print('app')\n", "src/util.py": "x = 1\n",
                  "tests/test_app.py": "def test():\n    pass\n",
                  "requirements.txt": "requests\n", ".env.example": "API_KEY=\n",
                  "package.json": json.dumps({"name": "webapp", "scripts": {
                      "build": "tsc", "test": "jest"}}),
                  ".gitignore": "dist/\nbuild/\nnode_modules/\n__pycache__/\n.venv/\n.env\n"})
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "project")
    remote = temp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    _git(root, "remote", "add", "origin", str(remote))
    _git(root, "push", "-q", "-u", "origin", "main")
    _git(root, "checkout", "-qb", "wip/experiment")
    _write(root, {"src/exp.py": "e = 1\n"})
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "experiment")
    _git(root, "checkout", "-q", "main")
    _settings_branch(root, "team-settings", lambda d: d.setdefault("permissions", {})
                     .setdefault("allow", []).append("Bash(npm test)"))
    _settings_branch(root, "drops-hooks", lambda d: d["hooks"].pop("PreToolUse"))
    _settings_branch(root, "hooks-off", lambda d: d.update(disableAllHooks=True))
    _settings_branch(root, "sets-override", lambda d: d.setdefault("env", {}).update(
        NOTREST_OVERRIDE="no-destroy"))
    _write(root, {"notes.txt": "stash me\n"})
    _git(root, "add", "notes.txt")
    _git(root, "stash", "-q")
    _write(root, {"src/app.py": "print('changed')\n", "src/new_feature.py": "new = 1\n",
                  "dist/app.js": "x\n", "dist/index.html": "x\n", "build/out.o": "x\n",
                  "node_modules/left-pad/index.js": "x\n",
                  "src/__pycache__/app.cpython-311.pyc": "x\n",
                  ".env": "API_KEY=sk-live-abcdef1234567890\n",
                  "k8s/scratch-job.yaml": "apiVersion: batch/v1\nkind: Job\n"
                                          "metadata:\n  name: seed\n---\n"
                                          "apiVersion: v1\nkind: Pod\nmetadata:\n"
                                          "  name: debug\n",
                  "k8s/api.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"
                                  "---\napiVersion: apps/v1\nkind: Deployment\n"
                                  "metadata:\n  name: api\n",
                  "secrets/.env.production": "API_KEY=sk-live-abcdef1234567890\n",
                  "secrets/prod.env": "API_KEY=sk-live-abcdef1234567890\n",
                  "linked/readme.txt": "x\n"})
    os.symlink(str(root / ".env"), str(root / "linked" / "settings.txt"))
    return proj


def _decide(proj, command):
    payload = proj.payload("PreToolUse", "friction", tool_name="Bash",
                           tool_input={"command": command}, tool_use_id="t1")
    result = proj.hook("PreToolUse", payload)
    assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
    out = result.answer.get("hookSpecificOutput") or {}
    return out.get("permissionDecision") or "allow", out.get("permissionDecisionReason", "")


@pytest.fixture(scope="module")
def verdicts(midtask):
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda case: _decide(midtask, case[0]), CASES))
    return {case[0]: got for case, got in zip(CASES, done)}


@pytest.mark.parametrize("command,expect", CASES, ids=[c[0][:60] for c in CASES])
def test_friction_case(verdicts, command, expect):
    decision, reason = verdicts[command]
    if expect == "allow":
        assert decision not in STRICT, "expected allow, got %s: %s" % (decision, reason)
    else:
        assert decision in STRICT and "[%s]" % expect in reason, (
            "expected %s to block, got %s: %s" % (expect, decision, reason))
