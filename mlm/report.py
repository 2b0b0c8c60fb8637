"""What the reproduction reports (``reports/rNN_*.py``, Part II of the book) show, from stored runs only.

Each report is the audit of one paper: its claims with the question each comparison asks and how each side
was tuned (:func:`show_verdicts`, :func:`verdict_figure`), the paper's headline numbers beside the book's
full-size runs as they land (:func:`show_full_size`), the stored runs seed by seed (:func:`show_seeds`), where
and how they ran (:func:`show_provenance`), and what still waits for runs (:func:`show_waiting`). Nothing here
trains; every table is computed from ``results/`` when the report executes.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable, Sequence

from mlm.claims import Claim, PaperClaim, awaits_runs, markdown_cell, relative_change, show_markdown
from mlm.evidence import COMPARISONS, MANIFESTS, paper_evidence, paper_numbers, stored_claims, waiting_text
from mlm.stored import StoredSetting, load_settings, machine_label


def _side(claim: PaperClaim, row: Claim, model: bool) -> str:
    names = PaperClaim.candidates(claim.model if model else claim.control)
    chosen = row.model_run if model else row.control_run
    return chosen or names[0] if len(names) == 1 else f"{chosen or '?'} of {len(names)}"


def verdict_rows(chapter: str, results: str | Path = "../results") -> list[tuple[str, PaperClaim, Claim]]:
    """Every claim of chapter ``chapter``'s paper with its row: ``(manifest, claim, row)``."""
    return paper_evidence(chapter, results)


def show_verdicts(chapter: str, results: str | Path = "../results", waiting: bool = False) -> list:
    """Display the paper's claims as one table: the comparison (the paper's recipe, the matched recipe, both tuned), the
    runs, the question, how each side was tuned, the paper's pair and ours, and the verdict (with the side an
    unequal trial handicaps). Claims still waiting for runs are left to :func:`show_waiting` unless
    ``waiting``. Returns the ``(manifest, claim, row)`` shown."""
    rows = [r for r in verdict_rows(chapter, results) if waiting or not awaits_runs(r[2])]
    lines = ["| comparison | runs (model vs control) | question | how each side was tuned | the paper; ours | verdict |",
             "|---|---|---|---|---|---|"]
    for manifest, claim, row in rows:
        runs = f"{claim.group}: {_side(claim, row, True)} vs {_side(claim, row, False)}"
        lines.append("| " + " | ".join(markdown_cell(x) for x in (
            COMPARISONS.get(manifest, manifest), runs, row.question or "–", row.tuning or "–",
            row.evidence + (f" **{row.reason}**" if row.reason else ""))) + f" | **{row.label_text}** |")
    show_markdown("\n".join(lines))
    return rows


