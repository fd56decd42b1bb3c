"""A stand-in for a client process (Claude Code / Codex) in tests: it runs hook
launchers and notrest commands as its own children, one step after another, so
the hooks see it as their client and a test can SIGKILL it mid-session.

    python3 client_sim.py STEPS.json RESULTS.jsonl

A step is {"hook": EVENT, "payload": {...}, "client": "claude"} or
{"cli": [args...]} (the project's notrest) or {"argv": [...]} (any program) or
{"sleep": seconds}. One JSON line per finished step is
appended to RESULTS.jsonl: {"i", "code", "stdout", "stderr"}.
"""
import json
import os
import subprocess
import sys
import time


def main(argv):
    steps = json.load(open(argv[0]))
    results = argv[1]
    project = os.environ["SIM_PROJECT"]
    for i, step in enumerate(steps):
        if "sleep" in step:
            time.sleep(step["sleep"])
            continue
        if "hook" in step:
            launcher = os.path.join(project, ".notrest", "hooks", step["launcher"])
            argv_ = ["sh", launcher, step.get("client", "claude")]
            data = json.dumps(step["payload"]).encode()
        elif "argv" in step:
            argv_, data = step["argv"], b""
        else:
            argv_ = [os.path.join(project, ".notrest", "notrest")] + step["cli"]
            data = b""
        proc = subprocess.run(argv_, input=data, capture_output=True, cwd=project)
        with open(results, "a") as handle:
            handle.write(json.dumps({"i": i, "code": proc.returncode,
                                     "stdout": proc.stdout.decode("utf-8", "replace"),
                                     "stderr": proc.stderr.decode("utf-8", "replace")})
                         + "\n")
    if os.environ.get("SIM_LINGER"):
        time.sleep(float(os.environ["SIM_LINGER"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
