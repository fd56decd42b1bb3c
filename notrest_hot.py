"""notrest: a session harness for AI coding agents (Claude Code and Codex CLI).

One stdlib-only module. The verbs:
  packet    print the start packet: laws, the sessions that matter, threads, live ones, git
  gate      judge a tool call (--command / --path / payload on stdin): exit 0 allow, 2 deny
  bank      write the session record (--note, --next, --open, --close)
  hook EV   the adapter the sh launchers call: read the client's payload, act, answer
Also: install (--trust), uninstall, trust codex, doctor, check, laws, allow, log,
status, ack, rebuild, learn, compile, sync (the estate to and from the git remote, on
refs/notrest/estate), view (one HTML page of the estate), help [VERB].

Estate (.notrest/ at the project root; the journal is the truth, the rest are views):
  laws.json, config.json, permits.json, journal/<session>.jsonl (append-only, locked,
  self-checking lines), sessions/<session>.json, index.json, threads.jsonl,
  acks.json, learned/candidates.json, learned/cursors.json, compiled/<slug>/, sync/
  (what the last `notrest sync` saw). Per user: data_dir()/machine.json, this
  machine's id.

Exit codes: 0 ok/allow, 1 a finding (law broken, doctor FAIL), 2 usage error or a hook's
block, 3 estate unusable (the path and the fix are printed).

Sections (grep '^# ===='). The hot part, all a tool-call hook loads: constants,
records, json, text, redaction, shell parsing, paths and globs, laws, estate storage,
gate, hook adapter. Below the cold line: sessions, packet, bank, session hooks, learn,
compile (the warm part, for session events), then doctor, gate readers and pack
judges (what the gate loads only for a call that runs code, make, package scripts,
archives, git's work-tree rewriters, a pack's programs), install, sync, trust, view,
CLI.
"""
import os
import sys
import time

__version__ = "2.1.0"

# ==== constants =============================================================

SCHEMA_VERSION = 1
ESTATE_DIR = ".notrest"
HOOK_MARK = "/.notrest/hooks/"  # in every hook command install writes, and only there
PACKET_BUDGET_BYTES = 3000
PACKET_LINE_MAX = 240
STDIN_CAP_BYTES = 32 * 1024 * 1024
STDIN_DEADLINE_S = 5.0
JOURNAL_TEXT_MAX = 2000
ERROR_TEXT_MAX = 1200  # of each end of a failed call's output: its cause, its summary
INDEX_MAX_SESSIONS = 500
INDEX_SCAN_SESSIONS = 25
SINCE_SHOWN = 5
ALERTS_SHOWN = 2
ALERTS_LISTED = 20
FINALISE_MAX = 10
LIVE_SHOWN = 5
LIVE_WINDOW_S = 30 * 60
DIED_TAIL_BYTES = 2 * 1024 * 1024
STOP_BLOCK_BOUND = 3
CHECK_TIMEOUT_S = 120
RECORD_LIST_MAX = 12
SESSION_ID_MAX = 80

# Every lifecycle event either client fires (reference/clients.md), with the launcher
# file name and the hook timeout (seconds) we register.
HOOK_EVENTS = {
    "SessionStart": ("session-start.sh", 15),
    "UserPromptSubmit": ("user-prompt-submit.sh", 10),
    "PreToolUse": ("pre-tool-use.sh", 10),
    "PermissionRequest": ("permission-request.sh", 10),
    "PostToolUse": ("post-tool-use.sh", 10),
    "PostToolUseFailure": ("post-tool-use-failure.sh", 10),
    "Notification": ("notification.sh", 10),
    "SubagentStart": ("subagent-start.sh", 10),
    "SubagentStop": ("subagent-stop.sh", 10),
    "Stop": ("stop.sh", 600),
    "PreCompact": ("pre-compact.sh", 30),
    "PostCompact": ("post-compact.sh", 30),
    "SessionEnd": ("session-end.sh", 5),
}
CLIENT_EVENTS = {
    "claude": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest",
               "PostToolUse", "PostToolUseFailure", "Notification", "SubagentStart",
               "SubagentStop", "Stop", "PreCompact", "PostCompact", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
              "SubagentStart", "SubagentStop", "Stop", "PreCompact", "PostCompact",
              "SessionEnd"),
}
GATE_EVENTS = ("PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop")
FILE_WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
FILE_READ_TOOLS = ("Read",)
SHELL_TOOLS = ("Bash", "shell", "exec_command", "local_shell", "container.exec")
SPAWN_TOOLS = ("Agent", "Task", "spawn_agent")
# Tools that name no file: every other tool (MCP's included) is judged by the
# path-like strings in its input.
PATHLESS_TOOLS = frozenset(("WebFetch", "WebSearch", "TodoWrite", "TodoRead", "Skill",
                            "SlashCommand", "ExitPlanMode", "AskUserQuestion", "BashOutput",
                            "KillShell", "KillBash", "ToolSearch", "ListMcpResourcesTool",
                            "update_plan", "view_image", "web_search", "wait_agent",
                            "multi_agent_v1wait_agent"))
# The parts of this file the hook launchers import as generated modules (see
# write_modules): the hot part (every tool call) is the text above the cold line,
# the warm part (session events) the text above the doctor section; what follows
# serves commands people run, and a hook that needs it loads the whole module.
MODULE_PARTS = {"hot": "\n# ==== cold ====", "warm": "\n# ==== doctor ===="}
# what `notrest bank` prints when a sandbox keeps the estate read-only to it: the
# PostToolUse hook, outside the sandbox, banks the note (see bank_deferred)
BANK_DEFERRED_MARK = "notrest-bank-deferred: "


# ==== records ===============================================================

class NotrestError(Exception):
    """Something the user can fix: what went wrong, where, and how to fix it."""

    def __init__(self, what, path="", fix="", code=3):
        super().__init__(what)
        self.what, self.path, self.fix, self.code = what, str(path), fix, code

    def __str__(self):
        where = " (%s)" % self.path if self.path else ""
        how = ": %s" % self.fix if self.fix else ""
        return "notrest: %s%s%s" % (self.what, where, how)


class Event:
    """One hook payload of either client, normalised."""

    __slots__ = ("client", "kind", "session", "cwd", "transcript", "tool", "tool_input",
                 "tool_response", "prompt", "source", "agent", "raw", "ok", "error",
                 "stop_hook_active", "root", "home", "tmp", "env", "branch", "facts")

    def __init__(self, **kw):
        for name in self.__slots__:
            setattr(self, name, kw.get(name))
        if self.tool_input is None:
            self.tool_input = {}
        if self.raw is None:
            self.raw = {}
        if self.facts is None:
            self.facts = {}
        if self.env is None:
            self.env = {}


class Verdict:
    """The answer of the gate: action is allow, warn, ask, deny or block."""

    __slots__ = ("action", "law", "reason", "instead", "message", "receipt")

    def __init__(self, action="allow", law="", reason="", instead="", message="",
                 receipt=None):
        self.action, self.law, self.reason = action, law, reason
        self.instead, self.message, self.receipt = instead, message, receipt

    def text(self):
        if self.action == "allow":
            return self.message or "allowed"
        out = "notrest %s [%s]: %s" % (self.action, self.law, self.reason.rstrip())
        if self.instead:
            out += "%s Instead: %s" % ("" if out.endswith((".", "!", "?")) else ".",
                                        self.instead)
        return out

    def to_dict(self):
        return {"action": self.action, "law": self.law, "reason": self.reason,
                "instead": self.instead, "message": self.message}


ACTION_RANK = {"allow": 0, "warn": 1, "ask": 2, "deny": 3, "block": 3}


# ==== json ==================================================================
# The hook path must not import `json` (it pulls in `re`): the C scanner of `_json`
# parses, a small encoder writes. Both fall back to `json` where `_json` is absent.

def _extension(name):
    """An extension module of the interpreter's own (_json, zlib): built in, or its
    file in the interpreter's lib-dynload folder loaded straight. A hook's first
    import through the path finder lists the library folders, ~0.25 ms of every
    hook; any surprise falls back to a plain import (ImportError when absent)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    if name not in sys.builtin_module_names:
        try:
            boot = sys.modules["_frozen_importlib"]
            ext = sys.modules["_frozen_importlib_external"]
            for folder in sys.path:
                if folder.endswith("/lib-dynload"):
                    path = "%s/%s%s" % (folder, name, ext.EXTENSION_SUFFIXES[0])
                    if os.stat(path).st_mode & 0o170000 == 0o100000:
                        spec = boot.ModuleSpec(name, ext.ExtensionFileLoader(name, path),
                                               origin=path)
                        spec.has_location = True  # __file__, as import sets it
                        return boot._load(spec)
        except Exception:
            pass
    return __import__(name)


class _ScanContext:
    strict = False
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"),
                "-Infinity": float("-inf")}[name]


_SCANNER = []


def json_loads(text):
    """Parse one JSON document; ValueError when it is not exactly one."""
    if not _SCANNER:
        try:
            _json = _extension("_json")
            _SCANNER.append(_json.make_scanner(_ScanContext()))
        except (ImportError, AttributeError, TypeError):
            import json
            _SCANNER.append(None)
            _SCANNER.append(json.loads)
    scan = _SCANNER[0]
    if scan is None:
        return _SCANNER[1](text)
    n, i = len(text), 0
    while i < n and text[i] in " \t\r\n":
        i += 1
    try:
        value, end = scan(text, i)
    except StopIteration as stop:
        raise ValueError("not JSON at char %s" % stop.value)
    except RecursionError:
        raise ValueError("JSON nested too deep")
    except Exception as exc:  # the C scanner reports some errors as SystemError
        raise ValueError("not JSON (%s)" % (
            "%s at char %s" % (exc.msg, exc.pos) if hasattr(exc, "msg") else
            type(exc).__name__))
    while end < n and text[end] in " \t\r\n":
        end += 1
    if end != n:
        raise ValueError("extra data at char %d" % end)
    return value


def json_scan(text, i):
    """(value, end) of the one JSON value that starts at text[i]; ValueError when
    none does (used to salvage what a damaged file still holds)."""
    json_loads("0")  # makes the scanner
    scan = _SCANNER[0]
    try:
        if scan is None:
            import json
            return json.JSONDecoder().raw_decode(text, i)
        return scan(text, i)
    except (StopIteration, RecursionError, ValueError) as exc:
        raise ValueError("no JSON value at char %d (%s)" % (i, type(exc).__name__))
    except Exception as exc:  # the C scanner reports some errors as SystemError
        raise ValueError("not JSON (%s)" % type(exc).__name__)


def _dump_into(obj, out, encode):
    if isinstance(obj, str):
        out.append(encode(obj))
    elif obj is None or obj is True or obj is False:
        out.append("null" if obj is None else ("true" if obj else "false"))
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(float.__repr__(obj) if obj == obj and obj not in (
            float("inf"), float("-inf")) else "null")
    elif isinstance(obj, dict):
        out.append("{")
        first = True
        for key in sorted(obj, key=str):
            if not first:
                out.append(",")
            first = False
            out.append(encode(str(key)))
            out.append(":")
            _dump_into(obj[key], out, encode)
        out.append("}")
    elif isinstance(obj, (list, tuple)):
        out.append("[")
        for i, item in enumerate(obj):
            if i:
                out.append(",")
            _dump_into(item, out, encode)
        out.append("]")
    else:
        out.append(encode(str(obj)))


_ENCODER = []


def json_dumps(obj):
    """Compact, key-sorted, ASCII-only JSON on one line: the C encoder of `_json`
    (no `json` import), else a small one written here."""
    if not _ENCODER:
        try:
            _json = _extension("_json")
            _ENCODER.append(_json.make_encoder(
                None, None, _json.encode_basestring_ascii, None, ":", ",", True, False,
                False))  # NaN raises here; the fallback below writes null
        except (ImportError, AttributeError, TypeError):
            _ENCODER.append(None)
    if _ENCODER[0] is not None:
        try:
            return "".join(_ENCODER[0](obj, 0))
        except (TypeError, ValueError):
            pass
    try:
        from _json import encode_basestring_ascii as encode
    except ImportError:
        from json.encoder import py_encode_basestring_ascii as encode
    out = []
    _dump_into(obj, out, encode)
    return "".join(out)


def json_pretty(obj):
    """Indented, key-sorted JSON with a trailing newline: for files people diff
    (same bytes as json.dumps(indent=2, sort_keys=True, ensure_ascii=False))."""
    try:
        from _json import encode_basestring as encode
    except ImportError:
        from json.encoder import py_encode_basestring as encode
    out = []
    _pretty_into(obj, out, encode, "\n")
    out.append("\n")
    return "".join(out)


def _pretty_into(obj, out, encode, newline):
    inner = newline + "  "
    if isinstance(obj, dict) and obj:
        out.append("{")
        for i, key in enumerate(sorted(obj, key=str)):
            out.append(("," if i else "") + inner + encode(str(key)) + ": ")
            _pretty_into(obj[key], out, encode, inner)
        out.append(newline + "}")
    elif isinstance(obj, (list, tuple)) and obj:
        out.append("[")
        for i, item in enumerate(obj):
            out.append(("," if i else "") + inner)
            _pretty_into(item, out, encode, inner)
        out.append(newline + "]")
    elif isinstance(obj, (dict, list, tuple)):
        out.append("{}" if isinstance(obj, dict) else "[]")
    else:
        _dump_into(obj, out, encode)


# ==== text ==================================================================

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def sanitize_session_id(raw):
    """A session id that is safe as a file name: [A-Za-z0-9._-], capped, else hashed."""
    text = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    if (text and len(text) <= SESSION_ID_MAX and not text.startswith(".")
            and all(c in _ID_CHARS for c in text)):
        return text
    if not text:
        return "unknown"
    import hashlib
    return "h-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def neutralise(text):
    """One printable line: control and bidi characters become visible escapes."""
    text = str(text)
    if text.isprintable():  # no control, format (bidi) or surrogate characters
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if code < 32 or code == 127:
            out.append(" " if ch in "\t\n\r" else "?")
        elif 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069 or code in (
                0x200E, 0x200F, 0x061C, 0xFEFF):
            out.append("?")
        elif 0xD800 <= code <= 0xDFFF or code in (0x85, 0x2028, 0x2029):
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def clip(text, limit):
    """At most `limit` characters, marked with an ellipsis when cut."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    return text[:max(0, limit - 1)] + "\u2026"


def clip_bytes(line, limit):
    """At most `limit` UTF-8 bytes, cut on a character boundary."""
    data = line.encode("utf-8")
    if len(data) <= limit:
        return line
    return data[:max(0, limit - 3)].decode("utf-8", "ignore") + "\u2026"


def clean_text(text):
    """Text with every character a reader cannot see removed: Cc (C0 and C1
    controls), Cf (bidi controls, zero-width characters, soft hyphens, Unicode
    tags), Co (private use) and Cn (unassigned); whitespace becomes a space."""
    text = "" if text is None else str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else " " if ch.isspace() else ""
                   for ch in text)


def one_line(text, limit=PACKET_LINE_MAX):
    return clip(" ".join(clean_text(text).split()), limit)


def clip_ends(text, limit):
    """The head and the tail of a long text (at most `limit` characters each),
    joined by a marked cut: tools print the error at the start, summaries at the
    end."""
    text = "" if text is None else str(text)
    if len(text) <= 2 * limit + 20:
        return text
    return "%s\n[\u2026 %d characters cut \u2026]\n%s" % (
        text[:limit], len(text) - 2 * limit, text[-limit:])


def short_id(session):
    """The part of a session id people tell apart: its tail. Codex thread ids
    are UUIDv7, whose first 8 hex digits are a timestamp shared by every session
    of the same hour or so; Claude's are random throughout."""
    if not session:
        return "?"
    session = str(session)
    return session if len(session) <= 12 else session[-8:]


def iso_time(epoch):
    """UTC timestamp text for an epoch taken from the estate (never the clock)."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(epoch))) + "Z"
    except (TypeError, ValueError, OverflowError):
        return "?"


# ==== redaction =============================================================
# Secrets never reach the estate, and a prompt that carries one is refused. The
# evidence is data, in the tables below:
#   - anchored formats: a fixed prefix (or infix) and a body of known charset and
#     length, with an entropy floor and, where the format has one, a check digit;
#   - keyword rules: the value of an assignment whose name names a service
#     (HEROKU_API_KEY=<uuid>), in the exact shape that service issues;
#   - secret words: a value assigned to, or written right after, a name such as
#     password, secret or token, judged by its entropy; code (os.environ[...],
#     $VAR, ${{ secrets.X }}, a variable), digests, UUIDs and paths are no secrets;
#   - scanners for what is not one token: private-key blocks, PuTTY and JWK keys,
#     URL passwords, Authorization headers, passwords on command lines.
# One pass per text: it is lowered and split into words once, the set of their
# 4-character heads meets the heads of every anchor and keyword, and only the rules
# whose heads occur are tried, each found by str.find and matched by str.lstrip (no
# regular expression, no `re` import, for the built-in rules: importing re costs 23 M
# instructions, half of a tool-call hook, callgrind on 3.11). A finding is sure
# (the secret-in-prompt law refuses it) or not (it is redacted all the same). The
# answer for a text is kept, so the prompt law, the journal and append_record share
# one scan. Every cut of payload text goes through redact_clip: redact, then cut.

# ---- the rule table --------------------------------------------------------
# One row per format: (id, name, anchor, shape, options).
#   anchor  the fixed text the format carries, matched case-sensitively unless the
#           options say `ci`. A row whose anchor is "" is a keyword rule: its value
#           is the value of an assignment whose name holds a keyword (`kw=`). A row
#           whose anchor starts with "@" is read by a scanner of its own (the shape
#           field then carries that scanner's data).
#   shape   the body as segments separated by spaces: CLASS{n}, CLASS{n,m},
#           CLASS{n,} (charset and length, see _SECRET_CLASSES), UUID, or literal
#           text; "^" marks where the anchor sits when the format has text before
#           it; " | " separates alternatives, tried in order.
#   options ent=N    Shannon entropy floor of the body (bits per character)
#           check=X  a check digit the format carries: crc32 (GitHub, npm: the last
#                    6 characters are the CRC32 of the rest in base62), bech32 (age),
#                    jwt (the header is JSON), basic (user:password)
#           kw=a|b+c a keyword that must name the assignment (keyword rules) or stand
#                    on the line before the anchor; | separates alternatives, + joins
#                    words that must all be there
#           prev=xy  one of these characters must stand right before the anchor
#           infix    the anchor may sit inside a longer word (searched for as is)
#           ci       the anchor is matched whatever its case
#           weak     redacted, but never enough to refuse a prompt
# Facts from the public rule lists (gitleaks' config, detect-secrets' plugins) and
# the vendors' own documentation; the rows are our own.
SECRET_RULES = (
    # -- version control, CI and registries
    ("github-pat", "GitHub personal access token", "ghp_", "an{36}", "check=crc32"),
    ("github-oauth", "GitHub OAuth access token", "gho_", "an{36}", "check=crc32"),
    ("github-user-to-server", "GitHub App user-to-server token", "ghu_", "an{36}",
     "check=crc32"),
    ("github-installation", "GitHub App installation token", "ghs_", "an{36}",
     "check=crc32"),
    ("github-refresh", "GitHub refresh token", "ghr_", "an{36,76}", "check=crc32"),
    ("github-fine-grained-pat", "GitHub fine-grained personal access token",
     "github_pat_", "w{82}", "ent=3"),
    # the same prefixes with a body of another length (old or mistyped tokens)
    ("github-token-like", "GitHub token", "ghp_", "an{20,255}", "ent=3"),
    ("github-token-like", "GitHub token", "gho_", "an{20,255}", "ent=3"),
    ("github-token-like", "GitHub token", "ghu_", "an{20,255}", "ent=3"),
    ("github-token-like", "GitHub token", "ghs_", "an{20,255}", "ent=3"),
    ("github-token-like", "GitHub token", "ghr_", "an{20,255}", "ent=3"),
    ("github-token-like", "GitHub token", "github_pat_", "w{22,255}", "ent=3"),
    ("gitlab-pat-routable", "GitLab personal access token", "glpat-",
     "b64u{27,300} . al{9}", ""),
    ("gitlab-pat", "GitLab personal access token", "glpat-", "b64u{20}", ""),
    ("gitlab-token-like", "GitLab token", "glpat-", "b64u{16,300}", "ent=3"),
    ("gitlab-deploy-token", "GitLab deploy token", "gldt-",
     "b64u{27,300} . al{9} | b64u{20}", ""),
    ("gitlab-feed-token", "GitLab feed token", "glft-", "b64u{20,64}", ""),
    ("gitlab-incoming-mail-token", "GitLab incoming mail token", "glimt-", "b64u{25}",
     ""),
    ("gitlab-agent-token", "GitLab Kubernetes agent token", "glagent-",
     "b64u{50,1024}", ""),
    ("gitlab-oauth-secret", "GitLab OAuth application secret", "gloas-", "b64u{64}", ""),
    ("gitlab-trigger-token", "GitLab pipeline trigger token", "glptt-", "b64u{40}", ""),
    ("gitlab-runner-token", "GitLab runner authentication token", "glrt-",
     "b64u{27,300} . al{9} | b64u{20}", ""),
    ("gitlab-runner-registration", "GitLab runner registration token", "GR1348941",
     "b64u{20,50}", ""),
    ("gitlab-job-token", "GitLab CI/CD job token", "glcbt-",
     "an{1,5} _ b64u{20,300}", ""),
    ("gitlab-scim-token", "GitLab SCIM token", "glsoat-", "b64u{20,64}", ""),
    ("gitlab-feature-flag-token", "GitLab feature flag client token", "glffct-",
     "b64u{20,64}", ""),
    ("gitlab-session-cookie", "GitLab session cookie", "_gitlab_session=", "al{32}", ""),
    ("bitbucket-app-password", "Bitbucket app password", "ATBB", "an{28,40}", "ent=3.5"),
    ("atlassian-api-token", "Atlassian API token", "ATATT3", "b64ue{150,220}", ""),
    ("circleci-personal-token", "CircleCI personal API token", "CCIPAT_",
     "wd{40,100}", "ent=3.5"),
    ("circleci-project-token", "CircleCI project API token", "CCIPRJ_", "wd{40,100}",
     "ent=3.5"),
    ("buildkite-token", "Buildkite API access token", "bkua_", "h{40}", ""),
    ("npm-token", "npm access token", "npm_", "an{36}", "check=crc32"),
    ("npm-token-like", "npm token", "npm_", "an{20,64}", "ent=3"),
    ("pypi-token", "PyPI upload token", "pypi-AgEIcHlwaS5vcmc", "b64u{50,1000}", ""),
    ("testpypi-token", "TestPyPI upload token", "pypi-AgENdGVzdC5weXBpLm9yZw",
     "b64u{50,1000}", ""),
    ("rubygems-key", "RubyGems API key", "rubygems_", "h{48}", ""),
    ("nuget-api-key", "NuGet API key", "oy2", "al{43}", "ent=3.5"),
    ("crates-io-token", "crates.io API token", "cio", "an{32}", "ent=4"),
    ("clojars-token", "Clojars deploy token", "CLOJARS_", "al{60}", "ci"),
    ("jfrog-api-key", "JFrog Artifactory API key", "AKCp", "an{69}", "ent=4"),
    ("jfrog-reference-token", "JFrog reference token", "cmVmd", "an{59}", "ent=4"),
    ("octopus-api-key", "Octopus Deploy API key", "API-", "AN{26}", "ent=3"),
    ("sonarqube-user-token", "SonarQube user token", "squ_", "hH{40}", ""),
    ("sonarqube-project-token", "SonarQube project token", "sqp_", "hH{40}", ""),
    ("sonarqube-analysis-token", "SonarQube global analysis token", "sqa_", "hH{40}", ""),
    ("docker-hub-pat", "Docker Hub personal access token", "dckr_pat_", "b64u{27,40}",
     ""),
    ("docker-hub-oat", "Docker Hub organization access token", "dckr_oat_",
     "b64u{27,40}", ""),
    ("harness-pat", "Harness personal access token", "pat.",
     "b64u{22} . an{24} . an{20}", ""),
    ("harness-sat", "Harness service account token", "sat.",
     "b64u{22} . an{24} . an{20}", ""),
    ("postman-api-key", "Postman API key", "PMAK-", "hH{24} - hH{34}", ""),
    ("readme-api-key", "ReadMe API key", "rdme_", "al{70}", ""),
    ("infracost-token", "Infracost API token", "ico-", "an{32}", "ent=3"),
    ("prefect-key", "Prefect API key", "pnu_", "an{36}", ""),
    ("scalingo-token", "Scalingo API token", "tk-us-", "b64u{48}", ""),
    ("pulumi-token", "Pulumi access token", "pul-", "h{40}", ""),
    # -- cloud and infrastructure
    ("aws-access-key-id", "AWS access key ID", "AKIA", "AN{16}", "ent=2.5"),
    ("aws-access-key-id-a3t", "AWS access key ID", "A3T", "AN{17}", "ent=2.5"),
    ("aws-temporary-key-id", "AWS temporary access key ID", "ASIA", "AN{16}", "ent=2.5"),
    ("aws-bearer-key-id", "AWS STS service bearer key ID", "ABIA", "AN{16}", "ent=2.5"),
    ("aws-context-key-id", "AWS context-specific credential key ID", "ACCA", "AN{16}",
     "ent=2.5"),
    ("aws-session-token", "AWS session token", "IQoJb3JpZ2luX2Vj",
     "b64{100,4096} eq{0,2}", ""),
    ("aws-session-token-legacy", "AWS session token", "FwoGZXIvYXdzE",
     "b64{100,4096} eq{0,2}", ""),
    ("aws-bedrock-api-key", "Amazon Bedrock API key", "ABSK", "b64{109,269} eq{0,2}",
     "ent=3"),
    ("aws-bedrock-short-lived-key", "Amazon Bedrock short-lived API key",
     "bedrock-api-key-", "YmVkcm9jay5hbWF6b25hd3MuY29t b64{0,8192} eq{0,2}", ""),
    ("amazon-mws-token", "Amazon MWS auth token", "amzn.mws.", "UUID", ""),
    ("gcp-api-key", "Google API key", "AIza", "b64u{35}", "ent=3"),
    ("gcp-api-key-like", "Google API key", "AIza", "b64u{30,45}", "ent=3"),
    ("gcp-oauth-client-secret", "Google OAuth client secret", "GOCSPX-", "b64u{28}", ""),
    ("gcp-oauth-access-token", "Google OAuth access token", "ya29.", "wd{30,2048}",
     "ent=3.5"),
    ("gcp-oauth-refresh-token", "Google OAuth refresh token", "1//0", "b64u{30,512}",
     "ent=3.5"),
    ("firebase-fcm-key", "Firebase Cloud Messaging server key", ":APA91b",
     "AAAA an{7} ^ b64u{120,160}", "infix"),
    ("azure-ad-client-secret", "Azure AD (Entra ID) client secret", "Q~",
     "az{3} d{1} ^ az{31,34}", "infix ent=3"),
    ("azure-storage-key", "Azure storage account key", "AccountKey=",
     "b64{86} eq{0,2}", "ci"),
    ("azure-shared-access-key", "Azure shared access key", "SharedAccessKey=",
     "b64{42,88} eq{0,2}", "ci"),
    ("azure-sas-signature", "Azure shared access signature", "sig=", "pct{30,120}",
     "ci prev=?& ent=3"),
    ("digitalocean-pat", "DigitalOcean personal access token", "dop_v1_", "h{64}", ""),
    ("digitalocean-oauth-token", "DigitalOcean OAuth token", "doo_v1_", "h{64}", ""),
    ("digitalocean-refresh-token", "DigitalOcean refresh token", "dor_v1_", "h{64}", ""),
    ("vault-service-token", "HashiCorp Vault service token", "hvs.", "b64u{24,300}",
     "ent=3"),
    ("vault-batch-token", "HashiCorp Vault batch token", "hvb.", "b64u{100,400}", ""),
    ("vault-recovery-token", "HashiCorp Vault recovery token", "hvr.", "b64u{24,300}",
     "ent=3"),
    ("vault-legacy-token", "HashiCorp Vault token", "s.", "an{24}", "ent=3.5 mixed"),
    ("terraform-cloud-token", "Terraform Cloud API token", ".atlasv1.",
     "an{14} ^ b64ue{60,70}", "infix"),
    ("planetscale-token", "PlanetScale service token", "pscale_tkn_", "wde{32,64}", ""),
    ("planetscale-oauth-token", "PlanetScale OAuth token", "pscale_oauth_", "wde{32,64}",
     ""),
    ("planetscale-password", "PlanetScale database password", "pscale_pw_", "wde{32,64}",
     ""),
    ("doppler-personal-token", "Doppler personal token", "dp.pt.", "an{40,44}", ""),
    ("doppler-service-token", "Doppler service token", "dp.st.", "wd{40,100}", ""),
    ("doppler-cli-token", "Doppler CLI token", "dp.ct.", "an{40,44}", ""),
    ("doppler-service-account-token", "Doppler service account token", "dp.sa.",
     "an{40,44}", ""),
    ("doppler-scim-token", "Doppler SCIM token", "dp.scim.", "an{40,44}", ""),
    ("doppler-audit-token", "Doppler audit token", "dp.audit.", "an{40,44}", ""),
    ("heroku-api-key-v2", "Heroku API key", "HRKU-AA", "b64u{58}", ""),
    ("flyio-token", "Fly.io access token", "fo1_", "b64u{43}", ""),
    ("flyio-macaroon", "Fly.io macaroon token", "fm2_", "b64{100,4096} eq{0,3}", ""),
    ("flyio-macaroon-r", "Fly.io macaroon token", "fm1r_", "b64{100,4096} eq{0,3}", ""),
    ("flyio-macaroon-a", "Fly.io macaroon token", "fm1a_", "b64{100,4096} eq{0,3}", ""),
    ("render-api-key", "Render API key", "rnd_", "an{24,40}", "ent=3.5"),
    ("supabase-pat", "Supabase personal access token", "sbp_", "h{40}", ""),
    ("supabase-secret-key", "Supabase secret key", "sb_secret_", "b64u{31,64}", ""),
    ("cloudflare-origin-ca-key", "Cloudflare Origin CA key", "v1.0-", "h{24} - h{146}",
     ""),
    ("databricks-token", "Databricks access token", "dapi", "h{32} - d{1} | h{32}", ""),
    ("dynatrace-token", "Dynatrace API token", "dt0c01.", "an{24} . an{64}", ""),
    ("grafana-cloud-token", "Grafana Cloud API token", "glc_", "b64{32,400} eq{0,3}",
     "ent=3"),
    ("grafana-service-account-token", "Grafana service account token", "glsa_",
     "an{32} _ hH{8}", ""),
    ("grafana-api-key", "Grafana API key", "eyJrIjoi", "b64{70,400} eq{0,3}", ""),
    ("new-relic-user-key", "New Relic user API key", "NRAK-", "AN{27}", ""),
    ("new-relic-insert-key", "New Relic insert key", "NRII-", "b64u{32}", ""),
    ("new-relic-browser-key", "New Relic browser API key", "NRJS-", "h{19}", ""),
    ("sentry-org-token", "Sentry organization auth token", "sntrys_",
     "b64{30,400} eq{0,2} _ b64{43}", ""),
    ("sentry-user-token", "Sentry user auth token", "sntryu_", "h{64}", ""),
    ("alibaba-access-key-id", "Alibaba Cloud AccessKey ID", "LTAI", "an{20}", "ent=3"),
    ("tencent-secret-id", "Tencent Cloud SecretId", "AKID", "an{32}", "ent=3.5"),
    ("yandex-api-key", "Yandex Cloud API key", "AQVN", "b64u{35,38}", "ent=3"),
    ("yandex-iam-token", "Yandex Cloud IAM token", "t1.", "b64ue{20,400} . b64ue{86}",
     "kw=yandex"),
    ("1password-secret-key", "1Password secret key", "A3-",
     "AN{6} - AN{11} - AN{5} - AN{5} - AN{5} | AN{6} - AN{6} - AN{5} - AN{5} - AN{5} - "
     "AN{5}", "ent=3"),
    ("1password-service-token", "1Password service account token", "ops_eyJ",
     "b64{250,8192} eq{0,3}", ""),
    ("clickhouse-secret", "ClickHouse Cloud API secret", "4b1d", "an{38}", "ent=3.5"),
    ("adobe-client-secret", "Adobe client secret", "p8e-", "an{32}", "ent=3"),
    ("tailscale-key", "Tailscale key", "tskey-", "b64u{30,120}", "ent=3.5"),
    ("age-secret-key", "age secret key", "AGE-SECRET-KEY-1", "bech{58}", "check=bech32"),
    ("nostr-private-key", "Nostr private key (nsec)", "nsec1", "bechl{58}",
     "check=bech32"),
    ("private-key-base64", "base64-encoded private key", "LS0tLS1CRUdJTi",
     "b64{60,65536} eq{0,2}", "check=b64pem need"),
    # -- AI
    ("anthropic-api-key", "Anthropic API key", "sk-ant-api03-", "b64u{80,120}", ""),
    ("anthropic-admin-key", "Anthropic admin API key", "sk-ant-admin01-", "b64u{80,120}",
     ""),
    ("anthropic-oauth-token", "Anthropic OAuth access token", "sk-ant-oat01-",
     "b64u{80,120}", ""),
    ("anthropic-oauth-refresh", "Anthropic OAuth refresh token", "sk-ant-ort01-",
     "b64u{80,120}", ""),
    ("anthropic-key", "Anthropic API key", "sk-ant-", "b64u{32,200}", "ent=3"),
    ("openai-project-key", "OpenAI project API key", "sk-proj-", "b64u{40,250}",
     "ent=3.5"),
    ("openai-service-account-key", "OpenAI service account key", "sk-svcacct-",
     "b64u{40,250}", "ent=3.5"),
    ("openai-admin-key", "OpenAI admin key", "sk-admin-", "b64u{40,250}", "ent=3.5"),
    ("openai-key-like", "OpenAI key", "sk-proj-", "b64u{16,250}", "ent=3"),
    ("openai-key-like", "OpenAI key", "sk-svcacct-", "b64u{16,250}", "ent=3"),
    ("openai-key-like", "OpenAI key", "sk-admin-", "b64u{16,250}", "ent=3"),
    ("openai-legacy-key", "OpenAI API key", "sk-", "an{20} T3BlbkFJ an{20}", ""),
    ("openrouter-key", "OpenRouter API key", "sk-or-v1-", "h{64}", ""),
    ("sk-api-key", "API secret key (sk-)", "sk-", "b64u{24,250}", "ent=3.5 mixed"),
    ("huggingface-token", "Hugging Face access token", "hf_", "an{34}", "ent=3.5"),
    ("huggingface-org-token", "Hugging Face organization API token", "api_org_",
     "an{34}", "ent=3.5"),
    ("perplexity-key", "Perplexity API key", "pplx-", "an{48}", "ent=3.5"),
    ("xai-key", "xAI API key", "xai-", "an{80}", "ent=3.5"),
    ("groq-key", "Groq API key", "gsk_", "an{52}", "ent=3.5"),
    ("replicate-token", "Replicate API token", "r8_", "an{37}", "ent=3.5"),
    ("langsmith-token", "LangSmith personal access token", "lsv2_pt_", "h{32} _ h{10}",
     ""),
    ("langsmith-key", "LangSmith service key", "lsv2_sk_", "h{32} _ h{10}", ""),
    ("pinecone-key", "Pinecone API key", "pcsk_", "b64u{40,120}", "ent=3.5"),
    ("nvidia-key", "NVIDIA API key", "nvapi-", "b64u{64}", "ent=3.5"),
    ("elevenlabs-key", "ElevenLabs API key", "sk_", "h{48}", ""),
    # -- SaaS, messaging, monitoring
    ("slack-bot-token", "Slack bot token", "xoxb-", "b64u{20,250}", "ent=2"),
    ("slack-user-token", "Slack user token", "xoxp-", "b64u{20,250}", "ent=2"),
    ("slack-workspace-token", "Slack workspace access token", "xoxa-", "b64u{9,250}",
     "ent=2"),
    ("slack-refresh-token", "Slack refresh token", "xoxr-", "b64u{9,250}", "ent=2"),
    ("slack-session-token", "Slack session token", "xoxs-", "b64u{14,250}", "ent=2"),
    ("slack-legacy-token", "Slack legacy token", "xoxo-", "b64u{14,250}", "ent=2"),
    ("slack-client-token", "Slack client token", "xoxc-", "b64u{20,250}", "ent=3"),
    ("slack-config-token", "Slack configuration access token", "xoxe.xox",
     "a{1} - b64u{100,250}", ""),
    ("slack-user-token", "Slack user token", "xoxe-",
     "d{10,13} - d{10,13} - d{10,13} - b64u{28,34}", "ent=2"),
    ("slack-config-refresh", "Slack configuration refresh token", "xoxe-",
     "b64u{100,250}", ""),
    ("slack-app-token", "Slack app-level token", "xapp-", "b64u{20,250}", "ent=3"),
    ("slack-webhook", "Slack incoming webhook URL", "hooks.slack.com/services/",
     "b64{40,60}", "infix"),
    ("slack-workflow-webhook", "Slack workflow webhook URL", "hooks.slack.com/workflows/",
     "b64{40,80}", "infix"),
    ("slack-trigger-webhook", "Slack trigger webhook URL", "hooks.slack.com/triggers/",
     "b64{40,80}", "infix"),
    ("discord-webhook", "Discord webhook URL", "discord.com/api/webhooks/",
     "d{17,20} / b64u{60,68}", "infix"),
    ("discordapp-webhook", "Discord webhook URL", "discordapp.com/api/webhooks/",
     "d{17,20} / b64u{60,68}", "infix"),
    ("teams-webhook", "Microsoft Teams webhook URL", ".webhook.office.com/webhookb2/",
     "UUIDA @ UUIDA /IncomingWebhook/ an{32} / UUIDA", "infix"),
    ("telegram-bot-token", "Telegram bot token", ":AA", "d{8,10} ^ b64u{33}",
     "infix ent=3"),
    ("twilio-api-key", "Twilio API key", "SK", "hH{32}", "ent=3"),
    ("sourcegraph-token", "Sourcegraph access token", "sgp_",
     "hH{16} _ hH{40} | local_ hH{40} | hH{40}", ""),
    ("openshift-user-token", "OpenShift user token", "sha256~", "b64u{43}", "ent=3"),
    ("facebook-app-token", "Facebook app access token", "|", "d{15,16} ^ b64u{27,40}",
     "infix kw=facebook ent=3"),
    ("mailgun-key-like", "Mailgun API key", "key-", "h{32}", "kw=mailgun"),
    ("mailgun-key-like", "Mailgun API key", "key-", "h{32}", "weak ent=3"),
    ("sendgrid-api-key", "SendGrid API key", "SG.", "b64u{22} . b64u{43}", ""),
    ("mailchimp-api-key", "Mailchimp API key", "-us", "h{32} ^ d{1,2}", "infix"),
    ("brevo-api-key", "Brevo (Sendinblue) API key", "xkeysib-", "h{64} - an{16}", ""),
    ("brevo-smtp-key", "Brevo (Sendinblue) SMTP key", "xsmtpsib-", "h{64} - an{16}", ""),
    ("shopify-access-token", "Shopify access token", "shpat_", "hH{32}", ""),
    ("shopify-custom-app-token", "Shopify custom app access token", "shpca_", "hH{32}",
     ""),
    ("shopify-private-app-token", "Shopify private app access token", "shppa_", "hH{32}",
     ""),
    ("shopify-shared-secret", "Shopify shared secret", "shpss_", "hH{32}", ""),
    ("notion-token", "Notion integration token", "ntn_", "d{11} an{35}", ""),
    ("notion-token-legacy", "Notion integration token", "secret_", "an{43}", "ent=4"),
    ("linear-api-key", "Linear API key", "lin_api_", "an{40}", ""),
    ("airtable-pat", "Airtable personal access token", "pat", "an{14} . h{64}", ""),
    ("hubspot-private-app-token", "HubSpot private app token", "pat-na1-", "UUID", ""),
    ("hubspot-private-app-token-eu", "HubSpot private app token", "pat-eu1-", "UUID", ""),
    ("figma-pat", "Figma personal access token", "figd_", "b64u{40,100}", "ent=3.5"),
    ("contentful-pat", "Contentful personal access token", "CFPAT-", "b64u{43}", ""),
    ("typeform-token", "Typeform personal access token", "tfp_", "wde{59}", ""),
    ("frameio-token", "Frame.io API token", "fio-u-", "b64ue{64}", ""),
    ("mapbox-secret-token", "Mapbox secret token", "sk.eyJ",
     "b64ue{50,300} . b64u{20,30}", ""),
    ("dropbox-short-lived-token", "Dropbox short-lived access token", "sl.",
     "wd{130,1400}", "ent=4"),
    ("intra42-secret", "42 Intra client secret", "s-s4t2ud-", "h{64}", ""),
    ("intra42-secret-af", "42 Intra client secret", "s-s4t2af-", "h{64}", ""),
    ("maxmind-license-key", "MaxMind license key", "_mmk", "an{6} _ an{29} ^", "infix"),
    ("settlemint-pat", "SettleMint personal access token", "sm_pat_", "an{16}", "ent=3"),
    ("settlemint-aat", "SettleMint application access token", "sm_aat_", "an{16}",
     "ent=3"),
    ("settlemint-sat", "SettleMint service access token", "sm_sat_", "an{16}", "ent=3"),
    ("facebook-access-token", "Facebook access token", "EAAC", "an{100,1000}", "ent=4"),
    ("facebook-graph-token", "Facebook access token", "EAAG", "an{100,1000}", "ent=4"),
    ("facebook-page-token", "Facebook page access token", "EAAM", "an{100,1000}",
     "ent=4"),
    ("instagram-token", "Instagram access token", "IGQV", "b64u{100,1000}", "ent=4"),
    ("twitter-bearer-token", "Twitter (X) bearer token", "AAAAAAAAAAAAAAAAAAAAA",
     "an%{80,120}", "ent=4"),
    # -- payments
    ("stripe-secret-key", "Stripe secret key", "sk_live_", "an{10,247}", "ent=3"),
    ("stripe-test-secret-key", "Stripe test secret key", "sk_test_", "an{10,247}",
     "ent=3"),
    ("stripe-restricted-key", "Stripe restricted key", "rk_live_", "an{10,247}", "ent=3"),
    ("stripe-test-restricted-key", "Stripe test restricted key", "rk_test_",
     "an{12,247}", "ent=3"),
    ("stripe-prod-secret-key", "Stripe secret key", "sk_prod_", "an{10,247}", "ent=3"),
    ("stripe-prod-restricted-key", "Stripe restricted key", "rk_prod_", "an{10,247}",
     "ent=3"),
    ("stripe-webhook-secret", "Stripe webhook signing secret", "whsec_", "b64{32,64}",
     "ent=3.5"),
    ("square-access-token", "Square access token", "sq0atp-", "b64u{22,60}", ""),
    ("square-access-token-v2", "Square access token", "EAAA", "b64u{60}", "ent=4"),
    ("square-oauth-secret", "Square OAuth secret", "sq0csp-", "b64u{43}", ""),
    ("braintree-access-token", "Braintree access token", "access_token$production$",
     "an{16} $ h{32}", ""),
    ("braintree-sandbox-token", "Braintree sandbox access token",
     "access_token$sandbox$", "an{16} $ h{32}", ""),
    ("flutterwave-test-secret", "Flutterwave test secret key", "FLWSECK_TEST-",
     "hH{32} -X | hH{12}", ""),
    ("flutterwave-secret", "Flutterwave secret key", "FLWSECK-", "hH{32} -X", ""),
    ("flutterwave-encryption-key", "Flutterwave encryption key", "FLWSECK_TEST",
     "hH{12}", ""),
    ("flutterwave-public-key", "Flutterwave public key", "FLWPUBK_TEST-", "hH{32} -X",
     ""),
    ("flutterwave-public-key", "Flutterwave public key", "FLWPUBK-", "hH{32} -X", ""),
    ("shippo-token", "Shippo live API token", "shippo_live_", "hH{40}", ""),
    ("shippo-test-token", "Shippo test API token", "shippo_test_", "hH{40}", ""),
    ("easypost-key", "EasyPost API key", "EZAK", "an{54}", "ent=3"),
    ("easypost-test-key", "EasyPost test API key", "EZTK", "an{54}", "ent=3"),
    ("duffel-token", "Duffel live API token", "duffel_live_", "b64ue{43}", ""),
    ("duffel-test-token", "Duffel test API token", "duffel_test_", "b64ue{43}", ""),
    # -- generic formats
    ("jwt-base64", "base64-encoded JSON Web Token", "ZXlK", "b64{40,8192} eq{0,2}",
     "check=b64jwt need"),
    ("jwt", "JSON Web Token", "eyJ",
     "b64u{10,4096} . eyJ b64u{5,8192} . b64u{0,4096}", "check=jwt"),
)

# Keyword rules: the value of NAME=VALUE (or "name": "value", name: value, ...) when
# NAME holds the keyword and VALUE has exactly the shape that service issues.
SECRET_KEYWORD_RULES = (
    ("aws-secret-access-key", "AWS secret access key", "",
     "b64{40}", "kw=aws+secret|secret_access|secretaccess"),
    ("azure-devops-pat", "Azure DevOps personal access token", "", "b32l{52} | an{84}",
     "kw=devops|azdo|ado_pat|vsts"),
    ("heroku-api-key", "Heroku API key", "", "UUID", "kw=heroku"),
    ("datadog-api-key", "Datadog API key", "", "h{32}", "kw=datadog|dd_api"),
    ("datadog-app-key", "Datadog application key", "", "al{40}", "kw=datadog|dd_app"),
    ("cloudflare-api-token", "Cloudflare API token", "", "b64u{40}",
     "kw=cloudflare|cf_api"),
    ("cloudflare-global-key", "Cloudflare global API key", "", "h{37}", "kw=cloudflare"),
    ("algolia-admin-key", "Algolia admin API key", "", "al{32}", "kw=algolia"),
    ("asana-secret", "Asana client secret", "", "al{32}", "kw=asana"),
    ("atlassian-token", "Atlassian (Jira, Confluence) API token", "", "an{24}",
     "kw=atlassian|jira|confluence"),
    ("bitbucket-secret", "Bitbucket client secret", "", "b64ue{64}", "kw=bitbucket"),
    ("bittrex-secret", "Bittrex API secret", "", "al{32}", "kw=bittrex"),
    ("codecov-token", "Codecov access token", "", "al{32} | UUID", "kw=codecov"),
    ("cohere-key", "Cohere API key", "", "an{40}", "kw=cohere|co_api"),
    ("coinbase-token", "Coinbase access token", "", "b64u{64}", "kw=coinbase"),
    ("confluent-secret", "Confluent secret key", "", "an{64}", "kw=confluent"),
    ("contentful-token", "Contentful delivery API token", "", "b64ue{43}",
     "kw=contentful"),
    ("discord-bot-token", "Discord bot token", "",
     "b64u{23,28} . b64u{6} . b64u{27,40}", "kw=discord"),
    ("discord-secret", "Discord client secret", "", "b64ue{32}", "kw=discord"),
    ("discord-api-token", "Discord API token", "", "h{64}", "kw=discord"),
    ("discord-client-id", "Discord client ID", "", "d{18}", "kw=discord tail=id"),
    ("droneci-token", "Drone CI access token", "", "al{32}", "kw=drone"),
    ("dropbox-long-lived-token", "Dropbox long-lived access token", "",
     "al{11} AAAAAAAAAA b64ue{43}", "kw=dropbox"),
    ("etsy-token", "Etsy access token", "", "al{24}", "kw=etsy"),
    ("facebook-app-secret", "Facebook app secret", "", "h{32}", "kw=facebook|fb_app"),
    ("fastly-token", "Fastly API token", "", "b64ue{32}", "kw=fastly"),
    ("finicity-secret", "Finicity client secret", "", "al{20}", "kw=finicity"),
    ("finnhub-token", "Finnhub access token", "", "al{20}", "kw=finnhub"),
    ("flickr-token", "Flickr access token", "", "al{32}", "kw=flickr"),
    ("freshbooks-token", "FreshBooks access token", "", "al{64}", "kw=freshbooks"),
    ("gitter-token", "Gitter access token", "", "b64u{40}", "kw=gitter"),
    ("gocardless-token", "GoCardless API token", "", "live_ b64ue{40}", "kw=gocardless"),
    ("hubspot-api-key", "HubSpot API key", "", "UUID", "kw=hubspot"),
    ("intercom-token", "Intercom access token", "", "b64ue{60}", "kw=intercom"),
    ("jfrog-identity-token", "JFrog identity token", "", "al{64} | al{73}",
     "kw=jfrog|artifactory|bintray|xray"),
    ("kraken-token", "Kraken access token", "", "pct{80,90}", "kw=kraken"),
    ("kucoin-secret", "KuCoin secret key", "", "UUID | h{24}", "kw=kucoin"),
    ("launchdarkly-token", "LaunchDarkly access token", "", "b64ue{40}",
     "kw=launchdarkly"),
    ("linear-client-secret", "Linear client secret", "", "h{32}", "kw=linear"),
    ("linkedin-secret", "LinkedIn client secret", "", "an{16}", "kw=linkedin"),
    ("lob-api-key", "Lob API key", "", "live_ h{35} | test_ h{35}",
     "kw=lob_|lob-|lobapi"),
    ("looker-secret", "Looker client secret", "", "an{24}", "kw=looker"),
    ("mailgun-api-key", "Mailgun API key", "",
     "key- h{32} | pubkey- h{32} | h{32} - h{8} - h{8}", "kw=mailgun"),
    ("mattermost-token", "Mattermost access token", "", "al{26}", "kw=mattermost"),
    ("messagebird-key", "MessageBird API key", "", "an{25}",
     "kw=messagebird|message_bird"),
    ("netlify-token", "Netlify access token", "", "b64ue{40,46}", "kw=netlify"),
    ("newrelic-key", "New Relic API key", "", "al{64} | AN{40} | an{40}",
     "kw=newrelic|new_relic|nr_"),
    ("nytimes-token", "New York Times API key", "", "b64ue{32}", "kw=nytimes"),
    ("okta-token", "Okta API token", "", "00 b64ue{40}", "kw=okta"),
    ("plaid-secret", "Plaid secret", "", "al{30}", "kw=plaid"),
    ("plaid-access-token", "Plaid access token", "",
     "access-sandbox- UUID | access-development- UUID | access-production- UUID",
     "kw=plaid"),
    ("rapidapi-key", "RapidAPI key", "", "b64u{50}", "kw=rapidapi"),
    ("sendbird-token", "Sendbird API token", "", "h{40}", "kw=sendbird"),
    ("sentry-token", "Sentry auth token", "", "h{64}", "kw=sentry"),
    ("snyk-token", "Snyk API token", "", "UUID", "kw=snyk"),
    ("sonar-token", "SonarQube token", "",
     "squ_ b64ue{40} | sqp_ b64ue{40} | sqa_ b64ue{40} | b64ue{40}", "kw=sonar tail=login"),
    ("squarespace-token", "Squarespace access token", "", "UUID", "kw=squarespace"),
    ("sumologic-token", "Sumo Logic access key", "", "an{64}", "kw=sumo"),
    ("travis-token", "Travis CI access token", "", "an{22}", "kw=travis"),
    ("trello-token", "Trello API token", "", "al{32} | h{64}", "kw=trello"),
    ("twilio-auth-token", "Twilio auth token", "", "h{32}", "kw=twilio"),
    ("twitch-token", "Twitch API token", "", "al{30}", "kw=twitch"),
    ("twitter-secret", "Twitter (X) API secret", "", "an{45} | an{50} | an{25}",
     "kw=twitter"),
    ("twitter-access-token", "Twitter (X) access token", "", "d{15,25} - an{20,40}",
     "kw=twitter"),
    ("yandex-aws-key", "Yandex Cloud access key", "", "YC b64u{38}", "kw=yandex"),
    ("zendesk-token", "Zendesk secret key", "", "an{40}", "kw=zendesk"),
    ("mistral-key", "Mistral AI API key", "", "an{32}", "kw=mistral"),
    ("vercel-token", "Vercel access token", "", "an{24}", "kw=vercel"),
    ("linode-token", "Linode personal access token", "", "h{64}", "kw=linode"),
    ("vultr-key", "Vultr API key", "", "AN{36}", "kw=vultr"),
    ("hetzner-token", "Hetzner Cloud API token", "", "an{64}", "kw=hetzner|hcloud"),
    ("ibm-cloud-key", "IBM Cloud API key", "", "b64u{44}", "kw=ibm|bluemix"),
    ("pagerduty-key", "PagerDuty API key", "", "b64ue{20}", "kw=pagerduty"),
    ("postmark-token", "Postmark server token", "", "UUID", "kw=postmark"),
    ("mailjet-key", "Mailjet API key", "", "h{32}", "kw=mailjet"),
    ("vonage-secret", "Vonage (Nexmo) API secret", "", "an{16}", "kw=vonage|nexmo"),
    ("segment-key", "Segment write key", "", "an{32}", "kw=segment"),
    ("mixpanel-secret", "Mixpanel API secret", "", "h{32}", "kw=mixpanel"),
    ("wandb-key", "Weights & Biases API key", "", "h{40}", "kw=wandb"),
    ("deepgram-key", "Deepgram API key", "", "h{40}", "kw=deepgram"),
    ("assemblyai-key", "AssemblyAI API key", "", "h{32}", "kw=assemblyai"),
    ("openweather-key", "OpenWeather API key", "", "h{32}", "kw=openweather|owm_"),
    ("zoom-secret", "Zoom client secret", "", "an{32}", "kw=zoom"),
    ("auth0-secret", "Auth0 client secret", "", "b64u{64}", "kw=auth0"),
    # the client ids and keyed ids gitleaks reports: the vendor's name and the exact
    # shape it issues (under a name ending in id too)
    ("adobe-client-id", "Adobe client ID", "", "hH{32}", "kw=adobe tail=id"),
    ("asana-client-id", "Asana client ID", "", "d{16}", "kw=asana tail=id"),
    ("dropbox-api-token", "Dropbox API token", "", "al{15}", "kw=dropbox"),
    ("linkedin-client-id", "LinkedIn client ID", "", "al{14}",
     "kw=linkedin|linked_in|linked-in tail=id"),
    ("looker-client-id", "Looker client ID", "", "al{20}", "kw=looker tail=id"),
    ("messagebird-client-id", "MessageBird client ID", "", "UUID",
     "kw=messagebird|message_bird|message-bird tail=id"),
    ("meraki-api-key", "Cisco Meraki API key", "", "hH{40}", "kw=meraki"),
    ("sidekiq-secret", "Sidekiq Enterprise credentials", "", "h{8} : h{8}",
     "kw=contribsys ent=2"),
    ("sumologic-access-id", "Sumo Logic access ID", "", "su an{12}", "kw=sumo tail=id"),
    ("plaid-client-id", "Plaid client ID", "", "al{24}", "kw=plaid tail=id"),
    ("confluent-access-token", "Confluent access token", "", "al{16}", "kw=confluent"),
    ("airtable-api-key", "Airtable API key", "", "al{17}", "kw=airtable"),
    ("privateai-token", "Private AI API token", "", "al{32}",
     "kw=privateai|private_ai|private-ai"),
    ("sourcegraph-token", "Sourcegraph access token", "", "hH{40}", "kw=sourcegraph"),
    ("sendbird-access-id", "Sendbird application ID", "", "UUID", "kw=sendbird tail=id"),
    ("kubernetes-client-key", "Kubernetes client key", "", "b64{60,} eq{0,2}",
     "kw=client-key-data|client_key_data"),
    ("wireguard-private-key", "WireGuard private key", "", "b64{43} =",
     "kw=privatekey|presharedkey"),
)

# Scanners of their own: the shape field carries the scanner's data.
SECRET_SCANNER_RULES = (
    ("private-key-rsa", "RSA private key", "@pem", "RSA PRIVATE KEY", ""),
    ("private-key-openssh", "OpenSSH private key", "@pem", "OPENSSH PRIVATE KEY", ""),
    ("private-key-ec", "EC private key", "@pem", "EC PRIVATE KEY", ""),
    ("private-key-dsa", "DSA private key", "@pem", "DSA PRIVATE KEY", ""),
    ("private-key-pkcs8", "PKCS#8 private key", "@pem", "PRIVATE KEY", ""),
    ("private-key-encrypted", "encrypted PKCS#8 private key", "@pem",
     "ENCRYPTED PRIVATE KEY", ""),
    ("private-key-pgp", "PGP private key block", "@pem", "PGP PRIVATE KEY BLOCK", ""),
    ("private-key-ssh2", "SSH2 encrypted private key", "@pem",
     "SSH2 ENCRYPTED PRIVATE KEY", ""),
    ("private-key", "private key", "@pem", "", ""),
    ("putty-private-key", "PuTTY private key", "@putty", "", ""),
    ("jwk-private-key", "JSON Web Key private part", "@jwk", "d p q dp dq qi k", ""),
    ("url-password", "password in a URL", "@url", "", ""),
    ("bearer-token", "bearer token", "@bearer", "", ""),
    ("basic-auth", "HTTP Basic credentials", "@basic", "", "check=basic"),
    ("password", "password", "@words", "password", ""),
    ("secret", "secret value", "@words", "secret", ""),
    ("aws-secret-access-key-bare", "AWS secret access key", "@bare", "", ""),
    ("bitcoin-wif-key", "Bitcoin private key (WIF)", "@bare", "wif", ""),
    ("session-cookie", "session cookie", "@cookie", "", ""),
    ("pgpass-password", "password in a .pgpass line", "@pgpass", "", ""),
    ("http-header-secret", "secret HTTP header", "@words", "header", ""),
    ("env-value", "high-entropy environment value", "@env", "", "weak"),
    ("private-key-body", "private key (base64 body without armour lines)", "@keybody",
     "", ""),
    # command lines that carry a password: programs | a word that must follow | flags
    # (-p+ the value is glued to the flag, -p the next word or glued, --x= after "=",
    # a trailing : or % keeps only what follows that character, @pass: the part after
    # "pass:")
    ("cli-mysql-password", "MySQL password on the command line", "@cli",
     "mysql mysqldump mysqladmin mysqlimport mysqlshow mysqlcheck mariadb mariadb-dump "
     "| | -p+ --password=", ""),
    ("cli-sshpass-password", "sshpass password", "@cli", "sshpass | | -p", ""),
    ("cli-registry-login-password", "registry login password on the command line", "@cli",
     "docker podman nerdctl buildah helm oras crane skopeo | login | -p --password", ""),
    ("cli-curl-user", "curl user:password", "@cli",
     "curl | | -u: --user: -U: --proxy-user:", ""),
    ("cli-wget-password", "wget password on the command line", "@cli",
     "wget | | --password --http-password --ftp-password --proxy-password", ""),
    ("cli-redis-password", "Redis password on the command line", "@cli",
     "redis-cli | | -a --pass --askpass", ""),
    ("cli-mongo-password", "MongoDB password on the command line", "@cli",
     "mongo mongosh mongodump mongorestore mongoexport mongoimport | | -p --password",
     ""),
    ("cli-ldap-password", "LDAP bind password on the command line", "@cli",
     "ldapsearch ldapadd ldapmodify ldapdelete ldapwhoami ldappasswd | | -w", ""),
    ("cli-sqlcmd-password", "SQL Server password on the command line", "@cli",
     "sqlcmd bcp | | -P", ""),
    ("cli-smbclient-password", "SMB user%password on the command line", "@cli",
     "smbclient rpcclient | | -U% --user%", ""),
    ("cli-openssl-password", "OpenSSL pass: password", "@cli",
     "openssl | | -passin@pass: -passout@pass: -pass@pass: -password@pass:", ""),
    ("cli-archive-password", "archive password on the command line", "@cli",
     "zip unzip 7z 7za 7zr | | -P -p+", ""),
    ("cli-az-password", "Azure CLI password on the command line", "@cli",
     "az | login | -p --password", ""),
    ("cli-htpasswd-password", "htpasswd password on the command line", "@cli",
     "htpasswd | | -b@3 -bc@3 -nb@2 -bB@3", ""),
)


# ---- character classes and shapes ------------------------------------------

_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DIGITS = "0123456789"
_ALNUM = _UPPER + _LOWER + _DIGITS
_SECRET_CLASSES = {
    "an": _ALNUM, "AN": _UPPER + _DIGITS, "al": _LOWER + _DIGITS, "A": _UPPER,
    "a": _LOWER, "aA": _UPPER + _LOWER, "d": _DIGITS, "h": _DIGITS + "abcdef",
    "H": _DIGITS + "ABCDEF", "hH": _DIGITS + "abcdefABCDEF", "b64": _ALNUM + "+/",
    "b64u": _ALNUM + "_-", "b64ue": _ALNUM + "_-=", "w": _ALNUM + "_",
    "wd": _ALNUM + "_.-", "wde": _ALNUM + "_.=-", "b32": _UPPER + "234567",
    "b32l": _LOWER + "234567", "bech": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", "eq": "=",
    "bechl": "qpzry9x8gf2tvdw0s3jn54khce6mua7l",
    "pct": _ALNUM + "%+/=", "an%": _ALNUM + "%", "az": _ALNUM + "_~.-",
}
_SHAPE_MACROS = {"UUID": "hH{8} - hH{4} - hH{4} - hH{4} - hH{12}",
                 "UUIDA": "an{8} - an{4} - an{4} - an{4} - an{12}"}
_RUN_MAX = 8192
_BASE62 = _DIGITS + _UPPER + _LOWER
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _parse_segments(text):
    """[literal str | (chars, min, max)] of one shape alternative."""
    segments = []
    for part in text.split():
        part = _SHAPE_MACROS.get(part, part)
        if " " in part:
            segments.extend(_parse_segments(part))
            continue
        brace = part.find("{")
        if brace > 0 and part.endswith("}") and part[:brace] in _SECRET_CLASSES:
            low, comma, high = part[brace + 1:-1].partition(",")
            high = int(high) if high else (_RUN_MAX if comma else int(low))
            segments.append((_SECRET_CLASSES[part[:brace]], int(low), high))
        else:
            segments.append(part)
    return segments


def _parse_shape(shape):
    """[(before, after)] per alternative: the segments before and after the anchor."""
    out = []
    for alternative in shape.split(" | "):
        before, mark, after = alternative.partition("^")
        if not mark:
            before, after = "", alternative
        out.append((_parse_segments(before), _parse_segments(after)))
    return out


class SecretRule:
    """One format of the table, parsed on first use."""

    __slots__ = ("id", "name", "anchor", "shape", "options", "alternatives", "entropy",
                 "check", "keywords", "prev", "infix", "ci", "weak", "mixed",
                 "priority", "regex", "need", "tails")

    def __init__(self, row, priority=300):
        self.id, self.name, self.anchor, self.shape, self.options = row
        opts = dict(o.partition("=")[::2] for o in self.options.split())
        self.entropy = float(opts.get("ent") or 0)
        self.check = opts.get("check", "")
        self.keywords = [alt.split("+") for alt in opts["kw"].split("|")] \
            if opts.get("kw") else []
        self.prev = opts.get("prev", "")
        self.infix, self.ci = "infix" in opts, "ci" in opts
        self.weak, self.mixed = "weak" in opts, "mixed" in opts
        self.need = "need" in opts
        self.tails = frozenset(opts["tail"].split("|")) if opts.get("tail") else ()
        self.priority = priority
        self.alternatives = None
        self.regex = None

    def parsed(self):
        if self.alternatives is None:
            self.alternatives = _parse_shape(self.shape)
        return self.alternatives


# ---- the compiled table: heads for the pre-filter --------------------------

_ALNUM_LOWER = frozenset(_LOWER + _DIGITS)
_ALNUM_LOWER_STR = _LOWER + _DIGITS
_SCANNER_PRIORITY = {"@words": 100, "@bare": 150, "@env": 10}


class _SecretTable:
    """What the pre-filter needs, built once per process from the anchors and
    keywords of the rows alone: no rule object is made and no shape parsed until a
    text holds the anchor."""

    def __init__(self, extra=(), index=True):
        self.by_head = {}      # word head (bytes) -> [(kind, what)]
        self.by_prefix = {}    # a shorter run that goes on, by length -> {run: [...]}
        self.always = []       # triggers searched for in every text
        self.anchors = {}      # lowered anchor -> [row or SecretRule]
        self.keywords = {}     # keyword -> [row or SecretRule]
        self._scanners = {}    # scanner name -> [row or SecretRule]
        self.regexes = []      # project rules given as a regular expression
        anchors = self.anchors
        for row in SECRET_RULES:
            key = row[2].lower()
            rows = anchors.get(key)
            if rows is None:
                anchors[key] = [row]
            else:
                rows.append(row)
        if not index:  # for a text no head of which is in the index (_lite_table)
            self.always = list(SECRET_ALWAYS)
            self._group_scanners()
            return
        split = _split_table(_ALNUM_LOWER_STR)
        self._index_anchors(split)
        self._index_keywords(split)
        self._group_scanners()
        self._index_scanners(split)
        self._index_extra(extra, split)

    def _index_anchors(self, split):
        by_head = self.by_head
        for key, rows in self.anchors.items():
            head = key[:4]       # most anchors: four letters or digits, the head itself
            if len(head) == 4 and head.isalnum() and head.isascii() and \
                    "^" not in rows[0][3]:
                by_head.setdefault(head.encode(), []).append(("anchor", key))
            else:
                self._place_anchor(key, rows[0][2], rows[0][3], split)

    def _index_keywords(self, split):
        by_head, keywords = self.by_head, self.keywords
        for row in SECRET_KEYWORD_RULES:
            for alternative in row[4].partition("kw=")[2].split()[0].split("|"):
                word = alternative.split("+")[0]
                if word in keywords:
                    keywords[word].append(row)
                    continue
                keywords[word] = [row]
                head = word[:4]
                if len(head) == 4 and head.isalnum():
                    by_head.setdefault(head.encode(), []).append(("kw", word))
                else:
                    self._head(word, ("kw", word), split)

    def _group_scanners(self):
        for row in SECRET_SCANNER_RULES:
            self._scanners.setdefault(row[2][1:], []).append(row)

    def _index_scanners(self, split):
        for word in ("begin", "end", "putty", "kty", "bearer", "basic", "authorization",
                     "cookie", "curl"):
            self._head(word, ("scan", word), split, whole=True)
        for row in self._scanners["cli"]:
            for program in row[3].split("|")[0].split():
                # a program is a whole word: its head is its first run's start
                self.by_head.setdefault(program.partition("-")[0][:4].encode(),
                                        []).append(("cli", program))

    def _index_extra(self, extra, split):
        for rule in extra:
            if rule.regex is not None:
                self.regexes.append(rule)
                for alternative in rule.keywords:
                    self._head(alternative[0], ("regex", rule.id), split)
            else:
                key = rule.anchor.lower()
                if key in self.anchors:
                    self.anchors[key].append(rule)
                else:
                    self.anchors[key] = [rule]
                    self._place_anchor(key, rule.anchor, rule.shape, split)

    def _place_anchor(self, key, anchor, shape, split):
        if anchor[:1].isalnum() and "^" in shape:
            self.always.append(("anchor", key))     # 8Q~: the anchor sits inside a word
        else:
            self._head(key, ("anchor", key), split)

    def _head(self, word, trigger, split, whole=False):
        """Register trigger under the head a text that holds `word` shows: the first
        four characters of the word's first run of letters and digits. A shorter run
        is a head itself when it ends inside `word` (ghp_: the text's word is ghp),
        and a prefix of heads when it may go on into the text (eyJ..., sk + hex)."""
        low = word.lower()
        head = low[:4]
        if head.isalnum() and head.isascii() and len(head) == 4:     # most of them
            self._register(self.by_head, head, trigger)
            return
        size = len(low) - len(low.lstrip(_ALNUM_LOWER_STR))   # the leading run
        if size:
            run, ends = low[:size], size < len(low)
        else:
            runs = low.translate(split).split()
            if not runs:
                self.always.append(trigger)
                return
            run = runs[0]
            ends = low.find(run) + len(run) < len(low)
        if ends or whole or len(run) >= 4:
            self._register(self.by_head, run[:4], trigger)
        else:
            self._register(self.by_prefix.setdefault(len(run), {}), run, trigger)

    @staticmethod
    def _register(index, head, trigger):
        key = head.encode()
        found = index.get(key)
        if found is None:
            index[key] = [trigger]
        elif trigger not in found:
            found.append(trigger)

    def scanner(self, name):
        """The SecretRules a scanner reports with, made on first use."""
        return self.rules(self._scanners, name, _scanner_priority)

    def rules(self, group, key, priority):
        """The SecretRules of an anchor or keyword, made on first use."""
        rows = group[key]
        if rows and rows[0].__class__ is not SecretRule:
            rows[:] = [row if row.__class__ is SecretRule else
                       SecretRule(row, priority=priority(row)) for row in rows]
        return rows


def _anchor_priority(row):
    return 300 + len(row[2])     # the longer the anchor, the more specific the rule


def _keyword_priority(row):
    return 200


def _scanner_priority(row):
    return _SCANNER_PRIORITY.get(row[2], 200)


# ---- generated by tests/regenerate.py from the rules above (a test checks it) ----
# What the pre-filter's index holds (_SecretTable, without a project's own rules):
# a text none of whose word heads is here is scanned without building the index.
SECRET_HEADS = frozenset((
    b'1', b'4b1d', b'7z', b'7za', b'7zr', b'a3', b'aaaa', b'abia',
    b'absk', b'acca', b'acce', b'acco', b'ado', b'adob', b'age', b'airt',
    b'aiza', b'akcp', b'akia', b'akid', b'algo', b'amzn', b'apa9', b'api',
    b'aqvn', b'arti', b'asan', b'asia', b'asse', b'atat', b'atbb', b'atla',
    b'auth', b'az', b'azdo', b'basi', b'bcp', b'bear', b'bedr', b'begi',
    b'bint', b'bitb', b'bitt', b'bkua', b'blue', b'buil', b'ccip', b'cf',
    b'cfpa', b'clie', b'cloj', b'clou', b'cmvm', b'co', b'code', b'cohe',
    b'coin', b'conf', b'cont', b'cook', b'cran', b'curl', b'dapi', b'data',
    b'dckr', b'dd', b'deep', b'devo', b'disc', b'dock', b'doo', b'dop',
    b'dor', b'dp', b'dron', b'drop', b'dt0c', b'duff', b'eaaa', b'eaac',
    b'eaag', b'eaam', b'end', b'etsy', b'eyjr', b'ezak', b'eztk', b'face',
    b'fast', b'fb', b'figd', b'fini', b'finn', b'fio', b'flic', b'flwp',
    b'flws', b'fm1a', b'fm1r', b'fm2', b'fo1', b'fres', b'fwog', b'gho',
    b'ghp', b'ghr', b'ghs', b'ghu', b'gith', b'gitl', b'gitt', b'glag',
    b'glc', b'glcb', b'gldt', b'glff', b'glft', b'glim', b'gloa', b'glpa',
    b'glpt', b'glrt', b'glsa', b'glso', b'goca', b'gocs', b'gr13', b'gsk',
    b'hclo', b'helm', b'hero', b'hetz', b'hf', b'hook', b'hrku', b'htpa',
    b'hubs', b'hvb', b'hvr', b'hvs', b'ico', b'igqv', b'inte', b'iqoj',
    b'jfro', b'jira', b'key', b'krak', b'kty', b'kuco', b'laun', b'ldap',
    b'lin', b'line', b'link', b'lino', b'lob', b'loba', b'look', b'ls0t',
    b'lsv2', b'ltai', b'mail', b'mari', b'matt', b'mera', b'mess', b'mist',
    b'mixp', b'mong', b'mysq', b'nerd', b'netl', b'new', b'newr', b'nexm',
    b'npm', b'nr', b'nrak', b'nrii', b'nrjs', b'nsec', b'ntn', b'nvap',
    b'nyti', b'okta', b'open', b'ops', b'oras', b'owm', b'p8e', b'page',
    b'pat', b'pcsk', b'plai', b'pmak', b'pnu', b'podm', b'post', b'pplx',
    b'pres', b'priv', b'psca', b'pul', b'putt', b'pypi', b'r8', b'rapi',
    b'rdme', b'redi', b'rk', b'rnd', b'rpcc', b'ruby', b's', b'sat',
    b'sb', b'sbp', b'secr', b'segm', b'send', b'sent', b'sg', b'sgp',
    b'sha2', b'shar', b'ship', b'shpa', b'shpc', b'shpp', b'shps', b'sig',
    b'sk', b'skop', b'sl', b'sm', b'smbc', b'sntr', b'snyk', b'sona',
    b'sour', b'sq0a', b'sq0c', b'sqa', b'sqlc', b'sqp', b'squ', b'squa',
    b'sshp', b'sumo', b't1', b'tfp', b'tk', b'trav', b'trel', b'tske',
    b'twil', b'twit', b'unzi', b'v1', b'verc', b'vona', b'vsts', b'vult',
    b'wand', b'webh', b'wget', b'whse', b'xai', b'xapp', b'xkey', b'xoxa',
    b'xoxb', b'xoxc', b'xoxe', b'xoxo', b'xoxp', b'xoxr', b'xoxs', b'xray',
    b'xsmt', b'ya29', b'yand', b'zend', b'zip', b'zoom', b'zxlk',
))
SECRET_PREFIXES = ((2, frozenset((b'aa', b'sk', b'us'))), (3, frozenset((b'a3t', b'aws', b'cio', b'eyj', b'ibm', b'mmk', b'oy2', b'pat'))), )
SECRET_ALWAYS = (('anchor', 'q~'), ('anchor', '|'))
# ---- end of generated ----


def secret_heads_source():
    """The text of the generated block above, from the rules as they are."""
    table = _SecretTable()
    items = sorted(table.by_head)
    heads = "frozenset((\n%s))" % "".join(
        "    %s\n" % " ".join("%r," % h for h in items[i:i + 8])
        for i in range(0, len(items), 8))
    prefixes = "(%s)" % "".join("(%d, frozenset(%r)), " % (size, tuple(sorted(index)))
                               for size, index in sorted(table.by_prefix.items()))
    return heads, prefixes, repr(tuple(table.always))


_TABLE = {}


def _lite_table():
    """The table for a text that shows no head of the index: its anchors, scanners
    and always-searched triggers, ~0.08 ms instead of ~0.5 for the whole."""
    table = _TABLE.get("lite")
    if table is None:
        table = _TABLE["lite"] = _SecretTable(index=False)
    return table


def _secret_table(extra=()):
    table = _TABLE.get(extra)
    if table is None:
        if len(_TABLE) > 8:
            _TABLE.clear()
        import gc
        # The table adds a thousand small objects, none of them garbage. Freezing what
        # the process holds first keeps the collections they cause from walking the
        # whole module (a hook paid 3-7 ms for one; it is a move of lists, O(1)).
        gc.freeze()
        enabled = gc.isenabled()
        gc.disable()
        try:
            table = _TABLE[extra] = _SecretTable(extra)
        finally:
            if enabled:
                gc.enable()
    return table


# ---- judging values --------------------------------------------------------

def _entropy(value):
    """Shannon entropy of value in bits per character: log2(size) - sum(n log2 n) /
    size over the counts n of its characters."""
    if not value:
        return 0.0
    size = len(value)
    return _log2(size) - sum(n * _log2(n) for n in map(value.count, set(value))) / size


def _log2(n):
    """log2 of a positive integer to 1e-7, without `math` (a shared library whose
    loading costs a hook more than every entropy it computes): n = m * 2**e with
    1 <= m < 2, and ln m = 2 atanh((m - 1) / (m + 1)) by its series."""
    exponent = n.bit_length() - 1
    m = n / (1 << exponent)
    z = (m - 1) / (m + 1)
    z2 = z * z
    series = z * (1 + z2 * (1 / 3 + z2 * (1 / 5 + z2 * (1 / 7 + z2 * (1 / 9 + z2 / 11)))))
    return exponent + 2 * series / 0.6931471805599453


def _classes(value):
    """How many of lower case, upper case, digits and other characters value has."""
    chars = set(value)
    return sum((not chars.isdisjoint(_LOWER), not chars.isdisjoint(_UPPER),
                not chars.isdisjoint(_DIGITS), bool(chars - _ALNUM_SET)))


_ALNUM_SET = frozenset(_ALNUM)
_VOWELS = frozenset("aeiouyAEIOUY")


def _wordy(value):
    """Made of words (my-app-name, ProductionDatabaseUrl, nginx-ingress, version2),
    not generated: few digits in one run, and runs of letters that are long and
    pronounceable (a vowel each, no five consonants in a row)."""
    digit_runs, digits, runs, prev = 0, 0, [], ""
    for ch in value:
        if ch.isdigit():
            digits += 1
            digit_runs += not prev.isdigit()
        elif ch.isalpha():
            if not prev.isalpha() or (ch.isupper() and prev.islower()):
                runs.append([])
            runs[-1].append(ch.lower())
        prev = ch
    if digits > 4 or digit_runs > 1 or not runs:
        return False
    if sum(map(len, runs)) / len(runs) < 3:
        return False
    for run in runs:
        consonants = 0
        if len(run) > 1 and not _VOWELS.intersection(run):
            return False
        for ch in run:
            consonants = 0 if ch in _VOWELS else consonants + 1
            if consonants >= 5:
                return False
    return True


def _looks_random(value, strict):
    """A value with the entropy and mix of a generated secret. strict (enough to
    refuse a prompt): 16+ characters of 3.5 bits with two kinds of character, or
    12+ of 3.3 bits with three kinds, and no words; else 8+ of 3 bits."""
    size = len(value)
    if size < (12 if strict else 8):
        return False
    classes, entropy = _classes(value), _entropy(value[:256])
    if strict:
        return not _wordy(value) and (
            (size >= 16 and entropy >= 3.5 and classes >= 2) or
            (entropy >= 3.3 and classes >= 3))
    return (entropy >= 3.0 and classes >= 2) or (size >= 16 and entropy >= 3.3)


_PLACEHOLDER_MARKS = ("example", "xxxxxx", "******", "####", "changeme", "change_me",
                      "placeholder", "redacted", "dummy", "your_", "your-", "yourpass",
                      "<", ">", "{{", "${", "...", "\u2026", "todo", "fixme", "notset",
                      "not-set", "not_set")
_ANCHORED_MARKS = tuple(m for m in _PLACEHOLDER_MARKS if m not in ("example", "todo"))
_PLACEHOLDER_WORDS = frozenset((
    "password", "passwd", "secret", "token", "key", "apikey", "api_key", "pass", "pwd",
    "pw", "passphrase", "user:password", "user:pass",
    "test", "testing", "none", "null", "nil", "true", "false", "yes", "no", "on", "off",
    "empty", "required", "optional", "hidden", "masked", "unset", "undefined", "string",
    "str", "bytes", "int", "bool", "secretstr", "any", "text", "value", "default",
    "env", "foo", "bar", "baz", "abc", "abc123", "123456", "12345678", "letmein",
    "admin", "root", "guest", "user", "username", "demo", "sample", "secret123",
    "password123", "mypassword", "mysecret", "s3cr3t", "p@ssw0rd", "pa55word",
    "anonymous"))


def _placeholder_value(value, anchored=False):
    """A stand-in for a secret (changeme, <token>, xxxxxx, ${VAR}). anchored: the
    value carries a vendor's prefix, and "example" inside it no longer says anything;
    a key that ends in EXAMPLE (the vendors' documentation keys) is still one."""
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or len(set(low)) <= 2 or \
            low.strip("@.") in _PLACEHOLDER_WORDS:
        return True
    if low[:1] == "[" and low[-1:] == "]" or _documented_example(value):
        return True            # AKIAIOSFODNN7EXAMPLE: the vendors' documentation keys
    return any(mark in low for mark in (_ANCHORED_MARKS if anchored else
                                        _PLACEHOLDER_MARKS))


# The values vendors publish in their documentation as ones that do not work (AWS's
# ...EXAMPLE key pair, Slack's xoxb-not-a-real-token-...): public text everyone has
# read, kept as written (redacting one loses the tutorial, and hides nothing).
_DOCUMENTED_TAILS = ("example", "examplekey")
_DOCUMENTED_MARKS = ("examplekey", "not-a-real", "not_a_real", "notareal")


def _documented_example(value):
    low = value.lower()
    return low.endswith(_DOCUMENTED_TAILS) or any(mark in low
                                                  for mark in _DOCUMENTED_MARKS)


_RUNS = "abcdefghijklmnopqrstuvwxyz 0123456789"


def _typed_run(low, size=10):
    """A run a person typed, not a generator drew: abcdefghij, klmnopqrstu (a fixture
    such as 12345678-ABCD-... is still a token shape: it is left to the rules)."""
    run = 1
    for i in range(1, len(low)):
        if ord(low[i]) == ord(low[i - 1]) + 1 and low[i].isalnum():
            run += 1
            if run >= size:
                return True
        else:
            run = 1
    return False


def _code_reference(value, quoted, literal=False):
    """A variable, a lookup, a template or a call: where a secret comes from, not the
    secret (os.environ["X"], $VAR, ${{ secrets.X }}, self.token, tokens[i]). quoted:
    the value is a string literal; literal: it stands where only literals do (an
    upper-case NAME=value, or name: value in YAML)."""
    if value[0] in "$%{@&*-" or value.startswith(("<%", "#{", "ENV[", "env.",
                                                   "process.env")):
        return True
    if "${" in value or "{{" in value or "$(" in value or "%(" in value:
        return True
    if quoted:
        return quoted == "`" and " " in value      # `etcdctl get /x`: a command
    if "(" in value or "[" in value:
        return True
    identifier = (value[0].isalpha() or value[0] == "_") and all(
        ch.isalnum() or ch in "_." for ch in value)
    if literal:
        # name: refreshToken, key: user_id are code (a JS object), name: hunter is YAML
        return identifier and not any(ch.isdigit() for ch in value) and (
            "_" in value or "." in value or value.lower() != value != value.upper())
    if value[0].isalpha() or value[0] == "_":
        if all(ch.isalnum() or ch in "_." for ch in value):
            if "." in value.strip("."):
                return True          # an attribute chain: config.secret, self.token
            return not any(ch.isdigit() for ch in value)
    return False


def _prose_follows(text, pos):
    """Words go on after pos on this line (name: value in a sentence, not YAML)."""
    end = text.find("\n", pos, pos + 200)
    rest = text[pos:end if end >= 0 else pos + 200].split(" #")[0]
    return any(word.isalpha() and len(word) > 1 for word in rest.split())


_DIGEST_PREFIXES = ("sha1:", "sha224:", "sha256:", "sha384:", "sha512:", "md5:",
                    "sha1-", "sha256-", "sha384-", "sha512-", "h1:", "blake2b:",
                    "sha256~")
_HEX_SET = frozenset("0123456789abcdefABCDEF")


def _uuid(value):
    return (len(value) == 36 and value[8] == value[13] == value[18] == value[23] == "-"
            and set(value.replace("-", "")) <= _HEX_SET)


def _benign_value(value):
    """Digests, UUIDs, paths, URLs, numbers and versions, and pointers into a secret
    store: not secrets."""
    low = value.lower()
    if low.startswith(_DIGEST_PREFIXES) or _uuid(value) or _secret_reference(value):
        return True
    if value[0] in "/~" or value.startswith(("./", "../", "file:")) or (
            len(value) > 2 and value[1] == ":" and value[2] in "\\/"):
        return True
    if "://" in value[:16]:
        return True
    stripped = value.replace(".", "").replace("-", "").replace("_", "").replace(":", "")
    return stripped.isdigit() or low.startswith("[redacted")


# References to a secret store say where a secret is kept, not what it is:
# vault:secret/data/app#password, op://vault/item/field, arn:aws:secretsmanager:...,
# a Secret Manager resource name, a provider's ref+ or scheme:// URI.
_SECRET_STORE_PREFIXES = (
    "vault:", "op://", "arn:", "ref+", "sm://", "gcpsm://", "awssm://", "azkv://",
    "akv://", "keyvault:", "keyvault://", "secretsmanager:", "ssm:", "ssm://",
    "parameterstore:", "doppler://", "infisical://", "bw://", "bitwarden://",
    "keeper://", "pass://", "gopass://", "sops://", "sops:", "kms://", "secret://",
    "secrets://", "k8s://", "kubernetes://", "conjur:", "akeyless:", "lastpass://",
    "keychain:", "env:", "file://", "resolve:", "!vault")


def _secret_reference(value):
    """A pointer into a secret store (the brief's vault:, op://, arn:aws:..., and
    projects/P/secrets/NAME/versions/N of Google's Secret Manager)."""
    low = value.lower()
    if low == "!vault":
        return True            # Ansible's inline vault: ciphertext follows
    if low.startswith(_SECRET_STORE_PREFIXES):
        rest = value.partition(":")[2].lstrip("/")
        # a path (secret/data/app#password, vault/item/field, region:account:...) or
        # a name (env:DB_PASSWORD); vault:Xk9#rT2v is a password that starts so
        return bool(rest) and " " not in rest and (
            "/" in rest or ":" in rest or rest.replace("_", "").isupper() or
            _wordy(rest))
    return low.startswith("projects/") and "/secrets/" in low


# ---- names that promise a secret -------------------------------------------

_NOT_PASS = frozenset(("bypass", "compass", "surpass", "trespass", "encompass",
                       "overpass", "underpass", "firstpass", "onepass", "multipass"))
_KEY_QUALIFIERS = frozenset((
    "api", "access", "secret", "private", "account", "master", "license", "licence",
    "signing", "sign", "encryption", "encrypt", "decrypt", "client", "auth", "app",
    "server", "shared", "sharedaccess", "subscription", "user", "webhook", "hmac",
    "jwt", "crypto", "deploy", "service", "admin", "root", "session", "cookie", "aes",
    "des", "rsa", "gpg", "pgp", "storage", "write", "ingest", "install",
    "integration", "bot", "consumer", "developer", "dev", "prod", "live", "x",
    "mac", "otp", "totp", "preshared", "wrapping", "data", "cipher", "symmetric",
    "security", "login", "rest", "management", "primary_access", "partner"))
_BENIGN_QUALIFIERS = frozenset(("public", "pub", "primary", "foreign", "sort", "cache",
                                "partition", "hash", "lookup", "idempotency", "dict",
                                "map", "row", "column", "index", "unique", "composite",
                                "registry", "object", "s3", "file", "host", "known",
                                "dedup", "group", "routing", "shard", "natural"))
_BENIGN_TAILS = frozenset((
    "id", "ids", "url", "uri", "urls", "endpoint", "host", "hostname", "name", "names",
    "region", "user", "username", "login", "email", "org", "owner", "project", "app",
    "version", "path", "paths", "dir", "file", "filename", "sha", "digest", "hash",
    "hashed", "checksum", "commit", "ref", "branch", "tag", "count", "size", "len",
    "length", "type", "types", "mode", "enabled", "enable", "disabled", "timeout",
    "ttl", "expiry", "expires", "expiration", "port", "prefix", "suffix", "format",
    "field", "fields", "label", "header", "param", "policy", "scope", "scopes", "kind",
    "algorithm", "alg", "method", "provider", "source", "var", "variable", "limit",
    "max", "min", "index", "position", "offset", "status", "state", "flag", "hint",
    "help", "description", "desc", "title", "text", "placeholder", "pattern", "regex",
    "validator", "arn", "location", "store", "vault", "manager", "rotation", "policy",
    "strength", "reset", "changed", "required", "confirmation", "confirm", "prompt",
    "question", "lifetime", "age", "env", "refs"))


def _name_parts(name):
    """The words of an identifier, lower case: AWS_SECRET_ACCESS_KEY, clientSecret,
    x-api-key -> [aws, secret, access, key], [client, secret], [x, api, key]."""
    if name.islower() or name.isupper() or not any(c.isupper() for c in name[1:]):
        return name.lower().translate(_split_table(_ALNUM_LOWER_STR)).split()
    parts, word, prev = [], [], ""
    for ch in name:
        if not ch.isalnum():
            if word:
                parts.append("".join(word).lower())
            word, prev = [], ch
            continue
        if word and ch.isupper() and prev.islower():
            parts.append("".join(word).lower())
            word = []
        word.append(ch)
        prev = ch
    if word:
        parts.append("".join(word).lower())
    return parts


def _secret_name(name):
    """password, secret or key when an assignment's name promises a secret, else
    None (api_key_id, token_url, password_file, public_key name no secret)."""
    parts = _name_parts(name)
    if not parts:
        return None
    joined = "".join(parts)
    last = parts[-1]
    if last in _BENIGN_TAILS:
        return None
    if any(word in joined for word in ("password", "passwd", "passphrase", "passcode",
                                       "contrasena", "contrase\u00f1a")) or any(
            p in ("pwd", "pass", "pw") or (p.endswith(("pass", "pwd"))
                                           and p not in _NOT_PASS)
            for p in parts):
        return "password"
    if ("secret" in joined or "credential" in joined or "apikey" in joined
            or "privatekey" in joined or "accesskey" in joined
            or any(p in ("creds", "auth", "authkey", "authtoken", "sig", "signature")
                   or ("token" in p and not p.startswith("tokeniz") and p != "tokens")
                   for p in parts)):
        return "secret"
    if last == "key" or (last.endswith("key") and last[:-3] in _KEY_QUALIFIERS):
        qualifier = parts[-2] if len(parts) > 1 and last == "key" else last[:-3]
        if qualifier in _BENIGN_QUALIFIERS:
            return None
        return "key"
    return None


# ---- findings --------------------------------------------------------------

class SecretFinding:
    """One secret in a text: where, which format, whether it is sure enough to
    refuse a prompt, and how to show it masked."""

    __slots__ = ("start", "end", "rule", "name", "sure", "mask", "priority")

    def __init__(self, start, end, rule, name, sure, mask, priority):
        self.start, self.end, self.rule, self.name = start, end, rule, name
        self.sure, self.mask, self.priority = sure, mask, priority

    def __repr__(self):
        return "SecretFinding(%s %d-%d%s)" % (self.rule, self.start, self.end,
                                        "" if self.sure else " unsure")


def _found(out, start, end, rule, sure, mask):
    if end > start:
        out.append(SecretFinding(start, end, rule.id, rule.name,
                                 sure and not rule.weak, mask,
                           rule.priority))


def _find_all(haystack, needle):
    """Every position of needle (each costs the rules a bounded amount of work, so a
    text full of decoys stays linear; none is skipped, so none hides a secret)."""
    pos = haystack.find(needle)
    while pos != -1:
        yield pos
        pos = haystack.find(needle, pos + 1)


def _run_length(text, pos, chars, low, high):
    """The length of the run of `chars` at pos (at most high), or -1 when shorter
    than low. lstrip does the scanning in C."""
    chunk = text[pos:pos + high]
    size = len(chunk) - len(chunk.lstrip(chars))
    return size if size >= low else -1


def _match_forward(text, pos, segments):
    for segment in segments:
        if segment.__class__ is str:
            if not text.startswith(segment, pos):
                return -1
            pos += len(segment)
        else:
            size = _run_length(text, pos, segment[0], segment[1], segment[2])
            if size < 0:
                return -1
            pos += size
    return pos


def _match_backward(text, pos, segments):
    for segment in reversed(segments):
        if segment.__class__ is str:
            if not text.endswith(segment, 0, pos):
                return -1
            pos -= len(segment)
        else:
            chars, low, high = segment
            chunk = text[max(0, pos - high):pos]
            size = len(chunk) - len(chunk.rstrip(chars))
            if size < low:
                return -1
            pos -= size
    return pos


def _continues(text, pos, segments):
    """The token goes on past pos (so it is longer than the format allows)."""
    if pos >= len(text) or not segments:
        return False
    last = segments[-1]
    ch = text[pos]
    if last.__class__ is str:
        return last[-1:].isalnum() and ch in _ALNUM_SET
    return ch in last[0] or ch in _ALNUM_SET


def _precedes(text, pos, segments, anchor):
    """A token character stands before pos (the format starts inside a word)."""
    if pos <= 0:
        return False
    ch = text[pos - 1]
    if segments:
        first = segments[0]
        return ch in _ALNUM_SET or (first.__class__ is not str and ch in first[0])
    return anchor[:1].isalnum() and ch in _ALNUM_SET


def _match_anchored(text, low, pos, rule):
    """A SecretFinding for rule at anchor position pos, or None."""
    anchor = rule.anchor
    if not rule.ci and not text.startswith(anchor, pos):
        return None
    if rule.prev and (pos == 0 or text[pos - 1] not in rule.prev):
        return None
    after_anchor = pos + len(anchor)
    for before, after in rule.parsed():
        start = _match_backward(text, pos, before) if before else pos
        if start < 0 or _precedes(text, start, before, anchor):
            continue
        end = _match_forward(text, after_anchor, after)
        if end < 0 or _continues(text, end, after or [anchor]):
            continue
        return _judge_anchored(text, low, start, pos, after_anchor, end, rule)
    return None


def _judge_anchored(text, low, start, pos, after_anchor, end, rule):
    body = text[start:pos] + text[after_anchor:end]
    # a distinctive prefix and a random body are a secret; a check digit that holds
    # makes even a flat body one (and one that fails leaves the judgement to entropy)
    checked = bool(rule.check) and _check_digit(rule.check, text[start:end], body)
    if not checked and len(rule.anchor) < 10 and len(set(body.lower())) <= 2 and \
            set(body.lower()) <= _FILLER_CHARS:
        return None            # ghp_xxxx..., glc_1111...=: fixtures, nothing to hide
    if rule.check == "b64pem" and not checked:
        return None            # a base64 certificate or public key: nothing secret
    if _documented_example(body):
        return None            # AKIAIOSFODNN7EXAMPLE: the vendor's documentation key
    floor = rule.entropy or (2.5 if len(body) >= 16 else 0.0)
    random = checked or _entropy(body[:256]) >= floor
    if not random and len(rule.anchor) < 4:
        return None          # a short anchor and a flat body: ordinary text
    if rule.mixed and (not (set(body) & _UPPER_DIGITS) or _wordy(body)):
        return None
    if rule.keywords:
        line = low[max(0, low.rfind("\n", 0, start) + 1, start - 200):start]
        if not any(all(word in line for word in alt) for alt in rule.keywords):
            return None
    if not checked and (low.startswith(_MASK_TAILS, end) or (
            len(body) >= 16 and not body.isupper() and _wordy(body)) or any(
            mark in body.lower() for mark in _FIXTURE_MARKS)):
        return None            # masked (-####), made of words, or a stand-in: kept
    sure = random and not _placeholder_value(body, anchored=True) and (
        checked or not rule.need) and not _fake_tail(text, low, end) and (
        checked or not _typed_run(body.lower()))   # AIzaSyabcdefghij...: redact only
    if rule.anchor[:1].isalpha() and low.startswith(_FILE_EXTENSIONS, end):
        return None            # video_box.ico-7a38....png: a file name
    mask = ("\u2026" if start < pos else "") + rule.anchor + "\u2026"
    return SecretFinding(start, end, rule.id, rule.name, sure and not rule.weak, mask,
                   rule.priority)


_UPPER_DIGITS = frozenset(_UPPER + _DIGITS)
_FILE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp", ".css",
                    ".js", ".map", ".woff", ".html", ".json", ".txt")
_FAKE_TAILS = ("####", "****", "xxxx", "...", "\u2026")
_MASK_TAILS = ("####", "****", "xxxx")
_FILLER_CHARS = frozenset("x*#01-_=.")
_FIXTURE_MARKS = ("xxxxxx", "******", "your_", "your-", "changeme", "placeholder",
                  "redacted", "dummy", "_here", "-here")


def _fake_tail(text, low, end):
    """What follows a token says it is cut or masked: xoxp-572...-####, ops_eyJ...."""
    return low.startswith(_FAKE_TAILS, end)


# ---- check digits ----------------------------------------------------------

def _check_digit(kind, token, body):
    if not kind:
        return True
    if kind == "crc32":            # the last 6 characters: CRC32 of the rest, base62
        import binascii
        payload, check = body[:-6], body[-6:]
        number = 0
        for ch in check:
            number = number * 62 + _BASE62.find(ch)
        return binascii.crc32(payload.encode("ascii", "replace")) == number
    if kind == "bech32":
        return _bech32_ok(token)
    if kind == "jwt":
        header = _b64_decode(token.split(".", 1)[0])
        return header is not None and header.lstrip().startswith(b"{") and b'"' in header
    if kind == "b64pem":           # base64 of -----BEGIN ... PRIVATE KEY-----
        decoded = _b64_decode(token[:120])
        return decoded is not None and b"PRIVATE KEY" in decoded
    if kind == "b64jwt":           # base64 of a JWT: eyJ...eyJ...
        decoded = _b64_decode(token)
        return decoded is not None and decoded.startswith(b"eyJ") and b"." in decoded
    if kind == "basic":
        decoded = _b64_decode(body)
        return decoded is not None and b":" in decoded and all(
            32 <= b < 127 for b in decoded)
    return True


def _b64_decode(text):
    import binascii
    text = text.replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def _bech32_ok(token):
    """The BCH checksum of a bech32 string (age keys: AGE-SECRET-KEY-1...)."""
    token = token.lower()
    hrp, _, data = token.rpartition("1")
    values = [_BECH32.find(ch) for ch in data]
    if not hrp or len(values) < 7 or -1 in values:
        return False
    check = 1
    for value in [ord(ch) >> 5 for ch in hrp] + [0] + [ord(ch) & 31 for ch in hrp] + \
            values:
        top = check >> 25
        check = (check & 0x1ffffff) << 5 ^ value
        for i, gen in enumerate((0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                 0x2a1462b3)):
            if (top >> i) & 1:
                check ^= gen
    return check == 1


# ---- assignments: NAME = VALUE in every dialect ----------------------------

_NAME_CHARS = _ALNUM + "_.-"
_VALUE_STOP = frozenset(" \t\r\n\"'`,;)}]<>&|\\")
_QUOTES = ("\"", "'")
_ASSIGN_OPS = (":::=", "::=", ":=", "=>", "??=", "?=", "+=", ".=", "||=", "=", ":")


def _skip_blanks(text, pos, end=None):
    end = len(text) if end is None else end
    while pos < end and text[pos] in " \t":
        pos += 1
    return pos


def _assignment(text, i, j):
    """The assignment whose name holds text[i:j]: (name start, name end, value start,
    value end, quote, op), with value start None when no operator follows the name.
    Reads NAME=V, NAME: V, "name": "v", 'name' => 'v', <name>v</name>, --name v."""
    start, end = _name_span(text, i, j)
    size = len(text)
    k = end
    while k < size and k - end < 2 and text[k] in "\"'`]":
        k += 1
    spaced = k < size and text[k] in " \t"
    k = _skip_blanks(text, k)
    op = _assign_operator(text, k)
    if op == "=" and text.startswith("==", k) or not op and text.startswith("!=", k):
        compared = _compared_literal(text, start, end, k)
        if compared:
            return compared
        op = ""
    if op == ":" and text.startswith("://", k):
        op = ""
    if not op and text[k:k + 1] == ">" and start > 0 and text[start - 1] == "<":
        op = ">"  # <name>value</name>
    if not op:
        return _value_without_operator(text, start, end, k, spaced)
    k = _skip_blanks(text, k + len(op))
    if k < size and text[k] == "@" and text[k + 1:k + 2] in ("\"", "'"):
        k += 1
    if op == "=" and text[start:end].lower() in ("key", "name") and \
            text[k:k + 1] in ("\"", "'"):
        named = _named_value(text, k)
        if named:
            return named
    if op == ">":
        return _xml_text(text, start, end, k)
    return (start, end) + _value_span(text, k) + (op,)


def _name_span(text, i, j):
    """(start, end) of the name around text[i:j], at most 64 name characters out."""
    head = text[max(0, i - 64):i]
    tail = text[j:j + 64]
    return (i - (len(head) - len(head.rstrip(_NAME_CHARS))),
            j + (len(tail) - len(tail.lstrip(_NAME_CHARS))))


def _assign_operator(text, k):
    for candidate in _ASSIGN_OPS:
        if text.startswith(candidate, k):
            return candidate
    return ""


def _compared_literal(text, start, end, k):
    """if password == "...": a comparison with a literal at k (== or !=), or None."""
    q = _skip_blanks(text, k + 2 + (text[k + 2:k + 3] == "="))
    if text[q:q + 1] in ("\"", "'"):
        return (start, end) + _value_span(text, q) + ("==",)
    return None


def _value_without_operator(text, start, end, k, spaced):
    """The forms with no operator after the name: setenv("NAME", "value"),
    key="NAME" value="...", --name value; else no value."""
    if text[k:k + 1] == "," and start > 0 and text[start - 1] in "\"'" and \
            text[k - 1:k] == text[start - 1]:
        # setenv("NAME", "value"), getenv("api_token", "default"): a quoted name, a
        # comma, a quoted value
        q = _skip_blanks(text, k + 1)
        if text[q:q + 1] in ("\"", "'"):
            return (start, end) + _value_span(text, q) + (",",)
    if text[start - 1:start] in _QUOTES and (
            text[start - 5:start - 1].lower() == "key=" or
            text[start - 6:start - 1].lower() == "name="):
        q = _skip_blanks(text, end + 1)
        if text[q:q + 6].lower() == "value=" and text[q + 6:q + 7] in ("\"", "'"):
            return (start, end) + _value_span(text, q + 6) + ("=",)
    if text.startswith("--", start) and spaced:
        return (start, end) + _value_span(text, k) + (" ",)
    return start, end, None, None, "", ""


def _named_value(text, k):
    """<add key="ClearTextPassword" value="..."/>: the key's quoted value at k names
    the value that follows; None when no value= follows."""
    v_start, v_end, quote = _value_span(text, k)
    q = _skip_blanks(text, v_end + 1)
    if text[q:q + 6].lower() == "value=" and text[q + 6:q + 7] in ("\"", "'"):
        return (v_start, v_end) + _value_span(text, q + 6) + ("=",)
    return None


def _xml_text(text, start, end, k):
    """<name>value</name>: the text from k to the next tag, blanks trimmed."""
    close = text.find("<", k, k + 1024)
    close = close if close >= 0 else k
    while k < close and text[k] in " \t\r\n":
        k += 1
    while close > k and text[close - 1] in " \t\r\n":
        close -= 1
    return start, end, k, close, "", ">"


def _value_span(text, k):
    """(value start, value end, quote) of the value that starts at k."""
    quote = text[k:k + 1]
    if quote in ("\"", "'", "`") and quote:
        line_end = text.find("\n", k + 1, k + 2048)
        limit = line_end if line_end >= 0 else min(len(text), k + 2048)
        close = k + 1
        while True:
            close = text.find(quote, close, limit)
            if close < 0 or text[close - 1] != "\\":
                break
            close += 1
        if close >= 0:
            return k + 1, close, quote
        k += 1                # no closing quote: read the word that follows it
    end = k
    limit = min(len(text), k + 512)
    while end < limit and text[end] not in _VALUE_STOP:
        end += 1
    return k, end, ""


def _env_style(text, name_start, name_end, value_start, op):
    """NAME=value with an upper-case name and nothing around "=": a literal."""
    name = text[name_start:name_end].lstrip("-")
    return (op == "=" and value_start == name_end + 1 and name[:1].isupper()
            and name.replace("_", "").isupper())


def _judge_value(cls, value, quote, literal, strict_only=False):
    """"sure", "unsure" or None for a value assigned to a name of class cls (a typed
    run, abcdefghij, is redacted but not refused: it may be a fixture)."""
    verdict = _judge_value_of(cls, value, quote, literal, strict_only)
    if verdict == "sure" and _typed_run(value.lower()):
        return None if strict_only else "unsure"
    return verdict


def _judge_value_of(cls, value, quote, literal, strict_only):
    if len(value) < 3 or _code_reference(value, quote, literal) or \
            _benign_value(value) or _placeholder_value(value):
        return None
    if cls == "password":
        if len(value) >= 6 and (quote or literal or _classes(value) >= 2 or
                                not value.isalpha()) and not (
                not any(ch.isdigit() for ch in value) and _wordy(value) or
                " " in value):
            return "sure"      # (geheim$parole, somepass: words in an example, redact)
        return None if strict_only else "unsure"
    if _looks_random(value, True) and not (cls == "key" and set(value) <= _HEX_SET):
        return "sure"          # a bare "key" holding hex may be a digest: redact only
    if not strict_only and _looks_random(value, False):
        return "unsure"
    return None


_FILLER_WORDS = frozenset(("is", "are", "was", "be", "of", "for", "to", "the", "my",
                           "our", "your", "a", "an", "here", "this", "it's", "its",
                           "as", "now", "value", "->", "-", "=", ":", "\u2192", "\u2014",
                           "key", "token", "secret", "password"))


def _nearby_value(text, pos):
    """(start, end) of the first word after pos on the same line that is not a filler
    word (the password is <value>), at most three words on; else None."""
    size = len(text)
    for _hop in range(4):
        pos = _skip_blanks(text, pos)
        while pos < size and text[pos] in ":=\"'`":
            pos += 1
        pos = _skip_blanks(text, pos)
        end = pos
        while end < size and text[end] not in _VALUE_STOP:
            end += 1
        word = text[pos:end]
        if not word:
            return None
        if word.lower().rstrip(".,:") not in _FILLER_WORDS:
            return pos, end
        pos = end
    return None


# ---- scanners --------------------------------------------------------------

# The words that make a name promise a secret, and what may follow each inside a
# name (pass-word, auth-token; not pass-ing, auth-or, key-board).
_SECRET_WORDS = (("pass", ("word", "wd", "phrase", "code", "wrd")),
                 ("pwd", ()), ("secret", None), ("credential", None), ("creds", ()),
                 ("token", ("s", "_", "-")), ("key", ("_", "-")),
                 ("auth", ("token", "key", "_", "-")), ("contrase", None))


def _word_fits(low, pos, word, follow):
    """The word at pos can end a part of a name: what follows is no letter, or one of
    the endings allowed (None: anything)."""
    if follow is None:
        return True
    nxt = low[pos + len(word):pos + len(word) + 1]
    if not nxt.isalpha():
        return not (word == "token" and nxt == "s")
    return any(low.startswith(end, pos + len(word)) for end in follow)


def _scan_words(text, low, table, out):
    """Values assigned to (or written right after) a name that promises a secret."""
    rules = {rule.shape: rule for rule in table.scanner("words")}
    seen = set()
    for word, follow in _SECRET_WORDS:
        for pos in _find_all(low, word):
            if not _word_fits(low, pos, word, follow):
                continue
            found = _assignment(text, pos, pos + len(word))
            if found[0] in seen:
                continue
            seen.add(found[0])
            if found[2] is None or (found[5] == ":" and not found[4] and "=" in
                                    text[found[3]:found[3] + 3]):
                found = _other_assignment(text, found[0], found[1]) or found
            name_start, name_end, v_start, v_end, quote, op = found
            before = text[name_start - 1:name_start] if name_start else ""
            glued = text[name_end:name_end + 1] == ":" and \
                text[name_end + 1:name_end + 2] not in ("", " ", "\t", before)
            if (before == "$" and not _sigil_assignment(found)) or \
                    text[name_start - 2:name_start] == "${" or (
                    before in ("\"", "'") and glued) or (
                    before == ":" and _inside_reference(text, name_start)):
                continue          # a variable, or "service:Action" inside a string
            if v_start is None:
                _scan_nearby(text, name_start, name_end, rules, out)
                continue
            value = text[v_start:v_end].rstrip(".") if not quote else text[v_start:v_end]
            if not quote and text[v_start:v_end].endswith(("...", "\u2026")):
                continue          # TOKEN=ops_eyJzaWdu...: a cut example
            if op == ":" and text[max(0, name_start - 12):name_start].endswith(
                    _HEADER_FLAGS):
                _header_value(text, name_start, name_end, v_start, value, rules, out)
                continue
            yaml = op == ":" and text[name_end:name_end + 1] not in ("\"", "'", "`")
            literal = _env_style(text, name_start, name_end, v_start, op) or yaml or \
                op == ">"
            if len(value) < 3 or _code_reference(value, quote, literal) or (
                    yaml and not quote and _prose_follows(text, v_end)):
                continue
            if _public_key_value(value) or _public_name(text[name_start:name_end]):
                continue          # a publishable key, a site key: made to be shown
            cls = _secret_name(text[name_start:name_end])
            if cls and cls != "key" and _uuid(value):
                verdict = "sure"      # api_token = <uuid>: Heroku, Snyk, many more
            elif op == "==":          # if password == "...": a password, or a token
                verdict = cls in ("password", "secret") and _judge_value(
                    cls, value, quote, literal, strict_only=cls != "password")
            elif op == ",":           # setenv("NAME", "value"): a generated value only
                name = text[name_start:name_end]
                verdict = cls and not _COMMA_VALUE_STOP.intersection(value) and (
                    name.islower() or name.isupper()) and not value.isalpha() and \
                    _judge_value("secret", value, quote, literal, strict_only=True)
            else:
                verdict = cls and _judge_value(cls, value, quote, literal)
            if verdict:
                rule = rules["password" if cls == "password" else "secret"]
                _found(out, v_start, v_start + len(value), rule, verdict == "sure",
                       text[name_start:name_end] + op.strip() + "\u2026")


_COMMA_VALUE_STOP = frozenset(" \t\\")


# ---- more assignment forms -------------------------------------------------

_SIGIL_OPS = ("=", ":=", ".=", "??=", "||=", "==")


def _sigil_assignment(found):
    """$db_password = '...' (PHP, Perl, PowerShell; [ "$PASS" = "x" ] in sh): a
    variable given a quoted literal, where $NAME alone is only a use of it."""
    return found[2] is not None and found[4] in ("\"", "'") and found[5] in _SIGIL_OPS


def _other_assignment(text, name_start, name_end):
    """The forms _assignment does not read: R's name <- "v", VB's Dim name As String
    = "v", Swift's and TypeScript's name: Type = "v". The assignment tuple, or None."""
    k = _skip_blanks(text, name_end)
    if text.startswith("<-", k):
        op, k = "<-", k + 2
    elif text[k:k + 1] == ":" or text[k:k + 3] in ("as ", "As ", "AS "):
        word = _skip_blanks(text, k + (1 if text[k] == ":" else 3))
        end = word + _run_length(text, word, _ALNUM + "_.[]<>?", 0, 64)
        k = _skip_blanks(text, end)
        if end == word or text[k:k + 1] != "=" or text[k + 1:k + 2] in ("=", ">"):
            return None
        op, k = "=", k + 1
    else:
        return None
    k = _skip_blanks(text, k)
    if text[k:k + 1] not in ("\"", "'"):
        return None
    return (name_start, name_end) + _value_span(text, k) + (op,)


def _inside_reference(text, pos):
    """The word at pos is part of a secret store's reference (arn:aws:secretsmanager:
    ...:secret:name, vault:secret/data/app#password), not a name of its own."""
    head = text[max(0, pos - 160):pos]
    cut = max(head.rfind(ch) for ch in " \t\n\"'`=,([{")
    return cut + 1 < len(head) and head[cut + 1:].lower().startswith(
        _SECRET_STORE_PREFIXES)


# ---- public keys -----------------------------------------------------------
# Publishable keys, site keys and public tokens are meant to be in a page, a bundle
# or an app: Stripe's pk_live_, Mapbox's pk., Supabase's publishable key, PostHog's
# project key, a reCAPTCHA or Turnstile site key. Their kind says so by prefix, or the
# name they are given does (publishable, public, site key). A secret key of the same
# vendor has its own prefix (sk_live_, sk.eyJ) and its own rule.
_PUBLIC_KEY_PREFIXES = ("pk_live_", "pk_test_", "pk.eyJ", "sb_publishable_", "phc_",
                        "npub1", "age1")
_PUBLIC_NAME_PARTS = frozenset(("public", "publishable", "pub", "pubkey", "sitekey",
                                "publickey", "publishablekey"))
_CAPTCHA_WORDS = ("captcha", "turnstile")
_PRIVATE_WORDS = ("secret", "private", "password", "passwd", "priv", "server")


def _public_key_value(value):
    return value.startswith(_PUBLIC_KEY_PREFIXES)


def _public_name(name):
    """A name that says its value is public: STRIPE_PUBLISHABLE_KEY, data-sitekey,
    NEXT_PUBLIC_X, recaptchaKey (a captcha's client side holds its site key only)."""
    parts = _name_parts(name)
    joined = "".join(parts)
    if not parts or any(word in joined for word in _PRIVATE_WORDS):
        return False
    return bool(_PUBLIC_NAME_PARTS.intersection(parts)) or "sitekey" in joined or \
        any(word in joined for word in _CAPTCHA_WORDS)


def _assigned_name(text, pos):
    """The name the value at pos is given on its line (data-sitekey="...",
    SITE_KEY=..., "siteKey": "...", grecaptcha.execute("..."), ?render=...)."""
    k, low = pos, max(0, pos - 8)
    while k > low and text[k - 1] in " \t\"'`=:({[,>":
        k -= 1
    head = text[max(0, k - 64):k]
    return head[len(head.rstrip(_NAME_CHARS)):]


def _public_context(text, low, pos):
    """The value at pos is a public key by the name it is given, or it stands on a
    captcha's line that says nothing of a secret."""
    name = _assigned_name(text, pos)
    if name and _public_name(name):
        return True
    line = low[low.rfind("\n", 0, pos) + 1:pos]
    return any(word in line for word in _CAPTCHA_WORDS) and not any(
        word in line for word in _PRIVATE_WORDS)
_HEADER_FLAGS = ('-H "', "-H '", '--header "', "--header '", '--header="', "--header='",
                 '-H"', "-H'")


def _header_value(text, name_start, name_end, v_start, value, rules, out):
    """curl -H "Token: <value>": the value of a header whose name promises a secret
    is one (a header carries it to a server); sure when it is not flat."""
    name = text[name_start:name_end]
    if not _secret_name(name) or len(value) < 8 or _code_reference(value, True) or \
            _placeholder_value(value):
        return
    _found(out, v_start, v_start + len(value), rules["header"],
           not (value.isalpha() and (value.islower() or value.istitle())) and
           _entropy(value) >= 2.5 and (_classes(value) >= 2 or len(value) >= 16),
           name + ": \u2026")

# A header of one's own (X-Vendor-...) carries a credential when its last word says
# so: X-Api-Key, X-Auth-Token, X-Honeycomb-Team, X-Vendor-Auth, X-Partner-Secret.
_HEADER_SECRET_TAILS = frozenset((
    "key", "apikey", "token", "auth", "secret", "password", "passwd", "pass", "pwd",
    "credential", "credentials", "creds", "team", "authorization", "authkey",
    "authtoken", "accesskey", "apitoken", "license", "licence", "signingkey"))
_HEADER_SECRET_ENDINGS = ("token", "secret", "apikey", "authkey", "accesskey",
                          "password")
_HEADER_BEFORE = frozenset(" \t\n\"'{,([")
_HEADER_NAME = _ALNUM + "-_"


def _scan_headers(text, low, table, out):
    """X-...: <value> in a request, a curl -H, a headers dict or a log line, when the
    header's name promises a credential (a general rule: its last word)."""
    if "x-" not in low:
        return
    rule = None
    for pos in _find_all(low, "x-"):
        if pos and low[pos - 1] not in _HEADER_BEFORE:
            continue
        end = pos + 2 + _run_length(text, pos + 2, _HEADER_NAME, 0, 80)
        parts = low[pos + 2:end].replace("_", "-").split("-")
        if not (parts[-1] in _HEADER_SECRET_TAILS or parts[-1].endswith(
                _HEADER_SECRET_ENDINGS)) or (
                parts[-1] == "team" and len(parts) < 2) or (
                len(parts) > 1 and parts[-2] in _BENIGN_QUALIFIERS) or \
                _public_name(text[pos:end]):
            continue              # X-Idempotency-Key, X-Public-Key: no credential
        k = end + (text[end:end + 1] in ("\"", "'"))
        if text[k:k + 1] != ":":
            continue
        k = _skip_blanks(text, k + 1)
        if text[k:k + 1] in ("\"", "'"):
            v_start, v_end, _quote = _value_span(text, k)
        else:
            v_start, v_end = k, k + _run_length(text, k, _TOKEN68 + "=:%", 0, 4096)
        value = text[v_start:v_end]
        if len(value) < 8 or " " in value or _code_reference(value, True) or \
                _placeholder_value(value) or _benign_value(value) or \
                _public_key_value(value) or _wordy(value):
            continue
        rule = rule or {r.shape: r for r in table.scanner("words")}["header"]
        _found(out, v_start, v_end, rule, _entropy(value) >= 3.0 and (
            _classes(value) >= 2 or len(value) >= 16), text[pos:end] + ": \u2026")


def _scan_name_value_pairs(text, low, table, out):
    """- name: ACME_TOKEN / value: <v> (Kubernetes and compose env lists), and
    {"name": "ACME_TOKEN", "value": "<v>"} (ECS task definitions): the name is a
    value itself, and the secret is the value of the member after it."""
    if "value" not in low or "name" not in low:
        return
    rules = None
    for pos in _find_all(low, "name"):
        k = pos + 4 + (text[pos + 4:pos + 5] in ("\"", "'"))
        if text[k:k + 1] != ":" or (pos and low[pos - 1] in _ALNUM_LOWER):
            continue
        k = _skip_blanks(text, k + 1)
        n_start, n_end, _quote = _value_span(text, k)
        cls = _secret_name(text[n_start:n_end])
        if not cls or n_end - n_start > 80:
            continue
        v = low.find("value", n_end, n_end + 160)
        if v < 0 or low[v - 1:v] in _ALNUM_LOWER or "name" in low[n_end:v]:
            continue
        k = v + 5 + (text[v + 5:v + 6] in ("\"", "'"))
        if text[k:k + 1] != ":":
            continue
        k = _skip_blanks(text, k + 1)
        v_start, v_end, quote = _value_span(text, k)
        value = text[v_start:v_end]
        if _public_key_value(value) or _public_name(text[n_start:n_end]):
            continue
        verdict = _judge_value(cls, value, quote, True)
        if verdict:
            rules = rules or {r.shape: r for r in table.scanner("words")}
            _found(out, v_start, v_end, rules["password" if cls == "password" else
                                              "secret"], verdict == "sure",
                   text[n_start:n_end] + ": \u2026")


# "my api key is <value>", "the access key: <value>": a phrase, then a value that only
# a secret looks like (sure or nothing: prose is noisy)
_KEY_PHRASES = ("api key", "access key", "secret key", "auth key", "license key",
                "app key", "signing key", "master key", "encryption key", "api token",
                "access token", "auth token", "bot token")


def _scan_key_phrases(text, low, table, out):
    if " key" not in low and " token" not in low:
        return
    rules = None
    for phrase in _KEY_PHRASES:
        for pos in _find_all(low, phrase):
            end = pos + len(phrase)
            if (pos and low[pos - 1] in _ALNUM_LOWER) or low[end:end + 1] in \
                    _ALNUM_LOWER or low[end:end + 1] in ("_", "-"):
                continue
            near = _nearby_value(text, end)
            if near is None:
                continue
            value = text[near[0]:near[1]].rstrip(".,")
            if len(value) < 16 or _code_reference(value, False) or \
                    _public_key_value(value) or _benign_value(value):
                continue
            if _judge_value("secret", value, "", False, strict_only=True) == "sure":
                rules = rules or {r.shape: r for r in table.scanner("words")}
                _found(out, near[0], near[0] + len(value), rules["secret"], True,
                       phrase + " \u2026")


def _scan_sql_passwords(text, low, table, out):
    """CREATE/ALTER USER ... IDENTIFIED BY 'password' (MySQL, Oracle, Snowflake)."""
    if "identified" not in low:
        return
    for pos in _find_all(low, "identified by"):
        k = _skip_blanks(text, pos + 13)
        if low.startswith("password", k):       # IDENTIFIED BY PASSWORD '*hash'
            continue
        if text[k:k + 1] not in ("\"", "'"):
            continue
        v_start, v_end, quote = _value_span(text, k)
        value = text[v_start:v_end]
        verdict = _judge_value("password", value, quote, True)
        if verdict:
            rule = {r.shape: r for r in table.scanner("words")}["password"]
            _found(out, v_start, v_end, rule, verdict == "sure", "IDENTIFIED BY \u2026")


_STRONG_WORDS = ("password", "passwd", "passphrase", "secret", "token", "api key",
                 "apikey", "api_key", "credential")


def _scan_nearby(text, name_start, name_end, rules, out):
    """"The password is <value>", "token <value>": a word then, a few words on, a value
    that only a secret looks like (sure or nothing: prose is noisy)."""
    if text[name_end:name_end + 1] not in (" ", "\t") or not any(
            word in text[name_start:name_end].lower() for word in _STRONG_WORDS):
        return
    near = _nearby_value(text, name_end)
    if near is None:
        return
    value = text[near[0]:near[1]].rstrip(".,")
    if len(value) < 6 or _code_reference(value, False):
        return
    cls = _secret_name(text[name_start:name_end])
    if cls and _judge_value(cls, value, "", False, strict_only=True) == "sure" and (
            cls != "password" or _classes(value.replace("-", "").replace(".", "")
                                          .replace("/", "")) >= 2):
        rule = rules["password" if cls == "password" else "secret"]
        _found(out, near[0], near[0] + len(value), rule, True,
               text[name_start:name_end] + " \u2026")


def _scan_keywords(text, low, table, word, out):
    """Keyword rules: HEROKU_API_KEY=<uuid>, "datadog_app_key": "<40>", ..."""
    rules = table.rules(table.keywords, word, _keyword_priority)
    for pos in _find_all(low, word):
        name_start, name_end, v_start, v_end, quote, op = _assignment(text, pos,
                                                                      pos + len(word))
        if v_start is None:
            continue
        name = low[name_start:name_end]
        parts = _name_parts(text[name_start:name_end])
        tail = parts[-1] if parts and parts[-1] in _BENIGN_TAILS else None
        value = text[v_start:v_end]
        if not value or not quote and _code_reference(value, False) and not _uuid(value):
            continue
        if _documented_example(value) or _public_key_value(value):
            continue
        for rule in rules:
            if tail and tail not in rule.tails:
                continue
            if not any(all(_names(w, name, parts) for w in alt) for alt in rule.keywords):
                continue
            for before, after in rule.parsed():
                if _match_forward(value, 0, after) == len(value):
                    if _entropy(value) < (rule.entropy or 2.5):
                        break
                    _found(out, v_start, v_end, rule, not _placeholder_value(value),
                           text[name_start:name_end] + op.strip() + "\u2026")
                    break


def _names(word, name, parts):
    """The keyword names the assignment: it is in the name, and a short one starts a
    word of it (sumo_key, SumoAccessId; not sumOfExposures)."""
    if word not in name:
        return False
    return len(word) >= 6 or not word.isalnum() or any(
        part.startswith(word) for part in parts)


def _scan_pem(text, low, table, out):
    """-----BEGIN ... PRIVATE KEY----- blocks, whole or cut (a window may hold only
    their head or their tail), in files or in JSON strings (literal \\n)."""
    rules = {rule.shape: rule for rule in table.scanner("pem")}
    covered = 0
    if "begin " not in low and "-----end " not in low:
        return
    for dashes in ("-----", "---- "):
        for pos in _find_all(low, dashes + "begin "):
            label_start = pos + len(dashes) + 6
            close = text.find(dashes.strip() if dashes == "-----" else "----",
                              label_start, label_start + 80)
            if close < 0:
                continue
            label = text[label_start:close].strip().upper()
            if "PRIVATE KEY" not in label:
                continue
            end, body = _pem_body(text, close + len(dashes.strip()))
            if body < 16:
                continue
            rule = rules.get(label) or rules[""]
            _found(out, pos, end, rule, body >= 16,
                   "-----BEGIN %s-----\u2026" % label)
            covered = max(covered, end)
    for pos in _find_all(low, "-----end "):     # a tail without its head
        close = text.find("-----", pos + 9, pos + 90)
        label = text[pos + 9:close].strip().upper() if close > 0 else ""
        if pos < covered or "PRIVATE KEY" not in label:
            continue
        start, body = _pem_body_backward(text, pos)
        if body >= 16:
            rule = rules.get(label) or rules[""]
            _found(out, start, close + 5, rule, body >= 16,
                   "\u2026-----END %s-----" % label)


_B64_CHARS = _ALNUM + "+/="
_PEM_HEADERS = ("proc-type:", "dek-info:", "comment:", "version:", "hash:", "charset:")


def _pem_body(text, pos):
    """(end, base64 characters) of a key body from pos: base64 runs, blank space,
    literal \\n, the header lines of encrypted PEM, through the END line."""
    size, body = len(text), 0
    while pos < size:
        mark = pos
        while mark < size and (text[mark] in " \t\r\n" or (
                text[mark] == "\\" and text[mark + 1:mark + 2] in ("n", "r"))):
            mark += 2 if text[mark] == "\\" else 1
        if text.startswith("-----END", mark) or text.startswith("---- END", mark):
            close = text.find("-----" if text[mark + 4] == "-" else "----", mark + 9,
                              mark + 100)
            width = 5 if text[mark + 4] == "-" else 4
            return (close + width if close > 0 else mark), body
        run = _run_length(text, mark, _B64_CHARS, 1, 1 << 16)
        if run > 0:
            body += run
            pos = mark + run
            continue
        if body < 200 and text[mark:mark + 12].lower().startswith(_PEM_HEADERS):
            line_end = text.find("\n", mark)
            pos = size if line_end < 0 else line_end
            continue
        break
    return pos, body


def _pem_body_backward(text, pos):
    start, body = pos, 0
    while start > 0:
        mark = start
        while mark > 0 and (text[mark - 1] in " \t\r\n" or (
                text[mark - 2:mark] in ("\\n", "\\r"))):
            mark -= 2 if text[mark - 1] in "nr" and text[mark - 2:mark - 1] == "\\" else 1
        chunk = text[max(0, mark - (1 << 16)):mark]
        run = len(chunk) - len(chunk.rstrip(_B64_CHARS))
        if not run:
            break
        body += run
        start = mark - run
    return start, body


def _scan_putty(text, low, table, out):
    rule = table.scanner("putty")[0]
    for pos in _find_all(low, "putty-user-key-file-"):
        lines = low.find("private-lines:", pos, pos + 16384)
        if lines < 0:
            continue
        _putty_lines(text, low, lines, rule, out)


def _scan_private_lines(text, low, table, out):
    """The private half of a .ppk pasted without its PuTTY-User-Key-File- line."""
    if "private-lines:" not in low:
        return
    rule = table.scanner("putty")[0]
    for lines in _find_all(low, "private-lines:"):
        _putty_lines(text, low, lines, rule, out)


def _putty_lines(text, low, lines, rule, out):
    """The base64 lines after Private-Lines: N (a count, then the line's end)."""
    k = _skip_blanks(text, lines + 14)
    count = _run_length(text, k, _DIGITS, 1, 4)
    if count < 0 or text[k + count:k + count + 1] not in ("\r", "\n"):
        return
    line_end = text.find("\n", lines)
    if line_end < 0:
        return
    end, body = _pem_body(text, line_end)
    mac = low.find("private-mac:", end, end + 8)
    if mac >= 0:
        mac_end = text.find("\n", mac)
        end = len(text) if mac_end < 0 else mac_end
    if body >= 16:
        _found(out, lines, end, rule, body >= 64, "Private-Lines: \u2026")


def _scan_jwk(text, low, table, out):
    rule = table.scanner("jwk")[0]
    members = rule.shape.split()
    for pos in _find_all(low, '"kty"'):
        start = text.rfind("{", max(0, pos - 8192), pos)
        end = text.find("}", pos, pos + 16384)
        if start < 0 or end < 0:
            continue
        for member in members:
            key = '"%s"' % member
            k = text.find(key, start, end)
            while k >= 0:
                colon = _skip_blanks(text, k + len(key), end)
                if text[colon:colon + 1] == ":":
                    quote = _skip_blanks(text, colon + 1, end)
                    if text[quote:quote + 1] == '"':
                        size = _run_length(text, quote + 1, _SECRET_CLASSES["b64u"], 16,
                                           8192)
                        if size > 0:
                            _found(out, quote + 1, quote + 1 + size, rule, size >= 32,
                                   '"%s": "\u2026"' % member)
                k = text.find(key, k + 1, end)


_SCHEME_CHARS = _ALNUM + "+.-"
_AUTHORITY_STOP = frozenset("/\\ \t\r\n\"'`<>()[]{}")   # a raw ? or # may sit in it


def _scan_urls(text, low, table, out):
    """scheme://user:password@host: the password (user may be empty: redis://:pw@)."""
    rule = table.scanner("url")[0]
    for pos in _find_all(text, "://"):
        head = text[max(0, pos - 32):pos]
        scheme = len(head) - len(head.rstrip(_SCHEME_CHARS))
        if scheme < 2 or not text[pos - scheme].isalpha():
            continue
        end = pos + 3
        limit = min(len(text), end + 1024)
        while end < limit and text[end] not in _AUTHORITY_STOP:
            end += 1
        at = text.rfind("@", pos + 3, end)
        colon = text.find(":", pos + 3, at) if at > 0 else -1
        if colon < 0 or at == colon + 1:
            continue
        password = text[colon + 1:at]
        if _code_reference(password, True) or _placeholder_value(password) or \
                password.startswith("[REDACTED"):
            continue
        _found(out, colon + 1, at, rule, len(password) >= 4,
               text[pos - scheme:colon + 1] + "\u2026@")


_TOKEN68 = _ALNUM + "._~+/-"
_AUTH_SCHEMES = ("bearer", "basic", "token", "bot", "digest", "apikey", "api-key",
                 "key", "ssws", "jwt", "sso-key", "splunk", "hawk", "negotiate")


def _scan_bearer(text, low, table, out):
    """Authorization: <scheme> <credentials>, and Bearer <token> anywhere."""
    bearer = table.scanner("bearer")[0]
    basic = table.scanner("basic")[0]
    for pos in _find_all(low, "bearer"):
        if pos and low[pos - 1] in _ALNUM_LOWER:
            continue
        _credentials(text, pos + 6, bearer, "Bearer \u2026", out, need_space=True)
    for pos in _find_all(low, "basic"):
        if pos and low[pos - 1] in _ALNUM_LOWER:
            continue
        start = _skip_blanks(text, pos + 5)
        if start == pos + 5:
            continue
        size = _run_length(text, start, _B64_CHARS, 8, 4096)
        if size > 0 and _check_digit("basic", "", text[start:start + size]):
            _found(out, start, start + size, basic, True, "Basic \u2026")
        elif size >= 16:       # no user:password inside, but credentials all the same
            value = text[start:start + size]
            if not (_wordy(value) or _placeholder_value(value) or
                    _code_reference(value, True)):
                _found(out, start, start + size, basic, _looks_random(value, True),
                       "Basic \u2026")
    for pos in _find_all(low, "authorization"):
        k = pos + 13
        while k < len(text) and text[k] in "\"' \t":
            k += 1
        if text[k:k + 1] not in (":", "="):
            continue
        k = _skip_blanks(text, k + 1)
        while k < len(text) and text[k] in "\"'":
            k += 1
        word_end = k
        while word_end < len(text) and (text[word_end].isalnum() or
                                        text[word_end] == "-"):
            word_end += 1
        if low[k:word_end] in ("bearer", "basic"):
            continue                      # read above
        if low[k:word_end] in _AUTH_SCHEMES:
            k = word_end
        _credentials(text, k, bearer, "Authorization: \u2026", out, need_space=False)


def _credentials(text, pos, rule, mask, out, need_space):
    start = _skip_blanks(text, pos)
    if need_space and start == pos:
        return
    size = _run_length(text, start, _TOKEN68, 8, 8192)
    if size < 0:
        return
    while text[start + size:start + size + 1] == "=":
        size += 1
    value = text[start:start + size]
    if _code_reference(value, True) or _placeholder_value(value) or _wordy(value):
        return
    _found(out, start, start + size, rule, _looks_random(value, True), mask)


_COOKIE_NAME = _ALNUM + "_.-"
_SESSION_NAMES = ("sess", "sid", "auth", "token", "jwt", "remember", "login",
                  "identity", "csrf", "xsrf")


def _scan_cookies(text, low, table, out):
    """Cookie: / Set-Cookie: / --cookie "...": the values of session cookies."""
    rule = table.scanner("cookie")[0]
    size = len(text)
    starts = [pos + 6 for pos in _find_all(low, "cookie")]
    if "curl" in low:           # curl -b 'name=value; ...'
        starts.extend(pos + 3 for pos in _find_all(text, " -b "))
    for start in starts:
        k = start
        while k < size and text[k] in " \t:=\"'":
            k += 1
        if k == start or text[start:k].strip(" \t") in ("", "=="):
            continue           # cookies, cookie_jar: a word, no header
        for _pair in range(32):
            name_end = k + _run_length(text, k, _COOKIE_NAME, 0, 128)
            if name_end == k or text[name_end:name_end + 1] != "=":
                break
            v_end = name_end + 1
            while v_end < size and text[v_end] not in " \t\r\n;\"'`,":
                v_end += 1
            name, value = low[k:name_end], text[name_end + 1:v_end]
            if any(word in name for word in _SESSION_NAMES) and len(value) >= 16 and \
                    not _placeholder_value(value) and not _code_reference(value, True):
                _found(out, name_end + 1, v_end, rule, _looks_random(value, False),
                       text[k:name_end] + "=\u2026")
            k = v_end
            while k < size and text[k] in "; \t":
                k += 1


_PGPASS_MARKS = (":*:", ":5432:", ":6432:", "pgpass")


def _scan_pgpass(text, low, table, out):
    """host:port:database:user:password entries (~/.pgpass): the words around a
    :5432: or :*: field, and every word in the lines after a mention of pgpass."""
    if not any(mark in low for mark in _PGPASS_MARKS):
        return
    rule = table.scanner("pgpass")[0]
    spans = []
    for mark in _PGPASS_MARKS:
        for pos in _find_all(low, mark):
            if mark == "pgpass":
                spans.append((pos, min(len(text), pos + 4096)))
            else:
                spans.append((max(0, pos - 256), pos + 1024))
    seen = set()
    for lo, hi in spans:
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        cursor = lo
        for word in text[lo:hi].split():
            start = text.find(word, cursor)
            cursor = start + len(word)
            if start in seen or word.count(":") < 4 or "//" in word:
                continue
            seen.add(start)
            fields = word.split(":")
            if not fields[0] or not (fields[1].isdigit() or fields[1] == "*"):
                continue
            password = ":".join(fields[4:])
            if len(password) < 4 or _placeholder_value(password) or \
                    _code_reference(password, True):
                continue
            at = start + len(":".join(fields[:4])) + 1
            _found(out, at, at + len(password), rule, True, ".pgpass \u2026")


_COMMAND_END = frozenset("\n;|&")
_PROGRAM_BEFORE = frozenset(" \t\n;|&(`\"'/$=")


def _shell_words(text, pos, limit=4096):
    """[(word, start, end)] of one simple command from pos: quotes and backslashes
    undone in word, start/end the raw span; stops at ; | & and the end of the line."""
    line_end = text.find("\n", pos, pos + limit)
    words, size = [], line_end if line_end >= 0 else min(len(text), pos + limit)
    while pos < size:
        pos = _skip_blanks(text, pos, size)
        if pos >= size or text[pos] in _COMMAND_END:
            break
        start, buf = pos, []
        while pos < size and text[pos] not in " \t" and text[pos] not in _COMMAND_END:
            ch = text[pos]
            if ch in ("'", '"'):
                close = text.find(ch, pos + 1, size)
                close = size if close < 0 else close
                buf.append(text[pos + 1:close])
                pos = close + 1
            elif ch == "\\" and pos + 1 < size:
                buf.append(text[pos + 1])
                pos += 2
            else:
                buf.append(ch)
                pos += 1
        words.append(("".join(buf), start, min(pos, size)))
    return words


def _cli_specs(rule):
    if rule.alternatives is None:
        programs, needed, flags = rule.shape.split("|")
        specs = []
        for flag in flags.split():
            name, _, extra = flag.partition("@")
            mode = name[-1] if name[-1] in "+=:%" else ""
            specs.append((name.rstrip("+=:%"), mode, extra))
        rule.alternatives = (programs.split(), needed.strip(), specs)
    return rule.alternatives


def _scan_cli(text, low, table, program, out):
    """Passwords given on a command line (mysql's glued -p, sshpass -p, docker login
    -p, curl -u user:password, smbclient -U user%password, openssl's pass:...)."""
    for rule in table.scanner("cli"):
        programs, needed, specs = _cli_specs(rule)
        if program not in programs:
            continue
        for pos in _find_all(low, program):
            end = pos + len(program)
            if (pos and low[pos - 1] not in _PROGRAM_BEFORE) or \
                    low[end:end + 1] not in (" ", "\t"):
                continue
            words = _shell_words(text, end)
            if needed and needed not in [w for w, _s, _e in words[:3]]:
                continue
            for span in _cli_values(text, words, specs):
                value = text[span[0]:span[1]].strip("\"'`").rstrip(",.;:)`")
                if len(value) >= 3 and not _code_reference(value, True) and \
                        not _placeholder_value(value):
                    _found(out, span[0], span[1], rule, len(value) >= 4,
                           "%s %s\u2026" % (program, span[2]))


def _cli_values(text, words, specs):
    """(start, end, flag) spans of the values the flags of specs carry."""
    positional = [w for w in words[1:] if not w[0].startswith("-")]
    for index, (word, start, end) in enumerate(words):
        for flag, mode, extra in specs:
            value = None
            if word == flag and mode not in ("+", "="):
                if extra.isdigit():
                    if int(extra) <= len(positional):
                        value = positional[int(extra) - 1][1:]
                elif index + 1 < len(words):
                    value = words[index + 1][1:]
            elif word.startswith(flag) and len(word) > len(flag) and not extra.isdigit():
                glued = word[len(flag):]
                if flag.startswith("--"):
                    if glued[0] == "=" and mode != "+":
                        value = (end - len(glued) + 1, end)
                elif mode != "=" and (mode == "+" or len(flag) == 2):
                    value = (end - len(glued), end)
            if value is None:
                continue
            v_start, v_end = value
            marks = (mode if mode in (":", "%") else "",
                     "" if extra.isdigit() else extra)
            for mark in marks:
                if mark:
                    cut = text.find(mark, v_start, v_end)
                    if cut < 0:
                        break
                    v_start = cut + len(mark)
            else:
                yield v_start, v_end, flag
            break


_B64_RUN = _ALNUM + "+/_.~-"
_B64_SPLIT = {}


def _bytes_split(keep):
    """A bytes.translate table that turns every byte not in keep into a space (C
    speed whatever the text holds, unlike str.translate on non-ASCII text)."""
    table = _B64_SPLIT.get(("bytes", keep))
    if table is None:
        table = bytearray(b" " * 256)
        for byte in keep.encode():
            table[byte] = byte
        table = _B64_SPLIT[("bytes", keep)] = bytes(table)
    return table


def _split_table(keep):
    table = _B64_SPLIT.get(keep)
    if table is None:
        table = _B64_SPLIT[keep] = str.maketrans(
            {chr(c): " " for c in range(128) if chr(c) not in keep})
    return table


def _scan_long_values(text, low, table, out):
    """Long high-entropy runs: the bare 40-character AWS secret key, and the value of
    an upper-case NAME= that is no digest, UUID, path or word (a .env secret)."""
    bare = table.scanner("bare")[0]
    env = table.scanner("env")[0]
    cursor = 0
    aws = "aws" in low or "akia" in low or "asia" in low
    for raw in text.encode("ascii", "replace").translate(_bytes_split(_B64_RUN)).split():
        if len(raw) < 20:
            continue
        token = raw.decode("ascii")
        pos = text.find(token, cursor)
        cursor = pos + len(token)
        if len(token) >= 40 and token[0] in "Mb" and _key_body(token):
            end = _key_body_end(text, cursor, len(token))
            _found(out, pos, end, table.scanner("keybody")[0], True,
                   token[:4] + "\u2026")
            cursor = max(cursor, end)
            continue
        if len(token) == 40 and not set(token) - _B64_SET and \
                text[cursor:cursor + 1] != "=":
            score = _aws_secret_score(token, aws)
            if score and _public_context(text, low, pos):
                score = 0          # a reCAPTCHA site key: 40 characters, public
            if score:
                _found(out, pos, cursor, bare, score > 1, "\u2026 (40 characters)")
                continue
        if len(token) in (51, 52) and token[0] in "5KL" and _wif(token):
            _found(out, pos, cursor, table.scanner("bare")[1], True,
                   "\u2026 (WIF, %d characters)" % len(token))
            continue
        quote = text[pos - 1:pos] if text[pos - 1:pos] in ("'", '"') else ""
        eq = pos - 1 - len(quote)
        if eq <= 0 or text[eq] != "=":
            continue
        head = text[max(0, eq - 64):eq]
        name = head[len(head.rstrip(_ALNUM + "_")):]
        if not name or not name[0].isupper() or not name.replace("_", "").isupper() or \
                (_name_parts(name) or [""])[-1] in _BENIGN_TAILS:
            continue
        value = token.rstrip(".")
        if _public_key_value(value) or _public_name(name) or \
                _placeholder_value(value, anchored=True):
            continue
        if token.endswith("...") or _benign_value(value) or _wordy(value) or set(value) <= _HEX_SET or \
                _typed_run(value.lower()) or \
                _entropy(value) < 4.0 or _classes(value) < 3:
            continue
        _found(out, pos, pos + len(value), env, False, name + "=\u2026")


_B64_SET = frozenset(_ALNUM + "+/")


# ---- private keys without their armour lines -------------------------------
# The body of a key pasted without -----BEGIN/END----- says what it is all the same:
# OpenSSH's files start with base64 of "openssh-key-v1\0"; a DER private key is a
# SEQUENCE whose first member is a version INTEGER (0 or 1) and whose second is an
# INTEGER (PKCS#1 RSA, DSA), a SEQUENCE (PKCS#8) or an OCTET STRING (SEC1 EC). A
# public key (SEQUENCE, SEQUENCE), a certificate (SEQUENCE, SEQUENCE, [0]) and a
# PKCS#12 bundle (version 3) are none. Encrypted PKCS#8 starts with the OID of PBES.
_OPENSSH_BODY = "b3BlbnNzaC1rZXktdjE"
_PBES_OIDS = (b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x0d",
              b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x03",
              b"\x06\x0a\x2a\x86\x48\x86\xf7\x0d\x01\x0c\x01")


def _key_body(token):
    """token (a base64 run of 40+ characters) starts a private key's body."""
    if token.startswith(_OPENSSH_BODY):
        return _entropy(token[19:275]) >= 3.0
    if not token.startswith("M") or set(token[:32]) - _B64_SET:
        return False
    der = _b64_decode(token[:32])
    if not der or der[0] != 0x30 or len(der) < 12:
        return False
    k = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7f)
    if der[1] in (0x80, 0x85, 0x86, 0x87, 0x88) or k + 3 > len(der):
        return False
    member = der[k:k + 3]
    if member in (b"\x02\x01\x00", b"\x02\x01\x01"):
        follows = der[k + 3:k + 4]
        return follows in (b"\x02", b"\x30", b"\x04") and \
            _entropy(token[:256]) >= 3.5
    if member[:1] == b"\x30":        # SEQUENCE, SEQUENCE: encrypted PKCS#8, or public
        inner = k + 2 if member[1] < 0x80 else k + 2 + (member[1] & 0x7f)
        return der[inner:inner + 10] in {oid[:10] for oid in _PBES_OIDS}
    return False


def _key_body_end(text, end, width):
    """The end of a key body that goes on over wrapped lines (each as wide as the
    first, and its padding), on real or escaped (\\n) line breaks."""
    size = len(text)
    while True:
        while text[end:end + 1] == "=":
            end += 1
        k = end
        if text.startswith("\\n", k) or text.startswith("\\r\\n", k):
            k += 2 if text[k + 1] == "n" else 4
        elif text[k:k + 1] in ("\n", "\r"):
            k += 2 if text.startswith("\r\n", k) else 1
        else:
            return end
        k = _skip_blanks(text, k, size)
        run = _run_length(text, k, _SECRET_CLASSES["b64"], 4, width)
        if run < 0 or (text[k + run:k + run + 1] not in ("", "=", "\n", "\r", "\\",
                                                          "\"", "'", " ")):
            return end
        end = k + run
        if run < width:                  # the last line
            while text[end:end + 1] == "=":
                end += 1
            return end


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _aws_secret_score(token, aws):
    """0 (no secret), 1 (likely: redact) or 2 (sure: refuse) for a bare 40-character
    base64 run. Near an AWS word or key id, a random run is sure; alone, the mix
    decides: a / or + with upper, lower and digits, or all three twice over with the
    entropy of a generator. Base64 of text (printable bytes) and words are none."""
    if _classes(token) < 3 or _wordy(token) or _typed_run(token.lower()):
        return 0
    entropy = _entropy(token)
    if entropy < 4.0:
        return 0
    decoded = _b64_decode(token)
    if decoded is not None and all(32 <= b < 127 or b in (9, 10, 13) for b in decoded):
        return 0               # base64 of text, not of random bytes
    if _documented_example(token):
        return 0               # wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY: public text
    if _placeholder_value(token, anchored=True):
        return 1
    if aws or (("/" in token or "+" in token) and entropy >= 4.2):
        return 2
    counts = [sum(ch in group for ch in token) for group in (_LOWER, _UPPER, _DIGITS)]
    return 2 if entropy >= 4.4 and min(counts) >= 2 else 1


def _wif(token):
    """A Bitcoin private key in wallet import format: base58 of 0x80, 32 bytes (and
    0x01 when compressed), then the first 4 bytes of its double SHA-256."""
    number = 0
    for ch in token:
        digit = _BASE58.find(ch)
        if digit < 0:
            return False
        number = number * 58 + digit
    size = 37 if len(token) == 51 else 38
    try:
        raw = number.to_bytes(size, "big")
    except OverflowError:
        return False
    if raw[0] != 0x80 or (size == 38 and raw[33] != 1):
        return False
    import hashlib
    check = hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4]
    return check == raw[-4:]


def _scan_regexes(text, table, wanted, out):
    import re
    for rule in table.regexes:
        if wanted is not None and rule.id not in wanted:
            continue
        if rule.regex.__class__ is str:
            rule.regex = re.compile(rule.regex)
        group = 1 if rule.regex.groups else 0
        for match in rule.regex.finditer(text):
            _found(out, match.start(group), match.end(group), rule, True,
                   rule.name + " \u2026")


# ---- the pass --------------------------------------------------------------

_HEAD = slice(0, 4)


def _scan_for_secrets(text, extra):
    """Every finding in text, overlaps merged: one pass of the pre-filter, then only
    the rules and scanners whose heads the text shows."""
    low = text.lower()
    if len(low) != len(text):     # a few characters lower to two: keep positions
        low = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    words = low.encode("utf-8", "ignore").translate(
        _bytes_split(_ALNUM_LOWER_STR)).split()
    heads = set(map(bytes.__getitem__, words, [_HEAD] * len(words)))   # C speed
    if not extra and heads.isdisjoint(SECRET_HEADS) and all(
            {h[:size] for h in heads}.isdisjoint(index) for size, index in
            SECRET_PREFIXES):
        table = _lite_table()
    else:
        table = _secret_table(extra)
    triggers = list(table.always)
    for head in heads.intersection(table.by_head):
        triggers.extend(table.by_head[head])
    for size, index in table.by_prefix.items():
        for head in {head[:size] for head in heads}.intersection(index):
            triggers.extend(index[head])
    out, wanted = [], set()
    scanners = {_scan_words, _scan_urls, _scan_long_values, _scan_pgpass, _scan_headers,
                _scan_sql_passwords, _scan_name_value_pairs, _scan_key_phrases,
                _scan_private_lines}
    for kind, what in dict.fromkeys(triggers):
        if kind == "anchor":
            _scan_anchor(text, low, table, what, out)
        elif kind == "kw":
            _scan_keywords(text, low, table, what, out)
        elif kind == "cli":
            _scan_cli(text, low, table, what, out)
        elif kind == "regex":
            wanted.add(what)
        else:
            scanners.add(_SCANNERS[what])
    for scanner in scanners:
        scanner(text, low, table, out)
    if table.regexes:
        wanted.update(rule.id for rule in table.regexes if not rule.keywords)
        if wanted:
            _scan_regexes(text, table, wanted, out)
    return _merge(out)


def _scan_anchor(text, low, table, key, out):
    """Every place the anchor `key` stands, matched against its rules in table order
    (the first that fits wins: a routable GitLab token before a classic one)."""
    rules = table.rules(table.anchors, key, _anchor_priority)
    if all(rule.keywords for rule in rules) and not any(
            alt[0] in low for rule in rules for alt in rule.keywords):
        return                 # "|" is everywhere, "facebook" is not: skip the anchor
    exact = rules[0].infix and not rules[0].ci   # 8Q~, :AA: found as written
    for pos in _find_all(text if exact else low, rules[0].anchor if exact else key):
        for rule in rules:
            finding = _match_anchored(text, low, pos, rule)
            if finding is not None:
                out.append(finding)
                break


_SCANNERS = {"begin": _scan_pem, "end": _scan_pem, "putty": _scan_putty,
             "kty": _scan_jwk, "bearer": _scan_bearer, "basic": _scan_bearer,
             "authorization": _scan_bearer, "cookie": _scan_cookies,
             "curl": _scan_cookies}


def _merge(findings):
    """Overlapping findings become one span, labelled by the surest, most specific
    of them (a GitHub token inside a URL is a GitHub token)."""
    if not findings:
        return ()
    findings.sort(key=lambda f: (f.start, -f.end))
    merged, group = [], [findings[0]]
    end = findings[0].end
    for finding in findings[1:]:
        if finding.start < end:
            group.append(finding)
            end = max(end, finding.end)
            continue
        merged.append(_best(group, end))
        group, end = [finding], finding.end
    merged.append(_best(group, end))
    return tuple(merged)


def _best(group, end):
    if len(group) == 1:
        return group[0]
    best = max(group, key=lambda f: (f.priority, f.end - f.start))
    return SecretFinding(group[0].start, end, best.rule, best.name,
                         any(f.sure for f in group), best.mask, best.priority)


# ---- the API: scan once, redact, then cut ----------------------------------

_ASSIGNING = frozenset("=: \t@")
_ACTIVE_RULES = [()]          # the project's own patterns (laws.json), set per estate
_SCAN_MEMO = {}
SCAN_MEMO_MAX = 64
REDACT_MARGIN = 1024          # characters read past a cut, so a secret across it is whole
REDACT_TAIL_MARGIN = 16384    # before a tail cut: a private key's head lies far back


def scan_secrets(text, rules=None):
    """Every secret in text: a tuple of Findings sorted by start, overlaps merged.
    rules: the project's extra rules (default: those activated for the estate).
    Each text is scanned once: the answer is kept for the next caller."""
    if not isinstance(text, str) or len(text) < 8 or (
            len(text) < 14 and _ASSIGNING.isdisjoint(text)):
        return ()             # too short for a token, no room for NAME=value
    extra = _ACTIVE_RULES[0] if rules is None else rules
    key = (text, extra)
    found = _SCAN_MEMO.get(key)
    if found is None:
        found = _scan_for_secrets(text, extra)
        _remember(key, found)
    return found


def _remember(key, found):
    if len(_SCAN_MEMO) >= SCAN_MEMO_MAX:
        _SCAN_MEMO.clear()
    _SCAN_MEMO[key] = found


def find_secrets(text, strict=False, rules=None):
    """[(kind, start, end)] of secret values in text. strict: only sure findings
    (what the secret-in-prompt law refuses); else all that redaction removes."""
    return [(f.rule, f.start, f.end) for f in scan_secrets(text, rules)
            if f.sure or not strict]


def redact_secrets(text, rules=None):
    """The text with every secret replaced by [REDACTED:kind]."""
    if not isinstance(text, str):
        return text
    found = scan_secrets(text, rules)
    if not found:
        return text
    out, pos = [], 0
    for finding in found:
        out.append(text[pos:finding.start])
        out.append("[REDACTED:%s]" % finding.rule)
        pos = finding.end
    out.append(text[pos:])
    clean = "".join(out)
    _remember((clean, _ACTIVE_RULES[0] if rules is None else rules), ())
    return clean


def redact_clip(text, limit, tail=False, squash=False, ends=False):
    """Redact first, cut after: at most `limit` characters of text (its head, or its
    tail), every secret redacted in full even when it lies across the cut. Only a
    window around the cut is read; the window is widened to the end of the word it
    cuts, so a long token is never seen in part. squash: runs of white space become
    one space (after redaction: some formats span lines). ends: the head and the
    tail, `limit` characters each, around a marked cut (errors print their cause
    first and their summary last)."""
    text = "" if text is None else str(text)
    if ends:
        if len(text) <= 2 * limit + 20:
            return redact_clip(text, len(text), squash=squash)
        return "%s\n[\u2026 %d characters cut \u2026]\n%s" % (
            redact_clip(text, limit + 1, squash=squash)[:-1], len(text) - 2 * limit,
            redact_clip(text, limit + 1, tail=True, squash=squash)[1:])
    if len(text) <= limit:
        out = redact_secrets(text)
        return " ".join(out.split()) if squash else out
    extra = _ACTIVE_RULES[0]
    if (text, extra) in _SCAN_MEMO:
        window = text
    elif tail:
        start = max(0, len(text) - limit - REDACT_TAIL_MARGIN)
        while start > 0 and len(text) - start < limit + 4 * REDACT_TAIL_MARGIN and \
                not text[start - 1].isspace():
            start -= 1
        window = text[start:]
    else:
        end = limit + REDACT_MARGIN
        while end < len(text) and end < limit + 64 * REDACT_MARGIN and \
                not text[end].isspace():
            end += 1
        window = text[:end]
    redacted = redact_secrets(window)
    if squash:
        redacted = " ".join(redacted.split())
    if tail:
        out = redacted if len(redacted) <= limit else \
            "\u2026" + redacted[-max(0, limit - 1):]
    else:
        out = clip(redacted, limit)
    _remember((out, extra), ())
    return out


def redact_record(value, limit=JOURNAL_TEXT_MAX):
    """Every string in a JSON-like value redacted, then clipped to limit."""
    if isinstance(value, str):
        return redact_clip(value, limit)
    if isinstance(value, dict):
        return {str(k): redact_record(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_record(v, limit) for v in value]
    return value


def describe_secrets(text, findings, shown=3):
    """Where the findings are, masked, for the person to fix the prompt:
    GitLab personal access token (`glpat-…`, line 3, characters 10-36)."""
    parts = []
    for finding in findings[:shown]:
        line = text.count("\n", 0, finding.start) + 1
        line_start = text.rfind("\n", 0, finding.start) + 1
        last = text.count("\n", 0, max(finding.start, finding.end - 1)) + 1
        if last == line:
            where = "line %d, characters %d-%d" % (line, finding.start - line_start + 1,
                                                   finding.end - line_start)
        else:
            where = "lines %d-%d" % (line, last)
        parts.append("%s (`%s`, %s)" % (finding.name, finding.mask, where))
    more = len(findings) - shown
    return "; ".join(parts) + (" and %d more" % more if more > 0 else "")


# ---- project patterns (laws.json "secret_patterns") ------------------------

SECRET_PATTERN_CHARSETS = {"alnum": "an", "upper-alnum": "AN", "lower-alnum": "al",
                           "hex": "h", "HEX": "H", "hex-any-case": "hH",
                           "base64": "b64", "base64url": "b64u", "base32": "b32",
                           "digits": "d", "letters": "aA", "word": "w"}
SECRET_PATTERN_FIELDS = ("id", "name", "prefix", "charset", "min", "max", "entropy",
                         "regex", "keywords", "comment")
_PATTERN_CACHE = {}


def compile_secret_patterns(value):
    """(rules, problems) from the "secret_patterns" list of laws.json. Each pattern is
    a prefix with a charset and a length, or a regular expression (checked like every
    regex of laws.json); the same list gives the same rules (cached)."""
    if not value:
        return (), []
    key = json_dumps(value)
    cached = _PATTERN_CACHE.get(key)
    if cached is None:
        cached = _PATTERN_CACHE[key] = _compile_patterns(value)
    return cached


def _compile_patterns(value):
    if not isinstance(value, list):
        return (), ["`secret_patterns` must be a list of objects"]
    rules, problems, seen = [], [], set()
    for item in value:
        rule, why = _compile_pattern(item)
        if why:
            problems.append(why)
        elif rule.id in seen:
            problems.append("secret pattern %s is given twice" % rule.id)
        else:
            seen.add(rule.id)
            rules.append(rule)
    return tuple(rules), problems


def _compile_pattern(item):
    """(SecretRule, None) or (None, the problem)."""
    if not isinstance(item, dict):
        return None, "a secret pattern must be an object"
    pid = item.get("id")
    if not (isinstance(pid, str) and 0 < len(pid) <= 64 and pid[0].isalnum() and
            all(c.isalnum() or c in "-_." for c in pid)):
        return None, ("secret pattern id %r must be a slug (letters, digits, - _ .)"
                      % (pid,))
    unknown = sorted(set(item) - set(SECRET_PATTERN_FIELDS))
    if unknown:
        return None, "secret pattern %s: unknown fields %s" % (pid, ", ".join(unknown))
    name = item.get("name", pid)
    if not isinstance(name, str) or not name.strip() or len(name) > 80:
        return None, "secret pattern %s: `name` must be a short text" % pid
    keywords = item.get("keywords", [])
    if not isinstance(keywords, list) or not all(
            isinstance(k, str) and 2 <= len(k) <= 40 and k.strip() == k
            for k in keywords):
        return None, "secret pattern %s: `keywords` must be a list of words" % pid
    entropy = item.get("entropy", 0)
    if not isinstance(entropy, (int, float)) or not 0 <= entropy <= 6:
        return None, "secret pattern %s: `entropy` must be a number from 0 to 6" % pid
    if "regex" in item:
        return _compile_regex_pattern(item, pid, name, keywords)
    prefix, charset = item.get("prefix"), item.get("charset", "alnum")
    if not isinstance(prefix, str) or len(prefix) < 3 or len(prefix) > 64 or \
            any(ch.isspace() for ch in prefix):
        return None, ("secret pattern %s: give a `prefix` of 3 to 64 characters without "
                      "spaces, or a `regex`" % pid)
    if not isinstance(charset, str) or not charset or len(charset) > 128:
        return None, "secret pattern %s: `charset` must be a text" % pid
    chars = _SECRET_CLASSES[SECRET_PATTERN_CHARSETS[charset]] \
        if charset in SECRET_PATTERN_CHARSETS else charset
    low = item.get("min", 16)
    high = item.get("max", max(low, 256) if isinstance(low, int) else low)
    if not (isinstance(low, int) and isinstance(high, int) and 8 <= low <= high <= 4096):
        return None, "secret pattern %s: need 8 <= min <= max <= 4096" % pid
    rule = SecretRule((pid, name, prefix, "", "ent=%s" % entropy),
                      priority=300 + len(prefix))
    rule.alternatives = [([], [(chars, low, high)])]
    return rule, None


def _compile_regex_pattern(item, pid, name, keywords):
    pattern = item["regex"]
    problem = regex_problem(pattern)
    if problem:
        return None, "secret pattern %s: `regex` %s" % (pid, problem)
    rule = SecretRule((pid, name, "", "", "kw=%s" % "|".join(k.lower() for k in keywords)
                       if keywords else ""), priority=250)
    rule.regex = pattern
    return rule, None


def activate_secret_patterns(rules):
    """Make a project's patterns part of every redaction in this process."""
    _ACTIVE_RULES[0] = tuple(rules)


# ==== shell parsing =========================================================
# Parse, don't grep: a shell line becomes simple commands (argv after quote
# removal, redirections, heredoc bodies), with wrappers unwrapped and nested
# scripts (`bash -c`, `eval`, `$(...)`, backticks) parsed in turn. Quoted text
# handed to a harmless program stays data. What a command runs is followed as
# well: the script of `sh x.sh`, `./x`, `source x`, a make recipe, a package.json
# script, an interpreter's code (its shell calls and file operations become the
# commands that do the same), and what xargs, parallel, find -exec, ssh or
# docker exec run. A word the line cannot know is Opaque, a pattern is Glob, what
# a find or a listing yields is Found: each law judges them as they deserve. The
# cost is linear in the text and bounded (PARSE_TEXT_MAX, PARSE_WORDS_MAX,
# SCRIPT_BUDGET_BYTES); past a bound the parse says why it is too large to judge.

_SHELL_OPS = ("&&", "||", ";;", ";&", "|&", ";", "&", "|", "(", ")", "\n")
_REDIR_OPS = ("&>>", "<<<", "<<-", "&>", ">>", ">|", "<<", "<>", ">&", "<&", ">", "<")
_META = frozenset(" \t\n;&|()<>")
_OP_STARTS = frozenset(";&|()<>\n")
_SHELL_KEYWORDS = frozenset(("!", "{", "}", "then", "do", "else", "elif", "if", "while",
                             "until", "fi", "done", "esac", "function", "in"))
SHELL_NAMES = frozenset(("sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish",
                         "busybox", "rbash", "yash", "tcsh", "csh", "oksh", "loksh",
                         "posh", "mrsh", "osh", "ysh", "oil", "elvish", "xonsh", "nu",
                         "ion", "rc", "es"))
# (the last ones are not POSIX shells, but `-c TEXT` runs TEXT as commands, and a
# simple command reads the same in each: `nu -c "rm -rf ~"` is `rm -rf ~`)
INTERPRETERS = frozenset(("python", "python2", "python3", "node", "nodejs", "deno", "bun",
                          "perl", "ruby", "php", "lua", "luajit", "Rscript", "R", "pwsh",
                          "osascript", "expect", "tclsh", "wish", "julia", "raku"))
PARSE_DEPTH_MAX = 8
PARSE_TEXT_MAX = 1 << 20          # characters of shell text in one piece
PARSE_WORDS_MAX = 50000           # words in one tool call, what it runs included
PARSE_COMMANDS_MAX = 10000        # simple commands in one tool call
SCRIPT_READ_MAX = 512 * 1024      # bytes of one script the gate reads
SCRIPT_BUDGET_BYTES = 2 << 20     # bytes of scripts read for one tool call
SMALL_FILE_MAX = 64 * 1024        # a list xargs reads, a package.json
FANOUT_MAX = 64                   # commands made from the items of one xargs -I
UNKNOWN_WORD = "${__notrest_unknown}"
PROC_PATH = "/dev/fd/63"          # what <(...) expands to; its text is the script's output
ITEM_VAR = "__notrest_item"
NOTREST_NAMES = ("notrest", "notrest.py")
SPAWNED = -1                      # a peeler ran what the wrapper runs: drop the wrapper


def readers():
    """The gate readers (inline code, makefiles, package scripts, archives, diffs,
    git, the rarer wrappers): below the cold line, loaded only by a call that needs
    one, with the hot part's own classes lent to them so that what they build is
    of one kind with what the hot part builds."""
    module = cold_module()
    if module.__dict__ is not globals() and not globals().get("_READERS_LENT"):
        for name, value in list(globals().items()):
            if isinstance(value, type) and name in module.__dict__:
                setattr(module, name, value)
        globals()["_READERS_LENT"] = True
    return module


def _reader(name):
    """A stand-in in the hot part for the reader `name` below the cold line (the
    whole module defines the reader itself, which replaces this)."""
    def call(*args, **kwargs):
        return getattr(readers(), name)(*args, **kwargs)
    call.__name__ = name
    return call


_peel_parallel = _reader("_peel_parallel")
_peel_at = _reader("_peel_at")
_peel_crontab = _reader("_peel_crontab")
_peel_screen = _reader("_peel_screen")
_peel_tmux = _reader("_peel_tmux")
_peel_gdb = _reader("_peel_gdb")
_peel_editor = _reader("_peel_editor")
follow_awk = _reader("follow_awk")
follow_sed = _reader("follow_sed")
follow_code_options = _reader("follow_code_options")
follow_git = _reader("follow_git")
_peel_sem = _reader("_peel_sem")
_peel_ssh = _reader("_peel_ssh")
_follow_container = _reader("_follow_container")
_follow_kubectl = _reader("_follow_kubectl")


def _peel_container(cmd, state, cmds, depth):
    """docker/podman exec|run: judged below the cold line; other verbs pass."""
    if any(w in ("exec", "run") for w in cmd.argv[1:5]):
        return _follow_container(cmd, state, cmds, depth)
    return None


def _peel_kubectl(cmd, state, cmds, depth):
    if "exec" in cmd.argv[1:6]:
        return _follow_kubectl(cmd, state, cmds, depth)
    return None
_follow_make = _reader("_follow_make")
_follow_package = _reader("_follow_package")
note_archive = _reader("note_archive")
extract_plan = _reader("extract_plan")
_tar_options = _reader("_tar_options")
patch_command_targets = _reader("patch_command_targets")
git_patch_targets = _reader("git_patch_targets")
_judge_git_worktree = _reader("_judge_git_worktree")
_agents_block_hit = _reader("_agents_block_hit")
_classify_unknown = _reader("_classify_unknown")
_find_may_hit_harness = _reader("_find_may_hit_harness")
_found_may_read_secret = _reader("_found_may_read_secret")
tree_secret = _reader("tree_secret")
printed_text = _reader("printed_text")
_judge_cli_verbs = _reader("judge_cli")
_peel_read = _reader("_peel_read")
_mktemp_path = _reader("_mktemp_path")
regex_shape_problem = _reader("regex_shape_problem")


class Word:
    """A shell word as parts: ('lit', text, quoted) ('var', name, default, quoted)
    ('sub', script, quoted) ('proc', script: a process substitution) ('tilde', user)."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts = []

    def add(self, kind, *data):
        self.parts.append((kind,) + data)


class Redirect:
    __slots__ = ("op", "fd", "target", "body")

    def __init__(self, op, fd):
        self.op, self.fd, self.target, self.body = op, fd, None, None


class Opaque(str):
    """A word the line cannot know (an unknown variable or substitution, `read`,
    a loop over unknown values): its text stands in for it."""


class Glob(str):
    """A word the shell expands as a pattern (`*.log`, a loop over `*`)."""


class Found(str):
    """A word that stands for every path a `find` yields (its `{}`), or what a
    listing feeds to xargs: the text is the first starting point; `finder` is the
    find command (its FindInfo says what it reaches), None when nothing is known."""

    finder = None


def found_word(text, finder):
    word = Found(text)
    word.finder = finder
    return word


class FindInfo:
    """A find's expression read as find reads it: starting points, name and path
    tests, what is pruned or excluded, the actions. Words inside -exec ... ; are
    the program's, never find's (`-exec echo -delete \\;` deletes nothing)."""

    __slots__ = ("roots", "tests", "excluded", "narrowed", "deleting", "execs",
                 "outputs", "follow", "empty")

    def __init__(self):
        self.roots, self.tests, self.excluded, self.execs, self.outputs = [], [], [], [], []
        self.narrowed = self.deleting = self.follow = False
        self.empty = False   # -empty holds for all it yields (no -o, no negation)


class ParseShared:
    """What the parse of one tool call shares with everything it runs: the
    symlinks and files the line itself makes, the budgets, and why the call was
    too large to judge."""

    __slots__ = ("links", "written", "pending", "words", "commands", "script_bytes",
                 "too_large", "fork_bomb", "shallow", "unknown", "interactive", "aliases")

    def __init__(self, shallow=False):
        self.links, self.written, self.pending = {}, {}, []
        self.unknown = []        # (cmd, why): code the line runs that the gate cannot read
        self.interactive = None  # a shell or interpreter left reading the call's stdin
        self.aliases = {}
        self.words = self.commands = self.script_bytes = 0
        self.too_large = ""
        self.fork_bomb = False
        self.shallow = shallow  # only the line itself: no scripts, code or recipes read

    def note(self, cmd, text, value):
        """Remember what the line writes to a file: text, ("copy", source word) or
        ("archive", member names). Resolved only when a later word asks."""
        self.pending.append((cmd.cwd, cmd.env.get("HOME"), text, value))

    def made(self, path):
        """What this line wrote to path (see note), or None."""
        for cwd, home, text, value in self.pending:
            if isinstance(value, tuple) and value[0] == "copy":
                value = ("copy", resolve_path(value[1], cwd, home, True, self.links))
            self.written[resolve_path(text, cwd, home, True, self.links)] = value
        self.pending = []
        return self.written.get(path)


class Cmd:
    """One simple command, expanded as far as the line itself tells."""

    __slots__ = ("argv", "redirects", "cwd", "env", "via", "pipeline", "pos", "depth",
                 "feeds", "subs", "shared", "origin", "find", "cli", "_text", "_first",
                 "_prog")

    def __init__(self):
        self.argv, self.redirects, self.via, self.subs = [], [], [], []
        self.cwd, self.env, self.pipeline, self.pos, self.depth = "", {}, 0, 0, 0
        self.feeds = self.shared = self.find = self.cli = self._text = None
        self._first, self._prog, self.origin = None, "", ""

    @property
    def prog(self):
        argv = self.argv
        if not argv:
            return ""
        if argv[0] is not self._first:
            self._first, self._prog = argv[0], os.path.basename(argv[0])
        return self._prog

    @property
    def unknown(self):
        return [isinstance(arg, Opaque) for arg in self.argv]

    @property
    def globbed(self):
        return [isinstance(arg, Glob) for arg in self.argv]

    def text(self):
        """The command as one line: its words, then its redirections."""
        if self._text is None:
            words = list(self.argv)
            for redirect in self.redirects:
                if isinstance(redirect.target, str) and redirect.op not in ("<<", "<<-"):
                    words.append("%s%s %s" % (redirect.fd, redirect.op, redirect.target))
            self._text = " ".join(words)
        return self._text

    def shown(self, limit=160):
        """The command as a verdict quotes it: where it came from, clipped."""
        text = self.text()
        return redact_clip("%s: %s" % (self.origin, text) if self.origin else text, limit)


def _find_closing(src, i, opening, closing):
    """Index of the `closing` that balances an `opening` before i (quotes aware)."""
    return _scan(src, i, closing)


def _skip_double(src, i):
    """Index after the double quote that closes a string opened before i."""
    end = _scan(src, i, '"')
    return end + 1 if end < len(src) else end


def _scan(src, i, closer):
    """Walk src from i inside an open context (its closer: ')' '}' or '"'), aware
    of quotes, backticks and nested $( ) and parentheses, without recursion (a
    line an agent writes can nest as deep as it likes); the index of the closer
    that ends the context, or len(src)."""
    n, stack = len(src), [closer]
    while i < n:
        c, top = src[i], stack[-1]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            j = i + 1
            while j < n and src[j] != "`":
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if top == '"':
            if c == '"':
                stack.pop()
                if not stack:
                    return i
            elif c == "$" and src[i + 1:i + 2] == "(":
                stack.append(")")
                i += 1
            i += 1
            continue
        if c == "'":
            j = src.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            stack.append('"')
        elif (c == "(" and top == ")") or (c == "{" and top == "}"):
            stack.append(top)
        elif c == top:
            stack.pop()
            if not stack:
                return i
        i += 1
    return n


_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
                 "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"',
                 "?": "?"}


def _ansi_c(src, i):
    """Decode $'...' starting after the opening quote: (text, index after)."""
    out, n = [], len(src)
    while i < n and src[i] != "'":
        c = src[i]
        if c == "\\" and i + 1 < n:
            nxt = src[i + 1]
            if nxt in _ANSI_ESCAPES:
                out.append(_ANSI_ESCAPES[nxt])
                i += 2
            elif nxt == "x":
                j = i + 2
                while j < n and j < i + 4 and src[j] in "0123456789abcdefABCDEF":
                    j += 1
                out.append(chr(int(src[i + 2:j] or "0", 16)))
                i = j
            elif nxt in "01234567":
                j = i + 1
                while j < n and j < i + 4 and src[j] in "01234567":
                    j += 1
                out.append(chr(int(src[i + 1:j], 8)))
                i = j
            else:
                out.append(nxt)
                i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out), i + 1


def _read_dollar(src, i, word, quoted):
    """Read an expansion at src[i] == '$'; return the index after it."""
    n = len(src)
    nxt = src[i + 1:i + 2]
    if src.startswith("$((", i):
        end = _find_closing(src, i + 3, "(", ")")
        inner = src[i + 3:end]
        if "$(" in inner or "`" in inner:  # $(( $(cmd) )): cmd runs
            word.add("sub", "echo " + inner, quoted)
        else:
            word.add("lit", "0", quoted)
        return min(n, end + 2)
    if nxt == "(":
        end = _find_closing(src, i + 2, "(", ")")
        word.add("sub", src[i + 2:end], quoted)
        return end + 1
    if nxt == "{":
        end = _find_closing(src, i + 2, "{", "}")
        inner = src[i + 2:end]
        j = 0
        while j < len(inner) and (inner[j].isalnum() or inner[j] == "_"):
            j += 1
        name, rest = inner[:j], inner[j:]
        default = None
        for marker in (":-", "-", ":=", "="):
            if rest.startswith(marker):
                default = rest[len(marker):]
                break
        word.add("var", name or inner, default, quoted)
        return end + 1
    if nxt and (nxt.isalpha() or nxt == "_"):
        j = i + 1
        while j < n and (src[j].isalnum() or src[j] == "_"):
            j += 1
        word.add("var", src[i + 1:j], None, quoted)
        return j
    if nxt and nxt in "0123456789@*#?$!-":
        word.add("var", nxt, None, quoted)
        return i + 2
    word.add("lit", "$", quoted)
    return i + 1


def _read_word(src, i):
    """Read one word starting at src[i]: (Word, index after)."""
    word, n, start = Word(), len(src), i
    while i < n:
        c = src[i]
        if c in _META:
            if c in "<>" and src[i + 1:i + 2] == "(" and i == start:
                end = _find_closing(src, i + 2, "(", ")")
                word.add("proc", src[i + 2:end])
                i = end + 1
                continue
            break
        if c == "'":
            j = src.find("'", i + 1)
            j = n if j < 0 else j
            word.add("lit", src[i + 1:j], True)
            i = j + 1
        elif c == '"':
            i = _read_double(src, i + 1, word)
        elif c == "\\":
            if src[i + 1:i + 2] == "\n":
                i += 2
            else:
                word.add("lit", src[i + 1:i + 2], True)
                i += 2
        elif c == "$" and src[i + 1:i + 2] == "'":
            text, i = _ansi_c(src, i + 2)
            word.add("lit", text, True)
        elif c == "$":
            i = _read_dollar(src, i, word, False)
        elif c == "`":
            j = i + 1
            while j < n and src[j] != "`":
                j += 2 if src[j] == "\\" else 1
            word.add("sub", src[i + 1:j].replace("\\`", "`"), False)
            i = j + 1
        elif c == "~" and i == start:
            j = i + 1
            while j < n and src[j] not in _META and src[j] != "/":
                j += 1
            word.add("tilde", src[i + 1:j])
            i = j
        else:
            j = i
            while j < n and src[j] not in _META and src[j] not in "'\"\\$`":
                j += 1
            word.add("lit", src[i:j], False)
            i = j
    return word, i


def _read_double(src, i, word):
    """Read a double-quoted string body starting after the quote."""
    n, buf = len(src), []
    while i < n:
        c = src[i]
        if c == '"':
            i += 1
            break
        if c == "\\" and i + 1 < n:
            nxt = src[i + 1]
            if nxt in '$`"\\':
                buf.append(nxt)
                i += 2
                continue
            if nxt == "\n":
                i += 2
                continue
            buf.append(c)
            i += 1
            continue
        if c == "$" or c == "`":
            if buf:
                word.add("lit", "".join(buf), True)
                buf = []
            if c == "$":
                i = _read_dollar(src, i, word, True)
            else:
                j = i + 1
                while j < n and src[j] != "`":
                    j += 2 if src[j] == "\\" else 1
                word.add("sub", src[i + 1:j].replace("\\`", "`"), True)
                i = j + 1
            continue
        buf.append(c)
        i += 1
    if buf or not word.parts:
        word.add("lit", "".join(buf), True)
    return i


def tokenize_shell(src):
    """Tokens of a shell line: ('word', Word) ('op', text) ('redir', Redirect)."""
    tokens, pending, i, n = [], [], 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r":
            i += 1
        elif c == "\\" and src[i + 1:i + 2] == "\n":
            i += 2
        elif c == "#" and (not tokens or tokens[-1][0] == "op" or src[i - 1] in " \t"):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c == "\n":
            tokens.append(("op", "\n"))
            i += 1
            for redirect, delim, strip in pending:
                i = _read_heredoc(src, i, redirect, delim, strip)
            pending = []
        elif c not in _OP_STARTS and not c.isdigit():
            i = _word_token(src, i, tokens)
        else:
            i = _operator_token(src, i, tokens, pending)
    for redirect, delim, strip in pending:
        _read_heredoc(src, n, redirect, delim, strip)
    return tokens


def _word_token(src, i, tokens):
    word, after = _read_word(src, i)
    if after == i:
        return i + 1
    tokens.append(("word", word))
    return after


def _operator_token(src, i, tokens, pending):
    """A redirection (with its fd: 2>, 10<), an operator, or a word that starts
    with a digit; the index after it."""
    n, fd, j = len(src), "", i
    while j < n and src[j].isdigit():
        j += 1
    if i < j < n and src[j] in "<>":
        fd, i = src[i:j], j
    c, op = src[i], None
    if c in "<>&":
        op = next((o for o in _REDIR_OPS if src.startswith(o, i)), None)
        if op and c == "&" and not op.startswith("&>"):
            op = None
        if op and src[i + len(op):i + len(op) + 1] == "(" and op in ("<", ">"):
            op = None
    if op:
        return _redirect_token(src, i, op, fd, tokens, pending)
    matched = next((o for o in _SHELL_OPS if src.startswith(o, i)), None)
    if matched and not (matched in "<>" and src[i + 1:i + 2] == "("):
        tokens.append(("op", matched))
        return i + len(matched)
    return _word_token(src, i, tokens)


def _redirect_token(src, i, op, fd, tokens, pending):
    n, redirect = len(src), Redirect(op, fd)
    i += len(op)
    while i < n and src[i] in " \t":
        i += 1
    if op in (">&", "<&") and i < n and (src[i].isdigit() or src[i] == "-"):
        j = i
        while j < n and (src[j].isdigit() or src[j] == "-"):
            j += 1
        redirect.target = "&" + src[i:j]
        i = j
    elif i < n and src[i] not in _META:
        target, i = _read_word(src, i)
        redirect.target = target
        if op in ("<<", "<<-"):
            delim = "".join(p[1] for p in target.parts if p[0] == "lit")
            if not delim:
                delim = "".join(str(p[1]) for p in target.parts)
            pending.append((redirect, delim, op == "<<-"))
    tokens.append(("redir", redirect))
    return i


def _read_heredoc(src, i, redirect, delim, strip):
    """Store the heredoc body that starts at src[i]; return the index after it."""
    lines, n = [], len(src)
    while i < n:
        j = src.find("\n", i)
        j = n if j < 0 else j
        line = src[i:j]
        i = j + 1
        check = line.lstrip("\t") if strip else line
        if check == delim:
            break
        lines.append(check)
    redirect.body = "\n".join(lines)
    return min(i, n)


def expand_word(word, env, cwd, depth=0):
    """(text, unknown, globbed): the word as the shell would see it, as far as
    this line can tell. unknown marks text from an expansion we cannot know."""
    parts = word.parts
    if len(parts) == 1 and parts[0][0] == "var" and isinstance(env.get(parts[0][1]), Found):
        return env[parts[0][1]], False, False
    if len(parts) == 1 and parts[0][0] == "sub" and depth < 2 and \
            parts[0][1].lstrip().startswith("find ") and "|" not in parts[0][1]:
        found = _substituted_find(parts[0][1], env, cwd)  # $(find DIR ...): what it finds
        if found is not None:
            return found, False, False
    out, unknown, globbed = [], False, False
    for part in parts:
        kind = part[0]
        if kind == "lit":
            text = part[1]
            if not part[2] and any(ch in text for ch in "*?["):
                globbed = True
            out.append(text)
        elif kind == "tilde":
            if part[1]:
                home = _user_home(part[1])
                out.append(home or "~" + part[1])
                unknown = unknown or home is None
            else:
                out.append(env.get("HOME", "~"))
        elif kind == "var":
            name, default = part[1], part[2]
            if name in env:
                value = env[name]
                unknown = unknown or isinstance(value, (Opaque, Found))
                globbed = globbed or isinstance(value, Glob)
                out.append(value)
            elif default is not None:
                out.append(default)
            else:
                out.append("$" + name)
                unknown = True
        elif kind == "proc":
            out.append(PROC_PATH)
        else:
            value = _evaluate_substitution(part[1], env, cwd, depth)
            if value is None:
                out.append("$(" + part[1] + ")")
                unknown = True
            else:
                out.append(value)
    return "".join(out), unknown, globbed


def _substituted_find(script, env, cwd):
    """The paths `$(find ...)` prints, as a Found of that find, or None."""
    if len(script) > 1024 or not isinstance(cwd, str):
        return None
    cmds = parse_shell(script, cwd, env, 2, ParseShared())
    if len(cmds) != 1 or cmds[0].prog != "find" or cmds[0].find is None or \
            cmds[0].find.execs or not cmds[0].find.roots:
        return None
    return found_word(cmds[0].find.roots[0], cmds[0])


def _user_home(user):
    """The home folder of `~user`, from the password database, or None."""
    try:
        import pwd
        return pwd.getpwnam(user).pw_dir or None
    except (ImportError, KeyError, TypeError, ValueError):
        return None


def _evaluate_substitution(script, env, cwd, depth):
    """The output of a substitution the gate can compute (echo, printf, pwd,
    realpath, dirname, basename, mktemp, `git rev-parse --show-toplevel`), else
    None. A sequence of commands (`$(cd ..; pwd)`) is not computed: unknown. A
    redirection of the errors to /dev/null (`command -v python3 2>/dev/null`)
    leaves the output as it is."""
    if depth > 2 or len(script) > 4096:
        return None
    if "|" in script:
        return readers().substitution_text(script, env, cwd)
    tokens = [t for t in tokenize_shell(script) if not (
        t[0] == "redir" and t[1].fd == "2" and t[1].op in (">", ">>") and isinstance(
            t[1].target, Word) and expand_word(t[1].target, {}, cwd)[0] == "/dev/null")]
    words = [t[1] for t in tokens if t[0] == "word"]
    if len(words) != len(tokens) or not words:
        return None
    argv = []
    for word in words:
        text, unknown, _ = expand_word(word, env, cwd, depth + 1)
        if unknown:
            return None
        argv.append(text)
    output = _SUBSTITUTION_OUTPUTS.get(os.path.basename(argv[0]))
    if output is None:
        return None
    args = argv[1:]
    return output(args, [a for a in args if not a.startswith("-")], env, cwd)


# The programs whose output a substitution computes: (args, operands, env, cwd) ->
# the output, or None when it cannot be known.

def _pwd_output(args, operands, env, cwd):
    return None if operands else cwd


def _echo_output(args, operands, env, cwd):
    while args and args[0] in ("-n", "-e", "-E"):
        args = args[1:]
    return " ".join(args)


def _printf_output(args, operands, env, cwd):
    if args and "%" not in args[0]:
        return args[0].replace("\\n", "")
    if args and "-v" not in args[:1]:
        text = readers()._printf_text(args)
        return None if text is None else text.rstrip("\n")
    return None


def _ls_output(args, operands, env, cwd):
    text = readers().listing_text(args, cwd)
    return None if text is None else text.rstrip("\n")


def _realpath_output(args, operands, env, cwd):
    return os.path.normpath(os.path.join(cwd, operands[-1])) if operands else None


def _dirname_output(args, operands, env, cwd):
    if not operands:
        return None
    return os.path.dirname(operands[0].rstrip("/")) or ("/" if operands[0].startswith(
        "/") else ".")


def _basename_output(args, operands, env, cwd):
    if not operands:
        return None
    name = os.path.basename(operands[0].rstrip("/"))
    suffix = operands[1] if len(operands) > 1 else ""
    return name[:-len(suffix)] if suffix and name.endswith(suffix) and name != suffix \
        else name


def _mktemp_output(args, operands, env, cwd):
    return _mktemp_path(args, env, cwd)


def _git_output(args, operands, env, cwd):
    if "rev-parse" in args and "--show-toplevel" in args:
        return git_top(cwd)
    if args[:1] == ["rev-parse"] and len(operands) == 2 and all(
            a in ("--verify", "-q", "--quiet") for a in args[1:] if a.startswith("-")):
        return operands[1]  # `$(git rev-parse REV)` names what REV names
    return None


def _which_output(args, operands, env, cwd):
    """The program as PATH finds it (the interpreter on the machine)."""
    if not args:
        return None
    import shutil
    name = args[-1]
    found = shutil.which(name, path=env.get("PATH") or os.environ.get("PATH")) \
        if "/" not in name else None
    return found or name


def _command_v_output(args, operands, env, cwd):
    """`command -v NAME`, `type -P NAME`: as `which NAME`."""
    if len(args) >= 2 and args[0] in ("-v", "-p", "-P"):
        return _which_output(args, operands, env, cwd)
    return None


_SUBSTITUTION_OUTPUTS = {
    "pwd": _pwd_output, "echo": _echo_output, "printf": _printf_output, "ls": _ls_output,
    "realpath": _realpath_output, "readlink": _realpath_output,
    "dirname": _dirname_output, "basename": _basename_output, "mktemp": _mktemp_output,
    "git": _git_output, "which": _which_output, "command": _command_v_output,
    "type": _command_v_output}


def git_top(cwd):
    """The top of the git work tree holding cwd (a folder with .git), or None."""
    path = cwd if isinstance(cwd, str) and cwd.startswith("/") else None
    for _ in range(64):
        if not path:
            return None
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        path = None if parent == path else parent
    return None


def _is_assignment(text):
    eq = text.find("=")
    if eq <= 0:
        return False
    name = text[:eq].rstrip("+")
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(
        ch.isalnum() or ch == "_" for ch in name)


def _word_value(text, unknown, globbed):
    """A word of argv: its text, marked Opaque or Glob when it is one."""
    if isinstance(text, Found):
        return text
    if unknown:
        return Opaque(text)
    return Glob(text) if globbed else text


def _assigned(text):
    """(name, value) of NAME=value, the value keeping the mark of its word."""
    name, _, value = text.partition("=")
    if isinstance(text, Opaque):
        value = Opaque(value)
    return name.rstrip("+"), value


def parse_shell(src, cwd="/", env=None, depth=0, shared=None, origin=""):
    """Every simple command a shell line would run, nested scripts included.
    shared carries what the parse of one tool call shares (ParseShared)."""
    shared = shared if shared is not None else ParseShared()
    env = dict(env or {})
    env.setdefault("PWD", cwd)
    cmds = []
    if not src or shared.too_large:
        return cmds
    if depth > PARSE_DEPTH_MAX:
        shared.too_large = "commands nested deeper than %d levels" % PARSE_DEPTH_MAX
        return cmds
    if len(src) > PARSE_TEXT_MAX:
        shared.too_large = "%d characters of shell text (the bound is %d)" % (
            len(src), PARSE_TEXT_MAX)
        return cmds
    if "(" in src and "|" in src and _fork_bomb(src):
        shared.fork_bomb = True
    state = {"cwd": cwd, "env": env, "pipeline": 0, "pos": 0, "prev": None,
             "shared": shared, "origin": origin}
    current = []
    for token in tokenize_shell(src) + [("op", "\n")]:
        if token[0] != "op":
            current.append(token)
            continue
        op = token[1]
        _finish_command(current, state, cmds, depth)
        current = []
        if op in ("|", "|&"):
            state["pos"] += 1
        else:
            state["pipeline"] += 1
            state["pos"] = 0
            state["prev"] = None
    return cmds


def _finish_command(tokens, state, cmds, depth):
    """Make one simple command of its tokens: words expanded, leading keywords
    and assignments taken off, wrappers peeled, its substitutions parsed."""
    if not tokens:
        return
    shared, env, cwd = state["shared"], state["env"], state["cwd"]
    cmd = Cmd()
    cmd.depth, cmd.pipeline, cmd.pos = depth, state["pipeline"], state["pos"]
    cmd.shared, cmd.origin = shared, state["origin"]
    words = [value for kind, value in tokens if kind != "redir"]
    cmd.redirects = [value for kind, value in tokens if kind == "redir"]
    shared.words += len(words)
    shared.commands += 1
    if shared.words > PARSE_WORDS_MAX or shared.commands > PARSE_COMMANDS_MAX:
        shared.too_large = shared.too_large or "more than %d words or %d commands" % (
            PARSE_WORDS_MAX, PARSE_COMMANDS_MAX)
        return
    expanded = _expand_words(cmd, words, env, cwd)
    _expand_redirects(cmd, env, cwd)
    k = _skip_keywords(expanded, env)
    assigns = {}
    while k < len(expanded) and _is_assignment(expanded[k][0]):
        name, value = _assigned(_word_value(*expanded[k]))
        assigns[name] = value
        k += 1
    if k >= len(expanded):
        env.update(assigns)
    cmd.env = dict(env)
    cmd.env.update(assigns)
    cmd.cwd = cwd
    cmd.argv = [_word_value(*e) for e in expanded[k:]]
    if state["prev"] is not None and cmd.pos > 0:
        cmd.feeds = state["prev"]
    state["prev"] = cmd
    _code_assignments(cmd, assigns, cmds, depth)
    _unwrap(cmd, state, cmds, depth)
    for sub in cmd.subs:
        cmds.extend(parse_shell(sub, cwd, env, depth + 1, shared, cmd.origin))


def _expand_words(cmd, words, env, cwd):
    """[(text, unknown, globbed)] of a command's words as the shell expands them:
    braces, "$@", and the field splitting of an unquoted $x."""
    expanded = []
    if any(p[0] == "lit" and not p[2] and "{" in p[1] for w in words for p in w.parts):
        words = [w for word in words for w in _brace_word(word)]
    for word in words:
        parts = word.parts
        if len(parts) == 1 and parts[0][:2] in (("var", "@"), ("var", "*")) and \
                isinstance(env.get("\0@"), tuple):
            items = env["\0@"]
            if not parts[0][3] and "IFS" in env:
                items = [f for item in items for f in _fields(item, env["IFS"])]
            expanded.extend((arg, False, False) for arg in items)
            continue
        value = expand_word(word, env, cwd)
        _note_subs(cmd, word, env)
        if len(parts) == 1 and parts[0][0] in ("var", "sub") and not parts[0][-1] and \
                not value[1] and not isinstance(value[0], Found):
            expanded.extend((f, False, value[2]) for f in _fields(
                value[0], env.get("IFS", " \t\n")))  # an unquoted $x is split
            continue
        expanded.append(value)
    return expanded


def _expand_redirects(cmd, env, cwd):
    for redirect in cmd.redirects:
        if isinstance(redirect.target, Word):
            _note_subs(cmd, redirect.target, env)
            text, unknown, _ = expand_word(redirect.target, env, cwd)
            redirect.target = Opaque(text) if unknown else text


def _skip_keywords(expanded, env):
    """Index of the first word after the shell's keywords; a for/select binds its
    variable and runs nothing itself, nor does a case."""
    k = 0
    while k < len(expanded) and expanded[k][0] in _SHELL_KEYWORDS:
        k += 2 if expanded[k][0] == "function" else 1
    if k < len(expanded) and expanded[k][0] in ("for", "select") and len(expanded) > k + 1:
        _bind_loop(expanded[k + 1:], env)
        return len(expanded)
    if k < len(expanded) and expanded[k][0] == "case":
        return len(expanded)
    return k


# Variables whose value the shell runs as code later: a prompt's $(...), the
# command run before each prompt.
_CODE_VARS = ("PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND")


def _code_assignments(cmd, assigns, cmds, depth):
    for name in _CODE_VARS:
        value = assigns.get(name)
        if value and ("$(" in value or "`" in value or name == "PROMPT_COMMAND"):
            text = value if name == "PROMPT_COMMAND" else 'echo "%s"' % value.replace(
                '"', '\\"')
            _nested(cmd, text, cmds, depth, origin=name)


BRACE_MAX = 64  # words one brace expansion may make


def _brace_word(word):
    """A word with its unquoted brace expansions made (`.{e,}nv` is `.env .nv`,
    `x{1..3}`): the words it becomes, at most BRACE_MAX."""
    for k, part in enumerate(word.parts):
        if part[0] != "lit" or part[2] or "{" not in part[1]:
            continue
        texts = _brace_texts(part[1])
        if len(texts) > 1:
            out = []
            for text in texts[:BRACE_MAX]:
                made = Word()
                made.parts = word.parts[:k] + [("lit", text, False)] + word.parts[k + 1:]
                out.append(made)
            return out
    return [word]


def _brace_texts(text, budget=BRACE_MAX):
    """The expansions of the first brace group of text (recursively), or [text]."""
    start = text.find("{")
    while start >= 0:
        depth, i, commas = 0, start, []
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            elif text[i] == "," and depth == 1:
                commas.append(i)
            i += 1
        if i >= len(text):
            return [text]
        inner, head, tail = text[start + 1:i], text[:start], text[i + 1:]
        if commas:
            cuts = [start] + commas + [i]
            alternatives = [text[a + 1:b] for a, b in zip(cuts, cuts[1:])]
        else:
            alternatives = _brace_range(inner)
        if alternatives:
            out = []
            for alt in alternatives:
                for rest in _brace_texts(head + alt + tail, budget):
                    out.append(rest)
                    if len(out) >= budget:
                        return out
            return out
        start = text.find("{", start + 1)
    return [text]


def _brace_range(inner):
    """{1..5} and {a..e}: the words of a range (bounded), else []."""
    low, sep, high = inner.partition("..")
    if not sep or ".." in high:
        return []
    if low.lstrip("-").isdigit() and high.lstrip("-").isdigit():
        a, b = int(low), int(high)
        step = 1 if b >= a else -1
        return [str(n) for n in range(a, b + step, step)][:BRACE_MAX]
    if len(low) == 1 and len(high) == 1:
        a, b = ord(low), ord(high)
        step = 1 if b >= a else -1
        return [chr(n) for n in range(a, b + step, step)][:BRACE_MAX]
    return []


def _fields(text, ifs):
    """Field splitting of an unquoted expansion on the characters of IFS."""
    if not ifs:
        return [text]
    for ch in ifs[1:]:
        text = text.replace(ch, ifs[0])
    return [f for f in (text.split() if ifs[0] in " \t\n" else text.split(ifs[0])) if f]


def _note_subs(cmd, word, env):
    """The substitutions of a word are commands of their own; a process
    substitution's output is noted as the text of the file it names."""
    for part in word.parts:
        if part[0] == "sub":
            cmd.subs.append(part[1])
        elif part[0] == "proc":
            cmd.subs.append(part[1])
            cmd.shared.note(cmd, PROC_PATH, ("proc", part[1], dict(env)))


def _loop_rank(text):
    """Sort key: the loop value nearest the root first (absolute, or climbing out)."""
    path = os.path.normpath(text) if text else "."
    ups = path.split("/").count("..")
    return (not path.startswith("/") and not ups, path.count("/") - 3 * ups, len(path))


def _bind_loop(rest, env):
    """`for NAME in WORDS`: the body is parsed once, with NAME bound to the value
    nearest the root (the worst); an unknown or pattern value keeps its kind."""
    name = rest[0][0]
    values = rest[2:] if len(rest) > 1 and rest[1][0] == "in" else []
    if not values:
        env[name] = Opaque("$" + name)  # `for x; do` walks "$@"
        return
    if any(v[1] for v in values):
        env[name] = Opaque(min((v[0] for v in values if v[1]), key=_loop_rank))
    elif any(v[2] for v in values):
        env[name] = Glob(min((v[0] for v in values if v[2]), key=_loop_rank))
    else:
        env[name] = min((v[0] for v in values), key=_loop_rank)


def _take_options(argv, with_value, start=1, pairs=()):
    """Skip leading options of a wrapper; with_value names options that take one,
    pairs those that take two."""
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return i + 1
        if not arg.startswith("-") or arg == "-":
            return i
        if arg in with_value:
            i += 2
            continue
        if arg in pairs:
            i += 3
            continue
        i += 1
    return i


# A wrapper runs the command after its options: (options that take a value,
# words between the options and the command).
_WRAPPERS = {
    "sudo": (("-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user",
              "--group", "--host", "--prompt", "--chdir", "--role", "--type",
              "--other-user", "--close-from", "--command-timeout"), 0),
    "doas": (("-u", "-C"), 0),
    "pkexec": (("--user",), 0),
    "nice": (("-n", "--adjustment"), 0),
    "ionice": (("-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid",
                "--pgid", "--uid"), 0),
    "chrt": (("-T", "-P", "-D", "--sched-runtime", "--sched-period",
              "--sched-deadline"), 1),
    "taskset": ((), 1),
    "timeout": (("-s", "-k", "--signal", "--kill-after"), 1),
    "stdbuf": (("-i", "-o", "-e"), 0),
    "exec": (("-a",), 0),
    "setsid": ((), 0),
    "nohup": ((), 0),
    "time": (("-f", "-o", "--format", "--output"), 0),
    "builtin": ((), 0),
    "unbuffer": ((), 0),
    "caffeinate": (("-t", "-w"), 0),
    "torsocks": ((), 0),
    "proxychains": (("-f",), 0),
    "proxychains4": (("-f",), 0),
    "strace": (("-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S",
                "-X"), 0),
    "ltrace": (("-o", "-e", "-p", "-s", "-u", "-a", "-A", "-D", "-F", "-l", "-n"), 0),
    "nsenter": (("-t", "--target", "-S", "--setuid", "-G", "--setgid", "-w", "--wd",
                 "-r", "--root"), 0),
    "unshare": (("--map-user", "--map-group", "--propagation", "--setgroups", "-S",
                 "--setuid", "-G", "--setgid", "-w", "--wd", "-R", "--root"), 0),
    "chroot": (("--userspec", "--groups"), 1),
    "systemd-run": (("-p", "--property", "-u", "--unit", "--description", "--slice",
                     "-E", "--setenv", "--uid", "--gid", "-M", "--machine",
                     "--on-calendar", "--on-active", "--working-directory", "-H",
                     "--host"), 0),
    "firejail": ((), 0),
    "catchsegv": ((), 0),
    "npx": (("-p", "--package"), 0),
    "pnpx": (("-p", "--package"), 0),
    "bunx": (("-p", "--package"), 0),
    "setpriv": (("--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid",
                 "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                 "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile",
                 "--landlock-access", "--landlock-rule"), 0),
    "proot": (("-r", "--rootfs", "-b", "--bind", "-m", "--mount", "-w", "--pwd", "--cwd",
               "-q", "--qemu", "-k", "--kernel-release", "-p", "--port"), 0),
    "bwrap": (("--chdir", "--unsetenv", "--uid", "--gid", "--hostname", "--lock-file",
               "--sync-fd", "--remount-ro", "--exec-label", "--file-label", "--proc",
               "--dev", "--tmpfs", "--mqueue", "--dir", "--seccomp", "--add-seccomp-fd",
               "--block-fd", "--userns-block-fd", "--info-fd", "--json-status-fd",
               "--cap-add", "--cap-drop", "--perms", "--size", "--argv0", "--userns",
               "--userns2", "--pidns"), 0),
    "dbus-run-session": (("--config-file", "--dbus-daemon"), 0),
    "dbus-launch": (("--config-file", "--autolaunch"), 0),
    "fakeroot": (("-l", "--lib", "--faked", "-s", "-i", "-b"), 0),
    "fakechroot": (("-l", "--lib", "-d", "--use-system-libs", "-e", "--environment",
                    "-c", "--config-dir"), 0),
    "valgrind": (("--log-file", "--tool"), 0),
    "faketime": (("-m",), 1),
    "datefudge": ((), 1),
    "perf": (("-e", "--event", "-o", "--output", "-p", "--pid", "-t", "--tid", "-C",
              "--cpu", "-G", "--cgroup", "-r", "--repeat", "-I", "--interval-print",
              "-x", "--field-separator", "-F", "--freq", "-c", "--count", "-j", "-m",
              "--mmap-pages", "-u", "--uid", "--call-graph"), 1),
    "coproc": ((), 0),
    "xvfb-run": (("-n", "--server-num", "-s", "--server-args", "-f", "--auth-file",
                  "-e", "--error-file", "-p", "--xauth-protocol", "-w", "--wait"), 0),
    "numactl": (("-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind",
                 "--membind", "--preferred", "--interleave"), 0),
    "cgexec": (("-g",), 0),
    "eatmydata": ((), 0), "nocache": ((), 0), "tsocks": ((), 0), "chronic": ((), 0),
    "dumb-init": (("-r", "--rewrite"), 0), "tini": (("-p", "-e"), 0),
    "gosu": ((), 1), "su-exec": ((), 1), "s6-setuidgid": ((), 1), "setuidgid": ((), 1),
    "envdir": ((), 1), "setarch": ((), 1), "linux32": ((), 0), "linux64": ((), 0),
    "arch-chroot": ((), 1), "sandbox-exec": (("-f", "-p", "-n", "-D"), 0),
    "chpst": (("-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p",
               "-f", "-c", "-r", "-t"), 0),
    "prlimit": (("--pid",), 0), "cpulimit": (("-l", "--limit", "-p", "--pid"), 0),
    "trickle": (("-d", "-u", "-w", "-t", "-l", "-n"), 0),
    "rlwrap": (("-a", "-b", "-C", "-D", "-e", "-f", "-F", "-g", "-H", "-l", "-M", "-O",
                "-p", "-P", "-q", "-s", "-S", "-t", "-w", "-z"), 0),
    "ccache": ((), 0), "sccache": ((), 0), "distcc": ((), 0), "icecc": ((), 0),
    "retry": (("-t", "--tries", "-d", "--delay", "-m", "--min", "-x", "--max"), 0),
    "entr": ((), 0), "nsjail": (("-C", "--config", "-c", "--chroot", "-u", "--user",
                                 "-g", "--group", "-D", "--cwd", "-R", "--bindmount_ro",
                                 "-B", "--bindmount", "-T", "--tmpfsmount", "-E",
                                 "--env", "-M", "--mode", "-t", "--time_limit"), 0),
    "schroot": (("-c", "--chroot", "-u", "--user", "-d", "--directory"), 0),
    "systemd-nspawn": (("-D", "--directory", "-i", "--image", "-u", "--user",
                        "-M", "--machine", "--bind", "--bind-ro", "--chdir"), 0),
    "daemonize": (("-a", "-c", "-e", "-E", "-o", "-p", "-l", "-u"), 0),
    "gtimeout": (("-s", "-k", "--signal", "--kill-after"), 1),
    "sudoedit": ((), 0),
}
# Options of a wrapper that take two values (bwrap --bind SRC DEST).
_WRAPPER_PAIRS = {"bwrap": ("--bind", "--ro-bind", "--dev-bind", "--bind-try",
                            "--ro-bind-try", "--dev-bind-try", "--symlink", "--setenv",
                            "--file", "--bind-data", "--ro-bind-data", "--chmod",
                            "--overlay-src")}
_ASSIGNING_WRAPPERS = ("sudo", "doas", "exec", "env")


def _unwrap(cmd, state, cmds, depth):
    """Peel wrappers (sudo, env, timeout, xargs, bash -c, eval, ssh, ...) off cmd,
    follow what it runs, and add it to cmds."""
    argv = cmd.argv
    for _ in range(16):
        if not argv:
            break
        prog = os.path.basename(argv[0])
        if prog in cmd.shared.aliases and argv[0] == prog:
            _nested(cmd, cmd.shared.aliases.pop(prog) + " " + " ".join(
                _quote_arg(a) for a in argv[1:]), cmds, depth, origin="alias %s" % prog)
            cmd.argv = argv = []
            break
        if prog in _WRAPPERS:
            values, positional = _WRAPPERS[prog]
            if prog in ("npx", "pnpx", "bunx") and ("-c" in argv or "--call" in argv):
                cmd.argv = argv
                _parse_option_script(cmd, ("-c", "--call"), cmds, depth)
                argv = []
                break
            i = _take_options(argv, values, 1, _WRAPPER_PAIRS.get(prog, ())) + positional
            if prog in ("sudo", "doas") and i >= len(argv) and _flag_in(argv, "si", (
                    "--shell", "--login")):
                argv = list(argv) + ["sh"]  # sudo -s: a shell, reading stdin
        else:
            peel = _PEELERS.get(prog)
            if peel is None and isinstance(argv[0], Opaque) and "-c" in argv[1:3]:
                peel = _peel_shell  # `"$SH" -c CODE`: a program the line cannot know,
                # given code: the code is judged as the shell would run it
            if peel is None:
                if prog not in _KNOWN_NOT_WRAPPERS:
                    _maybe_wrapper(cmd, argv, cmds, depth)
                break
            cmd.argv = argv
            i = peel(cmd, state, cmds, depth)
            if i is None:
                break
            if i == SPAWNED:
                argv = []
                break
        cmd.via.append(prog)
        argv = argv[i:]
        k = 0
        while k < len(argv) and _is_assignment(argv[k]) and prog in _ASSIGNING_WRAPPERS:
            name, value = _assigned(argv[k])
            cmd.env[name] = value
            k += 1
        argv = argv[k:]
    cmd.argv = argv
    if argv:
        _follow(cmd, state, cmds, depth)
    if cmd.argv or cmd.redirects:
        cmds.append(cmd)


# Programs run by what may be a wrapper the gate has no row for (`proot rm -rf ~`):
# a later word naming one is judged as the command that wrapper would run.
_RUN_NAMES = frozenset(("rm", "rmdir", "shred", "srm", "unlink", "rimraf", "dd", "wipefs",
                        "chmod", "chown", "chgrp", "mv", "cp", "tee", "truncate", "git",
                        "find", "xargs", "eval", "ln", "rsync", "install", "notrest",
                        "sudo", "env", "python", "python3", "perl", "ruby", "node",
                        "parted", "sfdisk", "sgdisk", "fdisk", "mount", "curl", "wget")
                       ) | SHELL_NAMES
# Programs that name other programs without running them, or that run only what
# their own configuration says (package managers, process tools, manuals).
_KNOWN_NOT_WRAPPERS = frozenset((
    "apt", "apt-get", "apt-cache", "yum", "dnf", "brew", "pip", "pip3", "pipx", "npm",
    "pnpm", "yarn", "cargo", "go", "gem", "conda", "mamba", "man", "which", "whereis",
    "whatis", "apropos", "info", "help", "tldr", "type", "hash", "dpkg", "rpm", "snap",
    "flatpak", "nix", "nix-env", "port", "pacman", "apk", "zypper", "emerge", "winget",
    "choco", "scoop", "killall", "pkill", "pgrep", "pidof", "kill", "ps", "systemctl",
    "service", "complete", "compgen", "update-alternatives", "alternatives", "echo",
    "printf", "grep", "egrep", "fgrep", "rg", "ag", "ack", "cat", "head", "tail", "less",
    "more", "sort", "uniq", "wc", "ls", "git", "docker", "podman", "kubectl", "helm",
    "make", "gmake", "cmake", "ninja", "bazel", "mvn", "gradle", "pytest", "tox", "nox",
    "uv", "poetry", "pdm", "rustup", "asdf", "mise", "pyenv", "nvm", "volta", "test",
    "[", "jq", "yq", "sed", "awk", "tr", "cut", "diff", "comm", "join", "paste",
    "column", "tee", "xargs", "find", "stat", "file", "basename", "dirname", "true",
    "false", "read", "local", "export", "declare", "typeset", "readonly", "unset",
    "alias", "unalias", "set", "shopt", "cd", "pushd", "popd", "source", ".", "exit",
    "return", "wait", "trap", "history", "fc", "jobs", "bg", "fg", "disown", "sleep",
    "date", "touch", "mkdir", "chmod", "chown", "ln", "cp", "mv", "rm", "tar", "zip",
    "unzip", "gzip", "curl", "wget", "ssh", "scp", "rsync", "notrest", "code", "vim",
    "nano", "emacs", "open", "xdg-open", "say", "notify-send", "tput", "stty",
    "locate", "fd", "fdfind", "tree", "du", "df", "free", "uptime", "whoami", "id",
    "hostname", "uname", "lsof", "top", "htop", "watch", "time", "crontab", "at",
    "printenv", "env", "sh", "bash", "python", "python3", "node", "perl", "ruby"))


def _maybe_wrapper(cmd, argv, cmds, depth):
    """A program with no row, given a word that names a program which destroys or
    runs code, followed by more words: judged as a wrapper of the rest too. A word
    that holds a command line of such a program (`hyperfine 'rm -rf ~'`,
    `concurrently …`, `nodemon --exec=…`, `psql -c '\\! …'`, a language's
    `system "…"`) is judged as the line that program may run."""
    prog = os.path.basename(argv[0])
    for j in range(1, len(argv)):  # every word: padding must not hide a line; the
        word = argv[j]             # words are bounded by PARSE_WORDS_MAX already
        if type(word) is not str:
            continue
        if j < min(len(argv) - 1, 24) and os.path.basename(word) in _RUN_NAMES:
            spawn_argv(cmd, argv[j:], cmds, depth + 1, prog)  # (a wrapper's command
            return  # comes early; a later `rm` is more likely a file of that name)
        if argv[j - 1] in _MESSAGE_OPTIONS or word.split("=", 1)[0] in _MESSAGE_OPTIONS:
            continue  # a message's text (`-m "rm -rf ~ is refused now"`) runs nothing
        for line in _embedded_lines(word):
            _nested(cmd, line, cmds, depth, origin="%s, which may run it" % prog)


_MESSAGE_OPTIONS = frozenset((
    "-m", "--message", "--body", "--title", "--summary", "--description", "--comment",
    "--subject", "--text", "--note", "--notes", "--reason", "--label", "--msg"))


# Where a command line may begin inside a word: its start, or after a quote, a
# bracket, a backtick or a shell escape (`!`, `|`, `;`, `&`, `=`).
_LINE_OPENERS = frozenset("\"'`([{!|;&=")
_LINE_STOPS = frozenset("\"'`()[]{};|&=!")


def _embedded_lines(word):
    """The command lines a word holds, each starting with a program of _RUN_NAMES
    followed by at least one more word, at a place where a line may begin (prose
    such as "how rm -rf broke it" starts no line). A line ends with the quote it
    began in, or with the word."""
    if " " not in word and "\t" not in word:
        return []
    lines, i, n, opened = [], 0, len(word), True
    while i < n and len(lines) < 8:
        c = word[i]
        if c in " \t":
            i += 1
            continue
        if c in _LINE_OPENERS:
            opened, i = True, i + 1
            continue
        end = i
        while end < n and not word[end].isspace() and word[end] not in _LINE_STOPS:
            end += 1
        if opened and os.path.basename(word[i:end]) in _RUN_NAMES and end < n and \
                word[end] in " \t":
            k = i - 1
            while k >= 0 and word[k] in " \t":
                k -= 1
            quote = word[k] if k >= 0 and word[k] in "\"'`" else ""
            stop = word.find(quote, end) if quote else -1
            line = word[i:stop if stop >= 0 else n]
            if len(line.split()) > 1:
                lines.append(line)
            i = stop + 1 if stop >= 0 else n
            opened = False
            continue
        opened, i = False, max(end, i + 1)
    return lines


def _nested(cmd, text, cmds, depth, origin=None, cwd=None, env=None):
    """Parse text as a shell line that cmd runs."""
    cmds.extend(parse_shell(text, cwd or cmd.cwd, cmd.env if env is None else env,
                            depth + 1, cmd.shared, cmd.origin if origin is None
                            else origin))


def spawn_argv(parent, argv, cmds, depth, origin=None, cwd=None, env=None):
    """Run words as a command of their own, no shell parsing them again (what
    xargs, find -exec, docker exec, a script's `subprocess.run([...])` run)."""
    shared = parent.shared
    if not argv or shared.too_large:
        return
    if depth > PARSE_DEPTH_MAX:
        shared.too_large = "commands nested deeper than %d levels" % PARSE_DEPTH_MAX
        return
    shared.words += len(argv)
    shared.commands += 1
    if shared.words > PARSE_WORDS_MAX or shared.commands > PARSE_COMMANDS_MAX:
        shared.too_large = shared.too_large or "more than %d words or %d commands" % (
            PARSE_WORDS_MAX, PARSE_COMMANDS_MAX)
        return
    cmd = Cmd()
    cmd.argv = list(argv)
    cmd.cwd = cwd or parent.cwd
    cmd.env = dict(parent.env if env is None else env)
    cmd.shared, cmd.depth = shared, depth
    cmd.origin = parent.origin if origin is None else origin
    cmd.pipeline, cmd.pos, cmd.via = parent.pipeline, parent.pos, list(parent.via)
    state = {"cwd": cmd.cwd, "env": dict(cmd.env), "pipeline": cmd.pipeline, "pos": 0,
             "prev": None, "shared": shared, "origin": cmd.origin}
    _unwrap(cmd, state, cmds, depth)


def _substitute(word, marker, item, env):
    """word with marker replaced by item: the item itself when the word is just
    the marker; inside a longer word, a variable bound to it, so that a shell
    which parses the word sees the item and anything else sees a name."""
    if word == marker:
        return item
    if marker not in word:
        return word
    if isinstance(item, (Found, Opaque)):
        env[ITEM_VAR] = item
        return word.replace(marker, "${%s}" % ITEM_VAR)
    text = word.replace(marker, item)
    return Glob(text) if isinstance(item, Glob) else text


def _parse_option_script(cmd, names, cmds, depth):
    """Parse the value of the first of names (a command string) as a shell line."""
    argv = cmd.argv
    for j in range(1, len(argv) - 1):
        if argv[j] in names:
            _nested(cmd, argv[j + 1], cmds, depth)
            return True
    return False


def _flag_in(argv, short, long=()):
    return any(a in long or (a.startswith("-") and not a.startswith("--") and any(
        c in a[1:] for c in short)) for a in argv[1:])


def _peel_command(cmd, state, cmds, depth):
    argv = cmd.argv
    if len(argv) > 1 and argv[1] in ("-v", "-V"):
        return SPAWNED  # only says what a name is
    return _take_options(argv, ())


def _peel_env(cmd, state, cmds, depth):
    argv, i = cmd.argv, 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-u", "--unset"):
            i += 2
        elif arg in ("-C", "--chdir") and i + 1 < len(argv):
            cmd.cwd = os.path.normpath(os.path.join(cmd.cwd, argv[i + 1]))
            i += 2
        elif arg in ("-S", "--split-string") and i + 1 < len(argv):
            _nested(cmd, " ".join(argv[i + 1:]), cmds, depth)
            return SPAWNED
        elif arg.startswith("-"):
            i += 1
        elif _is_assignment(arg):
            name, value = _assigned(arg)
            cmd.env[name] = value
            i += 1
        else:
            break
    return i if i < len(argv) else None  # a bare env prints the environment


def _peel_flock(cmd, state, cmds, depth):
    argv = cmd.argv
    i = _take_options(argv, ("-w", "-E", "--timeout", "--wait", "--conflict-exit-code"))
    rest = argv[i:]
    if len(rest) >= 3 and rest[1] in ("-c", "--command"):
        _nested(cmd, rest[2], cmds, depth)
        return SPAWNED
    return i + 1 if len(rest) >= 2 else SPAWNED


def _peel_watch(cmd, state, cmds, depth):
    argv = cmd.argv
    i = _take_options(argv, ("-n", "-d", "--interval", "--differences", "-q", "--equexit"))
    _nested(cmd, " ".join(argv[i:]), cmds, depth)
    return SPAWNED


def _peel_su(cmd, state, cmds, depth):
    """su [-] [USER] [-c CMD], runuser -u USER -- CMD...: the command, or the
    shell it starts reading stdin."""
    if _parse_option_script(cmd, ("-c", "--command", "--session-command"), cmds, depth):
        return None
    argv = cmd.argv
    if cmd.prog == "runuser" and any(a in ("-u", "--user") for a in argv):
        return _take_options(argv, ("-u", "--user", "-g", "--group", "-G",
                                    "--supp-group", "-s", "--shell", "-w",
                                    "--whitelist-environment"))
    cmd.argv = ["sh"]
    _run_stdin(cmd, cmds, depth)
    cmd.argv = argv
    return None


def _peel_sg(cmd, state, cmds, depth):
    """sg GROUP [-c] COMMAND: the command runs in /bin/sh -c."""
    argv = cmd.argv
    rest = argv[2:]
    if rest[:1] == ["-c"]:
        rest = rest[1:]
    if rest:
        _nested(cmd, " ".join(rest), cmds, depth)
    return SPAWNED


def _peel_eval(cmd, state, cmds, depth):
    for arg in cmd.argv[1:]:
        if isinstance(arg, Opaque):
            unknown_code(cmd, arg, "runs a string as commands")
    _nested(cmd, " ".join(cmd.argv[1:]), cmds, depth)
    cmd.via.append("eval")
    return None


def _peel_trap(cmd, state, cmds, depth):
    argv = cmd.argv
    if len(argv) >= 3 and not argv[1].startswith("-"):
        _nested(cmd, argv[1], cmds, depth, origin="trap")
    return None


def _peel_script(cmd, state, cmds, depth):
    """script [-q] -c CMD [file]: flags may be grouped (-qc CMD, -qcCMD)."""
    argv = cmd.argv
    for j in range(1, len(argv)):
        arg = argv[j]
        if arg in ("--command", "-c") and j + 1 < len(argv):
            _nested(cmd, argv[j + 1], cmds, depth)
            return SPAWNED
        if arg.startswith("--command="):
            _nested(cmd, arg[10:], cmds, depth)
            return SPAWNED
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            rest = arg[arg.index("c", 1) + 1:]
            if rest or j + 1 < len(argv):
                _nested(cmd, rest or argv[j + 1], cmds, depth)
                return SPAWNED
    return None


def _peel_cd(cmd, state, cmds, depth):
    args = [a for a in cmd.argv[1:] if a not in ("-L", "-P", "-e", "-@", "--")]
    target = args[0] if args else cmd.env.get("HOME", "~")
    if target == "-" or target.startswith("-"):
        return None
    path = os.path.normpath(os.path.join(cmd.cwd, target))
    cdpath = cmd.env.get("CDPATH")
    if cdpath and not target.startswith(("/", "./", "../")) and target not in (".", ".."):
        if isinstance(cdpath, Opaque):
            target = Opaque(target)
        for entry in str(cdpath).split(":"):
            candidate = os.path.normpath(os.path.join(cmd.cwd, entry or ".", target))
            if os.path.isdir(candidate):
                path = candidate
                break
    if isinstance(target, Opaque) or isinstance(cmd.cwd, Opaque):
        state["cwd"] = Opaque(path)
    else:
        state["cwd"] = resolve_path(path, "/", cmd.env.get("HOME"), True, cmd.shared.links)
    return None


def _peel_export(cmd, state, cmds, depth):
    assigns = {}
    for arg in cmd.argv[1:]:
        if _is_assignment(arg):
            name, value = _assigned(arg)
            state["env"][name] = assigns[name] = value
    _code_assignments(cmd, assigns, cmds, depth)
    return None


def _peel_alias(cmd, state, cmds, depth):
    """alias NAME=TEXT: a later command named NAME in this line runs TEXT (the
    gate expands it whether or not expand_aliases is set)."""
    for arg in cmd.argv[1:]:
        if _is_assignment(arg) or ("=" in arg and not arg.startswith("-")):
            name, _, value = arg.partition("=")
            cmd.shared.aliases[name] = value
    return None


def _peel_set(cmd, state, cmds, depth):
    """set -- ARGS (or set ARGS after options) gives $1..., $@ and $*."""
    argv = cmd.argv
    if "--" in argv:
        args = argv[argv.index("--") + 1:]
    else:
        args = [a for a in argv[1:] if not a.startswith(("-", "+"))]
        if not args:
            return None
    state["env"].update(_positional(state["env"], list(args), False))
    return None


def _peel_printf(cmd, state, cmds, depth):
    """printf -v NAME FORMAT ARGS puts the text in NAME instead of printing it."""
    argv = cmd.argv
    if len(argv) > 3 and argv[1] == "-v":
        known = not any(isinstance(a, (Opaque, Found)) for a in argv[3:])
        text = readers()._printf_text(argv[3:]) if known else None
        state["env"][argv[2]] = text if text is not None else Opaque("$" + argv[2])
    return None


def _peel_busybox(cmd, state, cmds, depth):
    argv = cmd.argv
    return 1 if len(argv) > 1 and not argv[1].startswith("-") else None


def _peel_shell(cmd, state, cmds, depth):
    """sh -c SCRIPT, sh FILE ARGS, or a script on stdin: parse what the shell runs
    (and the file its BASH_ENV or ENV names, which it reads first)."""
    argv = cmd.argv
    for name in ("BASH_ENV", "ENV"):
        if name in cmd.env:
            run_script(cmd, cmd.env[name], [], cmds, depth, "sh")
    at = _shell_script_index(argv)
    if at is not None:
        script = argv[at] if at < len(argv) else ""
        if isinstance(script, Opaque):
            unknown_code(cmd, script, "runs as a shell script")
        _nested(cmd, script, cmds, depth, env=_positional(cmd.env, argv[at + 1:], True))
        return None
    at = _shell_file_index(argv)
    if at is not None and argv[at] not in _STDIN_PATHS:
        run_script(cmd, argv[at], argv[at + 1:], cmds, depth, "sh")
        return None
    _run_stdin(cmd, cmds, depth)
    return None


def _run_stdin(cmd, cmds, depth):
    """A shell that reads its commands on stdin: parse them when the line says
    what they are; otherwise they are code the gate cannot read (or, with no
    input at all, a shell left open to whatever the client writes into it)."""
    body = _stdin_script(cmd)
    if isinstance(body, Opaque):
        unknown_code(cmd, body, "reads its commands from a pipe")
    elif body is not None:
        _nested(cmd, body, cmds, depth)
    elif _from_network(cmd):
        return  # pipe-to-shell: a download run unread
    elif cmd.feeds is not None or any(r.op in ("<", "<&") for r in cmd.redirects) or \
            cmd.pos > 0:  # a pipe from a group or subshell: `(echo ...) | sh`
        unknown_code(cmd, None, "reads its commands from %s" % (
            "`%s`" % cmd.feeds.shown(60) if cmd.feeds is not None else "a file it is "
            "given on stdin" if cmd.pos == 0 else "a pipe"))
    elif cmd.depth == 0 and cmd.shared.interactive is None:
        cmd.shared.interactive = cmd


# What prints shell code that is the program's own set-up, run with eval or source
# (`eval "$(ssh-agent -s)"`, `source <(kubectl completion bash)`): program -> the
# words that make it print it (() for any).
CODE_EMITTERS = {
    "ssh-agent": (), "dircolors": (), "keychain": (), "gpg-agent": (),
    "pyenv": ("init", "virtualenv-init"), "rbenv": ("init",), "nodenv": ("init",),
    "goenv": ("init",), "jenv": ("init",), "plenv": ("init",), "direnv": ("hook", "export"),
    "opam": ("env", "config"), "brew": ("shellenv",), "conda": ("shell.bash", "shell.zsh",
                                                                 "shell.posix", "hook"),
    "starship": ("init",), "zoxide": ("init",), "fnm": ("env",), "mise": ("activate", "env"),
    "rtx": ("activate",), "atuin": ("init",), "luarocks": ("path",), "thefuck": ("--alias",),
    "minikube": ("docker-env",), "docker-machine": ("env",), "register-python-argcomplete": (),
    "pipenv": ("--completion",), "rustup": ("completions",), "poetry": ("completions",),
}


def emits_setup_code(script):
    """Whether a substitution's script is one command that prints its own set-up
    code (CODE_EMITTERS, or any `PROGRAM completion SHELL`)."""
    words = split_words(script) if "|" not in script and ";" not in script else []
    if not words:
        return False
    prog, args = os.path.basename(words[0]), words[1:]
    if args[:1] in (["completion"], ["completions"]):
        return True
    wanted = CODE_EMITTERS.get(prog)
    return wanted is not None and (not wanted or any(w in args for w in wanted))


def _from_network(cmd):
    feeder = cmd.feeds
    for _ in range(16):
        if feeder is None:
            return False
        if feeder.prog in DOWNLOADERS:
            return True
        feeder = feeder.feeds
    return False


def unknown_code(cmd, text, why):
    """Note code the line runs that the gate cannot read: a word it cannot know
    (text, an Opaque, when there is one) run as commands. A substitution that
    prints a program's own set-up code is known enough."""
    if text is not None and str(text).startswith("$(") and str(text).endswith(")") and (
            emits_setup_code(str(text)[2:-1]) or any(
                w in DOWNLOADERS for w in str(text)[2:].split()[:1])):
        return  # set-up code, or a download (pipe-to-shell)
    cmd.shared.unknown.append((cmd, why))


def _positional(env, args, with_zero):
    """env with $0, $1 ... $9, $@ and $# bound to args (those not given are empty)."""
    env = dict(env)
    if with_zero:
        env["0"], args = (args[0] if args else "sh"), args[1:]
    for n in range(1, 10):
        env[str(n)] = args[n - 1] if n <= len(args) else ""
    env["@"] = env["*"] = " ".join(args)
    env["\0@"] = tuple(args)
    env["#"] = str(len(args))
    return env


def _shell_script_index(argv):
    """Index of the script of `sh -c SCRIPT` (flags may be grouped: -ec, -lc), else
    None; the index may be len(argv) when the script is missing."""
    for j in range(1, len(argv)):
        arg = argv[j]
        if arg == "--":
            return None
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return j + 1
        if not arg.startswith("-") and not arg.startswith("+"):
            return None
    return None


def _shell_script_arg(argv):
    at = _shell_script_index(argv)
    if at is None:
        return None
    return argv[at] if at < len(argv) else ""


def _shell_file_index(argv):
    """Index of the script file a shell runs (`sh -e x.sh a b`), else None."""
    j = 1
    while j < len(argv):
        arg = argv[j]
        if arg == "--":
            return j + 1 if j + 1 < len(argv) else None
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            j += 2
            continue
        if arg in ("-s", "-i", "-"):
            return None
        if arg[:1] in ("-", "+"):
            j += 1
            continue
        return j
    return None


def _stdin_script(cmd):
    """A script a shell reads on its stdin: a heredoc, a here-string, a file
    redirected in, or what an `echo`/`printf`/`cat` before it in the pipeline
    prints."""
    for source in (cmd, cmd.feeds):
        if source is None:
            continue
        for redirect in (source.redirects if source is cmd or source.prog in (
                "cat", "tee") or not source.argv else ()):  # a filter's input is not
            # what it prints: `base64 -d <<< X | sh` runs the decoded text
            if redirect.op in ("<<", "<<-") and redirect.body is not None:
                return redirect.body
            if redirect.op == "<<<" and isinstance(redirect.target, str):
                return redirect.target
            if redirect.op == "<" and isinstance(redirect.target, str) and \
                    source is cmd and cmd.shared is not None:
                return _script_text(_resolve_in(cmd, redirect.target), cmd.shared)
        if source is cmd.feeds and source.prog in ("echo", "printf") and source.argv[1:]:
            args = [a for a in source.argv[1:] if a not in ("-e", "-n", "-E")]
            if any("\\" in a for a in args) or (source.prog == "printf" and "%" in args[0]):
                return printed_text(source)  # escapes and formats, as they print
            return " ".join(args).replace("\\n", "\n")
        if source is cmd.feeds and source.prog == "cat" and len(source.argv) == 2 and \
                cmd.shared is not None and not isinstance(source.argv[1], Opaque):
            path = _resolve_in(source, source.argv[1])
            text = _script_text(path, cmd.shared)
            return "" if text is None and not os.path.lexists(path) else text
        if source is cmd.feeds and source.prog in _TEXT_FILTER_NAMES and \
                cmd.shared is not None:
            return printed_text(source)
    return None


_TEXT_FILTER_NAMES = frozenset(("cat", "tee", "base64", "base32", "basenc", "xxd", "tr",
                                "rev", "tac", "head", "tail", "sed"))


def _resolve_in(cmd, text):
    """An absolute path for a word of cmd (through the line's own symlinks)."""
    return resolve_path(text, cmd.cwd, cmd.env.get("HOME"), True,
                        cmd.shared.links if cmd.shared else None)


def split_words(src):
    """shlex-like split of one simple command: the words, quotes removed."""
    return [expand_word(t[1], {}, "/")[0] for t in tokenize_shell(src) if t[0] == "word"]


def _fork_bomb(text):
    """`name(){ name|name& };name` in any spacing, outside quoted text."""
    squeezed = "".join(text.split())
    if "(){" not in squeezed:
        return False
    squeezed = "".join(_unquoted(text).split())
    at = squeezed.find("(){")
    while at > 0:
        start = at
        while start > 0 and squeezed[start - 1] not in ";&|(){}":
            start -= 1
        name = squeezed[start:at]
        body_end = squeezed.find("}", at)
        body = squeezed[at + 3:body_end if body_end > 0 else len(squeezed)]
        if name and (name + "|" + name) in body:
            return True
        at = squeezed.find("(){", at + 3)
    return False


def _unquoted(src):
    """The text with the bodies of quoted strings taken out: what the shell reads
    as syntax."""
    out, i, n = [], 0, len(src)
    while i < n:
        j = i
        while j < n and src[j] not in "'\"\\":
            j += 1
        out.append(src[i:j])
        if j >= n:
            break
        if src[j] == "\\":
            i = j + 2
        elif src[j] == "'":
            k = src.find("'", j + 1)
            i = n if k < 0 else k + 1
        else:
            i = _skip_double(src, j + 1)
        out.append(" ")
    return "".join(out)


_XARGS_VALUES = ("-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n",
                 "--max-args", "-P", "--max-procs", "-s", "--max-chars",
                 "--process-slot-var", "--max-lines")


def _peel_xargs(cmd, state, cmds, depth):
    """xargs runs its command with the items it reads appended (or put in place
    of -I's string): the items are what the feeder prints when the line tells,
    what a find yields, else unknown."""
    argv = cmd.argv
    replace, nul, delim, arg_file, i = None, False, None, None, 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        value = argv[i + 1] if i + 1 < len(argv) else ""
        if arg == "-I":
            replace = value
        elif arg.startswith("-I"):
            replace = arg[2:]
        elif arg in ("-i", "--replace"):
            replace = "{}"
        elif arg.startswith("--replace="):
            replace = arg[10:] or "{}"
        elif arg.startswith("-i"):
            replace = arg[2:]
        elif arg in ("-0", "--null"):
            nul = True
        elif arg in ("-d", "--delimiter"):
            delim = value
        elif arg.startswith("--delimiter="):
            delim = arg[12:]
        elif arg in ("-a", "--arg-file"):
            arg_file = value
        elif arg.startswith("--arg-file="):
            arg_file = arg[11:]
        i += 2 if arg in _XARGS_VALUES else 1
    command = argv[i:] or ["echo"]
    items = _feed_items(cmd, nul, delim, arg_file, lines=bool(replace))
    if arg_file is not None:  # the items are the file's words: it is read
        spawn_argv(cmd, ["cat", arg_file], cmds, depth + 1, "xargs -a")
    if items and isinstance(items[0], Found) and items[0].finder is not None and \
            items[0].finder.prog not in ("find", "fd", "fdfind") and (
            os.path.basename(command[0]) in _LISTER_BLIND):
        items = None    # what a lister names, deleted or moved: judged as unknown
    _fan_out(cmd, command, items, replace, cmds, depth, "xargs")
    return SPAWNED


def _fan_out(cmd, command, items, replace, cmds, depth, origin):
    """Run command with items appended, or once per item in place of replace."""
    if items is None:
        items = [found_word(UNKNOWN_WORD, None)]
    if not replace:
        spawn_argv(cmd, list(command) + list(items), cmds, depth + 1, origin)
        return
    distinct = list(dict.fromkeys(items))
    if len(distinct) > FANOUT_MAX:
        cmd.shared.too_large = "xargs -I with more than %d distinct items" % FANOUT_MAX
        return
    for item in distinct:
        env = dict(cmd.env)
        argv = [_substitute(w, replace, item, env) for w in command]
        spawn_argv(cmd, argv, cmds, depth + 1, origin, env=env)


_ENV_RUNNER_VALUES = ("-n", "--name", "-p", "--prefix", "-e", "--env", "-E",
                      "--environment", "--cwd", "-C", "-I", "--arg", "--argstr", "-A",
                      "--attr", "-k", "--keep", "--project", "--manifest-path",
                      # uv run's and poetry run's options that take a value
                      "--with", "-w", "--with-editable", "--with-requirements",
                      "--python", "--directory", "--package", "--group", "--only-group",
                      "--no-group", "--extra", "--env-file", "--index", "--default-index",
                      "--index-url", "-i", "--extra-index-url", "--find-links", "-f",
                      "--cache-dir", "--config-file", "--from", "-P")


def _peel_env_runner(cmd, cmds, depth):
    """The tools that run a command inside an environment they set up: `conda run
    [-n ENV] CMD`, `mise exec -- CMD`, `pixi run CMD`, `nix-shell --run STRING`,
    `nix develop -c CMD`, `uv run`, `uvx`, `poetry run`, `pipenv run`: the command is
    judged as one."""
    argv = cmd.argv
    for flag in ("--run", "--command"):
        if cmd.prog == "nix-shell" and flag in argv[1:-1]:
            _nested(cmd, str(argv[argv.index(flag) + 1]), cmds, depth, origin=cmd.prog)
            return None
    verbs = ("run", "exec", "x") if cmd.prog not in ("nix",) else ("develop", "shell")
    at = next((k for k in range(1, min(len(argv), 4)) if argv[k] in verbs), None)
    if cmd.prog == "uvx":  # `uvx [OPTIONS] TOOL ARGS`: the tool runs as a program
        at = 0
    if at is None:
        return None
    rest = list(argv[at + 1:])
    if cmd.prog == "nix":
        if "-c" in rest or "--command" in rest:
            k = rest.index("-c") if "-c" in rest else rest.index("--command")
            spawn_argv(cmd, rest[k + 1:], cmds, depth + 1, "nix")
        return None
    j = _take_options(["_"] + rest, _ENV_RUNNER_VALUES)
    inner = rest[j - 1:]
    if cmd.prog in ("mise", "rtx", "asdf"):  # `mise exec node@20 -- node x`: the
        inner = rest[rest.index("--") + 1:] if "--" in rest else []  # tools come first
    if cmd.prog == "uv" and inner and str(inner[0]).endswith(".py"):
        inner = ["python"] + inner  # `uv run x.py` runs it with the project's python
    if inner:
        spawn_argv(cmd, inner, cmds, depth + 1, "%s %s" % (cmd.prog, argv[at]))
    return None


def _peel_ansible(cmd, cmds, depth):
    """ansible HOSTS -m shell|command|raw -a CMD: CMD runs as a shell line (on
    localhost, here)."""
    module = option_values(cmd, ("-m", "--module-name"))
    line = option_values(cmd, ("-a", "--args"))
    if line and (not module or module[-1] in ("shell", "command", "raw",
                                              "ansible.builtin.shell",
                                              "ansible.builtin.command")):
        if isinstance(line[-1], Opaque):
            unknown_code(cmd, line[-1], "runs a command the gate cannot know")
        else:
            _nested(cmd, str(line[-1]), cmds, depth, origin="ansible")
    return None


def _feed_items(cmd, nul=False, delim=None, arg_file=None, lines=False):
    """The items a command reads on its stdin, as words: from a here-string, a
    heredoc, a small file, an echo/printf before it, the paths a find or ls
    yields; None when the line cannot tell."""
    text = None
    for redirect in cmd.redirects:
        if redirect.op == "<" and arg_file is None:
            arg_file = redirect.target
        elif redirect.op == "<<<":
            text = redirect.target
        elif redirect.op in ("<<", "<<-"):
            text = redirect.body
    if text is None and arg_file is not None:
        if isinstance(arg_file, Opaque):
            return None
        text = _script_text(_resolve_in(cmd, arg_file), cmd.shared, SMALL_FILE_MAX, False)
    if text is None:
        return _feeder_items(cmd.feeds, lines)
    if isinstance(text, Opaque):
        return None
    if lines and not (nul or delim):  # xargs -I: one item a line, blanks kept
        return [p.strip() for p in text.split("\n") if p.strip()]
    if nul or delim:
        parts = text.split("\0" if nul else (delim.replace("\\n", "\n") or "\n"))
    else:
        parts = split_words(text) if any(q in text for q in "'\"\\") else text.split()
    return [p for p in parts if p]


# The programs that lose what they are given, or run more commands: a lister's
# files fed to them are judged as unknown words (an uncommitted file among them).
_LISTER_BLIND = frozenset(("rm", "unlink", "shred", "rmdir", "mv", "truncate", "git",
                           "dd", "trash", "rimraf", "sh", "bash", "zsh", "dash", "env",
                           "sudo", "xargs", "find", "perl", "python", "python3"))


def _lister_items(feeder):
    """What a file lister feeds xargs, as a find that yields it: `grep -rl X src`
    and `rg -l X src` name files under src, `git ls-files [SPEC]` and `git diff
    --name-only [-- SPEC]` tracked files under the working folder (SPEC `*.py` a
    name test, a plain SPEC a starting point). None when it is no lister or the
    gate cannot tell."""
    import copy
    args = feeder.argv[1:]
    if any(isinstance(a, (Opaque, Found)) for a in args):
        return None
    info = FindInfo()
    if feeder.prog == "git":
        names = _diff_names(feeder)
        if names is not None:
            return names
        sub, rest = _git_parts(feeder)
        if sub == "ls-files":
            specs = [a for a in rest if not a.startswith("-")]
        elif sub == "diff" and "--name-only" in rest:
            specs = rest[rest.index("--") + 1:] if "--" in rest else []
        else:
            return None
        if any(a.startswith(("-C", "--git-dir", "--work-tree")) for a in feeder.argv[1:2]):
            return None
        for spec in specs:
            if any(ch in spec for ch in "*?[") and "/" not in spec:
                info.tests.append(("-name", spec))
            elif not any(ch in spec for ch in "*?[:"):
                info.roots.append(spec)
            else:
                return None
        if info.tests and info.roots:
            return None
        info.roots = info.roots or ["."]
    else:
        lists = has_flag(feeder, "l", ("--files-with-matches", "--files-without-match")) \
            or has_flag(feeder, "L", ())
        if not lists:
            return None
        ops = operands(feeder)
        if not option_values(feeder, ("-e", "-f", "--regexp", "--file")):
            ops = ops[1:]
        info.roots = ops or ["."]
    if len(info.roots) != 1:
        return None
    stand_in = copy.copy(feeder)
    stand_in.find = info
    return [found_word(info.roots[0], stand_in)]


_DIFF_NAME_FLAGS = frozenset(("--name-only", "-z", "--cached", "--staged", "--relative",
                              "--no-renames", "--"))
DIFF_NAMES_MAX = 2000


def _diff_names(feeder):
    """The files `git diff --name-only [--cached] [REV...] [-- PATH...]` prints, asked
    of git now (read-only, bounded): what xargs then gets, file by file. Only when it
    is the first command of the line, run at the top of the work tree (nothing
    before it changes what git sees, and the names are relative to where xargs
    runs); None otherwise."""
    sub, rest = _git_parts(feeder)
    cwd = feeder.cwd
    if sub != "diff" or "--name-only" not in rest or feeder.argv[1:2] != ["diff"] or \
            (feeder.pipeline, feeder.pos, feeder.depth) != (0, 0, 0) or not isinstance(
                cwd, str) or not os.path.isdir(os.path.join(cwd, ".git")):
        return None
    for arg in rest:
        if not isinstance(arg, str) or isinstance(arg, Glob) or (arg.startswith("-") and (
                arg not in _DIFF_NAME_FLAGS and not arg.startswith("--diff-filter="))) \
                or any(ch in arg for ch in "*?[$`\\") or arg.startswith(":"):
            return None
    names = readers()._git_query(cwd, ["diff", "-z"] + [a for a in rest if a != "-z"])
    if names is None or len(names) > DIFF_NAMES_MAX:
        return None
    return names


def _feeder_items(feeder, lines=False):
    if feeder is None or not feeder.argv:
        return None
    if lines and feeder.prog in ("echo", "printf"):
        text = readers().printed_text(feeder)
        if text is not None:
            return [p.strip() for p in text.split("\n") if p.strip()]
    prog, args = feeder.prog, feeder.argv[1:]
    if prog == "echo":
        while args and args[:1] in (["-n"], ["-e"], ["-E"]):
            args = args[1:]
    elif prog == "printf":
        args = args[1:] if len(args) > 1 else args
    elif prog in ("find", "fd", "fdfind") and feeder.find is not None:
        return [found_word(feeder.find.roots[0], feeder)]
    elif prog in ("grep", "egrep", "fgrep", "rg", "git"):
        return _lister_items(feeder)
    elif prog == "ls" and not any(isinstance(a, Opaque) for a in args):
        hidden = any(a.startswith("-") and not a.startswith("--") and ("a" in a or "A" in a)
                     for a in args) or "--all" in args or "--almost-all" in args
        folders = [a for a in args if not a.startswith("-")] or ["."]
        names = (".*", "*") if hidden else ("*",)
        plain = any(a.startswith("-") and not a.startswith("--") and "d" in a for a in args)
        items = []
        for f in folders:  # a file or a pattern is printed as itself, a folder listed
            if plain or isinstance(f, Glob) or any(c in f for c in "*?[") or not \
                    _is_folder(feeder, f):
                items.append(Glob(f) if isinstance(f, Glob) or any(
                    c in f for c in "*?[") else f)
            else:
                items += [Glob(os.path.join(f, n)) for n in names]
        return items
    else:
        return None
    if any(isinstance(a, (Opaque, Found)) for a in args):
        return None
    items = []
    for arg in args:
        pieces = arg.replace("\\n", " ").replace("\\0", " ").replace("\\t", " ").split()
        items.extend(Glob(p) if isinstance(arg, Glob) else p for p in pieces)
    return items


_PEELERS = {
    "command": _peel_command, "env": _peel_env, "flock": _peel_flock,
    "watch": _peel_watch, "xargs": _peel_xargs, "parallel": _peel_parallel,
    "ansible": lambda cmd, state, cmds, depth: _peel_ansible(cmd, cmds, depth),
    "conda": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "mamba": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "micromamba": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "mise": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "rtx": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "pixi": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "devbox": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "hatch": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "pdm": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "rye": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "asdf": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "nix-shell": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "nix": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "uv": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "uvx": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "poetry": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "pipenv": lambda c, s, cm, d: _peel_env_runner(c, cm, d),
    "sem": _peel_sem, "su": _peel_su, "runuser": _peel_su, "eval": _peel_eval,
    "trap": _peel_trap, "script": _peel_script, "cd": _peel_cd, "pushd": _peel_cd,
    "export": _peel_export, "declare": _peel_export, "typeset": _peel_export,
    "local": _peel_export, "readonly": _peel_export, "read": _peel_read,
    "mapfile": _peel_read, "readarray": _peel_read, "busybox": _peel_busybox,
    "ssh": _peel_ssh, "docker": _peel_container, "podman": _peel_container,
    "nerdctl": _peel_container, "kubectl": _peel_kubectl, "oc": _peel_kubectl,
    "sg": _peel_sg, "at": _peel_at, "batch": _peel_at, "crontab": _peel_crontab,
    "screen": _peel_screen, "tmux": _peel_tmux, "gdb": _peel_gdb, "alias": _peel_alias,
    "set": _peel_set, "printf": _peel_printf,
}
for _name in ("vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "rvim", "emacs",
              "emacs-nox"):
    _PEELERS[_name] = _peel_editor
for _name in SHELL_NAMES - {"busybox"}:
    _PEELERS[_name] = _peel_shell


# ---- what a settled command runs or makes ------------------------------------

_MAKES = frozenset(("make", "gmake", "bmake"))
# Programs of the system itself, run by their path: not read as scripts.
_SYSTEM_PROGRAMS = ("/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/lib/",
                    "/usr/libexec/", "/lib/", "/System/")
_PACKAGE_RUNNERS = frozenset(("npm", "yarn", "pnpm", "bun"))


def _follow(cmd, state, cmds, depth):
    """Follow what a command (wrappers peeled) runs: a script, inline code, make
    recipes, package scripts, find's -exec; note the symlinks and files the line
    makes, and whether it runs notrest itself."""
    prog, argv = cmd.prog, cmd.argv
    _note_cli(cmd)
    if cmd.shared.shallow:
        return
    if prog == "find":
        read_find(cmd, cmds, depth)
    elif cmd.cli is not None:
        pass
    elif prog == "bun" and _follow_package(cmd, cmds, depth):
        pass
    elif prog in INTERPRETERS or prog.startswith(("python", "pypy")):
        _follow_interpreter(cmd, cmds, depth)
    elif prog in _MAKES:
        _follow_make(cmd, cmds, depth)
    elif prog in _PACKAGE_RUNNERS:
        _follow_package(cmd, cmds, depth)
    elif prog in ("source", ".") and len(argv) > 1:
        run_script(cmd, argv[1], argv[2:], cmds, depth, "sh")
    elif "/" in argv[0] and not isinstance(argv[0], Opaque) and not argv[0].startswith(
            _SYSTEM_PROGRAMS):
        run_script(cmd, argv[0], argv[1:], cmds, depth, None)
    if prog in _RUNNER_ROWS:
        follow_runner(cmd, cmds, depth)
    if cmd.env or prog in _ENV_PLANTERS:
        _note_planted_switches(cmd)
    if prog in _CODE_OPTION_PROGRAMS:
        _follow_code_options(cmd, cmds, depth)
    elif prog == "git" and _git_may_run(cmd):
        follow_git(cmd, cmds, depth)
    if prog == "ln":
        _note_links(cmd)
    elif prog in ("tar", "bsdtar", "zip"):
        note_archive(cmd)
    elif prog in _FILE_COPIERS or prog in ("dd", "cat", "echo", "printf", "tee") or \
            cmd.redirects:
        _note_written(cmd)
        if cmd.shared.pending and any("hooks" in str(t) or str(t).endswith(
                ("config", ".gitconfig", "config.worktree")) for t, _m in written_paths(cmd)):
            _follow_git_hook_writes(cmd, cmds, depth)


# Build and test runners, judged for what the call hands them to run
# (follow_runner, below the cold line).
follow_runner = _reader("follow_runner")
follow_python_test_modules = _reader("follow_python_test_modules")
_RUNNER_ROWS = frozenset(("cmake", "tox", "go", "rake", "m4", "emacs", "emacs-nox", "pytest",
                          "py.test", "mocha", "jest", "vitest", "ava")) | _MAKES


# Programs that set the environment of processes started later (a user manager,
# a terminal multiplexer's server, the login session's).
_ENV_PLANTERS = frozenset(("systemctl", "launchctl", "dbus-update-activation-environment",
                           "tmux", "screen", "initctl"))


def _note_planted_switches(cmd):
    """A notrest switch (NOTREST_OVERRIDE and the like) that this line sets for a
    program it starts, or plants where later processes inherit it: a client or a
    hook started so would read the agent's switch as a person's."""
    if cmd.shared is None:
        return
    if cmd.prog in _ENV_PLANTERS and any(
            isinstance(a, str) and a.upper().startswith("NOTREST_") for a in cmd.argv[1:]):
        unknown_code(cmd, None, "plants a notrest switch where later processes inherit "
                     "it: overrides are a person's")
        return
    for name in cmd.env:
        if isinstance(name, str) and name.startswith("NOTREST_") and cmd.cli is None:
            unknown_code(cmd, None, "starts %s with %s set: overrides and switches are "
                         "a person's" % (cmd.prog, name))
            return


def _follow_git_hook_writes(cmd, cmds, depth):
    """A file written into a git hooks folder (.git/hooks/post-checkout) runs at the
    next commit, checkout or merge: its text is judged now, as the hook git runs."""
    for text, _mode in written_paths(cmd):
        if isinstance(text, Opaque):
            continue
        path = _resolve_in(cmd, text)
        if path.endswith(("/.git/config", "/.gitconfig", "/.git/config.worktree",
                          "/.config/git/config")):
            body = _script_text(path, cmd.shared, SCRIPT_READ_MAX, False)
            if isinstance(body, str) and not isinstance(body, Opaque):
                readers().follow_git_config_text(cmd, body, cmds, depth)
            continue
        if "/.git/hooks/" not in path and not path.rsplit("/", 2)[-2:-1] == ["hooks"]:
            continue
        body = _script_text(path, cmd.shared, SCRIPT_READ_MAX, False)
        if isinstance(body, Opaque):
            unknown_code(cmd, None, "writes a git hook the gate cannot read")
        elif body:
            _nested(cmd, body, cmds, depth, origin="git hook %s" % os.path.basename(path))


_CODE_OPTION_PROGRAMS = frozenset(("awk", "gawk", "mawk", "nawk", "busybox", "sed", "gsed",
                                   "tar", "bsdtar", "gtar", "rsync", "zip", "man", "ssh",
                                   "scp", "sftp", "sqlite3", "sqlite"))


# What makes a git command run programs of its own choosing: cheap tests first,
# follow_git (below the cold line) for the few that pass.
_GIT_CODE_FIRST = frozenset(("config", "bisect", "submodule", "filter-branch", "difftool",
                             "mergetool", "clone"))
_GIT_CODE_ENV = ("GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "PAGER", "EDITOR",
                 "VISUAL", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS",
                 "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_CONFIG_PARAMETERS",
                 "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                 "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR")
_GIT_CODE_WORDS = ("ext::", "--upload-pack", "--receive-pack", "--exec", "--extcmd",
                   "--open-files-in-pager", " -x", " -O", " -u ", "-filter")


def _git_may_run(cmd):
    skip = False
    for arg in cmd.argv[1:]:
        if skip:  # the value of -C, --git-dir, --work-tree: not the verb
            skip = False
            continue
        if arg in ("-C", "--git-dir", "--work-tree", "--namespace"):
            skip = True
            continue
        if not arg.startswith("-"):
            if arg in _GIT_CODE_FIRST:
                return True
            break
        if arg.startswith(("-c", "--config-env", "--exec-path")):
            return True
    env = cmd.env
    if any(name in env for name in _GIT_CODE_ENV):
        return True
    text = cmd.text()
    return any(word in text for word in _GIT_CODE_WORDS)


def _follow_code_options(cmd, cmds, depth):
    """The programs whose arguments may hold shell commands they run (awk's
    system(), sed's e, tar --to-command, rsync -e, ssh -o ProxyCommand ...): a
    cheap look at the words first, the readers only when one may."""
    prog, text = cmd.prog, " ".join(str(a) for a in cmd.argv[1:])
    if prog in ("awk", "gawk", "mawk", "nawk"):
        if "system" in text or "|" in text or "getline" in text or "-f" in cmd.argv or \
                ">" in text:
            follow_awk(cmd, cmds, depth)
    elif prog in ("sed", "gsed"):
        if "e" in text:
            follow_sed(cmd, cmds, depth)
    elif "-" in text or "." in text:
        follow_code_options(cmd, cmds, depth)


def _note_links(cmd):
    """`ln -s TARGET LINK` in this line: later words resolve through the link (a
    hard link is a copy: _note_written)."""
    if not has_flag(cmd, "s", ("--symbolic",)):
        _note_written(cmd)
        return
    for source, dest, _tree in copy_plan(cmd):
        if source is None or dest is None or isinstance(source, (Opaque, Glob)) or \
                isinstance(dest, Opaque):
            continue
        link = os.path.normpath(os.path.join(cmd.cwd, dest))
        target = os.path.normpath(os.path.join(os.path.dirname(link), source))
        cmd.shared.links[link] = target


def _note_written(cmd):
    """Files this line writes whose text it shows (cat/echo/printf > f, a heredoc
    into tee) or copies (cp, mv, install, rsync, scp, a hard link, dd, and cat or
    tee of one file: `cat SRC > DST`, `tee DST < SRC`): a script run later in the
    same line is read from here, and a copy of notrest runs as notrest."""
    shared, prog = cmd.shared, cmd.prog
    body = None
    targets = [r.target for r in cmd.redirects if r.op in (">", ">|", ">>")]
    if prog == "tee":
        targets += [a for a in cmd.argv[1:] if not a.startswith("-")]
    if prog in ("cat", "tee") and len(cmd.argv) <= 2:
        body = next((r.body if r.op in ("<<", "<<-") else r.target for r in cmd.redirects
                     if r.op in ("<<", "<<-", "<<<")), None)
    elif prog == "printf" and cmd.argv[1:] and "-v" not in cmd.argv[1:2] and not any(
            isinstance(a, Opaque) for a in cmd.argv[1:]):
        body = readers()._printf_text(cmd.argv[1:])
    elif prog in ("echo", "printf"):
        body = " ".join(a for a in cmd.argv[1:] if a not in ("-e", "-n", "-E"))
        body = body.replace("\\n", "\n")
    if prog in _FILE_COPIERS or prog == "ln":
        for source, dest, _tree in copy_plan(cmd):
            if source is not None and dest is not None and not isinstance(dest, Opaque):
                shared.note(cmd, dest, ("copy", source))
        return
    if prog == "dd":
        ends = dict(a.partition("=")[::2] for a in cmd.argv[1:] if a[:3] in ("if=", "of="))
        source = ends.get("if") or next((r.target for r in cmd.redirects if r.op == "<"),
                                        None)
        dest = ends.get("of") or (targets[-1] if targets else None)
        body = ("copy", source) if isinstance(source, str) else None
        targets = [dest] if dest else []
    elif body is None and prog in ("cat", "tee"):
        sources = [a for a in cmd.argv[1:] if a != "-" and not a.startswith("-")] \
            if prog == "cat" else []
        sources += [r.target for r in cmd.redirects if r.op == "<"]
        if len(sources) == 1 and isinstance(sources[0], str):
            body = ("copy", sources[0])
    if body is None or isinstance(body, Opaque):
        # what the program prints is text the gate cannot know: a script or patch
        # made of it, run or applied later in the line, is code it cannot read
        body = Opaque(UNKNOWN_WORD)
    for target in targets:
        if isinstance(target, str) and not isinstance(target, Opaque) and \
                not target.startswith("/dev/"):
            shared.note(cmd, target, body)


def _note_cli(cmd):
    """Mark a command that runs notrest itself (its wrapper, its module, the
    console script, a launcher, install.sh): cmd.cli holds its arguments."""
    argv = cmd.argv
    prog = cmd.prog
    if prog in NOTREST_NAMES:
        cmd.cli = list(argv[1:])
        return
    path = argv[0]
    if "/" in path and not isinstance(path, Opaque):
        kind = _notrest_kind_in_line(cmd, _resolve_in(cmd, path))
        if kind == "cli":
            cmd.cli = list(argv[1:])
        elif kind:
            cmd.cli = [kind] + list(argv[1:])


def notrest_file_kind(path):
    """What running a file does to notrest: "cli" (notrest's own CLI: the wrapper,
    notrest.py), "hook" (a hook launcher), "install" (notrest's install.sh), or ""."""
    name = os.path.basename(path)
    if name in NOTREST_NAMES:
        return "cli"
    folder = os.path.dirname(path)
    if name.endswith(".sh") and (folder.endswith("/" + ESTATE_DIR + "/hooks") or (
            os.path.basename(folder) == "hooks" and os.path.exists(
                os.path.join(os.path.dirname(folder), "notrest.py")))):
        return "hook"
    if name == "install.sh" and os.path.exists(os.path.join(folder, "notrest.py")):
        return "install"
    return ""


def _notrest_kind_in_line(cmd, path):
    """notrest_file_kind of path, or of the file this line copied to path (`cp
    .notrest/notrest /tmp/n && sh /tmp/n install` runs the wrapper whatever its text)."""
    kind = notrest_file_kind(path)
    if kind or cmd.shared is None or not (cmd.shared.pending or cmd.shared.written):
        return kind
    for _ in range(8):  # a copy of a copy (cat notrest.py > a; cp a b; python3 b)
        written = cmd.shared.made(path)
        if not (isinstance(written, tuple) and written[0] == "copy" and isinstance(
                written[1], str) and not isinstance(written[1], Opaque)):
            return ""
        path = written[1]
        kind = notrest_file_kind(path)
        if kind:
            return kind
    return ""


def read_find(cmd, cmds, depth):
    """Read a find's expression into cmd.find and run its -exec commands with `{}`
    standing for what it finds."""
    argv, info = cmd.argv, FindInfo()
    i = 1
    while i < len(argv) and (argv[i] in ("-H", "-L", "-P") or argv[i].startswith(
            ("-D", "-O"))):
        info.follow = info.follow or argv[i] in ("-H", "-L")
        i += 1
    while i < len(argv) and not argv[i].startswith("-") and argv[i] not in (
            "(", "!", ")", ","):
        info.roots.append(argv[i])
        i += 1
    info.roots = info.roots or ["."]
    negate, last = False, None
    while i < len(argv):
        arg = argv[i]
        if arg in _FIND_EXECS:
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+"):
                j += 1
            info.execs.append((arg, argv[i + 1:j]))
            i, negate = j + 1, False
            continue
        if arg in ("!", "-not"):
            negate = True
            i += 1
            continue
        if arg == "-delete":
            info.deleting = True
        elif arg == "-empty" and not negate:
            info.empty = True
        elif arg == "-prune" and last is not None:
            info.excluded.append(last)
        elif arg == "-fprintf" and i + 1 < len(argv):
            info.outputs.append(argv[i + 1])
            i += 3
            continue
        if arg in _FIND_VALUES and i + 1 < len(argv):
            test = (arg, argv[i + 1])
            if arg in _FIND_OUTPUTS:
                info.outputs.append(argv[i + 1])
            if arg in _FIND_FILTERS:
                info.narrowed = True
            if arg in _FIND_NAME_TESTS:
                (info.excluded if negate else info.tests).append(test)
            last = test
            i, negate = i + 2, False
            continue
        negate = False
        i += 1
    if info.empty and any(a in ("-o", "-or", ",", "(", ")") for a in argv):
        info.empty = False  # `-empty -o -name x`: not all it yields is empty
    cmd.find = info
    for action, words in info.execs:
        env = dict(cmd.env)
        item = found_word(info.roots[0], cmd)
        argv = [_substitute(w, "{}", item, env) for w in words]
        spawn_argv(cmd, argv, cmds, depth + 1, "find %s" % action, env=env)


_FIND_EXECS = ("-exec", "-execdir", "-ok", "-okdir")
_FIND_NAME_TESTS = ("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename",
                    "-regex", "-iregex")
_FIND_FILTERS = ("-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex",
                 "-mtime", "-mmin", "-newer", "-size", "-empty", "-user",
                 "-perm", "-atime", "-ctime", "-amin", "-cmin", "-links", "-inum",
                 "-lname", "-samefile")
_FIND_OUTPUTS = ("-fprint", "-fprint0", "-fls")
_FIND_VALUES = frozenset(_FIND_NAME_TESTS + _FIND_OUTPUTS + (
    "-lname", "-ilname", "-newer", "-anewer", "-cnewer", "-samefile", "-type", "-xtype",
    "-perm", "-size", "-user", "-group", "-uid", "-gid", "-mtime", "-atime", "-ctime",
    "-mmin", "-amin", "-cmin", "-used", "-links", "-inum", "-maxdepth", "-mindepth",
    "-fstype", "-regextype", "-printf", "-files0-from", "-context"))


def run_script(cmd, path_text, args, cmds, depth, kind):
    """Judge the script a command runs (`sh x.sh`, `./x`, `source x`): read it
    (bounded, a regular file, a file written earlier in this line first) and
    parse it with its arguments bound; an interpreter's script is read as code.
    kind: "sh", or None to go by its #! line."""
    if cmd.shared is None:
        return
    if isinstance(path_text, Opaque):
        unknown_code(cmd, None, "runs a script the gate cannot name")
        return
    if path_text in _STDIN_PATHS:
        _run_stdin(cmd, cmds, depth)
        return
    path = _resolve_in(cmd, path_text)
    name = _notrest_kind_in_line(cmd, path)
    if name:
        cmd.cli = list(args) if name == "cli" else [name] + list(args)
        return
    text = _script_text(path, cmd.shared)
    if isinstance(text, Opaque):
        unknown_code(cmd, None, "runs a script made of text the gate cannot read (what "
                     "a program or a process substitution prints)")
        return
    if not text:
        return
    origin = os.path.basename(path_text)
    language = "sh" if kind else _shebang_language(text)
    if language == "sh":
        env = _positional(cmd.env, [path_text] + list(args), True)
        _nested(cmd, text, cmds, depth, origin=origin, env=env)
    elif language:
        _follow_code(cmd, text, language, [path_text] + list(args), cmds, depth, origin)


def _shebang_language(text):
    """The language a script's #! line names: sh (also when there is none),
    python, node, perl, ruby, php, or "" for anything else."""
    if not text.startswith("#!"):
        return "sh"
    words = text[2:text.find("\n") if "\n" in text else len(text)].split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    prog = os.path.basename(words[0]) if words else "sh"
    if prog in SHELL_NAMES:
        return "sh"
    return _language(prog)


def _language(prog):
    for prefix, language in (("python", "python"), ("pypy", "python"), ("node", "node"),
                             ("deno", "node"), ("bun", "node"), ("perl", "perl"),
                             ("ruby", "ruby"), ("php", "php"), ("expect", "tcl"),
                             ("tclsh", "tcl"), ("wish", "tcl"), ("pwsh", "pwsh"),
                             ("powershell", "pwsh")):
        if prog.startswith(prefix):
            return language
    return "other" if prog in INTERPRETERS else ""


def _script_text(path, shared, limit=SCRIPT_READ_MAX, strict=True):
    """The text of a file the gate reads to judge it, or None: a regular file
    opened without blocking, at most limit bytes, within the call's budget (past
    either, the call is too large to judge when strict); a file written earlier
    in this very line is taken from the line. A binary file (a NUL in its first
    block) is no text, and only its first block is read."""
    written = shared.made(path)
    if isinstance(written, str):
        return written
    if isinstance(written, tuple):
        if written[0] == "proc":
            return readers().procsub_text(written[1], written[2], shared)
        path = written[1]
    import stat
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError, TypeError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        first = os.read(fd, 4096)
        if b"\0" in first:
            return None
        if info.st_size > limit or shared.script_bytes + info.st_size > SCRIPT_BUDGET_BYTES:
            if not strict:
                return None
            shared.too_large = shared.too_large or "%s is %d bytes (the gate reads up " \
                "to %d)" % (path, info.st_size, min(limit, SCRIPT_BUDGET_BYTES))
            return None
        chunks, size = [first], len(first)
        while size <= info.st_size and first:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    shared.script_bytes += size
    data = b"".join(chunks)
    return data.decode("utf-8", "replace")


# ---- interpreters ------------------------------------------------------------

_CODE_FLAGS = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print"),
               "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",)}
_CODE_FLAGS_ELSEWHERE = ("-e", "-c", "--eval", "-Command", "-r")
_FLAGS_WITH_VALUES = {
    "python": ("-W", "-X", "--check-hash-based-pycs"),
    "node": ("-r", "--require", "--import", "--loader", "--experimental-loader", "-C",
             "--conditions", "--input-type"),
    "perl": ("-I", "-M", "-m", "-x"), "ruby": ("-I", "-r", "-C", "-E", "-F"),
    "php": ("-d", "-c", "-z")}


def interpreter_parts(argv):
    """(codes, script index, module, index of the first argument) of an
    interpreter command line: inline code (-c, -e, -r...), the script it runs,
    the module of `python -m`."""
    prog = os.path.basename(argv[0])
    language = _language(prog)
    code_flags = _CODE_FLAGS.get(language, _CODE_FLAGS_ELSEWHERE)
    values = _FLAGS_WITH_VALUES.get(language, ())
    codes, i = [], 1
    while i < len(argv):
        arg = argv[i]
        if arg in code_flags and i + 1 < len(argv):
            codes.append(argv[i + 1])
            i += 2
            if language == "python":
                return codes, None, None, i
            continue
        if language == "python" and arg.startswith("-") and not arg.startswith("--"):
            bundled = _python_bundle(argv, i, codes)
            if bundled:
                return bundled
        if language in ("perl", "ruby") and arg.startswith("-") and not \
                arg.startswith("--") and len(arg) > 2 and "e" in arg[1:] and \
                arg[1:arg.index("e", 1)].isalpha():  # a bundle: -ne, -lne, -pe1
            cut = arg.index("e", 1)
            value = arg[cut + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
            codes.append(value)
            i += 1 if arg[cut + 1:] else 2
            continue
        if language == "php" and arg == "-f" and i + 1 < len(argv):
            return codes, i + 1, None, i + 2
        if arg == "--":
            i += 1
            break
        if arg in values:
            i += 2
            continue
        if not arg.startswith("-") or arg == "-":
            break
        i += 1
    if i < len(argv) and prog in ("deno", "bun") and argv[i] in ("run", "eval", "x"):
        if argv[i] == "eval" and i + 1 < len(argv):
            return codes + [argv[i + 1]], None, None, i + 2
        i += 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 1
    if codes or i >= len(argv) or argv[i] == "-":
        return codes, None, None, i
    return codes, i, None, i + 1


def _python_bundle(argv, i, codes):
    """python's short flags at argv[i] that end in c or m (-Ic CODE, -Bm MODULE, -cCODE):
    interpreter_parts' answer, or None when they hold neither."""
    letters = argv[i][1:]
    if "c" not in letters and "m" not in letters:
        return None
    cut = min(letters.index(c) for c in "cm" if c in letters)
    rest = letters[cut + 1:]
    value = rest or (argv[i + 1] if i + 1 < len(argv) else "")
    nxt = i + (1 if rest else 2)
    if letters[cut] == "c":
        return [value], None, None, nxt
    return codes, None, value, nxt


def interpreter_code(cmd):
    """Inline code an interpreter runs: -c/-e arguments and a script on stdin."""
    codes, script, module, _ = interpreter_parts(cmd.argv)
    if not codes and script is None and module is None:
        body = _stdin_script(cmd)
        if body:
            codes.append(body)
    return codes


def _follow_interpreter(cmd, cmds, depth):
    """Judge what an interpreter runs: its inline code, its script, or notrest."""
    argv = cmd.argv
    if _language(cmd.prog) == "pwsh":
        _follow_pwsh(cmd, cmds, depth)
        return
    codes, script, module, rest = interpreter_parts(argv)
    language = _language(cmd.prog) or "other"
    if module is not None:
        if module in ("unittest", "pytest"):
            follow_python_test_modules(cmd, module, list(argv[rest:]), cmds, depth)
        if module.split(".")[0] == "notrest":
            cmd.cli = list(argv[rest:])
        elif cmd.shared is not None and "/" not in module:
            path = os.path.join(cmd.cwd, *module.split(".")) + ".py"
            if os.path.isfile(path):
                text = _script_text(path, cmd.shared)
                if text:
                    _follow_code(cmd, text, "python", [path] + list(argv[rest:]), cmds,
                                 depth, module)
        return
    if script is not None:
        if language == "other":
            run_script(cmd, argv[script], argv[script + 1:], cmds, depth, None)
        else:
            _run_code_file(cmd, argv[script], argv[script + 1:], language, cmds, depth)
        return
    if not codes:
        body = _stdin_script(cmd)
        codes = [body] if body else []
        if body is None and not any(a in ("-V", "--version", "-h", "--help") for a in
                                    argv[1:]):
            _run_stdin(cmd, cmds, depth)
    for code in codes:
        if language == "other":  # a language the gate has no reader for: the
            for line in _embedded_lines(code):  # command lines its strings hold
                _nested(cmd, line, cmds, depth, origin="%s, which may run it" % cmd.prog)
        flag = {"python": "-c", "php": "-r"}.get(language, "-e")
        _follow_code(cmd, code, language, ["-c"] + list(argv[rest:]), cmds, depth,
                     "%s %s" % (cmd.prog, flag))


# ---- PowerShell: its cmdlets read as the shell commands that do the same ----
# pwsh takes any unambiguous prefix of a parameter's name, in any case; -Command
# text (or -EncodedCommand's base64 of UTF-16LE) is statements separated by `;`,
# each a pipeline. The subset here is what deletes, writes, copies, moves, reads,
# downloads and evaluates: enough to judge the call by the laws the shell has.

_PWSH_VERBS = {
    "remove-item": "rm", "rm": "rm", "ri": "rm", "del": "rm", "erase": "rm", "rd": "rm",
    "rmdir": "rm", "copy-item": "cp", "cp": "cp", "copy": "cp", "cpi": "cp",
    "move-item": "mv", "mv": "mv", "move": "mv", "mi": "mv", "set-content": "tee",
    "sc": "tee", "out-file": "tee", "add-content": "tee -a", "ac": "tee -a",
    "clear-content": "truncate -s 0", "clc": "truncate -s 0", "get-content": "cat",
    "gc": "cat", "cat": "cat", "type": "cat", "invoke-expression": "sh -c",
    "iex": "sh -c", "invoke-webrequest": "curl", "iwr": "curl",
    "invoke-restmethod": "curl", "irm": "curl", "curl": "curl", "wget": "curl",
    "get-childitem": "ls", "gci": "ls", "ls": "ls", "dir": "ls"}
_PWSH_FLAGS = {"-recurse": "-r", "-r": "-r", "-rec": "-r", "-force": "-f", "-fo": "-f",
               "-f": "-f", "-append": "-a"}
_PWSH_VALUES = ("-value", "-encoding", "-filter", "-include", "-exclude", "-method",
                "-body", "-headers", "-outfile", "-erroraction", "-ea", "-credential")
_PWSH_HOME = ("$home", "$env:home", "$env:userprofile", "${env:home}", "~")


def _pwsh_words(statement):
    words, i, n = [], 0, len(statement)
    while i < n:
        c = statement[i]
        if c.isspace():
            i += 1
        elif c in "'\"":
            j = statement.find(c, i + 1)
            j = n if j < 0 else j
            words.append(("q" if c == "'" else "d", statement[i + 1:j]))
            i = j + 1
        else:
            j = i
            while j < n and not statement[j].isspace() and statement[j] not in "'\"":
                j += 1
            words.append(("w", statement[i:j]))
            i = j
    return words


def _pwsh_value(kind, text):
    """A PowerShell word as a shell word: the home folder as ~, its variables the
    gate cannot know as an unknown word."""
    low = text.lower()
    for home in _PWSH_HOME:
        if low == home or low.startswith(home + "/") or low.startswith(home + "\\"):
            return "~" + text[len(home):].replace("\\", "/")
    if kind != "q" and "$" in text:
        return UNKNOWN_WORD
    return _quote_arg(text.replace("\\", "/"))


def pwsh_lines(code):
    """The shell lines that do what PowerShell code does, for the subset above."""
    lines = []
    for statement in code.replace("\n", ";").split(";")[:200]:
        shell, before = [], None
        for stage in statement.split("|"):
            words = _pwsh_words(stage.strip())
            if words and words[0][1] == "&":  # the call operator: `& 'prog' args`
                words = words[1:]
            if not words:
                continue
            verb = _PWSH_VERBS.get(words[0][1].lower())
            if verb is None:
                shell.append(" ".join(_pwsh_value(k, t) for k, t in words))
                before = None
                continue
            out, k = [verb], 1
            while k < len(words):
                kind, text = words[k]
                low = text.lower()
                if kind == "w" and low in _PWSH_FLAGS:
                    out.append(_PWSH_FLAGS[low])
                elif kind == "w" and low in _PWSH_VALUES:
                    k += 1
                elif not (kind == "w" and low.startswith("-")):
                    out.append(_pwsh_value(kind, text))
                k += 1
            if verb == "rm" and before and not [w for w in out[1:] if w[:1] != "-"]:
                out += before  # `gci ~ | Remove-Item -Recurse`: what was listed
            if verb == "sh -c" and len(out) == 1:
                out = ["sh"]  # `… | iex`: what comes down the pipe runs
            before = [w for w in out[1:] if not w.startswith("-")] if verb == "ls" else None
            shell.append(" ".join(out))
        if shell:
            lines.append(" | ".join(shell))
    return lines


def _pwsh_code(argv):
    """(code, script) of a pwsh command line: -Command's text (all the words after
    it), -EncodedCommand's decoded text, or the -File / first word's script."""
    for i in range(1, len(argv)):
        flag = str(argv[i]).lower()
        if isinstance(argv[i], Opaque):
            return argv[i], None
        if len(flag) > 1 and "-command".startswith(flag) and flag != "-":
            return " ".join(str(a) for a in argv[i + 1:]), None
        if flag in ("-ec", "-enc") or (len(flag) > 2 and "-encodedcommand".startswith(flag)):
            import base64
            try:
                text = base64.b64decode(str(argv[i + 1])).decode("utf-16-le")
            except (ValueError, IndexError, UnicodeDecodeError):
                return Opaque(UNKNOWN_WORD), None
            return text, None
        if len(flag) > 1 and "-file".startswith(flag) and i + 1 < len(argv):
            return None, argv[i + 1]
        if not flag.startswith("-"):
            return None, argv[i]
    return None, None


def _follow_pwsh(cmd, cmds, depth):
    code, script = _pwsh_code(cmd.argv)
    if (code is None and script is None) or "-" in (code, script):
        code, script = _stdin_script(cmd), None  # `… | pwsh`, `pwsh -Command -`
        if code is None and not _from_network(cmd) and (cmd.feeds is not None or any(
                r.op in ("<", "<&") for r in cmd.redirects) or cmd.pos > 0):
            unknown_code(cmd, None, "reads PowerShell from a pipe")
            return
    if isinstance(code, Opaque):
        unknown_code(cmd, code, "runs PowerShell the gate cannot read")
    elif code:
        for line in pwsh_lines(code):
            _nested(cmd, line, cmds, depth, origin="%s -Command" % cmd.prog)
    elif script is not None and cmd.shared is not None and not isinstance(script, Opaque):
        text = _script_text(_resolve_in(cmd, script), cmd.shared)
        for line in pwsh_lines(text) if isinstance(text, str) else ():
            _nested(cmd, line, cmds, depth, origin=os.path.basename(str(script)))


def _run_code_file(cmd, path_text, args, language, cmds, depth):
    if isinstance(path_text, Opaque) or cmd.shared is None:
        return
    path = _resolve_in(cmd, path_text)
    kind = _notrest_kind_in_line(cmd, path)
    if kind:
        cmd.cli = list(args) if kind == "cli" else [kind] + list(args)
        return
    text = _script_text(path, cmd.shared)
    if isinstance(text, Opaque):
        unknown_code(cmd, None, "runs a script this line made of text the gate cannot "
                     "read")
    elif text:
        _follow_code(cmd, text, language, [path_text] + list(args), cmds, depth,
                     os.path.basename(path_text))


def _follow_code(cmd, code, language, argv, cmds, depth, origin):
    """Judge code by what it would run and touch: its shell calls become commands,
    its file operations the shell commands that do the same; code that runs
    notrest marks cmd."""
    for kind, value in readers().code_effects(code, language, [str(a) for a in argv]):
        if kind == "notrest":
            cmd.cli = [Opaque(w) if w == UNKNOWN_WORD else w for w in value]
        elif kind == "shell":
            _nested(cmd, str(value), cmds, depth, origin=origin)
        elif kind == "argv":
            spawn_argv(cmd, [Opaque(w) if w == UNKNOWN_WORD else str(w) for w in value],
                       cmds, depth + 1, origin)
        elif kind == "made" and cmd.shared is not None:
            cmd.shared.note(cmd, str(value), Opaque(UNKNOWN_WORD))  # written, text unseen
        elif kind == "unknown" and cmd.shared is not None and list(argv[:1]) == ["-c"]:
            unknown_code(cmd, None, value)  # inline code only: a project's own scripts
            # run programs from variables all the time (ring 2 confines them)


# ---- make and package scripts -------------------------------------------------


# ==== paths and globs =======================================================

def resolve_path(text, cwd, home, follow=True, links=None, folders=None):
    """An absolute, normalised path: ~ expanded, joined to cwd, `..` folded,
    symlinks of the parent folders resolved (the last part too when follow), and
    links, the symlinks the line itself makes ({link: target}), followed first.
    folders: a cache of resolved folders, so that many names in one folder cost
    one walk."""
    if text == "~" or text.startswith("~/"):
        text = (home or "/") + text[1:]
    path = os.path.normpath(os.path.join(cwd or "/", text))
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if links:
        path = _through_links(path, links, follow)
    try:
        head, tail = os.path.split(path)
        if not tail:
            return os.path.realpath(path) if follow else path
        real_head = folders.get(head) if folders is not None else None
        if real_head is None:
            real_head = os.path.realpath(head)
            if folders is not None:
                folders[head] = real_head
        joined = os.path.join(real_head, tail)
        if follow and os.path.islink(joined):
            return os.path.realpath(joined)
        return joined
    except (OSError, ValueError):
        return path


def _through_links(path, links, follow):
    for _ in range(8):
        for link, target in links.items():
            if path.startswith(link + "/"):
                path = target + path[len(link):]
                break
            if follow and path == link:
                path = target
                break
        else:
            return path
    return path


def is_within(path, base):
    """path is base or inside it."""
    if not base:
        return False
    base = base.rstrip("/") or "/"
    return path == base or path.startswith(base if base == "/" else base + "/")


def display_path(path, root):
    """A path relative to the project root when inside it, else absolute."""
    if root and is_within(path, root) and path != root:
        return path[len(root.rstrip("/")) + 1:]
    return path


def _segment_match(pattern, text):
    """fnmatch of one path segment: * ? [set] [!set], no regular expressions."""
    p, t, star_p, star_t = 0, 0, -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star_p, star_t, p = p, t, p + 1
            continue
        if p < len(pattern):
            ok, width = _char_match(pattern, p, text[t])
            if ok:
                p, t = p + width, t + 1
                continue
        if star_p < 0:
            return False
        star_t += 1
        p, t = star_p + 1, star_t
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def shell_segment_match(pattern, name):
    """A shell glob of one segment: as _segment_match, but a leading dot is
    matched only by a pattern that starts with one (`*` skips dotfiles)."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return _segment_match(pattern, name)


def _char_match(pattern, p, ch):
    """(matches, pattern width) of the pattern item at p against one character."""
    c = pattern[p]
    if c == "?":
        return True, 1
    if c == "[":
        end = pattern.find("]", p + 2)
        if end < 0:
            return ch == "[", 1
        body = pattern[p + 1:end]
        negate = body[:1] in ("!", "^")
        if negate:
            body = body[1:]
        hit, i = False, 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                hit = hit or body[i] <= ch <= body[i + 2]
                i += 3
            else:
                hit = hit or body[i] == ch
                i += 1
        return hit != negate, end - p + 1
    return c == ch, 1


def glob_match(pattern, path, shell=False):
    """Match a '/'-separated path against a glob where ** spans folders.
    A pattern without '/' matches the last segment anywhere. shell: as the shell
    expands, where `*` does not match a leading dot."""
    match = shell_segment_match if shell else _segment_match
    if "/" not in pattern:
        return match(pattern, path.rstrip("/").rsplit("/", 1)[-1])
    pats = [s for s in pattern.strip("/").split("/") if s]
    parts = [s for s in path.strip("/").split("/") if s]
    memo = {}

    def walk(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(pats):
            result = j == len(parts)
        elif pats[i] == "**":
            result = walk(i + 1, j) or (j < len(parts) and walk(i, j + 1))
        else:
            result = j < len(parts) and match(pats[i], parts[j]) and walk(i + 1, j + 1)
        memo[key] = result
        return result

    return walk(0, 0)


def glob_anchor(pattern):
    """The literal folder a glob pattern lives under ('.claude' for '.claude/s*.json')."""
    out = []
    for seg in pattern.split("/"):
        if any(ch in seg for ch in "*?["):
            break
        out.append(seg)
    return "/".join(out)


def patch_targets(text):
    """[(path, mode)] named by an apply_patch text (Add/Update/Delete/Move)."""
    found = []
    for line in str(text).splitlines():
        line = line.strip()
        for prefix, mode in (("*** Add File:", "write"), ("*** Update File:", "write"),
                             ("*** Delete File:", "delete"), ("*** Move to:", "write"),
                             ("*** Move File:", "write")):
            if line.startswith(prefix):
                target = line[len(prefix):].strip()
                if target:
                    found.append((target, mode))
    return found


_READERS = frozenset((
    "ugrep", "ug",
    "cat", "tac", "less", "more", "most", "head", "tail", "bat", "batcat", "view", "nl",
    "base64", "base32", "basenc", "xxd", "od", "hexdump", "strings", "grep", "egrep",
    "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk", "nawk", "cut", "sort", "uniq",
    "diff", "sdiff", "cmp", "comm", "jq", "yq", "source", ".", "paste", "column", "fold",
    "fmt", "pr", "iconv", "gpg", "openssl", "zip", "gzip", "bzip2", "xz", "zstd", "tar",
    "scp", "rsync", "sftp", "curl", "nc", "netcat", "socat", "pbcopy", "xclip", "xsel",
    "wl-copy", "expand", "unexpand", "rev", "look", "dos2unix", "unix2dos", "tr", "split",
    "csplit", "md5sum", "sha1sum", "sha256sum", "cksum", "sum", "file", "stat", "wc",
    "vi", "vim", "nvim", "nano", "emacs", "code", "subl", "ed", "ex", "pico", "micro",
    "sed", "7z", "7za", "cpio", "pax"))
_CONTENT_READERS = _READERS - frozenset(("md5sum", "sha1sum", "sha256sum", "cksum", "sum",
                                         "file", "stat", "wc"))
_EDITORS = frozenset(("vi", "vim", "nvim", "nano", "emacs", "code", "subl", "ed", "ex",
                      "pico", "micro"))
_VALUE_OPTIONS = {
    "grep": ("-e", "-f", "-m", "-A", "-B", "-C", "--regexp", "--file", "--max-count",
             "--include", "--exclude", "--exclude-dir", "--label", "--color"),
    "rg": ("-e", "-f", "-g", "-t", "-T", "-m", "-A", "-B", "-C", "--glob", "--type",
           "--regexp", "--max-count"),
    "head": ("-n", "-c", "--lines", "--bytes"),
    "tail": ("-n", "-c", "--lines", "--bytes", "-s", "--pid"),
    "cut": ("-d", "-f", "-b", "-c", "--delimiter", "--fields"),
    "sort": ("-k", "-t", "-o", "-S", "-T", "--key", "--field-separator", "--output"),
    "awk": ("-F", "-v", "-f"),
    "sed": ("-e", "-f", "--expression", "--file", "-l"),
    "cp": ("-t", "-S", "--target-directory", "--suffix"),
    "mv": ("-t", "-S", "--target-directory", "--suffix"),
    "install": ("-m", "-o", "-g", "-t", "--mode", "--owner", "--group",
                "--target-directory"),
    "ln": ("-t", "-S", "--target-directory", "--suffix"),
    "chmod": ("--reference",),
    "chown": ("--reference", "--from"),
    "truncate": ("-s", "-r", "--size", "--reference"),
    "tar": ("-f", "-C", "-T", "-X", "--file", "--directory", "--exclude"),
    "openssl": ("-out", "-passin", "-passout", "-inform", "-outform"),
    "curl": ("-o", "-H", "-X", "-u", "-A", "-e", "-w", "-b", "-c", "-m", "--output",
             "--header", "--request", "--user", "--max-time", "--connect-timeout"),
    "base64": ("-w", "--wrap"),
    "xxd": ("-l", "-s", "-c", "-g"),
    "jq": ("--arg", "--argjson", "--slurpfile", "--rawfile", "-f"),
    "tee": (),
    "touch": ("-d", "-r", "-t", "--date", "--reference"),
    "mkdir": ("-m", "--mode"),
    "rsync": ("-e", "--rsh", "--exclude", "--include", "--filter", "-f"),
    "scp": ("-i", "-P", "-o", "-F", "-c", "-l", "-S"),
    "diff": ("-U", "-C", "--label", "-x", "--exclude"),
    "dd": (),
    "split": ("-l", "-b", "-n", "-a"),
    "unzip": ("-d", "-P"),
    "patch": ("-i", "-d", "-o", "-r", "-B", "-z", "-V", "-D", "-F", "-g", "-p"),
    "gzip": ("-S", "--suffix"),
    "uniq": ("-f", "-s", "-w"),
    "sponge": (),
}


def operands(cmd, skip_first=0):
    """The non-option words of a command (values of known options skipped)."""
    argv = cmd.argv
    takes = _VALUE_OPTIONS.get(cmd.prog, ())
    out, i, dashdash = [], 1, False
    while i < len(argv):
        arg = argv[i]
        if dashdash or arg == "-" or not arg.startswith("-"):
            out.append(arg)
        elif arg == "--":
            dashdash = True
        elif arg in takes:
            i += 1
        i += 1
    return out[skip_first:]


def option_values(cmd, names):
    """Values given to any of the named options (`-o X`, `--out=X`, `-oX`)."""
    argv, found = cmd.argv, []
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                found.append(argv[i + 1])
            elif name.startswith("--") and arg.startswith(name + "="):
                found.append(arg[len(name) + 1:])
            elif (not name.startswith("--") and len(name) == 2 and arg.startswith(name)
                  and len(arg) > 2 and not arg.startswith("--")):
                found.append(arg[2:])
    return found


def has_flag(cmd, short="", long=()):
    """Whether a command carries a flag: any letter of `short` in a short-option
    group (-rf, -r -f) or one of the long names."""
    for arg in cmd.argv[1:]:
        if arg == "--":
            break
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in long:
                return True
        elif arg.startswith("-") and len(arg) > 1 and any(ch in arg[1:] for ch in short):
            return True
    return False


def command_paths(cmd):
    """[(path text, mode)] a simple command would touch: mode read, write, delete,
    meta (permissions, times), code (a path named inside an interpreter's inline
    code), tree (a folder read whole, hidden files included) or any (a program the
    gate has no row for was given it: judged as if it read and wrote it). A word
    may be a Found (whatever a find yields) or an Opaque. One row per program in
    _PATH_RULES says what its arguments touch."""
    found = _redirect_paths(cmd)
    prog = cmd.prog
    rule = _PATH_RULES.get(prog)
    if cmd.cli is not None:
        rule = _paths_cli
    elif rule is None:
        if prog in INTERPRETERS or prog.startswith(("python", "pypy")):
            rule = _paths_interpreter
        elif prog in SHELL_NAMES or prog.startswith("mkfs"):
            rule = _paths_none
        else:
            rule = _paths_unknown
    found += rule(cmd)
    return [(p, m) for p, m in found if p]


def _redirect_paths(cmd):
    found = []
    for redirect in cmd.redirects:
        target = redirect.target
        if not isinstance(target, str) or not target or target.startswith("&"):
            continue
        if redirect.op in (">", ">>", ">|", "&>", "&>>", "<>"):
            found.append((target, "write"))
        elif redirect.op in ("<", "<&"):
            found.append((target, "read"))
    return found


def _paths_none(cmd):
    return []


def _paths_delete(cmd):
    return [(p, "delete") for p in operands(cmd)]


def _paths_write(cmd):
    return [(p, "write") for p in operands(cmd)]


def _paths_meta(cmd):
    return [(p, "meta") for p in operands(cmd)]


def _paths_chmod(cmd):
    return [(p, "meta") for p in _chmod_targets(cmd)]


def _paths_copy(cmd):
    """cp, mv, ln, install, rsync, scp: each source read (mv: moved away; ln, cp -l:
    given a second name, mode link; ln -s: linked to, mode symlink, its target read
    relative to the link's folder), each landing written; a recursive copy reads its
    source tree; rsync --link-dest names a base it links from."""
    prog, found = cmd.prog, []
    linking = prog == "ln" or (prog == "cp" and has_flag(cmd, "l", ("--link",)))
    symbolic = prog == "ln" and has_flag(cmd, "s", ("--symbolic",))
    for source, dest, tree in copy_plan(cmd):
        if source is not None and symbolic:
            if isinstance(dest, str) and not isinstance(dest, (Opaque, Glob)) and \
                    not isinstance(source, (Opaque, Glob)) and \
                    not source.startswith(("/", "~")):
                found.append((os.path.join(os.path.dirname(dest), source), "symlink"))
            else:
                found.append((source, "symlink"))
        elif source is not None:
            found.append((source, "delete" if prog == "mv" else "link" if linking
                          else "tree" if tree else "read"))
        if dest is not None:
            found.append((dest, "write"))
    if prog == "rsync":
        found += _rsync_link_bases(cmd)
        if has_flag(cmd, "", ("--delete", "--delete-after", "--delete-before", "--del",
                              "--delete-during", "--delete-excluded")):
            found += [(dest, "delete") for _s, dest, _t in copy_plan(cmd)[-1:] if dest]
    return found


def _rsync_link_bases(cmd):
    """rsync --link-dest=BASE: files are hard-linked from BASE (relative to the
    destination, too)."""
    dests = [d for _s, d, _t in copy_plan(cmd)[-1:] if isinstance(d, str) and
             not isinstance(d, (Opaque, Glob))]
    found = []
    for base in option_values(cmd, ("--link-dest",)):
        found.append((base, "link"))
        if dests and not isinstance(base, Opaque) and not base.startswith(("/", "~")):
            found.append((os.path.join(dests[0], base), "link"))
    return found


def _paths_link(cmd):
    """link OLD NEW: NEW is a second name for OLD."""
    ops = operands(cmd)
    return [(p, "link") for p in ops[:1]] + [(p, "write") for p in ops[1:2]]


def _paths_in_place(cmd):
    """sed, awk: in place they write their files, else they read them."""
    if not _in_place(cmd):
        return _paths_reader(cmd)
    ops = operands(cmd)
    scripted = bool(option_values(cmd, ("-e", "--expression", "-f", "--file")))
    return [(p, "write") for p in (ops if scripted else ops[1:])]


def _paths_perl(cmd):
    if _in_place(cmd):
        return _paths_write(cmd)
    return _paths_interpreter(cmd)


def _paths_compress(cmd):
    if has_flag(cmd, "ckt", ("--stdout", "--keep", "--to-stdout", "--test", "--list")):
        return [(p, "read") for p in operands(cmd)]
    return [(p, "delete") for p in operands(cmd)]


def _paths_sort(cmd):
    found = [(p, "write") for p in option_values(cmd, ("-o", "--output"))]
    ops = operands(cmd)
    if cmd.prog == "uniq":
        found += [(p, "write") for p in ops[1:2]]
        ops = ops[:1]
    return found + [(p, "read") for p in ops]


def _paths_dd(cmd):
    found = []
    for arg in cmd.argv[1:]:
        if arg.startswith("of="):
            found.append((arg[3:], "write"))
        elif arg.startswith("if="):
            found.append((arg[3:], "read"))
    return found


def _paths_git(cmd):
    return _git_paths(cmd) if len(cmd.argv) > 1 else []


def _paths_find(cmd):
    if cmd.find is None:
        return []
    found = [(found_word(root, cmd), "delete") for root in cmd.find.roots] if \
        cmd.find.deleting else []
    return found + [(p, "write") for p in cmd.find.outputs]


def _paths_patch(cmd):
    return patch_command_targets(cmd)


def _paths_apply_patch(cmd):
    return patch_targets(_stdin_script(cmd) or " ".join(cmd.argv[1:]))


def _paths_httpie(cmd):
    """httpie and xh: `field@FILE` uploads FILE, `field=@FILE` and `field:=@FILE`
    send its text; --download/-o writes."""
    found = [(p, "write") for p in option_values(cmd, ("-o", "--output"))]
    for arg in cmd.argv[1:]:
        if not isinstance(arg, str) or arg.startswith("-") or "://" in arg.split("@")[0]:
            continue
        at = arg.find("@")
        if at > 0 and not arg[:at].endswith("\\"):
            found.append((arg[at + 1:].split(";")[0], "read"))
    return found


def _paths_download(cmd):
    """curl, wget: what they save, and the files they upload or read (file://)."""
    found = [(p, "write") for p in option_values(cmd, (
        "-o", "--output", "-O", "--output-document")) if p != "-"]
    argv = cmd.argv
    for k, arg in enumerate(argv[1:-1], 1):  # a bundle that ends in o/O: -qO FILE, -sSo F
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2 and \
                arg[-1] in ("o", "O") and arg[1:-1].isalpha() and argv[k + 1] != "-":
            found.append((argv[k + 1], "write"))
    found += [(p, "read") for p in option_values(cmd, (
        "-T", "--upload-file", "--post-file", "--body-file", "-i", "--input-file"))]
    for value in option_values(cmd, ("-d", "--data", "--data-binary", "--data-raw",
                                     "--data-urlencode", "-F", "--form")):
        at = value.find("@")
        if at == 0 or (at > 0 and value[at - 1] == "="):
            found.append((value[at + 1:].split(";")[0], "read"))
    for arg in cmd.argv[1:]:
        if arg[:7].lower() == "file://":
            found.append(("/" + arg[7:].lstrip("/"), "read"))
    return found


def _paths_archive(cmd):
    """tar, bsdtar, unzip: what extracting writes; what creating reads (whole
    trees)."""
    plan = extract_plan(cmd)
    if plan is not None:
        return [(p, "write") for p in plan]
    found = _extract_unknown(cmd)
    if found is not None:
        return found
    if cmd.prog == "unzip":
        return []
    return [(p, "tree") for p in operands(cmd)]


def _paths_zip(cmd):
    mode = "tree" if has_flag(cmd, "r", ("--recurse-paths",)) else "read"
    return [(p, mode) for p in operands(cmd)]


_SEARCH_PATTERN_FIRST = frozenset(("grep", "egrep", "fgrep", "rg", "ag", "ack", "awk",
                                   "ugrep", "ug",
                                   "gawk", "mawk", "nawk", "jq", "yq", "sed"))


def _paths_reader(cmd):
    """The content readers (cat, head, grep, jq, ...): their file operands, after
    the pattern or program when it comes first; a recursive search reads trees."""
    prog, ops = cmd.prog, operands(cmd)
    if prog in _SEARCH_PATTERN_FIRST and not option_values(
            cmd, ("-e", "-f", "--regexp", "--file", "--expression")):
        ops = ops[1:]
    elif prog == "openssl":
        ops = option_values(cmd, ("-in", "-key", "-inkey"))
    tree = _search_tree(cmd)
    if tree:
        return [(p, tree) for p in ops or ["."]]
    return [(p, "read") for p in ops]


def _search_tree(cmd):
    """"tree" when a search reads folders whole with their hidden files (grep -r,
    rg --hidden or -uu, ag -u), "" otherwise (rg and ag skip hidden files)."""
    prog = cmd.prog
    if prog in ("grep", "egrep", "fgrep"):
        return "tree" if has_flag(cmd, "rR", ("--recursive", "--dereference-recursive")) \
            or "recurse" in option_values(cmd, ("-d", "--directories")) else ""
    if prog == "ack":  # ack recurses by default and reads dot files
        return "" if has_flag(cmd, "n", ("--no-recurse",)) else "tree"
    if prog == "ugrep":
        return "tree" if has_flag(cmd, ".", ("--hidden",)) or (has_flag(
            cmd, "rR", ("--recursive", "--dereference-recursive")) and not has_flag(
                cmd, "", ("--no-hidden",))) else ""
    if prog in ("rg", "ag", "ack"):
        letters = "".join(a[1:] for a in cmd.argv[1:] if a.startswith("-") and
                          not a.startswith("--"))
        hidden = letters.count("u") >= (2 if prog == "rg" else 1) or "." in letters or \
            has_flag(cmd, "", ("--hidden", "--unrestricted", "--no-ignore-dot"))
        return "tree" if hidden else ""
    return ""


# What an extraction whose members the gate cannot know may write in the folder
# it was pointed at: the names that matter there, each judged as written.
_EXTRACT_MAY_WRITE = ("_", "hooks.json", "config.toml", "settings.json",
                      "settings.local.json", "laws.json", "config.json", "config",
                      ".bashrc")


def _extract_unknown(cmd):
    """An extraction of members the gate cannot know (an archive it cannot read)
    into a folder named on the line (`tar -x -C DIR`, `unzip -d DIR`), or with
    cpio's unconditional -u: what it may write there; None when it is not one."""
    prog, argv = cmd.prog, cmd.argv
    if prog in ("cpio", "pax"):
        if not (has_flag(cmd, "i", ("--extract",)) if prog == "cpio" else
                "-r" in argv) or not has_flag(cmd, "u", ("--unconditional",)) and \
                prog == "cpio":
            return None
        # unconditional: what it unpacks replaces whatever lies here, the estate too
        return [(name, "write") for name in (".notrest/laws.json", ".claude/settings.json",
                                             ".codex/hooks.json", ".git/config")]
    elif prog == "unzip":
        if has_flag(cmd, "lZtpn", ("--list",)) or "-v" in argv:
            return None
        folders = [argv[i + 1] for i in range(1, len(argv) - 1) if argv[i] == "-d"]
        if not folders:
            return None
        folder = folders[-1]
    else:
        mode, _archive, folder, _members, _strip = _tar_options(cmd)
        if mode != "x" or folder in (".", "", None):
            return None
    if isinstance(folder, Opaque):
        return [(folder, "write")]
    return [(os.path.join(str(folder), name), "write") for name in _EXTRACT_MAY_WRITE]


def _paths_cpio(cmd):
    """cpio -o / pax -w: the names on stdin are read into the archive; pax -w
    with folders named reads them whole; cpio -iu may overwrite anything."""
    found = _extract_unknown(cmd)
    if found is not None:
        return found
    if cmd.prog == "pax" and "-w" in cmd.argv and operands(cmd):
        return [(p, "tree") for p in operands(cmd)]
    if not has_flag(cmd, "ow", ("--create",)):
        return []
    items = _feeder_items(cmd.feeds) or []
    return [(item, "read") for item in items]


def _paths_mount(cmd):
    """mount [--bind] SRC DEST: what lies at DEST is hidden by what is mounted."""
    ops = [a for a in operands(cmd) if a not in ("bind", "rbind")]
    return [(ops[-1], "write")] if len(ops) >= 2 else []


def _paths_interpreter(cmd):
    codes, _script, module, rest = interpreter_parts(cmd.argv)
    if module is not None:  # `python -m MODULE ARGS`: a program with no row, unless
        found = _paths_unknown(_words_cmd(["_"] + list(cmd.argv[rest:])))  # it reads
        return [(p, "read") for p, _m in found] if module in _READING_MODULES else found
    found = []
    for code in interpreter_code(cmd):
        expands = _code_expands(code)
        found += [(t, "code") for t in _code_tokens(code)
                  if expands or not any(ch in t for ch in "*?")]
    # the words after the code or the script are the program's own arguments: a
    # program the gate cannot read, given a path, may read and write it
    start = rest if _script is None else _script + 1
    if codes or _script is not None:
        found += _paths_unknown(_words_cmd(["_"] + list(cmd.argv[start:])))
    return found


_CODE_EXPANDERS = ("glob", "system", "popen", "subprocess", "spawn", "exec", "shell",
                   "`", "%x", "dir[", "fnmatch", "wildcard", "bash", " sh", "'sh", '"sh')


def _code_expands(code):
    """Whether inline code may expand a pattern into paths (a glob call, a shell it
    runs): elsewhere `".*"` or `"*.py"` in code is a regex or text, not a path."""
    low = code.lower()
    return any(word in low for word in _CODE_EXPANDERS)


def _paths_cli(cmd):
    """notrest's own CLI: what its --out writes."""
    return [(p, "write") for p in option_values(_words_cmd(["_"] + list(cmd.cli)),
                                                ("--out", "-o"))]


def _paths_unknown(cmd):
    """A program with no row: every word that may be a path, as if it read and
    wrote it (the laws then judge only the protected and secret ones)."""
    found = []
    for arg in cmd.argv[1:]:
        if arg.startswith("-"):
            arg = arg.partition("=")[2] if arg.startswith("--") else ""
        if not arg or len(arg) >= 4096:
            continue
        if any(ch in arg for ch in " '\"(\n"):  # SQL, code: the paths named inside
            found += [(t, "any") for t in _code_tokens(arg) if t.startswith(
                (".", "/", "~")) and not isinstance(arg, Opaque)]
        elif "/" in arg or arg.startswith((".", "~")) or arg in _PATHLIKE_NAMES:
            found.append((arg, "any"))
    return found


# Modules of Python's library that read the files they are given (`python3 -m
# json.tool`); py_compile and compileall write bytecode, and are not here.
_READING_MODULES = frozenset(("json.tool", "tokenize", "dis", "ast", "tabnanny", "pydoc",
                              "pickletools", "pyclbr", "symtable", "filecmp", "mimetypes",
                              "sysconfig", "site", "platform", "timeit", "cProfile",
                              "profile", "trace", "pdb", "unittest", "doctest", "pytest",
                              "pip", "venv", "http.server"))
# Programs that use a key or credential without printing it.
_KEY_USERS = ("ssh", "ssh-add", "ssh-keygen", "ssh-copy-id", "sftp", "mosh", "autossh",
              "ssh-keyscan", "gpg-agent", "keychain")
_PATHLIKE_NAMES = frozenset(("id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"))
_LISTERS = ("ls", "echo", "printf", "true", "false", "test", "[", "stat", "file", "wc",
            "du", "df", "basename", "dirname", "realpath", "readlink", "sleep", "date",
            "which", "type", "pwd", "cd", "pushd", "popd", "export", "unset", "set",
            "exit", "return", "wait", "kill", "tree", "exa", "eza", "lsd", "fd",
            "fdfind", "locate", "whereis", "md5sum", "sha1sum", "sha256sum",
            "sha512sum", "b2sum", "cksum", "sum", "mktemp", "seq", "yes", "id",
            "whoami", "hostname", "uname", "alias", "unalias", "shopt", "hash",
            "getconf", "nproc", "tput", "clear", "command", "builtin", "local",
            "declare", "typeset", "readonly", "read", "mapfile", "readarray",
            "eval", "exec", "trap", "xargs", "ps", "pgrep", "top",
            "lsof", "env", "printenv")
_PATH_RULES = dict(
    [(p, _paths_delete) for p in ("rm", "unlink", "rmdir", "shred", "srm", "trash",
                                  "trash-put", "rimraf")] +
    [(p, _paths_copy) for p in ("mv", "cp", "ln", "install", "rsync", "scp")] +
    [("link", _paths_link)] +
    [(p, _paths_write) for p in ("tee", "truncate", "mkdir", "mkfifo", "sponge")] +
    [(p, _paths_write) for p in ("vi", "vim", "nvim", "nano", "emacs", "code", "subl",
                                 "ed", "ex", "pico", "micro")] +
    [(p, _paths_meta) for p in ("touch", "chattr", "setfacl", "xattr", "setfattr")] +
    [(p, _paths_chmod) for p in ("chmod", "chown", "chgrp")] +
    [(p, _paths_in_place) for p in ("sed", "gawk", "awk")] +
    [(p, _paths_perl) for p in ("perl", "ruby")] +
    [(p, _paths_compress) for p in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz",
                                    "lzma", "zstd", "unzstd", "compress")] +
    [(p, _paths_sort) for p in ("sort", "uniq")] +
    [(p, _paths_download) for p in ("curl", "wget")] +
    [(p, _paths_httpie) for p in ("http", "https", "xh", "xhs")] +
    [(p, _paths_archive) for p in ("tar", "bsdtar", "unzip")] +
    [(p, _paths_reader) for p in _CONTENT_READERS if p not in (
        "sed", "awk", "gawk", "sort", "uniq", "curl", "tar", "zip", "gzip", "bzip2",
        "xz", "zstd", "vi", "vim", "nvim", "nano", "emacs", "code", "subl", "ed", "ex",
        "pico", "micro", "scp", "rsync")] +
    [(p, _paths_reader) for p in ("join", "paste", "comm", "tac", "nl", "shuf", "sum",
                                  "look", "zcat", "zless", "zmore", "zgrep", "bzcat",
                                  "xzcat", "zstdcat", "lz4cat", "tail", "head")] +
    [(p, _paths_none) for p in _LISTERS] +
    [(p, _paths_none) for p in _KEY_USERS] +
    [("mount", _paths_mount), ("umount", _paths_none), ("cpio", _paths_cpio),
     ("pax", _paths_cpio)] +
    [("zip", _paths_zip), ("dd", _paths_dd), ("git", _paths_git), ("find", _paths_find),
     ("patch", _paths_patch), ("apply_patch", _paths_apply_patch)])


def _in_place(cmd):
    return has_flag(cmd, "i", ("--in-place",)) or any(
        a.startswith("-i") or a.startswith("--in-place") for a in cmd.argv[1:]) or (
        cmd.prog in ("gawk", "awk") and "inplace" in option_values(cmd, ("-i",)))


_FILE_COPIERS = ("cp", "mv", "install", "rsync", "scp")


def copy_plan(cmd):
    """[(source, destination, tree)] of cp, mv, ln, install, rsync, scp: where each
    source lands. DEST is a folder when -t names it, when it ends in /, when there
    are several sources, or when it is a folder on disk: each source then lands
    at DEST/<its name> (rsync's SRC/ and cp's SRC/. put the contents in DEST).
    tree: the source may be a folder whose contents land under the destination
    (a recursive copy, a move). source None: install -d makes the folder. Remote
    rsync and scp paths (host:path) are left out."""
    prog, ops = cmd.prog, operands(cmd)
    if prog == "install" and has_flag(cmd, "d", ("--directory",)):
        return [(None, p, False) for p in ops]
    target = option_values(cmd, ("-t", "--target-directory"))
    plain = has_flag(cmd, "T", ("--no-target-directory",)) and prog != "rsync"
    if target:
        sources, dest, folder = ops, target[-1], True
    elif prog == "ln" and len(ops) == 1:
        sources, dest, folder = ops, ".", True
    elif len(ops) == 1 and prog in ("mv", "cp"):
        return [(ops[0], ops[0], False)]  # a brace expansion: x{,.bak}
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
        folder = not plain and (dest.endswith("/") or len(sources) > 1 or _is_folder(
            cmd, dest))
    else:
        return []
    if _remote(dest, prog):
        return [(source, None, False) for source in sources if not _remote(source, prog)]
    tree = prog == "mv" or (prog in ("cp", "scp") and has_flag(
        cmd, "rRa", ("--recursive", "--archive"))) or (prog == "rsync" and has_flag(
            cmd, "ra", ("--recursive", "--archive")))
    plan = []
    for source in sources:
        if _remote(source, prog):
            source = Opaque(UNKNOWN_WORD)
        contents = source.endswith("/.") or (prog == "rsync" and source.endswith("/"))
        name = os.path.basename(source.rstrip("/")) if not contents else ""
        if contents or not folder or not name or name in (".", ".."):
            landing = dest
        else:
            landing = os.path.join(dest, name)
            if isinstance(source, Glob):
                landing = Glob(landing)
        plan.append((source, landing, tree and prog != "ln"))
    return plan


def _remote(path, prog):
    if prog not in ("rsync", "scp") or ":" not in path:
        return False
    head = path.split(":", 1)[0]
    return "/" not in head and bool(head)


def _is_folder(cmd, text):
    if isinstance(text, Opaque):
        return False
    try:
        return os.path.isdir(_resolve_in(cmd, text))
    except (OSError, ValueError, TypeError):
        return False


def _chmod_targets(cmd):
    """The files of chmod/chown/chgrp: everything after the mode or owner (a mode
    may look like an option: chmod -x FILE)."""
    out, seen_mode, reference = [], False, False
    for arg in cmd.argv[1:]:
        if arg.startswith("--reference"):
            reference = True
            continue
        if arg in ("-R", "-v", "-c", "-f", "-h", "-H", "-L", "-P", "--recursive",
                   "--verbose", "--changes", "--silent", "--quiet", "--no-dereference",
                   "--dereference") or arg.startswith("--from="):
            continue
        if not seen_mode and not reference:
            seen_mode = True
            continue
        out.append(arg)
    return out


def find_name_patterns(cmd):
    """The -name/-iname/-path patterns of a find, and whether it has any test that
    narrows what it matches."""
    info = cmd.find
    if info is None:
        return [], False
    return list(info.tests), info.narrowed


def _git_paths(cmd):
    """[(path, mode)] a git command names in the work tree: one row per verb."""
    sub, args = _git_parts(cmd)
    rule = _GIT_PATH_RULES.get(sub)
    return rule(cmd, args) if rule is not None else []


def _git_words(args):
    return [a for a in args if not a.startswith("-")]


def _git_paths_delete(cmd, args):
    return [(p, "delete") for p in _git_words(args)]


def _git_paths_write(cmd, args):
    return [(p, "write") for p in _git_words(args) if p != "--"]


def _git_paths_checkout(cmd, args):
    if "--" in args:
        return _git_paths_write(cmd, args)
    return [(p, "write") for p in _git_words(args) if "/" in p or "." in p]


def _git_paths_show(cmd, args):
    """show, diff, log, blame, cat-file, archive: REV:PATH and :PATH (the index)
    read PATH; --no-index reads its files."""
    found = []
    for arg in _git_words(args):
        if ":" in arg:
            path = arg.split(":", 1)[1]
            if arg.startswith(":") and path[:2] in ("0:", "1:", "2:", "3:"):
                path = path[2:]
            found.append((path, "read"))
        elif "/" in arg or "." in arg:
            found.append((arg, "read"))
    return found


def _git_paths_grep(cmd, args):
    """git grep reads the work tree's untracked files too with --untracked or
    --no-index: whole trees."""
    if not any(a in ("--untracked", "--no-index", "--no-exclude-standard") for a in args):
        return _git_paths_show(cmd, args)
    spec = args[args.index("--") + 1:] if "--" in args else []
    return [(p, "tree") for p in spec or ["."]]


def _git_paths_stage(cmd, args):
    """add, update-index, hash-object: a file copied into git's store, from where
    it is shown or pushed."""
    return [(p, "read") for p in _git_words(args) if p not in ("-", ".")]


def _git_paths_stash(cmd, args):
    if args[:1] == ["show"] and any(a in ("-u", "--include-untracked",
                                          "--only-untracked") for a in args):
        return [(".", "tree")]
    return []


def _git_paths_config(cmd, args):
    return [(p, "read") for p in option_values(_words_cmd(["_"] + list(args)), (
        "-f", "--file"))]


def _git_paths_message(cmd, args):
    return [(p, "read") for p in option_values(_words_cmd(["_"] + list(args)), (
        "-F", "--file"))]


_GIT_PATH_RULES = {
    "rm": _git_paths_delete, "clean": _git_paths_delete, "checkout": _git_paths_checkout,
    "restore": _git_paths_write, "mv": _git_paths_write, "show": _git_paths_show,
    "diff": _git_paths_show, "log": _git_paths_show, "blame": _git_paths_show,
    "cat-file": _git_paths_show, "archive": _git_paths_show, "grep": _git_paths_grep,
    "add": _git_paths_stage, "stage": _git_paths_stage, "update-index": _git_paths_stage,
    "hash-object": _git_paths_stage, "stash": _git_paths_stash, "config": _git_paths_config,
    "commit": _git_paths_message, "tag": _git_paths_message, "notes": _git_paths_message,
    "apply": git_patch_targets, "am": git_patch_targets,
    "merge-file": lambda cmd, args: [] if any(a in ("-p", "--stdout") for a in args)
    else [(p, "write") for p in _git_words(args)[:1]],
}


def _code_tokens(code):
    """Path-like tokens inside inline interpreter code (the literals as written
    and as the code's own concatenations and joins build them)."""
    tokens, buf = [], []
    for ch in code + " ":
        if ch in " \t\n'\"()[]{},;=`+":
            if buf:
                word = "".join(buf)
                if "/" in word or word.startswith(".") or "." in word:
                    tokens.append(word)
                buf = []
        else:
            buf.append(ch)
    return tokens


def code_writes(code):
    """Whether inline interpreter code looks like it writes or deletes files."""
    low = code.lower()
    return any(w in low for w in (
        "write", "'w'", '"w"', "'w+'", '"w+"', "'wb'", '"wb"', "unlink", "rename",
        "rmtree", "truncate", "writefile", "appendfile", "rmsync", "rmdir", "copyfile",
        "copytree", "chmod", "symlink", "'>", '">'))


# ==== laws ==================================================================
# A law is data: id, text (what the model reads), on (events), a matcher, action,
# instead (what to do instead: it must itself pass the gate) and optionally a
# check command. Built-in matchers are named predicates; project laws use
# tool/program/command/path/prompt/spawn matchers.

BUILTIN_LAWS = (
    {"id": "no-destroy", "on": ["PreToolUse", "PermissionRequest"], "action": "deny",
     "match": "destroy",
     "text": "Never delete recursively or by force /, ~, system folders, the project "
             "root, .git or anything outside the project and the temp dir; no mkfs, dd "
             "or writes to disks, fork bombs, or recursive chmod/chown of / or ~. A "
             "forced or recursive delete whose target the gate cannot resolve needs a "
             "person's yes.",
     "instead": "delete only what you made, by name, inside the project or the temp "
                "dir (`rm -r build`), and ask the user to do anything wider"},
    {"id": "no-force-push", "on": ["PreToolUse", "PermissionRequest"], "action": "deny",
     "match": "force-push",
     "text": "Never force-push, mirror-push or delete a protected branch (main, master, "
             "and those laws.json lists), nor `git branch -D` one.",
     "instead": "push your work to a branch of your own "
                "(`git push -u origin HEAD:refs/heads/my-branch`) and open a review"},
    {"id": "protect-secrets", "on": ["PreToolUse", "PermissionRequest"],
     "action": "deny", "match": "secrets",
     "text": "Never read, print, copy or write secret files: .env files (templates "
             "such as .env.example are fine), private keys, ~/.aws/credentials, "
             "~/.netrc, ~/.docker/config.json, cloud credentials, the clients' own "
             "credentials (~/.codex/auth.json, ~/.claude/.credentials.json) and "
             "notrest's key.",
     "instead": "read the template (`cat .env.example`) or ask the user for the one "
                "value you need"},
    {"id": "protect-harness", "on": ["PreToolUse", "PermissionRequest"],
     "action": "deny", "match": "harness",
     "text": "Never edit, move or delete the harness: .notrest/, the hook settings "
             "(.claude/settings*.json, .codex/hooks.json, .codex/config.toml, and the "
             "user's and managed ones), notrest's skills, the notrest block of AGENTS.md, "
             "shell rc and profile files, the Codex session logs, notrest's data folder; "
             "of notrest's own CLI use only packet, bank, status, laws, check, log, "
             "learn --list and doctor. Laws and hooks are changed by a person.",
     "instead": "use the notrest commands (`{cli} bank --note \"...\"`, `{cli} status`) "
                "and ask a person to change laws or hook settings"},
    {"id": "pipe-to-shell", "on": ["PreToolUse", "PermissionRequest"], "action": "ask",
     "match": "pipe-to-shell",
     "text": "Do not pipe a download into a shell or interpreter (curl ... | sh).",
     "instead": "download to a file, read it, then run it "
                "(`curl -fsSL -o /tmp/install.sh URL`, `less /tmp/install.sh`)"},
    {"id": "secret-in-prompt", "on": ["UserPromptSubmit"], "action": "block",
     "match": "secret-prompt",
     "text": "A prompt that carries a secret (key, token, private key, password) is "
             "stopped before it reaches the model or the estate.",
     "instead": "remove the secret from the prompt; keep it in an environment variable "
                "or a file the agent does not read"},
    {"id": "bank-before-stop", "on": ["Stop"], "action": "block", "match": "bank",
     "text": "Before stopping after changing files, bank a note: what you did and what "
             "comes next.",
     "instead": "`{cli} bank --note \"what you did\" --next \"what comes next\"`"},
)
LAW_ACTIONS = ("deny", "ask", "warn", "block", "require")
LAW_FIELDS = ("id", "text", "on", "action", "instead", "tool", "program", "command",
              "path", "mode", "prompt", "spawn", "check", "timeout")
DEFAULT_PROTECTED_BRANCHES = ("main", "master")
# What protect-harness guards, relative to the project, the home folder, the
# clients' own folders ($CODEX_HOME, $CLAUDE_CONFIG_DIR), and the machine.
# Files git reads for the programs it runs, written by hand (`sed -i … .git/config`,
# an interpreter's open(), a `.git` file naming another repository): the next git
# call, the person's or a hook's, runs what they name. `git config` itself is
# judged by its setting (git_program_setting); the hooks here are the ones that fire
# on calls nobody typed (a ref update, an index write, the receiving side of a push
# or a sync), where an ordinary hook (pre-commit) is judged by its text.
_GIT_QUIET_HOOKS = ("reference-transaction", "post-index-change", "fsmonitor-watchman",
                    "pre-auto-gc", "push-to-checkout", "pre-receive", "update",
                    "post-receive", "post-update", "proc-receive", "post-checkout",
                    "p4-*", "sendemail-validate")
GIT_PROGRAM_FILES = (".git/config", ".git/config.worktree", ".git/info/attributes",
                     "**/.git") + tuple(".git/hooks/%s" % name for name in _GIT_QUIET_HOOKS)
HOME_GIT_PROGRAM_FILES = (".gitconfig", ".config/git/config", ".config/git/attributes")
HARNESS_PATHS = (".notrest", ".notrest/**", ".claude/settings.json",
                 ".claude/settings.local.json", ".claude/settings*.json",
                 ".codex/hooks.json", ".codex/config.toml", ".claude/skills/notrest*",
                 ".claude/skills/notrest*/**", ".agents/skills/notrest*",
                 ".agents/skills/notrest*/**",
                 # an estate or hook settings planted in a folder below the project: a
                 # session started there runs them
                 "**/.notrest", "**/.notrest/**", "**/.claude/settings*.json",
                 "**/.codex/hooks.json", "**/.codex/config.toml",
                 "**/.claude/skills/notrest*/**", "**/.agents/skills/notrest*/**") + \
    GIT_PROGRAM_FILES
SHELL_STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout",
                       ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
                       ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".xprofile",
                       ".xsessionrc", ".pam_environment", ".config/fish/config.fish",
                       ".config/fish/conf.d/**", ".config/environment.d/**")
# Programs a hook or the next client would find first on PATH in the home folder.
_PATH_SHADOWS = ("sh", "bash", "dash", "zsh", "env", "python*", "git", "node", "notrest*",
                 "claude", "codex", "sudo", "ssh")
HOME_HARNESS_PATHS = tuple("%s/%s" % (folder, name) for folder in (
    ".local/bin", "bin", ".bin") for name in _PATH_SHADOWS) + (
    ".claude/settings.json", ".claude/settings.local.json",
                      ".claude/settings*.json", ".codex/hooks.json", ".codex/config.toml",
                      ".claude/plugins/**", ".cache/notrest/**",
                      ".claude/skills/notrest*", ".claude/skills/notrest*/**",
                      ".agents/skills/notrest*", ".agents/skills/notrest*/**",
                      ".codex/sessions/**", ".codex/archived_sessions/**") + \
    SHELL_STARTUP_FILES + HOME_GIT_PROGRAM_FILES
CODEX_HOME_HARNESS = ("hooks.json", "config.toml", "sessions/**", "archived_sessions/**",
                      "skills/notrest*/**")
CLAUDE_CONFIG_HARNESS = ("settings*.json", "plugins/**", "skills/notrest*",
                         "skills/notrest*/**")
ZDOTDIR_HARNESS = (".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout")
XDG_CONFIG_HARNESS = ("fish/config.fish", "fish/conf.d/**", "environment.d/**")
SYSTEM_HARNESS_PATHS = ("/etc/claude-code/**",
                        "/Library/Application Support/ClaudeCode/**", "/etc/codex/**",
                        "/etc/profile", "/etc/profile.d/**", "/etc/bash.bashrc",
                        "/etc/bashrc", "/etc/zshrc", "/etc/zshenv", "/etc/zprofile",
                        "/etc/zlogin", "/etc/zsh/**", "/etc/environment",
                        "/etc/environment.d/**", "/etc/fish/**",
                        "/etc/security/pam_env.conf", "/etc/csh.cshrc", "/etc/csh.login",
                        "/etc/ksh.kshrc")
_SYSTEM_HARNESS = tuple(p.lstrip("/") for p in SYSTEM_HARNESS_PATHS)
# How many files the gate looks at, at most, for the harness and secret files a
# hard link could name (only when a path the call names has more than one name).
PROTECTED_INODE_LIMIT = 4000
# Paths standing for the harness when a glob, a find or a copied folder could
# reach it (relative to the project, then to the home folder).
HARNESS_SAMPLES = (".notrest", ".notrest/laws.json", ".notrest/config.json",
                   ".notrest/notrest.py", ".notrest/notrest",
                   ".notrest/hooks/pre-tool-use.sh", ".notrest/hooks/launch.sh",
                   ".notrest/journal/s.jsonl", ".notrest/sessions/s.json", ".claude",
                   ".claude/settings.json", ".claude/settings.local.json",
                   ".claude/skills/notrest/SKILL.md",
                   ".claude/skills/notrest-laws/SKILL.md", ".codex", ".codex/hooks.json",
                   ".codex/config.toml", ".agents/skills/notrest/SKILL.md",
                   ".agents/skills/notrest-laws/SKILL.md")
HOME_HARNESS_SAMPLES = (".claude/settings.json", ".claude/settings.local.json",
                        ".codex/hooks.json", ".codex/config.toml",
                        ".codex/sessions/rollout.jsonl", ".claude/plugins/notrest/x",
                        ".cache/notrest/x", ".bashrc", ".bash_profile", ".profile",
                        ".zshrc", ".zshenv", ".zprofile", ".config/fish/config.fish")
AGENTS_BLOCK_MARKERS = ("<!-- notrest:begin -->", "<!-- notrest:end -->")
AGENTS_READ_MAX = 1 << 20
SECRET_NAMES = (".env", ".env.*", ".env-*", ".env_*", "*.env", ".envrc", "*.tfvars",
                "*.tfstate", "*.tfstate.backup", "secrets.yml", "secrets.yaml",
                "secrets.json", "secrets.toml", "*.keystore", "*.jks",
                "*.tfvars.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519",
                "id_ecdsa_sk", "id_ed25519_sk", "*.pem", "*.key", "*.p12", "*.pfx",
                ".pgpass", ".my.cnf", ".netrc", ".git-credentials", ".vault-token")
SECRET_TEMPLATES = (".example", ".sample", ".template", ".dist", ".pub")
HOME_SECRET_PATHS = (".aws/credentials", ".netrc", ".docker/config.json",
                     ".git-credentials", ".pypirc", ".npmrc", ".kube/config",
                     ".config/gh/hosts.yml", ".config/gh/hosts.json", ".config/hub",
                     ".cargo/credentials.toml", ".cargo/credentials", ".gem/credentials",
                     ".s3cfg", ".boto",
                     ".config/rclone/rclone.conf", ".terraform.d/credentials.tfrc.json",
                     ".azure/accesstokens.json", ".azure/msal_token_cache.json",
                     ".password-store/**", ".local/share/keyrings/**",
                     ".gnupg/private-keys-v1.d/**", ".config/gcloud/credentials.db",
                     ".config/gcloud/access_tokens.db",
                     ".config/gcloud/application_default_credentials.json",
                     ".config/gcloud/legacy_credentials/**", ".codex/auth.json",
                     ".claude/.credentials.json")
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64",
               "/libx32", "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin",
               "/snap", "/srv", "/sys", "/usr", "/var", "/nix", "/System", "/Library",
               "/Applications", "/Users", "/Volumes", "/private", "/cores")
GIT_HISTORY = ("objects", "refs", "logs", "packed-refs", "HEAD")
TEMP_DIRS = ("/tmp", "/var/tmp", "/private/tmp", "/private/var/tmp",
             "/private/var/folders", "/dev/shm")
BLOCK_DEVICES = ("/dev/sd", "/dev/hd", "/dev/vd", "/dev/xvd", "/dev/nvme", "/dev/mmcblk",
                 "/dev/disk", "/dev/rdisk", "/dev/loop", "/dev/dm-", "/dev/mapper/",
                 "/dev/md", "/dev/sr", "/dev/nbd", "/dev/zram", "/dev/mem", "/dev/kmem",
                 "/dev/port")
DOWNLOADERS = frozenset(("curl", "wget", "fetch", "http", "https", "xh", "aria2c",
                         "lwp-request", "GET"))
# The environment a gate reads (the hook's own): where the home folder, the temp
# dir, the clients' folders and notrest's data folder are.
GATE_ENV_KEYS = ("HOME", "TMPDIR", "USER", "CODEX_HOME", "CLAUDE_CONFIG_DIR",
                 "XDG_CONFIG_HOME", "XDG_DATA_HOME", "NOTREST_DATA_DIR", "ZDOTDIR")
# The verbs of notrest's own CLI the agent may run from inside a session.
AGENT_VERBS = ("packet", "bank", "status", "laws", "check", "log", "learn", "doctor",
               "help", "view", "sync", "gate")
LAW_TEXT_MAX = 2000          # characters a project law's regex is matched against
GIT_QUERY_TIMEOUT_S = 3.0
GATE_BOUNDS_INSTEAD = ("split the work into smaller commands, or put a long list in a "
                       "file that a script reads")


class Law:
    """One law: built-in or from laws.json."""

    __slots__ = LAW_FIELDS + ("match", "source", "disabled", "compiled")

    def __init__(self, data, source="built-in"):
        for name in LAW_FIELDS + ("match",):
            setattr(self, name, data.get(name))
        self.on = list(data.get("on") or [])
        self.action = data.get("action") or "deny"
        self.source = source
        self.disabled = False
        self.compiled = {}

    def to_dict(self):
        out = {name: getattr(self, name) for name in LAW_FIELDS + ("match",)
               if getattr(self, name) not in (None, [], "")}
        out["source"] = self.source
        out["disabled"] = self.disabled
        return out

    def matcher_text(self):
        """What the law matches, in a few words (for `notrest laws`)."""
        if self.match:
            return "built-in: %s" % self.match
        parts = []
        for name in ("tool", "program", "command", "path", "prompt", "spawn", "check"):
            value = getattr(self, name)
            if value:
                parts.append("%s=%s" % (name, value if isinstance(value, str)
                                        else ",".join(map(str, value))))
        return " ".join(parts) or "(no matcher)"

    def search(self, name, text):
        """Whether the law's `name` regex matches text, clipped to LAW_TEXT_MAX (a
        pattern that passed regex_problem is at most quadratic on that)."""
        pattern = self.compiled.get(name)
        if pattern is None:
            import re
            pattern = self.compiled[name] = re.compile(getattr(self, name))
        return pattern.search(text[:LAW_TEXT_MAX]) is not None


class LawBook:
    """The laws in force plus the settings laws.json gives them."""

    __slots__ = ("laws", "protected_branches", "protected_paths", "stop_block_bound",
                 "problems", "disabled", "secret_rules", "pack_programs")

    def __init__(self):
        self.laws, self.problems, self.disabled = [], [], []
        self.secret_rules = ()
        self.pack_programs = None
        self.protected_branches = list(DEFAULT_PROTECTED_BRANCHES)
        self.protected_paths = []
        self.stop_block_bound = STOP_BLOCK_BOUND

    def active(self):
        return [law for law in self.laws if not law.disabled]

    def get(self, law_id):
        for law in self.laws:
            if law.id == law_id:
                return law
        return None


def _is_slug(text):
    return (isinstance(text, str) and 0 < len(text) <= 64 and text[0].isalnum()
            and all(c.isalnum() or c in "-_." for c in text))


def validate_law(data):
    """Problems with one project law (empty when it is valid)."""
    problems = []
    if not isinstance(data, dict):
        return ["a law must be an object, got %s" % type(data).__name__]
    law_id = data.get("id")
    if not _is_slug(law_id):
        problems.append("law id %r must be a slug (letters, digits, - _ .)" % (law_id,))
    unknown = sorted(set(data) - set(LAW_FIELDS) - {"match", "comment"})
    if unknown:
        problems.append("law %s: unknown fields %s" % (law_id, ", ".join(unknown)))
    if not isinstance(data.get("text"), str) or not data.get("text").strip():
        problems.append("law %s: `text` (one sentence the model reads) is required"
                        % law_id)
    on = data.get("on")
    if not isinstance(on, list) or not on or not all(e in GATE_EVENTS for e in on):
        problems.append("law %s: `on` must list events among %s" % (
            law_id, ", ".join(GATE_EVENTS)))
    if data.get("action", "deny") not in LAW_ACTIONS:
        problems.append("law %s: action must be one of %s" % (law_id,
                                                              ", ".join(LAW_ACTIONS)))
    if data.get("match") is not None:
        problems.append("law %s: `match` names a built-in predicate; project laws use "
                        "tool/program/command/path/prompt/spawn/check" % law_id)
    for name in ("tool", "command", "prompt", "spawn"):
        value = data.get(name)
        if value is not None:
            if not isinstance(value, str):
                problems.append("law %s: `%s` must be a regular expression string"
                                % (law_id, name))
                continue
            problem = regex_problem(value)
            if problem:
                problems.append("law %s: `%s` %s" % (law_id, name, problem))
    for name in ("program", "path"):
        value = data.get(name)
        if value is not None and not (isinstance(value, list) and all(
                isinstance(v, str) and v for v in value)):
            problems.append("law %s: `%s` must be a list of strings" % (law_id, name))
    if data.get("mode", "write") not in ("read", "write", "any"):
        problems.append("law %s: mode must be read, write or any" % law_id)
    check = data.get("check")
    if check is not None and not (isinstance(check, str) and check.strip()) and not (
            isinstance(check, list) and check and all(isinstance(c, str) for c in check)):
        problems.append("law %s: `check` must be a command string or an argv list"
                        % law_id)
    timeout = data.get("timeout")
    if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout
                                    <= 3600):
        problems.append("law %s: timeout must be seconds between 1 and 3600" % law_id)
    if not any(data.get(k) for k in ("tool", "program", "command", "path", "prompt",
                                     "spawn", "check")):
        problems.append("law %s: give at least one matcher (tool, program, command, "
                        "path, prompt, spawn) or a check command" % law_id)
    return problems


REGEX_MAX = 1000             # characters of a project law's regular expression


def regex_problem(pattern):
    """Why a project law's regular expression cannot be matched safely, else None
    (it does not compile, is too long, or has a catastrophic shape: see
    regex_shape_problem). A pattern without a group and with at most two
    quantifiers cannot have one, and costs no more than compiling it."""
    import re
    if len(pattern) > REGEX_MAX:
        return "is longer than %d characters" % REGEX_MAX
    try:
        re.compile(pattern)
    except re.error as exc:
        return "is not a valid regular expression (%s)" % exc
    if "(" not in pattern and sum(pattern.count(q) for q in "*+?{") <= 2:
        return None
    return regex_shape_problem(pattern)


def build_lawbook(doc):
    """The built-in laws with a laws.json document applied (doc may be None)."""
    book = LawBook()
    book.laws = [Law(data) for data in BUILTIN_LAWS] + pack_laws()
    if doc is None:
        return book
    if not isinstance(doc, dict):
        book.problems.append("laws.json must hold a JSON object")
        return book
    unknown = sorted(set(doc) - {"schema_version", "disable", "protected_branches",
                                 "protected_paths", "laws", "stop_block_bound",
                                 "secret_patterns", "packs", "comment"})
    if unknown:
        book.problems.append("unknown top-level keys: %s" % ", ".join(unknown))
    version = doc.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        book.problems.append("schema_version %r is newer than this notrest knows (%d)"
                             % (version, SCHEMA_VERSION))
    for key in ("disable", "protected_branches", "protected_paths"):
        value = doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            book.problems.append("`%s` must be a list of strings" % key)
            doc = dict(doc, **{key: []})
    book.disabled = list(doc.get("disable", []))
    for law in book.laws:
        if law.id in book.disabled:
            law.disabled = True
    for name in book.disabled:
        if not any(law.id == name for law in book.laws):
            book.problems.append("`disable` names %r, which is no built-in law or pack"
                                 % name)
    apply_pack_states(book, doc.get("packs"))
    if doc.get("protected_branches"):
        book.protected_branches = list(doc["protected_branches"])
    book.protected_paths = list(doc.get("protected_paths", []))
    bound = doc.get("stop_block_bound", STOP_BLOCK_BOUND)
    if isinstance(bound, int) and 1 <= bound <= 8:
        book.stop_block_bound = bound
    else:
        book.problems.append("stop_block_bound must be an integer from 1 to 8")
    book.secret_rules, problems = compile_secret_patterns(doc.get("secret_patterns"))
    book.problems.extend(problems)
    laws = doc.get("laws", [])
    if not isinstance(laws, list):
        book.problems.append("`laws` must be a list")
        laws = []
    seen = {law.id for law in book.laws}
    for data in laws:
        problems = validate_law(data)
        if not problems and data["id"] in seen:
            problems = ["law id %r is used twice (built-in ids: switch them off with "
                        "`disable`)" % data["id"]]
        if problems:
            book.problems.extend(problems)
            continue
        seen.add(data["id"])
        book.laws.append(Law(data, source="laws.json"))
    return book


def format_law_text(text, cli):
    return str(text or "").replace("{cli}", cli or "notrest")


# ---- the gate context: what a tool call would do -----------------------------

class GateContext:
    """What one tool call would run and touch, computed once for all laws."""

    def __init__(self, event, book):
        self.event, self.book = event, book
        self.root = _real(event.root or event.cwd or "/")
        self.home = _real(event.home or event.env.get("HOME") or "/")
        self.cwd = self.root if event.cwd in (None, event.root) else _real(event.cwd)
        self.shared = None
        self._cmds = self._accesses = self._containers = self._harness = None
        self._inodes = None
        self._resolved = {}
        self._folders = {self.root: self.root, self.cwd: self.cwd, self.home: self.home}

    @property
    def shell_text(self):
        event = self.event
        if event.tool in SHELL_TOOLS or (event.tool and event.tool.lower() in (
                "bash", "shell")):
            command = event.tool_input.get("command", event.tool_input.get("cmd"))
            if isinstance(command, list):
                return " ".join(_quote_arg(str(a)) for a in command)
            return command if isinstance(command, str) else ""
        tool = event.tool or ""
        if tool == "write_stdin" and isinstance(event.tool_input, dict):
            # Codex's keystrokes into a shell exec_command left open: each line the
            # shell reads is a command line, judged as exec_command's would be
            chars = event.tool_input.get("chars")
            return chars if isinstance(chars, str) else ""
        if tool in ("Write", "create_file") and isinstance(event.tool_input, dict):
            target = event.tool_input.get("file_path") or event.tool_input.get("path")
            content = event.tool_input.get("content")
            if isinstance(target, str) and isinstance(content, str) and (
                    "/.git/hooks/" in target or target.startswith(".git/hooks/")):
                return content  # a git hook: git runs it at the next commit or checkout
        if tool and tool not in PATHLESS_TOOLS and tool not in FILE_WRITE_TOOLS and \
                tool not in FILE_READ_TOOLS and tool not in SPAWN_TOOLS and tool not in (
                    "Grep", "Glob", "LS") and "patch" not in tool.lower() and \
                isinstance(event.tool_input, dict):
            # a tool of any name (MCP's) handed a command line runs it as a shell does;
            # one named for a shell or a terminal runs what it is given under any key
            low = tool.lower()
            keys = _COMMAND_KEYS + (_SHELLISH_KEYS if any(
                w in low for w in _SHELLISH_TOOL_WORDS) else ())
            language = next((prog for word, prog in (("python", "python3 -c"), (
                "node", "node -e"), ("javascript", "node -e"), ("ruby", "ruby -e"), (
                    "perl", "perl -e")) if word in low), None)
            code = next((event.tool_input.get(k) for k in ("code", "script", "source")
                         if isinstance(event.tool_input.get(k), str)), None)
            if language and code:  # a tool that runs code in a language: its -c
                return "%s %s" % (language, _quote_arg(code))
            for key in keys:
                command = event.tool_input.get(key)
                if isinstance(command, list) and command and all(
                        isinstance(a, str) for a in command):
                    return " ".join(_quote_arg(a) for a in command)
                if isinstance(command, str) and command.strip():
                    return command
        return ""

    @property
    def cmds(self):
        if self._cmds is None:
            env = {"HOME": self.home}
            for name in GATE_ENV_KEYS:
                value = self.event.env.get(name)
                if value and name != "HOME" and not name.startswith("NOTREST_"):
                    env[name] = value
            self.shared = ParseShared()
            self._cmds = parse_shell(self.shell_text, self.cwd, env, shared=self.shared)
        return self._cmds

    @property
    def accesses(self):
        """[(absolute path, mode, what, Cmd or None)] the call would touch; mode is
        read, write, delete, meta (permissions, times) or code (named in inline
        code). A path stays Found (what a find yields) or Opaque (unknown)."""
        if self._accesses is None:
            self._accesses = list(self._collect_accesses())
            self._accesses += self._linked_accesses(self._accesses)
        return self._accesses

    def _linked_accesses(self, accesses):
        """The same accesses again under the name of the harness or secret file a
        named path is a hard link to: identity by (st_dev, st_ino). One lstat per
        named path; the protected files are looked at only when one has links."""
        out, seen = [], set()
        for path, mode, what, cmd in accesses:
            if mode == "delete" or type(path) is not str or path in seen:
                continue
            seen.add(path)
            try:
                st = os.lstat(path)
            except (OSError, ValueError):
                continue
            if st.st_nlink < 2 or st.st_mode & 0o170000 != 0o100000:  # a regular file
                continue
            same = self.protected_inodes.get((st.st_dev, st.st_ino))
            if same and same != path:
                out.append((same, mode, what, cmd))
        return out

    @property
    def protected_inodes(self):
        """{(st_dev, st_ino): path} of the harness and secret files that have more
        than one name: the project's .notrest, hook settings and skills, the home
        folder's and the clients' own, notrest's data folder, secret files at the
        project's top and the current folder, and the home folder's."""
        if self._inodes is not None:
            return self._inodes
        self._inodes = {}
        home = self.home if self.home and self.home != "/" else None
        extra = self.secret_paths
        bases = self._inode_bases(home)
        for base in bases:
            self._harness_inodes(base, home, extra)
        if home:
            for rel in SECRET_DIRS:
                self._list_inodes(os.path.join(home, rel), home, extra)
            for rel in HOME_SECRET_PATHS:
                if "*" not in rel:
                    self._consider_inode(os.path.join(home, rel), home, extra)
        for path in extra:
            self._consider_inode(path, home, extra)
        if isinstance(self.cwd, str) and self.cwd not in bases:
            self._list_inodes(self.cwd, home, extra, lambda name: is_secret_path(
                name, None))
        self._walk_inodes(data_dir(self.event.env if self.event.env.get("HOME") else dict(
            self.event.env, HOME=self.home)), home, extra)
        return self._inodes

    def _inode_bases(self, home):
        """The folders whose harness files are protected: the project, the home
        folder and the clients' own (CODEX_HOME, CLAUDE_CONFIG_DIR)."""
        bases = [self.root] + ([home] if home else [])
        for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
            value = self.event.env.get(name)
            if isinstance(value, str) and value.startswith("/") and value != "/":
                bases.append(os.path.normpath(value))
        return bases

    def _harness_inodes(self, base, home, extra):
        """A base's .notrest, its hook settings, client files and notrest skills."""
        self._walk_inodes(os.path.join(base, ".notrest"), home, extra)
        for sub in (".claude", ".codex", ""):
            self._list_inodes(os.path.join(base, sub) if sub else base, home, extra,
                              self._protected_name)
        for skills in (".claude/skills", ".agents/skills", "skills"):
            self._list_inodes(os.path.join(base, skills), home, extra,
                              lambda name: name.startswith("notrest"))

    @staticmethod
    def _protected_name(name):
        """Hook settings, the clients' own files, shell startup files, secret files."""
        return name.startswith("settings") or name in (
            "hooks.json", "config.toml", "auth.json", ".credentials.json") or \
            name in SHELL_STARTUP_FILES or is_secret_path(name, None)

    def _consider_inode(self, path, home, extra):
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            return
        if st.st_nlink > 1 and st.st_mode & 0o170000 == 0o100000 and (
                self.harness_hit(path, "write") or is_secret_path(path, home, extra)):
            self._inodes.setdefault((st.st_dev, st.st_ino), path)

    def _walk_inodes(self, folder, home, extra):
        budget = PROTECTED_INODE_LIMIT
        for top, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
            budget -= len(files) + 1
            if budget < 0:
                return
            for name in files:
                self._consider_inode(os.path.join(top, name), home, extra)

    def _list_inodes(self, folder, home, extra, keep=None):
        """The files in folder (those whose names keep accepts), and the whole of
        each folder in it."""
        try:
            names = os.listdir(folder)
        except (OSError, ValueError):
            return
        for name in names[:PROTECTED_INODE_LIMIT]:
            if keep is None or keep(name):
                full = os.path.join(folder, name)
                if os.path.isdir(full) and not os.path.islink(full):
                    self._walk_inodes(full, home, extra)
                else:
                    self._consider_inode(full, home, extra)

    def _collect_accesses(self):
        ti = self.event.tool_input
        tool = self.event.tool or ""
        if tool in FILE_WRITE_TOOLS or tool in FILE_READ_TOOLS or tool in ("Grep", "Glob",
                                                                           "LS"):
            yield from self._file_tool_accesses(tool, ti)
        if tool == "Grep" and isinstance(ti.get("glob"), str) and ti["glob"]:
            yield from self._grep_glob_accesses(tool, ti)
        elif tool in PATHLESS_TOOLS:
            for text in _pathlike_strings(ti):
                if text.startswith("file://"):  # WebFetch of file:///...: a read
                    yield (resolve_path(text[7:], self.cwd, self.home), "read", tool,
                           None)
        elif tool and tool not in PATHLESS_TOOLS and tool not in SHELL_TOOLS and \
                tool not in SPAWN_TOOLS and tool not in FILE_WRITE_TOOLS and \
                tool not in FILE_READ_TOOLS and tool not in ("Grep", "Glob", "LS",
                                                             "apply_patch"):
            yield from self._other_tool_accesses(tool, ti)
        if tool == "apply_patch" or (tool and "patch" in tool.lower()):
            yield from self._patch_accesses(ti)
        for cmd in self.cmds:
            yield from self._command_accesses(cmd)

    def _file_tool_accesses(self, tool, ti):
        """The paths a file tool (Read, Write, Edit, Grep, Glob, LS...) is given."""
        mode = "read" if tool in ("Read", "Grep", "Glob", "LS") else "write"
        for key in ("file_path", "notebook_path", "path"):
            value = ti.get(key)
            if isinstance(value, str) and value:
                if tool == "Glob" and key == "path":
                    continue
                path = resolve_path(value, self.cwd, self.home)
                if tool == "Grep" and self._hidden_folder(path):
                    mode = "tree"  # rg skips hidden names below, not the one named
                yield (path, mode, tool, None)

    def _grep_glob_accesses(self, tool, ti):
        """Grep's glob, as patterns it reads (a deep one in the secret folders too)."""
        folder = ti.get("path") if isinstance(ti.get("path"), str) else "."
        for glob_text in _brace_texts(ti["glob"]):
            deep = glob_text.startswith("**/")
            pattern = glob_text.lstrip("*/") if deep else glob_text
            for sub in ("",) + (_DEEP_SECRET_FOLDERS if deep else ()):
                yield (Glob(resolve_path(os.path.join(folder or ".", sub, pattern),
                                         self.cwd, self.home)), "read", tool, None)

    def _other_tool_accesses(self, tool, ti):
        """An unknown tool's path-like arguments: read by a tool named for reading,
        anything by the rest."""
        mode = "read" if any(w in tool.lower() for w in _READ_TOOL_WORDS) else "any"
        for text in _pathlike_strings(ti):
            path = resolve_path(text[7:] if text.startswith("file://") else text,
                                self.cwd, self.home)
            if "list" not in tool.lower() and self._hidden_folder(path):
                yield (path, "tree", tool, None)  # a folder handed to a tool
            yield (path, mode, tool, None)

    def _patch_accesses(self, ti):
        text = ti.get("command") or ti.get("patch") or ti.get("input") or ""
        if isinstance(text, list):
            text = "\n".join(map(str, text))
        for target, mode in patch_targets(text):
            yield (resolve_path(target, self.cwd, self.home, follow=mode != "delete"),
                   mode, "apply_patch", None)

    def _command_accesses(self, cmd):
        """The paths one shell command touches, resolved where it runs."""
        what = None
        for text, mode in command_paths(cmd):
            if text.startswith("$(") or "/dev/fd/" in text:
                continue
            if what is None:
                what = cmd.shown(120)
            follow = (mode != "delete" or text.endswith(("/", "/."))) and (
                cmd.prog != "ln" or mode in ("link", "symlink"))
            path = self.resolve(text, cmd.cwd, follow)
            if isinstance(text, Found):
                path = found_word(path, text.finder)
            elif isinstance(text, Opaque) or isinstance(cmd.cwd, Opaque) and \
                    not text.startswith("/"):
                path = Opaque(path)
            elif isinstance(text, Glob):
                path = Glob(path)
            yield (path, mode, what, cmd)

    def _hidden_folder(self, path):
        """Whether path is a folder on disk with a hidden name on its way down from
        the project or the home folder (~/.aws, .git/x, the project's .config):
        a tool that searches a folder given by name reads such a one whole."""
        if not isinstance(path, str) or isinstance(path, (Glob, Opaque)):
            return False
        for base in (self.root, self.home):
            if base and base != "/" and is_within(path, base) and path != base:
                rel = path[len(base.rstrip("/")) + 1:]
                if any(part.startswith(".") for part in rel.split("/")):
                    try:
                        return os.path.isdir(path)
                    except (OSError, ValueError):
                        return False
        return False

    def resolve(self, text, cwd, follow=True):
        """resolve_path through the line's own symlinks, once per distinct word."""
        key = (str(text), str(cwd), follow)
        path = self._resolved.get(key)
        if path is None:
            links = self.shared.links if self.shared is not None else None
            path = self._resolved[key] = resolve_path(str(text), str(cwd), self.home,
                                                      follow, links, self._folders)
        return path

    def container(self, path):
        """(kind, folder) of the most specific of the project, the home folder and
        the temp dirs that holds path: kind project, home, temp or ""."""
        if self._containers is None:
            items = [(self.root, "project")]
            if self.home and self.home != "/":
                items.append((self.home, "home"))
            temps = list(TEMP_DIRS)
            if self.event.env.get("TMPDIR", "").startswith("/"):
                temps.append(os.path.normpath(self.event.env["TMPDIR"]))
            items += [(t, "temp") for t in temps] + [(_real(t), "temp") for t in temps]
            self._containers = [(base, base.rstrip("/") + "/", kind) for base, kind in
                                sorted(set(items), key=lambda item: -len(item[0]))]
        for base, inside, kind in self._containers:
            if path == base or path.startswith(inside):
                return kind, base
        return "", ""

    @property
    def git_dir(self):
        return self.root.rstrip("/") + "/.git"

    @property
    def harness(self):
        """What protect-harness guards: [(folder, globs under it)]."""
        if self._harness is None:
            env = self.event.env
            extra = tuple(self.book.protected_paths)
            groups = [(self.root, HARNESS_PATHS + tuple(
                p for p in extra if not p.startswith("/")))]
            if self.home and self.home != "/":
                groups.append((self.home, HOME_HARNESS_PATHS))
            for name, patterns in (("CODEX_HOME", CODEX_HOME_HARNESS),
                                   ("CLAUDE_CONFIG_DIR", CLAUDE_CONFIG_HARNESS),
                                   ("ZDOTDIR", ZDOTDIR_HARNESS),
                                   ("XDG_CONFIG_HOME", XDG_CONFIG_HARNESS)):
                value = env.get(name)
                if isinstance(value, str) and value.startswith("/") and value != "/":
                    groups.append((os.path.normpath(value), patterns))
            groups.append(("/", _SYSTEM_HARNESS + tuple(
                p.lstrip("/") for p in extra if p.startswith("/"))))
            groups.append((data_dir(env if env.get("HOME") else dict(
                env, HOME=self.home)), ("**",)))
            self._harness = groups
        return self._harness

    def harness_hit(self, path, mode):
        """Whether writing (or deleting: also any folder holding it) path touches
        what protect-harness guards."""
        return _indexed_hit(self.harness, path, mode)

    @property
    def secret_paths(self):
        """Secret files beyond the home folder's: the clients' credentials where
        their folders are moved, and notrest's key."""
        env, out = self.event.env, []
        for name, rel in (("CLAUDE_CONFIG_DIR", ".credentials.json"),
                          ("CODEX_HOME", "auth.json")):
            value = env.get(name)
            if isinstance(value, str) and value.startswith("/"):
                out.append(os.path.join(os.path.normpath(value), rel))
        out.append(os.path.join(data_dir(dict(env, HOME=env.get("HOME") or self.home)),
                                "key"))
        return out


_READ_TOOL_WORDS = ("read", "get", "view", "list", "search", "find", "grep", "glob", "stat",
                    "info", "show", "open", "cat", "head", "tail", "fetch", "query")


# where a `**/NAME` glob reaches a secret file below a folder: its secret folders
_DEEP_SECRET_FOLDERS = (".aws", ".ssh", ".kube", ".docker", ".config/gh", ".config/gcloud",
                        ".codex", ".claude")
_SHELLISH_TOOL_WORDS = ("shell", "bash", "exec", "terminal", "command", "run", "zsh",
                        "console", "tty", "pty", "process", "script")
_SHELLISH_KEYS = ("argv", "args", "input", "code", "text", "keys", "line", "data")
_COMMAND_KEYS = ("command", "cmd", "script", "shell", "command_line", "commandLine",
                 "cmdline", "bash", "sh")
_PATH_KEYS = frozenset(("path", "paths", "file", "files", "filename", "filepath",
                        "file_path", "filePath", "source", "src", "destination", "dest",
                        "dst", "target", "dir", "directory", "folder", "root", "from",
                        "to", "uri", "url", "old_path", "new_path", "notebook_path",
                        "cwd", "repo_path", "location"))


_PATHISH_PARTS = ("path", "file", "dir", "folder")
_NOT_PATHISH_PARTS = ("content", "text", "pattern", "query", "mask", "type", "mode",
                      "count", "limit", "size", "encoding")


def _pathish_key(key):
    """A key of an MCP tool's input that names a path by its own name
    (relative_path, target_file, dir_name), whatever the tool calls it."""
    if not isinstance(key, str) or len(key) > 64:
        return False
    low = key.lower()
    return any(p in low for p in _PATHISH_PARTS) and not any(
        p in low for p in _NOT_PATHISH_PARTS)


def _pathlike_strings(value, limit=64):
    """The strings in a tool's input that may be paths (any depth, bounded): any
    that looks like one, and any value of a key that names a path (file,
    source, dir ...) whatever its shape."""
    out, todo = [], [(value, 0, False)]
    while todo and len(out) < limit:
        item, depth, named = todo.pop()
        if isinstance(item, str):
            if 0 < len(item) < 4096 and "\n" not in item and (
                    item.startswith(("/", "~", "./", "../", "file://", ".")) or (
                        "/" in item and " " not in item and "://" not in item) or (
                        named and "://" not in item and " " not in item)):
                out.append(item)
        elif depth < 4 and isinstance(item, dict):
            todo.extend((v, depth + 1, k in _PATH_KEYS or _pathish_key(k)) for k, v in
                        item.items())
        elif depth < 4 and isinstance(item, list):
            todo.extend((v, depth + 1, named) for v in item[:limit])
    return out


def _real(path):
    try:
        return os.path.realpath(path) if path else path
    except (OSError, ValueError):
        return path


def _group_patterns(items):
    """[(folder, patterns)] from (folder, glob) pairs; an absolute glob is the
    machine's."""
    folders = {}
    for base, pattern in items:
        if pattern.startswith("/"):
            base, pattern = "/", pattern.lstrip("/")
        folders.setdefault(base.rstrip("/") or "/", []).append(pattern)
    return list(folders.items())


_PATTERN_HEADS = {}  # a glob's first segment when it is literal, else ""


def _indexed_hit(groups, path, mode):
    for base, patterns in groups:
        inside = base + "/" if base != "/" else "/"
        if path != base and not path.startswith(inside):
            if mode == "delete" and (base == path or base.startswith(
                    path.rstrip("/") + "/")):
                return True
            continue
        rel = path[len(inside):].lower() if path != base else ""  # .NOTREST/ is
        if not rel:  # .notrest/ where the volume folds case, and never ordinary work
            if mode == "delete":
                return True
            continue
        head = rel.split("/", 1)[0]
        for pattern in patterns:
            first = _PATTERN_HEADS.get(pattern)
            if first is None:
                first = pattern.split("/", 1)[0].lower()
                first = _PATTERN_HEADS[pattern] = "" if any(
                    c in first for c in "*?[") else first
            if pattern != pattern.lower():
                pattern = pattern.lower()
            if first and first != head:
                continue
            if glob_match(pattern, rel):
                return True
            if mode == "delete":
                anchor = glob_anchor(pattern)
                if anchor and is_within("/" + anchor, "/" + rel):
                    return True
    return False


def harness_hit(path, mode, root, home, extra=(), codex_home=None):
    """Whether writing/deleting `path` touches the harness (or a protected path)."""
    items = [(root, p) for p in HARNESS_PATHS + tuple(extra)]
    if home and home != "/":
        items += [(home, p) for p in HOME_HARNESS_PATHS]
    if codex_home and codex_home.startswith("/") and codex_home != "/":
        items += [(codex_home.rstrip("/"), p) for p in CODEX_HOME_HARNESS]
    items += [("/", p) for p in SYSTEM_HARNESS_PATHS]
    return _indexed_hit(_group_patterns(items), path, mode)


def _quote_arg(arg):
    if arg and all(c.isalnum() or c in "@%+=:,./-_" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


# ---- built-in predicates -----------------------------------------------------
# Each returns a reason (str) when the law is broken by the call, else None. A
# Reason can say more: uncertain (the gate cannot see the target: the call is
# asked, not denied; Codex, which has no ask, denies) and an instead of its own.

class Reason(str):
    """A predicate's reason with what it knows beyond its text."""

    uncertain = False
    instead = ""


def reason(text, uncertain=False, instead=""):
    out = Reason(text)
    out.uncertain, out.instead = uncertain, instead
    return out


def _settle(reasons):
    """The reason a predicate gives: its first certain one, else its first."""
    for item in reasons:
        if not getattr(item, "uncertain", False):
            return item
    return reasons[0] if reasons else None


def _system_dir(path):
    for base in SYSTEM_DIRS:
        if is_within(path, base):
            return base
    return None


def _temp_dir(path, env):
    """The temp dir holding path ($TMPDIR or a system one), else None. Where the
    home folder or the project lie inside it, GateContext.container decides."""
    bases = list(TEMP_DIRS)
    if env.get("TMPDIR"):
        bases.append(os.path.normpath(env["TMPDIR"]))
    for base in bases:
        if is_within(path, base):
            return base
    return None


def _whole_glob(segment):
    return segment in ("*", ".*", "*.*", "{*,.*}", ".[!.]*", "..?*", "**")


def classify_delete(ctx, text, cwd, unknown, globbed, shown=None):
    """Why deleting `text` recursively/by force is destructive, else None."""
    found = _classify_delete(ctx, text, cwd, unknown, globbed)
    if found and shown:
        found = reason("`%s` %s" % (redact_clip(shown, 120), found), getattr(
            found, "uncertain", False))
    return found


def _classify_delete(ctx, text, cwd, unknown, globbed):
    if unknown or (isinstance(cwd, Opaque) and not text.startswith("/")):
        return _classify_unknown(ctx, text, cwd)
    path, children = text, False
    follow = text.endswith(("/", "/."))
    if globbed:
        anchor = glob_anchor(text)
        rest = text[len(anchor):].strip("/")
        whole = "/" not in rest and _whole_glob(rest)
        path, children, follow = anchor or ".", not whole, True
        if text.startswith("/") and not anchor:
            path = "/"
    path = ctx.resolve(path, cwd, follow)
    home, root = ctx.home, ctx.root
    if children:
        segment = text.rstrip("/").rsplit("/", 1)[-1]
        if path == root and _segment_match(segment, ".git"):
            return "deletes the project's git history (.git matches %s)" % segment
        for inner, what in ((home, "your home folder"), (root, "the project")):
            if inner and inner != "/" and inner != path and is_within(inner, path):
                step = inner[len(path.rstrip("/")) + 1:].split("/", 1)[0]
                if _segment_match(segment, step):
                    return "deletes %s, which holds %s" % (os.path.join(path, step), what)
        kind, _base = ctx.container(path)
        if kind in ("project", "temp"):
            return None
        return "deletes files in %s, outside the project" % path
    if path == "/":
        return "deletes the whole file system"
    if home and home != "/" and is_within(home, path):
        return "deletes your home folder (%s)" % home if path == home else (
            "deletes %s, which holds your home folder" % path)
    if is_within(root, path):
        return "deletes the project root (%s)" % root if path == root else (
            "deletes %s, which holds the project" % path)
    git = ctx.git_dir
    if path == git:
        return "deletes the project's git history (.git)"
    if path.startswith(git + "/"):
        for part in GIT_HISTORY:
            if is_within(path, git + "/" + part):
                return "deletes the project's git history (.git/%s)" % part
    kind, base = ctx.container(path)
    if kind == "project":
        return None
    if kind == "temp":
        return None if path != base else "deletes the temp folder %s" % base
    if kind == "home" and _home_cache(path, home):
        return None     # a package manager's or a compiler's download cache
    if kind == "home":
        return "deletes %s, in your home folder but outside the project" % path
    if _system_dir(path):
        return "deletes %s, a system folder" % path
    return "deletes %s, outside the project and the temp dir" % path


_DELETERS = ("rm", "shred", "srm", "unlink", "rimraf", "trash", "trash-put")


UNKNOWN_CODE_INSTEAD = ("write the commands into the call itself, or into a script file "
                        "that you run by name (`sh script.sh`: the gate reads it)")


def _unknown_code_reason(ctx):
    """Why the call runs code the gate cannot read, else None: a string it cannot
    know run as commands, or (Codex) a shell left open to write_stdin."""
    shared = ctx.shared
    for cmd, why in shared.unknown:
        return reason("`%s` %s, code the gate cannot read: it could delete anything" % (
            cmd.shown(), why), instead=UNKNOWN_CODE_INSTEAD)
    cmd = shared.interactive
    if cmd is not None and ctx.event.client == "codex":
        return reason("`%s` opens an interactive %s: what Codex then writes into it "
                      "(write_stdin) reaches no hook" % (cmd.shown(), cmd.prog),
                      instead="run each command as a call of its own")
    return None


def predicate_destroy(ctx):
    cmds = ctx.cmds
    if ctx.shared is not None and ctx.shared.fork_bomb:
        return "the command is a fork bomb: it would exhaust the machine"
    if ctx.shared is not None and (ctx.shared.unknown or ctx.shared.interactive):
        found = _unknown_code_reason(ctx)
        if found:
            return found
    reasons = []
    for cmd in cmds:
        prog = cmd.prog
        if prog in _DELETERS:
            found = _judge_rm(ctx, cmd)
        elif prog == "find" and cmd.find is not None and cmd.find.deleting:
            found = [_judge_find(ctx, cmd, cmd)]
        elif prog == "rsync" and any(a.startswith("--del") for a in cmd.argv):
            found = [classify_delete(ctx, dest, cmd.cwd, isinstance(dest, Opaque), False,
                                     cmd.shown()) for _s, dest, _t in copy_plan(cmd)[-1:]
                     if dest is not None]
        elif prog.startswith("mkfs") or prog in ("mke2fs", "mkswap", "wipefs",
                                                  "blkdiscard", "mkdosfs", "newfs"):
            found = ["`%s` formats or wipes a disk" % cmd.shown()]
        elif prog in ("chmod", "chown", "chgrp"):
            found = _judge_chmod(ctx, cmd)
        elif prog in DISK_TOOLS:
            found = [_judge_disk_tool(cmd)]
        elif prog == "git":
            found = [_git_history_loss(cmd)]
        else:
            continue
        for item in found:
            if item and not getattr(item, "uncertain", False):
                return item
            if item:
                reasons.append(item)
    for path, mode, what, cmd in ctx.accesses:
        if isinstance(path, (Opaque, Found)):
            continue
        if mode == "write" and any(path.startswith(dev) for dev in BLOCK_DEVICES):
            return "`%s` writes to the block device %s" % (what, path)
        if mode in ("write", "meta", "delete") and _system_file(ctx, path) and not (
                mode == "delete" and cmd is not None and cmd.prog in _DELETERS) and \
                not ctx.harness_hit(path, "write") and not (  # protect-harness names that
                mode == "write" and _new_in_data_folder(path)):  # one
            verb = {"write": "overwrites", "meta": "changes", "delete": "moves away"}[mode]
            return "`%s` %s %s, a system file outside the project" % (what, verb, path)
        if mode == "delete" and cmd is not None and cmd.prog not in _DELETERS and (
                path in ("/", ctx.home, ctx.root) or path == ctx.git_dir):
            return "`%s` moves %s away" % (what, path)
    if reasons:
        return _settle(reasons)
    found = _home_secrets_moved(ctx)
    if found:
        return found
    targets = _project_delete_targets(ctx)
    return _unsaved_work_lost(ctx, targets) if targets else None


def _project_delete_targets(ctx):
    """(cmd, [paths]) of the deletes of a call inside the project (rm, rimraf,
    unlink, shred operands; find -delete or find -exec rm starting points), the
    project root and .git left out (no-destroy judges those)."""
    out = []
    for cmd in ctx.cmds:
        words = []
        if cmd.prog in _DELETERS:
            words = [a for a in operands(cmd) if not isinstance(a, (Opaque, Glob))]
            words = [a.finder.find.roots[0] if isinstance(a, Found) and a.finder is not
                     None and a.finder.find is not None and len(a.finder.find.roots) == 1
                     and not a.finder.find.tests and not a.finder.find.narrowed
                     else a for a in words]
            words = [a for a in words if not isinstance(a, Found)]
        elif cmd.prog == "find" and cmd.find is not None and cmd.find.deleting and not (
                cmd.find.empty or cmd.find.tests or cmd.find.narrowed):
            words = [r for r in cmd.find.roots if not isinstance(r, Opaque)]
        else:
            words = _discarding_operands(cmd)
        paths = []
        for word in words:
            path = ctx.resolve(word, cmd.cwd, False)
            if is_within(path, ctx.root) and path != ctx.root and not is_within(
                    path, os.path.join(ctx.root, ".git")) and not (
                    os.path.basename(path) in REBUILDABLE_NAMES or any(
                        part in REBUILDABLE_NAMES for part in os.path.relpath(
                            path, ctx.root).split(os.sep)[:-1])):
                paths.append(path)
        if paths:
            out.append((cmd, paths))
    return out


_HOME_KEY_FOLDERS = (".ssh", ".gnupg", ".aws", ".kube", ".docker", ".config/gh",
                     ".config/gcloud", ".azure", ".password-store")


def _home_secrets_moved(ctx):
    """`mv ~/.ssh /tmp/old`: keys moved into the temp dir or onto a device leave
    where their tools find them, for what deletes temp files (the next command,
    a reboot)."""
    home = ctx.home
    if not home or home == "/":
        return None
    for cmd in ctx.cmds:
        ops = [a for a in operands(cmd) if isinstance(a, str)]
        if cmd.prog != "mv" or len(ops) < 2 or isinstance(ops[-1], Opaque):
            continue
        dest = ctx.resolve(ops[-1], cmd.cwd, False)
        if not (ctx.container(dest)[0] == "temp" or dest.startswith("/dev/")):
            continue
        for text in ops[:-1]:
            if isinstance(text, (Opaque, Glob, Found)):
                continue
            path = ctx.resolve(text, cmd.cwd, False)
            if is_secret_path(path, home) or any(
                    is_within(os.path.join(home, k), path) or path == os.path.join(home, k)
                    for k in _HOME_KEY_FOLDERS):
                return reason("`%s` moves %s out of your home folder into %s, where "
                              "temp clean-ups delete it" % (cmd.shown(), path, dest),
                              instead="leave the keys where they are; copy one file "
                              "(`cp ~/.ssh/config /tmp/`) if you need to read it")
    return None


def _discarding_operands(cmd):
    """What a mover or a mirror throws away besides rm: `mv FILE... /dev/null` its
    sources; `rsync --delete SRC/ DEST/` into a local folder, DEST (what the source
    lacks goes)."""
    ops = [a for a in operands(cmd) if isinstance(a, str) and not isinstance(
        a, (Opaque, Glob, Found))]
    if cmd.prog == "mv" and len(ops) >= 2 and ops[-1].startswith("/dev/") and \
            len(ops) == len(operands(cmd)):
        return ops[:-1]
    if cmd.prog == "rsync" and len(ops) >= 2 and ":" not in ops[-1] and any(
            str(a).startswith(("--del", "--remove-source-files")) for a in cmd.argv[1:]) \
            and not any(str(a) in ("-n", "--dry-run", "--list-only") for a in cmd.argv):
        return [ops[-1]] + (ops[:-1] if any(str(a) == "--remove-source-files" for a in
                                             cmd.argv) else [])
    return []


# What would be lost is asked of git below the cold line, only for a call that
# deletes inside the project something other than rebuildable output.
_unsaved_work_lost = _reader("_unsaved_work_lost")
REBUILDABLE_NAMES = frozenset(("dist", "build", "target", "out", "bin", "obj", "coverage",
                               "htmlcov", "node_modules", "__pycache__", ".venv", "venv",
                               ".tox", ".nox", ".pytest_cache", ".mypy_cache",
                               ".ruff_cache", ".cache", ".next", ".nuxt", ".turbo",
                               ".parcel-cache", ".eggs", ".gradle", ".terraform"))


_DEVICE_FILES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/",
                 "/dev/shm", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full",
                 "/dev/pts/", "/proc/self/fd/", "/dev/ptmx")


# System folders that hold a machine's data and deployments, not its programs or
# configuration: a write there that overwrites nothing loses nothing.
DATA_FOLDERS = ("/srv", "/opt", "/mnt", "/media", "/var/www")


def _new_in_data_folder(path):
    """Whether a write into a data folder (a deploy: `cp -r dist/* /srv/www/app/`)
    creates files and overwrites none on disk now (a pattern: none of what it
    expands to exists, bounded)."""
    if not any(is_within(path, d) for d in DATA_FOLDERS):
        return False
    if isinstance(path, Glob) or any(ch in path for ch in "*?["):
        expanded = _glob_expand(path)
        return expanded is not None and not expanded
    return not os.path.lexists(path)


def _system_file(ctx, path):
    """Whether path lies in a system folder, outside the project, the home
    folder and the temp dirs (the devices a shell writes to are not files)."""
    if path.startswith(_DEVICE_FILES) or path in ("/dev", "/proc/self"):
        return False
    if path.startswith("/proc/") and "/fd/" in path:
        return False
    if not _system_dir(path):
        return False
    kind, _base = ctx.container(path)
    return kind == ""


# Partition, volume and disk tools: the words that make a use of one read-only.
DISK_TOOLS = {
    "parted": ("-l", "--list", "print", "-v", "--version", "-h", "--help"),
    "sfdisk": ("-l", "--list", "-d", "--dump", "-s", "--show-size", "-V", "--verify",
               "-J", "--json", "-g", "--show-geometry", "--help", "--version"),
    "fdisk": ("-l", "--list", "-h", "--help", "-V", "--version"),
    "gdisk": ("-l",), "sgdisk": ("-p", "--print", "-v", "--verify", "-i", "--info",
                                 "--help", "-V", "--version"),
    "cfdisk": (), "cgdisk": (), "wipefs": ("-n", "--no-act", "--help"),
    "cryptsetup": ("status", "luksDump", "isLuks", "open", "luksOpen", "close",
                   "--help", "--version"),
    "lvremove": (), "vgremove": (), "pvremove": (), "dmsetup": ("ls", "info", "status",
                                                                 "table", "--help"),
    "zpool": ("list", "status", "iostat", "get", "history", "import", "--help"),
    "zfs": ("list", "get", "snapshot", "mount", "--help"),
    "mdadm": ("--detail", "-D", "--examine", "-E", "--query", "-Q", "--help"),
    "hdparm": ("-I", "-i", "-t", "-T", "-g", "-C", "--help"),
    "nvme": ("list", "id-ctrl", "id-ns", "smart-log", "error-log", "help"),
    "sg_format": (), "diskutil": ("list", "info", "mount", "unmount", "eject",
                                  "verifyVolume", "verifyDisk", "apfs"),
}


def _judge_disk_tool(cmd):
    args = [a for a in cmd.argv[1:]]
    harmless = DISK_TOOLS.get(cmd.prog, ())
    if not args or any(a in harmless for a in args):
        if cmd.prog not in ("zfs", "zpool") or not any(a == "destroy" for a in args):
            return None
    if cmd.prog in ("zfs", "zpool") and not any(a in ("destroy", "labelclear", "remove",
                                                      "rollback") for a in args):
        return None
    return "`%s` rewrites partitions, volumes or whole disks" % cmd.shown()


def _git_history_loss(cmd):
    """reflog expire to now, gc or prune with --prune=now: what git keeps to bring
    lost commits back, thrown away."""
    sub, args = _git_parts(cmd)
    text = " ".join(args)
    if sub == "reflog" and args[:1] in (["expire"], ["delete"]) and (
            "=now" in text or "=all" in text or args[:1] == ["delete"]):
        return "`%s` throws away the reflog, which is how lost commits come back" % \
            cmd.shown()
    if sub in ("gc", "prune") and ("--prune=now" in text or "--expire=now" in text or (
            sub == "prune" and "--expire" in args and "now" in args)):
        return "`%s` deletes every commit no ref holds, at once" % cmd.shown()
    return None


def _judge_rm(ctx, cmd):
    argv = cmd.argv
    if "--no-preserve-root" in argv:
        return ["`%s` disables rm's protection of /" % cmd.shown()]
    prog = cmd.prog
    recursive = prog == "rimraf" or has_flag(cmd, "rR", ("--recursive",))
    forced = prog in ("shred", "srm", "rimraf") or has_flag(cmd, "f", ("--force",))
    reasons, seen, options = [], set(), True
    for arg in argv[1:]:
        if options and arg == "--":
            options = False
            continue
        if options and arg.startswith("-") and arg != "-":
            continue
        if isinstance(arg, Found):
            if arg.finder is not None:
                item = _judge_find(ctx, arg.finder, cmd)
            elif recursive or forced:
                item = reason("`%s` deletes what its input names, which the gate cannot "
                              "see" % cmd.shown(), uncertain=True)
            else:
                item = None
        elif not (recursive or forced):
            continue
        else:
            key = (str(arg), type(arg))
            if key in seen:
                continue
            seen.add(key)
            item = classify_delete(ctx, arg, cmd.cwd, isinstance(arg, Opaque),
                                   isinstance(arg, Glob), cmd.shown())
        if item and not getattr(item, "uncertain", False):
            return [item]
        if item:
            reasons.append(item)
    return reasons


def _judge_chmod(ctx, cmd):
    recursive = has_flag(cmd, "R", ("--recursive",))
    for arg in operands(cmd, skip_first=1):
        path = ctx.resolve(arg, cmd.cwd, False)
        if path == "/" or (recursive and (path == ctx.home or path in SYSTEM_DIRS
                                          or is_within(ctx.home, path))):
            return ["`%s` changes permissions of %s%s" % (
                cmd.shown(), path, " and everything under it" if recursive else "")]
    return []


def _find_names_miss(info, start, inner, argv):
    """Whether a find from start whose only tests are names (-name, -iname) and
    whose -maxdepth stops above inner can yield neither anything inside inner nor
    a folder above it (no name on the way down matches)."""
    if not info.tests or any(t not in ("-name", "-iname") for t, _p in info.tests):
        return False
    rel = os.path.relpath(inner, start)
    if rel == "." or rel.startswith(".."):
        return False
    parts = rel.split(os.sep)
    depth = argv[argv.index("-maxdepth") + 1] if "-maxdepth" in argv[:-1] else ""
    if not (isinstance(depth, str) and depth.isdigit() and int(depth) < len(parts)):
        return False    # it goes down into inner, where any name may match
    for part in parts[:int(depth)]:
        for test, pattern in info.tests:
            a, b = (pattern.lower(), part.lower()) if test == "-iname" else (pattern, part)
            if _segment_match(a, b):
                return False
    return True


def _judge_find(ctx, finder, shown):
    """Why what a find yields must not be deleted, else None: its starting
    points, and whether a test narrows what it matches."""
    info = finder.find
    for root_text in info.roots:
        if isinstance(root_text, Opaque):
            return reason("`%s` deletes under %s, which the gate cannot resolve" % (
                shown.shown(), redact_clip(root_text, 60)), uncertain=True)
        path = ctx.resolve(root_text, finder.cwd, info.follow or root_text.endswith("/"))
        if path == "/" or (ctx.home != "/" and is_within(ctx.home, path) and not
                           _find_names_miss(info, path, ctx.home, finder.argv)) or (
                is_within(ctx.root, path) and path != ctx.root and not _find_names_miss(
                    info, path, ctx.root, finder.argv)):
            return "`%s` deletes files under %s, outside the project" % (shown.shown(),
                                                                         path)
        kind, base = ctx.container(path)
        if kind == "project" and info.empty and not info.execs and not is_within(
                path, os.path.join(ctx.root, ".git")):
            continue    # only empty files and folders: nothing is lost
        if kind == "project":
            if path == ctx.root and not info.narrowed:
                return "`%s` deletes everything in the project root" % shown.shown()
            if is_within(path, os.path.join(ctx.root, ".git")):
                return "`%s` deletes inside the project's .git" % shown.shown()
            continue
        if kind == "temp" and (path != base or info.narrowed):
            continue
        if kind == "home" and _home_cache(path, ctx.home) and not info.execs:
            continue
        return "`%s` deletes files under %s, outside the project" % (shown.shown(), path)
    return None


# The download and build caches tools keep in the home folder: each fills again
# on the next install or build (pip, npm, yarn, pnpm, go, cargo, gradle, maven's
# downloads, Homebrew, huggingface's hub). Only inside them; never the folder that
# holds them all (~/.cache may hold a tool's state) nor notrest's own.
HOME_CACHES = (".cache/pip", ".cache/uv", ".cache/pypoetry/cache",
               ".cache/pypoetry/artifacts", ".cache/go-build", ".cache/yarn",
               ".cache/pnpm", ".cache/pre-commit", ".cache/ms-playwright",
               ".cache/puppeteer", ".cache/Cypress", ".cache/node-gyp", ".cache/bazel",
               ".cache/sccache", ".cache/ccache", ".cache/mypy", ".cache/ruff",
               ".cache/black", ".cache/huggingface/hub", ".cache/torch/hub",
               ".cache/electron", ".cache/deno", ".cache/bun", ".cache/composer",
               ".npm/_cacache", ".npm/_npx", ".npm/_logs", ".yarn/berry/cache",
               ".pnpm-store", ".local/share/pnpm/store", ".bun/install/cache",
               ".cargo/registry/cache", ".cargo/registry/src", ".cargo/git/checkouts",
               ".gradle/caches", ".gradle/wrapper/dists", ".m2/repository",
               ".ivy2/cache", ".sbt/boot", ".nuget/packages", ".ccache",
               "go/pkg/mod/cache", "Library/Caches/pip", "Library/Caches/Yarn",
               "Library/Caches/go-build", "Library/Caches/pypoetry",
               "Library/Caches/Homebrew", "Library/Caches/ms-playwright",
               "Library/Caches/pnpm", "Library/Caches/Cypress",
               "Library/Caches/com.apple.dt.Xcode", "Library/Developer/Xcode/DerivedData")


def _home_cache(path, home):
    """Whether path is one of HOME_CACHES or inside one (and no symlink leads
    out of it: ctx.resolve has followed the folders above it)."""
    if not home or home == "/" or not isinstance(path, str):
        return False
    return any(is_within(path, os.path.join(home, cache)) for cache in HOME_CACHES)


def _git_parts(cmd):
    """(subcommand, args after it) of a git command."""
    argv, i = cmd.argv, 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                       "--exec-path", "--super-prefix", "--config-env"):
            i += 2
        else:
            i += 1
    if i >= len(argv):
        return "", []
    return argv[i], argv[i + 1:]


def _branch_name(ref, current):
    ref = ref.strip()
    if ref in ("HEAD", "@"):
        return current
    for prefix in ("refs/heads/", "heads/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def predicate_force_push(ctx):
    protected = ctx.book.protected_branches
    current = ctx.event.branch
    for cmd in ctx.cmds:
        if cmd.prog == "gh":
            found = _judge_host_refs(cmd, protected)
        elif cmd.prog != "git":
            continue
        else:
            sub, args = _git_parts(cmd)
            judge = _REF_JUDGES.get(sub)
            found = judge(cmd, args, protected, current) if judge else None
        if found:
            return found
    return None


def _judge_update_ref(cmd, args, protected, current):
    """git update-ref [-d] REF [NEW [OLD]]: a protected branch moved or deleted
    with plumbing."""
    words = [a for a in args if not a.startswith("-")]
    if words and _branch_name(words[0], current) in protected:
        return "`%s` %s the protected branch %s" % (
            cmd.shown(), "deletes" if "-d" in args else "moves", _branch_name(
                words[0], current))
    return None


def _judge_host_refs(cmd, protected):
    """gh: deleting the repository, or a ref through the host's API."""
    words = [a for a in cmd.argv[1:] if not a.startswith("-")]
    if words[:2] == ["repo", "delete"]:
        return "`%s` deletes the repository on the host, every branch with it" % \
            cmd.shown()
    if words[:1] == ["api"]:
        method = (option_values(cmd, ("-X", "--method")) or [""])[-1].upper()
        path = next((w for w in words[1:] if "/git/refs" in w), "")
        name = path.split("/git/refs/", 1)[-1].split("heads/", 1)[-1] if path else ""
        if path and method == "DELETE":
            return "`%s` deletes a ref on the host" % cmd.shown()
        if path and method in ("PATCH", "POST") and (name in protected or not name) and \
                any("force" in str(a) for a in cmd.argv):
            return "`%s` force-moves a protected branch on the host" % cmd.shown()
    return None


def _judge_push(cmd, args, protected, current):
    force = mirror = delete = every = False
    positional, i = [], 0
    while i < len(args):
        arg = args[i]
        if arg in ("--force", "--force-with-lease", "--force-if-includes") or \
                arg.startswith("--force-with-lease="):
            force = True
        elif arg == "--mirror":
            mirror = True
        elif arg in ("--delete",):
            delete = True
        elif arg in ("--all", "--branches"):
            every = True
        elif arg in ("-n", "--dry-run"):
            return None
        elif arg in ("-o", "--push-option", "--repo", "--receive-pack", "--exec"):
            i += 1
        elif arg.startswith("--"):
            pass
        elif arg.startswith("-") and len(arg) > 1:
            force = force or "f" in arg[1:]
            delete = delete or "d" in arg[1:]
        else:
            positional.append(arg)
        i += 1
    names = ", ".join(protected)
    shown = cmd.shown()
    if mirror:
        return "`%s` mirror-pushes: it overwrites and deletes every remote branch, " \
               "%s included" % (shown, names)
    refspecs = positional[1:]
    if every and force:
        return "`%s` force-pushes every branch, %s included" % (shown, names)
    for spec in refspecs:
        plus = spec.startswith("+")
        spec = spec[1:] if plus else spec
        src, sep, dst = spec.partition(":")
        dst = _branch_name(dst if sep else src, current)
        if dst not in protected:
            hit = "*" in dst and next((p for p in protected if _segment_match(dst, p)), None)
            if hit and (force or plus):
                return "`%s` force-pushes %s, the protected branch %s included" % (
                    shown, spec, hit)
            if hit and "--prune" in args:
                return "`%s` prunes the remote branches %s covers, the protected " \
                       "branch %s among them" % (shown, spec, hit)
            continue
        if (sep and not src) or delete:
            return "`%s` deletes the protected branch %s" % (shown, dst)
        if force or plus:
            return "`%s` force-pushes the protected branch %s" % (shown, dst)
    if force and not refspecs:
        if current is None:
            return ("`%s` force-pushes the current branch, and the gate cannot tell "
                    "which branch that is" % shown)
        if current in protected:
            return "`%s` force-pushes the protected branch %s" % (shown, current)
    return None


def _judge_branch(cmd, args, protected, current=None):
    moved = _judge_branch_move(cmd, args, protected, current)
    if moved:
        return moved
    deleting = forced = False
    names = []
    for arg in args:
        if arg in ("-D",):
            deleting = forced = True
        elif arg in ("-d", "--delete"):
            deleting = True
        elif arg in ("-f", "--force"):
            forced = True
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            deleting = deleting or "d" in arg or "D" in arg
            forced = forced or "D" in arg or "f" in arg
        elif not arg.startswith("-"):
            names.append(arg)
    for name in names:
        if name in protected and (deleting and forced or deleting):
            return "`%s` deletes the protected branch %s" % (cmd.shown(), name)
    if forced and names and not deleting and (names[-1] in protected or (
            len(names) > 1 and names[0] in protected)):
        name = names[0] if names[0] in protected else names[-1]
        return "`%s` force-moves the protected branch %s" % (cmd.shown(), name)
    return None


def _judge_branch_move(cmd, args, protected, current):
    """git branch -m/-M/-c/-C [OLD] NEW: a branch renamed or copied onto a
    protected one by force, or a protected branch renamed away."""
    letters = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    moving = "m" in letters or "M" in letters or "--move" in args
    copying = "c" in letters or "C" in letters or "--copy" in args
    if not (moving or copying):
        return None
    forced = "M" in letters or "C" in letters or "f" in letters or "--force" in args
    names = [a for a in args if not a.startswith("-")]
    new = names[1] if len(names) > 1 else None
    if len(names) > 1 and new in protected and forced:  # not `branch -M main`, the
        return "`%s` overwrites the protected branch %s" % (cmd.shown(), new)  # rename
    return None


_REF_JUDGES = {
    "push": _judge_push, "send-pack": _judge_push, "branch": _judge_branch,
    "update-ref": _judge_update_ref,
}


SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".docker", ".config/gcloud", ".kube", ".codex")
_SECRET_SAMPLES = (".env", ".env.local", ".env.production", "id_rsa", "id_ed25519",
                   "id_ecdsa", "id_dsa", "server.pem", "server.key", "cert.p12",
                   "credentials", "config.json", ".netrc", ".git-credentials", ".pypirc",
                   "auth.json", ".credentials.json", ".envrc", "prod.env", "prod.tfvars",
                   ".pgpass", ".my.cnf", ".env-prod", ".env_prod")
_COPIERS = frozenset(("cp", "scp", "rsync", "tar", "zip", "7z", "7za", "cpio", "pax",
                      "gzip", "xz", "zstd", "bzip2", "sftp", "curl", "nc", "netcat",
                      "socat", "base64", "xxd", "od"))


def is_secret_path(path, home, extra=()):
    """Whether a path names a secret file (templates and public keys excluded); a
    glob counts when it could match one. extra: more secret files, absolute."""
    base = path.rstrip("/").rsplit("/", 1)[-1].lower()  # .ENV is .env where case folds
    if any(ch in base for ch in "*?["):
        folder = path.rstrip("/").rsplit("/", 1)[0] or "/"
        return any(_segment_match(base, sample) and (base.startswith(".") or
                                                    not sample.startswith("."))
                   and is_secret_path(folder + "/" + sample, home, extra)
                   for sample in _SECRET_SAMPLES)
    if path in extra:
        return True
    if any(base.endswith(suffix) for suffix in SECRET_TEMPLATES):
        return False
    for name in SECRET_NAMES:
        if _segment_match(name, base):
            return True
    if home and home != "/" and is_within(path, home):
        rel = path[len(home.rstrip("/")) + 1:].lower()
        return any(glob_match(p, rel) if "/" in p or "*" in p else rel == p
                   for p in HOME_SECRET_PATHS)
    return _proc_environ(path)


def _proc_environ(path):
    """/proc/PID/environ (self, a number, a glob): the environment of a process,
    the client's credentials included."""
    return path.startswith("/proc/") and path.endswith("/environ") and (
        path.count("/") == 3 or (path.count("/") == 5 and path.split("/")[3] == "task"))


def holds_secrets(path, home, extra=()):
    """A folder that holds secret files by convention (~/.ssh, ~/.aws, ...), or one
    of its parents up to the home folder; or a folder holding one of extra."""
    if any(is_within(secret, path) and secret != path for secret in extra):
        return True
    if not home or home == "/":
        return False
    for folder in SECRET_DIRS:
        full = os.path.join(home, folder)
        if is_within(full, path) and is_within(path, home) or path == full:
            return True
    return False


TREE_READ_INSTEAD = ("search only the folders that hold the code (`grep -rn PATTERN src`), "
                     "or `rg PATTERN`, which skips hidden files")


_SECRET_VERBS = {"read": "reads", "write": "writes", "code": "opens", "tree": "reads",
                 "link": "gives a second name to", "symlink": "links to"}


def _secret_renamed(ctx, path, what, cmd, extra):
    """`mv` of a secret file to a name that is no secret one."""
    if cmd is None or cmd.prog != "mv" or isinstance(path, Opaque) or \
            not is_secret_path(path, ctx.home, extra):
        return None
    landing = [d for s_, d, _t in copy_plan(cmd) if d is not None]
    if not landing or not all(is_secret_path(ctx.resolve(d, cmd.cwd), ctx.home)
                              for d in landing if isinstance(d, str)):
        return "`%s` gives the secret file %s another name, which a later " \
            "command would read" % (redact_clip(what, 120), display_path(path, ctx.root))
    return None


def _secret_path_use(ctx, path, mode, what, cmd, extra):
    """A named path that is, holds or (a folder read whole) contains a secret file."""
    if mode == "write" and not isinstance(path, Glob) and _new_project_file(ctx, path):
        return None     # `printf 'DEBUG=1' > .env.test` makes a file: no secret is in it
    if is_secret_path(path, ctx.home, extra):
        return "`%s` %s the secret file %s" % (redact_clip(what, 120),
                                                _SECRET_VERBS.get(mode, "uses"),
                                                display_path(path, ctx.root))
    if (mode in ("link", "symlink") or mode in ("read", "tree") and cmd is not None
            and (cmd.prog in _COPIERS or mode == "tree")) and holds_secrets(
            path, ctx.home, extra):
        return "`%s` copies %s, which holds private keys or credentials" % (
            redact_clip(what, 120), path)
    if mode == "tree":
        secret = tree_secret(ctx, path, cmd)
        if secret:
            return reason("`%s` reads all of %s, and with it the secret file %s" % (
                redact_clip(what, 120), display_path(path, ctx.root), display_path(
                    secret, ctx.root)), instead=TREE_READ_INSTEAD)
    return None


def _secret_access(ctx, path, mode, what, cmd, extra):
    """Why one access of a command reaches a secret, or None."""
    if mode in ("delete", "meta"):
        return _secret_renamed(ctx, path, what, cmd, extra) if mode == "delete" else None
    if isinstance(path, Opaque):
        if path.startswith("/proc/") and path.endswith("/environ"):
            return "`%s` reads the environment of a process, the client's " \
                "credentials included" % redact_clip(what, 120)
        return None
    if isinstance(path, Glob) and "/" in path and any(
            ch in path.rsplit("/", 1)[0] for ch in "*?["):
        hit = _glob_secret(ctx, path, extra)  # ~/.[a]ws/credentials
        if hit:
            return "`%s` reads the secret file %s" % (redact_clip(what, 120),
                                                      display_path(hit, ctx.root))
    if isinstance(path, Found):
        if mode == "read" and path.finder is not None and _found_may_read_secret(
                ctx, path):
            return "`%s` reads what %s finds, secret files included" % (
                redact_clip(what, 120), path.finder.shown(60))
        return None
    if mode == "any" and any(ch in path for ch in "*?["):
        path = _glob_secret(ctx, path, extra) if isinstance(path, Glob) else None
        if path is None:
            return None
    elif isinstance(path, Glob) and any(ch in path for ch in "*?["):
        # a shell pattern is judged by what it expands to on disk (bounded):
        # `cat dist/*` reads dist's files, and names a secret only when one is there
        expanded = _glob_expand(path)
        if expanded is not None:
            found = _glob_expansion_secret(ctx, expanded, mode, cmd, extra)
            return "`%s` %s" % (redact_clip(what, 120), found) if found else None
    return _secret_path_use(ctx, path, mode, what, cmd, extra)


def _prints_secrets(ctx):
    """A command that prints credentials or the whole environment."""
    for cmd in ctx.cmds:
        if cmd.prog in _PRINTERS:
            found = prints_credentials(ctx, cmd)
            if found:
                return found
        elif (cmd.prog in INTERPRETERS or cmd.prog.startswith("python")) and any(
                w in str(a) for a in cmd.argv[1:] for w in ("environ", "env", "ENV")):
            codes = interpreter_parts(cmd.argv)[0]
            if any(_prints_environment(code) for code in codes) and not _consumed(ctx, cmd):
                return "`%s` prints the whole environment, the client's credentials " \
                    "included" % redact_clip(cmd.shown(), 120)
    return None


def predicate_secrets(ctx):
    extra = ctx.secret_paths
    for path, mode, what, cmd in ctx.accesses:
        found = _secret_access(ctx, path, mode, what, cmd, extra)
        if found is not None:
            return found
    return _prints_secrets(ctx)


_ENV_ONE = None


def _prints_environment(code):
    """Whether inline code prints the whole environment (print(os.environ), node -p
    process.env, perl's %ENV, ruby's ENV.to_h): what remains once each lookup of one
    variable (environ['X'], environ.get('X'), process.env.X, $ENV{X}, ENV['X']) is
    taken out, next to a print."""
    global _ENV_ONE
    import re
    if _ENV_ONE is None:
        _ENV_ONE = re.compile(r"(os\.environ|environ|process\.env|ENV)\s*(\[[^\]]*\]|"
                              r"\.(get|fetch|getenv)\s*\([^)]*\)|\.(?!(?:items|copy|to_h|to_a|inspect|keys|"
                              r"values|each|entries|dump)\b)[A-Za-z_][A-Za-z0-9_]*|\{[^}]*\})|\$ENV\{[^}]*\}|getenv\s*\([^)]*\)")
    rest = _ENV_ONE.sub("", code)
    if not re.search(r"(os\.environ|\bprocess\.env\b|%ENV\b|\bENV\b|environ\b)", rest):
        return False
    return bool(re.search(r"\b(print|puts|p|pp|console\.log|echo|say|printf|write|dump|"
                          r"dumps|json|inspect|to_h|items|each)\b", code)) or \
        code.strip() in ("process.env", "ENV", "os.environ")


# Programs that print a credential: the words after the program that make it
# print one ("" for any use but the listed harmless verbs).
CREDENTIAL_PRINTERS = {
    "gh": (("auth", "token"), ("auth", "status", "--show-token"), ("auth", "status", "-t")),
    "glab": (("auth", "status", "--show-token"), ("auth", "status", "-t")),
    "aws": (("configure", "get"), ("configure", "export-credentials"),
            ("ecr", "get-login-password"), ("sts", "get-session-token"),
            ("codeartifact", "get-authorization-token")),
    "gcloud": (("auth", "print-access-token"), ("auth", "print-identity-token"),
               ("config", "config-helper")),
    "az": (("account", "get-access-token"),),
    "kubectl": (("config", "view", "--raw"),),
    "git": (("credential", "fill"), ("credential-store", "get"),
            ("credential-cache", "get")),
    "security": (("find-generic-password",), ("find-internet-password",),
                 ("dump-keychain",), ("export",)),
    "secret-tool": (("lookup",), ("search",)),
    "heroku": (("auth:token",),),
    "lpass": (("show",),),
    "keyring": (("get",),),
    "gpg": (("--export-secret-keys",), ("--export-secret-subkeys",)),
    "pass": ("",),
    # the secret managers a team reads on purpose (vault, op, doppler, cloud secret
    # stores) are the secret-managers pack's: reading them is allowed there
    "gopass": (("show",), ("cat",)),
    "bw": (("get", "password"),),
    "sops": (("-d",), ("--decrypt",), ("decrypt",)),
    "npm": (("token", "list"),),
    # CLIs that print the token they hold, and the kernel's keyring
    "doctl": (("auth", "token"),), "fly": (("auth", "token"),),
    "flyctl": (("auth", "token"),), "oc": (("whoami", "--show-token"), ("whoami", "-t")),
    "cf": (("oauth-token",),), "ibmcloud": (("iam", "oauth-tokens"),),
    "keyctl": (("print",), ("pipe",), ("read",)), "vercel": (("whoami", "--token"),),
    "netlify": (("status", "--json"),), "railway": (("whoami", "--json"),),
}
_CONFIG_GETTERS = ("npm", "pnpm", "yarn", "pip", "pip3", "poetry", "composer", "gem",
                   "cargo", "bundle", "conda", "git")
_PASS_HARMLESS = ("ls", "list", "find", "search", "init", "git", "help", "version",
                  "--help", "--version", "insert", "generate", "edit", "rm", "mv", "cp")
_CREDENTIAL_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY",
                     "PRIVATE_KEY", "ACCESS_KEY", "CREDENTIAL", "AUTH")
_PRINTERS = frozenset(("echo", "printf", "printenv", "env", "ps", "set", "export",
                       "declare", "typeset", "compgen", "jq", "gojq", "jaq")) | frozenset(
    CREDENTIAL_PRINTERS) | frozenset(_CONFIG_GETTERS)


def credential_name(name):
    """Whether an environment variable's name says it holds a credential."""
    upper = str(name).upper()
    return any(word in upper for word in _CREDENTIAL_WORDS)


def _jq_reads_environment(args):
    """Whether a jq filter reads the environment whole: the `env` builtin or
    `$ENV` (`.env`, a field, and `env.HOME`, one variable, are not)."""
    import re
    for arg in args:
        if not isinstance(arg, str) or arg.startswith("-"):
            continue
        for match in re.finditer(r"(?<![.\w$])env\b|\$ENV\b|\$__loc__", arg):
            tail = arg[match.end():match.end() + 1]
            if tail != "." and not match.group(0).startswith("$__"):
                return True
        return False  # the first operand is the filter; the rest are files
    return False


def prints_credentials(ctx, cmd):
    """Why a command prints a credential (a CLI's token, the client's key in the
    environment, another process's environment), else None."""
    prog, args = cmd.prog, cmd.argv[1:]
    rows = CREDENTIAL_PRINTERS.get(prog) or (
        (("get",),) if prog.startswith("docker-credential-") else ())
    for words in rows:
        if words == "":
            if not args or args[0] in _PASS_HARMLESS:
                continue
            return "`%s` prints a password from the store" % cmd.shown()
        if all(w in args for w in words) and not _to_password_stdin(ctx, cmd):
            return "`%s` prints a credential" % cmd.shown()
    if prog in _CONFIG_GETTERS and "config" in args[:2] and any(
            a in ("get", "--get", "--get-all", "list", "-l", "--list") for a in args):
        asked = [a for a in args if not a.startswith("-") and a not in (
            "config", "get", "list")]
        if any(credential_name(a.replace(":_", "_").replace("-", "_")) for a in asked) \
                or (any(a in ("list", "-l", "--list") for a in args) and prog in (
                    "npm", "pnpm", "yarn") and any(a in ("-l", "--long", "--json")
                                                   for a in args)):
            return "`%s` prints a credential from the tool's settings" % cmd.shown()
    if prog == "printenv" and args:
        named = [a for a in args if not a.startswith("-") and credential_name(a)]
        if named:
            return "`%s` prints %s, a credential in the agent's environment" % (
                cmd.shown(), named[0])
    # `set` prints the variables only bare (`set -eu` sets options); the others
    # with no name (`export -p`, `declare -x`)
    if prog in ("printenv", "env", "export", "set", "declare", "typeset") and not [
            a for a in args if not a.startswith("-")] and (prog != "set" or not args) \
            and not _consumed(ctx, cmd) and not _container_env(ctx, cmd):
        return "`%s` prints the whole environment, the client's credentials included" \
            % cmd.shown()
    if prog in ("jq", "gojq", "jaq") and _jq_reads_environment(args) and not _consumed(
            ctx, cmd):
        return "`%s` prints the environment (jq's env, $ENV), the client's credentials " \
            "included" % cmd.shown()
    if prog == "ps" and any(not a.startswith("-") and "e" in a for a in args):
        return "`%s` prints the environment of every process, the client's " \
            "credentials included" % cmd.shown()
    if prog in ("echo", "printf"):
        for arg in args:
            if isinstance(arg, Opaque) and "$" in arg and any(
                    credential_name(part.split("}")[0].split(":")[0])
                    for part in arg.split("$")[1:]):
                return "`%s` prints a credential from the environment" % cmd.shown()
    return None


GLOB_EXPAND_CAP = 256


def _new_project_file(ctx, path):
    """Whether a write makes a new file in the project, outside every folder of
    secrets, where nothing is on disk now (no file, no link): it loses no secret
    and shows none. What is written there is judged by the other laws."""
    if not ctx.root or not is_within(path, ctx.root) or path == ctx.root:
        return False
    if os.path.lexists(path) or path in ctx.secret_paths:
        return False
    folder = os.path.dirname(path)
    return os.path.isdir(folder) and not os.path.islink(folder) and not holds_secrets(
        folder, ctx.home, ctx.secret_paths) and os.path.realpath(folder) == folder


def _glob_expand(pattern):
    """The paths a shell pattern expands to on disk now, or None when there are
    more than GLOB_EXPAND_CAP of them (then the pattern is judged as written)."""
    import glob
    out = []
    for path in glob.iglob(pattern):
        if len(out) >= GLOB_EXPAND_CAP:
            return None
        out.append(path)
    return out


def _glob_expansion_secret(ctx, paths, mode, cmd, extra):
    """What the expansion of a pattern does to a secret (the words after the
    command), else None: a secret file among the paths (or one a path links to),
    or a folder of secrets a copier or a tree read takes whole."""
    verb = {"read": "reads", "write": "writes", "code": "opens", "tree": "reads",
            "link": "gives a second name to", "symlink": "links to"}.get(mode, "uses")
    for path in paths:
        real = os.path.realpath(path)
        for name in (path, real):
            if is_secret_path(name, ctx.home, extra):
                return "%s the secret file %s" % (verb, display_path(name, ctx.root))
        if (mode in ("link", "symlink") or mode in ("read", "tree") and cmd is not None
                and (cmd.prog in _COPIERS or mode == "tree")) and any(
                holds_secrets(name, ctx.home, extra) for name in (path, real)):
            return "copies %s, which holds private keys or credentials" % path
        if mode == "tree" or mode == "read" and cmd is not None and cmd.prog in _COPIERS:
            if os.path.isdir(real):
                secret = tree_secret(ctx, real, cmd)
                if secret:
                    return "reads all of %s, and with it the secret file %s" % (
                        display_path(path, ctx.root), display_path(secret, ctx.root))
    return None


def _glob_secret(ctx, pattern, extra):
    """The first secret file a shell pattern given to a program with no row
    expands to, on disk (bounded), else None."""
    import glob
    for i, path in enumerate(glob.iglob(pattern)):
        if i > 256:
            break
        if is_secret_path(path, ctx.home, extra):
            return path
    return None


_STDIN_LOGINS = frozenset(("docker", "podman", "nerdctl", "helm", "oras", "skopeo",
                           "buildah", "crane", "finch"))


def _to_password_stdin(ctx, cmd):
    """Whether what cmd prints goes straight into a registry login that reads its
    password on stdin (`aws ecr get-login-password | docker login --username AWS
    --password-stdin HOST`): the token reaches the login, never the agent."""
    for other in ctx.cmds:
        if other.feeds is cmd and other.prog in _STDIN_LOGINS and "login" in [
                str(a) for a in other.argv[1:4]] and "--password-stdin" in other.argv \
                and not other.redirects and not any(
                    c.feeds is other for c in ctx.cmds):
            return True
    return False


def _runs_inside(parent, cmd):
    """Whether cmd is what parent runs (`docker exec app env`: env prints through
    docker's stdout, so what docker feeds, env feeds)."""
    return parent is not None and cmd.depth > parent.depth and cmd.origin and (
        parent.pipeline, parent.pos) == (cmd.pipeline, cmd.pos) and \
        cmd.origin.startswith(parent.prog + " ")


def _container_env(ctx, cmd):
    """Whether cmd prints a scratch container's own environment (`docker exec
    app-dev env`): what its compose file set for development, not the agent's
    credentials (none is passed in with -e or --env-file)."""
    words = str(cmd.origin or "").split()
    parents = [c for c in ctx.cmds if _runs_inside(c, cmd)]
    if len(words) < 3 or words[0] not in ("docker", "podman", "nerdctl") or \
            words[1] != "exec" or len(parents) != 1:
        return False
    return not any(isinstance(a, Opaque) or str(a).startswith(("-e", "--env")) or
                   "$" in str(a) for a in parents[0].argv) and readers()._scratch_name(
        words[-1])


def _consumed(ctx, cmd):
    """Whether what cmd prints goes into a filter that shows no value of a
    credential (a count, a grep for a name that is none), not to the agent."""
    for other in ctx.cmds:
        if other.feeds is not cmd and not _runs_inside(other.feeds, cmd):
            continue
        if other.prog == "wc":
            return True
        if other.prog not in ("grep", "egrep", "fgrep", "rg"):
            return False
        if has_flag(other, "cqlL", ("--count", "--quiet", "--silent")):
            return True
        pattern = next((a for a in other.argv[1:] if not a.startswith("-")), "")
        upper = pattern.upper().strip("^$.*")
        return bool(pattern) and not credential_name(pattern) and not (
            len(upper) >= 3 and any(upper in w for w in _CREDENTIAL_WORDS))
    return False


def _glob_hits_harness(path, mode, ctx):
    """A globbed path (rm -rf .n*, cp x .claude/s*) that would expand onto the
    harness, as the shell expands it."""
    samples = [os.path.join(ctx.root, s) for s in HARNESS_SAMPLES]
    if ctx.home and ctx.home != "/":
        samples += [os.path.join(ctx.home, s) for s in HOME_HARNESS_SAMPLES]
    for sample in samples:
        if glob_match(path, sample, shell=True) and ctx.harness_hit(sample, mode):
            return True
    return False


def _code_writes_files(cmd, writes_code):
    """Whether the code an interpreter runs writes files (memo: writes_code[id(cmd)])."""
    if id(cmd) not in writes_code:
        writes_code[id(cmd)] = any(code_writes(c) for c in interpreter_code(cmd))
    return writes_code[id(cmd)]


def _sparse_checkout_write(ctx, cmd, path, what):
    """A write of git's sparse-checkout patterns, judged as `git sparse-checkout set`
    of what it writes, or an uncertain reason when the patterns cannot be read."""
    made = cmd.shared.made(path) if cmd.shared is not None else None
    patterns = made.split() if isinstance(made, str) and not isinstance(
        made, Opaque) else []
    if patterns:
        return readers()._judge_sparse(ctx, cmd, ["set"] + patterns)
    return reason("`%s` writes git's sparse-checkout patterns, which the gate cannot "
                  "read: what they leave out leaves the work tree" % redact_clip(what, 120),
                  uncertain=True)


def _harness_path_hit(ctx, path, mode, what, verb):
    """Why a change of path reaches the harness (an uncertain reason when a path it
    is fed may), or None."""
    if isinstance(path, Found):
        if path.finder is None:
            return reason("`%s` %s what its input names, which may be the harness" % (
                redact_clip(what, 120), verb.split()[0]), uncertain=True)
        hit = ctx.harness_hit(path, "delete") and _find_may_hit_harness(
            path.finder, path, ctx)
        shown = "what %s finds" % path.finder.shown(60)
    elif isinstance(path, Glob) or any(ch in os.path.basename(path) for ch in "*?["):
        hit, shown = _glob_hits_harness(path, mode, ctx), display_path(path, ctx.root)
    else:
        hit, shown = ctx.harness_hit(path, mode), display_path(path, ctx.root)
    if hit:
        return "`%s` %s %s, which belongs to the harness" % (redact_clip(what, 120),
                                                             verb, shown)
    return None


def _harness_commands(ctx, reasons):
    """The first certain reason a command's own judges give (their uncertain ones
    go to reasons)."""
    for cmd in ctx.cmds:
        for found in (_judge_cli(ctx, cmd), _judge_tree_copy(ctx, cmd),
                      _judge_git_worktree(ctx, cmd) if cmd.prog == "git" and _git_parts(
                          cmd)[0] in _GIT_REWRITERS else None,
                      _judge_git_worktree(ctx, cmd.feeds, cmd) if cmd.prog in (
                          "tar", "bsdtar") and cmd.feeds is not None and
                      cmd.feeds.prog == "git" else None,
                      _unknown_writer(ctx, cmd), _target_from_harness(cmd)):
            if found and not getattr(found, "uncertain", False):
                return found
            if found:
                reasons.append(found)
    return None


def predicate_harness(ctx):
    reasons, seen, writes_code = [], set(), {}
    for path, mode, what, cmd in ctx.accesses:
        if mode in ("read", "tree", "symlink") or isinstance(path, Opaque):
            continue
        if mode == "code" and (cmd is None or not _code_writes_files(cmd, writes_code)):
            continue
        if mode == "write" and cmd is not None and isinstance(path, str) and \
                path.endswith("/info/sparse-checkout") and "/.git/" in path:
            found = _sparse_checkout_write(ctx, cmd, path, what)
            if found:
                reasons.append(found)
                continue
        verb = "deletes or moves" if mode == "delete" else (
            "gives a second name to" if mode == "link" else "changes")
        if isinstance(path, Found) and cmd is not None and (_harmless_meta(cmd) or
                                                            _checker_reads(cmd)):
            continue    # find . -type d -exec chmod 755 {} \; keeps the harness working
        mode = "write" if mode in ("meta", "code", "any", "link") else mode
        key = (str(path), mode, id(path.finder) if isinstance(path, Found) else 0)
        if key in seen:
            continue
        seen.add(key)
        found = _harness_path_hit(ctx, path, mode, what, verb)
        if getattr(found, "uncertain", False):
            reasons.append(found)
        elif found is not None:
            return found
    found = _harness_commands(ctx, reasons)
    if found is not None:
        return found
    found = _agents_block_hit(ctx) if _touches_agents(ctx) else None
    return found or estate_ref_tamper(ctx) or _settle(reasons)


def _chmod_mode_harmless(mode, dirs_too):
    """Whether a chmod mode leaves a file (and, when dirs_too, a folder) of the
    harness readable by its owner, and writable by no one else: the hooks still
    run (the clients run them with /bin/sh, so the x bit of a file is no matter)."""
    if mode.isdigit() and len(mode) <= 4 and all(c in "01234567" for c in mode):
        bits = int(mode, 8) & 0o777
        return bool(bits & 0o400) and not bits & 0o022 and (
            not dirs_too or bool(bits & 0o100))
    for clause in mode.split(","):
        who, ops = "", clause
        while ops and ops[0] in "ugoa":
            who, ops = who + ops[0], ops[1:]
        if not ops or ops[0] not in "+-=":
            return False
        op, perms = ops[0], ops[1:]
        if not all(c in "rwxXst" for c in perms):
            return False
        if op == "+":
            if "w" in perms and (not who or set(who) & set("goa")) and who != "":
                return False
            if "s" in perms or "t" in perms:
                return False
        elif set(who or "a") & set("ua"):
            return False    # u-r, a=x, -x: the owner may lose what the hooks need
    return True


def _harmless_meta(cmd):
    """A command run by find -exec or xargs that only sets timestamps (touch) or
    harmless modes (chmod 755, chmod +x) on what it is given."""
    if cmd.prog == "touch":
        return True
    if cmd.prog != "chmod":
        return False
    words = [a for a in cmd.argv[1:] if not isinstance(a, Found)]
    flags = [w for w in words if w.startswith("-") and not w[1:2].isdigit() and
             not set(w[1:]) <= set("rwxXst")]
    modes = [w for w in words if w not in flags]
    if any(f not in ("-R", "-v", "-c", "-f", "--recursive", "--verbose", "--changes",
                     "--silent", "--quiet") for f in flags) or len(modes) != 1:
        return False
    found = [a for a in cmd.argv if isinstance(a, Found)]
    files_only = bool(found) and all(
        a.finder is not None and a.finder.find is not None and
        "-type" in a.finder.argv and "f" in a.finder.argv[a.finder.argv.index("-type") + 1:
                                                         a.finder.argv.index("-type") + 2]
        for a in found)
    return _chmod_mode_harmless(str(modes[0]), dirs_too=not files_only)


def _target_from_harness(cmd):
    """A command that changes a path it reads out of the harness's own files
    (`chmod -x "$(sed ... .notrest/install.json)"`): it may be the interpreter
    the hooks run, or one of their files."""
    if not cmd.subs or not any(ESTATE_DIR + "/" in s for s in cmd.subs):
        return None
    for text, mode in command_paths(cmd):
        if mode not in ("read", "tree") and isinstance(text, Opaque):
            return reason("`%s` changes a path it reads out of the harness's own files: "
                          "it may be the interpreter or a file the hooks run" % cmd.shown(),
                          uncertain=True)
    return None


def _touches_agents(ctx):
    """Whether a call may write the project's AGENTS.md (then its block is read)."""
    tool, ti = ctx.event.tool or "", ctx.event.tool_input
    if tool in FILE_WRITE_TOOLS:
        target = ti.get("file_path")
        return isinstance(target, str) and os.path.basename(target) == "AGENTS.md"
    if tool == "apply_patch" or "patch" in tool.lower():
        return "AGENTS.md" in str(ti.get("command") or ti.get("patch") or ti.get(
            "input") or "")
    return any(mode in ("write", "delete") and str(p).endswith("/AGENTS.md")
               for p, mode, _w, _c in ctx.accesses)


# The estate ref (refs/notrest/...) is written by `notrest sync` alone: the git
# verbs that can move or delete a ref, when they name it or could reach it unseen
# (globbed refspecs, --mirror, ref names from stdin), and the ref files in .git.
_REF_WRITING_GIT = frozenset(("update-ref", "symbolic-ref", "push", "fetch", "send-pack",
                              "notes", "replace", "reflog", "filter-branch",
                              "filter-repo", "branch", "tag", "config"))


def estate_ref_tamper(ctx):
    """Why a call would rewrite or delete the estate ref other than through
    `notrest sync`, else None."""
    git_dir = os.path.join(ctx.root, ".git")
    for path, mode, what, _cmd in ctx.accesses:
        if mode not in ("read", "tree") and (path == os.path.join(git_dir, "packed-refs") or any(
                is_within(path, os.path.join(git_dir, *part)) for part in (
                    ("refs", "notrest"), ("logs", "refs", "notrest")))):
            return "`%s` changes %s, where git keeps the estate ref" % (
                redact_clip(what, 120), display_path(path, ctx.root))
    for cmd in ctx.cmds:
        if cmd.prog == "git":
            sub, args = _git_parts(cmd)
            if sub in _REF_WRITING_GIT and _reaches_estate_ref(sub, args):
                return "`%s` rewrites or deletes the estate ref (refs/notrest/...), " \
                       "which only `notrest sync` writes" % cmd.shown()
    return None


def cli_verb(args):
    """(verb, the words after it) of a notrest command line ("" when none)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--root":
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg, list(args[i + 1:])
    return "", []


def _reaches_estate_ref(sub, args):
    qualified = sub in ("update-ref", "symbolic-ref", "push", "fetch", "send-pack",
                        "reflog", "notes")
    if qualified and any(isinstance(a, (Opaque, Found)) for a in args):
        return True  # a ref name the line cannot know (xargs, read, a substitution)
    for arg in args:
        for part in arg.lstrip("+").split(":"):
            part = part.split("=", 1)[-1]
            if "refs/notrest" in part or (qualified and part.startswith("notrest/")):
                return True
            if "*" in part and sub in ("push", "fetch", "send-pack", "config") and (
                    "refs/notrest/".startswith(part.split("*", 1)[0])):
                return True  # a globbed refspec that covers refs/notrest/
    if sub == "update-ref":
        return "--stdin" in args or not [a for a in args if not a.startswith("-")]
    if sub in ("push", "fetch", "send-pack"):
        return "--mirror" in args
    return sub == "config" and any(a.endswith(".mirror") for a in args)


def _judge_cli(ctx, cmd):
    """Whether a command runs notrest's own CLI beyond the agent's verbs (see
    judge_cli), or notrest's install.sh to uninstall."""
    if cmd.cli is None:
        if cmd.argv and any(os.path.basename(a) == "install.sh" for a in cmd.argv[:3]) \
                and "--uninstall" in cmd.argv:
            return "`%s` removes the harness" % cmd.shown()
        return None
    return _judge_cli_verbs(ctx, cmd)


def _words_cmd(words):
    """A command of words (for option_values on words that are no command)."""
    cmd = Cmd()
    cmd.argv = ["_"] + list(words[1:])
    return cmd


_KNOWN_PROGRAMS = _READERS | frozenset((
    "echo", "printf", "true", "false", "test", "[", "ls", "stat", "file", "wc", "du",
    "basename", "dirname", "realpath", "readlink", "md5sum", "sha1sum", "sha256sum",
    "rm", "unlink", "rmdir", "shred", "mv", "cp", "ln", "install", "rsync", "tee",
    "truncate", "mkdir", "touch", "chmod", "chown", "chgrp", "sed", "perl", "ruby",
    "dd", "git", "patch", "tar", "unzip", "gzip", "gunzip", "sort", "uniq", "rimraf",
    "trash", "python", "python3", "node", "sh", "bash", "xargs", "find", "sleep"))


# Linters, test runners and type checkers given files: they read them (and write
# their caches), unless asked to fix them (the words in the second part).
_FILE_CHECKERS = {
    "pytest": (), "py.test": (), "mypy": (), "pyright": (), "flake8": (), "pylint": (),
    "pyflakes": (), "pycodestyle": (), "pydocstyle": (), "bandit": (), "vulture": (),
    "shellcheck": (), "hadolint": (), "yamllint": (), "codespell": ("-w", "--write-changes"),
    "tsc": (), "jest": ("-u", "--updateSnapshot"), "vitest": ("-u", "--update"),
    "mocha": (), "node": (), "ruff": ("--fix", "format", "--unsafe-fixes"),
    "black": ("--check", "--diff"), "isort": ("--check", "--check-only", "--diff", "-c"),
    "eslint": ("--fix", "--fix-dry-run"), "prettier": ("--check", "-c", "--list-different",
                                                      "-l"),
    "stylelint": ("--fix",), "rubocop": ("-a", "-A", "--auto-correct", "--autocorrect",
                                         "--autocorrect-all"),
    "gofmt": ("-l", "-d"), "golangci-lint": ("--fix",), "clang-format": ("--dry-run", "-n"),
    "pip": (), "pip3": (), "wc": (), "ls": (),
}
# For these the words above are the only read forms (black FILE rewrites FILE).
_CHECKERS_READ_ONLY_WITH = frozenset(("black", "isort", "prettier", "gofmt",
                                      "clang-format"))


def _checker_reads(cmd):
    """Whether cmd is a linter, test runner or checker that only reads the files
    it is given (pip installs what they name)."""
    prog, args = cmd.prog, [a for a in cmd.argv[1:] if not isinstance(a, Found)]
    if prog not in _FILE_CHECKERS:
        return False
    words = _FILE_CHECKERS[prog]
    if prog in _CHECKERS_READ_ONLY_WITH:
        return any(a in words for a in args) and not (prog == "prettier" and (
            "--write" in args or "-w" in args))
    if prog in ("pip", "pip3"):
        return args[:1] in (["install"], ["download"], ["show"]) and not (
            set(args) & {"-t", "--target", "--prefix", "--root", "-e", "--editable"})
    if prog == "node":
        return args[:1] == ["--check"] or args[:1] == ["-c"]
    return not any(a in words or a.startswith(tuple(w + "=" for w in words if
                                                    w.startswith("--")))
                   for a in args)


def _unknown_writer(ctx, cmd):
    """A program the gate does not know, run by xargs or find -exec on what
    may be the harness: an unknown writer."""
    if cmd.prog in _KNOWN_PROGRAMS or not any(isinstance(a, Found) for a in cmd.argv):
        return None
    if _checker_reads(cmd):
        return None
    for arg in cmd.argv:
        if not isinstance(arg, Found):
            continue
        if arg.finder is not None:
            root = ctx.resolve(arg, arg.finder.cwd, True)
            if not (ctx.harness_hit(root, "delete") and _find_may_hit_harness(
                    arg.finder, root, ctx)):
                continue
        return reason("`%s` runs %s on what may be the harness, and the gate cannot "
                      "tell what it writes" % (cmd.shown(), cmd.prog), uncertain=True)
    return None


def _judge_tree_copy(ctx, cmd):
    """A recursive copy or a move of a folder whose contents land over the
    harness (cp -r x/. ., rsync -a x/ ./, mv x ~): what the source holds decides,
    on disk; a source the line cannot show counts as holding everything."""
    if cmd.prog not in ("cp", "mv", "rsync", "scp"):
        return None
    for source, dest, tree in copy_plan(cmd):
        if not tree or source is None or dest is None or isinstance(
                source, (Glob, Found)) or isinstance(dest, (Opaque, Glob)):
            continue
        dest_path = ctx.resolve(dest, cmd.cwd, True)
        source_path = None if isinstance(source, Opaque) else ctx.resolve(source, cmd.cwd,
                                                                           True)
        samples = [os.path.join(ctx.root, s) for s in HARNESS_SAMPLES]
        if ctx.home and ctx.home != "/":
            samples += [os.path.join(ctx.home, s) for s in HOME_HARNESS_SAMPLES]
        for sample in samples:
            if sample == dest_path or not is_within(sample, dest_path) or \
                    not ctx.harness_hit(sample, "write"):
                continue
            rel = sample[len(dest_path.rstrip("/")) + 1:]
            if source_path is None or not os.path.lexists(source_path) or \
                    os.path.lexists(os.path.join(source_path, rel)):
                return "`%s` copies %s over %s, which belongs to the harness" % (
                    cmd.shown(), redact_clip(source, 60), display_path(sample, ctx.root))
    return None


# ---- git commands that rewrite the work tree ---------------------------------

_GIT_REWRITERS = ("checkout", "switch", "restore", "reset", "stash", "read-tree", "clean",
                  "merge", "rebase", "cherry-pick", "revert", "pull", "sparse-checkout",
                  "checkout-index", "filter-repo")


# ---- the notrest block of AGENTS.md ----------------------------------------------


def predicate_pipe_to_shell(ctx):
    for cmd in ctx.cmds:
        prog = cmd.prog
        runs_code = prog in SHELL_NAMES or prog in INTERPRETERS or prog.startswith(
            "python") or prog in ("eval", "source", ".")
        if not runs_code:
            continue
        for sub in cmd.subs:
            if any(c.prog in DOWNLOADERS for c in parse_shell(sub, cmd.cwd)):
                return "`%s` runs code fetched from the network unread" % cmd.shown()
        if cmd.feeds is not None and _reads_program_from_stdin(cmd):
            feeder = cmd.feeds
            while feeder is not None:
                if feeder.prog in DOWNLOADERS:
                    return "`%s | %s` runs code fetched from the network unread" % (
                        feeder.shown(80), cmd.shown())
                feeder = feeder.feeds
    return None


_STDIN_PATHS = ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def _reads_program_from_stdin(cmd):
    args = cmd.argv[1:]
    if cmd.prog in SHELL_NAMES:
        if _shell_script_arg(cmd.argv) is not None:
            return False
        for arg in args:
            if arg in ("-s", "-") or arg in _STDIN_PATHS:
                return True
            if not arg.startswith("-") and not arg.startswith("+"):
                return False
        return True
    for arg in args:
        if arg in ("-c", "-e", "-m", "-E", "--eval", "-r", "-p", "-n"):
            return False
        if arg == "-" or arg in _STDIN_PATHS:
            return True
        if not arg.startswith("-"):
            return False
    return True


def predicate_secret_prompt(ctx):
    prompt = ctx.event.prompt or ""
    found = [f for f in scan_secrets(prompt, ctx.book.secret_rules) if f.sure]
    if found:
        return "the prompt carries what looks like a secret: %s" % describe_secrets(
            prompt, found)
    return None


def predicate_bank(ctx):
    facts = ctx.event.facts
    changed = facts.get("changed_since_note") or []
    if not changed or facts.get("bank_blocks", 0) >= 1:
        return None
    shown = ", ".join(changed[:5]) + (" and %d more" % (len(changed) - 5)
                                      if len(changed) > 5 else "")
    return "you changed %d file%s (%s) and banked no note since" % (
        len(changed), "" if len(changed) == 1 else "s", shown)


PREDICATES = {
    "destroy": predicate_destroy,
    "force-push": predicate_force_push,
    "secrets": predicate_secrets,
    "harness": predicate_harness,
    "pipe-to-shell": predicate_pipe_to_shell,
    "secret-prompt": predicate_secret_prompt,
    "bank": predicate_bank,
}


def _project_law_hit(law, ctx):
    """Reason a project law matches the event (all its matchers must), else None.
    Its regular expressions are matched on text clipped to LAW_TEXT_MAX."""
    event = ctx.event
    said = []
    if law.tool:
        if not event.tool or not law.search("tool", event.tool):
            return None
        said.append("tool %s" % event.tool)
    if law.program or law.command:
        hit = None
        for cmd in ctx.cmds:
            if law.program and cmd.prog not in law.program:
                continue
            if law.command and not law.search("command", cmd.text()):
                continue
            hit = cmd
            break
        if hit is None:
            return None
        said.append("`%s`" % hit.shown(120))
    if law.path:
        mode = law.mode or "write"
        hit = None
        for path, access, what, _cmd in ctx.accesses:
            if mode != "any" and access != "any" and (access in ("read", "tree")) != (
                    mode == "read"):
                continue
            rel = display_path(path, ctx.root)
            if any(glob_match(p, rel) or glob_match(p, path) for p in law.path):
                hit = rel
                break
        if hit is None:
            return None
        said.append("touches %s" % hit)
    if law.prompt:
        if not law.search("prompt", event.prompt or ""):
            return None
        said.append("the prompt matches")
    if law.spawn:
        if event.tool not in SPAWN_TOOLS:
            return None
        ti = event.tool_input
        target = " ".join(str(ti.get(k, "")) for k in ("subagent_type", "agent_type",
                                                        "model", "agent"))
        if not law.search("spawn", target):
            return None
        said.append("spawns %s" % target.strip())
    if event.kind == "Stop" and law.check:
        result = event.facts.get("checks", {}).get(law.id)
        if result is None or result.get("ok"):
            return None
        tail = one_line(result.get("tail", ""), 600)
        lead = "`%s` failed (exit %s)" % (result.get("cmd"), result.get("code"))
        return lead + (": " + tail if tail else "")
    if not said:
        return None
    return ", ".join(said)


def evaluate_law(law, ctx):
    """The reason a law is broken by ctx's event, or None."""
    if law.match:
        if law.match.startswith("pack:"):
            return judge_pack(law, ctx)
        predicate = PREDICATES.get(law.match)
        return predicate(ctx) if predicate else None
    return _project_law_hit(law, ctx)


def decide(book, event):
    """Pure: every verdict the active laws give one event, most severe first. A
    call too large to judge is denied (gate-bounds); a reason the gate is not
    sure of (the target is unknown) asks instead of denying."""
    ctx = GateContext(event, book)
    cli = event.facts.get("cli", "notrest")
    verdicts = []
    if event.kind in ("PreToolUse", "PermissionRequest") and ctx.shell_text and \
            ctx.cmds is not None and ctx.shared.too_large:
        verdicts.append(Verdict("deny", "gate-bounds", "the call is too large to judge: "
                                "%s" % ctx.shared.too_large, GATE_BOUNDS_INSTEAD))
    for law in book.active():
        if event.kind not in law.on:
            continue
        found = evaluate_law(law, ctx)
        if not found:
            continue
        action = "block" if event.kind in ("Stop", "UserPromptSubmit") and \
            law.action in ("deny", "block", "require") else law.action
        if action == "require":
            action = "deny"
        if getattr(found, "uncertain", False) and ACTION_RANK.get(action, 0) > \
                ACTION_RANK["ask"]:
            action = "ask"
        instead = getattr(found, "instead", "") or format_law_text(law.instead, cli)
        if law.id == "bank-before-stop":
            instead = "`%s bank --session %s --note \"what you did\" --next \"what comes " \
                      "next\"`" % (cli, event.session or "ID")
        verdicts.append(Verdict(action, law.id, str(found), instead))
    verdicts.sort(key=lambda v: -ACTION_RANK.get(v.action, 0))
    return verdicts


def apply_overrides(verdicts, overrides, permits, stop_blocks=0, bound=STOP_BLOCK_BOUND,
                    kind=""):
    """Pure: (final verdict, receipts, permit ids used) after overrides and permits."""
    receipts, used = [], []
    final = Verdict("allow")
    for verdict in verdicts:
        if verdict.action in ("allow", "warn"):
            if final.action == "allow" and verdict.action == "warn":
                final = verdict
            continue
        if verdict.law in overrides:
            receipts.append({"law": verdict.law, "by": "NOTREST_OVERRIDE",
                             "reason": verdict.reason})
            continue
        permit = next((p for p in permits if p.get("law") == verdict.law and
                       p.get("id") not in used), None)
        if permit is not None:
            used.append(permit.get("id"))
            receipt = {"law": verdict.law, "by": "permit %s" % permit.get("id"),
                       "who": permit.get("who"), "why": permit.get("why"),
                       "reason": verdict.reason}
            if "tty" in permit:  # the terminal `notrest allow` ran in ("": none)
                receipt["tty"] = permit["tty"]
            receipts.append(receipt)
            continue
        if kind == "Stop" and stop_blocks >= bound:
            receipts.append({"law": verdict.law, "by": "stop bound",
                             "reason": verdict.reason,
                             "stop_allowed_after": stop_blocks})
            continue
        return verdict, receipts, used
    if receipts and final.action == "allow":
        laws = ", ".join(sorted({r["law"] for r in receipts}))
        if any(r.get("stop_allowed_after") for r in receipts):
            final = Verdict("allow", laws, message="notrest: stop allowed after %d "
                            "blocks (%s still unmet); the next session will see it."
                            % (stop_blocks, laws))
        else:
            final = Verdict("allow", laws, message="notrest: override of %s used; the "
                            "receipt is in the journal." % laws)
            if any(r.get("tty") == "" for r in receipts):
                final.message += " Its permit was made with no terminal: if you did " \
                    "not run `notrest allow` yourself, the agent may have (`notrest " \
                    "log` shows it; `notrest install --harden` keeps the agent out)."
    final.receipt = receipts or None
    return final, receipts, used


# ==== packs =================================================================
# Packs are laws for the tools that destroy what no file system keeps: work git
# has not stored yet, databases, containers and clusters, clouds, infrastructure
# and secret stores (on by default), and more families laws.json can turn on.
# A pack judges only the commands whose program it knows: the gate tests the
# parsed commands' program names against one frozenset (the active packs'
# programs) before any pack runs, then the pack's trigger words; only a command
# that passes both loads the judges, which live below the cold line (section
# "pack judges"). An ordinary call pays a set test. Read-only and reversible
# forms pass; git-discard asks git (one bounded call) whether the command has
# anything to lose.

PACK_ON = ("PreToolUse", "PermissionRequest")
GIT_PROBE_TIMEOUT_S = 2.0
PACK_FILE_CAP = 256 * 1024
RUNNERS = frozenset(("npx", "bunx", "pnpx", "pnpm", "yarn", "uvx", "pipx", "bundle",
                     "poetry", "uv", "pdm", "npm"))

PACKS = (
    {"id": "git-discard", "default": True,
     "programs": ("git",),
     "text": "Never throw away work git has not stored: reset --hard, checkout or "
             "restore of changed files, clean -f, stash drop/clear and branch -D are "
             "denied when there is something to lose.",
     "instead": "keep the work first (`git stash push` for changes, `git clean -n` to "
                "see what clean would delete, `git stash list` before a drop), or ask "
                "the user; the same command passes once there is nothing to lose",
     "denies": "`git reset --hard` with uncommitted changes",
     "allows": "`git reset --hard` on a clean tree, `git stash`"},
    {"id": "databases", "default": True,
     "programs": ("psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb", "sqlcmd",
                  "clickhouse-client", "clickhouse", "cqlsh", "cockroach", "pgcli",
                  "mycli", "litecli", "usql", "snowsql", "mssql-cli", "trino",
                  "beeline", "spark-sql", "dropdb", "mysqladmin", "redis-cli",
                  "valkey-cli", "keydb-cli", "mongosh", "mongo", "mongorestore",
                  "pg_restore", "influx", "algolia", "prisma", "rails", "rake",
                  "manage.py", "django-admin", "artisan", "flyway", "supabase",
                  "docker", "podman", "kubectl", "curl", "wget", "http", "https",
                  "xh", "curlie", "DROP", "drop", "Drop", "TRUNCATE", "truncate",
                  "DELETE", "delete", "Delete", "UPDATE", "ALTER", "alter",
                  "kafka-topics", "kafka-topics.sh", "kafka-delete-records",
                  "kafka-delete-records.sh", "kafka-consumer-groups",
                  "kafka-consumer-groups.sh", "kafka-acls", "kafka-acls.sh",
                  "kafka-configs", "kafka-configs.sh", "rpk", "nats", "rabbitmqctl",
                  "rabbitmqadmin", "pulsar-admin", "python", "python3", "php", "node",
                  "ruby", "deno", "bun") + tuple(RUNNERS),
     "text": "Never destroy stored data: DROP, TRUNCATE, DELETE/UPDATE without WHERE "
             "(psql -c, mysql -e, heredocs, piped files), dropdb, FLUSHALL, mongo "
             "drop(), index DELETEs, Kafka/NATS/RabbitMQ deletes.",
     "instead": "read first (`psql -c \"SELECT count(*) FROM t\"`), keep a copy "
                "(`pg_dump DB > /tmp/db.sql`), and ask the user to run the drop",
     "denies": "`psql -c \"DROP TABLE users\"`, `redis-cli FLUSHALL`",
     "allows": "`psql -c \"SELECT * FROM users\"`, `DELETE … WHERE id = 1`"},
    {"id": "containers", "default": True,
     "programs": ("docker", "podman", "nerdctl", "finch", "docker-compose",
                  "podman-compose", "kubectl", "oc", "kubecolor", "helm", "velero"),
     "text": "Never remove container data or cluster objects: docker volume prune/rm, "
             "system prune --volumes/-a, rm -f, compose down -v, kubectl delete (but "
             "of pods and jobs), helm uninstall, velero delete.",
     "instead": "look first (`docker ps -a`, `kubectl get all`), delete one named "
                "pod or container you made, and ask the user for the rest",
     "denies": "`docker system prune -a --volumes`, `kubectl delete ns prod`",
     "allows": "`docker ps`, `kubectl get pods`, `kubectl delete pod web-1`"},
    {"id": "cloud", "default": True,
     "programs": ("aws", "gcloud", "gsutil", "az", "azcopy", "doctl", "mc", "wrangler",
                  "fly", "flyctl", "heroku", "vercel", "netlify", "firebase", "s3cmd",
                  "s5cmd", "b2", "hcloud", "linode-cli", "oci", "ibmcloud", "scw",
                  "rclone", "nsupdate") + tuple(RUNNERS),
     "text": "Never delete cloud resources: buckets and objects (aws s3 rm/rb, "
             "gsutil rm, rclone purge/sync), instances, databases, stacks, projects "
             "(delete-*/terminate-*, gcloud/az ... delete).",
     "instead": "list or describe first (`aws s3 ls`, `gcloud projects list`) and "
                "ask the user to run the delete",
     "denies": "`aws s3 rm s3://b --recursive`, `gcloud projects delete p`",
     "allows": "`aws s3 ls`, `aws ec2 describe-instances`"},
    {"id": "iac", "default": True,
     "programs": ("terraform", "tofu", "terragrunt", "pulumi", "cdk", "cdktf",
                  "serverless", "sls", "sam") + tuple(RUNNERS),
     "text": "Never destroy infrastructure: terraform/tofu destroy or apply "
             "-destroy, state rm, pulumi destroy or stack rm, cdk destroy, "
             "serverless remove.",
     "instead": "show what it would do (`terraform plan -destroy`, `pulumi preview "
                "--diff`) and ask the user to apply it",
     "denies": "`terraform destroy -auto-approve`",
     "allows": "`terraform plan`, `terraform plan -destroy`"},
    {"id": "secret-managers", "default": True,
     "programs": ("vault", "op", "doppler", "bw", "infisical", "aws", "gcloud", "az"),
     "text": "Never delete secrets for good: vault kv destroy/delete, secrets "
             "disable, op/doppler delete, secretsmanager delete-secret without a "
             "recovery window, ssm delete-parameter, Key Vault purge.",
     "instead": "read or list it (`vault kv get PATH`, `op item get NAME`), or "
                "schedule a recoverable delete (`aws secretsmanager delete-secret "
                "--secret-id ID --recovery-window-in-days 30`), and ask the user",
     "denies": "`vault kv destroy -versions=1 secret/app`",
     "allows": "`vault kv get secret/app`, `aws secretsmanager delete-secret --secret-id "
               "x` (30 days to restore)"},
    {"id": "backups", "default": False,
     "programs": ("restic", "borg", "borgmatic", "kopia", "duplicity", "tarsnap"),
     "text": "Never delete backups: restic forget/prune, borg delete/prune/compact, "
             "kopia snapshot delete, duplicity remove-*.",
     "instead": "list them (`restic snapshots`, `borg list REPO`) and ask the user",
     "denies": "`restic forget --keep-last 1 --prune`",
     "allows": "`restic snapshots`, `borg list REPO`"},
    {"id": "platforms", "default": False,
     "programs": ("gh", "glab", "hub", "circleci", "jenkins-cli", "java",
                  "gitlab-runner", "gitlab-rails", "gitlab-rake"),
     "text": "Never delete what lives on a code host or CI: gh repo delete/archive, "
             "release, secret or cache delete, gh/glab api -X DELETE, CI contexts, "
             "jobs, runners.",
     "instead": "view it (`gh repo view`, `glab ci list`) and ask the user",
     "denies": "`gh repo delete owner/repo --yes`",
     "allows": "`gh repo view`, `gh pr create`"},
    {"id": "services", "default": False,
     "programs": ("curl", "wget", "http", "https", "xh", "curlie", "stripe", "square",
                  "ldcli", "split", "unleash", "flipt", "fastly", "datadog-ci",
                  "newrelic", "pd", "apigeecli", "deck", "splunk", "twilio"),
     "text": "Never delete through a service's API: HTTP DELETE requests and "
             "delete endpoints (curl -X DELETE …), and the delete verbs of SaaS CLIs "
             "(stripe, fastly, launchdarkly, pagerduty, …).",
     "instead": "GET it first (`curl -fsS URL`) and ask the user to delete it",
     "denies": "`curl -X DELETE https://api.example.com/v1/customers/42`",
     "allows": "`curl https://api.example.com/v1/customers/42`"},
    {"id": "remote", "default": False,
     "programs": ("ssh", "rsync", "scp", "ssh-keygen"),
     "text": "Never delete on other machines or by mirroring: rm, find -delete or git "
             "discards run through ssh, rsync --delete or --remove-source-files, scp "
             "into system folders, ssh-keygen -R.",
     "instead": "copy without deleting (`rsync -a src/ dest/`), look first over ssh "
                "(`ssh HOST ls PATH`), and ask the user",
     "denies": "`rsync -a --delete src/ host:/srv/`, `ssh host 'rm -rf /srv/app'`",
     "allows": "`rsync -a src/ dest/`, `ssh host uptime`"},
    {"id": "system", "default": False,
     "programs": ("systemctl", "service", "shutdown", "reboot", "halt", "poweroff",
                  "init", "telinit", "iptables", "ip6tables", "nft", "ufw", "userdel",
                  "deluser", "groupdel", "passwd", "crontab", "kill", "nginx",
                  "launchctl", "rm", "mv", "cp", "tee", "sed", "install", "ln",
                  "truncate", "unlink", "rmdir", "shred", "dd", "touch", "echo",
                  "printf", "cat"),
     "text": "Never stop the machine or its services, flush its firewall, delete its "
             "users or crontab, or write and delete in system folders (/etc, /usr, "
             "/boot, /var).",
     "instead": "read its state (`systemctl status NAME`, `cat /etc/FILE`) and ask the "
                "user to change it",
     "denies": "`systemctl stop nginx`, `crontab -r`, `rm /etc/nginx/nginx.conf`",
     "allows": "`systemctl status nginx`, `crontab -l`"},
    {"id": "packages", "default": False,
     "programs": ("npm", "pnpm", "yarn", "bun", "cargo", "twine", "poetry", "uv",
                  "flit", "hatch", "gem", "mvn", "mvnw", "gradle", "gradlew", "dotnet"),
     "text": "Never publish or withdraw packages: npm publish/unpublish, cargo "
             "publish/yank, twine upload, poetry/uv publish, gem push/yank, mvn "
             "deploy, gradle publish.",
     "instead": "dry-run it (`npm publish --dry-run`, `cargo publish --dry-run`) and "
                "ask the user to publish",
     "denies": "`npm publish`, `cargo yank --version 1.0.0`",
     "allows": "`npm publish --dry-run`, `npm install`"},
    {"id": "strict-git", "default": False,
     "programs": ("git",),
     "text": "Push to a protected branch only through review, and force-push only "
             "with a lease (--force-with-lease) to any branch.",
     "instead": "push your branch (`git push -u origin HEAD:refs/heads/my-branch`) and "
                "open a review; rewrite only with `--force-with-lease`",
     "denies": "`git push origin main`, `git push --force origin feature`",
     "allows": "`git push --force-with-lease origin feature`"},
)
PACK_IDS = ("git-discard", "databases", "containers", "cloud", "iac", "secret-managers",
            "backups", "platforms", "services", "remote", "system", "packages",
            "strict-git")


def pack_laws():
    """One law per pack (its state is set by build_lawbook from laws.json)."""
    laws = []
    for pack in PACKS:
        law = Law({"id": pack["id"], "on": list(PACK_ON), "action": "deny",
                   "match": "pack:" + pack["id"], "text": pack["text"],
                   "instead": pack["instead"]}, source="pack")
        law.disabled = not pack["default"]
        laws.append(law)
    return laws


def apply_pack_states(book, doc_packs):
    """Switch packs on or off from laws.json's {"packs": {id: bool}}."""
    if doc_packs is None:
        return
    if not isinstance(doc_packs, dict):
        book.problems.append("`packs` must be an object of pack ids to true or false")
        return
    for name, state in sorted(doc_packs.items()):
        law = book.get(name)
        if name not in PACK_IDS or law is None:
            book.problems.append("`packs` names %r, which is no pack (packs: %s)" % (
                name, ", ".join(PACK_IDS)))
        elif not isinstance(state, bool):
            book.problems.append("`packs.%s` must be true or false" % name)
        elif name not in book.disabled:
            law.disabled = not state


def pack_states(book):
    """Every pack with its state and why (for `notrest laws`)."""
    out = []
    for pack in PACKS:
        law = book.get(pack["id"])
        on = law is not None and not law.disabled
        if law is not None and law.id in book.disabled:
            why = "(laws.json disable)"
        elif on != pack["default"]:
            why = "(laws.json packs)"
        else:
            why = "(default)"
        out.append({"id": pack["id"], "on": on, "default": pack["default"], "why": why,
                    "text": pack["text"], "denies": pack["denies"],
                    "allows": pack["allows"], "programs": list(pack["programs"])})
    return out


def active_pack_programs(book):
    """The program names any active pack judges (the gate's one pre-filter)."""
    names = set()
    for pack in PACKS:
        law = book.get(pack["id"])
        if law is not None and not law.disabled and law.source == "pack":
            names.update(pack["programs"])
    return frozenset(names)


def _git_globals(argv):
    """(global options to pass on, index of the subcommand) of a git argv."""
    keep, i = [], 1
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        if arg in ("-C", "--git-dir", "--work-tree") and i + 1 < len(argv):
            keep += [arg, argv[i + 1]]
            i += 2
            continue
        if arg.startswith(("--git-dir=", "--work-tree=")):
            keep.append(arg)
        elif arg in ("-c", "--namespace", "--exec-path", "--super-prefix",
                     "--config-env"):
            i += 1
        elif arg.startswith("-C") and len(arg) > 2:
            keep += ["-C", arg[2:]]
        i += 1
    return keep, i


_GIT_DISCARD_VALUES = {
    "checkout": ("bB", ("--orphan", "--conflict", "--unified", "--inter-hunk-context")),
    "switch": ("cC", ("--orphan", "--conflict", "--create", "--force-create")),
    "restore": ("sU", ("--source", "--conflict", "--unified", "--inter-hunk-context",
                       "--pathspec-from-file")),
    "clean": ("e", ("--exclude",)),
    "branch": ("u", ("--set-upstream-to", "--contains", "--no-contains", "--merged",
                     "--no-merged", "--points-at", "--format", "--sort")),
    "rm": ("", ("--pathspec-from-file",)),
    "worktree": ("", ("--reason",)),
}


def git_options(sub, args):
    """(short letters, long names, positional words, words after --) of a git
    subcommand's arguments; the values of its options are neither letters nor words."""
    value_short, value_long = _GIT_DISCARD_VALUES.get(sub, ("", ()))
    letters, longs, words, i = set(), set(), [], 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return letters, longs, words, args[i + 1:]
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            longs.add(name)
            if name in value_long and "=" not in arg:
                i += 1
        elif arg.startswith("-") and len(arg) > 1:
            for k, letter in enumerate(arg[1:]):
                letters.add(letter)
                if letter in value_short:
                    if k == len(arg) - 2:
                        i += 1
                    break
        else:
            words.append(arg)
        i += 1
    return letters, longs, words, []


def _git_forced(letters, longs):
    return "f" in letters or "--force" in longs


def _discard_reset(letters, longs, words, after, args):
    if longs & {"--hard", "--merge"}:
        return "tracked", "git reset --hard", []
    return None


def _discard_checkout(letters, longs, words, after, args):
    if _git_forced(letters, longs):
        return "tracked", "git checkout --force", []
    if "--pathspec-from-file" in longs:
        return "tracked", "git checkout --pathspec-from-file", []
    if letters & set("bB") or "--orphan" in longs:
        return None
    if after or "--" in args:
        return "tracked", "git checkout -- PATH", after or ["."]
    return ("tracked", "git checkout PATH", words) if words else None


def _discard_switch(letters, longs, words, after, args):
    if "f" in letters or longs & {"--force", "--discard-changes"}:
        return "tracked", "git switch --discard-changes", []
    return None


def _discard_restore(letters, longs, words, after, args):
    if ("S" in letters or "--staged" in longs) and not (
            "W" in letters or "--worktree" in longs):
        return None
    if "--pathspec-from-file" in longs:
        return "tracked", "git restore", []
    paths = words + after
    if not paths and not ("p" in letters or "--patch" in longs):
        return None
    return "tracked", "git restore", paths


def _discard_clean(letters, longs, words, after, args):
    if "n" in letters or "i" in letters or longs & {"--dry-run", "--interactive"}:
        return None
    if not _git_forced(letters, longs):
        return None
    return ("ignored" if letters & set("xX") else "untracked"), "git clean -f", \
        words + after


def _discard_stash(letters, longs, words, after, args):
    if words[:1] in (["drop"], ["clear"]):
        return "stash", "git stash " + words[0], []
    return None


def _discard_branch(letters, longs, words, after, args):
    forced = _git_forced(letters, longs)
    deleting = "D" in letters or (("d" in letters or "--delete" in longs) and forced)
    if deleting and words:
        return "branch", "git branch -D", words
    if forced and words and not ("d" in letters or "--delete" in longs) and not (
            letters & set("mMcC")):
        return "branch", "git branch --force", words[:1]
    return None


def _discard_rm(letters, longs, words, after, args):
    if _git_forced(letters, longs) and "--cached" not in longs:
        return "tracked", "git rm --force", words + after
    return None


def _discard_worktree(letters, longs, words, after, args):
    if words[:1] == ["remove"] and _git_forced(letters, longs) and len(words) > 1:
        return "worktree", "git worktree remove --force", words[1:2]
    return None


# git subcommand -> what it discards, from (letters, longs, words, after, args)
_GIT_DISCARDS = {"reset": _discard_reset, "checkout": _discard_checkout,
                 "switch": _discard_switch, "restore": _discard_restore,
                 "clean": _discard_clean, "stash": _discard_stash,
                 "branch": _discard_branch, "rm": _discard_rm,
                 "worktree": _discard_worktree}


def git_discard_plan(argv):
    """What a git command would throw away, for the probe: (kind, what, names)
    with kind "tracked" (changes to tracked files in the paths `names`, [] = the
    whole tree), "untracked"/"ignored" (files git clean removes), "stash", "branch"
    (names = branches) or "worktree" (names = its folder); None when it discards
    nothing."""
    _, i = _git_globals(argv)
    if i >= len(argv):
        return None
    sub, args = argv[i], argv[i + 1:]
    discard = _GIT_DISCARDS.get(sub)
    if discard is None:
        return None
    letters, longs, words, after = git_options(sub, args)
    if "h" in letters or "--help" in longs:
        return None
    return discard(letters, longs, words, after, args)


_HTTP = ("curl", "wget", "http", "https", "xh", "curlie")
_SQL_AS_COMMAND = ("DROP", "drop", "Drop", "TRUNCATE", "truncate", "DELETE", "delete",
                   "Delete", "UPDATE", "ALTER", "alter")
_SDK_STEMS = ("deleteindex(", "clearobjects(", "dropdatabase(", "drop_database(",
              "flushall(", "flushdb(", "delete_index(", "indices.delete(",
              ".drop_collection(", "droptable(", "drop_table(")
_DATA_STEMS = ("drop", "trunc", "delet", "del ", "updat", "alter", "flush", "remov",
               "purge", "reset", "clear", "clean", "forget", "db:", "migrate:", " rm",
               "trim-prefix", ".sql", ".js", ".cql", ".redis", ".read", "source ",
               "--file", " -f", " -i", "--queries", "--execute")
_INPUT_CLIENTS = frozenset(("psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb",
                            "sqlcmd", "clickhouse-client", "clickhouse", "cqlsh",
                            "cockroach", "pgcli", "mycli", "litecli", "usql", "snowsql",
                            "mssql-cli", "trino", "beeline", "spark-sql", "redis-cli",
                            "valkey-cli", "keydb-cli", "mongosh", "mongo"))
# Per pack: programs it always judges, programs whose input (a redirection, a
# heredoc, a pipe) is enough to judge them, and the words (lower-case substrings
# of the command line, per program or "*") without which it has nothing to deny.
PACK_TRIGGERS = {
    "databases": (frozenset(_SQL_AS_COMMAND + ("dropdb", "pg_restore", "mongorestore")),
                  _INPUT_CLIENTS, dict({p: ("delete", "clear") for p in _HTTP},
                             python=("manage.py", "django-admin") + _SDK_STEMS,
                             python3=("manage.py", "django-admin") + _SDK_STEMS,
                             php=("artisan",), node=_SDK_STEMS, ruby=_SDK_STEMS,
                             deno=_SDK_STEMS, bun=_SDK_STEMS,
                             **{"*": _DATA_STEMS})),
    "containers": (frozenset(), frozenset(), {"*": ("prune", " rm", "rmi", "delet", "uninst",
                                              "reset", "down", "remov", " un", " del",
                                              "drain", "secret")}),
    "cloud": (frozenset(), frozenset(("nsupdate",)), {"*": (
        "delet", "termin", "remov", "purge", "dereg", "destroy", " rm", " rb", "sync",
        "close-", "schedule-key", "unsubscribe", "untag", "undeploy", "rollback",
        "mirror", "admin", "reset", "wipe", "move", " del", "cleanup", "dedupe",
        "change-resource-record-sets")}),
    "iac": (frozenset(), frozenset(), {"*": ("destroy", " rm", "delet", "remov", " down")}),
    "secret-managers": (frozenset(), frozenset(), {"*": ("delet", "destroy", "disable",
                                                   "revoke", "purge", "schedule-key",
                                                   "remov", "get-secret-value")}),
    "backups": (frozenset(("tarsnap",)), frozenset(), {"*": (
        "forget", "prune", "remov", "delet", "compact", "recreate", "break-lock",
        "unlock", "cleanup")}),
    "platforms": (frozenset(), frozenset(), {"*": ("delet", "archive", "remov", "unregister",
                                             "disable", "destroy", "backup:restore")}),
    "services": (frozenset(), frozenset(), dict({p: ("delete", "mutation") for p in _HTTP}, **{
        "*": ("delet", "remov", " rm", "destroy", "purge", "archive", "kill", "roll",
              "reset", "uninst", "sync", "clean", "clear")})),
    "remote": (frozenset(("scp", "ssh-keygen", "rsync")), frozenset(), {"*": (
        "rm", "find", "git", "dd", "mkfs", "wipefs", "shred", "unlink")}),
    "system": (frozenset(PACKS[PACK_IDS.index("system")]["programs"]) - frozenset((
        "echo", "printf", "cat")), frozenset(("echo", "printf", "cat")), {}),
    "packages": (frozenset(), frozenset(), {"*": ("publish", "yank", "upload", "deploy",
                                            "release:perform", "nuget", " push")}),
    "strict-git": (frozenset(), frozenset(), {"*": ("push",)}),
}


def pack_triggered(pack_id, cmd):
    """Whether a command of one of the pack's programs may be one it denies: a
    cheap look at its words, so that `git status` or `docker ps` never loads the
    judges. It must hold for every command a judge denies (the tests check that on
    every corpus case)."""
    if pack_id == "git-discard":
        return git_checkout_refined(git_discard_plan(git_fed_argv(cmd)[0]),
                                    cmd) is not None
    always, by_input, stems = PACK_TRIGGERS[pack_id]
    if cmd.prog in always or (cmd.prog in by_input and (cmd.feeds is not None or
                                                        cmd.redirects)):
        return True
    text = " ".join(cmd.argv).lower()
    return any(stem in text for stem in stems.get(cmd.prog, stems.get("*", ())))


def git_fed_argv(cmd):
    """(argv, unknown) of a git command with the words xargs feeds it appended when
    the line shows them (echo/printf before the pipe); unknown when it does not."""
    if "xargs" not in cmd.via or cmd.feeds is None:
        return cmd.argv, False
    feeder = cmd.feeds
    if feeder.prog in ("echo", "printf"):
        text = " ".join(a for a in feeder.argv[1:] if not a.startswith("-"))
        return cmd.argv + text.replace("\\n", " ").split(), False
    return cmd.argv + ["<piped>"], True


def git_checkout_refined(plan, cmd):
    """`git checkout WORD…` restores paths only when WORD is not a branch or commit
    (a switch keeps local changes): the plan without the words that are refs, or
    None when nothing is left to restore."""
    if plan is None or plan[1] != "git checkout PATH":
        return plan
    words = plan[2]
    known = _git_ref_known(cmd, words[0])
    if known is None:
        return None
    if known:
        words = words[1:]
    return (plan[0], plan[1], words) if words else None


def _git_ref_known(cmd, name):
    """Whether name is a ref or commit of the repository cmd runs in (read from the
    files of .git, no git call); None when there is no repository."""
    if name in ("-", "HEAD", "@", "FETCH_HEAD", "ORIG_HEAD") or name.startswith("@{") or (
            7 <= len(name) <= 40 and all(c in "0123456789abcdef" for c in name)):
        return True
    keep, _ = _git_globals(cmd.argv)
    folder = cmd.cwd or "/"
    for k in range(0, len(keep) - 1, 2):
        if keep[k] == "-C":
            folder = os.path.join(folder, keep[k + 1])
    gitdir = None
    while True:
        candidate = os.path.join(folder, ".git")
        if os.path.isdir(candidate):
            gitdir = candidate
            break
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8", errors="replace") as handle:
                    line = handle.read(4096).strip()
            except OSError:
                return False
            if line.startswith("gitdir:"):
                gitdir = os.path.join(folder, line[7:].strip())
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    dirs = [gitdir]
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            dirs.append(os.path.join(gitdir, handle.read(4096).strip()))
    except OSError:
        pass
    refs = ("refs/heads/" + name, "refs/remotes/" + name, "refs/tags/" + name)
    for folder in dirs:
        if any(os.path.isfile(os.path.join(folder, ref)) for ref in refs):
            return True
        try:
            with open(os.path.join(folder, "packed-refs"), "rb") as handle:
                packed = handle.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        if any(" %s\n" % ref in packed + "\n" for ref in refs):
            return True
    return False


def judge_pack(law, ctx):
    """The reason a pack law is broken by ctx's call, else None. The one
    pre-filter first: does any parsed command run a program an active pack knows?
    Then the pack's trigger words; only then the judges (in the cold part of the
    module, loaded for such a call only)."""
    book = ctx.book
    if book.pack_programs is None:
        book.pack_programs = active_pack_programs(book)
    cmds = ctx.cmds
    if not cmds or book.pack_programs.isdisjoint([cmd.prog for cmd in cmds]):
        return None
    pack = PACKS[PACK_IDS.index(law.match[5:])]
    suspects = [cmd for cmd in cmds if cmd.prog in pack["programs"] and
                pack_triggered(pack["id"], cmd)]
    if not suspects:
        return None
    judge = globals().get("judge_pack_commands")
    if judge is None:  # the hot part alone: the judges are below the cold line
        loader = globals().get("readers") or cold_module
        judge = loader().judge_pack_commands
    return judge(pack["id"], suspects, ctx)


# ==== estate storage ========================================================
# Every replace goes through write_atomic; every append through append_record.

ESTATE_GITIGNORE = """# notrest: runtime state is local; the code, hooks and laws.json may be shared
journal/
sessions/
learned/
index.json
threads.jsonl
permits.json
acks.json
config.json
install.json
view.html
sync/
__pycache__/
*.lock
.*.lock
*.tmp.*
*.damaged-*
"""


class Estate:
    """The .notrest/ folder of one project."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.dir = os.path.join(self.root, ESTATE_DIR)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def journal(self, session):
        return self.path("journal", session + ".jsonl")

    def record(self, session):
        return self.path("sessions", session + ".json")

    def exists(self):
        return os.path.isdir(self.dir)


def data_dir(env=None):
    """notrest's per-user folder outside every project, owned by the person: the
    pristine copies and manifests of installed harnesses, the key that signs the
    bytecode caches, the machine id. $NOTREST_DATA_DIR, else $XDG_DATA_HOME/notrest,
    else ~/.local/share/notrest."""
    env = os.environ if env is None else env
    explicit = env.get("NOTREST_DATA_DIR")
    if explicit and explicit.startswith("/"):
        return os.path.normpath(explicit)
    xdg = env.get("XDG_DATA_HOME")
    if xdg and xdg.startswith("/"):
        return os.path.join(os.path.normpath(xdg), "notrest")
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".local", "share", "notrest")


def sha256_hex(data):
    """sha256 without hashlib on a hook's path (importing it loads OpenSSL: +4 ms,
    +4 MB)."""
    for name in ("_sha2", "_sha256"):
        try:
            return __import__(name).sha256(data).hexdigest()
        except (ImportError, AttributeError):
            continue
    import hashlib
    return hashlib.sha256(data).hexdigest()


_STORES = {}


def project_store(root, env=None):
    """The folder under data_dir() that belongs to one installed project (its
    pristine copy and manifest), named by a 64-bit FNV-1a hash of the project's
    real path (a session hook loads no hash module for it); a store named as
    installs before it named them (the path's sha256) is used while it is there."""
    key = (root, data_dir(env))
    if key not in _STORES:
        real = os.path.realpath(root).encode("utf-8", "surrogateescape")
        folder = os.path.join(key[1], "projects")
        store = os.path.join(folder, "%016x" % fnv1a64(real))
        if not os.path.isdir(store):
            older = os.path.join(folder, sha256_hex(real)[:16])
            store = older if os.path.isdir(older) else store
        _STORES[key] = store
    return _STORES[key]


def fnv1a64(data):
    """FNV-1a, 64 bits, of bytes: a stable name, not a secret or a signature."""
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


# ---- the generated modules and their bytecode (write_modules writes them) ----
# Here, not with install, because ring 3 judges them from the warm part.

def pycache_prefix(env=None):
    """Where the hooks' bytecode lives: data_dir()/pycache, the sys.pycache_prefix
    the launchers import with. It is outside every project, and the agent's tools
    cannot write it (protect-harness and the hardened sandboxes guard data_dir())."""
    return os.path.join(data_dir(env), "pycache")


def part_module(code_dir, part):
    """The module a launcher imports for one part: the generated notrest_hot.py or
    notrest_warm.py beside notrest.py, or notrest.py itself for "all"."""
    return os.path.join(os.path.abspath(code_dir), "notrest.py" if part == "all" else
                        "notrest_%s.py" % part)


# The launchers run the interpreter with -OO: bytecode without docstrings (notrest
# reads none, and has no assert) is smaller, and unmarshalling it is most of a
# hook's load. Install compiles it with -X no_debug_ranges (no column tables);
# the launchers do not pass that flag, which costs a hook 9% more instructions
# (CPython strips the tables again from each code object it loads).
HOOK_OPTIMIZE = 2


def pyc_of(source, env=None, tag=None):
    """The bytecode file the hooks' import reads and writes for source under
    pycache_prefix(env) (importlib's cache_from_source with sys.pycache_prefix,
    at the hooks' optimization level)."""
    head, base = os.path.split(os.path.abspath(source))
    return os.path.join(pycache_prefix(env), head.lstrip("/"), "%s.%s.opt-%d.pyc" % (
        base[:-3], tag or sys.implementation.cache_tag, HOOK_OPTIMIZE))


def hot_cache_path(code_dir, part="hot", env=None):
    """The bytecode of one part's module (hot, warm, all) that the hooks import."""
    return pyc_of(part_module(code_dir, part), env)


GENERATED_TRAILER = "\n# notrest: generated from notrest.py (its text above the %r line) " \
    "by install and tests/regenerate.py. Edit notrest.py, never this file.\n"


def part_text(text, part):
    """The text of one part's generated module: notrest.py's text above the part's
    cut line, so that its line numbers are notrest.py's, and a trailer that says
    so; None when the text has no such line."""
    cut = text.find(MODULE_PARTS[part])
    return None if cut < 0 else text[:cut + 1] + GENERATED_TRAILER % \
        MODULE_PARTS[part].strip()


def find_root(start):
    """The nearest folder at or above `start` that holds a .notrest/ estate."""
    path = os.path.abspath(start)
    while True:
        if os.path.isdir(os.path.join(path, ESTATE_DIR)):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _ensure_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise NotrestError("a file stands where a folder is needed", path,
                           "move it aside and run again")


def write_atomic(path, text, durable=True):
    """Replace a file whole: temp file in the same folder, rename. durable adds the
    fsyncs that survive a power loss; views the journal can rebuild skip them (a
    killed process still leaves the old file or the new one, never half of one)."""
    folder = os.path.dirname(path)
    _ensure_dir(folder)
    tmp = "%s.tmp.%d.%d" % (path, os.getpid(), int(time.monotonic() * 1e6) % 1000000)
    data = text.encode("utf-8")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            exc.filename = path
        raise
    if not durable:
        return
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _crc(text):
    """Adler-32 of the UTF-8 body: detects a torn or damaged line (not an attacker).
    Writing one line computes it with builtins (a hook imports no zlib for it);
    reading many lines uses zlib's, the same number."""
    from _operator import mul
    data = text.encode("utf-8")
    size = len(data)
    low = (1 + sum(data)) % 65521
    high = (size + sum(map(mul, data, range(size, 0, -1)))) % 65521
    return "%08x" % ((high << 16) | low)


def _crc_fast(text):
    try:
        zlib = _extension("zlib")
    except ImportError:
        return _crc(text)
    return "%08x" % zlib.adler32(text.encode("utf-8"))


def encode_line(record):
    """One self-checking journal line: the JSON body with its CRC as last member."""
    body = json_dumps(record)
    if body == "{}":
        raise ValueError("an empty record cannot be journaled")
    return '%s,"~":"%s"}\n' % (body[:-1], _crc(body))


def decode_line(line):
    """The record of one journal line, or None when the line is torn or damaged."""
    line = line.rstrip("\r\n")
    if len(line) < 18 or not line.endswith('"}') or line[-16:-10] != ',"~":"':
        return None
    body = line[:-16] + "}"
    if _crc_fast(body) != line[-10:-2]:
        return None
    try:
        record = json_loads(body)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def lock_whole(fd):
    """Wait for an exclusive lock on the whole of an open file (opened for writing,
    its offset at 0): a POSIX record lock (os.lockf), with no extension module to
    load on a hook's path (fcntl: ~0.3 ms). It is the process's: released when it
    dies or closes any fd of that file, so a holder never opens the file twice."""
    os.lockf(fd, os.F_LOCK, 0)


class _Lock:
    """An exclusive lock on a lock file (lock_whole; released on exit and on
    process death)."""

    def __init__(self, path):
        self.path, self.fd = path, None

    def __enter__(self):
        _ensure_dir(os.path.dirname(self.path))
        self.fd = _open_for_append(self.path, os.O_RDWR | os.O_CREAT)
        lock_whole(self.fd)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _open_for_append(path, flags):
    """An fd on a regular file (created when absent), never through a symlink and
    never on a FIFO or a device that would swallow or block the write."""
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_CLOEXEC", 0), 0o644)
    st = os.fstat(fd)
    if st.st_mode & 0o170000 != 0o100000:
        os.close(fd)
        raise NotRegularFile(path, file_kind(st.st_mode))
    return fd


CLI_WRITER = []  # main() marks the process: what it journals the CLI wrote, not a hook


def append_record(path, record):
    """Append one record as one line: secrets redacted, O_APPEND, locked
    (lock_whole), a single write(). A journal record the CLI writes says so: by
    "cli", and inside (did the command run under the session's own live client?)."""
    if CLI_WRITER and "by" not in record:
        record = dict(record, by="cli")
    if record.get("by") == "cli" and "inside" not in record and path.endswith(
            ".jsonl") and os.path.basename(os.path.dirname(path)) == "journal":
        record = dict(record, inside=cold_module().cli_writer_inside(path))
    line = encode_line(redact_record(record)).encode("utf-8")
    _ensure_dir(os.path.dirname(path))
    fd = _open_for_append(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        lock_whole(fd)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        while written < len(line):
            written += os.write(fd, line[written:])
    except OSError as exc:
        exc.filename = exc.filename or path
        raise
    finally:
        os.close(fd)


def read_records(path, offset=0, limit_bytes=None):
    """Stream (record, line number or None, end offset) from offset; a torn or
    damaged line yields (None, lineno, offset) and reading goes on. Anything but a
    regular file in its place yields nothing (and is noted)."""
    try:
        fd, _st = open_regular(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        estate_note("%s: %s" % (path, _os_error_text(exc)))
        return
    with open(fd, "rb") as handle:
        if limit_bytes is not None:
            size = os.fstat(handle.fileno()).st_size
            if size - offset > limit_bytes:
                offset = size - limit_bytes
                handle.seek(offset)
                skipped = handle.readline()
                offset += len(skipped)
        handle.seek(offset)
        lineno = 0
        for raw in handle:
            lineno += 1
            if not raw.endswith(b"\n"):
                record = decode_line(raw.decode("utf-8", "replace"))
                if record is None:
                    yield None, lineno, offset
                    return
                offset += len(raw)
                yield record, lineno, offset
                return
            offset += len(raw)
            record = decode_line(raw.decode("utf-8", "replace"))
            yield record, lineno, offset


# ---- bounded reads: an estate file that blocks or lies never hangs a hook ----

ESTATE_FILE_CAP = 16 * 1024 * 1024
SMALL_FILE_CAP = 1024 * 1024
_FILE_KINDS = {0o040000: "a folder", 0o010000: "a FIFO", 0o020000: "a character device",
               0o060000: "a block device", 0o140000: "a socket", 0o120000: "a symlink"}
_OPEN_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(
    os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A folder, FIFO, device or socket stands where an estate file belongs."""

    def __init__(self, path, kind):
        super().__init__(22, "%s stands where a file belongs" % kind, path)
        self.kind = kind


class FileTooLarge(OSError):
    def __init__(self, path, size, cap):
        super().__init__(27, "%d bytes, over the %d-byte bound" % (size, cap), path)


def file_kind(mode):
    return "a file" if mode & 0o170000 == 0o100000 else _FILE_KINDS.get(
        mode & 0o170000, "something that is no file")


def open_regular(path):
    """(fd, stat) of a regular file opened for reading without blocking: a FIFO, a
    device, a socket or a folder in its place raises NotRegularFile at once."""
    st = os.stat(path)
    if st.st_mode & 0o170000 != 0o100000:
        raise NotRegularFile(path, file_kind(st.st_mode))
    fd = os.open(path, _OPEN_READ)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o170000 != 0o100000:
            raise NotRegularFile(path, file_kind(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_plain(path):
    """A binary handle on a regular file; a FIFO, a device or a folder in its place
    raises NotRegularFile (an OSError) at once instead of blocking the reader."""
    return os.fdopen(open_regular(path)[0], "rb")


def read_file_bytes(path, cap=ESTATE_FILE_CAP):
    """The bytes of a regular file of at most cap bytes; None when it is absent."""
    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        return None
    try:
        if st.st_size > cap:
            raise FileTooLarge(path, st.st_size, cap)
        parts, total = [], 0
        while True:
            chunk = os.read(fd, min(cap + 1 - total, max(st.st_size - total, 0) + 1))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > cap:
                raise FileTooLarge(path, total, cap)
        return b"".join(parts)
    finally:
        os.close(fd)


def _os_error_text(exc):
    return exc.strerror or type(exc).__name__


ESTATE_NOTES = []


def estate_note(text):
    """Remember one problem met in the estate: a hook prints them in one stderr
    line, the CLI as warnings; doctor finds each one again by itself."""
    text = clip(neutralise(text), 300)
    if len(ESTATE_NOTES) < 20 and text not in ESTATE_NOTES:
        ESTATE_NOTES.append(text)


def read_json_file(path, what="estate file", cap=ESTATE_FILE_CAP):
    """A JSON file's value; None when absent; NotrestError naming it when it cannot
    be read, is no regular file, is over cap bytes or is not JSON."""
    try:
        data = read_file_bytes(path, cap)
    except NotRegularFile as exc:
        raise NotrestError("%s stands where the %s belongs" % (exc.kind, what), path,
                           "move it aside (`mv %s %s.bad`); notrest rebuilds its views "
                           "(`notrest rebuild`), install.sh rewrites config" % (
                               _quote_arg(path), _quote_arg(path)))
    except FileTooLarge as exc:
        raise NotrestError("the %s is too large (%s)" % (what, exc.strerror), path,
                           "move it aside and run `notrest rebuild`")
    except OSError as exc:
        raise NotrestError("cannot read the %s (%s)" % (what, _os_error_text(exc)), path,
                           "check its owner and permissions (`ls -l %s`)" % _quote_arg(
                               path))
    if data is None:
        return None
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    try:
        return json_loads(data.decode("utf-8", "replace"))
    except ValueError as exc:
        raise NotrestError("the %s is not valid JSON (%s)" % (what, exc), path,
                           "fix it by hand, or for a view run `notrest rebuild`")


# ---- record shapes: every record is type-checked before it is used -----------

_SHAPE_TYPES = {"str": str, "int": int, "num": (int, float), "bool": bool, "any": object}
_SHAPE_NAMES = {"str": "a string", "int": "an integer", "num": "a number",
                "bool": "true or false"}


def _json_kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


_EXACT_TYPES = {}
for _name, _types in (("str", (str,)), ("int", (int,)), ("num", (int, float)),
                      ("bool", (bool,))):
    _EXACT_TYPES[_name] = frozenset(_types)
    _EXACT_TYPES["?" + _name] = frozenset(_types + (type(None),))


def _fits(value, shape):
    """Whether value fits shape (shape_problem without the words, fast: values come
    from JSON, so their types are exact and a bool is never taken for a number)."""
    if shape.__class__ is str:
        types = _EXACT_TYPES.get(shape)
        return types is None or type(value) in types  # None: "any", "?any"
    if shape.__class__ is dict:
        if value.__class__ is not dict:
            return False
        for key, inner in shape.items():
            if key[0] == "!":
                key = key[1:]
                if key not in value:
                    return False
            elif key not in value:
                continue
            if not _fits(value[key], inner):
                return False
        return True
    kind, inner = shape
    if kind == "opt":
        return value is None or _fits(value, inner)
    if kind == "map":
        if value.__class__ is not dict:
            return False
        items = value.values()
    else:
        if value.__class__ is not list:
            return False
        if kind == "tuple":
            return len(value) == len(inner) and all(map(_fits, value, inner))
        items = value
    if inner.__class__ is str:
        types = _EXACT_TYPES.get(inner)
        return types is None or set(map(type, items)) <= types
    return all(_fits(item, inner) for item in items)


def shape_problem(value, shape, where="value"):
    """What is wrong with value against shape, or None when it fits. A shape is
    "str", "int", "num", "bool" or "any" (a leading "?" also allows null),
    ["list", shape], ["map", shape] (string keys), ["tuple", [shapes]], ["opt",
    shape] (null or shape), or {field: shape} for an object (fields may be absent;
    "!field" must be there)."""
    if _fits(value, shape):
        return None
    if isinstance(shape, str):
        if shape[0] == "?":
            if value is None:
                return None
            shape = shape[1:]
        if shape == "any":
            return None
        if isinstance(value, _SHAPE_TYPES[shape]) and (
                shape == "bool" or not isinstance(value, bool)):
            return None
        return "%s is %s, not %s" % (where, _json_kind(value), _SHAPE_NAMES[shape])
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return "%s is %s, not an object" % (where, _json_kind(value))
        for key, inner in shape.items():
            name = key[1:] if key[0] == "!" else key
            if name not in value:
                if key[0] == "!":
                    return "%s has no %r" % (where, name)
                continue
            problem = shape_problem(value[name], inner, "%s.%s" % (where, name))
            if problem:
                return problem
        return None
    kind, inner = shape
    if kind == "opt":
        return None if value is None else shape_problem(value, inner, where)
    if kind == "map":
        if not isinstance(value, dict):
            return "%s is %s, not an object" % (where, _json_kind(value))
        for key, item in value.items():
            problem = shape_problem(item, inner, "%s[%s]" % (where, json_dumps(key)))
            if problem:
                return problem
        return None
    if not isinstance(value, list):
        return "%s is %s, not a list" % (where, _json_kind(value))
    if kind == "tuple":
        if len(value) != len(inner):
            return "%s has %d items, not %d" % (where, len(value), len(inner))
        pairs = zip(value, inner)
    else:
        pairs = ((item, inner) for item in value)
    for i, (item, item_shape) in enumerate(pairs):
        problem = shape_problem(item, item_shape, "%s[%d]" % (where, i))
        if problem:
            return problem
    return None


CONFIG_SHAPE = {"schema_version": "int", "python": "str", "clients": ["list", "str"],
                "cli": "str", "version": "str", "packet_budget": "int"}
PERMIT_SHAPE = {"!id": "str", "!law": "str", "why": "str", "who": "str",
                "!created": "num", "!expires": "num", "boot": "str", "uptime": "num",
                "tty": "str"}
PERMITS_SHAPE = {"schema_version": "int", "!permits": ["list", "any"]}


def keep_damaged(path):
    """Move a damaged estate file aside (<name>.damaged-<UTC time>) so the file
    rebuilt in its place never hides it; returns the new path (None on failure)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = "%s.damaged-%s" % (path, stamp)
    n = 1
    while os.path.lexists(aside):
        n += 1
        aside = "%s.damaged-%s-%d" % (path, stamp, n)
    try:
        os.rename(path, aside)
    except OSError:
        return None
    return aside


def load_config(estate):
    """config.json as a dict; a broken or ill-typed one counts as empty (noted):
    every key it holds has a default."""
    path = estate.path("config.json")
    try:
        config = read_json_file(path, "config", SMALL_FILE_CAP)
    except NotrestError as exc:
        estate_note(str(exc))
        return {}
    if config is None:
        return {}
    problem = shape_problem(config, CONFIG_SHAPE, "config.json")
    if problem:
        estate_note("%s: %s; the defaults are used" % (path, problem))
        return {}
    return config


LAWS_FILE_CAP = 4 * 1024 * 1024


def load_lawbook(estate):
    """The law book. A broken laws.json keeps the built-in laws in force and every
    project law that can still be read from it (salvaged whole objects), never
    honours its `disable` list, and says so in book.problems."""
    path = estate.path("laws.json")
    try:
        doc = read_json_file(path, "laws file", LAWS_FILE_CAP)
        if doc is not None and not isinstance(doc, (dict, list)):
            raise NotrestError("the laws file is %s, not an object" % _json_kind(doc),
                               path, "")
    except NotrestError as exc:
        salvaged = salvage_laws(path)
        good = laws_last_good(estate)
        if good is not None:
            return _last_good_lawbook(good, salvaged, exc, path)
        book = build_lawbook(salvaged)
        kept = [law.id for law in book.laws if law.source == "laws.json"]
        book.problems = ["%s (%s): enforcing the built-in laws%s; its `disable` list "
                         "is ignored until the file is fixed" % (
                             exc.what, path, " and the %d project law(s) still readable "
                             "(%s)" % (len(kept), ", ".join(kept)) if kept else "")] + [
                                 "laws.json: %s" % p for p in book.problems]
        activate_secret_patterns(book.secret_rules)
        return book
    listed = isinstance(doc, list)
    book = build_lawbook({"laws": doc} if listed else doc)
    if book.problems or listed:
        good = laws_last_good(estate)
        if good is not None:  # the wrong shape: what it still says, and the last good
            salvaged = {"laws": doc if listed else (doc or {}).get("laws")}
            if not isinstance(salvaged["laws"], list):
                salvaged["laws"] = []
            return _last_good_lawbook(good, salvaged, NotrestError(
                "laws.json has the wrong shape (%s)" % "; ".join(book.problems[:2] or [
                    "a list, not an object"])), path)
    book.problems = (["laws.json holds a list, not an object: its items are read as "
                      "laws"] if listed else []) + ["laws.json: %s" % p
                                                    for p in book.problems]
    activate_secret_patterns(book.secret_rules)
    return book


# ---- laws.json, last known good ------------------------------------------------
# SessionStart keeps a copy of a laws.json that reads whole and clean in notrest's
# per-user folder (beside the manifest, out of the project); when laws.json is
# unusable (a FIFO, /dev/zero, garbage, the wrong shape) the gate enforces that
# copy, never its `disable` list, with whatever laws the broken file still holds.

def laws_last_good_path(estate):
    return os.path.join(project_store(estate.root), "laws.last-good.json")


def laws_last_good(estate):
    """The last good laws document (a dict), or None."""
    try:
        doc = read_json_file(laws_last_good_path(estate), "last good laws", LAWS_FILE_CAP)
    except (NotrestError, OSError):
        return None
    return doc if isinstance(doc, dict) else None


def _last_good_lawbook(good, salvaged, exc, path):
    merged = dict(good)
    merged.pop("disable", None)  # a copy only ever adds protection
    extra = (salvaged or {}).get("laws") or []
    merged["laws"] = list(merged.get("laws") or []) + [
        law for law in extra if isinstance(law, dict) and law.get("id") not in {
            l.get("id") for l in merged.get("laws") or [] if isinstance(l, dict)}]
    book = build_lawbook(merged)
    book.problems = ["%s (%s): enforcing its last good version (kept by notrest) and "
                     "the built-in laws; its `disable` list is ignored until the file "
                     "is fixed" % (exc.what, path)] + [
                         "laws.json (last good): %s" % p for p in book.problems]
    activate_secret_patterns(book.secret_rules)
    return book


def keep_laws_last_good(estate):
    """At SessionStart: copy laws.json to its last-good place when it reads whole,
    as an object, with no problem, and differs from the copy there."""
    target = laws_last_good_path(estate)
    try:
        data = read_file_bytes(estate.path("laws.json"), LAWS_FILE_CAP)
    except (OSError, NotrestError):  # unusable now: the copy stays as it is
        return
    try:
        if not data or read_file_bytes(target, LAWS_FILE_CAP) == data:
            return  # the usual start: nothing changed, nothing parsed
    except (OSError, NotrestError):
        pass  # no copy yet, or a damaged one: write it anew below
    try:
        doc = json_loads(data.decode("utf-8", "replace"))
    except ValueError:
        return
    if not isinstance(doc, dict) or build_lawbook(doc).problems:
        return
    if os.path.isdir(os.path.dirname(target)):
        write_atomic(target, data.decode("utf-8", "replace"), durable=False)


def use_project_secret_patterns(estate):
    """Make the secret_patterns of the estate's laws.json part of every redaction in
    this process. Cheap on every hook: the file is parsed only when it names some."""
    try:
        data = read_file_bytes(estate.path("laws.json"), LAWS_FILE_CAP) or b""
    except (OSError, NotrestError):  # a FIFO, a folder, too big: load_lawbook says so
        data = b""
    rules = ()
    if b"secret_patterns" in data:
        try:
            doc = json_loads(data.decode("utf-8", "replace"))
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            rules = compile_secret_patterns(doc.get("secret_patterns"))[0]
    activate_secret_patterns(rules)
    return rules


def salvage_laws(path):
    """What a broken laws.json still says that can only add protection: the law
    objects and protected lists that parse whole (a truncated file keeps the laws
    before the cut). Never `disable`, never a bound."""
    try:
        fd, _st = open_regular(path)
    except OSError:
        return None
    try:
        text = os.read(fd, LAWS_FILE_CAP).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    doc = {}
    for key in ("laws", "protected_branches", "protected_paths", "secret_patterns"):
        items = _salvage_list(text, key)
        if items:
            doc[key] = items if key in ("laws", "secret_patterns") else [
                i for i in items if isinstance(i, str)]
    return doc


def _salvage_list(text, key):
    """The items of the list `"key": [...]` that parse whole, up to the first that
    does not."""
    mark = '"%s"' % key
    start = text.find(mark)
    while start >= 0:
        i = start + len(mark)
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        if start and text[start - 1] != "\\" and text[i:i + 1] == ":":
            i += 1
            while i < len(text) and text[i] in " \t\r\n":
                i += 1
            if text[i:i + 1] == "[":
                return _scan_items(text, i + 1)
        start = text.find(mark, start + 1)
    return []


def _scan_items(text, i):
    items = []
    n = len(text)
    while len(items) < 1000:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "]":
            break
        try:
            value, i = json_scan(text, i)
        except ValueError:
            break
        items.append(value)
    return items


def cli_hint(estate, config=None):
    """How the agent runs notrest from the project root."""
    config = config if config is not None else load_config(estate)
    hint = config.get("cli")
    if isinstance(hint, str) and hint:
        return hint
    here = os.path.abspath(__file__)
    if "-packages" + os.sep in here:
        return "notrest"
    return "python3 %s" % _quote_arg(here)


# ==== gate ==================================================================
# Rendering a verdict in each client's dialect. Codex rejects unknown keys and
# runs the command on an "ask", so every answer uses only the keys both accept.

DENY_LINE_MAX = 165
DENY_INSTEAD_MAX = 90


def deny_text(verdict):
    """A deny's reason as people see it. Claude Code's TUI shows only the first line
    of a hook's reason, after its own "PreToolUse:Bash hook error: " label (2.1.x
    turns every hook deny into a blocking error), cut at ~200 characters. So a long
    deny gets a first line that fits: the law, the reason without the echo of the
    command (the TUI shows the command above it) and the Instead; the whole text
    follows on the next line, which the model reads too."""
    full = verdict.text()
    if len(full) <= DENY_LINE_MAX and "\n" not in full:
        return full
    head = "notrest %s [%s]: " % (verdict.action, verdict.law)
    tail = " Instead: %s" % one_line(verdict.instead, DENY_INSTEAD_MAX) if \
        verdict.instead else ""
    reason = " ".join(str(verdict.reason).split())
    if reason.startswith("`") and "` " in reason[1:]:
        reason = reason[reason.index("` ", 1) + 2:]
    reason = one_line(reason, max(30, DENY_LINE_MAX - len(head) - len(tail) - 1))
    first = head + reason.rstrip(" .") + ("" if reason.endswith(("!", "?", "\u2026"))
                                          else ".") + tail
    return first + "\nIn full: " + full[len(head):]


def render_answer(event, verdict, context=None):
    """(stdout, stderr, exit code) for one event's final verdict."""
    kind, client = event.kind, event.client
    out = {}
    err = ""
    action = verdict.action
    if kind in ("PreToolUse", "PermissionRequest") and action == "ask" and client != "claude":
        action = "deny"  # Codex hooks cannot ask: the refusal says what would have been
        verdict = Verdict("deny", verdict.law, "%s (this law asks a person first; a Codex "
                          "hook cannot ask, so the call is refused)" % verdict.reason.rstrip(
                              " ."), verdict.instead, verdict.message, verdict.receipt)
    if kind == "PreToolUse":
        if action in ("deny", "ask", "block"):
            out["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask" if action == "ask" else "deny",
                "permissionDecisionReason": deny_text(verdict)}
        elif action == "warn" or verdict.message or context:
            note = context or verdict.message or verdict.text()
            out["hookSpecificOutput"] = {"hookEventName": "PreToolUse",
                                         "additionalContext": note}
    elif kind == "PermissionRequest":
        if action in ("deny", "block"):
            out["hookSpecificOutput"] = {"hookEventName": "PermissionRequest",
                                         "decision": {"behavior": "deny",
                                                      "message": deny_text(verdict)}}
    elif kind == "UserPromptSubmit":
        if action in ("deny", "block", "ask"):
            out["decision"] = "block"
            out["reason"] = verdict.text()
            err = verdict.text()
        elif context:
            out["hookSpecificOutput"] = {"hookEventName": "UserPromptSubmit",
                                         "additionalContext": context}
    elif kind == "Stop":
        if action in ("deny", "block", "ask"):
            out["decision"] = "block"
            out["reason"] = verdict.text()
    elif kind == "SessionStart" and context:
        out["hookSpecificOutput"] = {"hookEventName": "SessionStart",
                                     "additionalContext": context}
    if verdict.message and action not in ("deny", "block", "ask") and kind in (
            "PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "SessionStart",
            "PostToolUse"):
        out["systemMessage"] = verdict.message
    return json_dumps(out), err, 0


def summarise_call(event):
    """A short text saying what a tool call does (for the journal and packets)."""
    tool, ti = event.tool or "?", event.tool_input
    if tool in SHELL_TOOLS or tool.lower() in ("bash", "shell"):
        command = ti.get("command", ti.get("cmd", ""))
        if isinstance(command, list):
            command = " ".join(_quote_arg(str(a)) for a in command)
        return redact_clip(str(command), 400, squash=True)
    if tool == "apply_patch":
        targets = [t for t, _ in patch_targets(ti.get("command") or ti.get("patch") or "")]
        return "apply_patch %s" % ", ".join(targets[:8])
    for key in ("file_path", "notebook_path", "path", "pattern", "url", "query"):
        if isinstance(ti.get(key), str):
            return "%s %s" % (tool, redact_clip(ti[key], 300))
    if tool in SPAWN_TOOLS:
        what = ti.get("description") or ti.get("message") or ti.get("prompt") or ""
        return "%s %s" % (tool, redact_clip(str(what), 200))
    return tool


# Programs that rewrite the files they are given (the formatters people run), with
# the flag that makes them write when they only check without it.
FORMATTERS = {"black": "", "isort": "", "autopep8": "-i", "yapf": "-i", "rustfmt": "",
              "gofmt": "-w", "goimports": "-w", "clang-format": "-i", "shfmt": "-w",
              "prettier": "--write", "eslint": "--fix", "stylua": "", "dartfmt": "-w",
              "standardrb": "--fix", "rubocop": "-a", "ruff": "", "terraform": "fmt"}
_NOT_CONTENT = frozenset(("mkdir", "mkfifo", "chmod", "chown", "chgrp", "chattr",
                          "setfacl", "xattr"))


def files_touched(event, root, home):
    """[(display path, mode)] a tool call writes or deletes: file tools, patches,
    redirections, tee, sed -i, cp/mv/rm, the git commands that name what they change
    in the work tree, and known formatters; not folders, permissions or branches."""
    ctx = GateContext(event, LawBook())
    seen, out = set(), []

    def note(path, mode):
        if path.startswith("/dev/") or path == "/dev":
            return
        shown = display_path(path, root)
        if (shown, mode) not in seen:
            seen.add((shown, mode))
            out.append([shown, mode])

    for path, mode, _what, cmd in ctx.accesses:
        if cmd is None and mode in ("write", "delete"):
            note(path, mode)
    for cmd in ctx.cmds:
        for text, mode in written_paths(cmd):
            if not text.startswith("$(") and "/dev/fd/" not in text:
                note(resolve_path(text, cmd.cwd, ctx.home, follow=mode != "delete"),
                     mode)
    return out


def written_paths(cmd):
    """[(path text, write or delete)] whose content one simple command changes."""
    prog = cmd.prog
    if prog in _NOT_CONTENT or not cmd.argv:
        return []
    if prog == "git":
        return _git_writes(cmd)
    found = [(p, "write" if m == "meta" else m) for p, m in command_paths(cmd)
             if m in ("write", "delete") or (m == "meta" and prog == "touch")]
    formatter = FORMATTERS.get(prog)
    if formatter is not None:
        args = cmd.argv[1:]
        if prog == "ruff":
            writes = args[:1] == ["format"] or (args[:1] == ["check"] and "--fix" in args)
            args = args[1:]
        elif prog == "terraform":
            writes, args = args[:1] == ["fmt"], args[1:]
        else:
            writes = not formatter or formatter in args or any(
                a.startswith(formatter + "=") for a in args)
        if writes and "--check" not in args and "--diff" not in args:
            found += [(a, "write") for a in args if not a.startswith("-")]
    return found


def _git_writes(cmd):
    """The work-tree files a git command names and changes (rm, mv, restore, and
    checkout of paths); a branch switch or `checkout -b` names no file."""
    argv, i = cmd.argv, 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(argv):
        return []
    sub, args = argv[i], argv[i + 1:]
    dashdash = args.index("--") if "--" in args else None
    paths = args[dashdash + 1:] if dashdash is not None else [
        a for a in args if not a.startswith("-")]
    if sub == "rm" and "--cached" not in args:
        return [(p, "delete") for p in paths]
    if sub == "mv" and len(paths) >= 2:
        return [(p, "delete") for p in paths[:-1]] + [(paths[-1], "write")]
    if sub == "restore" and ("--staged" not in args or "--worktree" in args):
        return [(p, "write") for p in paths]
    if sub == "checkout":
        if any(a in ("-b", "-B", "--orphan") for a in args):
            return []
        if dashdash is not None:
            return [(p, "write") for p in paths]
        base = cmd.cwd or "."
        return [(p, "write") for p in paths if os.path.isfile(os.path.join(base, p))]
    return []


PERMIT_CLOCK_SLACK_S = 120


def clock_reading():
    """(boot id, seconds since boot): the clock a permit is made under, besides the
    wall clock; ("", None) where the system names no boot."""
    try:
        fd = os.open("/proc/sys/kernel/random/boot_id", _OPEN_READ)
        try:
            boot = os.read(fd, 128).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        return boot, time.clock_gettime(time.CLOCK_BOOTTIME)
    except (OSError, AttributeError, ValueError):
        return "", None


def permit_live(permit, now, boot="", uptime=None):
    """Pure: whether a permit may still be used at wall time now. It was made in the
    past (a permit from the future was made under a clock that ran ahead) and has
    not expired by the wall clock, nor, on the boot it was made in, by the seconds
    that have really elapsed since."""
    created, expires = permit["created"], permit["expires"]
    if not created - PERMIT_CLOCK_SLACK_S <= now < expires:
        return False
    if boot and uptime is not None and permit.get("boot") == boot and isinstance(
            permit.get("uptime"), (int, float)):
        elapsed = uptime - permit["uptime"]
        return -PERMIT_CLOCK_SLACK_S <= elapsed < expires - created
    return True


def read_permits(estate):
    """(every well-formed permit, problems) of permits.json; NotrestError when the
    file cannot be read at all."""
    path = estate.path("permits.json")
    data = read_json_file(path, "permits file", SMALL_FILE_CAP)
    if data is None:
        return [], []
    problem = shape_problem(data, PERMITS_SHAPE, "permits.json")
    if problem:
        raise NotrestError("the permits file is damaged (%s)" % problem, path,
                           "move it aside; a person grants permits again with "
                           "`notrest allow`")
    good, problems = [], []
    for i, permit in enumerate(data["permits"]):
        problem = shape_problem(permit, PERMIT_SHAPE, "permit %d" % (i + 1))
        if problem:
            problems.append(problem)
        else:
            good.append(permit)
    return good, problems


def load_permits(estate, now):
    """The permits that may be used now; a damaged file or entry grants nothing
    (and is noted)."""
    try:
        permits, problems = read_permits(estate)
    except NotrestError as exc:
        estate_note(str(exc))
        return []
    for problem in problems:
        estate_note("%s: %s (skipped)" % (estate.path("permits.json"), problem))
    if not permits:
        return []
    boot, uptime = clock_reading()
    return [p for p in permits if permit_live(p, now, boot, uptime)]


def consume_permits(estate, ids):
    """Remove used permits under the lock; returns the ids really removed (a permit
    another hook used first is not there any more). Entries it cannot read are
    left as they are."""
    path = estate.path("permits.json")
    with _Lock(estate.path(".permits.lock")):
        data = read_json_file(path, "permits", SMALL_FILE_CAP) or {}
        listed = data.get("permits") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            return []
        kept = [p for p in listed if not (isinstance(p, dict) and p.get("id") in ids)]
        gone = [p.get("id") for p in listed if isinstance(p, dict) and p.get("id") in ids]
        if gone:
            write_atomic(path, json_pretty(dict(data, permits=kept)))
        return gone


def try_append(path, record):
    """append_record, best effort: False (and noted) when the estate cannot take it."""
    try:
        append_record(path, record)
        return True
    except (OSError, NotrestError) as exc:
        estate_note("cannot write %s (%s)" % (path, _os_error_text(exc) if isinstance(
            exc, OSError) else exc.what))
        return False


def overrides_from_env(env):
    raw = env.get("NOTREST_OVERRIDE", "")
    return {part for part in raw.replace(",", " ").split() if _is_slug(part)}


override_client = _reader("override_client")
any_live_session = _reader("any_live_session")


def overrides_given(estate, env):
    """(laws, refused): the laws $NOTREST_OVERRIDE switches off for this hook, and
    a sentence when some of them are refused. An override is the person's: it
    counts only when the client this hook runs under was started with it. The
    agent's commands inherit the client's environment, and may add to their own,
    so the variable on this process proves nothing; the environment the client
    started with (/proc/PID/environ) is what the agent cannot change. The client
    is the outermost ancestor that is the live client of one of this project's
    sessions, so neither a session the agent registers for a process of its own
    nor a client the agent starts can give one. A hook with no client above it
    is a person's own run, unless a session of this project is live: then it may
    be a process the agent left running, and nothing says which, so the override
    is refused. (Without /proc no client can be told, so an override holds only
    while no session is live: `notrest allow` is the way there.)"""
    wanted = overrides_from_env(env)
    if not wanted:
        return wanted, ""
    client = override_client(estate)
    if client is None:
        if not any_live_session(estate):
            return wanted, ""
        return set(), "NOTREST_OVERRIDE was set, but this hook does not run under " \
            "the client of a session that is live here, so it cannot be the person's"
    pid, name, given = client
    granted = wanted & overrides_from_env({"NOTREST_OVERRIDE": given or ""})
    if granted == wanted:
        return granted, ""
    return granted, "NOTREST_OVERRIDE=%s was set, but the client it runs under (%s, " \
        "pid %d) was not started with it: an override is given by starting the " \
        "client with it, or with `notrest allow` in a terminal of your own" % (
            ",".join(sorted(wanted - granted)), name, pid)


def current_branch(root):
    """The checked-out branch read from .git/HEAD (no subprocess), or None."""
    try:
        head = (read_file_bytes(os.path.join(root, ".git", "HEAD"), 4096) or b"").decode(
            "utf-8", "replace").strip()
    except OSError:
        return None
    if head.startswith("ref: refs/heads/"):
        return head[16:]
    return None


def gate_event(estate, event, book, env, now, journal=True, what=None):
    """Judge a PreToolUse/PermissionRequest/UserPromptSubmit event end to end:
    decide, apply overrides and permits, journal receipts; returns the verdict.
    What the agent should run instead names the CLI, read from config.json only
    when a law speaks."""
    if what is None:
        what = summarise_call(event) if event.kind != "UserPromptSubmit" else (
            "a prompt (withheld)")
    if event.tool and "git" in what:
        event.branch = current_branch(estate.root)
    event.facts.setdefault("cli", "{cli}")
    verdicts = decide(book, event)
    if any("{cli}" in v.instead for v in verdicts):
        cli = cli_hint(estate)
        for verdict in verdicts:
            verdict.instead = verdict.instead.replace("{cli}", cli)
    stopped = any(v.action in ("deny", "ask", "block") for v in verdicts)
    permits = load_permits(estate, now) if stopped else []
    overrides, refused = overrides_given(estate, env) if stopped else (set(), "")
    final, receipts, used = apply_overrides(verdicts, overrides, permits)
    if journal:
        final, receipts = _authorised(estate, event, now, what, verdicts, overrides,
                                      final, receipts, used)
    _say_refused(final, refused)
    if journal:
        if event.session and final.action in ("deny", "ask", "block"):
            try_append(estate.journal(event.session), dict(
                _base(event, now), k="deny", law=final.law, action=final.action,
                what=what, reason=final.reason))
    if book.problems:
        estate_note(book.problems[0])
    if book.problems and final.action == "allow" and not final.message:
        final.message = "notrest: %s; the built-in laws are still enforced. Fix it " \
                        "(`notrest doctor` shows how)." % book.problems[0]
    return final


def _authorised(estate, event, now, what, verdicts, overrides, final, receipts, used,
                **bounds):
    """(final, receipts) once the authority an override used is real: a permit is
    consumed under the lock (another hook may have used it first) and every
    override leaves its receipt in the journal. When either cannot be done, the
    law's own verdict stands. bounds go to apply_overrides (the Stop bound)."""
    lost = ""
    if used:
        try:
            gone = consume_permits(estate, used)
        except (OSError, NotrestError) as exc:
            gone, lost = [], "the permit could not be used up (%s)" % (
                _os_error_text(exc) if isinstance(exc, OSError) else exc.what)
        if len(gone) < len(used) and not lost:
            lost = "the permit was used up by another call"
        if lost:
            final, receipts, _used = apply_overrides(verdicts, overrides, [], **bounds)
    path = estate.journal(event.session or "unknown")
    for receipt in receipts:
        if receipt.get("stop_allowed_after"):
            continue  # the stop record itself says so
        if not try_append(path, dict(_base(event, now), k="receipt", what=what, **{
                k: v for k, v in receipt.items() if k != "t"})):
            lost = "its receipt cannot be written to the journal, and an override " \
                   "always leaves one"
            final, receipts, _used = apply_overrides(verdicts, set(), [], **bounds)
            break
    if lost and final.action in ("deny", "ask", "block"):
        final.reason = "%s (an override was not used: %s)" % (final.reason, lost)
    return final, receipts


def _say_refused(final, refused):
    if refused and final.action in ("deny", "ask", "block"):
        final.reason = "%s (%s)" % (final.reason, refused)


def _base(event, now):
    return {"v": SCHEMA_VERSION, "t": round(now, 3), "c": event.client or "",
            "e": event.kind}


# ==== hook adapter ==========================================================
# `notrest hook EVENT` is what the launchers run: read the payload with a
# deadline and a cap, normalise it, act, answer in the client's dialect.
# Gates fail closed; journaling fails open; a hook never shows a traceback.

def read_stdin(fd=0, cap=STDIN_CAP_BYTES, deadline=STDIN_DEADLINE_S):
    """(bytes, complete): stdin read to EOF, however slowly it comes, unless it
    passes cap bytes or the deadline (then complete is False)."""
    chunks, state = read_until_eof(fd, cap, time.monotonic() + deadline)
    return b"".join(chunks), state == "eof"


def read_until_eof(fd, cap, end):
    """(chunks, "eof" | "cap" | "late" | "error"): fd read to its end, past cap
    bytes, or until the monotonic time end. What is there already is read
    without waiting (a client writes its payload and closes before the
    interpreter is up; git is done before the packet asks): select, an extension
    module to load, only waits for the rest."""
    chunks, total, select = [], 0, None
    try:
        blocking = os.get_blocking(fd)
        if blocking:
            os.set_blocking(fd, False)
    except OSError:
        blocking = False
    try:
        while total <= cap:
            if select is not None:
                left = end - time.monotonic()
                if left <= 0:
                    return chunks, "late"
                try:
                    ready = select.select([fd], [], [], left)[0]
                except (OSError, ValueError):
                    ready = [fd]
                if not ready:
                    return chunks, "late"
            try:
                chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            except BlockingIOError:  # the rest is still on its way: wait for it
                if select is None:
                    import select
                continue
            except OSError:
                return chunks, "error"
            if not chunk:
                return chunks, "eof"
            chunks.append(chunk)
            total += len(chunk)
        return chunks, "cap"
    finally:
        if blocking:
            try:
                os.set_blocking(fd, True)
            except OSError:
                pass


# ---- payload validation: a gate judges only a payload it has read whole ------

PAYLOAD_DEPTH_MAX = 64
# What a gate reads from a payload must have these types; advisory events take
# what they can (normalise coerces the rest).
PAYLOAD_SHAPE = {"hook_event_name": "str", "session_id": "str", "cwd": "str",
                 "transcript_path": "?str", "tool_name": "str", "tool_input": "any",
                 "prompt": "str", "stop_hook_active": "?bool", "agent_id": "?str",
                 "agent_type": "?str"}
STRICT_EVENTS = ("PreToolUse", "PermissionRequest", "UserPromptSubmit")


def _nested_deeper(value, limit):
    """Whether value nests lists and objects deeper than limit (no recursion)."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values() if isinstance(v, (
                dict, list)))
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


OUTPUT_EVENTS = ("PostToolUse", "PostToolUseFailure")


def _cut_output_payload(raw, event_name):
    """The call of an output event whose payload passed the cap (a tool that printed
    100 MB): the top-level members read whole before the cut, so the journal still
    records that the call ran (its output is what was cut). Only for the events
    that judge nothing; None when what was read does not name a session and a
    tool. A small subset of JSON: the object's members in order, each value
    decoded whole by the standard decoder, up to the first that is cut."""
    if event_name not in OUTPUT_EVENTS:
        return None
    import json
    decoder, text = json.JSONDecoder(), raw.decode("utf-8", "replace")
    out, pos = {}, text.find("{") + 1
    if pos <= 0:
        return None
    try:
        while True:
            pos = _skip_json_space(text, pos, ",")
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip_json_space(text, pos, ":")
            value, pos = decoder.raw_decode(text, pos)
            if isinstance(key, str):
                out[key] = value
    except (ValueError, IndexError):
        pass
    if not (isinstance(out.get("session_id"), str) and isinstance(out.get("tool_name"),
                                                                   str)):
        return None
    out["tool_response"] = {"notrest_cut": len(raw)}
    out.setdefault("hook_event_name", event_name)
    return out


def _skip_json_space(text, pos, mark):
    """pos past white space and at most one `mark` (and the space after it)."""
    while text[pos] in " \t\r\n":
        pos += 1
    if text[pos] == mark:
        pos += 1
        while text[pos] in " \t\r\n":
            pos += 1
    return pos


def parse_payload(raw, complete, event_name):
    """(payload, problem): the JSON object on a hook's stdin, or why it cannot be
    trusted: cut short, not JSON, nested too deep, ill-typed, or claiming another
    event than the launcher that received it (the launcher's event holds)."""
    if not complete:
        salvaged = _cut_output_payload(raw, event_name)
        if salvaged is not None:
            return salvaged, None
        return None, "the payload was cut (%d bytes read before %s)" % (
            len(raw), "the %d-byte cap" % STDIN_CAP_BYTES if len(raw) > STDIN_CAP_BYTES
            else "the read deadline")
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    if not raw.strip():
        return None, "no payload on stdin"
    try:
        payload = json_loads(raw.decode("utf-8", "replace"))
    except ValueError as exc:
        return None, "the payload is not JSON (%s)" % exc
    if not isinstance(payload, dict):
        return None, "the payload is %s, not a JSON object" % _json_kind(payload)
    if event_name not in STRICT_EVENTS:
        return payload, None
    if _nested_deeper(payload, PAYLOAD_DEPTH_MAX):
        return payload, "the payload nests deeper than %d levels" % PAYLOAD_DEPTH_MAX
    problem = shape_problem(payload, PAYLOAD_SHAPE, "payload")
    if problem:
        return payload, problem.replace("payload.", "the payload's ", 1)
    claimed = payload.get("hook_event_name")
    if claimed and claimed != event_name:
        return payload, "the payload claims to be %s but came to the %s hook" % (
            clip(neutralise(claimed), 40), event_name)
    if event_name == "UserPromptSubmit" and not isinstance(payload.get("prompt"), str):
        return payload, "the payload carries no prompt"
    if event_name in ("PreToolUse", "PermissionRequest"):
        if not payload.get("tool_name"):
            return payload, "the payload names no tool (tool_name)"
        if not isinstance(payload.get("tool_input"), dict):
            return payload, "the payload's tool_input is %s, not an object" % (
                _json_kind(payload.get("tool_input")))
    return payload, None


def detect_client(payload, env):
    """claude, codex or unknown, from the payload's own marks."""
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str):
        if "/rollout-" in transcript or "/.codex/" in transcript:
            return "codex"
        if "/.claude/" in transcript:
            return "claude"
    if env.get("CLAUDE_PROJECT_DIR") or "prompt_id" in payload or "effort" in payload:
        return "claude"
    if "turn_id" in payload:
        return "codex"
    session = payload.get("session_id")
    if isinstance(session, str) and len(session) == 36 and session[8:9] == "-":
        return {"4": "claude", "7": "codex"}.get(session[14:15], "unknown")
    return "unknown"


def _valid_dir(value):
    return (isinstance(value, str) and value.startswith("/") and "\0" not in value
            and len(value) < 4096 and os.path.isdir(value))


def normalise(payload, event_name="", env=None, client=None):
    """One Event from a hook payload of either client."""
    env = os.environ if env is None else env
    kind = event_name or payload.get("hook_event_name")
    if not isinstance(kind, str) or not kind or len(kind) > 64:
        kind = "unknown"
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        tool_input = {} if tool_input is None else {"command": str(tool_input)}
    agent = None
    if payload.get("agent_id") or payload.get("agent_type"):
        agent = {"id": str(payload.get("agent_id") or ""),
                 "type": str(payload.get("agent_type") or "")}
    cwd = payload.get("cwd")
    tool = payload.get("tool_name")
    event = Event(
        client=client or detect_client(payload, env),
        kind=kind, session=sanitize_session_id(payload.get("session_id")),
        cwd=cwd if _valid_dir(cwd) else None,
        transcript=payload.get("transcript_path") if isinstance(
            payload.get("transcript_path"), str) else None,
        tool=tool if isinstance(tool, str) else None, tool_input=tool_input,
        tool_response=payload.get("tool_response"),
        prompt=payload.get("prompt") if isinstance(payload.get("prompt"), str) else None,
        source=str(payload.get("source") or ""), agent=agent, raw=payload,
        stop_hook_active=payload.get("stop_hook_active") is True,
        env={k: env[k] for k in GATE_ENV_KEYS if env.get(k)})
    if kind == "PostToolUseFailure":
        event.ok = False
        event.error = str(payload.get("error") or "")   # cut where it is journaled
        if not event.error and isinstance(event.tool_response, dict):
            event.error = _outcome(event)[1]  # its output passed the cap
    elif kind == "PostToolUse":
        event.ok, event.error = _outcome(event)
    return event


def _outcome(event):
    """(ok, error) of a PostToolUse: Claude reports failures in their own event;
    Codex gives only the output text (apply_patch prints its exit code)."""
    response = event.tool_response
    if isinstance(response, dict):
        if response.get("interrupted"):
            return False, "interrupted"
        if "notrest_cut" in response:
            return None, "its output passed the %d-byte payload cap: not read" % (
                STDIN_CAP_BYTES)
        return True, ""
    if isinstance(response, str) and response.startswith("Exit code: "):
        code = response[11:].split("\n", 1)[0].strip()
        if code.isdigit() and code != "0":
            return False, response
        return True, ""
    return (True, "") if event.client == "claude" else (None, "")


def locate_root(event, env, code_dir):
    """The project whose estate this hook writes: the project of an installed copy
    (<root>/.notrest/notrest.py), else $CLAUDE_PROJECT_DIR or the payload's cwd,
    walked up to the nearest estate."""
    if code_dir and os.path.basename(code_dir) == ESTATE_DIR:
        return os.path.dirname(code_dir)
    for start in (env.get("CLAUDE_PROJECT_DIR"), event.cwd):
        if _valid_dir(start):
            return find_root(start) or _repo_top(start) or start
    return os.getcwd()


# ---- deadlines: a gate that cannot finish in time refuses -------------------

SESSION_END_BUDGET_S = 0.8


def hook_deadline(kind, env=None):
    """Seconds a hook may take, well inside the timeout it is registered with (the
    client goes ahead when that runs out); SessionEnd is killed at ~1-1.5 s.
    $NOTREST_HOOK_DEADLINE may only shorten it (a shorter one refuses more)."""
    if kind == "SessionEnd":
        limit = SESSION_END_BUDGET_S
    else:
        timeout = HOOK_EVENTS.get(kind, ("", 10))[1]
        limit = min(timeout * 0.75, timeout - 2.0)
    try:
        wanted = float((env or {}).get("NOTREST_HOOK_DEADLINE") or 0)
    except ValueError:
        wanted = 0
    return wanted if 0 < wanted < limit else limit


class HookDeadline(BaseException):
    """Raised in the middle of whatever a hook is doing when its deadline passes
    (a BaseException, so no `except Exception` on the way swallows it)."""


_DEADLINE = [False]


def _on_deadline(_signum, _frame):
    if _DEADLINE[0]:
        _DEADLINE[0] = False
        raise HookDeadline()


def arm_deadline(seconds):
    """Start a hook's own deadline (SIGALRM by _signal: `signal` imports enum);
    returns a function that stops it, or None where no timer can be set."""
    try:
        import _signal
        previous = _signal.signal(_signal.SIGALRM, _on_deadline)
        _DEADLINE[0] = True
        _signal.setitimer(_signal.ITIMER_REAL, seconds)
    except (ImportError, AttributeError, ValueError, OSError):
        _DEADLINE[0] = False
        return None

    def disarm():
        _DEADLINE[0] = False
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, previous)
    return disarm


def fault_answer(kind, why, payload=None, raw=b""):
    """(stdout, stderr, 0) when a hook cannot do its work: a gate refuses with the
    reason, Stop blocks once (never when the client says it already blocked), an
    advisory hook lets the client go on; each names the fault and the fix."""
    why = redact_clip(neutralise(why), 400)
    fix = "ask a person to run `notrest doctor` (it names the fault and the fix)"
    if kind in ("PreToolUse", "PermissionRequest"):
        reason = ("notrest deny [gate-error]: the gate could not judge this call: %s; "
                  "it was refused to stay safe. Instead: retry once; if it happens "
                  "again, %s." % (why, fix))
        if kind == "PreToolUse":
            out = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                          "permissionDecision": "deny",
                                          "permissionDecisionReason": reason}}
        else:
            out = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                          "decision": {"behavior": "deny",
                                                       "message": reason}}}
        return json_dumps(out), "notrest: %s: %s; the call was refused" % (kind, why), 0
    if kind == "UserPromptSubmit":
        reason = ("notrest block [gate-error]: the prompt laws could not judge this "
                  "prompt: %s; it was not sent. Fix: %s." % (why, fix))
        return json_dumps({"decision": "block", "reason": reason}), reason, 0
    if kind == "Stop":
        active = payload.get("stop_hook_active") is True if isinstance(
            payload, dict) else b'"stop_hook_active":true' in raw.replace(b" ", b"")
        if not active and isinstance(payload, dict):
            reason = ("notrest block [gate-error]: the stop laws could not be checked: "
                      "%s. Bank a note if you changed files, tell the person about "
                      "this fault (%s), then stop; the next stop is allowed." % (
                          why, fix))
            return json_dumps({"decision": "block", "reason": reason}), \
                "notrest: Stop: %s" % why, 0
    return "{}", "notrest: hook %s: %s; nothing was held up (`notrest doctor` shows " \
        "why)" % (clip(neutralise(kind), 40), why), 0


def _repo_top(start):
    """The nearest folder at or above start holding .git (a plugin's first hook in
    a subfolder: the estate belongs at the top of the repository)."""
    path = start
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def running_as_plugin(env, code_dir):
    """Whether this process is a plugin's hook: both clients name the plugin's
    folder in $CLAUDE_PLUGIN_ROOT (Codex also in $PLUGIN_ROOT)."""
    plugin = env.get("PLUGIN_ROOT") or env.get("CLAUDE_PLUGIN_ROOT")
    return bool(plugin) and os.path.realpath(plugin) == os.path.realpath(code_dir)


def project_install_acts(root, client, kind, env):
    """Whether the project's own install runs this event for this client, so that a
    plugin's hook must step aside (one packet, one journal line per event)."""
    launcher = HOOK_EVENTS.get(kind, ("",))[0]
    if not launcher or not os.path.isfile(os.path.join(root, ESTATE_DIR, "hooks",
                                                       launcher)):
        return False
    names = ((".claude", "settings.json"), (".claude", "settings.local.json")) if \
        client == "claude" else ((".codex", "hooks.json"),)
    wired = False
    for parts in names:
        try:
            with open_plain(os.path.join(root, *parts)) as handle:
                text = handle.read()
            wired = wired or (HOOK_MARK.encode() in text and launcher.encode() in text)
        except OSError:
            pass
    if not wired or client != "codex":
        return wired
    try:  # Codex runs project hooks only once the person has trusted them
        trusted = globals().get("codex_event_trusted")
        if trusted is None:  # a launcher loaded only the hot or the warm part
            trusted = cold_module().codex_event_trusted
        return trusted(root, kind, env)
    except Exception:
        return False


def hook_main(argv, stdin_fd=0, env=None, out=None, err=None):
    """Entry point of the sh launchers. Never raises; returns the exit code. Its
    own deadline covers reading stdin and the work; every fault ends in an answer
    (fault_answer), and journaling an allowed call is best effort."""
    env = os.environ if env is None else env
    out = out or sys.stdout
    err = err or sys.stderr
    started = time.perf_counter()
    event_name = argv[0] if argv else ""
    client = argv[1] if len(argv) >= 2 and argv[1] in ("claude", "codex") else None
    del ESTATE_NOTES[:]
    seen = {"raw": b"", "payload": None, "kind": event_name}
    limit = hook_deadline(event_name, env)
    disarm = arm_deadline(limit)
    try:
        answer, message, code = _hook_answer(seen, stdin_fd, env, client, started,
                                             min(STDIN_DEADLINE_S, limit * 0.6))
        _DEADLINE[0] = False  # answered: an alarm from here on changes nothing
    except HookDeadline:
        answer, message, code = fault_answer(
            seen["kind"], "it ran past its own deadline of %.1f s" % limit,
            seen["payload"], seen["raw"])
    except BaseException as exc:  # a hook never shows a traceback to the agent
        if disarm:
            disarm()
            disarm = None
        answer, message, code = fault_answer(
            seen["kind"], "it failed (%s: %s)" % (type(exc).__name__,
                                                  redact_clip(str(exc), 200)),
            seen["payload"], seen["raw"])
        if env.get("NOTREST_DEBUG"):
            import traceback
            traceback.print_exc(file=err)
    if disarm:
        disarm()
    if ESTATE_NOTES:
        more = len(ESTATE_NOTES) - 2
        message = ((message + "\n") if message else "") + "notrest: %s%s (the hook went " \
            "on; `notrest doctor` shows the fix)" % ("; ".join(ESTATE_NOTES[:2]),
                                                     " and %d more" % more if more > 0
                                                     else "")
    try:
        out.write(answer + "\n")
        if message:
            err.write(message + "\n")
        out.flush()
    except (OSError, ValueError):
        pass
    return code


def _hook_answer(seen, stdin_fd, env, client, started, stdin_deadline):
    event_name = seen["kind"]
    raw, complete = read_stdin(stdin_fd, deadline=stdin_deadline)
    seen["raw"] = raw
    payload, problem = parse_payload(raw, complete, event_name)
    seen["payload"] = payload
    if not event_name and isinstance(payload, dict) and isinstance(
            payload.get("hook_event_name"), str):
        seen["kind"] = event_name = payload["hook_event_name"][:64]
    if problem:
        return fault_answer(event_name, problem, payload, raw)
    event = normalise(payload, event_name, env, client)
    code_dir = os.path.dirname(os.path.abspath(__file__))
    event.root = locate_root(event, env, code_dir)
    if running_as_plugin(env, code_dir) and project_install_acts(
            event.root, event.client, event.kind, env):
        return "{}", "", 0  # the project's own install answers this event
    if event.kind == "SessionStart" and "start_git_state" in globals():
        event.facts["git"] = start_git_state(event.root)  # runs while we work
    event.cwd = event.cwd or event.root
    event.home = env.get("HOME") or os.path.expanduser("~")
    if LOAD_FALLBACKS:
        journal_load_fallbacks(Estate(event.root), event)
    return dispatch_hook(Estate(event.root), event, env, started)


# What the launcher's boot could not do the fast way (it fills this in before
# hook_main runs): a generated module missing, bytecode that cannot be written.
# Each hook that loads the slow way journals it (k "load") and says so on stderr;
# doctor reports the journaled ones and the state that causes them.
LOAD_FALLBACKS = []


def journal_load_fallbacks(estate, event):
    why = redact_clip("; ".join(LOAD_FALLBACKS), 600)
    try_append(estate.journal(event.session), dict(_base(event, time.time()), k="load",
                                                   message=why))
    estate_note("this hook loaded the slow way (%s)" % why)


HOT_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
              "SubagentStart", "SubagentStop", "Notification")


def _stamp(record, started):
    record["ms"] = round((time.perf_counter() - started) * 1000, 2)
    return record


def exit_now(code):
    """End a hook process at once: flush what it printed and skip the interpreter's
    teardown (freeing every object: measured, 7% of a tool-call hook's instructions,
    bench/callgrind.py)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 0)


def dispatch_hook(estate, event, env, started):
    """Act on one normalised event; (stdout, stderr, exit code). The events of
    every tool call are handled here, in the hot part; the rest in the cold part."""
    use_project_secret_patterns(estate)
    if event.kind not in HOT_EVENTS:
        cold = globals().get("dispatch_cold") or cold_module().dispatch_cold
        return cold(estate, event, env, started)
    now = time.time()
    kind, session = event.kind, event.session
    journal = estate.journal(session)
    base = _base(event, now)
    if kind in ("PreToolUse", "PermissionRequest"):
        what = summarise_call(event)
        verdict = gate_event(estate, event, load_lawbook(estate), env, now, what=what)
        record = dict(base, k="call", tool=event.tool or "", what=what)
        call_id = event.raw.get("tool_use_id")
        if isinstance(call_id, str) and call_id:  # `notrest audit` matches by it
            record["id"] = sanitize_session_id(call_id)
        if event.agent:
            record["agent"] = event.agent["id"]
        if kind == "PreToolUse":
            try_append(journal, _stamp(record, started))
            if verdict.action == "allow" and event.tool in SHELL_TOOLS and \
                    "apply_patch" in record["what"] and event.client != "claude":
                try_append(journal, dict(base, k="tool", tool="apply_patch",
                                         what=record["what"], ok=None,
                                         files=files_touched(event, estate.root,
                                                             event.home)))
        return render_answer(event, verdict)
    if kind in ("PostToolUse", "PostToolUseFailure"):
        record = dict(base, k="tool", tool=event.tool or "", what=summarise_call(event),
                      ok=event.ok, files=files_touched(event, estate.root, event.home))
        if event.error:
            record["error"] = redact_clip(event.error, ERROR_TEXT_MAX, ends=True)
        if event.agent:
            record["agent"] = event.agent["id"]
        try_append(journal, _stamp(record, started))
        if _hands_over_a_bank(event):
            cold_module().bank_deferred(estate, event, now)
        return "{}", "", 0
    if kind in ("SubagentStart", "SubagentStop"):
        agent = event.agent or {}
        record = dict(base, k="subagent-start" if kind == "SubagentStart" else
                      "subagent-stop", agent=agent.get("id", ""),
                      agent_type=agent.get("type", ""))
        if kind == "SubagentStop":
            record["message"] = redact_clip(
                str(event.raw.get("last_assistant_message") or ""), 500)
        try_append(journal, _stamp(record, started))
        return "{}", "", 0
    try_append(journal, _stamp(dict(base, k="notice", message=redact_clip(
        str(event.raw.get("message") or ""), 500)), started))
    return "{}", "", 0


def _hands_over_a_bank(event):
    """Whether a finished call printed a note a sandboxed `notrest bank` could not
    write itself (cheap: one substring search of the output)."""
    response = event.tool_response
    texts = (response.get("stdout"), response.get("stderr")) if isinstance(
        response, dict) else (response if isinstance(response, str) else
                              event.raw.get("error"),)
    return any(isinstance(t, str) and BANK_DEFERRED_MARK in t for t in texts)


def cold_module():
    """The whole module: itself when loaded whole, else notrest.py imported beside
    the generated module a launcher loaded (load_source_module)."""
    module = sys.modules.get("notrest")
    if module is None or not hasattr(module, "dispatch_cold"):
        module = load_source_module(os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "notrest.py"))
    return module


def load_source_module(path, env=None):
    """The whole of notrest.py, registered as sys.modules["notrest"], by Python's
    own import: its bytecode under pycache_prefix() (~10 ms; install writes it,
    and the import rewrites it when notrest.py changed), never a .pyc in the
    project, which the agent could have written."""
    try:  # the module importlib.machinery re-exports (importing that: +0.5 ms)
        import _frozen_importlib_external as machinery
    except ImportError:
        from importlib import machinery
    loader = machinery.SourceFileLoader("notrest", path)
    before = sys.pycache_prefix
    sys.pycache_prefix = pycache_prefix(env)
    try:
        code = loader.get_code("notrest")
    finally:
        sys.pycache_prefix = before
    module = type(sys)("notrest")
    module.__file__, module.__loader__ = path, loader
    sys.modules["notrest"] = module
    import gc
    enabled = gc.isenabled()
    gc.disable()  # thousands of new objects, none of them garbage (see LAUNCH_TAIL)
    try:
        exec(code, module.__dict__)
        if not hasattr(module, "COMMANDS"):  # its last definition: a cut file lacks it
            raise ImportError("notrest.py is incomplete (%s)" % path)
    except BaseException:
        del sys.modules["notrest"]
        raise
    finally:
        if enabled:
            gc.freeze()
            gc.enable()
    return module



# notrest: generated from notrest.py (its text above the '# ==== cold ====' line) by install and tests/regenerate.py. Edit notrest.py, never this file.
