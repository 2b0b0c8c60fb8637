"""Kong, Melis, Ling, Yu & Yogatama (2019), *Variational Smoothing in Recurrent Neural Network Language Models*:
the vanilla LSTMs, data noising (Xie et al. 2017) and variational smoothing of their Table 2
(chapter 05), with the paper's numbers.
"""

from __future__ import annotations

from typing import Callable

from mlm.configs import Config, DataConfig, ModelConfig, TrainConfig, register


# Kong et al. (2019), section 5.1 and Table 2: data noising (DN, Xie et al. 2017) and variational
# smoothing (VS) on a two-layer LSTM, stream protocol, batch 64, RMSprop. The paper tunes lr in
# {0.002, 0.003, 0.004}, the L2 lambda in {1e-4, 1e-3} and gamma in {0.1, 0.2, 0.3, 0.4} on the
# validation set (``python -m mlm sweep``); the presets hold one point of that grid (lr 0.003,
# lambda 1e-4, gamma 0.2, inside Figure 1's good range 0.1-0.3). Recurrent dropout 0.2, element-wise
# embedding dropout 0.5 (512) / 0.7 (1024), tied embeddings except the untied vanilla LSTM. Not stated
# in the paper, our choices: bptt 35, 60 epochs with the learning rate halved (and the best weights
# restored) when validation stalls, early stop after 6 bad epochs, clip 5, init +-0.05, the loss
# averaged per token. ``model.dropout`` (between the LSTM layers and before the softmax) uses the
# embedding-dropout rate; the embedding itself is dropped once, per word type and sequence (Eq. 6).
KONG_MODELS = {
    #  name               (regularizer, scheme,        tied,  elementwise)
    "vanilla-untied": ("dropout", "kneser-ney", False, False),
    "vanilla-tied": ("dropout", "kneser-ney", True, False),
    "dn-linear": ("noise", "unigram", True, False),
    "dn-kn": ("noise", "kneser-ney", True, False),
    "vs-linear": ("smooth", "unigram", True, False),
    "vs-kn": ("smooth", "kneser-ney", True, False),
    "vs-elementwise": ("smooth", "kneser-ney", True, True),  # PTB only in the paper
}
KONG_CORPORA = {"ptb": "ptb", "wt2": "wikitext-2"}
KONG_SIZES = {512: 0.5, 1024: 0.7}  # hidden size -> embedding dropout
# Table 2, (valid, test) per (corpus, size, model); parameters per (corpus, size, untied?).
KONG_TABLE2 = {
    ("ptb", 512): {"vanilla-untied": (89.6, 84.5), "vanilla-tied": (80.0, 74.0), "dn-linear": (79.4, 73.3),
                   "dn-kn": (75.0, 70.7), "vs-linear": (76.3, 71.2), "vs-kn": (74.5, 70.6),
                   "vs-elementwise": (70.5, 66.8)},
    ("wt2", 512): {"vanilla-untied": (106.3, 100.8), "vanilla-tied": (90.6, 86.6), "dn-linear": (88.9, 84.6),
                   "dn-kn": (86.1, 82.1), "vs-linear": (84.0, 79.6), "vs-kn": (84.9, 80.9)},
    ("ptb", 1024): {"vanilla-untied": (90.3, 85.5), "vanilla-tied": (75.9, 70.2), "dn-linear": (75.5, 70.2),
                    "dn-kn": (71.4, 67.3), "vs-linear": (71.7, 67.8), "vs-kn": (70.8, 66.9),
                    "vs-elementwise": (68.6, 64.5)},
    ("wt2", 1024): {"vanilla-untied": (97.6, 91.9), "vanilla-tied": (85.2, 81.0), "dn-linear": (84.3, 80.1),
                    "dn-kn": (81.9, 78.3), "vs-linear": (80.5, 76.6), "vs-kn": (80.9, 76.7)},
}
KONG_PARAMS = {("ptb", 512, True): "14M", ("ptb", 512, False): "9M", ("wt2", 512, True): "38M",
               ("wt2", 512, False): "21M", ("ptb", 1024, True): "37M", ("ptb", 1024, False): "27M",
               ("wt2", 1024, True): "85M", ("wt2", 1024, False): "50M"}
