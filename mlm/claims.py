"""Claims tables: a paper's claim, the evidence a chapter produced for it, and a verdict the numbers decide.

Every chapter ends with one. The verdict is computed from the numbers, never typed, by one rule used
everywhere (lower perplexity is better). Its input is the **relative change** of the mean perplexity,
``mean(model) / mean(control) - 1`` (negative: the model is better), and its 95% interval from the seeds
(Welch's t interval for a difference of two means, divided by the control's mean; against a count baseline,
which has no seeds, the one-sample t interval). With ``m`` = :data:`MARGIN` (1%, the smallest change the book
reads as a difference) and the paper's own change ``p`` (negative where it reported a gain):

* fewer than ``min_seeds`` (3) runs on a side: **not testable with one seed** / **not settled (2 seeds)**;
* the interval lies inside ``(-m, m)``: **no difference** (a change that small does not count, whether or not
  the interval holds 0);
* the interval lies above 0: **contradicted (a loss)**;
* the interval lies below 0: **supported** where it holds ``p`` or lies beyond it, **a gain, smaller than
  reported** where it lies between ``p`` and 0;
* the interval holds 0: **smaller than reported** where it excludes ``p`` (no gain as large as the paper's,
  though a small one is not ruled out), **not settled** otherwise (it holds both 0 and the paper's change);
* a claim that the paper reports as *no* difference (``|p| < m``) reads "the model does no worse": it is
  **supported** by an interval inside ``(-m, m)`` or below 0, **contradicted (a loss)** by one above 0, and
  **not settled** otherwise. Where the paper's point is the other way round, that the model does not *help* (a
  longer window, ``no_gain``), an interval above 0 or inside ``(-m, m)`` supports it, one below 0 is
  **contradicted (a gain)**.

A claim whose control's mean test perplexity is no better than the interpolated bigram of its own data (a
count model, :mod:`mlm.baselines`) is **not testable at this size** whatever the seeds say:
:func:`mlm.table.stored_claims` overrides this rule's verdict there.

``converged=False`` adds **, not converged**: a reduced run stopped after a few epochs, or, for stored runs,
a seed whose best epoch is its last while its learning rate was still above 1% of its start
(:meth:`mlm.table.StoredSetting.stopped_improving`). The direction holds for this budget and says nothing
about the paper's full-size numbers. :func:`interval_text` writes the change and its interval for the
evidence column, which every verdict stands beside.

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
SMALLER_GAIN = "a gain, smaller than reported"
NO_DIFFERENCE = "no difference"
SMALLER = "smaller than reported"
CONTRADICTED = "contradicted (a loss)"
CONTRADICTED_GAIN = "contradicted (a gain)"  # a claim that the model does not help, against a gain
NOT_SETTLED = "not settled"
ONE_SEED = "not testable with one seed"
UNTESTABLE = "not testable at this size"
MARGIN = 0.01  # relative changes inside +-1% count as no difference
LEVEL = 0.95  # the interval's coverage


@dataclass
class Claim:
    """One row of a claims table."""

    claim: str  # the paper's claim in the chapter's words, with its source (table, section)
    evidence: str  # what the chapter measured: numbers, sizes, seeds, the change and its interval
    verdict: str  # from :func:`verdict`, or UNTESTABLE with the reason in ``evidence``
    question: str = ""  # the comparison the evidence makes, where it is not the paper's own
    seeds: tuple = ()  # (model's per-seed perplexities, control's, the paper's relative change or None) if stored


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
    question: str = ""  # which comparison the runs make: the paper's own, or the book's (and how it departs)
    pending: str = ""  # why the manifest cannot list the runs yet (e.g. a grid decides a setting first)
    no_gain: bool = False  # the paper reports no difference, meaning the model does not help (see verdict)


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``mean ± sd (n seeds)``; one value prints as itself with "(1 seed)"."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("spread() needs at least one value")
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)} seeds)"


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t distribution with ``df`` (> 0, not necessarily whole) degrees of
    freedom: its density integrated by Simpson's rule and the quantile found by bisection (no SciPy)."""
    if not (0.5 <= q < 1 and df > 0):
        raise ValueError(f"t_quantile needs 0.5 <= q < 1 and df > 0, got q={q}, df={df}")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t: float, steps: int = 2000) -> float:  # 0.5 + the integral of the density from 0 to t
        h = t / steps
        f = [math.exp(log_c - (df + 1) / 2 * math.log1p((i * h) ** 2 / df)) for i in range(steps + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))

    low, high = 0.0, 1.0
    while cdf(high) < q:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < q else (low, mid)
    return (low + high) / 2


