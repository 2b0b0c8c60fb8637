"""The autograder for the book's assignments.

Students, from the repository root::

    python -m exercises.grader 00              # grade your file exercises/ex00_perplexity_lstm.py
    python -m exercises.grader 00 --file PATH  # grade any file (e.g. a copy elsewhere)
    python -m exercises.grader --list          # list the assignments

Teachers::

    python -m exercises.grader 00 --solution                      # grade the reference solution
    python -m exercises.grader --batch DIR --csv scores.csv       # grade a whole class

Grading a file happens in three steps, and student code runs in none of them here:

1. the source is read, never run: a submission that breaks a rule of :mod:`exercises.rules`
   (imports ``mlm``, calls ``nn.LSTM``...) scores 0; the loop rules are judged here too;
2. a child process (:mod:`exercises.sandbox`, in a fresh temporary folder, shut off from the book's code, the
   file system's writes and other processes) loads the file; the checks run *here*, on a proxy of the file
   (:mod:`exercises.remote`): each call sends inputs chosen here and gets the outputs back as JSON, which the
   checks compare with references computed here. Each check has its own time limit;
3. the points are added up from those comparisons.

The output has one PASS / FAIL / SKIP line per check, with a hint on failure, then
``score: X/Y points``. The exit code is 0 only with every point.

Adding an assignment: see "For authors" in ``exercises/README.md``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from exercises.checks import ex00, ex01, ex02, ex03, ex04, ex05, ex06
from exercises.checks.common import Check, CheckFailed
from exercises.remote import ChildStopped, RemoteError, RemoteModule, Session
from exercises.rules import StaticCheck, parse, violations, without_main_guards

EXERCISES_DIR = Path(__file__).resolve().parent
ROOT = EXERCISES_DIR.parent
SOLUTIONS_DIR = EXERCISES_DIR / "solutions"
DEFAULT_TIMEOUT = 20  # seconds per check; the solutions need a few
DEFAULT_BUDGET = 150  # seconds for all of a submission's checks: a file whose every function hangs costs this


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
    note: str = ""  # graded, with a remark (written answers that are not valid Python)
    not_shut: str = ""  # protections the grading child could not set up on this machine (see exercises.sandbox)

    @property
    def points(self) -> int:
        return 0 if self.rule_breaks else sum(r.points for r in self.results)

    @property
    def max_points(self) -> int:
        return REGISTRY[self.assignment_id].points


WRITTEN = re.compile(r"^# =+ written questions")


def without_written_answers(source: str) -> str | None:
    """``source`` with its written-questions section blanked (line numbers kept), or None if it has none: prose
    typed there without ``#`` must not cost the code its points."""
    lines = source.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if WRITTEN.match(line)), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("if __name__")), len(lines))
    return "".join(lines[:start] + ["\n"] * (end - start) + lines[end:])


def read_submission(path: Path) -> str:
    """The Python of a submission: the file, or a notebook's set-up and answer cells (:mod:`exercises.notebooks`)."""
    if path.suffix == ".ipynb":
        from exercises.notebooks import graded_source

        return graded_source(path)
    return path.read_text(encoding="utf-8-sig")  # an editor's byte-order mark is not part of the code


