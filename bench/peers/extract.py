"""Extract the peers' test cases as facts (command, expected verdict, origin) into
bench/peers/*.json. Not a test; run by hand when a peer's suite moves:

    python3 bench/peers/extract.py SAFETY_NET_GIT_DIR DCG_GIT_DIR

Each argument is a git directory (the search tool's `fetch` gives one, e.g.
/work/.mirror/kenryu42+claude-code-safety-net/repo). Only commands and verdicts are
taken, never code: a call whose command is not a plain string literal is skipped
and counted. Needs Python 3.11 (tomllib) and PyYAML for dcg's YAML fixtures."""
import json
import os
import re
import subprocess
import sys
import tomllib

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo] + list(args), check=True,
                          capture_output=True).stdout.decode("utf-8", "replace")


# ---- JavaScript / TypeScript literals ---------------------------------------------

_JS_ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def js_skip_space(src, i):
    while i < len(src):
        if src[i] in " \t\r\n":
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = len(src) if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i)
            i = len(src) if j < 0 else j + 2
        else:
            break
    return i


def js_string(src, i):
    """(text, index after) of the JS string literal at src[i], or (None, i)."""
    quote = src[i:i + 1]
    if quote not in ("'", '"', "`"):
        return None, i
    out, j = [], i + 1
    while j < len(src):
        c = src[j]
        if c == quote:
            return "".join(out), j + 1
        if quote == "`" and c == "$" and src[j + 1:j + 2] == "{":
            return None, i
        if c == "\\":
            nxt = src[j + 1:j + 2]
            if nxt == "u":
                if src[j + 2:j + 3] == "{":
                    end = src.index("}", j)
                    out.append(chr(int(src[j + 3:end], 16)))
                    j = end + 1
                else:
                    out.append(chr(int(src[j + 2:j + 6], 16)))
                    j += 6
                continue
            if nxt == "x":
                out.append(chr(int(src[j + 2:j + 4], 16)))
                j += 4
                continue
            if nxt == "\n":
                j += 2
                continue
            out.append(_JS_ESC.get(nxt, nxt))
            j += 2
            continue
        if c == "\n" and quote != "`":
            return None, i
        out.append(c)
        j += 1
    return None, i


def js_literal_expr(src, i):
    """A string made of literals joined by +: (text, index after) or (None, i)."""
    i = js_skip_space(src, i)
    text, j = js_string(src, i)
    if text is None:
        return None, i
    while True:
        k = js_skip_space(src, j)
        if src[k:k + 1] != "+":
            return text, j
        k = js_skip_space(src, k + 1)
        more, k2 = js_string(src, k)
        if more is None:
            return None, i
        text, j = text + more, k2


