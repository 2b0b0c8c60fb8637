"""Notebook releases of the assignments, cut from the same sources, that nbgrader accepts as they are.

``python -m exercises.notebooks nbgrader COURSE`` writes ``COURSE/source/exNN/exNN_topic.ipynb`` for every
assignment (and ``COURSE/nbgrader_config.py`` if there is none); ``nbgrader generate_assignment exNN`` in
``COURSE`` then makes the students' version. Each notebook has, in order:

* the task (the source's docstring) and a locked set-up cell (the imports);
* one autograded answer cell per function (``solution``), its solution between nbgrader's markers;
* one locked test cell per check of the grader, worth the check's points;
* the written questions, each a manually graded Markdown answer cell (its model answer in the source
  notebook only), and the experiment, a code cell the student runs.

The test cells let students see their checks in Jupyter (``Validate``), but nbgrader runs them in the
student's own kernel, which the student's code controls: their points are advice. The points that count come
from :mod:`exercises.grader`, which reads the submitted notebooks (the cells below, never the kernel) and
grades them in its sandbox: ``python -m exercises.grader --batch COURSE/submitted --csv scores.csv``.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from pathlib import Path

EXERCISES_DIR = Path(__file__).resolve().parent
ROOT = EXERCISES_DIR.parent
QUESTION = re.compile(r"^# (Q\d+) \(")
IMPORTS = "# the assignment's imports"
WRITTEN_POINTS = 2  # each written answer, graded by hand in nbgrader's formgrader
CONFIG = '''c = get_config()  # noqa: F821 -- nbgrader's
c.CourseDirectory.course_id = "memory-augmented-lms"
# The notebooks import `exercises` and `mlm` from the folder that holds them: the first folder above the
# notebook with an exercises/grader.py, or $MLM_COURSE_ROOT (set it on your JupyterHub to the students' release).
# A test cell grades the whole notebook the first time (up to a few minutes on a busy machine); the experiment
# cell does not run while nbgrader validates or autogrades.
c.Execute.timeout = 600
'''
SETUP = """import os
import sys
from pathlib import Path

# the folder with exercises/ and mlm/: $MLM_COURSE_ROOT, else the first folder above this notebook that has them
ROOT = os.environ.get("MLM_COURSE_ROOT") or next(
    (str(p) for p in (Path.cwd(), *Path.cwd().parents) if (p / "exercises" / "grader.py").is_file()), None)
if ROOT is None:
    raise RuntimeError("set MLM_COURSE_ROOT to the folder that holds exercises/ and mlm/ (the course's release)")
sys.path.insert(0, ROOT)
"""
EXPERIMENT = """import os

from exercises import experiments

if os.environ.get("NBGRADER_EXECUTION"):  # nbgrader is validating or grading: the training is yours to run
    print("the experiment runs when you run this cell yourself, not while nbgrader validates")
else:
    {call}
