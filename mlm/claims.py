"""Claims tables: a paper's claim, the evidence a chapter produced for it, and a verdict the numbers decide.

Every chapter ends with one. The verdict is computed from the numbers, never typed, by one rule
used everywhere (lower perplexity is better):

* fewer than ``min_seeds`` runs on either side: **not testable with one seed** (one seed ranks
  nothing) or **not settled (2 seeds)**; a count baseline, passed as a plain number, has no seeds;
* every run of the model better than every run of its control: **supported**; every run worse:
  **contradicted**; the runs overlap: **not settled (seeds overlap)**;
* ``converged=False`` (a reduced run stopped after a few epochs) adds **, not converged**: the
  direction holds for this budget and says nothing about the paper's full-size numbers.

``Claim.evidence`` is written by the chapter from the same numbers (see :func:`spread`).

Claims that a manifest's stored runs test (the cpu manifest's, chapter 06's) are declared once as
:class:`PaperClaim` beside the manifest; :func:`mlm.table.stored_claims` turns them into claims rows from
whatever ``results/`` holds, for the chapters and for the README's table.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

SUPPORTED = "supported"
CONTRADICTED = "contradicted"
OVERLAP = "not settled (seeds overlap)"
ONE_SEED = "not testable with one seed"
UNTESTABLE = "not testable at this size"


@dataclass
class Claim:
    """One row of a claims table."""

    claim: str  # the paper's claim in the chapter's words, with its source (table, section)
    evidence: str  # what the chapter measured: numbers, sizes, seeds
    verdict: str  # from :func:`verdict`, or UNTESTABLE with the reason in ``evidence``


NOT_RUN = "not run yet"


@dataclass(frozen=True)
class PaperClaim:
    """A paper's claim that a manifest tests: its run ``model`` against its run ``control`` (both in
    ``group``), beside the pair the paper reported (the ``key`` numbers, e.g. ``test``, of the presets
    ``paper_model`` and ``paper_control``). ``chapter`` is the chapter whose claims table shows it."""

    text: str  # the claim in the book's words, with its source
    group: str
    model: str
    control: str
    paper_model: str
    paper_control: str
    key: str = "test"
    chapter: str = ""


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``mean ± sd (n seeds)``; one value prints as itself with "(1 seed)"."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("spread() needs at least one value")
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)} seeds)"


def verdict(model: Sequence[float], control: Sequence[float] | float, *, min_seeds: int = 3,
            converged: bool = True) -> str:
    """Does ``model`` beat ``control``? Both are per-seed perplexities (lower is better).

    A plain number as ``control`` is a deterministic baseline (a count model has no seed): then only
    the model needs ``min_seeds`` runs.
    """
    deterministic = isinstance(control, (int, float))
    model = [float(v) for v in model]
    control = [float(control)] if deterministic else [float(v) for v in control]
    if not model or not control:
        raise ValueError("verdict() needs at least one run of the model and one of the control")
    if any(math.isnan(v) for v in model + control):
        raise ValueError("verdict() got a NaN perplexity: a run diverged; look at its metrics first")
    seeds = len(model) if deterministic else min(len(model), len(control))
    if seeds < min_seeds:
        return ONE_SEED if seeds == 1 else f"not settled ({seeds} seeds)"
    if max(model) < min(control):
        text = SUPPORTED
    elif min(model) > max(control):
        text = CONTRADICTED
    else:
        text = OVERLAP
    return text if converged else f"{text}, not converged"


def markdown_cell(text) -> str:
    """``text`` made safe for one cell of a Markdown table (pipes escaped, on one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(claims: Iterable[Claim]) -> str:
    """The claims as a Markdown table (| claim | our evidence | verdict |)."""
    lines = ["| the paper's claim | our evidence | verdict |", "|---|---|---|"]
    lines += [f"| {markdown_cell(c.claim)} | {markdown_cell(c.evidence)} | **{markdown_cell(c.verdict)}** |"
              for c in claims]
    return "\n".join(lines)


def show_claims(claims: Iterable[Claim]) -> str:
    """Display the claims table (rendered Markdown in a notebook, plain text elsewhere); returns the Markdown."""
    return show_markdown(claims_markdown(list(claims)))


def show_markdown(text: str) -> str:
    """Display Markdown ``text`` rendered in a notebook, as plain text elsewhere; returns it."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return text
    except ImportError:  # pragma: no cover - IPython comes with jupyterlab
        pass
    print(text)
    return text
