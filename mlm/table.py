"""``python -m mlm table``: the paper-versus-ours table of whatever ``results/`` holds.

:func:`collect_rows` gives one :class:`Row` per setting of the manifests (its seeds averaged) plus one per
stored result no manifest names; :func:`format_markdown` renders rows as a Markdown table and
:func:`plot_rows` as a figure. The README's reproduction table and a chapter's claims table are these
functions applied to a selection of rows::

    rows = collect_rows(load_manifest("cpu"), "results")
    print(format_markdown([r for r in rows if r.group == "cpu-tran2016-ptb"]))

A run of a manifest whose ``result.json`` is missing is marked *missing*; a setting with several seeds shows
mean ± standard deviation (n - 1 in the denominator) over the seeds found and n.

The chapters read stored runs through the same path: :func:`load_settings` gives a :class:`StoredSetting` per
setting (each seed's ``result.json``, extra files such as ``history.json``, its epochs), and
:func:`load_stored_recall` the recall runs of chapter 06 with their critical-token scores.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Sequence

from mlm.configs import ConfigError, get_preset
from mlm.long_range import CriticalScores


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


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value)."""
    values = list(values)
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@dataclass
class StoredSetting:
    """The stored seeds of one setting: each seed's ``result.json`` and the extra files asked for
    (``files[name][i]`` belongs to ``seeds[i]``; an optional file that is absent is None there). A seed
    counts once its ``result.json`` has a test perplexity and every required file exists. ``spec`` is the
    setting's first :class:`mlm.reproduce.RunSpec` (None for a stored result no manifest names)."""

    group: str
    run: str
    expected: int = 0
    seeds: list[int | None] = field(default_factory=list)  # None: a stored result that names no seed
    results: list[dict] = field(default_factory=list)
    files: dict[str, list[dict | None]] = field(default_factory=dict)
    spec: object = None
    folders: list[Path] = field(default_factory=list)  # folders[i] holds seeds[i]

    def metrics(self, i: int) -> list[dict]:
        """The epochs of ``seeds[i]`` (its ``metrics.jsonl``), one dict per epoch."""
        from mlm.training import read_metrics

        return read_metrics(self.folders[i])

    def stopped_improving(self) -> bool:
        """Every stored seed either reached its best validation perplexity before its last epoch (validation
        turned up again before the schedule or early stopping ended: a run that peaked and then overfit) or
        ended its schedule with the learning rate annealed to under 1% of its start (Zaremba's 13 epochs end
        at 1/512 of it), where a further epoch would move it little. False with no seed stored. A seed whose
        best epoch is its last at a learning rate still high might have gone on improving: the claims it
        decides read *not converged*."""
        return bool(self.results) and all(r["best_epoch"] < r["epochs_run"] or self._annealed(i)
                                          for i, r in enumerate(self.results))

    def _annealed(self, i: int) -> bool:
        """Seed ``i``'s last epoch ran at under 1% of the learning rate it started with."""
        start = self.results[i].get("config", {}).get("train", {}).get("lr")
        if not start or not (self.folders[i] / "metrics.jsonl").is_file():
            return False
        return self.metrics(i)[-1].get("lr", start) < 0.01 * start

    def by_machine(self, key: str = "test_ppl") -> dict[str, list[float]]:
        """``key`` per stored seed, grouped by the kind of machine that ran it (:func:`mlm.utils.machine_kind`),
        in the order the machines first appear among the seeds."""
        from mlm.utils import machine_kind

        groups: dict[str, list[float]] = {}
        for r in self.results:
            groups.setdefault(machine_kind(r), []).append(r[key])
        return groups

    def values(self, key: str) -> list[float]:
        """``result.json``'s ``key`` (e.g. ``test_ppl``), one value per stored seed."""
        return [r[key] for r in self.results]

    def add_seed(self, folder: Path, seed: int | None = None, files: Sequence[str] = (),
                 optional: Sequence[str] = ()) -> bool:
        """Read one seed folder (the one place where stored results are read); False while it is unfinished."""
        self.expected += 1
        result = _read_json(folder / "result.json")
        if not result or "test_ppl" not in result:
            return False
        extra = {f: _read_json(folder / f) for f in (*files, *optional)}
        if any(extra[f] is None for f in files):
            return False
        self.seeds.append(seed if seed is not None else result.get("config", {}).get("train", {}).get("seed"))
        self.results.append(result)
        self.folders.append(folder)
        for name, value in extra.items():
            self.files.setdefault(name, []).append(value)
        return True


