"""``python -m mlm table``: the paper-versus-ours table of whatever ``results/`` holds.

:func:`collect_rows` gives one :class:`Row` per setting of the manifests (its seeds averaged) plus one per
stored result no manifest names; :func:`format_markdown` renders rows as a Markdown table and
:func:`plot_rows` as a figure. The tables of ``results/README.md`` and of the reports are these
functions applied to a selection of rows::

    rows = collect_rows(load_manifest("cpu"), "results")
    print(format_markdown([r for r in rows if r.group == "cpu-tran2016-ptb"]))

A run of a manifest whose ``result.json`` is missing is marked *missing*; a setting with several seeds shows
mean ± standard deviation (n - 1 in the denominator) over the seeds found and n.

It also writes the generated blocks of ``results/README.md`` (every claim with its verdict, and the claims
still waiting for runs) and ``results/VERDICTS.png``. Stored runs are read through :mod:`mlm.stored`, claims
decided through :mod:`mlm.evidence`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from mlm.configs import ConfigError
from mlm.evidence import MANIFESTS, current_rows, manifest_claims, pending_runs, stored_claims, update_baselines
from mlm.stored import StoredSetting, load_settings, mean_std


@dataclass
class Row:
    """One setting: the paper's numbers and ours over the seeds found (``expected`` seeds in all)."""

    group: str
    run: str
    preset: str = ""
    paper: dict = field(default_factory=dict)
    valid: list[float] = field(default_factory=list)
    test: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)  # MSR sentence completion (completion.json)
    expected: int = 1
    note: str = ""

    @property
    def n(self) -> int:
        return len(self.test)

    @property
    def status(self) -> str:
        if self.n == 0:
            return "missing"
        return "done" if self.n >= self.expected else f"{self.n} of {self.expected} seeds"


def _row(setting: StoredSetting) -> Row:
    """A table row from a stored setting: preset, paper numbers and note from its manifest entry, else
    from its first stored result."""
    spec, first = setting.spec, (setting.results[0] if setting.results else {})
    paper = {}
    if getattr(spec, "label", ""):  # another model than its preset: the preset's paper numbers are not its own
        return Row(setting.group, setting.run, spec.label, {}, valid=setting.values("best_valid_ppl"),
                   test=setting.values("test_ppl"), expected=setting.expected, note=spec.note)
    if spec is not None:
        try:
            paper = spec.config().paper
        except ConfigError:
            pass
    completions = setting.files.get("completion.json", [])
    return Row(setting.group, setting.run, getattr(spec, "preset", "") or first.get("name", ""),
               paper or first.get("paper") or {}, valid=setting.values("best_valid_ppl"),
               test=setting.values("test_ppl"), expected=setting.expected, note=getattr(spec, "note", ""),
               accuracy=[c["accuracy"] for c in completions if c and "accuracy" in c])


def collect_rows(specs: Sequence = (), results: str | Path = "results", orphans: bool = True) -> list[Row]:
    """Rows for the runs of ``specs`` (:class:`mlm.reproduce.RunSpec`, seeds of one setting in one row, in
    manifest order), then, with ``orphans``, for every other ``result.json`` under ``results``."""
    results = Path(results)
    optional = ["completion.json"]  # MSR sentence completion, where a post-step scored it
    groups: dict[str, list] = {}
    for spec in specs:
        groups.setdefault(spec.group, []).append(spec)
    settings = {(group, run): setting for group, members in groups.items()
                for run, setting in load_settings(members, results, optional=optional).items()}
    covered = {(results / spec.group / spec.name).resolve() for spec in specs}
    if orphans:
        for path in sorted(results.rglob("result.json")):
            folder = path.parent
            if folder.resolve() in covered:
                continue
            parts = folder.relative_to(results).parts
            group, run = parts[0], re.sub(r"/seed\d+$", "", "/".join(parts[1:])) or "-"
            setting = settings.setdefault((group, run), StoredSetting(group, run))
            setting.add_seed(folder, optional=optional)
    return [_row(s) for s in settings.values()]


def _fmt(values: Sequence[float], digits: int = 1) -> str:
    if not values:
        return "missing"
    mean, std = mean_std(values)
    return f"{mean:.{digits}f}" + (f" ± {std:.{digits}f}" if std is not None else "")


