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


def memory_verdicts(rows, title: str = "", ax=None):
    """The decided claims rows of Tran et al.'s paper (``(manifest, claim, row)`` as
    :func:`mlm.evidence.paper_evidence` gives them) as an interval plot (:func:`mlm.plots.interval_plot`),
    each named by its two models in words ("RM(+tM-g) vs 1-layer LSTM"), and by its comparison ("own
    protocol", "matched recipe") where the rows come from more than one manifest. Rows still waiting for runs
    are left out, so the figure shows whatever is stored."""
    from mlm.claims import awaits_runs
    from mlm.plots.claims import interval_plot
    from mlm.evidence import COMPARISONS

    decided = [(manifest, claim, row) for manifest, claim, row in rows if row.seeds and not awaits_runs(row)]
    several = len({manifest for manifest, _, _ in decided}) > 1
    labels = [(f"{COMPARISONS.get(manifest, manifest)}: " if several else "")
              + " vs ".join(RUN_LABELS.get(run, run) for run in (row.model_run or claim.model,
                                                                  row.control_run or claim.control))
              for manifest, claim, row in decided]
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.55 * len(decided) + 1.4), layout="constrained")
    return interval_plot([row for _, _, row in decided], labels, ax=ax, title=title)


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
