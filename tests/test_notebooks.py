"""The executed chapters and reports: paired with their sources, executed, parameterised.

nbval (``pytest --nbval-lax chapters reports``) re-executes each notebook and compares the cells marked
``NBVAL_CHECK_OUTPUT``; these tests check the pairing and the committed state.
"""

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
REPORTS = CHAPTERS.parent / "reports"
CHAPTER_SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))
REPORT_SOURCES = sorted(REPORTS.glob("r[0-9][0-9]_*.py"))
SOURCES = CHAPTER_SOURCES + REPORT_SOURCES


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


def test_there_are_chapters_and_a_report_per_paper():
    """Part I, chapters 00-06; Part II, the report on deciding a claim (r00) and one per paper (r01-r05)."""
    assert [p.stem[:2] for p in CHAPTER_SOURCES] == [f"0{i}" for i in range(7)]
    assert [p.stem[:3] for p in REPORT_SOURCES] == [f"r0{i}" for i in range(6)]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_matches_its_source(source):
    """The committed notebook holds exactly the code of its .py source (run `make sync` / `make chapters`)."""
    notebook = source.with_suffix(".ipynb")
    assert notebook.exists(), f"{notebook.name} is missing: run `make chapters`"
    executed = nbformat.read(notebook, as_version=4)
    expected = jupytext.read(source)
    got = [c.source.strip() for c in code_cells(executed)]
    want = [c.source.strip() for c in code_cells(expected)]
    assert got == want, f"{notebook.name} is out of date with {source.name}: run `make chapters`"
    prose = [c.source.strip() for c in executed.cells if c.cell_type == "markdown"]
    assert prose == [c.source.strip() for c in expected.cells if c.cell_type == "markdown"], \
        f"the text of {notebook.name} differs from {source.name}: run `make sync`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_is_executed_with_defaults(source):
    """Every code cell ran, none failed, and no machine-specific parameters were injected."""
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in cells[0].metadata.get("tags", []), "the first code cell must be tagged 'parameters'"
    for cell in cells:
        assert cell.get("execution_count") is not None, f"cell not executed: {cell.source[:60]!r}"
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])), cell.source[:60]
    injected = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    for cell in injected:
        assert "data_dir" not in cell.source and "device" not in cell.source, \
            "commit notebooks executed with default parameters (no machine paths)"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_has_figures(source):
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert images >= 1, f"{source.stem} shows no figure"


@pytest.mark.parametrize("source", CHAPTER_SOURCES, ids=lambda p: p.stem)
def test_chapter_links_its_exercise(source):
    """Every chapter points its reader to the exercise of the same number, and that file exists."""
    number = source.stem[:2]
    links = re.findall(r"\]\(\.\./(exercises/ex\d\d_\w+\.py)\)", source.read_text())
    assert any(link.startswith(f"exercises/ex{number}_") for link in links), f"{source.name} links no exercise {number}"
    for link in links:
        assert (CHAPTERS.parent / link).is_file(), f"{source.name} links {link}, which does not exist"


@pytest.mark.parametrize("source", CHAPTER_SOURCES[1:6], ids=lambda p: p.stem)
def test_paper_chapter_ends_with_a_verdict_that_links_its_report(source):
    """Chapters 01-05 end (before the exercise) with "Our verdict": at most three sentences, a link to the
    paper's report, and a label of the rule in them."""
    from mlm.claims import LABELS

    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    prose = [c.source for c in nb.cells if c.cell_type == "markdown"]
    verdict = next((p for p in prose if p.lstrip().startswith("## Our verdict")), None)
    assert verdict is not None, f"{source.name} has no '## Our verdict' section"
    report = f"../reports/r{source.stem[:2]}_"
    assert re.search(r"\]\(" + re.escape(report) + r"\w+\.ipynb\)", verdict), f"{source.name}: link {report}*.ipynb"
    body = re.sub(r"^##.*$", "", verdict, flags=re.M)
    body = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", body)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*])", body.strip()) if s.strip()]
    assert len(sentences) <= 3, f"{source.name}: the verdict has {len(sentences)} sentences: {sentences}"
    assert any(f"*{label}*" in verdict for label in LABELS), f"{source.name}: the verdict names no label of the rule"
