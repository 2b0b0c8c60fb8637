"""No submission can write its own grade: every attack class of issue 53, and variants, gains no point.

Each attack is a submission for assignment 00 that passes the source rules (the grader reads them first; these
attacks reach what they need through strings, as the issue's did) and tries to score without the work: by
forging the report, by patching what the checks compare with, by loading the solution or the book, by
attacking the grader's process, or by sending back something that runs when it is read. The class is graded in
one batch, two at a time, as a lecturer would; then the attacks that must not be batched (killing the grader,
writing over other files) run alone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises import release  # noqa: E402
from exercises.grader import REGISTRY, SOLUTIONS_DIR, grade_batch, grade_file  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the full guarantees need Linux (Landlock, seccomp)")

SOLUTION = SOLUTIONS_DIR / REGISTRY["00"].filename
TEMPLATE = release.make_template(SOLUTION.read_text()) if SOLUTION.is_file() else \
    (ROOT / "exercises" / REGISTRY["00"].filename).read_text()
NAMES = [c.name for c in REGISTRY["00"].checks]
DOTTED = "torch._utils._import_dotted_name"  # reaches any module by a string: the static rules cannot see it


def attack(header: str, *, body: str = "", source: str = TEMPLATE) -> str:
    """``source`` with ``header`` run when it is loaded (after its imports) and ``body`` replacing the body of
    ``masked_perplexity``."""
    code = source.replace("\nimport torch\n", "\nimport torch\nimport numpy as np\n" + textwrap.dedent(header), 1)
    if body:
        code = code.replace('    raise NotImplementedError("TODO: compute the masked perplexity")',
                            textwrap.indent(textwrap.dedent(body), "    "), 1)
    return code


FORGED_LINES = "\n".join('{"name": "%s", "status": "pass", "hint": ""}' % n for n in NAMES)
ATTACKS = {
    # 1. Forging the report channel: there is none; the pipes carry values, and reopening them is refused.
    "savetxt_on_proc_fds": attack(f"""
        for _fd in range(3, 64):
            try:
                np.savetxt("/proc/self/fd/%d" % _fd, np.zeros(1), fmt="%.0s" + {FORGED_LINES!r})
            except Exception:
                pass
        """),
    "datasource_open_on_proc_fds": attack(f"""
        for _fd in range(3, 64):
            try:
                np.lib._datasource.open("/proc/self/fd/%d" % _fd, "w").write({FORGED_LINES!r})
            except Exception:
                pass
        """),
    "cmdline_then_forged_frames": attack(f"""
        _argv = np.lib._datasource.open("/proc/self/cmdline").read().split(chr(0))
        _write = {DOTTED}("os.write")
        for _fd in [int(a) for a in _argv if a.isdigit()] + list(range(3, 12)):
            for _id in range(1, 300):
                _frame = ('{{"op": "result", "id": %d, "value": 1.0, "inputs": {{}}, "modules": []}}' % _id).encode()
                try:
                    _write(_fd, len(_frame).to_bytes(8, "big") + _frame)
                except Exception:
                    pass
        """),
    "fake_lines_on_stdout_and_stderr": attack(f"""
        print({FORGED_LINES!r})
        print("PASS  [18/18] everything\\nscore: 18/18 points")
        {DOTTED}("sys.stderr").write("score: 18/18 points\\n")
        """),
    # 2. Patching what the checks use: they run in the grader, which never imports this file.
    "patched_item_isclose_equal": attack("""
        import math
        torch.Tensor.item = lambda self: 0.0
        math.isclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        torch.allclose = lambda *a, **k: True
        torch.Tensor.abs = lambda self: torch.zeros(())
        """, body="return 1.0"),
    # 3. Loading forbidden code: nothing of the book or the solutions can be read, by name or by path.
    "hub_import_module_of_the_solution": attack(f"""
        try:
            _s = torch.hub._import_module("s", {str(SOLUTION)!r})
        except Exception as _e:
            _s = _e
        """, body="return _s.masked_perplexity(logits, targets, mask)"),
    "import_dotted_name_of_the_book": attack(f"""
        try:
            _nll = {DOTTED}("mlm.evaluation.masked_nll")
        except Exception:
            _nll = None
        """, body="return math.exp(_nll(logits, targets, mask).item() / int(mask.sum()))"),
    "importlib_through_a_string": attack(f"""
        try:
            _il = {DOTTED}("importlib.util")
            _spec = _il.spec_from_file_location("s", {str(SOLUTION)!r})
            _s = _il.module_from_spec(_spec)
            _spec.loader.exec_module(_s)
        except Exception:
            _s = None
        """, body="return _s.masked_perplexity(logits, targets, mask)"),
    "read_the_solution_then_exec": attack(f"""
        try:
            _text = np.lib._datasource.open({str(SOLUTION)!r}).read()
            _ns = dict()
            {DOTTED}("builtins.exec")(_text, _ns)
        except Exception:
            _ns = dict()
        """, body="return _ns['masked_perplexity'](logits, targets, mask)"),
    "read_the_graders_memory": attack(f"""
        _os = {DOTTED}("os")
        try:
            _mem = np.lib._datasource.open("/proc/%d/mem" % _os.getppid(), "rb")
        except Exception:
            _mem = None
        """, body="return float(len(_mem.read(8)))"),
    # 4. Sending back what would run when read: the grader reads JSON, never pickle.
    "pickle_payload": attack(f"""
        _opener = {DOTTED}("builtins.open")
        _P = type("P", (), dict(__reduce__=lambda self: (_opener, ("/tmp/grading-pwned-by-pickle", "w"))))
        """, body="return _P()"),
    "deeply_nested_output": attack("", body="""
        out = 1.0
        for _ in range(5000):
            out = [out]
        return out"""),
    "huge_output": attack("", body="return torch.zeros(20_000_000)"),
    # 5. Hanging or exiting in one function costs that function's checks only (lstm_cell is right here).
    "sleeping": attack(f"""
        _sleep = {DOTTED}("time.sleep")
        """, source=SOLUTION.read_text().replace(
        "def masked_perplexity(", "def masked_perplexity(logits, targets, mask):\n    _sleep(600)\n\n\ndef _old(", 1)
        if SOLUTION.is_file() else TEMPLATE),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    for name, source in ATTACKS.items():
        (folder / f"{name}__ex00_perplexity_lstm.py").write_text(source)
    return {student: report for student, report in grade_batch(folder, None, timeout=8, jobs=2, out=sys.stderr)}


@pytest.mark.skipif(not SOLUTION.is_file(), reason="needs the solutions")
@pytest.mark.parametrize("name", [n for n in ATTACKS if n != "sleeping"])
def test_no_attack_gains_a_point(graded, name):
    report = graded[name]
    assert report.points == 0, [r.check.name for r in report.results if r.status == "pass"]
    assert not report.rule_breaks, "the attack should pass the source rules, as the issue's did"
    assert not report.not_shut, f"the child ran without: {report.not_shut}"


@pytest.mark.skipif(not SOLUTION.is_file(), reason="needs the solutions")
def test_what_the_attacks_met(graded):
    assert not Path("/tmp/grading-pwned-by-pickle").exists()
    huge = {r.check.name: r.hint for r in graded["huge_output"].results}
    assert "more than the 64 MB" in huge["perplexity_matches_reference"]
    found = graded["hub_import_module_of_the_solution"].results[0].hint
    assert "PermissionError" in found  # the file is out of reach
    sleeping = {r.check.name: r for r in graded["sleeping"].results}  # one hang, one function's checks
    assert "time limit of 8 s" in sleeping["perplexity_matches_reference"].hint
    lost = {n for n, r in sleeping.items() if r.status != "pass"}
    assert lost == {n for n in NAMES if n.startswith("perplexity")}, lost


@pytest.mark.skipif(not SOLUTION.is_file(), reason="needs the solutions")
def test_patching_in_the_child_changes_no_score(tmp_path):
    # A half-right file scores no more with patches to what the checks compare with (they break its own code).
    half = SOLUTION.read_text().replace("return h_new, c_new", "return h_new * 1.01, c_new", 1)
    patched = attack("""
        import math
        torch.Tensor.item = lambda self: 0.0
        math.isclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        """, source=half)
    scores = []
    for i, source in enumerate((half, patched)):
        (tmp_path / f"s{i}.py").write_text(source)
        scores.append(grade_file("00", tmp_path / f"s{i}.py", timeout=30).points)
    assert scores[1] <= scores[0] < REGISTRY["00"].points


def test_killing_the_grader_or_writing_files_fails(tmp_path):
    # The grader runs in its own process here: were the attack to work, it would die, not pytest.
    classmate = tmp_path / "bob__ex00_perplexity_lstm.py"
    classmate.write_text("# bob's work\n")
    source = attack(f"""
        _os = {DOTTED}("os")
        for _try in (lambda: _os.kill(_os.getppid(), 9), lambda: _os.killpg(_os.getpgid(_os.getppid()), 9),
                     lambda: np.savetxt({str(classmate)!r}, np.zeros(1)),
                     lambda: _os.unlink({str(classmate)!r}), lambda: _os.setsid()):
            try:
                _try()
            except Exception:
                pass
        """)
    path = tmp_path / "mallory.py"
    path.write_text(source)
    done = subprocess.run([sys.executable, "-m", "exercises.grader", "00", "--file", str(path), "--timeout", "20"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "score: 0/18 points" in done.stdout, done.stdout + done.stderr
    assert classmate.read_text() == "# bob's work\n"
