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
from pathlib import Path

from mlm.claims import PaperClaim
from mlm.manifests import grid_seeds
from mlm.presets.tran2016 import TRAN_TABLE2_EN
from mlm.reproduce import runs

SEEDS = (0, 1, 2)
BASE = "tran2016-ptb-lstm1"
RESULTS = Path(__file__).resolve().parents[2] / "results"
BUDGET = 2_702_096  # parameters of BASE with PTB's 10,000 words

# family -> (overrides of BASE, hours on one thread, measured or estimated)
_window = {"model.head": "window", "model.window_size": 5}
_tied = {"model.tie_weights": True, "model.embed_size": 228, "model.hidden_size": 228}
_smooth = {"model.regularizer": "smooth", "model.noise_scheme": "kneser-ney"}
TIED_DROPOUTS = (0.1, 0.2, 0.3)  # with the tied LSTM's 0.0: four points
VS_GAMMAS = (0.1, 0.3, 0.4)  # with vs-kn-tied's 0.2: four points
FAMILIES = {
    "lstm": ({}, 0.5),
    "tied": (_tied, 0.8),
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
    "vs-kn-tied": ({**_tied, **_smooth, "model.noise_gamma": 0.2}, 0.9),
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
    # Fair trials: the control tuned as the model is. The LSTM at half and twice the learning rate (the
    # attentive heads were tried at 1x and 0.1x of it); the LSTM at the 279 units key-value-predict and the
    # 4-gram RNN get (the head's own share of their gain); a tied control with dropout on the non-recurrent
    # connections, against variational smoothing tuned over gamma (four points a side).
    "lstm-lr0.5": ({"train.lr": 0.5}, 0.5),
    "lstm-lr2.0": ({"train.lr": 2.0}, 0.5),
    "lstm-h279": ({"model.hidden_size": 279}, 0.8),
    **{f"tied-dropout{d}": ({**_tied, "model.dropout": d}, 0.8) for d in TIED_DROPOUTS},
    **{f"vs-kn-tied-gamma{g}": ({**_tied, **_smooth, "model.noise_gamma": g}, 0.9) for g in VS_GAMMAS},
}
# Five seeds of the control, and of tying at equal width, so that a difference of one per cent can be told
# from seed noise; one seed of each grid point until the grid has chosen (:func:`manifest`)
FAMILY_SEEDS = {"lstm": (0, 1, 2, 3, 4), "tied-d128": (0, 1, 2, 3, 4),
                **{f"tied-dropout{d}": (0,) for d in TIED_DROPOUTS}, **{f"vs-kn-tied-gamma{g}": (0,) for g in VS_GAMMAS}}
# the grids: a setting and its grid points, chosen on seed 0's validation perplexity
GRIDS = {"tied": tuple(f"tied-dropout{d}" for d in TIED_DROPOUTS),
         "vs-kn-tied": tuple(f"vs-kn-tied-gamma{g}" for g in VS_GAMMAS)}
OFF_BUDGET = ("tied-d128", "lstm-h279")  # compared at equal width, not at the matched count
# the fair trials' controls and grid points: the same models as the families at other settings
FAIR_CONTROLS = ("lstm-lr0.5", "lstm-lr2.0", "lstm-h279", *GRIDS["tied"], *GRIDS["vs-kn-tied"])
WIDTHS = {name: overrides.get("model.hidden_size", 128) for name, (overrides, _) in FAMILIES.items()}

# how chapter 06 names each family
LABELS = {
    "lstm": "LSTM", "tied": "tied LSTM", "attentive-single": "Attentive, single",
    "attentive-combined": "Attentive, combined", "window-L5": "window attention, L = 5", "kv-L5": "key-value, L = 5",
    "kvp-L5": "key-value-predict, L = 5", "ngram4": "4-gram RNN", "rm-tm-g": "RM(+tM-g), n = 15",
    "rmr-notm-g": "RMR(-tM-g), n = 15", "vs-kn-tied": "tied LSTM + VS-KN", "tied-d128": "tied LSTM, width 128",
    "attentive-single-headlr0.1": "Attentive, single, head lr 0.1x",
    "attentive-combined-headlr0.1": "Attentive, combined, head lr 0.1x",
    "kvp-L1": "key-value-predict, L = 1", "kvp-L15": "key-value-predict, L = 15",
    "lstm-lr0.5": "LSTM, lr 0.5", "lstm-lr2.0": "LSTM, lr 2", "lstm-h279": "LSTM, width 279",
    **{f"tied-dropout{d}": f"tied LSTM, dropout {d}" for d in TIED_DROPOUTS},
    **{f"vs-kn-tied-gamma{g}": f"tied LSTM + VS-KN, gamma {g}" for g in VS_GAMMAS},
}

