"""The evidence for each paper's claims, from the runs stored in ``results/``.

:func:`stored_claims` turns the :class:`mlm.claims.PaperClaim` of a manifest into claims rows: the paper's
pair, ours (mean ± sd per side), the change of the means with its interval and the rule's verdict
(:func:`mlm.claims.verdict`). It chooses a tuned side's run on validation, widens the interval where the two
sides ran on different kinds of machine in different shares (:func:`machine_term`, from the shift measured by
rerunning stored commands on another machine, ``results/machine-check/``), and reads a claim whose control does not beat the count
baseline of its own data as *inconclusive*, with the reason. The chapters, the reports and the README read
these rows; :func:`paper_evidence` gives one paper's.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mlm.claims import (FEW_SEEDS, INCONCLUSIVE, LEVEL, NOT_RUN, Claim, PaperClaim, awaits_runs, interval_text,
                        spread, t_quantile, verdict)
from mlm.configs import get_preset
from mlm.stored import StoredSetting, load_settings, machine_label, read_json

MANIFESTS = {  # manifest -> what its claims test, as the README and the reports say
    "cpu": "Each paper's own recipe, at its size or a reduced width (`reproduce cpu`)",
    "compare": "Every family under one recipe at one parameter count, PTB (`reproduce compare`, chapter 06)",
    "tuned": "The papers' own recipes again, both sides tuned on equal terms (`reproduce tuned`, on a GPU)",
}
COMPARISONS = {"cpu": "the paper's recipe", "compare": "matched recipe", "tuned": "the paper's recipe, both tuned",
               "full": "full size"}  # each manifest's comparison in a few words, as tables and figures name it
MACHINE_CHECK = "machine-check"  # results/machine-check/LABEL/GROUP/RUN/seedK: a stored run rerun elsewhere


def paper_numbers(claim: PaperClaim) -> tuple[float, float, str]:
    """The numbers the paper reported for a claim's model and control, and where they are from (the
    presets' ``paper`` entries)."""
    model, control = get_preset(claim.paper_model).paper, get_preset(claim.paper_control).paper
    source = model["source"] if model["source"] == control["source"] else \
        f"{model['source']}; control: {control['source']}"
    return model[claim.key], control[claim.key], source


def paper_reading(claim: PaperClaim) -> str:
    """How to read the paper's number for a claim's model on our scale, where its preset says (Salton et
    al.'s perplexities skip each sentence's first word); empty otherwise."""
    return get_preset(claim.paper_model).paper.get("reading", "")


def paper_uncontrolled(claim: PaperClaim) -> str:
    """Why the paper's pair for a claim is no controlled comparison (its control trained under another
    protocol, say), where the model's preset says so; empty otherwise. Such a pair has no size ours could be
    set beside: the verdict then weighs the direction only."""
    return get_preset(claim.paper_model).paper.get("uncontrolled", "")


# -- the count baseline a claim's control must beat --------------------------------------------------
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
    stored = read_json(path)
    if stored and stored.get("data") == data[0]:
        return stored
    if not compute:
        return None
    from mlm.baselines import count_baseline

    baseline = {**count_baseline(specs[0].config()), "data": data[0], "computed_for": specs[0].id}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(baseline, indent=2) + "\n")
    return baseline


# -- how far a run moves when its machine changes ------------------------------------------------------
@dataclass(frozen=True)
class MachinePair:
    """One command run on two kinds of machine: the stored run (``kinds[1]``) and its rerun (``kinds[0]``)."""

    run: str  # GROUP/RUN/seedK
    kinds: tuple[str, str]
    shift: float  # the rerun's test perplexity / the stored run's - 1


def machine_pairs(results: str | Path = "results") -> list[MachinePair]:
    """Every rerun under ``results/machine-check/LABEL/GROUP/RUN/seedK`` beside its stored twin
    ``results/GROUP/RUN/seedK`` (the same command on another machine)."""
    results = Path(results)
    pairs = []
    for path in sorted((results / MACHINE_CHECK).glob("*/**/result.json")):
        run = path.parent.relative_to(results / MACHINE_CHECK).parts[1:]
        rerun, stored = read_json(path), read_json(results.joinpath(*run, "result.json"))
        if rerun and stored and "test_ppl" in rerun and "test_ppl" in stored:
            pairs.append(MachinePair("/".join(run), (machine_label(rerun), machine_label(stored)),
                                     rerun["test_ppl"] / stored["test_ppl"] - 1))
    return pairs


