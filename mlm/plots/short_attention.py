"""Figures of the short attention spans (chapter 03 and report r03): the window and N-gram heads, where
attention goes, and the stored runs of the paper's own recipe."""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt

from mlm.plots.common import _head_box

__all__ = ["window_head_diagram", "ngram_head_diagram", "window_heatmap", "window_profile", "verdict_intervals",
           "own_protocol_curves", "attention_by_position"]


def window_head_diagram(window: int = 3, ax=None):
    """Daniluk et al.'s key-value-predict head (their Figure 1c) with the shape of every tensor: the LSTM
    output of each step split into key, value and predict parts, the window of the previous ``window``
    outputs, and the equations that turn them into the next-word distribution. Keys go down to the scores,
    values up to the read. (Plain attention uses one vector as all three parts; key-value predicts from the
    value.)"""
    from matplotlib.patches import Rectangle

    if ax is None:
        _, ax = plt.subplots(figsize=(9.5, 6.5))
    parts = [("$k$", "key", "#4C72B0"), ("$v$", "value", "#DD8452"), ("$p$", "predict", "#55A868")]
    xs = [1.2 * i for i in range(window)] + [1.2 * window + 0.8]  # the window's columns, then the current step
    names = [f"$h_{{t-{window - i}}}$" for i in range(window)] + ["$h_t$"]
    ax.add_patch(Rectangle((xs[0] - 0.5, -0.75), xs[window - 1] - xs[0] + 1.0, 2.75, facecolor="0.94",
                           edgecolor="0.6", ls="--", zorder=0))
    ax.text(xs[0] - 0.45, 2.05, f"window $Y_t$ (L = {window} drawn)", fontsize=9, va="bottom")  # above the frame
    for x, name in zip(xs, names):
        for j, (symbol, _, color) in enumerate(parts):
            ax.add_patch(Rectangle((x - 0.3, 0.5 * j), 0.6, 0.5, facecolor=color, edgecolor="white"))
            ax.text(x, 0.5 * j + 0.25, symbol, ha="center", va="center", color="white", fontsize=10)
        ax.text(x, -0.4, name, ha="center", va="center", fontsize=11)
    for j, (_, word, color) in enumerate(parts):
        ax.text(xs[-1] + 0.4, 0.5 * j + 0.25, f"{word} (batch, time, d)", va="center", fontsize=8, color=color)
    ax.text(xs[-1] + 0.4, 1.75, "LSTM output (batch, time, 3d),\nsplit in three (Eq. 11)", va="center", fontsize=8)

    box = functools.partial(_head_box, ax)

    def arrow(x0, y0, x1, y1, color="0.3", **kw):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": color, "lw": 1.3, **kw})

    left = xs[0] - 0.5
    score_y, read_y, merge_y, out_y = -1.9, 2.9, 4.1, 5.3
    box(left - 0.6 + 3.4, score_y, r"$\alpha_t = \mathrm{softmax}(w^\top \tanh(W^Y K_t + W^h k_t\,\mathbf{1}^\top))$"
        "   (batch, time, L)   Eq. 7-8", 6.8)
    box(left - 0.6 + 2.7, read_y, r"$r_t = \sum_j \alpha_{t,j}\, v_{t-L+j}$   (batch, time, d)   Eq. 9", 5.4)
    box(left + 5.2, merge_y, r"$h^*_t = \tanh(W^r r_t + W^x p_t)$   (batch, time, d)   Eq. 12", 5.6)
    box(left + 5.2, out_y, r"$y_t = \mathrm{softmax}(W^* h^*_t + b)$   (batch, time, |V|)   Eq. 5", 5.6)
    for x in xs[:window]:
        arrow(x, 0.0, x, score_y + 0.38, parts[0][2])  # each key in the window is scored
        arrow(x + 0.3, 0.75, x + 0.45, read_y - 0.38, parts[1][2])  # each value is read
    arrow(xs[-1] - 0.3, 0.25, xs[-1] - 0.7, score_y + 0.38, parts[0][2])  # the current key asks
    arrow(xs[-1], 1.5, xs[-1], merge_y - 0.38, parts[2][2])  # the current predict part
    arrow(left - 0.3, score_y + 0.38, left - 0.3, read_y - 0.38)  # the weights
    ax.text(left - 0.4, (score_y + read_y) / 2, r"$\alpha_t$", ha="right", va="center", fontsize=11)
    arrow(left + 4.0, read_y + 0.34, left + 4.0, merge_y - 0.36)
    arrow(left + 5.2, merge_y + 0.34, left + 5.2, out_y - 0.36)
    ax.set_xlim(left - 1.0, xs[-1] + 3.3)
    ax.set_ylim(score_y - 0.6, out_y + 0.5)
    ax.set_axis_off()
    ax.set_title("Key-value-predict attention over a window (Daniluk et al. 2017, Figure 1c)", fontsize=11)
    return ax