# Each paper's claim in the book's words (chapter 06, the reports, :func:`mlm.evidence.stored_claims`): the
# family against its control in this group, beside the pair the paper reported under its own protocol and
# size (the presets' ``paper`` numbers). Salton et al. compare with Zaremba's medium LSTM (20M parameters, not
# a same-size control); Daniluk et al.'s numbers are from their 22.5M-word Wikipedia corpus; Tran et al.'s
# 1-layer LSTM is reported on English news only (Table 2), so their news numbers are used.
_DANILUK, _TRAN = "daniluk2017-wt2", "tran2016-ptb"
# The question each row answers: the book's own (matched parameters, one recipe) unless it says the paper's,
# with where it departs from the paper's pair.
MATCHED = "the book's: 2.70M parameters, one recipe (Tran's SGD, no dropout)"
# RMR puts a second LSTM layer above the block; Table 2 also has a 2-layer LSTM to set it beside
_RMR_VS_LSTM2 = TRAN_TABLE2_EN[("rmr", False, "gating")] / TRAN_TABLE2_EN[("lstm", 2)] - 1
_SENTENCES = "PTB sentences, not the paper's Wikipedia documents"
UNTUNED = "neither side tuned: the recipe as it is"
_LR = "control: lr chosen on validation from 0.5, 1, 2; model: the head's lr from 1x, 0.1x of it"
_ATTENTIVE = ("attentive-single", "attentive-single-headlr0.1")
_COMBINED = ("attentive-combined", "attentive-combined-headlr0.1")
_LSTM_LR = ("lstm", "lstm-lr0.5", "lstm-lr2.0")
_TIED = ("tied", *GRIDS["tied"])
_VS = ("vs-kn-tied", *GRIDS["vs-kn-tied"])


# The rows whose paper measured another contrast, each with the one it measured: Press & Wolf and Tran et al.
# compare at equal width, where the budget gives the two sides different widths here (the tied LSTM 228 against
# 128, RM and RMR 66 and 65 against 128); Daniluk et al.'s heads face an LSTM of 300 units (their LSTMs are 834
# and 968 wide, meant to match it in parameters), where the same-width rows set them against one of their 279.
# The paper's change sets no size for these rows (``PaperClaim.contrast``).
OTHER_CONTRAST = {("tied", "lstm"): "at equal width", ("rm-tm-g", "lstm"): "at equal width",
                  ("rmr-notm-g", "lstm"): "at equal width",
                  ("kvp-L5", "lstm-h279"): "against a narrower LSTM",
                  ("ngram4", "lstm-h279"): "against a narrower LSTM"}


def _claim(text, model, control, model_preset, control_preset, key="test", *, chapter, question, tuning=UNTUNED,
           handicaps="", unfair=""):
    return PaperClaim(text, "compare-ptb", model, control, model_preset, control_preset, key, chapter=chapter,
                      question=question, tuning=tuning, handicaps=handicaps, unfair=unfair,
                      contrast=OTHER_CONTRAST.get((model, control), ""))