# Section 5.4: validation perplexity when 20 samples are averaged at test time instead of the mode/mean.
KONG_SAMPLING = {("ptb", 512, "dn-kn"): 96.5, ("ptb", 1024, "dn-kn"): 85.1, ("ptb", 512, "vs-kn"): 89.8,
                 ("ptb", 1024, "vs-kn"): 78.7}
# Reduced (chapter 5): the first 40k tokens of training text with the vocabulary cut to its 2,000 most frequent
# words, 2 x 128, batch 10 and lr 0.006 (more and larger updates in a short run), 8 epochs, validation/test on
# their first 10k tokens; the regularizers' settings stay. Measured on one CPU thread: about 55 s a model, and
# every row beats the interpolated bigram counted on the same tokens (count_baseline, test 140); with the
# paper's 10k words, batch 20, lr 0.003 and 4 epochs every row stayed far above its bigram (550-650 against 458).
REDUCED_KONG = {"data.max_train_tokens": 40_000, "data.max_eval_tokens": 10_000, "data.vocab_size": 2_000,
                "data.batch_size": 10, "model.embed_size": 128, "model.hidden_size": 128, "train.lr": 0.006,
                "train.epochs": 8, "train.early_stop_patience": 0}


def kong_preset_name(corpus_key: str, units: int, model: str) -> str:
    return f"kong2019-{corpus_key}-{units}-{model}"


def _kong_preset(corpus_key: str, units: int, model: str) -> Callable[[], Config]:
    regularizer, scheme, tied, elementwise = KONG_MODELS[model]
    dropout = KONG_SIZES[units]

    def build() -> Config:
        what = {"dropout": "vanilla LSTM", "noise": "data noising", "smooth": "variational smoothing"}[regularizer]
        if regularizer != "dropout":
            what += f" ({'element-wise ' if elementwise else ''}{'linear interpolation' if scheme == 'unigram' else 'Kneser-Ney'})"
        cfg = Config(
            description=f"Kong et al. (2019) {what}, 2x{units}, {'tied' if tied else 'untied'}, {KONG_CORPORA[corpus_key]}",
            data=DataConfig(corpus=KONG_CORPORA[corpus_key], protocol="stream", batch_size=64, bptt=35,
                            eval_batch_size=64),
            model=ModelConfig(embed_size=units, hidden_size=units, num_layers=2, dropout=dropout, tie_weights=tied,
                              init_range=0.05, regularizer=regularizer, noise_scheme=scheme, noise_gamma=0.2,
                              embed_dropout=dropout, smoothing_elementwise=elementwise, recurrent_dropout=0.2),
            train=TrainConfig(optimizer="rmsprop", lr=0.003, weight_decay=1e-4, epochs=60, schedule="plateau",
                              decay_factor=2.0, plateau_patience=1, early_stop_patience=6, clip=5.0,
                              loss_reduction="token_mean"),
        )
        valid, test = KONG_TABLE2[corpus_key, units][model]
        cfg.paper = {"valid": valid, "test": test, "params": KONG_PARAMS[corpus_key, units, not tied],
                     "source": "Kong et al. 2019, Table 2"}
        if (corpus_key, units, model) in KONG_SAMPLING:
            cfg.paper["valid_sampled_20"] = KONG_SAMPLING[corpus_key, units, model]
        return cfg

    return build


for _corpus in KONG_CORPORA:
    for _units in KONG_SIZES:
        for _model in KONG_TABLE2[_corpus, _units]:
            register(kong_preset_name(_corpus, _units, _model), reduced=REDUCED_KONG)(
                _kong_preset(_corpus, _units, _model))
