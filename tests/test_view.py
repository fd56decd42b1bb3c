"""`notrest view`: one self-contained HTML page of the estate, rendered by a real
headless Chromium (Debian's `chromium`). The estate is written by the installed hooks
as the clients run them, with hostile agent-written text in it; the tests read the
DOM Chromium built and the pixels of its screenshot.

    python3 tests/test_view.py docs/view.png     # regenerate the README's picture
"""
import http.server
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO, make_project, simulate, step  # noqa: E402
import notrest  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = ("</details><script>document.title='pwned'</script>"
           "<img src=http://127.0.0.1:{port}/pwn onerror=alert(1)>")


def chromium(*args, tmp):
    """Headless Chromium as root on a CI box: no sandbox, no GPU, no network
    chatter of its own, an empty profile."""
    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (apt-get install -y chromium)",
                        pytrace=False)
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    profile = Path(tmp) / ("chromium-profile-%d" % time.monotonic_ns())
    profile.mkdir(parents=True)
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=%s" % profile] + list(args)
    proc = subprocess.run(argv, capture_output=True, timeout=120,
                          env=dict(os.environ, HOME=str(profile)))
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    return proc.stdout.decode("utf-8", "replace")


class Recorder(http.server.BaseHTTPRequestHandler):
    hits = []

    def do_GET(self):
        Recorder.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def demo_estate(tmp_path, port=9):
    """A project whose estate the installed hooks wrote: Claude and Codex sessions
    that banked, one that died, one still live; prompts (one hostile), tools, files,
    a failure, denials, an override, repeated work learned and compiled."""
    proj = make_project(tmp_path)
    root = proj.root
    (root / ".env").write_text("API_KEY=sk-live-4f9b2c1d8e7a6b5c\n")

    def call(session, client, command, ok=True):
        payload = proj.payload("PreToolUse", session, client, tool_name="Bash",
                               tool_input={"command": command})
        answer = proj.hook("PreToolUse", payload, client).answer
        if answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny":
            return False
        event = "PostToolUse" if ok or client == "codex" else "PostToolUseFailure"
        fields = {"tool_response": {"stdout": "ok"}} if client == "claude" else {
            "tool_response": "ok" if ok else "Exit code: 1\nFAILED"}
        if not ok and client == "claude":
            fields = {"error": "Exit code 1\nFAILED test_login"}
        proj.hook(event, proj.payload(event, session, client, tool_name="Bash",
                                      tool_input={"command": command}, **fields), client)
        return True

    def session(sid, client, prompt, commands, note=None, end=True, write=None):
        proj.hook("SessionStart", proj.payload("SessionStart", sid, client,
                                               source="startup"), client)
        proj.hook("UserPromptSubmit", proj.payload("UserPromptSubmit", sid, client,
                                                   prompt=prompt), client)
        for command, ok in commands:
            call(sid, client, command, ok)
        if write:
            target = str(root / write)
            payload = proj.payload("PostToolUse", sid, client, tool_name="Write",
                                   tool_input={"file_path": target, "content": "x"},
                                   tool_response={"filePath": target})
            proj.hook("PostToolUse", payload, client)
        if note:
            assert proj.cli("bank", "--session", sid, "--note", note[0], "--next",
                            note[1]).code == 0
        if end:
            proj.hook("SessionEnd", proj.payload("SessionEnd", sid, client,
                                                 reason="exit"), client)

    repeated = [("make fmt && make lint", True), ("pytest -q tests/test_a.py", True)]
    session("c1-banked", "claude", "add a login page " + HOSTILE.format(port=port),
            repeated + [("pytest -q", False), ("rm -rf ~", True)],
            note=("login page added; <b>bold</b> claims", "wire the logout button"),
            write="login.html")
    session("x1-banked", "codex", "tidy the imports",
            repeated + [("cat .env", True)], note=("imports tidied", "run the linter"))
    assert proj.cli("allow", "protect-secrets", "--once", "--why",
                    "the person needs the key checked").code == 0
    session("c2-override", "claude", "check the key in .env",
            repeated + [("cat .env", True)], note=("key checked", ""))
    # a session whose client died: its stand-in process ran the hooks and exited
    simulate(proj, [step("SessionStart", proj.payload("SessionStart", "c3-died",
                                                      source="startup")),
                    step("UserPromptSubmit", proj.payload(
                        "UserPromptSubmit", "c3-died", prompt="refactor the parser")),
                    step("PostToolUse", proj.payload(
                        "PostToolUse", "c3-died", tool_name="Bash",
                        tool_input={"command": "git diff --stat"},
                        tool_response={"stdout": ""}))], tmp_path, name="died")
    # a live one: its client (this test) is still running
    session("x2-live", "codex", "write the changelog for 1.1",
            [("git log --oneline v1.0..", True), ("make docs", False)], end=False,
            write="CHANGELOG.md")
    learned = proj.cli("learn")
    assert learned.code == 0, learned.stderr
    candidates = notrest.load_candidates(proj.estate)
    sequence = next(c for c in candidates if c["kind"] == "sequence")
    assert proj.cli("compile", sequence["id"]).code == 0
    return proj


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    tmp = tmp_path_factory.mktemp("view")
    proj = demo_estate(tmp, server.server_address[1])
    result = proj.cli("view")
    assert result.code == 0, result.stderr
    page = Path(result.stdout.strip())
    Recorder.hits = []
    dom = chromium("--dump-dom", page.as_uri(), tmp=tmp)
    shot = tmp / "view.png"
    chromium("--screenshot=%s" % shot, "--window-size=1280,1500", "--hide-scrollbars",
             page.as_uri(), tmp=tmp)
    time.sleep(0.3)
    hits = list(Recorder.hits)
    server.shutdown()
    return {"proj": proj, "page": page, "dom": dom, "shot": shot, "hits": hits,
            "tmp": tmp}


