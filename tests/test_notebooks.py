"""The executed chapters: paired with their sources, executed, parameterised.

nbval (``pytest --nbval-lax chapters``) re-executes each notebook and compares the cells marked
``NBVAL_CHECK_OUTPUT``; these tests check the pairing and the committed state.
"""

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
SOURCES = sorted(CHAPTERS.glob("[0-9][0-9]_*.py"))


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]


def test_there_are_chapters():
    assert len(SOURCES) >= 2


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


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_chapter_links_its_exercise(source):
    """Every chapter points its reader to the exercise of the same number, and that file exists."""
    number = source.stem[:2]
    links = re.findall(r"\]\(\.\./(exercises/ex\d\d_\w+\.py)\)", source.read_text())
    assert any(link.startswith(f"exercises/ex{number}_") for link in links), f"{source.name} links no exercise {number}"
    for link in links:
        assert (CHAPTERS.parent / link).is_file(), f"{source.name} links {link}, which does not exist"
