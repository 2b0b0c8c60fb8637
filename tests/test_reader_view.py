"""What a reader sees in the committed chapters: the harness out of sight, textbook-length paragraphs, no
process narration, no preset dumps.

A cell is *hidden* when its input is collapsed in JupyterLab (``"jupyter": {"source_hidden": true}``) and
dropped from a rendered page (tag ``remove-input``); hidden cells still run under nbval, so the checks they
hold stay tested. Everything else is in the reader's view and is measured here.
"""

import re
from pathlib import Path

import nbformat
import pytest

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb"))
REPORTS = sorted((CHAPTERS.parent / "reports").glob("r[0-9][0-9]_*.ipynb"))
# A chapter teaches: at most this many words of prose and lines of visible code (the audit is in the reports)
PROSE_WORDS = {"00": 2500, "06": 2500}  # the others: 2200
CODE_LINES = 150
PLUMBING = re.compile(r"NBVAL_|# *noqa|getsource\(|^# *Parameters *$|# *type: *ignore", re.M)
# results folders and run groups are the reports' vocabulary, not a chapter's
FOLDERS = re.compile(r"\b(cpu|full|compare|tuned)-[a-z]+(20\d\d)?-[a-z0-9-]+|\bresults/[\w./-]+")

VISIBLE_ASSERTS = 10  # in the whole book: only the few that teach something stay in view
LONG, LONGEST, LONG_ALLOWED = 150, 220, 4  # words: at most LONG_ALLOWED paragraphs over LONG, none over LONGEST
# Process narration belongs in the README or results/README.md, not in a chapter.
NARRATION = re.compile(r"\b(the issue|issue \d+|for this edition|this edition|one thread|two threads|thread count|"
                       r"shared machine|Intel|AMD|EPYC|Xeon|trials made|this session|sessions?\b)", re.IGNORECASE)


def hidden(cell) -> bool:
    return "remove-input" in cell.metadata.get("tags", []) or cell.metadata.get("jupyter", {}).get("source_hidden")


def read(path: Path):
    return nbformat.read(path, as_version=4)


def visible_code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and not hidden(c)
            and "injected-parameters" not in c.metadata.get("tags", [])]


