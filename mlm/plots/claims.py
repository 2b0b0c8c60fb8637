"""Figures of claims and measurements across families: the interval plot, how often the rule gives each label
(synthetic seeds), history-cut curves."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from mlm.plots.common import _with_seeds

__all__ = ["history_curves", "interval_plot", "label_rates", "LABEL_COLORS"]


def history_curves(curves: dict, ax=None, title: str = "", styles: dict | None = None, legend: bool = True,
                   colors: dict | None = None):
    """Test perplexity with the history cut to k words, relative to the whole history, against k.

    ``curves`` maps a label to one ``{k: perplexity}`` per seed (the ``test_ppl_by_history`` of the
    ``history-cut`` post-step, ``"all"`` included); the line is the mean ratio over seeds, the band the
    lowest and highest seed. A ratio of 1.0 at k means the model uses no more than k words of history.
    ``colors`` ({label: colour}) keeps a family's colour the same across several panels.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4.5))
    for i, (label, seeds) in enumerate(curves.items()):
        ks = sorted(int(k) for k in seeds[0] if k != "all")
        ratios = torch.tensor([[s[str(k)] / s["all"] for k in ks] for s in seeds])  # (seeds, ks)
        color = (colors or {}).get(label) or (plt.cm.tab10(i % 10) if len(curves) <= 10 else plt.cm.tab20(i % 20))
        ax.plot(ks, ratios.mean(0), (styles or {}).get(label, "-"), marker="o", ms=3, color=color,
                label=_with_seeds(label, len(seeds)))
        if len(seeds) > 1:
            ax.fill_between(ks, ratios.min(0).values, ratios.max(0).values, color=color, alpha=0.1, lw=0)
    ax.axhline(1.0, color="k", lw=1, ls="--")
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.set_xlabel("history available at evaluation: the last k words of the sentence")
    ax.set_ylabel("perplexity / perplexity with all the history")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return ax


def interval_plot(rows, labels: list[str], ax=None, title: str = ""):
    """One line per decided claims row (:class:`mlm.claims.Claim` with ``seeds``): the relative change of our
    mean perplexity against the control's with its 95% interval (a bar; a thinner extension where the machine
    term widens it), the paper's reported change (a hollow diamond, where the paper's pair is a controlled
    comparison), and the verdict beside it. Left of 0 the model is better; the grey band is the margin inside
    which a change does not count. Rows still waiting for runs are left out."""
    from mlm.claims import MARGIN, awaits_runs, relative_change

    kept = [(row, label) for row, label in zip(rows, labels) if row.seeds and not awaits_runs(row)
            and min(len(row.seeds[0]), len(row.seeds[1])) >= 2]  # an interval needs two seeds a side
    rows, labels = [row for row, _ in kept], [label for _, label in kept]
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.2))
    for y, row in enumerate(rows):
        model, control, paper = row.seeds
        change, low, high = relative_change(model, control)
        if row.machine:
            ax.plot([100 * (low - row.machine), 100 * (high + row.machine)], [y, y], color="C0", lw=1)
        ax.plot([100 * low, 100 * high], [y, y], color="C0", lw=3, solid_capstyle="butt")
        ax.plot(100 * change, y, "o", color="C0")
        if paper is not None:  # None: the paper's pair is no controlled comparison, it has no size here
            ax.plot(100 * paper, y, "D", mfc="none", mec="black", ms=7)
        ax.text(1.02, y, row.label_text, transform=ax.get_yaxis_transform(), va="center", fontsize=9)
    ax.axvspan(-100 * MARGIN, 100 * MARGIN, color="0.9", zorder=0)
    ax.axvline(0, color="0.4", lw=1)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    widened = "; thin: the hardware allowance" if any(row.machine for row in rows) else ""
    ax.set_xlabel(f"change of test perplexity against the control (%): ours, with its 95% interval{widened}; "
                  "◇ the paper")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    return ax


LABEL_COLORS = {"holds": "tab:green", "smaller gain": "yellowgreen", "no effect": "0.75", "worse": "tab:red",
                "inconclusive": "tab:orange", "larger than reported: check the control": "tab:purple"}


def label_rates(changes, panels: dict, paper: float | None = None, titles: list[str] | None = None):
    """How often the rule gives each label against a true relative change: one panel per entry of ``panels``
    ({key: one {label: share} per change in ``changes``}), the shares stacked so that each column sums to 1.
    ``paper`` marks the paper's change (and twice it, where the flag starts); the hatched band is the margin.
    Returns the figure."""
    from matplotlib.patches import Patch

    from mlm.claims import LABELS, MARGIN

    x = [100 * c for c in changes]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.9), sharey=True, squeeze=False)
    for i, (ax, shares) in enumerate(zip(axes[0], panels.values())):
        ax.stackplot(x, [[s[label] for s in shares] for label in LABELS], labels=LABELS,
                     colors=[LABEL_COLORS[label] for label in LABELS], alpha=0.9)
        ax.axvspan(-100 * MARGIN, 100 * MARGIN, facecolor="none", edgecolor="k", hatch="//", lw=0, alpha=0.4)
        if paper is not None:
            for where, text in ((paper, "the paper"), (2 * paper, "twice the paper")):
                ax.axvline(100 * where, color="k", ls="--", lw=1)
                ax.text(100 * where + 0.2, 1.01, text, fontsize=9, va="bottom")
        ax.set_xlim(min(x), max(x))
        ax.set_ylim(0, 1)
        ax.set_xlabel("true change of the model's perplexity (%)")
        if titles:
            ax.set_title(titles[i], fontsize=10, pad=18)
    axes[0, 0].set_ylabel("share of trials given each label")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(Patch(facecolor="none", edgecolor="k", hatch="//", lw=0, alpha=0.4))
    labels.append(f"the ±{MARGIN:.0%} margin")
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig
