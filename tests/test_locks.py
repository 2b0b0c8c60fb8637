"""Who trains a run (mlm/launch.py): locks created exclusively, with host, process and heartbeat, stale ones
taken over; the runs of ``--jobs N`` spread over several GPUs; a batch's deadline stops what still runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import torch
from conftest import fake_lock

from mlm import launch
from mlm import reproduce as rp

DEAD = 2**22 + 12345  # beyond Linux's default pid_max: no such process


def test_a_lock_is_created_exclusively_and_names_its_holder(tmp_path):
    lock = launch.acquire_lock(tmp_path / "run", job="9_0")
    record = json.loads((tmp_path / "run" / launch.LOCK).read_text())
    assert record["pid"] == os.getpid() and record["host"] == launch.socket.gethostname() and record["job"] == "9_0"
    assert record["heartbeat"] >= record["started"] and launch.acquire_lock(tmp_path / "run") is None
    lock.set_child(os.getppid())
    assert json.loads((tmp_path / "run" / launch.LOCK).read_text())["child"] == os.getppid()
    lock.release()
    assert not (tmp_path / "run" / launch.LOCK).exists()


def test_of_processes_racing_for_a_lock_one_wins(tmp_path):
    """Eight threads at once, twice over (a free lock, then a stale one): each time exactly one takes it."""
    for stale in (False, True):
        run_dir = tmp_path / f"run{stale}"
        if stale:
            fake_lock(run_dir, DEAD)
        start, won = threading.Barrier(8), []

        def take():
            start.wait()
            won.append(launch.acquire_lock(run_dir))

        threads = [threading.Thread(target=take) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(lock is not None for lock in won) == 1, stale
        assert not list(run_dir.glob(f".{launch.LOCK}.*"))  # nothing left aside


@pytest.mark.parametrize("holder, taken", [
    (dict(pid=DEAD), True),  # this host, its process dead: a task killed hard
    (dict(pid=os.getppid()), False),  # this host, alive
    (dict(pid=1, host="another-node", heartbeat=time.time() - 2 * launch.STALE_SECONDS), True),  # gone silent
    (dict(pid=1, host="another-node"), False),  # another node, its heartbeat fresh
    (dict(pid=1, host="another-node", job="77_1"), True),  # an earlier attempt of this very job (requeued)
])
def test_a_stale_lock_is_taken_over_and_a_live_one_is_not(tmp_path, holder, taken):
    fake_lock(tmp_path / "run", **holder)
    lock = launch.acquire_lock(tmp_path / "run", job="77_1")
    assert (lock is not None) == taken
    if taken:
        assert json.loads((tmp_path / "run" / launch.LOCK).read_text())["pid"] == os.getpid()
        lock.release()


def test_a_lock_lives_while_its_training_process_does(tmp_path):
    """The holder killed hard while its training process goes on: the run stays held until both are gone."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        fake_lock(tmp_path / "run", DEAD)
        record = json.loads((tmp_path / "run" / launch.LOCK).read_text())
        (tmp_path / "run" / launch.LOCK).write_text(json.dumps({**record, "child": child.pid}))
        assert launch.lock_holder(tmp_path / "run")["child"] == child.pid
    finally:
        child.kill()
        child.wait()
    assert launch.lock_holder(tmp_path / "run") is None


def test_a_lock_being_written_is_held_for_a_moment(tmp_path, monkeypatch):
    (tmp_path / launch.LOCK).write_text("")  # created, its record not written yet
    assert launch.lock_holder(tmp_path) is not None
    monkeypatch.setattr(launch, "YOUNG_SECONDS", 0.0)
    assert launch.lock_holder(tmp_path) is None


