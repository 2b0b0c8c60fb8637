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
import os

from mlm.claims import PaperClaim
from mlm.presets.tran2016 import TRAN_TABLE2_EN
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
    # The papers' own comparisons where they differ from the matched budget (the fair-trial runs):
    # Press & Wolf tie at equal width (d = 128, 1.42M parameters: outside the budget on purpose);
    # Salton et al.'s head at a tenth of the learning rate (chapter 02); Daniluk et al.'s span claim is
    # about the window L itself, retrained at L = 1 and L = 15 (the window adds no parameters).
    "tied-d128": ({"model.tie_weights": True}, 0.5),
    "attentive-single-headlr0.1": ({"model.head": "attentive", "model.attention_score": "single",
                                    "train.head_lr_scale": 0.1}, 0.6),
    "attentive-combined-headlr0.1": ({"model.head": "attentive", "model.attention_score": "combined",
                                      "train.head_lr_scale": 0.1}, 0.7),
    "kvp-L1": ({**_window, "model.window_size": 1, "model.window_kind": "key-value-predict",
                "model.hidden_size": 279}, 0.8),
    "kvp-L15": ({**_window, "model.window_size": 15, "model.window_kind": "key-value-predict",
                 "model.hidden_size": 279}, 0.8),
}
# Five seeds of the control, so that a difference of one per cent can be told from seed noise
FAMILY_SEEDS = {"lstm": (0, 1, 2, 3, 4)}
OFF_BUDGET = ("tied-d128",)  # compared at the paper's equal width, not at the matched count
WIDTHS = {name: overrides.get("model.hidden_size", 128) for name, (overrides, _) in FAMILIES.items()}

# how chapter 06 names each family
LABELS = {
    "lstm": "LSTM", "tied": "tied LSTM", "attentive-single": "Attentive, single",
    "attentive-combined": "Attentive, combined", "window-L5": "window attention, L = 5", "kv-L5": "key-value, L = 5",
    "kvp-L5": "key-value-predict, L = 5", "ngram4": "4-gram RNN", "rm-tm-g": "RM(+tM-g), n = 15",
    "rmr-notm-g": "RMR(-tM-g), n = 15", "vs-kn-tied": "tied LSTM + VS-KN", "tied-d128": "tied LSTM, d = 128",
    "attentive-single-headlr0.1": "Attentive, single, head lr 0.1x",
    "attentive-combined-headlr0.1": "Attentive, combined, head lr 0.1x",
    "kvp-L1": "key-value-predict, L = 1", "kvp-L15": "key-value-predict, L = 15",
}

