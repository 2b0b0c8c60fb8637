"""Every paper's full-size configuration of the book, for a GPU: three seeds where a claim compares two runs.

    python -m mlm reproduce full --list                                    # states and training tokens
    python -m mlm bench --manifest full --device cuda --out bench-full.json
    python -m mlm reproduce full --list --speeds bench-full.json            # ... and the GPU hours
    python -m mlm reproduce full --device cuda --jobs 4                    # four runs share one GPU
    python -m mlm reproduce full --launcher slurm --partition gpu          # a Slurm job array (docs/cluster.md)
    python -m mlm reproduce full --device cuda --jobs 14 --budget-minutes 8 --speeds results/bench-h200.json \
        --archive out/results.tar.gz                                       # what fits a short allocation

In a short allocation the runs start in the order of :data:`PRIORITY` (one seed of each headline setting,
then their other seeds) and :data:`LAST` (:func:`mlm.budget.priority_order`).

The presets at ``--size full``, unchanged: the paper's widths, data, optimiser and schedule. One seed ranks
nothing under the book's rule (:func:`mlm.claims.verdict`), so every run that a claim of :data:`CLAIMS`
compares has three seeds; the rest of each paper's sweep, and comparisons whose paper numbers the presets
do not hold (Salton et al.'s WikiText-2 table, Tran et al.'s sentence completion), have one.

``tokens`` is the training tokens of the expected schedule: the scored tokens of one epoch (every word and
``<eos>`` the protocol keeps, the unit of ``python -m mlm bench`` and of ``result.json``) times the epochs
(for early stopping, the expected count ``epochs``), so ``tokens / (training tokens per second of python -m
mlm bench PRESET --device cuda)`` is a run's training time on that GPU.
"""

import dataclasses

from mlm.claims import PaperClaim
from mlm.presets.daniluk2017 import DANILUK_NGRAM_HIDDEN, DANILUK_WINDOWS
from mlm.presets.kong2019 import KONG_TABLE2
from mlm.presets.tran2016 import tran_preset_name
from mlm.presets.zaremba2014 import ZAREMBA_SIZES
from mlm.reproduce import runs

SEEDS = (0, 1, 2)
# Scored training tokens per epoch, counted with build_batches(cfg, corpus, "train").num_tokens.
PTB_TOKENS = 929_589  # PTB as a stream, or as whole sentences (Tran)
PTB_CUT_TOKENS = 900_564  # PTB's sentences cut at 35 inputs (Salton)
WT2_TOKENS = 2_088_628  # WikiText-2 as a stream or as documents
WT2_SENTENCE_CUT_TOKENS = 1_899_546  # WikiText-2's paragraphs split into sentences, cut at 35 inputs (Salton)
HOLMES_TOKENS = 5_280_106  # the Holmes novels as sentences (Tran's sentence completion)

# group -> [(run, preset, fields)]: every setting of the manifest
SETTINGS = {"full-zaremba2014": [(f"{size}{suffix}", f"{paper}-{size}{suffix}",
                                  dict(tokens=ZAREMBA_SIZES[size][3] * PTB_TOKENS))
                                 for paper, suffix in (("zaremba2014", ""), ("press2017", "-tied"))
                                 for size in ZAREMBA_SIZES]}

# Salton: at most 100 epochs with patience 10; PTB's lr halves every epoch from 13, so about 30 epochs;
# WikiText-2's decays by 1.15 from 15, so about 50.
for _corpus, _epochs, _tokens in (("ptb", 30, PTB_CUT_TOKENS), ("wt2", 50, WT2_SENTENCE_CUT_TOKENS)):
    SETTINGS[f"full-salton2017-{_corpus}"] = [(model, f"salton2017-{_corpus}-{model}",
                                               dict(epochs=_epochs, tokens=_epochs * _tokens))
                                              for model in ("lstm", "single", "combined")]

# Daniluk: WikiText-2 in place of the paper's Wikipedia corpus; at most 20 epochs, early stopping after 3.
DANILUK_EPOCHS = 10
SETTINGS["full-daniluk2017-wt2"] = [
    (name, f"daniluk2017-wt2-{name}", dict(epochs=DANILUK_EPOCHS, tokens=DANILUK_EPOCHS * WT2_TOKENS,
                                           post=("window-analysis",) if name.startswith(("attention", "kv")) else ()))
    for name in ["lstm", *[f"{kind}-L{window}" for kind in ("attention", "kv", "kvp") for window in DANILUK_WINDOWS],
                 *[f"ngram{n}" for n in DANILUK_NGRAM_HIDDEN]]]

# Tran: PTB, 15 epochs; the LSTMs of 1-3 layers and the eight RM/RMR variants; and Holmes LMs for the MSR
# sentence completion task (the whole Holmes subset, 30k words, scored on the 1,040 questions).
_tran = [(f"lstm{layers}", tran_preset_name("ptb", "lstm", layers=layers)) for layers in (1, 2, 3)]
_tran += [(tran_preset_name("ptb", arch, temporal, comp).removeprefix("tran2016-ptb-"),
           tran_preset_name("ptb", arch, temporal, comp))
          for arch in ("rm", "rmr") for temporal in (True, False) for comp in ("linear", "gating")]
SETTINGS["full-tran2016-ptb"] = [(name, preset, dict(tokens=15 * PTB_TOKENS,
                                                     post=("memory-attention",) if name.startswith("rm") else ()))
                                 for name, preset in _tran]
