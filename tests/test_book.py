"""The papermill book runner: failures are reported with their cell, other chapters still run."""

import json
import textwrap
import time

import pytest

from mlm.book import format_summary, run_book, select_chapters

GOOD = textwrap.dedent('''\
    # %% tags=["parameters"]
    size = "reduced"

    # %%
    from mlm.book import record
    record("01_good", {"size": size, "answer": 6 * 7})
    print("hello", size)
''')

REPORT = textwrap.dedent('''\
    # %% tags=["parameters"]
    results_dir = "../results"

    # %%
    from mlm.book import record
    record("r01_paper", {"size": globals().get("size", "none")})
''')

BAD = textwrap.dedent('''\
    # %% tags=["parameters"]
    size = "reduced"

    # %%
    x = 1

    # %%
    raise ValueError("this chapter is broken")
''')


@pytest.fixture()
def book(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    (chapters / "00_bad.py").write_text(BAD)
    (chapters / "01_good.py").write_text(GOOD)
    return chapters


def test_select_chapters_by_number_and_name(book):
    assert [p.stem for p in select_chapters(["01"], book)] == ["01_good"]
    assert [p.stem for p in select_chapters(["00_bad", "01"], book)] == ["00_bad", "01_good"]
    with pytest.raises(SystemExit, match="no chapter or report matches"):
        select_chapters(["07"], book)
    reports = book.parent / "reports"
    reports.mkdir()
    (reports / "r01_paper.py").write_text(REPORT)
    assert [p.stem for p in select_chapters(None, book)] == ["00_bad", "01_good", "r01_paper"]
    assert [p.stem for p in select_chapters(["r01"], book)] == ["r01_paper"]


def test_failing_chapter_is_reported_and_others_run(book, tmp_path):
    out = tmp_path / "out"
    runs = run_book(None, size="full", output=out, timeout=120, chapters_dir=book, progress=False)
    status = {r.chapter: r for r in runs}
    assert status["00_bad"].status == "failed"
    assert "ValueError" in status["00_bad"].error and "this chapter is broken" in status["00_bad"].error
    assert "cell" in status["00_bad"].error
    assert status["01_good"].status == "ok"
    assert status["01_good"].results == {"size": "full", "answer": 42}  # parameter injected, record() collected
    summary = json.loads((out / "summary.json").read_text())
    assert [c["status"] for c in summary["chapters"]] == ["failed", "ok"]
    assert (out / "01_good.ipynb").exists()
    assert "1 of 2 notebooks ran cleanly" in format_summary(runs)


def test_a_report_runs_without_the_chapters_parameters(book, tmp_path):
    """A report reads stored results only: the run's size is not injected into it."""
    (book.parent / "reports").mkdir()
    (book.parent / "reports" / "r01_paper.py").write_text(REPORT)
    runs = run_book(["01", "r01"], size="full", output=tmp_path / "out", timeout=120, chapters_dir=book,
                    progress=False)
    assert [(r.chapter, r.status) for r in runs] == [("01_good", "ok"), ("r01_paper", "ok")]
    assert runs[1].results == {"size": "none"}


def test_chapter_timeout_is_reported(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    marker = tmp_path / "kernel-still-alive"
    (chapters / "00_slow.py").write_text('# %% tags=["parameters"]\nsize = "reduced"\n\n# %%\nimport time\n'
                                         f'time.sleep(25)\nopen({str(marker)!r}, "w").close()\n')
    runs = run_book(None, output=tmp_path / "out", timeout=15, chapters_dir=chapters, progress=False)
    assert runs[0].status == "failed"
    assert "timed out after 15 s" in runs[0].error
    assert runs[0].seconds < 25
    time.sleep(15)  # had the kernel survived the timeout, it would now write the marker
    assert not marker.exists(), "the kernel outlived the chapter's timeout"
