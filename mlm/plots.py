"""Figures shared by the chapters (matplotlib, no interactive backend needed)."""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import torch


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


def _log2_against_uniform(weights, hidden):
    """log2(weight x k) of every visible cell, k the visible cells of its row, masked where ``hidden``:
    0 is uniform attention over the row, +1 twice its share, -1 half of it. (rows, columns) numpy arrays."""
    import numpy as np

    k = (~hidden).sum(axis=1, keepdims=True).clip(min=1)
    return np.ma.masked_where(hidden, np.log2(np.clip(weights * k, 1e-12, None)))


def attention_heatmap(probe: dict, title: str = "", ax=None, include_current: bool = False,
                      xlabel: str = "memory: earlier inputs", vmax: float | None = 1.0, relative: bool = False,
                      per_row: bool = False):
    """Attention of a sequence: rows are predicted words, columns the inputs attended to.

    Salton et al.'s Figures 2-3 and Daniluk et al.'s Figure 3a (the memory holds earlier inputs
    only); Tran et al.'s Figure 4 with ``include_current`` (the current input is in memory, on the
    diagonal). ``vmax=None`` scales the colours to the largest weight. ``relative=True`` shows each
    weight against uniform attention over its row's reachable slots, as log2(weight x #slots) on a
    diverging scale from -2 to 2 (white: uniform; red: up to 4 times more; blue: 4 times less), so
    structure is visible however many slots a row has. ``per_row=True`` instead divides each row by
    its largest weight (colour 1 = the row's largest weight) and writes that weight and the uniform
    weight 1/k (k reachable slots) beside the row label.
    """
    import numpy as np

    if per_row:
        weights = probe["attention"]  # (targets, inputs)
        top = weights.max(dim=1, keepdim=True).values.clamp(min=1e-12)  # (targets, 1)
        slots = (weights > 0).sum(dim=1)  # (targets,) slots in memory
        labels = [f"{w} (max {float(m):.2f}, unif {1 / max(int(k), 1):.2f})"
                  for w, m, k in zip(probe["targets"], top[:, 0], slots)]
        probe = {**probe, "attention": weights / top, "targets": labels}
        title, vmax = f"{title}\n(colour scaled per row: 1 = the row's largest weight)", 1.0
    weights = probe["attention"].numpy()
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * len(probe["inputs"]) + 2, 0.4 * len(probe["targets"]) + 1.5))
    future = np.triu(np.ones_like(weights), k=1 if include_current else 0) > 0
    if relative:  # white means uniform here, so what the memory cannot reach is grey, not blank
        image = ax.imshow(_log2_against_uniform(weights, future), cmap="RdBu_r", vmin=-2, vmax=2, aspect="auto")
        ax.set_facecolor("0.85")
        xlabel = f"{xlabel} (grey: not in memory)"
    else:
        shown = np.ma.masked_where(future, weights)  # blank where the memory cannot reach
        top = max(float(weights.max()), 1e-6) if vmax is None else vmax
        image = ax.imshow(shown, cmap="Blues", vmin=0, vmax=top, aspect="auto")
    ax.set_xticks(range(len(probe["inputs"])))
    ax.set_xticklabels(probe["inputs"], rotation=90, fontsize=8)
    ax.set_yticks(range(len(probe["targets"])))
    ax.set_yticklabels(probe["targets"], fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("word being predicted")
    ax.set_title(title, fontsize=10)
    bar = plt.colorbar(image, ax=ax, fraction=0.03)
    if relative:
        bar.set_label("log2(weight / uniform)")
    return ax


def attentive_head_diagram(ax=None):
    """Salton et al.'s attention head (chapter 02) as boxes with the tensor shape at each stage, computed for
    every step of a batch at once: B sentences, T steps, H hidden units, A attention units, V words. The
    dashed branch, W_q h_t, exists only for the combined score (Eq. 10)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 6.5))
    x = 0.42  # the main column
    boxes = {  # name: (x, y, text, shape)
        "h": (x, 0.95, "LSTM outputs of the sentence $h_1 \\dots h_T$", "(B, T, H)"),
        "keys": (0.24, 0.79, "keys $W_s h_i$", "(B, T, A)"),
        "query": (0.60, 0.79, "query $W_q h_t$ (combined only)", "(B, T, A)"),
        "scores": (x, 0.63, "scores $v_s^\\top \\tanh(W_s h_i\\,[+\\,W_q h_t])$   Eq. 9 / 10", "(B, T, T)"),
        "softmax": (x, 0.47, "keep $i < t$, softmax over $i$: weights $a_{t,i}$   Eq. 4", "(B, T, T)"),
        "context": (x, 0.31, "context $c_t = \\Sigma_i\\, a_{t,i}\\, h_i$   Eq. 3", "(B, T, H)"),
        "merge": (x, 0.15, "merge $h'_t = \\tanh(W_c [h_t; c_t] + b_c)$   Eq. 7", "(B, T, 2H) -> (B, T, H)"),
        "out": (x, -0.01, "next word $\\mathrm{softmax}(E\\, h'_t + b)$   Eq. 8", "(B, T, V)"),
    }
    for name, (bx, by, text, shape) in boxes.items():
        ax.text(bx, by, f"{text}\n{shape}", ha="center", va="center", fontsize=10,
                bbox=dict(boxstyle="round,pad=0.4", fc="#fdf0e6" if name == "merge" else "#eef3fb", ec="0.3",
                          ls="--" if name == "query" else "-"))
    edges = [("h", "keys", "-"), ("h", "query", "--"), ("keys", "scores", "-"), ("query", "scores", "--"),
             ("scores", "softmax", "-"), ("softmax", "context", "-"), ("context", "merge", "-"), ("merge", "out", "-")]
    for start, end, style in edges:
        (x0, y0, *_), (x1, y1, *_) = boxes[start], boxes[end]
        ax.annotate("", xy=(x1, y1 + 0.055), xytext=(x0, y0 - 0.055),
                    arrowprops=dict(arrowstyle="->", color="0.3", ls=style, lw=1.2))
    # h_t goes around the attention straight into the merge; every h_i is also a value of Eq. 3.
    ax.plot([0.66, 0.93, 0.93], [0.95, 0.95, 0.15], color="C1", lw=1.4)
    ax.annotate("", xy=(0.715, 0.15), xytext=(0.93, 0.15), arrowprops=dict(arrowstyle="->", color="C1", lw=1.4))
    ax.text(0.945, 0.55, "$h_t$ itself", color="C1", fontsize=10, rotation=90, va="center")
    ax.plot([0.18, 0.04, 0.04], [0.95, 0.95, 0.31], color="0.5", lw=1, ls=":")
    ax.annotate("", xy=(0.265, 0.31), xytext=(0.04, 0.31), arrowprops=dict(arrowstyle="->", color="0.5", lw=1, ls=":"))
    ax.text(0.025, 0.63, "values $h_i$, $i < t$", color="0.4", fontsize=10, rotation=90, ha="right", va="center")
    ax.set_xlim(-0.02, 1.0)
    ax.set_ylim(-0.08, 1.02)
    ax.axis("off")
    return ax


def first_updates_panels(traces: dict[str, dict], unigram: float | None = None):
    """The first updates of several networks (chapter 02), two panels: the training perplexity of each batch
    (a running median over 9 updates, so that one odd batch does not stretch the axis) and the share of the
    output's energy carried by its mean over positions. ``traces`` maps a label to ``{"ppl": [...],
    "step": [...], "share": [...]}``; ``unigram`` draws the unigram count model's perplexity."""
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for i, (label, trace) in enumerate(traces.items()):
        ppl = np.array(trace["ppl"])
        smooth = [np.median(ppl[max(0, k - 4):k + 5]) for k in range(len(ppl))]
        axes[0].plot(range(1, len(ppl) + 1), smooth, color=f"C{i}", lw=1.5, label=label)
        axes[1].plot(trace["step"], trace["share"], "-o", ms=3, color=f"C{i}", label=label)
    if unigram is not None:
        axes[0].axhline(unigram, color="k", ls="--", lw=1, label="unigram counts (validation)")
    top = max(max(t["ppl"][len(t["ppl"]) // 3:]) for t in traces.values())  # after the first third
    ylim = axes[0].get_ylim()
    _plain_log_axis(axes[0], [t for t in (200, 500, 1000, 2000, 5000, 10000, 20000) if ylim[0] <= t <= 3 * top])
    axes[0].set_ylim(ylim[0], min(ylim[1], 3 * top))
    axes[0].set_ylabel("training perplexity of the batch (log)")
    axes[0].set_title("batch perplexity (running median of 9)")
    axes[1].set_ylim(0, 1.05)
    axes[1].set_ylabel("mean share of the output")
    axes[1].set_title("how much of the output is the same everywhere")
    for ax in axes:
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=9, loc="lower left")  # the early spikes reach into the upper corners
    axes[1].legend(fontsize=9)
    fig.tight_layout()
    return axes


def attention_spread(stats: dict, max_distance: int = 20):
    """How evenly an attention head spreads its weight over the history (chapter 02), two panels: the
    normalised entropy H(a_t) / log(#slots) by position t (1 = uniform), and the mean weight on the output d
    steps back, each beside uniform attention. ``stats`` maps a label to
    :class:`mlm.analysis.history.AttentionStats`."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for i, (label, s) in enumerate(stats.items()):
        positions = [t for t in range(2, len(s.count_by_position)) if s.count_by_position[t] > 0]
        axes[0].plot(positions, [s.entropy_ratio[t] for t in positions], "-o", ms=3, color=f"C{i}", label=label)
        distances = range(1, max_distance + 1)
        axes[1].plot(distances, s.weight_by_distance[1:max_distance + 1], "-o", ms=3, color=f"C{i}", label=label)
    axes[0].axhline(1, color="k", ls="--", lw=1, label="uniform attention")
    axes[1].plot(distances, s.uniform_by_distance[1:max_distance + 1], "k--", lw=1, label="uniform attention")
    axes[0].set_ylim(0, 1.05)
    axes[0].set_xlabel("position t in the sentence")
    axes[0].set_ylabel("H(a_t) / log(#slots)")
    axes[0].set_title("spread of the weights (1 = uniform)")
    axes[1].set_xlabel("distance d = t - i")
    axes[1].set_ylabel("mean weight")
    axes[1].set_title("weight on the output d steps back")
    axes[1].set_xticks(range(0, max_distance + 1, 5))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=9)
    fig.tight_layout()
    return axes

def _head_box(ax, x, y, text, width):
    """A rounded white box of ``width`` centred on (x, y) holding ``text``: one block of a head diagram."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - 0.32), width, 0.64, boxstyle="round,pad=0.05",
                                facecolor="white", edgecolor="0.3", zorder=2))
    ax.text(x, y, text, ha="center", va="center", fontsize=9, zorder=3)


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
        ax.text(xs[-1] + 0.4, 0.5 * j + 0.25, f"{word} (batch, time, k)", va="center", fontsize=8, color=color)
    ax.text(xs[-1] + 0.4, 1.75, "LSTM output (batch, time, 3k),\nsplit in three (Eq. 11)", va="center", fontsize=8)

    box = functools.partial(_head_box, ax)

    def arrow(x0, y0, x1, y1, color="0.3", **kw):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "color": color, "lw": 1.3, **kw})

    left = xs[0] - 0.5
    score_y, read_y, merge_y, out_y = -1.9, 2.9, 4.1, 5.3
    box(left - 0.6 + 3.4, score_y, r"$\alpha_t = \mathrm{softmax}(w^\top \tanh(W^Y K_t + W^h k_t\,\mathbf{1}^\top))$"
        "   (batch, time, L)   Eq. 7-8", 6.8)
    box(left - 0.6 + 2.7, read_y, r"$r_t = \sum_j \alpha_{t,j}\, v_{t-L+j}$   (batch, time, k)   Eq. 9", 5.4)
    box(left + 5.2, merge_y, r"$h^*_t = \tanh(W^r r_t + W^x p_t)$   (batch, time, k)   Eq. 12", 5.6)
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
    ax.text(xs[-1] + 0.5, 0.5 * parts / 2, f"LSTM output (batch, time, {parts}k),\nsplit in {parts} parts of k;\n"
            "faded parts serve other steps", va="center", fontsize=8)

    box = functools.partial(_head_box, ax)

    centre = (xs[0] + xs[-1]) / 2
    cat_y, merge_y, out_y = 0.5 * parts + 1.2, 0.5 * parts + 2.4, 0.5 * parts + 3.6
    stacked = "; ".join(["h^1_t"] + [f"h^{j + 1}_{{t-{j}}}" for j in range(1, parts)])
    box(centre, cat_y, f"$[{stacked}]$   (batch, time, {parts}k)", 4.6)
    box(centre, merge_y, r"$h^*_t = \tanh(W^N [\,\cdots])$   (batch, time, k)   Eq. 13", 4.6)
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


