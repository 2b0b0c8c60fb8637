"""Assignment 05: the statistics behind Kneser-Ney data noising.

Data noising (Xie et al. 2017) replaces a training word i by a random word with probability
gamma_i; Kong et al. (2019) read the same recipe as a mixture-of-Gaussians posterior over the
embedding of i. The Kneser-Ney variant (chapter 5, Kong et al. Table 1, last row) needs two
corpus statistics, both computed from *bigram types* (distinct pairs of neighbouring words):

1. ``kneser_ney_proposal``: the distribution replacement words are drawn from,

       K_v = distinct(., v) / sum_w distinct(., w)

   where distinct(., v) is the number of *different* words that occur right before v. A word
   that follows many different words ("the", "of") is a likely replacement; a word that mostly
   follows one word ("Francisco" after "San") is not, however frequent it is.

2. ``absolute_discount_gamma``: the per-word noising probability of absolute discounting,

       gamma_i = gamma * distinct(i, .) / count(i)

   where distinct(i, .) is the number of different words that follow i and count(i) is how often i
   occurs. A word with few distinct continuations for its frequency is noised rarely. A word that
   never occurs gets gamma_i = 0 (never a division by zero, never NaN).

The corpus is one stream of word ids (the training text as the stream protocol reads it, with
``<eos>`` between sentences): neighbours in the stream form the bigrams, across sentence
boundaries too. Work on tensors without Python loops over tokens (``torch.unique``,
``torch.bincount`` help); the grader also tries a stream of a million tokens.

Replace each ``raise NotImplementedError(...)`` with your code and keep the names and arguments.
Grade your work from the repository root with::

    python -m exercises.grader 05

Do not use ``mlm.regularizers`` inside your functions (that is the answer); use it to compare.

Example, stream a b a c a b (ids a=0, b=1, c=2): the bigram types are (a,b), (b,a), (a,c), (c,a);
distinct(., a) = 2 (b and c precede it), distinct(., b) = 1, distinct(., c) = 1, so
K = [2/4, 1/4, 1/4]. count(a) = 3 and a is followed by b and c, so gamma_a = gamma * 2 / 3.
"""

from __future__ import annotations

import torch


def kneser_ney_proposal(stream: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The Kneser-Ney continuation distribution of the words of ``stream``.

    stream: (n,) int64 word ids in [0, vocab_size).
    Returns (vocab_size,) float64 probabilities summing to one: K_v = distinct(., v) / sum_w distinct(., w).
    """
    ### BEGIN SOLUTION: count the distinct left neighbours of every word and normalise
    stream = stream.long().reshape(-1)
    keys = stream[:-1] * vocab_size + stream[1:]  # (n - 1,) one integer per bigram (i, v)
    types = torch.unique(keys)  # each bigram type once, however often it occurs
    distinct_before = torch.bincount(types % vocab_size, minlength=vocab_size).double()  # distinct(., v)
    return distinct_before / distinct_before.sum().clamp_min(1)
    ### END SOLUTION


def absolute_discount_gamma(stream: torch.Tensor, vocab_size: int, gamma: float) -> torch.Tensor:
    """Absolute-discounting noising probabilities.

    stream: (n,) int64 word ids in [0, vocab_size); gamma: the base noising rate.
    Returns (vocab_size,) float64 with gamma_i = gamma * distinct(i, .) / count(i), and 0 where count(i) = 0.
    """
    ### BEGIN SOLUTION: count occurrences and distinct right neighbours, then divide
    stream = stream.long().reshape(-1)
    count = torch.bincount(stream, minlength=vocab_size).double()  # count(i)
    types = torch.unique(stream[:-1] * vocab_size + stream[1:])
    distinct_after = torch.bincount(types // vocab_size, minlength=vocab_size).double()  # distinct(i, .)
    return torch.where(count > 0, gamma * distinct_after / count.clamp_min(1), torch.zeros_like(count))
    ### END SOLUTION