def shift_bound(shifts: Sequence[float], level: float = LEVEL) -> float:
    """How far a machine may move the mean of a side, from paired shifts: ``|mean| + t * sd / sqrt(n)``, the
    far end of the ``level`` interval of the mean shift (needs three pairs)."""
    if len(shifts) < 3:
        raise ValueError("a machine shift is measured from three pairs at least")
    half = t_quantile((1 + level) / 2, len(shifts) - 1) * statistics.stdev(shifts) / len(shifts) ** 0.5
    return abs(statistics.fmean(shifts)) + half


def kind_shifts(first: str, second: str, pairs: Sequence[MachinePair]) -> list[float]:
    """The shifts of the ``pairs`` measured between kinds ``first`` and ``second``, each as a run on ``first``
    against its twin on ``second`` (a pair stored the other way round counts with its sign turned)."""
    return [p.shift if p.kinds == (first, second) else -p.shift for p in pairs if set(p.kinds) == {first, second}]


def machine_shift(kinds: Sequence[str], results: str | Path = "results") -> float:
    """The machine term of a claim whose runs used the kinds of machine ``kinds``: 0 for one kind; else, for
    each two kinds among them, :func:`shift_bound` of their measured pairs, or where fewer than three pairs
    were measured a stand-in as wide as the widest measured bound and at least the largest shift of one run
    seen between any two machines; the largest of these."""
    kinds = sorted(set(kinds))
    if len(kinds) < 2:
        return 0.0
    pairs = machine_pairs(results)
    measured = {}  # each two kinds with three pairs or more: their bound
    for p in pairs:
        key = tuple(sorted(p.kinds))
        if key not in measured:
            shifts = kind_shifts(*key, pairs)
            measured[key] = shift_bound(shifts) if len(shifts) >= 3 else None
    # not measured: as wide as the widest bound measured, and at least the largest shift of one run
    fallback = max([abs(p.shift) for p in pairs] + [b for b in measured.values() if b is not None], default=0.02)
    terms = [measured.get((a, b)) or fallback for i, a in enumerate(kinds) for b in kinds[i + 1:]]
    return max(terms)


def machine_term(model_kinds: Sequence[str], control_kinds: Sequence[str], results: str | Path = "results") -> float:
    """The machine term of a claim: how far the kinds of machine its two sides ran on could move the relative
    change of their means. A kind's bias reaches the change only as far as the two sides hold it in different
    shares, so with ``p_k`` the share of a side's seeds on kind ``k`` the term is the sum over kinds of
    ``|p_k(model) - p_k(control)|`` times the bound on that kind's shift from the commonest kind
    (:func:`machine_shift`): 0 where both sides ran on one kind, or in the same shares of several, and the
    whole bound where each side ran on its own kind."""
    if not model_kinds or not control_kinds:
        return 0.0
    kinds = [*model_kinds, *control_kinds]
    reference = max(sorted(set(kinds)), key=kinds.count)
    share = {side: {k: list(side_kinds).count(k) / len(side_kinds) for k in set(kinds)}
             for side, side_kinds in (("model", model_kinds), ("control", control_kinds))}
    return sum(abs(share["model"][k] - share["control"][k]) * machine_shift([k, reference], results)
               for k in set(kinds) if k != reference)


# -- claims rows from stored runs -----------------------------------------------------------------------
def choose(stored: dict[str, StoredSetting], side: str | tuple[str, ...]) -> tuple[StoredSetting | None, str]:
    """The setting one side of a claim reads, and how it was chosen: the run itself (no text), or among
    candidates the one with the lowest mean validation perplexity over the seeds every candidate has stored
    ("picked RUN (validation over seeds ...: each candidate's mean)"; None until each candidate has one)."""
    names = PaperClaim.candidates(side)
    if len(names) == 1:
        return stored[names[0]], ""
    shared = set.intersection(*(set(stored[n].seeds) for n in names))
    if not shared:
        return None, f"picked on validation once each of its {len(names)} settings has a run"

    def valid(name):
        setting = stored[name]
        return statistics.fmean(r["best_valid_ppl"] for s, r in zip(setting.seeds, setting.results) if s in shared)

    scores = {n: valid(n) for n in names}
    best = min(scores, key=scores.get)
    listed = ", ".join(f"{n} {v:.1f}" for n, v in scores.items())
    seeds = f"seed{'s' if len(shared) > 1 else ''} {', '.join(map(str, sorted(shared)))}"
    return stored[best], f"picked {best} (validation over {seeds}: {listed})"


