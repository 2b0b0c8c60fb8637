"""Figures of the key-value recall task (chapters 00, 02-04 and 06): how the task is drawn, and accuracy by
the distance Δ from the source to the critical token."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from mlm.plots.common import _with_seeds

__all__ = ["recall_by_distance", "recall_design", "recall_spread_by_distance", "recall_panels"]


def recall_design(distance, position, ax=None, title: str = "Each distance is asked over a range of positions"):
    """The recall task's questions as a 2-D histogram: the distance Δ from the source to the critical token
    against the critical token's position in its line (``distance`` and ``position``, one entry per question).
    Returns the axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    *_, image = ax.hist2d(distance, position, bins=[np.arange(1.5, 61, 1), np.arange(-0.5, 124, 4)], cmap="Greys")
    ax.figure.colorbar(image, ax=ax, label="questions in the training lines")
    ax.set_xlabel("distance Δ from the source to the critical token")
    ax.set_ylabel("position of the critical token in its line")
    ax.set_title(title, fontsize=10)
    return ax


def recall_by_distance(scores: dict, chance: float, reach: dict | None = None, width: int = 5, ax=None,
                       title: str = ""):
    """Accuracy on the critical tokens of the recall task against the distance Δ, one line per model.

    ``scores`` maps a label to a :class:`mlm.long_range.CriticalScores`; each point is a bin of
    ``width`` distances. ``chance`` draws the accuracy of a model that cannot see the source, and
    ``reach`` ({label: Δ}) marks how far back a head can read (a window, a memory of n words).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    for i, (label, s) in enumerate(scores.items()):
        rows = s.binned(width)
        ax.plot([(lo + hi) / 2 for lo, hi, *_ in rows], [acc for _, _, acc, _, _ in rows], "-o", ms=3,
                color=f"C{i}", label=label)
        if reach and label in reach:
            ax.axvline(reach[label] + 0.5, color=f"C{i}", lw=1, ls=":", label=f"{label}: reach Δ = {reach[label]}")
    return _recall_axes(ax, chance, width, title)


def recall_spread_by_distance(stored: dict, chance: float, width: int = 5, ax=None, title: str = "",
                              styles: dict | None = None):
    """Accuracy on the critical token against Δ for every family, the mean over seeds as a line and the
    lowest and highest seed as a band; ``stored`` maps a label to :class:`mlm.stored.StoredRecall`.
    ``styles`` ({label: matplotlib line style}) tells families apart beyond their colour."""
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 5))
    for i, (label, entry) in enumerate(stored.items()):
        binned = [s.binned(width) for s in entry.scores]  # per seed: (lo, hi, acc, loss, n) per bin
        centres = [(lo + hi) / 2 for lo, hi, *_ in binned[0]]
        accs = torch.tensor([[acc for _, _, acc, _, _ in rows] for rows in binned])  # (seeds, bins)
        color = plt.cm.tab10(i % 10)
        ax.plot(centres, accs.mean(0), (styles or {}).get(label, "-"), marker="o", ms=3, color=color,
                label=_with_seeds(label, len(entry.seeds)))
        ax.fill_between(centres, accs.min(0).values, accs.max(0).values, color=color, alpha=0.08, lw=0)
    return _recall_axes(ax, chance, width, title, legend_outside=True)


def recall_panels(stored: dict, chance: float, reach: dict | None = None, reference: str | None = None,
                  width: int = 5, columns: int = 5, title: str = "", starts: list[int] | None = None):
    """Small multiples of the recall task: one panel per family (``stored`` maps a label to a
    :class:`mlm.stored.StoredRecall`), one line per seed, accuracy on the critical token against Δ in bins of
    ``width`` (or bins that begin at ``starts``, so that a bin edge can fall at each reach). Every panel draws
    chance (dashed), the family's reach where it has one (``reach``: {label: the largest Δ its head can
    read}, a dotted line) and, in grey, the mean of the ``reference`` family (e.g. the plain LSTM) for
    comparison. Returns the figure."""
    import math

    rows = math.ceil(len(stored) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.3 * rows + 0.6), sharex=True, sharey=True,
                             squeeze=False)
    centre = lambda binned: [(lo + hi) / 2 for lo, hi, *_ in binned]  # noqa: E731
    if reference is not None:
        ref = [s.binned(width, starts) for s in stored[reference].scores]
        ref_mean = torch.tensor([[acc for _, _, acc, _, _ in b] for b in ref]).mean(0)
    for ax, (label, entry) in zip(axes.flat, stored.items()):
        if reference is not None and label != reference:
            ax.plot(centre(ref[0]), ref_mean, color="0.7", lw=2.5, label=f"{reference}, mean")
        for i, (seed, scores) in enumerate(zip(entry.seeds, entry.scores)):
            binned = scores.binned(width, starts)
            ax.plot(centre(binned), [acc for _, _, acc, _, _ in binned], "-o", ms=2.5, lw=1.2, color=f"C{i}",
                    label=f"seed {seed}")
        ax.axhline(chance, color="k", lw=1, ls="--")
        if reach and label in reach:
            ax.axvline(reach[label] + 0.5, color="tab:red", lw=1, ls=":")
            ax.text(reach[label] + 1.5, 0.92, f"reach {reach[label]}", fontsize=10, color="tab:red")
        ax.set_title(label, fontsize=10)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(stored):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("distance Δ")
    for i in range(max(len(stored), columns), axes.size):  # a panel above an empty one shows its own Δ axis
        axes.flat[i - columns].tick_params(labelbottom=True)
        axes.flat[i - columns].set_xlabel("distance Δ")
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy")
    handles, labels = axes.flat[1 if len(stored) > 1 else 0].get_legend_handles_labels()
    fig.suptitle(title + f" (dashed: chance {chance:.2f})", fontsize=10, x=0.01, ha="left")
    if len(stored) < axes.size:  # an empty panel holds the legend, clear of the title
        axes.flat[len(stored)].legend(handles, labels, loc="center", fontsize=10, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
    else:  # a row of its own under the title
        inches = fig.get_figheight()  # the title and the legend row keep their size in inches at any height
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.26 / inches), fontsize=10,
                   ncol=len(labels), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.36 / inches))
    return fig


def _recall_axes(ax, chance: float, width: int, title: str, legend_outside: bool = False):
    """The chance line, labels, limits and legend shared by the recall plots."""
    ax.axhline(chance, color="k", lw=1, ls="--", label=f"chance ({chance:.2f})")
    ax.set_xlabel(f"distance Δ from the source to the critical token (bins of {width})")
    ax.set_ylabel("accuracy on the critical token")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, **({"loc": "center left", "bbox_to_anchor": (1.01, 0.5)} if legend_outside else {}))
    return ax