def window_heatmap(attention, inputs: list[str], targets: list[str], window: int, title: str = "", ax=None):
    """Attention over a sliding window along one article (Daniluk et al.'s Figure 3a), against uniform.

    ``attention`` is (steps, steps): row t holds the weights with which the word ``targets[t]`` is
    predicted, put on the columns of the inputs whose outputs they read (inputs t-L .. t-1). Each cell
    shows log2(weight x n), n the slots row t has (min(t, L)), on a diverging scale centred on uniform
    (white); cells outside the window, and rows with no slot yet, are masked (grey)."""
    import numpy as np

    weights = np.asarray(attention, dtype=float)
    steps = weights.shape[0]
    t, i = np.indices(weights.shape)
    outside = (i >= t) | (i < t - window)  # the future, the current input, and what has left the window
    slots = np.minimum(np.arange(steps), window)[:, None].clip(min=1)
    ratio = np.log2(np.clip(weights * slots, 1e-6, None))
    if ax is None:
        _, ax = plt.subplots(figsize=(0.22 * steps + 2.6, 0.22 * steps + 1.6))
    ax.set_facecolor("0.85")
    image = ax.imshow(np.ma.masked_where(outside, ratio), cmap="RdBu_r", vmin=-2, vmax=2, aspect="equal",
                      interpolation="nearest")
    ax.set_xticks(range(steps), inputs, rotation=90, fontsize=8)
    ax.set_yticks(range(steps), targets, fontsize=8)
    ax.set_xlabel("input whose output is read (grey: outside the window)")
    ax.set_ylabel("word being predicted")
    ax.set_title(title, fontsize=10)
    bar = plt.colorbar(image, ax=ax, fraction=0.035, ticks=[-2, -1, 0, 1, 2])
    bar.ax.set_yticklabels(["1/4", "1/2", "1 (uniform)", "2", "4"])
    bar.set_label("weight / uniform weight of the row")
    return ax


