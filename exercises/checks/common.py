"""Shared helpers for the checks modules.

These live here, not in ``grader.py``: the grader runs as ``__main__``, and a checks module
importing ``exercises.grader`` would get a second copy of it with a different ``CheckFailed``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import torch


class CheckFailed(Exception):
    """Raised by a check; the message is the hint shown to the student."""


@dataclass(frozen=True)
class Check:
    """A named check: ``run(module)`` returns on success and raises on failure.

    ``points`` is what passing it is worth. ``requires`` names checks (of the same assignment)
    that must pass first: while one of them fails this check is skipped, so one mistake is
    reported once, where it is made, instead of again by every check that builds on it.
    """

    description: str
    run: Callable
    points: int = 1
    requires: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.run.__name__


def check(description: str, points: int = 1, requires: tuple[str, ...] | str = ()):
    """Decorator turning ``fn(module)`` into a :class:`Check` shown as ``description``."""

    def wrap(fn):
        return Check(description, fn, points, (requires,) if isinstance(requires, str) else tuple(requires))

    return wrap


def expect(condition, hint: str) -> None:
    if not condition:
        raise CheckFailed(hint)


def get_function(module, name: str, in_place: bool = False):
    """The submission's function ``name``. Its arguments travel as copies, so nothing it does to them reaches the
    check's tensors; ``in_place=True`` (for a check of what the function does to its arguments) makes its
    changes to them here too: compute the references from copies taken before the call."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise CheckFailed(f"no function `{name}` found in your file; keep the names from the template")
    return fn.keeping_changes() if in_place and hasattr(fn, "keeping_changes") else fn


def hidden_offset() -> int:
    """What every check's seed is shifted by: ``$EXERCISES_SEED_OFFSET``, else the teacher's
    ``exercises/solutions/hidden.py`` (not in the students' release), else 0. The students grade on the
    visible inputs; the teacher's grading draws others, so outputs learnt by heart for the visible ones fail."""
    if os.environ.get("EXERCISES_SEED_OFFSET", "").strip():
        return int(os.environ["EXERCISES_SEED_OFFSET"])
    try:
        from exercises.solutions.hidden import SEED_OFFSET
    except ImportError:
        return 0
    return int(SEED_OFFSET)


PUBLIC_OFFSET = 104_729  # the offset exercises/solutions/hidden.py ships with: public, as the repository is


def public_offset_warning() -> str:
    """A warning where the hidden variants are the repository's own (anyone can read them), else ""."""
    if hidden_offset() != PUBLIC_OFFSET:
        return ""
    return (f"the hidden variants use the public default offset {PUBLIC_OFFSET} (exercises/solutions/hidden.py is "
            "in the book's public repository): set SEED_OFFSET there, or $EXERCISES_SEED_OFFSET, to a number of "
            "your own each term")


def generator(seed: int) -> torch.Generator:
    """A private random stream, so checks never depend on (or disturb) the global seed; shifted by
    :func:`hidden_offset`."""
    return torch.Generator().manual_seed(seed + hidden_offset())


def as_float(value, what: str) -> float:
    """``value`` as a float, accepting Python numbers and one-element tensors."""
    if isinstance(value, torch.Tensor):
        expect(value.numel() == 1, f"{what} should be a single number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    expect(isinstance(value, (int, float)) and not isinstance(value, bool),
           f"{what} should be a number, got {type(value).__name__}")
    return float(value)


def close(a: float, b: float, rel: float = 1e-5, abs_: float = 1e-8) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def expect_tensor(value, shape: tuple, what: str) -> torch.Tensor:
    expect(isinstance(value, torch.Tensor), f"{what} should be a torch.Tensor, got {type(value).__name__}")
    expect(tuple(value.shape) == tuple(shape),
           f"{what} has shape {tuple(value.shape)}, expected {tuple(shape)}")
    return value


def expect_pair(value, what: str):
    expect(isinstance(value, (tuple, list)) and len(value) == 2,
           f"{what} should return a pair, got {type(value).__name__}")
    return value


def max_diff(a, b) -> float:
    """Largest absolute difference of two tensors (0 for empty ones), in float64; infinite where the shapes
    differ or where one holds NaN or inf and the other not the same (so no comparison passes on them)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape:
        return math.inf
    if a.numel() == 0:
        return 0.0
    a, b = a.detach().double(), b.detach().double()
    same = (a == b) | (a.isnan() & b.isnan())
    diff = torch.where(same, torch.zeros_like(a), (a - b).abs())
    return float(diff.nan_to_num(nan=math.inf).max())


def finite(t: torch.Tensor) -> bool:
    return bool(torch.isfinite(t.detach()).all())
