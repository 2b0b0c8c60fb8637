"""Manifests for ``python -m mlm reproduce``: each module holds ``RUNS``, a list of
:class:`mlm.reproduce.RunSpec` (built with :func:`mlm.reproduce.runs`), and the claims its runs test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence


def grid_seeds(group: str, grids: dict[str, Sequence[str]], results: Path,
               seeds: Sequence[int] = (0, 1, 2)) -> dict[str, tuple[int, ...]]:
    """The seeds each grid point of ``group`` trains: seed 0 of every point of each grid (a setting tuned
    over ``grids[setting]``), and all of ``seeds`` for the point whose seed 0 has the best validation
    perplexity in ``results`` once every point of its grid has one (so a claim can read three seeds of
    each side's choice)."""
    chosen = {}
    for points in grids.values():
        valid = {}
        for name in points:
            path = Path(results) / group / name / f"seed{seeds[0]}" / "result.json"
            if path.is_file():
                valid[name] = json.loads(path.read_text())["best_valid_ppl"]
        for name in points:
            chosen[name] = tuple(seeds) if len(valid) == len(points) and name == min(valid, key=valid.get) \
                else (seeds[0],)
    return chosen
