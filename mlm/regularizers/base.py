"""The interface every embedding regularizer implements, and the per-sequence machinery they share.

``LanguageModel`` calls a regularizer at three points (``mlm/models/language_model.py``)::

    inputs, targets = reg.prepare(inputs, targets, mask)   # training loop, before the forward pass
    x = reg.embed(embedding, tokens)                       # LanguageModel.embed
    logits = reg.decode(decoder, h)                        # the softmax layer

plus ``reg.penalty(model)``, a term added to the training loss (the KL term of variational smoothing).

**What "a sequence" is.** Kong et al. sample one embedding matrix per training sequence. In the
stream protocol a sequence is one *row of one batch*: the ``bptt`` tokens a row holds in that
batch (its segment; the state still flows to the next segment, the sample does not). In the
sentence protocol it is one sentence, in the document protocol one window. Every occurrence of a
word type inside a row sees the same sample; other rows and later batches draw afresh.

Only the (row, word type) pairs that occur are sampled, never a whole (vocab, embed) matrix per
row: :func:`row_types` finds them with one ``torch.unique`` and returns the map back to positions
(on a GPU with a sort instead, so that no step waits for the number of pairs).
"""

from __future__ import annotations

import torch
from torch import nn


def row_types(tokens: torch.Tensor, vocab_size: int,
              fixed_size: bool | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct (row, word) pairs of ``tokens`` (batch, time).

    Returns ``words`` (pairs,), ``rows`` (pairs,) and ``inverse`` (batch, time), the pair index
    of every position, so ``values[inverse]`` spreads one value per pair back over the positions.
    Pairs are sorted by row, then word.

    ``torch.unique`` must hand the number of pairs back to the host, which on a GPU waits for every
    queued kernel. ``fixed_size`` (the default on every device but the CPU) avoids it: ``pairs`` is then
    batch x time, the distinct pairs first and unused slots after them (row 0, word 0, no position
    maps to them), so each pair draws its sample as before and the unused draws are never read.
    """
    batch = tokens.size(0)
    keys = torch.arange(batch, device=tokens.device)[:, None] * vocab_size + tokens  # (batch, time)
    if fixed_size is None:
        fixed_size = tokens.device.type != "cpu"
    unique, inverse = unique_fixed_size(keys) if fixed_size else torch.unique(keys, return_inverse=True)
    return unique % vocab_size, unique // vocab_size, inverse


def unique_fixed_size(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(keys, return_inverse=True)`` with ``keys.numel()`` entries, unused ones 0, found with a
    sort: every size is known before the data, so nothing waits for the device."""
    flat = keys.reshape(-1)  # (n,)
    ordered, order = flat.sort()  # (n,) each
    new = torch.ones_like(ordered, dtype=torch.bool)
    new[1:] = ordered[1:] != ordered[:-1]  # a new distinct key starts here
    index = new.cumsum(0) - 1  # (n,) the distinct key's index of each sorted position
    unique = torch.zeros_like(flat).scatter_(0, index, ordered)  # positions of one key write the same value
    inverse = torch.empty_like(flat).scatter_(0, order, index)  # back to the original positions
    return unique, inverse.view_as(keys)


def pair_dropout_mask(pairs: int, dim: int, p: float, like: torch.Tensor) -> torch.Tensor:
    """(pairs, dim) inverted-dropout mask: 0 with probability p, else 1 / (1 - p) (Eq. 6's alpha_ij)."""
    keep = torch.empty(pairs, dim, dtype=like.dtype, device=like.device).bernoulli_(1.0 - p)
    return keep / (1.0 - p)


class EmbeddingRegularizer(nn.Module):
    """Base class: per-sequence element-wise embedding dropout (variational, one mask per word type
    per row, like awd-lstm-lm's embedding dropout), identity everywhere else.

    ``embed_dropout`` is alpha of Eq. 6, applied to the input embedding vectors. It is inverted
    dropout (kept entries scaled by 1 / (1 - alpha)), so the test-time mean is the plain matrix and
    the model's own dropout on the embedding output is skipped (``drops_embedding``).
    """

    kind = "dropout"

    def __init__(self, vocab_size: int, embed_dropout: float = 0.0):
        super().__init__()
        if not 0.0 <= embed_dropout < 1.0:
            raise ValueError(f"embed_dropout must lie in [0, 1), got {embed_dropout}")
        self.vocab_size = vocab_size
        self.embed_dropout = embed_dropout
        self.sampling = False  # evaluation: draw samples instead of using the mean (section 5.4)
        self._targets: torch.Tensor | None = None

    @property
    def drops_embedding(self) -> bool:
        return self.embed_dropout > 0

    @property
    def stochastic(self) -> bool:
        """Sample this forward pass: always in training, in evaluation only when ``sampling``."""
        return self.training or self.sampling

    def prepare(self, inputs: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None = None):
        """Called before a forward pass that knows its targets; returns (inputs, targets) to use."""
        self._targets = targets
        return inputs, targets

    def sample_vectors(self, weight: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        """(pairs, embed): the vector each (row, word) pair uses in this pass; here the word's own row."""
        return weight[words]

    def embed(self, embedding: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        """(batch, time) ids -> (batch, time, embed) under the regularizer."""
        if not self.training or self.embed_dropout == 0:
            return embedding(tokens)
        words, _, inverse = row_types(tokens, self.vocab_size)
        vectors = self.sample_vectors(embedding.weight, words)  # (pairs, embed)
        vectors = vectors * pair_dropout_mask(words.numel(), vectors.size(1), self.embed_dropout, vectors)
        return vectors[inverse]  # (batch, time, embed)

    def decode(self, decoder: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        """(batch, time, hidden) -> (batch, time, vocab) logits."""
        self._targets = None
        return decoder(x)

    def penalty(self, model) -> torch.Tensor | None:
        """A term for ``model``'s training loss (None: nothing)."""
        return None

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, embed_dropout={self.embed_dropout}"
