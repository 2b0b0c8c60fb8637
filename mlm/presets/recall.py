"""Small models on the key-value recall task (``mlm/data/tasks.py``): memory you can watch work.

The presets train in one to five minutes on one CPU thread (15 epochs of 20,000 examples). One seed
of each, scored with :func:`mlm.long_range.critical_scores` on the test split (chance 10%), measured:
the LSTM (60 s) recalls about 70% of the critical values, about equally at every d up to 60; the window
head (130 s) the same, because its LSTM carries the pair past the window; the Recurrent Memory (315 s)
about 77% while the source is among its 15 words and chance beyond d = 20; the Attentive LM (150 s)
93%, close to 100% for d >= 25. The
LSTM is the reference each head is compared with at the same size; each head keeps its paper's
protocol (Salton and Tran read one sentence per row, Daniluk truncated BPTT inside documents, here
one example per document).
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
