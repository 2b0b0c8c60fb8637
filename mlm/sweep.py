"""Grid search over config values, picking the best run by validation perplexity (Kong et al. section 5.1).

``python -m mlm sweep kong2019-ptb-512-vs-kn --grid train.lr=0.002,0.003,0.004 --grid train.weight_decay=1e-4,1e-3
--grid model.noise_gamma=0.1,0.2,0.3,0.4`` trains every combination (the product of the grids), one run at a
time, each in its own folder ``OUT/<key=value,...>`` so an interrupted sweep resumes where it stopped and
a finished run is loaded, not retrained. ``OUT/sweep.json`` (written atomically after every run) lists
each point with its validation and test perplexity and names the best point by validation perplexity.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from mlm.configs import ConfigError, apply_overrides, get_preset, valid_keys
from mlm.utils import atomic_write_json


def parse_grid(specs: list[str]) -> dict[str, list[str]]:
    """``["train.lr=0.002,0.003", ...]`` -> {"train.lr": ["0.002", "0.003"], ...} (order kept)."""
    grid: dict[str, list[str]] = {}
    keys = valid_keys()
    for spec in specs:
        if "=" not in spec:
            raise ConfigError(f"--grid {spec!r} is not of the form key=value1,value2 (e.g. train.lr=0.002,0.003)")
        key, values = (part.strip() for part in spec.split("=", 1))
        if key not in keys:
            raise ConfigError(f"unknown config key {key!r} in --grid; valid keys:\n  " + "\n  ".join(keys))
        if key in grid:
            raise ConfigError(f"--grid {key} is given twice")
        grid[key] = [v.strip() for v in values.split(",") if v.strip()]
        if not grid[key]:
            raise ConfigError(f"--grid {key} has no values")
    return grid


def grid_points(grid: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination of the grid's values, as override dicts."""
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def point_name(point: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in point.items()) or "default"


def sweep(preset: str, grid: dict[str, list[str]], size: str = "full", overrides=None, out: str | Path | None = None,
          progress: bool = False, train_fn=None) -> dict:
    """Train every grid point of ``preset`` and return (and save) the summary with the best point."""
    from mlm.training import train

    train_fn = train_fn or train
    base = get_preset(preset, size, overrides)
    out = Path(out or Path("runs") / "sweeps" / f"{preset}-{size}")
    points = grid_points(grid)
    for point in points:  # every point must be a valid configuration before anything trains
        apply_overrides(base, point)
    summary = {"preset": preset, "size": size, "overrides": list(overrides or []), "grid": grid, "runs": [],
               "best": None, "paper": base.paper}
    for point in points:
        cfg = apply_overrides(base, point)
        run = train_fn(cfg, run_dir=out / point_name(point), progress=progress)
        r = run.result
        summary["runs"].append({"point": point, "run_dir": str(out / point_name(point)),
                                "valid_ppl": r.get("best_valid_ppl"), "test_ppl": r.get("test_ppl"),
                                "best_epoch": r.get("best_epoch"), "finished": r.get("finished")})
        done = [x for x in summary["runs"] if x["valid_ppl"] is not None and math.isfinite(x["valid_ppl"])]
        summary["best"] = min(done, key=lambda x: x["valid_ppl"]) if done else None
        atomic_write_json(out / "sweep.json", summary)
    return summary


def format_sweep(summary: dict) -> str:
    lines = [f"{'point':<60} {'valid':>8} {'test':>8}"]
    for r in summary["runs"]:
        test = f"{r['test_ppl']:.2f}" if r["test_ppl"] is not None else "-"
        lines.append(f"{point_name(r['point']):<60} {r['valid_ppl']:>8.2f} {test:>8}")
    if summary["best"]:
        lines.append(f"best by validation perplexity: {point_name(summary['best']['point'])}")
    return "\n".join(lines)
