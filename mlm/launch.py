"""How ``python -m mlm reproduce`` launches the runs of a manifest.

Each run is one call of :func:`mlm.reproduce.execute`: it trains the run with ``python -m mlm train ...
--run-dir runs/GROUP/RUN`` in a child process (which resumes from the run's last checkpoint whenever it
starts again), copies the results and runs the post-steps. Three launchers make those calls:

* ``jobs`` (the default, :func:`launch_here`): threads of this process, ``--jobs`` runs at a time. On a CPU
  each run gets cores / jobs threads and no more runs start than there are cores; on a GPU the runs share
  the device, since one of these small models rarely fills it. Nothing more is needed on one machine.
* ``slurm`` (:func:`submit`): one Slurm job array through `submitit <https://github.com/facebookincubator/submitit>`_,
  a task per run with its own GPU(s) and cores (:class:`SlurmOptions`). When a task nears its time limit or is
  preempted, submitit requeues it (:class:`ClusterTask`), and the run resumes from its last epoch.
* ``local``: submitit's local executor, the same tasks as processes of this machine (what the tests run).

A run folder holds a lock while a process trains the run (:func:`write_lock`), and ``job.json`` once the run
was submitted to a cluster (:func:`cluster_states` asks the scheduler about it): ``reproduce`` leaves such
runs alone and ``--list`` shows them as running or submitted.
"""

from __future__ import annotations

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
from typing import Callable, Sequence

from mlm.configs import ConfigError

LOCK = "reproduce.lock"  # in a run folder: which process (and cluster job) trains the run
JOB = "job.json"  # in a run folder: the cluster job it was submitted as
LAUNCHERS = ("jobs", "local", "slurm")
REQUEUES = 20  # times a cluster task may reach its time limit and be requeued (preemptions do not count)
# Slurm states of a job that is queued or running (sacct's words; submitit says UNKNOWN before sacct knows a
# job, and counts PREEMPTED as not done: a preempted job is requeued)
ACTIVE = {"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING", "RESIZING",
          "SUSPENDED", "PREEMPTED", "UNKNOWN"}


# -- threads, on this machine --------------------------------------------------------------------
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


def shell(argv: Sequence[str], threads: int | None = None) -> str:
    """``argv`` as one shell line, with the thread count it runs with."""
    prefix = f"OMP_NUM_THREADS={threads} " if threads else ""
    return prefix + " ".join(shlex.quote(a) for a in argv)


# -- who holds a run ----------------------------------------------------------------------------
def write_lock(run_dir: Path, pid: int, job: str | None = None) -> None:
    """Mark ``run_dir`` as held by process ``pid`` of this host (in cluster ``job``, if any)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / LOCK).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": time.time(),
                                            "job": job}))


def running_pid(run_dir: Path, own_job: str | None = None) -> int | None:
    """The pid of the live process that holds ``run_dir``'s lock, or None (no lock, or a stale one). A lock
    of ``own_job`` is stale: an earlier attempt of the same cluster job, requeued since."""
    try:
        lock = json.loads((run_dir / LOCK).read_text())
    except (OSError, ValueError):
        return None
    if own_job is not None and lock.get("job") == own_job:
        return None
    if lock.get("host") != socket.gethostname():
        return lock.get("pid")  # another machine's process: cannot be checked, so trust the lock
    return lock["pid"] if _alive(lock.get("pid")) else None


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:  # alive, but another user's
        pass
    return True


def run_logged(argv: Sequence[str], threads: int | None, cwd: Path, log: Path, run_dir: Path,
               job: str | None = None) -> int:
    """Run ``python -m mlm ...`` (``argv`` as printed) with this interpreter, holding ``run_dir``'s lock;
    output appended to ``log``. Returns the exit status. Interrupted (a cluster task being requeued), it stops
    the child too: the run resumes from its last checkpoint, never beside a second copy of itself."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    with open(log, "a") as out:
        out.write(f"\n$ {shell(argv, threads)}\n")
        out.flush()
        proc = subprocess.Popen([sys.executable, *argv[1:]], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        write_lock(run_dir, proc.pid, job)
        try:
            return proc.wait()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()


# -- the launchers ---------------------------------------------------------------------------------
def launch_here(fn: Callable, calls: Sequence[tuple], jobs: int) -> list:
    """The ``jobs`` launcher: ``fn(*args)`` for every ``args`` of ``calls`` in threads of this process,
    ``jobs`` at a time (each waits for its own child process); returns their results in order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda args: fn(*args), calls))


@dataclass(frozen=True)
class SlurmOptions:
    """What each task of the Slurm job array asks for (``reproduce --launcher slurm`` options)."""

    partition: str | None = None  # --partition (None: the cluster's default)
    account: str | None = None  # --account, where the cluster wants one
    time: int = 240  # --time: minutes per job; a longer run is requeued and resumes (at most REQUEUES times)
    gpus_per_job: int = 1  # --gpus-per-job: one GPU is plenty for every model of the book
    cpus_per_job: int = 8  # --cpus-per-job: cores, and the run's torch threads
    parallelism: int = 16  # --parallelism: tasks of the array running at once

    def sbatch(self) -> dict:
        """The parameters of the sbatch file, under submitit's names (unset ones left out)."""
        params = {"job_name": "mlm-reproduce", "partition": self.partition, "account": self.account,
                  "time": self.time, "gpus_per_node": self.gpus_per_job or None, "cpus_per_task": self.cpus_per_job,
                  "array_parallelism": self.parallelism}
        return {k: v for k, v in params.items() if v is not None}


class ClusterTask:
    """One run as the task of a cluster job: ``fn(*args, job=this job's id)``.

    When the job is preempted or nears its time limit, submitit calls :meth:`checkpoint` (it looks for the
    method) and queues the same call again; ``python -m mlm train`` then resumes from the run's last epoch,
    so nothing else needs saving. Submitit is imported only inside the job.
    """

    def __init__(self, fn: Callable):
        self.fn = fn

    def __call__(self, *args):
        import submitit

        return self.fn(*args, job=submitit.JobEnvironment().job_id)

    def checkpoint(self, *args):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args)


