"""The book runner: executes the chapters and the reports with papermill and summarises what they measured.

``python -m mlm book --size reduced`` runs every chapter (``chapters/NN_*.py``, Part I) and every
reproduction report (``reports/rNN_*.py``, Part II) end to end, writing the executed notebooks and a
``summary.json`` to the output folder. A chapter takes the run's parameters (``size``, ``device``...); a
report reads stored results only and takes none. A failing notebook is reported with the cell and error that
stopped it; the others still run. With ``--inplace`` the executed notebooks replace the committed ones (how
the book's executed notebooks are produced).

Chapters report their headline numbers with :func:`record`, which the runner collects.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mlm.utils import HEADLESS_ENV, SMOKE_ENV, atomic_write_json

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS_DIR = ROOT / "chapters"
RESULTS_ENV = "MLM_RESULTS_DIR"


def record(chapter: str, results: dict) -> None:
    """Save a chapter's headline numbers for the book summary (when run by the book runner).

    Returns nothing, so that the chapter's last cell shows no dictionary under its hidden input."""
    folder = os.environ.get(RESULTS_ENV)
    if folder:
        atomic_write_json(Path(folder) / f"{chapter}.json", results)


def size_note(size: str) -> None:
    """Under a chapter's imports: at the reduced size nothing; at another size, a note that the prose reads the
    reduced run's numbers (and, in a smoke run, that this run's numbers mean nothing)."""
    from mlm.utils import smoke_tokens

    smoke = smoke_tokens()
    if size == "reduced" and not smoke:
        return
    from IPython.display import Markdown, display

    text = (f"**This notebook ran at the {size} size.** The prose and the figures' readings describe the reduced "
            "run; read this run's numbers from the outputs, and the stored full-size results in the reports.")
    if smoke:
        text += (f" **Smoke run:** every training read only {smoke:,} tokens for one epoch, to check "
                 "that the code runs; its numbers mean nothing.")
    display(Markdown(text))


def list_chapters(chapters_dir: Path = CHAPTERS_DIR, reports_dir: Path | None = None) -> list[Path]:
    """The chapter sources ``NN_topic.py`` in reading order, then the reports ``rNN_paper.py`` (of
    ``reports_dir``, by default the ``reports`` folder beside the chapters)."""
    reports_dir = Path(chapters_dir).parent / "reports" if reports_dir is None else Path(reports_dir)
    return sorted(Path(chapters_dir).glob("[0-9][0-9]_*.py")) + sorted(reports_dir.glob("r[0-9][0-9]_*.py"))


def is_report(source: Path) -> bool:
    """A reproduction report (Part II), which reads stored results and takes no run parameters."""
    return source.stem.startswith("r") and source.stem[1:3].isdigit()


def select_chapters(selection: list[str] | None, chapters_dir: Path = CHAPTERS_DIR,
                    reports_dir: Path | None = None) -> list[Path]:
    chapters = list_chapters(chapters_dir, reports_dir)
    if not selection:
        return chapters
    chosen = []
    for item in selection:
        matches = [c for c in chapters if c.stem == item or c.stem.startswith(item + "_") or c.name == item]
        if not matches:
            names = ", ".join(c.stem for c in chapters)
            raise SystemExit(f"no chapter or report matches {item!r}; they are: {names}")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


@dataclass
class ChapterRun:
    chapter: str
    status: str  # "ok" or "failed"
    seconds: float
    output: str
    error: str = ""
    results: dict | None = None


def _describe_failure(notebook_path: Path, fallback: str) -> str:
    """Which cell failed and why, read from the executed (or partly executed) notebook."""
    try:
        import nbformat

        nb = nbformat.read(notebook_path, as_version=4)
    except Exception:  # no notebook was written: report what the process said
        return fallback
    running = None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                value = str(out.get("evalue", "")).strip().splitlines()
                return f"cell [{cell.get('execution_count')}]: {out.get('ename')}: {value[-1] if value else ''}"
        if cell.get("metadata", {}).get("papermill", {}).get("status") == "running":
            running = cell
    if running is not None:
        first_line = running.source.strip().splitlines()[0] if running.source.strip() else ""
        return f"{fallback} while running the cell starting {first_line[:60]!r}"
    return fallback


