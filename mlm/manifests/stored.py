"""The runs behind result folders stored before ``reproduce`` existed (formerly results/scripts/*_runs.py).

    python -m mlm reproduce stored --list       # they are done: results/ holds them
    python -m mlm reproduce stored --only 'daniluk2017-wt2-medium/*' --dry-run

The group and run names are the folders' names, which chapters 02 and 04 read (chapter 03's runs are kept as
a record that no chapter reads now); the results already stored were made with the same configurations (see
results/README.md for the machines).
"""

from mlm.reproduce import runs

# Formerly chapter 03's (a record now): each Daniluk preset's reduced configuration with every WikiText-2
# article cut to its first 1,000 tokens, batch 64 and Adam at 0.001 as in the paper, one epoch; window models
# get analysis.json.
_medium = ["data.max_document_tokens=1000", "data.vocab_size=10000", "data.batch_size=64", "train.lr=0.001", "train.epochs=1"]
DANILUK = [r for name in ("lstm", "attention-L10", "kv-L10", "kvp-L5", "ngram4", "kvp-L15")
           for r in runs("daniluk2017-wt2-medium", name, f"daniluk2017-wt2-{name}", "reduced", _medium,
                         post=("window-analysis",) if name.startswith(("attention", "kv")) else ())]

# Chapter 04: RM(+tM-g), the 1-layer LSTM and RMR(-tM-g) at the paper's size on the whole of PTB, two epochs
# (lr 1, then 0.5); the memory models get attention.json.
TRAN = [r for name in ("rm-tm-g", "lstm1", "rmr-notm-g")
        for r in runs("tran2016-ptb-128-whole", name, f"tran2016-ptb-{name}",
                      overrides=["train.epochs=2", "train.decay_start=1"],
                      post=("memory-attention",) if name.startswith("rm") else ())]

# Chapter 02: the LSTM control and single-score Attentive LM at 2 x 256 on the whole PTB, 4 epochs at lr 1,
# the paper's single learning rate.
_salton = ["model.embed_size=256", "model.hidden_size=256", "train.epochs=4", "train.decay_start=4",
           "train.early_stop_patience=0", "train.head_lr_scale=1"]
SALTON = [r for name in ("lstm", "single")
          for r in runs("salton2017-ptb-256-4ep", name, f"salton2017-ptb-{name}", overrides=_salton)]

RUNS = [*DANILUK, *TRAN, *SALTON]
