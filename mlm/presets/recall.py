"""Small models on the key-value recall task (``mlm/data/tasks.py``): memory you can watch work.

Every family of the book on the same task (d = 2..60, the prefix drawn apart from d, 20,000 training
lines), the same optimiser (Adam at 0.01, 15 epochs) and an LSTM of 64 units (66 where a head splits its
output in three parts); each keeps its paper's protocol (Salton and Tran read one sentence per row,
Daniluk truncated BPTT inside documents, here one example per document). The LSTM is the reference each
head is compared with at the same width. The stored three-seed runs (``python -m mlm reproduce recall``,
``results/recall/``) say what each family does; chapters 02-04 and 06 read them.
"""

from __future__ import annotations

from mlm.configs import Config, DataConfig, ModelConfig, TrainConfig, apply_overrides, register

# The full presets already run in about a minute and a half on one CPU thread.
REDUCED: dict = {}


def _recall(description: str, **overrides) -> Config:
    cfg = Config(
        description=description,
        data=DataConfig(corpus="recall", protocol="sentence", batch_size=32, eval_batch_size=100,
                        task_min_distance=2, task_max_distance=60, task_examples=20000),
        model=ModelConfig(embed_size=32, hidden_size=64, num_layers=1, init_range=0.1),
        train=TrainConfig(optimizer="adam", lr=0.01, epochs=15, schedule="constant", clip=5.0,
                          loss_reduction="token_mean", log_interval=50),
    )
    return apply_overrides(cfg, overrides)


@register("recall-lstm", reduced=REDUCED)
def _lstm() -> Config:
    """The plain LSTM: its state must carry the pair across d steps."""
    return _recall("LSTM (64 units) on key-value recall, d = 2..60")


@register("recall-attentive", reduced=REDUCED)
def _attentive() -> Config:
    """Salton et al.'s attention over every earlier output of the sentence: reaches any d."""
    return _recall("Attentive LM (64 units) on key-value recall, d = 2..60", **{"model.head": "attentive"})


@register("recall-window", reduced=REDUCED)
def _window() -> Config:
    """Daniluk et al.'s attention over the last L = 5 outputs, on documents (one example each)."""
    return _recall("attention over a window of 5 (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "window", "model.window_size": 5, "data.protocol": "document",
                      "data.bptt": 20})


@register("recall-rm", reduced=REDUCED)
def _rm() -> Config:
    """Tran et al.'s Memory Block over the last n = 15 input words."""
    return _recall("Recurrent Memory, n = 15 (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "rm", "model.memory_size": 15})


# -- the other families, for chapter 06's comparison on the same task (same data, optimiser and budget) --

@register("recall-tied", reduced=REDUCED)
def _tied() -> Config:
    """Press & Wolf's tied LSTM: the embedding widened to the 64 units it shares with the softmax."""
    return _recall("tied LSTM (64 units) on key-value recall, d = 2..60",
                   **{"model.embed_size": 64, "model.tie_weights": True})


@register("recall-attentive-combined", reduced=REDUCED)
def _attentive_combined() -> Config:
    """Salton et al.'s combined score (Eq. 10): the query also compares each slot with the current output."""
    return _recall("Attentive LM, combined score (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "attentive", "model.attention_score": "combined"})


def _window_family(description: str, **overrides) -> Config:
    return _recall(description, **{"data.protocol": "document", "data.bptt": 20, **overrides})


@register("recall-kv", reduced=REDUCED)
def _kv() -> Config:
    """Daniluk et al.'s key-value attention over the last L = 5 outputs (64 units: 32 key, 32 value)."""
    return _window_family("key-value attention over a window of 5 (64 units) on key-value recall, d = 2..60",
                          **{"model.head": "window", "model.window_kind": "key-value", "model.window_size": 5})


@register("recall-kvp", reduced=REDUCED)
def _kvp() -> Config:
    """Daniluk et al.'s key-value-predict over the last L = 5 outputs (66 units: three parts of 22)."""
    return _window_family("key-value-predict over a window of 5 (66 units) on key-value recall, d = 2..60",
                          **{"model.head": "window", "model.window_kind": "key-value-predict",
                             "model.window_size": 5, "model.hidden_size": 66})


@register("recall-ngram", reduced=REDUCED)
def _ngram() -> Config:
    """Daniluk et al.'s 4-gram RNN (Eq. 13): the prediction reads the last 3 outputs (66 units: three parts)."""
    return _window_family("4-gram RNN (66 units) on key-value recall, d = 2..60",
                          **{"model.head": "ngram", "model.ngram_n": 4, "model.hidden_size": 66})


@register("recall-rmr", reduced=REDUCED)
def _rmr() -> Config:
    """Tran et al.'s RMR: the Memory Block between two LSTM layers, over the last n = 15 input words."""
    return _recall("Recurrent Memory-Recurrent, n = 15 (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "rmr", "model.memory_size": 15})
