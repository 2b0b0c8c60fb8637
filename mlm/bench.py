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
list, else the first seed of every setting), each in a child process of its own (:func:`bench_isolated`):
on a CPU, peak memory is the process's resident high-water mark, which only a fresh process measures per
model. It includes the data and the Python/torch runtime, so read differences between rows, not levels.
"""

from __future__ import annotations

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
from mlm.training import (autocast, build_batches, build_model, build_optimizer, load_data, set_matmul_precision,
                          training_forward)
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


def bench_preset(name: str, size: str = "full", overrides=None, batches: int = 30, warmup: int = 3,
                 reference: bool = False) -> dict:
    """Tokens/second for training steps and evaluation of preset ``name``.

    ``reference=True`` swaps the memory head for its slow step-by-step reference version
    (heads that have one), to measure what computing all time steps at once buys.
    """
    cfg = get_preset(name, size, overrides)
    device = choose_device(cfg.train.device)
    set_matmul_precision(cfg.train.precision)
    set_seed(cfg.train.seed)
    corpus = load_data(cfg)
    train_batches = [b.to(device) for b in list(build_batches(cfg, corpus, "train"))[: warmup + batches]]
    model = build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id, corpus).to(device)
    if reference:
        if not hasattr(model.head, "reference"):
            raise ValueError(f"the {cfg.model.head!r} head of {name} has no reference implementation")
        model.head = model.head.reference()
    optimizer = build_optimizer(cfg, model)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def step(batch, train: bool):
        if train:
            with deterministic_on_cpu(device):  # as train() runs an epoch
                with autocast(cfg, device):
                    _, nll, penalty = training_forward(model, batch)
                loss = nll / batch.inputs.size(0) + (penalty if penalty is not None else 0.0)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip or 1e9)
                optimizer.step()
        else:
            with torch.no_grad():
                model(batch.inputs, reset=batch.reset, mask=batch.mask)

    results = {"preset": name + (" (reference)" if reference else ""), "size": size, "device": str(device),
               "precision": cfg.train.precision, "threads": torch.get_num_threads(),
               "parameters": model.num_parameters(),
               "batch_shape": list(train_batches[0].inputs.shape)}
    for mode in ("train", "eval"):
        model.train(mode == "train")
        for b in train_batches[:warmup]:
            step(b, mode == "train")
        _sync(device)
        start = time.perf_counter()
        tokens = 0
        for b in train_batches[warmup:]:
            step(b, mode == "train")
            tokens += b.num_tokens  # scored targets, as everywhere (padding is computed but not counted)
        _sync(device)
        results[f"{mode}_tokens_per_second"] = tokens / (time.perf_counter() - start)
    results["peak_memory_mb"] = _peak_memory_mb(device)
    return results


def format_bench(rows: list[dict]) -> str:
    base = rows[0]["train_tokens_per_second"] if rows else 1.0
    lines = [f"{'preset':<40} {'size':<8} {'device':<6} {'params':>10} {'train tok/s':>12} {'eval tok/s':>12} "
             f"{'peak MB':>8} {'time vs first':>13}"]
    for r in rows:
        lines.append(f"{r['preset']:<40} {r['size']:<8} {r['device']:<6} {r['parameters']:>10,} "
                     f"{r['train_tokens_per_second']:>12,.0f} {r['eval_tokens_per_second']:>12,.0f} "
                     f"{r['peak_memory_mb']:>8,.0f} {base / r['train_tokens_per_second']:>12.2f}x")
    return "\n".join(lines)


def bench_isolated(name: str, size: str = "full", overrides=(), batches: int = 30, threads: int | None = None,
                   label: str | None = None) -> dict:
    """:func:`bench_preset` in a child process (``python -m mlm bench``), so that its peak memory is this
    model's alone; ``label`` replaces the preset's name in the row."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        argv = [sys.executable, "-m", "mlm", "bench", name, "--size", size, "--batches", str(batches),
                "--out", str(out), *[a for o in overrides for a in ("--set", o)]]
        if threads:
            argv += ["--threads", str(threads)]
        done = subprocess.run(argv, capture_output=True, text=True, env=os.environ.copy())
        if done.returncode != 0:
            raise RuntimeError(f"bench of {label or name} failed:\n{done.stderr[-2000:]}")
        row = json.loads(out.read_text())[0]
    row["overrides"] = list(overrides)
    if label:
        row["preset"] = label
    return row
