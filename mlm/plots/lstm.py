"""Figures of the LSTM chapters (00, 01) and report r01: Zipf's law, the stacked LSTM unrolled, training curves
by seed, the verdict's intervals with a key (tying_verdict), seeds by machine."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mlm.plots.common import seed_curves

__all__ = ["zipf", "stacked_lstm_diagram", "fit_curves", "tying_verdict", "seeds_by_machine"]


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


def stacked_lstm_diagram(steps: int = 3, tied: bool = True):
    """Chapter 01's architecture figure: a two-layer LSTM language model unrolled over ``steps`` time
    steps, with the shape of every tensor, dropout (D) on the vertical connections only, the recurrent
    state passed along each layer untouched, and (``tied``) the one matrix shared by the embedding and
    the softmax layer."""
    from matplotlib.patches import Circle, FancyBboxPatch

    rows = [  # (name, what a box computes, the tensor it passes up, dropped on the way up)
        ("word", "$w_t$", "(B, K) word ids", False),
        ("embedding", "$E_{w_t}$", "(B, K, d)", True),
        ("lstm1", "LSTM layer 1", "(B, K, d)", True),
        ("lstm2", "LSTM layer 2", "(B, K, d)", True),
        ("softmax", "softmax$(W\\,\\cdot + b)$", "(B, K, |V|)", False),
    ]
    fig, ax = plt.subplots(figsize=(10.5, 6.2))
    xs = [1.6 + 2.8 * s for s in range(steps)]
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
    ax.text(xs[0] - width / 2 - 0.3, (ys[2] + ys[3]) / 2, "state from\nthe previous\nwindow",
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


def fit_curves(panels: dict[str, list[list[dict]]], ticks=(40, 60, 100, 150, 200, 300), ylim=(35, 300)):
    """Training (dashed, blue) and validation (solid, orange) perplexity by epoch, one thin line per seed and one
    panel per entry of ``panels`` ({title: one list of metrics rows per seed}), a dot at each seed's best
    validation epoch and a key that says so: :func:`mlm.plots.seed_curves` coloured by text, so seeds that agree
    overlap (the title says how many there are). Returns the figure."""
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.4, 3.6), sharey=True, squeeze=False)
    seed_curves(panels, axes=axes[0], ylim=ylim, ticks=ticks, by_text=True)
    key = [Line2D([], [], ls="--", color="C0", label="training text"),
           Line2D([], [], ls="-", color="C1", label="validation text"),
           Line2D([], [], ls="none", marker="o", color="C1", mec="black", label="best validation epoch")]
    axes[0, -1].legend(handles=key, fontsize=9, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="each seed",
                       title_fontsize=9)
    fig.tight_layout()
    return fig


def tying_verdict(rows, labels: list[str]):
    """:func:`mlm.plots.interval_plot` of a chapter's verdict rows with a key below the axis instead of the long
    axis label: the dot and thick bar are our change and its 95% interval, the thin extension the allowance for
    hardware differences (drawn only where a row has one), the diamond the paper's change, the grey band the
    margin of +-1% inside which a change is too small to count. Returns the axes."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from mlm.claims import MARGIN
    from mlm.plots.claims import interval_plot

    ax = interval_plot(rows, labels)
    ax.set_xlabel("change of test perplexity against the control (%); left of 0: the model is better")
    key = [Line2D([], [], color="C0", lw=3, marker="o", label="ours, 95% interval")]
    if any(row.machine for row in rows):
        key.append(Line2D([], [], color="C0", lw=1, label="hardware allowance"))
    key += [Line2D([], [], ls="none", marker="D", mfc="none", mec="black", label="the paper"),
            Patch(color="0.9", label=f"±{MARGIN:.0%}: too small to count")]
    ax.legend(handles=key, fontsize=9, ncol=len(key), loc="upper center", bbox_to_anchor=(0.5, -0.32),
              frameon=False)
    return ax


def seeds_by_machine(settings: dict, key: str = "test_ppl", ax=None, ylabel: str = "test perplexity"):
    """One column per stored setting (``{label: StoredSetting}``), one point per seed, marked by the kind of
    machine that ran it (:meth:`mlm.stored.StoredSetting.machine_kinds`), with a bar at each setting's mean:
    shows at a glance whether two arms overlap and whether a machine moves a setting's seeds together.
    Settings with no stored seed keep their column, empty."""
    from matplotlib.lines import Line2D

    markers = ("o", "s", "^", "D", "v", "P")
    kinds = list(dict.fromkeys(k for s in settings.values() for k in s.machine_kinds()))
    style = {kind: (f"C{i}", markers[i % len(markers)]) for i, kind in enumerate(kinds)}
    if ax is None:
        _, ax = plt.subplots(figsize=(1.6 * len(settings) + 2.6, 3.6))
    for x, setting in enumerate(settings.values()):
        values, machines = setting.values(key), setting.machine_kinds()
        for i, (value, kind) in enumerate(zip(values, machines)):
            offset = 0.08 * (i - (len(values) - 1) / 2)  # spread the seeds sideways, in seed order
            color, marker = style[kind]
            ax.plot(x + offset, value, marker, color=color, ms=7, mfc="none" if kind == "unknown" else color, alpha=0.85)
        if values:
            mean = sum(values) / len(values)
            ax.plot([x - 0.3, x + 0.3], [mean, mean], color="0.2", lw=1.5)
    ax.set_xticks(range(len(settings)), [f"{label}\n({len(s.seeds)} seeds)" for label, s in settings.items()])
    ax.set_xlim(-0.6, len(settings) - 0.4)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    handles = [Line2D([], [], ls="none", marker=m, color=c, mfc="none" if k == "unknown" else c, ms=7, label=k)
               for k, (c, m) in style.items()]
    handles.append(Line2D([], [], color="0.2", lw=1.5, label="mean"))
    ax.legend(handles=handles, title="machine", fontsize=9, title_fontsize=9, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    return ax
