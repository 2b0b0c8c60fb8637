"""Figures of the Attentive LM (chapter 02): the head, attention maps, the first updates."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mlm.plots.common import _finish, _plain_log_axis

__all__ = ["attention_heatmap", "attentive_head_diagram", "first_updates_curves", "reduced_run_curves", "protocol_curves",
           "attention_spread", "own_protocol_figure", "salton_claims_figure", "matched_recipe_panels"]


def _log2_against_uniform(weights, hidden):
    """log2(weight x k) of every visible cell, k the visible cells of its row, masked where ``hidden``:
    0 is uniform attention over the row, +1 twice its share, -1 half of it. (rows, columns) numpy arrays."""
    import numpy as np

    k = (~hidden).sum(axis=1, keepdims=True).clip(min=1)
    return np.ma.masked_where(hidden, np.log2(np.clip(weights * k, 1e-12, None)))


def attention_heatmap(probe: dict, title: str = "", ax=None, include_current: bool = False,
                      xlabel: str = "memory: earlier inputs", vmax: float | None = 1.0, relative: bool = False,
                      per_row: bool = False, span: float = 2.0):
    """Attention of a sequence: rows are predicted words, columns the inputs attended to.

    Salton et al.'s Figures 2-3 and Daniluk et al.'s Figure 3a (the memory holds earlier inputs
    only); Tran et al.'s Figure 4 with ``include_current`` (the current input is in memory, on the
    diagonal). ``vmax=None`` scales the colours to the largest weight. ``relative=True`` shows each
    weight against uniform attention over its row's reachable slots, as log2(weight x #slots) on a
    diverging scale from ``-span`` to ``span`` (white: uniform; with the default 2, red up to 4 times more and
    blue 4 times less), so structure is visible however many slots a row has. ``per_row=True`` instead divides
    each row by its largest weight (colour 1 = the row's largest weight) and writes that weight and the
    uniform weight 1/k (k reachable slots) beside the row label.
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
        image = ax.imshow(_log2_against_uniform(weights, future), cmap="RdBu_r", vmin=-span, vmax=span, aspect="auto")
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
    if relative:  # ticks at whole powers of 2, written as the factor they stand for
        ticks = list(range(-int(span), int(span) + 1))
        bar.set_ticks(ticks)
        bar.set_ticklabels([f"{2 ** t:g}x" if t > 0 else f"1/{2 ** -t:g}" if t else "uniform" for t in ticks])
        bar.set_label("weight / uniform weight (log scale)")
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
    ax.plot([0.605, 0.93, 0.93], [0.95, 0.95, 0.15], color="C1", lw=1.4)
    ax.annotate("", xy=(0.63, 0.15), xytext=(0.93, 0.15), arrowprops=dict(arrowstyle="->", color="C1", lw=1.4))
    ax.text(0.945, 0.55, "$h_t$ itself", color="C1", fontsize=10, rotation=90, va="center")
    ax.plot([0.24, 0.04, 0.04], [0.95, 0.95, 0.31], color="0.5", lw=1, ls=":")
    ax.annotate("", xy=(0.285, 0.31), xytext=(0.04, 0.31), arrowprops=dict(arrowstyle="->", color="0.5", lw=1, ls=":"))
    ax.text(0.025, 0.63, "values $h_i$, $i < t$", color="0.4", fontsize=10, rotation=90, ha="right", va="center")
    ax.set_xlim(-0.02, 1.0)
    ax.set_ylim(-0.08, 1.02)
    ax.axis("off")
    return ax


def _running_median(values, half: int = 4) -> list[float]:
    """The median of each value and its ``half`` neighbours on either side (fewer at the ends)."""
    import statistics

    return [statistics.median(values[max(0, k - half):k + half + 1]) for k in range(len(values))]


def first_updates_curves(traces: dict[str, list[float]], unigram: float | None = None, ax=None):
    """The first updates of fresh models (chapter 02): the training perplexity of each batch, as a running
    median over 9 batches (one odd batch does not stretch the axis), on a plain log axis. ``traces`` maps a
    label to the perplexities of its batches; ``unigram`` draws the unigram count model's validation
    perplexity as a dashed line. The axis holds every curve from its first batch."""
    from matplotlib.ticker import MaxNLocator

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.2))
    for i, (label, ppl) in enumerate(traces.items()):
        ax.plot(range(1, len(ppl) + 1), _running_median(ppl), color=f"C{i}", lw=1.8, label=label)
    if unigram is not None:
        ax.axhline(unigram, color="k", ls="--", lw=1, label="unigram counts (validation)")
    medians = [v for ppl in traces.values() for v in _running_median(ppl)]
    low, high = 0.8 * min(medians + [unigram or min(medians)]), 1.15 * max(medians)  # every curve whole
    _plain_log_axis(ax, [t for t in (500, 700, 1000, 1500, 2000, 3000, 5000, 10000, 20000) if low <= t <= high])
    ax.set_ylim(low, high)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _finish(ax, "update (one batch of sentences)", "training perplexity of the batch (log)",
                   "The first updates: running median of 9 batches")