def run_chapter(source: Path, output_dir: Path, parameters: dict, timeout: float, inplace: bool = False,
                kernel_name: str = "python3", progress: bool = True, smoke: int | None = None) -> ChapterRun:
    """Execute one chapter with papermill in a child process; never raises for a failing notebook.

    ``timeout`` bounds the whole chapter (seconds): the child process is stopped when it runs
    out, and the partly executed notebook (papermill saves as it goes) shows how far it got. ``smoke``: train on
    only this many tokens for one epoch (:func:`mlm.utils.smoke_tokens`), to check the code path at a size.
    """
    import jupytext
    import nbformat

    output_dir.mkdir(parents=True, exist_ok=True)
    results_dir = (output_dir / "results").resolve()
    results_dir.mkdir(exist_ok=True)
    chapter = source.stem
    results_file = results_dir / f"{chapter}.json"
    results_file.unlink(missing_ok=True)
    notebook = jupytext.read(source)
    notebook.metadata.setdefault("kernelspec", {"name": kernel_name, "display_name": "Python 3", "language": "python"})
    input_path = output_dir / f".{chapter}.input.ipynb"
    nbformat.write(notebook, input_path)
    out_path = output_dir / f"{chapter}.ipynb"
    out_path.unlink(missing_ok=True)
    command = [sys.executable, "-m", "papermill", str(input_path), str(out_path), "--cwd", str(source.parent),
               "-k", kernel_name, "-y", json.dumps(parameters), "--no-report-mode"]
    command.append("--progress-bar" if progress else "--no-progress-bar")
    env = {**os.environ, RESULTS_ENV: str(results_dir), HEADLESS_ENV: "1"}
    env.pop(SMOKE_ENV, None)
    if smoke:
        env[SMOKE_ENV] = str(int(smoke))
    if env.get("MLM_DATA_DIR"):  # chapters run in chapters/: a relative folder must not change meaning
        env["MLM_DATA_DIR"] = str(Path(env["MLM_DATA_DIR"]).expanduser().resolve())
    start = time.perf_counter()
    # A session of its own, so that a timeout stops papermill *and* its kernel.
    # papermill's log and progress bar go to ``NN_topic.log`` beside the executed notebook.
    log_path = output_dir / f"{chapter}.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=timeout)
        if proc.returncode == 0:
            status, error = "ok", ""
        else:
            lines = log_path.read_text(errors="replace").strip().splitlines()
            status, error = "failed", _describe_failure(out_path, lines[-1] if lines else "papermill failed")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        status, error = "failed", _describe_failure(out_path, f"timed out after {timeout:.0f} s")
    finally:
        input_path.unlink(missing_ok=True)
    seconds = time.perf_counter() - start
    if status == "ok" and inplace:
        target = source.with_suffix(".ipynb")
        executed = nbformat.read(out_path, as_version=4)
        # Keep the pairing metadata of the source so jupytext still recognises the pair.
        executed.metadata["jupytext"] = notebook.metadata.get("jupytext", {})
        tmp = target.with_suffix(".ipynb.tmp")
        nbformat.write(executed, tmp)
        os.replace(tmp, target)
    results = json.loads(results_file.read_text()) if results_file.exists() else None
    return ChapterRun(chapter, status, seconds, str(out_path), error, results)


def run_book(chapters: list[str] | None = None, size: str = "reduced", output: str | Path = "book_output",
             timeout: float = 1800, device: str = "auto", seed: int = 0, data_dir: str | None = None,
             inplace: bool = False, progress: bool = True, chapters_dir: Path = CHAPTERS_DIR,
             reports_dir: Path | None = None, smoke: int | None = None) -> list[ChapterRun]:
    """Run the chosen chapters and reports (all by default) and write ``summary.json`` to ``output``.

    ``smoke``: every training in the chapters reads only this many tokens for one epoch, so that a size's code
    path (``size="full"`` above all) can be checked on a CPU in minutes; such notebooks are never written back."""
    if smoke is not None and smoke < 1:
        raise ValueError(f"--smoke takes a positive number of tokens, got {smoke}")
    if smoke and inplace:
        raise ValueError("a smoke run's notebooks show meaningless numbers: run it without --inplace")
    output_dir = Path(output)
    # Only non-default values are injected, so committed notebooks carry no machine paths and no
    # injected-parameters cell at all (the reduced size is every chapter's default).
    parameters = {"size": size} if size != "reduced" else {}
    if device != "auto":
        parameters["device"] = device
    if seed != 0:
        parameters["seed"] = seed
    if data_dir:
        parameters["data_dir"] = str(Path(data_dir).resolve())
    if smoke:  # a smoke run's folders stay beside its notebooks, away from the real runs
        parameters["runs_dir"] = str((output_dir / "smoke-runs").resolve())
    runs = []
    for source in select_chapters(chapters, Path(chapters_dir), reports_dir):
        what = "report" if is_report(source) else size
        print(f"== {source.stem} ({what}); papermill's log: {output_dir / (source.stem + '.log')}", flush=True)
        run = run_chapter(source, output_dir, {} if is_report(source) else parameters, timeout, inplace=inplace,
                          progress=progress, smoke=smoke)
        line = f"   {run.status} in {run.seconds:.0f} s -> {run.output}"
        print(line + (f"\n   FAILED at {run.error}" if run.error else ""), flush=True)
        runs.append(run)
    summary = {"size": size, "smoke_tokens": smoke, "parameters": parameters, "chapters": [asdict(r) for r in runs]}
    atomic_write_json(output_dir / "summary.json", summary)
    print(format_summary(runs))
    return runs


def format_summary(runs: list[ChapterRun]) -> str:
    lines = ["", f"{'chapter':<36} {'status':<7} {'seconds':>8}  headline"]
    for r in runs:
        headline = ""
        if r.results:
            headline = ", ".join(f"{k}={v}" for k, v in list(r.results.items())[:4])
        lines.append(f"{r.chapter:<36} {r.status:<7} {r.seconds:>8.0f}  {headline or r.error}")
    failed = sum(r.status != "ok" for r in runs)
    lines.append(f"{len(runs) - failed} of {len(runs)} notebooks ran cleanly.")
    return "\n".join(lines)