def recall_by_distance(scores: dict, chance: float, reach: dict | None = None, width: int = 5, ax=None,
                       title: str = ""):
    """Accuracy on the critical tokens of the recall task against the distance d, one line per model.

    ``scores`` maps a label to a :class:`mlm.long_range.CriticalScores`; each point is a bin of
    ``width`` distances. ``chance`` draws the accuracy of a model that cannot see the source, and
    ``reach`` ({label: d}) marks how far back a head can read (a window, a memory of n words).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.8))
    for i, (label, s) in enumerate(scores.items()):
        rows = s.binned(width)
        ax.plot([(lo + hi) / 2 for lo, hi, *_ in rows], [acc for _, _, acc, _, _ in rows], "-o", ms=3,
                color=f"C{i}", label=label)
        if reach and label in reach:
            ax.axvline(reach[label] + 0.5, color=f"C{i}", lw=1, ls=":", label=f"{label}: reach d = {reach[label]}")
    return _recall_axes(ax, chance, width, title)


def recall_spread_by_distance(stored: dict, chance: float, width: int = 5, ax=None, title: str = "",
                              styles: dict | None = None):
    """Accuracy on the critical token against d for every family, the mean over seeds as a line and the
    lowest and highest seed as a band; ``stored`` maps a label to :class:`mlm.table.StoredRecall`.
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
    :class:`mlm.table.StoredRecall`), one line per seed, accuracy on the critical token against d in bins of
    ``width`` (or bins that begin at ``starts``, so that a bin edge can fall at each reach). Every panel draws
    chance (dashed), the family's reach where it has one (``reach``: {label: the largest d its head can
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
        ax.set_xlabel("distance d")
    for i in range(max(len(stored), columns), axes.size):  # a panel above an empty one shows its own d axis
        axes.flat[i - columns].tick_params(labelbottom=True)
        axes.flat[i - columns].set_xlabel("distance d")
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
    ax.set_xlabel(f"distance d from the source to the critical token (bins of {width})")
    ax.set_ylabel("accuracy on the critical token")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, **({"loc": "center left", "bbox_to_anchor": (1.01, 0.5)} if legend_outside else {}))
    return ax


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


