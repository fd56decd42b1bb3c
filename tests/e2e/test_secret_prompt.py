"""Issue #12 in the real clients: a prompt that carries a secret is refused before
any model request, the person is told which format and where (Claude shows the
reason; Codex shows "Blocked" and prints the reason on stderr), and no part of the
secret reaches the estate. A prompt whose code only names where secrets come from
goes through."""

from rig import text_turn
from test_scenarios import bodies, body_text, installed, journal, run, sid_of

TOKEN = "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT"
PROMPT = "secret-1: deploy with this key\nplease: %s and tell me when done" % TOKEN


def estate_bytes(env):
    folders = [env.project / ".notrest", env.home / ".local" / "share" / "notrest"]
    return b"".join(p.read_bytes() for f in folders if f.exists()
                    for p in f.rglob("*") if p.is_file())


def test_a_prompt_with_a_secret_never_reaches_the_model(e2e, client):
    env = installed(e2e, client, {"scripts": {"secret-1": [text_turn("should not run")]}})
    res = run(env, PROMPT)
    seen = [body_text(b) for b in bodies(env)]
    assert not [s for s in seen if TOKEN[6:] in s or "secret-1" in s], \
        "the prompt reached the model"
    where = "GitLab personal access token (`glpat-\u2026`, line 2, characters 9-34)"
    # what notrest answered, as the client recorded it: the deny in the journal, and
    # for Claude the reason it shows (Codex exec prints nothing of a blocked prompt;
    # its TUI says "Blocked", and the hook's stderr carries the reason)
    denies = [r for r in journal(env, sid_of(res)) if r.get("k") == "deny"]
    assert [r.get("law") for r in denies] == ["secret-in-prompt"]
    assert where in denies[0]["reason"] and denies[0]["what"] == "a prompt (withheld)"
    if client == "claude":
        shown = [ev.get("prompt_submit_outcome", {}).get("reason", "") for ev in res.events
                 if isinstance(ev.get("prompt_submit_outcome"), dict)]
        assert shown and where in shown[0], res.stdout[-3000:]
        assert TOKEN[8:18] not in shown[0], "the reason shows the secret"
    assert TOKEN[6:].encode() not in estate_bytes(env)


def test_code_that_names_where_secrets_come_from_goes_through(e2e, client):
    script = {"scripts": {"secret-2": [text_turn("looked at it")]}}
    env = installed(e2e, client, script)
    prompt = ("secret-2: why is this None?\n```python\napi_key = os.environ[\"API_KEY\"]\n"
              "token = tokens[i]\nself.access_token = access_token\n"
              "GITHUB_SHA=3f5a9c2e8b7d6a1f0e9d8c7b6a5f4e3d2c1b0a99\n```")
    res = run(env, prompt).check()
    assert any("secret-2" in body_text(b) for b in bodies(env)), "the prompt was refused"
    prompts = [r for r in journal(env, sid_of(res)) if r.get("k") == "prompt"]
    assert prompts and "os.environ[\"API_KEY\"]" in prompts[0]["text"]
    assert "[REDACTED" not in prompts[0]["text"], "code was redacted"
