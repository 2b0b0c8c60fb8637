"""One source per assignment: the teacher's file, from which the students' template is cut.

Each assignment is written once, in ``exercises/solutions/exNN_topic.py``: the complete
assignment with its solution and the model answers, between markers (as nbgrader does)::

    def f(x):
        # the docstring and comments before the marker stay in the template
        ### BEGIN SOLUTION: compute f
        return x + 1
        ### END SOLUTION

    ### BEGIN ANSWER
    # the model answer to a written question
    ### END ANSWER

In the template a solution block becomes ``raise NotImplementedError("TODO: compute f")`` and an
answer block ``# YOUR ANSWER HERE``, both at the marker's indentation. Commands, from the
repository root::

    python -m exercises.release templates     # rewrite exercises/exNN_*.py from the sources
    python -m exercises.release check         # exit 1 if a committed template is out of date
    python -m exercises.release student DIR   # a folder to hand out: templates, grader, checks, mlm
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

EXERCISES_DIR = Path(__file__).resolve().parent
ROOT = EXERCISES_DIR.parent
SOLUTIONS_DIR = EXERCISES_DIR / "solutions"

BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN (?P<kind>SOLUTION|ANSWER)(?::\s*(?P<hint>.*?))?\s*$")
END = re.compile(r"^\s*### END (?P<kind>SOLUTION|ANSWER)\s*$")


class MarkerError(ValueError):
    pass


def make_template(source: str, name: str = "<source>") -> str:
    """The student's template: ``source`` with every solution and answer block replaced."""
    out, block = [], None  # block: (kind, line number) while inside one
    for number, line in enumerate(source.splitlines(keepends=True), 1):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if block:
                raise MarkerError(f"{name}:{number}: BEGIN inside the block opened on line {block[1]}")
            block = (begin["kind"], number)
            indent = begin["indent"]
            if begin["kind"] == "SOLUTION":
                hint = (begin["hint"] or "write this part").replace('"', "'")
                out.append(f'{indent}raise NotImplementedError("TODO: {hint}")\n')
            else:
                out.append(f"{indent}# YOUR ANSWER HERE\n")
        elif end:
            if not block or block[0] != end["kind"]:
                raise MarkerError(f"{name}:{number}: END {end['kind']} without a matching BEGIN")
            block = None
        elif not block:
            out.append(line)
    if block:
        raise MarkerError(f"{name}:{block[1]}: {block[0]} block never closed")
    return "".join(out)


def sources() -> list[Path]:
    return sorted(SOLUTIONS_DIR.glob("ex[0-9][0-9]_*.py"))


def templates() -> dict[Path, str]:
    """{template path in exercises/: its text} for every source."""
    return {EXERCISES_DIR / path.name: make_template(path.read_text(encoding="utf-8"), path.name) for path in sources()}


def write_templates(folder: Path = EXERCISES_DIR) -> list[Path]:
    written = []
    for path, text in templates().items():
        target = folder / path.name
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def stale_templates() -> list[Path]:
    return [path for path, text in templates().items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


RELEASE_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "solutions", "release.py")


def _ignore_untracked():
    """A ``copytree`` ignore that also leaves out what git does not track (a stray notes file, a student's
    experiment left in exercises/), where ROOT is a git checkout; elsewhere (a release released again) only
    :data:`RELEASE_IGNORE`."""
    import subprocess

    try:
        listed = subprocess.run(["git", "ls-files", "-z", "mlm", "exercises"], cwd=ROOT, capture_output=True,
                                timeout=60, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.SubprocessError):
        return RELEASE_IGNORE
    tracked = {ROOT / path for path in listed if path}
    folders = {parent for path in tracked for parent in path.parents}

    def ignore(folder, names):
        ignored = set(RELEASE_IGNORE(folder, names))
        return ignored | {n for n in names if Path(folder, n) not in tracked and Path(folder, n) not in folders}

    return ignore


