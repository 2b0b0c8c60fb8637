"""The exercises: every solution scores full marks, every template generated from its source scores 0, each
planted mistake loses points (once), and no submission can fake a score."""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `exercises` is not installed with `mlm`; it lives at the root

from exercises import release  # noqa: E402
from exercises.grader import EXERCISES_DIR, REGISTRY, SOLUTIONS_DIR, find_submissions, grade_file  # noqa: E402

IDS = sorted(REGISTRY)
HAS_SOLUTIONS = SOLUTIONS_DIR.is_dir()
needs_solutions = pytest.mark.skipif(not HAS_SOLUTIONS, reason="solutions removed (students' release)")


def grade_source(tmp_path, assignment_id: str, source: str):
    path = tmp_path / f"submission_ex{assignment_id}.py"
    path.write_text(textwrap.dedent(source))
    return grade_file(assignment_id, path)


def by_name(report) -> dict:
    return {r.check.name: r for r in report.results}


def test_registry_is_consistent():
    for assignment_id, assignment in REGISTRY.items():
        names = [c.name for c in assignment.checks]
        assert len(names) == len(set(names)), f"duplicate check names in {assignment_id}"
        assert len(names) >= 8 and all(c.points > 0 for c in assignment.checks)
        for c in assignment.checks:  # a check can only require checks that come before it
            assert set(c.requires) <= set(names[:names.index(c.name)]), (assignment_id, c.name)


@needs_solutions
def test_committed_templates_are_generated_from_the_sources():
    assert release.stale_templates() == []


def test_make_template_cuts_solutions_and_answers():
    source = 'def f(x):\n    # kept\n    ### BEGIN SOLUTION: add one\n    return x + 1\n    ### END SOLUTION\n' \
             '### BEGIN ANSWER\n# secret\n### END ANSWER\n'
    template = release.make_template(source)
    assert template == 'def f(x):\n    # kept\n    raise NotImplementedError("TODO: add one")\n# YOUR ANSWER HERE\n'
    with pytest.raises(release.MarkerError):
        release.make_template("### BEGIN SOLUTION\nx = 1\n")


@needs_solutions
@pytest.mark.parametrize("assignment_id", IDS)
def test_solution_scores_full_marks(assignment_id):
    report = grade_file(assignment_id, SOLUTIONS_DIR / REGISTRY[assignment_id].filename)
    assert report.points == report.max_points, [(r.check.name, r.hint) for r in report.results if r.status != "pass"]


@needs_solutions
@pytest.mark.parametrize("assignment_id", IDS)
def test_template_scores_zero(tmp_path, assignment_id):
    # The template as generated from the committed source, not the working file a student may be editing.
    template = release.make_template((SOLUTIONS_DIR / REGISTRY[assignment_id].filename).read_text())
    report = grade_source(tmp_path, assignment_id, template)
    assert report.points == 0, [r.check.name for r in report.results if r.status == "pass"]
    assert any("not implemented" in r.hint for r in report.results)


