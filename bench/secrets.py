"""Secret detection scored on the corpus, and the cost of one scan.

    python3 bench/secrets.py [--source DIR] [--runs N]

Scores the notrest.py of the checkout (or of DIR, e.g. an older version) through its
public functions only (find_secrets(text, strict=True) decides a prompt refusal,
redact_secrets(text) what reaches the estate), on tests/data/secrets/:
  - the secret corpus: one synthetic value per real format, in context;
  - the benign look-alikes, and ordinary 20 KB code prompts;
and times one scan of a 20 KB code prompt and of a short prompt (fresh interpreter
per run, median of N: the first scan in a process builds the rule table). Through
the hooks, end to end, the same corpus runs in tests/test_secrets.py and the hook
cost in bench/hooks.py ("UserPromptSubmit 20KB code"). Stdlib only.
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "tests"))
import secret_corpus  # noqa: E402

TIMING_CODE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import notrest
text = open(sys.argv[2], encoding="utf-8").read()
start = time.perf_counter()
notrest.find_secrets(text, True)
notrest.redact_secrets(text)
print((time.perf_counter() - start) * 1000)
"""


def load(source):
    spec = importlib.util.spec_from_file_location("notrest_scored",
                                                  os.path.join(source, "notrest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(nr):
    corpus = secret_corpus.load()["secrets"]
    refused = [e for e in corpus if nr.find_secrets(e["text"], True)]
    kept_out = [e for e in corpus if e["needle"] not in nr.redact_secrets(e["text"])]
    across = []
    for entry in corpus:        # the value starts 24 characters before a 400 cut
        text = "x" * max(0, 375 - entry["text"].find(entry["value"])) + " " + entry["text"]
        if hasattr(nr, "redact_clip"):
            out = nr.redact_clip(text, 400)
        else:                   # what notrest 1.0 did: cut the command, then redact
            out = nr.redact_secrets(nr.clip(text, 400))
        out = _without_markers(out)
        if not any(p in out for p in _pieces(entry["secret"], 8, 1)):
            across.append(entry)
    benign = secret_corpus.benign()
    benign_refused = [b for b in benign if nr.find_secrets(b["text"], True)]
    benign_redacted = [b for b in benign if nr.redact_secrets(b["text"]) != b["text"]]
    prompts = secret_corpus.code_prompts()
    prompts_refused = [n for n, p in prompts if nr.find_secrets(p, True)]
    return {"corpus": len(corpus), "refused": len(refused), "kept_out": len(kept_out),
            "across_cut": len(across), "benign": len(benign),
            "benign_refused": len(benign_refused),
            "benign_redacted": len(benign_redacted), "prompts": len(prompts),
            "prompts_refused": len(prompts_refused),
            "missed": [e["id"] for e in corpus if e not in refused],
            "false": [b["text"][:50] for b in benign_refused]}


def _without_markers(text):
    """The text without its [REDACTED:kind] markers (a kind may spell a prefix)."""
    out, pos = [], 0
    while True:
        start = text.find("[REDACTED:", pos)
        if start < 0:
            return "".join(out) + text[pos:]
        end = text.find("]", start)
        out.append(text[pos:start])
        pos = len(text) if end < 0 else end + 1


def _pieces(value, size=10, step=5):
    return {value[i:i + size] for i in range(0, max(1, len(value) - size), step)
            if len(set(value[i:i + size])) > 5}


def timing(source, runs, scratch):
    prompts = dict(secret_corpus.code_prompts())
    cases = (("20 KB code prompt", prompts["settings.py.txt"]),
             ("short prompt", "run the tests and fix what fails in src/app.py"))
    out = []
    for label, text in cases:
        path = os.path.join(scratch, "prompt.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        values = []
        for _ in range(runs):
            proc = subprocess.run([sys.executable, "-I", "-S", "-c", TIMING_CODE,
                                   source, path], capture_output=True, text=True,
                                  timeout=60)
            values.append(float(proc.stdout.strip() or "nan"))
        out.append((label, statistics.median(values)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default=REPO, help="folder holding notrest.py")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    import tempfile
    nr = load(args.source)
    result = score(nr)
    pct = lambda n, d: "%d of %d (%.0f%%)" % (n, d, 100.0 * n / d if d else 0)
    print("# notrest bench/secrets.py: %s" % os.path.join(args.source, "notrest.py"))
    print("measure                                         result")
    print("----------------------------------------------  --------------------")
    print("real formats refused in a prompt                %s" % pct(result["refused"],
                                                                     result["corpus"]))
    print("real formats kept out of the estate (redacted)  %s" % pct(result["kept_out"],
                                                                     result["corpus"]))
    print("... and when they lie across a 400-char cut     %s" % pct(
        result["across_cut"], result["corpus"]))
    print("benign look-alikes refused                      %s" % pct(
        result["benign_refused"], result["benign"]))
    print("benign look-alikes redacted                     %s" % pct(
        result["benign_redacted"], result["benign"]))
    print("ordinary 20 KB code prompts refused             %s" % pct(
        result["prompts_refused"], result["prompts"]))
    with tempfile.TemporaryDirectory() as scratch:
        for label, ms in timing(args.source, args.runs, scratch):
            print("one scan, %-36s  %.2f ms (fresh process, median of %d)" % (
                label, ms, args.runs))
    if result["missed"]:
        print("not refused: %s" % ", ".join(result["missed"]))
    if result["false"]:
        print("refused benign: %s" % "; ".join(result["false"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
