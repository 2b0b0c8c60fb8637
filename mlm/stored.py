"""Stored runs as the chapters, reports and tables read them: the seeds of one setting under
``results/GROUP/RUN[/seedK]/`` (:class:`StoredSetting`, :func:`load_settings`) and the recall runs of the
key-value task with their critical-token scores (:class:`StoredRecall`, :func:`load_stored_recall`).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Sequence

from mlm.long_range import CriticalScores


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value)."""
    values = list(values)
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def machine_label(result: dict) -> str:
    """The kind of machine and precision a stored run used: ``Xeon``, ``EPYC``, a GPU's name
    (:func:`mlm.utils.machine_kind`), with its precision where it was not fp32; ``unknown`` where the run
    recorded neither CPU nor GPU."""
    from mlm.utils import machine_kind

    precision = result.get("config", {}).get("train", {}).get("precision", "fp32")
    kind = machine_kind(result) or "unknown"
    return kind if precision == "fp32" else f"{kind} {precision}"


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

    def machine_kinds(self) -> list[str]:
        """The kind of machine of each stored seed (:func:`machine_label`), in seed order."""
        return [machine_label(r) for r in self.results]

    def values(self, key: str) -> list[float]:
        """``result.json``'s ``key`` (e.g. ``test_ppl``), one value per stored seed."""
        return [r[key] for r in self.results]

    def add_seed(self, folder: Path, seed: int | None = None, files: Sequence[str] = (),
                 optional: Sequence[str] = ()) -> bool:
        """Read one seed folder (the one place where stored results are read); False while it is unfinished."""
        self.expected += 1
        result = read_json(folder / "result.json")
        from mlm.utils import is_smoke_result

        if is_smoke_result(result):
            raise ValueError(f"{folder} holds a smoke run (python -m mlm book --smoke), whose numbers mean nothing; "
                             "delete that folder from the results")
        if not result or "test_ppl" not in result:
            return False
        extra = {f: read_json(folder / f) for f in (*files, *optional)}
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
