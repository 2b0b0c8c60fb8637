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
from exercises.grader import REGISTRY, SOLUTIONS_DIR, grade_batch, grade_file, write_gradescope  # noqa: E402

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
    setup = nbformat.read(released_00, 4).cells[1].source  # found from the notebook's folder, not a fixed path
    assert "MLM_COURSE_ROOT" in setup and str(ROOT) not in setup and "/work" not in setup
    assert "c.Execute.timeout" in (tmp_path / "course" / "nbgrader_config.py").read_text()
    experiment = next(c.source for c in nbformat.read(released_00, 4).cells
                      if c.metadata.get("nbgrader", {}).get("grade_id") == "experiment")
    assert "NBGRADER_EXECUTION" in experiment and "masked_perplexity=masked_perplexity" in experiment

    # The class hands back through nbgrader: submitted/<student>/ex00/ex00_perplexity_lstm.ipynb.
    submitted = tmp_path / "course" / "submitted"
    ken = nbformat.read(released_00, 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c for c in nbformat.read(source_00, 4).cells
               if "nbgrader" in c.metadata}
    for cell in ken.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("fn_"):
            cell.source = answers[grade_id].source  # his code is the solution
        elif grade_id == "answer_q1":
            cell.source = "It is 10, the geometric mean of 50 and 2."
    for student, book in (("ken", ken), ("carol", nbformat.read(released_00, 4))):
        (submitted / student / "ex00").mkdir(parents=True)
        nbformat.write(book, submitted / student / "ex00" / "ex00_perplexity_lstm.ipynb")
    (submitted / "ken" / "ex00" / "ex00_experiment.json").write_text('{"tokens_seen": [0, 4242]}')
    (submitted / "ken" / "ex00" / "timestamp.txt").write_text("2025-01-01 00:00:00")
    graded = dict(grade_batch(submitted, tmp_path / "scores.csv", timeout=60, jobs=1, out=sys.stderr))
    assert graded["ken"].points == REGISTRY["00"].points
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "scores.csv"))}
    assert rows["carol"]["status"] == "not graded: the template, unchanged"
    from exercises.answers import sheet

    found = {(r["student"], r["question"]): r for r in sheet(submitted)}
    assert found[("ken", "Q1")]["answer"] == "It is 10, the geometric mean of 50 and 2."
    assert found[("ken", "Q2")]["answer"] == "(no answer)" and "4242" in found[("ken", "Q3")]["experiment"]
    assert found[("carol", "Q1")]["answer"].startswith("(not read: the template, unchanged")


def _handed_out(book):
    """A source notebook as nbgrader's generate_assignment hands it out (written here without nbgrader): every
    solution block replaced by its stub, every written answer by nbgrader's placeholder."""
    import copy
    import re

    book = copy.deepcopy(book)
    for cell in book.cells:
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        if cell.cell_type == "code":
            cell.source = re.sub(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$",
                                 lambda m: f"{m.group(1)}# YOUR CODE HERE\n{m.group(1)}raise NotImplementedError()",
                                 cell.source, flags=re.M | re.S)
        else:
            cell.source = "YOUR ANSWER HERE"
    return book


def test_notebooks_are_found_in_a_batch_and_on_the_answers_sheet(tmp_path):
    # Without nbgrader installed: the notebooks that python -m exercises.notebooks writes, handed back in
    # nbgrader's submitted/<student>/ex00/ layout and as a flat <student>__ex00_....ipynb export.
    nbformat = pytest.importorskip("nbformat")
    from exercises.answers import sheet
    from exercises.notebooks import notebook

    solved = notebook("00")  # the source notebook: the solutions and the model answers in it
    for cell in solved.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer_q1":
            cell.source = "It is 10, the geometric mean of 50 and 2."
    released = _handed_out(notebook("00"))
    submitted = tmp_path / "submitted"
    (submitted / "ken" / "ex00").mkdir(parents=True)
    (submitted / "carol" / "ex00").mkdir(parents=True)
    nbformat.write(solved, submitted / "ken" / "ex00" / "ex00_perplexity_lstm.ipynb")
    (submitted / "ken" / "ex00" / "ex00_experiment.json").write_text('{"tokens_seen": [0, 4242]}')
    nbformat.write(released, submitted / "carol" / "ex00" / "ex00_perplexity_lstm.ipynb")
    nbformat.write(solved, submitted / "flo__ex00_perplexity_lstm.ipynb")
    graded = dict(grade_batch(submitted, tmp_path / "scores.csv", timeout=60, jobs=1, out=sys.stderr))
    assert set(graded) == {"ken", "flo"}
    assert graded["ken"].points == graded["flo"].points == REGISTRY["00"].points
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "scores.csv"))}
    assert rows["carol"]["status"] == "not graded: the template, unchanged"
    found = {(r["student"], r["question"]): r for r in sheet(submitted)}
    assert found[("ken", "Q1")]["answer"] == "It is 10, the geometric mean of 50 and 2."
    assert "4242" in found[("ken", "Q3")]["experiment"]
    assert found[("flo", "Q1")]["answer"] == "It is 10, the geometric mean of 50 and 2."
    assert found[("carol", "Q1")]["answer"].startswith("(not read: the template, unchanged")