# Each paper's claim in the book's words (chapter 06's verdict page, :func:`mlm.table.stored_claims`): the
# family against its control in this group, beside the pair the paper reported under its own protocol and
# size (the presets' ``paper`` numbers). Salton et al. compare with Zaremba's medium LSTM (20M parameters, not
# a same-size control); Daniluk et al.'s numbers are from their 22.5M-word Wikipedia corpus; Tran et al.'s
# 1-layer LSTM is reported on English news only (Table 2), so their news numbers are used.
_DANILUK, _TRAN = "daniluk2017-wt2", "tran2016-ptb"
# The question each row answers (the README and the chapters print it beside the verdict): the book's own
# (matched parameters, one recipe) unless it says the paper's, with where it departs from the paper's pair.
MATCHED = "the book's: 2.70M parameters, one recipe (Tran's SGD, no dropout)"
# RMR puts a second LSTM layer above the block; Table 2 also has a 2-layer LSTM to set it beside
_RMR_VS_LSTM2 = TRAN_TABLE2_EN[("rmr", False, "gating")] / TRAN_TABLE2_EN[("lstm", 2)] - 1
QUESTIONS = {
    "tied": f"{MATCHED}; the tied LSTM is 228 wide against 128 (the paper ties at equal width: the d = 128 row)",
    "attentive-single": f"{MATCHED}; the head at the full learning rate (the paper's setting, under-trained here)",
    "attentive-combined": f"{MATCHED}; the head at the full learning rate",
    "window-L5": f"{MATCHED}; PTB sentences, not the paper's Wikipedia documents",
    "kv-L5": f"{MATCHED}; PTB sentences, not the paper's Wikipedia documents",
    "kvp-L5": f"{MATCHED}; PTB sentences, not the paper's Wikipedia documents",
    "ngram4": f"{MATCHED}; PTB sentences, not the paper's Wikipedia documents",
    "rm-tm-g": f"{MATCHED}, which leaves RM a 66-unit LSTM; the paper compares at equal width (d = 128): "
               "the cpu-tran2016-ptb rows; the paper's numbers are on English news, not PTB",
    "rmr-notm-g": f"{MATCHED}, which leaves RMR two 65-unit layers that cannot fit the training text; the paper "
                  "compares at equal width, on English news, not PTB; its change is against the 1-layer LSTM, the "
                  f"book's control (against its 2-layer LSTM, {_RMR_VS_LSTM2:+.1%})",
    "vs-kn-tied": f"{MATCHED}; the control has no dropout and overfits (the paper's control is regularized)",
    "tied-d128": "the paper's: equal width (d = 128), under Tran's recipe without dropout",
    "attentive-single-headlr0.1": f"{MATCHED}, with the head at a tenth of the learning rate (chapter 02)",
    "attentive-combined-headlr0.1": f"{MATCHED}, with the head at a tenth of the learning rate (chapter 02)",
    "kvp-L1": "the paper's contrast (the window L retrained, nothing else changed) under the book's recipe and "
              "parameter count, on PTB sentences, not the paper's Wikipedia documents",
    "kvp-L15": "the paper's contrast (the window L retrained, nothing else changed) under the book's recipe and "
               "parameter count, on PTB sentences, not the paper's Wikipedia documents",
}
# the chapter of each family's paper: its evidence section shows the family's rows (chapter 06 shows them all)
CHAPTERS = {"tied": "01", "tied-d128": "01", "attentive-single": "02", "attentive-combined": "02",
            "attentive-single-headlr0.1": "02", "attentive-combined-headlr0.1": "02", "window-L5": "03",
            "kv-L5": "03", "kvp-L5": "03", "ngram4": "03", "kvp-L1": "03", "kvp-L15": "03", "rm-tm-g": "04",
            "rmr-notm-g": "04", "vs-kn-tied": "05"}
CLAIMS = [PaperClaim(text, "compare-ptb", name, control, model_preset, control_preset, key,
                     chapter=CHAPTERS[name], question=QUESTIONS[name],
                     no_gain=name == "kvp-L15")  # the paper's point: the longer window does not help
          for text, name, control, model_preset, control_preset, key in [
    ("Tying the input and output embeddings improves the LSTM (Press & Wolf 2017, small: 114.5 → 112.4)",
     "tied", "lstm", "press2017-small-tied", "zaremba2014-small", "test"),
    ("Attention over the sentence so far, single score (Eq. 9), beats the LSTM (Salton et al. 2017, Table 1)",
     "attentive-single", "lstm", "salton2017-ptb-single", "zaremba2014-medium", "test"),
    ("The same with the combined score (Eq. 10) (Salton et al. 2017, Table 1)",
     "attentive-combined", "lstm", "salton2017-ptb-combined", "zaremba2014-medium", "test"),
    *((f"{claim} the LSTM (Daniluk et al. 2017, Fig. 2)", name, "lstm", f"{_DANILUK}-{preset}",
       f"{_DANILUK}-lstm", "test")
      for claim, name, preset in [("Attention over the last 5 outputs beats", "window-L5", "attention-L5"),
                                  ("Splitting each output into key and value beats", "kv-L5", "kv-L5"),
                                  ("Key, value and predict parts beat", "kvp-L5", "kvp-L5"),
                                  ("The 4-gram RNN, with no attention at all, beats", "ngram4", "ngram4")]),
    ("The Recurrent Memory block on top of the LSTM beats it (Tran et al. 2016, Table 2)",
     "rm-tm-g", "lstm", f"{_TRAN}-rm-tm-g", f"{_TRAN}-lstm1", "test_en_news"),
    ("RMR, the block between two LSTM layers, beats the LSTM (Tran et al. 2016, Table 2)",
     "rmr-notm-g", "lstm", f"{_TRAN}-rmr-notm-g", f"{_TRAN}-lstm1", "test_en_news"),
    ("Variational smoothing (Kneser-Ney) beats the plain tied LSTM (Kong et al. 2019, Table 2)",
     "vs-kn-tied", "tied", "kong2019-ptb-512-vs-kn", "kong2019-ptb-512-vanilla-tied", "test"),
    ("Tying improves the LSTM at equal width, d = 128 (Press & Wolf 2017's comparison, small: 114.5 → 112.4)",
     "tied-d128", "lstm", "press2017-small-tied", "zaremba2014-small", "test"),
    ("Attention over the sentence so far, single score (Eq. 9), beats the LSTM (Salton et al. 2017, Table 1), "
     "tested with the head at a tenth of the learning rate",
     "attentive-single-headlr0.1", "lstm", "salton2017-ptb-single", "zaremba2014-medium", "test"),
    ("The same with the combined score (Eq. 10) (Salton et al. 2017, Table 1), tested with the head at a tenth "
     "of the learning rate",
     "attentive-combined-headlr0.1", "lstm", "salton2017-ptb-combined", "zaremba2014-medium", "test"),
    ("A window of one output does as well as five (Daniluk et al. 2017, Fig. 2a: 76.1 against 75.8)",
     "kvp-L1", "kvp-L5", f"{_DANILUK}-kvp-L1", f"{_DANILUK}-kvp-L5", "test"),
    ("A window of fifteen outputs gains nothing over five (Daniluk et al. 2017, Fig. 2a: 75.8 against 75.8)",
     "kvp-L15", "kvp-L5", f"{_DANILUK}-kvp-L15", f"{_DANILUK}-kvp-L5", "test"),
]]