def ngram_head_diagram(n: int = 4, ax=None):
    """Daniluk et al.'s N-gram RNN head (their Figure 1d, Eq. 13) with the shape of every tensor: the LSTM
    output of each step split into N-1 parts, and part j of the output j-1 steps back concatenated."""
    from matplotlib.patches import Rectangle

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 5))
    parts = n - 1
    colors = [plt.cm.viridis(0.15 + 0.7 * j / max(parts - 1, 1)) for j in range(parts)]
    # white text on the dark parts, dark text on viridis' light yellow end
    ink = ["0.1" if 0.299 * r + 0.587 * g + 0.114 * b > 0.6 else "white" for r, g, b, _ in colors]
    xs = [1.3 * i for i in range(parts)]  # h_t .. h_{t-N+2}: newest on the left, so no arrows cross
    for i, x in enumerate(xs):
        back = i  # steps back
        for j in range(parts):
            used = j == back  # part j+1 of the output j steps back
            ax.add_patch(Rectangle((x - 0.3, 0.5 * j), 0.6, 0.5, facecolor=colors[j], edgecolor="white",
                                   alpha=1.0 if used else 0.25))
            ax.text(x, 0.5 * j + 0.25, f"$h^{j + 1}$", ha="center", va="center", fontsize=10,
                    color=ink[j] if used else "0.3")
        ax.text(x, -0.35, "$h_t$" if back == 0 else f"$h_{{t-{back}}}$", ha="center", va="center", fontsize=11)
    ax.annotate("", xy=(xs[-1] + 0.3, -0.62), xytext=(xs[0] - 0.3, -0.62),
                arrowprops={"arrowstyle": "->", "color": "0.5", "lw": 1.0})
    ax.text(xs[0] - 0.4, -0.62, "further back", ha="right", va="center", fontsize=8, color="0.4")
    ax.text(xs[-1] + 0.5, 0.5 * parts / 2, f"LSTM output (batch, time, {parts}d),\nsplit in {parts} parts of d;\n"
            "faded parts serve other steps", va="center", fontsize=8)

    box = functools.partial(_head_box, ax)

    centre = (xs[0] + xs[-1]) / 2
    cat_y, merge_y, out_y = 0.5 * parts + 1.2, 0.5 * parts + 2.4, 0.5 * parts + 3.6
    stacked = "; ".join(["h^1_t"] + [f"h^{j + 1}_{{t-{j}}}" for j in range(1, parts)])
    box(centre, cat_y, f"$[{stacked}]$   (batch, time, {parts}d)", 4.6)
    box(centre, merge_y, r"$h^*_t = \tanh(W^N [\,\cdots])$   (batch, time, d)   Eq. 13", 4.6)
    box(centre, out_y, r"$y_t = \mathrm{softmax}(W^* h^*_t + b)$   (batch, time, |V|)   Eq. 5", 4.6)
    for j, x in enumerate(xs):  # part j+1 of the output j steps back
        # an arrow in the part's colour, from the top of its column to its own term of the box, whose order
        # is the paper's: h^1_t first
        ax.annotate("", xy=(centre + 0.6 * (j - (parts - 1) / 2), cat_y - 0.36), xytext=(x, 0.5 * parts + 0.05),
                    arrowprops={"arrowstyle": "->", "color": colors[j], "lw": 1.6})
    for y0, y1 in ((cat_y, merge_y), (merge_y, out_y)):
        ax.annotate("", xy=(centre, y1 - 0.36), xytext=(centre, y0 + 0.34),
                    arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 1.3})
    ax.set_xlim(xs[0] - 1.9, xs[-1] + 2.6)
    ax.set_ylim(-0.85, out_y + 0.5)
    ax.set_axis_off()
    ax.set_title(f"The {n}-gram RNN (Daniluk et al. 2017, Figure 1d)", fontsize=11)
    return ax


