"""Checks for assignment 05: ``kneser_ney_proposal`` and ``absolute_discount_gamma`` (part 1), ``posterior_mean``,
``sample_embeddings`` and ``l2_weights`` (part 2).

References: :func:`mlm.regularizers.proposals.bigram_counts`, :func:`~mlm.regularizers.proposals.kneser_ney_proposal`
and :func:`~mlm.regularizers.proposals.absolute_discount_gamma`.
"""

from __future__ import annotations

import torch

from mlm.regularizers.proposals import absolute_discount_gamma, bigram_counts, kneser_ney_proposal
from mlm.regularizers.smoothing import l2_coefficients, smoothed_mean

from exercises.checks.common import CheckFailed, check, expect, expect_tensor, generator, get_function, max_diff
from exercises.rules import no_python_loops

BANNED = {name: "that is the book's answer; compare with it in the experiment" for name in
          ("bigram_counts", "l2_coefficients", "smoothed_mean", "VariationalSmoothing", "row_types", "sample_from")}

# a b a c a b with a=0, b=1, c=2 (the example of the assignment)
EXAMPLE = torch.tensor([0, 1, 0, 2, 0, 1])


def _zipf_stream(seed: int, n: int, vocab: int) -> torch.Tensor:
    """(n,) ids drawn from a Zipf-like law over ``vocab`` words: frequent and rare words, unseen words too."""
    weights = 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)
    weights[vocab - 3:] = 0  # the last three words never occur
    return torch.multinomial(weights, n, replacement=True, generator=generator(seed))


def _kn(module, stream, vocab):
    result = get_function(module, "kneser_ney_proposal")(stream.clone(), vocab)
    return expect_tensor(result, (vocab,), "kneser_ney_proposal's result").double()


def _gamma(module, stream, vocab, gamma):
    result = get_function(module, "absolute_discount_gamma")(stream.clone(), vocab, gamma)
    return expect_tensor(result, (vocab,), "absolute_discount_gamma's result").double()


def _reference(stream, vocab, gamma=0.2):
    counts = bigram_counts(stream, vocab)
    return kneser_ney_proposal(counts), absolute_discount_gamma(counts, gamma)


def _renamed(seed: int, stream: torch.Tensor, vocab: int) -> tuple[torch.Tensor, int]:
    """A hand example under other names: its ids permuted among ``vocab`` and 1-3 more words that never occur
    (the hidden variant draws another renaming), so an answer learnt by heart for the example does not pass."""
    g = generator(seed)
    size = vocab + int(torch.randint(1, 4, (), generator=g))
    return torch.randperm(size, generator=g)[stream], size


def _expect_renamed(module, seed: int, stream: torch.Tensor, vocab: int, gamma: float | None = None) -> None:
    stream, vocab = _renamed(seed, stream, vocab)
    if gamma is None:
        got, want = _kn(module, stream, vocab), _reference(stream, vocab)[0]
    else:
        got, want = _gamma(module, stream, vocab, gamma), _reference(stream, vocab, gamma)[1]
    expect(bool(torch.isfinite(got).all()) and torch.allclose(got, want),
           "right on the example, but not once its words are renamed (the ids permuted, unused ids added); "
           "work from the stream, never from positions or a fixed vocabulary")


@check("kneser_ney_proposal gives the example's K = [2/4, 1/4, 1/4]")
def kn_example(module):
    got = _kn(module, EXAMPLE, 3)
    expect(torch.allclose(got, torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)),
           f"got {got.tolist()}; count for each word v how many *different* words stand right before it")
    _expect_renamed(module, 20, EXAMPLE, 3)


@check("kneser_ney_proposal sums to one and is never negative")
def kn_normalised(module):
    got = _kn(module, _zipf_stream(1, 5000, 50), 50)
    expect(bool(torch.isfinite(got).all()) and bool((got >= 0).all()), "some probabilities are negative, NaN or inf")
    expect(abs(got.sum().item() - 1.0) < 1e-5, f"the probabilities sum to {got.sum().item():.6f}, not 1")


@check("kneser_ney_proposal counts bigram types, not bigram tokens")
def kn_types_not_tokens(module):
    stream = torch.tensor([0, 1, 0, 1, 0, 1, 2, 1])  # (0,1) three times, (2,1) once
    got = _kn(module, stream, 3)
    expected = _reference(stream, 3)[0]
    expect(torch.allclose(got, expected),
           f"got {got.tolist()}, expected {expected.tolist()}: a pair that occurs three times counts once")
    _expect_renamed(module, 21, stream, 3)


