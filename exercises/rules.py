"""The rules every submission follows, checked by reading its source (no student code runs here).

A submission may import only the modules in :data:`ALLOWED_IMPORTS`, and it may not reach
outside itself: no ``mlm`` or ``exercises``, no ``os``/``sys``, no ``eval``/``getattr`` and no
double-underscore attributes. Each assignment adds the helpers that would give the answer away
(``nn.LSTM``, ``F.cross_entropy``, the book's reference functions): see ``BANNED`` in its checks
module. A submission that breaks one of these rules scores 0, with the lines named.

Code under ``if __name__ == "__main__":`` is exempt: the grader never runs it, and it is where
the experiment of each assignment lives, free to compare with ``torch.nn.LSTM`` or ``mlm``.

Some functions must work on whole tensors, with no Python loop over time or tokens. That is a
rule with points (:func:`no_python_loops`), judged from the source as well: a timing would pass
or fail the same code depending on the machine.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

ALLOWED_IMPORTS = frozenset({"torch", "math", "numpy", "typing", "__future__", "collections", "itertools",
                             "functools", "dataclasses", "numbers", "operator"})

# Builtins that open a way around the rules (or out of the process).
FORBIDDEN_CALLS = frozenset({"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
                             "locals", "vars", "open", "breakpoint", "input", "exit", "quit"})

# Attributes that lead to the interpreter, the file system or other modules (``torch.sys``, ``f.__globals__``...).
FORBIDDEN_ATTRIBUTES = frozenset({"os", "sys", "modules", "builtins", "importlib", "subprocess", "gc", "inspect",
                                  "_getframe", "f_back", "f_globals", "f_locals", "_exit", "exit", "system"})


@dataclass(frozen=True)
class Violation:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def parse(source: str) -> ast.Module:
    return ast.parse(source)


def _is_main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` at the top level of the file."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def graded_nodes(tree: ast.Module):
    """Every node the grader may execute: the whole file but its ``__main__`` block."""
    for statement in tree.body:
        if not _is_main_guard(statement):
            yield from ast.walk(statement)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def _local_names(scope: ast.AST) -> set[str]:
    """The names a function, lambda or comprehension binds in its own scope (parameters, assignments, loop and
    ``with`` targets, nested definitions), less those it declares ``global`` or ``nonlocal``: inside it such a
    name is the student's own object, never the builtin or module of the same name."""
    bound, declared = set(), set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = scope.args
        bound |= {arg.arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg}
        body = scope.body if isinstance(scope.body, list) else [scope.body]
    else:  # a comprehension binds its loop targets; its first iterable belongs to the enclosing scope
        body = [g.target for g in scope.generators] + [x for g in scope.generators[1:] for x in [g.iter]]
        body += [x for g in scope.generators for x in g.ifs]
        body += [scope.key, scope.value] if isinstance(scope, ast.DictComp) else [scope.elt]
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared |= set(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)  # the name is bound here; the body is another scope
            continue
        if isinstance(node, (ast.Lambda, *_SCOPES[3:])):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return bound - declared


def _scoped_nodes(tree: ast.Module):
    """(node, names bound around it) for every node the grader may execute: a name bound by an enclosing
    function or comprehension, or defined by a top-level ``def`` or ``class``, is the submission's own."""
    top = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    todo = [(statement, frozenset(top)) for statement in tree.body if not _is_main_guard(statement)]
    while todo:
        node, bound = todo.pop()
        yield node, bound
        if not isinstance(node, _SCOPES):
            todo.extend((child, bound) for child in ast.iter_child_nodes(node))
            continue
        inner = bound | _local_names(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # defaults, decorators and annotations are evaluated outside the function
            a = node.args
            outside = [*a.defaults, *[d for d in a.kw_defaults if d], *getattr(node, "decorator_list", []),
                       *[x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                         if x and x.annotation], *([node.returns] if getattr(node, "returns", None) else [])]
            body = node.body if isinstance(node.body, list) else [node.body]
        else:  # a comprehension's first iterable is evaluated outside it
            outside, body = [node.generators[0].iter], [c for c in ast.iter_child_nodes(node)
                                                        if c is not node.generators[0]]
            body += [x for x in ast.iter_child_nodes(node.generators[0]) if x is not node.generators[0].iter]
        todo.extend([(child, bound) for child in outside] + [(child, inner) for child in body])


def violations(tree: ast.Module, banned: dict[str, str] | None = None) -> list[Violation]:
    """The rule breaks in ``tree``; ``banned`` maps a forbidden name to why (e.g. "LSTM": "write the cell yourself").
    A forbidden or banned *name* is allowed where the submission binds it itself (a parameter called ``input``,
    its own helper called like a book function); attributes (``nn.LSTM``) and imports never are."""
    banned = banned or {}
    found = []
    for node, own in _scoped_nodes(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or "."]
            for module in modules:
                if node.__class__ is ast.ImportFrom and node.level:
                    found.append(Violation(line, "relative imports are not allowed"))
                elif module.split(".")[0] not in ALLOWED_IMPORTS:
                    found.append(Violation(line, f"import of `{module}`; allowed: {', '.join(sorted(ALLOWED_IMPORTS))}"))
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Name):
            if node.id in own:
                continue
            names = [node.id]
            if node.id in FORBIDDEN_CALLS:
                found.append(Violation(line, f"`{node.id}` is not allowed in a submission"))
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
            if node.attr in FORBIDDEN_ATTRIBUTES:
                found.append(Violation(line, f"`.{node.attr}` is not allowed in a submission"))
        else:
            continue
        for name in names:
            if name.startswith("__") and name not in ("__future__", "__name__", "__init__"):
                found.append(Violation(line, f"`{name}`: double-underscore names are not allowed"))
            if name in banned:
                found.append(Violation(line, f"`{name}` is banned in this assignment ({banned[name]})"))
    return sorted(set(found), key=lambda v: v.line)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def loops_in(tree: ast.Module, function: str) -> list[int]:
    """Lines of Python loops (``for``, ``while``, comprehensions) in ``function`` and the file's functions it calls."""
    functions = _functions(tree)
    seen, todo, lines = set(), [function], []
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in ast.walk(functions[name]):
            if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp,
                                 ast.GeneratorExp)):
                lines.append(node.lineno)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.append(node.func.id)
    return sorted(lines)


class StaticCheck:
    """A check judged from the source in the grading process; ``run(tree)`` returns a hint or ``None``."""

    def __init__(self, run):
        self.run = run
        self.__name__ = run.__name__


def no_python_loops(*functions: str, points: int = 1, name: str = "no_python_loops", requires: tuple[str, ...] = ()):
    """A check (judged from the source) that ``functions`` contain no Python loop, nor do the helpers they call."""
    from exercises.checks.common import Check

    def run(tree: ast.Module) -> str | None:
        offenders = {f: loops_in(tree, f) for f in functions}
        offenders = {f: lines for f, lines in offenders.items() if lines}
        if not offenders:
            return None
        where = "; ".join(f"{f}: line {', '.join(map(str, lines))}" for f, lines in offenders.items())
        return (f"found Python loops ({where}); work on whole tensors (indexing, unfold, cumsum, bincount, "
                "unique...) instead of one step or token at a time")

    run.__name__ = name
    return Check(f"{', '.join(functions)}: no Python loop (whole tensors at once)", StaticCheck(run), points, requires)
