"""Count-based baselines: a unigram and an interpolated bigram counted on the tokens a config's models see.

Chapter 00 introduces the two models; every later chapter puts them beside its neural models, so
that "the LSTM learned something" has a floor to beat. The baseline is only fair if it
sees what the models see, so :func:`count_baseline` reads its (history, target) pairs from the very
batches :func:`mlm.training.build_batches` makes for the config:

* the same vocabulary (``data.vocab_size`` included), the same training slice
  (``data.max_train_tokens``, ``data.max_document_tokens``, ``data.max_len``);
* the same protocol: under **sentence** the first word is predicted from ``<bos>`` and a sentence
  never sees the one before it; under **stream** and **document** the ``<eos>`` of a line is the
  history of the next line's first word;
* the same scored tokens as :func:`mlm.evaluation.evaluate`: every masked-in target (words and
  ``<eos>``), never padding. Each input id of a batch is its target's previous token, so the pair
  (input, target) at a scored position is exactly a bigram event.

The models (chapter 00, section 2)::

    unigram   p1(w)     = c(w) / N                         (targets counted in training)
    bigram    p2(w | v) = lam c(v w) / c(v) + (1 - lam) p1(w)     if the history v was seen
                        = p1(w)                                  otherwise

``lam`` maximises the validation log-likelihood, which is concave in ``lam``: :func:`tune_lambda`
bisects its derivative (or picks the best of a grid, chapter 00's way). On a full closed-vocabulary
corpus every history and every target has been seen and these are chapter 00's numbers exactly.
A reduced run trains on a slice, so some validation words never occur in it; the unigram then keeps
Good's (1953) estimate of the probability of an unseen word, n1 / N (the share of training targets
whose word was seen once), and spreads it evenly over the vocabulary's unseen words (``<pad>``
and ``<bos>`` excluded: they are never targets). Without unseen words nothing is reserved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mlm.configs import Config
from mlm.data.batching import Batches
from mlm.data.corpora import Corpus
from mlm.data.vocab import BOS
from mlm.training import build_batches, load_data


# -- (history, target) pairs ---------------------------------------------------------------
def batch_events(batches: Batches) -> tuple[np.ndarray, np.ndarray]:
    """(history, target) id arrays at the scored positions of ``batches``: what :func:`evaluate` counts."""
    history, target = [], []
    for batch in batches.batches:
        mask = batch.mask  # (batch, time)
        history.append(batch.inputs[mask].numpy())  # (scored,)
        target.append(batch.targets[mask].numpy())
    return np.concatenate(history).astype(np.int64), np.concatenate(target).astype(np.int64)


# -- the counts ----------------------------------------------------------------------------
@dataclass
class BigramCountModel:
    """Counts of training (history, target) events over a vocabulary of ``vocab_size`` ids."""

    vocab_size: int
    unigram: np.ndarray  # (vocab,) p1(w), with the unseen-word reserve
    history_count: np.ndarray  # (vocab,) c(v): events with history v
    pair_keys: np.ndarray  # (pair types,) sorted v * vocab + w
    pair_count: np.ndarray  # (pair types,) c(v w)
    train_tokens: int  # N: training events (targets)
    unseen_mass: float  # probability the unigram reserves for words never seen as a target

    @classmethod
    def fit(cls, history: np.ndarray, target: np.ndarray, vocab_size: int,
            never_targets: Sequence[int] = ()) -> "BigramCountModel":
        """Count ``(history, target)`` events; ``never_targets`` (``<pad>``, ``<bos>``) get no probability."""
        n = len(target)
        if n == 0:
            raise ValueError("no training events to count")
        count = np.bincount(target, minlength=vocab_size).astype(np.float64)  # (vocab,)
        support = np.ones(vocab_size, dtype=bool)
        support[list(never_targets)] = False
        unseen = support & (count == 0)  # (vocab,)
        reserve = 0.0
        if unseen.any():  # Good (1953): P(next word unseen so far) ~ n1 / N
            reserve = max(int((count == 1).sum()), 1) / n
        unigram = (1.0 - reserve) * count / n  # (vocab,)
        if unseen.any():
            unigram[unseen] = reserve / unseen.sum()
        keys, pair_count = np.unique(history * vocab_size + target, return_counts=True)
        return cls(vocab_size, unigram, np.bincount(history, minlength=vocab_size).astype(np.float64),
                   keys, pair_count.astype(np.float64), n, reserve)

    def components(self, history: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(p1(w), c(v w) / c(v), history seen) for each event, (n,) each."""
        keys = history * self.vocab_size + target  # (n,)
        where = np.searchsorted(self.pair_keys, keys).clip(max=len(self.pair_keys) - 1)  # (n,)
        pair = np.where(self.pair_keys[where] == keys, self.pair_count[where], 0.0)  # (n,) c(v w)
        seen = self.history_count[history] > 0  # (n,)
        p_bigram = np.divide(pair, self.history_count[history], out=np.zeros(len(keys)), where=seen)
        return self.unigram[target], p_bigram, seen

    def log_probs(self, history: np.ndarray, target: np.ndarray, lam: float) -> np.ndarray:
        """(n,) natural-log probabilities of the interpolated bigram (``lam`` = 0: the unigram)."""
        p1, p2, seen = self.components(history, target)
        return np.log(np.where(seen, lam * p2 + (1.0 - lam) * p1, p1))

    def perplexity(self, history: np.ndarray, target: np.ndarray, lam: float) -> float:
        """exp(mean negative log-likelihood) over the events: docs/design.md, section 4."""
        return math.exp(-float(self.log_probs(history, target, lam).mean()))


