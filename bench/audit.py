"""The audit's cost when nothing is new: 1,000 transcripts, against the floor.

    python3 bench/audit.py [--runs N] [--quick] [--keep DIR] [--transcripts N]

Installs notrest (install.sh, HOME in a temp dir) into two git projects with the
same seeded history (driven through notrest.hook_main in-process, as bench/hooks.py
seeds it):

  A  whose clients' folders hold N transcripts of its sessions (default 1,000: half
     Claude Code's ~/.claude/projects/<project>/<session>.jsonl, half Codex's
     $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl with the cwd in the first line),
     in the clients' own line shapes, sized as real ones are (a log-normal spread
     around ~150 KB, 10 KB to 6 MB: tool calls, their outputs, reasoning, token
     counts), plus the transcripts of other projects a real home holds (a Claude
     folder of another project, Codex rollouts of other cwds);
  B  whose clients' folders are empty (CLAUDE_CONFIG_DIR and CODEX_HOME point there).

A is audited once first (the catch-up: timed, not a target), so that nothing is new.
Then, interleaved round by round after a warm-up, each as the child process a person
or a client starts (floor and variants in rotated order):

  floor       RECORDED_PYTHON -I -S -c pass
  start A/B   sh .notrest/hooks/session-start.sh claude   (SessionStart runs the audit)
  audit A/B   .notrest/notrest audit                      (the command)

and, in this process, the audit alone on A (notrest.run_audit as SessionStart calls
it, nothing new), timed over the same rounds.

Figures (ratios of medians from the same run; the machine is noisy and shared):
  audit work / floor      the audit itself when nothing is new        target <= 1.0x
  floor + work / floor    a process doing only that audit             target <= 2.0x
  start A / floor         SessionStart with the 1,000 transcripts     target <= 2.0x
  start A / start B       what the audit adds to SessionStart
  audit A / audit B       what the transcripts add to `notrest audit` (the command's
                          own cost is loading the whole of notrest.py: see audit B)
Stdlib only.
"""
import argparse
import json
import math
import os
import random
import sys
import time
import uuid

sys.dont_write_bytecode = True   # leave no __pycache__ in bench/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import hooks as hookbench  # noqa: E402

TRANSCRIPTS = 1000
OTHER_CLAUDE = 100            # transcripts of another project in the same Claude home
OTHER_CODEX = 200             # rollouts of other cwds in the same Codex home
MEDIAN_BYTES = 150 * 1024
MIN_BYTES, MAX_BYTES = 10 * 1024, 6 * 1024 * 1024
PRIOR_SESSIONS = 3
TARGETS = {"work": 1.0, "process": 2.0, "start": 2.0}
WORDS = ("the parser now handles nested quotes and the failing test was a fixture "
         "that wrote to the wrong folder so I moved it under tmp and reran the suite "
         "which passes except for one flaky network test I left alone").split()


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (
        int(t * 1000) % 1000)


