"""The assignments' experiments: short trainings on real data (PTB, or the recall task in 04) that ask a question
the chapter raises, and that run the student's own functions inside the book's models where they fit: the
perplexity (00), weight tying (01), the causal mask (02), the window mask (03), the memory window and temporal
rows (04), the Kneser-Ney statistics (05). Each writes ``exNN_experiment.json`` (its numbers) and
``exNN_experiment.png`` (one figure) in ``folder`` (the assignment passes its own folder, so they land beside the
student's file; a notebook's cell writes beside the notebook), prints what it measured and returns the numbers;
the written question reads them.

A full experiment is meant to train for at most about five minutes on a laptop's two cores. ``tiny=True`` (or
``MLM_EXERCISE_TINY=1``) runs the same code on a few hundred tokens in seconds: the tests use it, and so can a
student checking that everything runs. Corpora come from ``$MLM_DATA_DIR`` as in the book.

Called from each assignment's ``if __name__ == "__main__":`` block (never by the grader)::

    from exercises import experiments
    experiments.ex01(tie_weights=tie_weights, folder=Path(__file__).parent)
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from pathlib import Path

import torch

# One thread: at these sizes a second one gains little, and beside other programs (a browser, Jupyter) torch's
# threads wait on each other.
SMALL = {"data.max_train_tokens": 60_000, "data.max_eval_tokens": 20_000, "model.embed_size": 128,
         "model.hidden_size": 128, "data.batch_size": 16, "train.threads": 1}
TINY = {"data.max_train_tokens": 1_500, "data.max_eval_tokens": 600, "model.embed_size": 18, "model.hidden_size": 18,
        "data.batch_size": 4, "train.epochs": 1, "data.eval_batch_size": 8, "train.threads": 1}


def is_tiny(tiny: bool | None) -> bool:
    return bool(tiny) if tiny is not None else os.environ.get("MLM_EXERCISE_TINY") == "1"


def train(preset: str, changes: dict, tiny: bool, size: dict | None = None):
    """Train ``preset`` with ``changes`` at the experiments' size; returns the run (``mlm.train``'s result)."""
    import mlm

    overrides = {**(size or SMALL), **changes, **(TINY if tiny else {})}
    if tiny and "model.hidden_size" in changes:  # keep the change's shape (a split in three parts) at tiny size
        overrides["model.hidden_size"] = overrides["model.embed_size"] = 18
    cfg = mlm.get_preset(preset, "reduced", overrides=overrides)
    start = time.perf_counter()
    run = mlm.train(cfg, run_dir=None, progress=False)
    run.seconds = time.perf_counter() - start
    return run


@contextlib.contextmanager
def yours(module, **functions):
    """The book's ``module`` with ``functions`` (the student's, adapted to its signatures) in place of its own while
    the block runs: the book's model then trains with the student's code."""
    saved = {name: getattr(module, name) for name in functions}
    for name, function in functions.items():
        setattr(module, name, function)
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(module, name, function)


def summary(run) -> dict:
    return {"train_ppl": [round(h["train_ppl"], 2) for h in run.history],
            "valid_ppl": [round(h["valid_ppl"], 2) for h in run.history],
            "test_ppl": round(run.result.get("test_ppl", math.nan), 2), "parameters": run.result["parameters"],
            "seconds": round(run.seconds, 1)}


TINY_NOTE = "tiny: a check that the code runs, on a few hundred tokens; these numbers answer no question"


def save(name: str, numbers: dict, figure, folder=None, tiny: bool = False) -> dict:
    """Write the numbers and the figure in ``folder`` (default: the current folder); print the numbers. A tiny
    run's file and figure say so (``size``), so that it is never handed in or graded as the experiment."""
    folder = Path(folder) if folder is not None else Path.cwd()
    numbers = {"size": TINY_NOTE if tiny else "classroom", **numbers}
    if tiny:
        figure.suptitle("TINY RUN: the numbers answer no question", color="red")
    (folder / f"{name}_experiment.json").write_text(json.dumps(numbers, indent=1) + "\n")
    figure.savefig(folder / f"{name}_experiment.png", dpi=100, bbox_inches="tight")
    print(json.dumps(numbers, indent=1))
    print(f"wrote {name}_experiment.json and {name}_experiment.png in {folder}")
    return numbers