def _rows(dom, attr):
    return re.findall(r'<tr data-%s="([^"]*)">(.*?)</tr>' % attr, dom, re.S)


def _cells(row):
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row,
                                                          re.S)]


def test_the_page_is_where_it_says_and_loads_nothing(demo):
    assert demo["page"] == demo["proj"].root / ".notrest" / "view.html"
    text = demo["page"].read_text()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    tags = re.findall(r"<[a-zA-Z][^>]*>", text)
    assert not [t for t in tags if re.search(r"""\s(src|href)=["']?[a-z]*:?//""", t)]
    assert {t.split()[0].strip("<>") for t in tags} <= {
        "html", "head", "meta", "title", "style", "body", "header", "h1", "p", "main",
        "section", "h2", "h3", "svg", "text", "line", "a", "rect", "title", "details",
        "summary", "span", "dl", "dt", "dd", "ol", "ul", "li", "code", "b", "i",
        "table", "thead", "tbody", "tr", "th", "td"}
    assert "<script" not in text.lower() and "<link" not in text.lower()
    assert demo["hits"] == [], "the page made the browser fetch %r" % demo["hits"]


def test_chromium_renders_every_session_with_its_state(demo):
    dom = demo["dom"]
    sessions = dict(re.findall(r'<details class="session" id="s-[^"]*" '
                               r'data-session="([^"]*)" data-state="([^"]*)"', dom))
    assert sessions == {"c1-banked": "banked", "x1-banked": "banked",
                        "c2-override": "banked", "c3-died": "died", "x2-live": "live"}
    bars = re.findall(r'<rect class="bar bar-(\w+)"', dom)
    assert sorted(bars) == sorted(sessions.values())
    lanes = re.findall(r"<text x=\"4\" y=\"\d+\">([^<]*)</text>", dom)
    assert len(lanes) == 2 and {lane.split("·")[-1].strip() for lane in lanes} == {
        "claude", "codex"}
    assert "showing all 5 sessions" in dom