SETTINGS["full-tran2016-holmes"] = [(name, f"tran2016-ptb-{name}",
                                     dict(overrides=["data.corpus=holmes"], tokens=15 * HOLMES_TOKENS,
                                          post=("completion",)))
                                    for name in ("lstm1", "rm-tm-g")]

# Kong: Table 2, both corpora and sizes; at most 60 epochs with plateau decay and early stop after 6 bad epochs.
KONG_EPOCHS = 40
for (_corpus, _units), _models in KONG_TABLE2.items():
    SETTINGS[f"full-kong2019-{_corpus}-{_units}"] = [
        (model, f"kong2019-{_corpus}-{_units}-{model}",
         dict(epochs=KONG_EPOCHS, tokens=KONG_EPOCHS * (PTB_TOKENS if _corpus == "ptb" else WT2_TOKENS)))
        for model in _models]

# Each paper's claim at full size: the model's run against its control's, beside the pair the paper reported
# (the presets' ``paper`` numbers). Press & Wolf's medium tied number is not in the presets (unverified), so the
# medium pair is trained (one seed each) but declares no claim; Salton et al. compare with Zaremba et al.'s
# medium LSTM.
CLAIMS = [
    *(PaperClaim(f"Tying the embeddings improves the {size} LSTM (Press & Wolf 2017)", "full-zaremba2014",
                 f"{size}-tied", size, f"press2017-{size}-tied", f"zaremba2014-{size}", chapter="01")
      for size in ("small", "large")),
    *(PaperClaim(f"Attention over the sentence so far, {label}, beats the same-protocol LSTM (Salton et al. "
                 "2017, Table 1)", "full-salton2017-ptb", score, "lstm", f"salton2017-ptb-{score}",
                 "zaremba2014-medium", chapter="02")
      for score, label in (("single", "single score (Eq. 9)"), ("combined", "combined score (Eq. 10)"))),
    *(PaperClaim(f"{label} beats the LSTM (Daniluk et al. 2017, Figure 2)", "full-daniluk2017-wt2", run, "lstm",
                 f"daniluk2017-wt2-{run}", "daniluk2017-wt2-lstm", chapter="03")
      for run, label in (("attention-L10", "Attention over the last 10 outputs"),
                         ("kv-L10", "Key-value attention, L = 10"), ("kvp-L5", "Key-value-predict, L = 5"),
                         ("ngram4", "The 4-gram RNN"))),
    PaperClaim("RM(+tM-g) beats the 3-layer LSTM on PTB (Tran et al. 2016, section 4.3)", "full-tran2016-ptb",
               "rm-tm-g", "lstm3", "tran2016-ptb-rm-tm-g", "tran2016-ptb-lstm3", chapter="04"),
    *(PaperClaim(f"{label} beats the 1-layer LSTM of its width (Tran et al. 2016, Table 2, English news)",
                 "full-tran2016-ptb", run, "lstm1", f"tran2016-ptb-{run}", "tran2016-ptb-lstm1",
                 key="test_en_news", chapter="04")
      for run, label in (("rm-tm-g", "RM(+tM-g)"), ("rmr-notm-g", "RMR(-tM-g)"))),
    *(PaperClaim(f"{label} ({corpus.upper()}, 2 x {units}; Kong et al. 2019, Table 2)",
                 f"full-kong2019-{corpus}-{units}", model, control, f"kong2019-{corpus}-{units}-{model}",
                 f"kong2019-{corpus}-{units}-{control}", chapter="05")
      for (corpus, units), table in KONG_TABLE2.items()
      for model, control, label in (
          ("dn-kn", "vanilla-tied", "Data noising with Kneser-Ney noise beats the vanilla tied LSTM"),
          ("vs-kn", "vanilla-tied", "Variational smoothing with Kneser-Ney noise beats the vanilla tied LSTM"),
          ("vs-elementwise", "vanilla-tied", "Element-wise variational smoothing beats the vanilla tied LSTM"),
          ("vs-kn", "dn-kn", "Variational smoothing beats data noising with the same Kneser-Ney noise"))
      if model in table),
]
# every full-size claim asks the paper's own question: its configuration, protocol and control
CLAIMS = [dataclasses.replace(c, question="the paper's: its own size, protocol and control") for c in CLAIMS]

COMPARED = {(c.group, run) for c in CLAIMS for run in (c.model, c.control)}
RUNS = [r for group, settings in SETTINGS.items() for name, preset, fields in settings
        for r in runs(group, name, preset, seeds=SEEDS if (group, name) in COMPARED else None, **fields)]

# The settings that decide each paper's headline claim, in the order a short allocation starts them (one seed of
# each, then the seeds that make each claim three a side); the largest models and the WikiText-2 tables last.
PRIORITY = ["full-salton2017-ptb/lstm", "full-salton2017-ptb/single", "full-salton2017-ptb/combined",
            *(f"full-daniluk2017-wt2/{name}" for name in ("lstm", "kvp-L5", "ngram4", "attention-L10", "kv-L10")),
            *(f"full-tran2016-ptb/{name}" for name in ("lstm1", "lstm3", "rm-tm-g", "rmr-notm-g")),
            *(f"full-kong2019-ptb-512/{name}" for name in ("vanilla-tied", "vs-kn", "dn-kn", "vs-elementwise"))]
LAST = ["full-zaremba2014/large*", "full-kong2019-ptb-1024/*", "*wt2*"]

