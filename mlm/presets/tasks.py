"""Small models on the key-value recall task (``mlm/data/tasks.py``): memory you can watch work.

Every preset trains in a minute or two on one CPU thread. The LSTM is the reference each head is
compared with at the same size; each head keeps its paper's protocol (Salton and Tran read one
sentence per row, Daniluk truncated BPTT inside documents, here one example per document).
"""

from __future__ import annotations

from mlm.configs import Config, DataConfig, ModelConfig, TrainConfig, apply_overrides, register

# Shorter runs for CI: half the training examples.
REDUCED = {"data.task_examples": 2000}


def _recall(description: str, **overrides) -> Config:
    cfg = Config(
        description=description,
        data=DataConfig(corpus="recall", protocol="sentence", batch_size=32, eval_batch_size=100,
                        task_min_distance=2, task_max_distance=60, task_examples=4000),
        model=ModelConfig(embed_size=32, hidden_size=64, num_layers=1, init_range=0.1),
        train=TrainConfig(optimizer="adam", lr=0.01, epochs=10, schedule="constant", clip=5.0,
                          loss_reduction="token_mean", log_interval=50),
    )
    return apply_overrides(cfg, overrides)


@register("task-recall-lstm", reduced=REDUCED)
def _lstm() -> Config:
    """The plain LSTM: its state must carry the pair across d steps."""
    return _recall("LSTM (64 units) on key-value recall, d = 2..60")


@register("task-recall-attentive", reduced=REDUCED)
def _attentive() -> Config:
    """Salton et al.'s attention over every earlier output of the sentence: reaches any d."""
    return _recall("Attentive LM (64 units) on key-value recall, d = 2..60", **{"model.head": "attentive"})


@register("task-recall-window", reduced=REDUCED)
def _window() -> Config:
    """Daniluk et al.'s attention over the last L = 5 outputs, on documents (one example each)."""
    return _recall("attention over a window of 5 (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "window", "model.window_size": 5, "data.protocol": "document",
                      "data.bptt": 20})


@register("task-recall-rm", reduced=REDUCED)
def _rm() -> Config:
    """Tran et al.'s Memory Block over the last n = 15 input words."""
    return _recall("Recurrent Memory, n = 15 (64 units) on key-value recall, d = 2..60",
                   **{"model.head": "rm", "model.memory_size": 15})