def _outcome(check: Check, module: RemoteModule) -> tuple[str, str]:
    """("pass" | "fail", hint) of one check, run here on the proxy of the submission."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the checks' own, and torch's
            check.run(module)
    except CheckFailed as failure:
        return "fail", str(failure)
    except ChildStopped as stopped:
        return "fail", f"your code stopped the grader during this check ({stopped})"
    except RemoteError as exc:
        if isinstance(exc, NotImplementedError):
            return "fail", "not implemented yet" + (f" ({exc.function})" if exc.function else "")
        return "fail", f"raised {exc.type_name}: {exc}{exc.where}"
    except Exception as exc:  # noqa: BLE001 -- a check tripping over what the submission returned
        message = str(exc).splitlines()[0] if str(exc) else ""
        return "fail", f"raised {type(exc).__name__}: {message}"
    return "pass", ""


def grade_file(assignment_id: str, path: Path, timeout: float = DEFAULT_TIMEOUT, verbose: bool = False,
               budget: float = DEFAULT_BUDGET, rules: bool = True) -> Report:
    """Grade the file at ``path`` against assignment ``assignment_id``; ``timeout`` is each check's limit and
    ``budget`` all of them together (the checks left when it is spent fail). ``rules=False`` skips the source
    rules, so that the sandbox alone stands between a submission and the score: the security tests use it to
    show that it holds by itself; never grade so."""
    assignment = REGISTRY[assignment_id]
    report = Report(assignment_id, Path(path).resolve())
    try:
        source = read_submission(report.path)
        try:
            tree = parse(source)
        except SyntaxError:
            source = without_written_answers(source) or source
            tree = parse(source)
            report.note = "your written answers are not valid Python (start each line with #): graded without them"
    except (SyntaxError, UnicodeDecodeError, OSError, ValueError) as exc:
        report.problem, report.unreadable = f"your file could not be read: {exc}", True
        report.results = [Result(c, "fail", "not graded: the file could not be read") for c in assignment.checks]
        return report
    report.rule_breaks = [str(v) for v in violations(tree, assignment.banned)] if rules else []
    if report.rule_breaks:
        report.results = [Result(c, "fail", "not graded: the file breaks a rule") for c in assignment.checks]
        return report
    session, module, load_failure = Session(without_main_guards(source, tree), verbose), None, ""
    failed: set[str] = set()
    described = {c.name: c.description for c in assignment.checks}  # a hint names a check as the student sees it
    end = time.monotonic() + budget
    try:
        for c in assignment.checks:
            missing = [r for r in c.requires if r in failed]
            left = end - time.monotonic()
            if missing:
                result = Result(c, "skip", "first pass: " + "; ".join(f'"{described[r]}"' for r in missing))
            elif isinstance(c.run, StaticCheck):
                hint = c.run.run(tree)
                result = Result(c, "fail" if hint else "pass", hint or "")
            elif load_failure:
                result = Result(c, "fail", load_failure)
            elif left <= 0:
                result = Result(c, "fail", f"not run: your file used up the {budget:g} s allowed for all its checks "
                                           "(look for the functions that hang above)")
            else:
                try:
                    session.begin_check(min(timeout, left))
                    module = module or RemoteModule(session)
                    result = Result(c, *_outcome(c, module))
                except (RemoteError, ChildStopped) as exc:  # the file itself could not be loaded
                    where = f"{exc.type_name}: {exc}{exc.where}" if isinstance(exc, RemoteError) else str(exc)
                    load_failure = f"your file could not be loaded: {where}"
                    result = Result(c, "fail", load_failure)
                if "stopped the grader" in result.hint and not report.problem:
                    report.problem = f"{c.name}: {session.stopped}"
            if result.status != "pass":
                failed.add(c.name)
            report.results.append(result)
    finally:
        report.not_shut = session.not_shut
        session.close()
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
    if report.note:
        print(f"note: {report.note}", file=out)
    if report.not_shut:
        print(f"warning: {not_shut_warning([report.not_shut])}", file=out)
    print(f"score: {report.points}/{report.max_points} points", file=out)


def not_shut_warning(missing: list[str]) -> str:
    return (f"the grading child ran without: {'; '.join(missing)} (exercises/README.md, 'What the grader "
            "guarantees'): a submission could do more there than the README promises")


# ----------------------------------------------------------------------------- a whole class

SUBMISSION = re.compile(r"ex(\d\d)_[^/]*\.(?:py|ipynb)")
NOT_SUBMISSIONS = ("checks", "solutions", "__pycache__")  # folders of a release handed back whole


def find_submissions(folder: Path) -> tuple[list[tuple[str, str, Path]], list[tuple[str, str, str]], list[str]]:
    """``(found, ungraded, problems)``: (student, assignment id, path) for every submission under ``folder``;
    (student, assignment id, why) for every one that is not graded; and a line for every file whose student
    cannot be told.

    Two layouts, which may be mixed: ``folder/<student>/.../exNN_anything.py`` or ``.ipynb`` (a folder per student
    holding their copies of the templates, at any depth, as nbgrader's ``submitted/<student>/<assignment>/``;
    hidden folders, Jupyter's checkpoints and the release's own ``checks/`` are skipped) and
    ``folder/<student>__exNN_anything.py`` or ``.ipynb`` (a flat export). A file whose answers are still the
    template's (a ``.py`` template, a notebook as nbgrader handed it out) is not graded; two files of one student
    for one assignment are both left out, named, for the teacher to choose.
    """
    candidates, ungraded, problems = {}, [], []
    for path in sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".ipynb") and p.is_file()):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part in NOT_SUBMISSIONS for part in relative.parts[:-1]):
            continue
        if len(relative.parts) >= 2:
            student, name = relative.parts[0], path.name
        elif "__" in path.name:
            student, name = path.name.split("__", 1)
        else:
            if SUBMISSION.search(path.name):
                problems.append(f"{relative}: a flat file must be named <student>__exNN_....py (or .ipynb)")
            continue
        match = SUBMISSION.fullmatch(name)
        if not match or match.group(1) not in REGISTRY:
            continue
        if is_template(path, match.group(1)):
            ungraded.append((student, match.group(1), "the template, unchanged"))
            continue
        candidates.setdefault((student, match.group(1)), []).append(path)
    found = []
    for (student, assignment_id), paths in candidates.items():
        if len(paths) == 1:
            found.append((student, assignment_id, paths[0]))
        else:
            ungraded.append((student, assignment_id, f"{len(paths)} files "
                             f"({', '.join(str(p.relative_to(folder)) for p in paths)}); none graded, keep one"))
    return sorted(found), sorted(ungraded), problems


def is_template(path: Path, assignment_id: str) -> bool:
    """Whether a submission is the template as handed out, untouched: the ``.py`` template, or the notebook whose
    answer cells are still nbgrader's stubs."""
    if path.suffix == ".ipynb":
        from exercises.notebooks import untouched

        try:
            return untouched(path, assignment_id)
        except Exception:  # noqa: BLE001 -- not a notebook nbgrader wrote: graded, and the grader says why
            return False
    template = EXERCISES_DIR / REGISTRY[assignment_id].filename
    if not template.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    return text.replace("\r\n", "\n") == template.read_text(encoding="utf-8")