def test_grader_command_line(tmp_path):
    path = tmp_path / "ex00.py"
    path.write_text(release.make_template((SOLUTIONS_DIR / REGISTRY["00"].filename).read_text()) if HAS_SOLUTIONS
                    else (ROOT / "exercises" / REGISTRY["00"].filename).read_text())
    result = subprocess.run([sys.executable, "-m", "exercises.grader", "00", "--file", str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"score: 0/{REGISTRY['00'].points} points" in result.stdout


# ----------------------------------------------------------------------------- faking a score

CHEATS = {
    "overwrites the checks": """
        from exercises.checks import ex00
        for c in ex00.CHECKS:
            object.__setattr__(c, "run", lambda module: None)
    """,
    "imports mlm": """
        from mlm.models.lstm_cell import lstm_cell_step as lstm_cell
    """,
    "uses nn.LSTM": """
        import torch
        def run_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
            lstm = torch.nn.LSTM(x.size(-1), h0.size(-1), batch_first=True)
            return lstm(x, (h0[None], c0[None]))
    """,
    "imports dynamically": """
        m = __import__("mlm")
    """,
    "reaches sys through torch": """
        import torch
        torch.sys.modules["exercises.checks.ex00"].CHECKS.clear()
    """,
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_submission_breaking_the_rules_scores_zero(tmp_path, cheat):
    report = grade_source(tmp_path, "00", CHEATS[cheat])
    assert report.rule_breaks and report.points == 0


RULE_CASES = {  # source -> broken? A name the submission binds itself is its own; the builtin is not
    "def f(input):\n    return input\n": False,
    "def f(x):\n    vars = x + 1\n    return vars\n": False,
    "def f(xs):\n    return [input for input in xs]\n": False,
    "def row_types(x):\n    return x\n\n\ndef g(x):\n    return row_types(x)\n": False,
    "def f(x):\n    return input\n": True,
    "open = open\n": True,
    "def f():\n    a = [0 for open in ()]\n    return open\n": True,
    "def f(open=open):\n    return open\n": True,
    "def f():\n    global open\n    open = 1\n    return open\n": True,
    "import torch\n\n\ndef g(x):\n    return torch.nn.LSTM(1, 1)\n": True,
    # a module-level name is the builtin until bound, and again once unbound: never exempt there
    "x = open('f').read()\n\n\ndef open(*a):\n    pass\n": True,
    "def eval(s=eval('1')):\n    return s\n": True,
    "def getattr():\n    pass\n\n\ndel getattr\n\n\ndef f(x):\n    return getattr(x, 'real')\n": True,
    "def f(eval):\n    def g():\n        global eval\n        return eval('1')\n    return g\n": True,
    "def f(open=None):\n    class C:\n        x = open('f')\n        open = 0\n    return C\n": True,
    "r = [eval('1') if i == 0 else (eval := 0) for i in range(2)]\n": True,
    "def f(xs):\n    [(input := x) for x in xs]\n    return input\n": False,
    "import torch\n\n\ndef row_types(x):\n    return x\n\n\nfrom torch import *\n": True,
    "import operator\n\n\ndef f(x):\n    return operator.attrgetter('a')(x)\n": True,
    "def f(input):\n    return input\n\n\nif __name__ == '__main__':\n    input = 3\n": False,
    # private attributes and modules reach any operator or module by a string (judy and oscar's way in)
    "import torch\n\n\ndef f(x, t):\n    return torch._C._nn.cross_entropy_loss(x, t)\n": True,
    "import torch\n\n\ndef f(x):\n    return torch._C._jit_get_operation('aten::lstm_cell')[0](x)\n": True,
    "import torch\nos = torch._utils._import_dotted_name('os')\n": True,
    "import torch._utils\n": True,
    "from torch import _C\n": True,
    "import torch\n\n\ndef f(x):\n    return torch.ops.aten.cross_entropy_loss(x)\n": True,
    "import numpy as np\nlib = np.ctypeslib\n": True,
    "import torch\n\n\ndef f(x):\n    return torch.lstm(x)\n": True,  # banned in 00 and 01
    "def _helper(x):\n    return x\n\n\ndef f(x):\n    return _helper(x)\n": False,  # a private name of one's own
}


@pytest.mark.parametrize("source", sorted(RULE_CASES))
def test_the_rules_tell_a_students_own_names_from_the_forbidden_ones(source):
    import ast

    from exercises.rules import violations

    assert bool(violations(ast.parse(source), {"row_types": "the book's answer", "LSTM": "write it", "lstm": "no"})) \
        == RULE_CASES[source], source


# Sources for the loop check: the lines it finds in function `f` and the helpers `f` uses. A loop in all but
# name counts; a name the student binds (a parameter `reduce`, an own `map`) or numpy's own loop does not.
LOOP_CASES = {
    "def f(x):\n    return x.cumsum(0) + g(x) + g(x)\ndef g(x):\n    return torch.softmax(x, -1)\n": [],
    "def softmax(x):\n    return torch.softmax(x, -1)\ndef f(x):\n    return softmax(x)\n": [],  # not recursion
    "def f(x):\n    return torch.stack(list(map(lambda t: x[t], range(3))))\n": [2],
    "import functools\ndef f(x):\n    return functools.reduce(lambda a, b: a + b, x)\n": [3],
    "from functools import reduce as fold\ndef f(x):\n    return fold(lambda a, b: a + b, x)\n": [3],
    "def f(x):\n    from functools import reduce\n    return reduce(lambda a, b: a + b, x)\n": [3],  # imported inside
    "import numpy as np\ndef f(x):\n    return np.vectorize(lambda v: v + 1)(x)\n": [3],
    "import numpy as np\ndef f(x):\n    return np.maximum.accumulate(x) + np.add.reduce(x)\n": [],
    "def f(x):\n    return x.apply_(lambda v: v * 2)\n": [2],
    "def f(x, t=0):\n    return x if t == 3 else f(x, t + 1)\n": [2],
    "def f(x):\n    return g(x)\ndef g(x):\n    return h(x)\ndef h(x):\n    return g(x) if x else x\n": [4, 6],
    "def f(x):\n    return [v for v in x]\n": [2],
    "def f(x, reduce=torch.sum):\n    return reduce(x)\n": [],
    "def f(x):\n    filter = lambda t: t > 0\n    return filter(x)\n": [],
    "def map(x):\n    return x + 1\ndef f(x):\n    return map(x)\n": [],
    "def step(x):\n    return x\ndef f(x, step=None):\n    return step(x)\n": [],  # the parameter, not the function
    "def helper(x):\n    return [v for v in x]\ndef f(x):\n    return torch.vmap(helper)(x)\n": [2],  # passed on
    "helper = lambda x: [v for v in x]\ndef f(x):\n    return helper(x)\n": [1],
}


@pytest.mark.parametrize("source", sorted(LOOP_CASES))
def test_the_loop_check_finds_loops_in_all_but_name(source):
    import ast

    from exercises.rules import loops_in

    assert loops_in(ast.parse(source), "f") == LOOP_CASES[source], source


@pytest.mark.parametrize("exit_call", ["raise SystemExit(0)", "import torch\n    torch._utils._import_dotted_name('os._exit')(0)",
                                       "while True:\n        pass"])
def test_exiting_or_hanging_in_a_function_costs_only_its_checks(tmp_path, exit_call):
    # The source rules forbid `.os`; a dotted name in a string passes them, to test the process boundary. lstm_cell is
    # right: its checks still pass, each check having its own child when the one before was stopped.
    source = (SOLUTIONS_DIR / REGISTRY["00"].filename).read_text().replace(
        "def masked_perplexity(", f"def masked_perplexity(logits, targets, mask):\n    {exit_call}\n\n\ndef _old(", 1)
    path = tmp_path / "exit.py"
    path.write_text(source)
    from exercises import grader

    report = grader.grade_file("00", path, timeout=8, rules=False)  # `._exit` breaks a rule: the sandbox alone
    statuses = {r.check.name: r.status for r in report.results}
    assert not any(statuses[n] == "pass" for n in statuses if n.startswith("perplexity"))
    assert statuses["lstm_cell_matches_reference"] == statuses["run_lstm_outputs"] == "pass"
    if "SystemExit" in exit_call:  # an exception like any other: no child was stopped
        assert not report.problem and "raised SystemExit" in by_name(report)["perplexity_matches_reference"].hint
    else:
        assert "stopped the grader" in by_name(report)["perplexity_matches_reference"].hint and report.problem
    if "while True" in exit_call:  # it hangs once; its later checks fail at once instead of waiting again
        later = [r.hint for r in report.results if r.check.name.startswith("perplexity") and r.status == "fail"][1:]
        assert later and all("not run again" in h for h in later), later


def test_the_child_cannot_import_the_book(tmp_path):
    path = tmp_path / "book.py"
    path.write_text("import torch\nx = torch._utils._import_dotted_name('mlm.evaluation')\n")
    assert grade_file("00", path).rule_breaks  # a private attribute: the rules refuse it first
    report = grade_file("00", path, rules=False)  # and the child refuses it too
    assert report.points == 0 and report.results[0].hint.startswith("your file could not be loaded: ImportError")
    assert "may not import 'mlm" in report.results[0].hint


# ----------------------------------------------------------------------------- batch grading and release


@needs_solutions
def test_batch_grading_writes_scores_and_a_class_summary(tmp_path, capsys):
    from exercises.grader import main

    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / "ex00_perplexity_lstm.py").write_text((SOLUTIONS_DIR / REGISTRY["00"].filename).read_text())
    (folder / "bob__ex00_perplexity_lstm.py").write_text(CHEATS["imports mlm"])
    (folder / "notes.txt").write_text("not a submission")
    (folder / "carol" / "attempt2").mkdir(parents=True)  # a copy's name and a deeper folder are accepted
    (folder / "carol" / "attempt2" / "ex00_perplexity_lstm (1).py").write_text(CHEATS["imports mlm"])
    for name in ("ex00_perplexity_lstm.py", "ex00_old.py"):  # two files for one assignment: neither graded
        (folder / "dave" / name).parent.mkdir(exist_ok=True)
        (folder / "dave" / name).write_text(CHEATS["imports mlm"])
    (folder / "erin_ex01_lstm_baselines.py").write_text("")  # a flat name without the double underscore
    handed_back = folder / "frank" / "exercises"  # a whole release: its checks, checkpoints and templates
    for name in ("checks/ex00.py", ".ipynb_checkpoints/ex00_perplexity_lstm-checkpoint.py", "grader.py"):
        (handed_back / name).parent.mkdir(parents=True, exist_ok=True)
        (handed_back / name).write_text("")
    (handed_back / REGISTRY["01"].filename).write_text((EXERCISES_DIR / REGISTRY["01"].filename).read_text())
    (handed_back / REGISTRY["00"].filename).write_text(CHEATS["imports mlm"])
    found, ungraded, problems = find_submissions(folder)
    assert [(s, a) for s, a, _ in found] == [("alice", "00"), ("bob", "00"), ("carol", "00"), ("frank", "00")]
    assert len(problems) == 1 and problems[0].startswith("erin_ex01")
    assert ungraded[0][:2] == ("dave", "00") and "2 files" in ungraded[0][2]
    assert ungraded[1] == ("frank", "01", "the template, unchanged")
    (tmp_path / "roster.txt").write_text("alice\nzoe\n")
    assert main(["--batch", str(folder), "--csv", str(tmp_path / "scores.csv"), "--jobs", "2",
                 "--roster", str(tmp_path / "roster.txt")]) == 0
    rows = {(row["student"], row["assignment"]): row for row in csv.DictReader(open(tmp_path / "scores.csv"))}
    # a row for every student and assignment: the untouched template, two files, and no file at all included
    assert set(rows) == {(s, a) for s in ("alice", "bob", "carol", "dave", "frank", "zoe") for a in ("00", "01")}
    assert {s: int(rows[(s, "00")]["points"]) for s in ("alice", "bob", "carol", "frank")} == \
        {"alice": REGISTRY["00"].points, "bob": 0, "carol": 0, "frank": 0}
    assert rows[("frank", "01")]["status"] == "not graded: the template, unchanged"
    assert rows[("zoe", "00")]["status"] == rows[("alice", "01")]["status"] == "no submission"
    assert rows[("dave", "00")]["points"] == "0" and "2 files" in rows[("dave", "00")]["status"]
    out = capsys.readouterr().out
    assert "4 submission(s)" in out and out.count("not graded: ") == 3


@needs_solutions
def test_student_release_has_templates_and_no_solutions(tmp_path):
    target = tmp_path / "release"
    stray = EXERCISES_DIR / "untracked-notes-of-the-test.txt"  # what git does not track stays home
    stray.write_text("not for students")
    try:
        release.build_student_release(target)
    finally:
        stray.unlink()
    if (ROOT / ".git").exists():
        assert not (target / "exercises" / stray.name).exists()
    assert not (target / "exercises" / "solutions").exists()
    assert (target / "mlm").is_dir() and (target / "exercises" / "grader.py").is_file()
    guide = (target / "exercises" / "README.md").read_text()
    assert "## For students" in guide and "For teachers" not in guide and "exercises.release" not in guide
    assert "pip install -e ." in (target / "README.md").read_text() and (target / "pyproject.toml").is_file()
    for shipped in ("experiments.py", "sandbox.py", "confine.py", "remote.py"):
        assert (target / "exercises" / shipped).is_file()
    assert not list(target.rglob("hidden.py"))  # the teacher's hidden variants stay home
    needs = (target / "requirements.txt").read_text()  # what the assignments run, with the book's pins
    assert "torch>=2.1,<=2.13.0" in needs.splitlines() and "numpy" in needs and "jupyterlab" not in needs
    for assignment in REGISTRY.values():
        text = (target / "exercises" / assignment.filename).read_text()
        assert "NotImplementedError" in text and "BEGIN SOLUTION" not in text and "BEGIN ANSWER" not in text


# ----------------------------------------------------------------------------- planted mistakes


def grade_wrong(tmp_path, assignment_id: str, source: str, check_name: str):
    """Grade a deliberately wrong file; it must lose points, among them those of ``check_name``."""
    report = grade_source(tmp_path, assignment_id, source)
    assert not report.rule_breaks, report.rule_breaks
    results = by_name(report)
    assert results[check_name].status == "fail" and results[check_name].hint, results[check_name]
    assert report.points < report.max_points
    return report, results


def lost(report) -> set[str]:
    return {r.check.name for r in report.results if r.status != "pass"}


SOLVED_00 = '''
import math
import torch


def masked_perplexity(logits, targets, mask):
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return math.exp(nll[mask.bool()].sum().item() / int(mask.sum()))


def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, -1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def run_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    h, c, outputs = h0, c0, []
    for t in range(x.size(1)):
        h, c = lstm_cell(x[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
        outputs.append(h)
    return torch.stack(outputs, dim=1), (h, c)
'''


def planted(source: str, old: str, new: str) -> str:
    """``source`` with one planted change (``old`` must be in it)."""
    assert old in source, old
    return source.replace(old, new)


def wrong_00(old: str, new: str) -> str:
    return planted(SOLVED_00, old, new)


def test_solved_00_scores_full_marks(tmp_path):
    report = grade_source(tmp_path, "00", SOLVED_00)
    assert report.points == report.max_points


def test_perplexity_counting_padding_fails(tmp_path):
    source = wrong_00("nll[mask.bool()].sum().item() / int(mask.sum())", "nll.mean().item()")
    report, results = grade_wrong(tmp_path, "00", source, "perplexity_matches_reference")
    assert all(name.startswith("perplexity") for name in lost(report))
    assert "padded positions must not contribute" in results["perplexity_ignores_padding"].hint
    assert "perplexity_large_logits" not in lost(report)  # no padding there: that check is about stability


def test_constant_stubs_earn_no_property_points(tmp_path):
    """A property a constant also has (a float, padding changing nothing) counts only once the value is right:
    a masked_perplexity that returns 1.0 earns nothing, and torch's own LSTM cell is banned in exercise 00."""
    report = grade_source(tmp_path, "00", wrong_00("nll[mask.bool()].sum().item() / int(mask.sum())", "0.0"))
    results = by_name(report)
    assert all(results[n].status != "pass" for n in results if n.startswith("perplexity")), results
    stub = "import torch\n\ndef lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):\n" \
           "    return torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)\n"
    assert any("lstm_cell" in r for r in grade_source(tmp_path, "00", stub).rule_breaks)


def test_gate_order_costs_its_points_once(tmp_path):
    report, results = grade_wrong(tmp_path, "00", wrong_00("i, f, g, o =", "i, g, f, o ="),
                                  "lstm_cell_matches_reference")
    assert lost(report) == {"lstm_cell_matches_reference"}  # run_lstm is graded on its own
    assert "order i, f, g, o" in results["lstm_cell_matches_reference"].hint


def test_time_major_reshape_gets_the_reshape_hint(tmp_path):
    source = wrong_00("torch.stack(outputs, dim=1)", "torch.stack(outputs).reshape(x.size(0), x.size(1), -1)")
    report, results = grade_wrong(tmp_path, "00", source, "run_lstm_outputs")
    assert "reshape" in results["run_lstm_outputs"].hint and "h0" not in results["run_lstm_outputs"].hint
    assert all(name.startswith("run_lstm") for name in lost(report))


def test_softmax_then_log_gets_the_stability_hint(tmp_path):
    source = wrong_00("torch.log_softmax(logits.double(), dim=-1)", "torch.softmax(logits.double(), dim=-1).log()")
    report, results = grade_wrong(tmp_path, "00", source, "perplexity_large_logits")
    assert "log_softmax" in results["perplexity_large_logits"].hint
    assert lost(report) == {"perplexity_large_logits"}


def test_a_wrong_division_costs_the_division_checks_only(tmp_path):
    # bob's bug: the padding is zeroed, but the sum is divided by batch * time. The float, padding and huge-logits
    # checks do not hang on the exact value, and his code passes them: one mistake costs its points once.
    source = wrong_00("nll[mask.bool()].sum().item() / int(mask.sum())", "(nll * mask).sum().item() / nll.numel()")
    report, _ = grade_wrong(tmp_path, "00", source, "perplexity_matches_reference")
    assert lost(report) == {"perplexity_matches_reference", "perplexity_single_position"}


def test_a_byte_order_mark_costs_nothing(tmp_path):
    path = tmp_path / "ex00_perplexity_lstm.py"
    path.write_bytes("\ufeff".encode() + textwrap.dedent(SOLVED_00).encode())  # what some editors write first
    assert grade_file("00", path).points == REGISTRY["00"].points


def test_a_file_that_hangs_everywhere_stops_at_its_budget(tmp_path):
    import time

    import re

    source = re.sub(r"(def \w+\(.*\):\n)", r"\1    while True:\n        pass\n", SOLVED_00)  # every function hangs
    path = tmp_path / "hangs.py"
    path.write_text(textwrap.dedent(source))
    start = time.monotonic()
    report = grade_file("00", path, timeout=4, budget=6)
    assert time.monotonic() - start < 6 + 60  # the budget, and one child's start
    hints = [r.hint for r in report.results]
    assert any("used up the 6 s allowed" in h for h in hints), hints
    assert report.points == 0


def test_the_not_shut_warning_is_shown_for_one_file_and_on_gradescope(tmp_path, capsys):
    import json

    from exercises.grader import Report, print_report, write_gradescope

    report = Report("00", tmp_path / "f.py", not_shut="seccomp (test)")
    print_report(report)
    assert "warning: the grading child ran without: seccomp (test)" in capsys.readouterr().out
    write_gradescope(report, tmp_path / "results.json")
    assert "seccomp (test)" in json.loads((tmp_path / "results.json").read_text())["output"]


def test_an_unreadable_file_is_reported_once(tmp_path, capsys):
    from exercises import grader

    path = tmp_path / "ex04_memory_block.py"
    path.write_text("def memory_window(tokens, mask, size):\nreturn tokens\n")
    report = grade_file("04", path)
    assert report.points == 0 and report.unreadable
    grader.print_report(report)
    shown = capsys.readouterr().out
    assert shown.count("could not be read") == 1 and "line 2" in shown


def test_the_time_limits_are_short_by_default_and_set_on_the_command_line(tmp_path, monkeypatch, capsys):
    # A class of 200 once waited 60 s for every hanging check; the limits are now short and the teacher's to set.
    from exercises import grader

    assert grader.DEFAULT_TIMEOUT <= 30 and grader.DEFAULT_BUDGET <= 300
    seen = {}

    def fake_grade_file(assignment_id, path, timeout=None, verbose=False, budget=None, rules=True):
        seen.update(timeout=timeout, budget=budget)
        return grader.Report(assignment_id, Path(path))

    monkeypatch.setattr(grader, "grade_file", fake_grade_file)
    path = tmp_path / "ex00_perplexity_lstm.py"
    path.write_text("x = 1\n")
    grader.main(["00", "--file", str(path)])
    assert seen == {"timeout": grader.DEFAULT_TIMEOUT, "budget": grader.DEFAULT_BUDGET}
    grader.main(["00", "--file", str(path), "--timeout", "5", "--budget", "40"])
    assert seen == {"timeout": 5.0, "budget": 40.0}
