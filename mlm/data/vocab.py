"""Word vocabulary with the special symbols the three protocols need."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import torch

EOS = "<eos>"  # end of sentence; also the target after the last word
UNK = "<unk>"  # out-of-vocabulary word (PTB and WikiText-2 already contain it)
PAD = "<pad>"  # padding in the sentence and document protocols; never scored
BOS = "<bos>"  # start symbol: sentence mode predicts the first word from it


class Vocabulary:
    """A bijection between word types and integer ids.

    The special symbols come first, in a fixed order, so ids are the same for every
    build from the same corpus: ``<pad>`` = 0, ``<eos>`` = 1, ``<unk>`` = 2, ``<bos>`` = 3
    (``<bos>`` only when ``with_bos``). Corpus words follow by descending frequency,
    ties broken alphabetically, which makes Zipf plots a simple ``counts`` lookup.
    """

    def __init__(self, words: Sequence[str], counts: Sequence[int] | None = None):
        if len(set(words)) != len(words):
            raise ValueError("vocabulary words must be unique")
        self.itos: list[str] = list(words)
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}
        self.counts: list[int] = list(counts) if counts is not None else [0] * len(words)
        for special in (PAD, EOS, UNK):
            if special not in self.stoi:
                raise ValueError(f"vocabulary lacks the special symbol {special!r}")

    # -- construction -----------------------------------------------------------
    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], with_bos: bool = True) -> "Vocabulary":
        """Build from tokenized sentences (each gets one ``<eos>`` counted)."""
        counter: Counter[str] = Counter()
        n_sentences = 0
        for sentence in sentences:
            counter.update(sentence)
            n_sentences += 1
        counter[EOS] += n_sentences
        specials = [PAD, EOS, UNK] + ([BOS] if with_bos else [])
        rest = sorted((w for w in counter if w not in specials), key=lambda w: (-counter[w], w))
        words = specials + rest
        return cls(words, [counter.get(w, 0) for w in words])

    # -- lookups ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} types, e.g. {self.itos[4:9]})"

    @property
    def pad_id(self) -> int:
        return self.stoi[PAD]

    @property
    def eos_id(self) -> int:
        return self.stoi[EOS]

    @property
    def unk_id(self) -> int:
        return self.stoi[UNK]

    @property
    def bos_id(self) -> int:
        if BOS not in self.stoi:
            raise ValueError("this vocabulary was built without a <bos> symbol")
        return self.stoi[BOS]

    def encode(self, words: Sequence[str]) -> list[int]:
        """Word ids, unknown words mapped to ``<unk>``."""
        unk = self.unk_id
        return [self.stoi.get(w, unk) for w in words]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[int(i)] for i in ids]

    def encode_tensor(self, words: Sequence[str]) -> torch.Tensor:
        return torch.tensor(self.encode(words), dtype=torch.long)

    # -- (de)serialisation (kept in checkpoints to catch mismatched vocabularies) --
    def to_dict(self) -> dict:
        return {"itos": self.itos, "counts": self.counts}

    @classmethod
    def from_dict(cls, state: dict) -> "Vocabulary":
        return cls(state["itos"], state.get("counts"))

    def fingerprint(self) -> str:
        """A short hash of the word list, stored with checkpoints."""
        import hashlib

        return hashlib.sha256("\n".join(self.itos).encode("utf-8")).hexdigest()[:16]
