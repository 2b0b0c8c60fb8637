"""The rules every submission follows, checked by reading its source (no student code runs here).

A submission may import only the modules in :data:`ALLOWED_IMPORTS`, and it may not reach
outside itself: no ``mlm`` or ``exercises``, no ``os``/``sys``, no ``eval``/``getattr``, no
double-underscore names and no private attribute (one that starts with ``_``: ``torch._C``,
``torch._utils``, ``torch.hub._import_module`` reach any operator, module or file by a string).
Each assignment adds the helpers that would give the answer away (``nn.LSTM``, ``F.cross_entropy``,
the book's reference functions): see ``BANNED`` in its checks module. A submission that breaks one
of these rules scores 0, with the lines named.

Code under ``if __name__ == "__main__":`` is exempt: the grader never runs it, and it is where
the experiment of each assignment lives, free to compare with ``torch.nn.LSTM`` or ``mlm``.

Some functions must work on whole tensors, with no Python loop over time or tokens. That is a
rule with points (:func:`no_python_loops`), judged from the source as well: a timing would pass
or fail the same code depending on the machine.
"""

from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass

ALLOWED_IMPORTS = frozenset({"torch", "math", "numpy", "typing", "__future__", "collections", "itertools",
                             "functools", "dataclasses", "numbers", "operator"})

# Builtins that open a way around the rules (or out of the process).
FORBIDDEN_CALLS = frozenset({"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
                             "locals", "vars", "open", "breakpoint", "input", "exit", "quit"})

# Attributes that lead to the interpreter, the file system or other modules (``torch.sys``, ``f.__globals__``...),
# or to code by a string: ``torch.ops.aten.<any operator>``, ``torch.hub`` (loads a folder's code), ctypes.
FORBIDDEN_ATTRIBUTES = frozenset({"os", "sys", "modules", "builtins", "importlib", "subprocess", "gc", "inspect",
                                  "_getframe", "f_back", "f_globals", "f_locals", "_exit", "exit", "system",
                                  "attrgetter", "methodcaller",  # operator's getattr by string
                                  "ops", "hub", "ctypes", "ctypeslib", "cpp_extension"})


@dataclass(frozen=True)
class Violation:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def parse(source: str) -> ast.Module:
    return ast.parse(source)


def _is_main_guard(node: ast.stmt) -> bool:
    """Exactly ``if __name__ == "__main__":`` at the top level of the file, with no ``else``: the block the
    rules skip and the grader never runs (:func:`without_main_guards`). Any other test (``!=``, ``or``,
    another name) or an ``else`` makes it graded code like the rest."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and not node.orelse and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def without_main_guards(source: str, tree: ast.Module) -> str:
    """``source`` with its ``__main__`` blocks blanked (line numbers kept): the grader runs exactly the code the
    rules read, so a file that sets ``__name__`` itself cannot run its main block while graded."""
    lines = source.splitlines(keepends=True)
    for node in tree.body:
        if _is_main_guard(node):
            for i in range(node.lineno - 1, node.end_lineno):
                lines[i] = "\n"
    return "".join(lines)


def graded_nodes(tree: ast.Module):
    """Every node the grader may execute: the whole file but its ``__main__`` block."""
    for statement in tree.body:
        if not _is_main_guard(statement):
            yield from ast.walk(statement)


def _scopes(table: symtable.SymbolTable):
    """``table`` and every scope nested in it, however deep (functions, lambdas, comprehensions, classes)."""
    todo = [table]
    while todo:
        scope = todo.pop()
        todo.extend(scope.get_children())
        yield scope


def _own_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """``(local, bound)`` over the graded code, from Python's own symbol tables (:mod:`symtable`). ``local``: the
    names every use of which is a function's, lambda's or comprehension's own (a parameter, a local variable,
    or a closure over one): there the name can never reach the builtin or module of the same name. Any use
    at module level, in a class body, or through ``global`` takes a name out. ``bound``: every name the
    submission binds somewhere (defines, assigns, takes as a parameter)."""
    graded = ast.Module(body=[s for s in tree.body if not _is_main_guard(s)], type_ignores=[])
    local, unsafe, bound = set(), set(), set()
    for table in _scopes(symtable.symtable(ast.unparse(graded), "<submission>", "exec")):
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if symbol.is_assigned() or symbol.is_parameter():
                bound.add(name)
            own = table.get_type() == "function" and not symbol.is_global() and (symbol.is_local() or symbol.is_free())
            (local if own else unsafe).add(name)
    return local - unsafe, bound


def violations(tree: ast.Module, banned: dict[str, str] | None = None) -> list[Violation]:
    """The rule breaks in ``tree``; ``banned`` maps a forbidden name to why (e.g. "LSTM": "write the cell yourself").
    A forbidden builtin's *name* is allowed where every use of it is a function's own local (a parameter called
    ``input``); a banned name where the submission binds it itself (its own helper named like a book function,
    which nothing else could bind: imports are checked, ``import *`` refused). Attributes (``nn.LSTM``) never are."""
    banned = banned or {}
    found = []
    try:
        local, bound = _own_names(tree)
    except SyntaxError as err:  # parses, but Python's scoping rejects it (a misplaced global, say)
        local, bound = set(), set()
        found.append(Violation(0, f"Python rejects the file: {err.msg}"))
    for node in graded_nodes(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or "."]
            for module in modules:
                if node.__class__ is ast.ImportFrom and node.level:
                    found.append(Violation(line, "relative imports are not allowed"))
                elif module.split(".")[0] not in ALLOWED_IMPORTS:
                    found.append(Violation(line, f"import of `{module}`; allowed: {', '.join(sorted(ALLOWED_IMPORTS))}"))
                elif module != "__future__" and any(part.startswith("_") for part in module.split(".")):
                    found.append(Violation(line, f"import of `{module}`: private modules (`_...`) are not allowed"))
            names = [alias.name for alias in node.names]
            if isinstance(node, ast.ImportFrom):
                for name in names:
                    if name.startswith("_") and not name.startswith("__"):
                        found.append(Violation(line, f"importing `{name}`: private names (`_...`) are not allowed"))
            if "*" in names:
                found.append(Violation(line, "`import *` is not allowed: import the names you use"))
            for name in names:
                if name in FORBIDDEN_CALLS | FORBIDDEN_ATTRIBUTES:
                    found.append(Violation(line, f"importing `{name}` is not allowed in a submission"))
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_CALLS and node.id not in local:
                found.append(Violation(line, f"`{node.id}` is not allowed in a submission"))
            if node.id in banned and node.id in bound:
                continue  # the submission's own object of that name
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
            if node.attr in FORBIDDEN_ATTRIBUTES:
                found.append(Violation(line, f"`.{node.attr}` is not allowed in a submission"))
            elif node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(Violation(line, f"`.{node.attr}`: private attributes (`._...`, as in `torch._C`) are "
                                             "not allowed in a submission"))
        else:
            continue
        for name in names:
            if name.startswith("__") and name not in ("__future__", "__name__", "__init__"):
                found.append(Violation(line, f"`{name}`: double-underscore names are not allowed"))
            if name in banned:
                found.append(Violation(line, f"`{name}` is banned in this assignment ({banned[name]})"))
    return sorted(set(found), key=lambda v: v.line)


def _functions(tree: ast.Module) -> dict[str, ast.AST]:
    """The file's own top-level functions: ``def`` statements and lambdas assigned to one name."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return found


