"""Shared machinery of the fake model servers (stdlib only, Python 3.9+).

A fake server is a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0 = a free port)
that answers the model API of one client from a *script* and logs every request
as one JSON line.  ``fake_anthropic.FakeAnthropic`` and ``fake_openai.FakeOpenAI``
subclass :class:`FakeServer` and only know their wire format.

Script format (the same for both servers; only the tool-call shape differs)::

    {"scripts": {"<substring of the first user prompt>": [turn, turn, ...], ...},
     "default": [turn, ...]}

A turn is one model answer::

    {"text": "..."}                                   # final answer (end_turn)
    {"tool_calls": [{"name": "Bash", "input": {...}}]} # Anthropic tool_use blocks
    {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "..."}}]}  # OpenAI
    optional keys on any turn:
      "text"          also allowed next to tool_calls (a text block first)
      "delay"         seconds to sleep before answering (the request is logged first)
      "input_tokens"  / "output_tokens"   usage reported for this turn
      "error"         {"status": 500, "message": "..."} answer an HTTP error instead

Selection is stateless: the script is the one whose key occurs in the first
user prompt of the request (longest key wins; else ``default``), and the turn
index is ``max(stamp found in the assistant part of the history) + 1`` (0 when
there is none), or the ``turns_done=N`` written into a fake compaction summary
when that is larger.  Every answer carries its stamp: tool ids ``toolu_t3_<hex>``
/ ``call_t3_<hex>`` and `` [t3]`` appended to every text.  Past the end of the
script the server answers ``done [tN]``.

Compaction requests are recognised per client (see the subclasses) and answered
with ``<summary>... [fake-summary script=<key> turns_done=N]</summary>``.
"""

import gzip
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote
from typing import Any, Dict, List, Optional, Tuple, Union

STAMP_TEXT_RE = re.compile(r"\[t(\d+)\]")
STAMP_ID_RE = re.compile(r"(?:toolu|call|fc|msg)_t(\d+)_")
SUMMARY_RE = re.compile(r"\[fake-summary script=([^\s\]]*) turns_done=(\d+)\]")
DEFAULT_KEY = "(default)"


def new_hex(n: int = 16) -> str:
    return uuid.uuid4().hex[:n]


def load_script(script: Union[None, str, os.PathLike, dict]) -> dict:
    """Accept a dict, a JSON string, or a path to a JSON file."""
    if script is None:
        return {"scripts": {}, "default": []}
    if isinstance(script, dict):
        data = script
    else:
        text = str(script)
        if not text.lstrip().startswith("{"):
            text = Path(text).read_text(encoding="utf-8")
        data = json.loads(text)
    data = dict(data)
    data.setdefault("scripts", {})
    data.setdefault("default", [])
    return data


def max_stamp(texts: List[str]) -> int:
    """Highest turn stamp found in the given texts, -1 if none."""
    best = -1
    for t in texts:
        for rx in (STAMP_TEXT_RE, STAMP_ID_RE):
            for m in rx.finditer(t):
                best = max(best, int(m.group(1)))
    return best


def find_summary(texts: List[str]) -> Optional[Tuple[str, int]]:
    """The (script key, turns_done) of the last fake summary in texts."""
    found = None
    for t in texts:
        for m in SUMMARY_RE.finditer(t):
            found = (unquote(m.group(1)), int(m.group(2)))
    return found


class Choice:
    """What the server decided to serve for one request."""

    def __init__(self, kind: str, key: str, turn_index: int, turn: Optional[dict]):
        self.kind = kind  # "turn" | "exhausted" | "compact"
        self.key = key
        self.turn_index = turn_index
        self.turn = turn

    def as_log(self) -> dict:
        return {"kind": self.kind, "script": self.key, "turn": self.turn_index}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeModel/1.0"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def _read_body(self) -> bytes:
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks = []
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0] or b"0", 16)
                if size == 0:
                    # trailers until blank line
                    while self.rfile.readline().strip():
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        else:
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        return raw

    def _handle(self):
        fake = self.server.fake  # type: ignore[attr-defined]
        try:
            raw = self._read_body() if self.command not in ("GET", "HEAD") else b""
        except Exception as exc:  # pragma: no cover - defensive
            raw = b""
            fake._log({"error": "body read failed: %r" % (exc,)})
        body: Any = None
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
            except Exception:
                body = {"_unparsed": raw[:2000].decode("utf-8", "replace"),
                        "_encoding": self.headers.get("Content-Encoding")}
        status, headers, payload, served, delay = fake.respond(
            self.command, self.path, dict(self.headers.items()), body)
        fake._log({
            "ts": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": body,
            "served": served,
        })
        if delay:
            # interruptible sleep: stop() wakes every sleeper
            if fake._stopping.wait(delay):
                self.close_connection = True
                return
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(payload)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