def curves(runs: dict, title: str, key: str = "valid_ppl"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.6))
    for label, numbers in runs.items():
        ax.plot(range(1, len(numbers[key]) + 1), numbers[key], marker="o", label=label)
        if key == "valid_ppl":
            ax.plot(range(1, len(numbers["train_ppl"]) + 1), numbers["train_ppl"], ls=":", color=ax.lines[-1].get_color())
    ax.set(xlabel="epoch", ylabel="perplexity (solid: validation, dotted: training)", title=title, yscale="log")
    ax.legend(fontsize=8)
    return figure


# ----------------------------------------------------------------------------- 00


def ex00(masked_perplexity=None, tiny: bool | None = None, folder=None) -> dict:
    """Chapter 00: an LSTM's validation perplexity as it trains, measured with *your* ``masked_perplexity``,
    against the unigram and bigram counted on the same training tokens."""
    import mlm
    from mlm.baselines import count_baseline
    from mlm.evaluation import masked_nll
    from mlm.evaluation import detach_state
    from mlm.training import build_batches, build_optimizer, training_forward
    from mlm.utils import set_seed

    tiny = is_tiny(tiny)
    overrides = {**SMALL, "model.num_layers": 1, "train.epochs": 2, **(TINY if tiny else {})}
    cfg = mlm.get_preset("zaremba2014-small", "reduced", overrides=overrides)
    set_seed(0)
    corpus = mlm.load_data(cfg)
    model = mlm.build_model(cfg, len(corpus.vocab), corpus.vocab.pad_id)
    optimizer = build_optimizer(cfg, model)
    valid = build_batches(cfg, corpus, "valid")
    baseline = count_baseline(cfg, corpus)
    measure = masked_perplexity or (lambda logits, targets, mask: math.exp(
        masked_nll(logits, targets, mask).item() / int(mask.sum())))

    def valid_ppl() -> tuple[float, float]:
        model.eval()
        total = reference = tokens = 0.0
        with torch.no_grad():
            for batch in valid:
                logits = model(batch.inputs, mask=batch.mask).logits
                n = int(batch.mask.sum())
                total += math.log(float(measure(logits, batch.targets, batch.mask))) * n  # your perplexity, as NLL
                reference += masked_nll(logits, batch.targets, batch.mask).item()
                tokens += n
        model.train()
        return math.exp(total / tokens), math.exp(reference / tokens)

    seen, points, start = 0, [], time.perf_counter()
    every = max(1, len(build_batches(cfg, corpus, "train")) // 6)
    for epoch in range(cfg.train.epochs):
        state = None
        for step, batch in enumerate(build_batches(cfg, corpus, "train")):
            if step % every == 0:
                points.append((seen, *valid_ppl()))
            out, nll, _ = training_forward(model, batch, state)
            state = detach_state(out.state)  # truncated BPTT: the next window starts here
            optimizer.zero_grad()
            (nll / batch.inputs.size(0)).backward()  # Zaremba's loss: summed over time, averaged over rows
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.clip)
            optimizer.step()
            seen += batch.num_tokens
    points.append((seen, *valid_ppl()))
    numbers = {"tokens_seen": [p[0] for p in points], "valid_ppl_yours": [round(p[1], 2) for p in points],
               "valid_ppl_reference": [round(p[2], 2) for p in points],
               "unigram_valid": round(baseline["unigram_valid"], 2), "bigram_valid": round(baseline["bigram_valid"], 2),
               "train_tokens": baseline["train_tokens"], "seconds": round(time.perf_counter() - start, 1)}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(numbers["tokens_seen"], numbers["valid_ppl_yours"], marker="o", label="LSTM (your masked_perplexity)")
    ax.axhline(numbers["unigram_valid"], ls="--", color="gray", label="unigram, same tokens")
    ax.axhline(numbers["bigram_valid"], ls=":", color="black", label="bigram, same tokens")
    ax.set(xlabel="training tokens seen", ylabel="validation perplexity", yscale="log", title="Chapter 00")
    ax.legend(fontsize=8)
    return save("ex00", numbers, figure, folder, tiny)


# ----------------------------------------------------------------------------- 01-03


