r"""Variational smoothing (Kong et al. 2019, section 4): data noising as a Bayesian RNN.

**The variational distribution.** Each embedding vector is a mixture of Gaussians centred on the
rows of one base matrix E (Eq. 2 for linear interpolation, Eq. 4 for Kneser-Ney)::

    q(e_i) = (1 - gamma_i) N(e_i, sigma I) + gamma_i sum_v pi_v N(e_v, sigma I)

with (gamma_i, pi) from a row of Table 1 (:mod:`mlm.regularizers.proposals`): gamma_i = gamma and pi
the unigram distribution for linear interpolation, the absolute-discounting gamma_i and pi the
continuation distribution K for Kneser-Ney. Drawing from it means: keep e_i with probability
1 - gamma_i, otherwise use e_v with v ~ pi (plus Gaussian noise of standard deviation ``sigma``,
0 by default, the "sigma is small" limit). The Monte Carlo estimate of the ELBO (Eq. 1) draws **one matrix per
sequence** (see :mod:`mlm.regularizers.base` for what a sequence is), so every occurrence of a
word in a row uses the same draw.

Options, each from the paper:

* ``smooth_output``: the output embedding O is smoothed the same way (Eq. 5); with tied
  embeddings E and O are *separate* draws from the one shared base (section 4.3). Only target
  rows are drawn; every other softmax row stays at its base value, the cheap choice the paper
  describes at the end of section 4.2.
* ``coupled`` (default, ``model.smoothing_coupled``): section 4.2, "Training", ties the output
  row to the *input* word's draw, as Kneser-Ney data noising replaces a target together with its
  input ("San Francisco": replace "San" and "Francisco" goes too). Where the input word x_{t-1} = i
  of a position is replaced (probability gamma_i, one decision per (row, word type) like the
  embedding itself), the target x_t's output row at that position is replaced by o_v with a second
  word v ~ pi drawn with it; where the input is kept, the target's row is kept. With
  ``coupled=False`` each target word's output row is drawn on its own, with its own gamma, once per
  (row, word type) and used at every position of the row (Eq. 5 read as a separate matrix draw).
  Coupling applies to training draws; a test-time draw (``sampling``) replaces every output row
  independently, so that it is a proper distribution.
* ``embed_dropout`` alpha: the Gaussian at zero of Eq. 6, one dropout mask per (row, word type),
  dimensions independent; gamma_i is drawn once per word, so a kept word keeps one base vector.
* ``elementwise``: element-wise smoothing (section 4.3): the keep/replace decision and the
  replacing word are drawn per *dimension*, so a vector mixes elements of several words.
* Prediction with the **mean** of q (section 4.1; ``prediction = "mode"`` uses the base matrix instead, as
  Xie et al.'s clean evaluation does)::

      E[e_i] = (1 - gamma_i) e_i + gamma_i sum_v pi_v e_v

  the same for the element-wise variant, or with ``sampling`` switched on, fresh draws (S of them
  with :func:`mlm.regularizers.prediction.evaluate_sampled`, section 5.4, averaging their
  probabilities or, as the paper says, their log-likelihoods). A test-time draw replaces every
  output row, not only the target's, so that each draw is a proper distribution; with
  ``draw_outputs`` off it draws the inputs only and keeps every output row at its mean.

**The KL term and the data-dependent L2 (our derivation).** With the prior p(e) = N(0, I),
Gal & Ghahramani's approximation of the KL of a mixture of narrow Gaussians keeps, for word i,
``sum_v theta^i_v / 2 * ||e_v||^2`` plus constants, where theta^i_v are the mixture weights of
q(e_i): theta^i_i = 1 - gamma_i + gamma_i pi_i and theta^i_v = gamma_i pi_v for v != i. (The
paper's text writes "gamma otherwise", dropping pi_v; with that slip every word would get a
coefficient growing like V * gamma.) The KL of the whole matrix sums over i, and the vector e_v
collects a contribution from every q(e_i) that can pick it::

    c_v = 1/2 sum_i theta^i_v = 1/2 [ (1 - gamma_v + gamma_v pi_v) + sum_{i != v} gamma_i pi_v ]
        = 1/2 [ 1 - gamma_v + pi_v * sum_i gamma_i ]

so the regulariser is lambda * sum_v c_v ||e_v||^2. For linear interpolation (gamma_i = gamma)
c_v = (1 - gamma + gamma V U_v) / 2: a word drawn more often than uniformly (U_v > 1/V) is pulled
harder towards zero, a rare one less (footnote 5 of the paper); under a uniform proposal c_v = 1/2,
the plain N(0, I) prior. The dropout mixture of Eq. 6 multiplies every c_v by the same (1 - alpha),
which we absorb into lambda.

In the code lambda is ``train.weight_decay``, the plain L2 the paper tunes for every model (weight
decay lambda has gradient lambda * w, i.e. the c = 1/2 prior). Smoothing adds
``lambda / 2 * sum_v (2 c_v - 1) ||e_v||^2`` to the loss (:meth:`VariationalSmoothing.penalty`), so
the total gradient on e_v is ``2 lambda c_v e_v``: weight decay exactly where the proposal is
uniform, more for frequent words, less for rare ones. The same term applies to an untied,
smoothed O; tied E and O share the mixture weights, so the one base matrix is counted once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mlm.regularizers.base import EmbeddingRegularizer, pair_dropout_mask, row_types
from mlm.regularizers.proposals import NoisingScheme, sample_from


def l2_coefficients(gamma: torch.Tensor, proposal: torch.Tensor) -> torch.Tensor:
    """(vocab,) c_v = (1 - gamma_v + pi_v * sum_i gamma_i) / 2, the KL term's weight on ||e_v||^2."""
    return 0.5 * (1.0 - gamma + proposal * gamma.sum())


