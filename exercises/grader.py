"""The autograder for the book's assignments.

Run it from the repository root::

    python -m exercises.grader 00              # grade your file exercises/ex00_perplexity_lstm.py
    python -m exercises.grader 00 --file PATH  # grade any file (e.g. a copy elsewhere)
    python -m exercises.grader 00 --solution   # grade the reference solution (teachers)
    python -m exercises.grader --list          # list the assignments

It loads the file as a module, runs the assignment's checks one by one, prints a PASS or FAIL
line per check (with a hint on failure), then ``score: X/Y``. The exit code is 0 only when
every check passes, so the grader also works in scripts and CI.

Adding an assignment: write ``exercises/checks/exNN.py`` exporting ``CHECKS`` (see
``exercises/checks/ex00.py``), put the template at ``exercises/exNN_topic.py`` and the
solution at ``exercises/solutions/exNN_topic.py``, and add one entry to :data:`REGISTRY`.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from exercises.checks import ex00, ex02, ex03, ex04, ex05
from exercises.checks.common import Check, CheckFailed

EXERCISES_DIR = Path(__file__).resolve().parent
SOLUTIONS_DIR = EXERCISES_DIR / "solutions"


@dataclass(frozen=True)
class Assignment:
    title: str
    filename: str  # the template's name in exercises/, and the solution's in exercises/solutions/
    checks: list[Check]


REGISTRY: dict[str, Assignment] = {
    "00": Assignment("Perplexity with padding, and an LSTM by hand", "ex00_perplexity_lstm.py", ex00.CHECKS),
    "02": Assignment("The Attentive LM: combined score and causal memory mask", "ex02_attentive_scores.py",
                     ex02.CHECKS),
    "03": Assignment("Short attention spans: the key-value-predict split and the window mask",
                     "ex03_short_attention.py", ex03.CHECKS),
    "04": Assignment("The Recurrent Memory Network: memory window, temporal rows, gating", "ex04_memory_block.py",
                     ex04.CHECKS),
    "05": Assignment("Kneser-Ney noising: the continuation proposal and absolute-discounting gamma_i",
                     "ex05_noising_proposals.py", ex05.CHECKS),
}


@dataclass
class Result:
    check: Check
    passed: bool
    hint: str = ""


def load_module(path: Path, name: str):
    """Import the Python file at ``path`` as a fresh module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _where(exc: BaseException, path: Path | None) -> tuple[str, str]:
    """(function name, " (your file, line N)") of the deepest frame of ``exc`` in ``path``."""
    function, location = "", ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if path is not None and Path(frame.f_code.co_filename).resolve() == path:
            function, location = frame.f_code.co_name, f" (your file, line {lineno})"
    return function, location


def run_check(check: Check, module, path: Path | None = None, verbose: bool = False) -> Result:
    try:
        check.run(module)
    except CheckFailed as failure:
        return Result(check, False, str(failure))
    except NotImplementedError as exc:
        function, _ = _where(exc, path)
        return Result(check, False, "not implemented yet" + (f" ({function})" if function else ""))
    except Exception as exc:  # the student's code crashed: say where, not how to fix it
        if verbose:
            traceback.print_exc()
        _, location = _where(exc, path)
        message = str(exc).splitlines()[0] if str(exc) else ""
        return Result(check, False, f"raised {type(exc).__name__}: {message}{location}")
    return Result(check, True)


def grade(assignment_id: str, path: Path, verbose: bool = False, out=sys.stdout) -> list[Result]:
    """Grade the file at ``path`` against assignment ``assignment_id``; print and return results."""
    assignment = REGISTRY[assignment_id]
    path = Path(path).resolve()
    print(f"Assignment {assignment_id}: {assignment.title}", file=out)
    print(f"grading {path}", file=out)
    try:
        module = load_module(path, f"_graded_ex{assignment_id}")
    except Exception as exc:
        if verbose:
            traceback.print_exc()
        _, location = _where(exc, path)
        print(f"FAIL  loading your file -- it raised {type(exc).__name__}: {exc}{location}", file=out)
        results = [Result(c, False, "file could not be loaded") for c in assignment.checks]
    else:
        results = []
        for check in assignment.checks:
            result = run_check(check, module, path, verbose)
            line = f"{'PASS' if result.passed else 'FAIL'}  {check.description}"
            if not result.passed:
                line += f" -- hint: {result.hint}"
            print(line, file=out)
            results.append(result)
    passed = sum(r.passed for r in results)
    print(f"score: {passed}/{len(results)}", file=out)
    return results


def _default_path(assignment_id: str, solution: bool) -> Path:
    filename = REGISTRY[assignment_id].filename
    return (SOLUTIONS_DIR if solution else EXERCISES_DIR) / filename


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises.grader",
                                     description="Grade an assignment of the book.")
    parser.add_argument("assignment", nargs="?", help="assignment id, e.g. 00")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--solution", action="store_true", help="grade the reference solution")
    source.add_argument("--file", type=Path, help="grade this file instead of the default one")
    parser.add_argument("--list", action="store_true", help="list the assignments and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="print full tracebacks of errors")
    args = parser.parse_args(argv)

    if args.list or args.assignment is None:
        for key, assignment in REGISTRY.items():
            print(f"{key}  {assignment.filename:32s} {assignment.title} ({len(assignment.checks)} checks)")
        return 0 if args.list else 2
    assignment_id = args.assignment.zfill(2)
    if assignment_id not in REGISTRY:
        print(f"unknown assignment {args.assignment!r}; known: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    path = args.file or _default_path(assignment_id, args.solution)
    if not path.is_file():
        what = "solution" if args.solution else "file"
        note = " (solutions are removed from the students' copy)" if args.solution else ""
        print(f"no {what} at {path}{note}", file=sys.stderr)
        return 2

    import torch

    torch.set_num_threads(1)  # the checks use tiny tensors: threads only add overhead
    results = grade(assignment_id, path, verbose=args.verbose)
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
