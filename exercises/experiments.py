"""The assignments' experiments: short trainings on real data (PTB, or the recall task in 04) that ask a question
the chapter raises. Each writes ``exNN_experiment.json`` (its numbers) and ``exNN_experiment.png`` (one figure)
in the current folder, prints what it measured, and returns the numbers; the written question reads them.

A full experiment trains for at most about five minutes on a laptop's two cores. ``tiny=True`` (or the
environment variable ``MLM_EXERCISE_TINY=1``) runs the same code on a few hundred tokens in seconds: the tests
use it, and so can a student checking that everything runs. Corpora come from ``$MLM_DATA_DIR`` as in the book.

Called from each assignment's ``if __name__ == "__main__":`` block (never by the grader)::

    from exercises import experiments
    experiments.ex01()
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import torch

SMALL = {"data.max_train_tokens": 60_000, "data.max_eval_tokens": 20_000, "model.embed_size": 128,
         "model.hidden_size": 128, "data.batch_size": 16, "train.threads": 2}
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


def summary(run) -> dict:
    return {"train_ppl": [round(h["train_ppl"], 2) for h in run.history],
            "valid_ppl": [round(h["valid_ppl"], 2) for h in run.history],
            "test_ppl": round(run.result.get("test_ppl", math.nan), 2), "parameters": run.result["parameters"],
            "seconds": round(run.seconds, 1)}


def save(name: str, numbers: dict, figure) -> dict:
    """Write the numbers and the figure; print the numbers."""
    Path(f"{name}_experiment.json").write_text(json.dumps(numbers, indent=1) + "\n")
    figure.savefig(f"{name}_experiment.png", dpi=100, bbox_inches="tight")
    print(json.dumps(numbers, indent=1))
    print(f"wrote {name}_experiment.json and {name}_experiment.png")
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


def ex00(masked_perplexity=None, tiny: bool | None = None) -> dict:
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
    return save("ex00", numbers, figure)


# ----------------------------------------------------------------------------- 01-03


def ex01(tiny: bool | None = None) -> dict:
    """Chapter 01: tying the embeddings, Zaremba's dropout between layers, and dropout on the recurrent weights."""
    tiny = is_tiny(tiny)
    settings = {"untied, no dropout": ("zaremba2014-small", {}), "tied": ("press2017-small-tied", {}),
                "dropout 0.5 between layers": ("zaremba2014-small", {"model.dropout": 0.5}),
                "dropout 0.5 on the recurrent weights": ("zaremba2014-small", {"model.recurrent_dropout": 0.5})}
    runs = {label: summary(train(preset, {"train.epochs": 3, **change}, tiny)) for label, (preset, change)
            in settings.items()}
    return save("ex01", {"runs": runs}, curves(runs, "Chapter 01: 2 x 128 LSTMs, 60k PTB tokens"))


def ex02(tiny: bool | None = None) -> dict:
    """Chapter 02: the Attentive LM with its head at the network's learning rate and at a tenth of it."""
    tiny = is_tiny(tiny)
    runs = {f"head lr x {scale:g}": summary(train("salton2017-ptb-single", {"train.head_lr_scale": scale,
                                                                             "train.epochs": 2}, tiny))
            for scale in (1.0, 0.1)}
    runs["LSTM alone"] = summary(train("salton2017-ptb-lstm", {"train.epochs": 2}, tiny))
    return save("ex02", {"runs": runs}, curves(runs, "Chapter 02: the head's learning rate"))


def ex03(tiny: bool | None = None) -> dict:
    """Chapter 03: the key-value-predict window head with windows of L = 1, 5 and 15."""
    tiny = is_tiny(tiny)
    runs = {f"L = {window}": summary(train(f"daniluk2017-ptb-kvp-L{window}", {"model.hidden_size": 129,
                                                                              "model.embed_size": 43,
                                                                              "train.epochs": 2}, tiny))
            for window in (1, 5, 15)}
    return save("ex03", {"runs": runs}, curves(runs, "Chapter 03: the window size L"))


# ----------------------------------------------------------------------------- 04-06


