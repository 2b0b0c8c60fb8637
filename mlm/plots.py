"""Figures shared by the chapters (matplotlib, no interactive backend needed)."""

from __future__ import annotations

import matplotlib.pyplot as plt


def learning_curves(histories: dict[str, list[dict]], title: str = "", ax=None):
    """Train (dashed) and validation (solid) perplexity per epoch for several runs."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for i, (label, history) in enumerate(histories.items()):
        color = f"C{i}"
        epochs = [h["epoch"] for h in history]
        ax.plot(epochs, [h["valid_ppl"] for h in history], "-o", color=color, label=f"{label} (valid)")
        ax.plot(epochs, [h["train_ppl"] for h in history], "--", color=color, alpha=0.6, label=f"{label} (train)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("perplexity (log scale)")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def zipf(counts_by_corpus: dict[str, list[int]], ax=None):
    """Word frequency against frequency rank on log-log axes."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for label, counts in counts_by_corpus.items():
        counts = sorted((c for c in counts if c > 0), reverse=True)
        ax.loglog(range(1, len(counts) + 1), counts, label=label)
    ax.set_xlabel("rank of the word type")
    ax.set_ylabel("count in the training set")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax
