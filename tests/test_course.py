"""The course kit: nbgrader loads the notebooks cut from the sources, the answers sheet, Gradescope's results,
the teacher's hidden variants, written answers that are not Python, and the assignments' experiments."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises import release  # noqa: E402
from exercises.grader import REGISTRY, SOLUTIONS_DIR, grade_file, write_gradescope  # noqa: E402

pytestmark = pytest.mark.skipif(not SOLUTIONS_DIR.is_dir(), reason="needs the sources (teacher's repository)")
SOURCE = {a: (SOLUTIONS_DIR / REGISTRY[a].filename).read_text() for a in REGISTRY} if SOLUTIONS_DIR.is_dir() else {}


def test_nbgrader_generates_every_assignment_and_the_grader_reads_it(tmp_path, monkeypatch):
    pytest.importorskip("nbgrader", reason="pip install -e '.[course]' (make install-course)")
    import nbformat
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    from exercises.notebooks import write_nbgrader_course

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # its alembic
    monkeypatch.chdir(tmp_path)
    write_nbgrader_course(tmp_path / "course")
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    api = NbGraderAPI(config=config)
    for assignment_id, assignment in REGISTRY.items():
        result = api.generate_assignment(f"ex{assignment_id}")
        assert result["success"], result.get("log", "")[-2000:]
        released = tmp_path / "course" / "release" / f"ex{assignment_id}" / assignment.filename.replace(".py", ".ipynb")
        cells = {c.metadata["nbgrader"]["grade_id"]: c for c in nbformat.read(released, 4).cells
                 if "nbgrader" in c.metadata}
        tests = [c for g, c in cells.items() if g.startswith("check_")]
        assert sum(c.metadata["nbgrader"]["points"] for c in tests) == assignment.points  # one locked cell a check
        assert all(c.metadata["nbgrader"]["locked"] and c.metadata["nbgrader"]["grade"] for c in tests)
        answers = [c for g, c in cells.items() if g.startswith("answer_")]
        assert answers and all(c.metadata["nbgrader"]["solution"] and c.cell_type == "markdown" for c in answers)
        assert all("YOUR ANSWER HERE" in c.source for c in answers)  # the model answers stay in source/
        code = "".join(c.source for g, c in cells.items() if g.startswith("fn_"))
        assert "raise NotImplementedError" in code and "BEGIN SOLUTION" not in code
    source_00 = tmp_path / "course" / "source" / "ex00" / "ex00_perplexity_lstm.ipynb"
    released_00 = tmp_path / "course" / "release" / "ex00" / "ex00_perplexity_lstm.ipynb"
    assert grade_file("00", source_00).points == REGISTRY["00"].points
    assert grade_file("00", released_00).points == 0


def test_the_answers_sheet_has_a_row_per_student_and_question(tmp_path):
    from exercises.answers import main, model_answers

    folder = tmp_path / "class"
    template = release.make_template(SOURCE["01"])
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "ex01_lstm_baselines.py").write_text(SOURCE["01"])
    (folder / "alice" / "ex01_experiment.json").write_text('{"runs": {"tied": {"valid_ppl": [321.5]}}}')
    bob = template.replace("# YOUR ANSWER HERE", "By bptt = 35, as both divide the same sum.\n# (bob)", 1)
    (folder / "bob__ex01_lstm_baselines.py").write_text(bob)
    (folder / "carol").mkdir()
    (folder / "carol" / "ex01_lstm_baselines.py").write_text(template)  # untouched: still listed
    assert main([str(folder), "--csv", str(tmp_path / "a.csv"), "--html", str(tmp_path / "a.html")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "a.csv")))
    questions = model_answers("01")
    assert len(rows) == 3 * len(questions) == 12
    get = {(r["student"], r["question"]): r for r in rows}
    assert get[("bob", "Q1")]["answer"] == "By bptt = 35, as both divide the same sum.\n(bob)"
    assert get[("bob", "Q2")]["answer"] == "(no answer)"
    assert get[("alice", "Q1")]["answer"] == get[("alice", "Q1")]["model_answer"] == questions[0]["answer"]
    assert "321.5" in get[("alice", "Q4")]["experiment"] and get[("alice", "Q1")]["experiment"] == ""
    assert get[("carol", "Q3")]["answer"].startswith("(not read: the template, unchanged")
    page = (tmp_path / "a.html").read_text()
    assert page.count("<h2>") == len(questions) and "Model answer." in page


def test_prose_without_hash_costs_the_code_nothing(tmp_path):
    path = tmp_path / "ex06.py"
    path.write_text(SOURCE["06"].replace("# Q2 (explain).", "I think the answer is a bigram.\n# Q2 (explain).", 1))
    report = grade_file("06", path)
    assert report.points == REGISTRY["06"].points and "written answers are not valid Python" in report.note


def test_gradescope_results_and_autograder(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    report = grade_file("02", path)
    write_gradescope(report, tmp_path / "results.json")
    result = json.loads((tmp_path / "results.json").read_text())
    assert result["score"] == 0 and result["max_score"] == REGISTRY["02"].points
    assert len(result["tests"]) == len(REGISTRY["02"].checks) and "could not be read" in result["output"]
    release.build_gradescope("02", tmp_path / "ag")
    script = (tmp_path / "ag" / "run_autograder").read_text()
    from exercises.checks.common import hidden_offset

    assert f"EXERCISES_SEED_OFFSET={hidden_offset()} " in script and "exercises.grader 02" in script
    assert not (tmp_path / "ag" / "exercises" / "solutions").exists() and os.access(tmp_path / "ag" / "setup.sh", os.X_OK)


def test_hidden_variants_fail_outputs_learnt_by_heart(tmp_path, monkeypatch):
    from exercises.checks import ex00

    monkeypatch.setenv("EXERCISES_SEED_OFFSET", "0")  # the students' release: the visible inputs
    table = {}
    for seed in (1, 2, 3):
        logits, targets, mask = ex00._lm_batch(seed)
        table[round(float(logits.sum()), 3)] = ex00._reference_perplexity(logits, targets, mask)
    cheat = release.make_template(SOURCE["00"]).replace(
        '    raise NotImplementedError("TODO: compute the masked perplexity")',
        f"    return {table!r}.get(round(float(logits.sum()), 3), 1.0)", 1)
    path = tmp_path / "cheat.py"
    path.write_text(cheat)
    passed = lambda: {r.check.name for r in grade_file("00", path).results if r.status == "pass"}  # noqa: E731
    assert "perplexity_matches_reference" in passed()
    monkeypatch.setenv("EXERCISES_SEED_OFFSET", "104729")  # the teacher's grading: other inputs
    assert "perplexity_matches_reference" not in passed()


def test_every_experiment_runs_tiny(tmp_path, monkeypatch):
    import mlm.claims as claims

    from exercises import experiments

    if not (Path(os.environ.get("MLM_DATA_DIR", "~/.cache/mlm")).expanduser() / "ptb").exists():
        pytest.skip("needs PTB in $MLM_DATA_DIR")
    monkeypatch.chdir(tmp_path)
    numbers = {name: getattr(experiments, name)(tiny=True) for name in
               ("ex00", "ex01", "ex02", "ex03", "ex04", "ex05", "ex06")}
    for name in numbers:
        assert (tmp_path / f"{name}_experiment.png").stat().st_size > 1000
        assert json.loads((tmp_path / f"{name}_experiment.json").read_text()) == numbers[name]
    ex00 = numbers["ex00"]  # the book's perplexity measured the student's way (here the reference's)
    assert ex00["valid_ppl_yours"] == ex00["valid_ppl_reference"] and ex00["unigram_valid"] > 1
    for name in ("ex01", "ex02", "ex03", "ex05"):
        assert all(math.isfinite(run["valid_ppl"][-1]) for run in numbers[name]["runs"].values()), name
    assert set(numbers["ex04"]["runs"]) == {"n = 5", "n = 15", "n = 30"}
    ex06 = numbers["ex06"]
    labels = {v for k, v in vars(claims).items() if k.isupper() and isinstance(v, str)}
    assert ex06["verdict"] == claims.verdict(ex06["tied_test"], ex06["untied_test"], paper=ex06["paper_change"],
                                             converged=False)
    assert ex06["verdict"].removesuffix(", not converged") in labels and len(ex06["tied_test"]) == 3