def test_a_notebooks_setup_cell_finds_the_course_from_its_own_folder(tmp_path, monkeypatch):
    # The set-up cell once held this checkout's absolute path (/work/main on the machine that wrote it).
    pytest.importorskip("nbformat")
    from exercises.notebooks import CONFIG, notebook

    setup = next(c.source for c in notebook("00").cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    assert str(ROOT) not in setup and "/work/" not in setup and str(ROOT) not in CONFIG
    course = tmp_path / "course"  # a release elsewhere: the notebook two folders below its exercises/
    (course / "exercises").mkdir(parents=True)
    (course / "exercises" / "grader.py").write_text("")
    (course / "release" / "ex00").mkdir(parents=True)
    monkeypatch.chdir(course / "release" / "ex00")
    monkeypatch.delenv("MLM_COURSE_ROOT", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    path_part = setup.split("# the assignment's imports")[0]
    namespace: dict = {}
    exec(path_part, namespace)
    assert namespace["ROOT"] == str(course) and sys.path[0] == str(course)
    monkeypatch.setenv("MLM_COURSE_ROOT", str(tmp_path / "hub"))  # the teacher's choice wins
    exec(path_part, namespace)
    assert namespace["ROOT"] == str(tmp_path / "hub")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLM_COURSE_ROOT")
    with pytest.raises(RuntimeError, match="set MLM_COURSE_ROOT"):
        exec(path_part, {})


@pytest.mark.parametrize("assignment_id", ["00", "01", "02", "03", "04", "05", "06"])
def test_a_notebooks_questions_point_at_its_cells_not_a_file(assignment_id):
    """In a notebook there is no file to run: the questions send the student to the demo or experiment cell."""
    pytest.importorskip("nbformat")
    from exercises.notebooks import notebook

    cells = notebook(assignment_id).cells
    questions = [c.source for c in cells if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("question_")]
    assert questions and not any("Run this file" in q for q in questions), questions
    if any(c.metadata.get("nbgrader", {}).get("grade_id") == "experiment" for c in cells):
        assert any("Run the experiment cell above" in q for q in questions), questions


def test_the_answers_sheet_has_a_row_per_student_and_question(tmp_path):
    from exercises.answers import main, model_answers

    folder = tmp_path / "class"
    template = release.make_template(SOURCE["01"])
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "ex01_lstm_baselines.py").write_text(SOURCE["01"])
    (folder / "alice" / "ex01_experiment.json").write_text('{"runs": {"tied": {"valid_ppl": [321.5]}}}')
    bob = template.replace("# YOUR ANSWER HERE", "By bptt = 35, as both divide the same sum.\n# (bob)", 1)
    (folder / "bob__ex01_lstm_baselines.py").write_text(bob)
    (folder / "bob__ex01_experiment.json").write_text('{"runs": {"tied": {"valid_ppl": [99.5]}}}')  # flat: his own
    (folder / "ex01_experiment.json").write_text('{"runs": {"shared": 1}}')  # nobody's: never read
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
    assert "99.5" in get[("bob", "Q4")]["experiment"] and "shared" not in get[("bob", "Q4")]["experiment"]
    assert get[("alice", "Q3")]["experiment"] == ""  # "(experiment)" runs the file's demo: no numbers to read
    assert [q["id"] for q in model_answers("00") if q["experiment"]] == ["Q3"]  # not the timing question
    assert get[("carol", "Q3")]["answer"].startswith("(not read: the template, unchanged")
    assert get[("alice", "Q1")]["flag"] == "same as the model answer" and get[("bob", "Q1")]["flag"] == ""
    assert get[("carol", "Q3")]["flag"] == get[("bob", "Q2")]["flag"] == ""  # nothing written: nothing flagged
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
    setup = (tmp_path / "ag" / "setup.sh").read_text()  # torch from the CPU index: no CUDA libraries
    assert '--index-url https://download.pytorch.org/whl/cpu "torch>=2.1,<=2.13.0"' in setup


def test_answers_copied_word_for_word_are_flagged():
    from exercises.answers import flag_copies

    def row(student, answer, model="Because the state carries over."):
        return {"student": student, "assignment": "01", "question": "Q1", "answer": answer, "model_answer": model}
    rows = [row("ann", "because the STATE  carries over."), row("ben", "It resets."), row("cat", "it resets."),
            row("dan", "(no answer)"), row("eve", "(no answer)"), row("fay", "Something else.")]
    flag_copies(rows)
    assert [r["flag"] for r in rows] == ["same as the model answer", "same as cat", "same as ben", "", "", ""]


def test_the_autograder_grades_exactly_one_file_and_says_why_not(tmp_path):
    """Gradescope's run_autograder: no file, or two (which would the student think was graded?), score 0 with a
    message that says what to upload; one file is graded."""
    import subprocess
    import sys

    release.build_gradescope("00", tmp_path / "ag")
    submission, results = tmp_path / "submission", tmp_path / "results.json"
    submission.mkdir()
    env = {**os.environ, "AUTOGRADER_SUBMISSION": str(submission), "AUTOGRADER_RESULTS": str(results),
           "AUTOGRADER_SOURCE": str(tmp_path / "ag"), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def run() -> dict:  # the grader's exit status says whether every check passed; the results file is read
        results.unlink(missing_ok=True)
        subprocess.run(["bash", str(tmp_path / "ag" / "run_autograder")], env=env, timeout=300)
        return json.loads(results.read_text())

    assert run() == {"score": 0, "output": "no file ex00_*.py or ex00_*.ipynb in the submission"}
    template = release.make_template(SOURCE["00"])
    (submission / "ex00_language_modelling.py").write_text(template)
    (submission / "ex00_copy.py").write_text(template)
    two = run()
    assert two["score"] == 0 and "upload exactly one" in two["output"] and "ex00_copy.py" in two["output"], two
    (submission / "ex00_copy.py").unlink()
    one = run()
    assert one["max_score"] == REGISTRY["00"].points and len(one["tests"]) == len(REGISTRY["00"].checks), one


def test_the_public_seed_offset_is_warned_about(monkeypatch):
    from exercises.checks.common import PUBLIC_OFFSET, public_offset_warning

    monkeypatch.setenv("EXERCISES_SEED_OFFSET", str(PUBLIC_OFFSET))
    assert "public default offset" in public_offset_warning()
    monkeypatch.setenv("EXERCISES_SEED_OFFSET", "271828")
    assert public_offset_warning() == ""


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


def test_every_experiment_runs_tiny_with_the_students_functions(tmp_path, monkeypatch, shared_data):
    import importlib

    import mlm.claims as claims

    from exercises import experiments

    monkeypatch.setenv("MLM_DATA_DIR", str(shared_data))  # the real corpora, or the test is skipped
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "beside"  # where the assignment's file is: never the current folder
    out.mkdir()
    yours = {a: importlib.import_module(f"exercises.solutions.{REGISTRY[a].filename[:-3]}") for a in REGISTRY}
    functions = {"ex00": ["masked_perplexity"], "ex01": ["tie_weights"], "ex02": ["causal_memory_mask"],
                 "ex03": ["window_mask"], "ex04": ["memory_window", "temporal_rows"],
                 "ex05": ["kneser_ney_proposal", "absolute_discount_gamma"],
                 "ex06": ["sequence_starts", "accuracy_by_distance"]}
    numbers = {name: getattr(experiments, name)(tiny=True, folder=out, **{f: getattr(yours[name[2:]], f) for f in fs})
               for name, fs in functions.items()}
    assert not list(tmp_path.glob("ex*_experiment.*"))
    for name in numbers:
        assert (out / f"{name}_experiment.png").stat().st_size > 1000
        assert json.loads((out / f"{name}_experiment.json").read_text()) == numbers[name]
        assert numbers[name]["size"].startswith("tiny"), name  # a tiny run says so in its file
    ex00 = numbers["ex00"]  # the book's perplexity measured the student's way (here the solution's)
    assert ex00["valid_ppl_yours"] == ex00["valid_ppl_reference"] and ex00["unigram_valid"] > 1
    for name in ("ex01", "ex02", "ex03"):
        assert all(math.isfinite(run["valid_ppl"][-1]) for run in numbers[name]["runs"].values()), name
    runs = numbers["ex01"]["runs"]  # tied by the student's function: one matrix fewer
    assert runs["tied"]["parameters"] < runs["untied, no dropout"]["parameters"]
    assert set(numbers["ex04"]["runs"]) == {"n = 5", "n = 15", "n = 30"}
    ex05 = numbers["ex05"]  # three seeds a side and the rule's label: one seed ranks nothing
    assert len(ex05["valid_noised"]) == len(ex05["valid_plain"]) == 3
    assert ex05["label"] == claims.verdict(ex05["valid_noised"], ex05["valid_plain"]) and ex05["label"] in claims.LABELS
    ex06 = numbers["ex06"]
    assert ex06["verdict"] == claims.verdict(ex06["tied_test"], ex06["untied_test"], paper=ex06["paper_change"],
                                             machine=0.0)
    assert ex06["verdict"] in claims.LABELS and len(ex06["tied_test"]) == 3
    assert len(ex06["accuracy_by_position"]["tied"]) == experiments.POSITIONS + 1
