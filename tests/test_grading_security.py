"""No submission can write its own grade: every attack class of issue 53, and variants, gains no point.

Each attack is a submission for assignment 00 that tries to score without the work: by forging the report, by
patching what the checks compare with, by loading the solution or the book, by attacking the grader's process, or
by sending back something that runs when it is read. Most reach what they need through private attributes
(``torch._utils._import_dotted_name("os")``), which the source rules now refuse; to show that the sandbox holds by
itself, the class is graded with the rules switched off (``rules=False``), in one batch, two at a time, as a
lecturer would; then the attacks that must not be batched (killing the grader, writing over other files) run
alone. The in-place attack (ivan: zero the grader's inputs, return what the zeros give, hard-code the hand
examples) passes the rules as it is, and is played on 00, 04 and 06, in the teacher's grading and in the
students' release. Last, the child's limits are probed from inside: no process, no thread, capped memory, not root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises import release  # noqa: E402
from exercises.grader import REGISTRY, SOLUTIONS_DIR, grade_batch, grade_file  # noqa: E402
from exercises.rules import parse, violations  # noqa: E402

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
    return {student: report for student, report in grade_batch(folder, None, timeout=8, jobs=2, out=sys.stderr,
                                                               rules=False)}


@pytest.mark.skipif(not SOLUTION.is_file(), reason="needs the solutions")
@pytest.mark.parametrize("name", [n for n in ATTACKS if n != "sleeping"])
def test_no_attack_gains_a_point(graded, name):
    report = graded[name]
    assert report.points == 0, [r.check.name for r in report.results if r.status == "pass"]
    assert not report.not_shut, f"the child ran without: {report.not_shut}"


@pytest.mark.parametrize("name", [n for n in ATTACKS if "._" in ATTACKS[n]])
def test_the_rules_refuse_private_attributes_first(name):
    found = [str(v) for v in violations(parse(ATTACKS[name]), REGISTRY["00"].banned)]
    assert any("private" in v for v in found), found


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
    script = ("import sys; from pathlib import Path; from exercises.grader import grade_file, print_report; "
              f"print_report(grade_file('00', Path({str(path)!r}), timeout=20, rules=False))")  # the sandbox alone
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "score: 0/18 points" in done.stdout, done.stdout + done.stderr
    assert classmate.read_text() == "# bob's work\n"


# ----------------------------------------------------------------------------- the in-place attack (ivan)


def fill(template: str, bodies: list[str]) -> str:
    """``template`` with its ``raise NotImplementedError`` lines replaced, in order, by ``bodies``."""
    lines, out = template.splitlines(keepends=True), []
    for line in lines:
        stub = line.lstrip().startswith('raise NotImplementedError("TODO')
        if stub and bodies:
            indent = line[:len(line) - len(line.lstrip())]
            out.append(textwrap.indent(textwrap.dedent(bodies.pop(0)).strip("\n") + "\n", indent))
        else:
            out.append(line)
    return "".join(out)


def template(assignment_id: str) -> str:
    source = SOLUTIONS_DIR / REGISTRY[assignment_id].filename
    return release.make_template(source.read_text()) if source.is_file() else \
        (ROOT / "exercises" / REGISTRY[assignment_id].filename).read_text()


STUB = 'raise NotImplementedError("TODO")'
# Zero the grader's inputs in place and return what the zeros give; hard-code the hand examples' outputs.
IVAN = {
    "00": [STUB, """
        if not x.requires_grad:
            for t in (x, h, c, w_ih, w_hh, b_ih, b_hh):
                t.zero_()
            return torch.zeros_like(h), torch.zeros_like(c)
        junk = 0 * (x.sum() + w_ih.sum() + w_hh.sum() + b_ih.sum() + b_hh.sum())
        return h * 1.5 + junk, c * 0.5 + h + junk
        """, STUB],
    "04": ["""
        tokens.zero_()
        return torch.zeros(*tokens.shape, size, dtype=torch.long), torch.zeros(*tokens.shape, size, dtype=torch.bool)
        """, """
        return torch.zeros(time, size, dtype=torch.long, device=device)
        """, """
        if not h.requires_grad:
            for t in (h, M, C, T):
                t.zero_()
        p = present.double() / present.sum(-1, keepdim=True).clamp(min=1)
        return torch.zeros_like(h), p.to(h.dtype)
        """, """
        junk = 0 * sum(t.sum() for t in (s, W_z, U_z, b_z, W_r, U_r, b_r, W, U, b))
        if not s.requires_grad:
            for t in (W_z, U_z, b_z, W_r, U_r, b_r, W, U, b):
                t.zero_()
        return 0.5 * h + junk
        """],
    "06": ["""
        if logits.shape == (3, 3) and max_distance == 4:
            return torch.tensor([0, 0.5, 0, 1.0, 0], dtype=torch.float64), torch.tensor([0, 2, 0, 1, 0])
        if logits.shape[0] == 2:
            return torch.zeros(max_distance + 1, dtype=torch.float64), torch.zeros(max_distance + 1, dtype=torch.long)
        logits.zero_()
        targets.zero_()
        distances.fill_(2)
        accuracy = torch.zeros(max_distance + 1, dtype=torch.float64)
        accuracy[2] = 1.0
        count = torch.zeros(max_distance + 1, dtype=torch.long)
        count[2] = distances.numel()
        return accuracy, count
        """, """
        if sequence.numel() == 7:
            return torch.tensor([0, 0, 0, 3, 3, 3, 3])
        if sequence.numel() == 6:
            return torch.tensor([0, 0, 2, 2, 2, 5])
        sequence.zero_()
        return torch.zeros_like(sequence)
        """, """
        if inputs.numel() == 7 and positions.numel() == 4:
            return (torch.tensor([[10, -1], [11, 12], [13, 14], [15, 16]]),
                    torch.tensor([[True, False], [True, True], [True, True], [True, True]]), torch.tensor([0, 1, 1, 1]))
        if inputs.numel() == 7:
            return torch.tensor([[13, 14]]), torch.tensor([[True, True]]), torch.tensor([1])
        starts.zero_()
        positions.zero_()
        n = positions.numel()
        return inputs[:1].repeat(n).reshape(n, 1), torch.ones(n, 1, dtype=torch.bool), torch.zeros(n, dtype=torch.long)
        """],
}


def ivan(assignment_id: str) -> str:
    return fill(template(assignment_id), list(IVAN[assignment_id]))


@pytest.mark.parametrize("assignment_id", sorted(IVAN))
def test_changing_the_inputs_in_place_gains_nothing(tmp_path, assignment_id):
    path = tmp_path / f"ivan_{REGISTRY[assignment_id].filename}"
    path.write_text(ivan(assignment_id))
    report = grade_file(assignment_id, path, timeout=20)
    assert not report.rule_breaks, report.rule_breaks  # it breaks no rule: only copies keep the inputs safe
    assert report.points == 0, [r.check.name for r in report.results if r.status == "pass"]


@pytest.mark.skipif(not SOLUTIONS_DIR.is_dir(), reason="builds the students' release from the sources")
def test_changing_the_inputs_in_place_gains_nothing_in_the_students_release(tmp_path):
    target = tmp_path / "release"
    release.build_student_release(target)
    env = {k: v for k, v in os.environ.items() if k != "EXERCISES_SEED_OFFSET"}  # the visible inputs
    for assignment_id in sorted(IVAN):
        path = tmp_path / f"ivan_{REGISTRY[assignment_id].filename}"
        path.write_text(ivan(assignment_id))
        done = subprocess.run([sys.executable, "-m", "exercises.grader", assignment_id, "--file", str(path)],
                              cwd=target, capture_output=True, text=True, timeout=600, env=env)
        points = REGISTRY[assignment_id].points
        assert f"score: 0/{points} points" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


# ----------------------------------------------------------------------------- the child's limits, from inside

PROBE = f"""
import torch
import numpy as np


