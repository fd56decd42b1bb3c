"""Regenerate the files of the repository that notrest.py renders: the plugin's hook
launchers and hooks files (hooks/), the generated modules they import
(notrest_hot.py, notrest_warm.py), the skills (skills/), and the block of
notrest.py that holds the secret pre-filter's heads. The tests check that they are
current.

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


def secret_heads():
    """The generated block of notrest.py that SECRET_HEADS, SECRET_PREFIXES and
    SECRET_ALWAYS stand in (secret_heads_source)."""
    path = REPO / "notrest.py"
    text = path.read_text()
    start = text.index("SECRET_HEADS = ")
    end = text.index("# ---- end of generated ----", start)
    heads, prefixes, always = notrest.secret_heads_source()
    block = "SECRET_HEADS = %s\nSECRET_PREFIXES = %s\nSECRET_ALWAYS = %s\n" % (
        heads, prefixes, always)
    if text[start:end] != block:
        path.write_text(text[:start] + block + text[end:])
        print("wrote notrest.py (the secret heads)")


def modules():
    """The generated modules beside notrest.py that the plugin's launchers import
    (notrest_hot.py, notrest_warm.py: notrest.write_modules)."""
    for path in notrest.write_modules(str(REPO)):
        print("wrote", Path(path).relative_to(REPO))


def main():
    secret_heads()
    modules()
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