class FakeServer:
    """Base class: script handling, logging, lifecycle.

    Use as a context manager, or call start() / stop().  ``url`` is the base URL
    (``http://127.0.0.1:PORT``); ``requests()`` reads back the log.
    """

    name = "fake"

    def __init__(self, script=None, log_path: Union[None, str, os.PathLike] = None,
                 port: int = 0, host: str = "127.0.0.1"):
        self.script = load_script(script)
        if log_path is None:
            import tempfile
            fd, log_path = tempfile.mkstemp(prefix="%s-" % self.name, suffix=".jsonl")
            os.close(fd)
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("", encoding="utf-8")
        self._host = host
        self._port = port
        self._httpd: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    # ---- lifecycle -------------------------------------------------------
    def start(self) -> "FakeServer":
        self._httpd = _Server((self._host, self._port), _Handler)
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name="%s-server" % self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """Base URL without a path (``http://127.0.0.1:PORT``)."""
        return "http://%s:%d" % (self._host, self._port)

    def set_script(self, script) -> None:
        self.script = load_script(script)

    # ---- log -------------------------------------------------------------
    def _log(self, entry: dict) -> None:
        line = json.dumps(entry, ensure_ascii=False, default=str)
        with self._lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def requests(self, model_only: bool = True) -> List[dict]:
        """Logged requests, oldest first; by default only model requests."""
        out = []
        with self._lock:
            text = self.log_path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            if model_only and not (entry.get("served") or {}).get("kind") in (
                    "turn", "exhausted", "compact"):
                continue
            out.append(entry)
        return out

    # ---- script selection -------------------------------------------------
    def choose(self, first_prompt: str, assistant_texts: List[str],
               all_texts: List[str], compaction: bool) -> Choice:
        summary = find_summary(all_texts)
        key = None
        if first_prompt:
            for k in sorted(self.script["scripts"], key=len, reverse=True):
                if k and k in first_prompt:
                    key = k
                    break
        if key is None and summary and summary[0] in self.script["scripts"]:
            key = summary[0]
        turns = self.script["scripts"][key] if key is not None else self.script["default"]
        key = key if key is not None else DEFAULT_KEY
        index = max_stamp(assistant_texts) + 1
        if summary and summary[0] == key:
            index = max(index, summary[1])
        if compaction:
            return Choice("compact", key, index, None)
        if index < len(turns):
            return Choice("turn", key, index, turns[index])
        return Choice("exhausted", key, index, None)

    # ---- to be provided by subclasses ------------------------------------
    def respond(self, method: str, path: str, headers: Dict[str, str], body: Any):
        """Return (status, headers, payload bytes, served-dict, delay seconds)."""
        raise NotImplementedError

    @staticmethod
    def summary_text(choice: Choice) -> str:
        return ("<analysis>fake</analysis>\n<summary>Summary of the work so far. "
                "[fake-summary script=%s turns_done=%d]</summary>"
                % (quote(choice.key, safe=""), choice.turn_index))


def serve_main(cls, argv=None) -> int:
    """Command line: run one fake server until SIGINT/SIGTERM."""
    import argparse
    ap = argparse.ArgumentParser(description="run the %s fake model server" % cls.name)
    ap.add_argument("--script", help="script JSON file (or inline JSON)")
    ap.add_argument("--log", help="request log (JSON lines); default: a temp file")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    srv = cls(args.script, args.log, port=args.port)
    srv.start()
    print(json.dumps({"url": srv.url, "log": str(srv.log_path), "pid": os.getpid()}),
          flush=True)
    done = threading.Event()

    def _stop(*_):
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    while not done.wait(0.5):
        pass
    srv.stop()
    return 0


def start_subprocess(module_file: str, script=None, log_path=None, timeout: float = 10.0):
    """Start a fake server as a child process (own process group).

    Returns (url, stop) where stop() kills the whole group and reaps it.
    """
    import subprocess
    import tempfile
    args = [sys.executable, module_file]
    tmp = None
    if script is not None:
        if isinstance(script, dict):
            fd, tmp = tempfile.mkstemp(suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(script, f)
            args += ["--script", tmp]
        else:
            args += ["--script", str(script)]
    if log_path is not None:
        args += ["--log", str(log_path)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True, text=True)
    deadline = time.time() + timeout
    line = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.strip():
            break
    info = json.loads(line)

    def stop():
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=5)
        except Exception:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if tmp:
            os.unlink(tmp)

    return info["url"], stop