"""


def _cell(kind: str, source: str, grade_id: str | None = None, solution: bool = False, grade: bool = False,
          locked: bool = False, points: float | None = None):
    import nbformat

    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id is not None:
        cell.metadata["nbgrader"] = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                                     "solution": solution, "task": False}
        if grade:
            cell.metadata["nbgrader"]["points"] = points
    return cell


def _nbgrader_markers(code: str) -> str:
    """The source's ``### BEGIN SOLUTION: hint`` as nbgrader's plain marker, the hint kept as a comment."""
    def replace(match):
        indent, hint = match.group(1), match.group(2)
        return f"{indent}# TODO: {hint}\n{indent}### BEGIN SOLUTION" if hint else f"{indent}### BEGIN SOLUTION"

    return re.sub(r"^(\s*)### BEGIN SOLUTION(?::\s*(.*?))?\s*$", replace, code, flags=re.M)


def parts(source: str) -> dict:
    """The source cut into its pieces: docstring, imports, functions (name, code), questions (id, text,
    model answer), the demo of the ``__main__`` block and its experiment call."""
    lines = source.splitlines()
    tree = ast.parse(source)
    written = next(i for i, line in enumerate(lines) if line.startswith("# =") and "written questions" in line)
    main = next(i for i, line in enumerate(lines) if line.startswith("if __name__"))
    body = [n for n in tree.body[1:] if n.lineno - 1 < written]
    imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    rest = [n for n in body if n not in imports]
    ends = [n.lineno - 1 - len(getattr(n, "decorator_list", [])) for n in rest[1:]] + [written]
    functions, start = [], imports[-1].end_lineno
    for node, end in zip(rest, ends):  # each piece runs to the next (its END SOLUTION marker is a comment)
        functions.append((getattr(node, "name", f"part{len(functions)}"), "\n".join(lines[start:end]).strip()))
        start = end
    questions, current = [], None
    for line in lines[written + 1:main]:
        match = QUESTION.match(line)
        if match:
            current = {"id": match.group(1), "text": [], "answer": [], "in_answer": False}
            questions.append(current)
        if current is None:
            continue
        if line.startswith("### BEGIN ANSWER"):
            current["in_answer"] = True
        elif line.startswith("### END ANSWER"):
            current["in_answer"] = False
        elif current["in_answer"]:
            current["answer"].append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        elif line.strip() != "#":
            current["text"].append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    demo = textwrap.dedent("\n".join(lines[main + 1:]))
    call = demo[demo.index("\nexperiments.") + 1:].strip() if "\nexperiments." in demo else ""  # the last statement
    call = re.sub(r",?\s*folder=Path\(__file__\)\.parent", "", call)  # a notebook's experiment writes in its folder
    demo = demo.split("# The training experiment")[0].strip()
    return {"docstring": ast.get_docstring(tree) or "", "imports": "\n".join(lines[imports[0].lineno - 1:
                                                                                   imports[-1].end_lineno]),
            "functions": functions, "questions": questions, "demo": demo, "experiment": call}


def notebook(assignment_id: str):
    """The nbgrader source notebook of an assignment (solutions and model answers in it)."""
    import nbformat

    from exercises.grader import REGISTRY, SOLUTIONS_DIR
    from exercises.rules import StaticCheck

    assignment = REGISTRY[assignment_id]
    p = parts((SOLUTIONS_DIR / assignment.filename).read_text(encoding="utf-8"))
    task = p["docstring"].replace("python -m exercises.grader", "python -m exercises.grader --file THIS.ipynb")
    cells = [_cell("markdown", f"# Assignment {assignment_id}: {assignment.title}\n\n{task}", "task", locked=True),
             _cell("code", f"{SETUP}{IMPORTS}\n{p['imports']}", "setup", locked=True)]
    for name, code in p["functions"]:
        cells.append(_cell("code", _nbgrader_markers(code), f"fn_{name}", solution=True))
    for c in assignment.checks:
        how = "judged from your code's text" if isinstance(c.run, StaticCheck) else "run by the grader"
        cells.append(_cell("code", f"# {c.description} ({c.points} point{'s' * (c.points > 1)}, {how})\n"
                           f"from exercises.notebooks import check\n\ncheck({assignment_id!r}, {c.name!r})",
                           f"check_{c.name}", grade=True, locked=True, points=c.points))
    if p["demo"]:
        cells.append(_cell("code", p["demo"], "demo", locked=False))
    if p["experiment"]:
        call = textwrap.indent(p["experiment"], "    ").lstrip()
        cells.append(_cell("code", EXPERIMENT.format(call=call), "experiment"))
    for q in p["questions"]:
        text = "\n".join(q["text"]).strip()
        # in a notebook the file's main block is the demo and experiment cells above
        text = re.sub(r"Run this file(?= \((?:about|a few))", "Run the experiment cell above", text)
        text = text.replace("Run this file", "Run the demo cell above")
        cells.append(_cell("markdown", text, f"question_{q['id'].lower()}", locked=True))
        cells.append(_cell("markdown", "\n".join(q["answer"]).strip(), f"answer_{q['id'].lower()}", solution=True,
                           grade=True, points=WRITTEN_POINTS))
    book = nbformat.v4.new_notebook(cells=cells)
    book.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return book


def write_nbgrader_course(course: Path) -> list[Path]:
    import nbformat

    from exercises.grader import REGISTRY

    written = []
    for assignment_id, assignment in REGISTRY.items():
        target = course / "source" / f"ex{assignment_id}" / assignment.filename.replace(".py", ".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(assignment_id), target)
        written.append(target)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text(CONFIG, encoding="utf-8")
    return written


# ----------------------------------------------------------------------------- reading submitted notebooks


def graded_source(path: Path) -> str:
    """The Python the grader grades in a submitted notebook: its set-up and answer cells (``fn_*``), in order;
    nothing else of the notebook runs (its tests, demo and experiment are the grader's or the student's)."""
    import nbformat

    book = nbformat.read(path, as_version=4)
    kept = []
    for cell in book.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and (grade_id.startswith("fn_") or grade_id == "setup"):
            source = cell.source
            if grade_id == "setup":  # the path set-up is the notebook's, not the student's
                source = source.split(IMPORTS, 1)[-1]
            kept.append(source)
    if not kept:
        raise ValueError(f"{path.name} has no answer cells (cells whose nbgrader grade_id starts with fn_)")
    return "\n\n\n".join(kept) + "\n"


def _cleared(code: str) -> str:
    """An answer cell as nbgrader's ``generate_assignment`` hands it out: each solution replaced by its stub."""
    return re.sub(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$",
                  lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()", code,
                  flags=re.M | re.S)


