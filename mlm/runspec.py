"""A run of a manifest: what it is (:class:`RunSpec`), where it lives (:class:`Layout`) and how far it got
(:func:`run_state`), for ``python -m mlm reproduce`` (:mod:`mlm.reproduce`) and the tables that read results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mlm.analysis.post_steps import POST_STEPS
from mlm.configs import Config, get_preset
from mlm.launch import ACTIVE, cluster_states, running_pid
from mlm.training import read_metrics

COPIED = ("config.json", "metrics.jsonl", "result.json")  # what results/ keeps of a run folder
STATES = ("done", "running", "submitted", "partial", "missing")

@dataclass(frozen=True)
class RunSpec:
    """One named run: ``python -m mlm train PRESET --size SIZE --set OVERRIDE ... --set train.seed=SEED``.

    ``seed`` None keeps the preset's seed. ``post`` names post-steps (:data:`POST_STEPS`) run on the
    finished run. ``same_as`` names another run of the manifest with the same configuration (a grid's chosen
    run that is also a seed of the comparison): once that run is stored, ``reproduce`` copies its files here
    (:func:`store_copy`) instead of training it twice. ``hours`` is the expected time on one CPU thread
    (None: not estimated, e.g. GPU runs), ``tokens`` the training tokens of the expected schedule (``epochs``
    x tokens per epoch; ``results/scripts/estimate_hours.py`` measures both).
    """

    group: str
    name: str
    preset: str
    size: str = "full"
    overrides: tuple[str, ...] = ()
    seed: int | None = None
    post: tuple[str, ...] = ()
    hours: float | None = None
    tokens: float | None = None
    epochs: int | None = None  # expected epochs under early stopping (a guess); None: train.epochs
    note: str = ""
    label: str = ""  # what the run is where its overrides make it another model than the preset names
    same_as: str = ""  # the id of a run of the same manifest and configuration: its stored files are copied

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"

    @property
    def base(self) -> str:
        """The run's name without its seed folder: the row of the table its seeds average into."""
        return self.name.rsplit("/seed", 1)[0]

    def all_overrides(self) -> list[str]:
        return [*self.overrides, *([f"train.seed={self.seed}"] if self.seed is not None else [])]

    def config(self, extra: Sequence[str] = ()) -> Config:
        """The run's configuration (raises :class:`ConfigError` if the preset or an override is wrong)."""
        return get_preset(self.preset, self.size, [*self.all_overrides(), *extra])


# -- where a run lives, and its state ------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """``root/runs/GROUP/RUN`` holds the training run (checkpoints), ``root/results/GROUP/RUN`` what is kept."""

    root: Path = Path(".")

    def run_dir(self, spec: RunSpec) -> Path:
        return self.root / "runs" / spec.group / spec.name

    def result_dir(self, spec: RunSpec) -> Path:
        return self.root / "results" / spec.group / spec.name


def post_outputs(spec: RunSpec) -> list[str]:
    return [POST_STEPS[p].output for p in spec.post]


def run_state(spec: RunSpec, layout: Layout, cluster: dict[Path, str] | None = None) -> str:
    """``done`` (results stored, post-steps included), ``running`` (a live process holds the lock, or its
    cluster job runs), ``submitted`` (its cluster job waits in the queue), ``partial`` (a checkpoint, or a
    finished run waiting for its copy or post-steps) or ``missing``. ``cluster``: the scheduler's states of
    the runs' jobs (:func:`mlm.launch.cluster_states`; asked here when not given)."""
    out, run_dir = layout.result_dir(spec), layout.run_dir(spec)
    if (out / "result.json").is_file() and all((out / f).is_file() for f in post_outputs(spec)):
        return "done"
    job = (cluster if cluster is not None else cluster_states([run_dir])).get(run_dir)
    if job == "RUNNING" or (running_pid(run_dir) is not None and job in ACTIVE | {None}):
        return "running"  # a lock whose job has ended (killed, say) holds nothing
    if job in ACTIVE:
        return "submitted"
    if (run_dir / "checkpoint.pt").is_file() or (out / "result.json").is_file():
        return "partial"
    return "missing"


def epochs_done(spec: RunSpec, layout: Layout) -> str:
    """``"N of M epochs"`` for an unfinished run with epochs in its run folder (``N`` done, from
    ``metrics.jsonl``; ``M`` the most its configuration allows: early stopping may end it sooner), else ``""`` (a
    finished run waiting for its copy or post-steps has its ``result.json`` and shows nothing)."""
    run_dir = layout.run_dir(spec)
    if (run_dir / "result.json").is_file():
        return ""
    try:
        epochs = len(read_metrics(run_dir))
    except (OSError, ValueError):
        return ""
    return f"{epochs} of {spec.config().train.epochs} epochs" if epochs else ""


def run_states(specs: Sequence[RunSpec], layout: Layout) -> dict[str, str]:
    """id -> :func:`run_state` of every run, asking the cluster's scheduler once for all of them."""
    cluster = cluster_states([layout.run_dir(s) for s in specs])
    return {s.id: run_state(s, layout, cluster) for s in specs}
