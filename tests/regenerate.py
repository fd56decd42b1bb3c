"""Regenerate the files of the repository that notrest.py renders: the plugin's hook
launchers and hooks files (hooks/), and the skills (skills/). The tests check that
they are current.

    python3 tests/regenerate.py
"""
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import notrest  # noqa: E402


def write(path, text, mode=None):
    path = REPO / path
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
        print("wrote", path.relative_to(REPO))
    if mode is not None:
        os.chmod(path, mode)


def main():
    for event, (name, _timeout) in notrest.HOOK_EVENTS.items():
        write("hooks/" + name, notrest.render_launcher(event), 0o755)
    write("hooks/" + notrest.LAUNCH_FILE, notrest.render_launch_tail(""))
    write("hooks/hooks.json", notrest.plugin_hooks("claude"))
    write("hooks/codex-hooks.json", notrest.plugin_hooks("codex"))
    for name in ("notrest", "notrest-laws"):
        write("skills/%s/SKILL.md" % name, notrest.render_skill(name, None, "notrest"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