def smoothed_mean(weight: torch.Tensor, gamma: torch.Tensor, proposal: torch.Tensor) -> torch.Tensor:
    """(vocab, embed) mean of q: (1 - gamma_i) w_i + gamma_i sum_v pi_v w_v."""
    background = proposal.to(weight.dtype) @ weight  # (embed,)
    g = gamma.to(weight.dtype)[:, None]  # (vocab, 1)
    return (1.0 - g) * weight + g * background[None, :]


class VariationalSmoothing(EmbeddingRegularizer):
    kind = "smooth"

    def __init__(self, scheme: NoisingScheme, embed_dropout: float = 0.0, elementwise: bool = False,
                 smooth_output: bool = False, sigma: float = 0.0, l2: float = 0.0, tied: bool = False,
                 coupled: bool = True):
        super().__init__(scheme.gamma.numel(), embed_dropout)
        if scheme.name == "blank":
            raise ValueError("variational smoothing needs a proposal over words; blank noising is embedding "
                             "dropout (use model.embed_dropout)")
        self.scheme_name, self.elementwise, self.smooth_output = scheme.name, elementwise, smooth_output
        self.coupled = coupled
        self._coupling: tuple[torch.Tensor, torch.Tensor] | None = None  # set by embed, used by decode
        self.sigma, self.l2, self.tied = sigma, l2, tied
        self.register_buffer("gamma", scheme.gamma.float(), persistent=False)  # (vocab,)
        self.register_buffer("proposal", scheme.proposal.float(), persistent=False)  # (vocab,)
        self.register_buffer("cdf", scheme.proposal.double().cumsum(0), persistent=False)  # (vocab,)
        coef = l2_coefficients(scheme.gamma.double(), scheme.proposal.double())
        self.register_buffer("l2_coefficient", coef.float(), persistent=False)  # (vocab,) c_v
        self._tokens: torch.Tensor | None = None
        self.prediction = "mean"  # evaluation without sampling: "mean" of q (section 4.1) or "mode" (the base matrix)
        self.draw_outputs = True  # a test-time draw redraws every output row; False keeps O at the mean of q

    # -- drawing from q ----------------------------------------------------------------
    def draw(self, words: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(replace, drawn) for (pairs,) ``words``: whether each pair (element-wise: each of its ``dim``
        elements) is replaced, with probability gamma_w, and the word v ~ pi replacing it; (pairs[, dim]) each."""
        gamma = self.gamma[words]  # (pairs,)
        shape = (words.numel(), dim) if self.elementwise else words.shape
        replace = torch.rand(shape, device=words.device) < (gamma[:, None] if self.elementwise else gamma)
        return replace, sample_from(self.cdf, shape)

    def compose(self, weight: torch.Tensor, words: torch.Tensor, replace: torch.Tensor,
                drawn: torch.Tensor) -> torch.Tensor:
        """(..., embed) vectors: row ``words`` of ``weight`` (any shape ...) where kept, row ``drawn`` where
        replaced (element-wise: element j of word drawn[..., j]), plus sigma-noise."""
        if self.elementwise:
            chosen = torch.where(replace, drawn, words[..., None])  # (..., embed)
            columns = torch.arange(weight.size(1), device=weight.device)  # (embed,)
            vectors = weight[chosen, columns]  # (..., embed): element j of word chosen[..., j]
        else:
            vectors = weight[torch.where(replace, drawn, words)]  # (..., embed)
        if self.sigma > 0:
            vectors = vectors + self.sigma * torch.randn_like(vectors)
        return vectors

    def sample_vectors(self, weight: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        """(pairs, embed): one draw from q(e_w) for each (row, word) pair (Eq. 2/4, or element-wise)."""
        return self.compose(weight, words, *self.draw(words, weight.size(1)))

    def mean_weight(self, weight: torch.Tensor) -> torch.Tensor:
        return smoothed_mean(weight, self.gamma, self.proposal)

    # -- the hooks ------------------------------------------------------------------------
    def embed(self, embedding: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        self._tokens = tokens
        if not self.stochastic:
            if self.prediction == "mode":
                return embedding(tokens)  # Xie et al.'s clean input: the mode of q
            return F.embedding(tokens, self.mean_weight(embedding.weight))  # the mean of q (section 4.1)
        words, _, inverse = row_types(tokens, self.vocab_size)  # (pairs,), (batch, time)
        replace, drawn = self.draw(words, embedding.weight.size(1))  # (pairs[, embed]) each
        vectors = self.compose(embedding.weight, words, replace, drawn)  # (pairs, embed)
        if self.training and self.smooth_output and self.coupled:
            # Section 4.2: the input word's decision also replaces the target's output row, by a second draw.
            output_drawn = sample_from(self.cdf, drawn.shape)  # (pairs[, embed])
            self._coupling = (replace[inverse], output_drawn[inverse])  # (batch, time[, embed]) each
        if self.training and self.embed_dropout > 0:
            vectors = vectors * pair_dropout_mask(words.numel(), vectors.size(1), self.embed_dropout, vectors)
        return vectors[inverse]  # (batch, time, embed)

    def decode(self, decoder: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        targets, self._targets = self._targets, None
        coupling, self._coupling = self._coupling, None
        if not self.smooth_output:
            return decoder(x)
        if not self.stochastic:
            if self.prediction == "mode":
                return decoder(x)
            return F.linear(x, self.mean_weight(decoder.weight), decoder.bias)  # Eq. 5's mean
        if not self.training:
            # Sampling at test time (section 5.4): one draw of *every* output row, so that each draw gives a
            # proper distribution over the vocabulary (drawing only the target's row would not sum to one),
            # or with draw_outputs off the rows' mean, so that only the inputs are drawn.
            if not self.draw_outputs:
                return F.linear(x, self.mean_weight(decoder.weight), decoder.bias)
            words = torch.arange(self.vocab_size, device=x.device)
            return F.linear(x, self.sample_vectors(decoder.weight, words), decoder.bias)
        if targets is None or targets.shape != x.shape[:2]:
            targets = self._tokens  # no targets given: draw the rows of the words the sequence reads
        elif coupling is not None and coupling[0].shape[:2] == targets.shape:
            return self.coupled_logits(decoder, x, targets, *coupling)
        return self.sampled_logits(decoder, x, targets)

    def coupled_logits(self, decoder: nn.Linear, x: torch.Tensor, targets: torch.Tensor, replace: torch.Tensor,
                       drawn: torch.Tensor) -> torch.Tensor:
        """Logits whose target column at each position reads a replaced output row exactly where that
        position's input word was replaced (section 4.2); all other columns keep their base rows.

        ``replace`` and ``drawn`` are (batch, time), or (batch, time, hidden) element-wise, from :meth:`embed`.
        """
        logits = decoder(x)  # (batch, time, vocab)
        own = decoder.weight[targets]  # (batch, time, hidden): o_{x_t}
        delta = self.compose(decoder.weight, targets, replace, drawn) - own  # (batch, time, hidden)
        correction = (x * delta).sum(-1, keepdim=True)  # (batch, time, 1): x . (o~ - o_{x_t})
        return logits.scatter_add(-1, targets[..., None], correction.to(logits.dtype))  # bf16 logits under autocast

    def sampled_logits(self, decoder: nn.Linear, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Logits with the target words' output rows drawn from q(o), once per (row, word) (Eq. 5; uncoupled).

        logits = x O^T + b, then for each word k among the row's targets the column k gets
        x . (o~_k - o_k): a (batch, time, slots) correction scattered into the vocabulary axis.
        """
        batch, time, _ = x.shape
        logits = decoder(x)  # (batch, time, vocab)
        weight = decoder.weight
        words, rows, inverse = row_types(targets, self.vocab_size)  # (pairs,) sorted by row, (batch, time)
        pair = torch.arange(words.numel(), device=x.device)  # (pairs,)
        used = pair <= inverse.max()  # (pairs,) False for the unused slots of row_types on a GPU
        delta = (self.sample_vectors(weight, words) - weight[words]) * used[:, None]  # (pairs, hidden)
        # A row's pairs are consecutive: a pair's slot in its row is its index minus that of the row's first
        # pair (unused pairs add zeros to row 0's last slot). No bincount, so nothing waits for the device.
        slot = (pair - inverse.amin(1)[rows]).clamp(max=time - 1)  # (pairs,) 0..time-1
        # (batch, slots, hidden) and (batch, slots); slots a row does not use stay 0
        deltas = delta.new_zeros(batch, time, x.size(-1)).index_put((rows, slot), delta, accumulate=True)
        columns = torch.zeros(batch, time, dtype=torch.long, device=x.device).index_put((rows, slot), words * used,
                                                                                         accumulate=True)
        correction = x @ deltas.transpose(1, 2)  # (batch, time, slots)
        return logits.scatter_add(-1, columns[:, None, :].expand(batch, time, time), correction.to(logits.dtype))

    def penalty(self, model) -> torch.Tensor | None:
        """lambda / 2 * sum_v (2 c_v - 1) ||w_v||^2 over the smoothed matrices (the KL term beyond weight decay)."""
        if self.l2 == 0:
            return None
        extra = (2.0 * self.l2_coefficient - 1.0)  # (vocab,)
        matrices = [model.embedding.weight]
        if self.smooth_output and not self.tied:
            matrices.append(model.decoder.weight)
        return sum(0.5 * self.l2 * (extra * w.square().sum(1)).sum() for w in matrices)

    def extra_repr(self) -> str:
        return (f"scheme={self.scheme_name!r}, elementwise={self.elementwise}, smooth_output={self.smooth_output}, "
                f"coupled={self.coupled}, sigma={self.sigma}, l2={self.l2}, " + super().extra_repr())