def load_settings(specs: Sequence, results: str | Path = "results", files: Sequence[str] = (),
                  optional: Sequence[str] = (), kind: type = StoredSetting) -> dict[str, StoredSetting]:
    """{setting name: ``kind``, a :class:`StoredSetting` or subclass} for the runs of ``specs`` (one group,
    manifest order), reading ``results/GROUP/RUN[/seedK]/``; settings with no finished seed are there, with
    no seeds."""
    settings: dict[str, StoredSetting] = {}
    for spec in specs:
        setting = settings.setdefault(spec.base, kind(spec.group, spec.base, spec=spec,
                                                       files={f: [] for f in (*files, *optional)}))
        if setting.group != spec.group:
            raise ValueError(f"load_settings reads one group at a time, but the setting {spec.base!r} is in "
                             f"both {setting.group!r} and {spec.group!r}: pass the runs of one group")
        setting.add_seed(Path(results) / spec.group / spec.name, spec.seed, files, optional)
    return settings


@dataclass
class StoredRecall(StoredSetting):
    """One setting's stored recall runs (``python -m mlm reproduce recall``, chapter 06): a
    :class:`StoredSetting` whose seeds all have a ``critical.json``, with its scores read once."""

    @property
    def preset(self) -> str:
        return self.spec.preset

    @cached_property
    def scores(self) -> list[CriticalScores]:
        """The model's critical-token scores on the test split, one per seed."""
        return [CriticalScores.from_json(c) for c in self.files["critical.json"]]

    @cached_property
    def extras(self) -> list[dict]:
        """The rest of each seed's critical.json: chance, bigram_totals, source_attention, test_ppl."""
        return [{k: v for k, v in c.items() if k not in ("by_distance", "totals")}
                for c in self.files["critical.json"]]

    def within(self, low: int = 0, high: int | None = None) -> list[float]:
        """Accuracy with ``low <= d <= high``, one value per seed."""
        return [s.accuracy_within(low, high) for s in self.scores]


def load_stored_recall(runs: dict[str, str], results_dir="results") -> dict[str, StoredRecall]:
    """{label: :class:`StoredRecall`} for ``runs`` ({label: run name in :mod:`mlm.manifests.recall`, e.g.
    :data:`~mlm.manifests.recall.FAMILY_RUNS` or the names of its probes}), read from
    ``results_dir/recall/<run>/seed<k>/``: each seed the manifest lists whose ``critical.json`` is stored.

    Raises ``ValueError`` for a name the manifest lacks and ``FileNotFoundError``, naming the command that
    produces them, where a run has no scored seed."""
    from mlm.manifests.recall import RUNS

    unknown = sorted(set(runs.values()) - {spec.base for spec in RUNS})
    if unknown:
        raise ValueError(f"the recall manifest has no run {', '.join(map(repr, unknown))}; "
                         f"`python -m mlm reproduce recall --list` lists its runs")
    settings = load_settings([spec for spec in RUNS if spec.base in runs.values()], results_dir,
                             files=["critical.json"], kind=StoredRecall)
    missing = [str(Path(results_dir) / "recall" / run) for run in runs.values() if not settings[run].seeds]
    if missing:
        raise FileNotFoundError(f"no stored recall run in {', '.join(missing)}; produce them with "
                                "`python -m mlm reproduce recall --jobs 2` from the repository root "
                                "(about an hour on one CPU thread for the 30 runs)")
    return {label: settings[run] for label, run in runs.items()}


def paper_numbers(claim) -> tuple[float, float, str]:
    """The numbers the paper reported for a :class:`mlm.claims.PaperClaim`'s model and control, and where
    they are from (the presets' ``paper`` entries)."""
    model, control = get_preset(claim.paper_model).paper, get_preset(claim.paper_control).paper
    source = model["source"] if model["source"] == control["source"] else \
        f"{model['source']}; control: {control['source']}"
    return model[claim.key], control[claim.key], source


def paper_reading(claim) -> str:
    """How to read the paper's number for a claim's model on our scale, where its preset says (Salton et
    al.'s perplexities skip each sentence's first word); empty otherwise."""
    return get_preset(claim.paper_model).paper.get("reading", "")


def paper_uncontrolled(claim) -> str:
    """Why the paper's pair for a claim is no controlled comparison (its control trained under another
    protocol, say), where the model's preset says so; empty otherwise. Such a pair has no size the book's
    change could be set beside: the verdict then weighs the direction only."""
    return get_preset(claim.paper_model).paper.get("uncontrolled", "")


