"""Claims and the rule that decides them: a paper's claim, the runs that test it, and a verdict the numbers give.

A claim sets a *model* against its *control* (the same network without the paper's addition). Lower
perplexity is better. The rule's input is the **relative change** of the mean test perplexity,
``c = mean(model) / mean(control) - 1`` (negative: the model is better), and its 95% interval ``[lo, hi]``
from the seeds (Welch's t interval for a difference of two means, divided by the control's mean; against a
count baseline, which has no seeds, the one-sample t interval). Three things are set beside it:

* ``m`` = :data:`MARGIN` (1%): a change smaller than this does not count, whatever its sign;
* ``p``, the paper's own change (negative for a reported gain; None where the paper's pair gives no size,
  e.g. a model set against another paper's control);
* ``s``, the machine term: where the two sides ran on different kinds of machine (processor, GPU or
  precision) in different shares, the interval is widened by ``s`` at both ends: the bound on the shift
  between two kinds that the book measured by rerunning stored commands, times how unevenly the two sides
  hold each kind (:func:`mlm.evidence.machine_term`). Claims whose sides ran on one kind, or on several in
  the same shares, have ``s = 0``: a machine's effect then moves both means alike.

The rule has five labels, each a plain statement about the interval, symmetric around zero:

==============================  =====================================================================
**holds**                       a gain that clears the margin (``hi < -m``) and is as large as
                                reported: the interval reaches ``p`` (``lo <= p``), or no size was reported
**smaller gain**                a gain that clears the margin, but the whole interval is smaller than ``p``
**no effect**                   the interval lies inside the margin (``-m < lo`` and ``hi < m``)
**worse**                       a loss that clears the margin (``lo > m``)
**inconclusive**                anything else: the seeds cannot tell these apart
==============================  =====================================================================

and one flag: a gain whose whole interval lies beyond twice the paper's (``hi < 2p``; for a paper that
reported no change, any gain that clears the margin) reads **larger than reported: check the control**: a
gain far beyond the paper's points at a control that trained badly more often than at a better model.

"Worse" must clear the margin exactly as "no effect" must sit inside it, so a vaguer interval never earns a
stronger label. Three seeds a side at least, or no verdict (:data:`FEW_SEEDS`: the row waits for runs).
The labels describe the runs; whether that agrees with the paper depends on the claim (a claim that a longer
window gains nothing holds where the label is *no effect*), and the chapters say which.

Each claim also says how each side was tuned (:attr:`PaperClaim.tuning`) and, where the effort was unequal,
which side that handicaps (:attr:`PaperClaim.handicaps`). Where a side is a set of candidate runs, the one
with the best validation perplexity is taken (:meth:`PaperClaim.candidates`), so both sides can be tuned on
equal terms. :func:`mlm.evidence.stored_claims` turns claims into rows from whatever ``results/`` holds.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

HOLDS = "holds"
SMALLER_GAIN = "smaller gain"
NO_EFFECT = "no effect"
WORSE = "worse"
INCONCLUSIVE = "inconclusive"
LARGER = "larger than reported: check the control"
LABELS = (HOLDS, SMALLER_GAIN, NO_EFFECT, WORSE, INCONCLUSIVE, LARGER)  # every verdict a chapter shows
FEW_SEEDS = "waiting for seeds"  # fewer than three a side: no verdict, the row waits for runs
NOT_RUN = "not run yet"  # no run stored, or a choice that decides the runs is not made yet
MARGIN = 0.01  # relative changes inside +-1% do not count
LEVEL = 0.95  # the interval's coverage
MIN_SEEDS = 3


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only
        return 1.0 - _incomplete_beta(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny, f, c, d = 1e-300, 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            numerator = 1.0
        elif i % 2:
            numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        else:
            numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + numerator / c
        c = c if abs(c) > tiny else tiny
        f *= c * d
        if abs(1.0 - c * d) < 1e-15:
            break
    return front * (f - 1.0)


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t distribution with ``df`` (> 0, not necessarily whole) degrees of
    freedom, found by bisection on :func:`t_cdf` (no SciPy)."""
    if not (0.5 <= q < 1 and df > 0):
        raise ValueError(f"t_quantile needs 0.5 <= q < 1 and df > 0, got q={q}, df={df}")
    low, high = 0.0, 1.0
    while t_cdf(high, df) < q:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < q else (low, mid)
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