_salton = "Attention over the sentence so far, {} (Salton et al. 2017, Table 1), beats the LSTM"
_daniluk = "{} the LSTM (Daniluk et al. 2017, Fig. 2)"
CLAIMS = [
    _claim("Tying the input and output embeddings improves the LSTM (Press & Wolf 2017, small: 114.5 → 112.4)",
           "tied", "lstm", "press2017-small-tied", "zaremba2014-small", chapter="01",
           question=f"{MATCHED}; the tied LSTM is 228 wide against 128 (the paper ties at equal width: the next row)"),
    _claim("Tying improves the LSTM at equal width (Press & Wolf 2017's comparison, small: 114.5 → 112.4)",
           "tied-d128", "lstm", "press2017-small-tied", "zaremba2014-small", chapter="01",
           question="the paper's: equal width (128), under Tran's recipe without dropout; five seeds a side"),
    _claim(_salton.format("single score (Eq. 9)"), _ATTENTIVE, _LSTM_LR, "salton2017-ptb-single",
           "zaremba2014-medium", chapter="02", question=MATCHED, tuning=_LR),
    _claim(_salton.format("combined score (Eq. 10)"), _COMBINED, _LSTM_LR, "salton2017-ptb-combined",
           "zaremba2014-medium", chapter="02", question=MATCHED, tuning=_LR),
    _claim(_salton.format("single score (Eq. 9)") + ", with the head at a tenth of the learning rate",
           "attentive-single-headlr0.1", "lstm", "salton2017-ptb-single", "zaremba2014-medium", chapter="02",
           question=MATCHED, tuning="model: head lr chosen from 1x, 0.1x; control: lr 1 only",
           handicaps="the control", unfair="superseded by the row that tunes both sides"),
    _claim(_salton.format("combined score (Eq. 10)") + ", with the head at a tenth of the learning rate",
           "attentive-combined-headlr0.1", "lstm", "salton2017-ptb-combined", "zaremba2014-medium", chapter="02",
           question=MATCHED, tuning="model: head lr chosen from 1x, 0.1x; control: lr 1 only",
           handicaps="the control", unfair="superseded by the row that tunes both sides"),
    *(_claim(_daniluk.format(claim), name, "lstm", f"{_DANILUK}-{preset}", f"{_DANILUK}-lstm", chapter="03",
             question=f"{MATCHED}; {_SENTENCES}")
      for claim, name, preset in [("Attention over the last 5 outputs beats", "window-L5", "attention-L5"),
                                  ("Splitting each output into key and value beats", "kv-L5", "kv-L5"),
                                  ("Key, value and predict parts beat", "kvp-L5", "kvp-L5"),
                                  ("The 4-gram RNN, with no attention at all, beats", "ngram4", "ngram4")]),
    *(_claim(_daniluk.format(claim) + " of the same width", name, "lstm-h279", f"{_DANILUK}-{preset}",
             f"{_DANILUK}-lstm", chapter="03",
             question=f"the head's own share: the same 279-wide LSTM without it (4.5M parameters against the "
                      f"head's 2.70M); {_SENTENCES}")
      for claim, name, preset in [("Key, value and predict parts beat", "kvp-L5", "kvp-L5"),
                                  ("The 4-gram RNN, with no attention at all, beats", "ngram4", "ngram4")]),
    _claim("The 4-gram RNN, with no attention, does as well as key-value-predict (Daniluk et al. 2017, Fig. 2: 75.9 "
           "against 75.8)", "ngram4", "kvp-L5", f"{_DANILUK}-ngram4", f"{_DANILUK}-kvp-L5", chapter="03",
           question=f"{MATCHED}; both 279 wide; {_SENTENCES}"),
    _claim("A window of one output does as well as five (Daniluk et al. 2017, Fig. 2a: 76.1 against 75.8)",
           "kvp-L1", "kvp-L5", f"{_DANILUK}-kvp-L1", f"{_DANILUK}-kvp-L5", chapter="03",
           question=f"the paper's contrast (the window L retrained, nothing else changed) under the book's recipe "
                    f"and parameter count; {_SENTENCES}"),
    _claim("A window of fifteen outputs gains nothing over five (Daniluk et al. 2017, Fig. 2a: 75.8 against 75.8)",
           "kvp-L15", "kvp-L5", f"{_DANILUK}-kvp-L15", f"{_DANILUK}-kvp-L5", chapter="03",
           question=f"the paper's contrast (the window L retrained, nothing else changed) under the book's recipe "
                    f"and parameter count; {_SENTENCES}"),
    _claim("The Recurrent Memory block on top of the LSTM beats it (Tran et al. 2016, Table 2)", "rm-tm-g", "lstm",
           f"{_TRAN}-rm-tm-g", f"{_TRAN}-lstm1", "test_en_news", chapter="04",
           question=f"{MATCHED}, which leaves RM a 66-unit LSTM; the paper compares at equal width (128), on "
                    "English news, not PTB"),
    _claim("RMR, the block between two LSTM layers, beats the LSTM (Tran et al. 2016, Table 2)", "rmr-notm-g", "lstm",
           f"{_TRAN}-rmr-notm-g", f"{_TRAN}-lstm1", "test_en_news", chapter="04",
           question=f"{MATCHED}, which leaves RMR two 65-unit layers; the paper compares at equal width, on English "
                    f"news; its change is against the 1-layer LSTM (against its 2-layer LSTM, {_RMR_VS_LSTM2:+.1%})"),
    _claim("Variational smoothing (Kneser-Ney) beats the plain tied LSTM (Kong et al. 2019, Table 2)", _VS, _TIED,
           "kong2019-ptb-512-vs-kn", "kong2019-ptb-512-vanilla-tied", chapter="05", question=MATCHED,
           tuning="control: dropout chosen on validation from 0, 0.1, 0.2, 0.3; model: gamma from 0.1, 0.2, 0.3, "
                  "0.4 (no dropout)"),
    _claim("Variational smoothing (Kneser-Ney, gamma 0.2) beats the plain tied LSTM (Kong et al. 2019, Table 2)",
           "vs-kn-tied", "tied", "kong2019-ptb-512-vs-kn", "kong2019-ptb-512-vanilla-tied", chapter="05",
           question=MATCHED, tuning="neither side tuned, but the control has no regularizer at all and overfits",
           handicaps="the control", unfair="superseded by the row that tunes both sides"),
]