# Tokens whose glyphs a rotated tick label cannot tell apart, spelt out in the figures.
_SPELT = {",": "(comma)", ".": "(full stop)"}


def _tick(word: str) -> str:
    return _SPELT.get(word, word)


def window_heatmap(alpha, inputs: list[str], targets: list[str], start: int = 0, stop: int | None = None,
                   title: str = "", ax=None):
    """Attention over a sliding window along one article (Daniluk et al.'s Figure 3a), against uniform.

    ``alpha`` is the article's (steps, L) weights: row t holds the weights with which the word
    ``targets[t]`` is predicted, slot j (oldest first) reading the output computed at input t - L + j.
    Rows ``start`` to ``stop - 1`` are drawn, each cell in the column of the input it reads (from
    ``start - L`` on), as log2(weight x n), n the slots row t has (min(t, L)), on a diverging scale centred
    on uniform (white); cells outside a row's window are grey. Commas and full stops are spelt out in
    the tick labels. Returns the axes."""
    import numpy as np

    alpha = np.asarray(alpha, dtype=float)
    stop = len(alpha) if stop is None else min(stop, len(alpha))
    window = alpha.shape[1]
    first = max(start - window, 0)  # the first input a drawn row reads
    rows, columns = range(start, stop), range(first, stop - 1)
    weights = np.full((len(rows), len(columns)), np.nan)
    for r, t in enumerate(rows):
        for j in range(window):
            if t - window + j >= first:  # slot j reads input t - L + j
                weights[r, t - window + j - first] = alpha[t, j]
    slots = np.minimum(np.asarray(rows), window).clip(min=1)[:, None]
    ratio = np.log2(np.clip(weights * slots, 1e-6, None))
    if ax is None:
        _, ax = plt.subplots(figsize=(0.2 * len(columns) + 2.8, 0.2 * len(rows) + 2.2))
    ax.set_facecolor("0.85")
    image = ax.imshow(np.ma.masked_invalid(ratio), cmap="RdBu_r", vmin=-2, vmax=2, aspect="equal",
                      interpolation="nearest")
    ax.set_xticks(range(len(columns)), [_tick(inputs[i]) for i in columns], rotation=90, fontsize=8)
    ax.set_yticks(range(len(rows)), [_tick(targets[t]) for t in rows], fontsize=8)
    ax.set_xlabel("input whose output is read (grey: outside the row's window)", fontsize=9)
    ax.set_ylabel("word being predicted", fontsize=9)
    ax.set_title(title, fontsize=10)
    bar = plt.colorbar(image, ax=ax, fraction=0.03, pad=0.02, ticks=[-2, -1, 0, 1, 2])
    bar.ax.set_yticklabels(["1/4", "1/2", "1 (uniform)", "2", "4"], fontsize=8)
    bar.set_label("weight / uniform weight of the row", fontsize=9)
    return ax


