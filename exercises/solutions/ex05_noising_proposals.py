"""Reference solution of assignment 05: the Kneser-Ney continuation proposal and the absolute-discounting
noising probabilities of data noising (Xie et al. 2017) and variational smoothing (Kong et al. 2019).

Grade it with ``python -m exercises.grader 05 --solution``.
"""

from __future__ import annotations

import torch


def kneser_ney_proposal(stream: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(vocab,) float64: K_v = distinct(., v) / sum_w distinct(., w), the continuation distribution."""
    stream = stream.long().reshape(-1)
    keys = stream[:-1] * vocab_size + stream[1:]  # (n - 1,) one integer per bigram (i, v)
    types = torch.unique(keys)  # each bigram type once, however often it occurs
    distinct_before = torch.bincount(types % vocab_size, minlength=vocab_size).double()  # distinct(., v)
    return distinct_before / distinct_before.sum().clamp_min(1)


def absolute_discount_gamma(stream: torch.Tensor, vocab_size: int, gamma: float) -> torch.Tensor:
    """(vocab,) float64: gamma_i = gamma * distinct(i, .) / count(i), and 0 for words that never occur."""
    stream = stream.long().reshape(-1)
    count = torch.bincount(stream, minlength=vocab_size).double()  # count(i)
    types = torch.unique(stream[:-1] * vocab_size + stream[1:])
    distinct_after = torch.bincount(types // vocab_size, minlength=vocab_size).double()  # distinct(i, .)
    return torch.where(count > 0, gamma * distinct_after / count.clamp_min(1), torch.zeros_like(count))