def build_student_release(target: Path) -> None:
    """A folder for students: the book's package, the templates (fresh from the sources), the grader, the checks.

    No solutions, no model answers, no git history, no file git does not track. Students work in ``target`` as
    in the book's repository.
    """
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} exists and is not empty")
    target.mkdir(parents=True, exist_ok=True)
    ignore = _ignore_untracked()
    shutil.copytree(ROOT / "mlm", target / "mlm", ignore=ignore)
    shutil.copytree(EXERCISES_DIR, target / "exercises", ignore=ignore)
    write_templates(target / "exercises")
    shutil.copy2(ROOT / "pyproject.toml", target / "pyproject.toml")
    (target / "requirements.txt").write_text(student_requirements(), encoding="utf-8")
    guide = (EXERCISES_DIR / "README.md").read_text(encoding="utf-8")
    if "\n## For teachers" not in guide:
        raise ValueError("exercises/README.md has no '## For teachers' heading: the release would ship that part")
    students = guide.split("\n## For teachers", 1)[0]  # the teachers' and authors' sections stay out
    (target / "exercises" / "README.md").write_text(students, encoding="utf-8")
    (target / "README.md").write_text(STUDENT_README, encoding="utf-8")


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; the grader writes the results (exercises/README.md). The three
# folders can be moved for a trial run outside Gradescope.
submission=${{AUTOGRADER_SUBMISSION:-/autograder/submission}}
results=${{AUTOGRADER_RESULTS:-/autograder/results/results.json}}
cd "${{AUTOGRADER_SOURCE:-/autograder/source}}" || exit 1
shopt -s nullglob
files=("$submission"/ex{aid}_*.py "$submission"/ex{aid}_*.ipynb)
if [ ${{#files[@]}} -ne 1 ]; then  # none, or two the student may not know which is graded: say so, grade neither
  python3 - "${{files[@]}}" > "$results" <<'PY'
import json, os, sys
names = [os.path.basename(f) for f in sys.argv[1:]]
if names:
    text = f"{{len(names)}} files to grade ({{', '.join(names)}}): upload exactly one ex{aid}_*.py or ex{aid}_*.ipynb"
else:
    text = "no file ex{aid}_*.py or ex{aid}_*.ipynb in the submission"
print(json.dumps({{"score": 0, "output": text}}))
PY
  exit 0
fi
EXERCISES_SEED_OFFSET={offset} python3 -m exercises.grader {aid} --file "${{files[0]}}" \\
  --gradescope "$results"
"""
SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image. torch first, from PyTorch's CPU index: from
# PyPI it would bring gigabytes of CUDA libraries that the grader never uses.
set -e
cd /autograder/source
pip3 install --index-url https://download.pytorch.org/whl/cpu "{torch}"
pip3 install -r requirements.txt && pip3 install -e .
"""


def build_gradescope(assignment_id: str, target: Path) -> None:
    """A Gradescope autograder for one assignment: the students' release (no solutions) with ``setup.sh`` and
    ``run_autograder``, which grades with the teacher's hidden seed offset."""
    from exercises.checks.common import hidden_offset, public_offset_warning

    if public_offset_warning():
        print(f"warning: {public_offset_warning()}", file=sys.stderr)
    build_student_release(target)
    (target / "run_autograder").write_text(RUN_AUTOGRADER.format(aid=assignment_id, offset=hidden_offset()))
    torch = next(line for line in student_requirements().splitlines() if re.match(r"torch\b", line))
    (target / "setup.sh").write_text(SETUP.format(torch=torch))
    for name in ("run_autograder", "setup.sh"):
        (target / name).chmod(0o755)


STUDENT_PACKAGES = ("torch", "numpy", "tqdm", "matplotlib")  # what mlm and the grader import


def student_requirements() -> str:
    """The book's requirements.txt cut to what the assignments run (no JupyterLab, papermill, nbval...),
    with the book's version pins."""
    def package(line: str) -> str:  # "torch>=2.1,<=2.13.0" -> "torch"
        return re.split(r"[<>=!~ #\[]", line.strip(), maxsplit=1)[0]

    kept = [line for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
            if package(line) in STUDENT_PACKAGES]
    missing = set(STUDENT_PACKAGES) - {package(line) for line in kept}
    if missing:
        raise ValueError(f"requirements.txt does not list {sorted(missing)}: the students' release needs them")
    return "# What the assignments and the grader need (the book's pins; the chapters need more).\n" + \
        "\n".join(kept) + "\n"


STUDENT_README = """# Exercises: memory-augmented recurrent language models

This folder holds the assignments of the book, the grader and the book's package `mlm/` that the
grader compares your functions with. Set up once, from this folder:

```bash
python -m venv .venv && . .venv/bin/activate
pip install -r requirements.txt && pip install -e .
```

Then read `exercises/README.md`, open your assignment (`exercises/exNN_*.py`) and grade it with
`python -m exercises.grader NN`. Each assignment names the chapter of the book it follows: read
that chapter in the book (its repository or website) first, unless your teacher says otherwise.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises.release", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("templates", help="rewrite the templates exercises/exNN_*.py from exercises/solutions/")
    commands.add_parser("check", help="exit 1 if a template is not what its source generates")
    student = commands.add_parser("student", help="build the students' release in a new folder")
    student.add_argument("target", type=Path)
    scope = commands.add_parser("gradescope", help="build a Gradescope autograder folder for one assignment (zip it)")
    scope.add_argument("assignment")
    scope.add_argument("target", type=Path)
    args = parser.parse_args(argv)

    if args.command == "templates":
        for path in write_templates():
            print(f"wrote {path.relative_to(ROOT)}")
    elif args.command == "check":
        stale = stale_templates()
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run python -m exercises.release templates)")
        return 1 if stale else 0
    elif args.command == "gradescope":
        build_gradescope(args.assignment.zfill(2), args.target)
        print(f"Gradescope autograder in {args.target}: zip its contents (cd {args.target} && zip -r ../ag.zip .)")
    else:
        build_student_release(args.target)
        print(f"students' release in {args.target}: grade with `python -m exercises.grader NN` from there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