def tune_lambda(model: BigramCountModel, history: np.ndarray, target: np.ndarray,
                lambdas: Sequence[float] | None = None, tol: float = 1e-7) -> float:
    """The ``lam`` maximising the log-likelihood of ``(history, target)`` (the validation events).

    ``lambdas`` given: the best of that grid (chapter 00 uses 0.5 .. 0.9). Otherwise the exact
    maximiser: sum log(lam p2 + (1 - lam) p1) is concave in ``lam``, so its derivative
    sum (p2 - p1) / (lam p2 + (1 - lam) p1) falls monotonically and bisection finds its zero.
    """
    if lambdas is not None:
        return min(lambdas, key=lambda lam: model.perplexity(history, target, lam))
    p1, p2, seen = model.components(history, target)
    p1, p2 = p1[seen], p2[seen]  # unseen histories do not depend on lam

    def slope(lam: float) -> float:
        return float(((p2 - p1) / (lam * p2 + (1.0 - lam) * p1)).sum())

    lo, hi = 0.0, 1.0 - 1e-12
    if slope(lo) <= 0:
        return 0.0
    if slope(hi) >= 0:
        return hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
    return 0.5 * (lo + hi)


# -- a config's baseline ---------------------------------------------------------------------
def fit_count_model(vocab, train: tuple[np.ndarray, np.ndarray], valid: tuple[np.ndarray, np.ndarray],
                    lambdas: Sequence[float] | None = None) -> tuple[BigramCountModel, float]:
    """The counts of the ``train`` events over ``vocab`` and the ``lam`` tuned on the ``valid`` events."""
    never = [vocab.pad_id] + ([vocab.bos_id] if BOS in vocab else [])
    model = BigramCountModel.fit(*train, len(vocab), never_targets=never)
    return model, tune_lambda(model, *valid, lambdas=lambdas)


def split_events(cfg: Config, corpus: Corpus, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(history, target) at the scored positions of ``cfg``'s batches of ``split``."""
    return batch_events(build_batches(cfg, corpus, split, shuffle=False))


def count_baseline(cfg: Config, corpus: Corpus | None = None, lambdas: Sequence[float] | None = None) -> dict:
    """Unigram and interpolated-bigram perplexities for the models of ``cfg``, on their own tokens.

    Counts the training events of ``build_batches(cfg, corpus, "train")``, tunes ``lam`` on the
    validation events and scores validation and test exactly as :func:`mlm.evaluation.evaluate`
    does (``*_tokens`` are its token counts). ``corpus`` defaults to ``load_data(cfg)``.
    """
    corpus = corpus if corpus is not None else load_data(cfg)
    train, valid, test = (split_events(cfg, corpus, split) for split in ("train", "valid", "test"))
    model, lam = fit_count_model(corpus.vocab, train, valid, lambdas)
    return {
        "unigram_valid": model.perplexity(*valid, 0.0),
        "unigram_test": model.perplexity(*test, 0.0),
        "bigram_valid": model.perplexity(*valid, lam),
        "bigram_test": model.perplexity(*test, lam),
        "lambda": lam,
        "train_tokens": model.train_tokens,
        "valid_tokens": len(valid[1]),
        "test_tokens": len(test[1]),
        "unseen_mass": model.unseen_mass,
        "protocol": cfg.data.protocol,
    }
