"""Interactive explorers for JupyterLab; each falls back to a static figure when run headless."""

from __future__ import annotations

import matplotlib.pyplot as plt

from mlm.analysis import probe_sentence
from mlm.plots import attention_heatmap
from mlm.utils import headless


def _show_probe(models: dict, vocab, text: str, name: str):
    words = text.lower().split()
    unknown = [w for w in words if w not in vocab]
    probe = probe_sentence(models[name], vocab, words)
    attention_heatmap(probe, title=f"{name}: {' '.join(words)}")
    plt.show()
    if unknown:
        print("not in the vocabulary, read as <unk>:", ", ".join(unknown))
    print(f"{'after':<14} {'next word':<14} {'p(next)':>8}   top-5 predictions")
    for t, target in enumerate(probe["targets"]):
        top = ", ".join(f"{w} {p:.2f}" for w, p in probe["top"][t])
        print(f"{probe['inputs'][t]:<14} {target:<14} {probe['target_prob'][t]:>8.3f}   {top}")


def attention_explorer(models: dict, vocab, examples: list[str]):
    """Pick or type a sentence and a model; see its attention matrix and top predictions.

    ``models`` maps a label to a trained sentence model with an attention head. Headless (the
    book runner) or without ipywidgets, it draws the first example for every model instead.
    """
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:  # pragma: no cover - ipywidgets is a book requirement
        widgets = None
    if widgets is None or headless():
        for name in models:
            _show_probe(models, vocab, examples[0], name)
        return None
    sentence = widgets.Combobox(value=examples[0], options=examples, description="sentence",
                                layout=widgets.Layout(width="90%"), ensure_option=False)
    model = widgets.Dropdown(options=list(models), description="model")
    output = widgets.Output()

    def update(*_):
        output.clear_output(wait=True)
        with output:
            if sentence.value.strip():
                _show_probe(models, vocab, sentence.value, model.value)

    sentence.observe(update, names="value")
    model.observe(update, names="value")
    update()
    ui = widgets.VBox([widgets.HBox([model]), sentence, output])
    display(ui)
    return ui


def _show_memory_probe(models: dict, vocab, text: str, name: str):
    from mlm.memory_analysis import memory_heatmap, probe_memory_sentence

    words = text.lower().split()
    unknown = [w for w in words if w not in vocab]
    probe = probe_memory_sentence(models[name], vocab, words)
    memory_heatmap(probe, title=f"{name}: {' '.join(words)}")
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
    words, columns the inputs, the current word on the diagonal. Headless, it draws the first
    example for every model.
    """
    try:
        import ipywidgets as widgets
        from IPython.display import display
    except ImportError:  # pragma: no cover - ipywidgets is a book requirement
        widgets = None
    if widgets is None or headless():
        for name in models:
            _show_memory_probe(models, vocab, examples[0], name)
        return None
    sentence = widgets.Combobox(value=examples[0], options=examples, description="sentence",
                                layout=widgets.Layout(width="90%"), ensure_option=False)
    model = widgets.Dropdown(options=list(models), description="model")
    output = widgets.Output()

    def update(*_):
        output.clear_output(wait=True)
        with output:
            if sentence.value.strip():
                _show_memory_probe(models, vocab, sentence.value, model.value)

    sentence.observe(update, names="value")
    model.observe(update, names="value")
    update()
    ui = widgets.VBox([widgets.HBox([model]), sentence, output])
    display(ui)
    return ui
