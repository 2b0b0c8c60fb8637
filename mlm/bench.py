"""Training and evaluation speed of a preset's model on the current device.

``python -m mlm bench zaremba2014-small`` times ``--batches`` training steps (after
``--warmup`` untimed ones) and one evaluation pass over the same number of batches, and
reports tokens per second and peak memory. Later chapters add their memory heads to the
same table, with ratios to the plain LSTM of the same size. Numbers belong here, never in a
timed unit test.

A token is a scored target (a word or ``<eos>``, never padding), the unit of the training's own
tokens per second (``result.json``) and of the manifests' ``tokens``, so that training tokens divided
by a benched speed is the training time under every protocol. The batches sit on the device before
the clock starts, and training steps run in the configuration's ``train.precision``, as in training.

``python -m mlm bench --manifest compare`` times the runs a manifest names for its bench (its ``BENCH``
list, else one run of each model it trains, :func:`mlm.reproduce.bench_specs`), on a CPU each in a child
process of its own (:func:`bench_isolated`): there peak memory is the process's resident high-water mark,
which only a fresh process measures per model. It includes the data and the Python/torch runtime, so read
differences between rows, not levels. On a GPU, CUDA counts each model's peak itself, and the models are
benched one after another in one process.

On a GPU the speed switches (``train.fused_optimizer``, ``train.compile``) and sharing the device decide how
much fits in an allocation: ``--variant NAME=KEY=VALUE,...`` benches each preset again with those settings
beside the default, and ``--concurrent N`` runs N copies at once (:func:`bench_concurrent`, N processes timed
over the same ``--seconds``), as ``reproduce --device cuda --jobs N`` shares the GPU::

    python -m mlm bench zaremba2014-medium --device cuda --concurrent 1 --concurrent 14 \
        --variant fast=train.fused_optimizer=true,train.compile=reduce-overhead
"""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from mlm.configs import get_preset
from mlm.training import (build_batches, build_model, build_optimizer, compile_model, load_data, set_matmul_precision,
                          train_epoch)
from mlm.utils import choose_device, deterministic_on_cpu, set_seed


def _peak_memory_mb(device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def wait_at_barrier(folder: Path, count: int, name: str) -> None:
    """Mark this process ready at ``name`` and wait until ``count`` processes are: concurrent benches start
    their clocks together."""
    (folder / f"{name}-{os.getpid()}").touch()
    while len(list(folder.glob(f"{name}-*"))) < count:
        time.sleep(0.01)


def bench_preset(name: str, size: str = "full", overrides=None, batches: int = 30, warmup: int = 3,
                 reference: bool = False, seconds: float | None = None,
                 barrier: tuple[Path, int] | None = None) -> dict:
    """Tokens/second for training steps and evaluation of preset ``name``.

    Training steps are :func:`mlm.training.train_epoch` over the first batches (the state carried, clipping,
    the speed switches of ``train``), evaluation forward passes without gradients. ``seconds``: time passes over
    the batches again until that long has passed (else one pass of ``batches``); ``barrier`` (a folder, a count):
    start each clock when that many processes are ready (:func:`bench_concurrent`). A compiled model gets at
    least 8 warm-up steps, to compile and record its graphs. ``reference=True`` swaps the memory head for its slow
    step-by-step reference version (heads that have one), to measure what computing all time steps at once buys.
    """
    cfg = get_preset(name, size, overrides)
    device = choose_device(cfg.train.device)
    set_matmul_precision(cfg.train.precision)
    set_seed(cfg.train.seed)
    corpus = load_data(cfg)
    warmup = max(warmup, 8) if cfg.train.compile != "none" else warmup
    batches_of = build_batches(cfg, corpus, "train")
    first = [b.to(device) for b in list(batches_of)[: warmup + batches]]  # in training's order
    if len(first) <= warmup:
        raise ValueError(f"{name} has {len(first)} training batches, none left to time after {warmup} warm-up steps")
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus).to(device)
    if reference:
        if not hasattr(model.head, "reference"):
            raise ValueError(f"the {cfg.model.head!r} head of {name} has no reference implementation")
        model.head = model.head.reference()
    forward = compile_model(model, cfg.train.compile)
    optimizer = build_optimizer(cfg, model)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def part(items):  # the protocol's batches (carrying state or not), these ones, in this order
        out = copy.copy(batches_of)
        out.batches, out.shuffle = items, False
        return out

    def train_pass(items) -> int:
        with deterministic_on_cpu(device):  # as train() runs an epoch
            return train_epoch(model, part(items), optimizer, cfg, device, forward=forward).tokens

    def eval_pass(items) -> int:
        model.eval()
        with torch.no_grad():
            for b in items:
                model(b.inputs, reset=b.reset, mask=b.mask)
        return sum(b.num_tokens for b in items)  # scored targets, as everywhere (padding is not counted)

    results = {"preset": name + (" (reference)" if reference else ""), "size": size, "device": str(device),
               "precision": cfg.train.precision, "threads": torch.get_num_threads(),
               "parameters": model.num_parameters(), "batch_shape": list(first[0].inputs.shape),
               "overrides": list(overrides or [])}
    for mode, run_pass in (("train", train_pass), ("eval", eval_pass)):
        run_pass(first[:warmup])
        _sync(device)
        if barrier is not None:
            wait_at_barrier(*barrier, mode)
        start, tokens = time.perf_counter(), 0
        while True:
            tokens += run_pass(first[warmup:])
            _sync(device)
            elapsed = time.perf_counter() - start
            if seconds is None or elapsed >= seconds:
                break
        results[f"{mode}_tokens_per_second"] = tokens / elapsed
    results["peak_memory_mb"] = _peak_memory_mb(device)
    return results


