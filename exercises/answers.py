"""The answers sheet: every student's written answers beside the model answers, for grading by hand.

    python -m exercises.answers SUBMISSIONS --csv answers.csv --html answers.html

reads the submissions as the grader finds them (``<student>/.../exNN_*.py`` or ``.ipynb``, nbgrader's
``submitted/<student>/exNN/`` included, or ``<student>__exNN_*.py``) and writes one row per student and
written question: the question, the student's answer, the model answer, and, for the training experiment's
question, the numbers of the student's experiment that it asks them to read (``exNN_experiment.json`` beside the
submission; ``<student>__exNN_experiment.json`` in a flat folder). A student whose file is the untouched template,
or who handed in two files, still gets rows, saying so.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import sys
from pathlib import Path

from exercises.grader import REGISTRY, SOLUTIONS_DIR, WRITTEN, find_submissions
from exercises.notebooks import QUESTION, answers as notebook_answers, parts

PLACEHOLDER = "# YOUR ANSWER HERE"
NOTEBOOK_PLACEHOLDER = "YOUR ANSWER HERE"  # nbgrader's stub in a Markdown answer cell


def model_answers(assignment_id: str) -> list[dict]:
    """[{"id", "text", "answer"}] of an assignment's written questions, from its source."""
    source = (SOLUTIONS_DIR / REGISTRY[assignment_id].filename).read_text(encoding="utf-8")
    return [{"id": q["id"], "text": " ".join(q["text"]).strip(), "answer": "\n".join(q["answer"]).strip(),
             "experiment": " ".join(q["text"]).lstrip().startswith(f"{q['id']} (training experiment")}
            for q in parts(source)["questions"]]


def file_answers(path: Path, questions: list[dict]) -> dict[str, str]:
    """{question id: the student's answer} of a ``.py`` submission: what stands under each question, the
    question's own lines and the placeholder left out, ``#`` taken off (prose typed without ``#`` is kept)."""
    if path.suffix == ".ipynb":
        return {q: "" if text.strip() == NOTEBOOK_PLACEHOLDER else text for q, text in notebook_answers(path).items()}
    lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if WRITTEN.match(line)), 0)
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("if __name__")), len(lines))
    asked = {q["id"]: set(q["text"].split()) for q in questions}
    found, current = {}, None
    for line in lines[start + 1:end]:
        match = QUESTION.match(line)
        if match:
            current = match.group(1)
            found[current] = []
            continue
        if current is None or line.strip() in (PLACEHOLDER, "#") or line.startswith(("### BEGIN", "### END")):
            continue
        text = line[2:] if line.startswith("# ") else line.lstrip("#")
        words = set(text.split())
        if words and words <= asked.get(current, set()):  # a line of the question itself
            continue
        found[current].append(text)
    return {q: "\n".join(text).strip() for q, text in found.items()}


def experiment_numbers(path: Path, assignment_id: str, flat_student: str | None = None) -> str:
    """The numbers of the experiment handed in with the submission at ``path``: ``exNN_experiment.json`` beside it,
    or ``<student>__exNN_experiment.json`` for a submission in a flat folder (``flat_student``)."""
    name = f"ex{assignment_id}_experiment.json"
    numbers = path.parent / (f"{flat_student}__{name}" if flat_student else name)
    if not numbers.is_file():
        return f"(no {numbers.name} beside the submission)"
    try:
        data = json.loads(numbers.read_text())
    except ValueError:
        return "(unreadable experiment file)"
    figure = "figure found" if numbers.with_suffix(".png").is_file() else "no figure"
    tiny = isinstance(data, dict) and str(data.get("size", "")).startswith("tiny")
    return ("TINY RUN, not the experiment; " if tiny else "") + f"{figure}; " + json.dumps(data, separators=(",", ":"))[:2000]


def sheet(folder: Path) -> list[dict]:
    found, ungraded, _ = find_submissions(folder)
    rows = []
    for student, assignment_id, path in found:
        questions = model_answers(assignment_id)
        given = file_answers(path, questions)
        flat = student if path.parent == folder and path.name.startswith(f"{student}__") else None
        experiment = experiment_numbers(path, assignment_id, flat)
        for q in questions:
            rows.append({"student": student, "assignment": assignment_id, "question": q["id"],
                         "answer": given.get(q["id"], "") or "(no answer)", "model_answer": q["answer"],
                         "experiment": experiment if q["experiment"] else "", "question_text": q["text"]})
    for student, assignment_id, why in ungraded:
        for q in model_answers(assignment_id):
            rows.append({"student": student, "assignment": assignment_id, "question": q["id"],
                         "answer": f"(not read: {why})", "model_answer": q["answer"], "experiment": "",
                         "question_text": q["text"]})
    flag_copies(rows)
    return sorted(rows, key=lambda r: (r["assignment"], r["question"], r["student"]))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def flag_copies(rows: list[dict]) -> None:
    """Set each row's ``flag``: an answer that is the model answer, or another student's, word for word (case
    and spacing aside). A flag asks the teacher to look; it proves nothing."""
    def written(r: dict) -> bool:  # not "(no answer)" or "(not read: ...)"
        return not r["answer"].startswith("(")
    by_text = {}
    for r in filter(written, rows):
        by_text.setdefault((r["assignment"], r["question"], _normal(r["answer"])), []).append(r["student"])
    for r in rows:
        flags = []
        if written(r):
            if _normal(r["answer"]) == _normal(r["model_answer"]):
                flags.append("same as the model answer")
            others = [s for s in by_text[r["assignment"], r["question"], _normal(r["answer"])] if s != r["student"]]
            if others:
                flags.append("same as " + ", ".join(others))
        r["flag"] = "; ".join(flags)


def write_csv(rows: list[dict], path: Path) -> None:
    fields = ["student", "assignment", "question", "answer", "flag", "model_answer", "experiment", "question_text"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_html(rows: list[dict], path: Path) -> None:
    out = ["<!doctype html><meta charset='utf-8'><title>Written answers</title>",
           "<style>body{font-family:sans-serif;max-width:70em}td{vertical-align:top;border-top:1px solid #ccc;"
           "padding:.4em;white-space:pre-wrap}.model{background:#eef6ee}</style>"]
    shown = None
    for row in rows:
        key = (row["assignment"], row["question"])
        if key != shown:
            if shown is not None:
                out.append("</table>")
            out.append(f"<h2>Assignment {row['assignment']}, {row['question']}</h2><p>{html.escape(row['question_text'])}"
                       f"</p><p class='model'><b>Model answer.</b> {html.escape(row['model_answer'])}</p>"
                       "<table><tr><th>student</th><th>answer</th><th>flag</th><th>experiment</th></tr>")
            shown = key
        out.append(f"<tr><td>{html.escape(row['student'])}</td><td>{html.escape(row['answer'])}</td>"
                   f"<td>{html.escape(row['flag'])}</td><td>{html.escape(row['experiment'])}</td></tr>")
    out.append("</table>" if shown else "<p>No submissions.</p>")
    path.write_text("\n".join(out), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises.answers", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--html", type=Path)
    args = parser.parse_args(argv)
    if not SOLUTIONS_DIR.is_dir():
        print("the model answers are in exercises/solutions/, which the students' release leaves out", file=sys.stderr)
        return 2
    rows = sheet(args.folder)
    if args.csv:
        write_csv(rows, args.csv)
    if args.html:
        write_html(rows, args.html)
    print(f"{len(rows)} answers of {len({r['student'] for r in rows})} students"
          + "".join(f"; written to {p}" for p in (args.csv, args.html) if p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
