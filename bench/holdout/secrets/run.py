#!/usr/bin/env python3
"""Drive a notrest checkout's installed hooks with the kept-back secrets corpus.

    python3 run.py CHECKOUT FILE [--ids] [--jobs N] [--json OUT]

CHECKOUT is a notrest source tree; FILE a corpus file (train.json, held.json or
corpus.json).  Each worker thread makes a throw-away git project with its own
HOME (as tests/conftest.py make_project does), installs CHECKOUT into it with
`sh CHECKOUT/install.sh --client both`, and runs the installed sh hooks the way
the clients run them (payload on stdin, one JSON answer on stdout):

  secret cases   SessionStart, then every channel a secret can arrive by:
                 prompt (Claude and Codex UserPromptSubmit), command (Bash
                 PreToolUse), long command, Write content, Edit new_string,
                 output (PostToolUse stdout), error (PostToolUseFailure), long
                 error, Codex output (PostToolUse tool_response string)
  benign cases   the prompt, and the command when the case has one
  code cases     the prompt

After every hook the files that changed under HOME (the project's .notrest/,
notrest's data folder, anything else) are read where they grew, and searched
for the case's secret: its bytes, their JSON-escaped form, and its distinctive
middle part.  At the end every file written since install (a diff of the HOME
tree) is searched again, whole, gzip/zlib content decoded.

Reports the measures of issue #22, overall and per family; --ids prints only
the failing ids.  Standard library only.
"""
import argparse
import concurrent.futures
import gzip
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zlib

SAMPLE_PROMPT_ID = "14062a6f-9a70-4595-9ddf-f1cc6a144167"


def kebab(event):
    out = ""
    for i, ch in enumerate(event):
        if ch.isupper() and i:
            out += "-"
        out += ch.lower()
    return out + ".sh"