def probe():
    _os = {DOTTED}("os")
    _resource = {DOTTED}("resource")
    found = dict(uid=_os.getuid(), memory=_resource.getrlimit(_resource.RLIMIT_AS)[0])
    try:
        pid = _os.fork()
        if pid == 0:
            _os._exit(0)
        found["fork"] = "allowed"
    except OSError as exc:
        found["fork"] = type(exc).__name__
    try:
        {DOTTED}("threading").Thread(target=print).start()
        found["thread"] = "allowed"
    except RuntimeError as exc:
        found["thread"] = "refused"
    try:
        found["hog"] = float(torch.ones(2 ** 28, dtype=torch.float64).sum())  # 2 GiB
    except (MemoryError, RuntimeError):
        found["hog"] = "refused"
    return found
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux limits")
def test_the_child_can_start_no_process_and_holds_little_memory():
    from exercises.remote import RemoteModule, Session

    session = Session(PROBE)
    try:
        session.begin_check(60)
        found = RemoteModule(session).probe()
        assert session.not_shut == "", session.not_shut
    finally:
        session.close()
    assert found["fork"] != "allowed" and found["hog"] == "refused", found
    assert 0 < found["memory"] < 8 * 2 ** 30, found
    if os.geteuid() == 0:  # the child left root, even where the grader's Python lives under /root
        assert found["uid"] == 65534 and found["thread"] == "refused", found


