"""A run's checkpoint: everything :func:`mlm.training.train` needs to continue exactly where it stopped.

``checkpoint.pt`` is one file, written atomically, holding the weights, the optimiser, the batches' shuffling
state, the random states, the epochs' history and the best weights so far (``best_model``): a stop at any
moment leaves either the previous checkpoint or the new one, never weights of one epoch beside the best
weights of another. A checkpoint written inside an epoch (``train.checkpoint_minutes``) adds ``in_epoch``:
the batches done, the carried LSTM state and head memory, and the epoch's running loss, so the epoch resumes
at its next batch and computes what an uninterrupted epoch does.

Run folders written before the best weights moved into the checkpoint keep them in ``best.pt``; they resume
and load as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from mlm.configs import Config
from mlm.utils import atomic_torch_save

BEST_FILE = "best.pt"  # the best weights of run folders written before they moved into checkpoint.pt


class CheckpointError(RuntimeError):
    """A checkpoint does not match the run that tries to use it."""


@dataclass
class TrainingState:
    """The progress of a run between its epochs (or, with ``in_epoch``, inside one)."""

    lr: float
    epoch: int = 0  # epochs finished
    history: list[dict] = field(default_factory=list)
    best_valid: float = math.inf
    best_epoch: int = 0
    bad_epochs: int = 0
    best_model: dict | None = None  # the weights of the best validation perplexity so far
    train_seconds: float = 0.0
    train_tokens: float = 0.0
    wall_before: float = 0.0  # wall time of the run's earlier sessions
    in_epoch: dict | None = None  # how far the unfinished epoch got (a mid-epoch checkpoint)


# Every checkpoint holds these; newer ones also "wall_seconds", "best_model" and "in_epoch".
_CHECKPOINT_KEYS = ("config", "vocab_fingerprint", "model", "optimizer", "batches", "rng", "history", "epoch",
                    "best_valid", "best_epoch", "bad_epochs", "lr", "train_seconds", "train_tokens")
# Settings that do not change what is trained (beyond the last digits, as another device does), so a run may
# resume with other values (e.g. on another machine); everything else must match the checkpoint.
RESUMABLE_CHANGES = {("data", "data_dir"), ("data", "download"), ("data", "eval_batch_size"),
                     ("train", "epochs"), ("train", "device"), ("train", "threads"), ("train", "log_interval"),
                     ("train", "checkpoint_minutes"), ("train", "fused_optimizer"), ("train", "compile")}


def rng_state(device) -> dict:
    """The random states a resume restores: the CPU's and, on CUDA, the state of the run's own GPU only, so
    that a run resumes wherever one GPU is visible (a Slurm requeue onto a smaller allocation)."""
    device = torch.device(device)
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None}


def restore_rng(rng: dict, device) -> None:
    """Set the random states of :func:`rng_state` (CPU byte tensors, as torch's setters need). A checkpoint
    written before held a list, a state per visible GPU: the run's own is taken, the first if that GPU
    is not visible now."""
    device = torch.device(device)
    torch.set_rng_state(rng["torch"])
    cuda = rng.get("cuda")
    if device.type != "cuda" or cuda is None:
        return
    if isinstance(cuda, (list, tuple)):
        index = device.index if device.index is not None else torch.cuda.current_device()
        cuda = cuda[index] if index < len(cuda) else cuda[0]
    torch.cuda.set_rng_state(cuda, device)


def map_tensors(value, fn):
    """``value`` (a tensor, or tuples, lists and dicts of them: an LSTM state, a head's memory) with ``fn``
    applied to every tensor."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (tuple, list)):
        return type(value)(map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def save_checkpoint(path: Path, cfg: Config, fingerprint: str, model, optimizer, batches: dict,
                    run: TrainingState, device, wall_seconds: float, in_epoch: dict | None = None) -> None:
    """Write ``checkpoint.pt`` in one atomic write. ``batches``: the batches' state to resume from (at an
    epoch's start for a mid-epoch checkpoint, whose ``in_epoch`` says how many of its batches are done)."""
    atomic_torch_save({
        "config": cfg.to_dict(), "vocab_fingerprint": fingerprint, "model": model.state_dict(),
        "optimizer": optimizer.state_dict(), "batches": batches, "rng": rng_state(device),
        "history": run.history, "epoch": run.epoch, "best_valid": run.best_valid, "best_epoch": run.best_epoch,
        "bad_epochs": run.bad_epochs, "lr": run.lr, "train_seconds": run.train_seconds,
        "train_tokens": run.train_tokens, "wall_seconds": wall_seconds, "best_model": run.best_model,
        "in_epoch": in_epoch,
    }, path)


def load_checkpoint(path: Path, cfg: Config, fingerprint: str) -> dict:
    """The checkpoint at ``path``, checked against ``cfg`` and the vocabulary, with every tensor on the CPU.

    The CPU, whatever the run's device: the random-number states must stay CPU byte tensors
    (``torch.set_rng_state``, ``torch.cuda.set_rng_state`` and a generator's ``set_state`` take
    nothing else), and ``load_state_dict`` copies weights and optimiser state onto the device.
    """
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # a truncated or foreign file
        raise CheckpointError(f"cannot read checkpoint {path}: {err}. Delete it to start over.") from err
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in _CHECKPOINT_KEYS):
        raise CheckpointError(f"{path} is not an mlm training checkpoint. Delete it, or use another run folder.")
    saved, current = ckpt["config"], cfg.to_dict()
    # A setting added to the package after the checkpoint was written counts as its default value.
    defaults = Config().to_dict()
    diff = [f"{s}.{k}: {saved.get(s, {}).get(k, defaults[s][k])!r} -> {current[s][k]!r}"
            for s in ("data", "model", "train") for k in current[s]
            if saved.get(s, {}).get(k, defaults[s][k]) != current[s][k] and (s, k) not in RESUMABLE_CHANGES]
    if diff:
        raise CheckpointError(f"{path} was written by a different configuration ({'; '.join(diff)}). "
                              "Use another run folder, or resume=False (--restart) to start over.")
    if ckpt["vocab_fingerprint"] != fingerprint:
        raise CheckpointError(f"{path} was trained with a different vocabulary; the corpus files changed. "
                              "Use another run folder, or resume=False (--restart) to start over.")
    return ckpt


def training_state(ckpt: dict, run_dir: Path, device) -> TrainingState:
    """The :class:`TrainingState` a checkpoint resumes, tensors on ``device``; the best weights from
    ``best.pt`` for a checkpoint written before they moved inside it."""
    best = stored_best(ckpt, run_dir)
    return TrainingState(
        lr=ckpt["lr"], epoch=ckpt["epoch"], history=ckpt["history"], best_valid=ckpt["best_valid"],
        best_epoch=ckpt["best_epoch"], bad_epochs=ckpt["bad_epochs"],
        best_model=map_tensors(best, lambda t: t.to(device)),
        train_seconds=ckpt["train_seconds"], train_tokens=ckpt["train_tokens"],
        # checkpoints written before the wall time was kept know only their training seconds
        wall_before=ckpt.get("wall_seconds", ckpt["train_seconds"]),
        in_epoch=map_tensors(ckpt.get("in_epoch"), lambda t: t.to(device)))


def read_weights(path: Path) -> dict:
    """A state dict saved on its own (``best.pt``), on the CPU; a :class:`CheckpointError` if it is unreadable."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a truncated or foreign file
        raise CheckpointError(f"cannot read {path}: {err}") from err


def stored_best(ckpt: dict | None, run_dir: Path) -> dict | None:
    """The best validation weights of a run folder: its checkpoint's, else an older folder's ``best.pt``, else None."""
    if ckpt is not None and ckpt.get("best_model") is not None:
        return ckpt["best_model"]
    return read_weights(run_dir / BEST_FILE) if (run_dir / BEST_FILE).is_file() else None


def best_weights(ckpt: dict | None, run_dir: Path) -> dict:
    """:func:`stored_best`, or a :class:`CheckpointError` if the run folder holds none."""
    best = stored_best(ckpt, run_dir)
    if best is None:
        raise CheckpointError(f"{run_dir} holds no best weights (no checkpoint.pt with them, no {BEST_FILE}): the "
                              "run has not finished an epoch yet.")
    return best