@check("kneser_ney_proposal gives 0 to words never preceded by anything", requires="kn_example")
def kn_unseen_words(module):
    stream = torch.tensor([3, 0, 1, 0, 1])  # word 3 only opens the stream, word 2 never occurs
    got = _kn(module, stream, 4)
    expect(got[2].item() == 0 and got[3].item() == 0,
           f"K = {got.tolist()}: the first token has no left neighbour and an absent word has none either")
    _expect_renamed(module, 22, stream, 4)


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
    _expect_renamed(module, 23, EXAMPLE, 3, 0.3)


@check("absolute_discount_gamma is 0 (not NaN) for words that never occur", requires="gamma_example")
def gamma_unseen(module):
    got = _gamma(module, torch.tensor([0, 1, 0, 1]), 4, 0.5)
    expect(bool(torch.isfinite(got).all()), f"got {got.tolist()}: guard the division by count(i) = 0")
    expect(got[2].item() == 0 and got[3].item() == 0, f"got {got.tolist()}: an absent word is never noised")
    _expect_renamed(module, 24, torch.tensor([0, 1, 0, 1]), 4, 0.5)


@check("absolute_discount_gamma counts the last token but it has no continuation")
def gamma_stream_end(module):
    stream = torch.tensor([0, 1, 2])  # 2 occurs once, at the end: count 1, no continuation
    got = _gamma(module, stream, 3, 0.4)
    expected = _reference(stream, 3, 0.4)[1]
    expect(torch.allclose(got, expected), f"got {got.tolist()}, expected {expected.tolist()}")
    _expect_renamed(module, 25, stream, 3, 0.4)


@check("absolute_discount_gamma matches the reference and stays within [0, gamma]")
def gamma_matches_reference(module):
    stream = _zipf_stream(3, 20000, 300)
    got, expected = _gamma(module, stream, 300, 0.25), _reference(stream, 300, 0.25)[1]
    expect(bool((got >= 0).all()) and bool((got <= 0.25 + 1e-12).all()), "some gamma_i lie outside [0, gamma]")
    expect(torch.allclose(got, expected, atol=1e-12), f"largest difference {(got - expected).abs().max().item():.3g}")


@check("both statistics are float64 (a float32 rate loses the rare words' precision)",
       requires=("kn_example", "gamma_example"))
def float64_results(module):
    stream = _zipf_stream(4, 1000, 40)
    for name, args in (("kneser_ney_proposal", (stream, 40)), ("absolute_discount_gamma", (stream, 40, 0.2))):
        result = get_function(module, name)(*args)
        expect(isinstance(result, torch.Tensor) and result.dtype == torch.float64,
               f"{name} returned {getattr(result, 'dtype', type(result).__name__)}; return float64")


# One loop check per function, each counted once that function is right (a stub has no loop either).
no_python_loops_kn = no_python_loops("kneser_ney_proposal", name="no_python_loops_kn",
                                     requires=("kn_matches_reference",))
no_python_loops_gamma = no_python_loops("absolute_discount_gamma", name="no_python_loops_gamma",
                                        requires=("gamma_matches_reference",))


@check("both statistics match the reference on a stream of a million tokens",
       requires=("no_python_loops_kn", "no_python_loops_gamma"))
def big_stream(module):
    stream = _zipf_stream(4, 1_000_000, 10_000)
    kn, gamma = _kn(module, stream, 10_000), _gamma(module, stream, 10_000, 0.2)
    ref_kn, ref_gamma = _reference(stream, 10_000)
    expect(torch.allclose(kn, ref_kn) and torch.allclose(gamma, ref_gamma), "the results differ from the reference")


# ----------------------------------------------------------------------------- variational smoothing (Kong et al.)


def _smoothing_inputs(seed: int, vocab: int = 12, embed: int = 5):
    g = generator(seed)
    weight = torch.randn(vocab, embed, generator=g, dtype=torch.float64)
    gamma = torch.rand(vocab, generator=g, dtype=torch.float64) * 0.5
    proposal = torch.rand(vocab, generator=g, dtype=torch.float64)
    return weight, gamma, proposal / proposal.sum()


@check("posterior_mean is E[e_i] = (1 - gamma_i) e_i + gamma_i sum_v pi_v e_v", points=2)
def mean_matches_reference(module):
    weight, gamma, proposal = _smoothing_inputs(60)
    got = expect_tensor(get_function(module, "posterior_mean")(weight, gamma, proposal), tuple(weight.shape),
                        "posterior_mean's result")
    want = smoothed_mean(weight, gamma, proposal)
    if max_diff(got, (1 - gamma[:, None]) * weight + gamma[:, None] * weight.mean(0)) < 1e-9:
        raise CheckFailed("you average the rows uniformly; the background vector weighs row v by pi_v")
    expect(max_diff(got, want) < 1e-9, "differs from the mean of the mixture q(e_i): keep e_i with weight 1 - gamma_i, "
           "and give the proposal's average vector sum_v pi_v e_v the weight gamma_i")