def compact_verdicts(rows: Sequence[tuple[str, PaperClaim, Claim]], name: Callable[[str], str] = str,
                     questions: dict[str, str] | None = None,
                     paper: Callable[[str, PaperClaim, Claim], str] | None = None,
                     comparison: Callable[[str, PaperClaim], str] | None = None) -> str:
    """The claims as a compact Markdown table: comparison | claim: model vs control | the paper's change | ours
    [the seeds' 95% interval; the interval widened for hardware, where the sides' machines differ] (a one-seed
    side: the change alone) | seeds | label, with each row's question, tuning, reason and interval widening as numbered
    notes under it, written once however many rows share them. ``name`` turns a run's name into words,
    ``questions`` a manifest into the comparison's name (default :data:`mlm.evidence.COMPARISONS`), and ``paper``
    gives the paper's cell (default: the paper's change where the claim has one, in brackets with the contrast it
    measured where that is another (``claim.contrast``), "–" otherwise); ``comparison``,
    where given, names a row's comparison from its manifest and claim instead of ``questions``."""
    questions = questions or COMPARISONS
    notes, lines = {}, ["| comparison | claim: model vs control | the paper | ours [seeds' 95% interval]; widened | "
                        "seeds | label |",
                        "|---|---|---|---|---|---|"]

    def marks(*texts: str) -> str:
        numbers = [str(notes.setdefault(t, len(notes) + 1)) for t in texts if t]
        return f"<sup>{', '.join(numbers)}</sup>" if numbers else ""

    for manifest, claim, row in rows:
        claim_marks = marks(row.question, row.tuning, row.reason)  # numbered first, so the notes read in order
        if paper is not None:
            paper_cell = paper(manifest, claim, row)
        else:
            paper_cell = f"{row.seeds[2]:+.1%}" if row.seeds and row.seeds[2] is not None else "–"
            if claim.contrast:  # the paper's change answers another question than the row's
                paper_model, paper_control = paper_numbers(claim)[:2]
                paper_cell = f"({paper_model / paper_control - 1:+.1%} {claim.contrast})"
        seeds = f"{len(row.seeds[0])} vs {len(row.seeds[1])}" if row.seeds else "–"
        if awaits_runs(row) or not row.seeds:
            ours, seeds = row.verdict, "–"
        elif min(len(row.seeds[0]), len(row.seeds[1])) < 2:
            ours = f"{statistics.fmean(row.seeds[0]) / statistics.fmean(row.seeds[1]) - 1:+.1%} (one seed: no interval)"
        else:
            change, low, high = relative_change(*row.seeds[:2])
            ours = f"{change:+.1%} [{low:+.1%}, {high:+.1%}]"
            if row.machine:  # the seeds' interval, then the one the rule reads
                ours += (f"; widened [{low - row.machine:+.1%}, {high + row.machine:+.1%}]" + marks(
                    f"widened by ±{row.machine:.1%}, the hardware allowance: the two sides ran on different "
                    "kinds of machine in different shares; the label reads the widened interval"))
        model, control = (name(_side(claim, row, side)) for side in (True, False))
        compared = comparison(manifest, claim) if comparison else questions.get(manifest, manifest)
        lines.append(f"| {compared} | {model} vs {control} {claim_marks} | {paper_cell} | "
                     f"{ours} | {seeds} | *{row.label_text}* |")
    return "\n".join(lines) + "\n\n" + "\n".join(f"{i}. {markdown_cell(text)}" for text, i in notes.items())


def verdict_figure(rows: Sequence[tuple[str, PaperClaim, Claim]], title: str = "", names: dict[str, str] | None = None):
    """The decided rows of :func:`show_verdicts` as an interval plot (:func:`mlm.plots.interval_plot`), each
    named by its comparison and runs (``names`` maps a run's name to the words the figure shows)."""
    from mlm.plots import interval_plot

    names = names or {}
    decided = [(m, c, r) for m, c, r in rows if r.decided and r.seeds]
    labels = [f"{COMPARISONS.get(m, m)}: {names.get(r.model_run, _side(c, r, True))} vs "
              f"{names.get(r.control_run, _side(c, r, False))}" for m, c, r in decided]
    return interval_plot([r for _, _, r in decided], labels, title=title)


def show_full_size(chapter: str, results: str | Path = "../results") -> list[Claim]:
    """The paper's claims at its own full size (the ``full`` manifest): the paper's pair beside ours, which
    reads *not run yet* until the runs are stored."""
    from mlm.manifests import full

    claims = [c for c in full.CLAIMS if c.chapter == chapter]
    rows = stored_claims(claims, "full", results) if claims else []
    lines = ["| claim | runs | the paper; ours at full size | verdict |", "|---|---|---|---|"]
    lines += [f"| {markdown_cell(c.text)} | {c.group}: {c.model} vs {c.control} | {markdown_cell(r.evidence)} | "
              f"**{r.label_text}** |" for c, r in zip(claims, rows)]
    show_markdown("\n".join(lines) if rows else "The full-size manifest declares no claim of this paper.")
    return rows