def sampled_attention(panels: dict, low: float = 1e-3, title: str = ""):
    """Tran et al.'s Figure 4: the attention of sampled words side by side, one panel per model
    (``panels`` maps a title to a (words, n) tensor), the current word at the bottom. A weight lies in
    (0, 1], so the colour is sequential on a log scale from ``low`` to 1, with uniform attention marked
    on the colour bar."""
    from matplotlib.colors import LogNorm

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels) + 1, 3.6), squeeze=False,
                             layout="constrained")
    for ax, (name, weights) in zip(axes[0], panels.items()):
        n = weights.shape[1]
        image = ax.imshow(weights.T.clamp(min=low).numpy(), cmap="viridis", aspect="auto",
                          norm=LogNorm(vmin=low, vmax=1))
        ax.set_yticks([0, n // 2, n - 1], [f"-{n}", f"-{n - n // 2}", "-1"])
        ax.set_xlabel("sampled test word")
        ax.set_title(name, fontsize=10)
    axes[0, 0].set_ylabel("memory position")
    bar = fig.colorbar(image, ax=axes[0].tolist(), fraction=0.025, pad=0.01)
    n = next(iter(panels.values())).shape[1]
    bar.set_ticks([low, 0.01, 1 / n, 0.3, 1], labels=[f"{low:g}", "0.01", f"1/{n} (uniform)", "0.3", "1"])
    bar.set_label("attention weight (log scale)")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def memory_attention_map(probe: dict, n: int, title: str = "", ax=None):
    """A Recurrent Memory model's attention over one sentence (Tran et al.'s Figure 4 for a single
    sentence): rows are the predicted words, columns the inputs. Each cell is its weight against uniform
    attention 1/k over the row's k words in memory, log2(k * weight), on a diverging scale whose white is
    uniform (red: more than its share, blue: less), as :func:`attention_heatmap` with ``relative=True``.
    Cells outside the memory (later inputs, or more than ``n`` inputs back) are grey."""
    import numpy as np

    weights = probe["attention"]  # (targets, inputs)
    rows, cols = weights.shape
    t, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    outside = (j > t) | (j <= t - n)  # not in the memory of row t: the inputs t-n+1 .. t
    if ax is None:
        _, ax = plt.subplots(figsize=(0.36 * cols + 3.0, 0.3 * rows + 1.8))
    image = ax.imshow(_log2_against_uniform(weights.numpy(), outside), cmap="RdBu_r", vmin=-4, vmax=4, aspect="auto")
    ax.set_facecolor("0.85")  # the masked cells: not in memory
    ax.set_xticks(range(cols), probe["inputs"], rotation=90, fontsize=9)
    ax.set_yticks(range(rows), probe["targets"], fontsize=9)
    ax.set_xlabel(f"inputs in memory (the current word on the diagonal, at most {n})")
    ax.set_ylabel("word being predicted")
    ax.set_title(f"{title}\n(white: uniform attention over the words in memory; grey: not in memory)", fontsize=10)
    bar = plt.colorbar(image, ax=ax, fraction=0.03, ticks=[-4, -2, 0, 2, 4])
    bar.ax.set_yticklabels(["1/16", "1/4", "1", "4", "16"])
    bar.set_label("weight / uniform (log scale)")
    return ax


def memory_block_diagram(n: int = 15, d: int = 128):
    """Chapter 04's architecture figure: RM and RMR at one time step t, every tensor with its shape
    (B sentences of S steps; T is the temporal matrix) and the equation number of each step beside it."""
    fig, ax = plt.subplots(figsize=(11, 6.2))
    ax.set_xlim(0, 12)
    ax.set_ylim(-0.5, 6.4)
    ax.axis("off")
    boxes = {  # name: (x, y, text, fill, the tensor it gives, which side that shape is written on)
        "x": (1.4, 0, "$x_t$", "white", "(B, S) ids", "l"),
        "E": (1.4, 1.2, "embedding $E$", "#dbe9f6", "(B, S, d)", "l"),
        "lstm": (1.4, 2.4, "LSTM", "#fde2c8", "$h_t$: (B, S, d)", "l"),
        "window": (7.6, 0, rf"$x_{{t-{n - 1}}}, \dots, x_t$: the last {n} inputs", "white", "(B, S, n) ids", "r"),
        "M": (5.6, 1.2, "keys $M(x_i) + T$", "#e5dcf0", "(B, S, n, d); T: (n, d)", "l"),
        "C": (9.6, 1.2, "values $C(x_i)$", "#e5dcf0", "(B, S, n, d)", "r"),
        "p": (5.6, 2.4, r"$p_t = \mathrm{softmax}((M_i + T)\,h_t)$", "#f2f2f2", "(B, S, n)  Eq. 1-2", "r"),
        "s": (9.6, 3.6, r"$s_t = C_i^{\mathsf{T}} p_t$", "#f2f2f2", "(B, S, d)  Eq. 3", "r"),
        "g": (5.6, 3.6, "gate", "#dcefd9", "$h^m_t$: (B, S, d)  Eq. 4-7", "l"),
        "top": (5.6, 4.8, "RMR only: a second LSTM", "#fde2c8", "(B, S, d)", "l"),
        "out": (5.6, 6.0, "softmax", "#dcefd9", "(B, S, |V|)", "l"),
    }
    texts = {}
    for name, (x, y, text, fill, _, _) in boxes.items():
        texts[name] = ax.text(x, y, text, ha="center", va="center", fontsize=11, zorder=3,
                              bbox=dict(boxstyle="round,pad=0.4", fc=fill, ec="0.3" if fill != "white" else "white",
                                        ls="--" if name == "top" else "-"))
    for a, b in [("x", "E"), ("E", "lstm"), ("lstm", "p"), ("window", "M"), ("window", "C"), ("M", "p"),
                 ("p", "s"), ("C", "s"), ("s", "g"), ("lstm", "g"), ("g", "top"), ("top", "out")]:
        ax.annotate("", xy=boxes[b][:2], xytext=boxes[a][:2],
                    arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.2, patchA=texts[a].get_bbox_patch(),
                                    patchB=texts[b].get_bbox_patch(), shrinkA=2, shrinkB=2))
    fig.canvas.draw()  # the boxes' extents, to write each shape beside its box
    to_data = ax.transData.inverted()
    for name, (x, y, _, _, shape, side) in boxes.items():
        (x0, _), (x1, _) = to_data.transform(texts[name].get_bbox_patch().get_window_extent())
        ax.text(x1 + 0.12 if side == "r" else x0 - 0.12, y, shape, ha="left" if side == "r" else "right",
                va="center", fontsize=9, family="monospace", color="0.3")
    ax.text(11.9, 5.4, f"d = {d}, n = {n}: B sentences of S steps\nRM: the gate feeds the softmax\n"
            "RMR: a second LSTM in between", ha="right", va="center", fontsize=9.5, color="0.25")
    ax.set_title("The Memory Block between the LSTM and the softmax, at every step t", fontsize=11)
    fig.tight_layout()
    return fig


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

    kept = [(row, label) for row, label in zip(rows, labels) if row.seeds and not awaits_runs(row)]
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
    ax.set_xlabel("change of test perplexity against the control (%): ours with its 95% interval; ◇ the paper")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    return ax


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


def stacked_lstm_diagram(steps: int = 3, tied: bool = True):
    """Chapter 01's architecture figure: a two-layer LSTM language model unrolled over ``steps`` time
    steps, with the shape of every tensor, dropout (D) on the vertical connections only, the recurrent
    state passed along each layer untouched, and (``tied``) the one matrix shared by the embedding and
    the softmax layer."""
    from matplotlib.patches import Circle, FancyBboxPatch

    rows = [  # (name, what a box computes, the tensor it passes up, dropped on the way up)
        ("word", "$w_t$", "(B, K) word ids", False),
        ("embedding", "$E[w_t]$", "(B, K, d)", True),
        ("lstm1", "LSTM layer 1", "(B, K, n)", True),
        ("lstm2", "LSTM layer 2", "(B, K, n)", True),
        ("softmax", "softmax$(W\\,\\cdot + b)$", "(B, K, |V|)", False),
    ]
    fig, ax = plt.subplots(figsize=(10, 6.2))
    xs = [1.6 + 2.4 * s for s in range(steps)]
    ys = [0.4 + 1.25 * r for r in range(len(rows))]
    width, height = 2.0, 0.6
    colors = {"word": "white", "embedding": "#dbe9f6", "lstm1": "#fde2c8", "lstm2": "#fde2c8", "softmax": "#dcefd9"}
    times = [f"t{'-' if s < steps // 2 else '+'}{abs(s - steps // 2)}" if s != steps // 2 else "t"
             for s in range(steps)]
    for s, x in enumerate(xs):
        for r, (name, text, _, _) in enumerate(rows):
            y = ys[r]
            label = text.replace("_t", "_{" + times[s] + "}") if name == "word" or name == "embedding" else text
            if name == "word":
                ax.text(x, y, label, ha="center", va="center", fontsize=13)
            else:
                ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                            boxstyle="round,pad=0.03", fc=colors[name], ec="0.3"))
                ax.text(x, y, label, ha="center", va="center", fontsize=10.5)
            if r + 1 < len(rows):  # the vertical connection to the row above
                y0, y1 = y + (0.18 if name == "word" else height / 2), ys[r + 1] - height / 2
                ax.annotate("", xy=(x, y1), xytext=(x, y0), arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.2))
                if rows[r][3]:
                    ax.add_patch(Circle((x, (y0 + y1) / 2), 0.15, fc="#d95f02", ec="none", zorder=3))
                    ax.text(x, (y0 + y1) / 2, "D", ha="center", va="center", color="white", fontsize=9,
                            fontweight="bold", zorder=4)
        ax.annotate("", xy=(x, ys[-1] + 0.75), xytext=(x, ys[-1] + height / 2),
                    arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.2))
        ax.text(x, ys[-1] + 0.9, f"$p(w_{{{times[s]}+1}})$".replace("t+1+1", "t+2").replace("t-1+1", "t"),
                ha="center", va="center", fontsize=11)
    for r in (2, 3):  # the recurrent connections: (h, c) along each layer, never dropped
        y = ys[r]
        ax.annotate("", xy=(xs[0] - width / 2, y), xytext=(xs[0] - width / 2 - 0.6, y),
                    arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.2, ls="--"))
        for x0, x1 in zip(xs[:-1], xs[1:]):
            ax.annotate("", xy=(x1 - width / 2, y), xytext=(x0 + width / 2, y),
                        arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.2))
            ax.text((x0 + x1) / 2, y + 0.12, "$(h, c)$", ha="center", va="bottom", fontsize=9)
        ax.annotate("", xy=(xs[-1] + width / 2 + 0.6, y), xytext=(xs[-1] + width / 2, y),
                    arrowprops=dict(arrowstyle="-|>", color="0.2", lw=1.2, ls="--"))
    ax.text(xs[0] - width / 2 - 0.3, (ys[2] + ys[3]) / 2, "state of the\nlast window\n(detached)",
            ha="right", va="center", fontsize=9, color="0.3")
    right = xs[-1] + width / 2 + 0.75
    ax.text(right + 0.05, ys[-1] + 0.9, "tensor passed up", ha="left", va="center", fontsize=9.5, color="0.3")
    for r, (_, _, shape, _) in enumerate(rows):
        y = ys[r] + (0.62 if r + 1 < len(rows) else height / 2 + 0.2)
        ax.text(right + 0.05, y, shape, ha="left", va="center", fontsize=10, family="monospace")
    if tied:  # one matrix, read by the lookup at the bottom and by the softmax at the top
        bar = xs[0] - width / 2 - 2.0
        for r in (1, 4):
            ax.plot([bar, xs[0] - width / 2], [ys[r], ys[r]], color="#1b7837", lw=1.5, ls=":")
        ax.plot([bar, bar], [ys[1], ys[4]], color="#1b7837", lw=1.5, ls=":")
        ax.text(bar - 0.1, (ys[1] + ys[4]) / 2, "tied:\n$W = E$\n$|V| \\times d$", ha="right", va="center",
                fontsize=10.5, color="#1b7837")
    ax.add_patch(Circle((xs[0] - 0.3, -0.45), 0.13, fc="#d95f02", ec="none"))
    ax.text(xs[0] - 0.3, -0.45, "D", ha="center", va="center", color="white", fontsize=8, fontweight="bold")
    ax.text(xs[0] - 0.1, -0.45, "dropout: on the connections between layers only, never on $(h, c)$ "
            "from one step to the next", ha="left", va="center", fontsize=10)
    ax.set_xlim(xs[0] - width / 2 - 2.9, right + 1.6)
    ax.set_ylim(-0.75, ys[-1] + 1.15)
    ax.axis("off")


def _plain_log_axis(ax, ticks):
    """A log y axis labelled with plain numbers at ``ticks`` (no 10^x labels, no minor tick labels)."""
    ax.set_yscale("log")
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()


def seed_curves(panels: dict[str, list[list[dict]]], axes=None, ylim: tuple[float, float] = (40, 400),
                ticks=(50, 100, 200, 400)):
    """Small multiples of stored runs, one panel per setting and one line per seed: validation perplexity
    (solid) and training perplexity (dashed) by epoch, with a dot at each seed's best validation epoch.

    ``panels`` maps a title to the ``metrics.jsonl`` rows of each seed (:func:`mlm.training.read_metrics`).
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
            ax.plot(epochs, valid, "-", color=f"C{s}", lw=1.5)
            ax.plot(epochs, [h["train_ppl"] for h in history], "--", color=f"C{s}", lw=1, alpha=0.7)
            ax.plot(epochs[best], valid[best], "o", color=f"C{s}", ms=5)
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