def untouched(path: Path, assignment_id: str) -> bool:
    """Whether a submitted notebook's answer cells (code and written answers) are still the ones handed out."""
    import nbformat

    released = {c.metadata["nbgrader"]["grade_id"]: c for c in notebook(assignment_id).cells
                if c.metadata.get("nbgrader", {}).get("solution")}
    handed = {g: _cleared(c.source) if c.cell_type == "code" else "YOUR ANSWER HERE" for g, c in released.items()}
    given = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(path, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade_id") in handed}

    def plain(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip().splitlines())

    return all(plain(given.get(g, text)) == plain(text) for g, text in handed.items())


def answers(path: Path) -> dict[str, str]:
    """{question id ("Q1"): the student's answer} of a submitted notebook."""
    import nbformat

    book = nbformat.read(path, as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"].split("_", 1)[1].upper(): cell.source.strip()
            for cell in book.cells if cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("answer_")}


_REPORTS: dict = {}


def check(assignment_id: str, name: str) -> None:
    """A test cell: grade the notebook in the working folder (once per saved version), fail if ``name`` failed."""
    from exercises.grader import REGISTRY, grade_file

    found = sorted(Path.cwd().glob(REGISTRY[assignment_id].filename.replace(".py", "*.ipynb")))
    if len(found) != 1:
        raise AssertionError(f"expected one notebook {REGISTRY[assignment_id].filename.replace('.py', '.ipynb')} "
                             f"here, found {len(found)}")
    key = (str(found[0]), found[0].stat().st_mtime)
    if key not in _REPORTS:
        _REPORTS[key] = grade_file(assignment_id, found[0])
    result = next(r for r in _REPORTS[key].results if r.check.name == name)
    if result.status != "pass":
        raise AssertionError(f"{result.status.upper()}: {result.check.description} -- {result.hint} "
                             "(save the notebook before validating: the grader reads the file)")
    print(f"PASS [{result.points}/{result.check.points}] {result.check.description}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises.notebooks", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    course = commands.add_parser("nbgrader", help="write COURSE/source/exNN/*.ipynb for nbgrader")
    course.add_argument("course", type=Path)
    args = parser.parse_args(argv)
    for path in write_nbgrader_course(args.course):
        print(f"wrote {path}")
    print(f"then, in {args.course}: nbgrader generate_assignment ex00 (and the others)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
