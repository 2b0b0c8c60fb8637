"""Key-value recall for every family (chapter 06): the recall presets of ``mlm/presets/recall.py``, three seeds.

    python -m mlm reproduce recall --list
    python -m mlm reproduce recall --jobs 2        # two runs at once on a 2-core machine, one thread each

Every model reads the same task (d = 2..60, 20,000 training lines; the seed also draws the lines), with the
same optimiser (Adam at 0.01, 15 epochs) and an LSTM of 64 units (66 where a head splits its output in
three); each keeps its paper's protocol. The ``critical-scores`` post-step writes ``critical.json``: accuracy
and loss on the critical token by distance d, the bigram count model and the chance level beside them.
``hours`` is one thread on CI's kind of 2-core machine (measured for seed 0, other jobs running).

Three probes ask why the tied LSTM stays at chance (chapter 06, section 3): the tied LSTM trained for 40
epochs, at the same learning rate and at a third of it, and the untied LSTM with the tied model's 64-wide
embedding (:data:`PROBES`).
"""

import dataclasses

from mlm.reproduce import runs

SEEDS = (0, 1, 2)

# family label (as chapter 06 prints it) -> (preset, hours per run on one thread)
HOURS = {
    "LSTM": ("recall-lstm", 0.02),
    "tied LSTM": ("recall-tied", 0.02),
    "Attentive, single": ("recall-attentive", 0.04),
    "Attentive, combined": ("recall-attentive-combined", 0.05),
    "window attention, L = 5": ("recall-window", 0.04),
    "key-value, L = 5": ("recall-kv", 0.04),
    "key-value-predict, L = 5": ("recall-kvp", 0.04),
    "4-gram RNN": ("recall-ngram", 0.03),
    "RM(+tM-g), n = 15": ("recall-rm", 0.05),
    "RMR(+tM-g), n = 15": ("recall-rmr", 0.06),
}

FAMILIES = {label: preset for label, (preset, _) in HOURS.items()}  # label -> preset
FAMILY_RUNS = {label: preset.removeprefix("recall-") for label, preset in FAMILIES.items()}  # label -> run name

# run name -> (label, preset, overrides, hours): the same task and seeds, one thing changed
PROBES = {
    "tied-40ep": ("tied LSTM, Adam at 0.01, 40 epochs", "recall-tied", ("train.epochs=40",), 0.08),
    "tied-lr0.003-40ep": ("tied LSTM, Adam at 0.003, 40 epochs", "recall-tied",
                          ("train.lr=0.003", "train.epochs=40"), 0.08),
    "lstm-embed64": ("LSTM with a 64-wide embedding", "recall-lstm", ("model.embed_size=64",), 0.03),
}

RUNS = [dataclasses.replace(r, hours=hours)
        for (preset, hours), name in zip(HOURS.values(), FAMILY_RUNS.values())
        for r in runs("recall", name, preset, "reduced", seeds=SEEDS,
                      post=("critical-scores",))]
RUNS += [r for name, (_, preset, overrides, hours) in PROBES.items()
         for r in runs("recall", name, preset, "reduced", overrides, seeds=SEEDS, post=("critical-scores",),
                       hours=hours)]
