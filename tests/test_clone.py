"""The suite's clone of an installed project (conftest.make_project) is the same as
a fresh install: the same files, the same contents but for the two paths, doctor
says the same, a hook answers the same. If install's output changes in a way the
clone does not carry, this fails, and says which file."""
import os

from conftest import clone_install, install_fresh, template
import notrest


def store_name(project):
    return os.path.basename(notrest.project_store(str(project.root),
                                                  {"HOME": str(project.home)}))


def normal(project, text):
    """text with the project's HOME and its store's name as words."""
    return text.replace(str(project.home), "HOME").replace(store_name(project), "STORE")


def tree(project):
    """{path under HOME, as the fresh install there names it: bytes} of a project
    and its HOME (the project's own git folder aside: git's stat cache differs)."""
    store = store_name(project)
    files = {}
    for folder, dirs, names in os.walk(str(project.home)):
        if folder == str(project.root):
            dirs.remove(".git")
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, str(project.home)).replace(store, "STORE").replace(
                str(project.home).lstrip("/"), "HOME")  # a pycache prefix mirrors it
            with open(path, "rb") as handle:
                files[rel] = handle.read().replace(
                    str(project.home).encode(), b"HOME").replace(store.encode(), b"STORE")
    return files


def test_a_clone_is_a_fresh_install_but_for_its_paths(tmp_path):
    fresh, again = install_fresh(tmp_path / "a"), install_fresh(tmp_path / "b")
    clone = clone_install(template(), tmp_path / "c" / "home")
    one, two, cloned = tree(fresh), tree(again), tree(clone)
    assert sorted(cloned) == sorted(one), "the clone's files are not install's"
    # what differs between two fresh installs (a key, a time, bytecode that embeds
    # an inode) may differ in the clone; nothing else may
    volatile = {rel for rel in one if one[rel] != two[rel]}
    differ = sorted(rel for rel in one if one[rel] != cloned[rel] and rel not in volatile)
    assert not differ, "the clone differs from a fresh install in %s" % differ
    said = [normal(p, p.cli("doctor").stdout) for p in (fresh, clone)]
    assert said[1] == said[0]
    payload = {"tool_name": "Bash", "tool_input": {"command": "rm -rf ~"}}
    answers = [p.hook("PreToolUse", p.payload("PreToolUse", "clone-1", **payload))
               for p in (fresh, clone)]
    said = [normal(p, a.stdout) for p, a in zip((fresh, clone), answers)]
    assert said[1] == said[0]
    assert answers[1].answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert not answers[1].stderr, answers[1].stderr


def test_doctor_passes_in_a_clone_once_codex_trusts_the_hooks(tmp_path):
    from conftest import make_project, write_codex_trust
    clone = make_project(tmp_path)
    write_codex_trust(clone)
    result = clone.cli("doctor")
    assert result.code == 0 and result.stdout.endswith("all good\n"), result.stdout
    assert str(template().home) not in result.stdout
