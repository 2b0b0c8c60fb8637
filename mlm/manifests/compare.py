"""Every family under one recipe on PTB (chapter 06, part 2): the same data, optimiser, schedule and
parameter budget.

    python -m mlm reproduce compare --list
    python -m mlm reproduce compare --jobs 2        # two runs at once on a 2-core machine, one thread each

The recipe is Tran et al.'s (2016, section 4.2; chapter 04), the one whose LSTM control the cpu manifest
already runs: the whole of PTB (10k words), the sentence protocol (every model reads one sentence from a zero
state, which every head of the book is defined for), batches of 20 sentences from length buckets, SGD at lr 1
halved after every epoch from the 5th, 15 epochs, no dropout. The budget is the parameter count of Tran's
1-layer LSTM at d = 128 (2.70M); every other family gets the width that brings it within 10% of it
(:data:`WIDTHS`, found by counting the built models; tests/test_reproduce.py checks them). The Memory Block
keeps tables of its own the size of the vocabulary, so RM and RMR come down to d = 66 and 65, half the
paper's 128; the paper's d = 128 runs are the cpu manifest's ``cpu-tran2016-ptb`` group. Each run is scored
with the history cut to k words (the ``history-cut`` post-step, k = 1, 2, 5, 10, 20, 50 and all).
"""

import dataclasses

from mlm.reproduce import runs

SEEDS = (0, 1, 2)
BASE = "tran2016-ptb-lstm1"
BUDGET = 2_702_096  # parameters of BASE with PTB's 10,000 words

# family -> (overrides of BASE, hours on one thread, measured or estimated)
_window = {"model.head": "window", "model.window_size": 5}
FAMILIES = {
    "lstm": ({}, 0.5),
    "tied": ({"model.tie_weights": True, "model.embed_size": 228, "model.hidden_size": 228}, 0.8),
    "attentive-single": ({"model.head": "attentive", "model.attention_score": "single"}, 0.6),
    "attentive-combined": ({"model.head": "attentive", "model.attention_score": "combined"}, 0.7),
    "window-L5": ({**_window, "model.window_kind": "attention", "model.hidden_size": 123}, 0.6),
    "kv-L5": ({**_window, "model.window_kind": "key-value", "model.hidden_size": 214}, 0.7),
    "kvp-L5": ({**_window, "model.window_kind": "key-value-predict", "model.hidden_size": 279}, 0.8),
    "ngram4": ({"model.head": "ngram", "model.ngram_n": 4, "model.hidden_size": 279}, 0.8),
    "rm-tm-g": ({"model.head": "rm", "model.memory_temporal": True, "model.embed_size": 66,
                 "model.hidden_size": 66}, 1.0),
    "rmr-notm-g": ({"model.head": "rmr", "model.memory_temporal": False, "model.embed_size": 65,
                    "model.hidden_size": 65}, 1.0),
    # chapter 05's variational smoothing (Kneser-Ney, gamma 0.2) on the tied LSTM; no weight decay in this
    # recipe, so its data-dependent L2 term is off
    "vs-kn-tied": ({"model.tie_weights": True, "model.embed_size": 228, "model.hidden_size": 228,
                    "model.regularizer": "smooth", "model.noise_scheme": "kneser-ney", "model.noise_gamma": 0.2}, 0.9),
}
WIDTHS = {name: overrides.get("model.hidden_size", 128) for name, (overrides, _) in FAMILIES.items()}


def _set(overrides: dict) -> list[str]:
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]


RUNS = [dataclasses.replace(r, hours=hours)
        for name, (overrides, hours) in FAMILIES.items()
        for r in runs("compare-ptb", name, BASE, overrides=_set(overrides), seeds=SEEDS, post=("history-cut",))]