def _grade_for_batch(job: tuple) -> dict:
    """One submission of a batch, in a worker process: its report as plain data."""
    student, assignment_id, path, timeout, budget, rules = job
    report = grade_file(assignment_id, Path(path), timeout, budget=budget, rules=rules)
    return {"student": student, "assignment": assignment_id, "path": path, "problem": report.problem,
            "rule_breaks": report.rule_breaks, "note": report.note, "not_shut": report.not_shut,
            "results": [(r.check.name, r.status, r.hint) for r in report.results]}


def _report_from(data: dict) -> Report:
    checks = {c.name: c for c in REGISTRY[data["assignment"]].checks}
    report = Report(data["assignment"], Path(data["path"]), problem=data["problem"], rule_breaks=data["rule_breaks"],
                    note=data["note"], not_shut=data["not_shut"])
    report.results = [Result(checks[name], status, hint) for name, status, hint in data["results"]]
    return report


def grade_batch(folder: Path, csv_path: Path | None, timeout: float, out=None, jobs: int = 1,
                roster: list[str] | None = None, budget: float = DEFAULT_BUDGET,
                rules: bool = True) -> list[tuple[str, Report]]:
    """Grade every submission under ``folder``, ``jobs`` at a time. The CSV gradebook has a row for every student
    (those found and those on ``roster``) and every assignment found: points, or 0 and why it was not graded.
    ``budget`` and ``rules``: as for :func:`grade_file`."""
    out = out or sys.stdout
    from exercises.checks.common import public_offset_warning

    if public_offset_warning():
        print(f"warning: {public_offset_warning()}", file=out)
    submissions, ungraded, problems = find_submissions(folder)
    for problem in problems:
        print(f"not graded: {problem}", file=out)
    for student, assignment_id, why in ungraded:
        print(f"not graded: {student}, assignment {assignment_id}: {why}", file=out)
    if not submissions and not ungraded:
        print(f"no submissions found under {folder} (expected <student>/.../exNN_*.py or .ipynb, or "
              "<student>__exNN_*.py)", file=out)
        return []
    work = [(student, assignment_id, str(path), timeout, budget, rules) for student, assignment_id, path in submissions]
    if jobs > 1 and len(work) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_quiet_worker) as pool:
            done = list(pool.map(_grade_for_batch, work))
    else:
        done = [_grade_for_batch(job) for job in work]
    graded = [(data["student"], _report_from(data)) for data in done]
    for student, report in graded:
        note = " (breaks a rule)" if report.rule_breaks else f" ({report.problem})" if report.problem else ""
        print(f"{student:20s} {report.assignment_id}  {report.points:3d}/{report.max_points}{note}", file=out)
    missing = sorted({r.not_shut for _, r in graded if r.not_shut})
    if missing:
        print(f"warning: {not_shut_warning(missing)}", file=out)
    if csv_path is not None:
        write_gradebook(csv_path, graded, ungraded, roster or [])
        print(f"scores written to {csv_path}", file=out)
    print_class_summary(graded, out)
    return graded