def test_the_heartbeat_is_refreshed_while_the_lock_is_held(tmp_path, monkeypatch):
    monkeypatch.setattr(launch, "HEARTBEAT_SECONDS", 0.02)
    lock = launch.acquire_lock(tmp_path)
    first = json.loads((tmp_path / launch.LOCK).read_text())["heartbeat"]
    time.sleep(0.3)
    assert json.loads((tmp_path / launch.LOCK).read_text())["heartbeat"] > first
    lock.release()
    fake_lock(tmp_path, os.getppid())  # another process's lock now: a late release leaves it
    lock.release()
    assert (tmp_path / launch.LOCK).is_file()


def test_a_run_a_hard_killed_task_left_is_trained_by_the_next_reproduce(tmp_path, monkeypatch):
    """Before, a lock of another host was trusted for ever and every later array skipped its run."""
    spec = rp.RunSpec("g", "one", "synthetic-tiny")
    layout = rp.Layout(tmp_path)
    fake_lock(layout.run_dir(spec), 1, host="lost-node", heartbeat=time.time() - 2 * launch.STALE_SECONDS)
    started = []
    monkeypatch.setattr(rp, "run_logged", lambda argv, *a, **k: started.append(argv) or 1)
    rp.execute(spec, "m", layout, 1, None, echo=lambda m: None)
    assert len(started) == 1 and not (layout.run_dir(spec) / launch.LOCK).exists()


def test_a_pool_spreads_runs_over_the_gpus_round_robin():
    pool = launch.GpuPool(["0", "1", "2"])
    held = [pool.gpu() for _ in range(4)]
    assert [h.__enter__() for h in held] == ["0", "1", "2", "0"]
    held[1].__exit__(None, None, None)  # GPU 1 is free again: the next run goes there
    with pool.gpu() as gpu:
        assert gpu == "1"


@pytest.mark.parametrize("visible, device, expected", [
    ("0,1,2", "cuda", ["0", "1", "2"]), ("4,6", None, ["4", "6"]), ("0", "cuda", None), ("0,1", "cuda:1", None),
    ("0,1", "cpu", None)])
def test_the_pool_of_the_visible_gpus(monkeypatch, visible, device, expected):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    pool = launch.gpu_pool(device)
    assert (pool.gpus if pool else None) == expected


def test_without_cuda_visible_devices_the_pool_counts_the_gpus(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert launch.gpu_pool("cuda").gpus == ["0", "1", "2"]


def test_reproduce_gives_each_run_its_gpu(tmp_path, monkeypatch):
    """``--device cuda --jobs 4`` on a node of three GPUs: every run's command sees one GPU, and the four that
    run at once are spread over all three."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    specs = [rp.RunSpec("g", f"r{i}", "synthetic-tiny") for i in range(8)]
    running, seen, lock, first_four = {}, [], threading.Lock(), threading.Barrier(4, timeout=60)

    def fake_run(argv, threads, cwd, log, run_lock=None, env=None, deadline=None):
        with lock:
            running[argv[-2]] = env["CUDA_VISIBLE_DEVICES"]
            seen.append(sorted(running.values()))
            wait = len(seen) <= 4
        if wait:  # the first four runs end only once all four have started
            first_four.wait()
        time.sleep(0.01)
        with lock:
            del running[argv[-2]]
        return 1

    monkeypatch.setattr(rp, "run_logged", fake_run)
    rp.reproduce(specs, "m", rp.Layout(tmp_path), jobs=4, cores=8, device="cuda", echo=lambda m: None)
    assert len(seen) == 8 and seen[3] == ["0", "0", "1", "2"]  # four at once: round-robin over the three
    assert all(max(now.count(g) for g in now) <= 2 for now in seen)  # never three on one GPU of three


def test_a_deadline_stops_the_training_processes_still_running(tmp_path):
    deadline = launch.Deadline(time.time() + 0.5)
    started = time.perf_counter()
    rc = launch.run_logged(["python", "-c", "import time; time.sleep(30)"], None, tmp_path, tmp_path / "log",
                           deadline=deadline)
    assert rc != 0 and time.perf_counter() - started < 10 and deadline.expired.is_set()
