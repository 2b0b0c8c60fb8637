"""``python -m mlm reproduce``: train the named runs of a manifest, resume the interrupted ones.

A manifest is a list of :class:`RunSpec`: a group, a run name, a preset with its size and
``--set`` overrides, and a seed. Each run trains with exactly the command that
:func:`train_command` prints (``python -m mlm train PRESET --size ... --set ... --run-dir
runs/GROUP/RUN``), in a subprocess, so a stored result always says how to repeat it. When a run
finishes, its ``config.json``, ``metrics.jsonl`` and ``result.json`` (never the checkpoints) are
copied to ``results/GROUP/RUN/`` with ``command.txt``; optional post-steps
(:mod:`mlm.analysis.post_steps`: attention analyses, MSR sentence completion) then write their JSON
file beside them. How the runs are started, here or on a Slurm cluster, is :mod:`mlm.launch`'s part.

    python -m mlm reproduce cpu --list                  # done / running / submitted / partial / missing
    python -m mlm reproduce cpu --jobs 2                # train what is missing, two at a time
    python -m mlm reproduce full --device cuda --jobs 4 --only 'full-kong2019*' --dry-run
    python -m mlm reproduce full --launcher slurm --partition gpu --time 240    # a Slurm job array
    python -m mlm reproduce full --device cuda --jobs 14 --budget-minutes 8 --speeds results/bench-h200.json \
        --archive out/results.tar.gz                    # what fits in 8 minutes, its results in one archive

Manifests are Python modules ``mlm/manifests/NAME.py`` holding ``RUNS``, or JSON files (see
:func:`load_manifest`). A module whose later runs depend on earlier ones' results (a grid that chooses
the setting the rest share) defines ``manifest(results)`` too, and one ``reproduce`` trains the grid, then
what its choice lists (:func:`reproduce_stages`); ``PRIORITY`` and ``LAST`` (patterns of ``GROUP/RUN``) order its
runs (:func:`mlm.budget.priority_order`). The training engine checkpoints after every epoch, so a run stopped
for any reason continues from its last epoch when ``reproduce`` runs again. With a time budget
(:class:`Budget`) a batch starts only the runs that fit in it (:mod:`mlm.budget`), and ``--archive`` returns its
results as one small archive (:mod:`mlm.archive`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from mlm.analysis.post_steps import POST_STEPS, run_post_steps
from mlm.archive import BatchArchive
from mlm.budget import Sharing, Speeds, cost_settings, format_plan, plan_batch, priority_order, read_speeds
from mlm.configs import ConfigError
from mlm.launch import (Deadline, GpuPool, RunLock, SlurmOptions, acquire_lock, available_cores, gpu_pool, launch_here,
                        plan_jobs, run_logged, running_pid, sbatch_script, shell, submit)
from mlm.runspec import COPIED, STATES, Layout, RunSpec, epochs_done, post_outputs, run_state, run_states


# -- the manifest ------------------------------------------------------------------------------
def runs(group: str, name: str, preset: str, size: str = "full", overrides: Iterable[str] = (),
         seeds: Sequence[int] | None = None, **fields) -> list[RunSpec]:
    """The runs of one setting: a single run ``name`` (the preset's seed), or ``name/seedK`` per seed."""
    overrides = tuple(overrides)
    if seeds is None:
        return [RunSpec(group, name, preset, size, overrides, **fields)]
    return [RunSpec(group, f"{name}/seed{s}", preset, size, overrides, seed=s, **fields) for s in seeds]


def load_manifest(name: str | Path, results: Path | None = None) -> list[RunSpec]:
    """The runs of manifest ``name``: a module ``mlm.manifests.NAME`` (its ``RUNS`` list) or a JSON file.
    ``results``: the folder of stored results that decides a staged module's runs (its ``manifest(results)``,
    e.g. ``ROOT/results`` for ``reproduce --root ROOT``); without it, the repository's (``RUNS``).

    A JSON manifest is ``{"runs": [{"group": ..., "name": ..., "preset": ..., "size": "full",
    "set": ["train.lr=0.5"], "seeds": [0, 1, 2], "post": [...], "hours": 1.5}, ...]}``.
    """
    path = Path(name)
    if path.suffix == ".json":
        specs = []
        for entry in json.loads(path.read_text())["runs"]:
            entry = dict(entry)
            overrides, seeds = entry.pop("set", ()), entry.pop("seeds", None)
            post = tuple(entry.pop("post", ()))
            specs += runs(entry.pop("group"), entry.pop("name"), entry.pop("preset"), overrides=overrides,
                          seeds=seeds, post=post, **entry)
    else:
        try:
            module = importlib.import_module(f"mlm.manifests.{name}")
        except ModuleNotFoundError as err:
            raise ConfigError(f"unknown manifest {name!r}; known: {', '.join(manifest_names())}, "
                              "or a path to a .json manifest") from err
        staged = getattr(module, "manifest", None)
        specs = list(staged(results) if results is not None and callable(staged) else module.RUNS)
    return check_runs(specs, name)


def manifest_priority(name: str | Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The manifest's ``(PRIORITY, LAST)`` patterns (:func:`mlm.budget.priority_order`): a module's attributes,
    or a JSON manifest's ``"priority"`` and ``"last"`` lists; empty where it gives none."""
    if Path(name).suffix == ".json":
        data = json.loads(Path(name).read_text())
        return tuple(data.get("priority", ())), tuple(data.get("last", ()))
    module = importlib.import_module(f"mlm.manifests.{name}")
    return tuple(getattr(module, "PRIORITY", ())), tuple(getattr(module, "LAST", ()))


def check_runs(specs: list[RunSpec], name: str | Path) -> list[RunSpec]:
    """``specs`` if they make a manifest: no run name twice, known post-steps, and every ``same_as`` naming a
    trained run of the same configuration; otherwise a :class:`ConfigError` that says what to change."""
    ids = [s.id for s in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"manifest {name}: run names used twice: {', '.join(duplicates)}")
    unknown = sorted({p for s in specs for p in s.post if p not in POST_STEPS})
    if unknown:
        raise ConfigError(f"manifest {name}: unknown post-steps {unknown}; known: {', '.join(POST_STEPS)}")
    by_id = {s.id: s for s in specs}
    for spec in specs:
        if not spec.same_as:
            continue
        source = by_id.get(spec.same_as)
        if source is None or source.same_as or source.post != spec.post:
            raise ConfigError(f"manifest {name}: {spec.id} is the same as {spec.same_as!r}, which must be a run "
                              "of the manifest that is trained itself, with the same post-steps")
        if source.config() != spec.config():
            raise ConfigError(f"manifest {name}: {spec.id} is not the same configuration as {source.id}: "
                              "train it on its own (drop same_as) or make the overrides agree")
    return specs


def bench_specs(name: str, only: Sequence[str] | None = None) -> list[RunSpec]:
    """The runs ``python -m mlm bench --manifest NAME`` times: the manifest module's ``BENCH`` list if it
    has one, else one run of each model the manifest trains: of each preset, size and cost
    (:func:`mlm.budget.cost_settings`), the first seed of the last setting. A grid over rates, dropout or weight
    decay is benched once and its row plans every point; grids list their points from no dropout and no weight
    decay up, so the last point's few extra element-wise kernels make its row the slowest. ``only``: shell
    patterns of the runs to consider (:func:`select`)."""
    specs = load_manifest(name)  # imports a module manifest, or says clearly what is wrong with the name
    module = sys.modules.get(f"mlm.manifests.{name}")
    if hasattr(module, "BENCH"):
        return select(module.BENCH, only)
    chosen: dict[tuple, RunSpec] = {}  # model -> the first seed of its last setting so far
    for spec in select(specs, only):
        model = (spec.preset, spec.size, cost_settings(spec.all_overrides()))
        if model not in chosen or chosen[model].base != spec.base:
            chosen[model] = spec
    position = {spec.id: i for i, spec in enumerate(specs)}
    return sorted(chosen.values(), key=lambda spec: position[spec.id])


def manifest_names() -> list[str]:
    """The manifests shipped in ``mlm/manifests/``."""
    folder = Path(__file__).parent / "manifests"
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def select(specs: Sequence[RunSpec], patterns: Sequence[str] | None) -> list[RunSpec]:
    """The runs whose id (``group/run[/seedK]``) matches one of the shell patterns (all if none)."""
    if not patterns:
        return list(specs)
    return [s for s in specs if any(fnmatch.fnmatch(s.id, p) or fnmatch.fnmatch(s.id, p + "/*") for p in patterns)]


# -- commands ------------------------------------------------------------------------------------
def train_command(spec: RunSpec, layout: Layout | None = None, threads: int | None = None,
                  device: str | None = None, overrides: Sequence[str] = ()) -> list[str]:
    """``python -m mlm train ...`` for ``spec`` (argv without the interpreter), as run and as stored;
    ``overrides`` (``reproduce --set``) come after the manifest's own."""
    layout = layout or Layout()
    argv = ["python", "-m", "mlm", "train", spec.preset, "--size", spec.size]
    extra = [*overrides, *([f"train.threads={threads}"] if threads else [])]
    for item in [*spec.all_overrides(), *extra]:
        argv += ["--set", item]
    if device:
        argv += ["--device", device]
    return argv + ["--run-dir", str(layout.run_dir(spec).relative_to(layout.root)), "--no-progress"]


def post_command(spec: RunSpec, manifest: str) -> list[str] | None:
    if not spec.post:
        return None
    return ["python", "-m", "mlm", "reproduce", manifest, "--only", spec.id, "--post-only"]


# -- running one run -------------------------------------------------------------------------------
def store_result(spec: RunSpec, layout: Layout, command: str) -> None:
    """Copy the finished run's JSON files (never checkpoints) and its command to ``results/GROUP/RUN``;
    ``result.json`` goes last, so a half-copied folder is never taken for a finished one."""
    run_dir, out = layout.run_dir(spec), layout.result_dir(spec)
    out.mkdir(parents=True, exist_ok=True)
    (out / "command.txt").write_text(command + "\n")
    for name in COPIED:
        tmp = out / f".{name}.tmp"
        shutil.copyfile(run_dir / name, tmp)
        os.replace(tmp, out / name)


def store_copy(spec: RunSpec, layout: Layout) -> None:
    """Store the files of ``spec.same_as`` (a finished run of the same configuration) as ``spec``'s, with a
    ``command.txt`` that says so; ``result.json`` goes last, as in :func:`store_result`."""
    source, out = layout.root / "results" / spec.same_as, layout.result_dir(spec)
    out.mkdir(parents=True, exist_ok=True)
    (out / "command.txt").write_text(f"(the run stored as {spec.same_as}, copied: the same configuration)\n"
                                     + (source / "command.txt").read_text())
    for name in [n for n in (*post_outputs(spec), *COPIED) if n != "result.json"] + ["result.json"]:
        tmp = out / f".{name}.tmp"
        shutil.copyfile(source / name, tmp)
        os.replace(tmp, out / name)


def copy_stored(specs: Sequence[RunSpec], layout: Layout, states: dict[str, str], echo: Callable[[str], None],
                dry_run: bool = False) -> None:
    """Store a copy of every ``same_as`` run whose source is stored (its state in ``states`` becomes done); a
    copy whose source is not stored yet waits for it (it is never trained itself). A copy left partial (a run
    folder from before it was declared a copy, a half-stored result) is copied over."""
    for spec in specs:
        source = layout.root / "results" / spec.same_as
        if spec.same_as and states[spec.id] in ("missing", "partial") and (source / "result.json").is_file() \
                and all((source / f).is_file() for f in post_outputs(spec)):
            echo(f"[copy] {spec.same_as} -> {spec.id} (the same configuration)")
            if not dry_run:
                store_copy(spec, layout)
                states[spec.id] = "done"


def run_files(spec: RunSpec) -> list[str]:
    """The files ``results/GROUP/RUN`` keeps of a run: its command, :data:`COPIED` and its post-steps' outputs."""
    return ["command.txt", *COPIED, *post_outputs(spec)]


def unpacked_names() -> set[str]:
    """The file names a batch's archive may hold (:func:`run_files` of any run): what ``unpack`` accepts."""
    return {"command.txt", *COPIED, *(step.output for step in POST_STEPS.values())}


def execute(spec: RunSpec, manifest: str, layout: Layout, threads: int | None, device: str | None,
            overrides: Sequence[str] = (), echo: Callable[[str], None] = print, job: str | None = None,
            gpus: GpuPool | None = None, deadline: Deadline | None = None) -> str:
    """Train (or resume) ``spec``, store its results, run its post-steps; returns its new state. A run that
    another live process holds (a second ``reproduce`` of the same manifest) is left to it. ``job``: the
    cluster job this call runs in (:class:`mlm.launch.ClusterTask`), whose own earlier lock is stale. ``gpus``:
    the GPUs the run may take one of; ``deadline``: a batch's end, after which the run neither starts nor goes on."""
    run_dir = layout.run_dir(spec)
    if deadline is not None and deadline.expired.is_set():
        echo(f"[left] {spec.id}: the batch's time is up")
        return run_state(spec, layout, {})
    lock = acquire_lock(run_dir, job)  # held from now on, by this process and then its training process too
    if lock is None:  # checked again here: the state may have changed since the list of runs was made
        echo(f"[skip] {spec.id}: process {running_pid(run_dir, own_job=job)} is training it")
        return "running"
    log = run_dir / "reproduce.log"
    argv = train_command(spec, layout, threads, device, overrides)
    start = time.perf_counter()
    try:
        with gpus.gpu() if gpus is not None else contextlib.nullcontext() as gpu:
            echo(f"[start] {spec.id}" + (f" on GPU {gpu}" if gpu is not None else "") + f"  (log: {log})")
            failure = train_and_store(spec, manifest, layout, threads, argv, log, lock,
                                      {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {}, deadline)
    finally:
        lock.release()
    state = run_state(spec, layout, {})  # {}: no scheduler to ask, this process held the run
    echo(failure or f"[{state}] {spec.id} after {(time.perf_counter() - start) / 60:.1f} min")
    return state


def train_and_store(spec: RunSpec, manifest: str, layout: Layout, threads: int | None, argv: list[str], log: Path,
                    lock: RunLock, env: dict, deadline: Deadline | None) -> str | None:
    """:func:`execute`'s work, its lock held: train the run unless its result is stored, store it, run its
    post-steps. Returns what went wrong, or None."""
    run_dir = layout.run_dir(spec)
    if not (layout.result_dir(spec) / "result.json").is_file():
        rc = run_logged(argv, threads, layout.root, log, lock, env, deadline)
        if rc != 0 or not (run_dir / "result.json").is_file():
            if deadline is not None and deadline.expired.is_set():
                return f"[stopped] {spec.id}: the batch's time ran out"
            return f"[failed] {spec.id}: exit status {rc}, see {log}"
        post = post_command(spec, manifest)
        store_result(spec, layout, shell(argv, threads) + ("\n" + shell(post, threads) if post else ""))
    post = post_command(spec, manifest)
    if post and not all((layout.result_dir(spec) / f).is_file() for f in post_outputs(spec)):
        rc = run_logged(post, threads, layout.root, log, lock, env, deadline)
        if rc != 0:
            return f"[failed] {spec.id}: post-step exit status {rc}, see {log}"
    return None


@dataclass
class Budget:
    """A batch with a time budget (``reproduce --budget-minutes``): its :class:`~mlm.launch.Deadline`, the speeds
    that plan it, and, as it goes, the runs it started with the minute each was expected to end."""

    deadline: Deadline
    speeds: Speeds
    sharing: Sharing = Sharing()
    planned: dict[str, float] = field(default_factory=dict)  # id -> the minute the plan expects it to end
    ended: dict[str, float] = field(default_factory=dict)  # id -> the minute it ended (done, stopped or failed)
    started: float = field(default_factory=time.time)


# -- running a manifest ----------------------------------------------------------------------------
def reproduce(specs: Sequence[RunSpec], manifest: str, layout: Layout, jobs: int = 1, cores: int | None = None,
              device: str | None = None, dry_run: bool = False, echo: Callable[[str], None] = print,
              launcher: str = "jobs", slurm: SlurmOptions = SlurmOptions(), overrides: Sequence[str] = (),
              priority: tuple[Sequence[str], Sequence[str]] = ((), ()), budget: Budget | None = None,
              archive: BatchArchive | None = None) -> dict[str, str]:
    """Start every run of ``specs`` that is neither done, running nor submitted, in the order of ``priority``
    (:func:`manifest_priority`); returns id -> state. ``overrides`` go to every run's command (e.g.
    ``train.precision=bf16``), and so into its ``command.txt``.

    ``launcher`` (:mod:`mlm.launch`): "jobs" trains the runs here, ``jobs`` at a time (spread over the GPUs
    when several are visible); "local" submits them to submitit's local executor, all at once; both return when
    the runs end. "slurm" submits them as one Slurm job array with ``slurm``'s options and returns at once (the
    runs "submitted"). ``budget`` (the "jobs" launcher): start only the runs that fit in it, stop the rest at its
    deadline. ``archive``: every run this call stores goes into it as soon as it is stored.
    """
    states = run_states(specs, layout)
    before = dict(states)
    copy_stored(specs, layout, states, echo, dry_run)
    todo = priority_order([s for s in specs if states[s.id] in ("partial", "missing") and not s.same_as], *priority)
    if launcher == "slurm":
        threads = slurm.cpus_per_job
    else:
        jobs, threads = plan_jobs(jobs if launcher == "jobs" else len(todo), cores or available_cores(),
                                  device or "cpu")
    if budget is not None:
        plan = plan_batch(todo, budget.speeds, budget.deadline.seconds_left(), jobs, overrides, budget.sharing)
        echo(format_plan(plan, budget.deadline.seconds_left() / 60, jobs))
        budget.planned.update({spec.id: end for spec, end in plan.start})
        todo = [spec for spec, _ in plan.start]
    folder = layout.root / "runs" / "submitit"  # submitit's own files: pickled calls, logs
    if dry_run:
        if launcher == "slurm" and todo:
            echo(sbatch_script(len(todo), slurm, folder))
        for s in todo:
            echo(shell(train_command(s, layout, threads, device, overrides), threads))
            post = post_command(s, manifest)
            if post:
                echo(shell(post, threads))
        return states
    if launcher == "jobs":
        echo(f"{len(todo)} of {len(specs)} runs to train, {jobs} at a time, {threads} thread(s) each")
        deadline, gpus = budget.deadline if budget else None, gpu_pool(device)

        def train_and_archive(spec: RunSpec) -> str:
            state = execute(spec, manifest, layout, threads, device, overrides, echo, gpus=gpus, deadline=deadline)
            if budget is not None:
                budget.ended[spec.id] = (time.time() - budget.started) / 60
            if state == "done" and archive is not None:
                archive.add(f"{spec.group}/{spec.name}", run_files(spec))
            return state

        states.update({s.id: state for s, state in zip(todo, launch_here(train_and_archive, [(s,) for s in todo],
                                                                          jobs))})
        copy_stored(specs, layout, states, echo)  # a source that has just finished
    elif todo:  # in a cluster job, each run's messages go to its log (execute's echo: print)
        submitted = submit(execute, [(s, manifest, layout, threads, device, overrides) for s in todo],
                           [layout.run_dir(s) for s in todo], launcher, slurm, folder)
        echo(f"{len(todo)} of {len(specs)} runs submitted ({launcher} job "
             f"{', '.join(sorted({j.job_id.split('_')[0] for j in submitted}))}); submitit's logs in {folder}")
        if launcher == "local":
            for job in submitted:
                job.result()  # raises if the job failed
    if launcher != "jobs":
        states = run_states(specs, layout)
    if launcher == "local":
        copy_stored(specs, layout, states, echo)  # a source that has just finished
    for spec in specs:  # copies, and runs a cluster job stored
        if archive is not None and states[spec.id] == "done" and before[spec.id] != "done":
            archive.add(f"{spec.group}/{spec.name}", run_files(spec))
    return states


def reproduce_stages(load: Callable[[], list[RunSpec]], manifest: str, layout: Layout,
                     echo: Callable[[str], None] = print, **options) -> tuple[list[RunSpec], dict[str, str]]:
    """:func:`reproduce` the runs that ``load()`` lists, then list them again and go on while the list grows:
    a staged manifest (a grid whose choice the later runs share) lists its later runs only once the grid is
    stored, and the same call trains them. Returns the last list and its states. A dry run, or a Slurm
    submission (which returns before the runs end), does one stage: run the command again when it has ended;
    a batch whose time is up ends too."""
    specs, seen = load(), set()
    budget = options.get("budget")
    while True:
        states = reproduce(specs, manifest, layout, echo=echo, **options)
        if options.get("dry_run") or options.get("launcher", "jobs") == "slurm" or (
                budget is not None and budget.deadline.expired.is_set()):
            return specs, states
        seen |= {s.id for s in specs}
        more = load()
        new = [s.id for s in more if s.id not in seen]
        if not new:
            return specs, states
        echo(f"[next] the stored runs list {len(new)} more run(s) of {manifest}: {', '.join(new)}")
        specs = more


def estimated_hours(specs: Sequence[RunSpec]) -> float:
    """The CPU hours the runs' estimates add up to (a copy of another run trains nothing)."""
    return sum(s.hours or 0 for s in specs if not s.same_as)


def format_list(specs: Sequence[RunSpec], layout: Layout, speeds: Speeds | None = None) -> str:
    """One line per run: state, id, hours, preset and overrides (a running or partial run adds the epochs it
    has done); then the runs per state and the totals: the
    CPU hours the manifest estimates, its training tokens and, given ``speeds`` (training tokens per second
    on a GPU, :func:`mlm.budget.read_speeds`), the GPU hours of training, tokens / speed."""
    states = run_states(specs, layout)
    lines, counts, gpu_hours = [], {s: 0 for s in STATES}, {}
    for spec in specs:
        counts[states[spec.id]] += 1
        speed = speeds.of(spec) if speeds is not None else None
        if speed and spec.tokens:
            gpu_hours[spec.id] = 0.0 if spec.same_as else spec.tokens / speed / 3600
        hours = spec.hours if spec.hours is not None else gpu_hours.get(spec.id)
        hours = "   copy" if spec.same_as else f"{hours:5.1f} h" if hours is not None else "       "
        progress = epochs_done(spec, layout) if states[spec.id] in ("running", "partial") else ""
        lines.append(f"{states[spec.id]:<9} {spec.id:<48} {hours}  {spec.preset} "
                     f"{' '.join(spec.all_overrides())}".rstrip() + (f"  (= {spec.same_as})" if spec.same_as else "")
                     + (f"  [{progress}]" if progress else ""))
    totals = [", ".join(f"{n} {k}" for k, n in counts.items())]
    if any(s.hours for s in specs):
        totals.append(f"estimated {estimated_hours(specs):.0f} CPU hours in all")
    if any(s.tokens for s in specs):
        totals.append(f"{sum(s.tokens or 0 for s in specs if not s.same_as) / 1e9:.2f}G training tokens")
    if speeds is not None:
        unmeasured = sum(1 for s in specs if s.id not in gpu_hours)
        totals.append(f"{sum(gpu_hours.values()):.1f} GPU hours of training at the measured speeds"
                      + (f" ({unmeasured} runs without a speed or tokens)" if unmeasured else ""))
    lines.append("; ".join(totals))
    return "\n".join(lines)


# -- the command line ------------------------------------------------------------------------------
def open_budget(args) -> Budget | None:
    """The :class:`Budget` of ``--budget-minutes`` (its deadline counted from now), or None without one."""
    if not args.budget_minutes:
        return None
    if args.launcher != "jobs" or args.list or args.post_only:
        raise ConfigError("--budget-minutes plans a batch that reproduce trains here (--launcher jobs)")
    if not args.speeds:
        raise ConfigError("--budget-minutes needs --speeds JSON, the measured speeds that say what fits (e.g. "
                          "results/bench-h200.json, or python -m mlm bench --manifest NAME --device cuda --out JSON)")
    from mlm.utils import choose_device  # (torch: imported only for a batch)

    try:  # only rows measured on the kind of device the batch trains on
        speeds = read_speeds(*args.speeds, device=choose_device(args.device or "auto").type)
    except ValueError as err:
        raise ConfigError(str(err)) from err
    return Budget(Deadline(time.time() + args.budget_minutes * 60), speeds)


def format_batch(budget: Budget, layout: Layout, specs: Sequence[RunSpec], states: dict[str, str],
                 minutes: float) -> str:
    """How a budgeted batch went: the minute each started run ended beside the one the plan expected (and, for
    a finished run, its training's own wall time), and the count of runs left for a longer allocation."""
    lines = []
    for spec in [s for s in specs if s.id in budget.planned]:
        result = layout.result_dir(spec) / "result.json"
        took = json.loads(result.read_text())["wall_seconds"] / 60 if states[spec.id] == "done" else None
        ended = budget.ended.get(spec.id)
        lines.append(f"  [{states[spec.id]}] {spec.id}: " + (f"ended at {ended:.1f} min, " if ended else "")
                     + f"planned {budget.planned[spec.id]:.1f}" + (f"; {took:.1f} min in train()" if took else ""))
    done = sum(states[i] == "done" for i in budget.planned)
    left = sum(state != "done" for i, state in states.items() if i not in budget.planned)
    return "\n".join([f"batch: {done} of {len(budget.planned)} started runs done in {minutes:.1f} min; "
                       f"{left} run(s) of the manifest left for a longer allocation", *lines])


def main(args) -> int:
    """``python -m mlm reproduce`` (arguments parsed in :mod:`mlm.cli`)."""
    start = time.perf_counter()
    layout = Layout(Path(args.root).resolve() if args.launcher != "jobs" else Path(args.root))
    load = lambda: select(load_manifest(args.manifest, layout.root / "results"), args.only)  # noqa: E731
    specs = load()
    if not specs:
        print(f"no run of {args.manifest} matches {args.only}", file=sys.stderr)
        return 2
    for spec in specs:  # every config must be valid before anything starts
        spec.config(args.overrides)
    if args.list:
        print(format_list(specs, layout, read_speeds(*args.speeds, device="cuda") if args.speeds else None))
        return 0
    if args.post_only:
        for spec in specs:
            if (layout.run_dir(spec) / "result.json").is_file() and spec.post:
                run_post_steps(spec.post, layout.run_dir(spec), layout.result_dir(spec), args.device)
        return 0
    budget = open_budget(args)
    archive = BatchArchive(Path(args.archive), layout.root / "results") if args.archive and not args.dry_run else None
    slurm = SlurmOptions(args.partition, args.account, args.time, args.gpus_per_job, args.cpus_per_job,
                         args.parallelism)
    try:
        specs, states = reproduce_stages(load, args.manifest, layout, jobs=args.jobs, cores=args.cores,
                                         device=args.device, dry_run=args.dry_run, launcher=args.launcher,
                                         slurm=slurm, overrides=args.overrides,
                                         priority=manifest_priority(args.manifest), budget=budget, archive=archive)
    finally:
        if budget is not None:
            budget.deadline.cancel()
    if args.dry_run or args.launcher == "slurm":  # the jobs run on: --list follows them
        return 0
    if archive is not None:
        print(f"archive: {archive.path} ({len(archive.folders)} run(s))")
    if budget is not None:
        print(format_batch(budget, layout, specs, states, (time.perf_counter() - start) / 60))
        return 0 if all(states[i] == "done" for i in budget.planned) else 1
    not_done = [i for i, s in states.items() if s != "done"]
    print(f"{len(specs) - len(not_done)} of {len(specs)} runs done" +
          (f"; not done: {', '.join(not_done)}" if not_done else ""))
    return 0 if not not_done else 1