def with_choices(tuning: str, choices: dict[str, str]) -> str:
    """A claim's ``tuning`` text ("control: lr from 0.5, 1, 2; model: ...") with each side's choice
    (``{"model": "picked RUN (...)", ...}``, :func:`choose`) added to that side's clause, or as a clause of its
    own where the text has none."""
    clauses = [c for c in tuning.split("; ") if c]
    for side, choice in choices.items():
        if not choice:
            continue
        at = next((i for i, c in enumerate(clauses) if c.startswith(f"{side}: ")), None)
        if at is None:
            clauses.append(f"{side}: {choice}")
        else:
            clauses[at] += f", {choice}"
    return "; ".join(clauses)


def train_command(manifest: str, group: str, missing: Sequence[str] = (), runs: Sequence[str] = ()) -> str:
    """The command (Markdown code) that trains the ``missing`` runs of ``group`` (all of them if none is named),
    without training its other ``runs``: one ``--only`` per family of names that differ only in a trailing
    number (``tied-dropout*``) where it matches two or more runs, all missing, else per run; the whole group
    where that takes more than four patterns."""
    patterns = []
    for run in missing:
        if any(fnmatch.fnmatch(run, p) for p in patterns):
            continue
        family = run.rstrip("0123456789.")
        matched = [r for r in runs if fnmatch.fnmatch(r, family + "*")]
        wide = family != run and len(matched) > 1 and set(matched) <= set(missing)
        patterns.append(family + "*" if wide else run)
    if not patterns or len(patterns) > 4:
        patterns = ["*"]
    return f"`python -m mlm reproduce {manifest} " + " ".join(f"--only '{group}/{p}'" for p in patterns) + "`"


def training_cost(settings: Sequence, undecided: int = 0) -> str:
    """What training the missing seeds of ``settings`` (:class:`mlm.stored.StoredSetting`) costs, in words: how
    many runs and their expected hours on one CPU thread (the manifests' estimates), plus the two further seeds
    of the choice of each of the ``undecided`` tuned sides, which the manifest adds once its grid is complete."""
    lacking = [(s.expected - len(s.seeds), s.spec.hours) for s in settings if s.expected > len(s.seeds)]
    if not lacking:
        return ""
    runs = sum(n for n, _ in lacking)
    text = f"{runs} run{'s' * (runs != 1)}"
    if all(hours is not None for _, hours in lacking):
        text += f", about {sum(n * hours for n, hours in lacking):.0f} h on one CPU thread"
    if undecided:
        text += f", then 2 more seeds of {'each side' if undecided > 1 else 'the tuned side'}'s choice"
    return text


def _reported(claim: PaperClaim) -> tuple[str, float | None]:
    """The paper's pair in words, and its change (None where the pair is no controlled comparison, or measured
    another contrast than the claim's row: ``claim.contrast``)."""
    paper_model, paper_control, _ = paper_numbers(claim)
    change = paper_model / paper_control - 1
    uncontrolled = paper_uncontrolled(claim)
    notes = [n for n in (paper_reading(claim), uncontrolled and f"{uncontrolled}: direction only",
                         claim.contrast and f"{claim.contrast}: another contrast, no yardstick") if n]
    if uncontrolled and change > -0.01:
        raise ValueError(f"{claim.text!r}: a paper pair that is no controlled comparison is read as a gain "
                         "(its direction only); this one reports none")
    text = f"paper {paper_model:.1f} vs {paper_control:.1f} ({change:+.1%}" + "".join(f"; {n}" for n in notes) + ")"
    return text, None if uncontrolled or claim.contrast else change