def label(low: float, high: float, paper: float | None = None, margin: float = MARGIN) -> str:
    """The rule's label for an interval ``[low, high]`` of the relative change (already widened by any
    machine term), against the paper's change ``paper`` (None: no size reported). See the module docstring."""
    if not low <= high:
        raise ValueError(f"an interval needs low <= high, got {low} and {high}")
    if high < -margin:  # a gain that clears the margin
        if paper is None:
            return HOLDS
        if high < min(2 * paper, -margin):
            return LARGER
        return HOLDS if low <= paper else SMALLER_GAIN
    if -margin < low and high < margin:
        return NO_EFFECT
    if low > margin:
        return WORSE
    return INCONCLUSIVE


def verdict(model: Sequence[float], control: Sequence[float] | float, *, paper: float | None = None,
            machine: float = 0.0, min_seeds: int = MIN_SEEDS, margin: float = MARGIN) -> str:
    """The rule's label for per-seed perplexities ``model`` against ``control`` (a plain number: a count
    baseline, which has no seeds), the paper's change ``paper`` and the machine term ``machine`` (the
    interval is widened by it at both ends). :data:`FEW_SEEDS` where a side has fewer than ``min_seeds``."""
    deterministic = isinstance(control, (int, float))
    model = [float(v) for v in model]
    control = float(control) if deterministic else [float(v) for v in control]
    both = model + ([control] if deterministic else control)
    if not model or not both[len(model):]:
        raise ValueError("verdict() needs at least one run of the model and one of the control")
    if any(math.isnan(v) for v in both):
        raise ValueError("verdict() got a NaN perplexity: a run diverged; look at its metrics first")
    if machine < 0:
        raise ValueError(f"the machine term widens the interval: it cannot be negative ({machine})")
    if (len(model) if deterministic else min(len(model), len(control))) < min_seeds:
        return FEW_SEEDS
    _, low, high = relative_change(model, control)
    return label(low - machine, high + machine, paper, margin)


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``mean ± sd (n seeds)``; one value prints as itself with "(1 seed)"."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("spread() needs at least one value")
    if len(values) == 1:
        return f"{values[0]:.{digits}f} (1 seed)"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f} ({len(values)} seeds)"


def interval_text(model: Sequence[float], control: Sequence[float] | float, machine: float = 0.0) -> str:
    """``-2.3% (95% interval -3.1% to -1.5%)``, and where ``machine`` is not 0 the interval widened by it as
    well, named the hardware allowance; the change alone where a side has one run."""
    n = len(model) if isinstance(control, (int, float)) else min(len(model), len(control))
    if n < 2:
        base = control if isinstance(control, (int, float)) else statistics.fmean(control)
        return f"{statistics.fmean(model) / base - 1:+.1%}"
    change, low, high = relative_change(model, control)
    widened = (f"; with the hardware allowance, ±{machine:.1%}: {low - machine:+.1%} to "
               f"{high + machine:+.1%}") if machine else ""
    return f"{change:+.1%} ({LEVEL:.0%} interval {low:+.1%} to {high:+.1%}{widened})"


@dataclass
class Claim:
    """One row of a claims table."""

    claim: str  # the paper's claim in the book's words, with its source (table, section)
    evidence: str  # the paper's pair and ours: numbers, seeds, the change and its interval
    verdict: str  # one of LABELS, or NOT_RUN / FEW_SEEDS while the row waits for runs
    question: str = ""  # the comparison the runs make: the paper's own, or the book's (and how it departs)
    seeds: tuple = ()  # (model's per-seed perplexities, control's, the paper's change or None) where decided
    tuning: str = ""  # how each side was tuned
    handicaps: str = ""  # "the paper" or "the control" where the tuning was unequal, "" where it was equal
    reason: str = ""  # why the verdict cannot be read as a test of the claim (e.g. an untrained control)
    machine: float = 0.0  # the machine term the interval was widened by
    model_run: str = ""  # the runs each side read (the chosen candidates)
    control_run: str = ""
    command: str = ""  # the command that trains the runs the row still lacks (Markdown code)
    cost: str = ""  # how many runs that is and their expected time on one CPU thread, e.g. "15 runs, about 26 h ..."

    @property
    def decided(self) -> bool:
        """The rule gave a verdict (three seeds a side at least)."""
        return self.verdict in LABELS

    @property
    def label_text(self) -> str:
        """The verdict with the side an unequal trial handicaps, e.g. ``worse (handicaps the paper)``."""
        return f"{self.verdict} (handicaps {self.handicaps})" if self.handicaps and self.decided else self.verdict


