"""Figures of the Recurrent Memory Network (chapter 04): the Memory Block and its attention."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mlm.plots.attentive import _log2_against_uniform

__all__ = ["sampled_attention", "memory_attention_map", "memory_block_diagram", "memory_verdicts", "memory_seed_curves",
           "RUN_LABELS"]

RUN_LABELS = {  # the runs of chapter 04's comparisons, as a reader names them
    "lstm": "LSTM", "lstm1": "1-layer LSTM", "lstm2": "2-layer LSTM", "lstm3": "3-layer LSTM",
    "rm-tm-g": "RM(+tM-g)", "rmr-notm-g": "RMR(-tM-g)", "rmr-tm-g": "RMR(+tM-g)", "rm-notm-l": "RM(-tM-l)",
}


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
    sentence): rows are the steps, each labelled by its current word and the word it predicts, columns the
    inputs. Each cell is its weight against uniform attention 1/k over the row's k words in memory,
    log2(k * weight), on a diverging scale whose white is uniform (red: more than its share, blue: less), as
    :func:`attention_heatmap` with ``relative=True``. Cells outside the memory (later inputs, or more than
    ``n`` inputs back) are grey."""
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
    ax.set_yticks(range(rows), [f"{word} → {target}" for word, target in zip(probe["inputs"], probe["targets"])],
                  fontsize=9)
    ax.set_xlabel(f"inputs in memory (the current word on the diagonal, at most {n})")
    ax.set_ylabel("current word → word being predicted")
    ax.set_title(f"{title}\n(white: uniform attention over the words in memory; grey: not in memory)", fontsize=10)
    bar = plt.colorbar(image, ax=ax, fraction=0.03, ticks=[-4, -2, 0, 2, 4])
    bar.ax.set_yticklabels(["1/16", "1/4", "1", "4", "16"])
    bar.set_label("weight / uniform (log scale)")
    return ax