def ex01(tie_weights=None, tiny: bool | None = None, folder=None) -> dict:
    """Chapter 01: tying the embeddings (with *your* ``tie_weights``), Zaremba's dropout between layers, and dropout
    on the recurrent weights."""
    import mlm.training as training
    from mlm.configs import apply_overrides

    tiny = is_tiny(tiny)
    original = training.build_model

    def build_tied_by_you(cfg, vocab_size, pad_id=0, corpus=None):
        if tie_weights is None or not cfg.model.tie_weights:
            return original(cfg, vocab_size, pad_id, corpus)
        model = original(apply_overrides(cfg, {"model.tie_weights": False}), vocab_size, pad_id, corpus)
        tie_weights(model.embedding, model.decoder)  # the model is untied until your function ties it
        model.tie_weights = True
        return model

    settings = {"untied, no dropout": ("zaremba2014-small", {}), "tied": ("press2017-small-tied", {}),
                "dropout 0.5 between layers": ("zaremba2014-small", {"model.dropout": 0.5}),
                "dropout 0.5 on the recurrent weights": ("zaremba2014-small", {"model.recurrent_dropout": 0.5})}
    with yours(training, build_model=build_tied_by_you):
        runs = {label: summary(train(preset, {"train.epochs": 3, **change}, tiny)) for label, (preset, change)
                in settings.items()}
    return save("ex01", {"runs": runs}, curves(runs, "Chapter 01: 2 x 128 LSTMs, 60k PTB tokens"), folder, tiny)


def ex02(causal_memory_mask=None, tiny: bool | None = None, folder=None) -> dict:
    """Chapter 02: the Attentive LM, its memory masked with *your* ``causal_memory_mask``, with its head at the
    network's learning rate and at a tenth of it, against the LSTM alone."""
    from mlm.models import attentive

    tiny = is_tiny(tiny)
    mask = attentive.causal_memory_mask if causal_memory_mask is None else \
        (lambda padding, batch, time, device: causal_memory_mask(padding, batch, time).to(device))
    with yours(attentive, causal_memory_mask=mask):
        runs = {f"head lr x {scale:g}": summary(train("salton2017-ptb-single", {"train.head_lr_scale": scale,
                                                                                 "train.epochs": 2}, tiny))
                for scale in (1.0, 0.1)}
    runs["LSTM alone"] = summary(train("salton2017-ptb-lstm", {"train.epochs": 2}, tiny))
    return save("ex02", {"runs": runs}, curves(runs, "Chapter 02: the head's learning rate"), folder, tiny)


def ex03(window_mask=None, tiny: bool | None = None, folder=None) -> dict:
    """Chapter 03: the key-value-predict window head, its window masked with *your* ``window_mask``, with windows of
    L = 1, 5 and 15."""
    from mlm.models import short_attention

    tiny = is_tiny(tiny)
    with yours(short_attention, window_mask=window_mask or short_attention.window_mask):
        runs = {f"L = {window}": summary(train(f"daniluk2017-ptb-kvp-L{window}", {"model.hidden_size": 129,
                                                                                  "model.embed_size": 43,
                                                                                  "train.epochs": 2}, tiny))
                for window in (1, 5, 15)}
    return save("ex03", {"runs": runs}, curves(runs, "Chapter 03: the window size L"), folder, tiny)


# ----------------------------------------------------------------------------- 04-06