def test_a_session_shows_note_next_prompts_tools_files_failures_denials(demo):
    dom = demo["dom"]
    block = dom[dom.index('data-session="c1-banked"'):]
    block = block[:block.index("</details>")]
    assert "login page added; &lt;b&gt;bold&lt;/b&gt; claims" in block
    assert "wire the logout button" in block
    assert "add a login page &lt;/details&gt;&lt;script&gt;" in block
    assert "<code>make fmt &amp;&amp; make lint</code>" in block
    assert "<code>login.html</code>" in block
    assert "pytest -q</code> exit 1; failing tests: test_login" in block
    assert "<b>no-destroy</b> deny: <code>rm -rf ~</code>" in block
    override = dom[dom.index('data-session="c2-override"'):]
    override = override[:override.index("</details>")]
    assert "<b>protect-secrets</b> by" in override
    assert "the person needs the key checked" in override


def test_hostile_text_stays_text(demo):
    dom = demo["dom"]
    assert "pwned" not in re.findall(r"<title>(.*?)</title>", dom)[0]
    assert "<script" not in dom and "<img" not in dom
    assert "&lt;img src=http://127.0.0.1:" in dom
    assert dom.count("<details") == 5, "the hostile </details> closed nothing"


def test_laws_with_how_often_each_fired(demo):
    laws = {law: _cells(row) for law, row in _rows(demo["dom"], "law")}
    assert set(notrest.BUILTIN_LAWS[i]["id"] for i in range(len(
        notrest.BUILTIN_LAWS))) <= set(laws)
    assert laws["no-destroy"][2] == "1"
    assert laws["protect-secrets"][2] == "1" and laws["protect-secrets"][3] == "1"
    assert laws["no-force-push"][2] == "0"


def test_learned_candidates_and_compiled_tools(demo):
    candidates = _rows(demo["dom"], "candidate")
    assert candidates and any("make fmt &amp;&amp; make lint" in row
                              for _id, row in candidates)
    compiled = _rows(demo["dom"], "compiled")
    assert len(compiled) == 1
    assert "sh .notrest/compiled/%s/run.sh" % compiled[0][0] in compiled[0][1]


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + size
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc
                                      else c)) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def test_the_screenshot_shows_the_timeline_in_its_colours(demo):
    width, height, rows = read_png(demo["shot"])
    assert (width, height) == (1280, 1500)
    counts = {}
    for row in rows:
        for pixel in row:
            counts[pixel] = counts.get(pixel, 0) + 1
    for state, colour in notrest.VIEW_COLORS.items():
        rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert counts.get(rgb, 0) > 150, "no %s bar drawn (%s)" % (state, colour)
    header = rows[10][640]
    assert header == (0x1b, 0x1f, 0x24), "the dark header is at the top"


def _big_estate(root, sessions):
    """An estate of many finished sessions written the way the hooks write it."""
    estate = notrest.Estate(str(root))
    os.makedirs(estate.path("journal"))
    entries = []
    base = 1_700_000_000.0
    for i in range(sessions):
        sid = "big-%05d" % i
        t = base + i * 600
        lines = [{"v": 1, "t": t, "k": "start", "c": "claude" if i % 3 else "codex",
                  "source": "startup", "e": "SessionStart"},
                 {"v": 1, "t": t + 5, "k": "prompt", "text": "task %d <b>x</b>" % i},
                 {"v": 1, "t": t + 9, "k": "tool", "tool": "Bash", "what": "make %d" % i,
                  "ok": True, "files": []},
                 {"v": 1, "t": t + 60, "k": "note", "note": "did %d" % i, "next": ""},
                 {"v": 1, "t": t + 61, "k": "end", "reason": "exit"}]
        with open(estate.journal(sid), "w") as handle:
            handle.write("".join(notrest.encode_line(r) for r in lines))
        rec = notrest.new_session_record(sid)
        for r in lines:
            notrest.fold_event(rec, r)
        entries.append(notrest._index_entry(rec))
    entries.sort(key=lambda e: -(e.get("started") or 0))
    notrest.write_atomic(estate.path("index.json"), json.dumps(
        {"schema_version": 1, "sessions": entries[:notrest.INDEX_MAX_SESSIONS]}))
    return estate


