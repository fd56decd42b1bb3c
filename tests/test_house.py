"""The shape of notrest.py, read with ast: no function over MAX_FUNCTION_LINES but the
parser setup (issue 25, Build item 4). Run as a script to print each function's
length and cyclomatic complexity, longest first:
    python3 tests/test_house.py [NAME ...]"""
import ast
import sys
from pathlib import Path


SOURCE = Path(__file__).resolve().parents[1] / "notrest.py"
MAX_FUNCTION_LINES = 60
LONG_ALLOWED = {"build_parser"}   # argparse setup reads best as one list of calls

_BRANCHES = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler,
             ast.Assert)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def complexity(func):
    """McCabe's number counted the usual way: 1, plus one per branch, loop, handler,
    comprehension clause and extra operand of `and`/`or`; nested functions and classes
    count for themselves."""
    count, todo = 1, list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _BRANCHES):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        elif type(node).__name__ == "match_case":
            count += 1
        todo.extend(ast.iter_child_nodes(node))
    return count


def functions(path=SOURCE):
    """(qualified name, lines, complexity) for every function in path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child.end_lineno - child.lineno + 1, complexity(child)))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
    walk(tree, "")
    return found


def test_no_function_is_over_the_line_bound():
    offenders = sorted(((lines, name) for name, lines, _ in functions()
                        if lines > MAX_FUNCTION_LINES
                        and name.rpartition(".")[2] not in LONG_ALLOWED), reverse=True)
    assert not offenders, "functions over %d lines: %s" % (
        MAX_FUNCTION_LINES, ", ".join("%s (%d)" % (n, k) for k, n in offenders))


def test_the_counter_counts_branches_loops_and_operands():
    tree = ast.parse("def f(a, b):\n"
                     "    if a and b or a:\n"
                     "        return [x for x in a if x]\n"
                     "    for y in b:\n"
                     "        try:\n"
                     "            pass\n"
                     "        except ValueError:\n"
                     "            pass\n"
                     "    def inner():\n"
                     "        if a:\n"
                     "            pass\n"
                     "    return 1 if a else 2\n")
    # 1 + if + (and, or) + comprehension and its if + for + except + ternary
    assert complexity(tree.body[0]) == 1 + 1 + 2 + 2 + 1 + 1 + 1


if __name__ == "__main__":
    wanted = set(sys.argv[1:])
    for name, lines, cc in sorted(functions(), key=lambda row: -row[1]):
        if not wanted or name.rpartition(".")[2] in wanted or name in wanted:
            print("%5d %4d  %s" % (lines, cc, name))


def test_every_global_name_a_function_loads_is_defined():
    """A name a function loads from the module's globals that the module does not
    define is a NameError only on the path that reaches it (a merge that split a
    function while another change used its old local): caught here, in-process,
    for every function and method of notrest.py."""
    import builtins
    import dis
    import types
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import notrest

    def functions_of(obj):
        if isinstance(obj, types.FunctionType):
            yield obj
        elif isinstance(obj, type):
            for value in vars(obj).values():
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if isinstance(value, types.FunctionType):
                    yield value

    def codes(code):
        yield code
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                yield from codes(const)

    missing = set()
    for name, obj in list(vars(notrest).items()):
        for func in functions_of(obj):
            if func.__module__ != "notrest":
                continue
            for code in codes(func.__code__):
                for ins in dis.get_instructions(code):
                    if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and not hasattr(
                            notrest, ins.argval) and not hasattr(builtins, ins.argval):
                        missing.add("%s: %s" % (func.__qualname__, ins.argval))
    assert not missing, "names loaded but never defined: %s" % ", ".join(sorted(missing))