def ex04(memory_window=None, temporal_rows=None, tiny: bool | None = None, folder=None) -> dict:
    """Chapter 04: the Memory Block, built on *your* ``memory_window`` and ``temporal_rows``, on the recall task
    with n = 5, 15 and 30 words: accuracy by distance."""
    from mlm.long_range import critical_scores
    from mlm.models import recurrent_memory
    from mlm.training import load_task

    tiny = is_tiny(tiny)
    size = {"data.task_examples": 8000, "train.epochs": 6, "train.threads": 1} if not tiny else \
        {"data.task_examples": 100, "train.epochs": 1, "model.hidden_size": 16, "model.embed_size": 8,
         "data.max_eval_tokens": 500, "train.threads": 1}
    book_rows = recurrent_memory.temporal_rows
    rows = book_rows if temporal_rows is None else \
        (lambda time, n, alignment, device=None: temporal_rows(time, n, device) if alignment == "paper"
         else book_rows(time, n, alignment, device))
    numbers, figure = {"runs": {}}, None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.6))
    with yours(recurrent_memory, memory_window=memory_window or recurrent_memory.memory_window, temporal_rows=rows):
        for n in (5, 15, 30):
            run = train("recall-rm", {"model.memory_size": n}, False, size=size)
            scores = critical_scores(run.model, load_task(run.config), split="valid")
            accuracy = {str(d): round(a, 3) for d, (a, _, count) in sorted(scores.by_distance.items()) if count}
            reach = max([int(d) for d, a in accuracy.items() if a >= 0.5], default=0)
            within, beyond = ([a for d, a in accuracy.items() if (int(d) <= n) == side] for side in (True, False))
            numbers["runs"][f"n = {n}"] = {"accuracy_by_distance": accuracy, "reach": reach,
                                           "mean_accuracy_within_n": round(sum(within) / max(len(within), 1), 3),
                                           "mean_accuracy_beyond_n": round(sum(beyond) / max(len(beyond), 1), 3),
                                           "valid_ppl": [round(h["valid_ppl"], 3) for h in run.history],
                                           "seconds": round(run.seconds, 1)}
            ax.plot([int(d) for d in accuracy], list(accuracy.values()), label=f"n = {n} (reach {reach})")
    ax.axhline(0.1, ls=":", color="gray", label="chance (1 in 10)")
    ax.set(xlabel="distance d from the key", ylabel="accuracy on the value", title="Chapter 04: memory size n")
    ax.legend(fontsize=8)
    return save("ex04", numbers, figure, folder, tiny)


def ex05(kneser_ney_proposal=None, absolute_discount_gamma=None, tiny: bool | None = None, folder=None,
         seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Chapter 05: does Kneser-Ney data noising (gamma = 0.2, with *your* statistics) lower the validation
    perplexity of a small LSTM? Three seeds a side, the interval and the book's rule: one seed ranks nothing."""
    from mlm import claims
    from mlm import regularizers
    from mlm.regularizers.proposals import NoisingScheme

    tiny = is_tiny(tiny)
    streams = []
    book_stream, book_scheme = regularizers.training_stream, regularizers.noising_scheme

    def stream(lines, eos_id):
        streams.append(book_stream(lines, eos_id))
        return streams[-1]

    def scheme(name, counts, gamma, blank_id=None):
        if name != "kneser-ney" or kneser_ney_proposal is None or absolute_discount_gamma is None:
            return book_scheme(name, counts, gamma, blank_id)
        ids, vocab = streams[-1], counts.vocab_size
        return NoisingScheme(name, torch.as_tensor(absolute_discount_gamma(ids, vocab, gamma), dtype=torch.float64),
                             torch.as_tensor(kneser_ney_proposal(ids, vocab), dtype=torch.float64), True)

    base = {"model.embed_size": 128, "model.hidden_size": 128, "model.num_layers": 1, "model.tie_weights": False,
            "model.dropout": 0.0, "model.embed_dropout": 0.0, "model.recurrent_dropout": 0.0, "train.epochs": 3}
    sides = {"gamma 0 (no noising)": {"model.regularizer": "none"}, "gamma 0.2": {"model.noise_gamma": 0.2}}
    with yours(regularizers, training_stream=stream, noising_scheme=scheme):
        runs = {side: [summary(train("kong2019-ptb-512-dn-kn", {**base, **change, "train.seed": seed}, tiny))
                       for seed in seeds] for side, change in sides.items()}
    noised, plain = ([r["valid_ppl"][-1] for r in runs[side]] for side in sides)
    change, low, high = claims.relative_change(noised, plain)
    gaps = {side: [round(r["valid_ppl"][-1] - r["train_ppl"][-1], 2) for r in runs[side]] for side in sides}
    numbers = {"runs": runs, "valid_noised": noised, "valid_plain": plain, "change": round(change, 4),
               "interval": [round(low, 4), round(high, 4)], "label": claims.verdict(noised, plain),
               "valid_minus_train": gaps}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.2))
    for row, (side, values) in enumerate(zip(sides, (plain, noised))):
        ax.scatter(values, [row] * len(values), label=side)
    ax.set(yticks=[0, 1], yticklabels=list(sides), xlabel="validation perplexity, one dot per seed",
           title=f"Chapter 05: {change:+.1%} ({low:+.1%} to {high:+.1%}): {numbers['label']}")
    return save("ex05", numbers, figure, folder, tiny)