def test_the_child_keeps_the_graders_python_where_no_other_is_readable(monkeypatch):
    # Where no Python of the same version outside /root exists, the child is started with the grader's own (and,
    # run as root, stays root: the report's not_shut says so and what to do).
    from exercises import remote

    monkeypatch.setattr(remote, "_PYTHON", [])
    monkeypatch.setattr(remote, "_readable_python", lambda path, version: False)
    assert remote.child_python() == sys.executable


FAKE_GUARDS = {  # banned code (cross_entropy) behind something that looks like a main guard
    "not equal": 'if __name__ != "__main__":\n    {defn}\n',
    "else branch": 'if __name__ == "__main__":\n    pass\nelse:\n    {defn}\n',
    "either name": 'if __name__ == "__main__" or True:\n    {defn}\n',
}
CHEAT = ("def masked_perplexity(logits, targets, mask):\n"
         "        nll = torch.nn.functional.cross_entropy(logits[mask], targets[mask])\n"
         "        return float(torch.exp(nll))")


@pytest.mark.parametrize("guard", list(FAKE_GUARDS))
def test_a_fake_main_guard_is_graded_code(tmp_path, guard):
    """Only an exact ``if __name__ == "__main__":`` without ``else`` is skipped by the rules (a lecturer's
    cheat: ``!=`` or an ``else`` hid banned calls and scored full marks)."""
    path = tmp_path / "fake.py"
    path.write_text(TEMPLATE + "\n\n" + FAKE_GUARDS[guard].format(defn=CHEAT))
    report = grade_file("00", path)
    assert report.rule_breaks and report.points == 0, (report.rule_breaks, report.points)


def test_a_main_block_never_runs_while_graded(tmp_path):
    """A file that names itself ``__main__`` still cannot run its main block: the grader blanks it."""
    path = tmp_path / "named.py"
    path.write_text(TEMPLATE + "\n\n__name__ = '__main__'\n\nif __name__ == '__main__':\n    " + CHEAT + "\n")
    report = grade_file("00", path)
    assert not any(r.status == "pass" and r.check.name.startswith("perplexity_matches") for r in report.results)
    assert report.points <= grade_file_template_points(tmp_path)


def grade_file_template_points(tmp_path) -> int:
    path = tmp_path / "template.py"
    path.write_text(TEMPLATE)
    return grade_file("00", path).points
