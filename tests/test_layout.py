"""The package's layout: no import cycles, docs/layout.md lists exactly the files that exist, and every
reference to the design notes points at a section that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mlm"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports, anywhere in its body (late imports included).

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``. The
    implicit import of a parent package is not an edge (Python runs it first, whatever the order).
    """
    files = {module_name(p): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in files else node.module
                           for alias in node.names]
            else:
                continue
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan's algorithm)."""
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_module_of_mlm_imports_another_in_a_cycle():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles in mlm: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_can_fail(tmp_path):
    """A planted cycle (a late import back) is found, so the test above can fail."""
    pkg = tmp_path / "mlm"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("")
    (pkg / "data" / "holmes.py").write_text("def f():\n    from mlm.completion import load\n")
    (pkg / "completion.py").write_text("from mlm.data.holmes import f\n")
    (pkg / "scoring.py").write_text("import mlm.completion\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        graph = import_graph(pkg)
    finally:
        ROOT = saved
    assert find_cycles(graph) == [["mlm.completion", "mlm.data.holmes"]]


# -- the layout in docs/layout.md -------------------------------------------------------------------
LAYOUT_START, LAYOUT_END = "<!-- layout: begin -->", "<!-- layout: end -->"


def listed_files(readme: str) -> set[str]:
    """The paths named in a layout block (a tree whose entries are ``name.py`` or ``folder/``)."""
    block = readme.split(LAYOUT_START, 1)[1].split(LAYOUT_END, 1)[0]
    paths, folders = set(), {}
    for line in block.splitlines():
        match = re.match(r"^(\s*)(\S+)", line)
        if not match or match.group(2).startswith("`"):
            continue
        depth, entry = len(match.group(1)) // 2, match.group(2)
        parent = folders.get(depth - 1, "") if depth else ""
        if entry.endswith("/"):
            folders[depth] = parent + entry
            paths.add(parent + entry)
        elif entry.endswith(".py"):
            paths.add(parent + entry)
    return paths


def package_files() -> set[str]:
    files = {str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    folders = {str(p.relative_to(ROOT)) + "/" for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    return files | folders | {"mlm/"}


def test_layout_lists_every_module_and_only_those():
    layout = (ROOT / "docs" / "layout.md").read_text()
    listed = {p for p in listed_files(layout) if p.startswith("mlm/")}
    actual = package_files()
    assert not actual - listed, f"docs/layout.md omits {sorted(actual - listed)}"
    assert not listed - actual, f"docs/layout.md lists files that do not exist: {sorted(listed - actual)}"


# -- design notes ------------------------------------------------------------------------------------
DESIGN = ROOT / "docs" / "design.md"
SEARCHED = ["mlm/**/*.py", "chapters/*.py", "tests/*.py", "exercises/**/*.py", "README.md", "results/README.md"]


def design_sections() -> set[str]:
    return set(re.findall(r"^## (\d+)\.", DESIGN.read_text(), flags=re.M))


def test_design_references_point_at_sections_of_docs_design():
    sections = design_sections()
    assert len(sections) >= 5
    problems = []
    for pattern in SEARCHED:
        for path in ROOT.glob(pattern):
            if path.resolve() == Path(__file__).resolve():
                continue
            text = path.read_text()
            if "DESIGN.md" in text:
                problems.append(f"{path.relative_to(ROOT)} refers to DESIGN.md, which is not in the project")
            for section in re.findall(r"docs/design\.md,? section (\d+)", text):
                if section not in sections:
                    problems.append(f"{path.relative_to(ROOT)}: docs/design.md has no section {section}")
    assert not problems, "\n".join(problems)