BASELINE_FILE = "baseline.json"  # in results/GROUP/: the count baseline of the group's data
# the data settings a count baseline depends on (what it counts and scores)
BASELINE_DATA = ("corpus", "protocol", "vocab_size", "max_train_tokens", "max_eval_tokens", "max_document_tokens",
                 "split_sentences")


def group_baseline(specs: Sequence, results: str | Path = "results", compute: bool = False) -> dict | None:
    """The unigram and interpolated-bigram perplexities (:func:`mlm.baselines.count_baseline`) of the data of
    one group's runs ``specs``, kept in ``results/GROUP/baseline.json``: read from there, or with ``compute``
    computed from the first run's configuration and written (needs the corpus); None where neither. Every run
    of the group must read the same data: a count baseline answers for one set of tokens."""
    data = [{k: getattr(s.config().data, k) for k in BASELINE_DATA} for s in specs]
    if any(d != data[0] for d in data):
        raise ValueError(f"the runs of {specs[0].group!r} read different data: one count baseline cannot serve them")
    path = Path(results) / specs[0].group / BASELINE_FILE
    stored = _read_json(path)
    if stored and stored.get("data") == data[0]:
        return stored
    if not compute:
        return None
    from mlm.baselines import count_baseline

    baseline = {**count_baseline(specs[0].config()), "data": data[0], "computed_for": specs[0].id}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(baseline, indent=2) + "\n")
    return baseline


def stored_claims(claims: Sequence, manifest: str, results: str | Path = "results") -> list:
    """A claims row (:class:`mlm.claims.Claim`) for each :class:`mlm.claims.PaperClaim`, from the runs of
    the manifest ``manifest`` (e.g. ``"cpu"``) stored under ``results``: the paper's pair
    and its change, ours (mean ± sd per side, the change of the means and its 95% interval), and the verdict
    of :func:`mlm.claims.verdict` against the paper's change, or on the direction alone where the paper's pair
    is no controlled comparison (:func:`paper_uncontrolled`; the row's third seed item is then None)
    (*not converged* where a seed of either side was
    still improving at its last epoch, see :meth:`StoredSetting.stopped_improving`). A claim whose runs are not stored
    yet says so, and how to produce them. Where the group's count baseline is stored (:func:`group_baseline`)
    and the control's mean test perplexity is no better than its interpolated bigram's, the runs learned too
    little to test anything: the verdict is *not testable at this size* whatever the seeds say, and the
    evidence says why. Once every seed of such a control is stored, that verdict stands before the model
    has any run: no run of the model could change it, so the claim is not listed as waiting."""
    from mlm.claims import MARGIN, NOT_RUN, UNTESTABLE, Claim, interval_text, spread, verdict
    from mlm.reproduce import load_manifest

    specs = load_manifest(manifest)
    settings, floors = {}, {}
    for group in dict.fromkeys(c.group for c in claims):
        group_specs = [s for s in specs if s.group == group]
        settings[group] = load_settings(group_specs, results)
        baseline = group_baseline(group_specs, results) if group_specs else None
        floors[group] = baseline["bigram_test"] if baseline else None
    rows = []
    for claim in claims:
        if claim.pending:
            rows.append(Claim(claim.text, f"not run yet: {claim.pending}", NOT_RUN, claim.question))
            continue
        stored = settings[claim.group]
        unknown = [run for run in (claim.model, claim.control) if run not in stored]
        if unknown:
            raise ValueError(f"the claim {claim.text!r} names {', '.join(map(repr, unknown))}, which the manifest "
                             f"does not run in {claim.group!r}; its runs are {', '.join(stored)}")
        model, control = stored[claim.model], stored[claim.control]
        paper_model, paper_control, _ = paper_numbers(claim)
        reported_change = paper_model / paper_control - 1
        uncontrolled = paper_uncontrolled(claim)
        notes = [n for n in (paper_reading(claim), uncontrolled) if n]
        if uncontrolled:
            if claim.no_gain or reported_change > -MARGIN:
                raise ValueError(f"{claim.text!r}: a paper pair that is no controlled comparison is read as a gain "
                                 "(its direction only); this one reports none")
            notes[-1] += ": direction only"
            reported_change = None  # no size to set ours beside: the verdict asks for a gain
        reported = (f"paper {paper_model:.1f} vs {paper_control:.1f} ({paper_model / paper_control - 1:+.1%}"
                    + "".join(f"; {n}" for n in notes) + ")")
        floor = floors[claim.group]
        theirs = control.values("test_ppl")
        # a control no better than the bigram learned too little for any claim against it to be tested
        untestable = floor is not None and bool(theirs) and statistics.fmean(theirs) >= floor
        if untestable and not model.seeds and len(control.seeds) == control.expected:  # no run of the model can help
            rows.append(Claim(claim.text, f"{reported}; ours (results/{claim.group}): the control {spread(theirs)} "
                                          f"does not beat the interpolated bigram of the same data ({floor:.1f}), so "
                                          f"no run of {claim.model} can test the claim at this size (none is stored)",
                              UNTESTABLE, claim.question))
            continue
        if not model.seeds or not control.seeds:
            stored_seeds = ", ".join(f"{s.run} {len(s.seeds)}/{s.expected}" for s in (model, control))
            rows.append(Claim(claim.text, f"{reported}; ours (results/{claim.group}): not run yet (seeds stored: "
                                          f"{stored_seeds}; `python -m mlm reproduce {manifest} --only "
                                          f"'{claim.group}/*'`)", NOT_RUN, claim.question))
            continue
        ours = model.values("test_ppl")
        evidence = f"{reported}; ours (results/{claim.group}): {spread(ours)} vs {spread(theirs)}, " \
                   f"{interval_text(ours, theirs)}"
        decided = verdict(ours, theirs, paper=reported_change, no_gain=claim.no_gain,
                          converged=model.stopped_improving() and control.stopped_improving())
        if untestable:
            evidence += (f"; the control does not beat the interpolated bigram of the same data ({floor:.1f}): "
                         "these runs learned too little to test the claim")
            decided = UNTESTABLE
        elif floor is not None and statistics.fmean(ours) >= floor:
            evidence += f"; the model does not beat the interpolated bigram of the same data ({floor:.1f})"
        rows.append(Claim(claim.text, evidence, decided, claim.question, (ours, theirs, reported_change)))
    return rows