def executor(launcher: str, folder: Path, options: SlurmOptions):
    """A submitit executor for ``launcher`` ("slurm" or "local") writing its files under ``folder``."""
    import submitit

    if launcher == "slurm" and shutil.which("srun") is None:
        raise ConfigError("--launcher slurm submits from a machine of a Slurm cluster (no srun here); "
                          "--dry-run prints what it would submit")
    ex = submitit.AutoExecutor(folder, cluster=launcher, **{f"{launcher}_max_num_timeout": REQUEUES})
    if launcher == "slurm":
        ex.update_parameters(**{f"slurm_{k}": v for k, v in options.sbatch().items()})
    else:
        ex.update_parameters(timeout_min=options.time, gpus_per_node=options.gpus_per_job,
                             cpus_per_task=options.cpus_per_job)
    return ex


def submit(fn: Callable, calls: Sequence[tuple], run_dirs: Sequence[Path], launcher: str, options: SlurmOptions,
           folder: Path) -> list:
    """Submit ``fn(*args)`` for every ``args`` of ``calls`` as one job array (a job each, locally), each
    wrapped in a :class:`ClusterTask`; writes ``job.json`` into each run folder. Returns submitit's jobs."""
    ex = executor(launcher, folder, options)
    task = ClusterTask(fn)
    with ex.batch():
        jobs = [ex.submit(task, *args) for args in calls]
    for run_dir, job in zip(run_dirs, jobs):
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / JOB).write_text(json.dumps({"cluster": launcher, "job": job.job_id, "folder": str(folder),
                                               "host": socket.gethostname(), "submitted": time.time()}))
    return jobs


def sbatch_script(count: int, options: SlurmOptions, folder: Path) -> str:
    """The sbatch file ``--launcher slurm`` submits for ``count`` runs: what ``--dry-run`` prints (made by
    submitit's own writer, so the two cannot differ)."""
    from submitit.slurm.slurm import _make_sbatch_string

    command = f"{shlex.quote(sys.executable)} -u -m submitit.core._submit {shlex.quote(str(folder))}"
    return _make_sbatch_string(command=command, folder=folder, map_count=count, **options.sbatch())


def cluster_states(run_dirs: Sequence[Path]) -> dict[Path, str]:
    """The scheduler's word on each run folder that holds a ``job.json``: "RUNNING", "PENDING", ... (Slurm's
    states, from one ``sacct`` for all runs), or for local jobs "RUNNING" while the job's process lives."""
    records = {d: json.loads((d / JOB).read_text()) for d in run_dirs if (d / JOB).is_file()}
    slurm = {d: r for d, r in records.items() if r["cluster"] == "slurm"}
    if slurm:
        import submitit

        jobs = {d: submitit.SlurmJob(r["folder"], r["job"]) for d, r in slurm.items()}  # all registered first,
        states = {d: job.state.split()[0] for d, job in jobs.items()}  # so one sacct call answers for all
    else:
        states = {}
    for d, r in records.items():
        if r["cluster"] == "local":
            local = r["host"] != socket.gethostname() or _alive(r["job"])
            states[d] = "RUNNING" if local else "FINISHED"
    return states