def _settings(group: str, manifest: str, results: str | Path, runs: Sequence[str] | None = None):
    from mlm.reproduce import load_manifest

    specs = [s for s in load_manifest(manifest) if s.group == group and (runs is None or s.base in runs)]
    if not specs:
        raise ValueError(f"the manifest {manifest!r} has no run of group {group!r}"
                         + (f" named {', '.join(runs)}" if runs else ""))
    return load_settings(specs, results)


def show_seeds(group: str, manifest: str, results: str | Path = "../results", runs: Sequence[str] | None = None):
    """One line per stored seed of ``group`` (or of its ``runs``): best validation and test perplexity, the
    best epoch of those run, and the machine. Returns the settings read."""
    settings = _settings(group, manifest, results, runs)
    lines = ["| run | seed | valid | test | best epoch / epochs run | machine |", "|---|---|---|---|---|---|"]
    for name, setting in settings.items():
        for seed, r in zip(setting.seeds, setting.results):
            lines.append(f"| {name} | {seed} | {r['best_valid_ppl']:.1f} | {r['test_ppl']:.1f} | "
                         f"{r['best_epoch']} / {r['epochs_run']} | {machine_label(r)} |")
        if not setting.seeds:
            lines.append(f"| {name} | – | not run yet | | | |")
    show_markdown("\n".join(lines))
    return settings


def provenance_line(setting: StoredSetting) -> str:
    """Where and how a setting's seeds ran: machines, device, precision, torch, threads, training minutes."""
    if not setting.results:
        return "not run yet"
    results = setting.results
    kinds = sorted(set(setting.machine_kinds()))
    devices = sorted({r.get("device", "?") for r in results})
    torch_versions = sorted({r.get("torch", "?") for r in results})
    threads = sorted({str(r.get("threads", "?")) for r in results})
    minutes = statistics.median(r.get("train_seconds", 0) / 60 for r in results)
    return (f"{len(results)} seed{'s' if len(results) != 1 else ''}; {', '.join(kinds)}; "
            f"{'/'.join(devices)}; torch {', '.join(torch_versions)}; threads {', '.join(threads)}; "
            f"median {minutes:.0f} min of training")


def show_provenance(groups: Sequence[tuple[str, str]], results: str | Path = "../results",
                    runs: Sequence[str] | None = None) -> str:
    """A table of where every setting of the ``(group, manifest)`` pairs (only the settings ``runs``, if given)
    ran, and the command of its first seed (``command.txt``), so that a researcher can rerun any of them."""
    lines = ["| group / run | where and how | command of the first seed |", "|---|---|---|"]
    for group, manifest in groups:
        settings = _settings(group, manifest, results)
        for name, setting in settings.items():
            if runs is not None and name not in runs:
                continue
            command = ""
            if setting.folders:
                path = setting.folders[0] / "command.txt"
                command = path.read_text().splitlines()[0] if path.is_file() else ""
            lines.append(f"| {group}/{name} | {provenance_line(setting)} | `{markdown_cell(command) or '–'}` |")
    return show_markdown("\n".join(lines))


def show_waiting(chapter: str, results: str | Path = "../results") -> list:
    """The paper's claims still waiting for runs, each with why and the command that trains them."""
    waiting = [(m, c, r) for m, c, r in verdict_rows(chapter, results) if awaits_runs(r)]
    if not waiting:
        show_markdown("Every claim of this paper at the book's sizes has its runs stored; the runs at the paper's "
                      "full size are listed above.")
        return waiting
    lines = []
    for manifest, claim, row in waiting:
        why = claim.pending or waiting_text(row)
        lines.append(f"- *{COMPARISONS.get(manifest, manifest)}*: {claim.text} ({row.verdict}): {why}")
    show_markdown("\n".join(lines))
    return waiting


def manifest_description(manifest: str) -> str:
    """What a manifest's claims test, as the README says it."""
    return MANIFESTS.get(manifest, manifest)