def memory_block_diagram(n: int = 15, d: int = 128):
    """Chapter 04's architecture figure: RM and RMR at one time step t, every tensor with its shape in the
    chapter code's order (batch, time, ...) and the equation number of each step beside it."""
    fig, ax = plt.subplots(figsize=(11, 6.2))
    ax.set_xlim(-0.6, 12.4)
    ax.set_ylim(-0.5, 6.4)
    ax.axis("off")
    boxes = {  # name: (x, y, text, fill, the tensor it gives, which side that shape is written on)
        "x": (2.2, 0, "$x_t$", "white", "words: (batch, time)", "l"),
        "E": (2.2, 1.2, "embedding", "#dbe9f6", "(batch, time, d)", "l"),
        "lstm": (2.2, 2.4, "LSTM", "#fde2c8", "$h_t$: (batch, time, d)", "l"),
        "window": (7.8, 0, rf"$x_{{t-{n - 1}}}, \dots, x_t$: the last {n} words", "white", "(batch, time, n)", "r"),
        "M": (6.0, 1.2, "keys $M_i + T$", "#e5dcf0", "(batch, time, n, d)", "r"),
        "C": (9.4, 1.2, "values $C_i$", "#e5dcf0", "(batch, time, n, d)", "r"),
        "p": (6.0, 2.4, r"$p_t = \mathrm{softmax}((M_i + T)\,h_t)$", "#f2f2f2", "(batch, time, n)  Eq. 1-2", "r"),
        "s": (9.4, 3.6, r"$s_t = C_i^{\mathsf{T}} p_t$", "#f2f2f2", "(batch, time, d)  Eq. 3", "r"),
        "g": (6.0, 3.6, "gate", "#dcefd9", "$h^m_t$: (batch, time, d)  Eq. 4-7", "l"),
        "top": (6.0, 4.8, "RMR only: a second LSTM", "#fde2c8", "(batch, time, d)", "l"),
        "out": (6.0, 6.0, "softmax", "#dcefd9", "(batch, time, |V|)", "l"),
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
    ax.text(12.3, 5.6, f"d = {d} units, n = {n} words in memory\nT: (n, d), a row per memory position\n"
            "RM: the gate's output feeds the softmax\nRMR: a second LSTM in between", ha="right", va="center",
            fontsize=9.5, color="0.25")
    ax.set_title("The Memory Block between the LSTM and the softmax, at every step t", fontsize=11)
    fig.tight_layout()
    return fig


def memory_verdicts(rows, title: str = "", panels: dict | None = None, reader: bool = False):
    """The decided claims rows of Tran et al.'s paper (``(manifest, claim, row)`` as
    :func:`mlm.evidence.paper_evidence` gives them) as interval plots (:func:`mlm.plots.interval_plot`), each
    row named by its two models in words ("RM(+tM-g) vs 1-layer LSTM"). ``panels`` maps a manifest to the
    title of its own panel (default: one panel of all rows); rows whose paper measured another contrast
    (``claim.contrast``: RM and RMR at the book's equal parameter count, where the paper compared at equal
    width) carry no paper's change, so no diamond. ``reader`` (a chapter): the label without the
    side an unequal trial handicaps, and the widened part of an interval named without the report's
    vocabulary. Rows still waiting
    for runs are left out, so the figure shows whatever is stored. Returns the figure."""
    from dataclasses import replace

    from mlm.claims import MARGIN, awaits_runs
    from mlm.plots.claims import interval_plot

    decided = [(manifest, claim, row) for manifest, claim, row in rows if row.seeds and not awaits_runs(row)]
    panels = panels or {None: title}
    groups = [[(m, c, r) for m, c, r in decided if key is None or m == key] for key in panels]
    heights = [max(len(group), 1) for group in groups]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11.5, 0.45 * sum(heights) + 0.8 * len(panels) + 0.8),
                             height_ratios=heights, sharex=True, squeeze=False, layout="constrained")
    for ax, (key, panel_title), group in zip(axes[:, 0], panels.items(), groups):
        shown = [replace(row, handicaps="") if reader else row for _, _, row in group]
        labels = [" vs ".join(RUN_LABELS.get(run, run) for run in (row.model_run or claim.model,
                                                                  row.control_run or claim.control))
                  for _, claim, row in group]
        interval_plot(shown, labels, ax=ax, title=panel_title if key is not None else title)
        ax.set_ylim(len(group) - 0.4, -0.6)  # rows half a step from the frame, in every panel alike
        ax.set_xlabel("")
    if title and panels and None not in panels:
        fig.suptitle(title, fontsize=11)
    widened = any(row.machine for _, _, row in decided)
    thin = (" (thin: the hardware allowance)" if reader else
            " (thin: widened for the shift between kinds of machine)") if widened else ""
    diamond = "; ◇ the paper" if any(m != "compare" for m, _, _ in decided) else ""
    axes[-1, 0].set_xlabel(f"change of test perplexity against the control (%); left of 0 the model is better\n"
                           f"ours, with its 95% interval{thin}{diamond}\n"
                           f"grey band: within ±{MARGIN:.0%}, no effect")
    return fig


def memory_seed_curves(settings: dict, title: str = "", label=None):
    """Report r04's learning curves: one panel per stored setting (``settings`` maps a run name to a
    :class:`mlm.stored.StoredSetting`; settings with no seed are left out), one colour per seed, training
    perplexity dashed and validation solid, a dot at each seed's best validation epoch
    (:func:`mlm.plots.seed_curves`). ``label(run, setting)`` names a panel (default: :data:`RUN_LABELS`).
    Returns the figure."""
    from mlm.plots.common import seed_curves

    label = label or (lambda run, setting: RUN_LABELS.get(run, run))
    panels = {label(run, s): [s.metrics(i) for i in range(len(s.seeds))] for run, s in settings.items() if s.seeds}
    axes = seed_curves(panels, ylim=(35, 400), ticks=(40, 60, 100, 150, 250, 400))
    fig = axes[0].figure
    fig.suptitle(title or "train (dashed) and validation (solid) perplexity, one colour per seed; a dot at each "
                 "seed's best validation epoch", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig
