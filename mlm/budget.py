"""Which runs of a batch fit a time budget on one GPU: ``python -m mlm reproduce ... --budget-minutes``.

GPU time for the book may come in short allocations on a machine that keeps nothing, so a run must finish
inside one. A batch starts the runs of a manifest in its priority order (:func:`priority_order`) and only
those that its measured speeds (:func:`read_speeds`) say will end within the budget while sharing the GPU with
the others it starts (:func:`plan_batch`); the rest are left for a longer allocation.

The model of sharing (:class:`Sharing`), in docs/cluster.md: a run alone takes ``start_seconds`` plus its
training tokens / its measured speed, plus ``eval_share`` of that for validation; with ``n`` runs on the GPU
(under CUDA's multi-process service) each progresses at ``1 / (1 + slowdown (n - 1))`` of its speed alone.
"""

from __future__ import annotations

import fnmatch
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

# settings that say where a run ran, not what it computes: ignored when a bench row is matched to a run
_PLACEMENT = ("train.device=", "train.threads=", "data.data_dir=")
# settings that change the numbers a training step computes with, not how much it computes: a run's seed, its
# rates and its schedule, its weight decay, its dropout and noise levels. A row benched at one of these values
# times every other (dropout and weight decay add a few element-wise kernels per batch at most, inside the
# margin of the model of sharing), so one row per model plans a whole grid.
SPEED_NEUTRAL = ("train.seed=", "train.lr=", "train.weight_decay=", "train.epochs=", "train.early_stop_patience=",
                 "train.schedule=", "train.plateau_patience=", "train.decay_start=", "train.decay_factor=",
                 "train.head_lr_scale=", "model.dropout=", "model.embed_dropout=", "model.noise_gamma=")


def _settings(overrides: Sequence[str]) -> frozenset[str]:
    return frozenset(o for o in overrides if not o.startswith(_PLACEMENT))


def cost_settings(overrides: Sequence[str]) -> frozenset[str]:
    """The settings of ``overrides`` that decide how much a training step computes: neither where it runs nor
    the values in :data:`SPEED_NEUTRAL`."""
    return frozenset(o for o in _settings(overrides) if not o.startswith(SPEED_NEUTRAL))


@dataclass(frozen=True)
class Speed:
    """One row of a bench file: training tokens per second of a setting (``GROUP/RUN``, from ``bench --manifest``)
    or of a preset at a size; ``settings`` its overrides (None: not recorded, matches any); ``model`` the preset
    it trained (a setting's row since ``bench --manifest`` records it; None where not recorded); ``device`` the
    kind of device it ran on (``cuda``, ``cpu``; None where not recorded)."""

    key: str
    size: str
    settings: frozenset[str] | None
    tokens_per_second: float
    model: str | None = None
    device: str | None = None

    @functools.cached_property
    def cost(self) -> frozenset[str] | None:
        """:func:`cost_settings` of the row's settings (None where it recorded none)."""
        return None if self.settings is None else cost_settings(self.settings)


class Speeds:
    """Measured training speeds, one process alone on the device, read from ``python -m mlm bench`` files."""

    def __init__(self, rows: Sequence[Speed]):
        self.rows = list(rows)

    def of(self, spec, overrides: Sequence[str] = ()) -> float | None:
        """The speed of run ``spec`` (trained with the extra ``overrides``), from the first of: a row of its
        setting (``GROUP/RUN``) benched with the same cost (:func:`cost_settings`: another seed, another rate);
        a row of its setting that recorded no settings; a row of the same preset, size and cost (another point of
        a grid, or the preset benched with the same speed switches); for a run that is its preset as it stands
        (no setting of its own that changes the cost), a row of its preset and size that recorded no settings.
        A run whose model no row measured has no speed: a row of the same preset at another width, depth or
        corpus never stands in for it."""
        cost = cost_settings([*spec.all_overrides(), *overrides])
        setting, as_it_stands = f"{spec.group}/{spec.base}", not cost_settings(spec.all_overrides())
        tiers = (lambda r: r.key == setting and r.cost == cost,
                 lambda r: r.key == setting and r.settings is None,
                 lambda r: r.model == spec.preset and r.size == spec.size and r.cost == cost,
                 lambda r: as_it_stands and r.key == spec.preset and r.size == spec.size and r.settings is None)
        for tier in tiers:
            row = next((r for r in self.rows if tier(r)), None)
            if row is not None:
                return row.tokens_per_second
        return None


def read_speeds(*paths: str | Path, device: str | None = None) -> Speeds:
    """The speeds of bench files (an earlier file's rows first): rows of ``python -m mlm bench --manifest NAME
    --out PATH`` (keyed ``GROUP/RUN``, with the preset each trained) or of ``python -m mlm bench PRESET ... --out
    PATH`` (keyed by preset and size, as ``results/bench-h200.json``). Rows of several processes at once and of
    reference heads are left out: a speed here is one run's alone. ``device`` (``cuda``, ``cpu``): only the rows
    measured on that kind of device (and those that recorded none)."""
    speeds = []
    for path in paths:
        try:
            rows = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read the speeds file {path}: {err}. Give a file that python -m mlm bench "
                             "--out wrote") from err
        speeds += [Speed(row["preset"], row.get("size", "full"),
                         _settings(row["overrides"]) if "overrides" in row else None, row["train_tokens_per_second"],
                         row.get("model", None if "/" in row["preset"] else row["preset"]),
                         row["device"].split(":")[0] if row.get("device") else None)
                   for row in rows if row.get("concurrent", 1) == 1 and not row["preset"].endswith("(reference)")]
    return Speeds([s for s in speeds if device is None or s.device in (None, device)])


