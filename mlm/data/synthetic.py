"""Synthetic corpora with controllable long-range dependencies (no files needed).

Each sentence opens with a *key* word ``k<i>``, continues with ``gap`` filler words drawn
from a Zipf-like distribution, then says the key's *value* ``v<i>``, then a short filler
tail. Predicting ``v<i>`` needs the word ``gap + 1`` positions back, so the task measures
how far a model can look: an n-gram model with n <= gap + 1 is at chance on the value,
a model that remembers the key is perfect. Unit tests train on it in seconds and the
attention-span probes of later chapters vary ``gap``.
"""

from __future__ import annotations

import random

from mlm.data.corpora import Corpus
from mlm.data.vocab import Vocabulary


def synthetic_lines(num_sentences: int, num_keys: int = 8, num_fillers: int = 40,
                    min_gap: int = 3, max_gap: int = 8, tail: int = 2, seed: int = 0) -> list[list[str]]:
    """Tokenized sentences ``k<i> f f .. f v<i> f f`` with ``min_gap..max_gap`` fillers between."""
    if not 0 <= min_gap <= max_gap:
        raise ValueError(f"need 0 <= min_gap <= max_gap, got {min_gap}, {max_gap}")
    rng = random.Random(seed)
    fillers = [f"w{j}" for j in range(num_fillers)]
    weights = [1.0 / (j + 1) for j in range(num_fillers)]  # Zipf's law, exponent 1
    lines = []
    for _ in range(num_sentences):
        key = rng.randrange(num_keys)
        gap = rng.randint(min_gap, max_gap)
        words = [f"k{key}"] + rng.choices(fillers, weights, k=gap) + [f"v{key}"]
        words += rng.choices(fillers, weights, k=tail)
        lines.append(words)
    return lines


def synthetic_corpus(train_sentences: int = 2000, eval_sentences: int = 200, sentences_per_document: int = 10,
                     seed: int = 0, **kwargs) -> Corpus:
    """A :class:`~mlm.data.corpora.Corpus` of key-value sentences, usable by every batcher."""
    lines = {
        "train": synthetic_lines(train_sentences, seed=seed, **kwargs),
        "valid": synthetic_lines(eval_sentences, seed=seed + 1, **kwargs),
        "test": synthetic_lines(eval_sentences, seed=seed + 2, **kwargs),
    }
    documents = {split: list(range(0, len(ls), sentences_per_document)) for split, ls in lines.items()}
    vocab = Vocabulary.build(lines["train"] + lines["valid"] + lines["test"])
    return Corpus("synthetic", lines, documents, vocab)