def row_label(claim: PaperClaim) -> str:
    """How a figure of the claims names a row: the family, and its control where that is neither the LSTM nor
    in the family's name, cut to the part that differs ("key-value-predict, L = 1 vs L = 5")."""
    name, control = LABELS[claim.model], LABELS[claim.control]
    if claim.control == "lstm" or control in name:
        return name
    shared = os.path.commonprefix([name, control]).rpartition(", ")[0]  # the words before the last shared comma
    return f"{name} vs {control[len(shared) + 2:] if shared else control}"


ROW_LABELS = {claim.model: row_label(claim) for claim in CLAIMS}

# the overrides that make a family what it is; without them a family's overrides give the plain LSTM of the
# same size (the bench's "same-size LSTM")
HEAD_KEYS = ("train.head_lr_scale", "model.head", "model.attention_score", "model.window_size", "model.window_kind", "model.ngram_n",
             "model.memory_temporal", "model.regularizer", "model.noise_scheme", "model.noise_gamma")


def _set(overrides: dict) -> list[str]:
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]


RUNS = [dataclasses.replace(r, hours=hours, label=f"{LABELS[name]}, {BASE}'s recipe")
        for name, (overrides, hours) in FAMILIES.items()
        for r in runs("compare-ptb", name, BASE, overrides=_set(overrides), seeds=FAMILY_SEEDS.get(name, SEEDS),
                      post=("history-cut",))]


def same_size_lstm(name: str) -> dict:
    """The overrides of family ``name`` without its head: the plain (or tied) LSTM of the same width."""
    return {k: v for k, v in FAMILIES[name][0].items() if k not in HEAD_KEYS}


def _bench_specs() -> tuple[list, dict]:
    """``python -m mlm bench --manifest compare``: seed 0 of every family, then each head's same-size LSTM
    (where it is not already a family of the group), so that a head's cost is read against both. Also
    {family: the bench row of its same-size LSTM}."""
    specs = [r for r in RUNS if r.seed == SEEDS[0]]
    rows = {tuple(sorted(FAMILIES[n][0].items())): f"compare-ptb/{n}" for n in FAMILIES}
    same_size = {}
    for name in FAMILIES:
        plain = same_size_lstm(name)
        key = tuple(sorted(plain.items()))
        if key not in rows:
            label = "lstm-" + "-".join(f"{k.split('.')[-1].replace('_size', '')}{v}" for k, v in plain.items())
            specs += runs("compare-ptb-bench", label, BASE, overrides=_set(plain))
            rows[key] = f"compare-ptb-bench/{label}"
        same_size[name] = rows[key]
    return specs, same_size


BENCH, SAME_SIZE = _bench_specs()  # SAME_SIZE: family -> the bench row of its same-size LSTM