def chapter_evidence(chapter: str, results: str | Path = "results") -> tuple[list, list]:
    """The stored evidence for a paper chapter: ``(rows, pending)``, the claims rows of every manifest claim
    whose chapter is ``chapter`` (``"01"`` .. ``"05"``) and whose runs are stored (three seeds a side, or a
    control that cannot decide it), each under its own rule
    and question, and the claims still waiting for runs (``results/README.md`` lists them with their
    commands). The order is the README's: each paper's own protocol (``cpu``), then the matched recipe
    (``compare``)."""
    import importlib

    from mlm.claims import awaits_runs

    rows, pending = [], []
    for manifest in README_MANIFESTS:
        claims = [c for c in importlib.import_module(f"mlm.manifests.{manifest}").CLAIMS if c.chapter == chapter]
        for claim, row in zip(claims, stored_claims(claims, manifest, results) if claims else []):
            if awaits_runs(row.verdict):  # not run, or fewer than three seeds a side: listed, not drawn
                pending.append(claim)
            else:
                rows.append(row)
    return rows, pending


def show_pending(pending: list) -> str:
    """Print the claims that :func:`chapter_evidence` found still waiting for runs, one per line with its
    runs, or that none waits; returns the text. ``results/README.md`` lists the command that trains each."""
    if not pending:
        text = "Every claim of this chapter has its stored runs."
    else:
        many = len(pending) != 1
        text = "\n".join([f"{len(pending)} more claim{'s' if many else ''} of this chapter wait{'' if many else 's'} "
                           "for runs (results/README.md gives the command for each):"]
                          + [f"  {claim.text} (results/{claim.group}: {claim.model} against {claim.control})"
                             for claim in pending])
    print(text)
    return text


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

    decided = decided_compare(results)
    ax = interval_plot(list(decided.values()), [compare.ROW_LABELS[name] for name in decided],
                       title="Each claim against its control under one recipe on PTB (2.70M parameters but the d = 128 row)")
    path = Path(path)
    ax.figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(ax.figure)
    return path


README_BEGIN = "<!-- claims: generated by `python -m mlm table` from results/; do not edit -->"
README_END = "<!-- claims: end -->"
README_MANIFESTS = {  # manifest -> what its runs are, as the README's table says
    "cpu": "Each paper's own protocol, at its size or a reduced width (`reproduce cpu`)",
    "compare": "Every family under one recipe at one parameter count, PTB (`reproduce compare`, chapter 06)",
}