# Calls that run a Python function once per element: loops in all but name. Builtins by name, module
# functions however imported (``functools.reduce``, ``from itertools import accumulate as acc``), and the
# tensor methods that take a Python callable. ``np.maximum.accumulate`` is numpy's own loop, not one of these.
ITERATING_BUILTINS = frozenset({"map", "filter"})
ITERATING_FUNCTIONS = {"functools": {"reduce"},
                       "itertools": {"accumulate", "starmap", "filterfalse", "takewhile", "dropwhile"},
                       "numpy": {"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes"}}
ITERATING_METHODS = frozenset({"apply_", "map_", "map2_"})
LOOP_NODES = (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _bound_below(table: symtable.SymbolTable) -> set[str]:
    """The names bound (assigned, taken as parameters, imported) in the scopes under ``table``, however deep:
    inside a function they shadow a builtin or a top-level function of the same name."""
    return {s.get_name() for child in table.get_children() for scope in _scopes(child) for s in scope.get_symbols()
            if s.is_assigned() or s.is_parameter() or s.is_imported()}


def _imports(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """``(modules, iterating)``: the module each imported name stands for (``np`` -> ``numpy``), and the
    names bound by ``from functools import reduce``-like imports of :data:`ITERATING_FUNCTIONS`."""
    modules, iterating = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({a.asname: a.name for a in node.names if a.asname})
            modules.update({a.name.split(".")[0]: a.name.split(".")[0] for a in node.names if not a.asname})
        elif isinstance(node, ast.ImportFrom) and node.module:
            iterating |= {a.asname or a.name for a in node.names if a.name in ITERATING_FUNCTIONS.get(node.module, ())}
    return modules, iterating


def loops_in(tree: ast.Module, function: str) -> list[int]:
    """Lines of Python loops in ``function`` and the file's own functions it calls or passes on (``vmap(helper)``):
    ``for``, ``while``, comprehensions, the iterating calls (``map``, ``functools.reduce``, ``Tensor.apply_``...,
    :data:`ITERATING_FUNCTIONS`) and recursion (a function that comes back to itself, directly or through others).
    A name the function binds itself (a parameter ``reduce``, a local ``filter = ...``) is its own, not the
    builtin's; a name it imports (``from functools import reduce``) stays the module's."""
    functions = _functions(tree)
    modules, imported = _imports(tree)
    module = symtable.symtable(ast.unparse(tree), "<submission>", "exec")
    module_names = {s.get_name() for s in module.get_symbols() if s.is_assigned()}  # defined here, not imported
    own = {name: _bound_below(symtable.symtable(ast.unparse(node), "<function>", "exec"))
           for name, node in functions.items()}
    # every use of an own function's name inside another (a call or a reference): (name, line)
    uses = {name: [(n.id, n.lineno) for n in ast.walk(node) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Load) and n.id in functions and n.id not in own[name]]
            for name, node in functions.items()}

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name in functions and name not in seen:
                seen.add(name)
                todo.extend(used for used, _ in uses[name])
        return seen

    def iterates(call: ast.Call, shadowed: set[str]) -> bool:
        f = call.func
        if isinstance(f, ast.Name):
            return f.id not in shadowed and (f.id in ITERATING_BUILTINS or f.id in imported)
        if not isinstance(f, ast.Attribute):
            return False
        module = modules.get(f.value.id) if isinstance(f.value, ast.Name) and f.value.id not in shadowed else None
        return f.attr in ITERATING_METHODS or f.attr in ITERATING_FUNCTIONS.get(module, ())

    lines = set()
    for name in reachable(function):
        shadowed = (own[name] | module_names) - imported
        lines |= {n.lineno for n in ast.walk(functions[name])
                  if isinstance(n, LOOP_NODES) or (isinstance(n, ast.Call) and iterates(n, shadowed))}
        lines |= {line for used, line in uses[name] if name in reachable(used)}  # recursion
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
                "unique...) instead of one step, token or slot at a time")

    run.__name__ = name
    return Check(f"{', '.join(functions)}: no Python loop (whole tensors at once)", StaticCheck(run), points, requires)