def stored_claims(claims: Sequence[PaperClaim], manifest: str, results: str | Path = "results") -> list[Claim]:
    """A claims row (:class:`mlm.claims.Claim`) for each claim, from the runs of the manifest ``manifest``
    (e.g. ``"cpu"``) stored under ``results``. A claim whose runs are not stored yet says so (*not run yet*,
    or *waiting for seeds* under three a side) and how to produce them. Where the group's count baseline is
    stored (:func:`group_baseline`) and the control's mean test perplexity is no better than its interpolated
    bigram's, the runs learned too little to test anything: the verdict is *inconclusive* and the row's
    ``reason`` says why; once every seed of such a control is stored, that stands before the model has a run."""
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
        common = dict(question=claim.question, handicaps=claim.handicaps,
                      tuning="; ".join(t for t in (claim.tuning, claim.unfair and f"unequal: {claim.unfair}") if t))
        if claim.pending:
            rows.append(Claim(claim.text, f"not run yet: {claim.pending}", NOT_RUN, **common))
            continue
        stored = settings[claim.group]
        unknown = [run for run in claim.runs if run not in stored]
        if unknown:
            raise ValueError(f"the claim {claim.text!r} names {', '.join(map(repr, unknown))}, which the manifest "
                             f"does not run in {claim.group!r}; its runs are {', '.join(stored)}")
        (model, model_how), (control, control_how) = choose(stored, claim.model), choose(stored, claim.control)
        tuning = "; ".join(t for t in (with_choices(claim.tuning, {"model": model_how, "control": control_how}),
                                       claim.unfair and f"unequal: {claim.unfair}") if t)
        common["tuning"] = tuning
        reported, reported_change = _reported(claim)
        missing = [run for run in claim.runs if len(stored[run].seeds) < stored[run].expected]
        command = common["command"] = train_command(manifest, claim.group, missing, list(stored))
        common["cost"] = training_cost([stored[run] for run in missing],
                                       undecided=sum(len(PaperClaim.candidates(side)) > 1 and chosen is None
                                                     for side, chosen in ((claim.model, model), (claim.control, control))))
        if model is None or control is None:
            rows.append(Claim(claim.text, f"{reported}; ours: not run yet ({command})", NOT_RUN, **common))
            continue
        common.update(model_run=model.run, control_run=control.run)
        floor, theirs = floors[claim.group], control.values("test_ppl")
        # a control no better than the bigram learned too little for any claim against it to be tested
        untestable = floor is not None and bool(theirs) and statistics.fmean(theirs) >= floor
        reason = (f"the control ({spread(theirs)}) does not beat the interpolated bigram of the same data "
                  f"({floor:.1f}): the runs learned too little to test the claim") if untestable else ""
        if untestable and not model.seeds and len(control.seeds) == control.expected:  # no run of the model can help
            rows.append(Claim(claim.text, f"{reported}; ours: no run of {model.run} can test the claim at this size",
                              INCONCLUSIVE, reason=reason, **common))
            continue
        if not model.seeds or not control.seeds:
            seeds = ", ".join(f"{s.run} {len(s.seeds)}/{s.expected}" for s in (model, control))
            rows.append(Claim(claim.text, f"{reported}; ours: not run yet (seeds stored: {seeds}; {command})",
                              NOT_RUN, **common))
            continue
        ours = model.values("test_ppl")
        kinds = [*model.machine_kinds(), *control.machine_kinds()]
        machine = machine_term(model.machine_kinds(), control.machine_kinds(), results)
        evidence = f"{reported}; ours {spread(ours)} vs {spread(theirs)}, {interval_text(ours, theirs, machine)}"
        if len(set(kinds)) > 1:
            evidence += f" (runs on {', '.join(sorted(set(kinds)))})"
        if not (model.stopped_improving() and control.stopped_improving()):
            evidence += "; a seed was still improving at its last epoch"
        decided = verdict(ours, theirs, paper=reported_change, machine=machine)
        if decided == FEW_SEEDS:
            evidence += f" ({command})"
        if untestable:
            decided = INCONCLUSIVE
        elif floor is not None and statistics.fmean(ours) >= floor:
            evidence += f"; the model does not beat the interpolated bigram of the same data ({floor:.1f})"
        rows.append(Claim(claim.text, evidence, decided, seeds=(ours, theirs, reported_change), reason=reason,
                          machine=machine, **common))
    return rows


def manifest_claims(manifest: str) -> list[PaperClaim]:
    """The claims a manifest module declares (its ``CLAIMS``); none for a JSON manifest."""
    try:
        module = importlib.import_module(f"mlm.manifests.{manifest}")
    except ModuleNotFoundError:
        return []
    return list(getattr(module, "CLAIMS", []))


def paper_evidence(chapter: str, results: str | Path = "results",
                   manifests: Sequence[str] = tuple(MANIFESTS)) -> list[tuple[str, PaperClaim, Claim]]:
    """``(manifest, claim, row)`` for every claim of the paper of chapter ``chapter`` (``"01"`` .. ``"05"``),
    decided or not, in the README's order: each paper's own recipe (``cpu``), then the matched recipe."""
    out = []
    for manifest in manifests:
        claims = [c for c in manifest_claims(manifest) if c.chapter == chapter]
        out += [(manifest, c, row) for c, row in zip(claims, stored_claims(claims, manifest, results) if claims else [])]
    return out


def manifest_rows(manifest: str, results: str | Path = "results") -> list[tuple[str, PaperClaim, Claim]]:
    """``(manifest, claim, row)`` for every claim of ``manifest``, decided or not, in manifest order."""
    claims = manifest_claims(manifest)
    return [(manifest, c, row) for c, row in zip(claims, stored_claims(claims, manifest, results))]


