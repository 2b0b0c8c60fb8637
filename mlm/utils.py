"""Small helpers: device choice, seeding, deterministic CPU kernels, atomic file writes."""

from __future__ import annotations

import contextlib
import json
import os
import random
import tempfile
from pathlib import Path

import torch


HEADLESS_ENV = "MLM_HEADLESS"


def headless() -> bool:
    """True when a chapter runs unattended (the book runner sets ``MLM_HEADLESS=1``): no progress
    bars, and interactive widgets fall back to static figures."""
    return os.environ.get(HEADLESS_ENV, "") not in ("", "0")


SMOKE_ENV = "MLM_SMOKE_TOKENS"


def smoke_tokens() -> int | None:
    """The training-token cap of a smoke run (``python -m mlm book --smoke N`` sets ``MLM_SMOKE_TOKENS=N``),
    else None. A smoke run checks that a chapter's code runs at a given size in minutes: every training
    reads only the first N training tokens (and N of validation and test) for one epoch, so its numbers
    mean nothing."""
    value = os.environ.get(SMOKE_ENV, "")
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{SMOKE_ENV} must be a positive number of tokens, got {value!r}; unset it for a real run")
    return int(value)


def is_smoke_result(result: dict | None) -> bool:
    """Whether a ``result.json`` comes from a smoke run (:func:`mlm.training.train` marks it ``smoke_tokens``)."""
    return bool(result and result.get("smoke_tokens"))


def choose_device(name: str = "auto") -> torch.device:
    """``"auto"`` picks CUDA, then Apple's MPS, then the CPU; any other name is used as given."""
    if name in (None, "", "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} requested but CUDA is not available; use device='auto' or 'cpu'")
    return device


def set_seed(seed: int) -> None:
    """Seed Python, and torch on every device, for reproducible runs."""
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds CUDA and MPS generators


@contextlib.contextmanager
def deterministic_on_cpu(device):
    """On the CPU, PyTorch's deterministic kernels for the duration of the block, so that a seed trains the same
    weights every time on a given machine and thread count (tests/test_training.py checks every family). With
    two threads or more, the default ``index_put(..., accumulate=True)`` adds its values in an order that
    changes from run to run; it is the backward pass of every ``weight[ids]`` lookup (the smoothing regularizers
    of chapter 05 read rows so), and training magnifies the last-digit difference to a percent or so. The
    deterministic kernels fix that order; they cost nothing on one thread and about a tenth of the time on two.
    One thread and two can still differ in the last digits on some processors, where the matrix library splits
    a product's sums between the threads. Other devices keep their default kernels (deterministic CUDA matmuls need an environment
    variable set before the first CUDA call)."""
    if torch.device(device).type != "cpu":
        yield
        return
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=enabled and warn_only)  # a caller's warn-only mode stays
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode("utf-8"))


def atomic_torch_save(obj, path: Path) -> None:
    """``torch.save`` that never leaves a half-written checkpoint behind."""
    import io

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def machine_kind(result: dict) -> str:
    """The kind of machine a stored run used, short enough for a table: its GPU's name where it had one,
    else its CPU's family (``Xeon``, ``EPYC``), else the CPU model as recorded (see :func:`machine_info`)."""
    cpu = result.get("cpu_model") or ""
    return result.get("gpu") or next((family for family in ("Xeon", "EPYC") if family in cpu), cpu)


def machine_info(device=None) -> dict:
    """Where a run ran: host name, CPU model and core count, GPU name (CUDA devices), Python version."""
    import platform
    import socket

    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    gpu = None
    if device is not None and torch.device(device).type == "cuda":
        gpu = torch.cuda.get_device_name(torch.device(device))
    return {"hostname": socket.gethostname(), "cpu_model": cpu, "cpu_count": os.cpu_count(), "gpu": gpu,
            "python": platform.python_version()}