def ex04(tiny: bool | None = None) -> dict:
    """Chapter 04: the Memory Block on the recall task with n = 5, 15 and 30 words: accuracy by distance."""
    from mlm.long_range import critical_scores
    from mlm.training import load_task

    tiny = is_tiny(tiny)
    size = {"data.task_examples": 8000, "train.epochs": 8, "train.threads": 2} if not tiny else \
        {"data.task_examples": 100, "train.epochs": 1, "model.hidden_size": 16, "model.embed_size": 8,
         "data.max_eval_tokens": 500, "train.threads": 1}
    numbers, figure = {"runs": {}}, None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.6))
    for n in (5, 15, 30):
        run = train("recall-rm", {"model.memory_size": n}, False, size=size)
        scores = critical_scores(run.model, load_task(run.config), split="valid")
        accuracy = {str(d): round(a, 3) for d, (a, _, count) in sorted(scores.by_distance.items()) if count}
        reach = max([int(d) for d, a in accuracy.items() if a >= 0.5], default=0)
        numbers["runs"][f"n = {n}"] = {"accuracy_by_distance": accuracy, "reach": reach,
                                       "valid_ppl": [round(h["valid_ppl"], 3) for h in run.history],
                                       "seconds": round(run.seconds, 1)}
        ax.plot([int(d) for d in accuracy], list(accuracy.values()), label=f"n = {n} (reach {reach})")
    ax.axhline(0.1, ls=":", color="gray", label="chance (1 in 10)")
    ax.set(xlabel="distance d from the key", ylabel="accuracy on the value", title="Chapter 04: memory size n")
    ax.legend(fontsize=8)
    return save("ex04", numbers, figure)


def ex05(tiny: bool | None = None) -> dict:
    """Chapter 05: Kneser-Ney data noising with gamma = 0 (none), 0.1, 0.2 and 0.4."""
    tiny = is_tiny(tiny)
    base = {"model.embed_size": 128, "model.hidden_size": 128, "model.num_layers": 1, "model.tie_weights": False,
            "model.dropout": 0.0, "model.embed_dropout": 0.0, "model.recurrent_dropout": 0.0, "train.epochs": 3}
    runs = {"gamma 0 (no noising)": summary(train("kong2019-ptb-512-dn-kn", {**base, "model.regularizer": "none"},
                                                  tiny))}
    for gamma in (0.1, 0.2, 0.4):
        runs[f"gamma {gamma}"] = summary(train("kong2019-ptb-512-dn-kn", {**base, "model.noise_gamma": gamma}, tiny))
    return save("ex05", {"runs": runs}, curves(runs, "Chapter 05: the noising level gamma"))


def ex06(tiny: bool | None = None, seeds: tuple[int, ...] = (0, 1, 2)) -> dict:
    """Chapter 06: does tying lower the test perplexity? Three seeds a side, the interval, the book's verdict."""
    import mlm
    from mlm import claims

    tiny = is_tiny(tiny)
    paper = mlm.get_preset("press2017-small-tied").paper["test"] / mlm.get_preset("zaremba2014-small").paper["test"] - 1
    sides = {"tied": "press2017-small-tied", "untied": "zaremba2014-small"}
    runs = {side: [summary(train(preset, {"train.epochs": 2, "train.seed": seed}, tiny)) for seed in seeds]
            for side, preset in sides.items()}
    tied, untied = ([r["test_ppl"] for r in runs[side]] for side in ("tied", "untied"))
    change, low, high = claims.relative_change(tied, untied)
    numbers = {"runs": runs, "tied_test": tied, "untied_test": untied, "paper_change": round(paper, 4),
               "change": round(change, 4), "interval": [round(low, 4), round(high, 4)],
               "verdict": claims.verdict(tied, untied, paper=paper, converged=False)}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(6, 3.2))
    for row, (side, values) in enumerate((("tied", tied), ("untied", untied))):
        ax.scatter(values, [row] * len(values), label=side)
    ax.set(yticks=[0, 1], yticklabels=["tied", "untied"], xlabel="test perplexity, one dot per seed",
           title=f"{change:+.1%} ({low:+.1%} to {high:+.1%}): {numbers['verdict']}")
    return save("ex06", numbers, figure)