def decided_rows(manifest: str, results: str | Path = "results") -> dict[str, Claim]:
    """A manifest's claims rows the rule has decided (three seeds a side), keyed by the claim's text, in
    manifest order."""
    return {c.text: row for _, c, row in manifest_rows(manifest, results) if not awaits_runs(row)}


def supersedes(claim: PaperClaim, other: PaperClaim) -> bool:
    """Whether ``claim`` asks ``other``'s question with more tuning: the same group, each side of ``other``
    among ``claim``'s candidates for that side, and more candidates in all (a row that tunes both sides
    against one that tuned only the model)."""
    def within(side, wider):
        return set(PaperClaim.candidates(side)) <= set(PaperClaim.candidates(wider))

    return (claim.group == other.group and within(other.model, claim.model) and within(other.control, claim.control)
            and len(claim.runs) > len(other.runs))


def without_superseded(rows: Sequence[tuple[str, PaperClaim, Claim]]) -> list[tuple[str, PaperClaim, Claim]]:
    """The decided ``(manifest, claim, row)`` of ``rows`` that no other decided row of the same manifest
    supersedes (:func:`supersedes`): the fairer trial of a question replaces the other once it has its runs."""
    decided = [(m, c, r) for m, c, r in rows if not awaits_runs(r)]
    return [(m, c, r) for m, c, r in decided if not any(m2 == m and supersedes(c2, c) for m2, c2, _ in decided)]


def current_rows(manifest: str, results: str | Path = "results") -> dict[str, Claim]:
    """:func:`decided_rows` without the rows a decided row supersedes (:func:`without_superseded`): what a
    chapter shows (the reports name both)."""
    return {c.text: r for _, c, r in without_superseded(manifest_rows(manifest, results))}


def waiting_text(row: Claim) -> str:
    """A waiting row's command and what it costs, e.g. "`python -m mlm reproduce ...` (15 runs, about 26 h on one
    CPU thread)"."""
    return f"{row.command} ({row.cost})" if row.cost else row.command


def pending_runs(results: str | Path = "results") -> str:
    """The claims still waiting for runs, one line each with the command that trains them (the list
    ``results/README.md`` keeps)."""
    lines = []
    for manifest in MANIFESTS:
        claims = manifest_claims(manifest)
        for claim, row in zip(claims, stored_claims(claims, manifest, results)):
            if not awaits_runs(row):
                continue
            lines.append(f"- chapter {claim.chapter}, {claim.text}: {claim.pending or waiting_text(row)}")
    return "\n".join(lines) if lines else "Every declared claim has its runs stored."


def format_claims(manifest: str, results: str | Path = "results", groups: set[str] | None = None) -> str:
    """The claims a manifest declares, one line each with the verdict its stored runs give now, for the
    groups ``groups`` (all if None); empty for a manifest without claims."""
    claims = [c for c in manifest_claims(manifest) if groups is None or c.group in groups]
    if not claims:
        return ""
    rows = stored_claims(claims, manifest, Path(results))
    width = max(len(r.label_text) for r in rows)
    lines = [f"claims of {manifest} ({sum(r.verdict != NOT_RUN for r in rows)} of {len(rows)} with runs):"]
    lines += [f"  {row.label_text:<{width}}  ch. {claim.chapter}  {claim.group}: {_side(row.model_run, claim.model)} vs "
              f"{_side(row.control_run, claim.control)}" for claim, row in zip(claims, rows)]
    return "\n".join(lines)


def _side(chosen: str, side: str | tuple[str, ...]) -> str:
    """A side as a listing names it: its run, or a tuned side's choice (or its first candidate) and how many."""
    names = PaperClaim.candidates(side)
    return names[0] if len(names) == 1 else f"{chosen or names[0]} (tuned over {len(names)})"


def update_baselines(results: str | Path = "results") -> None:
    """Compute the count baseline (:func:`group_baseline`) of every group that a claim of :data:`MANIFESTS`
    reads and that has a stored run, where it is missing or its data changed."""
    from mlm.reproduce import load_manifest

    for manifest in MANIFESTS:
        specs = load_manifest(manifest)
        for group in dict.fromkeys(c.group for c in manifest_claims(manifest)):
            group_specs = [s for s in specs if s.group == group]
            if not group_specs or not any((Path(results) / s.group / s.name / "result.json").is_file()
                                          for s in group_specs):
                continue
            try:
                group_baseline(group_specs, results, compute=True)
            except (OSError, RuntimeError) as err:  # the corpus is not here: the claims go without the floor
                print(f"count baseline of {group} not computed: {err}", file=sys.stderr)