def window_profile(profiles: dict, title: str = "", ax=None):
    """The mean attention weight of each window position against uniform (``L`` times the weight, so 1 is
    uniform; oldest slot first; Daniluk et al.'s Figure 3b), one line per entry of ``profiles`` ({label: L
    weights}). The axis spans at least 0.8 to 1.2, so a tilt of a few percent reads as small and a head leaning
    on its last slots would still fit. Returns the axes."""
    from matplotlib.ticker import MultipleLocator

    window = len(next(iter(profiles.values())))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    positions = list(range(-window, 0))
    ratios = {label: [window * float(w) for w in weights] for label, weights in profiles.items()}
    for i, (label, ratio) in enumerate(ratios.items()):
        ax.plot(positions, ratio, "-o", ms=4, color=f"C{i}", label=label)
    ax.axhline(1, color="k", lw=1, ls="--", label=f"uniform (each slot 1/{window})")
    values = [r for ratio in ratios.values() for r in ratio]
    ax.set_ylim(min(0.8, min(values) - 0.05), max(1.2, max(values) + 0.05))
    ax.set_xlim(-window - 0.5, -0.5)
    ax.xaxis.set_major_locator(MultipleLocator(1 if window <= 16 else 2))
    ax.set_xlabel("position in the window (-1: the previous output)")
    ax.set_ylabel("mean weight / uniform weight")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    return ax


def verdict_intervals(rows, labels: list[str], title: str = "", ax=None):
    """A chapter's verdict figure: :func:`mlm.plots.interval_plot` of the claims ``rows``, its axis label
    saying what the thin extension is in a reader's words (the report examines it). Returns the axes."""
    from mlm.plots.claims import interval_plot

    ax = interval_plot(rows, labels, ax=ax, title=title)
    thin = "; thin: the hardware allowance" if any(r.machine for r in rows) else ""
    ax.set_xlabel(f"change of test perplexity against the control (%): ours, with its 95% interval{thin}; "
                  "◇ the paper", fontsize=9)
    return ax


def own_protocol_curves(panels: dict[str, list[list[dict]]], bigram: float, title: str = ""):
    """Validation (solid) and training (dashed) perplexity by epoch of stored runs, one panel per setting and
    one colour per seed (:func:`mlm.plots.seed_curves`), with the interpolated bigram's validation
    perplexity of the same data as a dotted line: the level a control must get under before it can test
    anything. Returns the figure."""
    from matplotlib.lines import Line2D

    from mlm.plots.common import seed_curves

    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels) + 0.6, 3.9), sharey=True, squeeze=False)
    seed_curves(panels, axes=axes[0], ylim=(50, 450), ticks=(60, 100, 150, 200, 300, 400))
    for ax, seeds in zip(axes[0], panels.values()):
        ax.axhline(bigram, color="k", ls=":", lw=1.5)
        last = max(h["epoch"] for history in seeds for h in history)
        step = 1 if last <= 8 else 5  # whole epochs, the first one always ticked
        ax.set_xticks([1, *range(step if step > 1 else 2, last + 1, step)])
    seeds = max(len(s) for s in panels.values())
    fig.legend([*(Line2D([], [], color=f"C{i}") for i in range(seeds)),
                Line2D([], [], color="0.4", ls="--"), Line2D([], [], color="0.4", marker="o", ls=""),
                Line2D([], [], color="k", ls=":")],
               [*(f"seed {i}, validation" for i in range(seeds)), "training", "best validation epoch",
                f"bigram counts, validation ({bigram:.1f})"], fontsize=9, loc="lower center", ncol=seeds + 3,
               bbox_to_anchor=(0.5, 0))
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def attention_by_position(curves: dict[str, list[float]], ax=None, title: str = ""):
    """Mean attention weight per memory position (Tran et al.'s Figure 3), one line per model, on a log
    scale so that weights far below uniform stay readable; uniform attention over the n slots is drawn."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    n = len(next(iter(curves.values())))
    positions = list(range(-n, 0))
    for i, (label, average) in enumerate(curves.items()):
        ax.plot(positions, average, "-o", ms=3, color=f"C{i}", label=label)
    ax.axhline(1 / n, color="k", ls="--", lw=1, label=f"uniform (1/{n})")
    ax.set_yscale("log")
    ax.set_xticks(positions[::2])
    ax.set_xlabel("memory position (-1 = the current word)")
    ax.set_ylabel("mean attention weight")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax
