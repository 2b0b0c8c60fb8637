"""Data noising (Xie et al. 2017): replace training words by draws from a proposal, clean at test.

For every real input position t of a training batch, independently (the noising decision is per
token, not per sequence), with probability gamma_i where i = x_t:

* **blank**:                x_t becomes the blank word "_" (Kong et al. Table 1, row 1);
* **unigram**:              x_t becomes a draw from the unigram distribution (linear interpolation);
* **absolute**:             as unigram, with gamma_i = gamma * distinct(i, .) / count(i);
* **kneser-ney**:           x_t *and its target* x_{t+1} become two independent draws from the
                            continuation distribution distinct(., v) / sum, with the absolute-discounting
                            gamma_i (the official code does the same: docs/design.md, section 10).

Only the inputs (and, for Kneser-Ney, the targets) the model is trained on change; the stream the
batches were cut from does not, and evaluation never noises. The blank word reuses the ``<pad>``
row of the embedding: in the stream protocol ``<pad>`` never appears as a real input or target, so
that row is a free learned vector, exactly what Xie et al.'s extra ``<_>`` token is.
"""

from __future__ import annotations

import torch

from mlm.regularizers.base import EmbeddingRegularizer
from mlm.regularizers.proposals import NoisingScheme, sample_from


class DataNoising(EmbeddingRegularizer):
    kind = "noise"

    def __init__(self, scheme: NoisingScheme, embed_dropout: float = 0.0):
        super().__init__(scheme.gamma.numel(), embed_dropout)
        self.scheme_name = scheme.name
        self.noise_targets = scheme.noise_targets
        self.register_buffer("gamma", scheme.gamma.float(), persistent=False)  # (vocab,)
        self.register_buffer("proposal", scheme.proposal.double(), persistent=False)  # (vocab,)
        self.register_buffer("cdf", scheme.proposal.double().cumsum(0), persistent=False)  # (vocab,)

    def noise(self, inputs: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None = None):
        """Noised copies of (inputs, targets), both (batch, time); positions where mask is False stay."""
        noised = torch.rand(inputs.shape, device=inputs.device) < self.gamma[inputs]  # (batch, time)
        if mask is not None:
            noised &= mask
        inputs = torch.where(noised, sample_from(self.cdf, inputs.shape), inputs)
        if self.noise_targets:
            targets = torch.where(noised, sample_from(self.cdf, targets.shape), targets)
        return inputs, targets

    def prepare(self, inputs, targets, mask=None):
        if self.training:
            inputs, targets = self.noise(inputs, targets, mask)
        elif self.sampling:  # sampling at test time (section 5.4) noises the inputs only
            inputs = self.noise(inputs, targets, mask)[0]
        return super().prepare(inputs, targets, mask)

    def extra_repr(self) -> str:
        return f"scheme={self.scheme_name!r}, " + super().extra_repr()
