"""The autograder for the book's assignments.

Students, from the repository root::

    python -m exercises.grader 00              # grade your file exercises/ex00_perplexity_lstm.py
    python -m exercises.grader 00 --file PATH  # grade any file (e.g. a copy elsewhere)
    python -m exercises.grader --list          # list the assignments

Teachers::

    python -m exercises.grader 00 --solution                      # grade the reference solution
    python -m exercises.grader --batch DIR --csv scores.csv       # grade a whole class

Grading a file happens in three steps, and only the first and last run in this process:

1. the source is read, never run: a submission that breaks a rule of :mod:`exercises.rules`
   (imports ``mlm``, calls ``nn.LSTM``...) scores 0; the loop rules are judged here too;
2. a child process (:mod:`exercises.runner`) loads the file and runs the checks, under a time
   limit, reporting each outcome on a pipe;
3. this process validates the reports (a check not reported failed) and adds up the points.

The output has one PASS / FAIL / SKIP line per check, with a hint on failure, then
``score: X/Y points``. The exit code is 0 only with every point.

Adding an assignment: see "For authors" in ``exercises/README.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from exercises.checks import ex00, ex01, ex02, ex03, ex04, ex05, ex06
from exercises.checks.common import Check
from exercises.rules import StaticCheck, parse, violations

EXERCISES_DIR = Path(__file__).resolve().parent
ROOT = EXERCISES_DIR.parent
SOLUTIONS_DIR = EXERCISES_DIR / "solutions"
DEFAULT_TIMEOUT = 120  # seconds per submission; the solutions need a few


@dataclass(frozen=True)
class Assignment:
    title: str
    filename: str  # the template's name in exercises/, and the solution's in exercises/solutions/
    checks: list[Check]
    banned: dict[str, str]  # names a submission may not use, and why

    @property
    def points(self) -> int:
        return sum(c.points for c in self.checks)


def _assignment(title: str, filename: str, checks_module) -> Assignment:
    return Assignment(title, filename, checks_module.CHECKS, getattr(checks_module, "BANNED", {}))


REGISTRY: dict[str, Assignment] = {
    "00": _assignment("Perplexity with padding, and an LSTM by hand", "ex00_perplexity_lstm.py", ex00),
    "01": _assignment("The baselines: vertical dropout, truncated BPTT, the loss, weight tying",
                      "ex01_lstm_baselines.py", ex01),
    "02": _assignment("The Attentive LM: combined score and causal memory mask", "ex02_attentive_scores.py", ex02),
    "03": _assignment("Short attention spans: the key-value-predict split and the window mask",
                      "ex03_short_attention.py", ex03),
    "04": _assignment("The Recurrent Memory Network: memory window, temporal rows, attention, gating",
                      "ex04_memory_block.py", ex04),
    "05": _assignment("Kneser-Ney noising and variational smoothing", "ex05_noising_proposals.py", ex05),
    "06": _assignment("Measuring memory: accuracy by distance and the history cut", "ex06_measuring_memory.py", ex06),
}


@dataclass
class Result:
    check: Check
    status: str  # "pass", "fail" or "skip"
    hint: str = ""

    @property
    def points(self) -> int:
        return self.check.points if self.status == "pass" else 0


@dataclass
class Report:
    assignment_id: str
    path: Path
    results: list[Result] = field(default_factory=list)
    rule_breaks: list[str] = field(default_factory=list)  # a broken rule scores 0
    problem: str = ""  # the submission stopped the grader (exit, crash, time limit) or could not be read
    unreadable: bool = False  # a syntax error or an unreadable file: no check ran

    @property
    def points(self) -> int:
        return 0 if self.rule_breaks else sum(r.points for r in self.results)

    @property
    def max_points(self) -> int:
        return REGISTRY[self.assignment_id].points


def _child_results(assignment: Assignment, assignment_id: str, path: Path, static_failed: list[str],
                   timeout: float, verbose: bool) -> tuple[dict[str, dict], str]:
    """Run the checks in a child process; return its reports by check name, and what went wrong if anything."""
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, OMP_NUM_THREADS="1", EXERCISES_VERBOSE="1" if verbose else "0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "exercises.runner", assignment_id, str(path), str(write_fd), *static_failed]
    child = subprocess.Popen(command, cwd=ROOT, env=env, pass_fds=(write_fd,), stdin=subprocess.DEVNULL,
                             stdout=None if verbose else subprocess.DEVNULL,
                             stderr=None if verbose else subprocess.DEVNULL)
    os.close(write_fd)
    problem, received = "", []
    with os.fdopen(read_fd) as pipe:
        reader = threading.Thread(target=lambda: received.append(pipe.read()), daemon=True)
        reader.start()  # drained while the child runs, so a full pipe never blocks it
        try:
            child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            problem = f"time limit of {timeout:g} s reached"
        reader.join(timeout=5)
    lines = "".join(received).splitlines()
    finished = any(json.loads(line).get("status") == "done" for line in lines[-1:] if line.startswith("{"))
    if not problem and (child.returncode != 0 or not finished):
        problem = f"the grading process ended early, with exit code {child.returncode}"
    known = {c.name for c in assignment.checks}
    reports = {}
    for line in lines:
        try:
            record = json.loads(line)
            name, status, hint = record["name"], record["status"], str(record["hint"])
        except (ValueError, KeyError, TypeError):
            continue
        if name in known and name not in reports and status in ("pass", "fail", "skip"):
            reports[name] = {"status": status, "hint": hint}
    return reports, problem


def grade_file(assignment_id: str, path: Path, timeout: float = DEFAULT_TIMEOUT, verbose: bool = False) -> Report:
    """Grade the file at ``path`` against assignment ``assignment_id``."""
    assignment = REGISTRY[assignment_id]
    report = Report(assignment_id, Path(path).resolve())
    try:
        tree = parse(report.path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError) as exc:
        report.problem, report.unreadable = f"your file could not be read: {exc}", True
        report.results = [Result(c, "fail", "not graded: the file could not be read") for c in assignment.checks]
        return report
    report.rule_breaks = [str(v) for v in violations(tree, assignment.banned)]
    if report.rule_breaks:
        report.results = [Result(c, "fail", "not graded: the file breaks a rule") for c in assignment.checks]
        return report
    static = {c.name: c.run.run(tree) for c in assignment.checks if isinstance(c.run, StaticCheck)}
    static_failed = [name for name, hint in static.items() if hint]
    reports, report.problem = _child_results(assignment, assignment_id, report.path, static_failed, timeout, verbose)
    failed, stopped = set(), False
    described = {c.name: c.description for c in assignment.checks}  # a hint names a check as the student sees it
    for c in assignment.checks:
        missing = [r for r in c.requires if r in failed]
        if missing:  # whatever the child said: a check whose prerequisite failed earns nothing here
            result = Result(c, "skip", "first pass: " + "; ".join(f'"{described[r]}"' for r in missing))
        elif c.name in static:
            result = Result(c, "fail" if static[c.name] else "pass", static[c.name] or "")
        elif c.name in reports:
            result = Result(c, reports[c.name]["status"], reports[c.name]["hint"])
            if result.status == "skip":  # only the parent decides what to skip
                result = Result(c, "fail", "skipped by the grading process without reason")
        elif not stopped:
            stopped = True
            result = Result(c, "fail", f"your code stopped the grader during this check ({report.problem or 'no report'})")
        else:
            result = Result(c, "fail", "not run: the grader was stopped by an earlier check")
        if result.status != "pass":
            failed.add(c.name)
        report.results.append(result)
    return report


def print_report(report: Report, out=None) -> None:
    out = out or sys.stdout
    assignment = REGISTRY[report.assignment_id]
    print(f"Assignment {report.assignment_id}: {assignment.title}", file=out)
    print(f"grading {report.path}", file=out)
    if report.rule_breaks:
        print("FAIL  the rules of the assignment (see its docstring) -- not graded:", file=out)
        for line in report.rule_breaks:
            print(f"        {line}", file=out)
    elif report.unreadable:  # one message, not the same one under every check
        print(f"FAIL  {report.problem} -- no check ran; fix it and grade again", file=out)
    else:
        for r in report.results:
            line = f"{r.status.upper():4s}  [{r.points}/{r.check.points}] {r.check.description}"
            if r.status != "pass":
                line += f" -- hint: {r.hint}"
            print(line, file=out)
    print(f"score: {report.points}/{report.max_points} points", file=out)


# ----------------------------------------------------------------------------- a whole class

SUBMISSION = re.compile(r"ex(\d\d)_[^/]*\.py")
NOT_SUBMISSIONS = ("checks", "solutions", "__pycache__")  # folders of a release handed back whole


def find_submissions(folder: Path) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """``(found, problems)``: (student, assignment id, path) for every submission under ``folder``, and one line
    for every assignment file that is not graded, saying why.

    Two layouts, which may be mixed: ``folder/<student>/.../exNN_anything.py`` (a folder per student holding
    their copies of the templates, at any depth; hidden folders, Jupyter's checkpoints and the release's own
    ``checks/`` are skipped) and ``folder/<student>__exNN_anything.py`` (a flat export). A file identical to
    its template is not graded; two files of one student for one assignment are both left out, named, for
    the teacher to choose.
    """
    candidates, problems = {}, []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part in NOT_SUBMISSIONS for part in relative.parts[:-1]):
            continue
        if len(relative.parts) >= 2:
            student, name = relative.parts[0], path.name
        elif "__" in path.name:
            student, name = path.name.split("__", 1)
        else:
            if SUBMISSION.search(path.name):
                problems.append(f"{relative}: a flat file must be named <student>__exNN_....py")
            continue
        match = SUBMISSION.fullmatch(name)
        if not match or match.group(1) not in REGISTRY:
            continue
        template = EXERCISES_DIR / REGISTRY[match.group(1)].filename
        if template.is_file() and path.read_bytes() == template.read_bytes():
            problems.append(f"{relative}: the template, unchanged")
            continue
        candidates.setdefault((student, match.group(1)), []).append(path)
    found = []
    for (student, assignment_id), paths in candidates.items():
        if len(paths) == 1:
            found.append((student, assignment_id, paths[0]))
        else:
            problems.append(f"{student}, assignment {assignment_id}: {len(paths)} files "
                            f"({', '.join(str(p.relative_to(folder)) for p in paths)}); none graded, keep one")
    return sorted(found), problems


def grade_batch(folder: Path, csv_path: Path | None, timeout: float, out=None) -> list[tuple[str, Report]]:
    out = out or sys.stdout
    submissions, problems = find_submissions(folder)
    for problem in problems:
        print(f"not graded: {problem}", file=out)
    if not submissions:
        print(f"no submissions found under {folder} (expected <student>/exNN_*.py or <student>__exNN_*.py)", file=out)
        return []
    graded = []
    for student, assignment_id, path in submissions:
        report = grade_file(assignment_id, path, timeout)
        graded.append((student, report))
        note = " (breaks a rule)" if report.rule_breaks else f" ({report.problem})" if report.problem else ""
        print(f"{student:20s} {assignment_id}  {report.points:3d}/{report.max_points}{note}", file=out)
    if csv_path is not None:
        with open(csv_path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["student", "assignment", "points", "max_points", "failed_checks", "rule_breaks", "problem"])
            for student, r in graded:
                failed = " ".join(res.check.name for res in r.results if res.status != "pass")
                writer.writerow([student, r.assignment_id, r.points, r.max_points, failed, "; ".join(r.rule_breaks),
                                 r.problem])
        print(f"scores written to {csv_path}", file=out)
    print_class_summary(graded, out)
    return graded


def print_class_summary(graded: list[tuple[str, Report]], out=None) -> None:
    """For every assignment, how many submissions pass each check: where the class struggles."""
    out = out or sys.stdout
    for assignment_id in sorted({r.assignment_id for _, r in graded}):
        reports = [r for _, r in graded if r.assignment_id == assignment_id]
        n = len(reports)
        mean = sum(r.points for r in reports) / n
        print(f"\nAssignment {assignment_id}: {n} submission(s), mean {mean:.1f}/{REGISTRY[assignment_id].points} points",
              file=out)
        for i, c in enumerate(REGISTRY[assignment_id].checks):
            passed = sum(r.results[i].status == "pass" and not r.rule_breaks for r in reports)
            print(f"  {passed:3d}/{n}  [{c.points}] {c.description}", file=out)
        breaking = sum(bool(r.rule_breaks) for r in reports)
        if breaking:
            print(f"  {breaking} submission(s) broke a rule and scored 0", file=out)


# ----------------------------------------------------------------------------- command line


def _default_path(assignment_id: str, solution: bool) -> Path:
    filename = REGISTRY[assignment_id].filename
    return (SOLUTIONS_DIR if solution else EXERCISES_DIR) / filename


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises.grader", description="Grade an assignment of the book.")
    parser.add_argument("assignment", nargs="?", help="assignment id, e.g. 00")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--solution", action="store_true", help="grade the reference solution")
    source.add_argument("--file", type=Path, help="grade this file instead of the default one")
    source.add_argument("--batch", type=Path, metavar="DIR",
                        help="grade every submission under DIR (<student>/exNN_*.py or <student>__exNN_*.py)")
    parser.add_argument("--csv", type=Path, help="with --batch: write the scores to this CSV file")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per submission")
    parser.add_argument("--list", action="store_true", help="list the assignments and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show your prints and full tracebacks")
    args = parser.parse_args(argv)

    if args.batch is not None:
        if not args.batch.is_dir():
            print(f"no folder {args.batch}", file=sys.stderr)
            return 2
        graded = grade_batch(args.batch, args.csv, args.timeout)
        return 0 if graded else 1
    if args.list or args.assignment is None:
        for key, a in REGISTRY.items():
            print(f"{key}  {a.filename:28s} {a.title} ({len(a.checks)} checks, {a.points} points)")
        return 0 if args.list else 2
    assignment_id = args.assignment.zfill(2)
    if assignment_id not in REGISTRY:
        print(f"unknown assignment {args.assignment!r}; known: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    path = args.file or _default_path(assignment_id, args.solution)
    if not path.is_file():
        what = "solution" if args.solution else "file"
        note = " (solutions are not part of the students' release)" if args.solution else ""
        print(f"no {what} at {path}{note}", file=sys.stderr)
        return 2
    report = grade_file(assignment_id, path, args.timeout, args.verbose)
    print_report(report)
    return 0 if report.points == report.max_points else 1


if __name__ == "__main__":
    sys.exit(main())
