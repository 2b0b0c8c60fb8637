"""``python -m mlm reproduce``: train the named runs of a manifest, resume the interrupted ones.

A manifest is a list of :class:`RunSpec`: a group, a run name, a preset with its size and
``--set`` overrides, and a seed. Each run trains with exactly the command that
:func:`train_command` prints (``python -m mlm train PRESET --size ... --set ... --run-dir
runs/GROUP/RUN``), in a subprocess, so a stored result always says how to repeat it. When a run
finishes, its ``config.json``, ``metrics.jsonl`` and ``result.json`` (never the checkpoints) are
copied to ``results/GROUP/RUN/`` with ``command.txt``; optional post-steps
(:mod:`mlm.analysis.post_steps`: attention analyses, MSR sentence completion) then write their JSON
file beside them.

    python -m mlm reproduce cpu --list                  # done / running / partial / missing
    python -m mlm reproduce cpu --jobs 2                # train what is missing, two at a time
    python -m mlm reproduce full --device cuda --jobs 4 --only 'full-kong2019*' --dry-run

Manifests are Python modules ``mlm/manifests/NAME.py`` holding ``RUNS``, or JSON files (see
:func:`load_manifest`). The training engine checkpoints after every epoch, so a run stopped for
any reason continues from its last epoch when ``reproduce`` runs again.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from mlm.analysis.post_steps import POST_STEPS, run_post_steps
from mlm.configs import Config, ConfigError, get_preset

COPIED = ("config.json", "metrics.jsonl", "result.json")  # what results/ keeps of a run folder
LOCK = "reproduce.lock"
STATES = ("done", "running", "partial", "missing")


# -- the manifest ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One named run: ``python -m mlm train PRESET --size SIZE --set OVERRIDE ... --set train.seed=SEED``.

    ``seed`` None keeps the preset's seed. ``post`` names post-steps (:data:`POST_STEPS`) run on the
    finished run. ``hours`` is the expected time on one CPU thread (None: not estimated, e.g. GPU
    runs), ``tokens`` the training tokens of the expected schedule (``epochs`` x tokens per epoch;
    ``results/scripts/estimate_hours.py`` measures both).
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


def runs(group: str, name: str, preset: str, size: str = "full", overrides: Iterable[str] = (),
         seeds: Sequence[int] | None = None, **fields) -> list[RunSpec]:
    """The runs of one setting: a single run ``name`` (the preset's seed), or ``name/seedK`` per seed."""
    overrides = tuple(overrides)
    if seeds is None:
        return [RunSpec(group, name, preset, size, overrides, **fields)]
    return [RunSpec(group, f"{name}/seed{s}", preset, size, overrides, seed=s, **fields) for s in seeds]


def load_manifest(name: str | Path) -> list[RunSpec]:
    """The runs of manifest ``name``: a module ``mlm.manifests.NAME`` (its ``RUNS`` list) or a JSON file.

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
        specs = list(module.RUNS)
    ids = [s.id for s in specs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ConfigError(f"manifest {name}: run names used twice: {', '.join(duplicates)}")
    unknown = sorted({p for s in specs for p in s.post if p not in POST_STEPS})
    if unknown:
        raise ConfigError(f"manifest {name}: unknown post-steps {unknown}; known: {', '.join(POST_STEPS)}")
    return specs


def bench_specs(name: str) -> list[RunSpec]:
    """The runs ``python -m mlm bench --manifest NAME`` times: the manifest module's ``BENCH`` list if it
    has one, else the first seed of every setting."""
    specs = load_manifest(name)  # imports a module manifest, or says clearly what is wrong with the name
    module = sys.modules.get(f"mlm.manifests.{name}")
    if hasattr(module, "BENCH"):
        return list(module.BENCH)
    first = {}
    for spec in specs:
        first.setdefault((spec.group, spec.base), spec)
    return list(first.values())


def manifest_names() -> list[str]:
    """The manifests shipped in ``mlm/manifests/``."""
    folder = Path(__file__).parent / "manifests"
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def select(specs: Sequence[RunSpec], patterns: Sequence[str] | None) -> list[RunSpec]:
    """The runs whose id (``group/run[/seedK]``) matches one of the shell patterns (all if none)."""
    if not patterns:
        return list(specs)
    return [s for s in specs if any(fnmatch.fnmatch(s.id, p) or fnmatch.fnmatch(s.id, p + "/*") for p in patterns)]


# -- where a run lives, and its state ------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """``root/runs/GROUP/RUN`` holds the training run (checkpoints), ``root/results/GROUP/RUN`` what is kept."""

    root: Path = Path(".")

    def run_dir(self, spec: RunSpec) -> Path:
        return self.root / "runs" / spec.group / spec.name

    def result_dir(self, spec: RunSpec) -> Path:
        return self.root / "results" / spec.group / spec.name


def running_pid(run_dir: Path) -> int | None:
    """The pid of the live process that holds ``run_dir``'s lock file, or None (no lock, or a stale one)."""
    try:
        lock = json.loads((run_dir / LOCK).read_text())
    except (OSError, ValueError):
        return None
    if lock.get("host") != socket.gethostname():
        return lock.get("pid")  # another machine's process: cannot be checked, so trust the lock
    try:
        os.kill(int(lock["pid"]), 0)
    except (ProcessLookupError, KeyError, ValueError, TypeError):
        return None
    except PermissionError:  # alive, but another user's
        pass
    return int(lock["pid"])


def post_outputs(spec: RunSpec) -> list[str]:
    return [POST_STEPS[p].output for p in spec.post]


def run_state(spec: RunSpec, layout: Layout) -> str:
    """``done`` (results stored, post-steps included), ``running`` (a live process holds the lock),
    ``partial`` (a checkpoint or a finished run waiting for its copy or post-steps) or ``missing``."""
    out, run_dir = layout.result_dir(spec), layout.run_dir(spec)
    if (out / "result.json").is_file() and all((out / f).is_file() for f in post_outputs(spec)):
        return "done"
    if running_pid(run_dir) is not None:
        return "running"
    if (run_dir / "checkpoint.pt").is_file() or (out / "result.json").is_file():
        return "partial"
    return "missing"


# -- commands and threads -------------------------------------------------------------------------
def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def plan_jobs(jobs: int, cores: int, device: str = "cpu") -> tuple[int, int]:
    """``(parallel runs, threads per run)``. On a CPU every run gets ``cores // jobs`` threads (at least 1)
    and no more runs than cores start, so runs x threads never exceeds ``cores``; on a GPU the runs share
    the device and split the CPU cores between them the same way."""
    jobs, cores = max(1, int(jobs)), max(1, int(cores))
    if not str(device).startswith("cuda"):
        jobs = min(jobs, cores)
    return jobs, max(1, cores // jobs)


def train_command(spec: RunSpec, layout: Layout | None = None, threads: int | None = None,
                  device: str | None = None) -> list[str]:
    """``python -m mlm train ...`` for ``spec`` (argv without the interpreter), as run and as stored."""
    layout = layout or Layout()
    argv = ["python", "-m", "mlm", "train", spec.preset, "--size", spec.size]
    extra = [*([f"train.threads={threads}"] if threads else [])]
    for item in [*spec.all_overrides(), *extra]:
        argv += ["--set", item]
    if device:
        argv += ["--device", device]
    return argv + ["--run-dir", str(layout.run_dir(spec).relative_to(layout.root)), "--no-progress"]


def post_command(spec: RunSpec, manifest: str) -> list[str] | None:
    if not spec.post:
        return None
    return ["python", "-m", "mlm", "reproduce", manifest, "--only", spec.id, "--post-only"]


def shell(argv: Sequence[str], threads: int | None = None) -> str:
    prefix = f"OMP_NUM_THREADS={threads} " if threads else ""
    return prefix + " ".join(shlex.quote(a) for a in argv)


# -- running -----------------------------------------------------------------------------------
def _write_lock(run_dir: Path, pid: int) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LOCK).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": time.time()}))


def _subprocess(argv: list[str], threads: int | None, cwd: Path, log: Path, run_dir: Path) -> int:
    """Run ``python -m mlm ...`` (``argv`` as printed) with this interpreter; output appended to ``log``."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    with open(log, "a") as out:
        out.write(f"\n$ {shell(argv, threads)}\n")
        out.flush()
        proc = subprocess.Popen([sys.executable, *argv[1:]], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _write_lock(run_dir, proc.pid)
        return proc.wait()


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


def execute(spec: RunSpec, manifest: str, layout: Layout, threads: int | None, device: str | None,
            echo: Callable[[str], None] = print) -> str:
    """Train (or resume) ``spec``, store its results, run its post-steps; returns its new state. A run that
    another live process holds (a second ``reproduce`` of the same manifest) is left to it."""
    run_dir = layout.run_dir(spec)
    holder = running_pid(run_dir)
    if holder is not None:  # checked again here: the state may have changed since the list of runs was made
        echo(f"[skip] {spec.id}: process {holder} is training it")
        return "running"
    _write_lock(run_dir, os.getpid())  # held from now on: by this process, then by its training process
    log = run_dir / "reproduce.log"
    argv = train_command(spec, layout, threads, device)
    start = time.perf_counter()
    echo(f"[start] {spec.id}  (log: {log})")
    try:
        if not (layout.result_dir(spec) / "result.json").is_file():
            rc = _subprocess(argv, threads, layout.root, log, run_dir)
            finished = rc == 0 and (run_dir / "result.json").is_file()
            if not finished:
                echo(f"[failed] {spec.id}: exit status {rc}, see {log}")
                return run_state(spec, layout)
            post = post_command(spec, manifest)
            store_result(spec, layout, shell(argv, threads) + ("\n" + shell(post, threads) if post else ""))
        post = post_command(spec, manifest)
        if post and run_state(spec, layout) != "done":
            rc = _subprocess(post, threads, layout.root, log, run_dir)
            if rc != 0:
                echo(f"[failed] {spec.id}: post-step exit status {rc}, see {log}")
                return run_state(spec, layout)
    finally:
        (run_dir / LOCK).unlink(missing_ok=True)
    state = run_state(spec, layout)
    echo(f"[{state}] {spec.id} after {(time.perf_counter() - start) / 60:.1f} min")
    return state


def reproduce(specs: Sequence[RunSpec], manifest: str, layout: Layout, jobs: int = 1, cores: int | None = None,
              device: str | None = None, dry_run: bool = False, echo: Callable[[str], None] = print) -> dict[str, str]:
    """Train every run of ``specs`` that is not done or running, ``jobs`` at a time; returns id -> state."""
    jobs, threads = plan_jobs(jobs, cores or available_cores(), device or "cpu")
    todo = [s for s in specs if run_state(s, layout) in ("partial", "missing")]
    states = {s.id: run_state(s, layout) for s in specs}
    if dry_run:
        for s in todo:
            echo(shell(train_command(s, layout, threads, device), threads))
            post = post_command(s, manifest)
            if post:
                echo(shell(post, threads))
        return states
    echo(f"{len(todo)} of {len(specs)} runs to train, {jobs} at a time, {threads} thread(s) each")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for spec, state in zip(todo, pool.map(lambda s: execute(s, manifest, layout, threads, device, echo), todo)):
            states[spec.id] = state
    return states


def format_list(specs: Sequence[RunSpec], layout: Layout) -> str:
    """One line per run: state, id, estimated hours, preset and overrides; then the counts per state."""
    lines, counts = [], {s: 0 for s in STATES}
    for spec in specs:
        state = run_state(spec, layout)
        counts[state] += 1
        hours = f"{spec.hours:5.1f} h" if spec.hours is not None else "      "
        lines.append(f"{state:<8} {spec.id:<48} {hours}  {spec.preset} {' '.join(spec.all_overrides())}".rstrip())
    total = sum(s.hours or 0 for s in specs)
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()) + f"; estimated {total:.0f} CPU hours in all")
    return "\n".join(lines)


# -- the command line ------------------------------------------------------------------------------
def main(args) -> int:
    """``python -m mlm reproduce`` (arguments parsed in :mod:`mlm.cli`)."""
    specs = select(load_manifest(args.manifest), args.only)
    layout = Layout(Path(args.root))
    if not specs:
        print(f"no run of {args.manifest} matches {args.only}", file=sys.stderr)
        return 2
    for spec in specs:  # every config must be valid before anything starts
        spec.config()
    if args.list:
        print(format_list(specs, layout))
        return 0
    if args.post_only:
        for spec in specs:
            if (layout.run_dir(spec) / "result.json").is_file() and spec.post:
                run_post_steps(spec.post, layout.run_dir(spec), layout.result_dir(spec), args.device)
        return 0
    states = reproduce(specs, args.manifest, layout, jobs=args.jobs, cores=args.cores, device=args.device,
                       dry_run=args.dry_run)
    if args.dry_run:
        return 0
    not_done = [i for i, s in states.items() if s != "done"]
    print(f"{len(specs) - len(not_done)} of {len(specs)} runs done" +
          (f"; not done: {', '.join(not_done)}" if not_done else ""))
    return 0 if not not_done else 1
