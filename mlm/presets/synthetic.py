"""A tiny preset on the synthetic corpus (no files needed), for tests and demos."""

from __future__ import annotations

from mlm.configs import Config, DataConfig, ModelConfig, TrainConfig, register


@register("synthetic-tiny", reduced={})
def _synthetic_tiny() -> Config:
    """A seconds-long run on the synthetic key-value corpus, for tests and demos."""
    return Config(
        description="tiny LSTM on the synthetic key-value corpus (no files needed)",
        data=DataConfig(corpus="synthetic", protocol="stream", batch_size=8, bptt=12, eval_batch_size=4),
        model=ModelConfig(embed_size=32, hidden_size=32, num_layers=1, init_range=0.1),
        train=TrainConfig(optimizer="adam", lr=0.01, epochs=3, schedule="constant", clip=5.0,
                          loss_reduction="token_mean", log_interval=20),
    )