def _draw(module, tokens, weight, gamma, proposal, seed):
    out = get_function(module, "sample_embeddings")(tokens, weight, gamma, proposal, generator(seed))
    return expect_tensor(out, (*tokens.shape, weight.shape[1]), "sample_embeddings' result")


@check("sample_embeddings draws once per (sequence, word): every occurrence in a row shares its vector", points=2)
def draws_per_sequence(module):
    weight, gamma, proposal = _smoothing_inputs(70)
    gamma = torch.full_like(gamma, 0.5)
    tokens = torch.randint(12, (6, 30), generator=generator(71))
    out = _draw(module, tokens, weight, gamma, proposal, 72)
    rows_of_weight = (out[..., None, :] - weight).abs().sum(-1).min(-1).values  # (batch, time)
    expect(bool((rows_of_weight < 1e-9).all()), "every drawn vector should be a row of the base matrix")
    for b in range(tokens.shape[0]):
        for word in tokens[b].unique():
            vectors = out[b][tokens[b] == word]
            if max_diff(vectors, vectors[:1].expand_as(vectors)) > 1e-12:
                raise CheckFailed("two occurrences of one word in the same row got different vectors: Kong et al. draw "
                                  "one matrix per sequence, so draw once per (row, word type) and spread it back")
    same_everywhere = all(max_diff(out[b][tokens[b] == w], out[0][tokens[0] == w][:1].expand(int((tokens[b] == w).sum()), -1)) < 1e-12
                          for b in range(1, 6) for w in set(tokens[0].tolist()) & set(tokens[b].tolist()))
    expect(not same_everywhere, "every row got the same draws: each sequence draws afresh")


@check("sample_embeddings replaces word i with probability gamma_i, by a word drawn from q", points=2,
       requires="draws_per_sequence")
def draws_follow_gamma(module):
    vocab, embed = 4, 3
    weight = torch.eye(vocab, embed, dtype=torch.float64) + torch.arange(vocab, dtype=torch.float64)[:, None]
    gamma = torch.tensor([0.0, 0.3, 0.8, 0.5], dtype=torch.float64)
    proposal = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    tokens = torch.arange(vocab).repeat(4000, 1)  # each word once per row, 4000 rows
    out = _draw(module, tokens, weight, gamma, proposal, 80)
    chosen = (out[..., None, :] - weight).abs().sum(-1).argmin(-1)  # (rows, vocab): which word each draw used
    kept = (chosen == tokens).double().mean(0)
    # kept_i = 1 - gamma_i + gamma_i pi_i (a replacement may draw the word itself)
    want = 1 - gamma + gamma * proposal
    expect(bool(((kept - want).abs() < 0.03).all()), f"each word was kept in {[round(k, 2) for k in kept.tolist()]} "
           f"of the rows, expected about {[round(w, 2) for w in want.tolist()]} (1 - gamma_i + gamma_i pi_i)")
    replaced = chosen[:, 2][chosen[:, 2] != 2]
    share = torch.bincount(replaced, minlength=vocab).double() / max(len(replaced), 1)
    want_share = proposal.clone()
    want_share[2] = 0
    expect(bool(((share - want_share / want_share.sum()).abs() < 0.05).all()),
           "the replacing words do not follow the proposal pi")


@check("l2_weights gives c_v, the KL term's weight on ||e_v||^2 (your derivation of Q2)", points=2)
def l2_matches_reference(module):
    _, gamma, proposal = _smoothing_inputs(90, vocab=20)
    got = expect_tensor(get_function(module, "l2_weights")(gamma, proposal), (20,), "l2_weights' result").double()
    want = l2_coefficients(gamma, proposal)
    if max_diff(got, 0.5 * (1 - gamma + gamma)) < 1e-9 or max_diff(got, 0.5 * (1 - gamma + gamma * 20)) < 1e-9:
        raise CheckFailed("the contribution of the other words' mixtures is missing its pi_v: e_v is picked by q(e_i) "
                          "with weight gamma_i pi_v, for every i")
    expect(max_diff(got, want) < 1e-9, "differs from 1/2 sum_i theta^i_v with theta^i_v the mixture weights of q(e_i)")
    uniform = torch.full((20,), 1 / 20, dtype=torch.float64)
    flat = get_function(module, "l2_weights")(torch.full((20,), 0.3, dtype=torch.float64), uniform)
    expect(max_diff(flat.double(), torch.full((20,), 0.5, dtype=torch.float64)) < 1e-9,
           "under a uniform proposal and a constant gamma, every c_v should be 1/2 (the plain N(0, I) prior)")


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
    float64_results,
    no_python_loops_kn,
    no_python_loops_gamma,
    big_stream,
    mean_matches_reference,
    draws_per_sequence,
    draws_follow_gamma,
    l2_matches_reference,
]
