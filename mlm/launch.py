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

A run folder holds a lock while a process trains the run (:func:`acquire_lock`: created exclusively, with a
heartbeat; a stale one is taken over), and ``job.json`` once the run was submitted to a cluster
(:func:`cluster_states` asks the scheduler about it): ``reproduce`` leaves such runs alone and ``--list``
shows them as running or submitted. With several GPUs visible, ``--jobs`` spreads its runs over them
(:class:`GpuPool`); a :class:`Deadline` ends a batch that has a time budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
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
HEARTBEAT_SECONDS = 30.0  # how often a process refreshes the locks it holds
STALE_SECONDS = 600.0  # a lock of another host not refreshed for this long is stale: its holder is gone
YOUNG_SECONDS = 10.0  # a lock file without its contents yet (being written) is held for this long


class RunLock:
    """``run_dir``'s lock, held by this process: ``reproduce.lock`` created exclusively (``O_EXCL``), naming the
    host, this process, its training process (``child``, once started), the cluster job, and a heartbeat that a
    thread of this process refreshes every :data:`HEARTBEAT_SECONDS` until :meth:`release`."""

    def __init__(self, path: Path, job: str | None):
        self.path = path
        self.record = {"host": socket.gethostname(), "pid": os.getpid(), "child": None, "job": job,
                       "started": time.time(), "heartbeat": time.time(), "token": os.urandom(8).hex()}
        self._stop, self._mutex = threading.Event(), threading.Lock()
        threading.Thread(target=self._beat, daemon=True).start()

    def _write(self) -> None:
        """Rewrite the lock file with the record, if it is still this lock (called holding ``_mutex``)."""
        if self._stop.is_set() or not self.held():
            return
        tmp = self.path.with_name(f".{LOCK}.{self.record['token']}")
        tmp.write_text(json.dumps(self.record))
        os.replace(tmp, self.path)  # readers see the old record or the new one, never half of one

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with self._mutex:
                self.record["heartbeat"] = time.time()
                self._write()

    def held(self) -> bool:
        """Whether the lock file is still this one (not taken over as stale, not removed)."""
        try:
            return json.loads(self.path.read_text()).get("token") == self.record["token"]
        except (OSError, ValueError):
            return False

    def set_child(self, pid: int) -> None:
        """Name the training process this process started: the lock stays held while either lives."""
        with self._mutex:
            self.record["child"] = pid
            self._write()

    def release(self) -> None:
        """Remove the lock file if it is still this lock; the heartbeat stops."""
        with self._mutex:
            self._stop.set()
            if self.held():
                self.path.unlink(missing_ok=True)


def acquire_lock(run_dir: Path, job: str | None = None) -> RunLock | None:
    """Take ``run_dir``'s lock for this process (in cluster ``job``, if any), or None if a live process holds it.
    The lock file is created exclusively, so two processes never both take it; a stale lock
    (:func:`lock_holder`) is removed only under a second, exclusive takeover file and only if it is still the
    one judged stale, so that a lock another process has just taken is never removed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            found = _read_lock(path)
            if found is not None and (_live(*found, own_job=job) is not None or not _remove_stale(path, found[0])):
                return None
            continue  # removed meanwhile, or stale and removed: create it again
        lock = RunLock(path, job)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(lock.record))
        return lock
    return None


TAKEOVER_SECONDS = 60.0  # a takeover file older than this was left by a process that died while taking over


def _remove_stale(path: Path, judged: str) -> bool:
    """Remove the stale lock at ``path`` whose text was ``judged`` stale, holding the exclusive takeover file
    beside it; False if another process is taking it over, or if the lock is another one now."""
    takeover = path.with_name(f".{LOCK}.takeover")
    try:
        fd = os.open(takeover, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        try:
            if time.time() - takeover.stat().st_mtime > TAKEOVER_SECONDS:
                takeover.unlink()  # left behind by a dead process: the next attempt takes over
        except OSError:
            pass
        return False
    os.close(fd)
    try:
        try:
            if path.read_text() != judged:
                return False  # taken over and re-created meanwhile: a live lock now
        except FileNotFoundError:
            return True  # removed meanwhile: try to create it again
        path.unlink()
        return True
    finally:
        takeover.unlink()


def _read_lock(path: Path) -> tuple[str, float] | None:
    """The lock file's text and age in seconds, or None if there is none."""
    try:
        return path.read_text(), time.time() - path.stat().st_mtime
    except OSError:
        return None