def filler(n, seed):
    """Ordinary log lines, n characters or a little more."""
    lines, i = [], 0
    while sum(len(x) + 1 for x in lines) < n:
        lines.append("2026-11-30T10:%02d:%02d.%03dZ INFO worker[%d]: processed batch %d (%d rows) in %d ms"
                     % ((i // 60) % 60, i % 60, (i * 37) % 1000, seed % 7, i, (i * 131 + seed) % 5000,
                        (i * 17 + seed) % 900))
        i += 1
    return "\n".join(lines)


class Project:
    def __init__(self, checkout, base):
        self.checkout = checkout
        self.home = os.path.join(base, "home")
        self.root = os.path.join(self.home, "project")
        os.makedirs(self.root)
        os.makedirs(os.path.join(self.home, "tmp"))
        env = self.env()
        env.update({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
        self.git_env = env
        run = lambda *a: subprocess.run(list(a), cwd=self.root, env=env, check=True,
                                        capture_output=True, timeout=60)
        run("git", "init", "-q", "-b", "main")
        with open(os.path.join(self.root, "README.txt"), "w") as fh:
            fh.write("hello\n")
        run("git", "add", "-A")
        run("git", "commit", "-qm", "first commit")
        proc = subprocess.run(["sh", os.path.join(checkout, "install.sh"), "--client", "both", self.root],
                              capture_output=True, env=env, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError("install failed: %s" % proc.stderr.decode("utf-8", "replace")[-2000:])
        self.hooks = os.path.join(self.root, ".notrest", "hooks")
        self.baseline = self.tree()          # path -> digest, right after install
        self.seen = {p: self.stat(p) for p in self.baseline}
        self.sizes = {p: os.path.getsize(p) for p in self.baseline}

    def env(self, client="claude"):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "LANG": "C.UTF-8",
               "TMPDIR": os.path.join(self.home, "tmp")}
        if client == "claude":
            env["CLAUDE_PROJECT_DIR"] = self.root
        return env

    def files(self):
        for base, dirs, names in os.walk(self.home):
            for name in names:
                path = os.path.join(base, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    yield path

    @staticmethod
    def stat(path):
        try:
            st = os.stat(path)
            return (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            return None

    def tree(self):
        out = {}
        for path in self.files():
            try:
                with open(path, "rb") as fh:
                    out[path] = hashlib.sha1(fh.read()).hexdigest()
            except OSError:
                pass
        return out

    def hook(self, event, payload, client="claude"):
        name = kebab(event)
        script = os.path.join(self.hooks, name)
        data = json.dumps(payload).encode()
        start = time.monotonic()
        try:
            proc = subprocess.run(["sh", script, client], input=data, capture_output=True, timeout=60,
                                  cwd=self.root, env=self.env(client))
            code, out, err = proc.returncode, proc.stdout.decode("utf-8", "replace"), \
                proc.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            code, out, err = -9, "", "timeout"
        return Answer(event, code, out, err, time.monotonic() - start)

    def payload(self, event, session, client, **fields):
        if client == "claude":
            base = {"session_id": session, "cwd": self.root, "hook_event_name": event,
                    "permission_mode": "bypassPermissions",
                    "transcript_path": os.path.join(self.home, ".claude/projects/-project/%s.jsonl" % session)}
            if event not in ("SessionStart", "SessionEnd", "Stop"):
                base["prompt_id"] = SAMPLE_PROMPT_ID
        else:
            base = {"session_id": session, "cwd": self.root, "hook_event_name": event, "model": "gpt-5-codex",
                    "permission_mode": "bypassPermissions", "turn_id": str(uuid.uuid4()),
                    "transcript_path": os.path.join(
                        self.home, ".codex/sessions/2026/11/30/rollout-2026-11-30T10-00-00-%s.jsonl" % session)}
        base.update(fields)
        return base

    def changed_text(self):
        """Bytes added since the last call, per changed file (whole file when it
        was rewritten rather than grown)."""
        out = []
        for path in self.files():
            st = self.stat(path)
            if st is None or self.seen.get(path) == st:
                continue
            old = self.sizes.get(path, 0)
            prev = self.seen.get(path)
            try:
                with open(path, "rb") as fh:
                    grown = prev is not None and st[2] == prev[2] and st[0] >= old
                    if grown:
                        fh.seek(max(0, old - 256))
                    data = fh.read()
            except OSError:
                continue
            self.seen[path] = st
            self.sizes[path] = st[0]
            out.append((path, decoded(data)))
        return out

    def written(self):
        """Every file written since install: (path, decoded content)."""
        out = []
        for path in self.files():
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            if self.baseline.get(path) == hashlib.sha1(data).hexdigest():
                continue
            out.append((path, decoded(data)))
        return out


def decoded(data):
    """The file's bytes, plus gzip/zlib-decoded content when it is compressed."""
    parts = [data]
    if data[:2] == b"\x1f\x8b":
        try:
            parts.append(gzip.decompress(data))
        except Exception:
            pass
    elif data[:1] == b"\x78":
        try:
            parts.append(zlib.decompress(data))
        except Exception:
            pass
    return b"\n".join(parts)


class Answer:
    def __init__(self, event, code, out, err, seconds):
        self.event, self.code, self.out, self.err, self.seconds = event, code, out, err, seconds
        self.json = None
        text = out.strip()
        if text.startswith("{"):
            try:
                self.json = json.loads(text)
            except ValueError:
                pass

    @property
    def refused(self):
        """A prompt refused: exit 2, decision block, or continue false."""
        if self.code == 2:
            return True
        j = self.json or {}
        return j.get("decision") == "block" or j.get("continue") is False

    @property
    def denied(self):
        if self.code == 2:
            return True
        j = self.json or {}
        hso = j.get("hookSpecificOutput") or {}
        return hso.get("permissionDecision") in ("deny", "ask") or j.get("decision") == "block"

    @property
    def broken(self):
        """Not an answer a client takes: a crash, a timeout, a traceback, or stdout
        that is neither empty, JSON, nor plain context text."""
        if self.code not in (0, 2) or "Traceback (most recent call last)" in self.err + self.out:
            return True
        return False


def needles(case):
    if case["kind"] != "secret":
        return []
    out = set()
    for s in (case["secret"], case.get("middle") or ""):
        if not s or len(s) < 6:
            continue
        out.add(s.encode())
        esc = json.dumps(s)[1:-1]
        if esc != s:
            out.add(esc.encode())
    return sorted(out, key=len)


def channels(case, proj, session, csession):
    """(channel, event, client, payload fields) for every way the secret arrives."""
    snip = case["snippet"]
    path = os.path.join(proj.root, case["path"])
    cmd = case.get("command") or "mkdir -p %s && cat >> %s <<'EOF'\n%s\nEOF" % (
        os.path.dirname(case["path"]) or ".", case["path"], snip)
    seed = sum(map(ord, case["id"]))
    long_cmd = "cat > scratch/big-%d.txt <<'EOF'\n%s\n%s\n%s\nEOF" % (seed, filler(12000, seed), snip,
                                                                    filler(12000, seed + 1))
    tid = lambda n: "toolu_%s_%d" % (uuid.uuid4().hex[:20], n)
    return [
        ("prompt", "UserPromptSubmit", "claude", session, {"prompt": case["prompt"]}),
        ("command", "PreToolUse", "claude", session,
         {"tool_name": "Bash", "tool_input": {"command": cmd, "description": "apply the change"},
          "tool_use_id": tid(1)}),
        ("long command", "PreToolUse", "claude", session,
         {"tool_name": "Bash", "tool_input": {"command": long_cmd, "description": "save the log"},
          "tool_use_id": tid(2)}),
        ("write", "PreToolUse", "claude", session,
         {"tool_name": "Write", "tool_input": {"file_path": path, "content": snip + "\n"}, "tool_use_id": tid(3)}),
        ("edit", "PreToolUse", "claude", session,
         {"tool_name": "Edit", "tool_input": {"file_path": path, "old_string": "PLACEHOLDER_VALUE",
                                              "new_string": snip, "replace_all": False}, "tool_use_id": tid(4)}),
        ("output", "PostToolUse", "claude", session,
         {"tool_name": "Bash", "tool_input": {"command": "cat %s" % case["path"], "description": "show it"},
          "tool_response": {"interrupted": False, "isImage": False, "noOutputExpected": False,
                            "stderr": "", "stdout": snip + "\n"}, "tool_use_id": tid(5), "duration_ms": 41}),
        ("error", "PostToolUseFailure", "claude", session,
         {"tool_name": "Bash", "tool_input": {"command": "./scripts/deploy.sh", "description": "deploy"},
          "error": "Exit code 1\n%s\nerror: upstream rejected the request (401)" % snip,
          "is_interrupt": False, "duration_ms": 530, "tool_use_id": tid(6)}),
        ("long error", "PostToolUseFailure", "claude", session,
         {"tool_name": "Bash", "tool_input": {"command": "make integration", "description": "run tests"},
          "error": "Exit code 2\n%s\n%s\nFAILED tests/test_sync.py::test_upload" % (filler(40000, seed + 2), snip),
          "is_interrupt": False, "duration_ms": 93120, "tool_use_id": tid(7)}),
        ("codex prompt", "UserPromptSubmit", "codex", csession, {"prompt": case["prompt"]}),
        ("codex output", "PostToolUse", "codex", csession,
         {"tool_name": "Bash", "tool_input": {"command": "cat %s" % case["path"]},
          "tool_response": snip + "\n", "tool_use_id": "call_%s" % uuid.uuid4().hex[:16]}),
    ]


def found_in(chunks, ndl):
    hits = []
    for path, data in chunks:
        if any(n in data for n in ndl):
            hits.append(path)
    return hits


def run_case(proj, case):
    res = {"id": case["id"], "kind": case["kind"], "family": case["family"], "broken": [], "seconds": 0.0}
    session, csession = str(uuid.uuid4()), str(uuid.uuid4())
    ndl = needles(case)

    def fire(event, client, sess, fields):
        ans = proj.hook(event, proj.payload(event, sess, client, **fields), client)
        res["seconds"] += ans.seconds
        if ans.broken:
            res["broken"].append("%s/%s exit %s: %s" % (client, event, ans.code, (ans.err or ans.out)[-300:]))
        return ans

    fire("SessionStart", "claude", session, {"source": "startup"})
    fire("SessionStart", "codex", csession, {"source": "startup"})
    proj.changed_text()
    if case["kind"] == "secret":
        res["leaks"] = {}
        for chan, event, client, sess, fields in channels(case, proj, session, csession):
            ans = fire(event, client, sess, fields)
            if chan == "prompt":
                res["refused"] = ans.refused
            elif chan == "codex prompt":
                res["codex_refused"] = ans.refused
            elif event == "PreToolUse":
                res.setdefault("denied", {})[chan] = ans.denied
            hits = found_in(proj.changed_text(), ndl)
            if hits:
                res["leaks"][chan] = sorted({os.path.relpath(h, proj.home) for h in hits})
    elif case["kind"] == "benign":
        ans = fire("UserPromptSubmit", "claude", session, {"prompt": case["prompt"]})
        res["refused"] = ans.refused
        text = b"".join(d for _, d in proj.changed_text())
        val, mark = case["value"], case["marker"]
        forms = {val.encode(), json.dumps(val)[1:-1].encode()}
        res["journaled"] = mark.encode() in text
        res["kept"] = any(f in text for f in forms)
        if case.get("command"):
            ans = fire("PreToolUse", "claude", session,
                       {"tool_name": "Bash", "tool_input": {"command": case["command"], "description": "check"},
                        "tool_use_id": "toolu_%s" % uuid.uuid4().hex[:20]})
            res["cmd_denied"] = ans.denied
            text = b"".join(d for _, d in proj.changed_text())
            res["cmd_journaled"] = mark.encode() in text
            res["cmd_kept"] = any(f in text for f in forms)
    else:
        ans = fire("UserPromptSubmit", "claude", session, {"prompt": case["prompt"]})
        res["refused"] = ans.refused
        res["prompt_seconds"] = ans.seconds
        proj.changed_text()
    return res


def worker(checkout, tasks, results, errors, base):
    try:
        proj = Project(checkout, tempfile.mkdtemp(prefix="w", dir=base))
    except Exception as exc:  # a failed install fails every case it would have run
        errors.append(str(exc))
        return
    mine = []
    while True:
        try:
            case = tasks.get_nowait()
        except queue.Empty:
            break
        try:
            r = run_case(proj, case)
        except Exception as exc:
            r = {"id": case["id"], "kind": case["kind"], "family": case["family"],
                 "broken": ["runner: %r" % exc], "refused": False, "leaks": {"runner": ["?"]}}
        results[case["id"]] = r
        mine.append(case)
    # the final scan: every file written since install, whole
    written = proj.written()
    for case in mine:
        if case["kind"] != "secret":
            continue
        hits = found_in(written, needles(case))
        results[case["id"]]["estate"] = sorted({os.path.relpath(h, proj.home) for h in hits})
    results.setdefault("_files", []).extend(os.path.relpath(p, proj.home) for p, _ in written)


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b) if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkout")
    ap.add_argument("file")
    ap.add_argument("--ids", action="store_true", help="print only the failing ids")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--json", help="write per-case results here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary projects")
    args = ap.parse_args()
    checkout = os.path.abspath(args.checkout)
    if not os.path.isfile(os.path.join(checkout, "install.sh")):
        sys.exit("run.py: %s has no install.sh" % checkout)
    with open(args.file) as fh:
        cases = json.load(fh)
    base = tempfile.mkdtemp(prefix="notrest-secrets-")
    tasks = queue.Queue()
    for c in cases:
        tasks.put(c)
    results, errors = {}, []
    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(checkout, tasks, results, errors, base))
               for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    files = results.pop("_files", [])
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    if errors and not results:
        sys.exit("run.py: " + errors[0])
    missing = [c["id"] for c in cases if c["id"] not in results]
    rs = [results[c["id"]] for c in cases if c["id"] in results]
    sec = [r for r in rs if r["kind"] == "secret"]
    ben = [r for r in rs if r["kind"] == "benign"]
    code = [r for r in rs if r["kind"] == "code"]
    for r in sec:
        r["never"] = not r.get("leaks") and not r.get("estate")
    by_id = {c["id"]: c for c in cases}
    bare = [r for r in sec if r["family"] == "aws-bare"]
    bare_alone = [r for r in bare if by_id[r["id"]]["context"] == "bare_alone"]

    fails = []
    for r in sec:
        if not r.get("refused") or not r["never"]:
            fails.append(r["id"])
    for r in ben:
        if r.get("refused") or (r.get("journaled") and not r.get("kept")) or r.get("cmd_denied") \
                or (r.get("cmd_journaled") and not r.get("cmd_kept")):
            fails.append(r["id"])
    for r in code:
        if r.get("refused"):
            fails.append(r["id"])
    for r in rs:
        if r["broken"] and r["id"] not in fails:
            fails.append(r["id"])
    if args.ids:
        for i in fails + missing:
            print(i)
        return

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": rs, "files": files}, fh, indent=1)

    jn = [r for r in ben if r.get("journaled")]
    red = [r for r in jn if not r.get("kept")]
    cjn = [r for r in ben if r.get("cmd_journaled")]
    cred = [r for r in cjn if not r.get("cmd_kept")]
    print("notrest secrets holdout: %s on %s (%d cases, %.0f s, %d workers)" % (
        os.path.basename(args.file), checkout, len(cases), elapsed, args.jobs))
    if errors:
        print("  worker errors: %s" % "; ".join(e[:200] for e in errors))
    if missing:
        print("  cases not run: %d" % len(missing))
    print("")
    print("| measure | result | goal |")
    print("|---|---|---|")
    print("| secret prompts refused (Claude) | %s (%d/%d) | >= 97%% |" % (
        pct(sum(1 for r in sec if r.get("refused")), len(sec)), sum(1 for r in sec if r.get("refused")), len(sec)))
    print("| secret prompts refused (Codex) | %s (%d/%d) | |" % (
        pct(sum(1 for r in sec if r.get("codex_refused")), len(sec)),
        sum(1 for r in sec if r.get("codex_refused")), len(sec)))
    nv = sum(1 for r in sec if r["never"])
    print("| secret never reaches the estate, any channel | %s (%d/%d) | >= 97%% |" % (pct(nv, len(sec)), nv, len(sec)))
    print("| benign prompts refused | %d/%d | 0 |" % (sum(1 for r in ben if r.get("refused")), len(ben)))
    print("| benign strings redacted (prompt journal) | %s (%d/%d journaled) | <= 2%% |" % (
        pct(len(red), len(jn)), len(red), len(jn)))
    if len(jn) < len(ben):
        print("| benign prompts whose text was not journaled at all | %d | |" % (len(ben) - len(jn)))
    if cjn or any("cmd_denied" in r for r in ben):
        print("| benign commands denied | %d/%d | 0 |" % (sum(1 for r in ben if r.get("cmd_denied")),
                                                     sum(1 for r in ben if "cmd_denied" in r)))
        print("| benign strings redacted (command journal) | %s (%d/%d) | |" % (pct(len(cred), len(cjn)),
                                                                             len(cred), len(cjn)))
    print("| 20 KB code prompts refused | %d/%d | 0 |" % (sum(1 for r in code if r.get("refused")), len(code)))
    if code:
        secs = sorted(r.get("prompt_seconds", 0) for r in code)
        print("| 20 KB code prompt hook, median s (loaded machine) | %.2f | |" % secs[len(secs) // 2])
    for r in bare_alone:
        print("| bare AWS secret key alone in a prompt (%s) | %s, %s | refused, absent |" % (
            r["id"], "refused" if r.get("refused") else "NOT refused",
            "absent from the estate" if r["never"] else "IN the estate"))
    if bare:
        print("| bare AWS secret key, all its forms | refused %d/%d, absent %d/%d | |" % (
            sum(1 for r in bare if r.get("refused")), len(bare), sum(1 for r in bare if r["never"]), len(bare)))
    nb = sum(1 for r in rs if r["broken"])
    print("| cases with a hook crash, timeout or traceback | %d | 0 |" % nb)
    print("")
    chans = {}
    for r in sec:
        for ch in (r.get("leaks") or {}):
            chans[ch] = chans.get(ch, 0) + 1
    late = sum(1 for r in sec if r.get("estate") and not r.get("leaks"))
    print("secrets found in the estate, by channel: %s%s" % (
        ", ".join("%s %d" % kv for kv in sorted(chans.items(), key=lambda kv: -kv[1])) or "none",
        "; found only by the final scan %d" % late if late else ""))
    den = {}
    for r in sec:
        for ch, d in (r.get("denied") or {}).items():
            den.setdefault(ch, [0, 0])
            den[ch][0] += bool(d)
            den[ch][1] += 1
    if den:
        print("secret tool calls denied (not a goal, for reference): %s" % ", ".join(
            "%s %d/%d" % (k, v[0], v[1]) for k, v in den.items()))
    print("files written by notrest since install: %d" % len(set(files)))
    print("")
    fam = {}
    for r in rs:
        f = fam.setdefault(r["family"], {"kind": r["kind"], "n": 0, "bad": 0, "refused": 0, "never": 0})
        f["n"] += 1
        f["refused"] += bool(r.get("refused"))
        if r["kind"] == "secret":
            f["never"] += r["never"]
        f["bad"] += r["id"] in fails
    print("per family (failing families first):")
    print("| family | kind | cases | refused | never in estate | failing |")
    print("|---|---|---|---|---|---|")
    for name, f in sorted(fam.items(), key=lambda kv: (-kv[1]["bad"], kv[1]["kind"], kv[0])):
        print("| %s | %s | %d | %d | %s | %d |" % (name, f["kind"], f["n"], f["refused"],
                                                f["never"] if f["kind"] == "secret" else "-", f["bad"]))
    if nb:
        print("")
        print("hook failures (first 10):")
        for r in [r for r in rs if r["broken"]][:10]:
            print("  %s: %s" % (r["id"], r["broken"][0][:300]))


if __name__ == "__main__":
    main()
