"""Figures of data noising and variational smoothing (chapter 05) and of Kong et al.'s claims (report r05)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from mlm.plots.common import _plain_log_axis, _with_seeds, flow_diagram

__all__ = ["overfitting_panels", "l2_weight_figure", "run_curves", "smoothing_diagram", "marked", "aligned_rows",
           "kong_labels", "kong_name", "kong_verdict_figure", "kong_protocol_panels", "diagnostic_curves"]


def overfitting_panels(seeds: list[list[dict]], title: str = "", zoom: tuple[float, float] | None = None):
    """Two panels of the same stored runs (one colour per seed): training (dashed) and validation (solid)
    perplexity by epoch on a log axis, where the gap between them shows; and validation alone on a linear axis
    zoomed to ``zoom`` (by default its lowest value minus 2 to its last values plus 3), where its rise after the
    best epoch (dot) shows."""
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for s, history in enumerate(seeds):
        epochs = [h["epoch"] for h in history]
        valid = [h["valid_ppl"] for h in history]
        best = min(range(len(valid)), key=valid.__getitem__)
        left.plot(epochs, [h["train_ppl"] for h in history], "--", color=f"C{s}", lw=1.2)
        left.plot(epochs, valid, "-", color=f"C{s}", lw=1.5, label=f"seed {s}")
        right.plot(epochs, valid, "-", color=f"C{s}", lw=1.5)
        right.plot(epochs[best], valid[best], "o", color=f"C{s}", ms=6, zorder=3)
    lowest = min(min(h["valid_ppl"] for h in history) for history in seeds)
    last = max(history[-1]["valid_ppl"] for history in seeds)
    right.set_ylim(*(zoom or (lowest - 2, last + 3)))
    _plain_log_axis(left, [30, 50, 100, 200, 300])
    left.set_ylabel("perplexity (log scale)")
    left.set_title("training (dashed) and validation (solid)", fontsize=10)
    left.legend(fontsize=9)
    right.set_ylabel("validation perplexity")
    right.set_title("validation, zoomed (dot: each seed's best epoch)", fontsize=10)
    for ax in (left, right):
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def l2_weight_figure(weights: dict[str, torch.Tensor], counts: torch.Tensor, itos: list[str],
                     words: tuple[str, ...] = ("the", "stock", "francisco"), title: str = ""):
    """One panel per proposal: each word's data-dependent L2 weight ``2 c_v`` (``weights`` maps a panel title
    to the (vocab,) tensor; 1 is plain weight decay) against its frequency rank (from ``counts``), on log axes,
    with ``words`` and each panel's largest weight named."""
    fig, axes = plt.subplots(1, len(weights), figsize=(5 * len(weights), 3.8), sharey=True, squeeze=False)
    order = torch.argsort(counts, descending=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(1, len(order) + 1)
    stoi = {w: i for i, w in enumerate(itos)}
    for ax, (name, coef) in zip(axes[0], weights.items()):
        ax.loglog(rank, coef, ".", ms=2, alpha=0.4, color="C0", rasterized=True)
        ax.axhline(1.0, color="k", ls=":", lw=1)
        for w in dict.fromkeys((itos[int(coef.argmax())], *words)):
            i = stoi[w]
            ax.plot(rank[i], coef[i], "o", color="C3", ms=5)
            below = float(coef[i]) < 1  # under the dot, clear of the cloud; else to its right
            ax.annotate(f"{w} ({float(coef[i]):.1f})", (rank[i], coef[i]), xytext=(6, -14) if below else (7, -4),
                        textcoords="offset points", fontsize=9,
                        bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("frequency rank of the word in the training text")
        ax.set_xticks([1, 10, 100, 1000, 10000], ["1", "10", "100", "1,000", "10,000"])
        ax.set_yticks([0.1, 1, 10, 100], ["0.1", "1", "10", "100"])
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel("$2 c_v$ (1 = plain weight decay)")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def run_curves(history: list[dict], baseline: float, baseline_label: str, title: str = ""):
    """One run's training (dashed) and validation (solid) perplexity by epoch on a log axis with plain ticks,
    and a count baseline's validation perplexity as a dotted line."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 3.8))
    epochs = [h["epoch"] for h in history]
    ax.plot(epochs, [h["train_ppl"] for h in history], "--", color="C0", label="training (under the noise)")
    ax.plot(epochs, [h["valid_ppl"] for h in history], "-o", color="C1", ms=4, label="validation (the mean of q)")
    ax.axhline(baseline, color="0.3", ls=":", lw=1.5, label=baseline_label)
    values = [h[k] for h in history for k in ("train_ppl", "valid_ppl")] + [baseline]
    _plain_log_axis(ax, [t for t in (60, 80, 100, 150, 200, 300, 400, 600) if min(values) * 0.9 <= t <= max(values) * 1.1])
    ax.set_xlabel("epoch")
    ax.set_ylabel("perplexity (log scale)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="upper right")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def smoothing_diagram():
    """Variational smoothing in training, box by box, with the shape each step gives (Eq. 2/4, 5, 6)."""
    return flow_diagram([
        ("tokens x", "(batch, time)"),
        (r"per sequence and word type: keep $e_i$, or with" "\n" r"probability $\gamma_i$ take $e_v$, $v \sim \pi$",
         "(batch, time, d)"),
        ("times the embedding dropout mask (Eq. 6)", "(batch, time, d)"),
        ("LSTM", "(batch, time, d)"),
        ("softmax over $O$, the target's row $o_{x_t}$ replaced\n"
         "by $o_{v'}$ wherever its input word was", "(batch, time, vocab)"),
    ], title="Variational smoothing in training; at test time every row is the mean of q, and nothing is drawn",
        notes={1: "Eq. 2/4; element-wise: one draw per element", 4: "Eq. 5, coupled to the input (section 4.2)"})


def marked(itos: list[str], words, replaced) -> list[str]:
    """Each of the ids ``words`` as its word, written "[word→new]" where the ids ``replaced`` (same length)
    differ from it: a noised or smoothed sequence beside the one it came from."""
    return [itos[w] if w == v else f"[{itos[w]}→{itos[v]}]" for w, v in zip(list(map(int, words)), list(map(int, replaced)))]


def aligned_rows(rows: dict[str, list[str]], per_line: int = 8) -> str:
    """Rows of cells (``rows`` maps a row's name to its cells, all as long) as text columns, ``per_line``
    columns a block, each column as wide as its widest cell, so that the cells of one position stand together."""
    names = list(rows)
    length = len(rows[names[0]])
    pad = max(map(len, names)) + 2
    blocks = []
    for start in range(0, length, per_line):
        columns = range(start, min(start + per_line, length))
        width = [max(len(rows[n][j]) for n in names) for j in columns]
        blocks.append("\n".join(f"{n:<{pad}}" + " ".join(f"{rows[n][j]:<{w}}" for j, w in zip(columns, width)).rstrip()
                                for n in names))
    return "\n\n".join(blocks)


_KONG_NAMES = {"dn-kn": "data noising (KN)", "vs-kn": "VS-KN", "vs-elementwise": "element-wise VS",
               "vanilla-tied": "tied LSTM", "tied": "tied LSTM"}  # by prefix


def kong_name(run: str) -> str:
    """A run of Kong et al.'s groups as the text names it: "VS-KN", "data noising (KN)", "tied LSTM"."""
    return next((v for k, v in _KONG_NAMES.items() if run.startswith(k)), run)


def kong_labels(rows) -> list[str]:
    """A label per ``(manifest, claim, row)`` of Kong et al.'s claims: the comparison, the L2 weight of its
    group where it has one, the model, and the control where it is not the tied LSTM, e.g. "the paper's
    recipe, λ = 1e-4: VS-KN" or "the paper's recipe, λ = 1e-4: VS-KN vs data noising (KN)"."""
    out = []
    for manifest, claim, row in rows:
        model = row.model_run or (claim.model if isinstance(claim.model, str) else claim.model[0])
        control = row.control_run or (claim.control if isinstance(claim.control, str) else claim.control[0])
        name = kong_name(model) + ("" if kong_name(control) == "tied LSTM" else f" vs {kong_name(control)}")
        if manifest == "cpu":
            if claim.group.endswith("lambda0"):
                out.append(f"λ = 0 both sides (not the paper's λ): {name}")
            else:
                out.append(f"the paper's recipe, λ = 1e-4: {name}")
        else:
            out.append(f"{'matched recipe' if manifest == 'compare' else manifest}: {name}")
    return out


def kong_verdict_figure(rows, manifests: tuple[str, ...] = ("cpu",), title: str = ""):
    """The interval plot (:func:`mlm.plots.interval_plot`) of the decided rows among ``rows`` (``(manifest,
    claim, row)`` of :func:`mlm.evidence.paper_evidence`) whose manifest is in ``manifests``, each labelled by
    its comparison, lambda and model."""
    from mlm.plots.claims import interval_plot

    kept = [r for r in rows if r[0] in manifests and r[2].decided]
    ax = interval_plot([row for *_, row in kept], kong_labels(kept), title=title)
    ax.figure.set_size_inches(11, 0.5 * len(kept) + 1.5)
    ax.figure.tight_layout()
    return ax


def kong_protocol_panels(panels: dict[str, dict[str, list[list[dict]]]], ylim=(95, 185), first_epoch: int = 5,
                         title: str = ""):
    """Validation perplexity by epoch of stored runs in side-by-side panels on one y axis, one line per seed and
    a dot at each seed's best epoch: ``panels`` maps a panel title to its ``{setting: seeds}``; a setting keeps
    its colour in every panel; ``first_epoch`` leaves out the steep start."""
    from matplotlib.ticker import MaxNLocator

    names = list(dict.fromkeys(name for groups in panels.values() for name in groups))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), sharey=True, squeeze=False)
    for ax, (panel, groups) in zip(axes[0], panels.items()):
        for label, seeds in groups.items():
            color = f"C{names.index(label)}"
            for s, history in enumerate(seeds):
                rows = [h for h in history if h["epoch"] >= first_epoch]
                epochs, valid = [h["epoch"] for h in rows], [h["valid_ppl"] for h in rows]
                best = min(range(len(valid)), key=valid.__getitem__)
                ax.plot(epochs, valid, "-", color=color, lw=1.3, alpha=0.85,
                        label=_with_seeds(label, len(seeds)) if s == 0 else None)
                ax.plot(epochs[best], valid[best], "o", color=color, ms=5, zorder=3)
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(*ylim)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=9)
    axes[0, 0].set_ylabel("validation perplexity")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def diagnostic_curves(runs: dict[str, list[dict]], reference: float, reference_label: str, ylim=(100, 200),
                      title: str = ""):
    """Validation perplexity by epoch of one-seed diagnostic runs (``runs`` maps a label to its epochs), with a
    horizontal line at ``reference`` (the control's mean best, say)."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, (label, history) in enumerate(runs.items()):
        epochs = [h["epoch"] for h in history]
        ax.plot(epochs, [h["valid_ppl"] for h in history], "-o" if len(epochs) < 8 else "-", ms=3,
                color=f"C{i}", label=label)
    ax.axhline(reference, color="k", ls=":", lw=1.2, label=reference_label)
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation perplexity")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(*ylim)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8.5)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