def paragraphs(nb) -> list[str]:
    """Markdown paragraphs and list items (code blocks, tables, headings and equations left out)."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        text = re.sub(r"```.*?```", "", cell.source, flags=re.S)
        text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
        block = []
        for line in text.splitlines() + [""]:
            starts_item = re.match(r"\s*([-*]|\d+\.)\s", line)
            if not line.strip() or line.lstrip().startswith(("#", "|", ">")) or starts_item:
                if block:
                    found.append(" ".join(block))
                block = [line.strip()] if starts_item else []
            else:
                block.append(line.strip())
    return [p for p in found if p]


def words(text: str) -> int:
    return len(re.sub(r"\$[^$]*\$", "x", text).split())


def test_hidden_cells_are_hidden_both_ways():
    """A harness cell is collapsed in JupyterLab and removed from a rendered page alike."""
    for path in NOTEBOOKS + REPORTS:
        for cell in read(path).cells:
            if hidden(cell):
                assert "remove-input" in cell.metadata.get("tags", []) and \
                    cell.metadata.get("jupyter", {}).get("source_hidden"), (path.name, cell.source[:80])


def test_few_assertions_in_view():
    counts = {p.name: sum(line.lstrip().startswith("assert ") for c in visible_code(read(p))
                          for line in c.source.splitlines()) for p in NOTEBOOKS + REPORTS}
    assert sum(counts.values()) <= VISIBLE_ASSERTS, counts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_preset_dumps_and_no_record_dict_last(path):
    nb = read(path)
    for cell in visible_code(nb):
        assert not re.search(r"print\(\s*(mlm\.)?get_preset\(", cell.source), (path.name, cell.source[:80])
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert hidden(last) or not last.source.strip().startswith("record("), "hide the record(...) cell"
    for cell in nb.cells:  # a hidden cell's input is removed, not its output: no dict of headline numbers
        if cell.cell_type == "code" and "record(" in cell.source:
            assert not any(o.get("output_type") == "execute_result" for o in cell.get("outputs", [])), path.name


# A report names the machines and threads its runs used (its provenance); it never narrates the book's making.
REPORT_NARRATION = re.compile(r"\b(the issue|issue \d+|for this edition|this edition|this session|sessions?\b)",
                              re.IGNORECASE)


@pytest.mark.parametrize("path", NOTEBOOKS + REPORTS, ids=lambda p: p.stem)
def test_no_process_narration(path):
    pattern = REPORT_NARRATION if path in REPORTS else NARRATION
    found = [m.group(0) for c in read(path).cells if c.cell_type == "markdown" for m in pattern.finditer(c.source)]
    assert not found, f"{path.name}: {found}"


def test_paragraphs_are_textbook_length():
    lengths = {(p.name, text[:60]): words(text) for p in NOTEBOOKS + REPORTS for text in paragraphs(read(p))}
    long = {k: n for k, n in lengths.items() if n > LONG}
    assert len(long) <= LONG_ALLOWED and all(n <= LONGEST for n in long.values()), long


@pytest.mark.parametrize("path", NOTEBOOKS + REPORTS, ids=lambda p: p.stem)
def test_a_displayed_table_is_not_echoed_as_text(path):
    """show_claims / show_markdown display a table and return its Markdown: as a cell's last line they would
    show it a second time, as one long quoted string (end the line with `;`)."""
    for cell in read(path).cells:
        outputs = cell.get("outputs", []) if cell.cell_type == "code" else []
        if any("text/markdown" in o.get("data", {}) for o in outputs):
            echoed = [o for o in outputs if o.get("output_type") == "execute_result"
                      and str(o["data"].get("text/plain", "")).startswith(("'", '"'))]
            assert not echoed, f"{path.name}: {cell.source.strip().splitlines()[-1]}"


def prose_words(nb) -> int:
    """Words of the markdown cells, equations left out (as ../shared/tools/book_stats.py counts them)."""
    text = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return len(re.findall(r"[A-Za-z][\w'-]*", re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "", text, flags=re.S)))


def code_lines(nb) -> int:
    """Non-empty, non-comment lines of the code cells a reader sees."""
    return sum(1 for c in visible_code(nb) for line in c.source.splitlines()
               if line.strip() and not line.strip().startswith("#"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_is_a_lesson_of_bounded_length(path):
    """Chapters 01-05 hold at most 2,200 words of prose and 150 visible code lines (00 and 06: 2,500 words)."""
    nb = read(path)
    limit = PROSE_WORDS.get(path.stem[:2], 2200)
    assert prose_words(nb) <= limit, f"{path.name}: {prose_words(nb)} words of prose (at most {limit})"
    assert code_lines(nb) <= CODE_LINES, f"{path.name}: {code_lines(nb)} visible code lines (at most {CODE_LINES})"


@pytest.mark.parametrize("path", NOTEBOOKS + REPORTS, ids=lambda p: p.stem)
def test_no_plumbing_in_view(path):
    """No test markers, lint comments, printed package source or injected-parameters cell in view; in a
    chapter's prose no results folder or run group (the reports name them)."""
    nb = read(path)
    assert not any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells), \
        f"{path.name}: execute it with the default parameters (mlm book --inplace)"
    shown = [m.group(0) for c in visible_code(nb) for m in PLUMBING.finditer(c.source)]
    assert not shown, f"{path.name} shows {shown}"
    if path in NOTEBOOKS:
        named = [m.group(0) for c in nb.cells if c.cell_type == "markdown" for m in FOLDERS.finditer(c.source)]
        assert not named, f"{path.name} names results folders in its prose: {named}"