def row_label(claim: PaperClaim) -> str:
    """How a figure of the claims names a row: the family, and its control where that is neither the LSTM nor
    in the family's name, cut to the part that differs ("key-value-predict, L = 1 vs L = 5"). A tuned side is
    named by its first candidate."""
    model, control = (PaperClaim.candidates(side)[0] for side in (claim.model, claim.control))
    tuned = ", both tuned" if claim.tunes_both else ""
    name, control = LABELS[model] + tuned, LABELS[control]
    if model == "lstm" or control in name or control == "LSTM":
        return name
    shared = os.path.commonprefix([name, control]).rpartition(", ")[0]  # the words before the last shared comma
    return f"{name} vs {control[len(shared) + 2:] if shared else control}"


ROW_LABELS = {claim.text: row_label(claim) for claim in CLAIMS}

# the overrides that make a family what it is; without them a family's overrides give the plain LSTM of the
# same size (the bench's "same-size LSTM")
HEAD_KEYS = ("train.head_lr_scale", "model.head", "model.attention_score", "model.window_size", "model.window_kind", "model.ngram_n",
             "model.memory_temporal", "model.regularizer", "model.noise_scheme", "model.noise_gamma")


def _set(overrides: dict) -> list[str]:
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in overrides.items()]


def _family(name: str, seeds) -> list:
    overrides, hours = FAMILIES[name]
    return [dataclasses.replace(r, hours=hours, label=f"{LABELS[name]}, {BASE}'s recipe")
            for r in runs("compare-ptb", name, BASE, overrides=_set(overrides), seeds=seeds, post=("history-cut",))]


def manifest(results: Path = RESULTS) -> list:
    """Every run given the stored runs in ``results``: each grid point has seed 0, and the point a grid chooses
    on validation gets the seeds the claim needs (``reproduce`` trains them on its next call)."""
    seeds = grid_seeds("compare-ptb", {s: (s, *points) for s, points in GRIDS.items()}, results, SEEDS)
    return [r for name in FAMILIES
            for r in _family(name, max(seeds.get(name, ()), FAMILY_SEEDS.get(name, SEEDS), key=len))]


RUNS = manifest()


def same_size_lstm(name: str) -> dict:
    """The overrides of family ``name`` without its head: the plain (or tied) LSTM of the same width."""
    return {k: v for k, v in FAMILIES[name][0].items() if k not in HEAD_KEYS}


def _bench_specs() -> tuple[list, dict]:
    """``python -m mlm bench --manifest compare``: seed 0 of every family (the fair trials' tuned controls
    are the same models at other settings: not timed again), then each head's same-size LSTM (where it is not
    already a family of the group), so that a head's cost is read against both. Also {family: the bench row of
    its same-size LSTM}."""
    families = [n for n in FAMILIES if n not in FAIR_CONTROLS]
    specs = [r for r in RUNS if r.seed == SEEDS[0] and r.base in families]
    rows = {tuple(sorted(FAMILIES[n][0].items())): f"compare-ptb/{n}" for n in families}
    same_size = {}
    for name in families:
        plain = same_size_lstm(name)
        key = tuple(sorted(plain.items()))
        if key not in rows:
            label = "lstm-" + "-".join(f"{k.split('.')[-1].replace('_size', '')}{v}" for k, v in plain.items())
            specs += runs("compare-ptb-bench", label, BASE, overrides=_set(plain))
            rows[key] = f"compare-ptb-bench/{label}"
        same_size[name] = rows[key]
    return specs, same_size


BENCH, SAME_SIZE = _bench_specs()  # SAME_SIZE: family -> the bench row of its same-size LSTM