def _live(text: str, age: float, own_job: str | None = None) -> dict | None:
    """The record of a lock whose file holds ``text`` if it is live, None if it is stale (:func:`lock_holder`)."""
    try:
        lock = json.loads(text)
    except ValueError:
        return {"pid": None} if age < YOUNG_SECONDS else None
    if own_job is not None and lock.get("job") == own_job:
        return None
    if lock.get("host") == socket.gethostname():
        return lock if _alive(lock.get("pid")) or _alive(lock.get("child")) else None
    heartbeat = lock.get("heartbeat", lock.get("started", 0))
    return lock if time.time() - heartbeat < STALE_SECONDS else None


def lock_holder(run_dir: Path, own_job: str | None = None) -> dict | None:
    """The record of the live lock of ``run_dir``, or None: no lock, or a stale one. Stale: a lock of this host
    whose process and training process are both dead; of another host, whose heartbeat is older than
    :data:`STALE_SECONDS` (a task killed hard, or its node lost); of ``own_job`` (an earlier attempt of the same
    cluster job, requeued since). A lock still being written is live for :data:`YOUNG_SECONDS`."""
    found = _read_lock(run_dir / LOCK)
    return None if found is None else _live(*found, own_job=own_job)


def running_pid(run_dir: Path, own_job: str | None = None) -> int | None:
    """The pid of the process that holds ``run_dir``'s live lock (:func:`lock_holder`), or None."""
    lock = lock_holder(run_dir, own_job)
    return None if lock is None else lock.get("pid") or 0


def _alive(pid) -> bool:
    if pid is None:
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:  # alive, but another user's
        pass
    return True


# -- which GPU runs a run ----------------------------------------------------------------------------
def visible_gpus() -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` names them, else CUDA's indices."""
    names = os.environ.get("CUDA_VISIBLE_DEVICES")
    if names is not None:
        return [n.strip() for n in names.split(",") if n.strip()]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


class GpuPool:
    """Spreads the runs of ``--jobs N`` over several GPUs: each run gets, as its ``CUDA_VISIBLE_DEVICES``, the GPU
    with the fewest runs now, ties going round-robin (so N runs start spread evenly)."""

    def __init__(self, gpus: Sequence[str]):
        self.gpus, self.runs, self.next = list(gpus), [0] * len(gpus), 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def gpu(self):
        with self._lock:
            order = [(self.next + k) % len(self.gpus) for k in range(len(self.gpus))]
            index = min(order, key=lambda i: self.runs[i])
            self.runs[index] += 1
            self.next = index + 1
        try:
            yield self.gpus[index]
        finally:
            with self._lock:
                self.runs[index] -= 1


def gpu_pool(device: str | None) -> GpuPool | None:
    """A :class:`GpuPool` when the runs go to CUDA (``cuda``, or ``auto``/None where CUDA is available) without
    naming one GPU, and more than one is visible; else None (every run sees what this process sees)."""
    if device not in (None, "auto", "cuda"):
        return None
    if device != "cuda":
        import torch

        if not torch.cuda.is_available():
            return None
    gpus = visible_gpus()
    return GpuPool(gpus) if len(gpus) > 1 else None


# -- running a command, within a deadline ----------------------------------------------------------
class Deadline:
    """The end of ``reproduce --budget-minutes``: after it no run starts, and :meth:`expire` (a timer's) stops
    the training processes still running, so that the batch ends in time with what has finished."""

    def __init__(self, at: float):
        self.at = at  # time.time() at which it expires
        self.expired = threading.Event()
        self._children: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, at - time.time()), self.expire)
        self._timer.daemon = True
        self._timer.start()

    def seconds_left(self) -> float:
        return self.at - time.time()

    def watch(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._children.add(proc)
        if self.expired.is_set():
            proc.terminate()

    def forget(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._children.discard(proc)

    def expire(self) -> None:
        self.expired.set()
        with self._lock:
            for proc in self._children:
                proc.terminate()

    def cancel(self) -> None:
        self._timer.cancel()


def run_logged(argv: Sequence[str], threads: int | None, cwd: Path, log: Path, lock: RunLock | None = None,
               env: dict | None = None, deadline: Deadline | None = None) -> int:
    """Run ``python -m mlm ...`` (``argv`` as printed) with this interpreter, ``env`` added to this process's
    environment, output appended to ``log``; the child is named in ``lock``. Returns the exit status. Interrupted
    (a cluster task being requeued), or stopped by ``deadline``, it stops the child too: the run resumes from its
    last checkpoint, never beside a second copy of itself."""
    env = {**os.environ, **(env or {})}
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    with open(log, "a") as out:
        out.write(f"\n$ {shell(argv, threads)}\n")
        out.flush()
        proc = subprocess.Popen([sys.executable, *argv[1:]], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        if lock is not None:
            lock.set_child(proc.pid)
        if deadline is not None:
            deadline.watch(proc)
        try:
            return proc.wait()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
            if deadline is not None:
                deadline.forget(proc)


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