def relative_change(model: Sequence[float], control: Sequence[float] | float,
                    level: float = LEVEL) -> tuple[float, float, float]:
    """``(change, low, high)``: the relative change of the means, ``mean(model) / mean(control) - 1``, and
    its ``level`` interval. Welch's t interval for ``mean(model) - mean(control)`` (unequal variances,
    Welch-Satterthwaite degrees of freedom), divided by the control's mean; a plain number as ``control``
    (a count baseline) gives the one-sample t interval of the model's mean. Needs two runs a side."""
    model = [float(v) for v in model]
    deterministic = isinstance(control, (int, float))
    control = [float(control)] if deterministic else [float(v) for v in control]
    if len(model) < 2 or (not deterministic and len(control) < 2):
        raise ValueError("relative_change() needs at least two runs a side (the seeds' spread)")
    base = statistics.fmean(control)
    diff = statistics.fmean(model) - base
    parts = [statistics.variance(model) / len(model)]
    if not deterministic:
        parts.append(statistics.variance(control) / len(control))
    se = math.sqrt(sum(parts))
    if se == 0:
        return diff / base, diff / base, diff / base
    df = se ** 4 / sum(v ** 2 / (n - 1) for v, n in zip(parts, (len(model), len(control))))
    half = t_quantile((1 + level) / 2, df) * se
    return diff / base, (diff - half) / base, (diff + half) / base


def interval_text(model: Sequence[float], control: Sequence[float] | float) -> str:
    """``-2.3% (95% interval -3.1% to -1.5%)``; the change alone where a side has one run."""
    n = len(model) if isinstance(control, (int, float)) else min(len(model), len(control))
    if n < 2:
        base = control if isinstance(control, (int, float)) else statistics.fmean(control)
        return f"{statistics.fmean(model) / base - 1:+.1%}"
    change, low, high = relative_change(model, control)
    return f"{change:+.1%} ({LEVEL:.0%} interval {low:+.1%} to {high:+.1%})"


def awaits_runs(verdict_text: str) -> bool:
    """True where the rule withholds a verdict for want of runs: none stored, or fewer than
    ``min_seeds`` on a side. Chapters list such claims as waiting instead of drawing them."""
    return verdict_text in (NOT_RUN, ONE_SEED) or verdict_text.startswith("not settled (")


def verdict(model: Sequence[float], control: Sequence[float] | float, *, paper: float | None = None,
            min_seeds: int = 3, converged: bool = True, margin: float = MARGIN, no_gain: bool = False) -> str:
    """Does ``model`` beat ``control``, and by as much as the paper reported? Both are per-seed
    perplexities (lower is better); ``paper`` is the paper's own relative change (e.g. -0.035 for a 3.5%
    gain; None where the claim has no reported size). ``no_gain``: the paper's change is under ``margin`` and
    its claim is that the model does not help. The rule is the module's docstring.

    A plain number as ``control`` is a deterministic baseline (a count model has no seed): then only
    the model needs ``min_seeds`` runs.
    """
    deterministic = isinstance(control, (int, float))
    model = [float(v) for v in model]
    control = float(control) if deterministic else [float(v) for v in control]
    both = model + ([control] if deterministic else control)
    if not model or not both[len(model):]:
        raise ValueError("verdict() needs at least one run of the model and one of the control")
    if any(math.isnan(v) for v in both):
        raise ValueError("verdict() got a NaN perplexity: a run diverged; look at its metrics first")
    seeds = len(model) if deterministic else min(len(model), len(control))
    if seeds < min_seeds:
        return ONE_SEED if seeds == 1 else f"not settled ({seeds} seeds)"
    _, low, high = relative_change(model, control)
    claims_none = paper is not None and abs(paper) < margin
    if no_gain and not claims_none:
        raise ValueError("no_gain is a reading of a claim of no difference: the paper's change must be under "
                         "the margin")
    inside = -margin < low and high < margin  # too small to count, whatever its sign
    if no_gain:
        text = SUPPORTED if inside or low > 0 else CONTRADICTED_GAIN if high < 0 else NOT_SETTLED
        return text if converged else f"{text}, not converged"
    if inside:
        text = SUPPORTED if claims_none else NO_DIFFERENCE
    elif low > 0:
        text = CONTRADICTED
    elif high < 0:
        text = SMALLER_GAIN if paper is not None and not claims_none and low > paper else SUPPORTED
    elif paper is not None and not claims_none and low > paper:
        text = SMALLER
    else:
        text = NOT_SETTLED
    return text if converged else f"{text}, not converged"


def markdown_cell(text) -> str:
    """``text`` made safe for one cell of a Markdown table (pipes escaped, on one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(claims: Iterable[Claim]) -> str:
    """The claims as a Markdown table (| claim | our evidence | verdict |), with a column for the question
    each row answers where any row names one."""
    claims = list(claims)
    asked = any(c.question for c in claims)
    lines = ["| the paper's claim | " + ("the question our runs answer | " if asked else "") + "our evidence | verdict |",
             "|---|---|---|" + ("---|" if asked else "")]
    lines += [f"| {markdown_cell(c.claim)} | " + (f"{markdown_cell(c.question or '–')} | " if asked else "")
              + f"{markdown_cell(c.evidence)} | **{markdown_cell(c.verdict)}** |" for c in claims]
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
