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
The counting functions must not loop over tokens in Python: the grader reads your source for
``for``/``while`` loops, comprehensions, ``map``-like calls and recursion, and also tries a stream of a million tokens.

Part 2: variational smoothing (Kong et al. 2019, section 4)
-----------------------------------------------------------
Kong et al. read noising as a posterior over the embedding of word i, a mixture::

    q(e_i) = (1 - gamma_i) N(e_i, sigma I) + gamma_i sum_v pi_v N(e_v, sigma I)

with (gamma_i, pi) from one of the schemes above (sigma -> 0 here). You write three pieces:

3. ``posterior_mean``: at test time the model uses the mean of q (section 4.1), not e_i.
4. ``sample_embeddings``: in training, one matrix is drawn per *sequence* (a row of the
   batch): every occurrence of word i in a row uses the same draw, other rows draw afresh.
5. ``l2_weights``: with the prior N(0, I), the KL term becomes a data-dependent L2 penalty
   sum_v c_v ||e_v||^2, where e_v collects 1/2 of its mixture weight in every q(e_i) that
   can pick it. Derive c_v (question Q2) before you code it.

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
    raise NotImplementedError("TODO: count the distinct left neighbours of every word and normalise")


def absolute_discount_gamma(stream: torch.Tensor, vocab_size: int, gamma: float) -> torch.Tensor:
    """Absolute-discounting noising probabilities.

    stream: (n,) int64 word ids in [0, vocab_size); gamma: the base noising rate.
    Returns (vocab_size,) float64 with gamma_i = gamma * distinct(i, .) / count(i), and 0 where count(i) = 0.
    """
    raise NotImplementedError("TODO: count occurrences and distinct right neighbours, then divide")


def posterior_mean(weight: torch.Tensor, gamma: torch.Tensor, proposal: torch.Tensor) -> torch.Tensor:
    """The mean of q(e_i) for every word: (1 - gamma_i) e_i + gamma_i sum_v pi_v e_v.

    weight: (vocab, embed) the base matrix E; gamma: (vocab,); proposal: (vocab,) pi, summing to one.
    Returns (vocab, embed).
    """
    raise NotImplementedError("TODO: mix every row with the proposal's average vector")


def sample_embeddings(tokens: torch.Tensor, weight: torch.Tensor, gamma: torch.Tensor, proposal: torch.Tensor,
                      generator: torch.Generator) -> torch.Tensor:
    """One training draw from q for a batch: (batch, time, embed).

    tokens: (batch, time) word ids; weight (vocab, embed); gamma (vocab,); proposal (vocab,).
    For every (row, word type) pair of ``tokens``: keep e_i with probability 1 - gamma_i,
    otherwise use e_v with v drawn from ``proposal``. All occurrences of the word in that row
    get that vector. Draw every random number from ``generator`` (``torch.rand(...,
    generator=generator)``, ``torch.multinomial(..., generator=generator)``).
    """
    raise NotImplementedError("TODO: draw once per (row, word) pair, then spread the draws back to the positions")


def l2_weights(gamma: torch.Tensor, proposal: torch.Tensor) -> torch.Tensor:
    """(vocab,) c_v, the weight of ||e_v||^2 in the KL term of the whole matrix (see Q2)."""
    raise NotImplementedError("TODO: add up e_v's mixture weight in every q(e_i)")


# ============================================================================ written questions
#
# Q1 (predict). "Francisco" occurs 500 times in a corpus, always after "San"; "table" occurs
# 500 times after 200 different words. Which has the larger unigram probability, and which the
# larger continuation probability K? Why is K the better proposal for replacing words?
# YOUR ANSWER HERE
#
# Q2 (derive). Write the mixture weights theta^i_v of q(e_i) (careful with v = i), sum them over
# i, and derive c_v in terms of gamma and pi alone. What is c_v for linear interpolation
# (gamma_i = gamma, pi the unigram U)? Which words are pulled harder towards 0?
# YOUR ANSWER HERE
#
# Q3 (experiment). Run this file. It draws a batch with your sample_embeddings and prints how
# often each word kept its own vector. Compare with 1 - gamma_i + gamma_i pi_i: why is the second
# term there?
# YOUR ANSWER HERE
#
# Q4 (training experiment). Run this file (a few minutes on two cores; MLM_EXERCISE_TINY=1 checks in seconds that
# it runs). It trains a one-layer LSTM (128 units) on 60k words of PTB for three epochs, without noising and with
# Kneser-Ney data noising at gamma = 0.2 built from *your* kneser_ney_proposal and absolute_discount_gamma, three
# seeds each (ex05_experiment.json, .png). Does noising lower the validation perplexity here? Answer with the
# change, its interval and the label of the book's rule (mlm.claims), not with one pair of runs. What happens to
# the gap between validation and training perplexity (valid_minus_train), and why?
# YOUR ANSWER HERE


if __name__ == "__main__":
    # Experiment (not graded): how often does a word keep its own vector?
    vocab, rows = 5, 2000
    gamma = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64)
    proposal = torch.tensor([0.4, 0.3, 0.1, 0.1, 0.1], dtype=torch.float64)
    weight = torch.eye(vocab, dtype=torch.float64)  # one-hot rows: a vector tells which word it came from
    tokens = torch.arange(vocab).repeat(rows, 1)
    out = sample_embeddings(tokens, weight, gamma, proposal, torch.Generator().manual_seed(0))
    kept = (out.argmax(-1) == tokens).double().mean(0)
    for i in range(vocab):
        print(f"word {i}: kept {kept[i]:.3f}, 1 - gamma_i + gamma_i pi_i = {1 - gamma[i] + gamma[i] * proposal[i]:.3f}")

    # The training experiment of Q4: experiments.py trains with the book's package and writes its numbers
    import sys
    from pathlib import Path

    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "exercises").is_dir())))
    from exercises import experiments

    experiments.ex05(kneser_ney_proposal=kneser_ney_proposal, absolute_discount_gamma=absolute_discount_gamma,
                      folder=Path(__file__).parent)