def readme_claims(results: str | Path = "results") -> str:
    """The README's claims tables: every :class:`mlm.claims.PaperClaim` of the manifests of
    :data:`README_MANIFESTS`, with our stored runs and their verdicts (:func:`stored_claims`)."""
    import importlib

    from mlm.claims import markdown_cell

    tables = []
    for manifest, what in README_MANIFESTS.items():
        claims = importlib.import_module(f"mlm.manifests.{manifest}").CLAIMS
        lines = [f"**{what}**", "", "| ch. | the paper's claim | the question our runs answer | "
                 "the paper; ours (test perplexity) | verdict |", "|---|---|---|---|---|"]
        lines += [f"| {claim.chapter} | {markdown_cell(row.claim)} | {markdown_cell(row.question or '–')} | "
                  f"{markdown_cell(row.evidence)} | **{row.verdict}** |"
                  for claim, row in zip(claims, stored_claims(claims, manifest, results))]
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


PENDING_BEGIN = "<!-- pending: generated by `python -m mlm table` from results/; do not edit -->"
PENDING_END = "<!-- pending: end -->"


def decided_compare(results: str | Path = "results") -> dict:
    """The ``compare`` manifest's claims rows that the rule has decided (three seeds a side), keyed by the
    family's run name, in manifest order: what the chapters and the README figure draw."""
    from mlm.claims import awaits_runs
    from mlm.manifests import compare

    return {claim.model: row for claim, row in zip(compare.CLAIMS, stored_claims(compare.CLAIMS, "compare", results))
            if not awaits_runs(row.verdict)}


def pending_runs(results: str | Path = "results") -> str:
    """The claims still waiting for runs, one line each with the command that trains them (the list
    ``results/README.md`` keeps, so the chapters need not)."""
    import importlib

    from mlm.claims import awaits_runs

    lines = []
    for manifest in README_MANIFESTS:
        claims = importlib.import_module(f"mlm.manifests.{manifest}").CLAIMS
        for claim, row in zip(claims, stored_claims(claims, manifest, results)):
            if not awaits_runs(row.verdict):  # decided, or declared untestable: not waiting
                continue
            command = (claim.pending if claim.pending else
                       f"`python -m mlm reproduce {manifest} --only '{claim.group}/{claim.model}/*' "
                       f"--only '{claim.group}/{claim.control}/*'`")
            lines.append(f"- chapter {claim.chapter}, {claim.text}: {command}")
    return "\n".join(lines) if lines else "Every declared claim has its runs stored."


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


def format_claims(manifest: str, results: str | Path = "results", groups: set[str] | None = None) -> str:
    """The claims a manifest module declares (its ``CLAIMS``, :class:`mlm.claims.PaperClaim`), one line each
    with the verdict the stored runs give now (:func:`mlm.table.stored_claims`), for the groups ``groups``
    (all if None); empty for a manifest without claims."""
    import importlib

    try:
        module = importlib.import_module(f"mlm.manifests.{manifest}")
    except ModuleNotFoundError:  # a JSON manifest declares no claims
        return ""
    claims = [c for c in getattr(module, "CLAIMS", []) if groups is None or c.group in groups]
    if not claims:
        return ""
    rows = stored_claims(claims, manifest, Path(results))
    width = max(len(r.verdict) for r in rows)
    lines = [f"claims of {manifest} ({sum(r.verdict != 'not run yet' for r in rows)} of {len(rows)} with runs):"]
    lines += [f"  {row.verdict:<{width}}  ch. {claim.chapter}  {claim.group}: {claim.model} vs {claim.control}"
              for claim, row in zip(claims, rows)]
    return "\n".join(lines)


def update_baselines(results: str | Path = "results") -> None:
    """Compute the count baseline (:func:`group_baseline`) of every group that a claim of
    :data:`README_MANIFESTS` reads and that has a stored run, where it is missing or its data changed."""
    import importlib

    from mlm.reproduce import load_manifest

    for manifest in README_MANIFESTS:
        specs = load_manifest(manifest)
        for group in dict.fromkeys(c.group for c in importlib.import_module(f"mlm.manifests.{manifest}").CLAIMS):
            group_specs = [s for s in specs if s.group == group]
            if not group_specs or not any((Path(results) / s.group / s.name / "result.json").is_file()
                                          for s in group_specs):
                continue
            try:
                group_baseline(group_specs, results, compute=True)
            except (OSError, RuntimeError) as err:  # the corpus is not here: the claims go without the floor
                print(f"count baseline of {group} not computed: {err}", file=sys.stderr)


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
    if args.readme != "-":
        if update_readme(args.readme, readme_claims(args.results)):
            print(f"updated the claims table of {args.readme}", file=sys.stderr)
        else:
            print(f"{args.readme}: no claims block ({README_BEGIN} ... {README_END}), not updated", file=sys.stderr)
    return 0