def prose(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def output(rng):
    """A tool's output as long as real ones run: mostly short, now and then a file."""
    size = int(rng.choice((200, 400, 800, 1500, 3000, 8000, 30000)) * rng.random()) + 40
    line = "src/app/module.py:42: def handle(request, *, retries=3): ...\n"
    return (line * (size // len(line) + 1))[:size]


def claude_session(rng, path, root, sid, t, target):
    """A Claude Code transcript of about target bytes: prompts, assistant text,
    tool_use and tool_result pairs, usage, as the client writes them."""
    lines, size, n, parent = [], 0, 0, None
    base = {"isSidechain": False, "userType": "external", "cwd": root, "sessionId": sid,
            "version": "2.1.332", "gitBranch": "main"}
    while size < target:
        n += 1
        t += rng.random() * 20
        if n % 6 == 1:
            kind = dict(base, type="user", message={"role": "user", "content": prose(
                rng, rng.randint(8, 60))})
        else:
            cid = "toolu_%s" % uuid.UUID(int=rng.getrandbits(128)).hex[:24]
            command = rng.choice(("python3 -m pytest -q tests/test_%d.py" % n,
                                  "git diff --stat", "ls src", "rg -n handle src"))
            lines.append(json.dumps(dict(base, parentUuid=parent, type="assistant",
                                         uuid=str(uuid.UUID(int=rng.getrandbits(128))),
                                         timestamp=iso(t), message={
                "id": "msg_%d" % n, "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [
                    {"type": "text", "text": prose(rng, rng.randint(5, 80))},
                    {"type": "tool_use", "id": cid, "name": "Bash", "input": {
                        "command": command, "description": "run it"}}],
                "usage": {"input_tokens": rng.randint(100, 90000),
                          "output_tokens": rng.randint(10, 2000)}})))
            out = output(rng)
            kind = dict(base, type="user", message={"role": "user", "content": [
                {"tool_use_id": cid, "type": "tool_result", "content": out,
                 "is_error": False}]}, toolUseResult={"stdout": out, "stderr": "",
                                                      "interrupted": False})
        parent = str(uuid.UUID(int=rng.getrandbits(128)))
        lines.append(json.dumps(dict(kind, parentUuid=parent, uuid=parent,
                                     timestamp=iso(t))))
        size = sum(len(x) + 1 for x in lines[-2:]) + size
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return size


def codex_session(rng, path, cwd, sid, t, target):
    """A Codex rollout of about target bytes: session_meta (the cwd, the long base
    instructions), turn contexts, messages, reasoning, function calls and their
    outputs, token counts."""
    lines = [json.dumps({"timestamp": iso(t), "type": "session_meta", "payload": {
        "id": sid, "timestamp": iso(t), "cwd": cwd, "originator": "codex_cli_rs",
        "cli_version": "0.171.0", "instructions": None,
        "base_instructions": {"text": prose(rng, 1500)}, "git": {"branch": "main"}}})]
    size, n = len(lines[0]), 0
    while size < target:
        n += 1
        t += rng.random() * 20
        if n % 6 == 1:
            items = [{"type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5",
                                                          "approval_policy": "never"}},
                     {"type": "response_item", "payload": {
                         "type": "message", "role": "user", "content": [
                             {"type": "input_text", "text": prose(rng, 40)}]}}]
        else:
            cid = "call_%s" % uuid.UUID(int=rng.getrandbits(128)).hex[:24]
            out = output(rng)
            items = [{"type": "response_item", "payload": {
                         "type": "reasoning", "summary": [], "encrypted_content":
                         "gAAAA" + uuid.UUID(int=rng.getrandbits(128)).hex * 40}},
                     {"type": "response_item", "payload": {
                         "type": "function_call", "name": "exec_command", "call_id": cid,
                         "arguments": json.dumps({"cmd": "git diff --stat",
                                                  "workdir": cwd})}},
                     {"type": "event_msg", "payload": {
                         "type": "exec_command_end", "call_id": cid, "exit_code": 0,
                         "aggregated_output": out}},
                     {"type": "response_item", "payload": {
                         "type": "function_call_output", "call_id": cid,
                         "output": "Process exited with code 0\nOutput:\n" + out}},
                     {"type": "event_msg", "payload": {"type": "token_count", "info": {
                         "total_token_usage": {"input_tokens": rng.randint(1, 99999)}}}}]
        for item in items:
            item["timestamp"] = iso(t)
            lines.append(json.dumps(item))
            size += len(lines[-1]) + 1
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return size


def claude_folder(home, root):
    return os.path.join(home, "projects", "".join(
        ch if ch.isalnum() and ch.isascii() else "-" for ch in root))


def write_transcripts(clients, root, count, seed=21):
    """count transcripts of root (half each client) and the other projects' ones;
    returns (files of root, bytes of root)."""
    rng = random.Random(seed)
    claude_home, codex_home = os.path.join(clients, "claude"), os.path.join(clients,
                                                                            "codex")
    t0 = time.time()  # after the install: every call in them counts
    total, files = 0, 0
    jobs = [("claude", root)] * (count // 2) + [("codex", root)] * (count - count // 2)
    jobs += [("claude", "/home/dev/other-project")] * OTHER_CLAUDE
    jobs += [("codex", "/home/dev/other-%d" % i) for i in range(OTHER_CODEX)]
    for index, (client, cwd) in enumerate(jobs):
        target = int(min(MAX_BYTES, max(MIN_BYTES, rng.lognormvariate(
            math.log(MEDIAN_BYTES), 1.0))))
        if cwd != root:
            target = MIN_BYTES  # never read: their size does not matter
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        t = t0 + index
        if client == "claude":
            folder = claude_folder(claude_home, cwd)
            os.makedirs(folder, exist_ok=True)
            size = claude_session(rng, os.path.join(folder, sid + ".jsonl"), cwd, sid,
                                  t, target)
        else:
            day = time.gmtime(t - 86400 * (index % 30))
            folder = os.path.join(codex_home, "sessions", time.strftime("%Y/%m/%d", day))
            os.makedirs(folder, exist_ok=True)
            size = codex_session(rng, os.path.join(folder, "rollout-%s-%s.jsonl" % (
                time.strftime("%Y-%m-%dT%H-%M-%S", day), sid)), cwd, sid, t, target)
        if cwd == root:
            total, files = total + size, files + 1
    return files, total


def project(parent, python, source, name, clients):
    """A project with notrest installed and a seeded history; (root, home, python,
    env, SessionStart payload path)."""
    root, home, recorded, _git = benchlib.make_project(parent, python, source, name)
    notrest = benchlib.import_installed(root)
    driver = hookbench.Driver(notrest, root, home, parent)
    driver.env.update(CLAUDE_CONFIG_DIR=os.path.join(clients, "claude"),
                      CODEX_HOME=os.path.join(clients, "codex"))
    for i in range(PRIOR_SESSIONS):
        driver.history(hookbench.session_id("%s-prior-%d" % (name, i)), end=True)
    session = hookbench.session_id("%s-start" % name)
    driver.history(session)
    payload = driver.payload("claude-SessionStart.json", session, source="startup")
    path = benchlib.write_payload(parent, name + "-start.json", payload)
    return root, home, recorded, driver.env, path, notrest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="measured rounds (30)")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured rounds (3)")
    parser.add_argument("--quick", action="store_true", help="8 runs, 1 warm-up")
    parser.add_argument("--transcripts", type=int, default=TRANSCRIPTS)
    parser.add_argument("--keep", metavar="DIR", help="build in DIR and keep it")
    parser.add_argument("--source", metavar="DIR", help="measure the notrest.py and "
                        "install.sh in DIR instead of the checkout's")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.warmup = min(args.runs, 8), 1
    python = benchlib.bench_python()
    return benchlib.with_scratch(args.keep, "notrest-bench-audit-",
                                 lambda parent: run(args, python, parent))


def run(args, python, parent):
    t0 = time.perf_counter()
    source = benchlib.snapshot_source(parent, args.source)
    full, empty = os.path.join(parent, "clients-full"), os.path.join(parent,
                                                                     "clients-empty")
    for folder in (full, empty):
        for client in ("claude", "codex"):
            os.makedirs(os.path.join(folder, client), exist_ok=True)
    root_a, home, recorded, env_a, start_a, notrest = project(parent, python, source,
                                                               "project-a", full)
    root_b, _home, _rec, env_b, start_b, _nr = project(parent, python, source,
                                                       "project-b", empty)
    files, size = write_transcripts(full, root_a, args.transcripts)
    seeded = time.perf_counter() - t0
    runner = benchlib.Runner(parent, recorded)
    cli_a, cli_b = (os.path.join(r, ".notrest", "notrest") for r in (root_a, root_b))
    # the catch-up: the first audit reads every transcript once
    first = runner.run([cli_a, "audit", "--json"], env=env_a, cwd=root_a)
    catchup = json.loads(first.out.decode() or "{}")
    notrest.ack_audit(notrest.Estate(root_a))  # as a person's `notrest ack` does
    hook = os.path.join(root_a, ".notrest", "hooks", "session-start.sh")
    hook_b = os.path.join(root_b, ".notrest", "hooks", "session-start.sh")
    variants = [
        ("floor", lambda: ([recorded, "-I", "-S", "-c", "pass"], None, env_a, root_a)),
        ("start A", lambda: (["sh", hook, "claude"], start_a, env_a, root_a)),
        ("start B", lambda: (["sh", hook_b, "claude"], start_b, env_b, root_b)),
        ("audit A", lambda: ([cli_a, "audit"], None, env_a, root_a)),
        ("audit B", lambda: ([cli_b, "audit"], None, env_b, root_b)),
    ]
    samples = {name: [] for name, _ in variants}
    work = []
    problems = {}
    estate = notrest.Estate(root_a)
    for rnd in range(args.warmup + args.runs):
        order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
        for name, make in order:
            argv, stdin, env, cwd = make()
            sample = runner.run(argv, stdin_path=stdin, env=env, cwd=cwd,
                                keep_output=name != "floor")
            why = problem(name, sample)
            if why and name not in problems:
                problems[name] = why
            if rnd >= args.warmup:
                samples[name].append(sample)
        started = time.perf_counter()
        notrest.run_audit(estate, env_a, budget_s=notrest.AUDIT_START_BUDGET_S,
                          cap=notrest.AUDIT_START_READ_MAX)
        if rnd >= args.warmup:
            work.append((time.perf_counter() - started) * 1000.0)
    runner.close()
    med = {name: benchlib.median([s.ms for s in samples[name]]) for name in samples}
    cpu = {name: benchlib.median([s.cpu_ms for s in samples[name]]) for name in samples}
    rss = {name: max([s.rss_mb for s in samples[name]] or [float("nan")])
           for name in samples}
    work_ms = benchlib.median(work)
    extra = ["floor   = %s -I -S -c pass" % recorded,
             "start   = sh .notrest/hooks/session-start.sh claude (SessionStart, which "
             "runs the audit)", "audit   = .notrest/notrest audit (the command)",
             "A: %d transcripts of the project (%d MB; + %d of other projects), audited "
             "once before (catch-up %.1f s, %d finding(s), acked); B: none" % (
                 files, size // (1024 * 1024), OTHER_CLAUDE + OTHER_CODEX,
                 first.ms / 1000.0, catchup.get("unjudged", -1)),
             "runs    = %d measured rounds after %d warm-up, order rotated each round; "
             "seeded in %.1f s" % (args.runs, args.warmup, seeded)]
    print(benchlib.machine_header("notrest bench/audit.py: the audit when nothing is "
                                  "new", recorded, os.path.join(parent, "src",
                                                                "notrest.py"), extra))
    print()
    headers = ["variant", "median ms", "/floor", "cpu /floor", "peak MB"]
    rows = [[name, benchlib.fmt_ms(med[name]), benchlib.fmt_ratio(benchlib.ratio(
        med[name], med["floor"])), benchlib.fmt_ratio(benchlib.ratio(cpu[name], cpu[
            "floor"])), benchlib.fmt_mb(rss[name])] for name, _ in variants]
    rows.append(["audit work (in-process, A)", benchlib.fmt_ms(work_ms),
                 benchlib.fmt_ratio(benchlib.ratio(work_ms, med["floor"])), "-", "-"])
    print(benchlib.table(headers, rows))
    print()
    figures = [
        ("audit work / floor", benchlib.ratio(work_ms, med["floor"]), TARGETS["work"]),
        ("floor + audit work / floor", benchlib.ratio(med["floor"] + work_ms,
                                                      med["floor"]), TARGETS["process"]),
        ("start A / floor", benchlib.ratio(med["start A"], med["floor"]),
         TARGETS["start"]),
        ("start B / floor (no transcripts)", benchlib.ratio(med["start B"],
                                                            med["floor"]), None),
        ("start A / start B (what the audit adds)", benchlib.ratio(
            med["start A"], med["start B"]), None),
        ("audit A / audit B (the command)", benchlib.ratio(med["audit A"],
                                                           med["audit B"]), None),
        ("audit A / floor (the command, whole module loaded)", benchlib.ratio(
            med["audit A"], med["floor"]), None)]
    missed = []
    frows = []
    for label, value, target in figures:
        verdict = "-"
        if target is not None:
            verdict = "ok" if value <= target else "MISS +%.0f%%" % (
                (value / target - 1) * 100)
            if value > target:
                missed.append("%s %.2fx > %.1fx" % (label, value, target))
        frows.append([label, benchlib.fmt_ratio(value), "<=%.1fx" % target if target
                      else "-", verdict])
    print(benchlib.table(["figure", "ratio", "target", "verdict"], frows))
    print()
    print("medians of %d runs; ratios are median/median from the same interleaved run"
          % args.runs)
    print("missed: " + ("; ".join(missed) if missed else "none"))
    for name, why in sorted(problems.items()):
        print("! %s: %s" % (name, why))
    return 0


def problem(name, sample):
    if name == "floor":
        return None
    if name.startswith("audit"):
        return None if sample.code in (0, 1) else "exit %d: %s" % (
            sample.code, sample.err.decode("utf-8", "replace")[-300:])
    if sample.code != 0:
        return "exit %d: %s" % (sample.code, sample.err.decode("utf-8", "replace")[-300:])
    try:
        answer = json.loads(sample.out.decode("utf-8", "replace") or "null")
    except ValueError:
        return "stdout is not JSON: %r" % sample.out[:200]
    if "additionalContext" not in ((answer or {}).get("hookSpecificOutput") or {}):
        return "SessionStart injected no packet"
    if sample.err.strip():
        return "stderr: %s" % sample.err.decode("utf-8", "replace")[-300:]
    return None


if __name__ == "__main__":
    raise SystemExit(main())
