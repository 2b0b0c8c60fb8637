"""The book runner: executes the chapters with papermill and summarises what they measured.

``python -m mlm book --size reduced`` runs every chapter (``chapters/NN_*.py``) end to end,
writing the executed notebooks and a ``summary.json`` to the output folder. A failing
chapter is reported with the cell and error that stopped it; the other chapters still run.
With ``--inplace`` the executed notebooks replace the committed ``chapters/NN_*.ipynb``
(how the book's executed chapters are produced).

Chapters report their headline numbers with :func:`record`, which the runner collects.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mlm.utils import atomic_write_json

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS_DIR = ROOT / "chapters"
RESULTS_ENV = "MLM_RESULTS_DIR"


def record(chapter: str, results: dict) -> dict:
    """Save a chapter's headline numbers for the book summary (when run by the book runner)."""
    folder = os.environ.get(RESULTS_ENV)
    if folder:
        atomic_write_json(Path(folder) / f"{chapter}.json", results)
    return results


def list_chapters(chapters_dir: Path = CHAPTERS_DIR) -> list[Path]:
    """The chapter sources ``NN_topic.py`` in reading order."""
    return sorted(p for p in chapters_dir.glob("[0-9][0-9]_*.py"))


def select_chapters(selection: list[str] | None, chapters_dir: Path = CHAPTERS_DIR) -> list[Path]:
    chapters = list_chapters(chapters_dir)
    if not selection:
        return chapters
    chosen = []
    for item in selection:
        matches = [c for c in chapters if c.stem == item or c.stem.startswith(item + "_") or c.name == item]
        if not matches:
            names = ", ".join(c.stem for c in chapters)
            raise SystemExit(f"no chapter matches {item!r}; chapters: {names}")
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


def _describe_failure(err: Exception, notebook_path: Path) -> str:
    """Which cell failed and why, read from papermill's error or the executed notebook."""
    ename = getattr(err, "ename", type(err).__name__)
    evalue = getattr(err, "evalue", str(err))
    cell = getattr(err, "exec_count", None)
    if cell is None and notebook_path.exists():
        try:
            import nbformat

            nb = nbformat.read(notebook_path, as_version=4)
            for c in nb.cells:
                if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", [])):
                    cell = c.get("execution_count")
                    break
        except Exception:  # the summary must not fail because the notebook is unreadable
            pass
    where = f"cell [{cell}]" if cell is not None else "an unknown cell"
    return f"{where}: {ename}: {str(evalue).strip().splitlines()[-1] if str(evalue).strip() else ''}"


def run_chapter(source: Path, output_dir: Path, parameters: dict, timeout: float, inplace: bool = False,
                kernel_name: str = "python3", progress: bool = True) -> ChapterRun:
    """Execute one chapter with papermill; never raises for a failing notebook."""
    import jupytext
    import nbformat
    import papermill as pm

    output_dir.mkdir(parents=True, exist_ok=True)
    results_dir = output_dir / "results"
    results_dir.mkdir(exist_ok=True)
    chapter = source.stem
    notebook = jupytext.read(source)
    notebook.metadata.setdefault("kernelspec", {"name": kernel_name, "display_name": "Python 3", "language": "python"})
    input_path = output_dir / f".{chapter}.input.ipynb"
    nbformat.write(notebook, input_path)
    out_path = output_dir / f"{chapter}.ipynb"
    os.environ[RESULTS_ENV] = str(results_dir.resolve())
    start = time.perf_counter()
    try:
        pm.execute_notebook(str(input_path), str(out_path), parameters=parameters, cwd=str(source.parent),
                            kernel_name=kernel_name, execution_timeout=timeout, progress_bar=progress,
                            report_mode=False)
        status, error = "ok", ""
    except Exception as err:  # papermill raises PapermillExecutionError, timeouts, kernel deaths
        status, error = "failed", _describe_failure(err, out_path)
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
    results_file = results_dir / f"{chapter}.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else None
    return ChapterRun(chapter, status, seconds, str(out_path), error, results)


def run_book(chapters: list[str] | None = None, size: str = "reduced", output: str | Path = "book_output",
             timeout: float = 1800, device: str = "auto", seed: int = 0, data_dir: str | None = None,
             inplace: bool = False, progress: bool = True, chapters_dir: Path = CHAPTERS_DIR) -> list[ChapterRun]:
    """Run the chosen chapters (all by default) and write ``summary.json`` to ``output``."""
    output_dir = Path(output)
    parameters = {"size": size}
    # Only non-default values are injected, so committed notebooks carry no machine paths.
    if device != "auto":
        parameters["device"] = device
    if seed != 0:
        parameters["seed"] = seed
    if data_dir:
        parameters["data_dir"] = str(Path(data_dir).resolve())
    runs = []
    for source in select_chapters(chapters, Path(chapters_dir)):
        print(f"== {source.stem} ({size}) ==", flush=True)
        run = run_chapter(source, output_dir, parameters, timeout, inplace=inplace, progress=progress)
        line = f"   {run.status} in {run.seconds:.0f} s -> {run.output}"
        print(line + (f"\n   FAILED at {run.error}" if run.error else ""), flush=True)
        runs.append(run)
    summary = {"size": size, "parameters": parameters, "chapters": [asdict(r) for r in runs]}
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
    lines.append(f"{len(runs) - failed} of {len(runs)} chapters ran cleanly.")
    return "\n".join(lines)