def _paper(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "–"


def format_markdown(rows: Sequence[Row]) -> str:
    """The rows as one Markdown table: paper valid/test next to ours (mean ± std over n seeds)."""
    lines = ["| group | run | preset | paper valid | paper test | our valid | our test | n | status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        test = _fmt(r.test) + (f" (MSR accuracy {_fmt([100 * a for a in r.accuracy])}%)" if r.accuracy else "")
        lines.append(f"| {r.group} | {r.run} | {r.preset or '–'} | {_paper(r.paper.get('valid'))} | "
                     f"{_paper(r.paper.get('test'))} | {_fmt(r.valid)} | {test} | {r.n} | {r.status} |")
    return "\n".join(lines)


def plot_rows(rows: Sequence[Row], path: str | Path) -> Path:
    """One panel per group that has at least one result (the Markdown table lists the others): our test
    perplexity per setting as a dot with ± one standard deviation over its seeds, the paper's as a black
    diamond where the row has one; the axis spans the values, not zero to them, so differences of a few
    points stay visible. Written as a PNG with matplotlib's Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(r.group for r in rows))
    groups = [g for g in groups if any(r.test for r in rows if r.group == g)] or groups[:1]
    heights = [0.32 * sum(1 for r in rows if r.group == g) + 1.0 for g in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, group in zip(axes[:, 0], groups):
        members = [r for r in rows if r.group == group]
        has_paper = False
        for y, r in enumerate(members):
            if r.test:
                mean, std = mean_std(r.test)
                ax.errorbar(mean, y, xerr=std or 0, fmt="o", color="tab:blue", capsize=3)
                ax.text(mean, y - 0.25, f"{mean:.1f}", ha="center", va="bottom", fontsize=7, color="tab:blue")
            else:
                ax.text(0.01, y, "not run yet", transform=ax.get_yaxis_transform(), va="center", fontsize=8,
                        color="gray")
            if isinstance(r.paper.get("test"), (int, float)):
                has_paper = True
                ax.plot(r.paper["test"], y, "D", color="black", ms=5)
        ax.set_yticks(range(len(members)), [f"{r.run} ({r.n})" for r in members], fontsize=8)
        ax.set_ylim(len(members) - 0.5, -0.7)
        ax.margins(x=0.08)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_title(f"{group}: test perplexity, mean ± sd over (n) seeds"
                     + ("; ◆ the paper's" if has_paper else ""), fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_verdicts(path: str | Path, results: str | Path = "results") -> Path:
    """The README's figure: every family of the ``compare`` manifest with three seeds stored, against its
    control, with its 95% interval and the paper's change (:func:`mlm.plots.interval_plot`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlm.manifests import compare
    from mlm.plots import interval_plot

    decided = current_rows("compare", results)
    ax = interval_plot(list(decided.values()), [compare.ROW_LABELS[text] for text in decided],
                       title="Each claim against its control under one recipe on PTB (2.70M parameters but the d = 128 row)")
    path = Path(path)
    ax.figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(ax.figure)
    return path


README_BEGIN = "<!-- claims: generated by `python -m mlm table` from results/; do not edit -->"
README_END = "<!-- claims: end -->"
PENDING_BEGIN = "<!-- pending: generated by `python -m mlm table` from results/; do not edit -->"
PENDING_END = "<!-- pending: end -->"


def readme_claims(results: str | Path = "results") -> str:
    """The claims tables of ``results/README.md``: every claim of :data:`mlm.evidence.MANIFESTS` with our
    stored runs, how each side was tuned, and the verdict (:func:`mlm.evidence.stored_claims`)."""
    from mlm.claims import markdown_cell

    tables = []
    for manifest, what in MANIFESTS.items():
        claims = manifest_claims(manifest)
        lines = [f"**{what}**", "", "| ch. | the paper's claim | the question our runs answer | how each side was tuned | "
                 "the paper; ours (test perplexity) | verdict |", "|---|---|---|---|---|---|"]
        lines += [f"| {claim.chapter} | {markdown_cell(row.claim)} | {markdown_cell(row.question or '–')} | "
                  f"{markdown_cell(row.tuning or '–')} | {markdown_cell(row.evidence)} | **{row.label_text}** |"
                  for claim, row in zip(claims, stored_claims(claims, manifest, results))]
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


PAPERS_BEGIN = "<!-- papers: generated by `python -m mlm table` from results/; do not edit -->"
PAPERS_END = "<!-- papers: end -->"


@dataclass(frozen=True)
class Headline:
    """A paper's line on the landing page: what it claims, and the claims rows (by manifest, model and control)
    whose verdicts answer it, each with the few words that say which comparison it is."""

    paper: str
    claim: str
    chapter: str
    report: str
    rows: tuple[tuple, ...]  # (manifest, group, model, control, the comparison in words); a tuned side: a tuple
    full_size: str = ""  # where the paper's size is already what the rows ran: says so instead of "not run"


HEADLINES = (
    Headline("Zaremba et al. 2014; Press & Wolf 2017", "tying the input and output embeddings improves the LSTM",
             "chapters/01_lstm_baselines.ipynb", "reports/r01_zaremba_press.ipynb",
             (("cpu", "cpu-press2017-small", "tied", "untied", "at the paper's size (2 x 200)"),)),
    Headline("Salton et al. 2017", "attention over the sentence so far beats the LSTM",
             "chapters/02_attentive_lm.ipynb", "reports/r02_salton.ipynb",
             (("cpu", "cpu-salton2017-ptb", "single-headlr0.1", "lstm",
               "the paper's recipe at 2 x 200, only the head's rate tuned"),
              ("compare", "compare-ptb", ("attentive-single", "attentive-single-headlr0.1"),
               ("lstm", "lstm-lr0.5", "lstm-lr2.0"), "the single score at matched parameters under one recipe, both "
               "sides' rates tuned"),
              ("compare", "compare-ptb", ("attentive-combined", "attentive-combined-headlr0.1"),
               ("lstm", "lstm-lr0.5", "lstm-lr2.0"), "the combined score, likewise"))),
    Headline("Daniluk et al. 2017", "attention over a short window, split into key, value and predict, beats the LSTM",
             "chapters/03_short_attention.ipynb", "reports/r03_daniluk.ipynb",
             (("cpu", "cpu-daniluk2017-wt2", "kvp-L5", "lstm", "the paper's recipe at a third of its widths"),
              ("compare", "compare-ptb", "kvp-L5", "lstm", "at matched parameters under one recipe"))),
    Headline("Tran et al. 2016", "a memory block over recent words (RM, RMR) beats the LSTM of its width",
             "chapters/04_recurrent_memory.ipynb", "reports/r04_tran.ipynb",
             (("cpu", "cpu-tran2016-ptb", "rm-tm-g", "lstm1", "RM at the paper's width"),
              ("cpu", "cpu-tran2016-ptb", "rmr-notm-g", "lstm1", "RMR at the paper's width"),
              ("cpu", "cpu-tran2016-ptb", "rmr-notm-g", "lstm2", "RMR against the 2-layer LSTM, its depth")),
             "the verdict's runs: d = 128 is the paper's size (on PTB; its news corpus is not available)"),
    Headline("Xie et al. 2017; Kong et al. 2019", "data noising and variational smoothing beat the tied LSTM",
             "chapters/05_noising_smoothing.ipynb", "reports/r05_kong_xie.ipynb",
             (("cpu", "cpu-kong2019-ptb", "vs-kn", "vanilla-tied", "variational smoothing at the paper's lambda, 2 x 200"),
              ("cpu", "cpu-kong2019-ptb", "dn-kn", "vanilla-tied", "data noising at the paper's lambda, 2 x 200"),
              ("cpu", "cpu-kong2019-ptb-lambda0", "vs-kn", "vanilla-tied",
               "variational smoothing with lambda 0 on both sides, a trial designed after a diagnostic run"))),
)


def headline_rows(results: str | Path = "results") -> list[tuple[Headline, list[tuple[str, object]]]]:
    """Each :data:`HEADLINES` paper with its rows: ``(comparison in words, claims row)``."""
    out = []
    for headline in HEADLINES:
        found = []
        for manifest, group, model, control, words in headline.rows:
            claims = [c for c in manifest_claims(manifest) if (c.group, c.model, c.control) == (group, model, control)]
            if len(claims) != 1:
                raise ValueError(f"{headline.paper}: {manifest} declares {len(claims)} claims of {group}: {model} vs "
                                 f"{control}")
            found.append((words, stored_claims(claims, manifest, results)[0]))
        out.append((headline, found))
    return out


def papers_block(results: str | Path = "results") -> str:
    """The landing page's table: one line per paper, its claim, our verdicts in words (label, change and the
    comparison), its full-size status, and links to its chapter and report."""
    from mlm.claims import relative_change
    from mlm.manifests import full

    lines = ["| paper | its claim | our verdict | at full size | chapter | report |", "|---|---|---|---|---|---|"]
    for headline, rows in headline_rows(results):
        said = []
        for words, row in rows:
            change = f" ({relative_change(*row.seeds[:2])[0]:+.1%})" if row.decided and row.seeds else ""
            handicap = f", {row.handicaps} handicapped" if row.handicaps and row.decided else ""
            reason = ", the control learned less than a count model" if row.reason else ""
            machines = ", model and control (partly) on different kinds of machine" if row.decided and row.machine else ""
            said.append(f"*{row.verdict}*{change}: {words}{handicap}{machines}{reason}")
        number = headline.chapter.split("/")[1][:2]
        full_rows = stored_claims([c for c in full.CLAIMS if c.chapter == number], "full", results)
        full_size = headline.full_size or ("not run" if all(r.verdict == "not run yet" for r in full_rows) else
                                           "; ".join(f"*{r.verdict}*" for r in full_rows if r.verdict != "not run yet"))
        lines.append(f"| {headline.paper} | {headline.claim} | {'; '.join(said)} | {full_size} | "
                     f"[{number}]({headline.chapter}) | [report]({headline.report}) |")
    return "\n".join(lines)


def _block(readme: str, begin: str = README_BEGIN, end: str = README_END) -> tuple[int, int] | None:
    """Where the generated block's text starts and ends in ``readme`` (None without both markers)."""
    first, last = readme.find(begin), readme.find(end)
    return (first + len(begin) + 1, last) if 0 <= first < last else None


def update_readme(path: str | Path, text: str, begin: str = README_BEGIN, end: str = README_END) -> bool:
    """Replace the block between ``begin`` and ``end`` (the claims block's markers by default) in ``path``
    by ``text``; False (the file untouched) where the file or its markers are missing."""
    path = Path(path)
    readme = path.read_text() if path.is_file() else ""
    span = _block(readme, begin, end)
    if span is None:
        return False
    path.write_text(f"{readme[:span[0]]}{text}\n{readme[span[1]:]}")
    return True


def readme_block(path: str | Path, begin: str = README_BEGIN, end: str = README_END) -> str | None:
    """The generated block of the file at ``path`` as it stands (None without markers)."""
    readme = Path(path).read_text()
    span = _block(readme, begin, end)
    return readme[span[0]:span[1] - 1] if span else None


def main(args) -> int:
    """``python -m mlm table [MANIFEST...] [--results DIR] [--out FILE] [--figure PNG] [--readme FILE]``."""
    from mlm.reproduce import load_manifest, manifest_names

    specs = [s for name in (args.manifests or manifest_names()) for s in load_manifest(name)]
    update_baselines(args.results)
    rows = collect_rows(specs, args.results)
    text = format_markdown(rows)
    print(text)
    if args.out != "-":
        out = Path(args.out or Path(args.results) / "TABLE.md")
        out.write_text("# Paper versus ours\n\nGenerated by `python -m mlm table` from the result.json files under "
                       f"`{args.results}/`; do not edit.\n\n{text}\n")
        figure = plot_rows(rows, args.figure or out.with_suffix(".png"))
        verdicts = plot_verdicts(Path(args.results) / "VERDICTS.png", args.results)
        print(f"wrote {out}, {figure} and {verdicts}", file=sys.stderr)
    if args.out != "-":
        notes = Path(args.results) / "README.md"
        if update_readme(notes, pending_runs(args.results), PENDING_BEGIN, PENDING_END):
            print(f"updated the pending runs of {notes}", file=sys.stderr)
    landing = Path(args.results).resolve().parent / "README.md"
    if args.readme != "-" and update_readme(landing, papers_block(args.results), PAPERS_BEGIN, PAPERS_END):
        print(f"updated the papers table of {landing}", file=sys.stderr)
    readme = args.readme or Path(args.results) / "README.md"
    if readme != "-":
        if update_readme(readme, readme_claims(args.results)):
            print(f"updated the claims table of {readme}", file=sys.stderr)
        else:
            print(f"{readme}: no claims block ({README_BEGIN} ... {README_END}), not updated", file=sys.stderr)
    return 0