def awaits_runs(row: Claim | str) -> bool:
    """True where the rule withholds a verdict for want of runs (none stored, or fewer than three seeds a
    side). Chapters and reports list such claims as waiting instead of drawing them."""
    verdict_text = row.verdict if isinstance(row, Claim) else row
    return verdict_text in (NOT_RUN, FEW_SEEDS)


@dataclass(frozen=True)
class PaperClaim:
    """A paper's claim that a manifest tests: its run ``model`` against its run ``control`` (both in
    ``group``), beside the pair the paper reported (the ``key`` numbers, e.g. ``test``, of the presets
    ``paper_model`` and ``paper_control``). ``chapter`` is the chapter whose model it is.

    ``model`` and ``control`` may each be a tuple of candidate runs (a setting tuned over a grid): the side
    then reads the candidate with the lowest mean validation perplexity over the seeds all its candidates
    share (:func:`mlm.evidence.stored_claims`). ``tuning`` says in words how each side was tuned, and
    ``handicaps`` which side an unequal effort handicaps ("the paper", "the control"; "" where equal);
    ``unfair`` says why the trial could not be made equal where it is not. ``contrast`` names the contrast the
    paper's pair measured where it is not the row's own ("at equal width"): its change then sets no size for
    the verdict, and a figure draws no ◇ for it."""

    text: str  # the claim in the book's words, with its source
    group: str
    model: str | tuple[str, ...]
    control: str | tuple[str, ...]
    paper_model: str
    paper_control: str
    key: str = "test"
    chapter: str = ""
    question: str = ""  # which comparison the runs make: the paper's own, or the book's (and how it departs)
    pending: str = ""  # why the manifest cannot list the runs yet (e.g. a grid decides a setting first)
    tuning: str = ""
    handicaps: str = ""
    unfair: str = ""
    contrast: str = ""  # the paper's pair measured another contrast, e.g. "at equal width"

    def __post_init__(self):
        if self.handicaps not in ("", "the paper", "the control"):
            raise ValueError(f"{self.text!r}: handicaps is 'the paper', 'the control' or '', not {self.handicaps!r}")

    @staticmethod
    def candidates(side: str | tuple[str, ...]) -> tuple[str, ...]:
        """The runs one side chooses from (one run: itself)."""
        return (side,) if isinstance(side, str) else tuple(side)

    @property
    def tunes_both(self) -> bool:
        """Whether each side is chosen on validation among candidates (both sides tuned)."""
        return not isinstance(self.model, str) and not isinstance(self.control, str)

    @property
    def runs(self) -> tuple[str, ...]:
        """Every run the claim may read."""
        return (*self.candidates(self.model), *self.candidates(self.control))


def markdown_cell(text) -> str:
    """``text`` made safe for one cell of a Markdown table (pipes escaped, on one line)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence], right: bool = True) -> str:
    """A Markdown table: ``header``'s names, then one line per row (cells made safe by :func:`markdown_cell`);
    every column after the first aligned right where ``right`` (numbers)."""
    align = "|---|" + ("---:|" if right else "---|") * (len(header) - 1)
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", align]
    return "\n".join(lines + ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows])


def claims_markdown(claims: Iterable[Claim], tuning: bool = True) -> str:
    """The claims as a Markdown table (| claim | question | tuning | our evidence | verdict |); the question
    and tuning columns appear where any row has one."""
    claims = list(claims)
    columns = [("the paper's claim", lambda c: c.claim)]
    if any(c.question for c in claims):
        columns.append(("the question our runs answer", lambda c: c.question or "–"))
    if tuning and any(c.tuning for c in claims):
        columns.append(("how each side was tuned", lambda c: c.tuning or "–"))
    columns += [("the paper; ours (test perplexity)", lambda c: c.evidence),
                ("verdict", lambda c: f"**{c.label_text}**")]
    lines = ["| " + " | ".join(name for name, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(markdown_cell(get(c)) for _, get in columns) + " |" for c in claims]
    return "\n".join(lines)


def show_claims(claims: Iterable[Claim], tuning: bool = True) -> str:
    """Display the claims table (rendered Markdown in a notebook, plain text elsewhere); returns the Markdown."""
    return show_markdown(claims_markdown(list(claims), tuning))


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
