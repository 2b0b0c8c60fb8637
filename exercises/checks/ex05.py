"""Checks for assignment 05: ``kneser_ney_proposal`` and ``absolute_discount_gamma``.

References: :func:`mlm.regularizers.proposals.bigram_counts`, :func:`~mlm.regularizers.proposals.kneser_ney_proposal`
and :func:`~mlm.regularizers.proposals.absolute_discount_gamma`.
"""

from __future__ import annotations

import time

import torch

from mlm.regularizers.proposals import absolute_discount_gamma, bigram_counts, kneser_ney_proposal

from exercises.checks.common import check, expect, expect_tensor, generator, get_function

# a b a c a b with a=0, b=1, c=2 (the example of the assignment)
EXAMPLE = torch.tensor([0, 1, 0, 2, 0, 1])


def _zipf_stream(seed: int, n: int, vocab: int) -> torch.Tensor:
    """(n,) ids drawn from a Zipf-like law over ``vocab`` words: frequent and rare words, unseen words too."""
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    weights[vocab - 3:] = 0  # the last three words never occur
    return torch.multinomial(weights, n, replacement=True, generator=generator(seed))


def _kn(module, stream, vocab):
    result = get_function(module, "kneser_ney_proposal")(stream.clone(), vocab)
    expect_tensor(result, (vocab,), "kneser_ney_proposal's result")
    expect(result.dtype == torch.float64, f"kneser_ney_proposal returned {result.dtype}; return float64 probabilities")
    return result


def _gamma(module, stream, vocab, gamma):
    result = get_function(module, "absolute_discount_gamma")(stream.clone(), vocab, gamma)
    expect_tensor(result, (vocab,), "absolute_discount_gamma's result")
    expect(result.dtype == torch.float64, f"absolute_discount_gamma returned {result.dtype}; return float64")
    return result


def _reference(stream, vocab, gamma=0.2):
    counts = bigram_counts(stream, vocab)
    return kneser_ney_proposal(counts), absolute_discount_gamma(counts, gamma)


@check("kneser_ney_proposal gives the example's K = [2/4, 1/4, 1/4]")
def kn_example(module):
    got = _kn(module, EXAMPLE, 3)
    expect(torch.allclose(got, torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)),
           f"got {got.tolist()}; count for each word v how many *different* words stand right before it")


@check("kneser_ney_proposal sums to one and is never negative")
def kn_normalised(module):
    got = _kn(module, _zipf_stream(1, 5000, 50), 50)
    expect(bool(torch.isfinite(got).all()) and bool((got >= 0).all()), "some probabilities are negative, NaN or inf")
    expect(abs(got.sum().item() - 1.0) < 1e-9, f"the probabilities sum to {got.sum().item():.6f}, not 1")


@check("kneser_ney_proposal counts bigram types, not bigram tokens")
def kn_types_not_tokens(module):
    stream = torch.tensor([0, 1, 0, 1, 0, 1, 2, 1])  # (0,1) three times, (2,1) once
    got = _kn(module, stream, 3)
    expected = _reference(stream, 3)[0]
    expect(torch.allclose(got, expected),
           f"got {got.tolist()}, expected {expected.tolist()}: a pair that occurs three times counts once")


@check("kneser_ney_proposal gives 0 to words never preceded by anything")
def kn_unseen_words(module):
    stream = torch.tensor([3, 0, 1, 0, 1])  # word 3 only opens the stream, word 2 never occurs
    got = _kn(module, stream, 4)
    expect(got[2].item() == 0 and got[3].item() == 0,
           f"K = {got.tolist()}: the first token has no left neighbour and an absent word has none either")


@check("kneser_ney_proposal matches the reference on a Zipf-like stream")
def kn_matches_reference(module):
    stream = _zipf_stream(2, 20000, 300)
    got, expected = _kn(module, stream, 300), _reference(stream, 300)[0]
    expect(torch.allclose(got, expected, atol=1e-12), f"largest difference {(got - expected).abs().max().item():.3g}")


@check("absolute_discount_gamma gives the example's gamma_a = gamma * 2 / 3")
def gamma_example(module):
    got = _gamma(module, EXAMPLE, 3, 0.3)
    # a: 2 distinct continuations / 3 occurrences; b: 1 / 2; c: 1 / 1
    expected = torch.tensor([0.3 * 2 / 3, 0.3 * 1 / 2, 0.3], dtype=torch.float64)
    expect(torch.allclose(got, expected), f"got {got.tolist()}, expected {expected.tolist()}")


@check("absolute_discount_gamma is 0 (not NaN) for words that never occur")
def gamma_unseen(module):
    got = _gamma(module, torch.tensor([0, 1, 0, 1]), 4, 0.5)
    expect(bool(torch.isfinite(got).all()), f"got {got.tolist()}: guard the division by count(i) = 0")
    expect(got[2].item() == 0 and got[3].item() == 0, f"got {got.tolist()}: an absent word is never noised")


@check("absolute_discount_gamma counts the last token but it has no continuation")
def gamma_stream_end(module):
    stream = torch.tensor([0, 1, 2])  # 2 occurs once, at the end: count 1, no continuation
    got = _gamma(module, stream, 3, 0.4)
    expected = _reference(stream, 3, 0.4)[1]
    expect(torch.allclose(got, expected), f"got {got.tolist()}, expected {expected.tolist()}")


@check("absolute_discount_gamma matches the reference and stays within [0, gamma]")
def gamma_matches_reference(module):
    stream = _zipf_stream(3, 20000, 300)
    got, expected = _gamma(module, stream, 300, 0.25), _reference(stream, 300, 0.25)[1]
    expect(bool((got >= 0).all()) and bool((got <= 0.25 + 1e-12).all()), "some gamma_i lie outside [0, gamma]")
    expect(torch.allclose(got, expected, atol=1e-12), f"largest difference {(got - expected).abs().max().item():.3g}")


@check("both functions handle a million tokens in under 5 seconds (no Python loop over tokens)")
def fast_on_a_big_stream(module):
    stream = _zipf_stream(4, 1_000_000, 10_000)
    start = time.perf_counter()
    kn = _kn(module, stream, 10_000)
    gamma = _gamma(module, stream, 10_000, 0.2)
    seconds = time.perf_counter() - start
    expect(seconds < 5.0, f"took {seconds:.1f} s; use torch.unique / torch.bincount instead of loops")
    ref_kn, ref_gamma = _reference(stream, 10_000)
    expect(torch.allclose(kn, ref_kn) and torch.allclose(gamma, ref_gamma), "the results differ from the reference")


CHECKS = [
    kn_example,
    kn_normalised,
    kn_types_not_tokens,
    kn_unseen_words,
    kn_matches_reference,
    gamma_example,
    gamma_unseen,
    gamma_stream_end,
    gamma_matches_reference,
    fast_on_a_big_stream,
]