def js_matching(src, i):
    """Index of the bracket closing the one at src[i] (strings and comments aware)."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack, j = [pairs[src[i]]], i + 1
    while j < len(src) and stack:
        c = src[j]
        if c in "'\"`":
            _, k = js_string(src, j)
            j = k if k > j else _skip_raw_quote(src, j)
            continue
        if src.startswith("//", j) or src.startswith("/*", j):
            j = js_skip_space(src, j)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
        j += 1
    return j - 1


def _skip_raw_quote(src, j):
    """Skip a quoted run we could not decode (a template with ${}): to its close."""
    quote, k = src[j], j + 1
    depth = 0
    while k < len(src):
        if src[k] == "\\":
            k += 2
            continue
        if quote == "`" and src.startswith("${", k):
            depth += 1
            k += 2
            continue
        if depth and src[k] == "}":
            depth -= 1
        elif not depth and src[k] == quote:
            return k + 1
        k += 1
    return k


def js_args(src, open_paren):
    """The argument texts of a call whose '(' is at open_paren (top-level commas)."""
    close = js_matching(src, open_paren)
    args, start, j = [], open_paren + 1, open_paren + 1
    while j < close:
        c = src[j]
        if c in "'\"`":
            _, k = js_string(src, j)
            j = k if k > j else _skip_raw_quote(src, j)
            continue
        if c in "([{":
            j = js_matching(src, j) + 1
            continue
        if c == ",":
            args.append((start, j))
            start = j + 1
        j += 1
    if src[start:close].strip():
        args.append((start, close))
    return args, close


def env_ranges(src):
    """[(start, end, {VAR: value})] of every withEnv({...}, () => {...}) call."""
    out = []
    for m in re.finditer(r"\bwithEnv\s*\(", src):
        paren = m.end() - 1
        args, close = js_args(src, paren)
        env = {}
        if args:
            body = src[args[0][0]:args[0][1]]
            for km in re.finditer(r"([A-Z_][A-Z0-9_]*)\s*:\s*('[^']*'|\"[^\"]*\"|[\w.]+)",
                                  body):
                env[km.group(1)] = km.group(2).strip("'\"")
        out.append((m.start(), close, env))
    return out


def test_names(src):
    """[(start, end, name)] of test('name', ...) / describe blocks."""
    out = []
    for m in re.finditer(r"\b(test|it|describe)\s*\(", src):
        paren = m.end() - 1
        name, _ = js_literal_expr(src, paren + 1)
        close = js_matching(src, paren)
        out.append((m.start(), close, m.group(1), name or "?"))
    return out


SN_MODE_VARS = ("SAFETY_NET_STRICT", "SAFETY_NET_PARANOID", "SAFETY_NET_PARANOID_RM",
                "SAFETY_NET_PARANOID_INTERPRETERS", "SAFETY_NET_WORKTREE")


def extract_safety_net(repo):
    commit = git(repo, "rev-parse", "HEAD").strip()
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", "HEAD", "tests").split()
             if f.endswith(".test.ts")]
    cases, skipped = [], {}
    for path in sorted(files):
        src = git(repo, "show", "HEAD:" + path)
        if "assertBlocked" not in src and "assertAllowed" not in src:
            continue
        envs, names = env_ranges(src), test_names(src)
        for m in re.finditer(r"\bassert(Blocked|Allowed)\s*\(", src):
            if src[max(0, m.start() - 9):m.start()].endswith("function "):
                continue
            paren = m.end() - 1
            args, _ = js_args(src, paren)
            line = src.count("\n", 0, m.start()) + 1
            where = "%s:%d" % (path, line)
            if not args:
                continue
            command, _ = js_literal_expr(src, args[0][0])
            if command is None:
                skipped["command is not a literal"] = skipped.get(
                    "command is not a literal", 0) + 1
                continue
            blocked = m.group(1) == "Blocked"
            cwd_index = 2 if blocked else 1
            cwd = None
            if len(args) > cwd_index:
                cwd_text = src[args[cwd_index][0]:args[cwd_index][1]].strip()
                cwd, _ = js_literal_expr(src, args[cwd_index][0])
                if cwd is None:
                    cwd = "<fixture:%s>" % cwd_text
            env = {}
            for start, end, values in envs:
                if start < m.start() < end:
                    env.update(values)
            mode = "custom-rules" if "rules-custom" in path else "default"
            flags = sorted(k for k in env if k in SN_MODE_VARS)
            if flags:
                mode = ",".join(k.replace("SAFETY_NET_", "").lower() for k in flags)
            elif env:
                mode = "env:" + ",".join(sorted(env))
            in_loop = "for (const" in src[max(0, m.start() - 300):m.start()] and \
                src.rfind("for (const", 0, m.start()) > src.rfind("});", 0, m.start())
            title = [n for s, e, kind, n in names if s < m.start() < e]
            reason = None
            if blocked and len(args) > 1:
                reason, _ = js_literal_expr(src, args[1][0])
            case = {"id": "sn-%04d" % (len(cases) + 1), "command": command,
                    "expect": "deny" if blocked else "allow", "mode": mode,
                    "source": where, "test": " > ".join(title)[:200]}
            if reason:
                case["peer_reason"] = reason
            if cwd is not None:
                case["cwd"] = cwd
            if in_loop:
                case["note"] = "inside a loop"
            cases.append(case)
    return {"origin": "github.com/kenryu42/claude-code-safety-net", "commit": commit,
            "taken": "assertBlocked/assertAllowed calls with a literal command in "
                     "tests/**/*.test.ts; mode from an enclosing withEnv({...})",
            "skipped": skipped, "cases": cases}


# ---- dcg --------------------------------------------------------------------------

def rust_string(src, i):
    """(text, index after) of the Rust string literal at src[i], or (None, i)."""
    m = re.match(r'r(#*)"', src[i:])
    if m:
        hashes = m.group(1)
        end = src.find('"' + hashes, i + m.end())
        return src[i + m.end():end], end + 1 + len(hashes)
    if src[i:i + 1] != '"':
        return None, i
    out, j = [], i + 1
    while j < len(src):
        c = src[j]
        if c == '"':
            return "".join(out), j + 1
        if c == "\\":
            nxt = src[j + 1]
            if nxt == "\n":
                j += 2
                while j < len(src) and src[j] in " \t\n":
                    j += 1
                continue
            if nxt == "u":
                end = src.index("}", j)
                out.append(chr(int(src[j + 3:end], 16)))
                j = end + 1
                continue
            if nxt == "x":
                out.append(chr(int(src[j + 2:j + 4], 16)))
                j += 4
                continue
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
            j += 2
            continue
        out.append(c)
        j += 1
    return None, i


def _rust_skip(src, i):
    while i < len(src) and src[i] in " \t\r\n,&":
        i += 1
    return i


def dcg_pack_of(path):
    rel = path[len("src/packs/"):-3]
    parts = rel.split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return ".".join(parts)


def extract_dcg_pack_tests(repo, commit):
    cases, skipped = [], 0
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", commit, "src/packs").split()
             if f.endswith(".rs") and not f.endswith(("test_helpers.rs", "test_template.rs"))]
    for path in sorted(files):
        src = git(repo, "show", "%s:%s" % (commit, path))
        test_at = src.find("#[cfg(test)]")
        if test_at < 0:
            continue
        pack = dcg_pack_of(path)
        for m in re.finditer(r"\b(assert_blocks|assert_blocks_with_pattern|"
                             r"assert_blocks_with_severity|assert_allows|"
                             r"test_batch_blocks|test_batch_allows)\s*\(", src[test_at:]):
            at = test_at + m.end()
            kind = m.group(1)
            j = _rust_skip(src, at)
            # the first argument is the pack (&pack)
            k = j
            while k < len(src) and src[k] not in ",)":
                k += 1
            j = _rust_skip(src, k)
            line = src.count("\n", 0, at) + 1
            expect = "allow" if "allows" in kind else "deny"
            commands = []
            if kind.startswith("test_batch"):
                if src[j:j + 1] == "[":
                    j += 1
                    while True:
                        j = _rust_skip(src, j)
                        text, j2 = rust_string(src, j)
                        if text is None:
                            break
                        commands.append(text)
                        j = j2
            else:
                text, _ = rust_string(src, j)
                if text is None:
                    skipped += 1
                    continue
                commands.append(text)
            for command in commands:
                cases.append({"command": command, "expect": expect, "pack": pack,
                              "source": "%s:%d" % (path, line)})
    return cases, skipped


def load_pack_yaml(text):
    """{pack: [{command}]}: YAML, or line by line where the file is not valid YAML
    (dcg's destructive fixture quotes JSON bodies in a way YAML rejects)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        pass
    doc, pack = {}, None
    for line in text.splitlines():
        m = re.match(r"^([\w.-]+):\s*$", line)
        if m:
            pack = m.group(1)
            doc[pack] = []
            continue
        m = re.match(r"^\s*- command:\s*(.+?)\s*$", line)
        if m and pack:
            value = m.group(1)
            if value[:1] == '"' and value[-1:] == '"':
                value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            elif value[:1] == "'" and value[-1:] == "'":
                value = value[1:-1].replace("''", "'")
            doc[pack].append({"command": value})
    return doc


def extract_dcg(repo):
    commit = git(repo, "rev-parse", "HEAD").strip()
    cases = []

    def add(command, expect, source, pack=None, **extra):
        case = {"command": command, "expect": expect, "source": source}
        if pack:
            case["pack"] = pack
        case.update(extra)
        cases.append(case)

    names = git(repo, "ls-tree", "-r", "--name-only", commit, "tests").split()
    for path in sorted(n for n in names if n.startswith("tests/corpus/") and
                       n.endswith(".toml")):
        doc = tomllib.loads(git(repo, "show", "%s:%s" % (commit, path)))
        for n, case in enumerate(doc.get("case", [])):
            expect = case.get("expected") or case.get("expected_decision")
            if expect not in ("allow", "deny") or "command" not in case:
                continue
            rule = case.get("rule_id") or (case.get("expected_log") or {}).get("rule_id")
            pack = rule.split(":")[0] if rule else None
            category = path.split("/")[2] if path.count("/") > 2 else "canonical"
            if path.endswith("future_packs.toml") and expect == "allow":
                # dcg documents these as "would ideally be blocked by future packs"
                # and expects allow only until those packs exist: taken as deny
                expect, category = "deny", "future_packs (intended deny)"
            add(case["command"], expect, "%s#%d" % (path, n + 1), pack,
                category=category)
    for path, expect in (("tests/fixtures/destructive_commands.yaml", "deny"),
                         ("tests/fixtures/safe_commands.yaml", "allow")):
        doc = load_pack_yaml(git(repo, "show", "%s:%s" % (commit, path)))
        for pack, items in doc.items():
            for n, item in enumerate(items or []):
                add(item["command"], expect, "%s#%s.%d" % (path, pack, n + 1), pack,
                    category="pack-fixture")
    doc = yaml.safe_load(git(repo, "show", "%s:tests/fixtures/edge_cases.yaml" % commit))
    for key, expect in (("false_positives", "allow"), ("false_negatives", "deny")):
        for n, item in enumerate(doc.get(key) or []):
            add(item["command"], expect, "tests/fixtures/edge_cases.yaml#%s.%d" % (
                key, n + 1), category="edge-fixture")
    for path in sorted(n for n in names if n.startswith("tests/fixtures/scenarios/") and
                       n.endswith(".yaml")):
        doc = yaml.safe_load(git(repo, "show", "%s:%s" % (commit, path)))
        for n, step in enumerate(doc.get("steps") or []):
            expect = step.get("expected_decision")
            if expect in ("allow", "deny"):
                add(step["command"], expect, "%s#%d" % (path, n + 1),
                    step.get("expected_pack"), category="scenario")
    for path, expect in (("tests/e2e/fixtures/commands/dangerous.txt", "deny"),
                         ("tests/e2e/fixtures/commands/safe.txt", "allow")):
        for n, line in enumerate(git(repo, "show", "%s:%s" % (commit, path)).splitlines()):
            if line.strip() and not line.lstrip().startswith("#"):
                add(line.strip(), expect, "%s:%d" % (path, n + 1), category="e2e-fixture")
    pack_cases, skipped = extract_dcg_pack_tests(repo, commit)
    for case in pack_cases:
        case["category"] = "pack-unit-test"
        cases.append(case)
    seen, unique = set(), []
    for case in cases:
        key = (case["command"], case["expect"])
        if key in seen:
            continue
        seen.add(key)
        unique.append(case)
    for n, case in enumerate(unique):
        case["id"] = "dcg-%04d" % (n + 1)
    return {"origin": "github.com/Dicklesworthstone/destructive_command_guard",
            "commit": commit,
            "taken": "tests/corpus/**/*.toml (expected allow/deny), tests/fixtures/"
                     "{destructive,safe}_commands.yaml, edge_cases.yaml, scenarios/*.yaml, "
                     "tests/e2e/fixtures/commands/{dangerous,safe}.txt, and the "
                     "assert_blocks/assert_allows/test_batch_* calls of the pack unit "
                     "tests in src/packs/**/*.rs (pack = the file's pack id); duplicates "
                     "(same command and verdict) kept once",
            "skipped": {"pack test command not a literal": skipped},
            "cases": [{k: case[k] for k in ("id", "command", "expect", "pack", "category",
                                            "source") if k in case} for case in unique]}


def write(name, doc):
    path = os.path.join(HERE, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{\n")
        keys = [k for k in doc if k != "cases"]
        for key in keys:
            handle.write(" %s: %s,\n" % (json.dumps(key), json.dumps(doc[key])))
        handle.write(' "cases": [\n')
        handle.write(",\n".join("  " + json.dumps(c, ensure_ascii=False)
                                for c in doc["cases"]))
        handle.write("\n ]\n}\n")
    print("%s: %d cases" % (path, len(doc["cases"])))


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    write("safety_net.json", extract_safety_net(argv[0]))
    write("dcg.json", extract_dcg(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