def test_ten_thousand_sessions_stay_readable_bounded_and_say_so(tmp_path):
    estate = _big_estate(tmp_path / "big", 10_000)
    started = time.process_time()  # CPU time: a loaded machine is slow, not wrong
    path = notrest.write_view(estate)
    seconds = time.process_time() - started
    page = Path(path).read_text()
    assert seconds < 30, "generous bound; the benchmark is the measure"
    assert len(page) < 2_000_000
    assert "the newest 200 of 10000 sessions (bounded" in page
    dom = chromium("--dump-dom", Path(path).as_uri(), tmp=tmp_path)
    shown = re.findall(r'data-session="(big-\d+)"', dom)
    assert len(shown) == 200 and shown[0] == "big-09999" and shown[-1] == "big-09800"
    assert len(re.findall(r'<rect class="bar', dom)) == 200
    more = notrest.write_view(estate, str(tmp_path / "more.html"), limit=10_000)
    assert "the newest 500 of 10000" in Path(more).read_text()


def test_view_writes_where_it_is_told_and_needs_an_estate(tmp_path):
    proj = make_project(tmp_path)
    out = tmp_path / "elsewhere" / "trail.html"
    result = proj.cli("view", "--out", str(out))
    assert result.code == 0 and result.stdout.strip() == str(out)
    assert "No sessions yet." in out.read_text()
    bare = tmp_path / "bare"
    bare.mkdir()
    proc = subprocess.run([sys.executable, str(REPO / "notrest.py"), "--root", str(bare),
                           "view"], capture_output=True, text=True)
    assert proc.returncode == 3 and "notrest is not installed here" in proc.stderr



def test_view_out_writes_only_a_page_of_its_own(tmp_path):
    """Issue #28 item 3: `view` is an agent's verb, so --out can make nothing of the
    harness (a launcher, a setting) into HTML, nor overwrite what is not a view."""
    proj = make_project(tmp_path)
    launcher = proj.root / ".notrest" / "hooks" / "pre-tool-use.sh"
    before = launcher.read_bytes()
    (proj.root / "notes.html").write_text("<p>mine</p>\n")
    link = proj.root / "page.html"
    link.symlink_to(launcher)
    refused = [launcher, proj.root / ".notrest" / "hooks" / "x.html",
               proj.root / ".claude" / "settings.json", proj.root / ".claude" / "x.html",
               proj.root / ".codex" / "hooks.html", proj.root / "notes.html", link,
               proj.home / ".claude" / "view.html"]
    for target in refused:
        result = proj.cli("view", "--out", str(target))
        assert result.code == 2, (target, result.stdout, result.stderr)
        assert "view --out" in result.stderr and "Traceback" not in result.stderr
    assert launcher.read_bytes() == before
    assert (proj.root / "notes.html").read_text() == "<p>mine</p>\n"
    page = proj.root / "docs" / "trail.html"
    for _ in range(2):  # a page it wrote before may be written again
        result = proj.cli("view", "--out", str(page))
        assert result.code == 0, result.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")
    gate = proj.hook("PreToolUse", proj.payload("PreToolUse", "v-1", tool_name="Bash",
                                                tool_input={"command": "ls"}))
    assert gate.code == 0 and "permissionDecision" not in json.dumps(gate.answer)

if __name__ == "__main__":
    import tempfile
    target = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "docs" / "view.png")
    with tempfile.TemporaryDirectory() as tmp:
        proj = demo_estate(Path(tmp))
        page = Path(proj.cli("view").stdout.strip())
        target.parent.mkdir(parents=True, exist_ok=True)
        chromium("--screenshot=%s" % target.resolve(), "--window-size=1280,900",
                 "--hide-scrollbars", page.as_uri(), tmp=tmp)
        print(target)