def priority_order(specs: Sequence, first: Sequence[str] = (), last: Sequence[str] = ()) -> list:
    """``specs`` in the order a batch starts them: the settings that ``first`` names (shell patterns of
    ``GROUP/RUN``, without the seed), one seed of each in the order of ``first``; then their other seeds, setting by
    setting; then the runs no pattern names, in the manifest's order; then those that ``last`` names."""
    seen: set[str] = set()

    def rank(indexed):
        index, spec = indexed
        setting = f"{spec.group}/{spec.base}"
        named = next((k for k, pattern in enumerate(first) if fnmatch.fnmatch(setting, pattern)), None)
        first_seed = setting not in seen
        seen.add(setting)
        if named is not None:
            return (0 if first_seed else 1, named, index)
        return (3 if any(fnmatch.fnmatch(setting, p) for p in last) else 2, 0, index)

    ranks = [rank(item) for item in enumerate(specs)]  # in the manifest's order: the first seed is seen first
    return [spec for _, spec in sorted(zip(ranks, specs), key=lambda pair: pair[0])]


@dataclass(frozen=True)
class Sharing:
    """What a run costs on a GPU it shares, a conservative model (docs/cluster.md, "A batch in a short
    allocation"). ``slowdown``: with n runs at once each runs at 1 / (1 + slowdown (n - 1)) of its speed alone
    (0.15 fits the runs stored from an H100 and an H200 with MPS on; 0.25 leaves room); ``start_seconds``: a
    run's start (Python, torch, CUDA, the corpus) and end (the test set, the copy), beside its training;
    ``eval_share``: validation after each epoch, as a share of the training time."""

    slowdown: float = 0.25
    start_seconds: float = 45.0
    eval_share: float = 0.10

    def alone_seconds(self, tokens: float, speed: float) -> float:
        """A run's time alone on the GPU: its start and end, its training and its validation."""
        return self.start_seconds + tokens / speed * (1 + self.eval_share)


def finish_times(works: Sequence[float], jobs: int, slowdown: float) -> list[float]:
    """When each run ends, started in this order at most ``jobs`` at a time (the next as one ends), each needing
    ``works[i]`` seconds alone, each of n runs at once progressing at 1 / (1 + slowdown (n - 1))."""
    now, left, running, queue = 0.0, list(works), [], list(range(len(works)))
    ends = [0.0] * len(works)
    while queue or running:
        while queue and len(running) < jobs:
            running.append(queue.pop(0))
        rate = 1 / (1 + slowdown * (len(running) - 1))
        first = min(running, key=lambda i: left[i])
        step = left[first] / rate
        now += step
        for i in running:
            left[i] -= step * rate
        running.remove(first)
        ends[first] = now
    return ends


@dataclass
class Plan:
    """A batch: the runs to start, in order, with the minute each is expected to end; and those left, each with
    its reason and its minutes alone on the GPU (None: not known)."""

    start: list[tuple[object, float]]
    left: list[tuple[object, str, float | None]]


def plan_batch(specs: Sequence, speeds: Speeds, budget_seconds: float, jobs: int, overrides: Sequence[str] = (),
               sharing: Sharing = Sharing()) -> Plan:
    """The runs of ``specs`` (in the order given) that end within ``budget_seconds`` when started ``jobs`` at a
    time: each run is added if, with it, every run chosen so far still ends in time; a run without a measured
    speed or a token estimate is left, as is one that does not fit."""
    chosen: list[tuple[object, float]] = []
    left: list[tuple[object, str, float | None]] = []
    for spec in specs:
        speed = speeds.of(spec, overrides)
        if speed is None or not spec.tokens:
            left.append((spec, "no measured speed" if speed is None else "no token estimate", None))
            continue
        work = sharing.alone_seconds(spec.tokens, speed)
        trial = [*chosen, (spec, work)]
        if max(finish_times([w for _, w in trial], jobs, sharing.slowdown)) <= budget_seconds:
            chosen = trial
        else:
            left.append((spec, "does not fit", work / 60))
    ends = finish_times([w for _, w in chosen], jobs, sharing.slowdown)
    return Plan([(spec, end / 60) for (spec, _), end in zip(chosen, ends)], left)


def format_plan(plan: Plan, budget_minutes: float, jobs: int) -> str:
    """What a batch starts, and what it leaves for a longer allocation."""
    lines = [f"budget {budget_minutes:.1f} min, at most {jobs} runs at once: {len(plan.start)} run(s) start"]
    lines += [f"  [plan] {spec.id}: ends at about {end:.1f} min" for spec, end in plan.start]
    if plan.left:
        lines.append(f"{len(plan.left)} run(s) left for a longer allocation:")
        lines += [f"  [left] {spec.id}: {reason}" + (f" ({minutes:.1f} min alone)" if minutes else "")
                  for spec, reason, minutes in plan.left]
    return "\n".join(lines)
