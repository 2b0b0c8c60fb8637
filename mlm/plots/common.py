"""Figure helpers every chapter and report shares: learning curves, seeds, labels, flow diagrams."""

from __future__ import annotations

import matplotlib.pyplot as plt

__all__ = ["learning_curves", "train_valid_panels", "seed_curves", "valid_by_seed", "flow_diagram"]


def _with_seeds(label: str, n: int) -> str:
    """A legend label with its number of seeds: "LSTM (3 seeds)", "LSTM (1 seed)"."""
    return f"{label} ({n} seed{'s' if n != 1 else ''})"


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


def _head_box(ax, x, y, text, width):
    """A rounded white box of ``width`` centred on (x, y) holding ``text``: one block of a head diagram."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - 0.32), width, 0.64, boxstyle="round,pad=0.05",
                                facecolor="white", edgecolor="0.3", zorder=2))
    ax.text(x, y, text, ha="center", va="center", fontsize=9, zorder=3)


def train_valid_panels(histories: dict[str, list[dict]], baseline: float | None = None,
                       baseline_label: str = "count baseline", title: str = "", panel_width: float = 4.2):
    """One panel per run: train (dashed) and validation (solid) perplexity per epoch, ticks at whole
    epochs, a shared log-scale y axis and, where given, a count baseline's perplexity as a dotted line
    (chapter 01: the gap between the two curves is overfitting)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    fig, axes = plt.subplots(1, len(histories), figsize=(panel_width * len(histories), 3.6), sharey=True,
                             squeeze=False)
    for i, (ax, (label, history)) in enumerate(zip(axes[0], histories.items())):
        epochs = [h["epoch"] for h in history]
        ax.plot(epochs, [h["train_ppl"] for h in history], "--", color="C0", label="train")
        ax.plot(epochs, [h["valid_ppl"] for h in history], "-o", color="C1", ms=4, label="validation")
        if baseline is not None:
            ax.axhline(baseline, color="0.4", ls=":", lw=1.5, label=baseline_label)
        step = max(1, round(len(epochs) / 7))
        ax.set_xticks(epochs[::step])
        ax.set_xlabel("epoch")
        ax.set_title(label, fontsize=11)
        ax.grid(alpha=0.3)
        if i == 0:
            ax.set_ylabel("perplexity (log scale)")
            ax.legend(fontsize=9, loc="lower left")
    ax = axes[0, 0]
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    ticks = [v for v in (20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000) if low <= v <= high]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_locator(NullLocator())
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _finish(ax, xlabel: str, ylabel: str, title: str = ""):
    """The axis labels, a small title, a light grid and the legend that every line plot of the book ends with."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    return ax


def _plain_log_axis(ax, ticks):
    """A log y axis labelled with plain numbers at ``ticks`` (no 10^x labels, no minor tick labels)."""
    ax.set_yscale("log")
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


def seed_curves(panels: dict[str, list[list[dict]]], axes=None, ylim: tuple[float, float] = (40, 400),
                ticks=(50, 100, 200, 400), by_text: bool = False):
    """Small multiples of stored runs, one panel per setting and one line per seed: validation perplexity
    (solid) and training perplexity (dashed) by epoch, with a dot at each seed's best validation epoch.

    ``panels`` maps a title to the ``metrics.jsonl`` rows of each seed (:func:`mlm.training.read_metrics`).
    Each seed has its own colour; with ``by_text`` the two texts have one colour each instead (training blue,
    validation orange), so that seeds that agree overlap (:func:`mlm.plots.fit_curves` adds the key).
    """
    from matplotlib.ticker import MaxNLocator

    if axes is None:
        _, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels) + 0.6, 3.4), sharey=True, squeeze=False)
        axes = axes[0]
    for ax, (title, seeds) in zip(axes, panels.items()):
        for s, history in enumerate(seeds):
            epochs = [h["epoch"] for h in history]
            valid = [h["valid_ppl"] for h in history]
            best = min(range(len(valid)), key=valid.__getitem__)
            if by_text:  # one colour per text
                valid_style = {"color": "C1", "lw": 1.3, "alpha": 0.8}
                train_style = {"color": "C0", "lw": 1.1, "alpha": 0.8}
                dot_style = {"color": "C1", "mec": "black", "ms": 6, "zorder": 3}
            else:  # one colour per seed
                valid_style = {"color": f"C{s}", "lw": 1.5}
                train_style = {"color": f"C{s}", "lw": 1, "alpha": 0.7}
                dot_style = {"color": f"C{s}", "ms": 5}
            ax.plot(epochs, valid, "-", **valid_style)
            ax.plot(epochs, [h["train_ppl"] for h in history], "--", **train_style)
            ax.plot(epochs[best], valid[best], "o", **dot_style)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _plain_log_axis(ax, ticks)
        ax.set_ylim(*ylim)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("perplexity (log scale)")
    return axes


def valid_by_seed(groups: dict[str, list[list[dict]]], ax=None, ylim: tuple[float, float] | None = None,
                  first_epoch: int = 1):
    """Validation perplexity by epoch of stored runs, one colour per setting and one line per seed, with a dot
    at each seed's best epoch; ``first_epoch`` leaves out the steep start."""
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for i, (label, seeds) in enumerate(groups.items()):
        for s, history in enumerate(seeds):
            rows = [h for h in history if h["epoch"] >= first_epoch]
            epochs, valid = [h["epoch"] for h in rows], [h["valid_ppl"] for h in rows]
            best = min(range(len(valid)), key=valid.__getitem__)
            ax.plot(epochs, valid, "-", color=f"C{i}", lw=1.3, alpha=0.85,
                    label=_with_seeds(label, len(seeds)) if s == 0 else None)
            ax.plot(epochs[best], valid[best], "o", color=f"C{i}", ms=5, zorder=3)  # above later curves
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9)
    return ax


def flow_diagram(steps: list[tuple[str, str]], title: str = "", notes: dict[int, str] | None = None,
                 width: float = 9.0):
    """A model drawn as a column of boxes joined by arrows, top to bottom: each step is (what it computes,
    the shape of what it gives); ``notes`` puts a remark beside the box of that index (a test-time branch,
    an equation number)."""
    height = 0.9 * len(steps) + 0.4
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.5, len(steps) - 0.3)
    ax.axis("off")
    for k, (text, shape) in enumerate(steps):
        y = len(steps) - 1 - k
        ax.text(3.2, y, text, ha="center", va="center", fontsize=10,
                bbox=dict(boxstyle="round,pad=0.35", fc="#eef3fa", ec="#4a6fa5"))
        ax.text(6.2, y, shape, ha="left", va="center", fontsize=9.5, family="monospace", color="#333333")
        if notes and k in notes:
            ax.text(6.2, y - 0.3, notes[k], ha="left", va="center", fontsize=8.5, style="italic", color="#8a4b08")
        if k:
            ax.annotate("", xy=(3.2, y + 0.3), xytext=(3.2, y + 0.7),
                        arrowprops=dict(arrowstyle="->", color="#4a6fa5", lw=1.2))
    if title:
        ax.set_title(title, fontsize=11)
    fig.tight_layout()
    return fig
