"""Corpus statistics behind data noising and variational smoothing (Xie et al. 2017, Table 1 of Kong et al. 2019).

Everything is counted on the training stream exactly as the stream protocol reads it,
``<eos> w1 w2 .. <eos> w1 ..`` (one ``<eos>`` per line, plus the leading one), so a bigram is
any pair of neighbours in that stream, across sentence boundaries included::

    count(i)          how often word i occurs
    distinct(i, .)    how many different words follow i   (bigram types starting with i)
    distinct(., v)    how many different words precede v  (bigram types ending with v)

From them come the two proposal distributions pi (``T`` in Kong et al.'s Table 1) and the
per-word noising probability gamma_i:

* unigram proposal           pi(v) = count(v) / sum_w count(w)          (linear interpolation)
* Kneser-Ney continuation    pi(v) = distinct(., v) / sum_w distinct(., w)   (section 4.2, "K")
* absolute discounting       gamma_i = gamma * distinct(i, .) / count(i)   (0 for unseen words)

A word that never occurs in the training stream has probability 0 under both proposals, so it is
never drawn as a replacement (``<pad>``, ``<bos>``, words only seen outside a reduced slice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

SCHEMES = ("blank", "unigram", "absolute", "kneser-ney")  # Kong et al. Table 1, top to bottom


def training_stream(lines: Sequence[Sequence[int]], eos_id: int) -> torch.Tensor:
    """The ids ``<eos> line1 <eos> line2 <eos> ..`` that the stream protocol trains on, (N + 1,)."""
    ids = [eos_id]
    for line in lines:
        ids.extend(line)
        ids.append(eos_id)
    return torch.tensor(ids, dtype=torch.long)


@dataclass
class BigramCounts:
    count: torch.Tensor  # (vocab,) occurrences of each word
    distinct_after: torch.Tensor  # (vocab,) distinct(i, .): bigram types starting with i
    distinct_before: torch.Tensor  # (vocab,) distinct(., v): bigram types ending with v

    @property
    def vocab_size(self) -> int:
        return self.count.numel()


def bigram_counts(stream: torch.Tensor, vocab_size: int) -> BigramCounts:
    """Unigram counts and distinct left/right bigram neighbours of every word, vectorised."""
    stream = torch.as_tensor(stream, dtype=torch.long).reshape(-1)
    if stream.numel() and (stream.min() < 0 or stream.max() >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}); got {int(stream.min())}..{int(stream.max())}")
    count = torch.bincount(stream, minlength=vocab_size)
    pairs = torch.unique(stream[:-1] * vocab_size + stream[1:])  # one entry per bigram *type*
    distinct_after = torch.bincount(pairs // vocab_size, minlength=vocab_size)
    distinct_before = torch.bincount(pairs % vocab_size, minlength=vocab_size)
    return BigramCounts(count, distinct_after, distinct_before)


def unigram_proposal(counts: BigramCounts) -> torch.Tensor:
    """(vocab,) pi(v) = count(v) / total: the linear-interpolation proposal (Eq. 2's U)."""
    c = counts.count.double()
    return c / c.sum().clamp_min(1)


def kneser_ney_proposal(counts: BigramCounts) -> torch.Tensor:
    """(vocab,) K_v = distinct(., v) / sum_w distinct(., w): the continuation proposal (section 4.2)."""
    d = counts.distinct_before.double()
    return d / d.sum().clamp_min(1)


def absolute_discount_gamma(counts: BigramCounts, gamma: float) -> torch.Tensor:
    """(vocab,) gamma_i = gamma * distinct(i, .) / count(i), and 0 for words never seen."""
    c = counts.count.double()
    return torch.where(c > 0, gamma * counts.distinct_after.double() / c.clamp_min(1), torch.zeros_like(c))


@dataclass
class NoisingScheme:
    """What one row of Table 1 needs: gamma_i per word, the proposal pi, and whether targets are noised too."""

    name: str
    gamma: torch.Tensor  # (vocab,) probability of noising word i
    proposal: torch.Tensor  # (vocab,) replacement distribution (blank: all mass on the blank word)
    noise_targets: bool  # Kneser-Ney: input and target are replaced together


def noising_scheme(name: str, counts: BigramCounts, gamma: float, blank_id: int | None = None) -> NoisingScheme:
    """The row ``name`` of Kong et al.'s Table 1 ("blank", "unigram", "absolute", "kneser-ney")."""
    if name not in SCHEMES:
        raise ValueError(f"unknown noising scheme {name!r}; choose one of {', '.join(SCHEMES)}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    V = counts.vocab_size
    constant = torch.full((V,), float(gamma), dtype=torch.float64)
    if name == "blank":
        if blank_id is None:
            raise ValueError("blank noising needs the id of the blank word")
        proposal = torch.zeros(V, dtype=torch.float64)
        proposal[blank_id] = 1.0
        return NoisingScheme(name, constant, proposal, False)
    if name == "unigram":
        return NoisingScheme(name, constant, unigram_proposal(counts), False)
    discounted = absolute_discount_gamma(counts, gamma)
    if name == "absolute":
        return NoisingScheme(name, discounted, unigram_proposal(counts), False)
    return NoisingScheme(name, discounted, kneser_ney_proposal(counts), True)


def sample_from(cdf: torch.Tensor, shape) -> torch.Tensor:
    """Ids drawn from the distribution with cumulative sums ``cdf`` (vocab,), by inverse-CDF search.

    One ``searchsorted`` for any number of draws; zero-probability words are never returned.
    Uses the global torch generator, so a seeded run (and a resumed checkpoint) repeats exactly.
    """
    u = torch.rand(shape, dtype=cdf.dtype, device=cdf.device) * cdf[-1]
    return torch.searchsorted(cdf, u, right=True).clamp_max(cdf.numel() - 1)