def ex06(sequence_starts=None, accuracy_by_distance=None, tiny: bool | None = None, folder=None,
         seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Chapter 06: does tying lower the test perplexity? Three seeds a side, the interval, the book's verdict; and,
    measured with *your* ``sequence_starts`` and ``accuracy_by_distance``, each model's next-word accuracy by
    position in the sentence."""
    import mlm
    from mlm import claims

    tiny = is_tiny(tiny)
    paper = mlm.get_preset("press2017-small-tied").paper["test"] / mlm.get_preset("zaremba2014-small").paper["test"] - 1
    sides = {"tied": "press2017-small-tied", "untied": "zaremba2014-small"}
    runs, by_position = {}, {}
    for side, preset in sides.items():
        runs[side], curves_ = [], []
        for seed in seeds:
            run = train(preset, {"train.epochs": 2, "train.seed": seed}, tiny)
            runs[side].append(summary(run))
            curves_.append(accuracy_by_position(run, sequence_starts, accuracy_by_distance))
        by_position[side] = [round(sum(c[d] for c in curves_) / len(curves_), 4) for d in range(len(curves_[0]))]
    tied, untied = ([r["test_ppl"] for r in runs[side]] for side in sides)
    change, low, high = claims.relative_change(tied, untied)
    numbers = {"runs": runs, "tied_test": tied, "untied_test": untied, "paper_change": round(paper, 4),
               "change": round(change, 4), "interval": [round(low, 4), round(high, 4)],
               "verdict": claims.verdict(tied, untied, paper=paper, machine=0.0),  # one machine: no machine term
               "accuracy_by_position": by_position}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.2))
    for row, (side, values) in enumerate((("tied", tied), ("untied", untied))):
        ax.scatter(values, [row] * len(values), label=side)
    ax.set(yticks=[0, 1], yticklabels=["tied", "untied"], xlabel="test perplexity, one dot per seed",
           title=f"{change:+.1%} ({low:+.1%} to {high:+.1%}): {numbers['verdict']}")
    return save("ex06", numbers, figure, folder, tiny)


POSITIONS = 20  # accuracy by position in the sentence: positions 0 .. 19, the later ones counted at 20


@torch.no_grad()
def accuracy_by_position(run, sequence_starts=None, accuracy_by_distance=None) -> list[float]:
    """Next-word accuracy on the test sentences of ``run`` by position in the sentence, the state carried across
    sentences as in the book's evaluation; the positions and the accuracy computed by the student's functions
    (the book's :func:`mlm.context.sequence_starts` and a bincount where they are not given)."""
    import mlm
    from mlm.context import sequence_starts as book_starts
    from mlm.data import truncate_lines

    corpus = mlm.load_data(run.config)
    lines = truncate_lines(corpus.ids("test"), run.config.data.max_eval_tokens)
    eos = corpus.vocab.eos_id
    stream = torch.tensor([eos] + [i for line in lines for i in (*line, eos)])
    sentence = torch.cat([torch.zeros(1, dtype=torch.long)] + [torch.full((len(line) + 1,), k) for k, line in
                                                                  enumerate(lines)])  # the eos before each line
    inputs, targets = stream[:-1], stream[1:]
    starts = (sequence_starts or book_starts)(sentence[1:])  # the sentence of each target
    position = (torch.arange(targets.numel()) - torch.as_tensor(starts)).clamp(max=POSITIONS)
    model, state, logits = run.model.eval(), None, []
    device = next(model.parameters()).device
    for a in range(0, inputs.numel(), 35):
        out = model(inputs[None, a:a + 35].to(device), state=state)
        state, logits = out.state, logits + [out.logits[0].cpu()]
    logits = torch.cat(logits)
    if accuracy_by_distance is None:
        hits = (logits.argmax(-1) == targets).double()
        count = torch.bincount(position, minlength=POSITIONS + 1)
        accuracy = torch.bincount(position, weights=hits, minlength=POSITIONS + 1) / count.clamp(min=1)
    else:
        accuracy, _ = accuracy_by_distance(logits, targets, position, POSITIONS)
    return [float(a) for a in accuracy]
