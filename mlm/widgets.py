"""Interactive explorers for JupyterLab; each falls back to a static figure when run headless."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mlm.analysis.history import probe_sentence
from mlm.plots import attention_heatmap
from mlm.utils import headless


def _show_probe(models: dict, vocab, text: str, name: str):
    words = text.lower().split()
    unknown = [w for w in words if w not in vocab]
    probe = probe_sentence(models[name], vocab, words)
    attention_heatmap(probe, title=f"{name}: weight against uniform attention over its row", relative=True)
    plt.show()
    if unknown:
        print("not in the vocabulary, read as <unk>:", ", ".join(unknown))
    print(f"{'after':<14} {'next word':<14} {'p(next)':>8}   top-5 predictions")
    for t, target in enumerate(probe["targets"]):
        top = ", ".join(f"{w} {p:.2f}" for w, p in probe["top"][t])
        print(f"{probe['inputs'][t]:<14} {target:<14} {probe['target_prob'][t]:>8.3f}   {top}")


def _sentence_explorer(models: dict, vocab, examples: list[str], show):
    """A sentence box and a model menu redrawing ``show(models, vocab, text, name)``; headless (the
    book runner) or without ipywidgets, ``show`` draws the first example for every model instead."""
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:  # pragma: no cover - ipywidgets is a book requirement
        widgets = None
    if widgets is None or headless():
        for name in models:
            show(models, vocab, examples[0], name)
        return None
    sentence = widgets.Combobox(value=examples[0], options=examples, description="sentence",
                                layout=widgets.Layout(width="90%"), ensure_option=False)
    model = widgets.Dropdown(options=list(models), description="model")
    output = widgets.Output()

    def update(*_):
        output.clear_output(wait=True)
        with output:
            if sentence.value.strip():
                show(models, vocab, sentence.value, model.value)

    sentence.observe(update, names="value")
    model.observe(update, names="value")
    update()
    ui = widgets.VBox([widgets.HBox([model]), sentence, output])
    display(ui)
    return ui


def attention_explorer(models: dict, vocab, examples: list[str]):
    """Pick or type a sentence and a model; see its attention matrix (each weight against uniform attention
    over its row, :func:`mlm.plots.attention_heatmap` with ``relative=True``) and top predictions.

    ``models`` maps a label to a trained sentence model with an attention head. Headless (the
    book runner) or without ipywidgets, it draws the first example for every model instead.
    """
    return _sentence_explorer(models, vocab, examples, _show_probe)


def _show_memory_probe(models: dict, vocab, text: str, name: str):
    from mlm.analysis.memory_block import probe_memory_sentence
    from mlm.plots import memory_attention_map

    words = [w if w in vocab else w.lower() for w in text.split()]  # PTB's N and <unk> stay as they are
    unknown = [w for w in words if w not in vocab]
    probe = probe_memory_sentence(models[name], vocab, words)
    memory_attention_map(probe, models[name].head.block.memory_size, title=name)
    plt.show()
    if unknown:
        print("not in the vocabulary, read as <unk>:", ", ".join(unknown))
    print(f"{'after':<14} {'next word':<14} {'log p':>7}  {'most attended':<16} top-5 predictions (log p)")
    for t, target in enumerate(probe["targets"]):
        row = probe["attention"][t]
        attended = probe["inputs"][int(row.argmax())]
        top = ", ".join(f"{w} {lp:.1f}" for w, lp in probe["top"][t])
        print(f"{probe['inputs'][t]:<14} {target:<14} {probe['target_log_prob'][t]:>7.2f}  "
              f"{attended + f' ({float(row.max()):.2f})':<16} {top}")


def memory_explorer(models: dict, vocab, examples: list[str]):
    """The Recurrent Memory Network's attention over the last n words of a typed sentence.

    Like :func:`attention_explorer`, for RM/RMR models (chapter 04): rows are the predicted
    words, columns the inputs, the current word on the diagonal and the cells outside the memory
    grey (:func:`mlm.plots.memory_attention_map`). Headless, it draws the first example for every model.
    """
    return _sentence_explorer(models, vocab, examples, _show_memory_probe)


def noising_distribution(schemes: dict, word_id: int, top: int = 8) -> dict[str, list[tuple[int, float]]]:
    """For each noising scheme, the ``top`` most likely words that input ``word_id`` becomes.

    ``schemes`` maps a label to a :class:`~mlm.regularizers.proposals.NoisingScheme`; word i turns into
    v with probability (1 - gamma_i) [v = i] + gamma_i pi(v) (Kong et al. Eq. 2 and 4, as mixture weights).
    Words it never becomes (probability 0: ``<bos>``, ``<pad>``, every word but the blank under blank
    noising) are left out, so a list may be shorter than ``top``.
    """
    import torch

    out = {}
    for label, scheme in schemes.items():
        probs = scheme.gamma[word_id] * scheme.proposal.clone()
        probs[word_id] += 1.0 - scheme.gamma[word_id]
        values, ids = torch.topk(probs, min(top, int((probs > 0).sum())))
        out[label] = [(int(i), float(p)) for i, p in zip(ids, values)]
    return out


_SCHEME_TITLES = {"blank": "blank noising (the word _)", "unigram": r"linear interpolation ($\pi = U$)",
                  "absolute": r"absolute discounting ($\pi = U$)", "kneser-ney": r"Kneser-Ney ($\pi = K$)"}


def _show_noising(counts, vocab, word: str, gamma: float, blank_id: int, top: int = 8):
    from mlm.regularizers import noising_scheme

    word_id = vocab.stoi[word]
    schemes = {name: noising_scheme(name, counts, gamma, blank_id=blank_id)
               for name in ("blank", "unigram", "absolute", "kneser-ney")}
    dists = noising_distribution(schemes, word_id, top)
    # one log axis for all panels, fixed from 1e-4 to 1, so that a bar's length reads the same everywhere
    low, ticks = 1e-4, [1e-4, 1e-3, 1e-2, 1e-1, 1]
    fig, axes = plt.subplots(1, len(dists), figsize=(2.75 * len(dists), 3.6))  # each panel has its own words
    for ax, (name, pairs) in zip(axes, dists.items()):
        labels = ["_" if i == blank_id and name == "blank" else vocab.itos[i] for i, _ in pairs]
        rows = [top - 1 - k for k in range(len(pairs))]  # the most likely word on top
        probs = [p for _, p in pairs]
        ax.barh(rows, [p - low for p in probs], left=low, color=["C1" if i == word_id else "C0" for i, _ in pairs])
        for y, p in zip(rows, probs):
            ax.text(p * 1.15, y, f"{p:.3f}" if p >= 0.01 else f"{p:.4f}", va="center", fontsize=9)
        ax.set_yticks(rows)
        ax.set_yticklabels(labels, fontsize=10)
        ax.set_ylim(-0.6, top - 0.4)
        ax.set_xscale("log")
        ax.set_xlim(low, 8)
        ax.set_xticks(ticks, ["0.0001", "0.001", "0.01", "0.1", "1"])
        ax.minorticks_off()
        ax.set_title(f"{_SCHEME_TITLES[name]}\n$\\gamma_i$ = {float(schemes[name].gamma[word_id]):.3f}", fontsize=10)
        ax.set_xlabel("probability (log scale)", fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
    fig.suptitle(f"what '{word}' becomes under each noising scheme ($\\gamma$ = {gamma}; orange: it stays)", fontsize=11)
    fig.tight_layout()
    plt.show()


def noising_explorer(counts, vocab, words: list[str], gammas=(0.1, 0.2, 0.3, 0.4), blank_id: int = 0):
    """Choose a word and gamma; see the top words it becomes under blank, unigram, absolute and Kneser-Ney noising.

    ``counts`` are :func:`mlm.regularizers.bigram_counts` of the training stream. Headless (the book runner)
    or without ipywidgets, it draws the first word at the second gamma instead.
    """
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:  # pragma: no cover - ipywidgets is a book requirement
        widgets = None
    if widgets is None or headless():
        _show_noising(counts, vocab, words[0], gammas[min(1, len(gammas) - 1)], blank_id)
        return None
    word = widgets.Combobox(value=words[0], options=words, description="word", ensure_option=False)
    gamma = widgets.SelectionSlider(options=list(gammas), value=gammas[min(1, len(gammas) - 1)], description="gamma")
    output = widgets.Output()

    def update(*_):
        output.clear_output(wait=True)
        with output:
            if word.value in vocab.stoi:
                _show_noising(counts, vocab, word.value, gamma.value, blank_id)
            else:
                print(f"{word.value!r} is not in the vocabulary")

    word.observe(update, names="value")
    gamma.observe(update, names="value")
    update()
    ui = widgets.VBox([widgets.HBox([word, gamma]), output])
    display(ui)
    return ui