def format_bench(rows: list[dict]) -> str:
    """The rows as a table; a row of several processes at once shows its slowest process (and their sum)."""
    base = rows[0]["train_tokens_per_second"] if rows else 1.0
    lines = [f"{'preset':<40} {'variant':<10} {'runs':>4} {'size':<8} {'device':<6} {'params':>10} "
             f"{'train tok/s':>12} {'eval tok/s':>12} {'peak MB':>8} {'time vs first':>13}"]
    for r in rows:
        total = f"  (all {r['total_train_tokens_per_second']:,.0f})" if "total_train_tokens_per_second" in r else ""
        lines.append(f"{r['preset']:<40} {r.get('variant', 'default'):<10} {r.get('concurrent', 1):>4} "
                     f"{r['size']:<8} {r['device']:<6} {r['parameters']:>10,} "
                     f"{r['train_tokens_per_second']:>12,.0f} {r['eval_tokens_per_second']:>12,.0f} "
                     f"{r['peak_memory_mb']:>8,.0f} {base / r['train_tokens_per_second']:>12.2f}x{total}")
    return "\n".join(lines)


def _bench_argv(name: str, size: str, overrides, batches: int, threads: int | None, out: Path) -> list[str]:
    argv = [sys.executable, "-m", "mlm", "bench", name, "--size", size, "--batches", str(batches),
            "--out", str(out), *[a for o in overrides for a in ("--set", o)]]
    return argv + (["--threads", str(threads)] if threads else [])


def labelled(row: dict, name: str, label: str | None) -> dict:
    """``row`` of preset ``name`` under a manifest's setting ``label`` (``GROUP/RUN``): the label replaces the
    preset's name, which the row keeps as ``model`` (:func:`mlm.budget.read_speeds` plans a grid with it)."""
    if label:
        row["model"], row["preset"] = name, label
    return row


def bench_isolated(name: str, size: str = "full", overrides=(), batches: int = 30, threads: int | None = None,
                   label: str | None = None) -> dict:
    """:func:`bench_preset` in a child process (``python -m mlm bench``), so that its peak memory is this
    model's alone, named by ``label`` (:func:`labelled`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        done = subprocess.run(_bench_argv(name, size, overrides, batches, threads, out), capture_output=True,
                              text=True, env=os.environ.copy())
        if done.returncode != 0:
            raise RuntimeError(f"bench of {label or name} failed:\n{done.stderr[-2000:]}")
        row = json.loads(out.read_text())[0]
    row["overrides"] = list(overrides)
    return labelled(row, name, label)


def bench_concurrent(name: str, count: int, size: str = "full", overrides=(), batches: int = 30,
                     threads: int | None = None, seconds: float = 20.0, label: str | None = None) -> dict:
    """``count`` copies of :func:`bench_preset` at once, each a process of its own (as ``reproduce --jobs``
    runs them), their clocks started together and run for ``seconds``. The row's speeds are the slowest
    process's (what a run sharing the device can count on); ``processes`` holds each one's, and
    ``total_train_tokens_per_second`` their sum."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"bench{i}.json" for i in range(count)]
        procs = [subprocess.Popen([*_bench_argv(name, size, overrides, batches, threads, out), "--seconds",
                                   str(seconds), "--barrier", f"{tmp}:{count}"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=os.environ.copy()) for out in outs]
        errors = [proc.communicate()[1] for proc in procs]
        failed = [err for proc, err in zip(procs, errors) if proc.returncode != 0]
        if failed:
            raise RuntimeError(f"bench of {label or name}, {count} at once, failed:\n{failed[0][-2000:]}")
        rows = [json.loads(out.read_text())[0] for out in outs]
    keys = ("train_tokens_per_second", "eval_tokens_per_second", "peak_memory_mb")
    row = {**rows[0], "overrides": list(overrides), "concurrent": count,
           "processes": [{k: r[k] for k in keys} for r in rows],
           "train_tokens_per_second": min(r["train_tokens_per_second"] for r in rows),
           "eval_tokens_per_second": min(r["eval_tokens_per_second"] for r in rows),
           "total_train_tokens_per_second": sum(r["train_tokens_per_second"] for r in rows)}
    return labelled(row, name, label)