def reduced_run_curves(history: list[dict], bigram_valid: float, label: str = "single score", title: str = "",
                       ax=None):
    """A short run's training (dashed) and validation (solid) perplexity by epoch, beside the validation
    perplexity of the interpolated bigram counted on the same tokens (dotted), on a plain log axis."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    epochs = [h["epoch"] for h in history]
    ax.plot(epochs, [h["valid_ppl"] for h in history], "-o", color="C0", label=f"{label}, validation")
    ax.plot(epochs, [h["train_ppl"] for h in history], "--", color="C0", alpha=0.6, label=f"{label}, training")
    ax.axhline(bigram_valid, color="k", ls=":", lw=1.2, label="bigram counts, validation")
    values = [h[k] for h in history for k in ("valid_ppl", "train_ppl")] + [bigram_valid]
    ticks = [t for t in (200, 300, 400, 500, 700, 1000, 1500, 2000, 3000) if 0.9 * min(values) <= t <= 1.1 * max(values)]
    _plain_log_axis(ax, ticks)
    ax.set_xticks(epochs)
    return _finish(ax, "epoch", "perplexity (log scale)", title)


def protocol_curves(settings: dict, ax=None, title: str = "", ylim: tuple[float, float] = (100, 310),
                    ticks=(100, 110, 120, 140, 170, 200, 250, 300)):
    """Validation perplexity by epoch of stored runs (:class:`mlm.stored.StoredSetting`, one colour per
    setting, one line per seed), each setting's legend giving its seeds and mean test perplexity, and a
    dotted line where the learning rate first falls below its start."""
    import statistics

    from matplotlib.ticker import MaxNLocator

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.3))
    decay = None
    for i, (label, setting) in enumerate(settings.items()):
        test = statistics.fmean(setting.values("test_ppl"))
        for s in range(len(setting.seeds)):
            metrics = setting.metrics(s)
            ax.plot([m["epoch"] for m in metrics], [m["valid_ppl"] for m in metrics], "-o", ms=2.5, lw=1.3,
                    color=f"C{i}", label=f"{label} ({len(setting.seeds)} seeds; test {test:.1f})" if s == 0 else None)
            decay = decay or next((m["epoch"] for m in metrics if m["lr"] < metrics[0]["lr"]), None)
    if decay is not None:
        ax.axvline(decay - 0.5, color="k", ls=":", lw=1)
        ax.text(decay - 0.3, ylim[1] * 0.97, "learning rate\nhalves from here", fontsize=9, va="top")
    _plain_log_axis(ax, list(ticks))
    ax.set_ylim(*ylim)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _finish(ax, "epoch", "validation perplexity (log scale)", title)


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


def own_protocol_figure(results: str = "../results", ax=None):
    """Chapter 02's verdict figure: Salton et al.'s claim with the paper's own recipe (the ``cpu`` manifest's
    row, :func:`mlm.evidence.paper_evidence`), as the validation perplexity by epoch of every stored seed of the
    LSTM and of the single score with its head at a tenth of the rate (:func:`protocol_curves`), titled with
    the row's change of mean test perplexity and its 95% interval. Returns the axes and the claims row."""
    from mlm.claims import interval_text
    from mlm.evidence import paper_evidence
    from mlm.reproduce import load_manifest
    from mlm.stored import load_settings

    ((claim, row),) = [(c, r) for _, c, r in paper_evidence("02", results, manifests=("cpu",))]
    settings = load_settings([s for s in load_manifest("cpu") if s.group == claim.group], results)
    model = settings[claim.model].results[0]["config"]["model"]
    title = (f"The paper's recipe at {model['num_layers']} x {model['hidden_size']}: validation perplexity, one line "
             f"per seed\ntest perplexity, single score against the LSTM: "
             f"{interval_text(row.seeds[0], row.seeds[1], row.machine)}")
    ax = protocol_curves({"LSTM": settings[claim.control], "single score, head at 0.1x": settings[claim.model]},
                         ax=ax, title=title)
    return ax, row


