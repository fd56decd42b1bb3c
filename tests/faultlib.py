"""What a client does with a hook's answer, and the faults the fault suite injects.

Both clients go ahead with the call when a hook exits with anything but 0 or 2, or
prints anything but one JSON object (reference/clients.md): so "refused" is exact."""
import contextlib
import json
import os
import shutil
import subprocess
import tempfile

import notrest

GATES = ("PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop")


def answer_of(result):
    """The one JSON object on stdout, or None when the client could not read one."""
    try:
        value = json.loads(result.stdout)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def refused(result, event):
    """Whether the client refuses what the hook judged: the call does not run, the
    prompt is not sent, the agent does not stop."""
    if result.code == 2:
        return True  # both clients: exit 2 is a deny / a block, the reason on stderr
    answer = answer_of(result)
    if result.code != 0 or answer is None:
        return False
    specific = answer.get("hookSpecificOutput") or {}
    if event == "PreToolUse":
        return specific.get("permissionDecision") == "deny"
    if event == "PermissionRequest":
        return (specific.get("decision") or {}).get("behavior") == "deny"
    return answer.get("decision") == "block"


def goes_on(result, event):
    """Whether the client goes on as if nothing were judged (exit 0, one JSON object
    that refuses nothing)."""
    return result.code == 0 and answer_of(result) is not None and not refused(result,
                                                                           event)


def clean(result):
    """No traceback reached the agent or the person."""
    return "Traceback" not in result.stderr and "Traceback" not in result.stdout


def reason(result):
    answer = answer_of(result) or {}
    specific = answer.get("hookSpecificOutput") or {}
    return " ".join(str(x) for x in (
        specific.get("permissionDecisionReason"), (specific.get("decision") or {}).get(
            "message"), answer.get("reason"), answer.get("systemMessage"), result.stderr)
        if x)


def tool_payload(proj, session, command, event="PreToolUse", **extra):
    return proj.payload(event, session, tool_name="Bash",
                        tool_input={"command": command, "description": "x"}, **extra)


def no_python_path(tmp_path):
    """A PATH with what the launchers use (sh, dd, tr) and no python3."""
    folder = tmp_path / "bin-without-python"
    folder.mkdir(exist_ok=True)
    for tool in ("sh", "dd", "tr", "cat"):
        target = shutil.which(tool)
        if target and not (folder / tool).exists():
            os.symlink(target, folder / tool)
    return str(folder)


def can_mount():
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = tempfile.mkdtemp(prefix="nr-mount-probe-")
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", probe], capture_output=True)
        return ok
    finally:
        os.rmdir(probe)


@contextlib.contextmanager
def tmpfs(path, size="8m"):
    """A tmpfs of `size` mounted at path (which must exist), unmounted after."""
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs",
                           str(path)], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path, mode):
    proc = subprocess.run(["mount", "-o", "remount,%s" % mode, str(path)],
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr


def fill_disk(folder):
    """Write a file until the file system is full; returns its path. Unbuffered
    writes: a buffered file flushes what did not fit again when it closes, and
    that raises ENOSPC out of the with."""
    path = os.path.join(folder, "FILL")
    for name, block in (("FILL", 65536), ("FILL2", 512)):  # then the last bytes too:
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT, 0o644)
        try:  # a fresh journal line must not fit anywhere
            while os.write(fd, b"\0" * block):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
    return path


def pad_to_page(path, page=4096):
    """Append one valid journal line that ends the file on a page boundary: on a
    full tmpfs, an append into a page's slack still succeeds, so leave none."""
    size = os.path.getsize(path)
    base = len(notrest.encode_line({"k": "pad", "t": 0, "text": ""}))
    want = (-size) % page
    while want < base:
        want += page
    line = notrest.encode_line({"k": "pad", "t": 0, "text": "x" * (want - base)})
    assert len(line.encode()) == want
    with open(path, "a") as handle:
        handle.write(line)


def records(proj, session):
    return [r for r in proj.journal(session) if r]


def doctor_text(estate):
    findings = notrest.run_doctor(estate)
    return "\n".join(f.line() for f in findings), findings
