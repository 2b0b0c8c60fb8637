"""Batches for the three training protocols of the book (docs/design.md, section 4).

Every protocol yields :class:`Batch` objects built once, as tensors, when the batcher is
created. All three predict exactly one target per corpus token plus one ``<eos>`` per line
(padding targets are masked out), so perplexities from different protocols count the same
tokens:

* **stream** (Zaremba, Press & Wolf, Xie, Kong): the split is one long token sequence
  (a leading ``<eos>`` lets the first word be predicted), cut into ``batch_size`` rows and
  then into windows of ``bptt`` steps; the recurrent state is carried from one batch to the
  next (truncated backpropagation through time).
* **sentence** (Salton, Tran): one line per row, ``<bos> w1 .. wn`` predicting
  ``w1 .. wn <eos>``; rows padded to the longest sentence in the batch (or to a fixed
  length), optional truncation, optional length buckets. The state starts at zero in
  every batch.
* **document** (Daniluk): documents are cut into ``bptt`` windows that are laid out one
  after another along the rows; a row's state (and, later, a model's attention window) is
  carried between its windows and reset where a new document starts (``Batch.reset``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import torch


@dataclass
class Batch:
    inputs: torch.Tensor  # (batch, time) input ids
    targets: torch.Tensor  # (batch, time) next-token ids; padding where mask is False
    mask: torch.Tensor  # (batch, time) True where the target is scored
    reset: torch.Tensor | None = None  # (batch,) True: start this row from a zero state
    num_tokens: int | None = None  # scored targets; counted once, on the host, so reading it never waits for a GPU

    def __post_init__(self):
        if self.num_tokens is None:
            self.num_tokens = int(self.mask.sum())

    def to(self, device) -> "Batch":
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return Batch(move(self.inputs), move(self.targets), move(self.mask), move(self.reset), self.num_tokens)


class Batches:
    """A fixed list of batches with protocol metadata; iterate to get them in order.

    ``carry_state`` tells the training loop whether the recurrent state flows from one
    batch into the next (stream, document) or starts at zero (sentence).
    """

    protocol: str = ""
    carry_state: bool = False

    def __init__(self, batches: list[Batch], shuffle: bool = False, seed: int = 0):
        self.batches = batches
        self.shuffle = shuffle
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Batch]:
        if self.shuffle:
            order = torch.randperm(len(self.batches), generator=self.generator).tolist()
        else:
            order = range(len(self.batches))
        for i in order:
            yield self.batches[i]

    @property
    def num_tokens(self) -> int:
        """Number of scored targets in one pass."""
        return sum(b.num_tokens for b in self.batches)

    def to(self, device) -> "Batches":
        """Move every batch to ``device`` once, in place (a split of PTB or WikiText-2 is tens of MB), so that
        no training step waits for a copy from host memory; returns ``self``."""
        self.batches = [b.to(device) for b in self.batches]
        return self

    # The shuffling generator is part of the training state (exact resume).
    def state_dict(self) -> dict:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])


def _flatten(lines: Sequence[Sequence[int]], eos_id: int) -> list[int]:
    stream: list[int] = []
    for line in lines:
        stream.extend(line)
        stream.append(eos_id)
    return stream


def truncate_lines(lines: Sequence[Sequence[int]], max_tokens: int | None) -> list[Sequence[int]]:
    """The first lines holding at most ``max_tokens`` tokens (words + ``<eos>``); for reduced runs."""
    if not max_tokens:
        return list(lines)
    out, total = [], 0
    for line in lines:
        total += len(line) + 1
        if total > max_tokens and out:
            break
        out.append(line)
    return out


def truncate_documents(lines, starts, max_tokens: int):
    """Keep the first ``max_tokens`` tokens (words + ``<eos>``) of every document, cutting its last line.

    Reduced runs of the document protocol use it: many short documents fill the batch rows evenly,
    where the first few whole articles would leave most rows empty.
    """
    bounds = list(zip(starts, list(starts[1:]) + [len(lines)]))
    kept, new_starts = [], []
    for begin, end in bounds:
        new_starts.append(len(kept))
        budget = max_tokens
        for line in lines[begin:end]:
            if budget <= 0:
                break
            kept.append(line[:budget - 1])  # a long paragraph is cut; its line still ends with <eos>
            budget -= len(kept[-1]) + 1
    return kept, new_starts


class StreamBatches(Batches):
    """Truncated-BPTT batches over the concatenated corpus (state carried).

    The stream ``<eos> w1 w2 .. <eos> ..`` of N+1 ids gives N predictions. It is split into
    ``batch_size`` contiguous rows of equal length ``ceil(N / batch_size)``; the end of the
    last row is padded and masked, so every token is scored exactly once (evaluation never
    drops the tail the way the classic ``batchify`` does).

    For regularizers that draw one sample per *sequence* (variational smoothing, chapter 5,
    ``mlm/regularizers/base.py``), a sequence is one row of one batch: its ``bptt`` tokens. The
    state flows on to the row's next segment; the sample does not.
    """

    protocol = "stream"
    carry_state = True

    def __init__(self, lines, eos_id: int, pad_id: int, batch_size: int, bptt: int):
        stream = torch.tensor([eos_id] + _flatten(lines, eos_id), dtype=torch.long)
        n_pred = len(stream) - 1
        row_len = math.ceil(n_pred / batch_size)
        inputs = torch.full((batch_size * row_len,), pad_id, dtype=torch.long)
        targets = torch.full((batch_size * row_len,), pad_id, dtype=torch.long)
        mask = torch.zeros(batch_size * row_len, dtype=torch.bool)
        inputs[:n_pred] = stream[:-1]
        targets[:n_pred] = stream[1:]
        mask[:n_pred] = True
        inputs, targets, mask = (t.view(batch_size, row_len) for t in (inputs, targets, mask))
        batches = [
            Batch(inputs[:, s:s + bptt].contiguous(), targets[:, s:s + bptt].contiguous(),
                  mask[:, s:s + bptt].contiguous())
            for s in range(0, row_len, bptt)
        ]
        super().__init__(batches)


class SentenceBatches(Batches):
    """One sentence per row, ``<bos>`` first, padded with a mask (state reset per batch).

    ``max_len`` truncates sentences to that many *input* positions (Salton et al. cut at
    35): a truncated sentence loses its tail, including its ``<eos>`` target.
    ``pad_to`` pads every batch to a fixed width (the paper's fixed 35) instead of to the
    longest sentence in the batch. ``buckets`` sorts sentences by length before batching
    so that rows of a batch have similar lengths (Tran et al.); batch order is shuffled
    every epoch when ``shuffle``.
    """

    protocol = "sentence"
    carry_state = False

    def __init__(self, lines, bos_id: int, eos_id: int, pad_id: int, batch_size: int,
                 max_len: int | None = None, pad_to: int | None = None, buckets: bool = False,
                 shuffle: bool = False, seed: int = 0, drop_empty: bool = False):
        rows = []
        for line in lines:
            if drop_empty and len(line) == 0:
                continue
            seq = [bos_id] + list(line) + [eos_id]
            inp, tgt = seq[:-1], seq[1:]
            if max_len is not None:
                inp, tgt = inp[:max_len], tgt[:max_len]
            rows.append((inp, tgt))
        order = list(range(len(rows)))
        if buckets:
            order.sort(key=lambda i: len(rows[i][0]))
        batches = []
        for start in range(0, len(order), batch_size):
            chunk = [rows[i] for i in order[start:start + batch_size]]
            width = max(len(inp) for inp, _ in chunk)
            if pad_to is not None:
                width = max(width, pad_to)
            inputs = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            targets = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.bool)
            for r, (inp, tgt) in enumerate(chunk):
                inputs[r, :len(inp)] = torch.tensor(inp)
                targets[r, :len(tgt)] = torch.tensor(tgt)
                mask[r, :len(tgt)] = True
            batches.append(Batch(inputs, targets, mask))
        super().__init__(batches, shuffle=shuffle, seed=seed)


class DocumentBatches(Batches):
    """Truncated BPTT inside documents; state carried within a document, reset between.

    Each document (``<eos> w1 .. <eos>`` with its lines concatenated) is cut into windows of
    ``bptt`` predictions. Documents are assigned to rows greedily (each to the row with the
    fewest windows so far), so the windows of one document occupy consecutive batches of one
    row. ``Batch.reset[r]`` is True when row ``r`` starts a new document in that batch; the
    last window of a document is padded and masked, and rows that run out of documents are
    fully masked.
    """

    protocol = "document"
    carry_state = True

    def __init__(self, lines, document_starts: Sequence[int], eos_id: int, pad_id: int,
                 batch_size: int, bptt: int):
        starts = sorted(set(s for s in document_starts if s < len(lines))) or [0]
        if starts[0] != 0:
            starts = [0] + starts
        bounds = list(zip(starts, starts[1:] + [len(lines)]))
        windows_per_row: list[list[tuple[list[int], list[int], bool]]] = [[] for _ in range(batch_size)]
        for begin, end in bounds:
            doc = [eos_id] + _flatten(lines[begin:end], eos_id)
            windows = []
            for s in range(0, len(doc) - 1, bptt):
                windows.append((doc[s:s + bptt], doc[s + 1:s + bptt + 1], s == 0))
            row = min(range(batch_size), key=lambda r: len(windows_per_row[r]))
            windows_per_row[row].extend(windows)
        n_batches = max(len(w) for w in windows_per_row)
        inputs = torch.full((n_batches, batch_size, bptt), pad_id, dtype=torch.long)
        targets = torch.full((n_batches, batch_size, bptt), pad_id, dtype=torch.long)
        mask = torch.zeros((n_batches, batch_size, bptt), dtype=torch.bool)
        reset = torch.ones((n_batches, batch_size), dtype=torch.bool)
        for r, windows in enumerate(windows_per_row):
            for b, (inp, tgt, is_start) in enumerate(windows):
                inputs[b, r, :len(inp)] = torch.tensor(inp)
                targets[b, r, :len(tgt)] = torch.tensor(tgt)
                mask[b, r, :len(tgt)] = True
                reset[b, r] = is_start
        batches = [Batch(inputs[b], targets[b], mask[b], reset[b]) for b in range(n_batches)]
        super().__init__(batches)


def protocol_batches(lines: Sequence[Sequence[int]], protocol: str, document_starts: Sequence[int] | None,
                     bos_id: int | None, eos_id: int, pad_id: int, batch_size: int = 64, bptt: int = 35,
                     **sentence_options) -> Batches:
    """Batches of ``lines`` (lists of ids) under ``protocol``, the one place that maps a protocol to its
    batcher. ``document_starts`` is needed by the document protocol, ``bos_id`` by the sentence
    protocol; ``sentence_options`` (``max_len``, ``pad_to``, ``buckets``, ``shuffle``, ``seed``) go to
    :class:`SentenceBatches`. Without options the batches are in corpus order."""
    if protocol == "stream":
        return StreamBatches(lines, eos_id, pad_id, batch_size, bptt)
    if protocol == "sentence":
        return SentenceBatches(lines, bos_id, eos_id, pad_id, batch_size, **sentence_options)
    if protocol == "document":
        return DocumentBatches(lines, document_starts, eos_id, pad_id, batch_size, bptt)
    raise ValueError(f"unknown protocol {protocol!r}; use stream, sentence or document")
