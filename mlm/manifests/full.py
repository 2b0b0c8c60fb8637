"""Every paper's full-size configuration of the book, for a GPU (one seed each: the papers report one run).

    python -m mlm reproduce full --list
    python -m mlm reproduce full --device cuda --jobs 4                 # four runs share the GPU
    python -m mlm reproduce full --device cuda --only 'full-kong2019-ptb/*'

The presets at ``--size full``, unchanged: the paper's widths, data, optimiser and schedule. ``tokens``
is the training tokens of the expected schedule (epochs x tokens per epoch; for early stopping the
expected epoch count ``epochs``), so ``tokens / (GPU training tokens per second)`` estimates a run's time
(``python -m mlm bench PRESET --device cuda`` measures the speed). Add seeds with ``--set``-style
overrides in a manifest of your own (a JSON file, see ``mlm.reproduce.load_manifest``).
"""

from mlm.presets.daniluk2017 import DANILUK_NGRAM_HIDDEN, DANILUK_WINDOWS
from mlm.presets.kong2019 import KONG_TABLE2
from mlm.presets.tran2016 import tran_preset_name
from mlm.presets.zaremba2014 import ZAREMBA_SIZES
from mlm.reproduce import runs

PTB_TOKENS, WT2_TOKENS, HOLMES_TOKENS = 929_589, 2_088_628, 5_280_106  # training tokens per epoch

ZAREMBA = [r for paper, suffix in (("zaremba2014", ""), ("press2017", "-tied")) for size in ZAREMBA_SIZES
           for r in runs(f"full-{paper}", size, f"{paper}-{size}{suffix}",
                         tokens=ZAREMBA_SIZES[size][3] * PTB_TOKENS)]

# Salton: at most 100 epochs with patience 10; PTB's lr halves every epoch from 13, so about 30 epochs;
# WikiText-2's decays by 1.15 from 15, so about 50.
SALTON = [r for corpus, epochs, tokens in (("ptb", 30, PTB_TOKENS), ("wt2", 50, WT2_TOKENS))
          for model in ("lstm", "single", "combined")
          for r in runs(f"full-salton2017-{corpus}", model, f"salton2017-{corpus}-{model}", epochs=epochs,
                        tokens=epochs * tokens)]

# Daniluk: WikiText-2 in place of the paper's Wikipedia corpus; at most 20 epochs, early stopping after 3.
DANILUK_EPOCHS = 10
_daniluk = ["lstm", *[f"{kind}-L{window}" for kind in ("attention", "kv", "kvp") for window in DANILUK_WINDOWS],
            *[f"ngram{n}" for n in DANILUK_NGRAM_HIDDEN]]
DANILUK = [r for name in _daniluk
           for r in runs("full-daniluk2017-wt2", name, f"daniluk2017-wt2-{name}", epochs=DANILUK_EPOCHS,
                         tokens=DANILUK_EPOCHS * WT2_TOKENS,
                         post=("window-analysis",) if name.startswith(("attention", "kv")) else ())]

# Tran: PTB, 15 epochs; the LSTMs of 1-3 layers and the eight RM/RMR variants; and Holmes LMs for the MSR
# sentence completion task (the whole Holmes subset, 30k words, scored on the 1,040 questions).
_tran = [(f"lstm{layers}", tran_preset_name("ptb", "lstm", layers=layers)) for layers in (1, 2, 3)]
_tran += [(tran_preset_name("ptb", arch, temporal, comp).removeprefix("tran2016-ptb-"),
           tran_preset_name("ptb", arch, temporal, comp))
          for arch in ("rm", "rmr") for temporal in (True, False) for comp in ("linear", "gating")]
TRAN = [r for name, preset in _tran for r in runs("full-tran2016-ptb", name, preset, tokens=15 * PTB_TOKENS,
                                                   post=("memory-attention",) if name.startswith("rm") else ())]
TRAN += [r for name in ("lstm1", "rm-tm-g")
         for r in runs("full-tran2016-holmes", name, f"tran2016-ptb-{name}", overrides=["data.corpus=holmes"],
                       tokens=15 * HOLMES_TOKENS, post=("completion",))]

# Kong: Table 2, both corpora and sizes; at most 60 epochs with plateau decay and early stop after 6 bad epochs.
KONG_EPOCHS = 40
KONG = [r for (corpus, units), models in KONG_TABLE2.items() for model in models
        for r in runs(f"full-kong2019-{corpus}-{units}", model, f"kong2019-{corpus}-{units}-{model}",
                      epochs=KONG_EPOCHS, tokens=KONG_EPOCHS * (PTB_TOKENS if corpus == "ptb" else WT2_TOKENS))]

RUNS = [*ZAREMBA, *SALTON, *DANILUK, *TRAN, *KONG]