def _quiet_worker() -> None:
    import torch

    torch.set_num_threads(1)


def write_gradebook(path: Path, graded: list[tuple[str, Report]], ungraded: list[tuple[str, str, str]],
                    roster: list[str]) -> None:
    """One row per student and assignment: every student seen or on the roster, every assignment seen."""
    rows = {(student, r.assignment_id): [r.points, r.max_points, "graded",
                                         " ".join(res.check.name for res in r.results if res.status != "pass"),
                                         "; ".join(r.rule_breaks), r.problem or r.note] for student, r in graded}
    for student, assignment_id, why in ungraded:
        rows[(student, assignment_id)] = [0, REGISTRY[assignment_id].points, f"not graded: {why}", "", "", ""]
    students = sorted({s for s, _ in rows} | set(roster))
    for student in students:
        for assignment_id in sorted({a for _, a in rows}):
            rows.setdefault((student, assignment_id),
                            [0, REGISTRY[assignment_id].points, "no submission", "", "", ""])
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "points", "max_points", "status", "failed_checks", "rule_breaks",
                         "problem"])
        for (student, assignment_id), row in sorted(rows.items()):
            writer.writerow([student, assignment_id, *row])


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


def write_gradescope(report: Report, path: Path) -> None:
    """``report`` as Gradescope's autograder results (https://gradescope-autograders.readthedocs.io)."""
    import io
    import json

    text = io.StringIO()
    print_report(report, text)
    tests = [{"name": r.check.description, "score": r.points, "max_score": r.check.points, "visibility": "visible",
              "status": "passed" if r.status == "pass" else "failed", "output": r.hint} for r in report.results]
    result = {"score": report.points, "max_score": report.max_points, "output": text.getvalue(), "tests": tests}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


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
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds allowed per check")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                        help="seconds allowed for all the checks of one submission")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="with --batch: submissions graded at once (default: one per core)")
    parser.add_argument("--roster", type=Path, help="with --batch: a file of student names, one a line; each gets a "
                        "row in the CSV even without a submission")
    parser.add_argument("--gradescope", type=Path, metavar="JSON",
                        help="also write the result in Gradescope's results.json format to this file")
    parser.add_argument("--list", action="store_true", help="list the assignments and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="show your prints and full tracebacks")
    args = parser.parse_args(argv)

    if args.batch is not None:
        if not args.batch.is_dir():
            print(f"no folder {args.batch}", file=sys.stderr)
            return 2
        roster = [line.strip() for line in args.roster.read_text().splitlines() if line.strip()] if args.roster else []
        graded = grade_batch(args.batch, args.csv, args.timeout, jobs=max(args.jobs, 1), roster=roster,
                             budget=args.budget)
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
    from exercises.checks.common import public_offset_warning

    if public_offset_warning():
        print(f"warning: {public_offset_warning()}", file=sys.stderr)
    report = grade_file(assignment_id, path, args.timeout, args.verbose, budget=args.budget)
    print_report(report)
    if args.gradescope is not None:
        write_gradescope(report, args.gradescope)
    return 0 if report.points == report.max_points else 1


if __name__ == "__main__":
    sys.exit(main())