def salton_claims_figure(entries: list[tuple], title: str = "", ax=None):
    """Report r02's verdict figure: one line per comparison. ``entries`` holds ``(label, model, control, machine,
    verdict, paper)``: the per-seed test perplexities of each side, the machine term (the interval is widened by
    it, drawn thin), the rule's label (written at the right) and the paper's change (a hollow diamond, read for
    its direction only where its pair is no controlled comparison; None: not drawn). Left of 0 the model is
    better; the grey band is the +-1% margin."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    from mlm.claims import MARGIN, relative_change

    if ax is None:
        _, ax = plt.subplots(figsize=(9.5, 0.55 * len(entries) + 1.9))
    for y, (_, model, control, machine, verdict, paper) in enumerate(entries):
        change, low, high = relative_change(model, control)
        if machine:
            ax.plot([100 * (low - machine), 100 * (high + machine)], [y, y], color="C0", lw=1)
        ax.plot([100 * low, 100 * high], [y, y], color="C0", lw=4, solid_capstyle="butt")
        ax.plot(100 * change, y, "o", color="C0", ms=6)
        if paper is not None:
            ax.plot(100 * paper, y, "D", mfc="none", mec="k", ms=7)
        ax.text(1.01, y, verdict, transform=ax.get_yaxis_transform(), va="center", fontsize=9)
    ax.axvspan(-100 * MARGIN, 100 * MARGIN, color="0.88", zorder=0)
    ax.axvline(0, color="0.4", lw=1)
    ax.set_yticks(range(len(entries)), [e[0] for e in entries], fontsize=9)
    ax.set_ylim(len(entries) - 0.5, -0.5)
    ax.xaxis.set_major_locator(MultipleLocator(2.5 if ax.get_xlim()[1] - ax.get_xlim()[0] < 25 else 5))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+g}" if v else "0"))
    ax.set_xlabel("change of mean test perplexity against the LSTM (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Line2D([], [], color="C0", lw=4, marker="o", label="ours: the change and its 95% interval"),
               Line2D([], [], color="C0", lw=1, label="hardware allowance"),
               Patch(color="0.88", label=f"the ±{MARGIN:.0%} margin")]
    if any(e[5] is not None for e in entries):
        handles.append(Line2D([], [], ls="", marker="D", mfc="none", mec="k",
                              label="the paper's pair (direction only: its LSTM ran another protocol)"))
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    return ax


def matched_recipe_panels(curves: dict[str, list[list[dict]]], title: str = "", ylim=(45, 800),
                          ticks=(50, 100, 200, 400, 800)):
    """Report r02's matched-recipe runs as small multiples (:func:`mlm.plots.common.seed_curves`: one panel per
    setting, validation solid, training dashed, a dot at each seed's best validation), with a legend of the
    seeds' colours. ``curves`` maps a panel's title to each seed's metrics. Returns the figure."""
    from matplotlib.lines import Line2D

    from mlm.plots.common import seed_curves

    fig, axes = plt.subplots(1, len(curves), figsize=(3.2 * len(curves) + 0.6, 3.8), sharey=True, squeeze=False)
    seed_curves(curves, axes=axes[0], ylim=ylim, ticks=ticks)
    seeds = max(len(s) for s in curves.values())
    handles = [Line2D([], [], color=f"C{s}", lw=1.5, label=f"seed {s}") for s in range(seeds)]
    handles += [Line2D([], [], color="0.3", lw=1.5, label="validation"),
                Line2D([], [], color="0.3", lw=1, ls="--", label="training"),
                Line2D([], [], color="0.3", ls="", marker="o", label="best validation")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
